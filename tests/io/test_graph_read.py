"""The lean in-memory loader (spsample.io._graph_read): a canonical graph is read straight into
its final, frozen arrays and checked piece by piece; anything else takes the general path
(Graph.from_csr), with the same result or the same error as before. The piece checks
(native/verify.h) agree with their NumPy oracle (spsample.io._entries.first_problems)."""

import tracemalloc

import h5py
import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample.io._entries import entry_problems, first_problems
from spsample._errors import DatasetError
from spsample.io import _graph_read

from graphs import random_graph


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    """Pieces of 64 bytes (8 entries): rows and checks straddle piece boundaries."""
    monkeypatch.setattr(spsample.graph._graph, "PIECE_BYTES", 64)


def _graph(weighted):
    return random_graph(300, 2500, seed=3, weighted=weighted)


@pytest.mark.parametrize("layout,compression", [("contiguous", None), ("chunked", "gzip"),
                                                ("chunked", None)])
@pytest.mark.parametrize("weighted", [False, True])
def test_canonical_files_are_read_lean(tmp_path, monkeypatch, layout, compression, weighted):
    g = _graph(weighted)
    path = spsample.save(spsample.Dataset(g), tmp_path / "g.h5", layout=layout,
                         compression=compression)
    taken = []
    real = _graph_read.read_graph
    monkeypatch.setattr(spsample.io._hdf5, "read_graph",
                        lambda d: taken.append(real(d)) or taken[-1])
    got = spsample.load(path).graph
    assert taken[0] is not None and got == g
    for arr in (got.indptr, got.indices) + ((got.weights,) if weighted else ()):
        assert isinstance(arr.base, bytes) and not arr.flags.writeable


def test_peak_memory_is_about_the_graph(tmp_path, monkeypatch):
    """One bytes object per array, filled in place: no copy of any array is ever held."""
    monkeypatch.setattr(spsample.graph._graph, "PIECE_BYTES", 1 << 16)
    g = random_graph(20_000, 400_000, seed=1, weighted=True)
    path = spsample.save(spsample.Dataset(g), tmp_path / "g.h5", layout="contiguous",
                         compression=None)
    spsample.load(path)                             # imports and caches outside the trace
    size = g.indptr.nbytes + g.indices.nbytes + g.weights.nbytes
    tracemalloc.start()
    try:
        got = spsample.load(path).graph
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == g
    assert peak < size + 4 * (1 << 16) + (1 << 20), (peak, size)


def _write(path, indptr, indices, weights=None, dtype=np.int64):
    with h5py.File(path, "w") as f:
        f.attrs.update(format="spsample", version=1, name="x")
        f["graph/indptr"] = np.asarray(indptr, dtype=np.int64)
        f["graph/indices"] = np.asarray(indices, dtype=dtype)
        if weights is not None:
            f["graph/weights"] = np.asarray(weights, dtype=np.float64)


def _general(path, monkeypatch):
    """What the general path (Graph.from_csr on whole arrays) gives: a graph or an error."""
    with monkeypatch.context() as m:
        m.setattr(spsample.io._hdf5, "read_graph", lambda dsets: None)
        try:
            return spsample.load(path).graph
        except DatasetError as exc:
            return str(exc)


# rows: 0 = [1, 2, 3, 4, 5, 6, 7, 8, 9, 0?], 1 = [..] -- ten entries per row, so the pieces of
# eight entries cut rows; each case damages one array at or next to a piece boundary
_ROWS = np.arange(0, 41, 10)
_IDS = np.tile(np.arange(10), 4)


def _damaged():
    cases = {}
    for at in (7, 8, 9):                    # unsorted pair inside a row, across a boundary
        ids = _IDS.copy()
        ids[at], ids[at - 1] = ids[at - 1], ids[at]
        cases[f"unsorted{at}"] = (_ROWS, ids, None, np.int64)
    dup = _IDS.copy()
    dup[8] = dup[7]
    cases["duplicate"] = (_ROWS, dup, None, np.int64)
    for at, bad in ((8, 4), (15, -1), (39, 99)):
        ids = _IDS.copy()
        ids[at] = bad
        cases[f"id{at}={bad}"] = (_ROWS, ids, None, np.int64)
    cases["indptr drops"] = (np.array([0, 10, 9, 30, 40]), _IDS, None, np.int64)
    cases["indptr start"] = (np.array([1, 10, 20, 30, 40]), _IDS, None, np.int64)
    cases["indptr end"] = (np.array([0, 10, 20, 30, 39]), _IDS, None, np.int64)
    for value in (np.nan, -1.0, np.inf):
        w = np.ones(40)
        w[16] = value
        cases[f"weight {value}"] = (_ROWS, _IDS, w, np.int64)
    cases["weights short"] = (_ROWS, _IDS, np.ones(39), np.int64)
    cases["int32 ids"] = (_ROWS, _IDS, None, np.int32)
    cases["uint64 ids"] = (_ROWS, _IDS, None, np.uint64)
    return cases


@pytest.mark.parametrize("name", list(_damaged()))
def test_other_files_take_the_general_path(tmp_path, monkeypatch, name):
    """Non-canonical or invalid graphs: the same graph or the same error as Graph.from_csr."""
    indptr, ids, w, dtype = _damaged()[name]
    path = tmp_path / "d.h5"
    _write(path, indptr, ids, w, dtype)
    expected = _general(path, monkeypatch)
    if isinstance(expected, str):
        with pytest.raises(DatasetError) as info:
            spsample.load(path)
        assert str(info.value) == expected
    else:
        assert spsample.load(path).graph == expected


def test_graph_without_edges(tmp_path):
    path = tmp_path / "e.h5"
    _write(path, np.zeros(4, dtype=np.int64), np.zeros(0, dtype=np.int64))
    g = spsample.load(path).graph
    assert (g.num_nodes, g.num_edges) == (3, 0)


def test_truncated_contiguous_file(tmp_path):
    g = _graph(False)
    path = spsample.save(spsample.Dataset(g), tmp_path / "t.h5", layout="contiguous",
                         compression=None)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - g.indices.nbytes // 2])
    with pytest.raises(DatasetError):
        spsample.load(path)


def _random_entries(rng):
    """Row pointers, ids (sorted rows, some damaged), weights (maybe damaged), and a view."""
    n = int(rng.integers(1, 30))
    deg = np.minimum(rng.integers(0, 6, n) * (rng.random(n) > 0.3), n)
    indptr = np.r_[0, np.cumsum(deg)].astype(np.int64)
    ids = np.concatenate([np.sort(rng.choice(n, d, replace=False)) for d in deg] +
                         [np.zeros(0, dtype=np.int64)]).astype(np.int64)
    w = rng.random(ids.size) if rng.random() < 0.5 else None
    if ids.size and rng.random() < 0.6:
        ids[rng.integers(0, ids.size)] = rng.integers(-2, n + 2)
    if w is not None and ids.size and rng.random() < 0.3:
        w[rng.integers(0, ids.size)] = (np.nan, -1.0, np.inf)[rng.integers(0, 3)]
    return indptr, ids, w


def test_native_checks_match_the_numpy_oracle():
    if not _native.AVAILABLE:
        pytest.skip("native kernels not built")
    rng = np.random.default_rng(0)
    found = set()
    for _ in range(2000):
        indptr, ids, w = _random_entries(rng)
        m = ids.size
        base = int(rng.integers(0, m + 1))
        prev = None if base == 0 or rng.random() < 0.3 else int(rng.integers(-1, 30))
        starts = np.sort(rng.integers(base, m + 1, 3))
        ends = np.minimum(starts + rng.integers(0, 8, 3), m)
        held = (ids[base:], None if w is None else w[base:])
        got = entry_problems(indptr, *held, base=base, prev=prev, starts=starts, ends=ends)
        assert got == first_problems(indptr, *held, base, prev, starts, ends, indptr.size - 1)
        found.update(c for c in range(3) if got[c] >= 0)
    assert found == {0, 1, 2}                       # every kind of problem was met


@pytest.mark.parametrize("kernel", ["rowwise", "layerwise"])
def test_native_column_copy_is_frozen_in_place(kernel):
    """The kernels' uint32 copies of the column ids are built in their final frozen buffer, so
    the graph's cache keeps them as they are: peak memory one copy (4 bytes per edge, plus the
    layer-wise kernel's per-vertex tables), not two."""
    from spsample import native as _native

    g = random_graph(20_000, 400_000, seed=5, weighted=False)
    size = 4 * g.num_edges + (64 * g.num_nodes if kernel == "layerwise" else 0)

    def columns():
        if kernel == "rowwise":
            return _native.indices32(g)
        return g.internal_columns()[0]
    tracemalloc.start()
    try:
        first = columns()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.3 * size, (peak, size)
    assert isinstance(first.base, bytes) and not first.flags.writeable
    assert first is columns()                                 # cached, not copied again
    if kernel == "rowwise":
        np.testing.assert_array_equal(first, g.indices.astype(np.uint32))
