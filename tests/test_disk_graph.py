"""Topology out of core: ``spsample.load(path, mmap=True, memory_budget=...)``.

Every sampler (built-ins and the user compositions of test_engine) samples a graph kept on disk
with the in-memory graph's results, bit for bit, on contiguous files through the memory map and
through reads (ranges, blocks), and on chunked files, with budgets so small that rows span
several cache blocks or map windows and every block is read many times, and with the native
kernels off. Bad budgets, damaged and truncated files give typed errors on every path.
"""

import os

import numpy as np
import pytest

import spsample
from spsample.io import _disk_sampling
from spsample import native as _native
from spsample.io._disk_graph import DiskGraph
from test_engine import WeightedWalk, _unweighted_samplers, _weighted_samplers

from graphs import random_graph


def _same(a, b):
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


def _skewed_graph(weighted=False):
    """R-MAT 9 (hubs of degree ~100, so rows span the small blocks below), plus weights."""
    g = spsample.rmat(9, seed=2)
    if not weighted:
        return g
    w = np.random.default_rng(1).random(g.num_edges) + 0.05
    return spsample.Graph.from_csr(g.indptr, g.indices, weights=w)


_ACCESS = {"windowed": ("contiguous", True, True), "mapped": ("contiguous", True, False),
           "read": ("contiguous", False, False), "chunked": ("chunked", False, False)}


@pytest.fixture(scope="module", params=list(_ACCESS))
def files(request, tmp_path_factory):
    """``{weighted: (graph, path), "map": row-local hops read through the map, "windowed":
    a sampler that lowers whole runs in one windowed native call}``, saved with the layout of
    the parameter."""
    layout, mapped, windowed = _ACCESS[request.param]
    out = {"map": mapped, "windowed": windowed}
    for weighted in (False, True):
        g = _skewed_graph(weighted)
        path = tmp_path_factory.mktemp("disk") / f"g{int(weighted)}.h5"
        compression = None if layout == "contiguous" else "gzip"
        with pytest.MonkeyPatch.context() as mp:      # chunks of 32 entries: blocks span many
            mp.setattr(spsample.io._h5, "_CHUNK_BYTES", 256)
            spsample.save(spsample.Dataset(g), path, layout=layout, compression=compression)
        out[weighted] = (g, path)
    return out


@pytest.fixture(autouse=True)
def _access(request, monkeypatch):
    """Tests on ``files`` read the way its parameter says (others: through the map)."""
    if "files" in request.fixturenames:
        files = request.getfixturevalue("files")
        monkeypatch.setattr(_disk_sampling, "_MAP", files["map"])
        monkeypatch.setattr(_disk_sampling, "_WINDOWED", files["windowed"])


def _read_piecewise(dg, hops):
    """The latest bulk went through several map windows per hop, or read cache blocks."""
    stats = dg.last_stats
    if not (dg.mapped and _disk_sampling._MAP):
        return stats["cache_misses"] > 0
    return stats.get("windows", 0) > hops or stats.get("window_span", dg.num_edges) < \
        dg.num_edges // 2


def _budget(g, factor):
    """Row pointers + ``factor`` times the longest row (in entries of 16 bytes)."""
    return 8 * (g.num_nodes + 1) + factor * 16 * int(g.degree().max())


def _cases():
    g = _skewed_graph(True)
    plain = [(False, i) for i in range(len(_unweighted_samplers(g)))]
    weighted = [(True, i) for i, s in enumerate(_weighted_samplers(g))
                if not isinstance(s, WeightedWalk)]   # its bound reads the whole graph's weights
    return plain + weighted


@pytest.mark.parametrize("weighted,i", _cases())
def test_every_sampler_matches_memory(files, weighted, i):
    g, path = files[weighted]
    sampler = (_weighted_samplers(g) if weighted else _unweighted_samplers(g))[i]
    seeds = np.random.default_rng(i).permutation(g.num_nodes)[:150]
    ref = spsample.sample(g, seeds, sampler=sampler, batch_size=16, seed=5, epoch=1)
    dg = spsample.load(path, mmap=True, memory_budget=_budget(g, 80)).graph
    try:
        got = spsample.sample(dg, seeds, sampler=sampler, batch_size=16, seed=5, epoch=1)
        assert _same(got, ref)
        assert all(s.pins == 0 for s in dg.cache._slots.values())
    finally:
        dg.close()


@pytest.mark.parametrize("factor", [4, 7, 40])
def test_node_wise_with_tiny_budgets(files, factor):
    """Blocks of a few dozen entries: hubs span several, every block is read repeatedly."""
    for weighted, sampler in ((False, spsample.NodeWise([6, 4, 3])),
                              (True, spsample.NodeWise([5, 3], weighted=True)),
                              (False, spsample.LABOR([5, 3])),
                              (False, spsample.RandomWalk(6))):
        g, path = files[weighted]
        seeds = np.arange(g.num_nodes)
        ref = spsample.sample(g, seeds, sampler=sampler, batch_size=40, seed=9)
        with DiskGraph.open(path, _budget(g, factor)) as dg:
            got = spsample.sample(dg, seeds, sampler=sampler, batch_size=40, seed=9)
            assert _same(got, ref)
            assert _read_piecewise(dg, sampler.num_hops)


def test_numpy_path_matches(files):
    g, path = files[True]
    seeds = np.arange(0, g.num_nodes, 3)
    samplers = [spsample.NodeWise([4, 3], weighted=True), spsample.LABOR([3, 3]),
                spsample.LADIES([20, 20])]
    with DiskGraph.open(path, _budget(g, 80)) as dg, _native.disabled():
        for s in samplers:
            ref = spsample.sample(g, seeds, sampler=s, batch_size=20)
            assert _same(spsample.sample(dg, seeds, sampler=s, batch_size=20), ref)


def test_hop_modes_and_counters(files):
    g, path = files[False]
    with DiskGraph.open(path, _budget(g, 40)) as dg:
        spsample.sample(dg, np.arange(100), sampler=spsample.NodeWise([3, 2]), batch_size=10)
        assert dg.last_stats["modes"] == ["scan", "scan"]
        if files["windowed"]:
            assert dg.last_stats["window_span"] < g.num_edges
        elif files["map"]:
            assert dg.last_stats["mapped_hops"] == 2 and dg.last_stats["windows"] >= 2
        else:
            assert dg.last_stats["rows_read"] > 0 and dg.last_stats["entries_read"] > 0
        spsample.sample(dg, np.arange(100), sampler=spsample.LADIES([8, 8]), batch_size=10)
        assert dg.last_stats["modes"] == ["fetch", "fetch"]


def test_memory_plan_respects_the_budget(files):
    g, path = files[True]
    budget = _budget(g, 12)
    with DiskGraph.open(path, budget) as dg:
        block = dg.block_entries * dg.entry_bytes
        held = dg.indptr.nbytes + dg.cache_blocks * block + dg.max_degree * dg.entry_bytes
        assert held + dg.hop_bytes <= budget
        assert dg.cache_blocks >= 3


def test_repr_degree_and_ranges(files):
    g, path = files[True]
    with DiskGraph.open(path, "1MB") as dg:
        assert (dg.num_nodes, dg.num_edges, dg.is_weighted) == (g.num_nodes, g.num_edges, True)
        np.testing.assert_array_equal(dg.degree(), g.degree())
        np.testing.assert_array_equal(dg.indices[10:500], g.indices[10:500])
        np.testing.assert_array_equal(dg.weights[7:9], g.weights[7:9])
        assert "DiskGraph" in repr(dg)
        with pytest.raises(TypeError):
            dg.indices[[1, 2]]


def test_fastgcn_column_weights_are_the_serial_sums(files):
    from spsample.samplers._layerwise import column_weights
    g, path = files[True]
    with DiskGraph.open(path, _budget(g, 6)) as dg:
        q, cum = dg.column_weights()
    q0, cum0 = column_weights(g)
    np.testing.assert_array_equal(q, q0)
    np.testing.assert_array_equal(cum, cum0)


def test_loaded_dataset_keeps_labels_and_splits(tmp_path):
    ds = spsample.io.load_cora()
    path = tmp_path / "cora.h5"
    spsample.save(ds, path, layout="contiguous", compression=None)
    on_disk = spsample.load(path, mmap=True, memory_budget="2MB")
    assert isinstance(on_disk.graph, DiskGraph)
    assert on_disk.features is None
    np.testing.assert_array_equal(on_disk.labels, ds.labels)
    np.testing.assert_array_equal(on_disk.train_idx, ds.train_idx)
    on_disk.graph.close()


# ---------------------------------------------------------------------------- bad input
def test_budget_arguments(files):
    g, path = files[False]
    for bad in ("lots", "", -1, 0):
        with pytest.raises(spsample.ArgumentError, match="memory_budget"):
            spsample.load(path, mmap=True, memory_budget=bad)
    for bad in (1.5e9, True, None.__class__):
        with pytest.raises(spsample.ArgumentTypeError, match="memory_budget"):
            spsample.load(path, mmap=True, memory_budget=bad)
    with pytest.raises(spsample.ArgumentError, match="memory_budget.*mmap=True"):
        spsample.load(path, memory_budget="1GB")
    with pytest.raises(spsample.ArgumentTypeError, match="mmap"):
        spsample.load(path, mmap="yes")


def test_budget_smaller_than_the_row_pointers_or_a_row(files):
    g, path = files[False]
    with pytest.raises(spsample.ArgumentError, match="memory_budget.*row pointers"):
        spsample.load(path, mmap=True, memory_budget=100)
    with pytest.raises(spsample.ArgumentError, match="memory_budget.*longest row"):
        spsample.load(path, mmap=True, memory_budget=8 * (g.num_nodes + 1 + g.degree().max()))


def test_hop_rows_beyond_the_budget(files):
    g, path = files[False]
    with DiskGraph.open(path, _budget(g, 4)) as dg:
        with pytest.raises(spsample.ResourceLimitError, match="memory_budget"):
            spsample.sample(dg, np.arange(g.num_nodes), sampler=spsample.LADIES([50, 50]),
                            batch_size=64)


def _rewrite(path, name, edit):
    import h5py
    with h5py.File(path, "r+") as f:
        data = f[name][()]
        edit(data)
        f[name][...] = data


@pytest.mark.parametrize("mapped", [True, False])
def test_damaged_blocks_are_refused(tmp_path, monkeypatch, mapped):
    monkeypatch.setattr(_disk_sampling, "_MAP", mapped)
    g = _skewed_graph(True)
    cases = {
        "graph/indices": (lambda a: a.__setitem__(500, g.num_nodes + 3), "column id"),
        "graph/weights": (lambda a: a.__setitem__(7, -1.0), "finite and non-negative"),
    }
    row = int(np.flatnonzero(g.degree() > 3)[0])
    s = int(g.indptr[row])
    cases["unsorted"] = (lambda a: a.__setitem__(slice(s, s + 2), a[s:s + 2][::-1].copy()),
                         "not sorted")
    for name, (edit, message) in cases.items():
        path = tmp_path / f"{name.replace('/', '_')}.h5"
        spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
        _rewrite(path, "graph/indices" if name == "unsorted" else name, edit)
        with DiskGraph.open(path, _budget(g, 6)) as dg:
            with pytest.raises(spsample.DatasetError, match=message):
                spsample.sample(dg, np.arange(g.num_nodes), sampler=spsample.NodeWise([-1]),
                                batch_size=64)
            assert all(slot.pins == 0 for slot in dg.cache._slots.values())


def test_bad_row_pointers_are_refused_at_open(tmp_path):
    g = _skewed_graph()
    path = tmp_path / "bad.h5"
    spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
    _rewrite(path, "graph/indptr", lambda a: a.__setitem__(5, a[4] - 1))
    with pytest.raises(spsample.DatasetError, match="non-decreasing"):
        spsample.load(path, mmap=True)


@pytest.mark.parametrize("mapped", [True, False])
def test_file_truncated_in_the_middle_of_an_epoch(tmp_path, monkeypatch, mapped):
    monkeypatch.setattr(_disk_sampling, "_MAP", mapped)
    g = _skewed_graph()
    path = tmp_path / "t.h5"
    spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
    dg = DiskGraph.open(path, _budget(g, 6))
    seeds = np.arange(g.num_nodes)
    spsample.sample(dg, seeds[:64], sampler=spsample.NodeWise([3, 2]), batch_size=16)
    os.truncate(path, os.path.getsize(path) - g.num_edges * 4)     # half of /graph/indices
    with pytest.raises(spsample.DatasetError, match="truncated"):
        for epoch in range(3):
            spsample.sample(dg, seeds, sampler=spsample.NodeWise([-1, -1]), batch_size=64,
                            epoch=epoch)
    assert all(slot.pins == 0 for slot in dg.cache._slots.values())
    dg.close()
    with pytest.raises(spsample.DatasetError, match="truncated"):
        spsample.load(path, mmap=True)


def test_stream_stopped_early_releases_its_blocks(files):
    g, path = files[False]
    with DiskGraph.open(path, _budget(g, 6)) as dg:
        for i, _ in enumerate(dg.cache.stream(range(dg.cache.num_blocks))):
            if i == 2:
                break
        assert all(slot.pins == 0 for slot in dg.cache._slots.values())
        np.testing.assert_array_equal(dg.indices[0:g.num_edges], g.indices)


def test_random_graph_with_isolated_vertices(tmp_path):
    g = random_graph(300, 900, seed=4)
    path = tmp_path / "r.h5"
    spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
    seeds = np.arange(300)
    with DiskGraph.open(path, _budget(g, 5)) as dg:
        for s in (spsample.NodeWise([2, -1]), spsample.NodeWise([3, 3], replace=True)):
            ref = spsample.sample(g, seeds, sampler=s, batch_size=7)
            assert _same(spsample.sample(dg, seeds, sampler=s, batch_size=7), ref)


@pytest.mark.parametrize("share", [0.0, 10.0])
def test_direct_range_reads_match(files, share, monkeypatch):
    """Row-local hops read range by range (every hop at share 10, none at 0): same bits."""
    monkeypatch.setattr(_disk_sampling, "_DIRECT_SHARE", share)
    monkeypatch.setattr(_disk_sampling, "_MAP", False)
    for weighted, sampler in ((False, spsample.NodeWise([6, 4])),
                              (True, spsample.NodeWise([5, 3], weighted=True)),
                              (False, spsample.LABOR([4, 3])), (False, spsample.RandomWalk(5))):
        g, path = files[weighted]
        seeds = np.arange(0, g.num_nodes, 2)
        ref = spsample.sample(g, seeds, sampler=sampler, batch_size=30, seed=4)
        with DiskGraph.open(path, _budget(g, 7)) as dg:
            got = spsample.sample(dg, seeds, sampler=sampler, batch_size=30, seed=4)
            assert _same(got, ref)
            direct = dg.last_stats.get("direct_hops", 0)
            assert direct == (sampler.num_hops if share and dg.direct else 0)


def test_direct_reads_refuse_damage(tmp_path, monkeypatch):
    monkeypatch.setattr(_disk_sampling, "_DIRECT_SHARE", 10.0)
    monkeypatch.setattr(_disk_sampling, "_MAP", False)
    g = _skewed_graph()
    path = tmp_path / "d.h5"
    spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
    _rewrite(path, "graph/indices", lambda a: a.__setitem__(500, g.num_nodes + 3))
    with DiskGraph.open(path, _budget(g, 6)) as dg:
        with pytest.raises(spsample.DatasetError, match="column id"):
            spsample.sample(dg, np.arange(g.num_nodes), sampler=spsample.NodeWise([-1]),
                            batch_size=64)
    spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
    dg = DiskGraph.open(path, _budget(g, 6))
    os.truncate(path, os.path.getsize(path) - g.num_edges * 4)
    with pytest.raises(spsample.DatasetError, match="truncated"):
        spsample.sample(dg, np.arange(g.num_nodes), sampler=spsample.NodeWise([2]),
                        batch_size=64)
    dg.close()


# ---------------------------------------------------------------------------- the memory map
def _mapped_rss(path):
    """Resident bytes of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:
                inside = len(head) >= 6 and head[-1] == str(path)
            elif inside and head and head[0] == "Rss:":
                total += int(head[1]) * 1024
    return total


def _mapped_file(tmp_path, weighted=False):
    g = _skewed_graph(weighted)
    path = tmp_path / "m.h5"
    spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
    return g, path


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc/self/smaps")
@pytest.mark.parametrize("windowed", [True, False])
def test_map_windows_are_bounded_and_released(tmp_path, monkeypatch, windowed):
    monkeypatch.setattr(_disk_sampling, "_WINDOWED", windowed)
    g, path = _mapped_file(tmp_path, weighted=True)
    seeds = np.arange(g.num_nodes)
    with DiskGraph.open(path, _budget(g, 6)) as dg:
        assert dg.mapped
        m = dg.map
        start, end = dg.indptr[:-1], dg.indptr[1:]
        for threads in (1, 2):
            order, bounds, lo, hi = m.windows(start, end, threads)
            assert np.array_equal(np.sort(order), np.arange(g.num_nodes))
            assert bounds[-1] == order.size
            assert (hi - lo).max() <= m.span // threads + dg.max_degree + 2 * m.region
            for i in range(lo.size):
                rows = order[bounds[i]:bounds[i + 1]]
                assert lo[i] <= start[rows].min() and end[rows].max() <= hi[i]
        got = spsample.sample(dg, seeds, sampler=spsample.NodeWise([-1, 4], weighted=True),
                              batch_size=64)
        assert _read_piecewise(dg, 2)
        assert _mapped_rss(path) == 0                     # every window's pages dropped
    ref = spsample.sample(g, seeds, sampler=spsample.NodeWise([-1, 4], weighted=True),
                          batch_size=64)
    assert _same(got, ref)


def test_regions_are_checked_once(tmp_path):
    g, path = _mapped_file(tmp_path)
    seeds = np.arange(0, g.num_nodes, 5)
    with DiskGraph.open(path, _budget(g, 6)) as dg:
        os.posix_fadvise(dg._fd, 0, 0, os.POSIX_FADV_DONTNEED)    # cold: the checks read it
        spsample.sample(dg, seeds, sampler=spsample.NodeWise([3, 3]), batch_size=16)
        first = dg.map.stats["regions_checked"]
        assert 0 < first <= dg.map.checked.size and first == dg.map.checked.sum()
        got = spsample.sample(dg, seeds, sampler=spsample.NodeWise([3, 3]), batch_size=16)
        assert dg.map.stats["regions_checked"] == first
    assert _same(got, spsample.sample(g, seeds, sampler=spsample.NodeWise([3, 3]),
                                      batch_size=16))


def test_a_file_changed_under_the_map_is_refused(tmp_path):
    """Checked regions are trusted, but the sampled ids are checked again every hop."""
    g, path = _mapped_file(tmp_path)
    with DiskGraph.open(path, _budget(g, 6)) as dg:
        spsample.sample(dg, np.arange(g.num_nodes), sampler=spsample.NodeWise([-1]),
                        batch_size=64)
        assert dg.map.checked.all()
        with open(path, "r+b") as f:                   # h5py holds the file: write in place
            f.seek(dg._sources["indices"].offset + 8 * 500)
            f.write(np.int64(g.num_nodes + 3).tobytes())
        with pytest.raises(spsample.DatasetError, match="changed while it was sampled"):
            spsample.sample(dg, np.arange(g.num_nodes), sampler=spsample.NodeWise([-1]),
                            batch_size=64)
        assert _mapped_rss(path) == 0


def test_native_windows_are_checked():
    """select_requests(windows=...) refuses windows that do not describe the requests."""
    if not _native.AVAILABLE:
        pytest.skip("native kernels not built")
    from spsample._native_kernels import select_requests
    g = _skewed_graph()
    graph = (g.indptr, g.indices, None, None)
    hop = dict(program=[], select=0, fanout=2, fanout_vec=-1, bound=0.0, key=0, aux=None)
    r = np.arange(4, dtype=np.int64)
    batch = np.zeros(4, dtype=np.int64)
    good = (r[::-1].copy(), np.array([2, 4]), None, np.zeros((2, 0), dtype=np.int64))
    count, _, _ = select_requests(graph, hop, [], [], g.num_nodes, r, r, None, batch, 1, 0, 0,
                                  1 << 30, 1, good)
    np.testing.assert_array_equal(count, np.minimum(2, g.degree()[:4])[::-1])
    for bad in ((np.array([0, 0, 1, 2]),) + good[1:], (r, np.array([3]), None, good[3]),
                (r, np.array([3, 2, 4]), None, good[3])):
        with pytest.raises(ValueError, match="windows"):
            select_requests(graph, hop, [], [], g.num_nodes, r, r, None, batch, 1, 0, 0,
                            1 << 30, 1, bad)


def test_native_windowed_run_is_checked(tmp_path):
    """run_rowwise_windowed refuses a graph whose arrays are not inside the map it releases."""
    if not _native.AVAILABLE:
        pytest.skip("native kernels not built")
    from spsample.io._disk_map import RELEASE_BLOCK
    from spsample._native_kernels import run_rowwise_windowed
    g, path = _mapped_file(tmp_path)
    hop = dict(frontier=(0, 0, -1, -1, 0), aux=None, aux_graph=0, graph=0, program=[],
               select=0, fanout=2, fanout_vec=-1, bound=0.0, dedup=True, keep_row_ids=False,
               key=0, hop_word=1, rng_key=(0, 0), time=-1, batch_time=-1)
    seeds, sizes, ids = np.arange(4), np.array([4]), np.array([0])
    with DiskGraph.open(path, _budget(g, 6)) as dg:
        view, (idx, _) = dg.map.view(), dg.map.arrays()
        args = ([hop], [], [], 0, 0, 0, 1 << 30, 1, 100)
        out = run_rowwise_windowed([(g.indptr, idx, None, None)], seeds, sizes, ids, *args,
                                   view, RELEASE_BLOCK)
        assert out is not None
        with pytest.raises(ValueError, match="inside the map"):
            run_rowwise_windowed([(g.indptr, g.indices, None, None)], seeds, sizes, ids,
                                 *args, view, RELEASE_BLOCK)
        with pytest.raises(ValueError, match="whole pages"):
            run_rowwise_windowed([(g.indptr, idx, None, None)], seeds, sizes, ids, *args,
                                 view, 100)


@pytest.mark.parametrize("span", [1, 7, 1000, 10**9])
def test_native_windowed_run_matches_run_rowwise(tmp_path, span):
    """Windows of one entry (more windows than rows: numbered) up to one window: the bits of
    the in-memory row-wise kernel, hop after hop."""
    if not _native.AVAILABLE:
        pytest.skip("native kernels not built")
    from spsample.io._disk_map import RELEASE_BLOCK
    from spsample._native_kernels import run_rowwise, run_rowwise_windowed
    g, path = _mapped_file(tmp_path)
    hops = [dict(frontier=(0, h - 1, -1, -1, h - 1), aux=None, aux_graph=0, graph=0,
                 program=[], select=0, fanout=3, fanout_vec=-1, bound=0.0, dedup=True,
                 keep_row_ids=False, key=0, hop_word=h, rng_key=(7, h), time=-1,
                 batch_time=-1) for h in (1, 2)]
    seeds, sizes, ids = np.array([3, 100, 7, 400, 9]), np.array([2, 3]), np.array([5, 6])
    args = (hops, [], [], 11, 12, 0, 1 << 30, 2)
    ref = run_rowwise([(g.indptr, g.indices, None, None)], seeds, sizes, ids, *args)
    with DiskGraph.open(path, "1MB") as dg:
        view, (idx, _) = dg.map.view(), dg.map.arrays()
        got = run_rowwise_windowed([(g.indptr, idx, None, None)], seeds, sizes, ids, *args,
                                   span, view, RELEASE_BLOCK)
        assert _mapped_rss(path) == 0 or not os.path.exists("/proc/self/smaps")
    flat = lambda out: [np.asarray(a) for a in out[:3]] + [np.asarray(a) for h in out[3]
                                                           for a in h if a is not None]
    assert all(np.array_equal(a, b) for a, b in zip(flat(got), flat(ref), strict=True))
