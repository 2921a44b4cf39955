"""The bulk sampler against the oracle and against the invariants (README, "Design notes")."""

import numpy as np
import pytest
from scipy import stats

import spsample
from spsample import FastGCN, LADIES, NodeWise
from spsample.engine._reference import reference_sample

from graphs import random_graph

SAMPLERS = [
    NodeWise([5, 3, -1]),
    NodeWise([4, 2], replace=True),
    LADIES([10, 20]),
    LADIES([-1, 4]),
    FastGCN([10, 30]),
]
WEIGHTED_SAMPLERS = [
    NodeWise([5, 3], weighted=True),
    NodeWise([4, 2], weighted=True, replace=True),
    NodeWise([-1, 2], weighted=True),
]


def _all_equal(a, b):
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


CASES = [(s, False) for s in SAMPLERS] + [(s, True) for s in SAMPLERS + WEIGHTED_SAMPLERS]


@pytest.mark.parametrize("sampler,weighted", CASES, ids=lambda x: repr(x))
def test_bulk_equals_oracle(sampler, weighted):
    g = random_graph(200, 1500, seed=3, weighted=weighted, zero_weight_fraction=0.1)
    seeds = np.random.default_rng(4).permutation(200)[:70]
    kw = dict(sampler=sampler, batch_size=16, seed=11, epoch=3, batch_offset=5)
    assert _all_equal(spsample.sample(g, seeds, **kw), reference_sample(g, seeds, **kw))


@pytest.mark.parametrize("sampler", SAMPLERS, ids=repr)
def test_k_invariance(sampler):
    """sample(seeds) == concatenation of sample(part, batch_offset=...) over any split."""
    g = random_graph(300, 3000, seed=5)
    seeds = np.random.default_rng(6).permutation(300)[:100]
    whole = spsample.sample(g, seeds, sampler=sampler, batch_size=8, seed=1)
    parts = []
    for lo, hi in [(0, 3), (3, 4), (4, 13)]:     # minibatch ranges
        parts += spsample.sample(g, seeds[lo * 8: hi * 8], sampler=sampler, batch_size=8,
                                 seed=1, batch_offset=lo)
    assert _all_equal(whole, parts)


def test_seed_and_epoch_change_the_sample():
    g = random_graph(300, 6000, seed=7)
    kw = dict(sampler=NodeWise([3, 3]), batch_size=50)
    a = spsample.sample(g, np.arange(100), seed=1, **kw)
    assert _all_equal(a, spsample.sample(g, np.arange(100), seed=1, **kw))
    assert not _all_equal(a, spsample.sample(g, np.arange(100), seed=2, **kw))
    assert not _all_equal(a, spsample.sample(g, np.arange(100), seed=1, epoch=1, **kw))


@pytest.mark.parametrize("replace", [False, True])
def test_nodewise_invariants(replace):
    g = random_graph(500, 5000, seed=8)
    deg = g.degree()
    A = g.to_scipy()
    fanouts = [6, 4, 2]
    seeds = np.random.default_rng(9).permutation(500)[:128]
    for mb in spsample.sample(g, seeds, sampler=NodeWise(fanouts, replace=replace), batch_size=32):
        assert np.array_equal(mb.n_id[:mb.batch_size], mb.seeds)
        assert np.unique(mb.n_id).size == mb.n_id.size                 # n_id unique
        assert sum(mb.num_sampled_nodes) == mb.num_nodes
        start = 0
        for hop, ((dst, src), eid) in enumerate(zip(mb.edges, mb.edge_ids), start=1):
            gd, gs = mb.n_id[dst], mb.n_id[src]
            assert np.all(A[gd, gs] != 0)                                # sampled edges ⊆ A
            assert np.array_equal(g.indices[eid], gs)                    # edge ids point at them
            frontier = np.arange(start, start + mb.num_sampled_nodes[hop - 1])
            counts = np.bincount(dst, minlength=mb.num_nodes)[frontier]
            want = np.minimum(fanouts[hop - 1], deg[mb.n_id[frontier]])
            if replace:
                want = np.where(deg[mb.n_id[frontier]] > 0, fanouts[hop - 1], 0)
            assert np.array_equal(counts, want)                          # min(fanout, degree)
            if not replace:
                assert np.unique(dst * mb.num_nodes + src).size == dst.size
            start += mb.num_sampled_nodes[hop - 1]


def test_star_graph_example(star_graph):
    mb, = spsample.sample(star_graph, [0, 6], sampler=NodeWise([2, 1]), batch_size=2)
    assert mb.n_id[:2].tolist() == [0, 6]
    dst, src = mb.edges[0]
    assert dst.tolist() == [0, 0]                                        # 6 is isolated
    assert set(mb.n_id[src].tolist()) <= {1, 2, 3, 4, 5}


def _inclusion_counts(g, vertex, sampler, trials):
    """How often each neighbour of ``vertex`` is sampled at hop 1 over ``trials`` minibatches."""
    counts = np.zeros(g.num_nodes)
    batches = spsample.sample(g, np.full(trials, vertex), sampler=sampler, batch_size=1, seed=123)
    for mb in batches:
        dst, src = mb.edges[0]
        np.add.at(counts, mb.n_id[src], 1)
    return counts


def test_uniform_inclusion_frequencies_chi2():
    # vertex 0 aggregates from 1..20; fanout 5: each neighbour included with prob 5/20
    g = spsample.Graph.from_edge_index(np.arange(1, 21), np.zeros(20, dtype=int), num_nodes=21)
    trials = 4000
    counts = _inclusion_counts(g, 0, NodeWise([5]), trials)[1:]
    assert counts.sum() == 5 * trials
    expected = np.full(20, trials * 5 / 20)
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_weighted_inclusion_frequencies_chi2():
    """Efraimidis–Spirakis without replacement; fanout 1: P(u) = w_u / Σw; fanout 2:
    P(i ∈ S) = p_i + Σ_{j≠i} p_j p_i / (1 - p_j)."""
    w = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    g = spsample.Graph.from_edge_index(np.arange(1, 6), np.zeros(5, dtype=int), num_nodes=6,
                                       weights=w)
    trials = 5000
    p = w / w.sum()
    c1 = _inclusion_counts(g, 0, NodeWise([1], weighted=True), trials)[1:]
    assert stats.chisquare(c1, trials * p).pvalue > 1e-3
    c2 = _inclusion_counts(g, 0, NodeWise([2], weighted=True), trials)[1:]
    incl = np.array([p[i] + sum(p[j] * p[i] / (1 - p[j]) for j in range(5) if j != i)
                     for i in range(5)])
    assert np.isclose(incl.sum(), 2.0)
    assert stats.chisquare(c2, trials * incl).pvalue > 1e-3
    cr = _inclusion_counts(g, 0, NodeWise([3], weighted=True, replace=True), trials)[1:]
    assert stats.chisquare(cr, 3 * trials * p).pvalue > 1e-3


def test_weighted_zero_weight_edges_never_sampled():
    w = np.array([0.0, 1.0, 0.0, 1.0])
    g = spsample.Graph.from_edge_index([1, 2, 3, 4], [0, 0, 0, 0], num_nodes=5, weights=w)
    weighted = NodeWise([3], weighted=True)
    for mb in spsample.sample(g, np.zeros(50, dtype=int), sampler=weighted, batch_size=1):
        assert sorted(mb.n_id[mb.edges[0][1]].tolist()) == [2, 4]


def test_ladies_samples_only_positive_probability_and_follows_it():
    r"""Seed 0 aggregates from 1, 2; vertex 5 from 2, 3.  A∘A column sums for B = {0, 5}:
    q = {1: 1, 2: 2, 3: 1}; vertex 4 has probability 0."""
    g = spsample.Graph.from_edge_index([1, 2, 2, 3, 4], [0, 0, 5, 5, 6], num_nodes=7)
    trials = 4000
    seeds = np.tile([0, 5], trials)
    counts = np.zeros(7)
    for mb in spsample.sample(g, seeds, sampler=LADIES([1]), batch_size=2, seed=9):
        new = mb.n_id[mb.batch_size:]
        assert new.size == 1 and new[0] in (1, 2, 3)
        counts[new[0]] += 1
        w = mb.weight[0]
        dst = mb.edges[0][0]
        assert np.allclose(np.bincount(dst, weights=w)[np.unique(dst)], 1.0)   # row-normalised
    assert stats.chisquare(counts[1:4], trials * np.array([1, 2, 1]) / 4).pvalue > 1e-3


def test_unweighted_ladies_draws_without_replacement_proportional_to_counts():
    r"""Rows of B = {0, 1}: 0 -> {2, 3, 4}, 1 -> {2, 3, 5}, so the counts are q = {2: 2, 3: 2,
    4: 1, 5: 1} over D = 6 entries. Two columns are drawn without replacement (successive
    sampling): pair {a, b} has probability q_a/D * q_b/(D - q_a) + q_b/D * q_a/(D - q_b)."""
    g = spsample.Graph.from_edge_index([2, 3, 4, 2, 3, 5], [0, 0, 0, 1, 1, 1], num_nodes=6)
    q = {2: 2, 3: 2, 4: 1, 5: 1}
    pairs = [(a, b) for a in q for b in q if a < b]
    expected = np.array([q[a] / 6 * q[b] / (6 - q[a]) + q[b] / 6 * q[a] / (6 - q[b])
                         for a, b in pairs])
    assert np.isclose(expected.sum(), 1.0)
    trials = 4000
    counts = np.zeros(len(pairs))
    for mb in spsample.sample(g, np.tile([0, 1], trials), sampler=LADIES([2]), batch_size=2,
                              seed=5):
        new = tuple(sorted(mb.n_id[mb.batch_size:].tolist()))
        counts[pairs.index(new)] += 1
    assert stats.chisquare(counts, trials * expected).pvalue > 1e-3


def test_unweighted_ladies_with_rare_columns_matches_oracle():
    """Ten seeds share ten columns (count 10 each) and have one column of their own (count 1):
    choosing 19 of the 20 columns takes many more draws than the first round of the NumPy path
    (the rounds double until every minibatch has its columns)."""
    src = [100 + c for v in range(10) for c in range(10)] + [200 + v for v in range(10)]
    dst = [v for v in range(10) for _ in range(10)] + list(range(10))
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=210)
    kw = dict(sampler=LADIES([19, 5]), batch_size=10, seed=3)
    out = spsample.sample(g, np.tile(np.arange(10), 6), **kw)
    assert _all_equal(out, reference_sample(g, np.tile(np.arange(10), 6), **kw))
    assert all(mb.num_sampled_nodes[1] == 19 for mb in out)


def test_ladies_includes_previous_layer_and_edges_within_sets():
    g = random_graph(200, 2000, seed=10)
    A = g.to_scipy()
    for mb in spsample.sample(g, np.arange(40), sampler=LADIES([15, 15]), batch_size=20):
        for hop, (dst, src) in enumerate(mb.edges, start=1):
            rows = mb.n_id[:sum(mb.num_sampled_nodes[:hop])]
            cols = mb.n_id[:sum(mb.num_sampled_nodes[:hop + 1])]
            assert np.all(np.isin(mb.n_id[dst], rows)) and np.all(np.isin(mb.n_id[src], cols))
            assert np.all(A[mb.n_id[dst], mb.n_id[src]] != 0)
            # every entry of A between rows and cols is an edge of the layer
            assert dst.size == A[rows][:, cols].nnz
            assert mb.num_sampled_nodes[hop] <= 15


def test_fastgcn_follows_global_column_weights():
    r"""q[u] = in-row count of u: vertex 1 appears in 3 rows, 2 in 1 row; seed 0 has q = 0."""
    g = spsample.Graph.from_edge_index([1, 1, 1, 2], [0, 3, 4, 3], num_nodes=5)
    trials = 3000
    counts = np.zeros(5)
    for mb in spsample.sample(g, np.zeros(trials, dtype=int), sampler=FastGCN([1]), batch_size=1):
        counts[mb.n_id[1:]] += 1
    assert counts[0] == 0 and counts[3] == 0 and counts[4] == 0
    assert stats.chisquare(counts[1:3], trials * np.array([0.75, 0.25])).pvalue > 1e-3


def test_to_pyg_fields():
    torch = pytest.importorskip("torch")
    g = random_graph(50, 300, seed=2)
    mb, = spsample.sample(g, np.arange(10), sampler=NodeWise([3, 2]), batch_size=10)
    out = mb.to_pyg()
    assert set(out) == {"node", "row", "col", "edge", "batch", "num_sampled_nodes",
                        "num_sampled_edges"}
    assert torch.equal(out["node"], torch.from_numpy(mb.n_id))
    assert out["row"].shape == out["col"].shape == out["edge"].shape
    assert out["num_sampled_edges"] == mb.num_sampled_edges


def test_last_partial_minibatch_kept():
    g = random_graph(50, 300, seed=2)
    out = spsample.sample(g, np.arange(25), sampler=NodeWise([2]), batch_size=10, batch_offset=7)
    assert [m.batch_size for m in out] == [10, 10, 5]
    assert [m.batch_id for m in out] == [7, 8, 9]
