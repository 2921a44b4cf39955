"""Hostile files: arrays out of pickles, npz and HDF5 files are checked before anything trusts
them, and a small file cannot make spsample allocate huge memory (issue 17, items 1 and 8).

Loads that could crash the interpreter run in a child process under ``ulimit -v``
(:func:`crafted.load_in_child`), so a regression fails the test instead of killing pytest.
"""


import h5py
import numpy as np
import pytest

import spsample
from spsample import io
from spsample._errors import DatasetError, ResourceLimitError

import crafted


def write_tampered_tx(tmp_path, **state):
    parts = crafted.planetoid_parts()
    parts["tx"] = crafted.tampered_csr(parts["tx"], **state)
    return crafted.write_planetoid(tmp_path / "p", parts)


# ---------------------------------------------------------------------- item 1: Planetoid CSR
@pytest.mark.parametrize("column, name", [(-10**6, "negative"), (7, "beyond the width"),
                                          (4, "just beyond the width")])
def test_planetoid_csr_column_out_of_range_is_refused(tmp_path, column, name):
    tx = crafted.planetoid_parts()["tx"]
    indices = tx.indices.copy()
    indices[1] = column
    directory = write_tampered_tx(tmp_path, indices=indices)
    with pytest.raises(DatasetError, match=rf"ind\.toy\.tx has a column index {column} "):
        io.from_planetoid(directory)


def test_planetoid_csr_huge_column_index_does_not_crash(tmp_path):
    tx = crafted.planetoid_parts()["tx"]
    indices = tx.indices.astype(np.int64)
    indices[0] = 2 * 10**9
    directory = write_tampered_tx(tmp_path, indices=indices)
    verdicts, code, err = crafted.load_in_child([("planetoid", directory)])
    assert code == 0, err
    assert verdicts[0].startswith("TYPED DatasetError") and "column index 2000000000" \
        in verdicts[0]


@pytest.mark.parametrize("state, match", [
    ({"indptr": np.array([0, 4, 2, 12], dtype=np.int32)}, "decreasing row pointers"),
    ({"indptr": np.array([0, 4, 8, 13], dtype=np.int32)}, "ending at 13 but 12"),
    ({"indptr": np.array([1, 4, 8, 12], dtype=np.int32)}, "starting at 1"),
    ({"indptr": np.array([0, 4, 12], dtype=np.int32)}, "3 row pointers for 3 rows"),
    ({"_shape": (3, -4)}, "shape of two non-negative integers"),
    ({"_shape": "ab"}, "shape of two non-negative integers"),
    ({"indices": np.zeros(12, dtype=np.float64)}, "1-D integer 'indices'"),
    ({"data": np.zeros(11, dtype=np.float32)}, "11 values but 12 column indices"),
    ({"data": np.array(["a"] * 12)}, "numeric 'data'"),
])
def test_planetoid_csr_structure_is_checked(tmp_path, state, match):
    directory = write_tampered_tx(tmp_path, **state)
    with pytest.raises(DatasetError, match=rf"ind\.toy\.tx .*{match}"):
        io.from_planetoid(directory)


def test_planetoid_csr_missing_part_is_refused(tmp_path):
    parts = crafted.planetoid_parts()
    del parts["tx"].__dict__["indptr"]
    directory = crafted.write_planetoid(tmp_path / "p", parts)
    with pytest.raises(DatasetError, match=r"ind\.toy\.tx holds a sparse matrix without"):
        io.from_planetoid(directory)


def test_planetoid_valid_files_still_load_exactly(tmp_path):
    ds = io.from_planetoid(crafted.write_planetoid(tmp_path / "p"))
    expected = np.zeros((10, 4), dtype=np.float32)
    expected[:6] = crafted.ALLX
    expected[crafted.TEST_INDEX] = crafted.TX
    np.testing.assert_array_equal(ds.features, expected)


# ---------------------------------------------------------------------- item 8: sizes
def test_planetoid_shared_adjacency_lists_are_bounded_by_the_file(tmp_path):
    parts = crafted.planetoid_parts()
    shared = list(range(10)) * 50                     # one list, referenced by every key
    parts["graph"] = {k: shared for k in range(10)}
    directory = crafted.write_planetoid(tmp_path / "p", parts)
    size = (directory / "ind.toy.graph").stat().st_size
    assert size < 5000                                # the pickle stores the list once
    with pytest.raises(DatasetError, match=r"ind\.toy\.graph expands to 5,000 entries.*"
                                           rf"{size:,d} bytes"):
        io.from_planetoid(directory)


def test_planetoid_test_index_with_a_huge_gap_is_refused(tmp_path):
    directory = crafted.write_planetoid(tmp_path / "p", test_index=[8, 6, 10**9])
    with pytest.raises(DatasetError, match=r"test\.index names node 1000000000, leaving "
                                           r"999,999,992 nodes"):
        io.from_planetoid(directory)


def test_planetoid_declared_feature_width_beyond_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "1M")
    parts = crafted.planetoid_parts()
    for part in ("x", "allx", "tx"):
        parts[part] = crafted.tampered_csr(parts[part],
                                           _shape=(parts[part].shape[0], 10**6))
    directory = crafted.write_planetoid(tmp_path / "p", parts)
    with pytest.raises(ResourceLimitError, match=r"'sparse_features' would need 38\.1 MiB .*"
                                                 r"10 x 1,000,000 float32.*1\.0 MiB"):
        io.from_planetoid(directory, sparse_features=False)
    ds = io.from_planetoid(directory)                 # sparse: 36 stored values
    assert ds.sparse_features and ds.features.shape == (10, 10**6) and ds.features.nnz == 36


def test_edge_list_with_one_huge_id_asks_for_relabel(tmp_path):
    path = tmp_path / "e.txt"
    path.write_text("0 4294967290\n")                 # 13 bytes
    with pytest.raises(ResourceLimitError, match=r"'relabel'.*4,294,967,291 nodes.*32\.0 "
                                                 r"GiB.*only 1 edge;.*relabel=True"):
        io.from_edge_list(path)
    ds = io.from_edge_list(path, relabel=True)
    assert ds.num_nodes == 2 and ds.num_edges == 1


def test_edge_list_sparse_ids_are_refused_before_allocating(tmp_path):
    path = tmp_path / "e.txt"
    path.write_text("0 1\n1 40000000\n")              # 40 M nodes, 2 edges: 320 MB of indptr
    with pytest.raises(ResourceLimitError, match=r"'relabel'.*40,000,001 nodes.*2 edges"):
        io.from_edge_list(path)
    assert io.from_edge_list(path, num_nodes=40_000_001).num_nodes == 40_000_001


def test_edge_list_moderate_gaps_still_load(tmp_path):
    path = tmp_path / "e.txt"
    path.write_text("0 1\n1 5000\n")                  # isolated nodes, as in SNAP files
    assert io.from_edge_list(path).num_nodes == 5001


def test_hdf5_declaring_huge_rows_is_refused(tmp_path):
    path = tmp_path / "big.h5"
    crafted.write_hdf5(path)
    with h5py.File(path, "a") as f:
        del f["features"]
        f.create_dataset("features", shape=(2**31, 1), dtype=np.float64, chunks=(2**16, 1))
    assert path.stat().st_size < 64 * 1024
    with pytest.raises(DatasetError, match=r"/features .*declares shape \(2147483648, 1\) "
                                           r"\(16\.0 GiB\).*0 of its 32,768 chunks"):
        io.load(path)


def test_hdf5_contiguous_dataset_without_storage_is_refused(tmp_path):
    path = tmp_path / "big.h5"
    crafted.write_hdf5(path)
    with h5py.File(path, "a") as f:
        del f["labels"]
        f.create_dataset("labels", shape=(2**28,), dtype=np.int64)   # never written
    with pytest.raises(DatasetError, match=r"/labels .*\(2\.0 GiB\) but holds only 0 bytes"):
        io.load(path)


def test_hdf5_truly_large_arrays_hit_the_memory_limit(tmp_path, monkeypatch):
    path = crafted.write_hdf5(tmp_path / "d.h5", compression=None)
    with h5py.File(path) as f:
        sizes = []
        f.visititems(lambda name, obj: sizes.append(obj.nbytes) if hasattr(obj, "nbytes")
                     else None)
        features = f["features"].nbytes
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", str(sum(sizes) - 1))
    with pytest.raises(ResourceLimitError, match=r"'path' would need 3\.1 KiB for the "
                                                 r"arrays of .*features=False"):
        io.load(path)
    assert features > 1 and io.load(path, features=False).features is None


def test_hdf5_loads_in_a_child_under_a_memory_limit(tmp_path):
    big = tmp_path / "big.h5"
    crafted.write_hdf5(big)
    with h5py.File(big, "a") as f:
        del f["features"]
        f.create_dataset("features", shape=(2**31, 1), dtype=np.float64, chunks=(2**16, 1))
    good = crafted.write_hdf5(tmp_path / "good.h5")
    verdicts, code, err = crafted.load_in_child([("hdf5", big), ("hdf5", good)],
                                                memory_mib=1024)
    assert code == 0, err
    assert verdicts[0].startswith("TYPED DatasetError") and verdicts[1] == "LOADED 40"


def test_gnnbench_declared_attribute_shape_beyond_memory(tmp_path, monkeypatch):
    path = crafted.write_gnnbench(tmp_path / "g.npz")
    with np.load(path) as z:
        arrays = dict(z)
    arrays["attr_shape"] = np.array([4, 2**40])
    np.savez(path, **arrays)
    with pytest.raises(ResourceLimitError, match=r"'sparse_features' would need 16\.0 TiB .*"
                                                 r"'attr_\*'"):
        io.from_npz_gnnbench(path, sparse_features=False)


def test_npz_member_declaring_more_than_it_stores_is_refused(tmp_path):
    import io as bytes_io
    import zipfile

    header = bytes_io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False,
                                                  "shape": (2**33,)})
    path = tmp_path / "lying.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("indptr.npy", _npy(np.array([0, 1, 2])))
        z.writestr("indices.npy", header.getvalue() + b"\0" * 16)
    assert path.stat().st_size < 1024
    with pytest.raises(DatasetError, match=r"'indices' in .*declares shape \(8589934592,\) "
                                           r"\(68,719,476,736 bytes\) but the archive holds"):
        io.from_csr_npz(path)


def _npy(arr):
    import io as bytes_io

    out = bytes_io.BytesIO()
    np.save(out, arr)
    return out.getvalue()


# ---------------------------------------------------------------------- issue 27, item 5
@pytest.mark.parametrize("container", ["folder", "archive"])
def test_kg_file_with_a_non_utf8_byte_names_the_file_and_line(tmp_path, container):
    texts = dict(crafted.KG_TRIPLES, train=b"a\tr\tb\nb\tr\tc\nc\ts\t\xffa\n")
    if container == "archive":
        path = crafted.write_kg(tmp_path / "kg.tar.gz", texts)
    else:
        path = tmp_path / "kg"
        path.mkdir()
        for part, name in (("train", "train.txt"), ("val", "valid.txt"), ("test", "test.txt")):
            data = texts[part]
            (path / name).write_bytes(data.encode() if isinstance(data, str) else data)
    with pytest.raises(DatasetError, match=r"train\.txt of .*kg.*not UTF-8 text: line 3, "
                                           r"column 5 holds the byte 0xff"):
        io.from_kg(path)


def _many_relations(path, relations, entities):
    """A KG whose triples use ``relations`` relation names over ``entities`` entities."""
    lines = [f"e{2 * i}\tr{i % relations}\te{2 * i + 1}" for i in range(entities // 2)]
    (path / "train.txt").write_text("\n".join(lines) + "\n")
    return path


def test_kg_with_many_relations_is_refused_before_allocating(tmp_path, monkeypatch):
    """3,000 relations over 30,000 entities: one CSR per relation needs 1.4 GB of row
    pointers for a 0.6 MB file -- refused against the memory limit before a block is built."""
    folder = _many_relations(tmp_path, 3000, 30000)
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "256M")
    with pytest.raises(ResourceLimitError, match=r"3,000 relations over 30,000 vertices"):
        io.from_kg(folder)
    with pytest.raises(ResourceLimitError, match="relation blocks"):
        spsample.HeteroGraph.from_edge_index(
            {("e", f"r{i}", "e"): ([0], [29999]) for i in range(3000)})


def test_heco_with_one_huge_id_is_refused_before_allocating(tmp_path):
    folder = crafted.write_heco(tmp_path)
    assert io.from_heco(folder).graph.num_nodes == {"author": 3, "paper": 4, "subject": 2}
    (folder / "pa.txt").write_text("0\t0\n0\t300000000\n")
    with pytest.raises(ResourceLimitError, match="ids up to 300,000,000 for type 'author'"):
        io.from_heco(folder)


def test_heco_npy_declaring_more_than_it_holds_is_refused(tmp_path):
    folder = crafted.write_heco(tmp_path)
    data = (folder / "labels.npy").read_bytes()                  # 4 labels; claim 9
    (folder / "labels.npy").write_bytes(data.replace(b"(4,)", b"(9,)"))
    with pytest.raises(DatasetError, match=r"labels\.npy.*declares"):
        io.from_heco(folder)


def test_small_archive_decompressing_to_gigabytes_is_refused(tmp_path, monkeypatch):
    """A 60 KB tar.gz whose train.txt is 60 MB of one line repeated: its text would take
    more than 1 GB once split into triples; SPSAMPLE_MEMORY_LIMIT refuses it before reading."""
    line = b"entity_one\trelation\tentity_two\n"
    path = crafted.write_kg(tmp_path / "bomb.tar.gz", dict(crafted.KG_TRIPLES,
                                                           train=line * (60_000_000 // len(line))))
    assert path.stat().st_size < 200_000
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "256M")
    with pytest.raises(ResourceLimitError, match="bomb.tar.gz"):
        io.from_kg(path)


def test_gzip_edge_list_is_checked_as_it_decompresses(tmp_path, monkeypatch):
    import gzip
    (tmp_path / "bomb.txt.gz").write_bytes(gzip.compress(b"0 1 5\n" * 20_000_000))
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "64M")
    with pytest.raises(ResourceLimitError, match=r"bomb\.txt\.gz.*decompresses to more than"):
        io.from_edge_list(tmp_path / "bomb.txt.gz")
    with pytest.raises(ResourceLimitError, match=r"bomb\.txt\.gz"):
        io.from_temporal_edges(tmp_path / "bomb.txt.gz")


@pytest.mark.parametrize("where", ["dataset", "hetero", "file"])
def test_a_huge_label_is_refused_on_read(tmp_path, where):
    """One label of 2**40 made num_classes 2**40 + 1 (torch then asked for 512 TiB)."""
    labels = np.zeros(40, dtype=np.int64)
    labels[7] = 2**40
    with pytest.raises(DatasetError, match=r"labels.*below the number of nodes.*1099511627776"):
        if where == "dataset":
            spsample.Dataset(spsample.rmat(5, seed=0), labels=labels[:32])
        elif where == "hetero":
            g = spsample.HeteroGraph.from_edge_index({("p", "c", "p"): ([0], [39])})
            io.HeteroDataset(g, labels={"p": labels})
        else:
            path = crafted.write_hdf5(tmp_path / "h.h5")
            with h5py.File(path, "r+") as f:
                f["labels"][7] = 2**40
            spsample.load(path)


def test_lone_surrogate_names_are_refused_on_construction(tmp_path):
    with pytest.raises(spsample.GraphError, match="not valid Unicode"):
        spsample.HeteroGraph.from_edge_index({("a", "r\udc80", "a"): ([0], [1])})
    with pytest.raises(spsample.GraphError, match="not valid Unicode"):
        spsample.HeteroGraph.from_edge_index({("a\ud800", "r", "a\ud800"): ([0], [1])})
    g = spsample.HeteroGraph.from_edge_index({("a", "r", "a"): ([0], [1])})
    with pytest.raises(DatasetError, match="not valid Unicode"):
        io.HeteroDataset(g, name="x\udc80")
    with pytest.raises(DatasetError, match="not valid Unicode"):
        spsample.Dataset(spsample.rmat(3, seed=0), name="\udc80")
