"""Features out of core in partitions with a bounded buffer, and Loader(order="buffer-aware"):
training with features 4x the buffer gives the in-memory losses bit for bit; the buffer-aware
order loads at most half the partitions a random order loads on a graph with locality; the
order is keyed by (seed, epoch); bad counts and a file truncated mid-epoch give typed errors."""

import os

import numpy as np
import pytest

import spsample

torch = pytest.importorskip("torch")
from spsample.loader import (Loader, PartitionedFeatures, buffer_aware_order,  # noqa: E402
                             owner_order, partition_bounds)


def _banded_graph(n=4000, width=30, degree=8, seed=0):
    """Each row lists ``degree`` vertices within ``width`` of it (a graph with locality)."""
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n), degree)
    dst = np.clip(src + rng.integers(-width, width + 1, src.size), 0, n - 1)
    return spsample.Graph.from_edge_index(dst, src, num_nodes=n)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    g = _banded_graph()
    x = np.random.default_rng(1).standard_normal((g.num_nodes, 6)).astype(np.float32)
    y = (np.arange(g.num_nodes) // 7) % 3
    path = tmp_path_factory.mktemp("parts") / "d.h5"
    spsample.save(spsample.Dataset(g, features=x, labels=y), path)
    return g, x, y, path


def _losses(loader, epochs=2):
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = []
    for epoch in range(epochs):
        for b in loader.iter_epoch(epoch):
            src, dst = b.edge_index
            agg = torch.zeros_like(b.x).index_add_(0, dst, b.x[src])
            loss = torch.nn.functional.cross_entropy(model((b.x + agg)[:b.batch_size]),
                                                     b.y[:b.batch_size].long())
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
    return out


def test_training_with_features_four_times_the_buffer(data):
    g, x, y, path = data
    seeds = np.arange(0, g.num_nodes, 3)
    kw = dict(sampler=spsample.NodeWise([4, 3]), batch_size=50, labels=y, seed=3)
    parts = PartitionedFeatures(path, 8, 2)                 # 2 of 8 partitions resident
    on_disk = _losses(Loader(g, seeds, features=parts, order="buffer-aware", **kw))
    bounds = partition_bounds(g.num_nodes, 8)

    class InMemory(Loader):                                 # the same order, rows in memory
        def order(self, epoch):
            return buffer_aware_order(self.seeds, bounds, self.seed, epoch)
    in_memory = _losses(InMemory(g, seeds, features=x, **kw))
    assert on_disk == in_memory and len(on_disk) > 20
    assert len(parts.resident) <= 2 and parts.loads > 0


def test_buffer_aware_loads_at_most_half_of_random(data):
    g, x, _, path = data
    seeds = np.random.default_rng(0).permutation(g.num_nodes)[:1500]
    loads = {}
    for order in ("random", "buffer-aware"):
        parts = PartitionedFeatures(x, 16, 4)
        loader = Loader(g, seeds, features=parts, order=order, bulk_size=1, batch_size=32,
                        sampler=spsample.NodeWise([4, 3]), pipeline=False)
        for _ in loader.iter_epoch(1):
            pass
        loads[order] = parts.loads
    assert loads["buffer-aware"] <= 0.5 * loads["random"]
    assert loads["buffer-aware"] >= 16                      # the lower bound: each one once


def test_order_is_keyed_by_seed_and_epoch():
    seeds = np.random.default_rng(4).permutation(1000)[:600]
    b = partition_bounds(1000, 7)
    a0 = buffer_aware_order(seeds, b, 5, 0)
    np.testing.assert_array_equal(a0, buffer_aware_order(seeds, b, 5, 0))
    assert not np.array_equal(a0, buffer_aware_order(seeds, b, 5, 1))
    assert not np.array_equal(a0, buffer_aware_order(seeds, b, 6, 0))
    np.testing.assert_array_equal(np.sort(a0), np.sort(seeds))
    part = np.searchsorted(b, a0, side="right") - 1
    assert np.count_nonzero(np.diff(part)) == np.unique(part).size - 1    # grouped


def test_owner_order_groups_by_process_row_keyed_by_seed_and_epoch():
    seeds = np.random.default_rng(4).permutation(1000)[:600]
    owner = seeds % 3
    a0 = owner_order(seeds, owner, 5, 0)
    np.testing.assert_array_equal(a0, owner_order(seeds, owner, 5, 0))
    assert not np.array_equal(a0, owner_order(seeds, owner, 5, 1))
    assert not np.array_equal(a0, owner_order(seeds, owner, 6, 0))
    np.testing.assert_array_equal(np.sort(a0), np.sort(seeds))
    np.testing.assert_array_equal(a0 % 3, np.sort(owner))      # row 0's first, grouped


def test_bad_arguments(data):
    g, x, _, _ = data
    for kw, err in (((0, 1), spsample.ArgumentError), ((4, 5), spsample.ArgumentError),
                    ((4, 0), spsample.ArgumentError), ((g.num_nodes + 1, 1),
                                                       spsample.ArgumentError),
                    ((2.5, 1), spsample.ArgumentTypeError)):
        with pytest.raises(err, match="num_partitions|buffer_partitions"):
            PartitionedFeatures(x, *kw)
    with pytest.raises(spsample.ArgumentError, match="order"):
        Loader(g, sampler=spsample.NodeWise([2]), batch_size=8, features=x,
               order="buffer-aware")
    with pytest.raises(spsample.ArgumentError, match="order"):
        Loader(g, sampler=spsample.NodeWise([2]), batch_size=8, order="sorted")
    with pytest.raises(spsample.ArgumentError, match="order.*sharded graph"):
        Loader(g, sampler=spsample.NodeWise([2]), batch_size=8, order="owner")


def test_truncated_file_in_the_middle_of_an_epoch(data, tmp_path):
    g, _, y, _ = data
    path = tmp_path / "t.h5"           # 8 chunks of features: more than HDF5's chunk cache
    x = np.random.default_rng(2).standard_normal((g.num_nodes, 128)).astype(np.float32)
    spsample.save(spsample.Dataset(g, features=x, labels=y), path, compression=None)
    parts = PartitionedFeatures(path, 8, 2)
    loader = Loader(g, np.arange(g.num_nodes), features=parts, order="buffer-aware",
                    sampler=spsample.NodeWise([3]), batch_size=200, pipeline=False)
    it = iter(loader.iter_epoch(0))
    next(it)
    before = parts.resident
    os.truncate(path, os.path.getsize(path) // 3)
    with pytest.raises(spsample.DatasetError, match="truncated"):
        for _ in it:
            pass
    assert set(parts.resident) <= set(before) | set(range(8))
    for p in parts.resident:                                 # what is kept is whole and right
        lo, hi = parts.bounds[p], parts.bounds[p + 1]
        np.testing.assert_array_equal(parts._buffer[p], x[lo:hi])
