"""The CuPy backend's glue without a GPU: ``device="cuda"`` over a stand-in for CuPy whose
arrays are NumPy memory (``.data.ptr`` = a host address), whose ``RawModule`` compiles the
code it is given with the real NVRTC (the options checked) and whose kernels run on the host
emulator. So everything of ``CupyDevice`` but CuPy itself runs here: the source and options
handed to ``RawModule``, the kernels' names, the grid of each launch, the argument arrays, the
uploads (cached for a graph's read-only arrays) and downloads; the result equals the CPU's.
"""

import types

import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample.gpu import _cuda_source, _device as _gpu

from graphs import random_graph
from test_nccl_comm import DevArray, _fake_cupy

pytestmark = pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built")


class FakeRawModule:
    compiled = []
    launches = []

    checked = set()     # (code, options) NVRTC compiled in this process (5 s each)

    def __init__(self, code, options):
        assert "--fmad=false" in options and "-std=c++17" in options
        if _cuda_source.find_nvrtc() and (code, options) not in FakeRawModule.checked:
            _cuda_source.nvrtc_compile(code, arch="sm_90", options=options)
            FakeRawModule.checked.add((code, options))
        FakeRawModule.compiled.append(code)

    def get_function(self, name):
        assert name.startswith("spsample_k_") and name[11:] in _native.kernels.emulated_kernels()

        def launch(grid, block, args):
            (a,), = [args]
            assert isinstance(a, DevArray) and a.dtype == np.int64
            assert len(grid) == 1 and block == (256,) and 1 <= grid[0] <= 65535 * 32
            FakeRawModule.launches.append(name)
            _native.kernels.emulate(name[11:], grid[0], block[0], np.asarray(a), 2,
                                     len(self.launches))
        return launch


def _standin():
    cp = _fake_cupy()
    wrap = lambda f: (lambda *a, **k: f(*a, **k).view(DevArray))  # noqa: E731
    cp.RawModule = FakeRawModule
    for name in ("arange", "concatenate", "full", "ones", "searchsorted", "unique"):
        setattr(cp, name, wrap(getattr(np, name)))
    cp.argsort = wrap(lambda a: np.argsort(a, kind="stable"))    # CuPy's sort is stable
    cp.nonzero = lambda a: tuple(x.view(DevArray) for x in np.nonzero(a))
    cp.cumsum = np.cumsum
    cp.uint32, cp.uint64, cp.float64 = np.uint32, np.uint64, np.float64
    cp.cuda.memory = types.SimpleNamespace(OutOfMemoryError=MemoryError)
    return cp


@pytest.fixture
def standin(monkeypatch):
    cp = _standin()
    monkeypatch.setattr(_gpu, "_import_cupy", lambda: cp)
    monkeypatch.setattr(_gpu.CupyDevice, "_module", None)
    monkeypatch.setattr(_gpu.CupyDevice, "_uploads", {})
    FakeRawModule.compiled, FakeRawModule.launches = [], []
    return cp


@pytest.mark.parametrize("make, weighted", [
    (lambda: spsample.NodeWise([5, 3]), True), (lambda: spsample.LABOR([4, 2]), True),
    (lambda: spsample.NodeWise([3, 2], weighted=True), True),
    (lambda: spsample.RandomWalk(3, p=0.5, q=2.0), True), (lambda: spsample.LADIES([8, 5]), True),
    (lambda: spsample.LADIES([8, 5]), False), (lambda: spsample.FastGCN([8, 5]), True)],
    ids=range(7))
def test_cuda_path_over_a_cupy_standin_equals_the_cpu(standin, make, weighted):
    g = random_graph(400, 3000, seed=6, weighted=weighted)
    seeds = np.random.default_rng(2).permutation(400)[:90]
    kw = dict(sampler=make(), batch_size=25, seed=8, epoch=3)
    gpu = spsample.sample(g, seeds, device="cuda", **kw)
    assert gpu.path == "cuda" and isinstance(gpu.n_id, DevArray)
    cpu = spsample.sample(g, seeds, **kw)
    assert len(gpu) == len(cpu) and all(a.equals(b) for a, b in zip(gpu, cpu))
    assert len(FakeRawModule.compiled) == 1                      # compiled once per process
    assert FakeRawModule.compiled[0] == _cuda_source.kernel_source()
    layerwise = isinstance(kw["sampler"], (spsample.LADIES, spsample.FastGCN))
    expect = {"spsample_k_lw_entries", "spsample_k_lw_edges", "spsample_k_assign"} if layerwise \
        else {"spsample_k_frontier", "spsample_k_select", "spsample_k_assign"}
    assert expect <= set(FakeRawModule.launches)
    uploaded = {id(a) for a in _gpu.CupyDevice._uploads.values()}
    assert len(uploaded) >= 2                                     # the graph's arrays, cached
    spsample.sample(g, seeds, device="cuda", **kw)
    assert {id(a) for a in _gpu.CupyDevice._uploads.values()} == uploaded


class CupyLike(DevArray):
    """Looks like a cupy.ndarray to the backend's type check (module name, .get())."""
    __module__ = "cupy._core.core"

    def get(self):
        return np.array(self, copy=True).view(np.ndarray)


def test_cupy_seeds_select_the_cuda_path(standin):
    g = random_graph(100, 600, seed=1)
    seeds = np.arange(0, 100, 3)
    kw = dict(sampler=spsample.NodeWise([2]), batch_size=10)
    out = spsample.sample(g, seeds.view(CupyLike), **kw)
    assert out.path == "cuda"
    assert all(a.equals(b) for a, b in zip(out, spsample.sample(g, seeds, **kw)))
    assert spsample.sample(g, seeds.view(CupyLike), device="cpu", **kw).path == "native"


def test_the_gpu_benchmark_script_runs_over_the_standin(standin, monkeypatch):
    """experiments/gpu/run.py's benchmark loop (every sampler, CPU == GPU identity) on a tiny
    R-MAT graph: the script's first run on a GPU should not be its first run."""
    import importlib.util
    import sys
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "experiments" / "gpu" / "run.py"
    spec = importlib.util.spec_from_file_location("gpu_run", path)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    standin.cuda.Device = lambda *a: types.SimpleNamespace(synchronize=lambda: None)
    monkeypatch.setitem(sys.modules, "cupy", standin)
    args = run.parse_args(["--scales", "9", "--batches", "3", "--batch-size", "40",
                           "--repeat", "1", "--layer-fanouts", "30,30"])
    rows = run.bench(args, standin)
    assert [r["sampler"] for r in rows] == list(run.SAMPLERS)
    assert all(r["identical"] and r["gpu"]["edges_per_s"] > 0 for r in rows)
