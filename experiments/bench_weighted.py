"""Per-core cost of weighted node-wise sampling and node2vec walks against their uniform twins.

Prints one JSON line per (graph, sampler): ns of CPU time (``time.process_time``, so run it with
``SPSAMPLE_THREADS=1``) per sampled edge, the minimum over ``--repeat`` runs, and the ratios
weighted / uniform node-wise (per sampled edge) and node2vec / uniform walk (per step). The
samplers run alternated (uniform, weighted, walk, node2vec, again ...) so load changes hit all
alike. Graphs: R-MAT ``--scale`` (default 18) and law-cnr-2000 when present; the weighted graph
carries i.i.d. uniform (0, 1] weights (a fixed seed). Compare two builds by running the same
script with ``PYTHONPATH`` pointing at each checkout.

Run: SPSAMPLE_THREADS=1 python experiments/bench_weighted.py [--scale 18] [--repeat 5]
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

DATASET = (Path(__file__).resolve().parents[2] / "shared" / "datasets" / "law-cnr-2000"
           / "cnr-2000.npz")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--dataset", default=str(DATASET), help="npz with indptr/indices, or 'none'")
    ap.add_argument("--batches", type=int, default=16, help="minibatches per bulk")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--fanouts", default="15,10,5")
    ap.add_argument("--walk-length", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    return ap.parse_args(argv)


def graphs(args):
    import spsample

    yield f"rmat{args.scale}", spsample.rmat(args.scale, seed=1)
    if args.dataset.lower() != "none" and Path(args.dataset).is_file():
        with np.load(args.dataset) as z:
            yield Path(args.dataset).stem, spsample.Graph.from_csr(z["indptr"], z["indices"])


def samplers(args, g):
    """``name -> (sampler, graph)``; the weighted graph has the same rows, random weights."""
    import spsample

    fan = [int(f) for f in args.fanouts.split(",")]
    w = np.random.default_rng(7).random(g.indices.size)
    w = 1.0 - w  # in (0, 1]
    gw = spsample.Graph.from_csr(g.indptr, g.indices, weights=w)
    return {"uniform": (spsample.NodeWise(fan), g),
            "weighted": (spsample.NodeWise(fan, weighted=True), gw),
            "walk": (spsample.RandomWalk(args.walk_length), g),
            "node2vec": (spsample.RandomWalk(args.walk_length, p=0.5, q=2.0), g)}


def main(argv=None):
    import spsample

    args = parse_args(argv)
    load = os.getloadavg()
    for name, g in graphs(args):
        rng = np.random.default_rng(3)
        n_seeds = args.batches * args.batch_size
        seeds = rng.choice(g.num_nodes, size=n_seeds, replace=False)
        # walks start only where a step is possible (a walk that stops samples no edges)
        deg = np.diff(g.indptr)
        walk_seeds = rng.choice(np.flatnonzero(deg > 0), size=n_seeds, replace=False)
        table = samplers(args, g)
        best = {k: float("inf") for k in table}
        edges = {}
        for _ in range(args.repeat):
            for key, (sampler, graph) in table.items():
                s = walk_seeds if key in ("walk", "node2vec") else seeds
                t = time.process_time()
                bulk = spsample.sample(graph, s, sampler=sampler, batch_size=args.batch_size,
                                       seed=5)
                dt = time.process_time() - t
                best[key] = min(best[key], dt)
                edges[key] = bulk.num_edges
                del bulk
        ns = {k: 1e9 * best[k] / edges[k] for k in table}
        print(json.dumps({"graph": name, "threads": os.environ.get("SPSAMPLE_THREADS"),
                          "load": [round(x, 2) for x in load],
                          "ns_per_edge": {k: round(v, 2) for k, v in ns.items()},
                          "edges": edges,
                          "weighted/uniform": round(ns["weighted"] / ns["uniform"], 2),
                          "node2vec/walk": round(ns["node2vec"] / ns["walk"], 2),
                          "so": spsample.__file__}), flush=True)


if __name__ == "__main__":
    main()
