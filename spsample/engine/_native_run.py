"""The engine's entry points into the kernels: a lowered sampler run on one bulk into a
:class:`~spsample.Bulk` (:func:`run`), a lowered hop on requested rows into a ``RowMatrix``
(:func:`select_requests`), and plain node-wise sampling of requested rows built on it
(:func:`sample_rows`, the owner side of distributed push). Same bits as the NumPy evaluation."""

import numpy as np

from .._errors import ArgumentError
from .._validate import as_int, fail
from ..native import SelectRule, ValueOp, as_f64, as_i64, run_bulk, select_rows
from ._lowering import RequestHop
from ._minibatch import Bulk, HopEdges, MinibatchMajorBulk
from ._primitives import RowMatrix

__all__ = ["run", "select_requests", "sample_rows"]


def run(lowered, graph, seeds, sizes, batch_ids, seed, epoch, *, windows=None,
        minibatch_major=False):
    """Run a lowered sampler on one bulk: a :class:`~spsample.Bulk`, the same bits as the
    NumPy evaluation (a :class:`~spsample.engine._minibatch.MinibatchMajorBulk` for a row-wise
    sampler when ``minibatch_major``: the same minibatches, edges laid out per minibatch).

    ``windows=(span, map, block)`` runs a row-wise plan hop-major over the windows of a graph
    whose arrays lie in the memory map ``map`` (``native/windowed.h``; ``span`` entries per
    window, pages released in blocks of ``block`` bytes); it then returns ``None`` when a column
    id outside ``[0, n)`` was read (see :mod:`spsample.io._disk_map`).

    Raises
    ------
    ResourceLimitError
        When the output would exceed the memory available (checked as the buffers grow).
    SamplerError
        When a rejection rule meets a value above its bound.
    """
    batch_ids, sizes, out = run_bulk(lowered.kernel, lowered.spec, graph, seeds, sizes,
                                     batch_ids, seed, epoch, windows=windows,
                                     minibatch_major=minibatch_major)
    if out is None:
        return None
    if minibatch_major and lowered.kernel == "rowwise" and windows is None:
        return MinibatchMajorBulk(batch_ids, sizes, *out)
    n_id, node_offsets, counts, hops = out
    return Bulk(batch_ids, sizes, n_id, node_offsets, counts,
                [HopEdges(d, s, e, w, o) for d, s, e, w, o in hops],
                layerwise=lowered.kernel == "layerwise", path="native")


def select_requests(lowered, vertex, row, batch, hop_word, key, *, keys=None, num_threads=None,
                    windows=None, times=None):
    """The lowered hop's selection on requested rows (``native/rowwise.h``): the bits of the
    single-process kernel and of the hop's NumPy evaluation on the same rows.

    Parameters
    ----------
    lowered : RequestHop
    vertex : int64, shape (r,)
        Global vertex of each request.
    row : int64, shape (r,)
        Its row in ``lowered.graph``.
    batch : int64, shape (r,)
        Global minibatch id of each request; requests of one minibatch are best adjacent.
    hop_word : int
    key : (int, int)
    keys : int64, shape (r,), optional
        Stream words of hops keyed per row (walk ids).
    num_threads : int, optional
        Threads for this call (default: :func:`get_num_threads`); 1 for small calls, where
        starting a parallel region costs more than the work (the result is the same).
    windows : tuple, optional
        ``(order, ends, map, release)``: the requests come grouped in windows (window ``w``
        ends before request ``ends[w]``), taken in that order, a window's pages released once
        its requests are done (``release[w]``: pairs of page-aligned byte offsets into
        ``map``, a uint8 view of a read-only shared file mapping, or ``None``); request ``i``'s
        samples become row ``order[i]`` (a permutation). See :mod:`spsample.io._disk_map`.
    times : int64 or float64, shape (r,), optional
        A temporal hop's cut (and only then): request ``i`` reads the prefix of its row whose
        entry times are ``<= times[i]`` (compared exactly whatever the two kinds).

    Returns
    -------
    RowMatrix with ``r`` rows: ``indices`` the kept columns, ``edge_id`` their positions in
    ``lowered.graph``'s indices (ascending within a row, repeated under replacement).
    """
    if len(vertex) == 0:                 # also where there are no rows to read
        empty = np.zeros(0, dtype=np.int64)
        return RowMatrix(np.zeros(1, dtype=np.int64), empty, None, empty.copy())
    indptr, column, edge = select_rows(lowered, vertex, row, batch, hop_word, key, keys=keys,
                                       num_threads=num_threads, windows=windows, times=times)
    return RowMatrix(indptr, column, None, edge)


def sample_rows(indptr, indices, weights, vertex, batch, fanout, hop_word, key, *, replace=False,
                weighted=False, row_offset=0, rows=None):
    """Node-wise sampling of requested rows of a block of ``A`` (the owner side of push).

    ``sample_rows(row_select(indptr, indices, weights, vertex, row_offset=row_offset), fanout,
    Streams(vertex, batch, hop_word, key), replace=..., weighted=...)`` of
    :mod:`spsample._primitives`, bit for bit, computed by :func:`select_requests` (the row-wise
    engine's selection pass; OpenMP over the minibatches of the requests; the result does not
    depend on the number of threads).

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
    where = "native sample_rows"
    indptr, indices = as_i64(np.asarray(indptr)), as_i64(np.asarray(indices))
    vertex, batch = as_i64(np.asarray(vertex)), as_i64(np.asarray(batch))
    for name, arr in (("indptr", indptr), ("indices", indices), ("vertex", vertex), ("batch", batch)):
        if arr.ndim != 1:
            fail(ArgumentError, where, name, "must be one-dimensional", arr.shape)
    if indptr.size < 1 or indptr[0] != 0 or indptr[-1] != indices.size or \
            (indptr[1:] < indptr[:-1]).any():
        fail(ArgumentError, where, "indptr", "must run from 0 to len(indices), non-decreasing",
             indptr.size)
    n, row_offset = indptr.size - 1, as_int(where, "row_offset", row_offset)
    if rows is not None:
        rows = as_i64(np.asarray(rows))
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
    fanout = as_int(where, "fanout", fanout)
    if (fanout < 1 and fanout != -1) or fanout >= 2**31:
        fail(ArgumentError, where, "fanout", "must be >= 1 (below 2**31) or -1", fanout)
    if not 0 <= as_int(where, "hop_word", hop_word) < 2**32:
        fail(ArgumentError, where, "hop_word", "must be in [0, 2**32)", hop_word)
    k0, k1 = (int(k) for k in key)
    if not (0 <= k0 < 2**32 and 0 <= k1 < 2**32):
        fail(ArgumentError, where, "key", "must be two words in [0, 2**32)", key)
    weights = as_f64(None if weights is None else np.asarray(weights))
    if weights is not None and weights.shape != indices.shape:
        fail(ArgumentError, where, "weights", "must match indices", weights.shape)
    if weighted and weights is None:
        fail(ArgumentError, where, "weights", "are needed for weighted sampling", show_value=False)
    if weighted and weights.size and (not np.isfinite(weights).all() or weights.min() < 0):
        fail(ArgumentError, where, "weights", "must be finite and >= 0", show_value=False)
    if weighted:
        select, program = (SelectRule.WEIGHTED_REP if replace else SelectRule.WEIGHTED), [(ValueOp.WEIGHT, 0, 0, 0.0)]
    else:
        select, program = (SelectRule.UNIFORM_REP if replace else SelectRule.UNIFORM), []
    hop = dict(aux=None, program=program, select=select, fanout=fanout, fanout_vec=-1, bound=0.0,
               key=0)
    n_vertices = max(n, int(vertex.max()) + 1 if vertex.size else 0)
    lowered = RequestHop((indptr, indices, weights if weighted else None, None), hop, [], [],
                         n_vertices)
    row = vertex - row_offset if rows is None else rows
    return select_requests(lowered, vertex, row, batch, hop_word, (k0, k1))
