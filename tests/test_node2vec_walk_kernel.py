"""node2vec's walk kernel (native/rowwise.h: node2vec_minibatch, taken when node2vec_plan
recognises the lowered plan: hop 1 uniform at fanout 1 from the seeds, every later hop a
rejection rule at fanout 1 on a value table, from the previous hop's sources with the previous
vertices as aux rows, one graph with 32-bit columns and a fence, the dense table) against the
NumPy path and the oracle, bit for bit, and the plans it must leave to the general path.

Which path ran shows in the block pool: a packed walk (walk_minibatch, node2vec_minibatch) gives
back two 32-bit buffers per minibatch, reserved at the walk's bound whatever its steps, where the
general path gives back one int64 n_id and three int64 arrays per hop sized by its outputs; so
after a bulk the pool holds for node2vec what it holds for a uniform walk of the same shape.

Inputs: R-MAT, and a small graph with dead ends, hubs, self-loops and edges both ways; p, q with
the outward (0.5, 2) and inward (4, 0.25) bias and more; walks keyed by row (RandomWalk) and by
vertex; walks that stop at a dead end and walks that stop because no entry has a value (the
exact phase finds none); 1-3 threads; the link loader's layout; the budget (the same charges as
the general path); the portable words (SPSAMPLE_NATIVE_SCALAR=1).
"""


import numpy as np
import pytest

import spsample
from spsample import RandomWalk, native as _native
from spsample import primitives as prim
from spsample.engine._reference import reference_sample
from spsample.primitives import Streams
from spsample.testing._samplers import WeightedWalk

from native_runs import (assert_minibatch_major_is_hop_major, bulk_digest,
                         native_run as _native_run, portable_run, same_minibatches as _same)

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")


class UserNode2Vec(spsample.Sampler):
    """node2vec written by a user from the constructors (README's way), not RandomWalk:
    streams per walk (row) or per vertex; ``near_only`` values an entry by whether it is a
    neighbour of the previous vertex alone (0 elsewhere: a walk with no such neighbour stops);
    ``dedup=False`` appends every step as a new vertex."""

    def __init__(self, walk_length, p=1.0, q=1.0, per_vertex=False, near_only=False, dedup=True,
                 bound=None):
        super().__init__([1] * walk_length)
        self.p, self.q = p, q
        self.per_vertex, self.near_only, self.dedup = per_vertex, near_only, dedup
        self.bound = (1.0 if near_only else max(1.0, 1 / p, 1 / q)) if bound is None else bound

    def frontier(self, state, ctx):
        return state.new_nodes(0) if ctx.hop == 1 else state.edge_sources(ctx.hop - 1)

    def probabilities(self, graph, Q, ctx):
        P = prim.gather(graph, Q)
        if ctx.hop == 1:
            return P
        prev = Q.previous()
        A_t = prim.gather(graph, prev)
        if self.near_only:
            return P * A_t
        p, q = self.p, self.q
        return P * (1 / q + (1 - 1 / q) * A_t
                    + prev.as_matrix() * ((1 / p - 1 / q) - (1 - 1 / q) * A_t))

    def select(self, P, Q, ctx):
        streams = Streams.per_vertex(Q, ctx) if self.per_vertex else Streams.per_row(Q, ctx)
        if ctx.hop == 1:
            return prim.select_rows(P, 1, streams)
        return prim.select_rows(P, 1, streams, replace=True, weighted=True, method="rejection",
                                bound=self.bound)

    def extract(self, state, Q, S, ctx):
        state.add_sampled(Q, S, dedup=self.dedup)

    def __repr__(self):
        return (f"UserNode2Vec({self.num_hops}, p={self.p}, q={self.q}, "
                f"per_vertex={self.per_vertex}, "
                f"near_only={self.near_only}, dedup={self.dedup})")


N = 2000
SINKS = 200  # vertices N - SINKS .. N - 1 have no entries


def dead_end_graph():
    """Rows of 1-6 mostly local entries, each edge both ways (walks can return), one in four rows
    with an entry into a dead end, self-loops on every 9th vertex, two hubs of 400 entries."""
    rng = np.random.default_rng(2811)
    src, dst = [], []
    for v in range(N - SINKS):
        for u in (v + rng.integers(-30, 31, rng.integers(1, 7))) % (N - SINKS):
            src += [v, int(u)]
            dst += [int(u), v]
        if rng.random() < 0.25:
            src.append(v)
            dst.append(int(rng.integers(N - SINKS, N)))
        if v % 9 == 0:
            src.append(v)
            dst.append(v)
    for hub in (5, 777):
        for u in rng.choice(N - SINKS, 400, replace=False):
            src += [hub, int(u)]
            dst += [int(u), hub]
    a = np.unique(np.stack([src, dst], 1), axis=0)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(a[:, 0], minlength=N))])
    return spsample.Graph.from_csr(indptr, a[:, 1])


def batch_seeds(n, size=150, batches=4, seed=2812):
    """Minibatches of distinct seeds (more than a round of rejection_rows1's rows when size >
    256), the first repeated as the second."""
    rng = np.random.default_rng(seed)
    parts = [rng.permutation(n)[:size] for _ in range(batches)]
    parts[1] = parts[0]
    return np.concatenate(parts)


def test_inputs_have_dead_ends_and_returns():
    g = dead_end_graph()
    deg = np.diff(g.indptr)
    assert np.all(deg[N - SINKS:] == 0) and np.all(deg[:N - SINKS] > 0)
    assert np.isin(np.arange(N - SINKS, N), g.indices).mean() > 0.5
    assert deg[5] >= 400 and deg[777] >= 400


PQ = [(0.5, 2.0), (4.0, 0.25), (1.0, 0.5), (2.0, 1.0), (0.25, 4.0)]


@needs_native
@pytest.mark.parametrize("p,q", PQ)
def test_dead_end_walks_equal_numpy_and_oracle(p, q):
    g = dead_end_graph()
    s = batch_seeds(g.num_nodes)
    kw = dict(sampler=RandomWalk(12, p=p, q=q), batch_size=150, seed=31, epoch=2)
    fast = _native_run(g, s, **kw)
    with _native.disabled():
        slow = spsample.sample(g, s, **kw)
    assert _same(fast, slow), "native != NumPy path"
    assert _same(fast, reference_sample(g, s, **kw)), "native != reference oracle"
    counts = fast[2].num_sampled_edges
    assert counts[0] > counts[-1] > 0  # walks stop at the dead ends, the others go on


@needs_native
@pytest.mark.parametrize("p,q", [(0.5, 2.0), (4.0, 0.25)])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_rmat_walks_equal_numpy(p, q, threads):
    """Minibatches of 600 walks (more than a round of rows); every thread count."""
    g = spsample.rmat(11, seed=4)
    s = batch_seeds(g.num_nodes, size=600, batches=3)
    kw = dict(sampler=RandomWalk(10, p=p, q=q), batch_size=600, seed=7)
    fast = _native_run(g, s, threads, **kw)
    with _native.disabled():
        assert _same(fast, spsample.sample(g, s, **kw)), "native != NumPy path"
    assert fast.num_edges > 0


@needs_native
@pytest.mark.parametrize("p,q", [(0.5, 2.0), (4.0, 0.25)])
def test_rmat_walks_equal_the_oracle(p, q):
    g = spsample.rmat(9, seed=5)
    s = batch_seeds(g.num_nodes, size=100, batches=2)
    kw = dict(sampler=RandomWalk(6, p=p, q=q), batch_size=100, seed=8)
    assert _same(_native_run(g, s, **kw), reference_sample(g, s, **kw))


USER = [UserNode2Vec(9, p=0.5, q=2.0), UserNode2Vec(9, p=4.0, q=0.25, per_vertex=True),
        UserNode2Vec(7, near_only=True)]


@needs_native
@pytest.mark.parametrize("sampler", USER, ids=repr)
def test_user_node2vec_equals_numpy_and_oracle(sampler):
    """A user's node2vec: row- and vertex-keyed, and one whose walks stop where no neighbour of
    the walk's vertex is a neighbour of the previous one (every value 0: the exact phase finds
    no entry)."""
    g = dead_end_graph()
    s = batch_seeds(g.num_nodes)
    kw = dict(sampler=sampler, batch_size=150, seed=12)
    fast = _native_run(g, s, **kw)
    with _native.disabled():
        assert _same(fast, spsample.sample(g, s, **kw)), "native != NumPy path"
    assert _same(fast, reference_sample(g, s, **kw)), "native != reference oracle"
    assert fast.num_edges > 0


@needs_native
def test_user_node2vec_is_random_walk():
    """Written from the same constructors, the user's node2vec is RandomWalk's bit for bit."""
    g = dead_end_graph()
    s = batch_seeds(g.num_nodes)
    kw = dict(batch_size=150, seed=13)
    assert _same(_native_run(g, s, sampler=UserNode2Vec(8, p=4.0, q=0.25), **kw),
                 _native_run(g, s, sampler=RandomWalk(8, p=4.0, q=0.25), **kw))


@needs_native
def test_walks_stop_without_values():
    """near_only walks stop both at dead ends and where nothing has a value."""
    g = dead_end_graph()
    s = batch_seeds(g.num_nodes)[:150]
    mb = _native_run(g, s, sampler=UserNode2Vec(7, near_only=True), batch_size=150, seed=12)[0]
    deg = np.diff(g.indptr)
    stuck = 0
    for (_, src), (dst, _) in zip(mb.edges[:-1], mb.edges[1:]):
        stuck += int((deg[mb.n_id[src]] > 0).sum()) - dst.size  # walks with entries, not moved
    assert stuck > 0


@needs_native
def test_vertex_keyed_steps_coincide():
    """Vertex-keyed walks (K_VERTEX, not K_ROW) standing on one vertex having come from one
    vertex take the same step; row-keyed ones do not always."""
    g = dead_end_graph()
    s = batch_seeds(g.num_nodes)[:150]
    deg = np.diff(g.indptr)

    def coincide(sampler):
        mb = _native_run(g, s, sampler=sampler, batch_size=150, seed=2)[0]
        same = []
        for (d0, s0), (_, s1) in zip(mb.edges[:-1], mb.edges[1:]):
            went = deg[mb.n_id[s0]] > 0  # p, q > 0: only dead ends stop a walk
            t, v, x = mb.n_id[d0][went], mb.n_id[s0][went], mb.n_id[s1]
            assert x.size == t.size
            pair = t * g.num_nodes + v
            keys, walks = np.unique(pair, return_counts=True)
            for key in keys[walks > 1]:
                same.append(np.unique(x[pair == key]).size == 1)
        return same

    together = coincide(UserNode2Vec(9, p=4.0, q=0.25, per_vertex=True))
    assert all(together) and len(together) > 20
    assert not all(coincide(UserNode2Vec(9, p=4.0, q=0.25)))


def _held_after(g, s, sampler, size):
    """The bytes the block pool holds after one bulk (the pool emptied first, the results kept
    alive): the kernel's per-minibatch buffers, given back once flattened."""
    limit = _native.set_pool_limit(0)
    _native.set_pool_limit(limit)
    out = _native_run(g, s, sampler=sampler, batch_size=size, seed=3)
    held = _native.pool_stats()["held"]
    assert out.num_edges > 0
    return held


@needs_native
@pytest.mark.parametrize("graph", ["dead_ends", "rmat"])
def test_node2vec_takes_the_walk_kernel(graph):
    """node2vec, built in or the user's, leaves in the pool what a uniform walk of its shape
    leaves (packed outputs at the walk's bound: node2vec_minibatch ran); the plans
    node2vec_plan refuses -- values of edge weights, no deduplication -- leave the general
    path's buffers."""
    g = dead_end_graph() if graph == "dead_ends" else spsample.rmat(11, seed=4)
    L, size = 8, 150
    s = batch_seeds(g.num_nodes, size=size)
    walk = _held_after(g, s, RandomWalk(L), size)
    assert walk == 4 * 4 * (size * (L + 1) + 3 * (size + 1) * L)  # 4 minibatches, 32-bit words
    assert _held_after(g, s, RandomWalk(L, p=0.5, q=2.0), size) == walk
    assert _held_after(g, s, UserNode2Vec(L, p=4.0, q=0.25, per_vertex=True), size) == walk
    assert _held_after(g, s, UserNode2Vec(L, near_only=True), size) == walk
    assert _held_after(g, s, UserNode2Vec(L, p=4.0, q=0.25, dedup=False), size) != walk


def _weighted(g):
    rng = np.random.default_rng(2813)
    weights = rng.uniform(0.5, 2.0, g.indices.size)
    return spsample.Graph.from_csr(g.indptr, g.indices, weights=weights)


@needs_native
@pytest.mark.parametrize("sampler", ["weighted", "no_dedup"])
def test_refused_plans_keep_the_general_path(sampler):
    g = dead_end_graph()
    if sampler == "weighted":
        g = _weighted(g)
        walk = WeightedWalk(8, g, p=0.5, q=2.0)
    else:
        walk = UserNode2Vec(8, p=0.5, q=2.0, dedup=False)
    s = batch_seeds(g.num_nodes)
    assert _held_after(g, s, walk, 150) != _held_after(g, s, RandomWalk(8), 150)
    kw = dict(sampler=walk, batch_size=150, seed=14)
    fast = _native_run(g, s, **kw)
    with _native.disabled():
        assert _same(fast, spsample.sample(g, s, **kw))


@needs_native
def test_a_value_over_the_bound_is_the_general_paths_error():
    """A bound below a value (1/p = 2 > 1.5): no value table, so the general path runs and
    raises what the NumPy path raises."""
    g = dead_end_graph()
    s = batch_seeds(g.num_nodes)[:150]
    kw = dict(sampler=UserNode2Vec(5, p=0.5, q=2.0, bound=1.5), batch_size=150, seed=17)
    with pytest.raises(spsample.SamplerError, match="bound"):
        _native_run(g, s, **kw)
    with _native.disabled(), pytest.raises(spsample.SamplerError, match="bound"):
        spsample.sample(g, s, **kw)


def _charges(g, mb, seeds):
    """What rowwise_minibatch charges the budget for a node2vec minibatch: 8 bytes per seed, 24
    per row with entries and 8 per step of each hop (24 more for hop 1's spare slot)."""
    deg = np.diff(g.indptr)
    steps = mb.num_sampled_edges
    total = 8 * seeds + 24 * (steps[0] + 1) + 8 * steps[0]
    for h in range(1, len(steps)):
        live = mb.n_id[mb.edges[h - 1][1]]
        total += 24 * int((deg[live] > 0).sum()) + 8 * steps[h]
    return total


@needs_native
@pytest.mark.parametrize("sampler", [RandomWalk(8, p=0.5, q=2.0), UserNode2Vec(8, near_only=True),
                                     UserNode2Vec(8, p=0.5, q=2.0, dedup=False)], ids=repr)
def test_the_budget_charges_are_the_general_paths(sampler, monkeypatch):
    """One minibatch passes with a budget of exactly its charges and fails one byte below:
    the same charges for the fused kernel (the first two) as for the general path (no
    deduplication: the same formula)."""
    from spsample.native import _kernel_calls
    g = dead_end_graph()
    s = batch_seeds(g.num_nodes)[:150]
    kw = dict(sampler=sampler, batch_size=150, seed=15)
    mb = _native_run(g, s, **kw)[0]
    total = _charges(g, mb, len(s))
    monkeypatch.setattr(_kernel_calls, "_budget", lambda: total)
    assert spsample.sample(g, s, **kw)[0].equals(mb)
    monkeypatch.setattr(_kernel_calls, "_budget", lambda: total - 1)
    with pytest.raises(spsample.ResourceLimitError, match="lower the fanouts"):
        spsample.sample(g, s, **kw)


@needs_native
@pytest.mark.parametrize("threads", [1, 2])
def test_minibatch_major_walks_are_the_hop_major_walks(threads):
    """The link loader's layout from the packed node2vec walks: the same minibatches, hops,
    counts and edges as the flat per-hop layout."""
    g = dead_end_graph()
    s = np.random.default_rng(2814).permutation(g.num_nodes)[:600]
    assert_minibatch_major_is_hop_major(g, s, RandomWalk(6, p=4.0, q=0.25), threads)


_PORTABLE = """
import numpy as np, spsample
from native_runs import bulk_digest
from test_node2vec_walk_kernel import UserNode2Vec, batch_seeds, dead_end_graph
g = dead_end_graph()
s = batch_seeds(g.num_nodes, size=300, batches=2)
for walk in (spsample.RandomWalk(10, p=4.0, q=0.25), UserNode2Vec(6, near_only=True)):
    print(bulk_digest(spsample.sample(g, s, sampler=walk, batch_size=300, seed=16)))
"""


@needs_native
def test_portable_words_give_the_same_walks():
    """SPSAMPLE_NATIVE_SCALAR=1 (the generic words and fence windows under the walk kernel):
    the NumPy path's bytes."""
    g = dead_end_graph()
    s = batch_seeds(g.num_nodes, size=300, batches=2)
    with _native.disabled():
        want = [bulk_digest(spsample.sample(g, s, sampler=w, batch_size=300, seed=16))
                for w in (RandomWalk(10, p=4.0, q=0.25), UserNode2Vec(6, near_only=True))]
    assert portable_run(_PORTABLE) == want
