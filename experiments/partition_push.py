"""Push sampling bytes on relabelled datasets (``spsample partition --method metis|block``):
every rank samples seeds from its own block of rows (owner-compute, as DSP does), node-wise
``--fanouts``, with ``strategy="push"``; bytes per collective summed over the ranks.

    mpiexec -n 4 python experiments/partition_push.py A.block4.h5 A.metis4.h5 --out R.json
"""

import argparse
import json
import sys

import numpy as np

import spsample
from spsample.distributed import DistGraph, Grid, world


def measure(path, fanouts, batch_size, per_rank):
    comm = world()
    grid = Grid(comm, replication=1)
    dg = DistGraph.load(path, grid)
    lo, hi = grid.block(dg.num_nodes)
    ids = np.arange(lo, hi, dtype=np.int64)
    seeds = np.random.default_rng(comm.rank).permutation(ids)[:per_rank]
    seeds = np.sort(seeds)[:(seeds.size // batch_size) * batch_size or seeds.size]
    grid.reset_stats()
    dg.sample(seeds, sampler=spsample.NodeWise(fanouts), batch_size=batch_size,
              batch_offset=comm.rank * 10**6, strategy="push")
    stats = grid.stats()
    s = dg.last_stats
    sent = {k: v["sent"] for k, v in stats.items()}
    kinds = sorted(sent)
    local = np.array([sent[k] for k in kinds] + [s.get("remote_frontier", 0),
                     s.get("remote_samples", 0), s.get("frontier", 0)], dtype=np.int64)
    total = comm.allreduce(local)
    out = {"file": str(path), "ranks": comm.size,
           "sent_bytes": {k: int(v) for k, v in zip(kinds, total)},
           "total_sent_bytes": int(total[:len(kinds)].sum()),
           "remote_frontier": int(total[-3]), "remote_samples": int(total[-2]),
           "frontier": int(total[-1])}
    grid.free()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--fanouts", default="10,5")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--seeds-per-rank", type=int, default=4096)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    rows = [measure(f, fanouts, args.batch_size, args.seeds_per_rank) for f in args.files]
    if world().rank == 0:
        for r in rows:
            print(r, flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
