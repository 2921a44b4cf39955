"""Sampled edges per second of one epoch, spsample against DGL / PyG in the same process.

One epoch = ``--batches`` minibatches of ``--batch-size`` distinct random seeds (default 64 x
1024), sampled in one bulk call per sampler: node-wise (fanouts 15,10,5), LABOR (same fanouts),
LADIES and FastGCN (``--layer-fanouts``, default 1024 per layer), random walks and node2vec
(``--walk-length``, ``--p``, ``--q``: one walk per seed). User-style samplers written with the
lazy vocabulary are measured against the built-in doing the same work: ``plain`` (a NodeWise
subclass overriding nothing) against ``nodewise``; ``colscaled`` (node-wise weighted by a
per-column vector, 1 / (1 + deg u)) against ``nodewise_w`` (NodeWise(weighted=True) on the
same graph carrying those values as edge weights); ``readme_walk`` (experiments/random_walk.py)
against ``walk``. Graphs: R-MAT (``--scale``, one or more, Graph500 parameters) and the CSR npz
given by ``--dataset`` (default law-cnr-2000; skipped when absent).
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
samples ~20 % more edges: compare edges/s, and epoch time) for ``nodewise``,
``dgl.dataloading.LaborSampler`` for ``labor``, and ``dgl.sampling.random_walk`` /
``node2vec_random_walk`` (walks per second) for ``walk`` / ``node2vec``; ``--peer pyg`` times
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

DEFAULT_DATASET = (Path(__file__).resolve().parents[2] / "shared" / "datasets" / "law-cnr-2000"
                   / "cnr-2000.npz")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", default="18", help="R-MAT scale(s), comma-separated; '' for none")
    p.add_argument("--dataset", default=str(DEFAULT_DATASET),
                   help="CSR npz (indptr, indices) to benchmark too; 'none' to skip")
    p.add_argument("--samplers", default="nodewise,ladies,fastgcn",
                   help="comma-separated: " + ", ".join(SAMPLERS))
    p.add_argument("--fanouts", default="15,10,5", help="node-wise fanouts, hop 1 first")
    p.add_argument("--layer-fanouts", default="1024,1024,1024", help="LADIES / FastGCN layer sizes")
    p.add_argument("--walk-length", type=int, default=8)
    p.add_argument("--p", type=float, default=0.5, help="node2vec return parameter")
    p.add_argument("--q", type=float, default=2.0, help="node2vec in-out parameter")
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


SAMPLERS = ("nodewise", "ladies", "fastgcn", "labor", "walk", "node2vec", "plain", "colscaled",
            "nodewise_w", "nodewise_wa", "readme_walk", "walk_nodewise")
# user-style sampler -> the built-in doing the same work (ratio reported)
BASELINE = {"plain": "nodewise", "colscaled": "nodewise_w", "readme_walk": "walk",
            "walk_nodewise": "walk"}
WALKS = ("walk", "node2vec", "readme_walk", "walk_nodewise")


def user_samplers():
    """The user-style samplers, written as a user would from the README."""
    import importlib.util

    import spsample
    from spsample import primitives as prim

    class Plain(spsample.NodeWise):
        pass

    class ColumnScaled(spsample.NodeWise):
        def __init__(self, fanouts, vec):
            super().__init__(fanouts, weighted=True)
            self.vec = vec

        def check_graph(self, graph):
            pass

        def probabilities(self, graph, Q, ctx):
            return prim.gather(graph, Q).scale_columns(self.vec)

    spec = importlib.util.spec_from_file_location("random_walk",
                                                  Path(__file__).parent / "random_walk.py")
    walk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(walk)
    return Plain, ColumnScaled, walk.RandomWalk


def column_vector(g):
    import numpy as np
    return 1.0 / (1.0 + g.degree().astype(np.float64))


def make_samplers(args, g):
    """``(name, sampler, graph)`` for the requested samplers (``graph`` may carry weights)."""
    import spsample

    Plain, ColumnScaled, ReadmeWalk = user_samplers()
    fan = [int(f) for f in args.fanouts.split(",")]
    layer = [int(f) for f in args.layer_fanouts.split(",")]
    L = args.walk_length
    weighted = {}

    def with_column_weights():
        if "g" not in weighted:
            vec = column_vector(g)
            weighted["g"] = spsample.Graph.from_csr(g.indptr, g.indices, weights=vec[g.indices])
        return weighted["g"]

    table = {"nodewise": lambda: (spsample.NodeWise(fan), g),
             "ladies": lambda: (spsample.LADIES(layer), g),
             "fastgcn": lambda: (spsample.FastGCN(layer), g),
             "labor": lambda: (spsample.LABOR(fan), g),
             "walk": lambda: (spsample.RandomWalk(L), g),
             "node2vec": lambda: (spsample.RandomWalk(L, p=args.p, q=args.q), g),
             "plain": lambda: (Plain(fan), g),
             "colscaled": lambda: (ColumnScaled(fan, column_vector(g)), g),
             "nodewise_w": lambda: (spsample.NodeWise(fan, weighted=True), with_column_weights()),
             "nodewise_wa": lambda: (spsample.NodeWise(fan, weighted=True,
                                                       weighted_method="alias"),
                                     with_column_weights()),
             "readme_walk": lambda: (ReadmeWalk(L), g),
             "walk_nodewise": lambda: (spsample.NodeWise([1] * L), g)}
    for name in [n for n in args.samplers.split(",") if n]:
        sampler, graph = table[name]()
        yield name, sampler, graph


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


def _dgl_graph(g, dgl, torch, csc=True):
    indptr, indices = torch.from_numpy(g.indptr.copy()), torch.from_numpy(g.indices.copy())
    # in-edges of v = row v (the vertices v aggregates from): DGL's CSC; walks follow out-edges,
    # so for them row v is v's successor list: DGL's CSR
    fmt = "csc" if csc else "csr"
    dg = dgl.graph((fmt, (indptr, indices, torch.empty(0, dtype=torch.int64))),
                   num_nodes=g.num_nodes)
    dg.create_formats_()
    return dg


def dgl_runner(g, seeds_per_batch, fanouts, threads, kind="nodewise", args=None):
    """A DGL function doing what spsample's ``kind`` does, and its unit count per run."""
    import torch
    dgl = import_dgl()
    dgl.utils.set_num_threads(threads)
    torch.set_num_threads(threads)
    batches = [torch.from_numpy(s) for s in seeds_per_batch]
    if kind in ("walk", "node2vec"):
        dg = _dgl_graph(g, dgl, torch, csc=False)
        L = args.walk_length

        def run():
            walks = 0
            for seeds in batches:
                if kind == "walk":
                    traces = dgl.sampling.random_walk(dg, seeds, length=L)[0]
                else:
                    traces = dgl.sampling.node2vec_random_walk(dg, seeds, args.p, args.q, L)
                walks += int(traces.shape[0])
            return walks
        return run, f"dgl {dgl.__version__}"
    dg = _dgl_graph(g, dgl, torch)
    make = dgl.dataloading.LaborSampler if kind == "labor" else dgl.dataloading.NeighborSampler
    sampler = make(list(reversed(fanouts)))   # DGL lists input layer first

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
def measure_spsample(args, g, seeds, sname, sampler, path, base):
    import spsample
    from spsample import native as _native

    _native.set_enabled(path == "native")
    try:
        run = lambda: spsample.sample(g, seeds, sampler=sampler, batch_size=args.batch_size,  # noqa: E731
                                      seed=args.seed)
        first = run()                                      # warm-up (and caches)
        ran = first.path
        del first
        bulk, times, mem = measure(run, args.repeat)
        edges = bulk.num_edges
        out_mb = (bulk.n_id.nbytes + sum(h.dst.nbytes + h.src.nbytes + h.edge_id.nbytes
                                         + (h.weight.nbytes if h.weight is not None else 0)
                                         for h in bulk.hops))
        del bulk
    finally:
        _native.set_enabled(_native.AVAILABLE)
    res = dict(base, sampler=sname, path=path, ran=ran, **summary(times, edges), **mem,
               output_mb=round(out_mb / 2**20, 1))
    if sname in WALKS:
        res["walks_per_s"] = round(seeds.size / min(times) / 1e6, 3)   # M walks/s
    return res


def ratio(a, b, key):
    return round(a[key] / b[key], 3) if a and b and b.get(key) else None


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    # libgomp's default wait policy made DGL's OpenMP loops ~100x slower on the shared 2-core
    # machine (40 ms per to_block instead of 0.2 ms); either explicit policy fixes it. spsample
    # runs one parallel region per bulk, so the policy does not matter to it.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import numpy as np
    from spsample import native as _native

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
        base = {"graph": gname, "threads": args.threads,
                "omp_wait_policy": os.environ["OMP_WAIT_POLICY"],
                "batches": -(-seeds.size // args.batch_size), "batch_size": args.batch_size}
        best = {}
        for sname, sampler, graph in make_samplers(args, g):
            for path in args.paths:
                if path == "native" and not _native.AVAILABLE:
                    print(json.dumps({"skip": "native", "reason": str(_native.IMPORT_ERROR)}),
                          flush=True)
                    continue
                res = measure_spsample(args, graph, seeds, sname, sampler, path, base)
                record(results, args.out, **res)
                best[sname, path] = res
        for (sname, path), res in list(best.items()):      # user-style vs the built-in
            if (BASELINE.get(sname), path) in best:
                record(results, args.out, graph=gname, sampler=sname, path=path,
                       vs_builtin=BASELINE[sname],
                       ratio_vs_builtin=ratio(res, best[BASELINE[sname], path], "edges_per_s"))
        per_batch = np.array_split(seeds, np.cumsum([args.batch_size] * (base["batches"] - 1)))
        fan = [int(f) for f in args.fanouts.split(",")]
        for peer in peers:
            kinds = ("nodewise", "labor", "walk", "node2vec")
            for kind in [k for k in kinds if (k, "native") in best]:
                if peer == "pyg" and kind != "nodewise":
                    continue
                try:
                    make = dgl_runner if peer == "dgl" else pyg_runner
                    runner, version = make(g, per_batch, fan, args.threads, kind, args) \
                        if peer == "dgl" else make(g, per_batch, fan, args.threads)
                except Exception as exc:   # not importable / unusable here: say so, do not fail
                    print(json.dumps({"skip": peer, "sampler": kind,
                                      "reason": f"{type(exc).__name__}: {exc}"}), flush=True)
                    continue
                runner()
                units, times, mem = measure(runner, args.repeat)
                res = dict(base, sampler=kind, path=peer, version=version, **mem)
                mine = best[kind, "native"]
                if kind in WALKS:
                    res.update(seconds=round(min(times), 4),
                               walks_per_s=round(units / min(times) / 1e6, 3))
                    res["ratio_walks_per_s"] = ratio(mine, res, "walks_per_s")
                else:
                    res.update(summary(times, units))
                    res["ratio_edges_per_s"] = ratio(mine, res, "edges_per_s")
                    res["ratio_epoch_time"] = round(res["seconds"] / mine["seconds"], 2)
                record(results, args.out, **res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
