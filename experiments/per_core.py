"""Sampled edges per CPU-second, spsample against DGL, alternated in one process (issue 28).

For every graph (R-MAT ``--scale`` and the npz ``--dataset``), thread count (``--threads``) and
sampler (``--samplers``: node-wise, LABOR, uniform walks, node2vec, weighted node-wise by the
exact keys and by alias tables), each
round runs one epoch (``--batches`` x ``--batch-size`` seeds) with spsample and with DGL in
alternating order, and records its wall time and the CPU time of the whole process
(``time.process_time``: every thread, DGL's OpenMP pool included). Units are counted as each
library reports them: sampled edges (DGL's blocks re-sample every destination of a layer, so
its count is higher), walk steps (walks x length). Per measurement it prints the best wall and
best CPU seconds over the rounds, units per CPU-second and per wall-second; per pair the ratios
spsample / DGL. Weighted node-wise (``nodewise_w``: the keys; ``nodewise_wa``:
``weighted_method="alias"``) has no DGL peer here: it is reported against spsample's uniform
node-wise (ns per sampled edge, the issue's "weighted <= 2x uniform").

``--busy N`` starts N processes spinning on a core for the whole run (the shared-core case).
The load average is printed before and after. DGL gets ``OMP_WAIT_POLICY=passive`` unless the
caller set a policy (see experiments/README.md, "Peers").

    /tmp/peers/bin/python experiments/per_core.py --scale 18 --threads 1,2 --rounds 5
    /tmp/peers/bin/python experiments/per_core.py --scale 18 --threads 2 --busy 1 \\
        --samplers nodewise,labor
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

DEFAULT_DATASET = (Path(__file__).resolve().parents[2] / "shared" / "datasets" / "law-cnr-2000"
                   / "cnr-2000.npz")
SAMPLERS = ("nodewise", "labor", "walk", "node2vec", "nodewise_w", "nodewise_wa")
#: Samplers DGL has no peer for (compared with spsample's own uniform base only).
OWN_ONLY = ("nodewise_w", "nodewise_wa")
#: Each ratio target's base: weighted (keys, alias) against uniform node-wise, node2vec
#: against the uniform walk.
BASE = {"nodewise_w": "nodewise", "nodewise_wa": "nodewise", "node2vec": "walk"}
WALKS = ("walk", "node2vec")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", default="18", help="R-MAT scale(s), comma-separated; '' for none")
    p.add_argument("--dataset", default=str(DEFAULT_DATASET), help="CSR npz, or 'none'")
    p.add_argument("--samplers", default=",".join(SAMPLERS))
    p.add_argument("--fanouts", default="15,10,5", help="node-wise fanouts, hop 1 first")
    p.add_argument("--walk-length", type=int, default=20)
    p.add_argument("--p", type=float, default=0.5, help="node2vec return parameter")
    p.add_argument("--q", type=float, default=2.0, help="node2vec in-out parameter")
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--busy", type=int, default=0, help="spinning processes during the run")
    p.add_argument("--peer", choices=["dgl", "none"], default="dgl")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="also write every measurement to this JSON file")
    args = p.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    args.samplers = [s for s in args.samplers.split(",") if s]
    unknown = sorted(set(args.samplers) - set(SAMPLERS))
    if unknown:
        p.error(f"--samplers: unknown {unknown}; choose from {list(SAMPLERS)}")
    return args


def timed(fn):
    """``(units, wall seconds, process CPU seconds)`` of one call of ``fn``."""
    w, c = time.perf_counter(), time.process_time()
    units = fn()
    return units, time.perf_counter() - w, time.process_time() - c


def spsample_runs(args, g, seeds):
    """``{sampler: run}``: each run samples one epoch and returns its units. The samplers (and
    the weighted graph of ``nodewise_w``) are bench_sampling.py's."""
    import spsample
    from bench_sampling import make_samplers

    table = {name: (sampler, graph) for name, sampler, graph in make_samplers(
        argparse.Namespace(fanouts=args.fanouts, layer_fanouts="1", walk_length=args.walk_length,
                           p=args.p, q=args.q, samplers=",".join(args.samplers)), g)}

    def run_of(name):
        sampler, graph = table[name]

        def run():
            bulk = spsample.sample(graph, seeds, sampler=sampler, batch_size=args.batch_size,
                                   seed=args.seed)
            if bulk.path != "native":
                raise RuntimeError(f"spsample ran {bulk.path!r}, not the native kernels")
            return seeds.size * args.walk_length if name in WALKS else bulk.num_edges
        return run
    return {name: run_of(name) for name in args.samplers}


def dgl_runs(args, g, seeds, threads):
    """``{sampler: run}`` for the samplers DGL has (node-wise, LABOR, walks, node2vec)."""
    import numpy as np
    from bench_sampling import dgl_runner

    per_batch = np.array_split(seeds, np.cumsum([args.batch_size] *
                                                (-(-seeds.size // args.batch_size) - 1)))
    fan = [int(f) for f in args.fanouts.split(",")]
    out = {}
    for name in [s for s in args.samplers if s not in OWN_ONLY]:
        run, _ = dgl_runner(g, per_batch, fan, threads, name, args)
        out[name] = (lambda run=run, name=name:
                     run() * args.walk_length if name in WALKS else run())
    return out


def set_threads(threads, peer):
    from spsample import native

    native.set_num_threads(threads)
    if peer == "dgl":
        import torch
        from bench_sampling import import_dgl
        import_dgl().utils.set_num_threads(threads)
        torch.set_num_threads(threads)


def measure_graph(args, gname, g):
    """Alternated rounds on one graph; returns the summary rows."""
    import numpy as np

    rng = np.random.default_rng(args.seed)
    m = min(args.batches * args.batch_size, g.num_nodes)
    seeds = rng.choice(g.num_nodes, size=m, replace=False).astype(np.int64)
    rows = {}
    for threads in args.threads:
        set_threads(threads, args.peer)
        libs = {"spsample": spsample_runs(args, g, seeds)}
        if args.peer == "dgl":
            libs["dgl"] = dgl_runs(args, g, seeds, threads)
        for lib in libs.values():              # warm-up: caches, lazily built formats
            for run in lib.values():
                run()
        for r in range(args.rounds):
            order = list(libs) if r % 2 == 0 else list(reversed(libs))
            for name in args.samplers:
                for lib in [x for x in order if name in libs[x]]:
                    units, wall, cpu = timed(libs[lib][name])
                    row = rows.setdefault((threads, name, lib), {
                        "graph": gname, "threads": threads, "sampler": name, "library": lib,
                        "units": units, "wall": [], "cpu": []})
                    row["wall"].append(wall)
                    row["cpu"].append(cpu)
    return [summarise(row) for row in rows.values()]


def summarise(row):
    wall, cpu = min(row["wall"]), min(row["cpu"])
    unit = "steps" if row["sampler"] in WALKS else "edges"
    return dict(row, wall=round(wall, 4), cpu=round(cpu, 4), unit=unit, rounds=len(row["wall"]),
                wall_median=round(sorted(row["wall"])[len(row["wall"]) // 2], 4),
                per_cpu_s=round(row["units"] / cpu / 1e6, 2),
                per_wall_s=round(row["units"] / wall / 1e6, 2),
                ns_per_unit_core=round(cpu / row["units"] * 1e9, 1))


def ratios(rows):
    """spsample / DGL per CPU-second and in epoch time; weighted / uniform ns per edge."""
    by = {(r["graph"], r["threads"], r["sampler"], r["library"]): r for r in rows}
    out = []
    for (gname, threads, name, lib), r in by.items():
        if lib != "spsample":
            continue
        peer = by.get((gname, threads, name, "dgl"))
        if peer:
            out.append({"graph": gname, "threads": threads, "sampler": name,
                        "per_cpu_s_ratio": round(r["per_cpu_s"] / peer["per_cpu_s"], 2),
                        "epoch_time_ratio": round(peer["wall"] / r["wall"], 2)})
        base = BASE.get(name)
        if base and (gname, threads, base, "spsample") in by:
            b = by[gname, threads, base, "spsample"]
            out.append({"graph": gname, "threads": threads, "sampler": name, "vs": base,
                        "cost_ratio": round(r["ns_per_unit_core"] / b["ns_per_unit_core"], 2)})
    return out


def graphs(args):
    import numpy as np
    import spsample

    for scale in [s for s in args.scale.split(",") if s.strip()]:
        yield f"rmat{int(scale)}", spsample.rmat(int(scale), seed=1)
    path = Path(args.dataset)
    if args.dataset.lower() != "none":
        if not path.is_file():
            print(json.dumps({"skip": str(path), "reason": "dataset file not found"}), flush=True)
            return
        with np.load(path) as z:
            yield path.stem, spsample.Graph.from_csr(z["indptr"], z["indices"])


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(max(args.threads)))
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    results = []
    try:
        print(json.dumps({"loadavg_before": os.getloadavg(), "busy": args.busy,
                          "omp_wait_policy": os.environ["OMP_WAIT_POLICY"]}), flush=True)
        for gname, g in graphs(args):
            rows = measure_graph(args, gname, g)
            for row in rows + ratios(rows):
                print(json.dumps(row), flush=True)
                results.append(row)
        print(json.dumps({"loadavg_after": os.getloadavg()}), flush=True)
    finally:
        for proc in busy:
            proc.kill()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
