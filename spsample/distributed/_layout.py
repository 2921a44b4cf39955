"""1.5D distribution arithmetic as pure functions of ``(n, rank, size, c)``.

``size = p`` ranks form ``p / c`` process rows of ``c`` replicas each. Rank ``r`` is replica
``r % c`` of process row ``r // c``; the ``c`` ranks of one process row hold the same block of
rows of ``A`` (and the same feature shard). The ``p / c`` ranks sharing a replica index form a
*column*: one rank per process row, so a column holds the whole graph exactly once, and every
exchange (push requests, pulled rows, feature rows) runs inside a column::

    p = 6, c = 2          replica 0   replica 1
      process row 0:       rank 0      rank 1     rows [0, n/3)
      process row 1:       rank 2      rank 3     rows [n/3, 2n/3)
      process row 2:       rank 4      rank 5     rows [2n/3, n)

Block rows are balanced contiguous ranges: the first ``n % q`` of the ``q = p / c`` blocks
get one row more. No function here touches MPI, so all of them are unit-tested for every rank.
"""

import numpy as np

from .._errors import ArgumentError, DistributedError
from .._validate import as_int, fail

__all__ = [
    "check_grid", "num_process_rows", "process_row", "replica_index", "rank_of",
    "row_ranks", "column_ranks", "block_bounds", "block_range", "owner_of", "rows_of_rank",
]


def check_grid(size, replication):
    """Validate ``(p, c)``; returns them as ints. ``c`` must divide ``p``."""
    size = as_int("Grid", "size", size, minimum=1)
    c = as_int("Grid", "replication", replication, minimum=1)
    if size % c:
        fail(DistributedError, "Grid", "replication",
             f"must divide the number of ranks ({size}); valid values are "
             f"{[d for d in range(1, size + 1) if size % d == 0]}", c)
    return size, c


def num_process_rows(size, replication):
    """``p / c``."""
    size, c = check_grid(size, replication)
    return size // c


def process_row(rank, size, replication):
    """The process row of ``rank``: ``rank // c``."""
    size, c = check_grid(size, replication)
    return _rank(rank, size) // c


def replica_index(rank, size, replication):
    """The replica index of ``rank`` inside its process row: ``rank % c``."""
    size, c = check_grid(size, replication)
    return _rank(rank, size) % c


def rank_of(row, replica, size, replication):
    """The rank holding replica ``replica`` of process row ``row``."""
    size, c = check_grid(size, replication)
    row = as_int("rank_of", "row", row, minimum=0)
    replica = as_int("rank_of", "replica", replica, minimum=0)
    if row >= size // c:
        fail(ArgumentError, "rank_of", "row", f"must be < {size // c}", row)
    if replica >= c:
        fail(ArgumentError, "rank_of", "replica", f"must be < {c}", replica)
    return row * c + replica


def row_ranks(row, size, replication):
    """The ``c`` ranks of process row ``row`` (they hold the same block), ascending."""
    size, c = check_grid(size, replication)
    return [rank_of(row, j, size, c) for j in range(c)]


def column_ranks(replica, size, replication):
    """The ``p / c`` ranks with replica index ``replica``, ordered by process row."""
    size, c = check_grid(size, replication)
    return [rank_of(i, replica, size, c) for i in range(size // c)]


def block_bounds(n, parts):
    """Boundaries of ``parts`` balanced contiguous blocks of ``range(n)``.

    Returns
    -------
    int64, shape (parts + 1,): block ``i`` is ``[bounds[i], bounds[i + 1])``.
    """
    n = as_int("block_bounds", "n", n, minimum=0)
    parts = as_int("block_bounds", "parts", parts, minimum=1)
    base, rem = divmod(n, parts)
    i = np.arange(parts + 1, dtype=np.int64)
    return i * base + np.minimum(i, rem)


def block_range(n, index, parts):
    """``(lo, hi)`` of block ``index`` of :func:`block_bounds`."""
    bounds = block_bounds(n, parts)
    index = as_int("block_range", "index", index, minimum=0)
    if index >= parts:
        fail(ArgumentError, "block_range", "index", f"must be < parts ({parts})", index)
    return int(bounds[index]), int(bounds[index + 1])


def owner_of(ids, n, parts):
    """The block (process row) owning each vertex id (``0 <= ids < n``), int64 like ``ids``."""
    ids = np.asarray(ids, dtype=np.int64)
    bounds = block_bounds(n, parts)
    return np.searchsorted(bounds, ids, side="right").astype(np.int64) - 1


def rows_of_rank(n, rank, size, replication):
    """``(lo, hi)``: the block of rows of ``A`` (and feature rows) held by ``rank``."""
    size, c = check_grid(size, replication)
    return block_range(n, process_row(rank, size, c), size // c)


def _rank(rank, size):
    rank = as_int("Grid", "rank", rank, minimum=0)
    if rank >= size:
        fail(ArgumentError, "Grid", "rank", f"must be < size ({size})", rank)
    return rank
