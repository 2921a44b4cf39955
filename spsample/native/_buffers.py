"""The arrays handed to the kernels: dtype and layout normalised without copies where possible,
every bound the C++ code relies on checked here, and the graph-derived arrays the kernels read
(cached on the graph)."""

import numpy as np

from .._errors import ArgumentError
from ..graph._graph import frozen_filled
from .._validate import fail

__all__ = ["as_i64", "as_f64", "bulk_args", "indices32", "internal_columns", "row_weight_stats"]


def as_i64(a):
    """``a`` as a C-contiguous int64 array (itself when it already is one)."""
    return a if (a.dtype == np.int64 and a.flags.c_contiguous) else np.ascontiguousarray(a, dtype=np.int64)


def as_f64(a):
    """``a`` as a C-contiguous float64 array (itself when it already is one); ``None`` stays."""
    if a is None:
        return None
    return a if (a.dtype == np.float64 and a.flags.c_contiguous) else np.ascontiguousarray(a, dtype=np.float64)


def bulk_args(graph, seeds, sizes, batch_ids, seed, epoch):
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
    indptr, indices = as_i64(graph.indptr), as_i64(graph.indices)
    seeds, sizes, batch_ids = as_i64(np.asarray(seeds)), as_i64(np.asarray(sizes)), as_i64(np.asarray(batch_ids))
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


def indices32(graph):
    """The graph's column ids as uint32, cached on it (4 bytes per edge): the row-wise kernel's
    random reads of sampled columns touch half the memory."""
    def compute():                  # frozen in place: the cache keeps it without a copy
        def fill(pos, piece):
            np.copyto(piece, graph.indices[pos:pos + piece.size], casting="unsafe")
        return frozen_filled(np.uint32, len(graph.indices), fill)
    cached = getattr(graph, "cached", None)
    return compute() if cached is None else cached("native_indices32", compute)


def internal_columns(indices, n):
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

    def fill(pos, piece):            # frozen in place: the graph's cache keeps it as it is
        np.take(internal_of, indices[pos:pos + piece.size], out=piece)
    return frozen_filled(np.uint32, len(indices), fill), internal_of, vertex_of


#: Weights for which the native weighted rule screens keys without logarithms (select.h:
#: KEY_W_MIN, KEY_W_MAX); a row with an eligible weight outside has no maximum in
#: :func:`row_weight_stats`.
KEY_W_RANGE = (2.0**-900, 2.0**900)


def row_weight_stats(graph):
    """Per row of a weighted graph, cached on it: ``(eligible, wmax, wsum)`` -- how many
    weights are ``> 0``, their maximum (NaN when one is outside :data:`KEY_W_RANGE`, 0 when
    there are none) and about their sum. The native weighted rule (select.h) screens a row's
    keys against ``wmax`` without reading its weights.

    Returns
    -------
    ndarray, float64, shape (num_nodes * 3,)
        Row ``v``'s statistics at ``[3 v, 3 v + 3)``.
    """
    def compute():
        w = np.asarray(graph.weights, dtype=np.float64)
        indptr = np.asarray(graph.indptr, dtype=np.int64)
        n = indptr.size - 1
        eligible = w > 0
        lo, hi = KEY_W_RANGE
        odd = eligible & ~((w >= lo) & (w <= hi))
        wpos = np.where(eligible, w, 0.0)
        out = np.zeros((n, 3), dtype=np.float64)
        rows = np.flatnonzero(indptr[1:] > indptr[:-1])
        if rows.size:
            starts = indptr[rows]
            out[rows, 0] = np.add.reduceat(eligible.astype(np.int64), starts)
            out[rows, 1] = np.maximum.reduceat(wpos, starts)
            out[rows, 2] = np.add.reduceat(wpos, starts)
            bad = np.add.reduceat(odd.astype(np.int64), starts) > 0
            out[rows[bad], 1] = np.nan
        return out.reshape(-1)
    cached = getattr(graph, "cached", None)
    return compute() if cached is None else cached("native_row_weight_stats", compute)
