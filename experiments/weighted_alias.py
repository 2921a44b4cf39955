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

``--same-rows`` adds the three selections on the same rows. Weighted draws visit other rows
than uniform ones (on ``column`` weights, more and shorter ones), so an epoch's ratio mixes
the cost of a selection with the rows it leads to. The replay takes the rows the alias epoch
sampled at each hop (every minibatch's frontier) and samples them again, one hop at a time,
with each method (one ``sample`` call of that hop's fanout per minibatch and hop, the calls'
CPU time summed). It reports ns per sampled edge per hop and in all, with the ratios. Each
hop also gets its rows by the rule the alias method gives them (``whole``: at most s
eligible entries; ``keys``: s times the row's largest share above ``ALIAS_SHARE_MAX``;
``alias``: drawn from the table), counted in rows and sampled edges. ``--by-kind 15,5`` times
one hop at each of those fanouts from random vertices of each kind of row, by each method.

    python experiments/weighted_alias.py --scale 18,20 --threads 1 --rounds 5
    python experiments/weighted_alias.py --scale 18 --weights column --same-rows --by-kind 15,5
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
    p.add_argument("--same-rows", action="store_true",
                   help="also replay every method on the rows the alias epoch sampled")
    p.add_argument("--by-kind", default="",
                   help="fanouts (comma-separated): one hop from each kind of row at each")
    p.add_argument("--out", help="write the rows as JSON here")
    args = p.parse_args(argv)
    args.weights = [w for w in args.weights.split(",") if w]
    args.by_kind = [int(s) for s in args.by_kind.split(",") if s]
    if any(s < 1 for s in args.by_kind):
        p.error("--by-kind: fanouts must be >= 1")
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
    row = dict(graph=gname, weights=kind, threads=args.threads, rounds=args.rounds,
               table_build_s=round(build, 3), ns_per_edge=best,
               keys_vs_uniform=round(best["keys"] / best["uniform"], 2),
               alias_vs_uniform=round(best["alias"] / best["uniform"], 2),
               alias_vs_keys=round(best["alias"] / best["keys"], 2))
    if args.same_rows:
        row["same_rows"] = same_rows(args, g, weighted, fan, seeds, runs)
    for s in args.by_kind:
        row.setdefault("by_kind", {})[str(s)] = by_kind(args, g, weighted, s, rng)
    return row


def one_hop(g, weighted, s):
    """``{method: (sampler, graph)}``: one hop of fanout ``s`` by each method (uniform on
    ``g``, the keys and the alias rule on ``weighted``)."""
    import spsample

    return {"uniform": (spsample.NodeWise([s]), g),
            "keys": (spsample.NodeWise([s], weighted=True), weighted),
            "alias": (spsample.NodeWise([s], weighted=True, weighted_method="alias"), weighted)}


def hop_frontiers(bulk, hops):
    """Per hop h < ``hops``: every minibatch's rows sampled at hop h (its seeds at hop 0, then
    the vertices new at hop h - 1), int64 arrays in minibatch order."""
    import numpy as np

    fronts = [[] for _ in range(hops)]
    for mb in bulk:
        ends = np.cumsum([0] + list(mb.num_sampled_nodes))
        for h in range(hops):
            fronts[h].append(np.asarray(mb.n_id[ends[h]:ends[h + 1]], dtype=np.int64))
    return fronts


def rule_masks(weighted, rows, s):
    """Which of ``rows`` take which alias rule at fanout ``s`` (without replacement):
    ``(eligible, {class: bool mask})`` for ``whole`` (at most s eligible entries), ``keys``
    (s times the row's largest share above ``ALIAS_SHARE_MAX``) and ``alias`` (the table)."""
    import numpy as np
    from spsample.engine._lazy import ALIAS_SHARE_MAX

    _table, share = weighted.alias_table()
    indptr = weighted.indptr
    positive = np.concatenate([[0], np.cumsum(weighted.weights > 0)])
    eligible = positive[indptr[rows + 1]] - positive[indptr[rows]]
    whole = eligible <= s
    keys = ~whole & (s * share[rows] > ALIAS_SHARE_MAX)
    return eligible, {"whole": whole, "keys": keys, "alias": ~whole & ~keys}


def row_classes(weighted, rows, s):
    """The rows' counts by the alias rule they take at fanout ``s`` (:func:`rule_masks`):
    ``{class: [rows, sampled edges]}``."""
    import numpy as np

    eligible, masks = rule_masks(weighted, rows, s)
    return {name: [int(m.sum()), int(np.minimum(eligible[m], s).sum())]
            for name, m in masks.items()}


def by_kind(args, g, weighted, s, rng):
    """One hop of fanout ``s`` from random vertices of each kind of row (:func:`rule_masks`;
    up to ``batches x batch_size`` of them), by each method: ``{kind: {"rows", "edges",
    "ns_per_edge"}}``, best CPU ns per sampled edge over ``args.rounds`` rounds."""
    import numpy as np
    import spsample

    order = rng.permutation(g.num_nodes)
    _eligible, masks = rule_masks(weighted, order, s)
    runs = one_hop(g, weighted, s)
    out = {}
    for kind, mask in masks.items():
        seeds = order[mask][:args.batches * args.batch_size].astype(np.int64)
        if seeds.size == 0:
            continue
        ns = {name: [] for name in METHODS}
        for r in range(args.rounds + 1):
            for name in METHODS[r % 3:] + METHODS[:r % 3]:
                sampler, graph = runs[name]
                c = time.process_time()
                b = spsample.sample(graph, seeds, sampler=sampler, batch_size=args.batch_size,
                                    seed=args.seed + r)
                c = time.process_time() - c
                if b.path != "native":
                    raise RuntimeError(f"spsample ran {b.path!r}, not the native kernels")
                if r and b.num_edges:
                    ns[name].append(c / b.num_edges * 1e9)
        out[kind] = dict(rows=int(seeds.size), edges=int(b.num_edges),
                         ns_per_edge={n: round(min(v), 1) for n, v in ns.items() if v})
    return out


def same_rows(args, g, weighted, fan, seeds, runs):
    """Every method replayed hop by hop on the rows the alias epoch sampled: best CPU ns per
    sampled edge per hop and in all, over ``args.rounds`` rounds (order rotated), with the
    rows' classes (:func:`row_classes`)."""
    import numpy as np
    import spsample

    alias_sampler, _ = runs["alias"]
    bulk = spsample.sample(weighted, seeds, sampler=alias_sampler, batch_size=args.batch_size,
                           seed=args.seed)
    fronts = hop_frontiers(bulk, len(fan))
    cpu = {(name, h): [] for name in METHODS for h in range(len(fan))}
    edges = {}
    for r in range(args.rounds + 1):                 # round 0 warms the caches up
        for name in METHODS[r % 3:] + METHODS[:r % 3]:
            for h, f in enumerate(fan):
                sampler, graph = one_hop(g, weighted, f)[name]
                c, e = 0.0, 0
                for rows in fronts[h]:
                    if rows.size == 0:                   # a minibatch whose hop found no one new
                        continue
                    t = time.process_time()
                    b = spsample.sample(graph, rows, sampler=sampler, batch_size=len(rows),
                                        seed=args.seed + r)
                    c += time.process_time() - t
                    if b.path != "native":
                        raise RuntimeError(f"spsample ran {b.path!r}, not the native kernels")
                    e += b.num_edges
                edges[h] = e
                if r:
                    cpu[(name, h)].append(c)
    if sum(edges.values()) != bulk.num_edges:
        raise RuntimeError("the replayed hops did not sample the epoch's edges")
    hops, total = [], {name: 0.0 for name in METHODS}
    for h, f in enumerate(fan):
        best = {name: min(cpu[(name, h)]) for name in METHODS}
        for name in METHODS:
            total[name] += best[name]
        rows = np.concatenate(fronts[h])
        ns = {name: round(best[name] / edges[h] * 1e9, 1) for name in METHODS}
        hops.append(dict(hop=h, fanout=f, rows=int(rows.size), edges=edges[h], ns_per_edge=ns,
                         alias_vs_uniform=round(ns["alias"] / ns["uniform"], 2),
                         classes=row_classes(weighted, rows, f)))
    ns = {name: round(total[name] / bulk.num_edges * 1e9, 1) for name in METHODS}
    return dict(hops=hops, ns_per_edge=ns,
                alias_vs_uniform=round(ns["alias"] / ns["uniform"], 2),
                keys_vs_uniform=round(ns["keys"] / ns["uniform"], 2))


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
