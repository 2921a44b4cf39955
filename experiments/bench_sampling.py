"""Sampled edges per second of one epoch, spsample against DGL / PyG in the same process.

One epoch = ``--batches`` minibatches of ``--batch-size`` distinct random seeds (default 64 x
1024), sampled in one bulk call per sampler: node-wise (fanouts 15,10,5), LADIES and FastGCN
(``--layer-fanouts``, default 1024 per layer). Graphs: R-MAT (``--scale``, one or more, Graph500
parameters) and the CSR npz given by ``--dataset`` (default law-cnr-2000; skipped when absent).
Prints one JSON object per measurement (and writes them all to ``--out``):

    graph, sampler, path ("native" / "numpy" / "dgl" / "pyg"), threads, sampled_edges,
    seconds (best of --repeat), seconds_median, edges_per_s (M, from the best), peak_rss_mb
    (process high-water mark, getrusage), run_peak_rss_mb / rss_before_mb (the high-water
    mark of this measurement alone, reset through /proc/self/clear_refs where Linux allows),
    output_mb (bytes of the returned arrays), and for peers ratio = spsample / peer edges/s.

Memory bound (argued): the native kernels hold, per thread, scratch of O(largest minibatch)
(node-wise: a hash map of 2-4 slots per vertex of the minibatch, frontier extents, the hop's
edge ids) or O(n) 32-bit slots plus O(entries of the minibatch's rows) (layer-wise), and the
outputs, O(sampled edges) = 3 int64 per edge (+1 float64 layer-wise) plus n_id. Nothing grows
with k beyond the outputs, so run_peak_rss - rss_before ~ output_mb + threads * scratch.

Peers: ``--peer dgl`` times ``dgl.dataloading.NeighborSampler(...).sample_blocks`` per minibatch
(DGL 2.1's C++ ``sample_neighbors`` + ``to_block``; it re-expands every vertex of a layer, so it
samples ~20 % more edges: compare edges/s, and epoch time); ``--peer pyg`` times
``torch_geometric.sampler.NeighborSampler`` (needs pyg-lib or torch-sparse). Both get the same
graph, seeds, fanouts and thread count; a peer that does not import prints a skip line. See
experiments/README.md for building their environments.

    python experiments/bench_sampling.py --scale 18 --threads 2 --repeat 5
    python experiments/bench_sampling.py --scale 18,20 --peer dgl --samplers nodewise
    python experiments/bench_sampling.py --scale 16 --numpy --samplers nodewise
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "law-cnr-2000" / "cnr-2000.npz"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", default="18", help="R-MAT scale(s), comma-separated; '' for none")
    p.add_argument("--dataset", default=str(DEFAULT_DATASET),
                   help="CSR npz (indptr, indices) to benchmark too; 'none' to skip")
    p.add_argument("--samplers", default="nodewise,ladies,fastgcn")
    p.add_argument("--fanouts", default="15,10,5", help="node-wise fanouts, hop 1 first")
    p.add_argument("--layer-fanouts", default="1024,1024,1024", help="LADIES / FastGCN layer sizes")
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    path = p.add_mutually_exclusive_group()
    path.add_argument("--native", dest="paths", action="store_const", const=["native"])
    path.add_argument("--numpy", dest="paths", action="store_const", const=["numpy"])
    path.add_argument("--both", dest="paths", action="store_const", const=["native", "numpy"])
    p.add_argument("--peer", choices=["none", "dgl", "pyg", "all"], default="none")
    p.add_argument("--out", help="also write the list of results to this JSON file")
    args = p.parse_args(argv)
    args.paths = args.paths or ["native"]
    return args


# ----------------------------------------------------------------------------- measurement
def _rss_kb(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak():
    """Reset the kernel's high-water mark of this process (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(fn, repeat):
    """Run ``fn`` ``repeat`` times; returns (result of the last run, times, rss fields in MB)."""
    times, result = [], None
    reset = _reset_peak()
    before = _rss_kb("VmRSS")
    for _ in range(repeat):
        result = None                      # free the previous run's output first
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    mem = {"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if reset and before is not None:
        mem["rss_before_mb"] = round(before / 1024, 1)
        mem["run_peak_rss_mb"] = round(_rss_kb("VmHWM") / 1024, 1)
    return result, times, mem


def record(results, out, **fields):
    results.append(fields)
    print(json.dumps(fields), flush=True)
    if out:
        Path(out).write_text(json.dumps(results, indent=1))


def summary(times, edges):
    best = min(times)
    return {"sampled_edges": int(edges), "seconds": round(best, 4),
            "seconds_median": round(statistics.median(times), 4),
            "edges_per_s": round(edges / best / 1e6, 2)}


# ----------------------------------------------------------------------------- graphs
def graphs(args):
    import numpy as np
    import spsample

    for scale in [s for s in args.scale.split(",") if s.strip()]:
        t = time.perf_counter()
        g = spsample.rmat(int(scale), seed=1)
        yield f"rmat{int(scale)}", g, time.perf_counter() - t
    if args.dataset.lower() != "none":
        path = Path(args.dataset)
        if not path.is_file():
            print(json.dumps({"skip": str(path), "reason": "dataset file not found"}), flush=True)
            return
        t = time.perf_counter()
        with np.load(path) as z:
            g = spsample.Graph.from_csr(z["indptr"], z["indices"])
        yield path.stem, g, time.perf_counter() - t


def make_samplers(args):
    import spsample

    fan = [int(f) for f in args.fanouts.split(",")]
    layer = [int(f) for f in args.layer_fanouts.split(",")]
    table = {"nodewise": lambda: spsample.NodeWise(fan), "ladies": lambda: spsample.LADIES(layer),
             "fastgcn": lambda: spsample.FastGCN(layer)}
    return [(name, table[name]()) for name in args.samplers.split(",") if name]


# ----------------------------------------------------------------------------- peers
def import_dgl():
    """DGL 2.1 with its graphbolt loader made optional (it needs torchdata and torch <= 2.2)."""
    import types

    try:
        import dgl
        return dgl
    except (ImportError, OSError, FileNotFoundError) as exc:
        if "graphbolt" not in repr(exc) and "torchdata" not in repr(exc):
            raise
    for name in [m for m in sys.modules if m == "dgl" or m.startswith("dgl.")]:
        del sys.modules[name]
    sys.modules["dgl.graphbolt"] = types.ModuleType("dgl.graphbolt")   # unused by sampling
    import dgl
    return dgl


def dgl_runner(g, seeds_per_batch, fanouts, threads):
    import torch
    dgl = import_dgl()
    dgl.utils.set_num_threads(threads)
    torch.set_num_threads(threads)
    indptr, indices = torch.from_numpy(g.indptr.copy()), torch.from_numpy(g.indices.copy())
    # in-edges of v = row v (the vertices v aggregates from): DGL's CSC
    dg = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.int64))), num_nodes=g.num_nodes)
    dg.create_formats_()
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))   # DGL lists input layer first
    batches = [torch.from_numpy(s) for s in seeds_per_batch]

    def run():
        edges = 0
        for seeds in batches:
            _, _, blocks = sampler.sample_blocks(dg, seeds)
            edges += sum(int(b.num_edges()) for b in blocks)
        return edges
    return run, f"dgl {dgl.__version__}"


def pyg_runner(g, seeds_per_batch, fanouts, threads):
    import torch
    from torch_geometric.data import Data
    from torch_geometric.sampler import NeighborSampler, NodeSamplerInput
    import torch_geometric.typing as tgt

    if not (getattr(tgt, "WITH_PYG_LIB", False) or getattr(tgt, "WITH_TORCH_SPARSE", False)):
        raise ImportError("torch_geometric's NeighborSampler needs pyg-lib or torch-sparse")
    torch.set_num_threads(threads)
    import numpy as np

    src = torch.from_numpy(g.indices.copy())    # edge u -> v for every entry u of row v
    dst = torch.from_numpy(np.repeat(np.arange(g.num_nodes, dtype=np.int64), np.diff(g.indptr)))
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=g.num_nodes)
    sampler = NeighborSampler(data, num_neighbors=list(fanouts))
    batches = [torch.from_numpy(s) for s in seeds_per_batch]

    def run():
        edges = 0
        for seeds in batches:
            out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=seeds))
            edges += int(out.row.numel())
        return edges
    import torch_geometric
    return run, f"torch_geometric {torch_geometric.__version__}"


# ----------------------------------------------------------------------------- main
def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    # libgomp's default wait policy made DGL's OpenMP loops ~100x slower on the shared 2-core
    # machine (40 ms per to_block instead of 0.2 ms); either explicit policy fixes it. spsample
    # runs one parallel region per bulk, so the policy does not matter to it.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import numpy as np
    import spsample
    from spsample import _native

    results = []
    _native.set_num_threads(args.threads)
    peers = {"none": [], "dgl": ["dgl"], "pyg": ["pyg"], "all": ["dgl", "pyg"]}[args.peer]
    for gname, g, build_s in graphs(args):
        rss = _rss_kb("VmRSS")
        print(json.dumps({"graph": gname, "num_nodes": g.num_nodes, "num_edges": g.num_edges,
                          "build_s": round(build_s, 2), "graph_mb": round(
                              (g.indptr.nbytes + g.indices.nbytes) / 2**20, 1),
                          "rss_with_graph_mb": None if rss is None else round(rss / 1024, 1)}),
              flush=True)
        m = args.batches * args.batch_size
        rng = np.random.default_rng(args.seed)
        seeds = rng.choice(g.num_nodes, size=min(m, g.num_nodes), replace=False).astype(np.int64)
        base = {"graph": gname, "threads": args.threads, "omp_wait_policy": os.environ["OMP_WAIT_POLICY"], "batches": -(-seeds.size // args.batch_size),
                "batch_size": args.batch_size}
        best_nodewise = None
        for sname, sampler in make_samplers(args):
            for path in args.paths:
                if path == "native" and not _native.AVAILABLE:
                    print(json.dumps({"skip": "native", "reason": str(_native.IMPORT_ERROR)}), flush=True)
                    continue
                _native.set_enabled(path == "native")
                run = lambda: spsample.sample(g, seeds, sampler=sampler, batch_size=args.batch_size,  # noqa: E731
                                              seed=args.seed)
                run()                                              # warm-up (and caches)
                mbs, times, mem = measure(run, args.repeat)
                edges = sum(sum(mb.num_sampled_edges) for mb in mbs)
                out_mb = sum(mb.n_id.nbytes + sum(d.nbytes + s.nbytes for d, s in mb.edges)
                             + sum(e.nbytes for e in mb.edge_ids)
                             + (sum(w.nbytes for w in mb.weight) if mb.weight else 0) for mb in mbs)
                del mbs
                res = dict(base, sampler=sname, path=path, **summary(times, edges), **mem,
                           output_mb=round(out_mb / 2**20, 1))
                record(results, args.out, **res)
                if sname == "nodewise" and path == "native":
                    best_nodewise = res
            _native.set_enabled(_native.AVAILABLE)
        if not peers:
            continue
        fan = [int(f) for f in args.fanouts.split(",")]
        per_batch = np.array_split(seeds, np.cumsum([args.batch_size] * (base["batches"] - 1)))
        for peer in peers:
            try:
                runner, version = (dgl_runner if peer == "dgl" else pyg_runner)(g, per_batch, fan, args.threads)
            except Exception as exc:   # not importable / unusable here: say so, do not fail
                print(json.dumps({"skip": peer, "reason": f"{type(exc).__name__}: {exc}"}), flush=True)
                continue
            runner()
            edges, times, mem = measure(runner, args.repeat)
            res = dict(base, sampler="nodewise", path=peer, version=version, **summary(times, edges), **mem)
            if best_nodewise is not None:
                res["ratio_edges_per_s"] = round(best_nodewise["edges_per_s"] / res["edges_per_s"], 2)
                res["ratio_epoch_time"] = round(res["seconds"] / best_nodewise["seconds"], 2)
            record(results, args.out, **res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
