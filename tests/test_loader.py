"""spsample.Loader: epochs, the background pipeline, feature sources, PyG/DGL contracts."""

import threading

import h5py
import numpy as np
import pytest

import spsample
from spsample import io
from spsample._errors import ArgumentError, ArgumentTypeError, SeedError
from spsample.loader import Batch, Prefetcher, PyGSampler, epoch_order, have_pyg

torch = pytest.importorskip("torch")

needs_pyg = pytest.mark.skipif(not have_pyg(), reason="torch_geometric is not installed")


def loader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("spsample-")]


@pytest.fixture
def dataset():
    """A random directed graph, 300 nodes, 8-dim float32 features, labels 0..3, a split."""
    rng = np.random.default_rng(3)
    n = 300
    g = spsample.Graph.from_edge_index(rng.integers(0, n, 2400), rng.integers(0, n, 2400),
                                       num_nodes=n)
    x = rng.random((n, 8)).astype(np.float32)
    perm = rng.permutation(n)
    return io.Dataset(g, features=x, labels=rng.integers(0, 4, n), name="rand",
                      splits={"default": {"train": perm[:203], "val": perm[203:250],
                                          "test": perm[250:]}})


def same_batch(a, b):
    return (a.batch_id == b.batch_id and a.batch_size == b.batch_size
            and torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
            and torch.equal(a.e_id, b.e_id) and torch.equal(a.x, b.x)
            and torch.equal(a.y, b.y) and a.num_sampled_nodes == b.num_sampled_nodes
            and a.num_sampled_edges == b.num_sampled_edges)


# ---------------------------------------------------------------------- epochs
@pytest.mark.parametrize("batch_size,bulk_size", [(16, 1), (16, 3), (50, 2), (203, 4), (7, 64)])
@pytest.mark.parametrize("shuffle", [True, False])
def test_every_seed_exactly_once_per_epoch(dataset, batch_size, bulk_size, shuffle):
    loader = spsample.Loader(dataset, sampler=spsample.NodeWise([3, 2]), batch_size=batch_size,
                             bulk_size=bulk_size, shuffle=shuffle, seed=5)
    for epoch in range(2):
        batches = list(loader)
        seeds = np.concatenate([b.n_id[:b.batch_size].numpy() for b in batches])
        assert sorted(seeds.tolist()) == sorted(dataset.train_idx.tolist())
        assert [b.batch_id for b in batches] == list(range(-(-203 // batch_size)))
        assert [b.epoch for b in batches] == [epoch] * len(batches)
        assert batches[-1].batch_size == 203 - batch_size * (len(batches) - 1)   # kept, not dropped
        if not shuffle:
            assert seeds.tolist() == dataset.train_idx.tolist()
    assert loader.epoch == 2


def test_shuffle_is_keyed_by_seed_and_epoch(dataset):
    seeds = dataset.train_idx
    a, b = epoch_order(seeds, 1, 0), epoch_order(seeds, 1, 0)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, epoch_order(seeds, 1, 1))
    assert not np.array_equal(a, epoch_order(seeds, 2, 0))
    loader = spsample.Loader(dataset, sampler=spsample.NodeWise([2]), batch_size=64, seed=1)
    loader.set_epoch(3)
    first = [bt.n_id[:bt.batch_size].numpy() for bt in loader]
    assert np.array_equal(np.concatenate(first), epoch_order(seeds, 1, 3))
    again = [bt.n_id[:bt.batch_size].numpy() for bt in loader.iter_epoch(3)]
    assert all(np.array_equal(x, y) for x, y in zip(first, again))


def test_batches_match_direct_sample_calls(dataset):
    """A batch is exactly spsample.sample() of its seeds with its global id, plus its rows."""
    sampler = spsample.LADIES([20, 20])
    loader = spsample.Loader(dataset, sampler=sampler, batch_size=40, bulk_size=2, seed=9,
                             epoch=2)
    order = epoch_order(dataset.train_idx, 9, 2)
    for bt in loader:
        i = bt.batch_id
        mb, = spsample.sample(dataset.graph, order[i * 40:(i + 1) * 40], sampler=sampler,
                              batch_size=40, seed=9, epoch=2, batch_offset=i)
        assert mb.equals(bt.minibatch)
        assert np.array_equal(bt.x.numpy(), dataset.features[mb.n_id])
        assert np.array_equal(bt.y.numpy(), dataset.labels[mb.n_id])
        assert np.array_equal(bt.edge_index.numpy(), mb.edge_index())
        assert bt.edge_weight is not None and bt.layerwise


@pytest.mark.parametrize("sampler", [spsample.NodeWise([4, 3]), spsample.FastGCN([30, 30])])
def test_pipeline_on_off_and_bulk_size_give_identical_batches(dataset, sampler):
    runs = []
    for pipeline, bulk in [(False, 1), (True, 1), (True, 3), (False, 5), (True, 64)]:
        loader = spsample.Loader(dataset, sampler=sampler, batch_size=24, bulk_size=bulk,
                                 seed=4, pipeline=pipeline, queue_size=2)
        runs.append([list(loader) for _ in range(2)])
    for other in runs[1:]:
        for ep_a, ep_b in zip(runs[0], other):
            assert len(ep_a) == len(ep_b)
            assert all(same_batch(a, b) for a, b in zip(ep_a, ep_b))
    assert not loader_threads()


def test_resume_inside_an_epoch(dataset):
    loader = spsample.Loader(dataset, sampler=spsample.NodeWise([3]), batch_size=20,
                             bulk_size=3, seed=2)
    whole = list(loader.iter_epoch(1))
    tail = loader.iter_epoch(1, start=4)
    assert len(tail) == len(whole) - 4
    assert all(same_batch(a, b) for a, b in zip(whole[4:], tail))


def test_ranks_split_the_minibatches_disjointly(dataset):
    sampler = spsample.NodeWise([3, 3])
    single = list(spsample.Loader(dataset, sampler=sampler, batch_size=16, seed=6))
    for world in (2, 3, 5):
        parts = [list(spsample.Loader(dataset, sampler=sampler, batch_size=16, seed=6,
                                      rank=r, world_size=world, bulk_size=2))
                 for r in range(world)]
        merged = [b for part in parts for b in part]
        assert [b.batch_id for b in merged] == list(range(len(single)))
        assert all(same_batch(a, b) for a, b in zip(single, merged))
        loader = spsample.Loader(dataset, sampler=sampler, batch_size=16, rank=0,
                                 world_size=world)
        assert loader.steps_per_epoch == max(len(p) for p in parts)


# ---------------------------------------------------------------------- the pipeline
def test_producer_exception_surfaces_in_the_training_loop(dataset):
    class FailingStore:
        """A FeatureStore look-alike whose third fetch fails."""
        num_nodes = 300

        def __init__(self):
            self.calls = 0

        def fetch(self, n_id):
            self.calls += 1
            if self.calls == 3:
                raise KeyError("feature shard went away")
            return dataset.features[n_id]

    for pipeline in (True, False):
        store = FailingStore()
        loader = spsample.Loader(dataset, sampler=spsample.NodeWise([2]), batch_size=10,
                                 bulk_size=2, features=store, pipeline=pipeline)
        seen = []
        with pytest.raises(KeyError, match="shard went away"):
            for bt in loader:
                seen.append(bt.batch_id)
        assert seen == [0, 1, 2, 3]          # two bulks of two went through, then the error
        assert not loader_threads()


def test_breaking_out_early_leaves_no_thread(dataset):
    loader = spsample.Loader(dataset, sampler=spsample.NodeWise([5, 5]), batch_size=4,
                             bulk_size=1, queue_size=2)
    for _ in range(3):
        for i, _bt in enumerate(loader):
            if i == 1:
                break
    it = iter(loader)
    next(it)
    assert loader_threads()                   # the producer is running ahead ...
    del it                                    # ... and dropping the iterator stops it
    assert not loader_threads()
    with loader.iter_epoch(0) as it:
        next(it)
    assert not loader_threads()


def test_prefetcher_bounds_the_queue_and_keeps_order():
    produced = []

    def produce():
        for i in range(10):
            produced.append(i)
            yield i

    p = Prefetcher(produce, capacity=2)
    assert next(p) == 0
    for _ in range(100):                      # let the producer run into the full queue
        if len(produced) >= 4:
            break
        threading.Event().wait(0.01)
    assert len(produced) <= 4                 # 1 consumed + 2 queued + 1 blocked on put
    assert list(p) == list(range(1, 10))
    assert not p.alive


# ---------------------------------------------------------------------- features and tensors
def test_tensors_share_memory_with_the_sampler_output(dataset):
    loader = spsample.Loader(dataset, sampler=spsample.NodeWise([3]), batch_size=30,
                             dtype=None, pipeline=False)
    bt = next(iter(loader))
    assert bt.n_id.data_ptr() == bt.minibatch.n_id.ctypes.data          # DLPack, zero copy
    assert bt.x.dtype == torch.float32 and bt.y.dtype == torch.int64


def test_hdf5_and_fetch_sources_equal_the_array(dataset, tmp_path):
    path = tmp_path / "rand.h5"
    io.save(dataset, path)
    calls = []

    class Store:
        def fetch(self, n_id):
            calls.append(len(n_id))
            return torch.from_numpy(dataset.features[n_id])

    sampler = spsample.NodeWise([4, 4])
    kw = dict(sampler=sampler, batch_size=32, bulk_size=3, seed=8)
    ref = list(spsample.Loader(dataset.graph, dataset.train_idx, features=dataset.features,
                               labels=dataset.labels, **kw))
    with h5py.File(path, "r") as fh:
        sources = [str(path), fh["features"], Store()]
        for src in sources:
            got = list(spsample.Loader(dataset.graph, dataset.train_idx, features=src,
                                       labels=torch.from_numpy(dataset.labels), **kw))
            assert all(same_batch(a, b) for a, b in zip(ref, got))
    assert len(calls) == 3                    # one fetch per bulk (7 minibatches, bulks of 3)


def test_dataset_seeds_by_split_name(dataset):
    for name, idx in zip(("train", "val", "test"), dataset.split()):
        loader = spsample.Loader(dataset, name, sampler=spsample.NodeWise([1]),
                                 batch_size=1000, shuffle=False)
        assert np.array_equal(next(iter(loader)).n_id[:idx.size].numpy(), idx)


# ---------------------------------------------------------------------- layers and blocks
@pytest.mark.parametrize("sampler", [spsample.NodeWise([3, 2, 2]), spsample.LADIES([25, 25, 25])])
def test_layers_and_dgl_blocks_are_consistent(dataset, sampler):
    bt = next(iter(spsample.Loader(dataset, sampler=sampler, batch_size=12, seed=1)))
    blocks = bt.blocks()
    assert len(blocks) == bt.num_layers == 3
    assert blocks[-1].num_dst == bt.batch_size
    assert np.array_equal(blocks[-1].dst_n_id, bt.n_id[:bt.batch_size].numpy())
    for i, blk in enumerate(blocks):
        edges = bt.layer(i)
        assert blk.num_src == edges.num_src and blk.num_dst == edges.num_dst
        assert np.array_equal(blk.src_n_id[:blk.num_dst], blk.dst_n_id)   # dst nodes lead
        assert blk.src.size and blk.src.max() < blk.num_src and blk.dst.max() < blk.num_dst
        assert np.array_equal(np.stack([blk.src, blk.dst]), edges.edge_index.numpy())
        # every sampled edge is an edge of the graph: global src is in the dst's CSR row
        g = dataset.graph
        assert np.array_equal(g.indices[blk.e_id], blk.src_n_id[blk.src])
        rows = np.searchsorted(g.indptr, blk.e_id, side="right") - 1
        assert np.array_equal(rows, blk.dst_n_id[blk.dst])
        if i + 1 < len(blocks):
            assert blocks[i + 1].num_src == blk.num_dst          # layers chain
    if bt.layerwise:
        assert all(b.weight is not None for b in blocks)


@needs_pyg
def test_pyg_layers_run_on_batches_with_trim_to_layer(dataset):
    from torch_geometric.nn import SAGEConv
    from torch_geometric.utils import trim_to_layer

    bt = next(iter(spsample.Loader(dataset, sampler=spsample.NodeWise([4, 3]),
                                   batch_size=20, seed=2)))
    data = bt.to_pyg_data()
    torch.manual_seed(0)
    convs = [SAGEConv(8, 16), SAGEConv(16, 5)]
    x, ei = data.x, data.edge_index
    for i, conv in enumerate(convs):
        x, ei, _ = trim_to_layer(i, data.num_sampled_nodes, data.num_sampled_edges, x, ei)
        x = conv(x, ei)
    out_trim = x[:data.batch_size]
    x = data.x                                # the same without trimming
    for conv in convs:
        x = conv(x, data.edge_index)
    assert out_trim.shape == (20, 5)
    assert torch.allclose(out_trim, x[:data.batch_size], atol=1e-6)
    # and via Batch.layer, the loader's own per-layer view
    x = bt.x
    for i, conv in enumerate(convs):
        le = bt.layer(i)
        x = conv((x[:le.num_src], x[:le.num_dst]), le.edge_index, size=(le.num_src, le.num_dst))
    assert torch.allclose(out_trim, x, atol=1e-6)


@needs_pyg
def test_pyg_node_loader_drives_spsample_samplers(dataset):
    from torch_geometric.data import Data
    from torch_geometric.loader import NodeLoader

    g = dataset.graph
    dst = np.repeat(np.arange(g.num_nodes), np.diff(g.indptr))
    data = Data(x=torch.from_numpy(dataset.features), y=torch.from_numpy(dataset.labels),
                edge_index=torch.from_numpy(np.stack([g.indices, dst])), num_nodes=g.num_nodes)
    node_sampler = PyGSampler(data, spsample.NodeWise([5, 3]), seed=3)
    seeds = torch.from_numpy(dataset.train_idx)
    loader = NodeLoader(data, node_sampler=node_sampler, input_nodes=seeds, batch_size=50)
    seen = []
    for batch in loader:
        b = batch.batch_size
        seen.append(batch.n_id[:b])
        assert torch.equal(batch.x, data.x[batch.n_id])
        src, dst_ = batch.n_id[batch.edge_index[0]], batch.n_id[batch.edge_index[1]]
        assert torch.equal(data.edge_index[0, batch.e_id], src)    # e_id: PyG's edge columns
        assert torch.equal(data.edge_index[1, batch.e_id], dst_)
        assert sum(batch.num_sampled_nodes) == batch.num_nodes
    assert torch.equal(torch.cat(seen).sort().values, seeds.sort().values)
    with pytest.raises(spsample.SamplerError, match="sampler"):
        PyGSampler(data, spsample.LADIES([5]))


def test_pyg_adapter_says_what_to_install_without_pyg(dataset, monkeypatch):
    from spsample import _optional
    from spsample.loader import _pyg

    monkeypatch.setattr(_optional, "_PYG", {"module": None, "error": ImportError("absent")})
    monkeypatch.setattr(_pyg, "_CLASS", {})
    with pytest.raises(spsample.MissingDependencyError, match="pip install torch_geometric"):
        PyGSampler(dataset.graph, spsample.NodeWise([2]))


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs,error,name", [
    (dict(batch_size=0), ArgumentError, "batch_size"),
    (dict(bulk_size=0), ArgumentError, "bulk_size"),
    (dict(queue_size=0), ArgumentError, "queue_size"),
    (dict(sampler="nodewise"), ArgumentTypeError, "sampler"),
    (dict(features=np.zeros((5, 2))), ArgumentError, "features"),
    (dict(features=np.zeros(300)), ArgumentError, "features"),
    (dict(features=3.5), ArgumentTypeError, "features"),
    (dict(labels=np.zeros(4, dtype=np.int64)), ArgumentError, "labels"),
    (dict(seeds=[1, 2, 2]), SeedError, "seeds"),
    (dict(seeds=[1, 300]), SeedError, "seeds"),
    (dict(seeds=[]), SeedError, "seeds"),
    (dict(seeds="holdout"), ArgumentError, "seeds"),
    (dict(device="tpu:9"), ArgumentError, "device"),
    (dict(shuffle="yes"), ArgumentTypeError, "shuffle"),
    (dict(rank=2, world_size=2), ArgumentError, "rank"),
    (dict(seed=-1), ArgumentError, "seed"),
    (dict(strategy="sideways"), ArgumentError, "strategy"),
    (dict(adjacency="yes"), ArgumentTypeError, "adjacency"),
])
def test_bad_arguments_raise_typed_errors_naming_them(dataset, kwargs, error, name):
    args = dict(sampler=spsample.NodeWise([2]), batch_size=8)
    args.update(kwargs)
    seeds = args.pop("seeds", None)
    with pytest.raises(error, match=f"'{name}'"):
        spsample.Loader(dataset, seeds, **args)


def test_split_name_needs_a_dataset(dataset):
    with pytest.raises(ArgumentError, match="'seeds'"):
        spsample.Loader(dataset.graph, "train", sampler=spsample.NodeWise([2]), batch_size=8)
    with pytest.raises(ArgumentTypeError, match="'data'"):
        spsample.Loader(dataset.features, sampler=spsample.NodeWise([2]), batch_size=8)


def test_layer_index_is_checked(dataset):
    bt = next(iter(spsample.Loader(dataset, sampler=spsample.NodeWise([2]), batch_size=8)))
    assert isinstance(bt, Batch)
    with pytest.raises(ArgumentError, match="'layer'"):
        bt.layer(1)


# ---------------------------------------------------------------------- sparse features
def test_scipy_sparse_features_give_csr_rows_equal_to_the_dense_ones(dataset):
    import scipy.sparse as sp

    from spsample.loader import SparseRows

    dense = dataset.features.copy()
    dense[dense < 0.7] = 0                                  # ~30 % non-zero
    kw = dict(sampler=spsample.NodeWise([3, 3]), batch_size=25, bulk_size=2, seed=4)
    ref = list(spsample.Loader(dataset, features=dense, **kw))
    got = list(spsample.Loader(dataset, features=sp.csr_matrix(dense), **kw))
    assert len(ref) == len(got)
    for a, b in zip(ref, got):
        assert isinstance(b.x, SparseRows) and b.x.shape == tuple(a.x.shape)
        assert torch.equal(b.x.to_dense(), a.x)
        k = b.batch_size
        assert torch.equal(b.x[:k].to_dense(), a.x[:k])                  # prefix rows
        w = torch.randn(5, 8, dtype=torch.float32)
        assert torch.allclose(b.x.matmul_t(w), a.x @ w.t(), atol=1e-5)
        s = a.x.sum(1, keepdim=True)
        assert torch.allclose(b.x.row_normalized().to_dense(),
                              a.x / torch.where(s == 0, torch.ones_like(s), s))
    with pytest.raises(TypeError):
        got[0].x[1:3]
    if have_pyg():
        assert torch.equal(got[0].to_pyg_data().x, ref[0].x)
