"""The test oracle: one minibatch at a time, plain Python loops, scalar Philox.

Obviously-correct and slow (use it on graphs of a few thousand edges). It interprets a
sampler's *traced* constructors (:func:`spsample.engine._run.trace`) -- the frontier, values,
selection and extraction of every hop -- with the rules documented in
:mod:`spsample.engine._primitives`, :mod:`spsample.engine._lazy` and :mod:`spsample._rng`, so it
never asks which class a sampler is: any sampler written with the lazy matrices has a reference.
Every fast path -- the NumPy bulk evaluation, the native kernels, the distributed and GPU paths
-- must return exactly what these functions return.
"""

import bisect

import numpy as np

from .. import _rng
from ._run import trace
from ._lazy import (ALIAS_ATTEMPTS, ALIAS_SHARE_MAX, REJECTION_ATTEMPTS, ColumnSelection,
                    ThresholdSelection)
from ._minibatch import MiniBatch

__all__ = ["reference_sample"]


def reference_sample(graph, seeds, *, sampler, batch_size, seed=0, epoch=0, batch_offset=0,
                     schedule=None, seed_time=None, batch_ids=None):
    """Same contract as :func:`spsample.sample`, one minibatch at a time (a list).

    ``schedule`` and ``seed_time`` (one per minibatch) as the engine takes them (a
    heterogeneous bulk's steps, a temporal cut; global vertex ids); ``batch_ids`` overrides the
    consecutive ids from ``batch_offset``."""
    seeds = [int(s) for s in np.asarray(seeds).ravel()]
    starts = list(range(0, len(seeds), batch_size))
    if batch_ids is None:
        batch_ids = np.arange(batch_offset, batch_offset + len(starts), dtype=np.int64)
    batch_ids = np.asarray(batch_ids, dtype=np.int64)
    plans = trace(sampler, graph, batch_ids, seed, epoch, schedule=schedule, seed_time=seed_time)
    return [_Minibatch(graph, seeds[a:a + batch_size], j, int(batch_ids[j]), seed, epoch).run(plans)
            for j, a in enumerate(starts)]


class _Minibatch:
    def __init__(self, graph, seeds, position, batch_id, seed, epoch):
        self.graph, self.position, self.batch_id = graph, position, batch_id
        self.key, self.epoch = _rng.split_seed(seed), epoch
        self.n_id = list(seeds)
        self.local = {v: i for i, v in enumerate(seeds)}
        self.hop_end = [len(seeds)]
        self.edges = []      # per hop: dict(dst, src, eid, weight, row_id)
        self.batch_size = len(seeds)
        self._lists = {}

    def lists(self, g):
        if id(g) not in self._lists:
            w = None if g.weights is None else g.weights.tolist()
            self._lists[id(g)] = (g.indptr.tolist(), g.indices.tolist(), w)
        return self._lists[id(g)]

    def run(self, plans):
        for hop, plan in enumerate(plans, start=1):
            self.hw = _rng.hop_word(self.epoch, hop)
            (self._rows_hop if plan.kind == "rows" else self._layer_hop)(hop, plan)
            self.hop_end.append(len(self.n_id))
        i64 = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
        layerwise = any(e["weight"] is not None for e in self.edges)
        counts = [self.hop_end[0]] + [b - a for a, b in zip(self.hop_end, self.hop_end[1:])]
        return MiniBatch(batch_id=self.batch_id, n_id=i64(self.n_id), batch_size=self.batch_size,
                         num_sampled_nodes=counts,
                         edges=[(i64(e["dst"]), i64(e["src"])) for e in self.edges],
                         edge_ids=[i64(e["eid"]) for e in self.edges],
                         weight=[np.array(e["weight"], dtype=np.float64) for e in self.edges]
                         if layerwise else None)

    def add(self, v):
        if v not in self.local:
            self.local[v] = len(self.n_id)
            self.n_id.append(v)
        return self.local[v]

    def word(self, key_word, i, streams=None):
        """Word ``i`` of stream ``key_word``: under the hop's counter word and key, or those of
        ``streams`` (a heterogeneous hop's relation keys its own)."""
        hw, key = (self.hw, self.key) if streams is None else (streams.hop_word, streams.key)
        return _rng.stream_word_scalar(i, key_word, hw, self.batch_id, key)

    def _draw(self, t):
        """Layer-wise draw t's uniform: words 2t, 2t + 1 of stream NO_VERTEX."""
        return _unit53(self.word(_rng.NO_VERTEX, 2 * t), self.word(_rng.NO_VERTEX, 2 * t + 1))

    # -------------------------------------------------------------- Q
    def frontier(self, Q, hop, add_given=True):
        """``[(vertex, local, row_id)]`` of this minibatch's rows of ``Q``."""
        if Q.kind in ("new_nodes", "all_nodes"):
            lo = 0 if Q.kind == "all_nodes" or Q.hop == 0 else self.hop_end[Q.hop - 1]
            hi = self.hop_end[-1] if Q.kind == "all_nodes" else self.hop_end[Q.hop_last]
            return [(self.n_id[x], x, x) for x in range(lo, hi)]
        if Q.kind in ("edge_sources", "edge_destinations"):
            e = self.edges[Q.hop - 1]
            ends = e["src"] if Q.kind == "edge_sources" else e["dst"]
            return [(self.n_id[x], x, r) for x, r in zip(ends, e["row_id"])]
        batch, vertex = Q.given
        mine = [int(v) for b, v in zip(batch.tolist(), vertex.tolist()) if b == self.position]
        return [(v, self.add(v) if add_given else -1, i) for i, v in enumerate(mine)]

    # -------------------------------------------------------------- node-wise hops
    def _rows_hop(self, hop, plan):
        sel, rows = plan.selection, self.frontier(plan.frontier, hop)
        P = sel.P
        indptr, indices, _ = self.lists(P.graph)
        aux = None
        dst, eids, row_ids = [], [], []
        st = sel.streams
        for r, (v, lv, rid) in enumerate(rows):
            start, d = indptr[v], indptr[v + 1] - indptr[v]
            if P.cutoff is not None:         # temporal: the row's entries up to the time
                time, batch_time = P.cutoff
                d = bisect.bisect_right(time[start:start + d].tolist(),
                                        batch_time[self.position].item())
            s = sel.fanout if sel.fanout_vector is None else int(sel.fanout_vector[v])
            if isinstance(sel, ThresholdSelection):
                positions = _threshold(d, s, [indices[start + p] for p in range(d)],
                                       lambda u: self.word(u, 0, st))
            else:
                if sel.weighted and aux is None:
                    aux = _aux_rows(self, P, hop) or []
                t = aux[r] if aux else v
                key_word = v if sel.streams.keyed_by == "vertex" else rid
                value = (lambda p: _value(P, self, v, start + p, t)) if sel.weighted else None
                positions = _row_rule(sel, d, s, value,
                                      lambda i, kw=key_word: self.word(kw, i, st))
            for p in positions:
                dst.append(lv)
                eids.append(start + p)
                row_ids.append(rid)
        src = []
        for e in eids:
            u = indices[e]
            src.append(self.add(u) if plan.dedup else self._append(u))
        self.edges.append(dict(dst=dst, src=src, eid=eids, weight=None, row_id=row_ids))

    def _append(self, u):
        self.n_id.append(u)
        return len(self.n_id) - 1

    # -------------------------------------------------------------- layer-wise hops
    def _layer_hop(self, hop, plan):
        sel = plan.selection
        B = [v for v, _, _ in self.frontier(plan.frontier, hop)]
        if isinstance(sel, ColumnSelection):
            view = sel.P.view
            indptr, indices, _ = self.lists(view.graph)
            q = {}
            for v in B:
                for e in range(indptr[v], indptr[v + 1]):
                    a = 1.0 if view.expr is None else _value(view, self, v, e, v)
                    if a > 0:
                        q[indices[e]] = q.get(indices[e], 0.0) + a
            chosen = self._choose_columns(sel, view, B, q, indptr, indices)
            denominator = q.__getitem__
        else:
            chosen = self._draw_global(sel)
            denominator = lambda u: float(sel.P.q[u])  # noqa: E731
        for u in sorted(chosen):
            self.add(u)
        self._layer_edges(plan.values, B, denominator)

    def _choose_columns(self, sel, view, B, q, indptr, indices):
        s, cands = sel.fanout, sorted(q)
        if s < 0 or len(cands) <= s:
            return cands
        if view.expr is None:   # draws of entries until s distinct columns
            columns = [indices[e] for v in B for e in range(indptr[v], indptr[v + 1])]
            chosen, t = set(), 0
            while len(chosen) < s:
                u53 = self._draw(t)
                chosen.add(columns[min(int(u53 * len(columns)), len(columns) - 1)])
                t += 1
            return chosen
        return sorted(cands, key=lambda u: (_exp_key(self.word(u, 0), q[u]), u))[:s]

    def _draw_global(self, sel):
        cumulative = sel.P.cumulative.tolist()
        chosen = set()
        if cumulative and cumulative[-1] > 0:
            last_positive = bisect.bisect_left(cumulative, cumulative[-1])
            for i in range(sel.fanout):
                column = bisect.bisect_right(cumulative, self._draw(i) * cumulative[-1])
                chosen.add(min(column, last_positive))
        return chosen

    def _layer_edges(self, values, B, denominator):
        """Edges B x (B + chosen) with a * a > 0, valued a / P[u], row-normalised (serial)."""
        indptr, indices, _ = self.lists(values.graph)
        dst, src, eids, vals, rows = [], [], [], [], []
        for v in B:
            raw = []
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                a = 1.0 if values.expr is None else _value(values, self, v, e, v)
                if a * a > 0 and u in self.local:
                    dst.append(self.local[v])
                    src.append(self.local[u])
                    eids.append(e)
                    rows.append(self.local[v])
                    raw.append(a / denominator(u))
            total = 0.0
            for x in raw:
                total += x
            vals.extend((x / total if total > 0 else 0.0) for x in raw)
        self.edges.append(dict(dst=dst, src=src, eid=eids, weight=vals, row_id=rows))


# ------------------------------------------------------------------------------ rules
def _unit53(w0, w1):
    """A layer-wise draw's uniform in [0, 1) from words 2t, 2t + 1 (53 random bits)."""
    return ((w0 >> 5) * 67108864.0 + (w1 >> 6)) * (1.0 / 9007199254740992.0)


def _exp_key(wd, weight):
    return -_rng.det_log_scalar((wd + 0.5) / 4294967296.0) / weight


def _row_rule(sel, d, s, value, word):
    """Positions a row keeps under a RowSelection (ascending, with multiplicity)."""
    if d == 0 or s == 0:
        return []
    if sel.method == "last":                     # the latest entries, no randomness
        return list(range(0 if s < 0 else max(0, d - s), d))
    if not sel.weighted:
        if s < 0:
            return list(range(d))
        if sel.replace:
            return sorted((word(i) * d) >> 32 for i in range(s))
        if d <= s:
            return list(range(d))
        chosen = []
        for i in range(s):                       # Floyd's algorithm
            j = d - s + i
            t = (word(i) * (j + 1)) >> 32
            chosen.append(j if t in chosen else t)
        return sorted(chosen)
    if sel.method == "rejection":
        return _rejection(d, s, sel.bound, value, word)
    w = [value(p) for p in range(d)]
    eligible = [p for p in range(d) if w[p] > 0]
    if s < 0:
        return eligible
    if sel.method == "alias":
        return _alias(d, s, sel.replace, w, eligible, word)
    if sel.replace:
        if not eligible:
            return []
        return sorted(min(eligible, key=lambda p: (_exp_key(word(i * d + p), w[p]), p))
                      for i in range(s))
    if len(eligible) <= s:
        return eligible
    ranked = sorted(eligible, key=lambda p: (_exp_key(word(p), w[p]), p))
    return sorted(ranked[:s])


def _rejection(d, s, bound, value, word):
    A, out = REJECTION_ATTEMPTS, []
    for i in range(s):
        got = None
        for a in range(A):
            p = (word(2 * (A * i + a)) * d) >> 32
            v = value(p)
            assert v <= bound, "value above the rejection bound"
            if (word(2 * (A * i + a) + 1) + 0.5) * (1.0 / 4294967296.0) * bound < v:
                got = p
                break
        if got is None:
            keyed = [(_exp_key(word(2 * A * s + i * d + p), value(p)), p)
                     for p in range(d) if value(p) > 0]
            got = min(keyed)[1] if keyed else None
        if got is not None:
            out.append(got)
    return sorted(out)


def _alias(d, s, replace, w, eligible, word):
    """The alias rule (RowSelection) on a row of values ``w``."""
    if not eligible:
        return []
    threshold, alias, share = _alias_table(w)

    def draw(a):
        i = (word(2 * a) * d) >> 32
        return i if word(2 * a + 1) < threshold[i] else alias[i]
    if replace:
        return sorted(draw(i) for i in range(s))
    if len(eligible) <= s:
        return eligible
    if s * share > ALIAS_SHARE_MAX:              # concentrated: the exact keys
        return sorted(sorted(eligible, key=lambda p: (_exp_key(word(p), w[p]), p))[:s])
    kept = []
    for a in range(ALIAS_ATTEMPTS * s):
        p = draw(a)
        if p not in kept:
            kept.append(p)
            if len(kept) == s:
                return sorted(kept)
    base = 2 * ALIAS_ATTEMPTS * s
    rest = sorted((p for p in eligible if p not in kept),
                  key=lambda p: (_exp_key(word(base + p), w[p]), p))
    return sorted(kept + rest[:s - len(kept)])


def _alias_table(w):
    """Vose's alias table of one row, step by step as documented in
    :func:`spsample.graph._weights.alias_tables`: ``(threshold, alias, share)``."""
    d = len(w)
    wpos = [x if x > 0 else 0.0 for x in w]
    total = 0.0
    for x in wpos:
        total += x
    assert total < float("inf"), "the alias rule needs a finite row sum"
    x = [(v * d) / total for v in wpos]
    small = [i for i in range(d) if 0 < wpos[i] and x[i] < 1] + \
        [i for i in range(d) if wpos[i] == 0]
    large = [i for i in range(d) if x[i] >= 1]
    threshold, alias = [0xFFFFFFFF] * d, list(range(d))
    while small and large:
        lo, hi = small.pop(), large.pop()
        threshold[lo], alias[lo] = int(x[lo] * 4294967296.0), hi
        x[hi] = (x[hi] + x[lo]) - 1.0
        (small if x[hi] < 1.0 else large).append(hi)
    first = next(i for i in range(d) if wpos[i] > 0)
    for i in small:
        if wpos[i] == 0:
            threshold[i], alias[i] = 0, first
    return threshold, alias, max(wpos) / total


def _threshold(d, s, columns, word0):
    if s < 0 or d <= s:
        return list(range(d))
    return [p for p in range(d) if word0(columns[p]) * d < (s << 32)]


# ------------------------------------------------------------------------------ values
def _aux_rows(mb, view, hop):
    """Vertices of the aligned rows the values of ``view`` refer to, or None."""
    for frontier in _other_frontiers(view.expr, view.frontier):
        return [v for v, _, _ in mb.frontier(frontier, hop, add_given=False)]
    return None


def _other_frontiers(expr, base):
    """Frontiers other than ``base`` that the leaves of ``expr`` refer to."""
    if expr.op == "indicator" and not expr.frontier.same_rows(base):
        yield expr.frontier
    elif expr.op == "view" and not expr.view.frontier.same_rows(base):
        yield expr.view.frontier
    for a in expr.args:
        yield from _other_frontiers(a, base)


def _value(view, mb, v, e, t):
    """The value of entry ``e`` of ``view`` (row vertex ``v``, aligned vertex ``t``)."""
    return _eval(view.expr, view, mb, view.graph, v, int(view.graph.indices[e]), e, t)


def _eval(expr, base, mb, graph, v, u, e, t):
    op = expr.op
    if op == "const":
        return expr.value
    if op == "weight":
        return float(expr.graph.weights[e])
    if op == "column":
        return float(expr.vector[u])
    if op == "row":
        return float(expr.vector[v])
    if op == "edge":
        return float(expr.vector[e])
    if op in ("mul", "add"):
        a = _eval(expr.args[0], base, mb, graph, v, u, e, t)
        b = _eval(expr.args[1], base, mb, graph, v, u, e, t)
        return a * b if op == "mul" else a + b
    if op == "square":
        x = _eval(expr.args[0], base, mb, graph, v, u, e, t)
        return x * x
    if op == "indicator":
        return 1.0 if u == (v if expr.frontier.same_rows(base.frontier) else t) else 0.0
    view = expr.view                           # op == "view"
    if view.frontier.same_rows(base.frontier) and view.graph is graph:
        return 1.0 if view.expr is None else _eval(view.expr, base, mb, graph, v, u, e, t)
    indptr, indices, _ = mb.lists(view.graph)
    row = indices[indptr[t]:indptr[t + 1]]
    k = bisect.bisect_left(row, u)
    if k == len(row) or row[k] != u:
        return 0.0
    if view.expr is None:
        return 1.0
    return _eval(view.expr, view, mb, view.graph, t, u, indptr[t] + k, t)
