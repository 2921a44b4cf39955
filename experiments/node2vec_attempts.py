"""node2vec against a uniform walk per step of one core, beside the rejection rule's attempts
and neighbour tests per step (issue 28: "node2vec <= 2x a uniform walk").

A node2vec step from ``v`` (having come from ``t``) draws by rejection against the bound
``B = max(1, 1/p, 1/q)``: an attempt proposes a uniform position ``u`` of row ``v`` and keeps it
when ``x = open_unit(word) * B`` lies below its value (``1/p`` for ``u = t``, ``1`` for ``u`` in
``N(t)``, ``1/q`` otherwise). The words decide the attempts, so how many a step makes is fixed
by the sampler's definition and the graph, not by the kernel:

* attempts per step ``B d_v / S_v`` in expectation (``S_v`` the sum of the row's values);
* the kernel reads the proposed column unless ``x`` lies below every value, and searches
  ``N(t)`` (a *neighbour test*) only when ``x`` lies between the two values still possible
  for ``u != t``: ``|1 - 1/q| / B`` of the attempts whose ``u`` is not ``t``.

For every graph (R-MAT ``--scale`` and the npz ``--dataset``) and every ``(p, q)`` of ``--pq``,
each round samples one epoch (``--batches`` x ``--batch-size`` seeds, walks of
``--walk-length`` steps, one thread) with ``RandomWalk`` uniform and with node2vec, in an
order that rotates every round, and records the process CPU time. It prints the best ns per
step of each, their ratio, and the rule's expected attempts and neighbour tests per step over
``--pairs`` steps drawn from the node2vec epoch's own steps (each step's ``t``, ``v``; the
common neighbours counted exactly), beside the attempts that a draw with the return entry
folded out of the bound would make (``rule_counts``; not a draw this library makes).

    python experiments/node2vec_attempts.py --scale 18 --pq "0.5,2;1,2;2,0.5;4,1"
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from per_core import DEFAULT_DATASET, graphs  # noqa: E402  (the same graphs as per_core.py)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", default="18", help="R-MAT scale(s), comma-separated; '' for none")
    p.add_argument("--dataset", default=str(DEFAULT_DATASET), help="CSR npz, or 'none'")
    p.add_argument("--pq", default="0.5,2;1,2;2,0.5;4,1",
                   help="node2vec (p, q) pairs: 'p,q;p,q;...'")
    p.add_argument("--walk-length", type=int, default=20)
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pairs", type=int, default=100_000,
                   help="steps whose attempts and tests are counted (drawn from the epoch's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="also write the rows to this JSON file")
    args = p.parse_args(argv)
    try:
        args.pq = [tuple(float(x) for x in pair.split(",")) for pair in args.pq.split(";")
                   if pair.strip()]
    except ValueError:
        p.error(f"--pq: expected 'p,q;p,q', got {args.pq!r}")
    if not args.pq or any(len(pq) != 2 or not min(pq) > 0 for pq in args.pq):
        p.error(f"--pq: every pair needs two positive numbers, got {args.pq!r}")
    for name in ("walk_length", "batches", "batch_size", "rounds", "pairs"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}: must be >= 1")
    return args


def rule_counts(indptr, indices, t, v, p, q):
    """The rejection rule's expected attempts and neighbour tests per step for steps from
    ``v[i]`` having come from ``t[i]`` (shape ``(n,)`` each, rows of ``v`` non-empty).

    Parameters
    ----------
    indptr, indices : numpy.ndarray
        The graph's CSR (sorted, unique columns per row).
    t, v : numpy.ndarray of int, shape (n,)
    p, q : float

    Returns
    -------
    attempts, tests : numpy.ndarray of float, shape (n,)
        ``B d / S`` and ``attempts * (1 - back / d) * |1 - 1/q| / B``, where ``back`` says
        whether ``t`` is in row ``v`` (its proposals are never tested).
    folded : numpy.ndarray of float, shape (n,)
        The attempts of a draw this library does not make (it would change the outputs):
        KnightKing's outlier folding, every entry bounded by ``B' = max(1, 1/q)`` and the
        return entry given its own mass ``max(0, 1/p - B')``: ``(B' d + back max(0, 1/p -
        B')) / S``. It tests ``|1 - 1/q| / B'`` of its position draws not proposing ``t``,
        which per step is ``tests`` again, ``(d - back) |1 - 1/q| / S``: folding saves
        attempts that the column alone rejects, not tests.
    """
    import numpy as np
    import scipy.sparse as sp

    n = indptr.size - 1
    A = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    d = np.diff(indptr)[v].astype(float)
    if np.any(d == 0):
        raise ValueError("rule_counts: argument 'v' holds a vertex without neighbours")
    Av, At = A[v], A[t]
    back = np.asarray(Av[np.arange(v.size), t]).ravel() > 0
    common = np.asarray(Av.multiply(At).sum(axis=1)).ravel()     # u in N(v) and N(t)
    common = common - (back & np.asarray(At[np.arange(v.size), t]).ravel().astype(bool))
    B = max(1.0, 1 / p, 1 / q)
    others = d - back - common
    S = back / p + common + others / q
    attempts = B * d / S
    tests = attempts * (1 - back / d) * abs(1 - 1 / q) / B     # = (d - back) |1 - 1/q| / S
    Bf = max(1.0, 1 / q)
    folded = (Bf * d + back * max(0.0, 1 / p - Bf)) / S
    return attempts, tests, folded


def epoch_steps(bulk):
    """``(t, v)``: the vertex each later step came from and the one it leaves, over the
    bulk's minibatches (hop ``h``'s edges give hop ``h + 1``'s steps; a ``v`` without
    neighbours ends its walk instead)."""
    import numpy as np

    t, v = [], []
    for mb in bulk:
        for dst, src in mb.edges[:-1]:
            t.append(mb.n_id[dst])
            v.append(mb.n_id[src])
    return np.concatenate(t), np.concatenate(v)


def measure_graph(args, gname, g):
    import numpy as np
    import spsample
    from spsample import native

    rng = np.random.default_rng(args.seed)
    seeds = np.concatenate([rng.permutation(g.num_nodes)[:args.batch_size]
                            for _ in range(args.batches)]).astype(np.int64)
    steps = seeds.size * args.walk_length
    samplers = {"walk": spsample.RandomWalk(args.walk_length)}
    for p, q in args.pq:
        samplers[f"p={p:g},q={q:g}"] = spsample.RandomWalk(args.walk_length, p=p, q=q)
    names = list(samplers)
    best = {name: float("inf") for name in names}
    bulks = {}
    threads = native.get_num_threads()
    native.set_num_threads(1)
    try:
        for r in range(args.rounds + 1):                 # round 0 warms up
            for name in names[r % len(names):] + names[:r % len(names)]:
                c = time.process_time()
                bulk = spsample.sample(g, seeds, sampler=samplers[name],
                                       batch_size=args.batch_size, seed=args.seed)
                c = time.process_time() - c
                if bulk.path != "native":
                    raise RuntimeError(f"spsample ran {bulk.path!r}, not the native kernels")
                if r:
                    best[name] = min(best[name], c / steps * 1e9)
                bulks[name] = bulk
    finally:
        native.set_num_threads(threads)
    rows = []
    for (p, q), name in zip(args.pq, names[1:]):
        t, v = epoch_steps(bulks[name])
        moves = np.diff(g.indptr)[v] > 0            # a walk stops at a row without entries
        t, v = t[moves], v[moves]
        pick = rng.choice(t.size, size=min(args.pairs, t.size), replace=False)
        attempts, tests, folded = rule_counts(g.indptr, g.indices, t[pick], v[pick], p, q)
        rows.append({"graph": gname, "p": p, "q": q, "walk_ns": round(best["walk"], 2),
                     "node2vec_ns": round(best[name], 2),
                     "ratio": round(best[name] / best["walk"], 2),
                     "attempts_per_step": round(float(attempts.mean()), 3),
                     "tests_per_step": round(float(tests.mean()), 3),
                     "folded_attempts_per_step": round(float(folded.mean()), 3),
                     "steps_counted": int(pick.size)})
    return rows


def main(argv=None):
    args = parse_args(argv)
    print(json.dumps({"loadavg_before": os.getloadavg()}), flush=True)
    rows = []
    for gname, g in graphs(args):
        for row in measure_graph(args, gname, g):
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(json.dumps({"loadavg_after": os.getloadavg()}), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")     # before numpy: no idle BLAS threads
    sys.exit(main())
