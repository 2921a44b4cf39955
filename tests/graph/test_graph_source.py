"""The written graph-source protocol (``spsample/graph/_source.py``): every graph kind
implements it, and the whole-graph quantities are the in-memory graph's, bit for bit.

Here the kinds one process holds: ``Graph`` (and a HeteroGraph's relation graphs and
time-sorted graphs), ``DiskGraph`` (its cache smaller than the graph, so the quantities come
from blocks read again and again), the rows a hop reads from disk (``FetchedRows``, ``_Window``,
the ``_ReadHop`` that reads them) and a ``DistGraph`` of one process row (the protocol only:
its quantities are the in-memory graph's own). ``tests/distributed/test_dist_graph_source.py``
checks the distributed graph where several process rows each hold a block.
"""

import numpy as np
import pytest

import spsample
from spsample.engine._batches import SampleRequest, sample_request
from spsample.engine._lazy import NotLowerable
from spsample.engine._rows import Block, FetchedRows
from spsample.distributed import DistGraph, Grid, SelfComm
from spsample.graph._graph import Graph
from spsample.graph._hetero import TimeSortedGraph
from spsample.graph._source import GraphSource, RowFetcher, RowSource
from spsample.io._disk_graph import DiskGraph
from spsample.io._disk_sampling import _ReadHop, _Window

from graphs import random_graph

#: The members each protocol must keep (a protocol that lost one would pass every kind).
GRAPH_SOURCE = {"num_nodes", "weights", "max_degree", "layerwise_scale", "layerwise_weights",
                "column_weights", "sorted_entry_time"}
ROW_SOURCE = {"num_nodes", "indptr", "indices", "weights"}
ROW_FETCHER = {"fetch_rows"}


def protocol_members(proto):
    """The public attributes and methods a protocol class declares."""
    names = set(getattr(proto, "__annotations__", {}))
    names |= {k for k, v in vars(proto).items() if callable(v) and not k.startswith("_")}
    return names


def weighted_graph(n=600, m=6000, seed=4):
    """Weights over many orders of magnitude, so that sums in another order would differ."""
    g = random_graph(n, m, seed=seed)
    w = np.exp(np.random.default_rng(seed).normal(0.0, 8.0, g.num_edges))
    return Graph.from_csr(g.indptr, g.indices, weights=w)


def cora():
    return spsample.load(spsample.io.embedded_path("cora")).graph


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``{name: (in-memory graph, path)}``: the embedded Cora (unweighted), a weighted graph
    and a graph whose weights are all subnormal (the scale is 2**1023)."""
    tiny = random_graph(300, 3000, seed=7)
    tiny = Graph.from_csr(tiny.indptr, tiny.indices,
                          weights=np.random.default_rng(2).random(tiny.num_edges) * 1e-310)
    out = {}
    for name, g in (("cora", cora()), ("weighted", weighted_graph()), ("subnormal", tiny)):
        path = tmp_path_factory.mktemp("source") / f"{name}.h5"
        spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
        out[name] = (g, path)
    return out


def small_disk_graph(g, path):
    """``path`` opened with a budget whose cache holds a few blocks of the graph only."""
    entry = 16 if g.is_weighted else 8
    budget = 8 * (g.num_nodes + 1) + 6 * entry * max(int(g.degree().max()), 64)
    dg = DiskGraph.open(path, budget)
    assert dg.cache.capacity < dg.cache.num_blocks          # rows really come from disk
    return dg


def temporal_hetero():
    rng = np.random.default_rng(3)
    rel = ("user", "rates", "item")
    src, dst = rng.integers(0, 40, 500), rng.integers(0, 30, 500)
    w = rng.random(500) + 0.1
    return spsample.HeteroGraph.from_edge_index(
        {rel: (src, dst)}, num_nodes={"user": 40, "item": 30}, weights={rel: w},
        edge_time={rel: rng.integers(0, 1000, 500)}), rel


def read_rows(dg, need):
    """The rows ``need`` read from disk by the disk graph's fetch hop, as the engine lays them
    out: ``(the hop, its FetchedRows)``."""
    hop = _ReadHop(dg)
    fetched = hop.fetch_rows(need)
    hop._merge(need, *fetched)
    return hop, hop._view()


# ---------------------------------------------------------------------- the protocol itself
def test_the_protocols_declare_their_members():
    """The written protocol keeps every member the engine relies on (dropping one from the
    protocol would make every isinstance check below pass vacuously)."""
    assert protocol_members(GraphSource) == GRAPH_SOURCE
    assert protocol_members(RowSource) == ROW_SOURCE
    assert protocol_members(RowFetcher) == ROW_FETCHER


@pytest.mark.parametrize("member", sorted(GRAPH_SOURCE))
def test_a_kind_without_a_member_is_not_a_graph_source(member):
    """The isinstance checks can fail: a Graph kind that lost any one member is refused."""
    g = weighted_graph(50, 300)
    assert isinstance(g, GraphSource)
    def missing(self):
        raise AttributeError(member)
    dropped = type("Dropped", (Graph,), {member: property(missing)})
    h = dropped(g.indptr, g.indices, g.weights)
    assert not isinstance(h, GraphSource)


# ---------------------------------------------------------------------- in memory
def check_graph_source(graph, n):
    """Every member of GraphSource called on ``graph``; its quantities returned."""
    assert isinstance(graph, GraphSource), type(graph)
    assert graph.num_nodes == n
    top = graph.max_degree
    assert isinstance(top, int)
    scale = graph.layerwise_scale()
    assert isinstance(scale, float) and scale > 0 and np.frexp(scale)[0] == 0.5
    q, cumulative = graph.column_weights()
    assert q.shape == cumulative.shape == (n,) and q.dtype == cumulative.dtype == np.float64
    assert graph.column_weights()[0] is q                        # memoised, not recomputed
    return top, scale, q, cumulative


@pytest.mark.parametrize("weighted", [False, True])
def test_graph_implements_the_protocol(weighted):
    g = weighted_graph() if weighted else random_graph(600, 6000, seed=4)
    top, scale, q, cumulative = check_graph_source(g, g.num_nodes)
    assert isinstance(g, RowSource)
    assert top == int(g.degree().max())
    w = g.layerwise_weights()
    if weighted:
        assert w is g.layerwise_weights() and not w.flags.writeable
        np.testing.assert_array_equal(w, g.weights * scale)
        assert 0.5 <= w.max() < 1
    else:
        assert w is None and scale == 1.0
    sq = None if w is None else w * w
    np.testing.assert_array_equal(q, np.bincount(g.indices, weights=sq, minlength=g.num_nodes))
    np.testing.assert_array_equal(cumulative, np.cumsum(q))
    t = np.zeros(g.num_edges, dtype=np.int64)      # not frozen: checked on every call
    for _ in range(2):
        assert g.sorted_entry_time(t, lambda: t) is t
    np.testing.assert_array_equal(g.indices32(), g.indices.astype(np.uint32))
    indices32, internal_of, vertex_of = g.internal_columns()
    np.testing.assert_array_equal(vertex_of[indices32], g.indices)
    assert g.internal_columns()[0] is indices32


def test_hetero_relation_graphs_implement_the_protocol():
    """A HeteroGraph's relation graphs and time-sorted graphs are Graphs: the quantities of a
    time-sorted graph are those of its own entry order."""
    hg, rel = temporal_hetero()
    canonical, by_time = hg.relation_graph(rel), hg.time_sorted(rel)
    assert isinstance(by_time, TimeSortedGraph)
    for graph in (canonical, by_time):
        check_graph_source(graph, hg.total_nodes)
        assert isinstance(graph, RowSource)
    assert canonical.max_degree == by_time.max_degree
    assert canonical.layerwise_scale() == by_time.layerwise_scale()
    np.testing.assert_array_equal(by_time.layerwise_weights(),
                                  canonical.layerwise_weights()[by_time.canonical_edge])
    calls = []
    for _ in range(2):                     # checked once per array the graph holds
        assert by_time.sorted_entry_time(
            by_time.entry_time, lambda: calls.append(1) or by_time.entry_time) \
            is by_time.entry_time
    assert calls == [1]


# ---------------------------------------------------------------------- on disk
@pytest.mark.parametrize("name", ["cora", "weighted", "subnormal"])
def test_disk_graph_quantities_are_the_in_memory_ones(saved, name):
    """Column weights, the layer-wise scale and the longest row of a graph on disk, its cache
    a few blocks of the graph, equal the in-memory graph's bit for bit; the weights of rows
    read from disk, scaled, equal the in-memory layer-wise weights."""
    g, path = saved[name]
    with small_disk_graph(g, path) as dg:
        top, scale, q, cumulative = check_graph_source(dg, g.num_nodes)
        assert dg.cache.stats["bytes_read"] > 0
        assert top == g.max_degree
        assert scale == g.layerwise_scale()
        q0, cumulative0 = g.column_weights()
        assert q.tobytes() == q0.tobytes()
        assert cumulative.tobytes() == cumulative0.tobytes()
        with pytest.raises(NotLowerable):
            dg.layerwise_weights()                   # no entries in memory: hops read rows
        with pytest.raises(NotLowerable):
            dg.sorted_entry_time(None, None)
        need = np.unique(np.random.default_rng(0).integers(0, g.num_nodes, 200))
        hop, rows = read_rows(dg, need)
        assert isinstance(hop, RowFetcher)
        check_rows(rows, g)


def check_rows(rows, g):
    """``rows`` (FetchedRows over the whole graph ``g``) implements both protocols, with the
    whole graph's quantities and the in-memory layer-wise weights of its entries."""
    assert isinstance(rows, FetchedRows) and isinstance(rows, RowSource)
    top, scale, q, _ = check_graph_source(rows, g.num_nodes)
    assert (top, scale) == (g.max_degree, g.layerwise_scale())
    assert q.tobytes() == g.column_weights()[0].tobytes()
    w = rows.layerwise_weights()
    if g.weights is None:
        assert w is None
    else:
        assert w is rows.layerwise_weights()
        assert w.tobytes() == g.layerwise_weights()[rows.edge_ids].tobytes()
    np.testing.assert_array_equal(rows.indices, g.indices[rows.edge_ids])
    t = np.zeros(rows.num_edges)
    assert rows.sorted_entry_time(t, lambda: t) is t


def test_disk_graph_unweighted_layerwise_scale_is_one(saved):
    """An unweighted graph on disk scales by 1, as in memory (it raised AttributeError,
    reading the maximum of weights it does not have)."""
    g, path = saved["cora"]
    with small_disk_graph(g, path) as dg:
        assert dg.layerwise_scale() == g.layerwise_scale() == 1.0


def test_disk_windows_are_row_sources(saved):
    g, path = saved["weighted"]
    with small_disk_graph(g, path) as dg:
        _, idx, w = next(iter(dg.cache.stream([0])))
        rows = int(np.searchsorted(dg.indptr, idx.size, side="right")) - 1
        window = _Window(dg, dg.indptr[:rows + 1], idx[:dg.indptr[rows]],
                         w[:dg.indptr[rows]], 0, 0)
        assert isinstance(window, RowSource)
        np.testing.assert_array_equal(window.indices, g.indices[:g.indptr[rows]])


# ---------------------------------------------------------------------- one process row
def test_dist_graph_of_one_process_row_implements_the_protocol():
    """The protocol only: a DistGraph of one process row holds the whole graph and its
    quantities are that graph's (the distributed computation runs in
    tests/distributed/test_dist_graph_source.py)."""
    g = weighted_graph()
    dg = DistGraph.from_graph(g, Grid(SelfComm()))
    check_graph_source(dg, g.num_nodes)
    assert isinstance(dg, RowSource) and isinstance(Block(dg), RowSource)
    assert dg.layerwise_weights().tobytes() == g.layerwise_weights().tobytes()
    with pytest.raises(NotLowerable):
        dg.sorted_entry_time(None, None)


# ---------------------------------------------------------------------- the one prologue
def test_sample_request_is_the_one_prologue():
    r = sample_request(10, [3, 1, 2, 3, 4], spsample.NodeWise([2]), 2, 7, 1, 5)
    assert isinstance(r, SampleRequest)
    assert r.sizes.tolist() == [2, 2, 1] and r.batch_ids.tolist() == [5, 6, 7]
    assert (r.batch_size, r.seed, r.epoch, r.batch_offset) == (2, 7, 1, 5)
    r.check_unique()
    with pytest.raises(spsample.SeedError, match="repeats vertex 3"):
        sample_request(10, [3, 3], spsample.NodeWise([2]), 2, 0, 0, 0).check_unique()
    empty = sample_request(10, [], spsample.NodeWise([2]), 2, 0, 0, 0, allow_empty=True)
    assert empty.seeds.size == empty.sizes.size == empty.batch_ids.size == 0
    empty.check_unique()
    with pytest.raises(spsample.SeedError, match="seeds"):
        sample_request(10, [], spsample.NodeWise([2]), 2, 0, 0, 0)
    with pytest.raises(spsample.ArgumentError, match="epoch"):
        sample_request(10, [], spsample.NodeWise([2]), 2, 0, 2**30, 0, allow_empty=True)
    big = sample_request(10, [1, 2], spsample.NodeWise([2]), 50, 0, 0, 0)
    assert big.sizes.tolist() == [2] and big.batch_size == 50


@pytest.mark.parametrize("kind", ["graph", "hetero", "disk", "dist", "dist_hetero"])
def test_every_sample_path_builds_its_request_in_the_one_prologue(kind, saved, monkeypatch):
    """sample() on each graph kind checks its arguments through ``sample_request`` (once)."""
    from spsample.engine import _batches

    calls = []
    real = _batches.sample_request

    def spy(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)
    for module in ("spsample.samplers._sample", "spsample.engine._hetero_sample",
                   "spsample.io._disk_sampling", "spsample.distributed._graph",
                   "spsample.distributed._hetero"):
        monkeypatch.setattr(f"{module}.sample_request", spy)
    g, path = saved["cora"]
    seeds = np.arange(6)
    if kind == "graph":
        graph = g
    elif kind == "disk":
        graph = small_disk_graph(g, path)
    elif kind == "dist":
        graph = DistGraph.from_graph(g, Grid(SelfComm()))
    else:
        hg, rel = temporal_hetero()
        graph = hg if kind == "hetero" else \
            spsample.distributed.DistHeteroGraph.from_graph(hg, Grid(SelfComm()))
        seeds = ("item", np.arange(6))
    spsample.sample(graph, seeds, sampler=spsample.NodeWise([2]), batch_size=4)
    assert len(calls) == 1
