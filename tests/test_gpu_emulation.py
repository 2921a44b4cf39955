"""The GPU kernels (native/device/rowwise.cuh, layerwise.cuh), run on the host by the emulator:
the same bits as the CPU engine and the NumPy evaluation of the constructors (the oracle), for
every built-in sampler -- NodeWise uniform / weighted / with replacement / per-vertex fanouts,
LABOR, RandomWalk, node2vec, LADIES (weighted and unweighted), FastGCN, user compositions -- on
random, weighted (zero weights included), skewed (a hub of degree 10**5), isolated-vertex and
self-loop graphs, with the launches' (block, thread) indices in shuffled order and from 2
threads (and in order from 1 thread: the same bits).

What this cannot show: that a GPU runs the kernels as the emulator does (the launch itself,
CuPy's array calls). ``tests/test_gpu_cuda.py`` (marked ``gpu``) checks that on a machine
with a GPU; ``tests/test_cuda_compile.py`` compiles the kernels with nvcc and NVRTC here.
"""

import functools
import sys

import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample.gpu import _device as _gpu
from spsample._errors import ArgumentError, MissingDependencyError, SamplerError

from graphs import random_graph
from test_engine import (Composed, OverBound, ReadsData, UnloweredValues, WeightedWalk,
                         _loops_graph, _unweighted_samplers, _weighted_samplers)

pytestmark = pytest.mark.skipif(not _native.AVAILABLE,
                                reason=f"native kernels not built: {_native.IMPORT_ERROR}")


def _same(a, b):
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


def emulated_cpu_numpy(g, seeds, sampler, *, batch_size=16, order_seed=0, threads=2, **kw):
    """Emulated GPU kernels == CPU engine == NumPy oracle; returns the emulated bulk."""
    kw = dict(sampler=sampler, batch_size=batch_size, **kw)
    dev = _gpu.EmulatedDevice(threads=threads, order_seed=order_seed)
    gpu = spsample.sample(g, seeds, device=dev, **kw)
    assert gpu.path == "emulated"
    cpu = spsample.sample(g, seeds, **kw)
    assert cpu.path == "native"
    assert _same(gpu, cpu), f"emulated GPU kernels != CPU engine for {sampler!r}"
    with _native.disabled():
        oracle = spsample.sample(g, seeds, **kw)
    assert _same(gpu, oracle), f"emulated GPU kernels != NumPy oracle for {sampler!r}"
    assert gpu.num_edges > 0
    return gpu


@functools.lru_cache(maxsize=2)
def _hub_graph(weighted=True):
    """Vertex 0 aggregates from 10**5 vertices (row 0 has degree 10**5, and 0 is in every row
    of the hub's neighbours: a column hub too), a few random edges around; weighted unless
    ``weighted`` is False."""
    n = 100_001
    rng = np.random.default_rng(3)
    hub = np.arange(1, n)
    src = np.concatenate([hub, np.zeros(n - 1, dtype=np.int64), rng.integers(0, n, 3000)])
    dst = np.concatenate([np.zeros(n - 1, dtype=np.int64), hub, rng.integers(0, n, 3000)])
    w = rng.random(src.size) + 0.05 if weighted else None
    return spsample.Graph.from_edge_index(src, dst, num_nodes=n, weights=w)


_RANDOM = random_graph(300, 2400, seed=11)
_WEIGHTED = random_graph(300, 2400, seed=12, weighted=True, zero_weight_fraction=0.2)
_UNWEIGHTED_CASES = _unweighted_samplers(_RANDOM)
_WEIGHTED_CASES = _weighted_samplers(_WEIGHTED)
_LAYERWISE_CASES = [spsample.LADIES([-1, 4]), spsample.LADIES([60, 200]),
                    spsample.LADIES([3, 3, 3, 3]), spsample.FastGCN([1, 100])]


@pytest.mark.parametrize("i", range(len(_UNWEIGHTED_CASES)),
                         ids=[type(s).__name__ for s in _UNWEIGHTED_CASES])
def test_random_graph(i):
    seeds = np.random.default_rng(i).permutation(300)[:70]
    emulated_cpu_numpy(_RANDOM, seeds, _UNWEIGHTED_CASES[i], seed=5 + i, epoch=2, order_seed=i)


@pytest.mark.parametrize("i", range(len(_WEIGHTED_CASES)),
                         ids=[type(s).__name__ for s in _WEIGHTED_CASES])
def test_weighted_graph(i):
    seeds = np.random.default_rng(100 + i).permutation(300)[:50]
    emulated_cpu_numpy(_WEIGHTED, seeds, _WEIGHTED_CASES[i], seed=9, epoch=1, order_seed=100 + i)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("i", range(len(_LAYERWISE_CASES)), ids=range(len(_LAYERWISE_CASES)))
def test_layerwise_fanouts(i, weighted):
    """All columns (-1), more than the candidates (200), many small layers, one draw."""
    g = _WEIGHTED if weighted else _RANDOM
    seeds = np.random.default_rng(200 + i).permutation(300)[:60]
    emulated_cpu_numpy(g, seeds, _LAYERWISE_CASES[i], seed=2**40 + i, epoch=3, order_seed=i)


_HUB_SAMPLERS = [
    lambda g: spsample.NodeWise([40, 3]),           # Floyd hashed (d > 1024, s > 32), heapsort
    lambda g: spsample.NodeWise([-1, 2]),           # the hub row whole (10**5 edges), 10**5 rows
    lambda g: spsample.NodeWise([5, 2], replace=True),
    lambda g: spsample.NodeWise([40, 2], weighted=True),
    lambda g: spsample.NodeWise([3, 2], weighted=True, replace=True),
    lambda g: spsample.LABOR([30, 4]),
    lambda g: spsample.RandomWalk(4),
    lambda g: spsample.RandomWalk(3, p=0.5, q=2.0),
    lambda g: WeightedWalk(3, p=0.5, q=2.0),
    lambda g: spsample.LADIES([50, 20]),            # weighted: keys over ~10**5 candidates
    lambda g: spsample.LADIES([-1, 5]),             # every column of the hub row
    lambda g: spsample.FastGCN([30, 10]),
]
_UNWEIGHTED_HUB_SAMPLERS = [
    lambda g: spsample.LADIES([40, 10]),            # draws of entries, counts
    lambda g: spsample.LADIES([-1, 3]),
    lambda g: spsample.FastGCN([30, 10]),
    lambda g: spsample.NodeWise([-1, 2]),
    lambda g: spsample.LABOR([30, 4]),
]
_HUB_CASES = [(True, m) for m in _HUB_SAMPLERS] + [(False, m) for m in _UNWEIGHTED_HUB_SAMPLERS]


@pytest.mark.parametrize("weighted, make", _HUB_CASES, ids=range(len(_HUB_CASES)))
def test_hub_of_degree_1e5(weighted, make):
    g = _hub_graph(weighted)
    seeds = np.array([0, 5, 77, 1000, 99_999, 4, 8])
    assert int(np.diff(g.indptr)[0]) == 10**5
    out = emulated_cpu_numpy(g, seeds, make(g), batch_size=4, seed=3, order_seed=7)
    assert 0 in out[0].n_id.tolist()


@pytest.mark.parametrize("make", [
    lambda g: spsample.NodeWise([3, 2]), lambda g: spsample.NodeWise([-1, -1]),
    lambda g: spsample.NodeWise([2, 2], weighted=True), lambda g: spsample.LABOR([2, 2]),
    lambda g: spsample.RandomWalk(5), lambda g: spsample.RandomWalk(4, p=2.0, q=0.5),
    lambda g: spsample.NodeWise([3, 2], replace=True), lambda g: Composed([2, 2], g),
    lambda g: spsample.LADIES([4, 3]), lambda g: spsample.LADIES([-1, 2]),
    lambda g: spsample.FastGCN([5, 5])],
    ids=range(11))
def test_isolated_vertices_and_self_loops(make):
    g = _loops_graph()
    seeds = np.arange(40)[::-1]                     # isolated rows 0..9 among the seeds
    emulated_cpu_numpy(g, seeds, make(g), batch_size=7, seed=1, order_seed=3)


@pytest.mark.parametrize("make, g", [
    (lambda: spsample.NodeWise([6, 4]), _RANDOM), (lambda: spsample.LABOR([5, 3]), _RANDOM),
    (lambda: spsample.RandomWalk(5, p=0.5, q=2.0), _RANDOM),
    (lambda: spsample.LADIES([8, 8]), _RANDOM), (lambda: spsample.LADIES([8, 8]), _WEIGHTED),
    (lambda: spsample.FastGCN([8, 8]), _WEIGHTED)], ids=range(6))
def test_index_order_and_threads_do_not_change_results(make, g):
    """In order from 1 thread, shuffled from 2 and 3 threads, other launch shapes: same bits."""
    seeds = np.random.default_rng(4).permutation(300)[:90]
    kw = dict(sampler=make(), batch_size=20, seed=4)
    ref = spsample.sample(g, seeds, device=_gpu.EmulatedDevice(threads=1, order_seed=None), **kw)
    for dev in (_gpu.EmulatedDevice(threads=2, order_seed=1),
                _gpu.EmulatedDevice(threads=3, order_seed=2, grid=7, block=3),
                _gpu.EmulatedDevice(threads=2, order_seed=3, grid=1, block=1)):
        assert _same(spsample.sample(g, seeds, device=dev, **kw), ref)


class RecordingDevice(_gpu.EmulatedDevice):
    """The emulator, recording the kernels it launches."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.launched = []

    def launch(self, kernel, n, args):
        self.launched.append(kernel)
        super().launch(kernel, n, args)


@pytest.mark.parametrize("make", [lambda g: spsample.NodeWise([-1, 2]),
                                  lambda g: spsample.LABOR([30, 4]),
                                  lambda g: spsample.NodeWise([-1, 2], replace=True)],
                         ids=["all", "labor", "all-replace"])
def test_long_rows_run_as_chunks_with_the_same_bits(make):
    """The hub row (degree 10**5) runs as 128-entry chunks above the long-row threshold and in
    one thread below it (threshold 10**6): the same bits as the CPU either way."""
    g = _hub_graph(False)
    seeds = np.array([0, 5, 77, 1000, 99_999, 4, 8])
    kw = dict(sampler=make(g), batch_size=4, seed=3)
    cpu = spsample.sample(g, seeds, **kw)
    for long_row, chunked in ((512, True), (10**6, False)):
        dev = RecordingDevice(threads=2, order_seed=5, long_row=long_row)
        assert _same(spsample.sample(g, seeds, device=dev, **kw), cpu)
        assert ("select_chunks" in dev.launched) == chunked


@pytest.mark.parametrize("long_row", [0, 2, 7])
@pytest.mark.parametrize("make", [
    lambda: spsample.NodeWise([-1, 3]), lambda: spsample.NodeWise([40, 2]),
    lambda: spsample.LABOR([3, 2]), lambda: spsample.LABOR([-1, 2]),
    lambda: spsample.NodeWise([-1, 2], replace=True), lambda: spsample.NodeWise([3, 2])],
    ids=range(6))
def test_any_long_row_threshold_gives_the_same_bits(make, long_row):
    """Every row of the random graph chunked (threshold 0), most of them (2), some (7)."""
    seeds = np.random.default_rng(long_row).permutation(300)[:60]
    kw = dict(sampler=make(), batch_size=16, seed=11)
    dev = RecordingDevice(threads=2, order_seed=long_row, long_row=long_row)
    assert _same(spsample.sample(_RANDOM, seeds, device=dev, **kw),
                 spsample.sample(_RANDOM, seeds, **kw))
    assert long_row > 0 or "select_chunks" in dev.launched


def test_emulator_runs_every_index_once_in_a_shuffled_order():
    """The emulator calls the kernel for every (block, thread) of the launch: a grid-stride
    loop over n items with grid * block << n threads writes every item exactly once."""
    n = 1000
    items = np.arange(n, dtype=np.int64)
    off = np.array([0, n], dtype=np.int64)
    out = np.full(n, -1, dtype=np.int64)
    args = np.array([n, 1, 0, off.ctypes.data, np.zeros(1, np.int64).ctypes.data, items.ctypes.data,
                     off.ctypes.data, 0, 0, 0, out.ctypes.data, 0, 0, 0], dtype=np.int64)
    lo = np.zeros(1, np.int64)
    args[4] = lo.ctypes.data
    _native.kernels.emulate("frontier", 3, 7, args, 2, 12)
    assert np.array_equal(out, items)
    assert set(_native.kernels.emulated_kernels()) >= {"frontier", "select", "assign"}
    with pytest.raises(ValueError, match="no GPU kernel"):
        _native.kernels.emulate("nope", 1, 1, args, 1, 0)


def test_dedup_table_keeps_first_occurrences_under_races():
    """Many items of few distinct vertices, inserted by 3 threads in a shuffled order: local ids
    in first-occurrence order, as a sequential pass gives them."""
    rng = np.random.default_rng(0)
    k = 3
    held = [rng.choice(50, 5, replace=False) for _ in range(k)]
    items = [rng.integers(0, 50, 400) for _ in range(k)]
    nid = np.concatenate(held).astype(np.int64)
    drv = _gpu.RowWiseDriver(dict(graphs=[], f64=[], i64=[], hops=[]),
                             _gpu.EmulatedDevice(threads=3, order_seed=5, grid=4, block=8),
                             np.array([5, 5, 5]), np.arange(k), (1, 2), 0)
    drv.nid, drv.nid_off = nid, np.array([0, 5, 10, 15])
    local = drv._append_unique(np.concatenate(items).astype(np.int64),
                               np.array([0, 400, 800, 1200]))
    for j in range(k):
        order = {int(v): i for i, v in enumerate(held[j])}
        expect = []
        for v in items[j]:
            order.setdefault(int(v), len(order))
            expect.append(order[int(v)])
        assert np.array_equal(local[400 * j:400 * (j + 1)], expect)
        assert np.array_equal(drv.nid[drv.nid_off[j]:drv.nid_off[j + 1]], list(order))


def test_rejection_bound_exceeded_is_a_typed_error():
    """A walk that returns (value 1 / p = 2) above the claimed bound 1: the same error as on
    the CPU, for the same seed."""
    und = [(0, 1), (1, 2), (1, 3)]
    g = spsample.Graph.from_edge_index([a for a, b in und] + [b for a, b in und],
                                       [b for a, b in und] + [a for a, b in und], num_nodes=4)
    for seed in range(20):
        kw = dict(sampler=OverBound(3, p=0.5), batch_size=1, seed=seed)
        try:
            spsample.sample(g, [0], **kw)
        except SamplerError:
            with pytest.raises(SamplerError, match="bound"):
                spsample.sample(g, [0], device="emulated", **kw)
            return
        emulated = spsample.sample(g, [0], device="emulated", **kw)
        assert emulated[0].equals(spsample.sample(g, [0], **kw)[0])
    pytest.fail("no seed reached the bound")


@pytest.mark.parametrize("sampler", [ReadsData([3, 2]), UnloweredValues([5])],
                         ids=["ReadsData", "UnloweredValues"])
def test_a_sampler_that_does_not_lower_names_the_device_argument(sampler):
    with pytest.raises(ArgumentError, match="'device'.*lower onto the native engine"):
        spsample.sample(_RANDOM, np.arange(10), sampler=sampler, batch_size=5,
                        device="emulated")


def test_bad_long_row_and_layerwise_key_range_are_typed_errors():
    from spsample.gpu._layers import check_key_range
    with pytest.raises(ArgumentError, match="'long_row'"):
        _gpu.EmulatedDevice(long_row=-1)
    check_key_range(2**31 - 1, 2**32 - 2)
    with pytest.raises(ArgumentError, match="'device'.*minibatches"):
        check_key_range(2**32, 2**32 - 2)


@pytest.mark.parametrize("device", ["gpu", "cuda:0", 3])
def test_bad_device_is_a_typed_error(device):
    with pytest.raises(ArgumentError, match="'device'"):
        spsample.sample(_RANDOM, np.arange(10), sampler=spsample.NodeWise([2]), batch_size=5,
                        device=device)


def test_cuda_without_cupy_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)           # import cupy fails
    with pytest.raises(MissingDependencyError, match="cupy-cuda13x"):
        spsample.sample(_RANDOM, np.arange(10), sampler=spsample.NodeWise([2]), batch_size=5,
                        device="cuda")


def test_det_log_of_subnormals_and_zero_matches_numpy():
    """det_log's frexp is done on the bits (the GPU has no std::frexp): subnormals included."""
    from spsample import _rng
    x = np.concatenate([[5e-324, 1e-310, 2.2250738585072014e-308, 1.0, 0.5, 0.75],
                        np.geomspace(1e-320, 1e-300, 50)])
    assert np.array_equal(_native.kernels.det_log(x), _rng.det_log(x))
