"""Fetch at memory speed (issue 20): a bulk's rows land in reused buffers, never in memory a
live batch still views; every source gives the same rows; HDF5 blocks are read once."""

import gc

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

import spsample
from spsample.loader import HDF5Features, as_feature_source
from spsample.loader._buffers import BufferPool

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    n = 3000
    g = spsample.Graph.from_edge_index(rng.integers(0, n, 30000), rng.integers(0, n, 30000),
                                       num_nodes=n)
    x = rng.random((n, 40)).astype(np.float32)
    return g, x


def test_a_buffer_returns_to_the_pool_only_when_nothing_views_it():
    pool = BufferPool(max_free=2)
    a = pool.empty((1000, 100), np.float32)
    a[:] = 1.0
    address = a.ctypes.data
    t = torch.from_dlpack(a[10:20])          # a tensor of a view keeps the buffer in use
    del a
    gc.collect()
    b = pool.empty((1000, 100), np.float32)
    assert b.ctypes.data != address and pool.stats()["reused"] == 0
    assert float(t.sum()) == 1000.0
    del t
    gc.collect()
    c = pool.empty((900, 100), np.float32)   # a little smaller: the returned buffer fits
    assert c.ctypes.data == address and pool.stats()["reused"] == 1
    assert c.shape == (900, 100) and c.dtype == np.float32 and c.flags.c_contiguous
    assert pool.empty((3, 3), np.int64).base is None       # tiny buffers are not pooled
    del b, c
    gc.collect()
    assert pool.stats()["free_bytes"] > 0
    pool.clear()
    assert pool.stats()["free_bytes"] == 0


def test_batches_kept_across_epochs_keep_their_rows(data):
    g, x = data
    loader = spsample.Loader(g, np.arange(2000), sampler=spsample.NodeWise([5, 5]),
                             batch_size=100, bulk_size=3, features=x, seed=2)
    kept = [b for _ in range(3) for b in loader]           # 3 epochs, nothing dropped
    for b in kept:
        assert np.array_equal(b.x.numpy(), x[b.n_id.numpy()])


@pytest.mark.parametrize("cache", [True, False])
def test_every_source_gives_the_same_rows(data, tmp_path, cache):
    g, x = data
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("features", data=x, chunks=(64, 40))
    bulk = spsample.sample(g, np.arange(0, 3000, 7), sampler=spsample.NodeWise([4, 4]),
                           batch_size=80)
    n_ids = [mb.n_id for mb in bulk]
    expected = [x[i] for i in n_ids]
    h5 = HDF5Features(path, cache=cache)
    sources = [as_feature_source(x), as_feature_source(torch.from_numpy(x)), h5]
    for _ in range(2):
        for src in sources:
            got = src.fetch_bulk(n_ids)
            assert all(np.array_equal(np.asarray(a), b) for a, b in zip(got, expected))
        rows = sp.csr_matrix(x)
        got = as_feature_source(rows).fetch_bulk(n_ids)
        assert all(np.array_equal(a.toarray(), b) for a, b in zip(got, expected))
    assert np.array_equal(h5.fetch([5, 5, 2999]), x[[5, 5, 2999]])
    if cache:                          # each touched block read once, whatever the repeats
        blocks = np.unique(np.concatenate(n_ids + [np.array([5, 2999])]) // 64)
        assert h5.rows_read == sum(min(3000, 64 * (b + 1)) - 64 * b for b in blocks)
    h5.close()


def test_hdf5_reads_nearby_chunks_together(tmp_path):
    """Chunks of 64 KB: gaps of up to 4 chunks (256 KB) are read through, larger ones not."""
    x = np.arange(40000 * 8, dtype=np.float64).reshape(40000, 8)
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("features", data=x, chunks=(1024, 8))
    src = HDF5Features(path, cache=False)
    ids = np.array([3, 40, 41, 5000, 20000, 39999])
    runs = list(src._runs(ids))
    assert [(s, e) for s, e, _, _ in runs] == [(0, 4), (4, 5), (5, 6)]
    assert all(lo <= ids[s] and ids[e - 1] < hi for s, e, lo, hi in runs)
    assert np.array_equal(src.fetch(ids[::-1]), x[ids[::-1]])
    with pytest.raises(spsample.SpsampleError, match="'cache'"):
        HDF5Features(path, cache="yes")
    src.close()
