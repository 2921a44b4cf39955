"""Ownership arithmetic of the 1.5D grid, as pure functions, for every rank of many grids."""

import numpy as np
import pytest

from spsample import ArgumentError, DistributedError
from spsample.distributed import _layout as L

from _dist_helpers import mpi_timeout

pytestmark = [pytest.mark.mpi, mpi_timeout(60)]

GRIDS = [(p, c) for p in (1, 2, 3, 4, 6, 8, 12) for c in range(1, p + 1) if p % c == 0]
SIZES = [0, 1, 2, 5, 7, 100, 1023, 4096]


@pytest.mark.parametrize("p,c", GRIDS)
def test_ranks_form_rows_and_columns(p, c):
    rows = [L.process_row(r, p, c) for r in range(p)]
    replicas = [L.replica_index(r, p, c) for r in range(p)]
    assert L.num_process_rows(p, c) == p // c
    assert sorted(zip(rows, replicas)) == [(i, j) for i in range(p // c) for j in range(c)]
    for r in range(p):
        assert L.rank_of(rows[r], replicas[r], p, c) == r
        assert r in L.row_ranks(rows[r], p, c) and r in L.column_ranks(replicas[r], p, c)
    # a column holds one rank per process row; the c ranks of a row hold the same block
    for j in range(c):
        assert [L.process_row(r, p, c) for r in L.column_ranks(j, p, c)] == list(range(p // c))
    for i in range(p // c):
        assert len(set(L.rows_of_rank(50, r, p, c) for r in L.row_ranks(i, p, c))) == 1


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("parts", [1, 2, 3, 4, 7, 8])
def test_blocks_partition_the_vertices(n, parts):
    bounds = L.block_bounds(n, parts)
    assert bounds[0] == 0 and bounds[-1] == n and (np.diff(bounds) >= 0).all()
    sizes = np.diff(bounds)
    assert sizes.max() - sizes.min() <= 1              # balanced
    ids = np.arange(n)
    owner = L.owner_of(ids, n, parts)
    for i in range(parts):
        lo, hi = L.block_range(n, i, parts)
        assert (owner[lo:hi] == i).all()               # every vertex has exactly its block
    assert owner.size == 0 or (owner.min() >= 0 and owner.max() < parts)


@pytest.mark.parametrize("p,c", GRIDS)
@pytest.mark.parametrize("n", [0, 3, 1000])
def test_rows_of_rank_cover_the_graph_once_per_replica(p, c, n):
    for j in range(c):
        spans = [L.rows_of_rank(n, r, p, c) for r in L.column_ranks(j, p, c)]
        assert spans[0][0] == 0 and spans[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        for r, (lo, hi) in zip(L.column_ranks(j, p, c), spans):
            if hi > lo:
                assert set(L.owner_of([lo, hi - 1], n, p // c)) == {L.process_row(r, p, c)}


def test_worked_example():
    # p = 6, c = 2, n = 10: blocks [0,4) [4,7) [7,10)
    assert [L.rows_of_rank(10, r, 6, 2) for r in range(6)] == [(0, 4), (0, 4), (4, 7), (4, 7),
                                                                (7, 10), (7, 10)]
    assert L.owner_of([0, 3, 4, 6, 7, 9], 10, 3).tolist() == [0, 0, 1, 1, 2, 2]
    assert L.column_ranks(1, 6, 2) == [1, 3, 5] and L.row_ranks(2, 6, 2) == [4, 5]


@pytest.mark.parametrize("p,c", [(4, 3), (6, 4), (1, 2), (5, 2)])
def test_replication_must_divide(p, c):
    with pytest.raises(DistributedError, match="replication"):
        L.check_grid(p, c)


def test_bad_arguments():
    with pytest.raises(ArgumentError, match="rank"):
        L.process_row(4, 4, 1)
    with pytest.raises(ArgumentError, match="index"):
        L.block_range(10, 3, 3)
    with pytest.raises(ArgumentError, match="replication"):
        L.check_grid(4, 0)
