"""Heterogeneous datasets on disk: the HDF5 groups, and the converters of the shared data."""

import tarfile

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

import spsample
from spsample.io import HeteroDataset

REL_W = ("author", "writes", "paper")
REL_C = ("paper", "cites", "paper")


def small_dataset():
    """2 authors, 3 papers::

        author 0 -> paper 0, paper 1;  author 1 -> paper 2;  paper 0 -> paper 1 -> paper 2
    """
    g = spsample.HeteroGraph.from_edge_index(
        {REL_W: ([0, 0, 1], [0, 1, 2]), REL_C: ([0, 1], [1, 2])},
        num_nodes={"author": 2, "paper": 3}, weights={REL_C: [0.5, 2.0]},
        edge_time={REL_W: [1.0, 2.0, 3.0]}, node_time={"paper": [0.0, 1.0, 5.0]})
    return HeteroDataset(
        g, features={"paper": np.arange(6, dtype=np.float32).reshape(3, 2),
                     "author": sp.csr_matrix(np.eye(2))},
        labels={"paper": [0, 1, -1]}, target_type="paper",
        splits={"a": {"train": [0], "val": [1], "test": [2]}},
        edge_splits={"test": {REL_C: [[0], [2]]}}, name="tiny")


def test_save_load_round_trip(tmp_path):
    ds = small_dataset()
    path = spsample.save(ds, tmp_path / "tiny.h5")
    back = spsample.load(path)
    assert isinstance(back, HeteroDataset) and back.graph == ds.graph
    assert back.name == "tiny" and back.target_type == "paper" and back.num_classes == 2
    assert np.array_equal(back.features["paper"], ds.features["paper"])
    assert sp.issparse(back.features["author"])
    assert back.labels["paper"].tolist() == [0, 1, -1]
    assert [a.tolist() for a in back.split("a")] == [[0], [1], [2]]
    assert back.edge_splits["test"][REL_C].tolist() == [[0], [2]]
    assert spsample.load(path, features=False).features == {}
    with h5py.File(path) as f:                    # the homogeneous groups are absent
        assert "graph" not in f and f.attrs["version"] == 3


def test_homogeneous_files_keep_their_layout(tmp_path):
    path = spsample.save(spsample.io.load_cora(), tmp_path / "cora.h5")
    with h5py.File(path) as f:
        assert "hetero" not in f and f.attrs["version"] in (1, 2)


def test_damaged_relation_is_a_dataset_error(tmp_path):
    path = spsample.save(small_dataset(), tmp_path / "tiny.h5")
    with h5py.File(path, "r+") as f:
        grp = f["hetero/relations/0"]
        del grp["indptr"]
        grp.create_dataset("indptr", data=np.array([0, 5, 1, 3], dtype=np.int64))
    with pytest.raises(spsample.DatasetError, match="CSR"):
        spsample.load(path)


def test_dataset_checks_name_the_argument():
    g = small_dataset().graph
    with pytest.raises(spsample.ArgumentError, match="features"):
        HeteroDataset(g, features={"venue": np.zeros((1, 1))})
    with pytest.raises(spsample.DatasetError, match="target_type"):
        HeteroDataset(g, splits={"a": {"train": [0], "val": [1], "test": [2]}})
    with pytest.raises(spsample.DatasetError, match="edge_splits"):
        HeteroDataset(g, edge_splits={"test": {REL_C: [[0], [9]]}})


def test_kg_archive_and_temporal_list(tmp_path):
    files = {"train.txt": "a\tr\tb\nb\tr\tc\nc\ts\ta\n", "valid.txt": "a\ts\tc\n",
             "test.txt": "b\tr\td\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with tarfile.open(tmp_path / "kg.tar.gz", "w:gz") as tar:
        for name in files:
            tar.add(tmp_path / name, arcname=name)
    ds = spsample.convert(tmp_path / "kg.tar.gz", tmp_path / "kg.h5")
    assert ds.graph.num_nodes == {"entity": 4}
    assert ds.graph.num_edges == {("entity", "r", "entity"): 2, ("entity", "s", "entity"): 1}
    assert ds.edge_splits["test"][("entity", "r", "entity")].tolist() == [[1], [3]]
    (tmp_path / "t.txt").write_text("10 20 5\n20 10 7\n10 20 3\n30 10 9\n")
    tds = spsample.convert(tmp_path / "t.txt", tmp_path / "t.h5", format="temporal")
    rel = ("node", "to", "node")
    indptr, indices, _ = tds.graph.csr(rel)
    assert indptr.tolist() == [0, 2, 3, 3] and indices.tolist() == [1, 2, 0]
    assert tds.graph.edge_time(rel).tolist() == [7.0, 9.0, 3.0]   # (10 -> 20) keeps 3


@pytest.mark.parametrize("name, counts, edges, classes", [
    ("acm", {"paper": 4019, "author": 7167, "subject": 60}, 2 * (13407 + 4019), 3),
    ("dblp", {"author": 4057, "paper": 14328, "term": 7723, "conference": 20},
     2 * (19645 + 14328 + 85810), 4),
])
def test_heco_folders(shared_datasets, name, counts, edges, classes):
    ds = spsample.io.from_heco(shared_datasets / "heco-hetero" / name)
    assert ds.graph.num_nodes == counts
    assert sum(ds.graph.num_edges.values()) == edges
    assert ds.num_classes == classes and list(ds.splits) == ["20", "40", "60"]
    train, val, test = ds.split("20")
    assert train.size == 20 * classes and val.size == test.size == 1000
    assert set(ds.features) <= set(counts)


@pytest.mark.parametrize("folder, file, nodes, pairs", [
    ("snap-collegemsg", "CollegeMsg.txt", 1899, 20296),
    ("snap-bitcoin", "soc-sign-bitcoinalpha.csv.gz", 3783, 24186),
    ("snap-email-eu-core-temporal", "email-Eu-core-temporal.txt.gz", 986, 24929),
])
def test_temporal_sources(shared_datasets, folder, file, nodes, pairs):
    ds = spsample.io.from_temporal_edges(shared_datasets / folder / file)
    rel = ("node", "to", "node")
    assert ds.graph.num_nodes == {"node": nodes} and ds.graph.num_edges[rel] == pairs
    assert np.isfinite(ds.graph.edge_time(rel)).all()


def test_wn18rr(shared_datasets, tmp_path):
    ds = spsample.convert(shared_datasets / "conve-kg" / "WN18RR.tar.gz", tmp_path / "wn.h5")
    assert ds.graph.num_nodes == {"entity": 40943} and len(ds.graph.relations) == 11
    sizes = {p: sum(e.shape[1] for e in r.values()) for p, r in ds.edge_splits.items()}
    assert sizes == {"train": 86835, "val": 3034, "test": 3134}


# ---------------------------------------------------------------------- issue 27
def _duplicate_group(path, part, index):
    """Copy ``/hetero/<part>/<index>`` to a new last group (same attributes: a duplicate)."""
    with h5py.File(path, "r+") as f:
        grp = f[f"hetero/{part}"]
        grp.copy(grp[str(index)], str(len(grp)))


def test_two_relation_groups_of_one_triple_are_refused(tmp_path):
    """Both groups hold (author, writes, paper); the second used to replace the first."""
    path = spsample.save(small_dataset(), tmp_path / "tiny.h5")
    _duplicate_group(path, "relations", 0)
    with pytest.raises(spsample.DatasetError, match=r"tiny\.h5.*two relation groups of "
                       r"\('author', 'writes', 'paper'\)"):
        spsample.load(path)
    with pytest.raises(spsample.DatasetError, match="two relation groups"):
        from spsample.io._h5 import open_file
        from spsample.io._hetero_hdf5 import read_hetero_parts
        with open_file("load", path) as f:
            read_hetero_parts("load", path, f)


def test_two_node_types_of_one_name_are_refused(tmp_path):
    """Two groups named 'paper': their features used to overwrite each other."""
    path = spsample.save(small_dataset(), tmp_path / "tiny.h5")
    with h5py.File(path, "r+") as f:
        names = [f[f"hetero/node_types/{k}"].attrs["name"] for k in f["hetero/node_types"]]
    _duplicate_group(path, "node_types", names.index("paper"))
    with pytest.raises(spsample.DatasetError, match=r"tiny\.h5.*two node types named 'paper'"):
        spsample.load(path)


def test_two_edge_splits_of_one_relation_are_refused(tmp_path):
    path = spsample.save(small_dataset(), tmp_path / "tiny.h5")
    _duplicate_group(path, "edge_splits/test", 0)
    with pytest.raises(spsample.DatasetError, match=r"two 'test' edge splits of"):
        spsample.load(path)


def _write_collegemsg_like(folder, name="msg.txt"):
    """SNAP CollegeMsg's layout: ``SRC DST UNIXTS``, ids from 1, sorted by time."""
    folder.mkdir(exist_ok=True)
    lines = ["1 2 1082040961", "3 4 1082155839", "5 2 1082414391", "2 1 1082418952",
             "1 2 1082419000", "4 3 1082420000"]
    (folder / name).write_text("\n".join(lines) + "\n")
    (folder / "README.md").write_text("a temporal list\n")
    return folder


def test_snap_temporal_folder_is_detected_with_its_times(tmp_path):
    folder = _write_collegemsg_like(tmp_path / "msg")
    assert spsample.io.detect_format(folder) == "temporal"
    ds = spsample.convert(folder, tmp_path / "msg.h5")
    rel = ("node", "to", "node")
    assert ds.graph.num_nodes == {"node": 5}             # ids 1..5: no made-up vertex 0
    back = spsample.load(tmp_path / "msg.h5").graph
    assert back.edge_time(rel).dtype == np.int64
    indptr, indices, _ = back.csr(rel)                   # new id = old id - 1 here
    pairs = {(int(indices[e]), int(v)): int(back.edge_time(rel)[e])
             for v in range(5) for e in range(indptr[v], indptr[v + 1])}
    assert pairs == {(0, 1): 1082040961, (2, 3): 1082155839, (4, 1): 1082414391,
                     (1, 0): 1082418952, (3, 2): 1082420000}
    again = spsample.convert(folder, tmp_path / "again.h5", format="temporal")   # the folder
    assert again.graph == ds.graph


def test_static_and_weighted_lists_are_not_detected_as_temporal(tmp_path):
    (tmp_path / "s.txt").write_text("0 1\n1 2\n2 0\n")
    (tmp_path / "w.txt").write_text("0 1 0.5\n1 2 2.0\n2 0 1.0\n")
    (tmp_path / "ones.txt").write_text("0 1 1\n1 2 1\n2 0 1\n")
    for name in ("s.txt", "w.txt", "ones.txt"):
        assert spsample.io.detect_format(tmp_path / name) == "edge_list", name
    (tmp_path / "sorted.csv").write_text("4,7,-1,0\n7,4,3,15\n4,5,2,15\n5,7,1,99\n")
    assert spsample.io.detect_format(tmp_path / "sorted.csv") == "temporal"


def test_temporal_ids_and_times_are_parsed_as_integers(tmp_path):
    """2**53 and 2**53 + 1 are two vertices, and times 1 ns apart stay apart."""
    big = 2**53
    t = 1_700_000_000_000_000_000                        # nanoseconds, 2023
    (tmp_path / "ns.txt").write_text(f"{big} {big + 1} {t}\n{big + 1} {big} {t + 1}\n"
                                     f"{big} {big + 2} {t + 2}\n")
    ds = spsample.io.from_temporal_edges(tmp_path / "ns.txt")
    rel = ("node", "to", "node")
    assert ds.graph.num_nodes == {"node": 3} and ds.graph.num_edges[rel] == 3
    assert ds.graph.edge_time(rel).dtype == np.int64
    assert sorted(ds.graph.edge_time(rel).tolist()) == [t, t + 1, t + 2]
    (tmp_path / "dec.txt").write_text(f"{big + 2}.0 1 5\n")
    with pytest.raises(spsample.DatasetError, match="dec.txt"):
        spsample.io.from_temporal_edges(tmp_path / "dec.txt")
    (tmp_path / "small.txt").write_text("1.0 2.0 5\n2.0 3 6.5\n")       # exact decimals
    ds = spsample.io.from_temporal_edges(tmp_path / "small.txt")
    assert ds.graph.num_nodes == {"node": 3} and ds.graph.edge_time(rel).dtype == np.float64


def test_convert_cli_of_a_snap_temporal_folder(tmp_path):
    from spsample.cli import main
    folder = _write_collegemsg_like(tmp_path / "msg")
    assert main(["convert", str(folder), str(tmp_path / "m.h5")]) == 0
    g = spsample.load(tmp_path / "m.h5").graph
    assert g.is_temporal and g.num_nodes == {"node": 5}
    assert main(["convert", str(folder), str(tmp_path / "m2.h5"), "--format", "temporal"]) == 0
    assert spsample.load(tmp_path / "m2.h5").graph == g


@pytest.mark.parametrize("folder, nodes, pairs", [
    ("snap-collegemsg", 1899, 20296),
    ("snap-email-eu-core-temporal", 986, 24929),
])
def test_shared_snap_temporal_folders_convert_with_times(shared_datasets, tmp_path, folder,
                                                         nodes, pairs):
    from spsample.cli import main
    assert main(["convert", str(shared_datasets / folder), str(tmp_path / "t.h5")]) == 0
    g = spsample.load(tmp_path / "t.h5").graph
    rel = ("node", "to", "node")
    assert g.num_nodes == {"node": nodes} and g.num_edges[rel] == pairs
    assert g.edge_time(rel).dtype == np.int64 and g.edge_time(rel).min() >= 0
