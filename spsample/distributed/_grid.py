"""The process grid: ``p / c`` process rows × ``c`` replicas, with row and column
sub-communicators (see :mod:`spsample.distributed._layout` for the arithmetic)."""

from .._errors import ArgumentTypeError
from .._validate import fail
from ._layout import (block_bounds, block_range, check_grid, owner_of, process_row,
                      replica_index)
from ._collective import agree, check_same
from ._comm import Communicator, MPIComm, world
from ._failure import abort_if_failing_alone

__all__ = ["Grid"]


class Grid:
    """``p`` ranks arranged as ``p / c`` process rows of ``c`` replicas.

    Parameters
    ----------
    comm : Communicator, mpi4py.MPI.Comm or None
        ``None``: :func:`spsample.distributed.world` — ``MPI.COMM_WORLD`` (duplicated) when the
        process was started by ``mpiexec``/``mpirun``/``srun`` with more than one rank, else a
        :class:`SelfComm` (size 1, no MPI). An mpi4py communicator is wrapped in
        :class:`MPIComm` (duplicated, the caller's is never used directly).
    replication : int
        ``c``, dividing ``p``. ``c = 1``: every rank holds a distinct block (2D-like, least
        memory); ``c = p``: every rank holds the whole graph.

    Attributes
    ----------
    comm : Communicator
        All ``p`` ranks.
    row_comm : Communicator
        The ``c`` ranks of this rank's process row (same block); rank in it = replica index.
    col_comm : Communicator
        The ``p / c`` ranks with this rank's replica index; rank in it = process row.
    rank, size, replication, num_rows, row, replica : int

    Raises
    ------
    DistributedError
        On every rank, when ``replication`` does not divide ``p`` (or ranks pass different
        values).

    Examples
    --------
    >>> from spsample.distributed import Grid
    >>> g = Grid(replication=1)          # plain python: size 1
    >>> g.size, g.num_rows, g.block(10)
    (1, 1, (0, 10))
    """

    def __init__(self, comm=None, replication=1):
        if comm is None:
            comm = world()
        elif not isinstance(comm, Communicator):
            comm = _wrap_mpi(comm)
        self.comm = comm
        self.rank, self.size = comm.rank, comm.size
        with abort_if_failing_alone(comm, "Grid"):
            self._split(replication)

    def _split(self, replication):
        comm = self.comm
        size, c = agree(comm, "Grid", lambda: _agreed_grid(comm, replication))
        check_same(comm, "Grid", "replication", c)
        self.replication = c
        self.num_rows = size // c
        self.row = process_row(self.rank, size, c)
        self.replica = replica_index(self.rank, size, c)
        self.row_comm = comm.split(self.row, self.replica)
        self.col_comm = comm.split(self.replica, self.row)

    def block(self, n):
        """``(lo, hi)``: the rows of an ``n``-vertex graph held by this rank's process row."""
        return block_range(n, self.row, self.num_rows)

    def bounds(self, n):
        """Block boundaries of all process rows, int64 shape (num_rows + 1,)."""
        return block_bounds(n, self.num_rows)

    def owner(self, ids, n):
        """The process row owning each vertex id."""
        return owner_of(ids, n, self.num_rows)

    def stats(self):
        """Bytes per collective kind, summed over the world, row and column communicators."""
        total = {}
        for comm in (self.comm, self.row_comm, self.col_comm):
            for kind, entry in comm.stats().items():
                acc = total.setdefault(kind, {"calls": 0, "sent": 0, "received": 0})
                for key in acc:
                    acc[key] += entry[key]
        return total

    def reset_stats(self):
        for comm in (self.comm, self.row_comm, self.col_comm):
            comm.reset_stats()

    def free(self):
        """Release the sub-communicators (and the world duplicate this grid made)."""
        for comm in (self.row_comm, self.col_comm):
            comm.free()

    def __repr__(self):
        return (f"Grid(size={self.size}, replication={self.replication}, rank={self.rank}, "
                f"row={self.row}, replica={self.replica})")


def _agreed_grid(comm, replication):
    size, c = check_grid(comm.size, replication)
    return size, c


def _wrap_mpi(comm):
    try:
        return MPIComm(comm)
    except ArgumentTypeError:
        fail(ArgumentTypeError, "Grid", "comm",
             "must be None, a spsample Communicator or an mpi4py.MPI.Comm", type(comm))
