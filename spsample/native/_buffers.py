"""The arrays handed to the kernels: dtype and layout normalised without copies where possible,
every bound the C++ code relies on checked here, and the graph-derived arrays the kernels read
(kept by the graph: ``graph.indices32()``, ``graph.internal_columns()``)."""

import numpy as np

from .._errors import ArgumentError
from ..graph._graph import frozen_filled
from ..graph._weights import internal_columns as _internal_columns
from ..graph._weights import column_fence as _column_fence
from ..graph._weights import uint32_columns
from .._validate import fail
from ._switch import kernel_threads, kernels

__all__ = ["as_i64", "as_f64", "bulk_args", "indices32", "column_fence", "internal_columns",
           "row_weight_stats", "alias_tables", "alias_table"]


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
    """The graph's column ids as uint32 (4 bytes per edge: the row-wise kernel's random reads of
    sampled columns touch half the memory): ``graph.indices32()``, built once and kept by a
    graph that holds its rows (:class:`~spsample.graph._source.GraphSource`); built for the
    call for rows without that method (a view of rows read for one hop)."""
    own = getattr(graph, "indices32", None)
    return own() if own is not None else uint32_columns(graph.indices, frozen_filled)


def column_fence(graph, columns):
    """The fence of ``columns`` (``indices32(graph)``, the array the kernel reads):
    ``graph.column_fence()`` when the graph keeps one (built once, over the same memory), else
    built for the call (:func:`spsample.graph._weights.column_fence`).

    Returns
    -------
    (fence, phase) : uint32 array of shape (about nnz / 16,), int
    """
    own = getattr(graph, "column_fence", None)
    if own is not None and getattr(graph, "indices32", None) is not None and graph.indices32() is columns:
        return own()
    return _column_fence(columns)


def internal_columns(indices, n):
    """The layer-wise kernel's internal column ids of the CSR columns ``indices`` over ``n``
    vertices (:func:`spsample.graph._weights.internal_columns`; a graph keeps its own:
    ``graph.internal_columns()``).

    Returns
    -------
    indices32 : uint32, shape (nnz,)
        ``internal_of[indices]``: the CSR's columns as internal ids (rows keep their order).
    internal_of, vertex_of : uint32, shape (n,)
        Inverse permutations: vertex -> internal id, internal id -> vertex.
    """
    return _internal_columns(indices, n, frozen_filled)


def row_weight_stats(graph):
    """The native weighted rule's per-row statistics of ``graph``
    (:meth:`spsample.Graph.row_weight_stats`, built once per graph).

    Returns
    -------
    ndarray, float64, shape (num_nodes * 3,)
        Row ``v``'s ``(eligible, wmax, wsum)`` at ``[3 v, 3 v + 3)``.
    """
    return graph.row_weight_stats()


def alias_tables(indptr, weights):
    """:func:`spsample.graph._weights.alias_tables` by the kernels (the same bits: the rows'
    tables built row by row, in parallel).

    Returns
    -------
    table : uint32, shape (nnz, 2); share : float64, shape (n,); finite : bool, shape (n,)
    """
    table, share, finite = kernels.alias_tables(as_i64(indptr), as_f64(weights), kernel_threads())
    return table, share, finite.astype(bool)


def alias_table(graph):
    """``graph.alias_table()`` built by the kernels (:func:`alias_tables`), once per graph;
    ``None`` where the graph has none (unweighted, a row summing past the largest float64, or
    rows that are not all in memory)."""
    own = getattr(graph, "alias_table", None)
    return own(build=alias_tables) if own is not None else None
