"""Push against pull for heterogeneous node-wise sampling under ``mpiexec``: bytes (summed over
the ranks, per collective) and time of ``spsample.sample`` on a ``DistHeteroGraph``.

Each file is loaded with ``load_hetero_dataset`` (each rank reads its block rows of every
relation into a ``DistHeteroGraph``; ``--replication`` c). One epoch's seeds are every vertex
of the target type (HeCo DBLP: authors, ACM: papers), shuffled, cut into minibatches of
``--batch-size``, each rank a contiguous share (as the loader splits an epoch), sampled in
bulks of ``--bulk-size``
minibatches with fanouts ``--fanouts`` per relation and hop. Push and pull run alternately
``--repeat`` times; a run's time is the slowest rank's, from a barrier to its last bulk;
reported: the best run, and the bytes (the same in every run). The two strategies' minibatches
are compared: they must be equal bit for bit.

``--temporal`` samples temporally (a file with edge or node times, e.g. ``spsample convert
--format temporal`` of a SNAP edge list): each seed gets a time drawn uniformly between the
graph's earliest and latest entry times (``numpy.random.default_rng(1)``, the same on every
rank), so each seed's subgraph holds the entries no later than it (``--strategy-temporal``
``uniform`` or ``last``); the seeds are the vertices of ``--seed-type`` (default: the
file's target type, or its only node type).

    spsample convert ../shared/datasets/heco-hetero/dblp dblp.h5
    OMP_NUM_THREADS=1 SPSAMPLE_THREADS=1 mpiexec -n 4 python experiments/hetero_push_pull.py \\
        dblp.h5 acm.h5 --out push_pull_4.json
    spsample convert --format temporal ../shared/datasets/snap-collegemsg/CollegeMsg.txt msg.h5
    OMP_NUM_THREADS=1 SPSAMPLE_THREADS=1 mpiexec -n 4 python experiments/hetero_push_pull.py \\
        msg.h5 --temporal --fanouts 5,5
"""

import argparse
import json
import time

import numpy as np

import spsample
from spsample.distributed import Grid, load_hetero_dataset, world

COUNTERS = ("frontier", "remote_frontier", "samples", "remote_samples", "fetched_rows",
            "fetched_entries", "sampled_edges")


def epoch_share(dg, target, batch_size, comm, temporal):
    """This rank's seeds of one epoch (a permutation of the target type), their times (or
    ``None``) and its first minibatch's global id."""
    n = dg.num_nodes[target]
    seeds = np.random.default_rng(0).permutation(n)
    times = seed_times(dg, n) if temporal else None
    num_batches = -(-n // batch_size)
    per_rank = -(-num_batches // comm.size)
    first = min(comm.rank * per_rank, num_batches)
    last = min(first + per_rank, num_batches)
    part = slice(first * batch_size, last * batch_size)
    return seeds[part], None if times is None else times[part], first, per_rank


def seed_times(dg, n):
    """``n`` times drawn uniformly between the earliest and the latest entry time of the
    graph (over every rank's rows)."""
    lo, hi = np.inf, -np.inf
    for rel in dg.relations:
        block = dg.time_sorted(rel)
        if block is not None and block.entry_time.size:
            lo, hi = min(lo, block.entry_time.min()), max(hi, block.entry_time.max())
    lo = dg.grid.comm.allreduce(np.array([lo]), op="min")[0]
    hi = dg.grid.comm.allreduce(np.array([hi]), op="max")[0]
    return np.random.default_rng(1).uniform(lo, hi, n)


def run(dg, target, seeds, times, first, per_rank, args, strategy):
    """One epoch share in bulks: (minibatches, seconds on this rank, counters, bytes)."""
    grid = dg.grid
    options = {"temporal_strategy": args.strategy_temporal} if args.temporal else {}
    sampler = spsample.NodeWise([int(f) for f in args.fanouts.split(",")], **options)
    b, k = args.batch_size, args.bulk_size
    counters, out = dict.fromkeys(COUNTERS, 0), []
    grid.reset_stats()
    grid.comm.barrier()
    t0 = time.perf_counter()
    for j in range(0, per_rank, k):            # the same number of calls on every rank
        part = seeds[j * b:(j + k) * b]
        out += spsample.sample(dg, (target, part), sampler=sampler, batch_size=b, seed=1,
                               batch_offset=first + j, strategy=strategy,
                               seed_time=None if times is None else times[j * b:(j + k) * b])
        for name in COUNTERS:
            counters[name] += dg.last_stats.get(name, 0)
    seconds = time.perf_counter() - t0
    sent = {kind: entry["sent"] for kind, entry in grid.stats().items()}
    return out, seconds, counters, sent


def measure(path, args):
    comm = world()
    grid = Grid(comm, replication=args.replication)
    ds = load_hetero_dataset(path, grid)            # its graph: a DistHeteroGraph
    dg = ds.graph
    target = args.seed_type or ds.target_type or dg.node_types[0]
    seeds, times, first, per_rank = epoch_share(dg, target, args.batch_size, comm,
                                                args.temporal)
    best, results = {}, {}
    for _ in range(args.repeat):
        for strategy in ("push", "pull"):
            out, seconds, counters, sent = run(dg, target, seeds, times, first, per_rank,
                                               args, strategy)
            slowest = comm.allreduce(np.array([seconds]), op="max")[0]
            best[strategy] = min(best.get(strategy, np.inf), float(slowest))
            results[strategy] = (out, counters, sent)
    same = all(a.equals(b) for a, b in zip(results["push"][0], results["pull"][0]))
    row = {"file": str(path), "ranks": comm.size, "replication": args.replication,
           "fanouts": args.fanouts, "batch_size": args.batch_size,
           "bulk_size": args.bulk_size, "seed_type": target,
           "temporal": args.strategy_temporal if args.temporal else None,
           "identical": bool(comm.allreduce(
               np.array([int(same)]), op="min")[0])}
    for strategy, (_, counters, sent) in results.items():
        kinds = sorted(sent)
        total = comm.allreduce(np.array([sent[k] for k in kinds] +
                                        [counters[c] for c in COUNTERS], dtype=np.int64))
        row[strategy] = {"seconds": best[strategy],
                         "sent_bytes": {k: int(v) for k, v in zip(kinds, total)},
                         "total_sent_bytes": int(total[:len(kinds)].sum()),
                         **{c: int(v) for c, v in zip(COUNTERS, total[len(kinds):])}}
    row["bytes_pull_over_push"] = row["pull"]["total_sent_bytes"] / max(
        row["push"]["total_sent_bytes"], 1)
    row["time_pull_over_push"] = best["pull"] / best["push"]
    grid.free()
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", help="heterogeneous spsample HDF5 files")
    p.add_argument("--fanouts", default="10,10", help="per relation and hop, hop 1 first")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--bulk-size", type=int, default=4)
    p.add_argument("--replication", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=None)
    p.add_argument("--seed-type", default=None, help="node type of the seeds")
    p.add_argument("--temporal", action="store_true", help="seeds with times (see above)")
    p.add_argument("--strategy-temporal", choices=("uniform", "last"), default="uniform")
    args = p.parse_args(argv)
    rows = [measure(f, args) for f in args.files]
    if world().rank == 0:
        for r in rows:
            print(json.dumps(r), flush=True)
        if args.out:
            with open(args.out, "w") as fh:
                json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
