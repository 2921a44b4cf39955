"""The distributed cells on the MPI world: under ``mpiexec -n P`` (``tests/run.sh``: P = 2 and
4) every rank samples its share of each cell on a ``DistGraph`` / ``DistHeteroGraph`` of the
world, push and pull at every valid replication factor and with the replicated graph, and
its minibatches must be the oracle's of the same global ids, bit for bit (checked on every
rank, reduced over the ranks). In a plain ``pytest`` process (world size 1) the module is
skipped: the in-process threaded communicator's cells cover the distributed code there."""

import numpy as np
import pytest

from spsample import testing
from spsample.distributed import Grid, launched_under_mpi, world

from . import cells
from .paths import dist_share

_WORLD = world()

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(_WORLD.size == 1, reason="the MPI world has one rank (run under "
                       "mpiexec, as tests/run.sh does)"),
    pytest.mark.timeout(300, method="thread" if launched_under_mpi() else "signal"),
]

#: The weighted graph (with zero weights) for every homogeneous sampler, the heterogeneous and
#: temporal graphs for the others, and a few link cells.
WORLD_GRAPHS = ("weighted-zeros", "hetero", "temporal")
WORLD_LINK = (("nodewise", "random"), ("labor", "weighted-zeros"), ("ladies", "random"),
              ("disjoint", "random"), ("nodewise", "temporal"))
#: Layouts per cell, rotating through the world's layouts (push and pull at every c, and the
#: replicated graph), so that every layout runs a share of the cells and the runs stay short.
LAYOUTS_PER_CELL = 2


def _layouts():
    p = _WORLD.size
    out = [(c, strategy, False) for c in range(1, p + 1) if p % c == 0
           for strategy in ("push", "pull")]
    return out + [(1, "push", True)]


def _cells():
    node = [cell for cell in cells.node_cells() if cell[1] in WORLD_GRAPHS]
    link = [(s, g, "link" if cells.GRAPHS[g].kind == "graph" else "hetero-link")
            for s, g in WORLD_LINK]
    layouts = _layouts()
    return [cell + layouts[(LAYOUTS_PER_CELL * i + j) % len(layouts)]
            for i, cell in enumerate(node + link) for j in range(LAYOUTS_PER_CELL)]


def _id(cell):
    s, g, mode, c, strategy, replicated = cell
    return f"{s}/{g}/{mode}/c{c}-{strategy}{'-replicated' if replicated else ''}"


_GRIDS = {}


def _grid(c):
    """One Grid per replication factor (communicators are a finite resource)."""
    if c not in _GRIDS:
        _GRIDS[c] = Grid(_WORLD, replication=c)
    return _GRIDS[c]


def _assert_all(ok, message):
    flags = _WORLD.allgather_object(bool(ok))
    assert all(flags), f"failed on ranks {[r for r, f in enumerate(flags) if not f]}: {message}"


@pytest.mark.parametrize("sampler_name, graph_name, mode, c, strategy, replicated", _cells(),
                         ids=[_id(cell) for cell in _cells()])
def test_world_cell_equals_the_oracle(sampler_name, graph_name, mode, c, strategy,
                                      replicated):
    sampler, expected = cells.oracle(sampler_name, graph_name, mode)
    seeds, kw = cells.inputs(graph_name, mode)
    message = ""
    try:
        got, b0, b1 = dist_share(_WORLD, cells.graph(graph_name), seeds, sampler,
                                 replication=c, strategy=strategy, replicated=replicated,
                                 grid=_grid(c), **kw)
        if mode in ("link", "hetero-link"):
            expected = [b for b in expected if b0 <= b.batch_id < b1]
        else:
            expected = list(expected)[b0:b1]
        testing.assert_same_bulk(got, expected)
    except AssertionError as exc:
        message = str(exc)
    _assert_all(not message, message)


def test_the_world_is_the_grid():
    """The cells above really ran on several ranks."""
    grid = Grid(_WORLD)
    assert grid.size == _WORLD.size > 1
    assert np.array_equal(grid.bounds(10)[[0, -1]], [0, 10])
