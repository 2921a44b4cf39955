"""The engine: any sampler written as lazy matrices runs natively, bit for bit equal to the NumPy
evaluation of its constructors and to the scalar reference.

Built-ins and user-style compositions (values scaled per column / row / edge, sums of views,
per-vertex fanouts, given rows, no deduplication, walks keyed per row, node2vec lookups) on
random, skewed, weighted, isolated-vertex and self-loop graphs; 1 and 2 threads; any bulk
split. Statistical tests of LABOR's inclusion probabilities and node2vec's transitions; the
one-time warning of a constructor that cannot be lowered; bad input.
"""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample import primitives as prim
from spsample.engine._reference import reference_sample
from spsample.primitives import Streams

from graphs import random_graph

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")

_SPEC = importlib.util.spec_from_file_location(
    "random_walk", Path(__file__).resolve().parents[1] / "experiments" / "random_walk.py")
readme_walk = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(readme_walk)


# ------------------------------------------------------------------------------ user samplers
class Plain(spsample.NodeWise):
    """Overrides nothing."""


class PlainLADIES(spsample.LADIES):
    pass


class ColumnScaled(spsample.NodeWise):
    """Node-wise, neighbour u weighted by 1 / (1 + deg(u)) (a per-column vector)."""

    def __init__(self, fanouts, graph):
        super().__init__(fanouts, weighted=True)
        self.vec = 1.0 / (1.0 + graph.degree())

    def check_graph(self, graph):
        pass

    def probabilities(self, graph, Q, ctx):
        return prim.gather(graph, Q).scale_columns(self.vec)


class Composed(spsample.NodeWise):
    """Values from every transform: (w·col + w²)·row·edge, sampled with replacement."""

    def __init__(self, fanouts, graph):
        super().__init__(fanouts, weighted=True, replace=True)
        rng = np.random.default_rng(0)
        self.col, self.row = rng.random(graph.num_nodes), rng.random(graph.num_nodes) + 0.5
        self.edge = rng.random(graph.num_edges)

    def probabilities(self, graph, Q, ctx):
        P = prim.gather(graph, Q)
        W = P.with_weights()
        return (W.scale_columns(self.col) + W.square()).scale_rows(self.row).scale_edges(self.edge)


class PerVertexFanout(spsample.NodeWise):
    """Fanout per row vertex: vertex v keeps 1 + v % 4 neighbours (-1: all, for v % 7 == 0)."""

    def __init__(self, graph, hops=2):
        super().__init__([1] * hops)
        v = np.arange(graph.num_nodes)
        self.fan = np.where(v % 7 == 0, -1, 1 + v % 4)

    def select(self, P, Q, ctx):
        return prim.select_rows(P, self.fan, self.streams(Q, ctx))


class Tree(spsample.NodeWise):
    """No deduplication: every sampled entry is a new vertex (a tree per seed)."""

    def extract(self, state, Q, S, ctx):
        state.add_sampled(Q, S, dedup=False)


class GivenRows(spsample.NodeWise):
    """Hop 1 expands each minibatch's seeds plus two given vertices per minibatch."""

    def frontier(self, state, ctx):
        if ctx.hop != 1:
            return super().frontier(state, ctx)
        k = ctx.batch_ids.size
        batch = np.repeat(np.arange(k), 2)
        vertex = (np.repeat(ctx.batch_ids, 2) * 7 + np.tile([3, 11], k)) % state.num_nodes
        return state.rows(batch, vertex)


class WeightedWalk(spsample.RandomWalk):
    """node2vec on a weighted graph: the edge weights times the second-order bias."""

    def probabilities(self, graph, Q, ctx):
        P = super().probabilities(graph, Q, ctx)
        return P.with_weights() if P.expr is not None else P

    def select(self, P, Q, ctx):
        if P.expr is None:
            return super().select(P, Q, ctx)
        bound = max(1.0, 1 / self.p, 1 / self.q) * float(ctx.graph.weights.max())
        return prim.select_rows(P, 1, Streams.per_row(Q, ctx), replace=True, weighted=True,
                                method="rejection", bound=bound)


def _unweighted_samplers(g):
    return [
        spsample.NodeWise([5, 3, 2]), spsample.NodeWise([3, -1]), spsample.NodeWise([40, 2]),
        spsample.NodeWise([4, 2], replace=True), spsample.LADIES([10, 20]),
        spsample.FastGCN([10, 30]), spsample.LABOR([5, 3]), spsample.LABOR([-1, 2]),
        spsample.RandomWalk(4), spsample.RandomWalk(5, p=0.5, q=2.0),
        spsample.RandomWalk(3, p=4.0, q=0.25), Plain([4, 3]), PlainLADIES([8, 8]),
        ColumnScaled([4, 3], g), PerVertexFanout(g), Tree([3, 2]), GivenRows([3, 2]),
        readme_walk.RandomWalk(4),
    ]


def _weighted_samplers(g):
    return _unweighted_samplers(g) + [
        spsample.NodeWise([5, 3], weighted=True), spsample.NodeWise([-1, 2], weighted=True),
        spsample.NodeWise([4, 2], weighted=True, replace=True), Composed([3, 2], g),
        WeightedWalk(4, p=0.5, q=2.0),
    ]


def _same(a, b):
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


def three_ways(g, seeds, sampler, **kw):
    """Native == NumPy evaluation == scalar reference; the native path really ran."""
    kw = dict(sampler=sampler, batch_size=kw.pop("batch_size", 16), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # a lowering failure would warn
        fast = spsample.sample(g, seeds, **kw)
    assert fast.path == "native"
    with _native.disabled():
        slow = spsample.sample(g, seeds, **kw)
    assert slow.path == "numpy"
    assert _same(fast, slow), "native != NumPy evaluation of the constructors"
    assert _same(fast, reference_sample(g, seeds, **kw)), "native != scalar reference"
    return fast


def _skewed_graph():
    """Vertex 0 aggregates from 20,000 vertices (and they from it); a sparse graph around."""
    n = 20_001
    rng = np.random.default_rng(5)
    hub = np.arange(1, n)
    src = np.concatenate([hub, np.zeros(n - 1, dtype=np.int64), rng.integers(0, n, 4000)])
    dst = np.concatenate([np.zeros(n - 1, dtype=np.int64), hub, rng.integers(0, n, 4000)])
    w = rng.random(src.size) + 0.05
    return spsample.Graph.from_edge_index(src, dst, num_nodes=n, weights=w)


def _loops_graph():
    """Rows 0..9 empty; every vertex of 10..39 has a self-loop."""
    rng = np.random.default_rng(8)
    loops = np.arange(10, 40)
    src = np.concatenate([loops, rng.integers(10, 40, 120)])
    dst = np.concatenate([loops, rng.integers(10, 40, 120)])
    w = rng.random(src.size) + 0.1
    return spsample.Graph.from_edge_index(src, dst, num_nodes=40, weights=w)


# ------------------------------------------------------------------------------ bit for bit
@needs_native
@pytest.mark.parametrize("i", range(len(_unweighted_samplers(random_graph(5, 5)))))
def test_random_graph_three_ways(i):
    g = random_graph(300, 2500, seed=1)
    sampler = _unweighted_samplers(g)[i]
    seeds = np.random.default_rng(2).permutation(300)[:90]
    three_ways(g, seeds, sampler, seed=7, epoch=2, batch_offset=3)


@needs_native
@pytest.mark.parametrize("i", range(len(_weighted_samplers(random_graph(5, 5)))))
def test_weighted_graph_three_ways(i):
    g = random_graph(250, 3000, seed=3, weighted=True, zero_weight_fraction=0.15)
    sampler = _weighted_samplers(g)[i]
    seeds = np.random.default_rng(4).permutation(250)[:70]
    three_ways(g, seeds, sampler, seed=2**40 + 5, epoch=1)


@needs_native
@pytest.mark.parametrize("make", [lambda g: spsample.LABOR([30, 4]),
                                  lambda g: spsample.RandomWalk(4),
                                  lambda g: spsample.RandomWalk(4, p=0.25, q=4.0),
                                  lambda g: ColumnScaled([8, 2], g), lambda g: Tree([5, 2])],
                         ids=["labor", "walk", "node2vec", "column-scaled", "tree"])
def test_skewed_graph_three_ways(make):
    g = _skewed_graph()
    seeds = np.unique(np.concatenate([[0], np.random.default_rng(6).integers(1, g.num_nodes, 30)]))
    three_ways(g, seeds, make(g), batch_size=8, seed=3)


@needs_native
@pytest.mark.parametrize("make", [lambda g: spsample.LABOR([2, 2]),
                                  lambda g: spsample.RandomWalk(5),
                                  lambda g: spsample.RandomWalk(5, p=2.0, q=0.5),
                                  lambda g: WeightedWalk(4, p=0.5, q=3.0),
                                  lambda g: Composed([2, 2], g),
                                  lambda g: Tree([2, 2])],
                         ids=["labor", "walk", "node2vec", "weighted-walk", "composed", "tree"])
def test_isolated_vertices_and_self_loops_three_ways(make):
    g = _loops_graph()
    seeds = np.random.default_rng(8).permutation(40)
    three_ways(g, seeds, make(g), batch_size=7, seed=9, epoch=4)


@needs_native
@pytest.mark.parametrize("make", [lambda g: spsample.LABOR([6, 3]),
                                  lambda g: spsample.RandomWalk(6, p=0.5, q=2.0),
                                  lambda g: ColumnScaled([5, 5], g), lambda g: GivenRows([4, 2])],
                         ids=["labor", "node2vec", "column-scaled", "given-rows"])
def test_threads_and_bulk_split_do_not_change_results(make):
    g = spsample.rmat(11, seed=2)
    seeds = np.random.default_rng(1).permutation(g.num_nodes)[:400]
    sampler = make(g)
    kw = dict(sampler=sampler, batch_size=50, seed=5, epoch=3)
    previous = _native.set_num_threads(1)
    try:
        one = spsample.sample(g, seeds, **kw)
        _native.set_num_threads(2)
        two = spsample.sample(g, seeds, **kw)
    finally:
        _native.set_num_threads(previous)
    parts = (spsample.sample(g, seeds[:150], **kw)
             + spsample.sample(g, seeds[150:], batch_offset=3, **kw))
    assert _same(one, two) and _same(one, parts)
    if not isinstance(sampler, GivenRows):        # given rows are keyed by bulk position
        with _native.disabled():
            assert _same(one, spsample.sample(g, seeds, **kw))


# ------------------------------------------------------------------------------ the result
def test_bulk_is_flat_and_minibatches_are_views_of_it():
    g = random_graph(200, 1500, seed=9)
    bulk = spsample.sample(g, np.arange(100), sampler=spsample.NodeWise([3, 2]), batch_size=30)
    assert isinstance(bulk, spsample.Bulk) and len(bulk) == 4
    assert bulk.node_offsets.tolist()[0] == 0 and bulk.node_offsets[-1] == bulk.n_id.size
    assert bulk.num_sampled_nodes.shape == (4, 3)
    for j, mb in enumerate(bulk):
        a, b = bulk.node_offsets[j], bulk.node_offsets[j + 1]
        assert np.shares_memory(mb.n_id, bulk.n_id) and np.array_equal(mb.n_id, bulk.n_id[a:b])
        assert mb.num_sampled_nodes == bulk.num_sampled_nodes[j].tolist()
        for h, hop in enumerate(bulk.hops):
            e0, e1 = hop.offsets[j], hop.offsets[j + 1]
            assert np.array_equal(mb.edges[h][0], hop.dst[e0:e1])
            assert np.array_equal(mb.edge_ids[h], hop.edge_id[e0:e1])
    assert bulk.num_edges == sum(sum(mb.num_sampled_edges) for mb in bulk)


@needs_native
def test_node_ids_of_a_tree_repeat_and_edges_form_a_forest():
    g = random_graph(100, 900, seed=4)
    mb = three_ways(g, np.arange(10), Tree([3, 3]), batch_size=10)[0]
    assert mb.n_id.size == 10 + sum(mb.num_sampled_edges)        # one vertex per edge
    for dst, src in mb.edges:
        assert np.array_equal(np.sort(src), np.arange(src.min(), src.max() + 1))   # each once


@needs_native
def test_walks_keep_their_stream_when_another_walk_stops():
    """Walk 0 stops at a vertex without neighbours; walk 1's steps do not change."""
    src = [2, 3, 4, 5, 6, 7, 8, 9]
    dst = [0, 1, 3, 1, 3, 4, 5, 4]
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=10, symmetrize=False)
    walker = spsample.RandomWalk(3)
    both = three_ways(g, [0, 1], walker, batch_size=2, seed=1)[0]
    alone = spsample.sample(g, [5, 1], sampler=walker, batch_size=2, seed=1)[0]
    # seed 1 is walk 1 in both minibatches: same row id, same stream, same path
    path = lambda mb: [mb.n_id[s[d == 1]].tolist() for d, s in mb.edges]  # noqa: E731
    assert path(both)[0] == path(alone)[0]


# ------------------------------------------------------------------------------ distributions
def _chi2_pvalue(observed, expected):
    from scipy.stats import chisquare
    return chisquare(observed, expected).pvalue


def test_labor_inclusion_probabilities_and_shared_variates():
    """Row 0 has 20 neighbours, fanout 5: each is kept with probability 1/4; row 1 has the same
    neighbours, so within a minibatch it keeps exactly the same ones (one variate per column)."""
    nbrs = np.arange(2, 22)
    src = np.concatenate([nbrs, nbrs])
    dst = np.concatenate([np.zeros(20, dtype=np.int64), np.ones(20, dtype=np.int64)])
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=22)
    trials = 4000
    bulk = spsample.sample(g, np.tile([0, 1], trials), sampler=spsample.LABOR([5]), batch_size=2,
                           seed=11)
    counts = np.zeros(22)
    sizes = []
    for mb in bulk:
        dst_l, src_l = mb.edges[0]
        kept0 = np.sort(mb.n_id[src_l[dst_l == 0]])
        kept1 = np.sort(mb.n_id[src_l[dst_l == 1]])
        assert np.array_equal(kept0, kept1)
        counts[kept0] += 1
        sizes.append(kept0.size)
    kept, expected = counts[2:], np.full(20, trials / 4)
    assert _chi2_pvalue(np.r_[kept, trials * 20 - kept.sum()],
                        np.r_[expected, trials * 20 - expected.sum()]) > 1e-4
    assert abs(np.mean(sizes) - 5) < 0.2


def test_node2vec_transition_probabilities():
    """From v = 1 having come from t = 0: back to t with weight 1/p, to 2 (a neighbour of t)
    with weight 1, to 3 and 4 with weight 1/q."""
    und = [(0, 1), (0, 2), (1, 2), (1, 3), (1, 4)]
    src = [a for a, b in und] + [b for a, b in und]
    dst = [b for a, b in und] + [a for a, b in und]
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=5)
    p, q = 0.5, 2.0
    bulk = spsample.sample(g, np.zeros(6000, dtype=np.int64),
                           sampler=spsample.RandomWalk(2, p=p, q=q), batch_size=1, seed=4)
    second = []
    for mb in bulk:
        (d1, s1), (d2, s2) = mb.edges
        if mb.n_id[s1[0]] == 1:                      # the walk stepped to v = 1 first
            second.append(int(mb.n_id[s2[0]]))
    observed = np.bincount(second, minlength=5)[[0, 2, 3, 4]]
    weights = np.array([1 / p, 1.0, 1 / q, 1 / q])
    expected = weights / weights.sum() * observed.sum()
    assert observed.sum() > 2000
    assert _chi2_pvalue(observed, expected) > 1e-4


# ------------------------------------------------------------------------------ not lowered
class ReadsData(spsample.NodeWise):
    """Keys streams from arrays it computes from Q (reads sampled data): cannot be traced."""

    def streams(self, Q, ctx):
        walk = np.arange(len(Q)) - np.searchsorted(Q.batch, Q.batch)
        return Streams(walk, ctx.batch_ids[Q.batch], ctx.hop_word, ctx.key)


@needs_native
def test_a_constructor_that_reads_data_warns_once_naming_it_and_runs_numpy():
    g = random_graph(100, 700, seed=2)
    sampler = ReadsData([3, 2])
    with pytest.warns(spsample.NotLoweredWarning, match=r"ReadsData\.streams was not lowered"):
        first = spsample.sample(g, np.arange(40), sampler=sampler, batch_size=10)
    assert first.path == "numpy"
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # once: the second call is silent
        again = spsample.sample(g, np.arange(40), sampler=sampler, batch_size=10)
    assert _same(first, again)
    with _native.disabled():
        assert _same(first, spsample.sample(g, np.arange(40), sampler=sampler, batch_size=10))


class UnloweredValues(spsample.LADIES):
    """LADIES whose column sums are of other values than A∘A: no layer-wise kernel for it."""

    def probabilities(self, graph, Q, ctx):
        return prim.column_sums(prim.gather(graph, Q).scale_columns(np.ones(graph.num_nodes)), ctx)


@needs_native
def test_a_composition_without_kernel_warns_naming_the_constructor():
    g = random_graph(100, 700, seed=2)
    with pytest.warns(spsample.NotLoweredWarning, match=r"UnloweredValues\.probabilities"):
        out = spsample.sample(g, np.arange(20), sampler=UnloweredValues([5]), batch_size=10)
    assert out.path == "numpy" and len(out) == 2


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("vec, error, match", [
    (np.ones(7), spsample.ArgumentError, "must have shape"),
    (-np.ones(50), spsample.ArgumentError, "finite values >= 0"),
    (np.full(50, np.nan), spsample.ArgumentError, "finite values >= 0"),
    (np.array(["a"] * 50), spsample.ArgumentTypeError, "numeric array"),
])
def test_bad_column_vector_is_a_typed_error_naming_it(vec, error, match):
    g = random_graph(50, 300, seed=1)

    class Bad(ColumnScaled):
        def __init__(self):
            spsample.NodeWise.__init__(self, [2], weighted=True)
            self.vec = vec

    with pytest.raises(error, match=f"vec.*{match}"):
        spsample.sample(g, [1, 2], sampler=Bad(), batch_size=2)
    with _native.disabled(), pytest.raises(error, match=f"vec.*{match}"):
        spsample.sample(g, [1, 2], sampler=Bad(), batch_size=2)


@pytest.mark.parametrize("kw, name", [(dict(p=0), "p"), (dict(q=-1.0), "q"),
                                      (dict(p=float("nan")), "p"),
                                      (dict(q=float("inf")), "q"), (dict(p="1"), "p"),
                                      (dict(walk_length=0), "walk_length")])
def test_bad_walk_parameters(kw, name):
    args = {"walk_length": 3, **kw}
    with pytest.raises((spsample.ArgumentError, spsample.ArgumentTypeError), match=f"'{name}'"):
        spsample.RandomWalk(**args)


def test_bad_selection_arguments_name_them():
    g = random_graph(30, 200, seed=1)
    Q = prim.Frontier(np.zeros(3, dtype=np.int64), np.array([1, 2, 3]), np.array([0, 1, 2]))
    P = prim.gather(g, Q)
    st = Streams(Q.vertex, np.zeros(3, dtype=np.int64), 1, (0, 0))
    with pytest.raises(spsample.ArgumentError, match="'method'"):
        prim.select_rows(P, 2, st, method="magic")
    with pytest.raises(spsample.ArgumentError, match="'bound'"):
        prim.select_rows(P * 2.0, 2, st, replace=True, weighted=True, method="rejection", bound=0)
    with pytest.raises(spsample.ArgumentError, match="'method'"):
        prim.select_rows(P * 2.0, 2, st, weighted=True, method="rejection", bound=2.0)
    with pytest.raises(spsample.ArgumentError, match="'weighted'"):
        prim.select_rows(P, 2, st, weighted=True)
    with pytest.raises(spsample.ArgumentError, match="'fanout'"):
        prim.select_rows(P, np.ones(5, dtype=np.int64), st)
    with pytest.raises(spsample.ArgumentError, match="'fanout'"):
        prim.select_rows(P, 0, st)
    with pytest.raises(spsample.ArgumentTypeError, match="'P'"):
        prim.select_rows(P.materialize(), 2, st)
    with pytest.raises(spsample.ArgumentError, match="'streams'"):
        prim.select_threshold(P, 2, st)


class OverBound(spsample.RandomWalk):
    """Claims values <= 1 while node2vec with p = 0.5 reaches 2."""

    def select(self, P, Q, ctx):
        if P.expr is None:
            return super().select(P, Q, ctx)
        return prim.select_rows(P, 1, Streams.per_row(Q, ctx), replace=True, weighted=True,
                                method="rejection", bound=1.0)


@pytest.mark.parametrize("native", [True, False])
def test_a_rejection_bound_below_a_value_is_a_typed_error(native):
    if native and not _native.AVAILABLE:
        pytest.skip("native kernels not built")
    und = [(0, 1), (1, 2), (1, 3)]
    g = spsample.Graph.from_edge_index([a for a, b in und] + [b for a, b in und],
                                       [b for a, b in und] + [a for a, b in und], num_nodes=4)
    previous = _native.set_enabled(native)
    try:
        with pytest.raises(spsample.SamplerError, match="bound"):
            for seed in range(20):
                spsample.sample(g, [0], sampler=OverBound(3, p=0.5), batch_size=1, seed=seed)
    finally:
        _native.set_enabled(previous)


# ------------------------------------------------------------------------------ resources
@pytest.fixture
def memory_limit(monkeypatch):
    """Cap the memory spsample may plan to use (``SPSAMPLE_MEMORY_LIMIT``)."""
    return lambda nbytes: monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", str(nbytes))


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("sampler, batch_size", [(spsample.NodeWise([-1, -1, -1]), 1),
                                                 (spsample.NodeWise([10**8], replace=True), 64)],
                         ids=["all-neighbours-3-hops", "huge-fanout-replace"])
def test_outputs_that_cannot_fit_fail_before_allocating(native, sampler, batch_size, memory_limit):
    if native and not _native.AVAILABLE:
        pytest.skip("native kernels not built")
    memory_limit(2**30)
    g = spsample.rmat(12, seed=1)
    previous = _native.set_enabled(native)
    try:
        with pytest.raises(spsample.ResourceLimitError,
                           match="'sampler' would need .*lower the fanouts, batch_size"):
            spsample.sample(g, np.arange(g.num_nodes), sampler=sampler, batch_size=batch_size)
    finally:
        _native.set_enabled(previous)


@needs_native
@pytest.mark.parametrize("sampler", [spsample.LABOR([-1, -1]), spsample.LADIES([-1, -1])], ids=repr)
def test_the_native_budget_stops_outputs_the_estimate_does_not_bound(sampler, memory_limit):
    g = spsample.rmat(11, seed=1)
    memory_limit(200_000)
    with pytest.raises(spsample.ResourceLimitError, match="lower the fanouts"):
        spsample.sample(g, np.arange(g.num_nodes), sampler=sampler, batch_size=16)


@needs_native
def test_fastgcn_draws_use_no_memory_per_draw_and_stop_when_every_column_is_chosen(memory_limit):
    """A ring: every column has the same weight, so a huge fanout saturates quickly; the early
    stop returns what all the draws would (NumPy path and reference draw all of them)."""
    n = 50
    g = spsample.Graph.from_edge_index(np.arange(n), (np.arange(n) + 1) % n, num_nodes=n)
    kw = dict(sampler=spsample.FastGCN([20_000]), batch_size=2, seed=3)
    fast = spsample.sample(g, [0, 1, 2, 3], **kw)
    assert all(mb.num_sampled_nodes[1] == n - 2 for mb in fast)      # every other column
    with _native.disabled():
        assert _same(fast, spsample.sample(g, [0, 1, 2, 3], **kw))
    memory_limit(2**20)                 # 10**9 draws: no per-draw memory on the native path
    big = spsample.sample(g, [0, 1], sampler=spsample.FastGCN([10**9]), batch_size=2)
    assert big[0].num_sampled_nodes[1] == n - 2
    with _native.disabled(), pytest.raises(spsample.ResourceLimitError, match="FastGCN draws"):
        spsample.sample(g, [0, 1], sampler=spsample.FastGCN([10**9]), batch_size=2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fanout", [10**5, 10**9])
def test_numpy_path_with_a_fanout_beyond_every_row_is_fast(fanout):
    g = spsample.rmat(11, seed=1)
    with _native.disabled():
        out = spsample.sample(g, np.arange(500), sampler=spsample.NodeWise([fanout, 3]),
                              batch_size=100)
    assert out[0].num_sampled_edges[0] == int(g.degree()[out[0].seeds].sum())


@pytest.mark.parametrize("weights", [[1e-200, 1e-200], [1e200, 1e200], [1.7e308, 1.7e308]])
@pytest.mark.parametrize("make", [lambda: spsample.LADIES([2]), lambda: spsample.FastGCN([5])],
                         ids=["ladies", "fastgcn"])
def test_layerwise_with_tiny_or_huge_weights(weights, make):
    g = spsample.Graph.from_edge_index([1, 2], [0, 0], num_nodes=3, weights=weights)
    kw = dict(sampler=make(), batch_size=1, seed=1)
    mb = spsample.sample(g, [0], **kw)[0]
    np.testing.assert_array_equal(mb.weight[0], [0.5, 0.5])
    with _native.disabled():
        assert _same([mb], spsample.sample(g, [0], **kw))
    assert _same([mb], reference_sample(g, [0], **kw))


def test_batch_size_beyond_the_seeds_is_one_minibatch():
    g = random_graph(20, 60, seed=1)
    out = spsample.sample(g, [1, 2, 3], sampler=spsample.NodeWise([2]), batch_size=10**30)
    assert len(out) == 1 and out[0].batch_size == 3
