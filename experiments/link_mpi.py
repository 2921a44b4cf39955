"""Link minibatches on a sharded graph under ``mpiexec``: bytes per phase (negatives, sampling;
summed over the ranks, per collective) and time of one ``LinkLoader`` epoch on a
``DistGraph``, push against pull, for the training loader of ``spsample train --task link``
(binary, one uniform negative per edge) and its evaluation loader (triplet, strict).

Each rank reads its block rows (``DistGraph.load``, ``--replication`` c); the seed edges are
the graph's undirected pairs (``src < dst``), the same on every rank. Per configuration and
strategy, one epoch (minibatches of ``--batch-size`` edges, bulks of ``--bulk-size``,
fanouts ``--fanouts``); a run's time is the slowest rank's. Push and pull must give the same
batches, and so must any number of ranks: ``digest`` hashes every batch's fields in global
minibatch order (compare it between runs with ``-n 1``, 2, 4).

    spsample convert ../shared/datasets/musae-facebook fb.h5
    OMP_NUM_THREADS=1 SPSAMPLE_THREADS=1 mpiexec -n 4 python experiments/link_mpi.py fb.h5 \\
        --out link_mpi_4.json
"""

import argparse
import hashlib
import json
import time

import numpy as np

import spsample
from spsample.distributed import DistGraph, Grid, world
from spsample.loader._link_dist import gathered_edge_index

CONFIGS = {
    "train: binary, 1 uniform negative": dict(neg_ratio=1.0, exclude_seed_edges=True),
    "eval: triplet, 20 strict negatives": dict(neg_sampling="triplet", neg_ratio=20,
                                               strict=True, exclude_seed_edges=True),
    "binary, 1 strict degree^0.75 negative": dict(neg_ratio=1.0, strict=True,
                                                  neg_distribution="degree"),
}
FIELDS = ("n_id", "edge_index", "e_id", "edge_label_index", "src_index", "dst_neg_index")


def epoch(loader, comm):
    """``(seconds of the slowest rank, bytes per phase summed over the ranks, digest)``: the
    digest is a SHA-256 of every batch's digest in global minibatch order, so it is the same
    for any number of ranks when the batches are."""
    comm.barrier()
    t0 = time.perf_counter()
    digests = []
    for batch in loader:
        digest = hashlib.sha256()
        for name in FIELDS:
            value = getattr(batch, name)
            if value is not None:
                digest.update(value.numpy().tobytes())
        digests.append(digest.hexdigest())
    seconds = max(comm.allgather_object(time.perf_counter() - t0))
    every = [d for mine in comm.allgather_object(digests) for d in mine]
    stats = loader.last_stats
    mine = {phase: stats[key] for phase, key in (("negatives", "negative_bytes"),
                                                 ("sampling", "sampling_bytes"))}
    total = {}
    for entry in comm.allgather_object(mine):
        for phase, kinds in entry.items():
            for kind, sent in kinds.items():
                total.setdefault(phase, {})[kind] = total.get(phase, {}).get(kind, 0) + sent
    return seconds, total, hashlib.sha256("".join(every).encode()).hexdigest()[:16]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--replication", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--bulk-size", type=int, default=4)
    parser.add_argument("--fanouts", default="10,5")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    comm = world()
    grid = Grid(comm, replication=args.replication)
    dg = DistGraph.load(args.path, grid)
    src, dst = gathered_edge_index(dg)
    once = src < dst
    edges = np.stack([src[once], dst[once]])
    fanouts = [int(f) for f in args.fanouts.split(",")]
    rows = []
    for name, kw in CONFIGS.items():
        digests = {}
        for strategy in ("push", "pull"):
            loader = spsample.LinkLoader(dg, edges, sampler=spsample.NodeWise(fanouts),
                                         batch_size=args.batch_size, bulk_size=args.bulk_size,
                                         strategy=strategy, pipeline=False, seed=0, **kw)
            seconds, total, digests[strategy] = epoch(loader, comm)
            rows.append(dict(config=name, strategy=strategy, ranks=comm.size,
                             replication=args.replication, seconds=seconds, bytes=total,
                             edges=int(edges.shape[1]), digest=digests[strategy]))
            if comm.rank == 0:
                print(json.dumps(rows[-1]), flush=True)
        same = digests["push"] == digests["pull"]
        if comm.rank == 0:
            print(f"{name}: push and pull batches {'identical' if same else 'DIFFER'}")
    if args.out and comm.rank == 0:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
