"""spsample.io: the Dataset container, the HDF5 layout, row-range reads, the embedded Cora."""

import h5py
import numpy as np
import pytest

import spsample
from spsample import io
from spsample._errors import ArgumentError, ArgumentTypeError, DatasetError, DatasetNotFoundError


# ---------------------------------------------------------------------- fixtures
@pytest.fixture
def path_graph():
    r"""Undirected path 0 - 1 - 2 - 3 plus a self-loop on 3 and an isolated vertex 4.

        0 --- 1 --- 2 --- 3 (o)    4

    rows: 0 = [1], 1 = [0, 2], 2 = [1, 3], 3 = [2, 3], 4 = []
    """
    return spsample.Graph.from_edge_index([0, 1, 2, 3], [1, 2, 3, 3], num_nodes=5,
                                          symmetrize=True)


@pytest.fixture
def small(path_graph):
    """The path graph with float32 features, labels (one unlabelled) and two splits."""
    features = np.arange(15, dtype=np.float32).reshape(5, 3)
    return io.Dataset(path_graph, features=features, labels=[0, 1, 1, 0, -1], name="path",
                      splits={"default": {"train": [0, 1], "val": [2], "test": [3]},
                              "other": {"train": [3], "val": [], "test": [0, 1, 2]}})


def random_dataset(n=2000, m=9000, f=64, *, weighted=False, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.random(m) if weighted else None
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=n, weights=w)
    x = (rng.random((n, f)) * 100).astype(dtype)
    return io.Dataset(g, features=x, labels=rng.integers(-1, 5, n),
                      splits={"a": {"train": np.arange(10), "val": [10, 11], "test": [12]}},
                      name="rand")


def assert_same(a, b):
    assert a.graph == b.graph
    assert a.name == b.name
    for x, y in ((a.features, b.features), (a.labels, b.labels)):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    assert list(a.splits) == list(b.splits)
    for name in a.splits:
        for part in ("train", "val", "test"):
            got = b.splits[name][part]
            assert got.dtype == np.int64
            np.testing.assert_array_equal(a.splits[name][part], got)


# ---------------------------------------------------------------------- Dataset
def test_dataset_properties(small):
    assert (small.num_nodes, small.num_edges, small.num_features, small.num_classes) == (5, 7, 3, 2)
    assert small.labels.dtype == np.int64
    assert small.train_idx.tolist() == [0, 1]
    assert small.val_idx.tolist() == [2] and small.test_idx.tolist() == [3]
    train, val, test = small.split("other")
    assert (train.tolist(), val.tolist(), test.tolist()) == ([3], [], [0, 1, 2])
    assert val.dtype == np.int64
    assert "num_nodes=5" in repr(small)


def test_default_split_is_first_without_default(path_graph):
    ds = io.Dataset(path_graph, splits={"b": {"train": [4], "val": [], "test": []},
                                        "a": {"train": [1], "val": [], "test": []}})
    assert ds.train_idx.tolist() == [4]
    assert ds.num_features == 0 and ds.num_classes == 0


def test_dataset_without_splits(path_graph):
    ds = io.Dataset(path_graph)
    with pytest.raises(DatasetError, match="no splits"):
        ds.train_idx
    with pytest.raises(DatasetError, match="'name'"):
        io.Dataset(path_graph, splits={"a": {"train": [], "val": [], "test": []}}).split("b")


def test_dataset_does_not_modify_inputs(path_graph):
    features = np.ones((5, 2), dtype=np.int16)
    labels = np.array([0, 1, 2, 1, 0], dtype=np.int32)
    train = np.array([0, 1], dtype=np.uint8)
    ds = io.Dataset(path_graph, features=features, labels=labels,
                    splits={"s": {"train": train, "val": [2], "test": [3]}})
    assert ds.features is features  # kept as given, never copied or cast
    assert ds.labels is not labels and ds.labels.dtype == np.int64
    labels[0] = 5
    train[0] = 4
    assert ds.labels[0] == 0 and ds.train_idx[0] == 0
    assert labels.dtype == np.int32 and train.dtype == np.uint8


@pytest.mark.parametrize("kwargs, error, names", [
    ({"features": np.zeros((4, 2))}, DatasetError, "'features'"),
    ({"features": np.zeros(5)}, DatasetError, "'features'"),
    ({"features": np.array([["a"]] * 5)}, ArgumentTypeError, "'features'"),
    ({"labels": [0, 1, 2]}, DatasetError, "'labels'"),
    ({"labels": [0, 1, 2, 3, -2]}, DatasetError, "'labels'"),
    ({"labels": [0.0, 1, 2, 3, 4]}, ArgumentTypeError, "'labels'"),
    ({"splits": {"s": {"train": [5], "val": [], "test": []}}}, DatasetError,
     r"splits\['s'\]\['train'\]"),
    ({"splits": {"s": {"train": [], "val": [-1], "test": []}}}, DatasetError,
     r"splits\['s'\]\['val'\]"),
    ({"splits": {"s": {"train": [], "val": []}}}, DatasetError, r"splits\['s'\]"),
    ({"splits": {"a/b": {"train": [], "val": [], "test": []}}}, DatasetError, "'splits'"),
    ({"splits": [1, 2]}, ArgumentTypeError, "'splits'"),
    ({"name": 3}, ArgumentTypeError, "'name'"),
])
def test_dataset_rejects_bad_input(path_graph, kwargs, error, names):
    with pytest.raises(error, match=names):
        io.Dataset(path_graph, **kwargs)


def test_dataset_rejects_non_graph():
    with pytest.raises(ArgumentTypeError, match="'graph'"):
        io.Dataset(np.eye(3))


# ---------------------------------------------------------------------- save / load
@pytest.mark.parametrize("compression", ["gzip", None])
def test_round_trip_all_fields(tmp_path, small, compression):
    path = spsample.save(small, tmp_path / "small.h5", compression=compression)
    assert_same(small, spsample.load(path))
    with h5py.File(path) as f:
        assert f.attrs["format"] == "spsample" and f.attrs["version"] == 1
        assert f.attrs["num_nodes"] == 5 and f.attrs["name"] == "path"
        assert f["graph/indptr"].dtype == np.int64 and f["graph/indices"].dtype == np.int64
        assert "graph/weights" not in f
        assert f["features"].chunks[1:] == (3,)  # chunked by whole rows
        assert list(f["splits"]) == ["default", "other"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, np.int64, np.float16,
                                   np.bool_])
def test_round_trip_feature_dtypes_weighted(tmp_path, dtype):
    ds = random_dataset(n=300, m=1000, f=5, weighted=True, dtype=dtype)
    back = spsample.load(spsample.save(ds, tmp_path / "w.h5"))
    assert back.graph.is_weighted
    with h5py.File(tmp_path / "w.h5") as f:
        assert f["graph/weights"].dtype == np.float64
    assert_same(ds, back)


def test_round_trip_minimal_and_split_order(tmp_path, path_graph):
    ds = io.Dataset(path_graph)
    back = spsample.load(spsample.save(ds, tmp_path / "g.h5"))
    assert_same(ds, back)
    assert back.features is None and back.labels is None and back.splits == {}
    splits = {k: {"train": [0], "val": [1], "test": [2]} for k in ("z", "9", "a", "default")}
    back = spsample.load(spsample.save(io.Dataset(path_graph, splits=splits), tmp_path / "s.h5"))
    assert list(back.splits) == ["z", "9", "a", "default"]


def test_load_without_features(tmp_path, small):
    back = spsample.load(spsample.save(small, tmp_path / "s.h5"), features=False)
    assert back.features is None and back.labels is not None


def test_save_does_not_modify_dataset(tmp_path, small):
    before = (small.features.copy(), small.labels.copy(), small.train_idx.copy())
    spsample.save(small, str(tmp_path / "s.h5"))
    for a, b in zip(before, (small.features, small.labels, small.train_idx)):
        np.testing.assert_array_equal(a, b)
    assert not list(tmp_path.glob(".*tmp"))  # the temporary file is gone


def test_save_rejects_bad_arguments(tmp_path, small):
    with pytest.raises(ArgumentTypeError, match="'dataset'"):
        spsample.save(small.graph, tmp_path / "x.h5")
    with pytest.raises(DatasetNotFoundError, match="'path'"):
        spsample.save(small, tmp_path / "missing" / "x.h5")
    with pytest.raises(DatasetError, match="'compression'"):
        spsample.save(small, tmp_path / "x.h5", compression="lzf9")
    with pytest.raises(ArgumentTypeError, match="'path'"):
        spsample.save(small, 3)


def test_load_missing_file(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="'path'.*nope.h5"):
        spsample.load(tmp_path / "nope.h5")
    with pytest.raises(FileNotFoundError):  # also the built-in
        spsample.load(tmp_path / "nope.h5")


def test_load_not_hdf5_or_truncated(tmp_path, small):
    (tmp_path / "text.h5").write_text("not an HDF5 file\n")
    with pytest.raises(DatasetError, match="HDF5"):
        spsample.load(tmp_path / "text.h5")
    data = spsample.save(random_dataset(n=2000, f=32), tmp_path / "big.h5").read_bytes()
    for cut in (len(data) // 2, len(data) - 100, 600):
        (tmp_path / "cut.h5").write_bytes(data[:cut])
        with pytest.raises(DatasetError):
            spsample.load(tmp_path / "cut.h5")
    with pytest.raises(DatasetError):
        spsample.load(tmp_path)  # a directory


def test_load_missing_or_wrong_arrays(tmp_path, small):
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        f.attrs.update(format="spsample", version=1, name="x", num_nodes=3)
        f["graph/indices"] = np.zeros(0, dtype=np.int64)
    with pytest.raises(DatasetError, match="/graph/indptr"):
        spsample.load(path)
    with h5py.File(path, "w") as f:
        f.attrs.update(format="spsample", version=1)
        f["graph/indptr"] = np.array([0, 1, 1])
    with pytest.raises(DatasetError, match="/graph/indices"):
        spsample.load(path)
    with h5py.File(path, "a") as f:
        f["graph/indices"] = np.array([7])  # out of range
    with pytest.raises(DatasetError, match="invalid dataset.*indices"):
        spsample.load(path)
    with h5py.File(path, "a") as f:
        del f["graph/indices"]
        f["graph/indices"] = np.array([1])
        f["labels"] = np.array([0, 1, 2])  # 3 labels, 2 nodes
    with pytest.raises(DatasetError, match="labels"):
        spsample.load(path)
    with h5py.File(path, "w") as f:
        f.attrs.update(format="other", version=1)
    with pytest.raises(DatasetError, match="not an spsample dataset"):
        spsample.load(path)
    with h5py.File(path, "w") as f:
        f.attrs.update(format="spsample", version=4)   # 3 is the heterogeneous layout
    with pytest.raises(DatasetError, match="version"):
        spsample.load(path)


# ---------------------------------------------------------------------- row-range reads
@pytest.mark.parametrize("compression", ["gzip", None])
def test_read_rows_matches_graph(tmp_path, compression):
    ds = random_dataset(weighted=True)
    path = spsample.save(ds, tmp_path / "r.h5", compression=compression)
    g = ds.graph
    with io.open_rows(path) as reader:
        assert reader.num_nodes == g.num_nodes and reader.num_features == 64
        for lo, hi in [(0, g.num_nodes), (0, 1), (17, 17), (500, 1234), (1999, 2000)]:
            indptr, indices, weights = reader.read_rows(lo, hi)
            np.testing.assert_array_equal(indptr, g.indptr[lo:hi + 1] - g.indptr[lo])
            span = slice(g.indptr[lo], g.indptr[hi])
            np.testing.assert_array_equal(indices, g.indices[span])
            np.testing.assert_array_equal(weights, g.weights[span])
    indptr, indices, weights = io.read_rows(path, 3, 9)
    assert indptr[0] == 0 and indptr.size == 7 and weights.dtype == np.float64


@pytest.mark.parametrize("compression", ["gzip", None])
def test_read_feature_rows_matches_features(tmp_path, compression):
    ds = random_dataset(dtype=np.float32)
    path = spsample.save(ds, tmp_path / "f.h5", compression=compression)
    rng = np.random.default_rng(1)
    with io.open_rows(path) as reader:
        for ids in (rng.integers(0, 2000, 300), [5, 0, 5, 1999], [], np.arange(2000)[::-1]):
            got = reader.read_feature_rows(ids)
            assert got.dtype == np.float32 and got.shape == (len(ids), 64)
            np.testing.assert_array_equal(got, ds.features[np.asarray(ids, dtype=np.int64)])
    np.testing.assert_array_equal(io.read_feature_rows(path, [3]), ds.features[[3]])


def test_row_reads_unweighted_and_errors(tmp_path, small):
    path = spsample.save(small, tmp_path / "s.h5")
    indptr, indices, weights = io.read_rows(path, 1, 3)
    assert (indptr.tolist(), indices.tolist(), weights) == ([0, 2, 4], [0, 2, 1, 3], None)
    with io.open_rows(path) as reader:
        with pytest.raises(ArgumentError, match="'hi'"):
            reader.read_rows(0, 6)
        with pytest.raises(ArgumentError, match="'hi'"):
            reader.read_rows(3, 2)
        with pytest.raises(ArgumentError, match="'lo'"):
            reader.read_rows(-1, 2)
        with pytest.raises(ArgumentError, match="'ids'"):
            reader.read_feature_rows([0, 5])
        with pytest.raises(ArgumentTypeError, match="'ids'"):
            reader.read_feature_rows([0.5])
    bare = spsample.save(io.Dataset(small.graph), tmp_path / "bare.h5")
    with pytest.raises(DatasetError, match="no /features"):
        io.read_feature_rows(bare, [0])
    with pytest.raises(DatasetNotFoundError, match="'path'"):
        io.open_rows(tmp_path / "none.h5")


# ---------------------------------------------------------------------- embedded Cora
def test_embedded_cora():
    ds = io.load_cora()
    assert ds.name == "cora"
    assert (ds.num_nodes, ds.num_edges, ds.num_features, ds.num_classes) == (2708, 10556, 1433, 7)
    assert ds.features.dtype == np.uint8 and set(np.unique(ds.features)) == {0, 1}
    assert not ds.graph.is_weighted
    a = ds.graph.to_scipy()
    assert (a != a.T).nnz == 0 and a.diagonal().sum() == 0  # undirected, no self-loops
    train, val, test = ds.split()
    assert (len(train), len(val), len(test)) == (140, 500, 1000)
    np.testing.assert_array_equal(train, np.arange(140))
    np.testing.assert_array_equal(val, np.arange(140, 640))
    assert test.min() == 1708 and test.max() == 2707 and np.unique(test).size == 1000
    assert np.bincount(ds.labels[train]).tolist() == [20] * 7
    assert (ds.labels >= 0).all()
    assert io.embedded_path("cora").stat().st_size < 1_000_000
    assert "cora" in io.embedded_names()


def test_embedded_path_unknown_name():
    with pytest.raises(ArgumentError, match="'name'.*available"):
        io.embedded_path("nope")


def test_public_names():
    for name in ("Dataset", "save", "load", "convert", "io"):
        assert name in spsample.__all__ and getattr(spsample, name) is not None
    assert spsample.Dataset is io.Dataset and spsample.load is io.load
    for name in io.__all__:
        assert getattr(io, name) is not None


# ---------------------------------------------------------------------- sparse features (#17)
def sparse_dataset(path_graph):
    import scipy.sparse as sp

    x = sp.csr_matrix(np.array([[0, 0, 3], [1, 0, 0], [0, 0, 0], [0, 2, 0], [0, 0, 5]],
                               dtype=np.float32))
    return io.Dataset(path_graph, features=x, labels=[0, 1, 1, 0, -1], name="sparse",
                      splits={"default": {"train": [0, 1], "val": [2], "test": [3]}})


@pytest.mark.parametrize("compression", ["gzip", None])
def test_sparse_features_round_trip_and_row_reads(tmp_path, path_graph, compression):
    ds = sparse_dataset(path_graph)
    assert ds.sparse_features and ds.num_features == 3
    path = spsample.save(ds, tmp_path / "s.h5", compression=compression)
    with h5py.File(path) as f:
        assert f.attrs["version"] == 2 and f["features"].attrs["format"] == "csr"
    back = spsample.load(path)
    assert back.sparse_features and back.features.dtype == np.float32
    assert (back.features != ds.features).nnz == 0
    rows = io.read_feature_rows(path, [4, 0, 4, 2])
    np.testing.assert_array_equal(rows, ds.features.toarray()[[4, 0, 4, 2]])
    with io.open_rows(path) as reader:
        assert reader.num_features == 3
    assert spsample.load(path, features=False).features is None


def test_sparse_features_are_checked_and_never_modified(path_graph):
    import scipy.sparse as sp

    x = sp.csr_matrix((np.ones(2, np.float32), np.array([2, 0]), np.array([0, 2, 2, 2, 2, 2])),
                      shape=(5, 3))                       # row 0 unsorted: [2, 0]
    before = (x.indices.copy(), x.indptr.dtype)
    ds = io.Dataset(path_graph, features=x)
    assert np.array_equal(x.indices, before[0]) and x.indptr.dtype == before[1]
    assert ds.features.shape == (5, 3)
    bad = sp.csr_matrix((np.ones(1), np.array([0]), np.array([0, 1, 1, 1, 1, 1])), shape=(5, 3))
    bad.indices[0] = 9                                    # out of range, set behind SciPy's back
    with pytest.raises(DatasetError, match="'features' is not a valid CSR matrix"):
        io.Dataset(path_graph, features=bad)
    with pytest.raises(DatasetError, match="'features' must have one row per node"):
        io.Dataset(path_graph, features=sp.csr_matrix((4, 3)))


def test_loader_reads_sparse_features_from_a_file(tmp_path, path_graph):
    pytest.importorskip("torch")
    from spsample.loader import SparseRows

    ds = sparse_dataset(path_graph)
    path = spsample.save(ds, tmp_path / "s.h5")
    loader = spsample.Loader(ds.graph, [0, 1, 3], sampler=spsample.NodeWise([2]),
                             batch_size=3, features=str(path), pipeline=False, shuffle=False)
    batch = next(iter(loader))
    assert isinstance(batch.x, SparseRows)
    expected = ds.features.toarray()[batch.n_id.numpy()]
    np.testing.assert_array_equal(batch.x.to_dense().numpy(), expected)
