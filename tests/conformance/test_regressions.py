"""The defects the conformance suite found, one plain case each (each failed before its fix)."""

import numpy as np
import pytest

import spsample
from spsample import testing

from .paths import PATHS


def test_temporal_bulks_cut_the_rows_of_a_users_composition():
    """A user's sampler that overrides ``probabilities`` (README: ``LowDegreeFirst``) sampled
    entries later than the seeds' times on a temporal graph: the cut was applied only by the
    built-ins' own ``probabilities``."""
    g = testing.temporal(0)
    ids = np.arange(0, 50, 2)
    t = np.random.default_rng(2).integers(0, 100, ids.size).astype(float)
    for sampler in (testing.ColumnScaled([4, 3], g), testing.RowScaled([4, 3], g)):
        for path in ("numpy", "native", "reference"):
            bulk = PATHS[path](g, ("paper", ids), sampler, batch_size=5, seed=1, seed_time=t)
            testing.check_invariants(g, bulk, sampler, seeds=ids, seed_time=t, seed=1)


def test_a_disjoint_sampler_on_a_disk_graph_gives_each_seed_its_subgraph(tmp_path):
    """``NodeWise(..., disjoint=True)`` on a ``DiskGraph`` silently sampled shared
    (deduplicated) minibatches, without ``batch``."""
    g = testing.random_graph(0)
    path = tmp_path / "g.h5"
    spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
    sampler = spsample.NodeWise([3, 2], disjoint=True)
    seeds = np.array([5, 5, 7, 9, 11, 13, 5, 2, 8])
    expected = spsample.sample(g, seeds, sampler=sampler, batch_size=4, seed=3, batch_offset=2)
    for mapped in (True, False):
        got = PATHS["disk-map" if mapped else "disk-cache"](g, seeds, sampler, batch_size=4,
                                                            seed=3, batch_offset=2)
        testing.assert_same_bulk(got, expected)
        assert got[0].batch is not None


def test_mmap_of_a_heterogeneous_file_is_a_typed_refusal_naming_mmap(tmp_path):
    """``load(hetero_file, mmap=True)`` failed with a misleading ``DatasetError`` ("holds an
    invalid graph: /graph/indptr must be a dataset") about a valid file."""
    path = tmp_path / "h.h5"
    spsample.save(spsample.HeteroDataset(testing.heterogeneous(0)), path)
    with pytest.raises(spsample.ArgumentError, match="'mmap'.*homogeneous"):
        spsample.load(path, mmap=True)
    assert spsample.load(path).graph.num_nodes["paper"] == 50          # read whole: fine


def test_a_disjoint_sampler_on_a_dist_graph_gives_each_seed_its_subgraph():
    """``NodeWise(..., disjoint=True)`` on a ``DistGraph`` (sharded or replicated) silently
    sampled shared (deduplicated) minibatches, and refused a seed repeated within a
    minibatch, which disjoint sampling allows."""
    from spsample.distributed import DistGraph, Grid
    g = testing.random_graph(0)
    sampler = spsample.NodeWise([3, 2], disjoint=True)
    seeds = np.array([5, 5, 7, 9, 11, 13, 5, 2, 8])
    expected = spsample.sample(g, seeds, sampler=sampler, batch_size=4, seed=3, batch_offset=2)
    for replicate in (False, True):
        dg = DistGraph.from_graph(g, Grid(), replicate_graph=replicate)
        for strategy in ("push", "pull"):
            got = spsample.sample(dg, seeds, sampler=sampler, batch_size=4, seed=3,
                                  batch_offset=2, strategy=strategy)
            testing.assert_same_bulk(got, expected)


@pytest.mark.parametrize("path", ["disk-map", "disk-cache"])
@pytest.mark.parametrize("graph", [testing.isolated_vertices, testing.one_vertex])
def test_a_hop_with_an_empty_frontier_on_a_disk_graph(graph, path):
    """A row-local hop whose frontier is empty (every seed isolated, so hop 2 has no rows;
    or a graph of one vertex and no edge) crashed on a ``DiskGraph`` read through the block
    cache with an ``IndexError`` (a mask of one entry over no rows)."""
    g = graph(0)
    seeds = np.arange(min(10, g.num_nodes))
    for sampler in (spsample.NodeWise([3, 2]), spsample.LABOR([3, 2]),
                    spsample.RandomWalk(3)):
        expected = spsample.sample(g, seeds, sampler=sampler, batch_size=4, seed=1)
        got = PATHS[path](g, seeds, sampler, batch_size=4, seed=1)
        testing.assert_same_bulk(got, expected)


class EdgeValuedWalk(spsample.RandomWalk):
    """node2vec whose values are also scaled by a per-edge array (a hop that is not row-local:
    a DiskGraph or a pulling DistGraph runs it on a view of the rows it fetched)."""

    def __init__(self, walk_length, graph):
        super().__init__(walk_length, p=0.5, q=2.0)
        self.edge = np.random.default_rng(0).random(graph.num_edges) + 0.1

    def probabilities(self, graph, Q, ctx):
        P = super().probabilities(graph, Q, ctx)
        return P.scale_edges(self.edge) if P.expr is not None else P


@pytest.mark.parametrize("path", ["disk-map", "disk-cache", "dist-p2-c1-pull",
                                  "dist-p3-c1-push"])
@pytest.mark.parametrize("make", [lambda g: EdgeValuedWalk(3, g),
                                  lambda g: testing.EdgeValued([4, 3], g)],
                         ids=["node2vec", "edge-valued"])
def test_per_edge_arrays_on_fetched_rows(path, make):
    """A per-edge array (``P.scale_edges(arr)``, ``arr`` of the graph's edges) on a hop that
    runs on fetched rows (DiskGraph fetch hops, DistGraph pull) raised an ``ArgumentError``
    ("'arr' must have shape (<fetched entries>,)"): the view's entries are a subset."""
    from .paths import DIST_PATHS
    g = testing.random_graph(0)
    sampler = make(g)
    kw = dict(batch_size=5, seed=4, epoch=1)
    seeds = np.arange(0, 100, 3)
    run = (dict(PATHS, **DIST_PATHS))[path]
    testing.assert_same_bulk(run(g, seeds, sampler, **kw), PATHS["numpy"](g, seeds, sampler, **kw))


def test_a_rank_without_minibatches_in_a_disjoint_distributed_call():
    """A rank with no seeds of a disjoint call on a ``DistGraph`` failed (``AttributeError``:
    the empty engine result is a list) after the disjoint fix above."""
    from .paths import DIST_PATHS
    g = testing.random_graph(0)
    sampler = spsample.NodeWise([3, 2], disjoint=True)
    seeds = np.array([4, 4, 9])                  # one minibatch: ranks 1..3 have none
    expected = spsample.sample(g, seeds, sampler=sampler, batch_size=8, seed=2)
    for path in ("dist-p4-c4-push", "dist-p4-c1-pull", "dist-p4-replicated"):
        testing.assert_same_bulk(DIST_PATHS[path](g, seeds, sampler, batch_size=8, seed=2),
                                 expected)


@pytest.mark.parametrize("fanouts", [[-1, -1], [-1, 2]])
def test_the_latest_entries_of_every_row_on_the_scalar_reference(fanouts):
    """``NodeWise(fanouts with -1, temporal_strategy="last")`` (every entry up to the seed's
    time) sampled no entry at all on the scalar reference (``range(d, d)`` for the latest
    ``-1`` entries); found by the soak profile of ``test_properties``."""
    g = testing.temporal(0)
    sampler = spsample.NodeWise(fanouts, temporal_strategy="last")
    ids = np.array([18, 3, 7, 18, 40])
    t = np.array([5.0, 50.0, 100.0, 60.0, 30.0])
    kw = dict(batch_size=2, seed=0, seed_time=t, batch_offset=3)
    expected = PATHS["numpy"](g, ("paper", ids), sampler, **kw)
    testing.assert_same_bulk(PATHS["reference"](g, ("paper", ids), sampler, **kw), expected)
    testing.check_invariants(g, expected, sampler, seeds=ids, seed_time=t, seed=0)
    assert sum(v.size for mb in expected for v in mb.n_id.values()) > ids.size  # not seeds only


def test_a_slow_reader_of_the_block_cache_never_runs_out_of_blocks(tmp_path, monkeypatch):
    """``DiskGraph`` through the block cache at its smallest budget: the reader took the next
    block before releasing the one it held, so for a moment it pinned two while the read-ahead
    thread (its queue refilled) pinned another: ``RuntimeError: BlockCache: every block is in
    use`` now and then under load (found by the soak profile of ``test_homogeneous_cells``,
    disk-cache path; here made certain by a slow release)."""
    import time

    from spsample.io._disk_graph import BlockCache
    g = spsample.rmat(9, seed=1)
    path = tmp_path / "g.h5"
    spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
    budget = 8 * (g.num_nodes + 1) + 16 * (3 * 8 + int(g.degree().max()))
    dg = spsample.load(path, mmap=True, memory_budget=budget).graph
    release = BlockCache._release

    def slow_release(self, slot):
        time.sleep(0.005)
        release(self, slot)
    monkeypatch.setattr(BlockCache, "_release", slow_release)
    blocks = range(min(dg.cache.num_blocks, 40))
    for b, indices, _ in dg.cache.stream(blocks):
        start, stop = dg.cache.block_range(b)
        assert np.array_equal(indices, g.indices[start:stop])
    assert dg.cache.capacity < 40
    dg.close()
