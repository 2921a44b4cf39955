"""The graph-source protocol (``spsample/graph/_source.py``) on distributed graphs of several
process rows: every rank holds a block, and the whole-graph quantities (computed from the
blocks and combined) are the in-memory graph's, bit for bit; the layer-wise weights of a
block and of the rows a hop fetches from their owners are the in-memory ones at their edge ids.

Serially on worlds of threads with more than one process row; under ``mpiexec`` on the job's
ranks with ``c = 1`` (one process row per rank). Every test asserts that the blocks were not
the whole graph (a DistGraph of one process row holds the whole graph and would check nothing).
"""

import numpy as np
import pytest

import spsample
from spsample.distributed import DistGraph, DistHeteroGraph
from spsample.distributed._sampling import _FetchHop
from spsample.distributed._timesorted import TimeSortedBlock
from spsample.engine._lazy import NotLowerable
from spsample.engine._rows import Block, FetchedRows
from spsample.graph._graph import Graph
from spsample.graph._source import GraphSource, RowFetcher, RowSource

from _dist_helpers import (assert_all, grid_for, launched_under_mpi, mpi_timeout,  # noqa: F401
                           raised, rmat10, rmat10_weighted, threaded, world_comm)
from test_dist_partition import files

pytestmark = [pytest.mark.mpi, mpi_timeout(120)]

#: More than one process row: (p, c) of thread worlds serially, the job's ranks under MPI.
LAYOUTS = [(None, 1)] if launched_under_mpi() else [(2, 1), (3, 1), (4, 2), (8, 2)]


def graphs():
    """``{name: graph}``: the embedded Cora (unweighted), and a weighted graph whose weights
    span many orders of magnitude (sums in another order would differ in their last bits)."""
    g = spsample.rmat(10, seed=6)
    w = np.exp(np.random.default_rng(6).normal(0.0, 8.0, g.num_edges))
    return {"cora": spsample.load(spsample.io.embedded_path("cora")).graph,
            "weighted": Graph.from_csr(g.indptr, g.indices, weights=w)}


def sharded(dg, grid):
    """Whether ``dg`` is a block of the graph (the distributed computation ran)."""
    return grid.num_rows > 1 and dg._full is None and dg.indptr.size - 1 < dg.num_nodes


def same_bits(a, b):
    return a is None and b is None or (a is not None and b is not None
                                       and a.dtype == b.dtype and a.tobytes() == b.tobytes())


def quantities_match(dg, g, edge_ids):
    """The GraphSource members of ``dg`` called: ``[]`` when each equals the in-memory graph
    ``g``'s bit for bit, else the names of those that differ."""
    bad = []
    if not isinstance(dg, GraphSource) or dg.num_nodes != g.num_nodes:
        bad.append("protocol")
    if dg.max_degree != g.max_degree:
        bad.append("max_degree")
    if dg.layerwise_scale() != g.layerwise_scale():
        bad.append("layerwise_scale")
    (q, cumulative), (q0, cumulative0) = dg.column_weights(), g.column_weights()
    if not (same_bits(q, q0) and same_bits(cumulative, cumulative0)):
        bad.append("column_weights")
    expected = None if g.weights is None else g.layerwise_weights()[edge_ids]
    if not same_bits(dg.layerwise_weights(), expected):
        bad.append("layerwise_weights")
    return bad


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_dist_graph_quantities_are_the_in_memory_ones(p, c):
    grid = grid_for(c)
    bad = []
    for name, g in graphs().items():
        dg = DistGraph.from_graph(g, grid)
        if not sharded(dg, grid):
            bad.append((name, "not sharded"))
            continue
        own = dg.global_edges(np.arange(dg.indices.size, dtype=np.int64))
        bad += [(name, b) for b in quantities_match(dg, g, own)]
        if not (isinstance(dg, RowSource) and isinstance(Block(dg), RowSource)):
            bad.append((name, "RowSource"))
        if not isinstance(raised(lambda: dg.sorted_entry_time(None, None)), NotLowerable):
            bad.append((name, "sorted_entry_time"))
        # rows fetched from their owners: the same quantities, the in-memory layer-wise values
        need = np.unique(np.random.default_rng(world_comm().rank).integers(0, g.num_nodes, 64))
        hop = _FetchHop(dg)
        if not isinstance(hop, RowFetcher):
            bad.append((name, "RowFetcher"))
        hop._merge(need, *hop.fetch_rows(need))
        rows = hop._view()
        if not (isinstance(rows, FetchedRows) and isinstance(rows, RowSource)):
            bad.append((name, "FetchedRows"))
        bad += [(name, "fetched", b) for b in quantities_match(rows, g, rows.edge_ids)]
        if not np.array_equal(rows.indices, g.indices[rows.edge_ids]):
            bad.append((name, "fetched rows"))
    assert_all(not bad, bad)


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_time_sorted_blocks_are_the_time_sorted_graph(p, c):
    """A temporal relation's block sorted by time has the quantities of the one-process
    ``TimeSortedGraph`` (its entries in time order), bit for bit."""
    rng = np.random.default_rng(9)
    rel = ("user", "rates", "item")
    n = 3000
    hg = spsample.HeteroGraph.from_edge_index(
        {rel: (rng.integers(0, 200, n), rng.integers(0, 150, n))},
        num_nodes={"user": 200, "item": 150},
        weights={rel: np.exp(rng.normal(0.0, 6.0, n))},
        edge_time={rel: rng.integers(0, 50, n)})
    grid = grid_for(c)
    dh = DistHeteroGraph.from_graph(hg, grid)
    block, whole = dh.time_sorted(rel), hg.time_sorted(rel)
    bad = []
    if not (isinstance(block, TimeSortedBlock) and sharded(block, grid)):
        bad.append(("not sharded", type(block).__name__))
    else:
        own = block.global_edges(np.arange(block.indices.size, dtype=np.int64))
        bad += quantities_match(block, whole, own)
        bad += [("canonical", b) for b in quantities_match(dh.relation_graph(rel),
                                                           hg.relation_graph(rel), np.asarray(
            dh.relation_graph(rel).global_edges(np.arange(
                dh.relation_graph(rel).indices.size, dtype=np.int64))))]
        if block.sorted_entry_time(block.entry_time, None) is not block.entry_time:
            bad.append("sorted_entry_time")
        if not isinstance(block, RowSource):
            bad.append("RowSource")
    assert_all(not bad, bad)


@pytest.mark.parametrize("p, c", LAYOUTS[:2])
@threaded
def test_relabelled_blocks_sum_columns_in_the_serial_order(rmat10_weighted, tmp_path_factory,
                                                           p, c):
    """A graph loaded with a permutation (blocks not in row order) has the in-memory
    quantities too: each column is summed over its rows in ascending order."""
    _, new, perm, _ = files(rmat10_weighted, "random", tmp_path_factory)
    grid = grid_for(c)
    dg = DistGraph.load(new, grid, permutation=perm)
    own = dg.global_edges(np.arange(dg.indices.size, dtype=np.int64))
    bad = [] if sharded(dg, grid) and dg.placement.permuted else ["not sharded or permuted"]
    bad += quantities_match(dg, rmat10_weighted, own)
    assert_all(not bad, bad)
