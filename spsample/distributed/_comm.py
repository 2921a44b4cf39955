"""Communicators: one small interface over MPI (mpi4py), NCCL (CuPy) and a size-1 stand-in.

Every distributed code path of spsample talks to a :class:`Communicator`; nothing else imports
mpi4py. The interface is what a bulk sampler needs: ``allreduce``, ``allgather``(``v``),
``alltoallv`` of NumPy arrays, ``bcast``/``allgather_object`` of small Python objects,
``split`` and ``barrier``.

Every collective counts the bytes this rank sends to and receives from *other* ranks (what a
rank sends to itself never crosses a wire and is not counted); :meth:`Communicator.stats`
returns them per collective kind. Reductions count their buffer once each way (the traffic of
the algorithm MPI picks inside is not visible from outside).
"""

import os
import pickle
import threading

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, MissingDependencyError
from .._validate import fail
from ._failure import install_excepthook

__all__ = ["Communicator", "SelfComm", "MPIComm", "NcclComm", "world", "launched_under_mpi",
           "as_communicator", "mpi_world"]

_OPS = ("sum", "max", "min")
#: Environment variables set by MPI launchers (MPICH/hydra, Open MPI, PMIx, Slurm's srun).
_LAUNCHER_VARS = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


class Communicator:
    """The interface every communicator implements (MPI now, NCCL later).

    Attributes
    ----------
    rank, size : int
    """

    rank = 0
    size = 1

    def __init__(self):
        self._stats = {}

    # ------------------------------------------------------------------ bookkeeping
    def _count(self, kind, sent, received):
        entry = self._stats.setdefault(kind, {"calls": 0, "sent": 0, "received": 0})
        entry["calls"] += 1
        entry["sent"] += int(sent)
        entry["received"] += int(received)

    def _count_bcast(self, out, root):
        """Count a broadcast of ``out`` from ``root`` (its pickled size, to or from each rank)."""
        size = len(pickle.dumps(out)) if self.size > 1 else 0
        if self.rank == root:
            self._count("bcast", size * (self.size - 1), 0)
        else:
            self._count("bcast", 0, size)

    def _count_allgather_object(self, obj, out):
        """Count an object all-gather: ``obj`` sent to every other rank, the others' received."""
        mine = len(pickle.dumps(obj))
        others = sum(len(pickle.dumps(o)) for i, o in enumerate(out) if i != self.rank)
        self._count("allgather_object", mine * (self.size - 1), others)

    def stats(self):
        """Bytes moved so far, per collective kind.

        Returns
        -------
        dict ``kind -> {"calls": int, "sent": int, "received": int}`` (a copy).
        """
        return {k: dict(v) for k, v in self._stats.items()}

    def reset_stats(self):
        """Forget the counts."""
        self._stats = {}

    # ------------------------------------------------------------------ the interface
    def allreduce(self, array, op="sum"):
        """Element-wise reduction of a NumPy array over all ranks; returns a new array."""
        raise NotImplementedError

    def allgather(self, array):
        """Stack equal-shape arrays of every rank: shape ``(size, *array.shape)``."""
        raise NotImplementedError

    def allgatherv(self, array):
        """Concatenate arrays of varying first dimension along axis 0, rank order."""
        raise NotImplementedError

    def alltoallv(self, sendbuf, sendcounts, recvcounts=None):
        """Personalised all-to-all along axis 0.

        Parameters
        ----------
        sendbuf : ndarray, shape (m, ...)
            Rows for rank 0 first, then rank 1, ...
        sendcounts : int64, shape (size,)
            Rows for each rank (sums to ``m``).
        recvcounts : int64, shape (size,), optional
            Rows coming from each rank, when known (a plan); otherwise exchanged first (one
            ``alltoall`` of ``size`` integers, counted under ``"alltoall"``).

        Returns
        -------
        (recvbuf, recvcounts): rows from rank 0 first, then rank 1, ...
        """
        raise NotImplementedError

    def bcast(self, obj, root=0):
        """Broadcast a small picklable object from ``root``."""
        raise NotImplementedError

    def allgather_object(self, obj):
        """List of every rank's small picklable object, rank order."""
        raise NotImplementedError

    def split(self, color, key=0):
        """Sub-communicator of the ranks passing the same ``color``, ordered by ``key``."""
        raise NotImplementedError

    def barrier(self):
        raise NotImplementedError

    def dup(self):
        """A new communicator of the same ranks whose traffic never mixes with this one's
        (collective, as MPI's ``Dup``)."""
        raise NotImplementedError

    def local_size(self):
        """Ranks of this communicator on this machine (collective): every rank, unless the
        ranks are processes that MPI places on several nodes."""
        return self.size

    def free(self):
        """Release the underlying resources (idempotent)."""

    # ------------------------------------------------------------------ shared checks
    def _check_op(self, op):
        if op not in _OPS:
            fail(ArgumentError, f"{type(self).__name__}.allreduce", "op",
                 f"must be one of {_OPS}", op)

    def _check_counts(self, sendbuf, sendcounts):
        where = f"{type(self).__name__}.alltoallv"
        if not isinstance(sendbuf, np.ndarray) or sendbuf.ndim < 1:
            fail(ArgumentTypeError, where, "sendbuf", "must be a NumPy array with ndim >= 1",
                 type(sendbuf))
        counts = np.asarray(sendcounts, dtype=np.int64)
        if counts.shape != (self.size,) or (counts < 0).any() or counts.sum() != sendbuf.shape[0]:
            fail(ArgumentError, where, "sendcounts",
                 f"must be {self.size} non-negative counts summing to len(sendbuf) "
                 f"({sendbuf.shape[0]})", counts.tolist())
        return counts

    def __repr__(self):
        return f"{type(self).__name__}(rank={self.rank}, size={self.size})"


_local = threading.local()          # .comm: the ThreadComm of the rank this thread runs


def current_thread_comm():
    """The :class:`~spsample.distributed.ThreadComm` of the rank that
    :func:`~spsample.distributed.run_threads` runs in this thread, or ``None`` (then
    :func:`spsample.distributed.world` is MPI's or a ``SelfComm``)."""
    return getattr(_local, "comm", None)


def _row_bytes(arr):
    return arr.dtype.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))


class SelfComm(Communicator):
    """The size-1 communicator: every collective is a local copy; MPI is never imported.

    It lets every distributed code path run (and be tested) in a plain Python process.
    """

    def allreduce(self, array, op="sum"):
        self._check_op(op)
        self._count("allreduce", 0, 0)
        return np.array(array, copy=True)

    def allgather(self, array):
        self._count("allgather", 0, 0)
        return np.array(array, copy=True)[None]

    def allgatherv(self, array):
        self._count("allgatherv", 0, 0)
        return np.array(array, copy=True)

    def alltoallv(self, sendbuf, sendcounts, recvcounts=None):
        counts = self._check_counts(sendbuf, sendcounts)
        if recvcounts is None:
            self._count("alltoall", 0, 0)
        self._count("alltoallv", 0, 0)
        return sendbuf.copy(), counts.copy()

    def bcast(self, obj, root=0):
        self._count("bcast", 0, 0)
        return obj

    def allgather_object(self, obj):
        self._count("allgather_object", 0, 0)
        return [obj]

    def split(self, color, key=0):
        return SelfComm()

    def dup(self):
        return SelfComm()

    def barrier(self):
        pass


class MPIComm(Communicator):
    """A communicator over an mpi4py ``Comm``, which it duplicates (``Dup``) so that
    spsample's messages never mix with the caller's.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        E.g. ``MPI.COMM_WORLD``. Not modified; call :meth:`free` to release the duplicate.

    Notes
    -----
    Creating one of more than one rank installs an exception hook that aborts the MPI job
    when an uncaught exception ends any one rank (see
    :func:`spsample.distributed.set_abort_on_failure`).
    """

    def __init__(self, comm, *, _dup=True):
        super().__init__()
        MPI = _import_mpi()
        if not isinstance(comm, MPI.Comm):
            fail(ArgumentTypeError, "MPIComm", "comm", "must be an mpi4py.MPI.Comm", type(comm))
        self._MPI = MPI
        self._comm = comm.Dup() if _dup else comm
        self.rank = self._comm.Get_rank()
        self.size = self._comm.Get_size()
        if self.size > 1:
            install_excepthook()       # an uncaught error on one rank aborts the job

    @property
    def mpi_comm(self):
        """The duplicated mpi4py communicator."""
        return self._comm

    def allreduce(self, array, op="sum"):
        self._check_op(op)
        send = np.ascontiguousarray(array)
        recv = np.empty_like(send)
        mpi_op = {"sum": self._MPI.SUM, "max": self._MPI.MAX, "min": self._MPI.MIN}[op]
        self._comm.Allreduce(send, recv, op=mpi_op)
        nbytes = send.nbytes if self.size > 1 else 0
        self._count("allreduce", nbytes, nbytes)
        return recv

    def allgather(self, array):
        send = np.ascontiguousarray(array)
        recv = np.empty((self.size,) + send.shape, dtype=send.dtype)
        self._comm.Allgather(send.reshape(-1).view(np.uint8), recv.reshape(-1).view(np.uint8))
        self._count("allgather", send.nbytes * (self.size - 1), send.nbytes * (self.size - 1))
        return recv

    def allgatherv(self, array):
        send = np.ascontiguousarray(array)
        rows = self.allgather(np.array([send.shape[0]], dtype=np.int64))[:, 0]
        row_bytes = _row_bytes(send)
        recv = np.empty((int(rows.sum()),) + send.shape[1:], dtype=send.dtype)
        counts = rows * row_bytes
        displs = np.cumsum(counts) - counts
        self._comm.Allgatherv(_bytes(send), [_bytes(recv), (counts, displs), self._MPI.BYTE])
        others = int(counts.sum() - counts[self.rank])
        self._count("allgatherv", send.nbytes * (self.size - 1), others)
        return recv

    def alltoallv(self, sendbuf, sendcounts, recvcounts=None):
        counts = self._check_counts(sendbuf, sendcounts)
        if recvcounts is None:
            recvcounts = np.empty(self.size, dtype=np.int64)
            self._comm.Alltoall(counts, recvcounts)
            self._count("alltoall", 8 * (self.size - 1), 8 * (self.size - 1))
        recvcounts = np.asarray(recvcounts, dtype=np.int64)
        send = np.ascontiguousarray(sendbuf)
        row_bytes = _row_bytes(send)
        recv = np.empty((int(recvcounts.sum()),) + send.shape[1:], dtype=send.dtype)
        sc, rc = counts * row_bytes, recvcounts * row_bytes
        sd, rd = np.cumsum(sc) - sc, np.cumsum(rc) - rc
        self._comm.Alltoallv([_bytes(send), (sc, sd), self._MPI.BYTE],
                             [_bytes(recv), (rc, rd), self._MPI.BYTE])
        self._count("alltoallv", sc.sum() - sc[self.rank], rc.sum() - rc[self.rank])
        return recv, recvcounts

    def bcast(self, obj, root=0):
        out = self._comm.bcast(obj, root=root)
        self._count_bcast(out, root)
        return out

    def allgather_object(self, obj):
        out = self._comm.allgather(obj)
        self._count_allgather_object(obj, out)
        return out

    def split(self, color, key=0):
        return MPIComm(self._comm.Split(int(color), int(key)), _dup=False)

    def dup(self):
        return MPIComm(self._comm)

    def local_size(self):
        """Ranks on this node: the size of a shared-memory split (collective)."""
        node = self._comm.Split_type(self._MPI.COMM_TYPE_SHARED)
        try:
            return int(node.Get_size())
        finally:
            node.Free()

    def barrier(self):
        self._comm.Barrier()

    def free(self):
        if self._comm is not None and self._comm != self._MPI.COMM_NULL:
            self._comm.Free()
        self._comm = None


def _bytes(arr):
    """A flat uint8 view of a C-contiguous array (MPI moves bytes; any dtype travels)."""
    return arr.reshape(-1).view(np.uint8) if arr.size else np.zeros(0, dtype=np.uint8)


def _import_mpi(feature="spsample.distributed.MPIComm"):
    """mpi4py's ``MPI``: the one import of mpi4py in spsample (``tests/test_one_communicator.py``
    checks that no other module imports it)."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise MissingDependencyError(
            f"{feature} needs mpi4py: pip install mpi4py mpich "
            "(or: pip install 'spsample[mpi]')") from exc
    return MPI


def as_communicator(comm, where, argname="comm"):
    """``comm`` as a :class:`Communicator`: None and communicators as they are, an mpi4py
    communicator wrapped in an :class:`MPIComm` (a duplicate the caller frees).

    Raises
    ------
    ArgumentTypeError
        Naming ``argname``: neither.
    """
    if comm is None or isinstance(comm, Communicator):
        return comm
    if hasattr(comm, "Get_rank") and hasattr(comm, "Allreduce"):
        return MPIComm(comm)
    fail(ArgumentTypeError, where, argname, "must be a spsample.distributed.Communicator "
         "(MPIComm, ThreadComm, NcclComm, SelfComm) or an mpi4py communicator", type(comm))


def mpi_world(*, optional=False, feature="spsample.distributed.mpi_world"):
    """``MPIComm(MPI.COMM_WORLD)`` (a duplicate; any size). ``optional``: None when mpi4py is
    not installed, else :class:`~spsample.MissingDependencyError` naming ``feature``."""
    try:
        MPI = _import_mpi(feature)
    except MissingDependencyError:
        if optional:
            return None
        raise
    return MPIComm(MPI.COMM_WORLD)


def launched_under_mpi():
    """Whether this process was started by an MPI launcher (mpiexec, mpirun, srun)."""
    return any(os.environ.get(name) for name in _LAUNCHER_VARS)


def world():
    """The default communicator: ``MPIComm(MPI.COMM_WORLD)`` when the process was started by
    an MPI launcher with more than one rank, else :class:`SelfComm` (MPI is then not even
    imported, so a plain ``python`` run needs no MPI). Inside a rank of
    :func:`~spsample.distributed.run_threads`: a duplicate of that rank's
    :class:`~spsample.distributed.ThreadComm` (collective, as MPI's ``Dup``)."""

    threaded = current_thread_comm()
    if threaded is not None:
        return threaded.dup()
    if launched_under_mpi():
        MPI = _import_mpi()
        if MPI.COMM_WORLD.Get_size() > 1:
            return MPIComm(MPI.COMM_WORLD)
    return SelfComm()


class NcclComm(Communicator):
    """A communicator over NCCL (``cupy.cuda.nccl``), one GPU per rank, bootstrapped by MPI.

    Array collectives move the data with NCCL between GPUs: ``allreduce`` and ``allgather`` as
    NCCL collectives, ``allgatherv`` and ``alltoallv`` as grouped point-to-point ``send`` /
    ``recv`` (one group, every peer at once; the counts of an ``alltoallv`` without a plan are
    exchanged first the same way). Arrays may be CuPy arrays (results are CuPy arrays) or
    NumPy arrays (copied to the GPU and back, so that DistGraph, FeatureStore and the Loader,
    which hold NumPy arrays, run over NCCL unchanged). Small objects (``bcast``,
    ``allgather_object``), ``split`` and ``barrier`` go through the MPI communicator. Bytes
    are counted exactly as :class:`MPIComm` counts them; :meth:`stats` includes the MPI
    side's counts.

    Parameters
    ----------
    comm : Communicator or mpi4py.MPI.Comm
        The bootstrap: rank 0's NCCL unique id is broadcast over it, and objects travel on it.
        An mpi4py communicator is wrapped in :class:`MPIComm` (duplicated).

    Raises
    ------
    MissingDependencyError
        When CuPy (with NCCL) is not installed.
    """

    _DTYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
               "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
               "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}
    _REDUCE = {"sum": "NCCL_SUM", "max": "NCCL_MAX", "min": "NCCL_MIN"}

    def __init__(self, comm, *, _backend=None):
        super().__init__()
        self._cp, self._nccl = _backend or _import_nccl()
        if not isinstance(comm, Communicator):
            comm = MPIComm(comm)
        self._boot = comm
        self.rank, self.size = comm.rank, comm.size
        uid = self._nccl.get_unique_id() if self.rank == 0 else None
        uid = comm.bcast(uid, root=0)
        self._comm = self._nccl.NcclCommunicator(self.size, uid, self.rank)

    # ------------------------------------------------------------------ helpers
    def _device(self, arr):
        """``(device array, came from the host)``."""
        if isinstance(arr, self._cp.ndarray):
            return self._cp.ascontiguousarray(arr), False
        if not isinstance(arr, np.ndarray):
            fail(ArgumentTypeError, "NcclComm", "array", "must be a NumPy or CuPy array", type(arr))
        return self._cp.asarray(np.ascontiguousarray(arr)), True

    def _back(self, arr, host):
        return self._cp.asnumpy(arr) if host else arr

    def _dtype(self, arr, where):
        name = self._DTYPES.get(arr.dtype.name)
        if name is None:
            fail(ArgumentTypeError, f"NcclComm.{where}", "array",
                 f"must have one of the dtypes {sorted(self._DTYPES)}", arr.dtype)
        return getattr(self._nccl, name)

    def _stream(self):
        return self._cp.cuda.get_current_stream().ptr

    def _exchange(self, send, send_bytes, recv, recv_bytes, send_offsets=None):
        """Grouped point-to-point: ``send_bytes[p]`` bytes of ``send`` to each peer p (from
        ``send_offsets[p]``, by default consecutive), ``recv_bytes[p]`` into ``recv`` from it,
        consecutively (uint8 device arrays). The rank's own part is a local copy."""
        so = np.cumsum(send_bytes) - send_bytes if send_offsets is None else send_offsets
        ro = np.cumsum(recv_bytes) - recv_bytes
        me = self.rank
        if send_bytes[me]:
            recv[ro[me]:ro[me] + recv_bytes[me]] = send[so[me]:so[me] + send_bytes[me]]
        stream, u8 = self._stream(), self._nccl.NCCL_UINT8
        self._nccl.groupStart()
        try:
            for peer in range(self.size):
                if peer == me:
                    continue
                if send_bytes[peer]:
                    self._comm.send(send.data.ptr + int(so[peer]), int(send_bytes[peer]), u8,
                                    peer, stream)
                if recv_bytes[peer]:
                    self._comm.recv(recv.data.ptr + int(ro[peer]), int(recv_bytes[peer]), u8,
                                    peer, stream)
        finally:
            self._nccl.groupEnd()

    # ------------------------------------------------------------------ the interface
    def allreduce(self, array, op="sum"):
        self._check_op(op)
        send, host = self._device(array)
        recv = self._cp.empty_like(send)
        self._comm.allReduce(send.data.ptr, recv.data.ptr, send.size,
                             self._dtype(send, "allreduce"),
                             getattr(self._nccl, self._REDUCE[op]), self._stream())
        nbytes = send.nbytes if self.size > 1 else 0
        self._count("allreduce", nbytes, nbytes)
        return self._back(recv, host)

    def allgather(self, array):
        send, host = self._device(array)
        recv = self._cp.empty((self.size,) + send.shape, dtype=send.dtype)
        self._comm.allGather(send.data.ptr, recv.data.ptr, send.nbytes, self._nccl.NCCL_UINT8,
                             self._stream())
        self._count("allgather", send.nbytes * (self.size - 1), send.nbytes * (self.size - 1))
        return self._back(recv, host)

    def allgatherv(self, array):
        send, host = self._device(array)
        rows = self.allgather(np.array([send.shape[0]], np.int64))[:, 0]
        row_bytes = _row_bytes(send)
        recv = self._cp.empty((int(rows.sum()),) + send.shape[1:], dtype=send.dtype)
        counts = rows * row_bytes
        # every rank sends its whole buffer to every peer
        send_bytes = np.full(self.size, send.nbytes, dtype=np.int64)
        self._exchange(_dbytes(self._cp, send), send_bytes, _dbytes(self._cp, recv), counts,
                       send_offsets=np.zeros(self.size, dtype=np.int64))
        others = int(counts.sum() - counts[self.rank])
        self._count("allgatherv", send.nbytes * (self.size - 1), others)
        return self._back(recv, host)

    def _back_host(self, arr):
        return self._cp.asnumpy(arr) if isinstance(arr, self._cp.ndarray) else arr

    def alltoallv(self, sendbuf, sendcounts, recvcounts=None):
        where = "NcclComm.alltoallv"
        if not isinstance(sendbuf, (np.ndarray, self._cp.ndarray)) or sendbuf.ndim < 1:
            fail(ArgumentTypeError, where, "sendbuf",
                 "must be a NumPy or CuPy array with ndim >= 1",
                 type(sendbuf))
        counts = np.asarray(self._back_host(sendcounts), dtype=np.int64)
        if counts.shape != (self.size,) or (counts < 0).any() or counts.sum() != sendbuf.shape[0]:
            fail(ArgumentError, where, "sendcounts",
                 f"must be {self.size} non-negative counts summing to len(sendbuf) "
                 f"({sendbuf.shape[0]})", counts.tolist())
        if recvcounts is None:
            got = self._cp.empty(self.size, dtype=self._cp.int64)
            eight = np.full(self.size, 8, dtype=np.int64)
            self._exchange(_dbytes(self._cp, self._cp.asarray(counts)), eight,
                           _dbytes(self._cp, got), eight)
            recvcounts = self._cp.asnumpy(got)
            self._count("alltoall", 8 * (self.size - 1), 8 * (self.size - 1))
        recvcounts = np.asarray(self._back_host(recvcounts), dtype=np.int64)
        send, host = self._device(sendbuf)
        row_bytes = _row_bytes(send)
        recv = self._cp.empty((int(recvcounts.sum()),) + send.shape[1:], dtype=send.dtype)
        sc, rc = counts * row_bytes, recvcounts * row_bytes
        self._exchange(_dbytes(self._cp, send), sc, _dbytes(self._cp, recv), rc)
        self._count("alltoallv", sc.sum() - sc[self.rank], rc.sum() - rc[self.rank])
        return self._back(recv, host), recvcounts

    @property
    def lone_failure(self):
        """The bootstrap's ``lone_failure`` (ranks in one process: a ThreadComm's), or None
        (MPI: a rank failing alone aborts the job)."""
        return getattr(self._boot, "lone_failure", None)

    def bcast(self, obj, root=0):
        return self._boot.bcast(obj, root=root)

    def allgather_object(self, obj):
        return self._boot.allgather_object(obj)

    def split(self, color, key=0):
        return NcclComm(self._boot.split(color, key), _backend=(self._cp, self._nccl))

    def dup(self):
        return NcclComm(self._boot.dup(), _backend=(self._cp, self._nccl))

    def local_size(self):
        return self._boot.local_size()

    def barrier(self):
        self._boot.barrier()

    def stats(self):
        """Bytes moved so far per collective kind, NCCL's and the bootstrap communicator's."""
        out = super().stats()
        for kind, entry in self._boot.stats().items():
            mine = out.setdefault(kind, {"calls": 0, "sent": 0, "received": 0})
            for field in ("calls", "sent", "received"):
                mine[field] += entry[field]
        return out

    def reset_stats(self):
        super().reset_stats()
        self._boot.reset_stats()

    def free(self):
        if self._comm is not None:
            self._comm.destroy()
            self._comm = None
            self._boot.free()


def _dbytes(cp, arr):
    """A flat uint8 view of a C-contiguous device array."""
    return arr.reshape(-1).view(cp.uint8) if arr.size else cp.zeros(0, dtype=cp.uint8)


def _import_nccl():
    try:
        import cupy
        from cupy.cuda import nccl
        if not getattr(nccl, "available", True):
            raise ImportError("CuPy was built without NCCL")
    except Exception as exc:
        raise MissingDependencyError(
            "spsample.distributed.NcclComm needs CuPy with NCCL: pip install 'spsample[gpu]' "
            f"(cupy-cuda13x) ({type(exc).__name__}: {exc})") from None
    return cupy, nccl
