"""Sparse features stay sparse in ``FeatureStore`` and ``ShardedDataset``: CSR shards (from a
``scipy.sparse`` matrix, scattered from a root, or read from a file's CSR ``/features``), rows
fetched by all-to-all as CSR (their non-zeros only), equal row for row to the dense store's
rows of the densified matrix and to the single-process loader's batches bit for bit; the
feature cache over them; damaged CSR files failing on every rank with the same typed error.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import spsample
from spsample import DatasetError
from spsample.distributed import CachedFeatureStore, DistGraph, FeatureStore, ShardedDataset

from _dist_helpers import (assert_all, grid_for, layouts, mpi_timeout, raised,  # noqa: F401
                           replace_dataset, rmat10, threaded, valid_replications, world_comm,
                           write_shared)

pytestmark = [pytest.mark.mpi, mpi_timeout(120)]

N, F = 257, 40


def sparse_features(dtype=np.float32, n=N):
    """About 10 % non-zero, every 7th row empty, column ids sorted in each row."""
    x = sp.random(n, F, density=0.1, format="csr", random_state=3, dtype=np.float64)
    x.data = (x.data * 1e3).astype(dtype) if np.dtype(dtype).kind == "f" else \
        np.ceil(x.data * 100).astype(dtype)
    x = sp.csr_matrix(x, dtype=dtype)
    dense = x.toarray()
    dense[::7] = 0
    return sp.csr_matrix(dense)


def request(n=N):
    """Every rank asks for different rows, with repeats and in no order."""
    rng = np.random.default_rng(100 + world_comm().rank)
    return np.concatenate([rng.integers(0, n, 40), [n - 1, 0, n - 1, 7]])


def same_csr(a, b):
    """The same rows bit for bit: row lengths, column ids, values and their dtype."""
    return (sp.isspmatrix_csr(a) and a.shape == b.shape and a.dtype == b.dtype
            and np.array_equal(np.diff(a.indptr), np.diff(b.indptr))
            and np.array_equal(a.indices, b.indices) and a.data.tobytes() == b.data.tobytes())


def _ids_received(grid, ids, n=N):
    """Bytes of the id requests this rank receives from the other ranks of its column."""
    uniq = np.unique(ids)
    per_row = np.bincount(grid.owner(uniq, n), minlength=grid.num_rows)
    table = grid.col_comm.allgather(per_row)            # table[src, dst]
    return 8 * int(table[:, grid.row].sum() - table[grid.row, grid.row])


@pytest.mark.parametrize("p, c", layouts([(2, 1), (3, 1), (4, 2), (8, 4)]))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@threaded
def test_sparse_fetch_equals_dense_fetch_row_for_row(dtype, p, c):
    x, grid = sparse_features(dtype), grid_for(c)
    store = FeatureStore.from_array(x, grid)
    dense = FeatureStore.from_array(x.toarray(), grid)
    ids = request()
    grid.reset_stats()
    got = store.fetch(ids)
    received = grid.stats()["alltoallv"]["received"]
    lo, hi = grid.block(N)
    ok = store.sparse and not dense.sparse and store.dtype == x.dtype
    ok &= same_csr(got, x[ids]) and got.toarray().tobytes() == dense.fetch(ids).tobytes()
    ok &= store.shard.shape == (hi - lo, F) and store.shard.nnz == x[lo:hi].nnz
    ok &= store.last_stats["unique"] == np.unique(ids).size
    # bytes as the dense path counts them: one id per unique remote row out; back, per row
    # its length (8 bytes), per non-zero its column id (int32) and value
    uniq = np.unique(ids)
    remote = uniq[grid.owner(uniq, N) != grid.row]
    nnz = int(np.diff(x.indptr)[remote].sum())
    ok &= received == 8 * remote.size + nnz * (4 + x.dtype.itemsize) + _ids_received(grid, ids)
    assert_all(ok, (received, remote.size, nnz))


@pytest.mark.parametrize("c", valid_replications())
def test_scattered_loaded_and_in_memory_stores_hold_the_same_rows(tmp_path, c):
    comm, grid = world_comm(), grid_for(c)
    x = sparse_features()
    scattered = FeatureStore.from_array(x if comm.rank == 0 else None, grid, root=0)
    path = write_shared(tmp_path, "s.h5", lambda: spsample.Dataset(
        spsample.Graph.from_edge_index([1], [0], num_nodes=N), features=x, name="s"))
    loaded = FeatureStore.load(path, grid)
    built = FeatureStore.from_array(x, grid)
    ids = request()
    ok = True
    for store in (scattered, loaded, built):
        ok &= store.sparse and same_csr(store.fetch(ids), x[ids])
        ok &= same_csr(store.shard, built.shard) and not store.shard.data.flags.writeable
    empty = loaded.fetch(np.zeros(0, dtype=np.int64))
    ok &= sp.isspmatrix_csr(empty) and empty.shape == (0, F)
    assert_all(ok)


def test_unsorted_and_non_csr_inputs_are_not_modified():
    """A COO input and a CSR input with unsorted column ids: shards sorted per row (copies),
    the caller's matrices untouched."""
    grid = grid_for(1)
    x = sparse_features()
    coo = x.tocoo()
    unsorted = x.copy()
    for r in range(N):                        # reverse each row's entries
        a, b = unsorted.indptr[r], unsorted.indptr[r + 1]
        unsorted.indices[a:b] = unsorted.indices[a:b][::-1].copy()
        unsorted.data[a:b] = unsorted.data[a:b][::-1].copy()
    unsorted.has_sorted_indices = False
    before = unsorted.indices.copy()
    ids = request()
    ok = True
    for given in (coo, unsorted):
        ok &= same_csr(FeatureStore.from_array(given, grid).fetch(ids), x[ids])
    ok &= np.array_equal(unsorted.indices, before)
    assert_all(ok)


def test_bad_in_memory_matrices_are_refused_on_every_rank():
    grid = grid_for(1)
    x = sparse_features()
    broken = sp.csr_matrix((x.data, x.indices.copy(), x.indptr), shape=x.shape)
    broken.indices[3] = F + 5                         # a column id outside [0, F)
    exc = raised(lambda: FeatureStore.from_array(broken, grid))
    ok = isinstance(exc, spsample.ArgumentError) and "features" in str(exc)
    strings = sp.csr_matrix((3, 3), dtype=np.complex64)
    exc = raised(lambda: FeatureStore.from_array(strings, grid))
    ok &= isinstance(exc, spsample.ArgumentTypeError)
    # one rank passes a different matrix: every rank fails together
    comm = world_comm()
    mine = x if comm.rank == 0 else sparse_features(np.float64)
    exc = raised(lambda: FeatureStore.from_array(mine, grid))
    ok &= (comm.size == 1 and exc is None) or isinstance(exc, spsample.DistributedError)
    assert_all(ok, repr(exc))


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2), (8, 2)]))
@threaded
def test_cache_over_a_sparse_store_gives_exact_rows_within_its_budget(rmat10, p, c):
    g = rmat10
    x = sparse_features(n=g.num_nodes)
    grid = grid_for(c)
    store = FeatureStore.from_array(x, grid)
    scores = np.bincount(g.indices, minlength=g.num_nodes)
    budget = 3000
    cached = CachedFeatureStore(store, budget, scores)
    seeds = np.random.default_rng(50 + world_comm().rank).choice(g.num_nodes, 64, replace=False)
    ids = np.concatenate([mb.n_id for mb in spsample.sample(
        g, seeds, sampler=spsample.NodeWise([8, 4]), batch_size=16)])
    got = cached.fetch(ids)
    s = cached.last_stats
    mine = x[cached.hot_ids]
    held = 8 * mine.shape[0] + mine.nnz * (4 + 4)
    ok = same_csr(got, x[ids]) and same_csr(cached._rows, mine) and held <= budget
    ok &= s["local"] + s["hits"] + s["cold"] == s["unique"]
    # the longest prefix of the ranking: one more row would overflow some replica's budget
    ranked = np.lexsort((np.arange(g.num_nodes), -scores.astype(np.float64)))
    k = world_comm().allreduce(np.array([cached.hot_ids.size]))[0] // (grid.size // c)
    cost = 8 + np.diff(x.indptr)[ranked] * 8
    per_replica = [cost[:k][j::c].sum() for j in range(c)]
    ok &= max(per_replica) <= budget
    ok &= k == g.num_nodes or cost[:k + 1][k % c::c].sum() > budget
    assert_all(ok, (held, budget, k, per_replica))


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2)]))
@pytest.mark.parametrize("strategy", ["push", "pull"])
@threaded
def test_loader_batches_equal_the_single_process_loaders(rmat10, strategy, p, c):
    """A Loader over a DistGraph and a sparse FeatureStore: every batch's x is the
    single-process loader's SparseRows (whole CSR matrix) bit for bit."""
    torch = pytest.importorskip("torch")
    from spsample.loader import SparseRows

    g, comm = rmat10, world_comm()
    x = sparse_features(n=g.num_nodes)
    grid = grid_for(c)
    dg = DistGraph.from_graph(g, grid)
    store = FeatureStore.from_array(x, grid)
    seeds = np.random.default_rng(9).permutation(g.num_nodes)[:300]
    kw = dict(sampler=spsample.NodeWise([4, 3]), batch_size=24, bulk_size=3, seed=5,
              pipeline=False, rank=comm.rank, world_size=comm.size)
    mine = list(spsample.Loader(dg, seeds, features=store, strategy=strategy, **kw))
    ref = list(spsample.Loader(g, seeds, features=x, **kw))
    ok = len(mine) == len(ref) > 0
    for a, b in zip(mine, ref):
        ok &= isinstance(a.x, SparseRows) and isinstance(b.x, SparseRows)
        ok &= all(torch.equal(getattr(a.x, t), getattr(b.x, t))
                  for t in ("indptr", "indices", "values"))
        ok &= torch.equal(a.n_id, b.n_id) and a.x.values.dtype == torch.float32
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(2, 1), (3, 1), (4, 2)]))
@threaded
def test_sharded_dataset_keeps_sparse_features_sparse(tmp_path, p, c):
    g = spsample.rmat(8, seed=2, symmetrize=True)
    n = g.num_nodes
    x = sparse_features(n=n)
    labels = np.arange(n) % 3
    splits = {"default": {"train": np.arange(0, n, 2), "val": np.arange(1, n, 4),
                          "test": np.arange(3, n, 4)}}
    ds = spsample.Dataset(g, features=x, labels=labels, splits=splits, name="s")
    path = write_shared(tmp_path, "s.h5", lambda: ds)
    grid = grid_for(c)
    loaded = ShardedDataset.load(path, grid)
    built = ShardedDataset.from_dataset(ds, grid)
    lo, hi = grid.block(n)
    ok = True
    for sd in (loaded, built):
        ok &= sd.sparse_features and sd.features.sparse and sd.num_features == F
        ok &= same_csr(sd.features.shard, x[lo:hi])
        ok &= sd.held_rows()[1] == hi - lo
    assert_all(ok)


def test_relabelled_sparse_features_are_fetched_by_original_id(rmat10, tmp_path_factory):
    from spsample.distributed._partition import relabel, save_partition

    g, comm = rmat10, world_comm()
    x = sparse_features(n=g.num_nodes)
    old_id = np.random.default_rng(4).permutation(g.num_nodes)
    paths = None
    if comm.rank == 0:
        base = tmp_path_factory.mktemp("sparse-perm")
        ds = spsample.Dataset(g, features=x, name="g")
        paths = [str(base / "new.h5"), str(base / "new.perm.npz")]
        new = relabel(ds, old_id)
        spsample.save(new, paths[0])
        save_partition(paths[1], new.graph, old_id, method="random", parts=4)
    new, perm = comm.bcast(paths)
    for c in valid_replications():
        store = FeatureStore.load(new, grid_for(c), permutation=perm)
        ids = request(g.num_nodes)
        assert_all(store.sparse and same_csr(store.fetch(ids), x[ids]))


# ---------------------------------------------------------------------- damaged files
def sparse_file(tmp_path, name, mutate=None):
    """Rank 0 writes a sparse dataset (with labels and a split, for ShardedDataset)."""
    x = sparse_features()
    ids = np.arange(N)
    splits = {"default": {"train": ids[::2], "val": ids[1::4], "test": ids[3::4]}}
    return write_shared(tmp_path, name, lambda: spsample.Dataset(
        spsample.Graph.from_edge_index([1], [0], num_nodes=N), features=x, labels=ids % 3,
        splits=splits, name="s"), mutate)


def set_entry(name, position, value):
    def mutate(f):
        f[name][position] = value
    return mutate


def decreasing_indptr(f):
    """indptr[N - 1] above indptr[N]: the last row has a negative length."""
    f["features/indptr"][N - 1] = f["features/indptr"][N] + 2


def indptr_past_the_end(f):
    indptr = f["features/indptr"][()]
    indptr[-1] += 5
    replace_dataset(f, "features/indptr", indptr)


def huge_indptr(f):
    indptr = f["features/indptr"][()].astype(np.uint64)
    indptr[N - 1] = 2**63 + 5
    replace_dataset(f, "features/indptr", indptr)


def float_indices(f):
    replace_dataset(f, "features/indices", f["features/indices"][()] + 0.5)


def string_data(f):
    replace_dataset(f, "features/data", f["features/data"][()].astype("S8"))


def short_data(f):
    replace_dataset(f, "features/data", f["features/data"][:-1])


def wrong_shape(f):
    f["features"].attrs["shape"] = np.array([N + 3, F], dtype=np.int64)


def narrow_shape(f):
    f["features"].attrs["shape"] = np.array([N, 3], dtype=np.int64)


def missing_chunks(f):
    """/features/indices declares a million entries but stores one chunk: the rest would
    read as zeros."""
    nnz = f["features/indices"].shape[0]
    data = f["features/indices"][()]
    del f["features/indices"]
    d = f.create_dataset("features/indices", shape=(10**6,), dtype=np.int32, chunks=(1024,))
    d[:nnz] = data
    indptr = f["features/indptr"][()]
    indptr[-1] = 10**6
    replace_dataset(f, "features/indptr", indptr)
    replace_dataset(f, "features/data", np.ones(10**6, dtype=np.float32))


DAMAGE = {
    "a column id at f": (set_entry("features/indices", -1, F), "column index"),
    "a negative column id": (set_entry("features/indices", 0, -1), "column index"),
    "decreasing row pointers": (decreasing_indptr, "row pointers"),
    "row pointers past the end": (indptr_past_the_end, "row pointers"),
    "row pointers beyond int64": (huge_indptr, "row pointers"),
    "float column ids": (float_indices, "must be integer"),
    "string values": (string_data, "real numbers"),
    "fewer values than column ids": (short_data, "values"),
    "a shape of other rows": (wrong_shape, "shape attribute"),
    "a shape narrower than its column ids": (narrow_shape, "column index"),
    "declared but unstored entries": (missing_chunks, "chunks"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("c", sorted({1, world_comm().size}))   # blocks; every rank all rows
def test_damaged_csr_features_fail_on_every_rank(tmp_path, damage, c):
    mutate, match = DAMAGE[damage]
    path = sparse_file(tmp_path, "bad.h5", mutate)
    for load in (lambda: FeatureStore.load(path, grid_for(c)),
                 lambda: ShardedDataset.load(path, grid_for(c))):
        exc = raised(load)
        messages = world_comm().allgather_object(str(exc))
        ok = isinstance(exc, DatasetError) and len(set(messages)) == 1
        ok &= match in str(exc)
        assert_all(ok, repr(exc))


def test_one_ranks_damaged_copy_fails_every_rank(tmp_path):
    """Each rank reads its own copy; only the last rank's is damaged (in the first row,
    which every process row's reader checks through the parts' shapes and ends)."""
    comm = world_comm()
    good = sparse_file(tmp_path, "good.h5")
    bad = sparse_file(tmp_path, "bad.h5", short_data)
    mine = bad if comm.rank == comm.size - 1 else good
    exc = raised(lambda: FeatureStore.load(mine, grid_for(1)))
    messages = comm.allgather_object(str(exc))
    ok = isinstance(exc, DatasetError) and len(set(messages)) == 1 and "values" in str(exc)
    ok &= comm.size == 1 or f"rank {comm.size - 1}" in str(exc)
    assert_all(ok, repr(exc))


def test_ranks_with_sparse_and_dense_copies_fail_together(tmp_path):
    comm = world_comm()
    if comm.size == 1:
        pytest.skip("needs two ranks")
    x = sparse_features()
    graph = spsample.Graph.from_edge_index([1], [0], num_nodes=N)
    sparse = write_shared(tmp_path, "s.h5", lambda: spsample.Dataset(graph, features=x))
    dense = write_shared(tmp_path, "d.h5", lambda: spsample.Dataset(graph,
                                                                  features=x.toarray()))
    exc = raised(lambda: FeatureStore.load(sparse if comm.rank == 0 else dense, grid_for(1)))
    assert_all(isinstance(exc, spsample.DistributedError) and "features" in str(exc),
               repr(exc))
