"""Distributed sampling sweep: time per phase and bytes per collective vs c, k, strategy and
sampler (node-wise, LABOR, LADIES).

Run under MPI (ranks oversubscribe freely; one thread each)::

    OMP_NUM_THREADS=1 mpiexec -n 4 python experiments/scaling.py --scale 18 --out runs/p4.json

Rank 0 writes the graph once to an HDF5 file (``--data``, reused when it exists); every rank
then reads only its block rows (``DistGraph.load``). For each replication factor ``c`` (every
divisor of ``p``), bulk size ``k`` (minibatches per rank per call) and strategy, every rank
samples its ``k`` minibatches of ``--batch-size`` seeds (global minibatch ids
``rank * k + i``), then fetches the features of every sampled vertex from a
:class:`FeatureStore`. Recorded per rank: phase times, bytes per collective kind (from the
communicators' counters), sampled edges, remote frontier rows and samples, and where each hop
ran (``modes``: push, pull). The row push ideal is ``8 × (remote frontier rows + remote
samples)`` summed over ranks; layer-wise push reports its rows, draws, member ids and edges.
Each (c, sampler, strategy) starts with ``--warmup`` untimed runs at the smallest k: a
process's first bulk pays one-time costs that no later bulk pays (experiments/README.md).
Rank 0 rewrites ``--out`` after every run (``"complete": false`` until the sweep ends).
"""

import argparse
import json
import os
import platform
import time

import numpy as np

import spsample
from spsample.distributed import DistGraph, FeatureStore, Grid, world


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--edge-factor", type=int, default=16)
    ap.add_argument("--data", default=None,
                    help="HDF5 cache of the graph (default /tmp/rmat<scale>.h5)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--fanouts", default="15,10,5", help="node-wise and LABOR fanouts")
    ap.add_argument("--layer-fanouts", default="512,512", help="LADIES vertices per layer")
    ap.add_argument("--samplers", default="nodewise", help="comma-separated: nodewise,labor,ladies")
    ap.add_argument("--k", default="1,4,16", help="minibatches per rank per call")
    ap.add_argument("--c", default=None, help="replication factors (default: every divisor of p)")
    ap.add_argument("--strategies", default="push,pull")
    ap.add_argument("--features", type=int, default=64, help="feature width (float32)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed runs (smallest k) per c, sampler and strategy before the "
                         "timed ones: a process's first bulk pays one-time costs")
    ap.add_argument("--out", required=True)
    return ap.parse_args()


def ensure_graph(comm, args):
    path = args.data or f"/tmp/spsample_rmat{args.scale}_{args.edge_factor}.h5"
    if comm.rank == 0 and not os.path.exists(path):
        graph = spsample.rmat(args.scale, args.edge_factor, seed=1)
        tmp = path + f".tmp{os.getpid()}"
        spsample.save(spsample.Dataset(graph, name=f"rmat{args.scale}"), tmp, compression=None)
        os.replace(tmp, path)
    comm.barrier()
    return path


def one_run(dg, store, grid, sampler, k, batch_size, strategy, seed):
    comm = grid.comm
    rng = np.random.default_rng(1000 + comm.rank)
    seeds = np.concatenate([rng.choice(dg.num_nodes, batch_size, replace=False) for _ in range(k)])
    comm.barrier()
    grid.reset_stats()
    t0 = time.perf_counter()
    batches = spsample.sample(dg, seeds, sampler=sampler, batch_size=batch_size, seed=seed,
                              batch_offset=comm.rank * k, strategy=strategy)
    t1 = time.perf_counter()
    sample_bytes = grid.stats()
    grid.reset_stats()
    n_id = np.concatenate([mb.n_id for mb in batches])
    t2 = time.perf_counter()
    rows = store.fetch(n_id)
    t3 = time.perf_counter()
    fetch_bytes = grid.stats()
    s = dg.last_stats
    return {
        "rank": comm.rank, "sample_s": t1 - t0, "fetch_s": t3 - t2,
        "validate_s": s["validate_s"], "exchange_s": s.get("exchange_s", 0.0),
        "owner_s": s.get("owner_s", 0.0), "local_s": s.get("local_s", 0.0),
        "mode": s.get("mode"), "modes": s.get("modes"), "sampled_edges": s["sampled_edges"],
        "draws": s.get("draws", 0), "members_sent": s.get("members_sent", 0),
        "layer_edges": s.get("layer_edges", 0),
        "frontier": s.get("frontier", 0), "remote_frontier": s.get("remote_frontier", 0),
        "samples": s.get("samples", 0), "remote_samples": s.get("remote_samples", 0),
        "fetched_rows": s.get("fetched_rows", 0), "fetched_entries": s.get("fetched_entries", 0),
        "feature_rows": int(rows.shape[0]), "feature_unique": store.last_stats["unique"],
        "sample_bytes": sample_bytes, "fetch_bytes": fetch_bytes,
    }


def summarise(per_rank):
    def total(key, kind=None, field="sent"):
        if kind is None:
            return sum(r[key] for r in per_rank)
        return sum(r[key].get(kind, {}).get(field, 0) for r in per_rank)
    exchange = total("sample_bytes", "alltoallv") + total("sample_bytes", "alltoall")
    push = per_rank[0]["mode"] == "push" and not total("layer_edges")
    ideal = 8 * (total("remote_frontier") + total("remote_samples")) if push else None
    return {
        "sample_s_max": max(r["sample_s"] for r in per_rank),
        "fetch_s_max": max(r["fetch_s"] for r in per_rank),
        "sampled_edges": total("sampled_edges"),
        "sampling_bytes": exchange,
        "check_bytes": total("sample_bytes", "allgather_object"),
        "feature_bytes": total("fetch_bytes", "alltoallv") + total("fetch_bytes", "alltoall"),
        "push_ideal_bytes": ideal,     # pull runs: filled from the push run of the same (c, k)
        "ratio_to_push_ideal": exchange / ideal if ideal else None,
        "edges_per_s": total("sampled_edges") / max(r["sample_s"] for r in per_rank),
    }


def fill_pull_ideal(runs):
    """Pull samples exactly what push samples (same seeds): compare it with push's ideal."""
    ideal = {(r["sampler"], r["c"], r["k"]): r["summary"]["push_ideal_bytes"] for r in runs
             if r["strategy"] == "push"}
    for r in runs:
        s = r["summary"]
        key = (r["sampler"], r["c"], r["k"])
        if r["strategy"] == "pull" and ideal.get(key):
            s["push_ideal_bytes"] = ideal[key]
            s["ratio_to_push_ideal"] = s["sampling_bytes"] / s["push_ideal_bytes"]


def report(run):
    s = run["summary"]
    ideal = "" if s["ratio_to_push_ideal"] is None else \
        (f"(push ideal {s['push_ideal_bytes'] / 2**20:8.2f} MiB, "
         f"ratio {s['ratio_to_push_ideal']:.3f})")
    print(f"p={run['p']} c={run['c']} k={run['k']:3d} {run['sampler']:8s} {run['strategy']:4s}: "
          f"sample {s['sample_s_max']:.2f}s fetch {s['fetch_s_max']:.2f}s  "
          f"sampling {s['sampling_bytes'] / 2**20:8.2f} MiB {ideal}  "
          f"features {s['feature_bytes'] / 2**20:8.2f} MiB  {s['sampled_edges']} edges",
          flush=True)


def main():
    args = parse_args()
    comm = world()
    p = comm.size
    path = ensure_graph(comm, args)
    fanouts = [int(x) for x in args.fanouts.split(",")]
    layer = [int(x) for x in args.layer_fanouts.split(",")]
    make = {"nodewise": lambda: spsample.NodeWise(fanouts),
            "labor": lambda: spsample.LABOR(fanouts),
            "ladies": lambda: spsample.LADIES(layer)}
    cs = ([int(x) for x in args.c.split(",")] if args.c
          else [d for d in range(1, p + 1) if p % d == 0])
    ks = [int(x) for x in args.k.split(",")]
    runs = []
    for c in cs:
        grid = Grid(comm, replication=c)
        t0 = time.perf_counter()
        dg = DistGraph.load(path, grid)
        load_s = time.perf_counter() - t0
        lo, hi = grid.block(dg.num_nodes)
        shard = np.random.default_rng(lo).random((hi - lo, args.features), dtype=np.float32)
        store = FeatureStore(grid, dg.num_nodes, lo, shard)
        for name in args.samplers.split(","):
            for strategy in args.strategies.split(","):
                for _ in range(args.warmup):
                    one_run(dg, store, grid, make[name](), min(ks), args.batch_size, strategy,
                            args.seed)
                for k in ks:
                    per_rank = comm.allgather_object(
                        one_run(dg, store, grid, make[name](), k, args.batch_size, strategy,
                                args.seed))
                    run = {"p": p, "c": c, "k": k, "sampler": name, "strategy": strategy,
                           "load_s": load_s, "summary": summarise(per_rank),
                           "per_rank": per_rank}
                    runs.append(run)
                    if comm.rank == 0:
                        report(run)
                        write(args, p, dg, runs, complete=False)
        grid.free()
    if comm.rank == 0:
        write(args, p, dg, runs, complete=True)
        print("wrote", args.out)


def write(args, p, dg, runs, complete):
    """The JSON of the runs so far (rewritten after each run, so a sweep stopped by a time
    limit keeps what it measured; ``complete`` says whether it ended)."""
    fill_pull_ideal(runs)
    out = {"config": {**vars(args), "p": p, "num_nodes": dg.num_nodes,
                      "num_edges": dg.num_edges, "host": platform.node(),
                      "cores": os.cpu_count()}, "complete": complete, "runs": runs}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = f"{args.out}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
