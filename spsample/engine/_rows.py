"""Row sources shared by the graphs whose rows are not all in memory: the distributed graph
(rows held by their owners, fetched or selected there) and the disk graph (rows read from a
file). One hop of any sampler runs on the rows its frontier needs (:class:`FetchHop`; a
subclass says where rows come from in ``fetch_rows`` and what it counts in ``_record``); a
row-local hop can instead select at the rows' holder (:func:`owner_select`, on a
:class:`Block` of rows) or lower onto the native request kernels (:func:`request_hop`).
"""

import dataclasses
import time

import numpy as np

from .. import native as _native
from . import _primitives as prim
from ._lazy import Expr, Frontier, NotLowerable, RowSelection, RowView, Streams, ThresholdSelection
from ._lowering import lower_requests
from ._native_run import select_requests
from ._run import UNTRACEABLE, trace

__all__ = ["trace_plans", "row_local", "NO_ROWS", "request_hop", "has_rows", "on_held_rows",
           "concrete_frontier", "Block", "owner_select", "FetchedRows", "FetchHop",
           "in_request_order"]


def trace_plans(dg, sampler, batch_ids, seed, epoch, schedule=None, seed_time=None):
    """The sampler's traced hops, or ``None`` when its constructors cannot be traced (every
    hop then fetches rows and runs the constructors on them)."""
    try:
        return trace(sampler, dg, batch_ids, seed, epoch, schedule=schedule,
                     seed_time=seed_time)
    except UNTRACEABLE:
        return None


def row_local(plan):
    """Whether each row's sample of this hop depends on that row of ``A`` alone, so the row's
    owner can draw it: a row selection (node-wise rules, LABOR's threshold) over a view of the
    sampled graph whose values read nothing but the row's own entries and global vectors, with
    streams keyed by the row's vertex, its row id, or the entries' columns."""
    if plan.kind != "rows" or not isinstance(plan.selection, (RowSelection, ThresholdSelection)):
        return False
    sel, Q = plan.selection, plan.frontier
    P = sel.P
    if not P.frontier.same_rows(Q) or not sel.streams.frontier.same_rows(Q):
        return False
    return P.expr is None or _row_local_values(P.expr, P)


def _row_local_values(expr, view):
    if expr.op == "indicator":
        return expr.frontier.same_rows(view.frontier)
    if expr.op == "view":
        return expr.view.frontier.same_rows(view.frontier) and expr.view.graph is view.graph \
            and (expr.view.expr is None or _row_local_values(expr.view.expr, view))
    if expr.op == "weight":
        return expr.graph is view.graph
    return all(_row_local_values(a, view) for a in expr.args)


NO_ROWS = (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), None, np.zeros(0))


def request_hop(plan, graph, **where):
    """The hop lowered for requested rows (:func:`~spsample.engine._lowering.lower_requests`;
    ``where``: its ``rows`` or ``edges``), or ``None``: native kernels off, a hop that is not
    row-local, or a rule the kernels do not implement (its NumPy evaluation then runs)."""
    if plan is None or not _native.enabled() or not row_local(plan):
        return None
    try:
        return lower_requests(plan, graph, **where)
    except NotLowerable:
        return None


def _looked_up(plan, state):
    """Vertices of the rows a hop's values look up besides its frontier's (the previous vertices
    of node2vec's walks): a pulled hop fetches them too."""
    if plan is None or plan.kind != "rows" or plan.selection.P.expr is None:
        return []
    P = plan.selection.P
    return [concrete_frontier(state, f).vertex for f in _other_views(P.expr, P.frontier)]


def _other_views(expr, base):
    if expr.op == "view" and not expr.view.frontier.same_rows(base):
        yield expr.view.frontier
    for a in expr.args:
        yield from _other_views(a, base)


def has_rows(dg, vertices):
    """Which ``vertices`` have a row in ``dg`` (bool mask), or ``None`` when all of them do.
    A relation's block has no row for another node type's vertex (a link minibatch's hop-1
    frontier holds both endpoint types); a graph without a placement (on disk) holds all."""
    placement = getattr(dg, "placement", None)
    if placement is None:
        return None
    held = placement.holds(vertices)
    return None if held.all() else held


def on_held_rows(dg, Q, select):
    """``select(Q')`` on the rows ``Q'`` of frontier ``Q`` whose vertices are rows of ``dg``
    (:func:`has_rows`), as ``S`` of all of ``Q`` (the others empty)."""
    held = has_rows(dg, Q.vertex)
    if held is None:
        return select(Q)
    rows = np.flatnonzero(held)
    S = select(Frontier(Q.batch[rows], Q.vertex[rows], Q.local[rows], row_id=Q.row_id[rows]))
    lengths = np.zeros(len(Q), dtype=np.int64)
    lengths[rows] = S.row_lengths()
    indptr = np.zeros(len(Q) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    return prim.RowMatrix(indptr, S.indices, S.data, S.edge_id)


def concrete_frontier(state, Q):
    """The rows of a traced frontier on the concrete bulk state."""
    if Q.kind == "new_nodes":
        return state.step_nodes(Q.hop, Q.hop_last)
    if Q.kind == "all_nodes":
        return state.all_nodes()
    if Q.kind == "edge_sources":
        return state.edge_sources(Q.hop)
    if Q.kind == "edge_destinations":
        return state.edge_destinations(Q.hop)
    return state.rows(*Q.given)


class Block:
    """This rank's rows of ``A`` as a graph indexed by global vertex ids: views and selections
    read row ``v`` at ``dg.local_rows(v)``; per-edge vectors are indexed by
    ``dg.global_edges``; ``entry_time``: a time-sorted block's entry times (or ``None``).
    A :class:`~spsample.graph._source.RowSource` (the rows selected at their owner)."""

    def __init__(self, dg):
        self.indptr, self.indices, self.weights = dg.indptr, dg.indices, dg.weights
        self.num_nodes, self.num_edges = dg.num_nodes, dg.num_edges
        self.local_rows, self.global_edges = dg.local_rows, dg.global_edges
        self.entry_time = getattr(dg, "entry_time", None)


def owner_select(sel, block, vertex, keys, batch, batch_ids, ctx, run_time=None):
    """The hop's own selection, evaluated by NumPy on the requested rows of a block of rows
    (a :class:`Block`: this rank's, or rows read from disk): ``S`` with block-local edge ids
    (the oracle of the native row sampler). ``batch`` numbers the requests' runs (their
    minibatch ids are ``batch_ids[batch]``); ``run_time`` (one per run, of the kind of
    ``block.entry_time``): a temporal
    hop's cut, each row's entries with time ``<= run_time[batch]`` (``block.entry_time``)."""
    Q = Frontier(batch, vertex, np.zeros(vertex.size, dtype=np.int64), row_id=keys)
    expr = _rebased(sel.P.expr, sel.P.frontier, Q, block)
    P = RowView(block, Q, expr, None if run_time is None else (block.entry_time, run_time))
    keyed_by = sel.streams.keyed_by
    if keyed_by == "column":
        streams = Streams(None, batch_ids, ctx.hop_word, ctx.key, keyed_by="column", frontier=Q)
        owner_sel = ThresholdSelection(P, sel.fanout, streams)
    else:
        streams = Streams(vertex if keyed_by == "vertex" else keys, batch_ids[batch],
                          ctx.hop_word, ctx.key)
        owner_sel = RowSelection(P, sel.fanout, streams, replace=sel.replace,
                                 weighted=sel.weighted, method=sel.method, bound=sel.bound)
    owner_sel.fanout_vector = sel.fanout_vector
    return prim.evaluate_selection(owner_sel)


def _rebased(expr, traced, Q, block):
    """``expr`` with its references to the traced frontier's own rows moved to ``Q``, and the
    edge weights read from ``block`` (block-local edge ids)."""
    if expr is None:
        return None
    if expr.op == "indicator":
        return Expr("indicator", frontier=Q)
    if expr.op == "weight":
        return Expr("weight", graph=block)
    if expr.op == "view":                  # a view of the same rows: its own values
        inner = expr.view.expr
        return Expr("const", value=1.0) if inner is None else _rebased(inner, traced, Q, block)
    if not expr.args:
        return expr
    return Expr(expr.op, *[_rebased(a, traced, Q, block) for a in expr.args])


class FetchedRows:
    """The rows of ``A`` fetched so far, laid out as a graph over all ``n`` vertices (rows not
    fetched are empty), so that a sampler's constructors run on it unchanged. ``edge_ids``
    maps each stored entry to the global edge id its samples report (and per-edge arrays of
    the whole graph, ``whole_num_edges`` long, are read through it); ``entry_time`` (rows of
    a time-sorted block, else ``None``) the entries' times, which temporal constructors cut
    the rows at (:meth:`~spsample.engine._lazy.RowView.until`).

    Implements :class:`~spsample.graph._source.RowSource` (the rows fetched or read) and
    :class:`~spsample.graph._source.GraphSource` (the whole graph's quantities, asked of
    ``whole_graph``)."""

    def __init__(self, num_nodes, ids, degree, indices, weights, edge_ids, whole_graph,
                 entry_time=None):
        self.num_nodes = num_nodes
        lengths = np.zeros(num_nodes, dtype=np.int64)
        lengths[ids] = degree
        self.indptr = np.zeros(num_nodes + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.indptr[1:])
        self.indices, self.weights, self.edge_ids = indices, weights, edge_ids
        self.entry_time = entry_time
        self._whole_graph = whole_graph
        self._layerwise_weights = None
        self.whole_num_edges = int(whole_graph.num_edges)    # per-edge arrays index these

    @property
    def num_edges(self):
        return self.indices.size

    def degree(self):
        return np.diff(self.indptr)

    # whole-graph quantities (the GraphSource protocol): the whole graph's, never these rows'
    @property
    def max_degree(self):
        """The whole graph's longest row, int."""
        return self._whole_graph.max_degree

    def layerwise_scale(self):
        """The whole graph's power of two (see :meth:`spsample.Graph.layerwise_scale`)."""
        return self._whole_graph.layerwise_scale()

    def column_weights(self):
        """The whole graph's FastGCN ``(q, cumulative)``, float64 arrays of shape (n,)."""
        return self._whole_graph.column_weights()

    def layerwise_weights(self):
        """These rows' weights scaled as the whole graph's (:meth:`layerwise_scale`): entry
        for entry the whole graph's ``layerwise_weights()`` at ``edge_ids``, bit for bit.

        Returns
        -------
        float64, shape (num_edges,), the same array on every call; ``None`` when unweighted.
        """
        if self.weights is None:
            return None
        if self._layerwise_weights is None:
            self._layerwise_weights = self.weights * self._whole_graph.layerwise_scale()
        return self._layerwise_weights

    def sorted_entry_time(self, time, check):
        """The check of entry times (``RowView.until``) runs on these rows: ``check()``."""
        return check()


class FetchHop:
    """One hop of any sampler after fetching the rows its frontier needs (cached per bulk).

    Two ways to keep the fetched rows. Any sampler: merged into a CSR sorted by vertex after
    every fetch (:meth:`_merge`), on which the sampler's constructors run unchanged through a
    :class:`FetchedRows` view. Row-local hops the kernels implement (``native_rows``; every
    pulled hop of the bulk must be one): appended in arrival order (:meth:`_append`, O(new
    entries) per hop, no re-sort of the entries) and selected by
    :func:`~spsample.engine._native_run.select_requests`, which reads each request's row
    through its slot; the NumPy way stays the oracle (same bits).

    Rows of a time-sorted block (``timed``) come with their entries' times (``self.time``) and
    keep each entry's canonical edge id (``self.edge``, :func:`_canonical_edges`).

    A subclass is a :class:`~spsample.graph._source.RowFetcher`: its ``fetch_rows(need)`` says
    where rows come from, its ``_record`` what it counts.
    """

    def __init__(self, dg, native_rows=False):
        self.dg = dg
        self.native_rows = native_rows
        self.timed = getattr(dg, "entry_time", None) is not None
        self.ids = np.zeros(0, dtype=np.int64)          # ascending
        self.degree = np.zeros(0, dtype=np.int64)
        self.start = np.zeros(0, dtype=np.int64)         # global edge id of each row's entry 0
        self.indices = np.zeros(0, dtype=np.int64)       # rows in the order of self.ids
        self.weights = None if dg.weights is None else np.zeros(0)
        self.time = np.zeros(0, dtype=dg.entry_time.dtype) if self.timed else None
        self.edge = np.zeros(0, dtype=np.int64) if self.timed else None
        # native_rows: self.start, self.indices, ... (per entry) are in arrival (slot) order
        self.slot = np.zeros(0, dtype=np.int64)          # slot of each of self.ids
        self.row_ptr = np.zeros(1, dtype=np.int64)       # slot -> its entries in self.indices

    def __call__(self, sampler, state, ctx, stats, plan=None):
        t0 = time.perf_counter()
        Q = sampler.frontier(state, ctx)
        rows = np.unique(np.concatenate([Q.vertex] + _looked_up(plan, state)))
        held = has_rows(self.dg, rows)
        need = self._missing(rows if held is None else rows[held])
        t1 = time.perf_counter()
        fetched = self.fetch_rows(need)
        t2 = time.perf_counter()
        if self.native_rows:
            self._append(need, *fetched)
            self._sample_native(sampler, state, Q, ctx, plan)
        else:
            self._merge(need, *fetched)
            view = self._view()
            sampler.sample_hop(view, state, dataclasses.replace(ctx, graph=view))
            edges = state.hop_edges[ctx.step - 1]
            if edges is not None:
                edges["edge_id"] = view.edge_ids[edges["edge_id"]]
        t3 = time.perf_counter()
        self._record(stats, Q, need, fetched[0])
        stats["exchange_s"] += t2 - t1
        stats["local_s"] += (t1 - t0) + (t3 - t2)

    def _missing(self, rows):
        """The rows of ``rows`` (ascending) not fetched yet in this bulk."""
        return np.setdiff1d(rows, self.ids, assume_unique=True)

    def _per_entry(self, degree, start, indices, weights, time):
        """``{name: (stored array, the new rows' part)}`` of the arrays kept per entry."""
        parts = {"indices": (self.indices, indices), "weights": (self.weights, weights)}
        if self.timed:
            parts.update(time=(self.time, time),
                         edge=(self.edge, _canonical_edges(degree, start, indices)))
        return {name: pair for name, pair in parts.items() if pair[0] is not None}

    def _append(self, need, degree, start, indices, weights, time=None):
        """Store the rows ``need`` after the ones fetched so far (new slots, arrival order)."""
        first_slot = self.start.size
        ids = np.concatenate([self.ids, need])
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order]
        self.slot = np.concatenate([self.slot,
                                    np.arange(first_slot, first_slot + need.size)])[order]
        self.row_ptr = np.concatenate([self.row_ptr, self.row_ptr[-1] + np.cumsum(degree)])
        for name, (held, new) in self._per_entry(degree, start, indices, weights, time).items():
            setattr(self, name, np.concatenate([held, new]))
        self.start = np.concatenate([self.start, start])

    def _sample_native(self, sampler, state, Q, ctx, plan):
        """One row-local hop on the stored rows by the native kernels."""
        sampler.extract(state, Q, on_held_rows(self.dg, Q, lambda rows: self._select_native(
            rows, ctx, plan)), ctx)

    def _select_native(self, Q, ctx, plan):
        """``S`` of the frontier rows ``Q`` (fetched rows of this block)."""
        rows = self.slot[np.searchsorted(self.ids, Q.vertex)]
        lowered = lower_requests(plan, self.dg, rows=(self.row_ptr, self.indices,
                                                      self.weights, self.time))
        keyed_by_row = plan.selection.streams.keyed_by == "row"
        timed = lowered.hop["time"] >= 0
        S = select_requests(lowered, Q.vertex, rows, ctx.batch_ids[Q.batch],
                            ctx.hop_word, ctx.key, keys=Q.row_id if keyed_by_row else None,
                            times=plan.selection.P.cutoff[1][Q.batch] if timed else None)
        if self.timed:                          # buffer position -> canonical edge id
            S.edge_id = self.edge[S.edge_id]
        else:                                   # buffer position -> edge id
            first_edge = self.start[rows] - self.row_ptr[rows]
            S.edge_id = S.edge_id + np.repeat(first_edge, S.row_lengths())
        return S

    def _merge(self, need, degree, start, indices, weights, time=None):
        ids = np.concatenate([self.ids, need])
        order = np.argsort(ids, kind="stable")
        all_degree = np.concatenate([self.degree, degree])
        all_start = np.concatenate([self.start, start])
        row_first = np.cumsum(all_degree) - all_degree
        offset, segment = prim.segment_arange(all_degree[order])
        take = row_first[order][segment] + offset
        for name, (held, new) in self._per_entry(degree, start, indices, weights, time).items():
            setattr(self, name, np.concatenate([held, new])[take])
        self.ids, self.degree, self.start = ids[order], all_degree[order], all_start[order]

    def _view(self):
        if self.timed:
            edge_ids = self.edge
        else:
            offset, segment = prim.segment_arange(self.degree)
            edge_ids = self.start[segment] + offset
        return FetchedRows(self.dg.num_nodes, self.ids, self.degree, self.indices,
                            self.weights, edge_ids, self.dg, self.time)


def _canonical_edges(degree, start, indices):
    """The canonical edge id of each entry of rows fetched from a time-sorted block: the row's
    first edge id ``start`` plus the rank of the entry's column within its row (a canonical
    row lists its columns ascending, without repeats, so that rank is the entry's position in
    the canonical row)."""
    offset, segment = prim.segment_arange(degree)
    rank = np.empty_like(offset)
    rank[np.lexsort((indices, segment))] = offset     # the sort keeps every row in place
    return start[segment] + rank


def in_request_order(order, degree, start, body):
    """Rows received grouped by owner (``order``: the request order sorted by owner) put back
    in request order: ``(degree, start, body)`` (``body``: one row of values per entry)."""
    if np.all(order[1:] > order[:-1]):               # owners ascend with the ids: as sent
        return degree.copy(), start.copy(), body
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    first = np.cumsum(degree) - degree
    offset, segment = prim.segment_arange(degree[back])
    take = first[back][segment] + offset
    return degree[back], start[back], body[take]
