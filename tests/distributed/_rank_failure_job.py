"""An MPI job for tests/distributed/test_dist_rank_failure.py (run under ``mpiexec -n P``).

``python _rank_failure_job.py MODE SEED [TARGET]``: with TARGET ``sample`` (the default) every
rank samples a small graph with three samplers (push, pull, layer-wise); with ``cache`` every
rank builds a ``FeatureStore`` and a ``CachedFeatureStore`` in front of it and fetches three
sets of rows through the cache. Unless MODE is ``none``, one rank (drawn from SEED) fails at
a point drawn from SEED among the *events* of that work: the calls its communicators make and
(sampling) the calls of the sampler's ``frontier`` and ``extract``, before or after the call.
MODE:

* ``raise``: ``RuntimeError``; ``exit``: ``sys.exit(message)``; ``memory``: a real
  ``MemoryError`` (an array of 1 EiB); ``kill``: ``SIGKILL`` to itself (nothing printed by it);
* ``uncaught``: the rank raises in this script between two ``sample`` calls (outside spsample),
  while the others go on into the next one;
* ``every``: every rank raises at its first event and catches the error, then samples again
  (only sound with ``SPSAMPLE_ABORT_ON_FAILURE=0``; by default the job is aborted);
* ``none``: no failure; every rank checks its minibatches against the single-process ones.

Each failure's text holds ``injected``, the mode and the event, so the test can find it.
"""

import os
import signal
import sys
import time

import numpy as np

import spsample
from spsample.distributed import CachedFeatureStore, DistGraph, FeatureStore, Grid, world

_COLLECTIVES = ("allreduce", "allgather", "allgatherv", "alltoallv", "bcast",
                "allgather_object", "barrier")
BATCH = 16


class Injector:
    """Counts events while ``active``; at event ``fail_at`` (1-based, ``before`` or after the
    call) fails."""

    def __init__(self, mode):
        self.mode, self.count, self.fail_at, self.before = mode, 0, None, True
        self.active = False

    def around(self, call, *args, **kwargs):
        if not self.active:
            return call(*args, **kwargs)
        self.count += 1
        if self.before:
            self.maybe_fail()
        out = call(*args, **kwargs)
        if not self.before:
            self.maybe_fail()
        return out

    def maybe_fail(self):
        if self.count != self.fail_at:
            return
        text = f"injected {self.mode} at event {self.count} on rank {RANK}"
        sys.stderr.write(f"about to fail: {text}\n")
        sys.stderr.flush()
        if self.mode == "exit":
            sys.exit(text)
        if self.mode == "memory":
            np.ones(1 << 60, dtype=np.uint8)             # MemoryError: Unable to allocate 1 EiB
        if self.mode == "kill":
            time.sleep(0.5)                              # lets mpiexec forward the line above
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError(text)


def instrument(grid, injector):
    """Route the grid's communicator calls through ``injector`` (instance attributes)."""
    for comm in (grid.comm, grid.row_comm, grid.col_comm):
        for name in _COLLECTIVES:
            method = getattr(comm, name)
            setattr(comm, name, lambda *a, _m=method, **k: injector.around(_m, *a, **k))


def samplers(injector):
    class Counted(spsample.NodeWise):
        """NodeWise (still sampled by the owners) whose frontier and extraction are events."""

        def frontier(self, state, ctx):
            return injector.around(super().frontier, state, ctx)

        def extract(self, state, Q, S, ctx):
            return injector.around(super().extract, state, Q, S, ctx)
    return [(Counted([5, 3]), "push"), (Counted([4, 4]), "pull"),
            (spsample.LADIES([30, 20]), "push")]


def sample_work(dg, graph, injector, between=None):
    """Three collective ``sample`` calls on this rank's minibatches; True if all are right."""
    comm = dg.grid.comm
    seeds = np.random.default_rng(0).permutation(graph.num_nodes)[:BATCH * 2 * comm.size]
    mine = seeds[comm.rank * 2 * BATCH:(comm.rank + 1) * 2 * BATCH]
    ok = True
    for i, (sampler, strategy) in enumerate(samplers(injector)):
        if between is not None and i == 1:
            between()
        injector.active = True            # events: only inside the distributed sample
        out = spsample.sample(dg, mine, sampler=sampler, batch_size=BATCH, seed=3,
                              batch_offset=2 * comm.rank, strategy=strategy)
        injector.active = False
        ref = spsample.sample(graph, seeds, sampler=sampler, batch_size=BATCH, seed=3)
        ok &= all(a.equals(b) for a, b in zip(out, ref[2 * comm.rank:2 * comm.rank + 2]))
    return ok


def cache_work(grid, graph, injector, between=None):
    """A FeatureStore, a CachedFeatureStore in front of it and three fetches through the
    cache (all collective); True if every fetched row is the stored one."""
    x = np.arange(graph.num_nodes * 4, dtype=np.float32).reshape(-1, 4)
    scores = np.bincount(graph.indices, minlength=graph.num_nodes)
    injector.active = True
    cached = CachedFeatureStore(FeatureStore.from_array(x, grid),
                                graph.num_nodes // 4 * 16 // grid.replication, scores)
    ok = True
    for i in range(3):
        if between is not None and i == 1:
            injector.active = False
            between()
            injector.active = True
        ids = np.random.default_rng([i, grid.rank]).choice(graph.num_nodes, 100)
        ok &= bool(np.array_equal(cached.fetch(ids), x[ids]))
    injector.active = False
    return ok


def main(mode, seed, target="sample"):
    global RANK
    grid = Grid(replication=2 if target == "cache" and world().size % 4 == 0 else 1)
    RANK = grid.rank
    graph = spsample.rmat(9, seed=5, symmetrize=False)
    injector = Injector(mode)
    instrument(grid, injector)
    if target == "cache":
        dg = None
        work = lambda dg, graph, injector, between=None: cache_work(  # noqa: E731
            grid, graph, injector, between)
    else:
        dg = DistGraph.from_graph(graph, grid)
        work = sample_work
    if mode == "none":
        ok = work(dg, graph, injector)
        say(f"rank {RANK}: {'ok' if ok else 'WRONG'}")
        return 0 if ok else 1
    work(dg, graph, injector)                           # counts this rank's events
    total, injector.count = injector.count, 0
    rng = np.random.default_rng(seed)
    victim = int(rng.integers(grid.size))
    if mode == "every":
        return every_rank_fails(dg, graph, injector, work)
    if mode == "uncaught":
        def between():
            if RANK == victim:
                raise RuntimeError(f"injected uncaught error between two samples on rank {RANK}")
        work(dg, graph, injector, between)
    else:
        if RANK == victim:
            injector.fail_at = int(rng.integers(1, total + 1))
            injector.before = bool(rng.integers(2))
        work(dg, graph, injector)
    say(f"rank {RANK}: finished although a rank should have failed")
    return 0


def every_rank_fails(dg, graph, injector, work):
    injector.fail_at = 1
    try:
        work(dg, graph, injector)
    except RuntimeError as exc:
        say(f"rank {RANK}: caught {exc}")
    injector.fail_at = None
    ok = work(dg, graph, injector)
    say(f"rank {RANK}: {'ok' if ok else 'WRONG'} after the failure")
    return 0 if ok else 1


def say(line):
    """One line on stdout in one write (the launcher merges the ranks' output)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


RANK = 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:]))
