"""The bulk state: what has been sampled so far for the ``k`` minibatches of a bulk.

Samplers read frontiers from it (``Q``) and record each hop's extraction into it. The same class
serves the two ways the engine runs a sampler's constructors:

* **concrete** (the NumPy path): vertices and edges are kept per hop as flat arrays sorted by
  minibatch, every operation vectorised over the bulk;
* **symbolic** (tracing, for the native engine and the scalar reference): frontiers are
  placeholders (``"the vertices first reached at hop 2"``) and each hop's extraction is recorded
  as a :class:`HopPlan` instead of being executed.
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._errors import ArgumentTypeError, SamplerError, SeedError
from ._lazy import (ColumnSelection, ColumnSums, Frontier, GlobalColumns, GlobalSelection,
                    NotLowerable, RowSelection, RowView, SymbolicFrontier, ThresholdSelection,
                    is_symbolic)
from ._minibatch import Bulk, HopEdges
from .._validate import as_index_array, as_int, fail
from .. import native as _native
from ._primitives import evaluate_selection, normalize_rows, RowMatrix, segment_arange
from ..native import insert_bulk, lookup_bulk

__all__ = ["BulkState", "HopPlan"]

_NO_POSITION = np.iinfo(np.int64).max


@dataclass
class HopPlan:
    """One traced hop: its frontier, selection and extraction.

    Attributes
    ----------
    kind : {"rows", "layer"}
        ``"rows"``: ``S``'s entries are the hop's edges (node-wise, walks, LABOR);
        ``"layer"``: the hop adds ``S``'s columns and takes every edge between the frontier
        and the vertex set (LADIES, FastGCN).
    frontier : Frontier
    selection : RowSelection, ThresholdSelection, ColumnSelection or GlobalSelection
    dedup : bool
        ``"rows"``: new vertices deduplicated per minibatch (else appended per edge).
    values : RowView or None
        ``"layer"``: the edge values' numerators (A's values on the frontier's rows).
    probabilities : ColumnSums or GlobalColumns or None
        ``"layer"``: the denominators.
    """

    kind: str
    frontier: Frontier
    selection: object
    dedup: bool = True
    values: Optional[RowView] = None
    probabilities: object = None


class BulkState:
    """The vertices and edges sampled so far for the ``k`` minibatches of a bulk.

    Vertices are numbered per minibatch in the order they are added (seeds first); with
    deduplication a vertex is stored once per minibatch.

    Parameters
    ----------
    num_nodes : int
    batch_ids : int64, shape (k,)
        Global minibatch ids.
    symbolic : bool
        Trace instead of sampling (see the module docstring).
    steps : sequence of (int, str), optional
        A heterogeneous bulk: per engine hop ("step") ``1..S``, the heterogeneous hop it
        belongs to and the node type it adds (its relation's source type). Frontiers then take
        heterogeneous hops (:meth:`new_nodes` with a node type); without it every hop is one
        step.
    """

    def __init__(self, num_nodes, batch_ids, *, symbolic=False, steps=None):
        self.num_nodes = int(num_nodes)
        self.batch_ids = np.asarray(batch_ids, dtype=np.int64)
        self.k = self.batch_ids.size
        self.symbolic = symbolic
        self.hop = 0
        self.count = np.zeros(self.k, dtype=np.int64)
        self.hop_nodes = []      # per hop: list of (batch, vertex, local) parts added
        self.hop_edges = []      # per hop: dict(batch, dst, src, edge_id, weight, ...)
        self.plans = []          # symbolic: per hop, the recorded HopPlan
        self._node_parts = [[] for _ in range(self.k)]   # per minibatch: deduplicated vertices
        self._node_cache = {}
        self._table = self._first = None
        self._merged = {}
        self.step_hops = None if steps is None else [0] + [int(h) for h, _ in steps]
        self.step_types = None if steps is None else [None] + [t for _, t in steps]

    # ------------------------------------------------------------------ hop bookkeeping
    def begin_hop(self, hop):
        """Start hop ``hop`` (0 = the seeds)."""
        self.hop = hop
        while len(self.hop_nodes) <= hop:
            self.hop_nodes.append([])
        if hop >= 1:
            while len(self.hop_edges) < hop:
                self.hop_edges.append(None)
            while len(self.plans) < hop:
                self.plans.append(None)

    def end_hop(self):
        """Close the current hop: a hop whose extraction recorded no edges gets empty ones."""
        h = self.hop
        if h >= 1 and not self.symbolic and self.hop_edges[h - 1] is None:
            empty = np.zeros(0, dtype=np.int64)
            self.hop_edges[h - 1] = dict(batch=empty, dst=empty, src=empty, edge_id=empty,
                                         weight=None, src_vertex=empty, row_id=empty)
        if h >= 1 and self.symbolic and self.plans[h - 1] is None:
            raise NotLowerable(f"hop {h}: extract recorded no extraction (state.add_sampled or "
                               "state.add_layer)")

    def _concrete(self, what):
        if self.symbolic:
            raise NotLowerable(f"BulkState.{what} while tracing")

    # ------------------------------------------------------------------ frontiers (Q)
    def new_nodes(self, hop, node_type=None):
        """``Q``: the vertices first reached at ``hop`` (0 = the seeds), per minibatch in local
        order. On a heterogeneous bulk, ``node_type`` keeps the vertices of that type (the
        steps of ``hop`` that add it); ``None`` keeps every type (rows of other types are empty
        in a relation's block, so they sample nothing)."""
        first, last = self._step_range(self._check_hop("new_nodes", hop, 0), node_type)
        if self.symbolic:
            return SymbolicFrontier("new_nodes", first, hop_last=last)
        return self.step_nodes(first, last)

    def step_nodes(self, first, last):
        """``Q``: the vertices first reached at engine steps ``first .. last`` (what a traced
        :meth:`new_nodes` frontier records as its ``hop .. hop_last``), per minibatch in local
        order."""
        batch, vertex, local = self._nodes_of_range(first, last)
        return Frontier._of("new_nodes", first, batch, vertex, local, local, hop_last=last)

    def _step_range(self, hop, node_type):
        """``(first, last)`` engine steps holding the new vertices of ``hop`` (of
        ``node_type``); an empty range ``(a, a - 1)`` when there are none."""
        if self.step_hops is None or hop == 0:
            return hop, hop
        found = [s for s in range(1, self.hop) if self.step_hops[s] == hop
                 and (node_type is None or self.step_types[s] == node_type)]
        if not found:
            before = sum(1 for s in range(1, self.hop) if self.step_hops[s] <= hop)
            if before == 0:
                fail(SamplerError, "BulkState.new_nodes", "hop", "names a hop with no steps",
                     hop)
            return before, before - 1
        if found[-1] - found[0] + 1 != len(found):
            fail(SamplerError, "BulkState.new_nodes", "node_type", "is added by non-consecutive "
                 "steps of the hop", node_type)
        return found[0], found[-1]

    def all_nodes(self):
        """``Q_b``: every vertex so far, ordered by (minibatch, local id)."""
        if self.symbolic:
            return SymbolicFrontier("all_nodes", 0)
        parts = [self._nodes_of(h) for h in range(len(self.hop_nodes))]
        batch = np.concatenate([p[0] for p in parts])
        vertex = np.concatenate([p[1] for p in parts])
        local = np.concatenate([p[2] for p in parts])
        order = np.lexsort((local, batch))
        return Frontier._of("all_nodes", 0, batch[order], vertex[order], local[order], local[order])

    def edge_sources(self, hop):
        """``Q``: the sampled neighbours of ``hop`` (with repetition, in edge order): where
        walks stand after step ``hop``. ``row_id`` is the id of the row that drew the edge."""
        hop = self._check_hop("edge_sources", hop, 1)
        if self.symbolic:
            return SymbolicFrontier("edge_sources", hop)
        e = self._edges_of(hop)
        return self._ends(Frontier._of("edge_sources", hop, e["batch"], e["src_vertex"], e["src"],
                                       e["row_id"]))

    def edge_destinations(self, hop):
        """``Q``: the rows that drew the edges of ``hop``, one row per edge (aligned with
        :meth:`edge_sources`): where walks stood before step ``hop``."""
        hop = self._check_hop("edge_destinations", hop, 1)
        if self.symbolic:
            return SymbolicFrontier("edge_destinations", hop)
        e = self._edges_of(hop)
        vertex = self.vertex_of(e["batch"], e["dst"]) if "dst_vertex" not in e else e["dst_vertex"]
        return self._ends(Frontier._of("edge_destinations", hop, e["batch"], vertex, e["dst"],
                                       e["row_id"]))

    def _ends(self, frontier):
        frontier._state_ends = {"edge_sources": self.edge_sources,
                                "edge_destinations": self.edge_destinations}
        return frontier

    def rows(self, batch, vertex):
        """``Q`` from given rows: vertex ``vertex[i]`` of bulk position ``batch[i]``
        (non-decreasing). Vertices not yet in their minibatch are added to it now, in row order
        (deduplicated), as vertices of the current hop. ``row_id`` = position among the
        minibatch's rows."""
        where = "BulkState.rows"
        batch = as_index_array(where, "batch", batch)
        vertex = as_index_array(where, "vertex", vertex)
        if batch.shape != vertex.shape:
            fail(SamplerError, where, "batch", f"must match vertex ({vertex.size})", batch.shape)
        if batch.size and (batch.min() < 0 or batch.max() >= self.k or np.any(np.diff(batch) < 0)):
            fail(SamplerError, where, "batch", f"must be bulk positions in [0, {self.k}), "
                 "non-decreasing", show_value=False)
        if vertex.size and (vertex.min() < 0 or vertex.max() >= self.num_nodes):
            fail(SeedError, where, "vertex", f"must be vertex ids in [0, {self.num_nodes})",
                 show_value=False)
        for arr in (batch, vertex):
            arr.flags.writeable = False
        if self.symbolic:
            f = SymbolicFrontier("rows", self.hop, rows=(batch, vertex))
            return f
        local = self._insert(batch, vertex)[0]
        return Frontier._of("rows", self.hop, batch, vertex, local,
                            np.arange(batch.size, dtype=np.int64) - np.searchsorted(batch, batch))

    def _check_hop(self, where, hop, lowest):
        hop = as_int(f"BulkState.{where}", "hop", hop)
        if self.step_hops is not None:
            if lowest == 1:
                fail(SamplerError, f"BulkState.{where}", "hop", "edge-end frontiers (walks) are "
                     "not available on heterogeneous graphs", hop)
            current = self.step_hops[self.hop] if self.hop < len(self.step_hops) else 0
            if not 0 <= hop < max(current, 1):
                fail(SamplerError, f"BulkState.{where}", "hop",
                     f"must be a hop already sampled (0..{current - 1})", hop)
            return hop
        highest = self.hop - 1 if lowest == 1 else self.hop - 1
        if hop < lowest or hop > max(highest, lowest - 1):
            fail(SamplerError, f"BulkState.{where}", "hop",
                 f"must be a hop already sampled ({lowest}..{highest})", hop)
        return hop

    # ------------------------------------------------------------------ extraction
    def add_sampled(self, Q, S, *, dedup=True):
        """Record a node-wise hop: row ``r`` of ``S`` holds the entries sampled for row ``r`` of
        ``Q``; they become the hop's edges (``dst`` = the row's vertex, ``src`` = the entry's
        column) and their new columns the hop's new vertices, in edge order (``dedup=True``:
        once per minibatch; ``False``: one new vertex per edge, as for trees)."""
        if self.symbolic:
            if not isinstance(S, (RowSelection, ThresholdSelection)):
                raise NotLowerable(f"add_sampled with {type(S).__name__} (not a row selection)")
            self._record(HopPlan("rows", Q, S, dedup=bool(dedup)))
            return
        S = _concrete_rows(S)
        row = np.repeat(np.arange(len(Q), dtype=np.int64), S.row_lengths())
        batch = Q.batch[row]
        if dedup:
            src = self._insert(batch, S.indices)[0]
        else:
            src = self._append_nodes(batch, S.indices)
        self._set_edges(dict(batch=batch, dst=Q.local[row], src=src, edge_id=S.edge_id,
                             weight=None, src_vertex=S.indices, dst_vertex=Q.vertex[row],
                             row_id=Q.row_id[row]))

    def add_layer(self, Q, S, *, values, probabilities):
        """Record a layer-wise hop: ``S`` (one row per minibatch) holds the chosen columns,
        added in ascending order; the hop's edges are every entry of ``values`` (rows of ``Q``)
        with value ``a``, ``a * a > 0``, whose column is in the minibatch, valued
        ``a / P[j, u]`` with
        ``P = probabilities`` and divided by their row's serial sum (LADIES, FastGCN)."""
        if self.symbolic:
            if not isinstance(S, (ColumnSelection, GlobalSelection)):
                raise NotLowerable(f"add_layer with {type(S).__name__} (not a column selection)")
            self._record(HopPlan("layer", Q, S, values=values, probabilities=probabilities))
            return
        S = _concrete_rows(S)
        batch = np.repeat(np.arange(S.num_rows, dtype=np.int64), S.row_lengths())
        self.add_nodes(batch, S.indices)
        G = values.materialize() if isinstance(values, RowView) else values
        row = np.repeat(np.arange(len(Q), dtype=np.int64), G.row_lengths())
        eb = Q.batch[row]
        src = self.local_of(eb, G.indices)
        a = np.ones(G.nnz) if G.data is None else G.data
        keep = (src >= 0) & (a * a > 0)      # a weight whose square underflows counts as 0
        row, eb, src, a, col = row[keep], eb[keep], src[keep], a[keep], G.indices[keep]
        raw = a / _denominators(probabilities, eb, col)
        indptr = np.zeros(len(Q) + 1, dtype=np.int64)
        np.cumsum(np.bincount(row, minlength=len(Q)), out=indptr[1:])
        self._set_edges(dict(batch=eb, dst=Q.local[row], src=src, edge_id=G.edge_id[keep],
                             weight=normalize_rows(raw, indptr), src_vertex=col,
                             dst_vertex=Q.vertex[row], row_id=Q.row_id[row]))

    def _record(self, plan):
        if self.hop < 1 or self.plans[self.hop - 1] is not None:
            raise NotLowerable(f"hop {self.hop}: more than one extraction recorded")
        self.plans[self.hop - 1] = plan

    def _set_edges(self, edges):
        if self.hop < 1:
            fail(SamplerError, "BulkState", "edges", "cannot be added before hop 1",
                 show_value=False)
        if self.hop_edges[self.hop - 1] is not None:
            fail(SamplerError, "BulkState", "edges", f"of hop {self.hop} were already recorded",
                 show_value=False)
        self.hop_edges[self.hop - 1] = edges

    # ------------------------------------------------------------------ low level (concrete)
    def add_nodes(self, batch, vertex):
        """Append the vertices not yet in their minibatch, in first-occurrence order, as
        vertices of the current hop.

        Parameters
        ----------
        batch : int64, shape (m,)
            Bulk position of each candidate, non-decreasing.
        vertex : int64, shape (m,)

        Returns
        -------
        Frontier of the vertices actually added.
        """
        self._concrete("add_nodes")
        return self._insert(batch, vertex)[1]

    def _insert(self, batch, vertex):
        """Add the new ``(batch, vertex)`` pairs (first-occurrence order per minibatch); the
        local id of every pair and the Frontier of those added.

        Per minibatch, without sorting: its vertices are written into an n-sized table of local
        ids, the candidates read it, and the first occurrence of each new vertex is found with
        ``np.minimum.at`` over the candidates' positions. O(nodes + candidates). With the native
        kernels, :meth:`_insert_native` does the same with a hash map per minibatch (no n-sized
        tables); this NumPy code is its oracle.
        """
        if _native_relabel():
            return self._insert_native(batch, vertex)
        local = np.empty(vertex.size, dtype=np.int64)
        bounds = np.searchsorted(batch, np.arange(self.k + 1))
        table, first = self._tables()
        added_b, added_v = [], []
        for j in np.flatnonzero(bounds[1:] > bounds[:-1]):
            a, b = bounds[j], bounds[j + 1]
            c = vertex[a:b]
            known = self._batch_nodes(j)
            _fill(table, known)
            loc = table[c]
            new = np.flatnonzero(loc < 0)
            if new.size:
                u = c[new]
                np.minimum.at(first, u, new)
                fresh = u[first[u] == new]                  # in first-occurrence order
                first[u] = _NO_POSITION
                table[fresh] = known.size + np.arange(fresh.size)
                loc = table[c]
                self._node_parts[j].append(fresh)
                self._node_cache.pop(j, None)
                table[fresh] = -1
                added_b.append(np.full(fresh.size, j, dtype=np.int64))
                added_v.append(fresh)
            _clear(table, known)
            local[a:b] = loc
        nb = np.concatenate(added_b) if added_b else np.zeros(0, dtype=np.int64)
        nv = np.concatenate(added_v) if added_v else np.zeros(0, dtype=np.int64)
        return local, self._append_nodes(nb, nv, index=True, known=True)

    def _known(self):
        """Every minibatch's vertices in local order, concatenated, and the offsets (k + 1)."""
        parts = [self._batch_nodes(j) for j in range(self.k)]
        offsets = np.zeros(self.k + 1, dtype=np.int64)
        np.cumsum([p.size for p in parts], out=offsets[1:])
        known = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return offsets, known

    def _insert_native(self, batch, vertex):
        """:meth:`_insert` by ``native/relabel.h`` (same results)."""
        bounds = np.searchsorted(batch, np.arange(self.k + 1)).astype(np.int64)
        local, fresh, added = insert_bulk(*self._known(), bounds, vertex)
        offset, nb = segment_arange(fresh)
        nv = added[bounds[:-1][nb] + offset]
        ends = np.cumsum(fresh)
        for j in np.flatnonzero(fresh):
            self._node_parts[j].append(nv[ends[j] - fresh[j]:ends[j]])
            self._node_cache.pop(j, None)
        return local, self._append_nodes(nb, nv, index=True, known=True)

    def _tables(self):
        """The n-sized scratch tables of :meth:`_insert` (left all -1 / all _NO_POSITION)."""
        if self._table is None:
            self._table = np.full(self.num_nodes, -1, dtype=np.int64)
            self._first = np.full(self.num_nodes, _NO_POSITION, dtype=np.int64)
        return self._table, self._first

    def _batch_nodes(self, j):
        """Every vertex of minibatch ``j`` so far, in local order."""
        if j not in self._node_cache:
            parts = self._node_parts[j]
            self._node_cache[j] = parts[0] if len(parts) == 1 else np.concatenate(
                parts or [np.zeros(0, dtype=np.int64)])
        return self._node_cache[j]

    def _append_nodes(self, nb, nv, *, index=False, known=False):
        """Append vertices (ordered by minibatch) as new local ids; their local ids (or their
        Frontier with ``index``). ``known``: :meth:`_insert` recorded them per minibatch
        (deduplicated); else they are appended without deduplication and never found by
        :meth:`local_of`."""
        added = np.bincount(nb, minlength=self.k)
        start = (np.cumsum(added) - added)[nb]          # first position of each minibatch
        local = self.count[nb] + (np.arange(nb.size) - start)
        self.count += added
        self.hop_nodes[self.hop].append((nb, nv, local))
        self._merged.pop(self.hop, None)
        if not known:
            for j in np.unique(nb):     # keep the per-minibatch lists aligned with local ids
                self._node_parts[j].append(np.full(int((nb == j).sum()), -1, dtype=np.int64))
                self._node_cache.pop(j, None)
        if index:
            return Frontier._of("arrays", self.hop, nb, nv, local, local)
        return local

    def local_of(self, batch, vertex):
        """Local ids of vertices already in their minibatch (``-1`` where absent)."""
        self._concrete("local_of")
        batch = np.asarray(batch, dtype=np.int64)
        vertex = np.asarray(vertex, dtype=np.int64)
        out = np.full(vertex.size, -1, dtype=np.int64)
        order = np.argsort(batch, kind="stable") if np.any(np.diff(batch) < 0) else None
        b = batch if order is None else batch[order]
        v = vertex if order is None else vertex[order]
        bounds = np.searchsorted(b, np.arange(self.k + 1))
        if _native_relabel():
            found = lookup_bulk(*self._known(), bounds.astype(np.int64), v)
        else:
            found = self._lookup_numpy(v, bounds)
        if order is None:
            return found
        out[order] = found
        return out

    def _lookup_numpy(self, v, bounds):
        """:meth:`local_of` on minibatch-sorted queries, through the n-sized table."""
        table, _ = self._tables()
        found = np.empty(v.size, dtype=np.int64)
        for j in np.flatnonzero(bounds[1:] > bounds[:-1]):
            known = self._batch_nodes(j)
            _fill(table, known)
            found[bounds[j]:bounds[j + 1]] = table[v[bounds[j]:bounds[j + 1]]]
            _clear(table, known)
        return found

    def vertex_of(self, batch, local):
        """Global ids of local vertices (inverse of :meth:`local_of`)."""
        self._concrete("vertex_of")
        n_id, offsets = self._flat_nodes()
        return n_id[offsets[batch] + local]

    def _nodes_of(self, hop):
        """``(batch, vertex, local)`` of the vertices added at ``hop``, by (minibatch, local)."""
        if hop not in self._merged:
            parts = self.hop_nodes[hop]
            if not parts:
                empty = np.zeros(0, dtype=np.int64)
                merged = (empty, empty, empty)
            elif len(parts) == 1:
                merged = parts[0]
            else:
                batch = np.concatenate([p[0] for p in parts])
                order = np.argsort(batch, kind="stable")
                merged = tuple(np.concatenate([p[i] for p in parts])[order] for i in range(3))
            self._merged[hop] = merged
        return self._merged[hop]

    def _nodes_of_range(self, first, last):
        """:meth:`_nodes_of` for the steps ``first..last`` together (by minibatch, local)."""
        if last <= first:
            if last == first:
                return self._nodes_of(first)
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        parts = [self._nodes_of(h) for h in range(first, last + 1)]
        batch = np.concatenate([p[0] for p in parts])
        order = np.argsort(batch, kind="stable")
        return tuple(np.concatenate([p[i] for p in parts])[order] for i in range(3))

    def _edges_of(self, hop):
        e = self.hop_edges[hop - 1]
        if e["src_vertex"] is None:
            e["src_vertex"] = self.vertex_of(e["batch"], e["src"])
        return e

    def _flat_nodes(self):
        """Every minibatch's ``n_id``, minibatch after minibatch, and the offsets."""
        offsets = np.zeros(self.k + 1, dtype=np.int64)
        np.cumsum(self.count, out=offsets[1:])
        n_id = np.empty(int(offsets[-1]), dtype=np.int64)
        for h in range(len(self.hop_nodes)):
            batch, vertex, local = self._nodes_of(h)
            n_id[offsets[batch] + local] = vertex
        return n_id, offsets

    # ------------------------------------------------------------------ output
    def finish(self, batch_sizes):
        """The bulk's flat result (:class:`~spsample.Bulk`)."""
        n_id, offsets = self._flat_nodes()
        counts = np.zeros((self.k, len(self.hop_nodes)), dtype=np.int64)
        for h in range(len(self.hop_nodes)):
            counts[:, h] = np.bincount(self._nodes_of(h)[0], minlength=self.k)
        hops = []
        layerwise = any(e["weight"] is not None for e in self.hop_edges)
        for e in self.hop_edges:
            bounds = np.searchsorted(e["batch"], np.arange(self.k + 1)).astype(np.int64)
            weight = e["weight"]
            if layerwise and weight is None:
                weight = np.zeros(e["dst"].size)
            hops.append(HopEdges(_i64(e["dst"]), _i64(e["src"]), _i64(e["edge_id"]),
                                 weight, bounds))
        return Bulk(self.batch_ids, batch_sizes, n_id, offsets, counts, hops,
                    layerwise=layerwise, path="numpy")


def _native_relabel():
    """Whether :meth:`BulkState._insert` and :meth:`BulkState.local_of` use the native hash
    maps (the native kernels are on) instead of the n-sized NumPy tables."""
    return _native.enabled()


def _fill(table, known):
    """``table[v] = local id`` for the deduplicated vertices ``known`` (-1: not deduplicated)."""
    if known.size and known.min() < 0:
        at = np.flatnonzero(known >= 0)
        table[known[at]] = at
    else:
        table[known] = np.arange(known.size)


def _clear(table, known):
    table[known[known >= 0] if known.size and known.min() < 0 else known] = -1


def _i64(a):
    return np.ascontiguousarray(a, dtype=np.int64)


def _concrete_rows(S):
    """A concrete row matrix from what a selection constructor returned."""
    if isinstance(S, RowMatrix):
        return S
    if isinstance(S, RowView):
        return S.materialize()
    if is_symbolic(S) or isinstance(S, (RowSelection, ThresholdSelection, ColumnSelection,
                                        GlobalSelection)):
        return evaluate_selection(S)
    fail(ArgumentTypeError, "BulkState", "S", "must be a RowMatrix or a selection", type(S))


def _denominators(P, batch, column):
    """``P[batch, column]`` of the layer-wise probabilities (ColumnSums, GlobalColumns, or a
    callable ``(batch, u) -> value``)."""
    if isinstance(P, (ColumnSums, GlobalColumns)):
        return P.value(batch, column)
    return P(batch, column)
