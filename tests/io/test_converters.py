"""Converters (``spsample.io.from_*``), ``detect_format``/``convert`` and ``spsample convert``.

Every format is first exercised on tiny synthetic files written into ``tmp_path`` (so these
tests run anywhere), then on the real files in ``../shared/datasets`` (marked ``datasets``).

Convention under test: an edge ``u -> v`` of a source file puts ``u`` in row ``v`` (row ``v``
lists whom ``v`` aggregates from); undirected sources are stored in both rows, self-loops once.
"""

import collections
import gzip
import hashlib
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import spsample
import spsample.cli
from spsample import io
from spsample._errors import (
    ArgumentError,
    ArgumentTypeError,
    DatasetError,
    DatasetNotFoundError,
    GraphError,
)


# ====================================================================== helpers
def rows_of(graph):
    """``{v: sorted list of whom v aggregates from}`` for the non-empty rows."""
    out = {}
    for v in range(graph.num_nodes):
        row = graph.indices[graph.indptr[v]:graph.indptr[v + 1]].tolist()
        if row:
            out[v] = row
    return out


def assert_same_dataset(a, b):
    """Exact equality of two datasets (graph, features with dtype, labels, splits, name)."""
    np.testing.assert_array_equal(a.graph.indptr, b.graph.indptr)
    np.testing.assert_array_equal(a.graph.indices, b.graph.indices)
    assert (a.graph.weights is None) == (b.graph.weights is None)
    if a.graph.weights is not None:
        np.testing.assert_array_equal(a.graph.weights, b.graph.weights)
    for field in ("features", "labels"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            assert x.dtype == y.dtype, field
            np.testing.assert_array_equal(x, y)
    assert list(a.splits) == list(b.splits)
    for name in a.splits:
        for part in ("train", "val", "test"):
            np.testing.assert_array_equal(a.splits[name][part], b.splits[name][part])
    assert a.name == b.name


def write_gz(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write(text)
    return path


# ---------------------------------------------------------------------- Planetoid files
#: A citeseer-like toy: 6 known nodes (0..5, of which 0 and 1 train), test nodes 8, 6, 9 in
#: file order, node 7 a gap (no features, no label); features width 4, 3 classes.
PLANETOID_GRAPH = {0: [1, 2], 1: [0], 3: [3], 9: [4], 5: []}
ALLX = np.arange(24, dtype=np.float32).reshape(6, 4) + 1
TX = -np.arange(12, dtype=np.float32).reshape(3, 4) - 1
ALLY_CLASSES = [2, 0, 1, 1, 2, 0]
TEST_INDEX = [8, 6, 9]
TY_CLASSES = [1, 2, None]  # node 9 has an all-zero label row


def onehot(classes, k=3):
    out = np.zeros((len(classes), k), dtype=np.int32)
    for i, c in enumerate(classes):
        if c is not None:
            out[i, c] = 1
    return out


def write_planetoid(directory, name="toy", *, with_allx=True, overrides=None):
    """Write the ``ind.<name>.*`` files of the toy above (Python-2 style pickles)."""
    directory.mkdir(parents=True, exist_ok=True)
    graph = collections.defaultdict(list)
    graph.update({k: list(v) for k, v in PLANETOID_GRAPH.items()})
    parts = {
        "x": sp.csr_matrix(ALLX[:2]), "y": onehot(ALLY_CLASSES[:2]),
        "allx": sp.csr_matrix(ALLX), "ally": onehot(ALLY_CLASSES),
        "tx": sp.csr_matrix(TX), "ty": onehot(TY_CLASSES), "graph": graph,
    }
    if not with_allx:
        del parts["allx"]
    parts.update(overrides or {})
    for part, value in parts.items():
        with open(directory / f"ind.{name}.{part}", "wb") as f:
            pickle.dump(value, f, protocol=2)
    (directory / f"ind.{name}.test.index").write_text("".join(f"{i}\n" for i in TEST_INDEX))
    return directory


class _RunsShell:
    """Unpickling this would call ``os.system`` (what a malicious Planetoid file could do)."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


# ---------------------------------------------------------------------- other writers
def write_gnnbench(path, *, dense_attr=False, extra=None):
    """A gnn-benchmark npz: 4 nodes, directed A (0->1, 0->2, 2->3, 3->3), 3 features."""
    adj = sp.csr_matrix(np.array([[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]],
                                 dtype=np.float32))
    attr = sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]],
                                  dtype=np.float32))
    arrays = dict(adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
                  adj_shape=np.array(adj.shape), labels=np.array([0, 1, 1, 0]))
    if dense_attr:
        arrays["attr_matrix"] = attr.toarray()
    else:
        arrays.update(attr_data=attr.data, attr_indices=attr.indices, attr_indptr=attr.indptr,
                      attr_shape=np.array(attr.shape))
    arrays.update(extra or {})
    np.savez(path, **arrays)
    return path, adj, attr


def write_heterophilous(path, **overrides):
    """A heterophilous npz: 5 nodes, undirected edges 0-1, 1-2, 3-4; two splits."""
    arrays = dict(
        node_features=np.arange(10, dtype=np.float32).reshape(5, 2),
        node_labels=np.array([0, 1, 0, 1, 1]),
        edges=np.array([[0, 1], [1, 2], [3, 4]]),
        train_masks=np.array([[1, 1, 0, 0, 0], [0, 0, 1, 1, 0]], dtype=bool),
        val_masks=np.array([[0, 0, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=bool),
        test_masks=np.array([[0, 0, 0, 1, 1], [0, 1, 0, 0, 1]], dtype=bool),
    )
    arrays.update(overrides)
    np.savez(path, **arrays)
    return path


MUSAE_EDGES = "id_1,id_2\n0,1\n1,2\n3,3\n2,0\n"
MUSAE_FEATURES = {"0": [0, 4], "1": [], "2": [1], "3": [2, 3, 4]}
MUSAE_TARGET = ("id,facebook_id,page_name,page_type\n"
                "0,145647315578475,The Voice of China,tvshow\n"
                "1,191483281412,U.S. Consulate General Mumbai,government\n"
                "2,144761358898518,Peace Corps Cambodia,company\n"
                "3,568700043198473,Government of Tripura,government\n")


def write_musae(directory, prefix="facebook", *, edges=MUSAE_EDGES, features=None,
                target=MUSAE_TARGET):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{prefix}_edges.csv").write_text(edges)
    (directory / f"{prefix}.json").write_text(
        features if isinstance(features, str) else json.dumps(features or MUSAE_FEATURES))
    (directory / f"{prefix}_target.csv").write_text(target)
    return directory


SNAP_TEXT = ("# Directed graph (each unordered pair of nodes is saved once): toy.txt\n"
             "# Nodes: 6 Edges: 5\n"
             "# FromNodeId\tToNodeId\n"
             "0\t1\n0\t2\n2\t0\n5\t5\n4\t1\n0\t1\n")


def write_ogb(directory, *, features=True, labels=True, split=True, num_nodes=5):
    """An OGB raw layout: 5 nodes (node 4 isolated), edges 0->1, 1->2, 2->0, 3->3."""
    raw = directory / "raw"
    write_gz(raw / "edge.csv.gz", "0,1\n1,2\n2,0\n3,3\n")
    if num_nodes is not None:
        write_gz(raw / "num-node-list.csv.gz", f"{num_nodes}\n")
    if features:
        write_gz(raw / "node-feat.csv.gz",
                 "".join(f"{i}.5,{-i},{i * 2}\n" for i in range(5)))
    if labels:
        write_gz(raw / "node-label.csv.gz", "3\n0\nnan\n1\n2\n")
    if split:
        for name, (train, valid, test) in {"time": ([0, 1], [2], [3, 4]),
                                           "random": ([4, 3], [1], [0])}.items():
            for fn, ids in (("train", train), ("valid", valid), ("test", test)):
                write_gz(directory / "split" / name / f"{fn}.csv.gz",
                         "".join(f"{i}\n" for i in ids))
    return directory


# ====================================================================== Planetoid
def test_planetoid_toy(tmp_path):
    ds = io.from_planetoid(write_planetoid(tmp_path / "p"))
    assert ds.name == "toy" and ds.num_nodes == 10 and ds.num_features == 4
    # features: allx rows for 0..5, tx row i for node TEST_INDEX[i], zeros for the gap 7
    expected = np.zeros((10, 4), dtype=np.float32)
    expected[:6] = ALLX
    expected[TEST_INDEX] = TX
    assert ds.features.dtype == np.float32
    np.testing.assert_array_equal(ds.features, expected)
    assert ds.labels.tolist() == [2, 0, 1, 1, 2, 0, 2, -1, 1, -1]
    assert ds.train_idx.tolist() == [0, 1]
    assert ds.val_idx.tolist() == [2, 3, 4, 5]  # the next 500, clipped to the known nodes
    assert ds.test_idx.tolist() == [6, 8, 9]  # sorted
    # symmetrised, self-loop once, the empty list of 5 adds nothing
    assert rows_of(ds.graph) == {0: [1, 2], 1: [0], 2: [0], 3: [3], 4: [9], 9: [4]}
    assert ds.num_edges == 7 and ds.graph.weights is None


def test_planetoid_without_allx_and_nan_fill(tmp_path):
    directory = write_planetoid(tmp_path / "p", with_allx=False)
    with pytest.warns(spsample._errors.SpsampleWarning, match="5 of the 10 nodes"):
        ds = io.from_planetoid(directory)
    expected = np.zeros((10, 4), dtype=np.float32)
    expected[:2] = ALLX[:2]  # only x (the training rows) is known
    expected[TEST_INDEX] = TX
    np.testing.assert_array_equal(ds.features, expected)
    with pytest.warns(spsample._errors.SpsampleWarning, match="filled with NaN"):
        ds_nan = io.from_planetoid(directory, missing_features="nan")
    assert np.isnan(ds_nan.features[[2, 3, 4, 5, 7]]).all()
    np.testing.assert_array_equal(ds_nan.features[[0, 1, 6, 8, 9]], expected[[0, 1, 6, 8, 9]])
    with pytest.raises(ArgumentError, match="'missing_features'"):
        io.from_planetoid(directory, missing_features="mean")


def test_planetoid_names_and_choice(tmp_path):
    directory = write_planetoid(tmp_path / "p", "alpha")
    write_planetoid(directory, "beta")
    assert io._planetoid.planetoid_names(directory) == ["alpha", "beta"]
    with pytest.raises(DatasetError, match="'name' must be given"):
        io.from_planetoid(directory)
    assert io.from_planetoid(directory, "beta").name == "beta"
    with pytest.raises(DatasetNotFoundError, match="'name'.*found \\['alpha', 'beta'\\]"):
        io.from_planetoid(directory, "gamma")


def test_planetoid_refuses_malicious_pickle(tmp_path):
    marker = tmp_path / "pwned"
    directory = write_planetoid(tmp_path / "p", overrides={"x": _RunsShell(f"touch {marker}")})
    with pytest.raises(DatasetError, match=r"ind\.toy\.x.*refusing to load posix\.system"):
        io.from_planetoid(directory)
    assert not marker.exists()
    # a builtin that runs code (eval) is refused as well
    evil = b"cbuiltins\neval\n(V__import__('os').system('touch " + str(marker).encode() \
        + b"')\ntR."
    (directory / "ind.toy.x").write_bytes(evil)
    with pytest.raises(DatasetError, match="refusing to load builtins.eval"):
        io.from_planetoid(directory)
    assert not marker.exists()


def test_planetoid_checksums(tmp_path):
    directory = write_planetoid(tmp_path / "p")
    files = sorted(p.name for p in directory.iterdir())
    digest = {n: hashlib.sha256((directory / n).read_bytes()).hexdigest() for n in files}
    sums = tmp_path / "SHA256SUMS"  # in the parent, with paths relative to it (as shared/)
    sums.write_text("".join(f"{digest[n]}  ./p/{n}\n" for n in files))
    assert io.from_planetoid(directory).num_nodes == 10
    digest["ind.toy.graph"] = "0" * 64
    sums.write_text("".join(f"{digest[n]}  p/{n}\n" for n in files))
    with pytest.raises(DatasetError, match=r"ind\.toy\.graph.*SHA-256.*refusing"):
        io.from_planetoid(directory)
    assert io.from_planetoid(directory, verify=False).num_nodes == 10


def test_planetoid_missing_and_truncated_files(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="'directory'.*nowhere"):
        io.from_planetoid(tmp_path / "nowhere")
    directory = write_planetoid(tmp_path / "p")
    (directory / "ind.toy.ty").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"'directory' lacks ind\.toy\.ty"):
        io.from_planetoid(directory)
    directory = write_planetoid(tmp_path / "q")
    data = (directory / "ind.toy.allx").read_bytes()
    (directory / "ind.toy.allx").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"ind\.toy\.allx"):
        io.from_planetoid(directory)
    (directory / "ind.toy.allx").write_bytes(b"")
    with pytest.raises(DatasetError, match=r"ind\.toy\.allx"):
        io.from_planetoid(directory)
    directory = write_planetoid(tmp_path / "r")
    (directory / "ind.toy.test.index").write_text("8\nsix\n9\n")
    with pytest.raises(DatasetError, match=r"test\.index.*one integer per line"):
        io.from_planetoid(directory)


@pytest.mark.parametrize("overrides, match", [
    ({"tx": sp.csr_matrix(TX[:2])}, r"ind\.toy\.tx has 2 rows but ty has 3"),
    ({"allx": sp.csr_matrix(ALLX[:, :3])}, r"ind\.toy\.allx has 3 feature columns"),
    ({"ally": onehot(ALLY_CLASSES)[:, :2]}, r"ind\.toy\.ally has 2 label columns"),
    ({"y": np.zeros(2)}, r"ind\.toy\.y must be 2-dimensional"),
    ({"graph": [[1], [0]]}, r"ind\.toy\.graph must hold a dict"),
    ({"graph": {0: [12]}}, r"ind\.toy\.graph names node 12 but .* 10 nodes"),
    ({"graph": {0: [-1]}}, r"ind\.toy\.graph holds an invalid graph"),
    ({"graph": {0: ["a"]}}, r"ind\.toy\.graph must map integer node ids"),
    ({"ty": onehot([1, 2])}, r"ind\.toy\.(tx|test\.index)"),
])
def test_planetoid_inconsistent_shapes(tmp_path, overrides, match):
    directory = write_planetoid(tmp_path / "p", overrides=overrides)
    with pytest.raises(DatasetError, match=match):
        io.from_planetoid(directory)


def test_planetoid_test_index_errors(tmp_path):
    directory = write_planetoid(tmp_path / "p")
    (directory / "ind.toy.test.index").write_text("8\n3\n9\n")  # 3 is a known node
    with pytest.raises(DatasetError, match=r"test\.index has id 3 < len\(ally\) = 6"):
        io.from_planetoid(directory)
    (directory / "ind.toy.test.index").write_text("8\n8\n9\n")
    with pytest.raises(DatasetError, match=r"test\.index lists a node twice"):
        io.from_planetoid(directory)


# ====================================================================== npz formats
@pytest.mark.parametrize("dense_attr", [False, True])
def test_gnnbench(tmp_path, dense_attr):
    path, adj, attr = write_gnnbench(tmp_path / "toy.npz", dense_attr=dense_attr)
    ds = io.from_npz_gnnbench(path)
    assert ds.name == "toy" and ds.num_nodes == 4
    # stored direction: row i of A is the row i aggregates from
    assert rows_of(ds.graph) == {0: [1, 2], 2: [3], 3: [3]}
    assert ds.graph.weights is None
    np.testing.assert_array_equal(ds.features, attr.toarray())
    assert ds.features.dtype == np.float32
    assert ds.labels.tolist() == [0, 1, 1, 0] and ds.splits == {}
    sym = io.from_npz_gnnbench(path, symmetrize=True)
    assert rows_of(sym.graph) == {0: [1, 2], 1: [0], 2: [0, 3], 3: [2, 3]}


def test_gnnbench_ignores_pickled_members_and_keeps_weights(tmp_path):
    idx_to_node = np.empty(4, dtype=object)
    idx_to_node[:] = [{"a": 1}, "b", 3, None]
    path, _, _ = write_gnnbench(tmp_path / "toy.npz", extra={
        "idx_to_node": idx_to_node, "adj_data": np.array([2.0, 1.0, 0.5, 1.0])})
    ds = io.from_npz_gnnbench(path)  # the object member is never read
    assert ds.graph.weights.tolist() == [2.0, 1.0, 0.5, 1.0]


def test_gnnbench_bad_input(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="'path'.*none.npz"):
        io.from_npz_gnnbench(tmp_path / "none.npz")
    with pytest.raises(DatasetError, match="'path' must be a file"):
        io.from_npz_gnnbench(tmp_path)
    with pytest.raises(ArgumentTypeError, match="'path'"):
        io.from_npz_gnnbench(3)
    path, _, _ = write_gnnbench(tmp_path / "a.npz")
    data = path.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match="cut.npz"):
        io.from_npz_gnnbench(tmp_path / "cut.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(DatasetError, match="text.npz.*npz archive"):
        io.from_npz_gnnbench(tmp_path / "text.npz")
    np.save(tmp_path / "single.npy", np.arange(3))
    with pytest.raises(DatasetError, match="single .npy array"):
        io.from_npz_gnnbench(tmp_path / "single.npy")
    np.savez(tmp_path / "b.npz", adj_data=np.ones(1))
    with pytest.raises(DatasetError, match=r"b.npz.*lacks.*adj_indices"):
        io.from_npz_gnnbench(tmp_path / "b.npz")
    write_gnnbench(tmp_path / "c.npz", extra={"adj_shape": np.array([4, 5])})
    with pytest.raises(DatasetError, match=r"c.npz.*must be square"):
        io.from_npz_gnnbench(tmp_path / "c.npz")
    write_gnnbench(tmp_path / "d.npz", extra={"adj_indices": np.array([1, 2, 9, 3])})
    with pytest.raises(DatasetError, match=r"d.npz.*CSR matrix 'adj_\*' has a column index 9"):
        io.from_npz_gnnbench(tmp_path / "d.npz")
    write_gnnbench(tmp_path / "e.npz", extra={"adj_shape": np.array([4])})
    with pytest.raises(DatasetError, match=r"e.npz.*adj_shape must hold two integers"):
        io.from_npz_gnnbench(tmp_path / "e.npz")
    write_gnnbench(tmp_path / "f.npz", extra={"labels": np.array([0, 1, 1])})
    with pytest.raises(DatasetError, match=r"f.npz.*inconsistent.*'labels'"):
        io.from_npz_gnnbench(tmp_path / "f.npz")
    write_gnnbench(tmp_path / "g.npz", extra={"attr_shape": np.array([3, 3])})
    with pytest.raises(DatasetError, match=r"g.npz.*CSR matrix 'attr_\*' has 5 row pointers"):
        io.from_npz_gnnbench(tmp_path / "g.npz")
    write_gnnbench(tmp_path / "h.npz", extra={"adj_data": np.array([1.0, -1.0, 1.0, 1.0])})
    with pytest.raises(DatasetError, match=r"h.npz.*invalid edge list.*weights"):
        io.from_npz_gnnbench(tmp_path / "h.npz")


def test_heterophilous(tmp_path):
    ds = io.from_heterophilous_npz(write_heterophilous(tmp_path / "mine.npz"))
    assert ds.name == "mine" and ds.num_nodes == 5 and ds.num_edges == 6
    assert rows_of(ds.graph) == {0: [1], 1: [0, 2], 2: [1], 3: [4], 4: [3]}
    np.testing.assert_array_equal(ds.features, np.arange(10, dtype=np.float32).reshape(5, 2))
    assert ds.labels.tolist() == [0, 1, 0, 1, 1]
    assert list(ds.splits) == ["0", "1"]
    assert [ds.split("1")[i].tolist() for i in range(3)] == [[2, 3], [0], [1, 4]]
    assert ds.train_idx.tolist() == [0, 1]  # split "0" is the default


@pytest.mark.parametrize("overrides, match", [
    ({"edges": np.array([[0, 1, 2]])}, r"'edges'.*must have shape \(E, 2\)"),
    ({"edges": np.array([[0, 1], [1, 7]])}, "invalid edge list"),
    ({"edges": np.array([[0.0, 1.0]])}, "invalid edge list.*integers"),
    ({"test_masks": np.ones((2, 4), dtype=bool)}, r"masks.*must all have shape \(k, 5\)"),
    ({"node_features": np.ones((4, 2))}, "inconsistent arrays.*'features'"),
    ({"node_labels": np.array(3)}, r"'node_labels'.*must have shape \(n,\)"),
])
def test_heterophilous_bad_input(tmp_path, overrides, match):
    path = write_heterophilous(tmp_path / "bad.npz", **overrides)
    with pytest.raises(DatasetError, match=match):
        io.from_heterophilous_npz(path)


def test_heterophilous_missing_member(tmp_path):
    np.savez(tmp_path / "m.npz", node_features=np.ones((2, 2)))
    with pytest.raises(DatasetError, match=r"m.npz.*lacks.*'node_labels'"):
        io.from_heterophilous_npz(tmp_path / "m.npz")


def test_csr_npz(tmp_path):
    # successor lists: 0 -> {1, 2}, 2 -> {0}, 3 -> {3}; indices int32 as law-cnr-2000 stores
    indptr = np.array([0, 2, 2, 3, 4], dtype=np.int64)
    indices = np.array([1, 2, 0, 3], dtype=np.int32)
    np.savez(tmp_path / "succ.npz", indptr=indptr, indices=indices)
    ds = io.from_csr_npz(tmp_path / "succ.npz")
    assert ds.name == "succ" and ds.graph.weights is None and ds.features is None
    assert rows_of(ds.graph) == {0: [1, 2], 2: [0], 3: [3]}  # rows kept as stored
    assert rows_of(io.from_csr_npz(tmp_path / "succ.npz", transpose=True).graph) == {
        0: [2], 1: [0], 2: [0], 3: [3]}  # v aggregates from its predecessors
    np.savez(tmp_path / "w.npz", indptr=indptr, indices=indices,
             data=np.array([0.5, 2.0, 1.0, 3.0]))
    w = io.from_csr_npz(tmp_path / "w.npz")
    assert w.graph.weights.tolist() == [0.5, 2.0, 1.0, 3.0]
    wt = io.from_csr_npz(tmp_path / "w.npz", transpose=True)
    assert rows_of(wt.graph) == {0: [2], 1: [0], 2: [0], 3: [3]}
    assert wt.graph.weights.tolist() == [1.0, 0.5, 2.0, 3.0]


@pytest.mark.parametrize("arrays, match", [
    ({"indptr": [0, 2, 1, 4], "indices": [0, 1, 2, 0]}, "invalid CSR"),
    ({"indptr": [0, 1, 2], "indices": [0, 5]}, "invalid CSR"),
    ({"indptr": [0, 1, 2], "indices": [0.0, 1.0]}, "invalid CSR"),
    ({"indptr": [0, 1, 2], "indices": [0, 1], "data": [1.0, -2.0]}, "invalid edge list"),
    ({"indptr": [0, 1, 2], "indices": [0, 5], "data": [1.0, 2.0]}, "invalid CSR"),
    ({"indptr": np.zeros((2, 2), dtype=np.int64), "indices": [0]}, r"'indptr'.*\(n \+ 1,\)"),
    ({"indptr": [0, 1]}, r"lacks.*'indices'"),
])
def test_csr_npz_bad_input(tmp_path, arrays, match):
    np.savez(tmp_path / "bad.npz", **{k: np.asarray(v) for k, v in arrays.items()})
    with pytest.raises(DatasetError, match=f"bad.npz.*{match}"):
        io.from_csr_npz(tmp_path / "bad.npz")


def test_from_scipy():
    m = sp.coo_matrix(([1.0, 1.0, 1.0], ([0, 0, 2], [1, 2, 2])), shape=(3, 3))
    ds = io.from_scipy(m, labels=[0, 1, 0], name="m")
    assert rows_of(ds.graph) == {0: [1, 2], 2: [2]} and ds.graph.weights is None
    assert ds.labels.tolist() == [0, 1, 0] and ds.name == "m"
    w = io.from_scipy(sp.csr_array(np.array([[0, 2.5], [0.5, 0]])),
                      splits={"s": {"train": [0], "val": [1], "test": []}})
    assert w.graph.weights.tolist() == [2.5, 0.5] and w.split("s")[1].tolist() == [1]
    m.data[0] = 5.0
    assert ds.graph.weights is None  # the dataset does not alias the input
    with pytest.raises(GraphError, match="'matrix' must be square"):
        io.from_scipy(sp.csr_matrix((2, 3)))
    with pytest.raises(ArgumentTypeError, match="'matrix'"):
        io.from_scipy(np.eye(3))
    with pytest.raises(DatasetError, match="'labels'"):
        io.from_scipy(sp.eye(3, format="csr"), labels=[0, 1])


# ====================================================================== MUSAE
def test_musae(tmp_path):
    ds = io.from_musae(write_musae(tmp_path / "fb"))
    assert ds.name == "facebook" and ds.num_nodes == 4 and ds.num_features == 5
    # undirected, the self-loop 3-3 once, the duplicate 0-2 / 2-0 merged
    assert rows_of(ds.graph) == {0: [1, 2], 1: [0, 2], 2: [0, 1], 3: [3]}
    expected = np.zeros((4, 5), dtype=np.uint8)
    for node, feats in MUSAE_FEATURES.items():
        expected[int(node), feats] = 1
    assert ds.features.dtype == np.uint8
    np.testing.assert_array_equal(ds.features, expected)
    # classes in sorted order: company 0, government 1, tvshow 2
    assert ds.labels.tolist() == [2, 1, 0, 1] and ds.splits == {}
    assert io.from_musae(tmp_path / "fb", num_features=8).num_features == 8


def test_musae_twitch_columns(tmp_path):
    target = ("id,days,mature,views,partner,new_id\n"
              "73045350,1459,False,9528,False,2\n"
              "61573865,1629,True,3615,False,0\n"
              "171095024,411,True,46427,False,1\n")
    directory = write_musae(tmp_path / "tw", "DE", edges="from,to\n0,1\n1,2\n",
                            features={"0": [1], "1": [0], "2": []}, target=target)
    write_musae(directory, "ENGB", edges="from,to\n0,1\n", features={"0": [0]},
                target="id,mature,new_id\n5,True,0\n6,False,1\n")
    with pytest.raises(DatasetError, match="'prefix' must be given.*\\['DE', 'ENGB'\\]"):
        io.from_musae(directory)
    ds = io.from_musae(directory, "DE")
    assert ds.labels.tolist() == [1, 1, 0]  # new_id is the node; False < True
    assert io.detect_format(directory) == "musae"
    converted = io.convert(directory, tmp_path / "de.h5", prefix="DE")
    assert_same_dataset(spsample.load(tmp_path / "de.h5"), converted)
    assert_same_dataset(converted, ds)
    assert io.from_musae(directory, "DE", label_column="partner").labels.tolist() == [0, 0, 0]


def test_musae_bad_input(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="'directory'"):
        io.from_musae(tmp_path / "none")
    directory = write_musae(tmp_path / "a")
    (directory / "facebook.json").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"'prefix' has no facebook\.json"):
        io.from_musae(directory)
    with pytest.raises(DatasetError, match=r"facebook\.json.*must map node ids"):
        io.from_musae(write_musae(tmp_path / "b", features='{"0": [1, 2'))
    with pytest.raises(DatasetError, match=r"facebook\.json.*must map node ids"):
        io.from_musae(write_musae(tmp_path / "c", features='[1, 2]'))
    with pytest.raises(DatasetError, match=r"facebook_edges\.csv.*numeric table"):
        io.from_musae(write_musae(tmp_path / "d", edges="id_1,id_2\n0,1\n1\n"))
    with pytest.raises(DatasetError, match=r"facebook_edges\.csv.*invalid edge list"):
        io.from_musae(write_musae(tmp_path / "e", edges="id_1,id_2\n0,-1\n"))
    with pytest.raises(DatasetError, match="'label_column' is not a column"):
        io.from_musae(tmp_path / "e", label_column="nope")
    with pytest.raises(DatasetError, match="'id_column' is not a column"):
        io.from_musae(tmp_path / "e", id_column="nope")
    with pytest.raises(ArgumentError, match="'num_features' is too small"):
        io.from_musae(write_musae(tmp_path / "f"), num_features=3)
    with pytest.raises(ArgumentTypeError, match="'num_features'"):
        io.from_musae(tmp_path / "f", num_features=4.5)
    bad_ids = MUSAE_TARGET.replace("\n3,", "\nx,")
    with pytest.raises(DatasetError, match="column 'id'.*integer node ids"):
        io.from_musae(write_musae(tmp_path / "g", target=bad_ids))
    with pytest.raises(DatasetError, match="negative node id"):
        io.from_musae(write_musae(tmp_path / "h", target=MUSAE_TARGET.replace("\n3,", "\n-3,")))
    with pytest.raises(DatasetError, match="lists a node id twice"):
        io.from_musae(write_musae(tmp_path / "i", target=MUSAE_TARGET.replace("\n3,", "\n2,")))
    short = MUSAE_TARGET.rsplit(",", 1)[0] + "\n"  # last row lacks page_type
    with pytest.raises(DatasetError, match="lacks column 'page_type'"):
        io.from_musae(write_musae(tmp_path / "j", target=short))


# ====================================================================== edge lists
@pytest.mark.parametrize("gz", [False, True])
def test_edge_list_directed(tmp_path, gz):
    path = tmp_path / ("toy.txt.gz" if gz else "toy.txt")
    if gz:
        write_gz(path, SNAP_TEXT)
    else:
        path.write_text(SNAP_TEXT)
    ds = io.from_edge_list(path)
    assert ds.name == "toy" and ds.num_nodes == 6 and ds.features is None
    # u v puts u in row v; the duplicate 0 1 is merged; node 3 is an isolated unused id
    assert rows_of(ds.graph) == {0: [2], 1: [0, 4], 2: [0], 5: [5]}
    assert ds.graph.weights is None
    sym = io.from_edge_list(path, directed=False)
    assert rows_of(sym.graph) == {0: [1, 2], 1: [0, 4], 2: [0], 4: [1], 5: [5]}


def test_edge_list_options(tmp_path):
    (tmp_path / "sp.edges").write_text("10 30\n30 20\n30 20\n")
    relabelled = io.from_edge_list(tmp_path / "sp.edges", relabel=True)
    assert relabelled.num_nodes == 3  # 10 -> 0, 20 -> 1, 30 -> 2
    assert rows_of(relabelled.graph) == {1: [2], 2: [0]}
    assert io.from_edge_list(tmp_path / "sp.edges").num_nodes == 31
    assert io.from_edge_list(tmp_path / "sp.edges", num_nodes=40).num_nodes == 40
    (tmp_path / "w.csv").write_text("src,dst,w\n0,1,0.5\n2,1,1.5\n0,1,2.0\n")
    w = io.from_edge_list(tmp_path / "w.csv", delimiter=",", skiprows=1, weighted=True)
    assert rows_of(w.graph) == {1: [0, 2]}
    assert w.graph.weights.tolist() == [2.5, 1.5]  # duplicates merged, weights summed
    (tmp_path / "pct.tsv").write_text("% konect\n0\t1\n")
    assert rows_of(io.from_edge_list(tmp_path / "pct.tsv", comment="%").graph) == {1: [0]}


@pytest.mark.parametrize("weighted", [False, True])
def test_edge_list_ids_are_parsed_as_integers(tmp_path, weighted):
    """Issue 27 item 4: through float64, 2**53 + 1 became 2**53 (two vertices merged)."""
    big = 2**53
    w = " 1.5" if weighted else ""
    (tmp_path / "big.txt").write_text(f"{big} {big + 1}{w}\n{big + 1} {big + 2}{w}\n")
    ds = io.from_edge_list(tmp_path / "big.txt", weighted=weighted, relabel=True)
    assert ds.num_nodes == 3 and ds.num_edges == 2
    (tmp_path / "dec.txt").write_text(f"{big + 2}.0 1{w}\n")     # a decimal beyond 2**53
    with pytest.raises(DatasetError, match="dec.txt.*beyond 2\\*\\*53"):
        io.from_edge_list(tmp_path / "dec.txt", weighted=weighted, relabel=True)
    (tmp_path / "exact.txt").write_text(f"0.0 1.0{w}\n")          # exact decimals: read
    assert io.from_edge_list(tmp_path / "exact.txt", weighted=weighted).num_edges == 1


def test_edge_list_bad_input(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="'path'.*nope.txt"):
        io.from_edge_list(tmp_path / "nope.txt")
    cases = {
        "one.txt": ("0 1\n2\n", "numeric table"),
        "word.txt": ("0 1\na b\n", "numeric table"),
        "neg.txt": ("0 1\n-1 2\n", "invalid edge list"),
        "float.txt": ("0 1.5\n", "numeric table"),
        "empty.txt": ("# nothing\n", "invalid edge list"),
    }
    for name, (text, match) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(DatasetError, match=f"{name}.*{match}"):
            io.from_edge_list(tmp_path / name)
    (tmp_path / "wf.txt").write_text("0 1.5 1\n")
    with pytest.raises(DatasetError, match="wf.txt.*must be integers"):
        io.from_edge_list(tmp_path / "wf.txt", weighted=True)
    (tmp_path / "few.txt").write_text("0 5\n")
    with pytest.raises(DatasetError, match="few.txt.*invalid edge list.*num_nodes"):
        io.from_edge_list(tmp_path / "few.txt", num_nodes=3)
    (tmp_path / "junk.txt.gz").write_bytes(b"this is not gzip data at all")
    with pytest.raises(DatasetError, match="junk.txt.gz"):
        io.from_edge_list(tmp_path / "junk.txt.gz")
    data = gzip.compress(("0 1\n" * 5000).encode())
    (tmp_path / "cut.txt.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match="cut.txt.gz"):
        io.from_edge_list(tmp_path / "cut.txt.gz")


# ====================================================================== OGB
def test_ogb(tmp_path):
    ds = io.from_ogb(write_ogb(tmp_path / "ogbn_toy"))
    assert ds.name == "ogbn_toy" and ds.num_nodes == 5
    assert rows_of(ds.graph) == {0: [2], 1: [0], 2: [1], 3: [3]}  # src,dst: src in row dst
    expected = np.array([[i + 0.5, -i, 2 * i] for i in range(5)], dtype=np.float32)
    assert ds.features.dtype == np.float32
    np.testing.assert_array_equal(ds.features, expected)
    assert ds.labels.tolist() == [3, 0, -1, 1, 2]
    assert list(ds.splits) == ["random", "time"]  # sorted names, valid renamed val
    assert [a.tolist() for a in ds.split("time")] == [[0, 1], [2], [3, 4]]
    assert [a.tolist() for a in ds.split("random")] == [[4, 3], [1], [0]]
    sym = io.from_ogb(tmp_path / "ogbn_toy", directed=False)
    assert rows_of(sym.graph) == {0: [1, 2], 1: [0, 2], 2: [0, 1], 3: [3]}


def test_ogb_minimal_layout(tmp_path):
    ds = io.from_ogb(write_ogb(tmp_path / "o", features=False, labels=False, split=False,
                               num_nodes=None))
    assert ds.num_nodes == 4 and ds.features is None and ds.labels is None and not ds.splits


def test_ogb_bad_input(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="'directory' lacks raw/edge.csv.gz"):
        io.from_ogb(tmp_path)
    directory = write_ogb(tmp_path / "a")
    (directory / "split" / "time" / "valid.csv.gz").unlink()
    with pytest.raises(DatasetNotFoundError, match="'directory' lacks split/time/valid.csv.gz"):
        io.from_ogb(directory)
    directory = write_ogb(tmp_path / "b", num_nodes=7)
    with pytest.raises(DatasetError, match="inconsistent arrays.*'features'"):
        io.from_ogb(directory)
    directory = write_ogb(tmp_path / "c")
    write_gz(directory / "raw" / "num-node-list.csv.gz", "5\n6\n")
    with pytest.raises(DatasetError, match="must hold one count"):
        io.from_ogb(directory)
    directory = write_ogb(tmp_path / "d")
    write_gz(directory / "raw" / "node-label.csv.gz", "0,1\n1,0\n0,0\n1,1\n0,1\n")
    with pytest.raises(DatasetError, match="2 columns"):
        io.from_ogb(directory)
    directory = write_ogb(tmp_path / "e")
    (directory / "raw" / "node-feat.csv.gz").write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(DatasetError, match="node-feat.csv.gz"):
        io.from_ogb(directory)
    directory = write_ogb(tmp_path / "f")
    write_gz(directory / "split" / "time" / "test.csv.gz", "3\n9\n")
    with pytest.raises(DatasetError, match=r"inconsistent arrays.*'test'.*outside \[0, 5\)"):
        io.from_ogb(directory)
    directory = write_ogb(tmp_path / "g")
    write_gz(directory / "raw" / "edge.csv.gz", "0,1\n1\n")
    with pytest.raises(DatasetError, match="edge.csv.gz.*numeric table"):
        io.from_ogb(directory)


# ====================================================================== detect / convert
@pytest.fixture
def sources(tmp_path):
    """One synthetic source per format: ``{format: (path, reader options)}``."""
    src = tmp_path / "src"
    src.mkdir()
    np.savez(src / "csr.npz", indptr=np.array([0, 1, 2]), indices=np.array([1, 0]))
    (src / "toy.txt").write_text(SNAP_TEXT)
    write_gz(src / "toy.tsv.gz", SNAP_TEXT)
    out = {
        "planetoid": (write_planetoid(src / "planetoid"), {}),
        "gnnbench": (write_gnnbench(src / "gnnbench.npz")[0], {}),
        "heterophilous": (write_heterophilous(src / "het.npz"), {}),
        "musae": (write_musae(src / "musae"), {}),
        "edge_list": (src / "toy.txt", {"directed": False}),
        "csr_npz": (src / "csr.npz", {"transpose": True}),
        "ogb": (write_ogb(src / "ogb"), {}),
    }
    return out


def test_detect_format(sources, tmp_path):
    for fmt, (path, _) in sources.items():
        assert io.detect_format(path) == fmt
        assert io.detect_format(str(path)) == fmt
    assert io.detect_format(sources["edge_list"][0].with_name("toy.tsv.gz")) == "edge_list"
    spsample.save(io.from_planetoid(sources["planetoid"][0]), tmp_path / "x.h5")
    assert io.detect_format(tmp_path / "x.h5") == "spsample"
    with pytest.raises(DatasetNotFoundError, match="'src'.*missing"):
        io.detect_format(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="'src' is a folder of no known layout"):
        io.detect_format(tmp_path / "empty")
    (tmp_path / "a.xyz").write_text("0 1\n")
    with pytest.raises(DatasetError, match="'src' has an unknown format; pass format="):
        io.detect_format(tmp_path / "a.xyz")
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    with pytest.raises(DatasetError, match=r"npz of no known layout.*\['a'\]"):
        io.detect_format(tmp_path / "other.npz")
    (tmp_path / "bad.npz").write_text("not a zip")
    with pytest.raises(DatasetError, match="'src'.*not a readable npz"):
        io.detect_format(tmp_path / "bad.npz")
    with pytest.raises(ArgumentTypeError, match="'src'"):
        io.detect_format(None)


HETERO_READERS = {"heco": io.from_heco, "temporal": io.from_temporal_edges, "kg": io.from_kg}


@pytest.fixture
def hetero_sources(tmp_path):
    """One synthetic heterogeneous / temporal / knowledge-graph source per format::

        heco (folder "acm"): papers 0-2, authors 0-1 (pa.txt: p0-a0, p1-a0, p2-a1),
                             subjects 0 (ps.txt: every paper), sparse paper features
        temporal: 10 -> 20 @5, 20 -> 10 @7, 10 -> 20 @3, 30 -> 10 @9
        kg: train a-r->b, b-r->c, c-s->a; valid a-s->c; test b-r->d
    """
    import tarfile
    heco = tmp_path / "hsrc" / "acm"
    heco.mkdir(parents=True)
    (heco / "pa.txt").write_text("0\t0\n1\t0\n2\t1\n")
    (heco / "ps.txt").write_text("0\t0\n1\t0\n2\t0\n")
    np.save(heco / "labels.npy", np.array([0, 1, 1]))
    sp.save_npz(heco / "p_feat.npz", sp.csr_matrix(np.eye(3, 4, dtype=np.float32)))
    for part, ids in (("train", [0]), ("val", [1]), ("test", [2])):
        np.save(heco / f"{part}_20.npy", np.array(ids))
    temporal = tmp_path / "hsrc" / "t.txt"
    temporal.write_text("10 20 5\n20 10 7\n10 20 3\n30 10 9\n")
    files = {"train.txt": "a\tr\tb\nb\tr\tc\nc\ts\ta\n", "valid.txt": "a\ts\tc\n",
             "test.txt": "b\tr\td\n"}
    kg = tmp_path / "hsrc" / "kg.tar.gz"
    with tarfile.open(kg, "w:gz") as tar:
        for name, text in files.items():
            (tmp_path / "hsrc" / name).write_text(text)
            tar.add(tmp_path / "hsrc" / name, arcname=name)
    return {"heco": (heco, {}), "temporal": (temporal, {"format": "temporal"}),
            "kg": (kg, {})}


def assert_same_hetero(a, b):
    """Exact equality of two HeteroDatasets (graph with times, features, labels, splits)."""
    assert a.graph == b.graph and a.name == b.name and a.target_type == b.target_type
    assert set(a.features) == set(b.features) and set(a.labels) == set(b.labels)
    for t in a.features:
        x, y = a.features[t], b.features[t]
        assert sp.issparse(x) == sp.issparse(y) and x.dtype == y.dtype
        np.testing.assert_array_equal(x.toarray() if sp.issparse(x) else x,
                                      y.toarray() if sp.issparse(y) else y)
    for t in a.labels:
        np.testing.assert_array_equal(a.labels[t], b.labels[t])
    assert list(a.splits) == list(b.splits)
    for name in a.splits:
        for part in ("train", "val", "test"):
            np.testing.assert_array_equal(a.splits[name][part], b.splits[name][part])
    assert set(a.edge_splits or {}) == set(b.edge_splits or {})
    for part in a.edge_splits or {}:
        assert set(a.edge_splits[part]) == set(b.edge_splits[part])
        for rel in a.edge_splits[part]:
            np.testing.assert_array_equal(a.edge_splits[part][rel], b.edge_splits[part][rel])


def test_convert_round_trips_heterogeneous(hetero_sources, tmp_path):
    for fmt, (path, options) in hetero_sources.items():
        dst = tmp_path / f"{fmt}.h5"
        written = io.convert(path, dst, **options)
        expected = HETERO_READERS[fmt](path)
        assert isinstance(written, io.HeteroDataset)
        assert_same_hetero(written, expected)
        assert_same_hetero(spsample.load(dst), expected)
        assert_same_hetero(io.convert(dst, tmp_path / "copy.h5", compression=None), expected)
        if fmt != "temporal":                    # temporal lists are detected as edge lists
            assert io.detect_format(path) == fmt
    heco = spsample.load(tmp_path / "heco.h5")
    assert heco.graph.num_nodes == {"paper": 3, "author": 2, "subject": 1}
    # 25 % non-zero: densified by the default sparse_features=None (sparse at <= 5 %)
    assert heco.target_type == "paper" and not sp.issparse(heco.features["paper"])
    assert spsample.load(tmp_path / "temporal.h5").graph.edge_time(
        ("node", "to", "node")).tolist() == [7.0, 9.0, 3.0]


def test_convert_round_trips(sources, tmp_path):
    readers = {"planetoid": io.from_planetoid, "gnnbench": io.from_npz_gnnbench,
               "heterophilous": io.from_heterophilous_npz, "musae": io.from_musae,
               "edge_list": io.from_edge_list, "csr_npz": io.from_csr_npz, "ogb": io.from_ogb}
    assert set(readers) | set(HETERO_READERS) | {"spsample"} == set(io.FORMATS)
    for fmt, (path, options) in sources.items():
        dst = tmp_path / f"{fmt}.h5"
        written = io.convert(path, dst, **options)
        expected = readers[fmt](path, **options)
        assert_same_dataset(written, expected)
        assert_same_dataset(spsample.load(dst), expected)
        # an explicit format, and converting the HDF5 file itself, give the same
        again = io.convert(path, tmp_path / "again.h5", format=fmt.replace("_", "-"), **options)
        assert_same_dataset(again, expected)
        assert_same_dataset(io.convert(dst, tmp_path / "copy.h5", compression=None),
                            expected)


def test_convert_options(sources, tmp_path):
    path, _ = sources["edge_list"]
    assert io.convert(path, tmp_path / "a.h5", format="snap").num_edges == 5
    assert spsample.load(tmp_path / "a.h5").num_edges == 5
    ds = io.convert(sources["musae"][0], tmp_path / "b.h5", name="fb", features_dtype="float32")
    loaded = spsample.load(tmp_path / "b.h5")
    assert loaded.name == "fb" and loaded.features.dtype == np.float32
    planetoid = io.convert(sources["planetoid"][0], tmp_path / "c.h5", features_dtype=np.int16)
    assert planetoid.features.dtype == np.int16  # the toy features are integral
    assert ds.name == "fb"


def test_convert_bad_input(sources, tmp_path):
    path, _ = sources["edge_list"]
    with pytest.raises(ArgumentError, match="'format' must be one of"):
        io.convert(path, tmp_path / "x.h5", format="graphml")
    with pytest.raises(ArgumentTypeError, match="'format'"):
        io.convert(path, tmp_path / "x.h5", format=3)
    with pytest.raises(ArgumentError, match="'directd' is not an option of format 'edge_list'"):
        io.convert(path, tmp_path / "x.h5", directd=False)
    with pytest.raises(ArgumentTypeError, match="'name'"):
        io.convert(path, tmp_path / "x.h5", name=5)
    with pytest.raises(ArgumentTypeError, match="'src'"):
        io.convert(5, tmp_path / "x.h5")
    with pytest.raises(DatasetNotFoundError, match="'dst'.*directory that does not exist"):
        io.convert(path, tmp_path / "no" / "x.h5")
    with pytest.raises(DatasetError, match="'dst' is a directory"):
        io.convert(path, tmp_path)
    ogb = sources["ogb"][0]
    with pytest.raises(DatasetError, match="'features_dtype' would change feature values"):
        io.convert(ogb, tmp_path / "x.h5", features_dtype="int32")  # 0.5 is not an int
    with pytest.raises(ArgumentTypeError, match="'features_dtype'"):
        io.convert(ogb, tmp_path / "x.h5", features_dtype="bogus")
    with pytest.raises(ArgumentError, match="'features_dtype' must be a numeric dtype"):
        io.convert(ogb, tmp_path / "x.h5", features_dtype="U4")
    assert not (tmp_path / "x.h5").exists()  # nothing written by a failed conversion


def test_convert_does_not_modify_sources(sources, tmp_path):
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for path, options in sources.values():
        io.convert(path, tmp_path / "out.h5", **options)
    for p, data in before.items():
        assert p.read_bytes() == data


# ====================================================================== command line
def test_cli_convert(sources, tmp_path, capsys):
    path, _ = sources["edge_list"]
    dst = tmp_path / "toy.h5"
    assert spsample.cli.main(["convert", str(path), str(dst), "-o", "directed=False"]) == 0
    out = capsys.readouterr().out
    assert f"toy: 6 nodes, 7 edges (undirected: every edge in both rows), 0 features, " \
        f"0 classes, splits: none -> {dst}" in out
    assert_same_dataset(spsample.load(dst), io.from_edge_list(path, directed=False))
    dst = tmp_path / "p.h5"
    assert spsample.cli.main(["convert", str(sources["planetoid"][0]), str(dst), "--name",
                              "cora-like", "--features-dtype", "int8", "--no-compression"]) == 0
    assert "cora-like: 10 nodes, 7 edges (undirected: every edge in both rows), 4 features, " \
        "3 classes, splits: default 2/4/3" in capsys.readouterr().out
    loaded = spsample.load(dst)
    assert loaded.name == "cora-like" and loaded.features.dtype == np.int8
    dst = tmp_path / "h.h5"
    assert spsample.cli.main(["convert", str(sources["csr_npz"][0]), str(dst), "--format",
                              "CSR-npz", "-o", "transpose=True"]) == 0
    assert_same_dataset(spsample.load(dst), io.from_csr_npz(sources["csr_npz"][0],
                                                            transpose=True))


@pytest.mark.parametrize("argv_tail, match", [
    (["-o", "directed"], "'--option' must look like KEY=VALUE"),
    (["-o", "name=x"], "'--option' name=... is not a reader option; use --name"),
    (["-o", "directd=False"], "'directd' is not an option"),
    (["--features-dtype", "bogus"], "'--features-dtype'"),
])
def test_cli_convert_errors(sources, tmp_path, capsys, argv_tail, match):
    path, _ = sources["edge_list"]
    argv = ["convert", str(path), str(tmp_path / "x.h5"), *argv_tail]
    assert spsample.cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("spsample convert: error: ") and len(err.splitlines()) == 1
    assert match in err


def test_cli_convert_missing_source(tmp_path, capsys):
    assert spsample.cli.main(["convert", str(tmp_path / "nope"), str(tmp_path / "x.h5")]) == 2
    err = capsys.readouterr().err
    assert "'src' does not exist" in err and "nope" in err


def test_cli_usage_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        spsample.cli.main(["convert", "--format", "graphml", "a", "b"])
    assert exc.value.code == 2 and "invalid choice: 'graphml'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        spsample.cli.main(["convert"])
    assert exc.value.code == 2 and "src, dst" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        spsample.cli.main(["frobnicate"])
    assert exc.value.code == 2 and "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_cli_help_lists_all_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        spsample.cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in ("train", "sample", "convert"):
        assert f"    {name} " in out


def test_cli_missing_subcommand_breaks_only_itself(monkeypatch, sources, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "spsample.cli._train", None)  # import fails
    with pytest.raises(SystemExit) as exc:
        spsample.cli.main(["train"])
    assert exc.value.code == 2
    assert "'train' is not available" in capsys.readouterr().err
    path, _ = sources["edge_list"]
    assert spsample.cli.main(["convert", str(path), str(tmp_path / "x.h5")]) == 0


def test_cli_entry_point_subprocess(sources, tmp_path):
    path, _ = sources["heterophilous"]
    dst = tmp_path / "het.h5"
    proc = subprocess.run([sys.executable, "-m", "spsample", "convert", str(path), str(dst)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "het: 5 nodes, 6 edges (undirected: every edge in both rows), 2 features, " \
        "2 classes, splits: 0 2/1/2, 1 2/1/2 -> " in proc.stdout
    assert_same_dataset(spsample.load(dst), io.from_heterophilous_npz(path))


# ====================================================================== real datasets
def self_loops(graph):
    rows = np.repeat(np.arange(graph.num_nodes), np.diff(graph.indptr))
    return int(np.count_nonzero(rows == graph.indices))


def is_symmetric(graph):
    a = graph.to_scipy()
    return (a != a.T).nnz == 0


# name: (nodes, CSR entries, self-loops, features, classes, train/val/test); entries =
# 2 * (undirected edges without self-loops) + self-loops. Without self-loops these are PyG's
# counts (Cora 10,556, CiteSeer 9,104, PubMed 88,648).
PLANETOID_FACTS = {
    "cora": (2708, 10556, 0, 1433, 7, (140, 500, 1000)),
    "citeseer": (3327, 9104 + 124, 124, 3703, 6, (120, 500, 1000)),
    "pubmed": (19717, 88648 + 3, 3, 500, 3, (60, 500, 1000)),
}


@pytest.mark.datasets
@pytest.mark.parametrize("name", sorted(PLANETOID_FACTS))
def test_real_planetoid(shared_datasets, name):
    nodes, entries, loops, f, k, split = PLANETOID_FACTS[name]
    if name == "pubmed":                    # features for 1,060 of the 19,717 nodes only
        with pytest.warns(spsample._errors.SpsampleWarning, match="only 1,060 nodes have"):
            ds = io.from_planetoid(shared_datasets / f"planetoid-{name}")
    else:
        ds = io.from_planetoid(shared_datasets / f"planetoid-{name}")  # SHA-256 checked
    assert ds.sparse_features                # bag-of-words: at most 5 % non-zero
    assert (ds.num_nodes, ds.num_edges, self_loops(ds.graph)) == (nodes, entries, loops)
    assert (ds.num_features, ds.num_classes) == (f, k)
    assert tuple(map(len, ds.split())) == split
    assert is_symmetric(ds.graph)
    train, val, test = ds.split()
    assert np.intersect1d(train, val).size == np.intersect1d(val, test).size == 0
    assert (ds.labels[np.concatenate([train, val])] >= 0).all()
    if name == "cora":
        assert np.bincount(ds.labels[train]).tolist() == [20] * 7
        assert ds.num_edges // 2 == 5278  # the 5,278 undirected edges of the README
    if name == "citeseer":
        assert int((ds.labels == -1).sum()) == 15  # the 15 test-index gaps
    if name == "pubmed":
        has_row = ds.features.toarray().any(axis=1)
        assert int(has_row.sum()) <= 1060 and has_row[ds.test_idx].all()


@pytest.mark.datasets
def test_real_gnnbench(shared_datasets):
    ds = io.from_npz_gnnbench(shared_datasets / "gnnbench-npz" / "cora.npz")
    assert (ds.num_nodes, ds.num_edges, ds.num_features, ds.num_classes) == (2708, 5429, 1433, 7)
    assert ds.graph.weights is None and not is_symmetric(ds.graph)
    cs = io.from_npz_gnnbench(shared_datasets / "gnnbench-npz" / "citeseer.npz")
    assert (cs.num_nodes, cs.num_edges, cs.num_features, cs.num_classes) == (3312, 4715, 3703, 6)


@pytest.mark.datasets
def test_real_minesweeper(shared_datasets):
    ds = io.from_heterophilous_npz(shared_datasets / "heterophilous-minesweeper"
                                   / "minesweeper.npz")
    assert (ds.num_nodes, ds.num_edges, self_loops(ds.graph)) == (10000, 2 * 39402, 0)
    assert (ds.num_features, ds.num_classes, len(ds.splits)) == (7, 2, 10)
    assert tuple(map(len, ds.split("0"))) == (5000, 2500, 2500)
    assert is_symmetric(ds.graph)


@pytest.mark.datasets
def test_real_musae_facebook(shared_datasets):
    ds = io.from_musae(shared_datasets / "musae-facebook")
    loops = self_loops(ds.graph)
    assert (ds.num_nodes, loops) == (22470, 179)
    assert (ds.num_edges - loops) // 2 + loops == 171002
    assert (ds.num_features, ds.num_classes) == (4714, 4)
    assert (ds.labels >= 0).all() and is_symmetric(ds.graph)
    assert ds.sparse_features and ds.features.dtype == np.uint8 and ds.features.nnz < 400_000


@pytest.mark.datasets
def test_real_snap_ego_facebook(shared_datasets, tmp_path):
    path = shared_datasets / "snap-ego-facebook" / "facebook_combined.txt.gz"
    assert io.detect_format(path) == "edge_list"
    directed = io.from_edge_list(path)
    assert (directed.num_nodes, directed.num_edges) == (4039, 88234)
    ds = io.convert(path, tmp_path / "fb.h5", directed=False)
    assert (ds.num_nodes, ds.num_edges, self_loops(ds.graph)) == (4039, 2 * 88234, 0)
    assert_same_dataset(spsample.load(tmp_path / "fb.h5"), ds)


@pytest.mark.datasets
def test_real_law_cnr_2000(shared_datasets):
    path = shared_datasets / "law-cnr-2000" / "cnr-2000.npz"
    ds = io.from_csr_npz(path)
    assert (ds.num_nodes, ds.num_edges, self_loops(ds.graph)) == (325557, 3216152, 87442)
    assert int(np.diff(ds.graph.indptr).max()) == 2716  # max out-degree: rows = successors
    with np.load(path) as z:
        np.testing.assert_array_equal(ds.graph.indptr, z["indptr"])
        np.testing.assert_array_equal(ds.graph.indices, z["indices"])


@pytest.mark.datasets
def test_real_detect_format(shared_datasets):
    expected = {
        "planetoid-cora": "planetoid", "planetoid-citeseer": "planetoid",
        "planetoid-pubmed": "planetoid", "gnnbench-npz/cora.npz": "gnnbench",
        "heterophilous-minesweeper/minesweeper.npz": "heterophilous",
        "musae-facebook": "musae", "musae-twitch": "musae",
        "snap-soc-slashdot0902/soc-Slashdot0902.txt.gz": "edge_list",
        "law-cnr-2000/cnr-2000.npz": "csr_npz",
    }
    for rel, fmt in expected.items():
        assert io.detect_format(shared_datasets / rel) == fmt, rel


@pytest.mark.datasets
def test_embedded_cora_is_the_converted_planetoid(shared_datasets, tmp_path):
    """``spsample/data/cora.h5`` is exactly what the project's converter makes from the raw
    pickles, and small enough to ship."""
    dst = tmp_path / "cora.h5"
    assert spsample.cli.main(["convert", str(shared_datasets / "planetoid-cora"), str(dst),
                              "--features-dtype", "uint8", "-o", "sparse_features=false"]) == 0
    assert_same_dataset(spsample.load(dst), io.load_cora())
    embedded = io.embedded_path("cora")
    assert embedded.stat().st_size < 512 * 1024
    assert io.load_cora().features.dtype == np.uint8


# ====================================================================== option types
@pytest.mark.parametrize("reader, kwargs", [
    ("edge_list", {"directed": "false"}),
    ("edge_list", {"relabel": 1}),
    ("edge_list", {"weighted": None}),
    ("edge_list", {"skiprows": 1.0}),
    ("edge_list", {"num_nodes": "9"}),
    ("edge_list", {"comment": 3}),
    ("edge_list", {"delimiter": b","}),
    ("csr_npz", {"transpose": "yes"}),
    ("gnnbench", {"symmetrize": 0}),
    ("ogb", {"directed": "False"}),
    ("planetoid", {"verify": "no"}),
    ("planetoid", {"name": 3}),
])
def test_reader_option_types(sources, reader, kwargs):
    """Options of the wrong type are refused by name (a string "false" is truthy, so accepting
    it would silently flip the option)."""
    path, _ = sources[reader]
    with pytest.raises(ArgumentTypeError, match=f"'{next(iter(kwargs))}'"):
        io.FORMATS[reader](path, **kwargs)


def test_edge_list_argument_ranges(sources):
    path, _ = sources["edge_list"]
    with pytest.raises(ArgumentError, match="'skiprows' must be >= 0"):
        io.from_edge_list(path, skiprows=-1)
    with pytest.raises(ArgumentError, match="'num_nodes' must be >= 1"):
        io.from_edge_list(path, num_nodes=0)


def test_cli_option_words(sources, tmp_path, capsys):
    """``-o directed=false`` (lower case) means False, as ``-o directed=False`` does."""
    path, _ = sources["edge_list"]
    for word in ("false", "FALSE", "False"):
        assert spsample.cli.main(["convert", str(path), str(tmp_path / "x.h5"), "-o",
                                  f"directed={word}", "--force"]) == 0
        assert spsample.load(tmp_path / "x.h5").num_edges == 7  # symmetrised
    assert spsample.cli.main(["convert", str(path), str(tmp_path / "x.h5"), "-o",
                              "directed=true", "-o", "num_nodes=9", "--force"]) == 0
    assert spsample.load(tmp_path / "x.h5").num_nodes == 9
    assert spsample.cli.main(["convert", str(path), str(tmp_path / "x.h5"), "-o",
                              "delimiter=\t", "-o", "comment=#", "--force"]) == 0
    capsys.readouterr()
