"""On a machine with an NVIDIA GPU and CuPy (marked ``gpu``; skipped cleanly elsewhere): the
kernels compiled by ``cupy.RawModule`` from ``native/device`` give the CPU engine's bits for
every sampler (row-wise and layer-wise) and graph of ``tests/test_gpu_emulation.py``; seeds as
CuPy arrays and torch CUDA tensors (DLPack) select the GPU; NcclComm runs on real NCCL at world
size 1.

Run it (and the benchmark) with ``python3 experiments/gpu/run.py``; this machine's CI has no
GPU, so these tests have only run where that script ran.
"""

import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample.gpu import _device as _gpu

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built"),
    pytest.mark.skipif(not _gpu.gpu_available(), reason="no CuPy / NVIDIA GPU here"),
]


def _host(bulk):
    """The bulk's minibatches with NumPy arrays (a GPU bulk holds CuPy arrays)."""
    import cupy
    from spsample.engine._minibatch import Bulk, HopEdges
    get = lambda a: None if a is None else cupy.asnumpy(a)  # noqa: E731
    hops = [HopEdges(get(h.dst), get(h.src), get(h.edge_id), get(h.weight), h.offsets)
            for h in bulk.hops]
    layerwise = bool(hops) and hops[0].weight is not None
    return Bulk(bulk.batch_ids, bulk.batch_sizes, get(bulk.n_id), bulk.node_offsets,
                bulk.num_sampled_nodes, hops, layerwise=layerwise, path=bulk.path)


from test_gpu_emulation import (_HUB_CASES, _LAYERWISE_CASES, _RANDOM,  # noqa: E402
                                _UNWEIGHTED_CASES, _WEIGHTED, _WEIGHTED_CASES, _hub_graph)

_NUM_CASES = (len(_UNWEIGHTED_CASES) + len(_WEIGHTED_CASES) + 2 * len(_LAYERWISE_CASES)
              + len(_HUB_CASES))


def _cases():
    cases = [(_RANDOM, s) for s in _UNWEIGHTED_CASES] + [(_WEIGHTED, s) for s in _WEIGHTED_CASES]
    cases += [(g, s) for g in (_RANDOM, _WEIGHTED) for s in _LAYERWISE_CASES]
    return cases + [(_hub_graph(w), make(_hub_graph(w))) for w, make in _HUB_CASES]


@pytest.mark.parametrize("i", range(_NUM_CASES))
def test_cuda_equals_cpu_bit_for_bit(i):
    g, sampler = _cases()[i]
    seeds = np.random.default_rng(i).permutation(g.num_nodes)[:60]
    if g.num_nodes > 10**5:
        seeds[0] = 0                                  # the hub
    kw = dict(sampler=sampler, batch_size=16, seed=i, epoch=1)
    gpu = spsample.sample(g, seeds, device="cuda", **kw)
    assert gpu.path == "cuda"
    cpu = spsample.sample(g, seeds, **kw)
    assert all(a.equals(b) for a, b in zip(_host(gpu), cpu)) and len(gpu) == len(cpu)


def test_cupy_and_torch_cuda_seeds_select_the_gpu():
    import cupy
    g = spsample.rmat(12)
    seeds = np.arange(0, 4000, 7)
    kw = dict(sampler=spsample.NodeWise([10, 5]), batch_size=64, seed=3)
    cpu = spsample.sample(g, seeds, **kw)
    out = spsample.sample(g, cupy.asarray(seeds), **kw)
    assert out.path == "cuda" and isinstance(out.n_id, cupy.ndarray)
    assert all(a.equals(b) for a, b in zip(_host(out), cpu))
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    out = spsample.sample(g, torch.as_tensor(seeds, device="cuda"), **kw)
    assert out.path == "cuda" and all(a.equals(b) for a, b in zip(_host(out), cpu))


def test_nccl_comm_at_world_size_one():
    from spsample.distributed import NcclComm, SelfComm
    comm = NcclComm(SelfComm())
    import cupy
    x = cupy.arange(6, dtype=cupy.float64)
    assert cupy.array_equal(comm.allreduce(x), x)
    recv, counts = comm.alltoallv(np.arange(5), [5])
    assert np.array_equal(recv, np.arange(5)) and list(counts) == [5]
    comm.free()
