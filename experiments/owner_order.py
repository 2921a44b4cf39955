"""Bytes of one epoch of sharded minibatches, seeds in a random order against
``Loader(order="owner")`` (each rank's minibatches from its own process row's seeds), on a
dataset and on its ``spsample partition`` relabelling loaded with the permutation.

    spsample partition pubmed.h5 --parts 4 --method metis
    OMP_NUM_THREADS=1 mpiexec -n 4 python experiments/owner_order.py pubmed.h5
    OMP_NUM_THREADS=1 mpiexec -n 4 python experiments/owner_order.py pubmed.metis4.h5 \\
        --permutation pubmed.metis4.perm.npz

Every vertex is a seed (minibatches of ``--batch-size``), NodeWise ``--fanouts``, push
sampling, features fetched by the all-to-all; printed on rank 0: the bytes all ranks sent
while sampling and while fetching features, per order.
"""

import argparse

import numpy as np

import spsample
from spsample.distributed import Grid, ShardedDataset
from spsample.loader import Loader


def epoch_bytes(ds, grid, order, args):
    loader = Loader(ds.graph, np.arange(ds.num_nodes), sampler=spsample.NodeWise(args.fanouts),
                    batch_size=args.batch_size, features=ds.features, order=order,
                    rank=grid.rank, world_size=grid.size, pipeline=False, strategy="push")
    for _ in loader:
        pass
    st = loader.last_stats
    mine = np.array([sum(st["sampling_bytes"].values()), sum(st["fetch_bytes"].values())])
    return grid.comm.allreduce(mine)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path")
    p.add_argument("--permutation", default=None)
    p.add_argument("--replication", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--fanouts", type=lambda t: [int(x) for x in t.split(",")], default=[10, 5])
    args = p.parse_args()
    grid = Grid(replication=args.replication)
    ds = ShardedDataset.load(args.path, grid, permutation=args.permutation)
    for order in ("random", "owner"):
        sampling, fetch = epoch_bytes(ds, grid, order, args)
        if grid.rank == 0:
            print(f"{args.path} p={grid.size} c={grid.replication} order={order}: sampling "
                  f"{sampling / 1e6:.2f} MB, feature fetch {fetch / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main()
