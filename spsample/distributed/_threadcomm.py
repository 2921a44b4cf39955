"""``ThreadComm``: a communicator whose ``p`` ranks are threads of one process, and
:func:`run_threads`, which runs a function on such ranks.

Every distributed code path (``Grid``, ``DistGraph``, ``FeatureStore``, push, pull, layer-wise
push, replicated graphs, loaders) then runs at any ``p`` and ``c`` inside one plain Python
process: no MPI, no launcher. It is the communicator of the project's own tests, and of
anyone who wants to check a sampler or a pipeline at several world sizes cheaply.

Semantics follow MPI's, so that what passes here passes under ``mpiexec``:

* every collective is matched by position: the ``i``-th collective of a communicator on one
  rank meets the ``i``-th on every other rank; a rank calling a *different* collective there
  raises :class:`~spsample.DistributedError` on every rank (MPI would hang or mix the data);
* data are copied (arrays as bytes, objects pickled), never shared between ranks: a receiver
  cannot see a later change of the sender's buffer, and a rank cannot modify another's object;
* bytes are counted exactly as :class:`~spsample.distributed.MPIComm` counts them.

Failures never hang the process and never abort it. When one rank fails (its function
raises, or it fails alone inside a distributed operation, where ``MPIComm`` would abort the
job), every other rank's pending or next collective raises a :class:`DistributedError` that
names the failing rank. A rank that waits longer than ``timeout`` seconds for another in a
collective raises a :class:`DistributedError` naming the ranks that did not come.
"""

import pickle
import threading
import time

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, DistributedError
from .._validate import fail
from ._collective import mark_raised_on_every_rank
from ._comm import Communicator, _local, _row_bytes, current_thread_comm

__all__ = ["ThreadComm", "run_threads", "current_thread_comm"]

#: The attribute marking a rank's error as caused by another rank's failure.
PEER_FAILURE = "spsample_peer_failure"

class _Round:
    """One collective of a group: what each rank deposited, and who has taken the result."""

    __slots__ = ("values", "kinds", "arrived", "left")

    def __init__(self, size):
        self.values, self.kinds = [None] * size, [None] * size
        self.arrived = self.left = 0


class _Group:
    """The ranks of one communicator (world ranks, in the order of their ranks in it)."""

    def __init__(self, ranks, serial):
        self.ranks, self.serial = tuple(ranks), serial
        self.rounds = {}            # collective number -> _Round
        self.joined = 0             # members that took it from the world's forming groups


class _World:
    """State shared by the threads of one world; one lock (``cond``) guards all of it."""

    def __init__(self, size, timeout):
        self.size, self.timeout = size, timeout
        self.cond = threading.Condition()
        self.failure = None         # (world rank, description) of the first failure
        self.failed_at = None
        self.ended = set()          # world ranks whose run_threads function has returned
        self.first_end = None
        self.forming = {}           # split tag -> _Group until all its members took it
        self.serials = 0

    def new_group(self, ranks):
        self.serials += 1
        return _Group(ranks, self.serials)

    def fail(self, rank, text):
        """Record the first failure and wake every waiting rank."""
        with self.cond:
            if self.failure is None:
                self.failure, self.failed_at = (rank, text), time.monotonic()
            self.cond.notify_all()

    def end(self, rank):
        with self.cond:
            self.ended.add(rank)
            if self.first_end is None:
                self.first_end = time.monotonic()
            self.cond.notify_all()


class ThreadComm(Communicator):
    """A communicator whose ranks are threads of this process (see :func:`run_threads`).

    Make the ``size`` ranks of a new world with :meth:`create` and give each to its own
    thread, or let :func:`run_threads` do both. Implements the whole
    :class:`~spsample.distributed.Communicator` interface (``allreduce``, ``allgather``,
    ``allgatherv``, ``alltoallv`` with or without a plan, ``bcast``, ``allgather_object``,
    ``split``, ``barrier``) with MPI's matching rules, and counts bytes as
    :class:`~spsample.distributed.MPIComm` does.

    Attributes
    ----------
    rank, size : int
        In this communicator.
    world_rank : int
        The rank in the world this communicator was split from (what error messages name).
    timeout : float or None
        Seconds a collective waits for the other ranks before it raises
        :class:`~spsample.DistributedError` (``None``: forever).

    Notes
    -----
    When a rank fails (see :func:`run_threads`), the pending and later collectives of every
    communicator of the world raise :class:`~spsample.DistributedError` on every rank: the
    world cannot be used any more. Where :class:`~spsample.distributed.MPIComm` would abort the
    job (a rank failing alone inside a distributed operation), nothing is aborted: the other
    ranks raise instead.

    Examples
    --------
    >>> import threading, numpy as np
    >>> from spsample.distributed import ThreadComm
    >>> comms = ThreadComm.create(3)
    >>> out = [None] * 3
    >>> def rank(comm):
    ...     out[comm.rank] = comm.allreduce(np.array([comm.rank + 1]))
    >>> threads = [threading.Thread(target=rank, args=(c,)) for c in comms]
    >>> for t in threads: t.start()
    >>> for t in threads: t.join()
    >>> [int(x[0]) for x in out]
    [6, 6, 6]
    """

    def __init__(self, world, group, rank):
        super().__init__()
        if not isinstance(world, _World) or not isinstance(group, _Group):
            fail(ArgumentTypeError, "ThreadComm", "world",
                 "is internal: make communicators with ThreadComm.create(size)", type(world))
        self._world, self._group = world, group
        self.rank, self.size = int(rank), len(group.ranks)
        self.world_rank = group.ranks[self.rank]
        self._seq = 0               # collectives this rank has entered on this communicator
        self._freed = False

    @classmethod
    def create(cls, size, *, timeout=120.0):
        """The ``size`` communicators (rank order) of a new world of threads.

        Parameters
        ----------
        size : int
            Ranks, ``>= 1``.
        timeout : float or None
            Seconds a collective waits for the other ranks (``> 0``; ``None``: forever).

        Returns
        -------
        list of ThreadComm, length ``size``; give each to one thread.

        Raises
        ------
        ArgumentTypeError, ArgumentError
            ``size`` or ``timeout`` is not valid (the message names it).
        """
        size = _check_size("ThreadComm.create", size)
        timeout = _check_timeout("ThreadComm.create", timeout)
        world = _World(size, timeout)
        group = world.new_group(range(size))
        return [cls(world, group, r) for r in range(size)]

    @property
    def timeout(self):
        return self._world.timeout

    # ------------------------------------------------------------------ the exchange
    def _exchange(self, kind, value):
        """Deposit ``value`` for this collective; every rank's value, in rank order.

        Raises DistributedError when another rank failed (now or while waiting), when a rank
        waited for ended, when the wait passed the timeout, or when the ranks entered
        different collectives."""
        world, group = self._world, self._group
        deadline = None if world.timeout is None else time.monotonic() + world.timeout
        with world.cond:
            self._check_usable(kind)
            seq, self._seq = self._seq, self._seq + 1
            rnd = group.rounds.get(seq)
            if rnd is None:
                rnd = group.rounds[seq] = _Round(self.size)
            rnd.values[self.rank], rnd.kinds[self.rank] = value, kind
            rnd.arrived += 1
            if rnd.arrived == self.size:
                world.cond.notify_all()
            while rnd.arrived < self.size:
                self._check_waiting(kind, rnd, deadline)
                world.cond.wait(None if deadline is None else
                                max(0.0, deadline - time.monotonic()))
            rnd.left += 1
            if rnd.left == self.size:
                del group.rounds[seq]
        if len(set(rnd.kinds)) > 1:
            raise mark_raised_on_every_rank(DistributedError(
                f"ThreadComm: the ranks entered different collectives (collective #{seq} of "
                f"this communicator: {dict(enumerate(rnd.kinds))}, by rank): every rank must "
                "call the same collectives in the same order"))
        return rnd.values

    def _check_usable(self, kind):
        if self._freed:
            raise DistributedError(f"ThreadComm.{kind}: this communicator has been freed")
        if self._world.failure is not None:
            raise self._peer_failed(kind)

    def _check_waiting(self, kind, rnd, deadline):
        """Raise when the wait for the other ranks of ``rnd`` cannot end well."""
        world = self._world
        if world.failure is not None:
            raise self._peer_failed(kind)
        missing = [self._group.ranks[i] for i, k in enumerate(rnd.kinds) if k is None]
        gone = [r for r in missing if r in world.ended]
        if gone:
            self._fail(DistributedError(
                f"ThreadComm.{kind}: rank {self.world_rank} waits in a collective for rank(s) "
                f"{gone}, whose function has returned: every rank must call the same "
                "collectives"))
        if deadline is not None and time.monotonic() >= deadline:
            self._fail(DistributedError(
                f"ThreadComm.{kind}: rank(s) {missing} did not reach this collective within "
                f"timeout={world.timeout} s (rank {self.world_rank} waited for them)"))

    def _fail(self, error):
        self._world.fail(self.world_rank, f"{type(error).__name__}: {error}")
        raise error

    def _peer_failed(self, kind):
        rank, text = self._world.failure
        who = f"rank {rank}" if isinstance(rank, int) else rank
        error = DistributedError(
            f"ThreadComm.{kind} on rank {self.world_rank}: {who} failed ({text}); the "
            "other ranks cannot go on without it")
        setattr(error, PEER_FAILURE, True)
        return error

    def lone_failure(self, where, error):
        """Called when ``error`` leaves a distributed operation on this rank alone (where
        ``MPIComm`` aborts the job): every other rank's pending or next collective raises."""
        if not is_peer_failure(error):
            self._world.fail(self.world_rank,
                             f"in {where}: {type(error).__name__}: {error}")

    # ------------------------------------------------------------------ the interface
    def allreduce(self, array, op="sum"):
        self._check_op(op)
        send = np.ascontiguousarray(array)
        parts = self._exchange("allreduce", (op, send.copy()))
        if len({p[0] for p in parts}) > 1 or \
                len({(p[1].shape, p[1].dtype.str) for p in parts}) > 1:
            raise mark_raised_on_every_rank(DistributedError(
                "ThreadComm.allreduce: the ranks passed different ops, shapes or dtypes "
                f"({[(p[0], p[1].shape, p[1].dtype.str) for p in parts]})"))
        ufunc = {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]
        recv = parts[0][1].copy()
        for _, other in parts[1:]:          # rank order: the same bits on every rank
            ufunc(recv, other, out=recv)
        nbytes = send.nbytes if self.size > 1 else 0
        self._count("allreduce", nbytes, nbytes)
        return recv

    def allgather(self, array):
        send = np.ascontiguousarray(array)
        parts = self._exchange("allgather", _bytes(send).copy())
        if len({p.size for p in parts}) > 1:
            raise mark_raised_on_every_rank(DistributedError(
                "ThreadComm.allgather: the ranks passed arrays of different byte sizes "
                f"({[p.size for p in parts]})"))
        recv = np.empty((self.size,) + send.shape, dtype=send.dtype)
        _fill(recv, parts)
        self._count("allgather", send.nbytes * (self.size - 1), send.nbytes * (self.size - 1))
        return recv

    def allgatherv(self, array):
        send = np.ascontiguousarray(array)
        rows = self.allgather(np.array([send.shape[0]], dtype=np.int64))[:, 0]
        row_bytes = _row_bytes(send)
        parts = self._exchange("allgatherv", _bytes(send).copy())
        counts = rows * row_bytes
        if any(p.size != c for p, c in zip(parts, counts)):
            raise mark_raised_on_every_rank(DistributedError(
                "ThreadComm.allgatherv: the ranks' rows have different byte sizes "
                f"({[p.size for p in parts]} bytes for {rows.tolist()} rows)"))
        recv = np.empty((int(rows.sum()),) + send.shape[1:], dtype=send.dtype)
        _fill(recv, parts)
        others = int(counts.sum() - counts[self.rank])
        self._count("allgatherv", send.nbytes * (self.size - 1), others)
        return recv

    def alltoallv(self, sendbuf, sendcounts, recvcounts=None):
        counts = self._check_counts(sendbuf, sendcounts)
        send = np.ascontiguousarray(sendbuf)
        row_bytes = _row_bytes(send)
        sc = counts * row_bytes
        parts = self._exchange("alltoallv", (counts.copy(), sc, _bytes(send).copy()))
        me = self.rank
        sent_rows = np.array([p[0][me] for p in parts], dtype=np.int64)
        if recvcounts is None:
            recvcounts = sent_rows
            self._count("alltoall", 8 * (self.size - 1), 8 * (self.size - 1))
        recvcounts = np.asarray(recvcounts, dtype=np.int64)
        rc = recvcounts * row_bytes
        pieces = []
        for src, (_, src_sc, blob) in enumerate(parts):
            start = int(src_sc[:me].sum())
            if recvcounts.shape != (self.size,) or src_sc[me] != rc[src]:
                raise DistributedError(
                    f"ThreadComm.alltoallv: rank {self.world_rank} expects "
                    f"{recvcounts.tolist()} rows, but the ranks send it {sent_rows.tolist()} "
                    "(a plan that does not match the sends)")
            pieces.append(blob[start:start + int(src_sc[me])])
        recv = np.empty((int(recvcounts.sum()),) + send.shape[1:], dtype=send.dtype)
        _fill(recv, pieces)
        self._count("alltoallv", sc.sum() - sc[me], rc.sum() - rc[me])
        return recv, recvcounts

    def bcast(self, obj, root=0):
        root = self._check_root(root)
        parts = self._exchange("bcast", (root, pickle.dumps(obj) if self.rank == root else None))
        if len({p[0] for p in parts}) > 1:
            raise mark_raised_on_every_rank(DistributedError(
                f"ThreadComm.bcast: the ranks passed different roots ({[p[0] for p in parts]})"))
        out = pickle.loads(parts[root][1])
        self._count_bcast(out, root)
        return out

    def allgather_object(self, obj):
        blobs = self._exchange("allgather_object", pickle.dumps(obj))
        out = [pickle.loads(b) for b in blobs]
        self._count_allgather_object(obj, out)
        return out

    def split(self, color, key=0):
        where = "ThreadComm.split"
        for name, value in (("color", color), ("key", key)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                fail(ArgumentTypeError, where, name, "must be an int", value)
        entries = self._exchange("split", (int(color), int(key)))
        members = sorted((k, r) for r, (c, k) in enumerate(entries) if c == int(color))
        ranks = [self._group.ranks[r] for _, r in members]
        tag = (self._group.serial, self._seq - 1, int(color))
        world = self._world
        with world.cond:
            group = world.forming.get(tag)
            if group is None:
                group = world.forming[tag] = world.new_group(ranks)
            group.joined += 1
            if group.joined == len(ranks):
                del world.forming[tag]
        return ThreadComm(world, group, [r for _, r in members].index(self.rank))

    def dup(self):
        """A new communicator of the same ranks (collective), as MPI's ``Dup``."""
        return self.split(0, self.rank)

    def barrier(self):
        self._exchange("barrier", None)

    def free(self):
        """Mark this communicator unusable (idempotent)."""
        self._freed = True

    def _check_root(self, root):
        if isinstance(root, (bool, np.bool_)) or not isinstance(root, (int, np.integer)) \
                or not 0 <= root < self.size:
            fail(ArgumentError, "ThreadComm.bcast", "root", f"must be a rank in [0, {self.size})",
                 root)
        return int(root)


def _bytes(arr):
    return arr.reshape(-1).view(np.uint8) if arr.size else np.zeros(0, dtype=np.uint8)


def _fill(recv, pieces):
    """Write the byte strings ``pieces``, concatenated, into ``recv``."""
    if recv.size:
        np.concatenate(pieces, out=recv.reshape(-1).view(np.uint8))


def is_peer_failure(error):
    """Whether ``error`` (or an error it was raised from) is a rank's reaction to another
    rank's failure, not a failure of its own."""
    seen = set()
    while error is not None and id(error) not in seen:
        if getattr(error, PEER_FAILURE, False):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _check_size(where, size):
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
        fail(ArgumentTypeError, where, "size", "must be an int", size)
    if size < 1:
        fail(ArgumentError, where, "size", "must be >= 1", size)
    return int(size)


def _check_timeout(where, timeout):
    if timeout is None:
        return None
    if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, (int, float, np.integer,
                                                                          np.floating)):
        fail(ArgumentTypeError, where, "timeout", "must be a number of seconds or None", timeout)
    if not np.isfinite(timeout) or timeout <= 0:
        fail(ArgumentError, where, "timeout", "must be > 0 and finite", timeout)
    return float(timeout)


def run_threads(size, body, *args, timeout=120.0, **kwargs):
    """Run ``body(comm, *args, **kwargs)`` on ``size`` ranks that are threads of this process.

    Each rank gets its own :class:`ThreadComm` of one new world (``comm.rank`` in rank
    order); inside ``body``, :func:`spsample.distributed.world` (and so ``Grid()`` without a
    communicator) gives a duplicate of it. Every distributed object (``Grid``, ``DistGraph``,
    ``FeatureStore``, ...) works on it as under ``mpiexec -n size``.

    Parameters
    ----------
    size : int
        Ranks (threads), ``>= 1``.
    body : callable
        ``body(comm, *args, **kwargs)``, run once per rank.
    *args, **kwargs
        Passed to ``body`` on every rank (the same objects: do not modify them).
    timeout : float or None
        Seconds one rank may wait for another: in a collective (then the waiting rank raises
        :class:`~spsample.DistributedError` naming the ranks that did not come), and for the
        remaining ranks to end once one rank's ``body`` has ended. ``None``: forever.

    Returns
    -------
    list, length ``size``: each rank's return value, in rank order.

    Raises
    ------
    ArgumentTypeError, ArgumentError
        ``size``, ``body`` or ``timeout`` is not valid (the message names it).
    BaseException
        When ``body`` raised on any rank, after every rank has ended: the exception of the
        lowest rank that failed by itself (the others' :class:`~spsample.DistributedError`
        saying that a rank failed are not re-raised). As soon as one rank fails, every other
        rank's pending or next collective raises; nothing hangs, nothing is aborted.
    DistributedError
        A rank still running ``timeout`` seconds after another rank ended (or failed), e.g.
        stuck in a loop outside the collectives: the message names it. Its thread cannot be
        stopped and is left running (as a daemon thread); its next collective raises.

    Examples
    --------
    >>> import numpy as np
    >>> from spsample.distributed import run_threads
    >>> def body(comm, x):
    ...     return int(comm.allreduce(np.array([x * comm.rank]))[0])
    >>> run_threads(4, body, 10)
    [60, 60, 60, 60]
    >>> run_threads(2, lambda comm: comm.allgather_object(comm.rank))
    [[0, 1], [0, 1]]
    """
    where = "run_threads"
    size = _check_size(where, size)
    timeout = _check_timeout(where, timeout)
    if not callable(body):
        fail(ArgumentTypeError, where, "body", "must be callable", type(body))
    comms = ThreadComm.create(size, timeout=timeout)
    world = comms[0]._world
    results, errors = [None] * size, {}

    def rank_main(r):
        _local.comm = comms[r]
        try:
            results[r] = body(comms[r], *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised by run_threads
            errors[r] = exc
            if not is_peer_failure(exc):
                world.fail(r, f"{type(exc).__name__}: {exc}")
        finally:
            _local.comm = None
            world.end(r)

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True,
                                name=f"spsample-rank-{r}-of-{size}") for r in range(size)]
    _start(threads, world)
    try:
        stuck = _wait_for_ranks(world, timeout)
    except BaseException:       # e.g. Ctrl-C, a test's timeout: the ranks stop at their next
        world.fail("the caller", "run_threads was interrupted")     # collective
        raise
    if stuck:
        world.fail(stuck[0], f"still running {timeout} s after another rank ended")
        cause = _first_failure(errors)
        raise DistributedError(
            f"run_threads: rank(s) {stuck} of {size} still running {timeout} s after "
            f"rank(s) {sorted(world.ended)} ended (stuck outside the collectives, e.g. in a "
            "loop or on a lock); their threads are left running") from cause
    for t in threads:
        t.join()
    failure = _first_failure(errors)
    if failure is not None:
        raise failure
    return results


def _start(threads, world):
    """Start every rank's thread; when one cannot start (the system's thread limit), the
    started ranks are failed (their collectives raise), waited for, and a typed error
    raised."""
    for r, t in enumerate(threads):
        try:
            t.start()
        except RuntimeError as exc:
            world.fail(r, f"its thread could not start ({exc})")
            for started in threads[:r]:
                started.join(world.timeout)
            raise DistributedError(
                f"run_threads: the thread of rank {r} of {world.size} could not start ({exc})"
            ) from exc


def _wait_for_ranks(world, timeout):
    """Wait until every rank has ended; the ranks still running ``timeout`` seconds after the
    first one ended or failed (none, if all ended)."""
    with world.cond:
        while len(world.ended) < world.size:
            marks = [t for t in (world.first_end, world.failed_at) if t is not None]
            if not marks or timeout is None:
                world.cond.wait()
                continue
            remaining = min(marks) + timeout - time.monotonic()
            if remaining <= 0:
                return sorted(set(range(world.size)) - world.ended)
            world.cond.wait(remaining)
    return []


def _first_failure(errors):
    """The lowest rank's own error (not a reaction to another rank's), with a note saying
    which rank raised it; else the lowest rank's error; ``None`` when no rank failed."""
    if not errors:
        return None
    own = [r for r in sorted(errors) if not is_peer_failure(errors[r])]
    rank = own[0] if own else min(errors)
    error = errors[rank]
    note = f"(raised on rank {rank} of spsample.distributed.run_threads)"
    if note not in getattr(error, "__notes__", []):
        error.add_note(note)
    return error
