"""The training data path of a sharded dataset on every thread layout (p in {2, 3, 4, 8}, every
c dividing p) in this one process: ``ShardedDataset`` (graph and features loaded by blocks),
``Loader`` over its ``DistGraph`` with a ``FeatureStore`` or a ``CachedFeatureStore``, the
loader's rank and world size taken from the rank's ``ThreadComm``; every rank's batches equal
the single-process loader's of the same rank and world size, and with more than one process
row the hops really ran distributed (push, pull, layer-wise push)."""

import numpy as np
import pytest

import spsample
from spsample.distributed import CachedFeatureStore, ShardedDataset

from _dist_helpers import (THREAD_LAYOUTS, assert_all, distributed_modes, grid_for,
                           launched_under_mpi, mpi_timeout, threaded, world_comm, write_shared)

torch = pytest.importorskip("torch")

pytestmark = [mpi_timeout(120),
              pytest.mark.skipif(launched_under_mpi(), reason="threads of one process: serial")]

GRAPH = spsample.rmat(9, seed=4)
X = np.random.default_rng(1).standard_normal((GRAPH.num_nodes, 3)).astype(np.float32)
LABELS = np.arange(GRAPH.num_nodes) % 4
SAMPLERS = {"nodewise": (lambda: spsample.NodeWise([4, 3]), "push"),
            "labor": (lambda: spsample.LABOR([3, 2]), "pull"),
            "ladies": (lambda: spsample.LADIES([32, 32]), "push")}


def dataset():
    order = np.random.default_rng(2).permutation(GRAPH.num_nodes)
    return spsample.Dataset(GRAPH, features=X, labels=LABELS, name="r9",
                            splits={"s": {"train": order[:300], "val": order[300:400],
                                          "test": order[400:]}})


CASES = [(name, cached) for cached in (False, True) for name in sorted(SAMPLERS)]


@pytest.mark.parametrize("name, cached, p, c",
                         [(*CASES[(2 * i + k) % len(CASES)], p, c)
                          for i, (p, c) in enumerate(THREAD_LAYOUTS) for k in range(2)])
@threaded
def test_loader_over_a_sharded_dataset(tmp_path, name, cached, p, c):
    comm, grid = world_comm(), grid_for(c)
    path = write_shared(tmp_path, "r9.h5", dataset)
    ds = ShardedDataset.load(path, grid)
    features = ds.features
    if cached:
        features = CachedFeatureStore(ds.features, 3 * 4 * 40, np.bincount(
            GRAPH.indices, minlength=GRAPH.num_nodes))
    make, strategy = SAMPLERS[name]
    kw = dict(batch_size=32, bulk_size=2, seed=5, pipeline=False, epoch=1)
    loader = spsample.Loader(ds.graph, ds.train_idx, sampler=make(), features=features,
                             labels=ds.labels, strategy=strategy, comm=comm, **kw)
    mine = list(loader)
    want = list(spsample.Loader(GRAPH, dataset().train_idx, sampler=make(), features=X,
                                labels=LABELS, rank=comm.rank, world_size=comm.size, **kw))
    same = len(mine) == len(want) and all(
        a.minibatch.equals(b.minibatch) and torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
        for a, b in zip(mine, want))
    ok = same and (loader.rank, loader.world_size) == (comm.rank, comm.size)
    ok &= distributed_modes(ds.graph, [strategy] * 2)
    assert_all(ok, (len(mine), len(want), ds.graph.last_stats.get("modes")))
    sizes = comm.allgather_object(len(mine))
    assert_all(sum(sizes) == -(-300 // 32), sizes)


def test_a_loader_refuses_a_comm_that_is_not_one():
    with pytest.raises(spsample.ArgumentTypeError, match="'comm'"):
        spsample.Loader(GRAPH, sampler=spsample.NodeWise([2]), batch_size=4, comm="world")
