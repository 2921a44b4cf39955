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
