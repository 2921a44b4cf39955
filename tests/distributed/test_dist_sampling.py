"""Distributed sampling == the single-process call restricted to this rank's minibatches, bit
for bit, for every sampler, strategy and valid replication factor of the current world size,
and serially on worlds of threads (p in {2, 3, 4, 8}, every c)."""

import numpy as np
import pytest

import spsample
from spsample.distributed import DistGraph
from spsample import native as _native
from spsample import primitives as prim
from spsample.primitives import Streams

from _dist_helpers import (SHARDED_LAYOUTS, assert_all, distributed_modes,  # noqa: F401
                           grid_for, layouts, matches, mpi_timeout, my_batches, rmat10,
                           rmat10_weighted, spread, threaded, world_comm)

pytestmark = [pytest.mark.mpi, mpi_timeout(120)]

BATCH = 32
NUM_SEEDS = 300            # 10 minibatches, the last one of 12 seeds


class RandomWalk(spsample.NodeWise):
    """Custom frontier and streams (not pushable): must take the row-fetch path."""

    def __init__(self, walk_length):
        super().__init__([1] * walk_length)

    def frontier(self, state, ctx):
        return state.new_nodes(0) if ctx.hop == 1 else state.edge_sources(ctx.hop - 1)

    def streams(self, Q, ctx):
        return Streams.per_row(Q, ctx)


class ColumnScaled(spsample.NodeWise):
    """Weighted by a per-column vector (row-local values: sampled by the owners)."""

    def __init__(self, fanouts, n=1024):
        super().__init__(fanouts, weighted=True)
        self.vec = 1.0 / (1.0 + np.arange(n) % 7)

    def check_graph(self, graph):
        pass

    def probabilities(self, graph, Q, ctx):
        return prim.gather(graph, Q).scale_columns(self.vec)


class Tree(spsample.NodeWise):
    """No deduplication: a tree per seed."""

    def extract(self, state, Q, S, ctx):
        state.add_sampled(Q, S, dedup=False)


class PerVertexFanout(spsample.NodeWise):
    """Fanout 1 + v % 4 for vertex v (-1 for v % 5 == 0), with replacement."""

    def __init__(self, n=1024):
        super().__init__([2, 2], replace=True)
        v = np.arange(n)
        self.fan = np.where(v % 5 == 0, -1, 1 + v % 4)

    def select(self, P, Q, ctx):
        return prim.select_rows(P, self.fan, self.streams(Q, ctx), replace=True)


SAMPLERS = {
    "nodewise": lambda: spsample.NodeWise([5, 3]),
    "nodewise-all": lambda: spsample.NodeWise([-1, 2]),
    "nodewise-replace": lambda: spsample.NodeWise([4, 3], replace=True),
    "ladies": lambda: spsample.LADIES([40, 20]),
    "fastgcn": lambda: spsample.FastGCN([40, 20]),
    "randomwalk": lambda: RandomWalk(3),
    "labor": lambda: spsample.LABOR([5, 3]),
    "node2vec": lambda: spsample.RandomWalk(3, p=0.5, q=2.0),
    "colscaled": lambda: ColumnScaled([4, 3]),
    "tree": lambda: Tree([3, 2]),
    "per-vertex-fanout": lambda: PerVertexFanout(),
    "disjoint": lambda: spsample.NodeWise([3, 2], disjoint=True),
}
# Where each hop runs: pushed to the rows' owners when its selection is row-local (node-wise
# rules, LABOR, walks keyed per row) or layer-wise without float sums across owners (LADIES on
# an unweighted graph, FastGCN); node2vec's later hops look up the previous rows (pulled).
EXPECTED_MODES = {
    "nodewise": lambda st: [st] * 2,
    "nodewise-all": lambda st: [st] * 2,
    "nodewise-replace": lambda st: [st] * 2,
    "ladies": lambda st: [st] * 2,
    "fastgcn": lambda st: [st] * 2,
    "randomwalk": lambda st: [st] * 3,
    "labor": lambda st: [st] * 2,
    "node2vec": lambda st: [st, "pull", "pull"],
    "colscaled": lambda st: [st] * 2,
    "tree": lambda st: [st] * 2,
    "per-vertex-fanout": lambda st: [st] * 2,
    "disjoint": lambda st: [st] * 2,
}


def expected_modes(name, strategy, c):
    """c = p: one process row holds the whole graph, sampled locally by the one-process engine
    (never with more than one process row)."""
    if c == world_comm().size:
        return ["local"] * len(EXPECTED_MODES[name](strategy))
    return EXPECTED_MODES[name](strategy)


WEIGHTED_SAMPLERS = {
    "nodewise-weighted": lambda: spsample.NodeWise([5, 3], weighted=True),
    "nodewise-weighted-replace": lambda: spsample.NodeWise([4, 2], replace=True, weighted=True),
    "ladies": lambda: spsample.LADIES([40, 20]),
    "fastgcn": lambda: spsample.FastGCN([40, 20]),
}

_REF = {}


def seeds_of(graph):
    return np.random.default_rng(3).permutation(graph.num_nodes)[:NUM_SEEDS]


def reference(graph, name, make, seed=9, epoch=2):
    key = (id(graph), name, seed, epoch)
    if key not in _REF:
        _REF[key] = spsample.sample(graph, seeds_of(graph), sampler=make(), batch_size=BATCH,
                                    seed=seed, epoch=epoch)
    return _REF[key]


def distributed(dg, graph, make, strategy, seed=9, epoch=2):
    num_batches = -(-NUM_SEEDS // BATCH)
    b0, b1 = my_batches(num_batches)
    seeds = seeds_of(graph)[b0 * BATCH:b1 * BATCH]
    out = spsample.sample(dg, seeds, sampler=make(), batch_size=BATCH, seed=seed, epoch=epoch,
                          batch_offset=b0, strategy=strategy)
    return out, b0, b1


@pytest.mark.parametrize("name, strategy, p, c",
                         spread([(n, st) for n in sorted(SAMPLERS) for st in ("push", "pull")]))
@threaded
def test_unweighted_equals_single_process(rmat10, name, strategy, p, c):
    dg = DistGraph.from_graph(rmat10, grid_for(c))
    out, b0, b1 = distributed(dg, rmat10, SAMPLERS[name], strategy)
    assert_all(matches(out, reference(rmat10, name, SAMPLERS[name]), b0, b1), (name, strategy, c))
    assert_all(dg.last_stats["modes"] == expected_modes(name, strategy, c), dg.last_stats["modes"])


ROW_LOCAL = ["nodewise", "nodewise-replace", "randomwalk", "labor", "colscaled", "tree",
             "per-vertex-fanout"]


@pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built")
@pytest.mark.parametrize("name, strategy, p, c",
                         spread([(n, st) for n in ROW_LOCAL for st in ("push", "pull")],
                                per_case=1, pool=SHARDED_LAYOUTS))
@threaded
def test_row_local_hops_run_natively_with_the_numpy_bits(rmat10, name, strategy, p, c):
    """Row-local hops (every rule the row-wise kernels implement, users' compositions too) are
    selected by the native kernels on the owners (push) or on the fetched rows (pull); with the
    kernels off, the NumPy evaluation of the same hop gives the same bits. (One process: the
    whole graph is local, sampled by the one-process engine, native or not.)"""
    dg = DistGraph.from_graph(rmat10, grid_for(c))
    ref = reference(rmat10, name, SAMPLERS[name])
    previous = _native.enabled()
    try:
        for native in (True, False):
            _native.set_enabled(native)
            out, b0, b1 = distributed(dg, rmat10, SAMPLERS[name], strategy)
            want = ["native" if native else "numpy"] * len(dg.last_stats["modes"])
            assert_all(matches(out, ref, b0, b1), (name, strategy, native))
            assert_all(dg.last_stats["selection"] == want, dg.last_stats["selection"])
            assert_all(distributed_modes(dg, EXPECTED_MODES[name](strategy)))
            world_comm().barrier()      # every rank done before the kernels are switched
    finally:
        _native.set_enabled(previous)


@pytest.mark.parametrize("name, strategy, p, c",
                         spread([(n, st) for n in sorted(WEIGHTED_SAMPLERS)
                                 for st in ("push", "pull")]))
@threaded
def test_weighted_equals_single_process(rmat10_weighted, name, strategy, p, c):
    dg = DistGraph.from_graph(rmat10_weighted, grid_for(c))
    make = WEIGHTED_SAMPLERS[name]
    out, b0, b1 = distributed(dg, rmat10_weighted, make, strategy)
    ref = reference(rmat10_weighted, name, make)
    assert_all(matches(out, ref, b0, b1), (name, strategy, c))
    # LADIES on a weighted graph sums floats across owners: its hops fetch rows
    expected = ["pull"] * 2 if name == "ladies" else [strategy] * 2
    assert_all(distributed_modes(dg, expected), dg.last_stats["modes"])
    if name in ("ladies", "fastgcn"):   # float sums taken in the serial order: same bits
        assert_all(all(w1.tobytes() == w2.tobytes() for a, b in zip(out, ref[b0:b1])
                       for w1, w2 in zip(a.weight, b.weight)))


@pytest.mark.parametrize("p, c", layouts([(3, 1), (4, 2)]))
@threaded
def test_replicated_graph_needs_no_sampling_communication(rmat10, p, c):
    grid = grid_for(c)
    dg = DistGraph.from_graph(rmat10, grid, replicate_graph=True)
    grid.reset_stats()
    out, b0, b1 = distributed(dg, rmat10, SAMPLERS["nodewise"], "push")
    st = grid.stats()
    assert_all(matches(out, reference(rmat10, "nodewise", SAMPLERS["nodewise"]), b0, b1))
    assert_all(dg.replicated and dg.num_edges == rmat10.num_edges)
    assert_all(set(st) == {"allgather_object"})   # only the argument check


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2), (8, 4)]))
@threaded
def test_scattered_from_root_and_loaded_from_file(rmat10_weighted, tmp_path, p, c):
    comm, grid = world_comm(), grid_for(c)
    path = None
    if comm.rank == 0:
        path = str(tmp_path / "g.h5")
        spsample.save(spsample.Dataset(rmat10_weighted, name="g"), path)
    path = comm.bcast(path)
    loaded = DistGraph.load(path, grid)
    scattered = DistGraph.from_graph(rmat10_weighted if comm.rank == 0 else None, grid, root=0)
    local = DistGraph.from_graph(rmat10_weighted, grid)
    lo, hi = grid.block(rmat10_weighted.num_nodes)
    ok = True
    for dg in (loaded, scattered):
        ok &= (dg.lo, dg.hi) == (lo, hi) and dg.indptr.size == hi - lo + 1   # only its rows
        ok &= np.array_equal(dg.indptr, local.indptr) and np.array_equal(dg.indices, local.indices)
        ok &= dg.weights.tobytes() == local.weights.tobytes()
        ok &= dg.edge_offset == local.edge_offset
    make = WEIGHTED_SAMPLERS["nodewise-weighted"]
    out, b0, b1 = distributed(loaded, rmat10_weighted, make, "push")
    ok &= matches(out, reference(rmat10_weighted, "nodewise-weighted", make), b0, b1)
    ok &= distributed_modes(loaded, ["push"] * 2)
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(4, 1), (8, 2)]))
@threaded
def test_ranks_without_minibatches_take_part(rmat10, p, c):
    """Three minibatches over every rank: ranks past the third get none but join the hops."""
    comm, grid = world_comm(), grid_for(c)
    dg = DistGraph.from_graph(rmat10, grid)
    seeds = seeds_of(rmat10)[:3 * BATCH]
    ref = spsample.sample(rmat10, seeds, sampler=spsample.NodeWise([4, 4]), batch_size=BATCH)
    ok = True
    for strategy in ("push", "pull"):
        mine = seeds[comm.rank * BATCH:(comm.rank + 1) * BATCH] if comm.rank < 3 else []
        out = spsample.sample(dg, mine, sampler=spsample.NodeWise([4, 4]), batch_size=BATCH,
                              batch_offset=min(comm.rank, 3), strategy=strategy)
        ok &= matches(out, ref, min(comm.rank, 3), min(comm.rank + 1, 3))
        ok &= distributed_modes(dg, [strategy] * 2)
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2), (3, 3)]))
@threaded
def test_disjoint_minibatches_with_repeated_seeds(rmat10, p, c):
    """A disjoint sampler gives every seed its own subgraph (vertices repeat across a
    minibatch's seeds; a seed may repeat): a DistGraph ignored ``disjoint`` and merged the
    seeds' subgraphs, at every p (one process included)."""
    dg = DistGraph.from_graph(rmat10, grid_for(c))
    seeds = np.random.default_rng(4).permutation(rmat10.num_nodes)[:40]
    seeds[1] = seeds[0]                     # a repeated seed, allowed when disjoint
    make = lambda: spsample.NodeWise([4, 3], disjoint=True)     # noqa: E731
    ref = spsample.sample(rmat10, seeds, sampler=make(), batch_size=8, seed=3)
    b0, b1 = my_batches(len(ref))
    out = spsample.sample(dg, seeds[8 * b0:8 * b1], sampler=make(), batch_size=8, seed=3,
                          batch_offset=b0)
    ok = matches(out, ref, b0, b1) and distributed_modes(dg, ["push"] * 2)
    ok &= all(mb.batch is not None for mb in out)
    assert_all(ok and any(np.unique(mb.n_id).size < mb.n_id.size for mb in ref))


@pytest.mark.parametrize("p, c", layouts([(2, 1), (8, 1)]))
@threaded
def test_directed_rows_are_sampled_by_their_owner(p, c):
    r"""Row v lists whom v aggregates from; the reverse edges do not exist.

        0 <- 1 <- 2 <- 3 <- ... <- 15     (row v = [v + 1])
    """
    grid = grid_for(c)
    n = 16
    graph = spsample.Graph.from_edge_index(np.arange(1, n), np.arange(0, n - 1), num_nodes=n)
    dg = DistGraph.from_graph(graph, grid)
    ok = True
    for strategy in ("push", "pull"):
        out = spsample.sample(dg, [0, 8], sampler=spsample.NodeWise([2, 2, 2]), batch_size=1,
                              strategy=strategy)
        ok &= [mb.n_id.tolist() for mb in out] == [[0, 1, 2, 3], [8, 9, 10, 11]]
    ok &= dg.owner([0, n - 1]).tolist() == [0, grid.num_rows - 1]
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(4, 1), (8, 2)]))
@threaded
def test_push_volume_near_ideal(rmat10, p, c):
    """Push moves one 8-byte id per remote frontier row and one per sample (+ tiny headers)."""
    if grid_for(c).num_rows == 1:
        pytest.skip("one process row samples the whole graph locally: nothing is sent")
    comm, grid = world_comm(), grid_for(c)
    dg = DistGraph.from_graph(rmat10, grid)
    seeds = np.random.default_rng(0).permutation(rmat10.num_nodes)
    b0, b1 = my_batches(8)
    grid.reset_stats()
    spsample.sample(dg, seeds[b0 * 64:b1 * 64], sampler=spsample.NodeWise([10, 5]),
                    batch_size=64, batch_offset=b0)
    st, s = grid.stats(), dg.last_stats
    mine = [st["alltoallv"]["sent"] + st["alltoall"]["sent"],
            8 * (s["remote_frontier"] + s["remote_samples"])]
    sent, ideal = comm.allreduce(np.array(mine, dtype=np.int64))   # requests and replies
    assert_all(sent <= 1.2 * ideal, (sent, ideal))


@pytest.mark.parametrize("p, c", layouts([(4, 1), (8, 2)]))
@threaded
def test_push_of_walks_keyed_per_row_near_ideal(rmat10, p, c):
    """Walks keyed per row send the row's key with its vertex: 16 bytes per remote row out,
    8 per step back."""
    if grid_for(c).num_rows == 1:
        pytest.skip("one process row samples the whole graph locally: nothing is sent")
    comm, grid = world_comm(), grid_for(c)
    dg = DistGraph.from_graph(rmat10, grid)
    seeds = np.random.default_rng(1).permutation(rmat10.num_nodes)
    b0, b1 = my_batches(8)
    grid.reset_stats()
    spsample.sample(dg, seeds[b0 * 64:b1 * 64], sampler=RandomWalk(4), batch_size=64,
                    batch_offset=b0)
    st, s = grid.stats(), dg.last_stats
    mine = [st["alltoallv"]["sent"] + st["alltoall"]["sent"],
            16 * s["remote_frontier"] + 8 * s["remote_samples"]]
    sent, ideal = comm.allreduce(np.array(mine, dtype=np.int64))
    assert_all(dg.last_stats["modes"] == ["push"] * 4)
    assert_all(sent <= 1.2 * ideal, (sent, ideal))


@pytest.mark.parametrize("make", [lambda: spsample.LADIES([64, 64]),
                                  lambda: spsample.FastGCN([64, 64])],
                         ids=["ladies", "fastgcn"])
@pytest.mark.parametrize("p, c", layouts([(4, 1), (8, 1)]))
@threaded
def test_layerwise_push_volume_near_ideal_and_below_pull(make, p, c):
    """Layer-wise push moves 8 bytes per registered row out and back, 16 per draw, 8 per member
    id and per returned edge (16 with FastGCN's values), plus the owners' small distinct sets;
    pull moves whole rows."""
    if grid_for(c).num_rows == 1:
        pytest.skip("one process row samples the whole graph locally: nothing is sent")
    comm, grid = world_comm(), grid_for(c)
    graph = spsample.rmat(12, seed=3)
    dg = DistGraph.from_graph(graph, grid)
    dg.column_weights()        # FastGCN's global q: computed once per graph, not per bulk
    seeds = np.random.default_rng(2).permutation(graph.num_nodes)
    b0, b1 = my_batches(8)
    sent = {}
    for strategy in ("push", "pull"):
        grid.reset_stats()
        out = spsample.sample(dg, seeds[b0 * 128:b1 * 128], sampler=make(), batch_size=128,
                              batch_offset=b0, strategy=strategy)
        st, s = grid.stats(), dg.last_stats
        sent[strategy] = st["alltoallv"]["sent"] + st.get("alltoall", {"sent": 0})["sent"]
        if strategy == "push":
            edge_bytes = 16 if isinstance(make(), spsample.FastGCN) else 8
            ideal = (16 * s["frontier"] + 16 * s["draws"] + 8 * s["members_sent"]
                     + 8 * s.get("distinct_ids", 0) + edge_bytes * s["layer_edges"])
            ref = spsample.sample(graph, seeds[:8 * 128], sampler=make(), batch_size=128)
            same = all(a.equals(b) for a, b in zip(out, ref[b0:b1]))
    push, ideal, pull = comm.allreduce(np.array([sent["push"], ideal, sent["pull"]],
                                                dtype=np.int64))
    assert_all(same and dg.last_stats["modes"] == ["pull", "pull"])
    assert_all(push <= 1.2 * ideal, (push, ideal))
    assert_all(push < pull, (push, pull))
