"""Everything spsample's GPU backend needs a GPU for, in one command (see README.md here).

On a machine with an NVIDIA GPU and CuPy (``pip install -e ".[gpu,test]"``):

    python3 experiments/gpu/run.py                 # writes experiments/results/gpu/run.json + .png
    python3 experiments/gpu/run.py --scales 18 --repeat 1    # a quick look

1. **Tests**: ``pytest -m gpu`` over ``tests/test_gpu_cuda.py`` (the kernels compiled by
   ``cupy.RawModule``, CUDA == CPU bit for bit for every sampler -- row-wise and layer-wise --
   and graph of the emulation tests, CuPy / torch CUDA seeds, NcclComm on NCCL), plus the
   emulation and compile tests (``tests/test_gpu_emulation.py``, ``tests/test_cuda_compile.py``).
2. **Bit identity at scale**: for every sampler and R-MAT scale, the GPU's bulk equals the
   CPU engine's, bit for bit (``identical`` in the JSON).
3. **Benchmark**: sampled edges/s of one epoch (``--batches`` x ``--batch-size`` random seeds,
   fanouts 15,10,5 row-wise, ``--layer-fanouts`` 1024 per layer for LADIES and FastGCN; one
   bulk call), best and median of ``--repeat``, for node-wise, LABOR, LADIES and FastGCN on
   R-MAT ``--scales`` (22 and 24 by default): the GPU (``device="cuda"``), the CPU engine on
   all cores, and ``pylibcugraph.uniform_neighbor_sample`` on the same CSR, seeds and fanouts
   when cuGraph is installed (its ratio to spsample's node-wise in ``ratio_to_cugraph``).
4. **Random-access bound**: a gather of ``--probe-mb`` MiB of random 4-byte words measures the
   rate of random 32-byte sectors this GPU serves; row-wise sampling needs about
   ``SECTORS_PER_EDGE`` random sectors per sampled edge (README.md here), so
   ``bound_edges_per_s = sectors_per_s / SECTORS_PER_EDGE``, and ``ratio_to_bound`` says how
   close each row-wise GPU run comes to it (layer-wise runs stream their rows and sort their
   entries: the bound does not apply to them and no ratio is reported).

Without a GPU it stops after saying so (exit status 2): nothing here is claimed without one.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# Random 32-byte sectors one sampled edge costs in the row-wise kernels (README.md here):
# the column read indices32[eid] (1), the dedup table's insert and two look-ups (3), and the
# frontier row's indptr pair and n_id entry, shared by the row's s edges (~1 for s = 5..15).
SECTORS_PER_EDGE = 5.0
SAMPLERS = ("nodewise", "labor", "ladies", "fastgcn")
ROWWISE = ("nodewise", "labor")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scales", default="22,24", help="R-MAT scales, comma-separated")
    p.add_argument("--samplers", default=",".join(SAMPLERS))
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--fanouts", default="15,10,5", help="row-wise fanouts, hop 1 first")
    p.add_argument("--layer-fanouts", default="1024,1024,1024", help="LADIES / FastGCN")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--probe-mb", type=int, default=4096, help="size of the random-gather probe")
    p.add_argument("--skip-tests", action="store_true")
    p.add_argument("--graph-dir", default=None,
                   help="read R-MAT <scale> from DIR/rmat<scale>.h5 when there "
                        "(experiments/rmat_h5.py writes it) instead of generating it")
    p.add_argument("--out", default=str(ROOT / "experiments" / "results" / "gpu" / "run.json"))
    return p.parse_args(argv)


def make_sampler(name, fanouts, layer_fanouts):
    import spsample
    if name in ("ladies", "fastgcn"):
        return {"ladies": spsample.LADIES, "fastgcn": spsample.FastGCN}[name](layer_fanouts)
    return {"nodewise": spsample.NodeWise, "labor": spsample.LABOR}[name](fanouts)


def run_tests():
    """The GPU test suite and the emulation / compile tests; pytest's exit status and tail."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
           "tests/test_gpu_cuda.py", "tests/test_gpu_emulation.py", "tests/test_cuda_compile.py"]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    tail = (run.stdout + run.stderr).strip().splitlines()[-15:]
    print("\n".join(tail), flush=True)
    return {"command": " ".join(cmd), "returncode": run.returncode, "tail": tail}


def timed(fn, repeat, sync):
    times, out = [], None
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return out, min(times), statistics.median(times)


def same_bits(gpu, cpu):
    """Bit identity of two bulks' flat arrays (layer-wise weights compared as bytes)."""
    import cupy
    if not np.array_equal(cupy.asnumpy(gpu.n_id), cpu.n_id):
        return False
    for a, b in zip(gpu.hops, cpu.hops):
        if not all(np.array_equal(cupy.asnumpy(getattr(a, f)), getattr(b, f))
                   for f in ("dst", "src", "edge_id")):
            return False
        if (a.weight is None) != (b.weight is None) or (
                a.weight is not None and cupy.asnumpy(a.weight).tobytes() != b.weight.tobytes()):
            return False
    return True


def random_sector_rate(cupy, mb):
    """Random 4-byte reads per second from an array of `mb` MiB (each touches its own sector)."""
    n = (mb << 20) // 4
    data = cupy.arange(n, dtype=cupy.uint32)
    idx = cupy.random.default_rng(0).integers(0, n, size=1 << 26, dtype=cupy.int64)
    out = cupy.empty(idx.size, dtype=cupy.uint32)
    cupy.take(data, idx, out=out)
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        cupy.take(data, idx, out=out)
    cupy.cuda.Device().synchronize()
    return 5 * idx.size / (time.perf_counter() - t0)


def cugraph_epoch(g, seeds, fanouts, repeat, sync):
    """pylibcugraph.uniform_neighbor_sample on the same CSR (None when not installed)."""
    try:
        import cupy
        import pylibcugraph as plc
    except ImportError as exc:
        return {"skipped": f"pylibcugraph not installed ({exc})"}
    try:
        handle = plc.ResourceHandle()
        props = plc.GraphProperties(is_symmetric=False, is_multigraph=False)
        graph = plc.SGGraph(handle, props, cupy.asarray(g.indptr), cupy.asarray(g.indices),
                            cupy.ones(g.indices.size, dtype=cupy.float32), store_transposed=False,
                            renumber=False, do_expensive_check=False, input_array_format="CSR")
        start = cupy.asarray(seeds)
        fan = np.asarray(fanouts, dtype=np.int32)

        def epoch():
            return plc.uniform_neighbor_sample(handle, graph, start, fan, with_replacement=False,
                                               do_expensive_check=False)
        out, best, median = timed(epoch, repeat, sync)
        edges = int(len(out["sources"]) if isinstance(out, dict) else len(out[0]))
        return {"sampled_edges": edges, "seconds": best, "seconds_median": median,
                "edges_per_s": edges / best}
    except Exception as exc:  # an API that moved: record it, keep the rest of the run
        return {"error": f"{type(exc).__name__}: {exc}"}


def rmat_graph(scale, graph_dir):
    """R-MAT ``scale`` (edge factor 16, seed 1) and where it came from: ``graph_dir``'s
    ``rmat<scale>.h5`` when that exists (the same graph, written by experiments/rmat_h5.py),
    else generated here."""
    import spsample
    path = Path(graph_dir, f"rmat{scale}.h5") if graph_dir else None
    if path is not None and path.exists():
        return spsample.load(str(path)).graph, f"read from {path}"
    return spsample.rmat(scale, seed=1), "generated"


def bench(args, cupy):
    import spsample
    from spsample import native as _native
    fanouts = [int(f) for f in args.fanouts.split(",")]
    layer_fanouts = [int(f) for f in args.layer_fanouts.split(",")]
    sync = cupy.cuda.Device().synchronize
    rows = []
    for scale in [int(s) for s in args.scales.split(",") if s]:
        t0 = time.perf_counter()
        g, source = rmat_graph(scale, args.graph_dir)
        print(f"rmat{scale}: {g.num_nodes} nodes, {g.num_edges} edges, {source} "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        seeds = np.random.default_rng(0).permutation(g.num_nodes)[:args.batches * args.batch_size]
        for name in args.samplers.split(","):
            sampler = make_sampler(name, fanouts, layer_fanouts)
            kw = dict(sampler=sampler, batch_size=args.batch_size, seed=0)
            cpu, cbest, cmed = timed(lambda: spsample.sample(g, seeds, **kw), args.repeat,
                                     lambda: None)
            row = {"graph": f"rmat{scale}", "sampler": name, "sampled_edges": cpu.num_edges,
                   "cpu": {"threads": _native.get_num_threads(), "seconds": cbest,
                           "seconds_median": cmed, "edges_per_s": cpu.num_edges / cbest}}
            spsample.sample(g, seeds[:args.batch_size], device="cuda", **kw)  # compile, upload
            gpu, best, med = timed(lambda: spsample.sample(g, seeds, device="cuda", **kw),
                                   args.repeat, sync)
            row["identical"] = same_bits(gpu, cpu)
            row["gpu"] = {"seconds": best, "seconds_median": med,
                          "edges_per_s": gpu.num_edges / best}
            row["gpu_over_cpu"] = row["gpu"]["edges_per_s"] / row["cpu"]["edges_per_s"]
            del gpu
            if name == "nodewise":
                row["cugraph"] = cugraph_epoch(g, seeds, fanouts, args.repeat, sync)
                if "edges_per_s" in row["cugraph"] and "edges_per_s" in row["gpu"]:
                    row["ratio_to_cugraph"] = (row["gpu"]["edges_per_s"] /
                                               row["cugraph"]["edges_per_s"])
            print(json.dumps(row), flush=True)
            rows.append(row)
            del cpu
    return rows


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    labels = [f"{r['graph']}\n{r['sampler']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(rows)), 4))
    series = (("cpu", "tab:blue"), ("gpu", "tab:green"), ("cugraph", "tab:red"))
    for i, (key, colour) in enumerate(series):
        vals = [r.get(key, {}).get("edges_per_s", 0) / 1e6 for r in rows]
        ax.bar(x + (i - 1) * 0.27, vals, 0.27, label=key, color=colour)
    ax.set_xticks(x, labels)
    ax.set_ylabel("sampled edges / s (M)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return str(path)


def main(argv=None):
    args = parse_args(argv)
    from spsample import gpu as _gpu
    if not _gpu.gpu_available():
        print("experiments/gpu/run.py: no CuPy / NVIDIA GPU here; nothing was run "
              "(pip install -e '.[gpu,test]' on a machine with a GPU)", file=sys.stderr)
        return 2
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    result = {"device": props["name"].decode(), "host": platform.node(),
              "cupy": cupy.__version__, "sectors_per_edge_model": SECTORS_PER_EDGE}
    if not args.skip_tests:
        result["tests"] = run_tests()
    rate = random_sector_rate(cupy, args.probe_mb)
    result["random_sectors_per_s"] = rate
    result["bound_edges_per_s"] = rate / SECTORS_PER_EDGE
    result["runs"] = bench(args, cupy)
    for r in result["runs"]:
        if r["sampler"] in ROWWISE and "edges_per_s" in r.get("gpu", {}):
            r["ratio_to_bound"] = r["gpu"]["edges_per_s"] / result["bound_edges_per_s"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result["plot"] = plot(result["runs"], out.with_suffix(".png"))
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    ok = result.get("tests", {}).get("returncode", 0) == 0 and all(
        r.get("identical", True) for r in result["runs"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
