"""FeatureStore: exact rows of any dtype, from an array, scattered from a root, or from HDF5."""

import numpy as np
import pytest

import spsample
from spsample.distributed import FeatureStore

from _dist_helpers import (assert_all, grid_for, layouts, mpi_timeout, spread,  # noqa: F401
                           threaded, world_comm)

pytestmark = [pytest.mark.mpi, mpi_timeout(60)]

N = 257


def features(dtype):
    rng = np.random.default_rng(7)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal((N, 5)) * 1e3).astype(dtype)
    return rng.integers(-2**30, 2**30, (N, 5)).astype(dtype)


def request():
    """Every rank asks for different rows, with repeats and in no order."""
    rng = np.random.default_rng(100 + world_comm().rank)
    return np.concatenate([rng.integers(0, N, 40), [N - 1, 0, N - 1]])


@pytest.mark.parametrize("dtype, p, c", spread([np.float32, np.float64, np.int64, np.int32],
                                               per_case=3))
@threaded
def test_fetch_returns_exact_rows(dtype, p, c):
    x, grid = features(dtype), grid_for(c)
    store = FeatureStore.from_array(x, grid)
    ids = request()
    grid.reset_stats()
    got = store.fetch(ids)
    lo, hi = grid.block(N)
    ok = got.dtype == x.dtype and got.tobytes() == x[ids].tobytes()
    ok &= store.shard.shape == (hi - lo, 5) and store.last_stats["unique"] == np.unique(ids).size
    # one id per unique remote row out, one feature row back
    remote = int((grid.owner(np.unique(ids), N) != grid.row).sum())
    ok &= grid.stats()["alltoallv"]["received"] == remote * x.itemsize * 5 + \
        _ids_received(grid, ids)
    assert_all(ok)


def _ids_received(grid, ids):
    """Bytes of the id requests this rank receives from the other ranks of its column."""
    uniq = np.unique(ids)
    per_row = np.bincount(grid.owner(uniq, N), minlength=grid.num_rows)
    table = grid.col_comm.allgather(per_row)            # table[src, dst]
    return 8 * int(table[:, grid.row].sum() - table[grid.row, grid.row])


@pytest.mark.parametrize("p, c", layouts([(3, 1), (4, 2)]))
@threaded
def test_empty_request_and_one_dimensional(p, c):
    grid = grid_for(c)
    x = np.arange(N, dtype=np.uint16)
    store = FeatureStore.from_array(x, grid)
    empty = store.fetch(np.zeros(0, dtype=np.int64))
    some = store.fetch([N - 1, 3])
    assert_all(empty.shape == (0,) and some.tolist() == [N - 1, 3])


@pytest.mark.parametrize("p, c", layouts([(2, 1), (3, 3), (8, 2)]))
@threaded
def test_scatter_from_root_and_load_from_file(tmp_path, p, c):
    comm, grid = world_comm(), grid_for(c)
    x = features(np.float32)
    scattered = FeatureStore.from_array(x if comm.rank == 0 else None, grid, root=0)
    path = None
    if comm.rank == 0:
        path = str(tmp_path / "f.h5")
        graph = spsample.Graph.from_edge_index([1], [0], num_nodes=N)
        spsample.save(spsample.Dataset(graph, features=x, name="f"), path)
    loaded = FeatureStore.load(comm.bcast(path), grid)
    ids = request()
    ok = True
    for store in (scattered, loaded):
        ok &= store.fetch(ids).tobytes() == x[ids].tobytes() and store.dtype == np.float32
    assert_all(ok)
