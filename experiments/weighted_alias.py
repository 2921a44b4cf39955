"""Weighted node-wise sampling by the exact keys and by alias tables, against uniform node-wise,
per sampled edge of one core, on several kinds of weights (issue 28: "weighted <= 2x uniform").

For every graph (R-MAT ``--scale`` and the npz ``--dataset``) and kind of weights
(``--weights``), each round samples one epoch (``--batches`` x ``--batch-size`` seeds, fanouts
``--fanouts``) with ``NodeWise`` uniform, ``NodeWise(weighted=True)`` (the exact keys) and
``NodeWise(weighted=True, weighted_method="alias")``, in an order that rotates every round, and
records the process CPU time. It prints, per graph and weights, the best ns per sampled edge
of each and the ratios weighted / uniform. The kinds of weights:

* ``column``: ``1 / (1 + deg u)`` for entry ``(v, u)`` (per_core.py's ``nodewise_w``): a few
  low-degree neighbours hold most of a row's weight;
* ``uniform``: independent draws from U(0.5, 1.5) per entry (flat rows);
* ``exponential``: independent Exp(1) draws per entry.

The alias tables are built before the first round by the kernels' builder, as sampling builds
them (once per graph, like every memoised table), and their build time is printed.

    python experiments/weighted_alias.py --scale 18,20 --threads 1 --rounds 5
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from per_core import DEFAULT_DATASET, graphs  # noqa: E402  (the same graphs as per_core.py)

WEIGHTS = ("column", "uniform", "exponential")
METHODS = ("uniform", "keys", "alias")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="18", help="R-MAT scales, comma-separated ('' for none)")
    p.add_argument("--dataset", default=str(DEFAULT_DATASET),
                   help="an npz with indptr and indices ('none' to skip)")
    p.add_argument("--weights", default=",".join(WEIGHTS))
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write the rows as JSON here")
    args = p.parse_args(argv)
    args.weights = [w for w in args.weights.split(",") if w]
    unknown = sorted(set(args.weights) - set(WEIGHTS))
    if unknown:
        p.error(f"--weights: unknown {unknown}; choose from {list(WEIGHTS)}")
    return args


def weights_of(kind, g, rng):
    """The weights of ``kind`` for ``g``'s entries (float64, shape (num_edges,))."""
    import numpy as np

    if kind == "column":
        return 1.0 / (1.0 + np.diff(g.indptr)[g.indices])
    if kind == "uniform":
        return rng.uniform(0.5, 1.5, g.num_edges)
    return rng.exponential(size=g.num_edges)


def measure(args, gname, g, kind):
    """Rounds of the three samplers on ``g`` with weights ``kind``: one summary row."""
    import numpy as np
    import spsample
    from spsample import native

    rng = np.random.default_rng(args.seed)
    weighted = spsample.Graph.from_csr(g.indptr, g.indices, weights=weights_of(kind, g, rng))
    t = time.perf_counter()
    native.alias_table(weighted)                     # the kernels' builder, as sampling's
    build = time.perf_counter() - t
    weighted.row_weight_stats()
    weighted.screen_weights()
    fan = [int(f) for f in args.fanouts.split(",")]
    runs = {"uniform": (spsample.NodeWise(fan), g),
            "keys": (spsample.NodeWise(fan, weighted=True), weighted),
            "alias": (spsample.NodeWise(fan, weighted=True, weighted_method="alias"), weighted)}
    m = min(args.batches * args.batch_size, g.num_nodes)
    seeds = rng.choice(g.num_nodes, size=m, replace=False).astype(np.int64)
    ns = {name: [] for name in runs}
    for r in range(args.rounds + 1):                 # round 0 warms the caches up
        order = METHODS[r % 3:] + METHODS[:r % 3]
        for name in order:
            sampler, graph = runs[name]
            c = time.process_time()
            bulk = spsample.sample(graph, seeds, sampler=sampler, batch_size=args.batch_size,
                                   seed=args.seed)
            c = time.process_time() - c
            if bulk.path != "native":
                raise RuntimeError(f"spsample ran {bulk.path!r}, not the native kernels")
            if r:
                ns[name].append(c / bulk.num_edges * 1e9)
    best = {name: round(min(v), 1) for name, v in ns.items()}
    return dict(graph=gname, weights=kind, threads=args.threads, rounds=args.rounds,
                table_build_s=round(build, 3), ns_per_edge=best,
                keys_vs_uniform=round(best["keys"] / best["uniform"], 2),
                alias_vs_uniform=round(best["alias"] / best["uniform"], 2),
                alias_vs_keys=round(best["alias"] / best["keys"], 2))


def main(argv=None):
    args = parse_args(argv)
    from spsample import native

    previous = native.set_num_threads(args.threads)
    rows = []
    try:
        print(json.dumps({"loadavg_before": os.getloadavg()}), flush=True)
        for gname, g in graphs(args):
            for kind in args.weights:
                row = measure(args, gname, g, kind)
                print(json.dumps(row), flush=True)
                rows.append(row)
        print(json.dumps({"loadavg_after": os.getloadavg()}), flush=True)
    finally:
        native.set_num_threads(previous)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
