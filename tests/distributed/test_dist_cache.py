"""CachedFeatureStore: hot rows (by in-degree) cached across the ranks of a process row in
front of the all-to-all: exactly the store's rows, and fewer bytes across process rows."""

import numpy as np
import pytest

import spsample
from spsample.distributed import CachedFeatureStore, FeatureStore

from _dist_helpers import assert_all, grid_for, layouts, mpi_timeout, threaded, world_comm

pytestmark = [pytest.mark.mpi, mpi_timeout(60)]


def _sampled_ids(g, rank):
    seeds = np.random.default_rng(50 + rank).choice(g.num_nodes, 64, replace=False)
    mbs = spsample.sample(g, seeds, sampler=spsample.NodeWise([8, 4]), batch_size=16)
    return np.concatenate([mb.n_id for mb in mbs])


def _col_bytes(grid):
    return grid.col_comm.stats().get("alltoallv", {}).get("received", 0)


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2), (8, 4), (8, 2)]))
@threaded
def test_cached_rows_exact_and_fewer_bytes_across_rows(p, c):
    g = spsample.rmat(11, seed=5)
    x = np.random.default_rng(3).standard_normal((g.num_nodes, 6)).astype(np.float32)
    grid = grid_for(c)
    store = FeatureStore.from_array(x, grid)
    scores = np.bincount(g.indices, minlength=g.num_nodes)
    budget = (g.num_nodes // 10) * 6 * 4 // c                 # the row caches 10% of the rows
    cached = CachedFeatureStore(store, budget, scores)
    ids = _sampled_ids(g, world_comm().rank)
    grid.reset_stats()
    plain = store.fetch(ids)
    plain_bytes = _col_bytes(grid)
    grid.reset_stats()
    got = cached.fetch(ids)
    cached_bytes = _col_bytes(grid)
    s = cached.last_stats
    ok = got.tobytes() == x[ids].tobytes() and plain.tobytes() == got.tobytes()
    ok &= s["local"] + s["hits"] + s["cold"] == s["unique"]
    remote = grid.num_rows > 1
    ok &= cached_bytes < plain_bytes if remote and s["hits"] else cached_bytes <= plain_bytes
    assert_all(ok)
    total = world_comm().allreduce(np.array([s["hits"], s["cold"]], dtype=np.int64))
    if grid.num_rows > 1:
        assert total[0] > 0


def test_bad_arguments():
    grid = grid_for(1)
    store = FeatureStore.from_array(np.zeros((10, 2)), grid)
    with pytest.raises(spsample.ArgumentError, match="budget"):
        CachedFeatureStore(store, -1, np.ones(10))
    with pytest.raises(spsample.ArgumentError, match="scores"):
        CachedFeatureStore(store, 10, np.ones(3))
    with pytest.raises(spsample.ArgumentTypeError, match="store"):
        CachedFeatureStore(np.zeros((10, 2)), 10, np.ones(10))
