"""The optional native kernels: probed once, switchable, and wrapped for the samplers.

``spsample._native_kernels`` is a C++17 extension (pybind11 over NumPy buffers, OpenMP across
minibatches; sources in ``native/``) built by ``pip install``. It holds fused bulk samplers
that do every hop of every minibatch of a bulk in one call and return exactly what the
algebraic NumPy path returns (same bits, same order): node-wise (uniform / weighted, with or
without replacement) and layer-wise (LADIES, FastGCN).

Which path runs:

* :data:`AVAILABLE` -- the extension imported (``IMPORT_ERROR`` says why not).
* :func:`enabled` -- the native path is active: available, and neither switched off by the
  environment variable ``SPSAMPLE_NATIVE=0`` (read once, at import) nor by
  :func:`set_enabled` / :func:`disabled` at run time.
* :func:`active_path` -- ``"native"`` or ``"numpy"``.

Threads: :func:`set_num_threads` (default: OpenMP's, i.e. ``OMP_NUM_THREADS`` or all cores).
Results never depend on it: each minibatch is sampled by one thread from its own keyed streams.
"""

import contextlib
import os

import numpy as np

from ._errors import ArgumentError, MissingDependencyError
from ._validate import fail

__all__ = ["AVAILABLE", "IMPORT_ERROR", "enabled", "set_enabled", "disabled", "active_path",
           "set_num_threads", "get_num_threads", "set_pool_limit", "pool_stats", "nodewise_bulk", "layerwise_bulk", "sample_rows"]

try:
    from . import _native_kernels as _kernels
    AVAILABLE = True
    IMPORT_ERROR = None
except ImportError as exc:  # not built (no compiler at install time) or built for another Python
    _kernels = None
    AVAILABLE = False
    IMPORT_ERROR = exc

_ENABLED = AVAILABLE and os.environ.get("SPSAMPLE_NATIVE", "1").strip().lower() not in ("0", "false", "no", "off")
_THREADS = 0    # 0: OpenMP's default


def enabled():
    """Whether the samplers use the native kernels now."""
    return _ENABLED


def active_path():
    """``"native"`` or ``"numpy"``: the path :func:`spsample.sample` takes now."""
    return "native" if _ENABLED else "numpy"


def set_enabled(flag):
    """Switch the native path on or off at run time; returns the previous setting.

    Raises
    ------
    MissingDependencyError
        When switching on while the extension is not available.
    """
    global _ENABLED
    previous = _ENABLED
    if flag and not AVAILABLE:
        raise MissingDependencyError(
            "the native kernels are not built (reinstall spsample with a C++17 compiler: "
            f"pip install -e .): {IMPORT_ERROR}")
    _ENABLED = bool(flag)
    return previous


@contextlib.contextmanager
def disabled():
    """Context manager running its body on the NumPy path."""
    previous = set_enabled(False)
    try:
        yield
    finally:
        if previous:
            set_enabled(True)


def set_num_threads(n):
    """Threads of the native kernels (``0``: OpenMP's default); returns the previous value."""
    global _THREADS
    n = int(n)
    if n < 0:
        fail(ArgumentError, "set_num_threads", "n", "must be >= 0", n)
    previous, _THREADS = _THREADS, n
    return previous


def get_num_threads():
    """Threads the native kernels will use (1 when the extension has no OpenMP)."""
    if not AVAILABLE:
        return 1
    return _THREADS if (_THREADS and _kernels.have_openmp()) else _kernels.max_threads()


def set_pool_limit(nbytes):
    """Bytes of freed layer-wise output blocks the kernels keep for reuse; returns the old limit.

    The layer-wise kernels write each minibatch's edges into one block; when NumPy frees the
    last array viewing a block it goes back to a process-wide pool, and later calls reuse it
    (already-resident memory, so no page faults). A block is never reused while an array views
    it. The default limit is 1 GiB; ``0`` turns pooling off and frees what is held. No-op
    (returns 0) without the extension.
    """
    nbytes = int(nbytes)
    if nbytes < 0:
        fail(ArgumentError, "set_pool_limit", "nbytes", "must be >= 0", nbytes)
    if not AVAILABLE:
        return 0
    previous = _kernels.pool_stats()[1]
    _kernels.set_pool_limit(nbytes)
    return int(previous)


def pool_stats():
    """``{"held": bytes in the pool now, "limit": its limit}`` (zeros without the extension)."""
    if not AVAILABLE:
        return {"held": 0, "limit": 0}
    held, limit = _kernels.pool_stats()
    return {"held": int(held), "limit": int(limit)}


# ------------------------------------------------------------------------------ wrappers
def _i64(a):
    return a if (a.dtype == np.int64 and a.flags.c_contiguous) else np.ascontiguousarray(a, dtype=np.int64)


def _f64(a):
    if a is None:
        return None
    return a if (a.dtype == np.float64 and a.flags.c_contiguous) else np.ascontiguousarray(a, dtype=np.float64)


def _bulk_args(graph, seeds, sizes, batch_ids, seed, epoch):
    """Buffers for the kernels, with every bound the C++ code relies on checked here.

    Raises
    ------
    ArgumentError
        (a ``ValueError``) naming the argument, before any native code runs: arrays not
        one-dimensional, CSR arrays inconsistent, ``sizes`` negative or not summing to
        ``len(seeds)``, ``batch_ids`` of another length or outside ``[0, 2**32)``, seeds outside
        ``[0, num_nodes)``, ``seed`` outside ``[0, 2**64)``, ``epoch`` outside ``[0, 2**24)``.
    """
    where = "native bulk"
    n = graph.num_nodes
    indptr, indices = _i64(graph.indptr), _i64(graph.indices)
    seeds, sizes, batch_ids = _i64(np.asarray(seeds)), _i64(np.asarray(sizes)), _i64(np.asarray(batch_ids))
    for name, arr in (("graph.indptr", indptr), ("graph.indices", indices), ("seeds", seeds),
                      ("sizes", sizes), ("batch_ids", batch_ids)):
        if arr.ndim != 1:
            fail(ArgumentError, where, name, "must be one-dimensional", arr.shape)
    if n >= 2**32 - 1:
        fail(ArgumentError, where, "graph", "must have fewer than 2**32 - 1 vertices", n)
    if indptr.size != n + 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        fail(ArgumentError, where, "graph.indptr", "must run from 0 to len(indices) over n + 1 entries",
             indptr.size)
    if graph.weights is not None and graph.weights.size != indices.size:
        fail(ArgumentError, where, "graph.weights", "must match indices", graph.weights.size)
    if sizes.size == 0 or sizes.min() < 0 or int(sizes.sum()) != seeds.size:
        fail(ArgumentError, where, "sizes", f"must be non-negative and sum to len(seeds) = {seeds.size}",
             sizes)
    if batch_ids.size != sizes.size:
        fail(ArgumentError, where, "batch_ids", f"must have one entry per minibatch ({sizes.size})",
             batch_ids.size)
    if batch_ids.min() < 0 or batch_ids.max() >= 2**32:
        fail(ArgumentError, where, "batch_ids", "must be in [0, 2**32)", batch_ids)
    if seeds.size and (seeds.min() < 0 or seeds.max() >= n):
        fail(ArgumentError, where, "seeds", f"must be vertex ids in [0, {n})", seeds)
    if not 0 <= int(seed) < 2**64:
        fail(ArgumentError, where, "seed", "must be in [0, 2**64)", seed)
    if not 0 <= int(epoch) < 2**24:
        fail(ArgumentError, where, "epoch", "must be in [0, 2**24)", epoch)
    seed = int(seed)
    return indptr, indices, seeds, sizes, batch_ids, seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF


def _minibatches(results, sizes, batch_ids):
    from ._minibatch import MiniBatch

    out = []
    for (n_id, counts, dst, src, eid, weight), size, bid in zip(results, sizes.tolist(), batch_ids.tolist()):
        out.append(MiniBatch(batch_id=bid, n_id=n_id, batch_size=size,
                             num_sampled_nodes=counts.tolist(), edges=list(zip(dst, src)),
                             edge_ids=eid, weight=weight))
    return out


def nodewise_bulk(graph, seeds, sizes, batch_ids, sampler, seed, epoch):
    """Every hop of a node-wise bulk in one native call.

    Parameters
    ----------
    graph : Graph
    seeds : int64, shape (m,)
        Validated seeds (distinct within each minibatch), minibatch after minibatch.
    sizes, batch_ids : int64, shape (k,)
        Seeds per minibatch and their global ids.
    sampler : NodeWise
    seed, epoch : int

    Returns
    -------
    list of MiniBatch, the same as the algebraic path.
    """
    indptr, indices, seeds, sizes, batch_ids, k0, k1 = _bulk_args(graph, seeds, sizes, batch_ids, seed, epoch)
    weights = _f64(graph.weights) if sampler.weighted else None
    if sampler.weighted and weights is None:
        fail(ArgumentError, "native bulk", "graph", "needs edge weights for weighted sampling",
             show_value=False)
    res = _kernels.nodewise_bulk(indptr, indices, weights, seeds, sizes, batch_ids,
                                 [int(f) for f in sampler.fanouts], bool(sampler.replace),
                                 bool(sampler.weighted), k0, k1, int(epoch), _THREADS)
    return _minibatches(res, sizes, batch_ids)


def _internal_columns(indices, n):
    """The layer-wise kernel's internal column ids: columns ranked by in-degree (descending, ties
    by id), so that the hubs most entries point to share a few cache lines of its vertex-indexed
    arrays. Results do not depend on it (see ``native/layerwise.h``).

    Returns
    -------
    indices32 : uint32, shape (nnz,)
        ``internal_of[indices]``: the CSR's columns as internal ids (rows keep their order).
    internal_of, vertex_of : uint32, shape (n,)
        Inverse permutations: vertex -> internal id, internal id -> vertex.
    """
    in_degree = np.bincount(indices, minlength=n)
    vertex_of = np.argsort(-in_degree, kind="stable").astype(np.uint32)
    internal_of = np.empty(n, dtype=np.uint32)
    internal_of[vertex_of] = np.arange(n, dtype=np.uint32)
    return internal_of[indices], internal_of, vertex_of


def layerwise_bulk(graph, seeds, sizes, batch_ids, sampler, seed, epoch, *, column_weights=None):
    """Every layer of a LADIES bulk (or FastGCN when ``column_weights = (q, cumulative)``)."""
    indptr, indices, seeds, sizes, batch_ids, k0, k1 = _bulk_args(graph, seeds, sizes, batch_ids, seed, epoch)
    q = cumulative = None
    if column_weights is not None:
        q, cumulative = (_f64(a) for a in column_weights)
        if q.shape != (graph.num_nodes,) or cumulative.shape != (graph.num_nodes,):
            fail(ArgumentError, "native bulk", "column_weights", "must have num_nodes entries each",
                 (q.shape, cumulative.shape))
    indices32, internal_of, vertex_of = graph.cached("native_layerwise_columns",
                                                     lambda: _internal_columns(indices, graph.num_nodes))
    res = _kernels.layerwise_bulk(indptr, indices, indices32, internal_of, vertex_of, _f64(graph.weights),
                                  seeds, sizes, batch_ids,
                                  [int(f) for f in sampler.fanouts], k0, k1, int(epoch), q, cumulative,
                                  _THREADS)
    return _minibatches(res, sizes, batch_ids)


def sample_rows(indptr, indices, weights, vertex, batch, fanout, hop_word, key, *, replace=False,
                weighted=False, row_offset=0, rows=None):
    """Node-wise sampling of requested rows of a block of ``A`` (the owner side of push).

    ``sample_rows(row_select(indptr, indices, weights, vertex, row_offset=row_offset), fanout,
    Streams(vertex, batch, hop_word, key), replace=..., weighted=...)`` of
    :mod:`spsample._primitives`, bit for bit, computed by ``native/rows.h`` (OpenMP over the
    requests; the result does not depend on the number of threads).

    Parameters
    ----------
    indptr : int64, shape (n + 1,)
        Rows of the block, from 0 to ``len(indices)``.
    indices : int64, shape (nnz,)
        Global column ids.
    weights : float64, shape (nnz,), or None
        Needed when ``weighted``.
    vertex : int64, shape (r,)
        Global ids of the requested rows, in ``[row_offset, row_offset + n)``; repeats allowed.
    batch : int64, shape (r,)
        Global minibatch id of each request, in ``[0, 2**32)``.
    fanout : int
        ``>= 1``, or ``-1`` for every neighbour.
    hop_word : int
        ``(epoch << 8) | hop`` (:func:`spsample._rng.hop_word`), in ``[0, 2**32)``.
    key : (int, int)
        The Philox key (:func:`spsample._rng.split_seed`).
    replace, weighted : bool
    row_offset : int
        Global id of the block's first row.
    rows : int64, shape (r,), or None
        Where the rows are not stored by vertex id (rows fetched from other ranks, in arrival
        order): the row of ``indptr`` holding each request's vertex; ``row_offset`` is then
        ignored and ``vertex`` only keys the streams.

    Returns
    -------
    RowMatrix with ``r`` rows: ``indices`` the sampled columns, ``edge_id`` their positions in
    ``indices`` (ascending within a row, repeated under replacement); ``data`` is ``None``.

    Raises
    ------
    ArgumentError
        Before any native code runs, naming the argument: CSR arrays inconsistent, ``vertex``
        (or ``rows``) outside the block, ``batch`` outside ``[0, 2**32)``, ``batch`` or
        ``rows`` of another length, a fanout other than ``>= 1`` or ``-1``, ``hop_word`` or
        ``key`` out of range, ``weighted`` without weights.
    """
    from ._primitives import RowMatrix

    where = "native sample_rows"
    indptr, indices = _i64(np.asarray(indptr)), _i64(np.asarray(indices))
    vertex, batch = _i64(np.asarray(vertex)), _i64(np.asarray(batch))
    for name, arr in (("indptr", indptr), ("indices", indices), ("vertex", vertex), ("batch", batch)):
        if arr.ndim != 1:
            fail(ArgumentError, where, name, "must be one-dimensional", arr.shape)
    if indptr.size < 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        fail(ArgumentError, where, "indptr", "must run from 0 to len(indices)", indptr.size)
    n, row_offset = indptr.size - 1, int(row_offset)
    if rows is not None:
        rows = _i64(np.asarray(rows))
        if rows.shape != vertex.shape:
            fail(ArgumentError, where, "rows", f"must have one entry per request ({vertex.size})", rows.shape)
        if rows.size and (rows.min() < 0 or rows.max() >= n):
            fail(ArgumentError, where, "rows", f"must be row ids in [0, {n})", rows)
        if vertex.size and (vertex.min() < 0 or vertex.max() >= 2**32 - 1):
            fail(ArgumentError, where, "vertex", "must be vertex ids in [0, 2**32 - 1)", vertex)
    elif vertex.size and (vertex.min() < row_offset or vertex.max() >= row_offset + n
                          or vertex.max() >= 2**32 - 1):
        fail(ArgumentError, where, "vertex", f"must be row ids in [{row_offset}, {row_offset + n})", vertex)
    if batch.size != vertex.size:
        fail(ArgumentError, where, "batch", f"must have one entry per request ({vertex.size})", batch.size)
    if batch.size and (batch.min() < 0 or batch.max() >= 2**32):
        fail(ArgumentError, where, "batch", "must be in [0, 2**32)", batch)
    fanout = int(fanout)
    if fanout < 1 and fanout != -1:
        fail(ArgumentError, where, "fanout", "must be >= 1 or -1", fanout)
    if not 0 <= int(hop_word) < 2**32:
        fail(ArgumentError, where, "hop_word", "must be in [0, 2**32)", hop_word)
    k0, k1 = (int(k) for k in key)
    if not (0 <= k0 < 2**32 and 0 <= k1 < 2**32):
        fail(ArgumentError, where, "key", "must be two words in [0, 2**32)", key)
    weights = _f64(None if weights is None else np.asarray(weights))
    if weights is not None and weights.shape != indices.shape:
        fail(ArgumentError, where, "weights", "must match indices", weights.shape)
    if weighted and weights is None:
        fail(ArgumentError, where, "weights", "are needed for weighted sampling", show_value=False)
    count, edge, column = _kernels.sample_rows(indptr, indices, weights if weighted else None, row_offset,
                                               vertex, batch, fanout, int(hop_word), bool(replace),
                                               bool(weighted), k0, k1, _THREADS, rows)
    row_ptr = np.zeros(vertex.size + 1, dtype=np.int64)
    np.cumsum(count, out=row_ptr[1:])
    return RowMatrix(row_ptr, column, None, edge)
