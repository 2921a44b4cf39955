"""ThreadComm and run_threads: every collective of the Communicator interface with ranks that
are threads of this process, MPI's byte counts, and the failure semantics (one rank fails:
the others raise, nothing hangs, the process is not aborted).

Serial only (under ``mpiexec`` each rank would repeat the same threads), except
:func:`test_byte_counts_are_mpicomms`, which runs only under ``mpiexec`` and compares the
counts with MPIComm's on the same collectives."""

import doctest
import sys
import threading
import time

import numpy as np
import pytest

import spsample
from spsample._errors import ArgumentError, ArgumentTypeError, DistributedError
from spsample.distributed import (DistGraph, FeatureStore, Grid, SelfComm, ThreadComm,
                                  launched_under_mpi, run_threads, world)
from spsample.distributed import _threadcomm

from _dist_helpers import mpi_timeout, world_comm

serial_only = pytest.mark.skipif(launched_under_mpi(), reason="threads of one process: serial")
pytestmark = [mpi_timeout(120)]


def exercise(comm):
    """One of each collective (with fixed contents per rank); the results and byte counts."""
    r, p = comm.rank, comm.size
    counts = np.array([(r + q) % 3 for q in range(p)], dtype=np.int64)
    rows = np.concatenate([np.full((c, 2), 10 * r + q, dtype=np.int32) for q, c in
                           enumerate(counts)]) if counts.sum() else np.zeros((0, 2), np.int32)
    out = {}
    out["a2a"], rc = comm.alltoallv(rows, counts)
    out["a2a_plan"], _ = comm.alltoallv(rows.astype(np.float64), counts, recvcounts=rc)
    out["rc"] = rc
    out["sum"] = comm.allreduce(np.array([r, 2.5 * r]), op="sum")
    out["max"] = comm.allreduce(np.array([r, -r], dtype=np.int64), op="max")
    out["min"] = comm.allreduce(np.array([r, -r], dtype=np.int64), op="min")
    out["gather"] = comm.allgather(np.array([r, r * r], dtype=np.int64))
    out["gatherv"] = comm.allgatherv(np.arange(r + 1, dtype=np.float32))
    out["gatherv2d"] = comm.allgatherv(np.full((r % 2, 3), r, dtype=np.int16))
    out["bcast"] = comm.bcast({"from": p - 1, "rank": r}, root=p - 1)
    out["objects"] = comm.allgather_object(("rank", r))
    comm.barrier()
    out["stats"] = comm.stats()
    return out


def check_exercise(out, p):
    total = sum(range(p))
    for r, o in enumerate(out):
        sent_to_me = np.array([(q + r) % 3 for q in range(p)])     # rank q's count for r
        assert np.array_equal(o["rc"], sent_to_me)
        expect = np.concatenate([np.full((c, 2), 10 * q + r, np.int32)
                                 for q, c in enumerate(sent_to_me)])
        assert o["a2a"].dtype == np.int32 and np.array_equal(o["a2a"], expect)
        assert o["a2a_plan"].dtype == np.float64 and np.array_equal(o["a2a_plan"], expect)
        assert np.array_equal(o["sum"], [total, 2.5 * total])
        assert np.array_equal(o["max"], [p - 1, 0]) and np.array_equal(o["min"], [0, -(p - 1)])
        assert np.array_equal(o["gather"], [[q, q * q] for q in range(p)])
        assert np.array_equal(o["gatherv"],
                              np.concatenate([np.arange(q + 1, dtype=np.float32)
                                              for q in range(p)]))
        assert o["gatherv2d"].shape == (sum(q % 2 for q in range(p)), 3)
        assert o["bcast"] == {"from": p - 1, "rank": p - 1}
        assert o["objects"] == [("rank", q) for q in range(p)]


def expected_stats(r, p):
    """MPIComm's counting rules, written out for :func:`exercise` on rank ``r`` of ``p``."""
    import pickle
    counts = np.array([(r + q) % 3 for q in range(p)])
    recv = np.array([(q + r) % 3 for q in range(p)])
    a2a_sent = 8 * int(counts.sum() - counts[r]) + 16 * int(counts.sum() - counts[r])
    a2a_recv = 8 * int(recv.sum() - recv[r]) + 16 * int(recv.sum() - recv[r])
    other = p - 1
    obj = len(pickle.dumps({"from": p - 1, "rank": p - 1})) if p > 1 else 0
    mine = len(pickle.dumps(("rank", r)))
    others = sum(len(pickle.dumps(("rank", q))) for q in range(p) if q != r)
    gv = 4 * sum(q + 1 for q in range(p) if q != r)
    gv2 = 6 * sum(q % 2 for q in range(p) if q != r)
    return {
        "alltoall": {"calls": 1, "sent": 8 * other, "received": 8 * other},
        "alltoallv": {"calls": 2, "sent": a2a_sent, "received": a2a_recv},
        "allreduce": {"calls": 3, "sent": 48 if p > 1 else 0, "received": 48 if p > 1 else 0},
        "allgather": {"calls": 3, "sent": 16 * other + 2 * 8 * other,
                      "received": 16 * other + 2 * 8 * other},
        "allgatherv": {"calls": 2, "sent": 4 * (r + 1) * other + 6 * (r % 2) * other,
                       "received": gv + gv2},
        "bcast": {"calls": 1, "sent": obj * other if r == p - 1 else 0,
                  "received": 0 if r == p - 1 else obj},
        "allgather_object": {"calls": 1, "sent": mine * other, "received": others},
    }


@serial_only
@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
def test_every_collective_and_its_bytes(p):
    out = run_threads(p, exercise)
    check_exercise(out, p)
    for r, o in enumerate(out):
        assert o["stats"] == expected_stats(r, p), r


@pytest.mark.skipif(not launched_under_mpi(), reason="compares with MPIComm under mpiexec")
def test_byte_counts_are_mpicomms():
    """The same collectives on MPIComm (this job's ranks) and on ThreadComm (as many threads
    in each process): the same results and the same byte counts, rank by rank."""
    from spsample.distributed import MPIComm
    from mpi4py import MPI
    comm = world_comm()
    mpi = MPIComm(MPI.COMM_WORLD)
    try:
        mine = exercise(mpi)
    finally:
        mpi.free()
    threaded = run_threads(comm.size, exercise)[comm.rank]
    same = mine["stats"] == threaded["stats"] and all(
        np.array_equal(mine[k], threaded[k]) for k in ("a2a", "a2a_plan", "rc", "sum",
                                                       "gather", "gatherv", "gatherv2d"))
    flags = comm.allgather_object(same)
    assert all(flags), (mine["stats"], threaded["stats"])


@serial_only
def test_split_makes_sub_communicators_and_dup_a_new_one():
    def body(comm):
        sub = comm.split(comm.rank % 2, key=-comm.rank)
        inner = sub.split(0)
        dup = comm.dup()
        return (isinstance(sub, ThreadComm), sub.rank, sub.size, sub.world_rank,
                int(sub.allreduce(np.array([comm.rank]))[0]), inner.size,
                dup.rank, dup.allgather_object(comm.rank), dup.stats() != comm.stats())
    out = run_threads(4, body)
    assert [o[:4] for o in out] == [(True, 1, 2, 0), (True, 1, 2, 1), (True, 0, 2, 2),
                                    (True, 0, 2, 3)]
    assert [o[4] for o in out] == [2, 4, 2, 4] and all(o[5] == 2 for o in out)
    assert [o[6] for o in out] == [0, 1, 2, 3] and all(o[7] == [0, 1, 2, 3] for o in out)


@serial_only
def test_data_are_copied_never_shared():
    """A sender changing its buffer after the collective, or a receiver changing what it got,
    changes nothing on the other ranks (as between processes)."""
    def body(comm):
        send = np.full(4, comm.rank, dtype=np.int64)
        got, _ = comm.alltoallv(send, np.ones(comm.size, dtype=np.int64) * (4 // comm.size))
        send[:] = -1
        gathered = comm.allgather(send)
        obj = comm.bcast({"list": [1, 2]}, root=0)
        obj["list"].append(comm.rank)
        comm.barrier()
        return got, gathered, obj
    out = run_threads(2, body)
    assert out[0][0].tolist() == [0, 0, 1, 1] and out[1][0].tolist() == [0, 0, 1, 1]
    assert out[0][2] == {"list": [1, 2, 0]} and out[1][2] == {"list": [1, 2, 1]}


@serial_only
def test_world_and_grid_without_comm_inside_a_rank():
    """Inside run_threads, world() is a duplicate of the rank's communicator, so Grid() and
    anything else using the default world see p ranks; outside, a SelfComm."""
    def body(comm):
        grid = Grid(replication=2)
        return grid.size, grid.rank, grid.num_rows, world().size
    assert run_threads(4, body) == [(4, r, 2, 4) for r in range(4)]
    assert isinstance(world(), SelfComm) or launched_under_mpi()


# ---------------------------------------------------------------------------------- failures
class Boom(ValueError):
    pass


@serial_only
def test_a_failing_rank_makes_the_others_raise_and_its_error_is_reraised():
    seen = {}

    def body(comm):
        if comm.rank == 2:
            raise Boom("rank 2 broke")
        try:
            comm.allreduce(np.ones(3))
        except DistributedError as exc:
            seen[comm.rank] = str(exc)
            raise
    t0 = time.perf_counter()
    with pytest.raises(Boom, match="rank 2 broke") as info:
        run_threads(4, body)
    assert time.perf_counter() - t0 < 10
    assert "raised on rank 2" in "".join(getattr(info.value, "__notes__", []))
    assert sorted(seen) == [0, 1, 3] and all("rank 2 failed" in m and "Boom" in m
                                             for m in seen.values())


@serial_only
def test_the_lowest_failing_rank_is_reraised():
    def body(comm):
        comm.barrier()
        if comm.rank in (1, 3):
            raise Boom(f"rank {comm.rank}")
    with pytest.raises(Boom, match="rank 1"):
        run_threads(4, body)


@serial_only
def test_a_rank_failing_alone_inside_sample_does_not_abort_the_process(monkeypatch):
    """Where MPIComm aborts the job (one rank fails inside DistGraph.sample while the others
    wait in its collectives), ThreadComm makes the others raise; the process survives even
    with MPI initialised (mpi4py imported) and the abort on."""
    pytest.importorskip("mpi4py.MPI")
    from spsample.distributed import _sampling
    graph = spsample.rmat(8, seed=2)
    real = _sampling._PushHop._serve

    def serve(self, ctx, received, rcounts):
        if self.dg.grid.rank == 1:
            raise MemoryError("rank 1 ran out of memory while serving")
        return real(self, ctx, received, rcounts)
    monkeypatch.setattr(_sampling._PushHop, "_serve", serve)

    def body(comm):
        dg = DistGraph.from_graph(graph, Grid(comm))
        return spsample.sample(dg, [comm.rank, 10 + comm.rank], sampler=spsample.NodeWise([3]),
                               batch_size=2, batch_offset=comm.rank)
    with pytest.raises(MemoryError, match="rank 1 ran out"):
        run_threads(3, body)
    monkeypatch.undo()
    assert len(run_threads(3, body)) == 3          # the next world works


@serial_only
def test_every_rank_raising_the_same_typed_error():
    """A bad argument on one rank: every rank raises the same typed error (agree); the one
    re-raised is rank 0's."""
    graph = spsample.rmat(7, seed=1)

    def body(comm):
        dg = DistGraph.from_graph(graph, Grid(comm))
        seeds = [10 ** 6] if comm.rank == 2 else [comm.rank]
        return spsample.sample(dg, seeds, sampler=spsample.NodeWise([2]), batch_size=1,
                               batch_offset=comm.rank)
    with pytest.raises(spsample.SeedError, match="rank 2") as info:
        run_threads(3, body)
    assert "raised on rank 0" in "".join(info.value.__notes__)


@serial_only
def test_a_rank_stuck_outside_the_collectives_is_named():
    release = threading.Event()

    def body(comm):
        if comm.rank == 1:
            release.wait(30)           # stuck (released by the test at the end)
            return "late"
        return "done"
    t0 = time.perf_counter()
    try:
        with pytest.raises(DistributedError, match=r"rank\(s\) \[1\] of 3 still running"):
            run_threads(3, body, timeout=0.5)
    finally:
        release.set()
    assert time.perf_counter() - t0 < 10


@serial_only
def test_a_collective_waiting_past_the_timeout_names_the_missing_rank():
    release = threading.Event()

    def body(comm):
        if comm.rank == 0:
            release.wait(30)
        comm.barrier()
    try:
        with pytest.raises(DistributedError, match=r"rank\(s\) \[0\] of 2 still running") as info:
            run_threads(2, body, timeout=0.5)
    finally:
        release.set()
    # rank 1 gave up waiting first, naming rank 0
    assert "rank(s) [0] did not reach this collective" in str(info.value.__cause__)


@serial_only
def test_a_rank_that_ends_early_or_calls_another_collective():
    def early(comm):
        if comm.rank == 0:
            comm.barrier()
    with pytest.raises(DistributedError, match=r"rank\(s\) \[1\], whose function has returned"):
        run_threads(2, early)

    def mismatched(comm):
        return comm.bcast(1) if comm.rank == 0 else comm.allgather_object(1)
    with pytest.raises(DistributedError, match="different collectives"):
        run_threads(2, mismatched)

    def wrong_plan(comm):
        comm.alltoallv(np.arange(2), [1, 1], recvcounts=[2, 2])
    with pytest.raises(DistributedError, match="plan that does not match"):
        run_threads(2, wrong_plan)


@serial_only
def test_arguments_are_checked():
    with pytest.raises(ArgumentTypeError, match="'size'"):
        run_threads(2.0, lambda comm: None)
    with pytest.raises(ArgumentTypeError, match="'size'"):
        run_threads(True, lambda comm: None)
    with pytest.raises(ArgumentError, match="'size'"):
        run_threads(0, lambda comm: None)
    with pytest.raises(ArgumentError, match="'timeout'"):
        run_threads(2, lambda comm: None, timeout=0)
    with pytest.raises(ArgumentError, match="'timeout'"):
        run_threads(2, lambda comm: None, timeout=float("nan"))
    with pytest.raises(ArgumentTypeError, match="'timeout'"):
        run_threads(2, lambda comm: None, timeout="1")
    with pytest.raises(ArgumentTypeError, match="'body'"):
        run_threads(2, "body")
    with pytest.raises(ArgumentError, match="'size'"):
        ThreadComm.create(-1)
    with pytest.raises(ArgumentTypeError, match="ThreadComm.create"):
        ThreadComm(None, None, 0)

    def bad(comm):
        with pytest.raises(ArgumentError, match="'sendcounts'"):
            comm.alltoallv(np.zeros(3), [1, 1, 1])
        with pytest.raises(ArgumentError, match="'op'"):
            comm.allreduce(np.zeros(2), op="prod")
        with pytest.raises(ArgumentError, match="'root'"):
            comm.bcast(1, root=5)
        with pytest.raises(ArgumentTypeError, match="'color'"):
            comm.split("a")
        return True
    assert run_threads(2, bad) == [True, True]
    assert run_threads(1, lambda comm, x, y=0: x + y + comm.size, 3, y=4) == [8]


@serial_only
def test_the_threads_start_when_the_system_refuses_one(monkeypatch):
    """A thread that cannot start (the system's thread limit) fails the world: the ranks
    already started end, and a typed error says so."""
    real = threading.Thread.start
    started = []

    def start(self):
        if self.name.startswith("spsample-rank-2-"):
            raise RuntimeError("can't start new thread")
        started.append(self)
        return real(self)
    monkeypatch.setattr(threading.Thread, "start", start)
    with pytest.raises(DistributedError, match="rank 2 of 3 could not start"):
        run_threads(3, lambda comm: comm.barrier())
    assert len(started) == 2 and not any(t.is_alive() for t in started)


@serial_only
def test_featurestore_over_threads():
    feats = np.random.default_rng(0).random((50, 3))

    def body(comm):
        store = FeatureStore.from_array(feats, Grid(comm, replication=2))
        return store.fetch([49, 0, 7, 7, 25])
    for x in run_threads(4, body):
        assert np.array_equal(x, feats[[49, 0, 7, 7, 25]])


@serial_only
def test_docstring_examples_run():
    from spsample import distributed
    for module in (_threadcomm, distributed):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0, module.__name__
    assert sys.modules["spsample.distributed._threadcomm"] is _threadcomm
