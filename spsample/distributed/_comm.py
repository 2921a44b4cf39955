"""Communicators: one small interface over MPI (mpi4py), a size-1 stand-in, later NCCL.

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

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, MissingDependencyError
from .._validate import fail
from ._failure import install_excepthook

__all__ = ["Communicator", "SelfComm", "MPIComm", "world", "launched_under_mpi"]

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
        size = len(pickle.dumps(out)) if self.size > 1 else 0
        if self.rank == root:
            self._count("bcast", size * (self.size - 1), 0)
        else:
            self._count("bcast", 0, size)
        return out

    def allgather_object(self, obj):
        out = self._comm.allgather(obj)
        mine = len(pickle.dumps(obj))
        others = sum(len(pickle.dumps(o)) for i, o in enumerate(out) if i != self.rank)
        self._count("allgather_object", mine * (self.size - 1), others)
        return out

    def split(self, color, key=0):
        return MPIComm(self._comm.Split(int(color), int(key)), _dup=False)

    def barrier(self):
        self._comm.Barrier()

    def free(self):
        if self._comm is not None and self._comm != self._MPI.COMM_NULL:
            self._comm.Free()
        self._comm = None


def _bytes(arr):
    """A flat uint8 view of a C-contiguous array (MPI moves bytes; any dtype travels)."""
    return arr.reshape(-1).view(np.uint8) if arr.size else np.zeros(0, dtype=np.uint8)


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise MissingDependencyError(
            "spsample.distributed.MPIComm needs mpi4py: pip install mpi4py mpich "
            "(or: pip install 'spsample[mpi]')") from exc
    return MPI


def launched_under_mpi():
    """Whether this process was started by an MPI launcher (mpiexec, mpirun, srun)."""
    return any(os.environ.get(name) for name in _LAUNCHER_VARS)


def world():
    """The default communicator: ``MPIComm(MPI.COMM_WORLD)`` when the process was started by
    an MPI launcher with more than one rank, else :class:`SelfComm` (MPI is then not even
    imported, so a plain ``python`` run needs no MPI)."""
    if launched_under_mpi():
        MPI = _import_mpi()
        if MPI.COMM_WORLD.Get_size() > 1:
            return MPIComm(MPI.COMM_WORLD)
    return SelfComm()
