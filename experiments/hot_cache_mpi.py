"""CachedFeatureStore under MPI: bytes across process rows (the column all-to-all) with and
without a hot cache of 10% of the rows per process row (by in-degree), for the n_id of
node-wise minibatches, each rank sampling its own seeds; rows checked identical.

    mpiexec -n 4 python experiments/hot_cache_mpi.py --out R.json
"""

import argparse
import json
import sys

import numpy as np

import spsample
from spsample.distributed import CachedFeatureStore, FeatureStore, Grid, world


def run(g, x, c, share, rounds):
    comm = world()
    grid = Grid(comm, replication=c)
    store = FeatureStore.from_array(x, grid)
    row_bytes = x.shape[1] * x.itemsize
    scores = np.bincount(g.indices, minlength=g.num_nodes)
    cached = CachedFeatureStore(store, int(share * g.num_nodes) * row_bytes // c, scores)
    col = {"plain": 0, "cached": 0}
    row_bytes_sent = 0
    same = True
    hits = cold = 0
    for r in range(rounds):
        seeds = np.random.default_rng([r, comm.rank]).choice(g.num_nodes, 1024, replace=False)
        mbs = spsample.sample(g, seeds, sampler=spsample.NodeWise([10, 5]), batch_size=256,
                              seed=r)
        ids = np.concatenate([mb.n_id for mb in mbs])
        for name, src in (("plain", store), ("cached", cached)):
            grid.reset_stats()
            got = src.fetch(ids)
            col[name] += grid.col_comm.stats().get("alltoallv", {}).get("received", 0)
            if name == "cached":
                row_bytes_sent += grid.row_comm.stats().get("alltoallv", {}).get("received", 0)
                same &= got.tobytes() == x[ids].tobytes()
                hits += cached.last_stats["hits"]
                cold += cached.last_stats["cold"]
    tot = comm.allreduce(np.array([col["plain"], col["cached"], row_bytes_sent, hits, cold,
                                   int(not same)], dtype=np.int64))
    grid.free()
    return {"c": c, "cache_share": share, "col_bytes_plain": int(tot[0]),
            "col_bytes_cached": int(tot[1]), "ratio": float(tot[1] / max(1, tot[0])),
            "row_bytes": int(tot[2]), "hits": int(tot[3]), "cold": int(tot[4]),
            "remote_hit_rate": float(tot[3] / max(1, tot[3] + tot[4])),
            "identical": bool(tot[5] == 0)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=16)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    g = spsample.rmat(args.scale, seed=3)
    x = np.random.default_rng(0).standard_normal((g.num_nodes, 64)).astype(np.float32)
    size = world().size
    rows = [run(g, x, c, share, args.rounds) for c in (1, 2) if size % c == 0
            for share in (0.05, 0.1, 0.2)]
    if world().rank == 0:
        for r in rows:
            print(r, flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
