"""CachedFeatureStore: hot rows (by in-degree) cached across the ranks of a process row in
front of the all-to-all: exactly the store's rows, and fewer bytes across process rows."""

import numpy as np
import pytest

import spsample
from spsample.distributed import CachedFeatureStore, FeatureStore

from _dist_helpers import (assert_all, grid_for, launched_under_mpi, layouts, mpi_timeout,
                           raised, threaded, world_comm)

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


# ------------------------------------------------- one rank differs (issue 27): every rank fails
def _last_rank():
    return world_comm().rank == world_comm().size - 1


@pytest.mark.parametrize("budget, scores, error, text", [
    (-1, None, spsample.ArgumentError, "budget"),
    ("1k", None, spsample.ArgumentTypeError, "budget"),
    (100, [np.nan] * 10, spsample.ArgumentError, "scores"),
    (100, np.ones(3), spsample.ArgumentError, "scores"),
])
@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2)]))
@threaded
def test_a_bad_budget_or_scores_on_one_rank_fails_every_rank(budget, scores, error, text, p, c):
    """Checked on each rank alone, the last rank raised while the others waited in the
    first fetch for ever."""
    store = FeatureStore.from_array(np.arange(20.0).reshape(10, 2), grid_for(c))
    mine = (budget, np.asarray(scores, dtype=float)) if _last_rank() else (100, np.ones(10))
    exc = raised(lambda: CachedFeatureStore(store, *mine))
    assert_all(isinstance(exc, error) and text in str(exc), repr(exc))
    if world_comm().size > 1:
        assert_all(f"rank {world_comm().size - 1}: " in str(exc), str(exc))


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 1), (4, 2), (8, 4)]))
@threaded
def test_scores_that_differ_slightly_between_ranks_are_refused(p, c):
    """Different rankings made replicas ask each other for rows by the wrong position: the
    fetch returned other rows' features. The scores are compared (SHA-256) instead."""
    g = spsample.rmat(9, seed=2)
    x = np.arange(g.num_nodes * 3, dtype=np.float32).reshape(-1, 3)
    grid = grid_for(c)
    store = FeatureStore.from_array(x, grid)
    scores = np.bincount(g.indices, minlength=g.num_nodes).astype(np.float64)
    if _last_rank():
        scores = scores + np.linspace(0, 1e-9, g.num_nodes)   # ties broken the other way
    budget = (g.num_nodes // 4) * 3 * 4 // c
    exc = raised(lambda: CachedFeatureStore(store, budget, scores))
    if world_comm().size == 1:
        assert exc is None
        return
    assert_all(isinstance(exc, spsample.DistributedError) and "scores" in str(exc)
               and "disagree" in str(exc), repr(exc))
    exc = raised(lambda: CachedFeatureStore(store, budget + (4 if _last_rank() else 0),
                                            np.bincount(g.indices, minlength=g.num_nodes)))
    assert_all(isinstance(exc, spsample.DistributedError) and "budget" in str(exc), repr(exc))


@pytest.mark.parametrize("p, c", [(None, 1)] + ([] if launched_under_mpi() else
                                                 [(2, 1), (3, 1)]))
@threaded
def test_loader_over_a_dist_graph_refuses_different_seeds_on_one_rank(p, c):
    """Each rank would have cut different minibatches while sampling them together."""
    from spsample.distributed import DistGraph

    g = spsample.rmat(9, seed=2)
    dg = DistGraph.from_graph(g, grid_for(1))
    comm = world_comm()
    seeds = np.arange(64)
    mine = seeds + 1 if _last_rank() and comm.size > 1 else seeds
    make = lambda s, **kw: spsample.Loader(dg, s, sampler=spsample.NodeWise([3]),  # noqa: E731
                                           batch_size=kw.get("batch_size", 16),
                                           rank=comm.rank, world_size=comm.size)
    exc = raised(lambda: make(mine))
    if comm.size > 1:
        assert_all(isinstance(exc, spsample.DistributedError) and "seeds" in str(exc),
                   repr(exc))
    else:
        assert exc is None
    exc = raised(lambda: make(seeds, batch_size=0 if _last_rank() else 16))
    assert_all(isinstance(exc, spsample.ArgumentError) and "batch_size" in str(exc), repr(exc))
    loader = make(seeds)                             # the same everywhere: fine
    assert_all(loader.num_batches == 4)
