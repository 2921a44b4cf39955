"""Random trials of issue 25's reproducer: every rank's distributed bulk (LADIES and FastGCN,
push and pull, c = 1) against the single-process ``spsample.sample`` of the same arguments.

A trial draws an R-MAT graph (scale 10-13, random generator seed) and a seed ``t``; on each
of ``p`` ranks the seeds ``default_rng(t).permutation(n)[:m * p][m * rank:m * (rank + 1)]``
(``m`` = 64 seeds per rank at p <= 4, 32 at p = 8, as in the issue), ``batch_size=16``,
``batch_offset = (m / 16) * rank``, ``seed=t``, ``epoch=1``. A cell (trial, sampler, strategy,
rank) is equal when the rank's minibatches equal the single-process ones bit for bit.

In one process the ranks are threads (``spsample.distributed.run_threads``), for each p of
``--ranks``; under ``mpiexec -n P`` the ranks are the MPI processes (p = P):

    python experiments/conformance_trials.py --trials 100 --ranks 4 8
    OMP_NUM_THREADS=1 SPSAMPLE_THREADS=1 mpiexec -n 4 \
        python experiments/conformance_trials.py --trials 100

Prints one JSON object per p: trials, cells, the differing cells (with both edge counts) and
the seconds taken; the exit status is 1 when any cell differs.
"""

import argparse
import json
import sys
import time

import numpy as np

import spsample
from spsample.distributed import DistGraph, Grid, launched_under_mpi, run_threads, world

SAMPLERS = {"ladies": lambda: spsample.LADIES([64, 64]),
            "fastgcn": lambda: spsample.FastGCN([64, 64])}
STRATEGIES = ("push", "pull")
BATCH = 16


def draw_trials(count, seed):
    """``count`` trials ``(scale, graph seed, t)`` drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(10, 14)), int(rng.integers(1, 10_000)), int(rng.integers(0, 10_000)))
            for _ in range(count)]


def per_rank(p):
    return 64 if p <= 4 else 32


def rank_cells(comm, graph, trial):
    """This rank's differing cells of one trial: ``[(sampler, strategy, rank, edges, ref)]``."""
    _, _, t = trial
    p, rank, m = comm.size, comm.rank, per_rank(comm.size)
    grid = Grid(comm, replication=1)
    dg = DistGraph.from_graph(graph, grid)
    seeds = np.random.default_rng(t).permutation(graph.num_nodes)[:m * p][m * rank:m * (rank + 1)]
    args = dict(batch_size=BATCH, batch_offset=(m // BATCH) * rank, seed=t, epoch=1)
    bad = []
    for name, make in SAMPLERS.items():
        ref = spsample.sample(graph, seeds, sampler=make(), **args)
        for strategy in STRATEGIES:
            out = spsample.sample(dg, seeds, sampler=make(), strategy=strategy, **args)
            if dg.last_stats["modes"] != [strategy] * 2:      # the distributed path, really
                raise RuntimeError(f"expected {strategy} hops, got {dg.last_stats['modes']}")
            if len(out) != len(ref) or not all(a.equals(b) for a, b in zip(out, ref)):
                bad.append((name, strategy, rank,
                            [list(map(int, mb.num_sampled_edges)) for mb in out],
                            [list(map(int, mb.num_sampled_edges)) for mb in ref]))
    grid.free()
    return bad


def run(p, trials, comm=None):
    """All trials at ``p`` ranks (threads, or the MPI ranks of ``comm``); the summary."""
    t0 = time.perf_counter()
    differing = []
    for i, trial in enumerate(trials):
        scale, graph_seed, _ = trial
        graph = spsample.rmat(scale, seed=graph_seed)
        if comm is None:
            per_rank_bad = run_threads(p, rank_cells, graph, trial)
        else:
            per_rank_bad = comm.allgather_object(rank_cells(comm, graph, trial))
        differing += [dict(trial=i, scale=scale, graph_seed=graph_seed, t=trial[2], sampler=s,
                           strategy=st, rank=r, edges=e, single_process=ref)
                      for bad in per_rank_bad for s, st, r, e, ref in bad]
    cells = len(trials) * len(SAMPLERS) * len(STRATEGIES) * p
    return dict(ranks=p, engine="mpi" if comm is not None else "threads", trials=len(trials),
                cells=cells, differing_cells=len(differing),
                differing_trials=len({d["trial"] for d in differing}), differing=differing,
                seconds=round(time.perf_counter() - t0, 1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--ranks", type=int, nargs="+", default=[4, 8],
                        help="world sizes to run with threads (ignored under mpiexec)")
    parser.add_argument("--seed", type=int, default=25, help="draws the trials")
    args = parser.parse_args(argv)
    trials = draw_trials(args.trials, args.seed)
    failed = False
    if launched_under_mpi():
        comm = world()
        result = run(comm.size, trials, comm)
        if comm.rank == 0:
            print(json.dumps(result), flush=True)
        failed = result["differing_cells"] > 0
    else:
        for p in args.ranks:
            result = run(p, trials)
            print(json.dumps(result), flush=True)
            failed |= result["differing_cells"] > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
