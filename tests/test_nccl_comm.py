"""NcclComm without GPUs: the communicator's logic (grouped send/recv all-to-all, counts
exchange, allgatherv, reductions, host <-> device round trips, byte counters, argument checks,
split) over an in-process stand-in for ``cupy`` and ``cupy.cuda.nccl`` whose ranks are
threads and whose "device memory" is NumPy memory, bootstrapped (MPI's role) by
``spsample.distributed.ThreadComm`` (ranks that are threads, run by ``run_threads``); Grid,
DistGraph and FeatureStore run on it at world sizes 1 and 3.

What this cannot show: that NCCL itself moves the bytes (that needs GPUs and NCCL; run the
``gpu`` tests and ``experiments/gpu`` on such a machine). The stand-in implements NCCL's
documented semantics (send/recv pair up per peer inside a group; allReduce / allGather over
equal counts), so a misuse of those semantics here fails.
"""

import ctypes
import sys
import threading
import types

import numpy as np
import pytest

import spsample
from spsample.distributed import (DistGraph, FeatureStore, Grid, NcclComm, SelfComm, ThreadComm,
                                  run_threads)
from spsample._errors import (ArgumentError, ArgumentTypeError, DistributedError,
                              MissingDependencyError)
from spsample.distributed._threadcomm import PEER_FAILURE, is_peer_failure

from graphs import random_graph


# ------------------------------------------------------------------------------ stand-ins
class DevArray(np.ndarray):
    """A NumPy array posing as a CuPy one (``.data.ptr``)."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=int(self.ctypes.data))


def _fake_cupy():
    cp = types.SimpleNamespace()
    cp.ndarray = DevArray
    dev = lambda a: np.array(a, copy=True).view(DevArray)  # noqa: E731
    cp.asarray = dev
    cp.ascontiguousarray = lambda a: np.ascontiguousarray(a).view(DevArray)
    cp.empty = lambda shape, dtype: np.empty(shape, dtype=dtype).view(DevArray)
    cp.zeros = lambda shape, dtype: np.zeros(shape, dtype=dtype).view(DevArray)
    cp.empty_like = lambda a: np.empty_like(np.asarray(a)).view(DevArray)
    cp.asnumpy = lambda a: np.array(np.asarray(a), copy=True)
    cp.uint8, cp.int64 = np.uint8, np.int64
    cp.cuda = types.SimpleNamespace(get_current_stream=lambda: types.SimpleNamespace(ptr=0))
    return cp


class _Hub:
    def __init__(self, size):
        self.size = size
        self.barrier = threading.Barrier(size)
        self.slots = [None] * size
        self.cv = threading.Condition()
        self.mail = {}                                  # (src, dst) -> list of bytes


class FakeNccl(types.SimpleNamespace):
    """cupy.cuda.nccl's API over threads: send/recv within groupStart/groupEnd, allReduce,
    allGather; every call checks its arguments as NCCL would see them."""

    def __init__(self):
        super().__init__(NCCL_UINT8="uint8", NCCL_INT8="int8", NCCL_INT32="int32",
                         NCCL_UINT32="uint32", NCCL_INT64="int64", NCCL_UINT64="uint64",
                         NCCL_FLOAT16="float16", NCCL_FLOAT32="float32", NCCL_FLOAT64="float64",
                         NCCL_SUM="sum", NCCL_MAX="max", NCCL_MIN="min")
        self.hubs, self.local = {}, threading.local()
        self.lock = threading.Lock()
        self.peer_calls = 0
        self.failed = threading.Event()     # a rank failed: pending operations give up
        self.NcclCommunicator = lambda size, uid, rank: _FakeComm(self, size, uid, rank)

    def fail(self):
        """A rank failed: every waiting operation raises (a transport that notices)."""
        self.failed.set()
        with self.lock:
            hubs = [h for h in self.hubs.values() if h is not None]
        for hub in hubs:
            hub.barrier.abort()
            with hub.cv:
                hub.cv.notify_all()

    def get_unique_id(self):
        with self.lock:
            uid = ("uid", len(self.hubs))
            self.hubs[uid] = None
        return uid

    def hub(self, uid, size):
        with self.lock:
            if self.hubs.get(uid) is None:
                self.hubs[uid] = _Hub(size)
            return self.hubs[uid]

    def groupStart(self):
        self.local.pending = getattr(self.local, "pending", None) or []
        self.local.depth = getattr(self.local, "depth", 0) + 1

    def groupEnd(self):
        self.local.depth -= 1
        if self.local.depth:
            return
        pending, self.local.pending = self.local.pending, []
        for op in pending:
            op()


class _FakeComm:
    def __init__(self, nccl, size, uid, rank):
        assert 0 <= rank < size
        self.nccl, self.size, self.rank, self.hub = nccl, size, rank, nccl.hub(uid, size)

    def _in_group(self):
        assert getattr(self.nccl.local, "depth", 0) > 0, "send/recv outside a group"

    def send(self, ptr, count, dtype, peer, stream):
        self._in_group()
        assert peer != self.rank and 0 <= peer < self.size and count > 0
        data = ctypes.string_at(ptr, count * np.dtype(dtype).itemsize)
        self.nccl.peer_calls += 1
        with self.hub.cv:
            self.hub.mail.setdefault((self.rank, peer), []).append(data)
            self.hub.cv.notify_all()

    def recv(self, ptr, count, dtype, peer, stream):
        self._in_group()
        assert peer != self.rank and 0 <= peer < self.size and count > 0
        nbytes = count * np.dtype(dtype).itemsize

        def complete():
            with self.hub.cv:
                self.hub.cv.wait_for(lambda: self.hub.mail.get((peer, self.rank))
                                     or self.nccl.failed.is_set(), timeout=10)
                if not self.hub.mail.get((peer, self.rank)):
                    raise _peer_failed("recv")
                data = self.hub.mail[(peer, self.rank)].pop(0)
            assert len(data) == nbytes, "send and recv counts differ"
            ctypes.memmove(ptr, data, nbytes)
        self.nccl.local.pending.append(complete)

    def _collective(self, ptr, nbytes):
        self.hub.slots[self.rank] = ctypes.string_at(ptr, nbytes)
        try:
            self.hub.barrier.wait()
            parts = list(self.hub.slots)
            self.hub.barrier.wait()
        except threading.BrokenBarrierError:
            raise _peer_failed("collective") from None
        assert len({len(p) for p in parts}) == 1, "collective counts differ between ranks"
        return parts

    def allReduce(self, send, recv, count, dtype, op, stream):
        raw = self._collective(send, count * np.dtype(dtype).itemsize)
        parts = np.stack([np.frombuffer(p, dtype=dtype) for p in raw])
        out = {"sum": np.sum, "max": np.max, "min": np.min}[op](parts, axis=0).astype(dtype)
        ctypes.memmove(recv, out.tobytes(), out.nbytes)

    def allGather(self, send, recv, count, dtype, stream):
        data = b"".join(self._collective(send, count * np.dtype(dtype).itemsize))
        ctypes.memmove(recv, data, len(data))

    def destroy(self):
        pass


def _peer_failed(what):
    """What a rank's pending NCCL operation raises once another rank failed."""
    error = DistributedError(f"fake NCCL {what}: another rank failed")
    setattr(error, PEER_FAILURE, True)
    return error


def run_ranks(size, body):
    """body(comm) on `size` threads (spsample.distributed.run_threads), each with an NcclComm
    over the stand-ins bootstrapped by its rank's ThreadComm; the results and the stand-in."""
    backend = (_fake_cupy(), FakeNccl())

    def rank(comm):
        try:
            return body(NcclComm(comm, _backend=backend))
        except BaseException as exc:
            if not is_peer_failure(exc):
                backend[1].fail()
            raise
    return run_threads(size, rank, timeout=60), backend[1]


# ------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("size", [1, 2, 3])
def test_alltoallv_with_and_without_a_plan_and_its_bytes(size):
    def body(comm):
        r = comm.rank
        counts = np.array([(r + p) % 3 for p in range(comm.size)], dtype=np.int64)
        rows = np.concatenate([np.full((c, 2), 10 * r + p, dtype=np.int32)
                               for p, c in enumerate(counts)]) \
            if counts.sum() else np.zeros((0, 2), np.int32)
        recv, rc = comm.alltoallv(rows, counts)
        recv2, _ = comm.alltoallv(rows.view(DevArray), counts, recvcounts=rc)
        return counts, recv, rc, recv2, comm.stats()
    out, nccl = run_ranks(size, body)
    for r, (counts, recv, rc, recv2, stats) in enumerate(out):
        expect_rc = np.array([out[p][0][r] for p in range(size)])
        assert np.array_equal(rc, expect_rc)
        expect = np.concatenate([np.full((c, 2), 10 * p + r, np.int32)
                                 for p, c in enumerate(expect_rc)])
        assert type(recv) is np.ndarray and np.array_equal(recv, expect)      # host in, host out
        assert isinstance(recv2, DevArray) and np.array_equal(recv2, expect)  # device in and out
        sent = 8 * int(counts.sum() - counts[r])
        got = 8 * int(expect_rc.sum() - expect_rc[r])
        assert stats["alltoallv"] == {"calls": 2, "sent": 2 * sent, "received": 2 * got}
        assert stats["alltoall"] == {"calls": 1, "sent": 8 * (size - 1), "received": 8 * (size - 1)}
    if size > 1:
        assert nccl.peer_calls > 0


@pytest.mark.parametrize("size", [1, 3])
def test_reductions_gathers_and_objects(size):
    def body(comm):
        r = comm.rank
        s = comm.allreduce(np.array([r, 2.5 * r]), op="sum")
        m = comm.allreduce(np.array([r, -r], dtype=np.int64), op="max")
        g = comm.allgather(np.array([r, r * r], dtype=np.int64))
        v = comm.allgatherv(np.arange(r + 1, dtype=np.float32))
        b = comm.bcast(("hello", r), root=size - 1)
        return s, m, g, v, b, comm.allgather_object(r), comm.stats()
    out, _ = run_ranks(size, body)
    total = sum(range(size))
    for r, (s, m, g, v, b, objs, stats) in enumerate(out):
        assert np.array_equal(s, [total, 2.5 * total]) and np.array_equal(m, [size - 1, 0])
        assert np.array_equal(g, [[p, p * p] for p in range(size)])
        parts = [np.arange(p + 1, dtype=np.float32) for p in range(size)]
        assert np.array_equal(v, np.concatenate(parts))
        assert b == ("hello", size - 1) and objs == list(range(size))
        other = 4 * sum(p + 1 for p in range(size) if p != r)
        assert stats["allgatherv"] == {"calls": 1, "sent": 4 * (r + 1) * (size - 1),
                                       "received": other}
        assert stats["allreduce"]["sent"] == (16 + 16 if size > 1 else 0)


def test_split_makes_nccl_sub_communicators():
    def body(comm):
        sub = comm.split(comm.rank % 2, key=-comm.rank)
        return isinstance(sub, NcclComm), sub.rank, sub.size, sub.allreduce(np.array([comm.rank]))
    out, _ = run_ranks(4, body)
    assert [o[:3] for o in out] == [(True, 1, 2), (True, 1, 2), (True, 0, 2), (True, 0, 2)]
    assert [int(o[3][0]) for o in out] == [2, 4, 2, 4]


def test_bad_arguments_are_typed_errors():
    def body(comm):
        with pytest.raises(ArgumentError, match="'sendcounts'"):
            comm.alltoallv(np.zeros(3), [1, 1])
        with pytest.raises(ArgumentTypeError, match="'sendbuf'"):
            comm.alltoallv([1, 2], [2])
        with pytest.raises(ArgumentTypeError, match="'array'"):
            comm.allreduce(np.array([1 + 2j]))
        with pytest.raises(ArgumentError, match="'op'"):
            comm.allreduce(np.zeros(2), op="prod")
        return True
    assert run_ranks(1, body)[0] == [True]


def test_without_cupy_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(MissingDependencyError, match="cupy-cuda13x"):
        NcclComm(SelfComm())


@pytest.mark.parametrize("size", [1, 3])
def test_grid_distgraph_and_featurestore_accept_it(size):
    """Over the stand-ins: distributed sampling (push and pull across the process rows at
    size 3) and feature fetches through an NcclComm give what a plain process gives."""
    g = random_graph(200, 1500, seed=4)
    feats = np.random.default_rng(0).random((200, 3))
    seeds = np.random.default_rng(1).permutation(200)[:60]
    plain = spsample.sample(g, seeds, sampler=spsample.NodeWise([4, 3]), batch_size=10, seed=2)

    def body(comm):
        grid = Grid(comm)
        dg = DistGraph.from_graph(g, grid)
        fs = FeatureStore.from_array(feats, grid)
        per = 6 // comm.size
        mine = seeds[10 * per * comm.rank:10 * per * (comm.rank + 1)]
        out = []
        for strategy in ("push", "pull"):
            bulk = spsample.sample(dg, mine, sampler=spsample.NodeWise([4, 3]), batch_size=10,
                                   seed=2, batch_offset=per * comm.rank, strategy=strategy)
            modes = dg.last_stats["modes"]
            out.append((bulk, modes, fs.fetch(bulk[0].n_id)))
        return out, isinstance(grid.comm, NcclComm) and isinstance(grid.comm._boot, ThreadComm)
    results, _ = run_ranks(size, body)
    per = 6 // size
    for rank, (out, is_nccl) in enumerate(results):
        assert is_nccl
        for (bulk, modes, x), strategy in zip(out, ("push", "pull")):
            assert all(a.equals(b) for a, b in zip(bulk, plain[per * rank:per * (rank + 1)]))
            assert modes == ([strategy] * 2 if size > 1 else ["local"] * 2)
            assert np.array_equal(x, feats[bulk[0].n_id])


def test_a_rank_failing_alone_makes_the_others_raise(monkeypatch):
    """Over a ThreadComm bootstrap, a rank failing alone inside a distributed operation makes
    the other ranks raise (as over ThreadComm itself), even with MPI initialised: the process
    is never aborted."""
    pytest.importorskip("mpi4py.MPI")
    from spsample.distributed import _sampling
    g = random_graph(100, 600, seed=2)
    real = _sampling._PushHop._serve

    def serve(self, ctx, received, rcounts):
        if self.dg.grid.rank == 2:
            raise MemoryError("rank 2 ran out of memory")
        return real(self, ctx, received, rcounts)
    monkeypatch.setattr(_sampling._PushHop, "_serve", serve)

    def body(comm):
        dg = DistGraph.from_graph(g, Grid(comm))
        return spsample.sample(dg, [comm.rank], sampler=spsample.NodeWise([3]), batch_size=1,
                               batch_offset=comm.rank)
    with pytest.raises(MemoryError, match="rank 2 ran out"):
        run_ranks(3, body)
