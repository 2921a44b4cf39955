"""The test oracle: one minibatch at a time, plain Python loops, scalar Philox.

Obviously-correct and slow (use it on graphs of a few thousand edges). Every fast path — the
vectorised bulk path, the native kernels, the distributed and GPU paths — must return exactly
what these functions return. The rules implemented are those documented in
:mod:`spsample._primitives` and :mod:`spsample._rng`.
"""

import bisect

import numpy as np

from . import _rng
from ._minibatch import MiniBatch
from .samplers import FastGCN, LADIES, NodeWise

__all__ = ["reference_sample", "reference_minibatch"]


def reference_sample(graph, seeds, *, sampler, batch_size, seed=0, epoch=0, batch_offset=0):
    """Same contract as :func:`spsample.sample`, one minibatch at a time."""
    seeds = [int(s) for s in np.asarray(seeds).ravel()]
    out = []
    for i, start in enumerate(range(0, len(seeds), batch_size)):
        out.append(reference_minibatch(graph, seeds[start:start + batch_size], sampler,
                                       seed, epoch, batch_offset + i))
    return out


def reference_minibatch(graph, seeds, sampler, seed, epoch, batch_id):
    key = _rng.split_seed(seed)
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    weights = None if graph.weights is None else graph.weights.tolist()
    mb = _Builder(seeds)
    for hop, fanout in enumerate(sampler.fanouts, start=1):
        hw = _rng.hop_word(epoch, hop)
        word = lambda vertex, i: _rng.stream_word_scalar(i, vertex, hw, batch_id, key)  # noqa: E731
        if isinstance(sampler, NodeWise):
            _nodewise_hop(mb, sampler, fanout, indptr, indices, weights, word)
        elif isinstance(sampler, LADIES):
            _ladies_hop(mb, fanout, indptr, indices, weights, word)
        elif isinstance(sampler, FastGCN):
            _fastgcn_hop(mb, fanout, indptr, indices, weights, hw, batch_id, key)
        else:
            raise TypeError(f"no reference for {type(sampler).__name__}")
    return mb.finish(batch_id, len(seeds), layerwise=not isinstance(sampler, NodeWise))


class _Builder:
    def __init__(self, seeds):
        self.n_id = list(seeds)
        self.local = {v: i for i, v in enumerate(seeds)}
        self.counts = [len(seeds)]
        self.hop_start = 0
        self.edges, self.edge_ids, self.weights = [], [], []

    def add(self, v):
        if v not in self.local:
            self.local[v] = len(self.n_id)
            self.n_id.append(v)

    def finish(self, batch_id, batch_size, layerwise):
        i64 = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
        return MiniBatch(batch_id=batch_id, n_id=i64(self.n_id), batch_size=batch_size,
                         num_sampled_nodes=self.counts,
                         edges=[(i64(d), i64(s)) for d, s in self.edges],
                         edge_ids=[i64(e) for e in self.edge_ids],
                         weight=[np.array(w, dtype=np.float64) for w in self.weights] if layerwise else None)


# ------------------------------------------------------------------------------ node-wise
def _nodewise_hop(mb, sampler, s, indptr, indices, weights, word):
    frontier = mb.n_id[mb.hop_start:]
    mb.hop_start = len(mb.n_id)
    dst, src, eids = [], [], []
    for v in frontier:
        start, d = indptr[v], indptr[v + 1] - indptr[v]
        w = None if not sampler.weighted else weights[start:start + d]
        positions = _sample_row(d, s, w, sampler.replace, lambda i: word(v, i))
        for p in positions:
            u = indices[start + p]
            mb.add(u)
            dst.append(mb.local[v])
            src.append(mb.local[u])
            eids.append(start + p)
    mb.counts.append(len(mb.n_id) - mb.hop_start)
    mb.edges.append((dst, src))
    mb.edge_ids.append(eids)


def _exp_key(wd, weight):
    return -_rng.det_log_scalar((wd + 0.5) / 4294967296.0) / weight


def _sample_row(d, s, w, replace, word):
    if w is None:
        if s < 0:
            return list(range(d))
        if replace:
            return sorted((word(i) * d) >> 32 for i in range(s)) if d else []
        if d <= s:
            return list(range(d))
        chosen = []
        for i in range(s):                       # Floyd's algorithm
            j = d - s + i
            t = (word(i) * (j + 1)) >> 32
            chosen.append(j if t in chosen else t)
        return sorted(chosen)
    eligible = [p for p in range(d) if w[p] > 0]
    if s < 0:
        return eligible
    if replace:
        if not eligible:
            return []
        return sorted(min(eligible, key=lambda p: (_exp_key(word(i * d + p), w[p]), p))
                      for i in range(s))
    if len(eligible) <= s:
        return eligible
    ranked = sorted(eligible, key=lambda p: (_exp_key(word(p), w[p]), p))
    return sorted(ranked[:s])


# ------------------------------------------------------------------------------ layer-wise
def _unit53(w0, w1):
    """A layer-wise draw's uniform in [0, 1) from words 2t, 2t + 1 (53 random bits)."""
    return ((w0 >> 5) * 67108864.0 + (w1 >> 6)) * (1.0 / 9007199254740992.0)


def _layer_edges(mb, column_value, indptr, indices, weights):
    """Edges B x C with A[v,u] != 0, valued A[v,u]/P[u] and row-normalised (serial sums)."""
    dst, src, eids, vals = [], [], [], []
    for v in mb.n_id[:mb.hop_start]:
        row_raw, row_start = [], len(vals)
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            a = 1.0 if weights is None else weights[e]
            if a > 0 and u in mb.local:
                dst.append(mb.local[v]); src.append(mb.local[u]); eids.append(e)  # noqa: E702
                row_raw.append(a / column_value(u))
        total = 0.0
        for x in row_raw:
            total += x
        vals.extend(x / total for x in row_raw)
        assert len(vals) - row_start == len(row_raw)
    mb.edges.append((dst, src))
    mb.edge_ids.append(eids)
    mb.weights.append(vals)


def _add_layer(mb, chosen, indptr, indices, weights, column_value, num_before):
    for u in sorted(chosen):
        mb.add(u)
    mb.counts.append(len(mb.n_id) - num_before)
    _layer_edges(mb, column_value, indptr, indices, weights)


def _ladies_hop(mb, s, indptr, indices, weights, word):
    B = list(mb.n_id)
    mb.hop_start = len(B)
    q = {}
    for v in B:
        for e in range(indptr[v], indptr[v + 1]):
            a = 1.0 if weights is None else weights[e]
            if a > 0:
                q[indices[e]] = q.get(indices[e], 0.0) + a * a
    cands = sorted(q)
    if s < 0 or len(cands) <= s:
        chosen = cands
    elif weights is None:   # draws of entries (rows of B in order, storage order) until s distinct
        columns = [indices[e] for v in B for e in range(indptr[v], indptr[v + 1])]
        chosen, t = set(), 0
        while len(chosen) < s:
            u53 = _unit53(word(_rng.NO_VERTEX, 2 * t), word(_rng.NO_VERTEX, 2 * t + 1))
            chosen.add(columns[min(int(u53 * len(columns)), len(columns) - 1)])
            t += 1
    else:
        chosen = sorted(cands, key=lambda u: (_exp_key(word(u, 0), q[u]), u))[:s]
    _add_layer(mb, chosen, indptr, indices, weights, q.__getitem__, len(B))


def _fastgcn_hop(mb, s, indptr, indices, weights, hw, batch_id, key):
    n = len(indptr) - 1
    q = [0.0] * n
    for e, u in enumerate(indices):
        a = 1.0 if weights is None else weights[e]
        q[u] += a * a
    cumulative, run = [], 0.0
    for x in q:
        run += x
        cumulative.append(run)
    B = list(mb.n_id)
    mb.hop_start = len(B)
    chosen = set()
    if cumulative and cumulative[-1] > 0:
        for i in range(s):
            u53 = _unit53(_rng.stream_word_scalar(2 * i, _rng.NO_VERTEX, hw, batch_id, key),
                          _rng.stream_word_scalar(2 * i + 1, _rng.NO_VERTEX, hw, batch_id, key))
            chosen.add(min(bisect.bisect_right(cumulative, u53 * cumulative[-1]), n - 1))
    _add_layer(mb, chosen, indptr, indices, weights, q.__getitem__, len(B))
