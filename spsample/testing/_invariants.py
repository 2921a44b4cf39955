"""``check_invariants``: what every sample must satisfy, whatever path produced it.

The checks read the sampler's *traced* constructors (:func:`spsample.engine._run.trace`), never
its class: which hops are row-wise or layer-wise, what each hop's frontier is, and its
selection rule with its fanout. So a user's sampler is checked as a built-in is.
"""

import numpy as np

from ..engine._lazy import ColumnSelection, GlobalSelection, RowSelection, ThresholdSelection
from ._compare import _host
from ..engine._run import trace
from ..engine._hetero_sample import build_schedule

__all__ = ["check_invariants"]


class _Fail:
    def __init__(self, where):
        self.where = where

    def __call__(self, ok, what):
        if not ok:
            raise AssertionError(f"{self.where}: {what}")


def check_invariants(graph, bulk, sampler, *, seeds=None, seed_time=None, seed=0, epoch=0):
    """Assert the invariants of a sampled bulk.

    Every minibatch, on a :class:`~spsample.Graph`:

    * ``num_sampled_nodes`` has ``L + 1`` entries summing to ``len(n_id)``, seeds first
      (``n_id[:batch_size]`` are the minibatch's ``seeds``), ids in ``[0, n)``;
    * ``n_id`` unique (per seed's subgraph when disjoint; not checked for a hop that
      extracts without deduplication);
    * sampled edges ⊆ ``A``: ``edge_id`` lies in row ``n_id[dst]`` and ``indices[edge_id] ==
      n_id[src]``; disjoint: both ends in the same seed's subgraph;
    * row-wise hops expanding vertex sets: each row's edges come from the hop's frontier and
      number ``min(fanout, degree)`` (uniform without replacement), ``fanout`` (with
      replacement, degree > 0), at most that (weighted, LABOR: every entry when
      ``degree <= fanout``); weighted by A's weights: never a zero-weight entry, and
      ``min(fanout, positive entries)`` of them without replacement; no entry twice
      without replacement; every new vertex is reached by one of the hop's edges;
    * walks (frontier = the previous hop's edge sources): every walk that can move does,
      ``fanout`` times where it branches (unweighted), each step leaves from where its walk
      stands: the hop's destinations are the previous hop's sources, each repeated as often as
      its row draws (as multisets);
    * layer-wise hops: the new vertices number at most the fanout, and the edges are exactly
      every entry (positive where A is weighted) between the frontier rows and the vertex set,
      in row order; weights finite, ``>= 0``, summing to 1 per row that has any.

    On a :class:`~spsample.HeteroGraph`, per node type and relation: seeds first, unique ids,
    edges ⊆ the relation's CSR, at most the relation's fanout per row, and (temporal) no
    sampled entry later than its seed's time.

    Parameters
    ----------
    graph : Graph or HeteroGraph
        The in-memory graph that was sampled.
    bulk : Bulk, HeteroBulk or sequence of MiniBatch / HeteroMiniBatch
    sampler : Sampler
    seeds : array_like of int, optional
        The seeds of the call, in order (per-type local ids on a HeteroGraph): checks seeds
        first.
    seed_time : array_like of float, optional
        Temporal bulks: the seeds' times.
    seed, epoch : int
        As given to the call (traced with them).

    Raises
    ------
    AssertionError
        Naming the minibatch, hop and invariant that fails.

    Examples
    --------
    >>> import spsample
    >>> from spsample.testing import check_invariants
    >>> g = spsample.rmat(8, seed=1)
    >>> s = spsample.LADIES([16, 16])
    >>> check_invariants(g, spsample.sample(g, range(40), sampler=s, batch_size=8), s,
    ...                  seeds=range(40))
    """
    mbs = list(bulk)
    if not mbs:
        return
    firsts = np.cumsum([0] + [mb.batch_size for mb in mbs])
    seeds = None if seeds is None else np.asarray(list(seeds), dtype=np.int64)
    seed_time = None if seed_time is None else np.asarray(seed_time, dtype=np.float64)
    if isinstance(mbs[0].n_id, dict):
        for j, mb in enumerate(mbs):
            _hetero(graph, mb, sampler, _Fail(f"minibatch {j} (batch_id {mb.batch_id})"),
                    None if seeds is None else seeds[firsts[j]:firsts[j + 1]],
                    None if seed_time is None else seed_time[firsts[j]:firsts[j + 1]],
                    seed, epoch)
        return
    plans = _plans(graph, sampler, mbs, seed, epoch)
    for j, mb in enumerate(mbs):
        check = _Fail(f"minibatch {j} (batch_id {mb.batch_id})")
        _homogeneous(graph, mb, plans, sampler, check,
                     None if seeds is None else seeds[firsts[j]:firsts[j + 1]])


def _plans(graph, sampler, mbs, seed, epoch):
    ids = np.array([0 if getattr(sampler, "disjoint", False) else mb.batch_id for mb in mbs],
                   dtype=np.int64)
    return trace(sampler, graph, ids, seed, epoch)


# ---------------------------------------------------------------------- homogeneous
def _homogeneous(graph, mb, plans, sampler, check, seeds):
    n_id = _host(mb.n_id)
    counts = list(mb.num_sampled_nodes)
    check(len(counts) == len(plans) + 1, f"num_sampled_nodes {counts} for {len(plans)} hops")
    check(sum(counts) == n_id.size, f"num_sampled_nodes {counts} != len(n_id) {n_id.size}")
    check(counts[0] == mb.batch_size, "num_sampled_nodes[0] != batch_size")
    check(n_id.size == 0 or (n_id.min() >= 0 and n_id.max() < graph.num_nodes),
          "n_id outside [0, num_nodes)")
    if seeds is not None:
        check(np.array_equal(n_id[:mb.batch_size], seeds), "seeds are not first in n_id")
    batch = None if mb.batch is None else _host(mb.batch)
    dedup = all(p.dedup for p in plans if p.kind == "rows")
    if batch is None and dedup:
        check(np.unique(n_id).size == n_id.size, "n_id repeats a vertex")
    elif batch is not None:
        key = batch * (graph.num_nodes + 1) + n_id
        check(np.unique(key).size == key.size, "a seed's subgraph repeats a vertex")
    hop_end = np.cumsum(counts)
    indptr, indices = graph.indptr, graph.indices
    weights = graph.weights
    edges = [(_host(d), _host(s), _host(e)) for (d, s), e in zip(mb.edges, mb.edge_ids)]
    for h, (dst, src, eid) in enumerate(edges, start=1):
        at = _Fail(f"{check.where} hop {h}")
        at(dst.size == src.size == eid.size, "dst, src and edge_id lengths differ")
        if not dst.size:
            continue
        at(dst.min() >= 0 and src.min() >= 0 and max(dst.max(), src.max()) < n_id.size,
           "local ids outside n_id")
        v, u = n_id[dst], n_id[src]
        at(np.all((eid >= indptr[v]) & (eid < indptr[v + 1])),
           "an edge_id lies outside its destination's row (not an entry of A)")
        at(np.array_equal(indices[eid], u), "indices[edge_id] != the source (not an entry of A)")
        if batch is not None:
            at(np.array_equal(batch[dst], batch[src]), "an edge joins two seeds' subgraphs")
    for h, plan in enumerate(plans, start=1):
        at = _Fail(f"{check.where} hop {h}")
        dst, src, eid = edges[h - 1]
        if plan.kind == "rows":
            _rows_hop(graph, n_id, hop_end, h, plan, dst, src, eid, edges, at, batch)
        else:
            _layer_hop(indptr, indices, weights, n_id, hop_end, h, plan, mb, dst, src, eid, at)


def _rows_hop(graph, n_id, hop_end, h, plan, dst, src, eid, edges, at, batch):
    new = np.arange(hop_end[h - 1], hop_end[h])
    sel, Q = plan.selection, plan.frontier
    if plan.dedup:
        at(src.size == 0 or src.max() < hop_end[h], "a source is not among the vertices so far")
    if plan.dedup and Q.kind != "rows":         # given rows add their vertices themselves
        at(np.isin(new, src).all(), "a new vertex is reached by no edge of its hop")
    if Q.kind == "new_nodes" and batch is None:
        lo = hop_end[Q.hop - 1] if Q.hop > 0 else 0
        hi = hop_end[Q.hop_last]
        at(dst.size == 0 or (dst.min() >= lo and dst.max() < hi),
           "an edge leaves a vertex outside the hop's frontier")
        rows = np.arange(lo, hi)
        cnt = np.bincount(dst - lo, minlength=rows.size) if rows.size else np.zeros(0, int)
        _row_counts(graph, n_id[rows], cnt, sel, at)
        if not getattr(sel, "replace", False):
            key = dst * (graph.num_edges + 1) + eid
            at(np.unique(key).size == key.size, "a row drew an entry twice without replacement")
    elif Q.kind == "edge_sources" and isinstance(sel, RowSelection) and batch is None:
        prev_src = n_id[edges[Q.hop - 1][1]]
        here = n_id[dst]
        want, most = _row_want(graph, prev_src, sel)
        if sel.weighted and graph.weights is not None:
            at(_multiset_within(here, np.repeat(prev_src, most)), "a walk step does not leave "
               "from a walk's position (or more steps leave it than its fanout allows)")
        else:
            at(np.array_equal(np.sort(here), np.sort(np.repeat(prev_src, want))),
               "the walks' steps do not leave from where the walks stand (or a walk that "
               "could move did not, fanout times)")


def _multiset_within(a, b):
    va, ca = np.unique(a, return_counts=True)
    vb, cb = np.unique(b, return_counts=True)
    pos = np.searchsorted(vb, va)
    ok = (pos < vb.size) & (vb[np.minimum(pos, vb.size - 1)] == va)
    return bool(ok.all() and np.all(ca <= cb[pos]))


def _row_counts(graph, rows, cnt, sel, at, exact=True):
    degree = np.diff(graph.indptr)[rows]
    if isinstance(sel, ThresholdSelection):
        s = sel.fanout
        at(np.all(cnt <= degree), "LABOR kept more entries than a row has")
        if not exact:
            return
        whole = degree <= s if s >= 0 else np.ones(rows.size, dtype=bool)
        at(np.array_equal(cnt[whole], degree[whole]), "LABOR did not keep a whole short row")
        return
    if not isinstance(sel, RowSelection):
        return
    want, most = _row_want(graph, rows, sel)
    plain_weights = sel.weighted and sel.P.expr is not None and sel.P.expr.op == "weight"
    if exact and (not sel.weighted or plain_weights):
        at(np.array_equal(cnt, want), f"per-row counts {cnt.tolist()} != min(fanout, "
           f"degree) {want.tolist()}")
    else:
        at(np.all(cnt <= most), "a row drew more entries than its fanout allows")


def _row_want(graph, rows, sel):
    """``(want, most)`` per row vertex of a :class:`RowSelection` (shape of ``rows``): the
    entries it keeps when every entry may be drawn (entries of weight 0 excluded when the
    values are the graph's weights), and the most it may keep whatever the values."""
    degree = np.diff(graph.indptr)[rows]
    s = np.full(rows.size, sel.fanout) if sel.fanout_vector is None else \
        np.asarray(sel.fanout_vector)[rows]
    plain_weights = sel.weighted and sel.P.expr is not None and sel.P.expr.op == "weight"
    if plain_weights and graph.weights is not None:
        positive = np.concatenate([[0], np.cumsum(graph.weights > 0)])
        avail = positive[graph.indptr[rows + 1]] - positive[graph.indptr[rows]]
    else:
        avail = degree
    if sel.replace:
        want = np.where(s < 0, avail, np.where(avail > 0, s, 0))
        most = np.where(s < 0, degree, np.where(degree > 0, s, 0))
    else:
        want = np.where(s < 0, avail, np.minimum(s, avail))
        most = np.where(s < 0, degree, np.minimum(s, degree))
    return want, most


def _layer_hop(indptr, indices, weights, n_id, hop_end, h, plan, mb, dst, src, eid, at):
    sel = plan.selection
    new = hop_end[h] - hop_end[h - 1]
    if isinstance(sel, (ColumnSelection, GlobalSelection)) and sel.fanout >= 0:
        at(new <= sel.fanout, f"{new} new vertices for fanout {sel.fanout}")
    rows = n_id[:hop_end[h - 1]]
    local = {int(x): i for i, x in enumerate(n_id[:hop_end[h]].tolist())}
    exp_dst, exp_src, exp_eid = [], [], []
    for lv, v in enumerate(rows.tolist()):
        for e in range(int(indptr[v]), int(indptr[v + 1])):
            u = int(indices[e])
            if u in local and (weights is None or weights[e] > 0):
                exp_dst.append(lv)
                exp_src.append(local[u])
                exp_eid.append(e)
    at(np.array_equal(dst, exp_dst) and np.array_equal(src, exp_src) and
       np.array_equal(eid, exp_eid), "the layer's edges are not every entry between its "
       f"rows and its vertex set ({dst.size} edges, {len(exp_dst)} expected)")
    if mb.weight is None:
        at(False, "a layer-wise minibatch has no weights")
    w = _host(mb.weight[h - 1])
    at(w.size == dst.size and np.all(np.isfinite(w)) and np.all(w >= 0),
       "layer weights are not finite and >= 0")
    if w.size:
        sums = np.bincount(dst, weights=w)
        has = np.bincount(dst, weights=(w > 0).astype(float)) > 0
        at(np.allclose(sums[has], 1.0, rtol=0, atol=1e-9), "layer weights do not sum to 1 "
           "per row")


# ---------------------------------------------------------------------- heterogeneous
def _hetero_plans(graph, sampler, mb, seed, epoch, temporal):
    """``{(relation, hop): (plan, step graph)}`` of the traced heterogeneous bulk."""
    types = {mb.input_type} if mb.input_type is not None else \
        {t for t, counts in mb.num_sampled_nodes.items() if counts[0] > 0}   # link: both ends
    schedule = build_schedule(graph, sampler, types, seed, temporal)
    if not schedule.steps:
        return {}
    plans = trace(sampler, schedule.steps[0].graph, np.array([mb.batch_id], dtype=np.int64),
                  seed, epoch, schedule=schedule)
    return {(st.relation, st.hop): (plan, st.graph) for st, plan in zip(schedule.steps, plans)}


def _hetero(graph, mb, sampler, check, seeds, seed_time, seed, epoch):
    plans = _hetero_plans(graph, sampler, mb, seed, epoch, seed_time is not None)
    dedup = all(p.dedup for p, _ in plans.values() if p.kind == "rows")
    disjoint = mb.batch is not None
    for t, ids in mb.n_id.items():
        ids = _host(ids)
        at = _Fail(f"{check.where} type {t!r}")
        counts = list(mb.num_sampled_nodes[t])
        at(sum(counts) == ids.size, "num_sampled_nodes does not sum to len(n_id)")
        at(ids.size == 0 or (ids.min() >= 0 and ids.max() < graph.num_nodes[t]),
           "n_id outside the type's ids")
        if not dedup:
            continue
        if disjoint:
            key = _host(mb.batch[t]) * (graph.num_nodes[t] + 1) + ids
            at(np.unique(key).size == key.size, "a seed's subgraph repeats a vertex")
        else:
            at(np.unique(ids).size == ids.size, "n_id repeats a vertex")
    if seeds is not None:
        got = _host(mb.n_id[mb.input_type])[:mb.num_sampled_nodes[mb.input_type][0]]
        check(np.array_equal(got, seeds), "seeds are not first in n_id")
    for rel, hops in mb.edges.items():
        for h, (dst, src) in enumerate(hops, start=1):
            at = _Fail(f"{check.where} relation {rel} hop {h}")
            step = plans.get((rel, h))
            at(step is not None or _host(dst).size == 0, "edges of a relation the bulk did "
               "not sample at this hop")
            if step is not None:
                _relation_hop(graph, mb, rel, h, step, at, seed_time)


def _relation_hop(graph, mb, rel, h, step, at, seed_time):
    (plan, block), (s, _, d) = step, rel
    dst, src = (_host(x) for x in mb.edges[rel][h - 1])
    eid = _host(mb.edge_ids[rel][h - 1])
    if not dst.size:
        return
    indptr, indices, _ = graph.csr(rel)
    v, u = _host(mb.n_id[d])[dst], _host(mb.n_id[s])[src]
    at(np.all((eid >= indptr[v]) & (eid < indptr[v + 1])) and np.array_equal(indices[eid], u),
       "an edge is not an entry of its relation")
    if mb.batch is not None:
        at(np.array_equal(_host(mb.batch[d])[dst], _host(mb.batch[s])[src]),
           "an edge joins two seeds' subgraphs")
    if seed_time is not None:
        times = graph.edge_time(rel)
        when = times[eid] if times is not None else graph.node_time(s)[u]
        at(np.all(when <= seed_time[_host(mb.batch[d])[dst]]),
           "an entry later than its seed's time was sampled")
    if plan.kind != "rows" or plan.frontier.kind != "new_nodes":
        return
    if not getattr(plan.selection, "replace", False):
        key = dst * (int(block.num_edges) + 1) + eid
        at(np.unique(key).size == key.size, "a row drew an entry twice without replacement")
    counts = mb.num_sampled_nodes[d]
    lo, hi = int(sum(counts[:h - 1])), int(sum(counts[:h]))      # the type's hop h - 1
    at(dst.min() >= lo and dst.max() < hi, "an edge leaves a vertex outside the hop's frontier")
    cnt = np.bincount(dst - lo, minlength=hi - lo)
    glob = _host(mb.n_id[d])[lo:hi] + graph.offsets[d]
    cut = seed_time is not None or (graph.is_temporal and mb.batch is not None)
    _row_counts(block, glob, cnt, plan.selection, at, exact=not cut)
