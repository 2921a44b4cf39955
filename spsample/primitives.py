"""The vocabulary samplers are written in: lazy matrices that the engine runs natively.

A sampler's constructors (:class:`spsample.Sampler`) return these objects; the engine traces
them for the whole bulk and lowers them onto native kernels (or evaluates them with NumPy, the
oracle, when the kernels are off). Shapes are for one hop of a bulk of ``k`` minibatches::

    Q  state.new_nodes(h)          Frontier, r rows: the vertices first reached at hop h
       state.all_nodes()           Frontier: every vertex so far (layer-wise)
       state.edge_sources(h)       Frontier: where hop h's edges lead (walks; repeats allowed)
       state.edge_destinations(h)  Frontier: where they came from, row for row
       state.rows(batch, vertex)   Frontier: given (minibatch position, vertex) rows
       Q.previous()                the other ends of the same edges (a walk's last vertex)
       Q.as_matrix()               Q as a selection matrix, in values (u == vertex[r])

    P  gather(graph, Q)            RowView, r × n: Q·A as row extents into A (no copy)
       P.with_weights()            × A's edge weights
       P.square()                  A∘A
       P.scale_columns(vec)        × vec[u]             (vec: shape (n,))
       P.scale_rows(vec)           × vec[v]             (vec: shape (n,))
       P.scale_edges(arr)          × arr[e]             (arr: shape (nnz,))
       P * X, P + X                with numbers, other views of the same rows, or views of
                                   aligned rows (looked up per entry) -- see RowView
       column_sums(P, ctx)         ColumnSums, k × n: Q_b·P summed per minibatch (LADIES)
       global_columns(q)           GlobalColumns, 1 × n: one distribution (FastGCN)

    S  select_rows(P, fanout, streams, replace=, weighted=, method=, bound=)
                                   r × n: per row, uniform / weighted, with / without
                                   replacement, fanout per hop or per row vertex
       select_threshold(P, fanout, Streams.per_column(Q, ctx))
                                   r × n: LABOR-0's shared per-column variates
       select_columns(P, fanout, ctx)    k × n: per minibatch over its rows' entries
       select_global(P, fanout, ctx)     k × n: i.i.d. draws from a global distribution
       Streams.per_vertex / per_row / per_column    how rows key their random streams

    extraction
       state.add_sampled(Q, S, dedup=True)     S's entries become the hop's edges
       state.add_layer(Q, S, values=, probabilities=)   layer-wise edges (LADIES, FastGCN)

The concrete building blocks (``row_select``, ``sample_rows``, ``column_accumulate``,
``sample_columns``, ``sample_columns_by_entries``, ``sample_global``, ``normalize_rows``,
``segmented_sum``, ``segment_arange``, ``spgemm``, ``RowMatrix``) work on arrays directly.
"""

from .engine._lazy import (
    ColumnSums, Expr, Frontier, GlobalColumns, RowView, Streams, column_sums, gather,
    global_columns,
)
from .engine._primitives import (
    RowMatrix, column_accumulate, normalize_rows, probabilities_of, row_select, sample_columns,
    sample_columns_by_entries, sample_global, sample_rows, segment_arange, segmented_sum,
    select_columns, select_global, select_rows, select_threshold, spgemm,
)

__all__ = [
    # lazy vocabulary
    "Frontier", "RowView", "Expr", "ColumnSums", "GlobalColumns", "Streams", "gather",
    "column_sums", "global_columns", "select_rows", "select_threshold", "select_columns",
    "select_global", "probabilities_of",
    # concrete building blocks
    "RowMatrix", "row_select", "spgemm", "normalize_rows", "segmented_sum", "segment_arange",
    "sample_rows", "column_accumulate", "sample_columns", "sample_columns_by_entries",
    "sample_global",
]
