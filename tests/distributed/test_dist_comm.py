"""Communicators: results and byte counts of every collective (SelfComm serially, MPIComm
under mpiexec; ThreadComm worlds serially)."""

import numpy as np
import pytest

from spsample import ArgumentError, ArgumentTypeError
from spsample.distributed import MPIComm, SelfComm

from _dist_helpers import assert_all, layouts, mpi_timeout, raised, threaded, world_comm

pytestmark = [pytest.mark.mpi, mpi_timeout(60)]


@pytest.mark.parametrize("p, c", layouts([(3, 1), (8, 1)]))
@threaded
def test_alltoallv_rows_and_bytes(p, c):
    comm = world_comm()
    p, me = comm.size, comm.rank
    counts = np.arange(1, p + 1, dtype=np.int64)          # d + 1 rows for rank d
    send = np.concatenate([np.full((d + 1, 3), 100 * me + d, dtype=np.float32) for d in range(p)])
    comm.reset_stats()
    recv, rcounts = comm.alltoallv(send, counts)
    ok = rcounts.tolist() == [me + 1] * p
    expect = np.concatenate([np.full((me + 1, 3), 100 * s + me, dtype=np.float32)
                             for s in range(p)])
    ok &= recv.dtype == np.float32 and np.array_equal(recv, expect)
    st = comm.stats()
    row = 12
    ok &= st["alltoallv"]["sent"] == row * (counts.sum() - counts[me])
    ok &= st["alltoallv"]["received"] == row * (me + 1) * (p - 1)
    ok &= st["alltoall"]["sent"] == 8 * (p - 1)          # the counts exchange
    # with known receive counts (a plan) there is no counts exchange
    comm.reset_stats()
    again, _ = comm.alltoallv(send, counts, recvcounts=rcounts)
    ok &= np.array_equal(again, expect) and "alltoall" not in comm.stats()
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1), (8, 1)]))
@threaded
def test_allgather_allreduce_bcast(p, c):
    comm = world_comm()
    p, me = comm.size, comm.rank
    ok = comm.allgather(np.array([me, 2 * me])).tolist() == [[r, 2 * r] for r in range(p)]
    v = comm.allgatherv(np.arange(me + 1, dtype=np.int16))
    ok &= v.tolist() == [i for r in range(p) for i in range(r + 1)] and v.dtype == np.int16
    ok &= comm.allreduce(np.array([me, 1.0]), op="sum").tolist() == [p * (p - 1) / 2, p]
    ok &= comm.allreduce(np.array([me]), op="max").tolist() == [p - 1]
    ok &= comm.allreduce(np.array([me]), op="min").tolist() == [0]
    ok &= comm.bcast({"x": me}, root=p - 1) == {"x": p - 1}
    ok &= comm.allgather_object(me) == list(range(p))
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1), (8, 1)]))
@threaded
def test_split_and_stats(p, c):
    comm = world_comm()
    sub = comm.split(comm.rank % 2, comm.rank)
    ok = sub.size == len(range(comm.rank % 2, comm.size, 2))
    ok &= sub.allgather_object(comm.rank) == list(range(comm.rank % 2, comm.size, 2))
    sub.reset_stats()
    sub.allreduce(np.zeros(4))
    st = sub.stats()["allreduce"]
    ok &= st["calls"] == 1 and st["sent"] == (32 if sub.size > 1 else 0)
    sub.reset_stats()
    ok &= sub.stats() == {}
    sub.free()
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1), (8, 1)]))
@threaded
def test_bad_arguments(p, c):
    comm = world_comm()
    e1 = raised(lambda: comm.alltoallv(np.zeros(3), [1] * comm.size + [1]))
    e2 = raised(lambda: comm.alltoallv([1, 2], [2] + [0] * (comm.size - 1)))
    e3 = raised(lambda: comm.allreduce(np.zeros(1), op="prod"))
    assert_all(isinstance(e1, ArgumentError) and "sendcounts" in str(e1))
    assert_all(isinstance(e2, ArgumentTypeError) and "sendbuf" in str(e2))
    assert_all(isinstance(e3, ArgumentError) and "op" in str(e3))


def test_self_comm_needs_no_mpi():
    c = SelfComm()
    out, counts = c.alltoallv(np.arange(4), [4])
    assert out.tolist() == [0, 1, 2, 3] and counts.tolist() == [4]
    assert c.stats()["alltoallv"] == {"calls": 1, "sent": 0, "received": 0}
    assert c.split(0).size == 1 and c.allgather(np.ones(2)).shape == (1, 2)


def test_mpi_comm_rejects_non_communicators():
    pytest.importorskip("mpi4py")
    with pytest.raises(ArgumentTypeError, match="comm"):
        MPIComm(object())
