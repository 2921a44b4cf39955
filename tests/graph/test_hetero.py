"""Heterogeneous graphs: construction, sampling invariants, oracles, temporal and disjoint."""

import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample.engine._hetero_sample import build_schedule, run_global
from spsample.engine._reference import reference_sample

RELS = [("author", "writes", "paper"), ("paper", "cites", "paper"),
        ("paper", "written_by", "author"), ("paper", "in", "venue"),
        ("venue", "has", "paper")]
COUNTS = {"author": 40, "paper": 60, "venue": 5}


def hetero_graph(seed=0, *, weighted=False, edge_time=False, node_time=False, m=300):
    """A random graph of 3 types and 5 relations (multi-edges merged)::

        author --writes--> paper --cites--> paper
        paper --written_by--> author;  paper --in--> venue --has--> paper
    """
    rng = np.random.default_rng(seed)
    edges, weights, times = {}, {}, {}
    for rel in RELS:
        s, _, d = rel
        edges[rel] = (rng.integers(0, COUNTS[s], m), rng.integers(0, COUNTS[d], m))
        weights[rel] = rng.random(m) + 0.05
        times[rel] = rng.integers(0, 100, m).astype(float)
    ntime = {t: rng.integers(0, 100, n).astype(float) for t, n in COUNTS.items()}
    return spsample.HeteroGraph.from_edge_index(
        edges, num_nodes=COUNTS, weights=weights if weighted else None,
        edge_time=times if edge_time else None, node_time=ntime if node_time else None)


def _global_bulks(graph, seeds, sampler, batch_size, seed_time=None, **kw):
    """(native, numpy) engine bulks in global ids for the same call."""
    glob = np.asarray(seeds) + graph.offsets["paper"]
    sizes = np.full(-(-glob.size // batch_size), batch_size)
    sizes[-1] = glob.size - batch_size * (sizes.size - 1)
    ids = np.arange(sizes.size, dtype=np.int64) + kw.get("batch_offset", 0)
    out = []
    for native in (True, False):
        previous = _native.set_enabled(native) if (native or _native.AVAILABLE) else None
        try:
            out.append(run_global(graph, glob, sizes, ids, batch_size, sampler,
                                  kw.get("seed", 3), kw.get("epoch", 1), seed_time))
        finally:
            if previous is not None:
                _native.set_enabled(previous)
    return out


SAMPLERS = [
    ("uniform", lambda: spsample.NodeWise([3, 2])),
    ("replace", lambda: spsample.NodeWise([3, 2], replace=True)),
    ("weighted", lambda: spsample.NodeWise([3, 2], weighted=True)),
    ("labor", lambda: spsample.LABOR([3, 2])),
    ("dict", lambda: spsample.NodeWise({"writes": [2, 1], "cites": [4, 0],
                                        "written_by": [1, 3], "in": [-1, 1], "has": [2, 2]})),
]


# ------------------------------------------------------------------ construction
def test_from_edge_index_canonical_rows_and_earliest_time():
    rel = ("u", "likes", "i")
    g = spsample.HeteroGraph.from_edge_index(
        {rel: ([2, 0, 2, 1], [1, 1, 1, 0])}, num_nodes={"u": 3, "i": 2},
        edge_time={rel: [5.0, 7.0, 3.0, 1.0]}, weights={rel: [1.0, 2.0, 4.0, 8.0]})
    indptr, indices, weights = g.csr(rel)
    assert indptr.tolist() == [0, 1, 3] and indices.tolist() == [1, 0, 2]
    assert weights.tolist() == [8.0, 2.0, 5.0]          # (2 -> 1) merged: 1 + 4
    assert g.edge_time(rel).tolist() == [1.0, 7.0, 3.0]  # the earlier of 5 and 3
    assert g.offsets == {"i": 0, "u": 2} and g.total_nodes == 5


def test_inputs_are_not_modified_and_order_does_not_matter():
    src, dst = np.array([3, 1, 2]), np.array([0, 0, 1])
    r, s = ("x", "r", "y"), ("y", "s", "x")
    a = spsample.HeteroGraph.from_edge_index({r: (src, dst), s: (dst, src)})
    b = spsample.HeteroGraph.from_edge_index({s: (dst, src), r: (src, dst)})
    assert src.tolist() == [3, 1, 2] and a == b
    s1 = spsample.sample(a, ("x", [1, 2]), sampler=spsample.NodeWise([2, 2]), batch_size=1)
    s2 = spsample.sample(b, ("x", [1, 2]), sampler=spsample.NodeWise([2, 2]), batch_size=1)
    assert all(m1.equals(m2) for m1, m2 in zip(s1, s2))


def test_relation_lookup_and_pickle():
    import pickle
    g = hetero_graph(edge_time=True)
    assert g.relation("cites") == ("paper", "cites", "paper")
    assert pickle.loads(pickle.dumps(g)) == g
    with pytest.raises(spsample.ArgumentError, match="relation"):
        g.relation("reviews")


@pytest.mark.parametrize("kwargs, match", [
    (dict(edge_time={("x", "r", "y"): [1.0]}), "edge_time"),
    (dict(edge_time={("x", "r", "y"): [1.0, np.nan]}), "sortable"),
    (dict(weights={("x", "r", "y"): [1.0, -1.0]}), "weights"),
    (dict(num_nodes={"x": 1}), "num_nodes"),
    (dict(node_time={"x": [1.0]}), "node_time"),
    (dict(node_time={"z": [1.0]}), "node type"),
])
def test_construction_errors_name_the_argument(kwargs, match):
    with pytest.raises(spsample.SpsampleError, match=match):
        spsample.HeteroGraph.from_edge_index({("x", "r", "y"): ([0, 1], [1, 0])}, **kwargs)


def test_bad_relation_keys():
    with pytest.raises(spsample.GraphError, match="triples"):
        spsample.HeteroGraph.from_edge_index({("x", "y"): ([0], [0])})
    with pytest.raises(spsample.ArgumentTypeError, match="edge_index"):
        spsample.HeteroGraph.from_edge_index([([0], [0])])


# ------------------------------------------------------------------ sampling invariants
@pytest.mark.parametrize("name, make", SAMPLERS)
def test_edges_are_edges_of_their_relation_and_fanouts_hold(name, make):
    g = hetero_graph(weighted=True)
    sampler = make()
    fanouts = sampler.fanouts_for(g)
    bulk = spsample.sample(g, ("paper", np.arange(0, 60, 3)), sampler=sampler, batch_size=7,
                           seed=5)
    for mb in bulk:
        for t, ids in mb.n_id.items():
            assert np.unique(ids).size == ids.size                  # deduplicated per type
        assert mb.n_id["paper"][:mb.batch_size].tolist() == mb.seeds.tolist()
        for rel, hops in mb.edges.items():
            indptr, indices, _ = g.csr(rel)
            for hop, ((dst, src), eid) in enumerate(zip(hops, mb.edge_ids[rel]), start=1):
                gd, gs = mb.n_id[rel[2]][dst], mb.n_id[rel[0]][src]
                assert np.all(indices[eid] == gs)                    # edge ids point at them
                assert np.all((eid >= indptr[gd]) & (eid < indptr[gd + 1]))
                if name in ("uniform", "dict"):
                    f = fanouts[rel][hop - 1]
                    rows, per_row = np.unique(dst, return_counts=True)
                    deg = np.diff(indptr)[mb.n_id[rel[2]][rows]]
                    want = deg if f < 0 else np.minimum(deg, f)
                    assert np.array_equal(per_row, want)
                    if f == 0:
                        assert dst.size == 0


def test_frontier_rows_of_the_right_type_are_all_expanded():
    g = hetero_graph()
    bulk = spsample.sample(g, ("paper", [0, 1, 2]), sampler=spsample.NodeWise([-1, -1]),
                           batch_size=3)
    mb = bulk[0]
    hop1_authors = mb.n_id["author"][:mb.num_sampled_nodes["author"][1]]
    indptr, _, _ = g.csr("written_by")
    dst, _ = mb.edges[("paper", "written_by", "author")][1]
    expanded = set(mb.n_id["author"][np.unique(dst)].tolist())
    assert expanded == {a for a in hop1_authors.tolist() if indptr[a + 1] > indptr[a]}


@pytest.mark.parametrize("name, make", SAMPLERS)
def test_native_numpy_and_reference_agree_bit_for_bit(name, make):
    g = hetero_graph(weighted=True)
    seeds = np.arange(0, 60, 2)
    native, numpy_ = _global_bulks(g, seeds, make(), 8)
    assert native.path == ("native" if _native.AVAILABLE else "numpy")
    assert numpy_.path == "numpy"
    assert all(a.equals(b) for a, b in zip(native, numpy_))
    sampler = make()
    schedule = build_schedule(g, sampler, {"paper"}, 3, False)
    ref = reference_sample(schedule.steps[0].graph, seeds + g.offsets["paper"], sampler=sampler,
                           batch_size=8, seed=3, epoch=1, schedule=schedule)
    assert all(a.equals(b) for a, b in zip(numpy_, ref))


def test_bulk_size_and_thread_invariance():
    g = hetero_graph()
    sampler = spsample.NodeWise([4, 3])
    seeds = np.random.default_rng(1).permutation(60)[:40]
    whole = spsample.sample(g, ("paper", seeds), sampler=sampler, batch_size=5, seed=9)
    parts = []
    for first in range(0, 8, 3):
        parts += spsample.sample(g, ("paper", seeds[first * 5:(first + 3) * 5]), sampler=sampler,
                                 batch_size=5, seed=9, batch_offset=first)
    assert all(a.equals(b) for a, b in zip(whole, parts))
    previous = _native.set_num_threads(1)
    try:
        one = spsample.sample(g, ("paper", seeds), sampler=sampler, batch_size=5, seed=9)
    finally:
        _native.set_num_threads(previous)
    assert all(a.equals(b) for a, b in zip(whole, one))


@pytest.mark.skipif(not _native.AVAILABLE, reason="native extension not built")
@pytest.mark.parametrize("case", ["uniform", "dict", "temporal", "disjoint"])
def test_native_grouping_equals_numpy_at_any_thread_count(case):
    """split_hetero's native grouping (native/typed.h) against its NumPy oracle on the same
    engine bulk, bit for bit, at 1-3 threads; and the minibatches of spsample.sample."""
    from spsample.engine._hetero_sample import _group_native, _group_numpy
    g = hetero_graph(edge_time=case == "temporal")
    seeds = np.random.default_rng(4).permutation(60)[:45]
    t = None
    if case == "temporal":
        t = np.random.default_rng(5).integers(10, 90, seeds.size).astype(float)
    sampler = dict(SAMPLERS)[case]() if case in ("uniform", "dict") else \
        spsample.NodeWise([3, 2], disjoint=case == "disjoint")
    bulk, _ = _global_bulks(g, seeds, sampler, 7, seed_time=t)
    want = _group_numpy(g, bulk, bulk.schedule)
    for threads in (1, 2, 3):
        previous = _native.set_num_threads(threads)
        try:
            got = _group_native(g, bulk, bulk.schedule)
            whole = spsample.sample(g, ("paper", seeds), sampler=sampler, batch_size=7, seed=3,
                                    epoch=1, seed_time=t)
        finally:
            _native.set_num_threads(previous)
        assert (got[1] is None) == (want[1] is None) == (case not in ("temporal", "disjoint"))
        for a, b in zip(got[:4], want[:4]):
            assert b is None or (a.dtype == b.dtype and np.array_equal(a, b))
        assert len(got[4]) == len(want[4]) == len(bulk.hops)
        for (d1, s1), (d2, s2) in zip(got[4], want[4]):
            assert np.array_equal(d1, d2) and np.array_equal(s1, s2)
        with _native.disabled():
            oracle = spsample.sample(g, ("paper", seeds), sampler=sampler, batch_size=7, seed=3,
                                     epoch=1, seed_time=t)
        assert all(a.equals(b) for a, b in zip(whole, oracle))


@pytest.mark.skipif(not _native.AVAILABLE, reason="native extension not built")
def test_native_grouping_rejects_ids_outside_the_types():
    from spsample.engine._hetero_sample import _group_native
    g = hetero_graph()
    bulk, _ = _global_bulks(g, np.arange(10), spsample.NodeWise([2]), 5)
    bulk.n_id[3] = g.total_nodes
    with pytest.raises(ValueError, match="ids of the types"):
        _group_native(g, bulk, bulk.schedule)


def test_relations_draw_independent_streams():
    """Two relations with identical blocks into the same type sample different neighbours."""
    src, dst = np.repeat(np.arange(50), 1), np.zeros(50, dtype=np.int64)
    g = spsample.HeteroGraph.from_edge_index({("a", "r1", "b"): (src, dst),
                                              ("a", "r2", "b"): (src, dst)})
    mb = spsample.sample(g, ("b", [0]), sampler=spsample.NodeWise([3]), batch_size=1)[0]
    e1 = mb.edge_ids[("a", "r1", "b")][0]
    e2 = mb.edge_ids[("a", "r2", "b")][0]
    assert e1.size == e2.size == 3 and not np.array_equal(e1, e2)


# ------------------------------------------------------------------ temporal and disjoint
@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("kind", ["edge", "node"])
def test_temporal_never_samples_the_future(strategy, kind):
    g = hetero_graph(edge_time=kind == "edge", node_time=kind == "node")
    seeds = np.arange(20)
    t = np.random.default_rng(2).integers(10, 90, seeds.size).astype(float)
    sampler = spsample.NodeWise([3, 2], temporal_strategy=strategy)
    bulk = spsample.sample(g, ("paper", seeds), sampler=sampler, batch_size=4, seed_time=t)
    for j, mb in enumerate(bulk):
        seed_t = t[j * 4:(j + 1) * 4]
        for rel, hops in mb.edges.items():
            indptr, indices, _ = g.csr(rel)
            for (dst, src), eid in zip(hops, mb.edge_ids[rel]):
                if kind == "edge":
                    when = g.edge_time(rel)[eid]
                else:
                    when = g.node_time(rel[0])[indices[eid]]
                owner = mb.batch[rel[2]][dst]                    # the seed of each edge
                assert np.all(when <= seed_t[owner])
                assert np.array_equal(owner, mb.batch[rel[0]][src])


def test_temporal_last_picks_the_latest_entries():
    rel = ("u", "msg", "u")
    src, dst, time = np.arange(1, 11), np.zeros(10, dtype=np.int64), np.arange(10.0)
    g = spsample.HeteroGraph.from_edge_index({rel: (src, dst)}, edge_time={rel: time})
    mb = spsample.sample(g, ("u", [0]), sampler=spsample.NodeWise([3], temporal_strategy="last"),
                         batch_size=1, seed_time=[6.5])[0]
    got = g.edge_time(rel)[mb.edge_ids[rel][0]]
    assert sorted(got.tolist()) == [4.0, 5.0, 6.0]


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_temporal_native_numpy_reference(strategy):
    g = hetero_graph(edge_time=True, weighted=True)
    seeds = np.arange(30)
    t = np.random.default_rng(3).integers(0, 100, seeds.size).astype(float)
    sampler = spsample.NodeWise([4, 3], temporal_strategy=strategy)
    native, numpy_ = _global_bulks(g, seeds, sampler, 6, seed_time=t)
    assert all(a.equals(b) for a, b in zip(native, numpy_))
    schedule = build_schedule(g, sampler, {"paper"}, 3, True)
    ids = np.arange(5).repeat(6) * 6 + np.tile(np.arange(6), 5)        # one per seed
    ref = reference_sample(schedule.steps[0].graph, seeds + g.offsets["paper"], sampler=sampler,
                           batch_size=1, seed=3, epoch=1, schedule=schedule, seed_time=t,
                           batch_ids=ids)
    from spsample.engine._hetero_sample import merge_disjoint
    from spsample.engine._minibatch import Bulk, HopEdges
    flat = _as_bulk(ref, Bulk, HopEdges)
    merged = merge_disjoint(flat, np.full(5, 6), np.arange(5))
    assert all(a.equals(b) for a, b in zip(numpy_, merged))


def _as_bulk(mbs, Bulk, HopEdges):
    """Reference minibatches as one flat Bulk (for merging)."""
    n_id = np.concatenate([m.n_id for m in mbs])
    offsets = np.concatenate([[0], np.cumsum([m.n_id.size for m in mbs])])
    counts = np.array([m.num_sampled_nodes for m in mbs])
    hops = []
    for h in range(mbs[0].num_hops):
        off = np.concatenate([[0], np.cumsum([m.edges[h][0].size for m in mbs])])
        hops.append(HopEdges(np.concatenate([m.edges[h][0] for m in mbs]),
                             np.concatenate([m.edges[h][1] for m in mbs]),
                             np.concatenate([m.edge_ids[h] for m in mbs]), None, off))
    return Bulk(np.array([m.batch_id for m in mbs]), np.ones(len(mbs), dtype=np.int64), n_id,
                offsets, counts, hops)


def test_disjoint_subgraphs_share_no_vertex_and_edges_stay_inside():
    g = spsample.rmat(9, seed=2)
    seeds = [0, 1, 2, 3, 3]                                  # a repeat is allowed
    mb = spsample.sample(g, seeds, sampler=spsample.NodeWise([4, 4], disjoint=True),
                         batch_size=5)[0]
    assert mb.batch is not None and mb.batch[:5].tolist() == [0, 1, 2, 3, 4]
    assert mb.n_id[:5].tolist() == seeds
    for dst, src in mb.edges:
        assert np.array_equal(mb.batch[dst], mb.batch[src])
    for b in range(5):                                        # unique within each subgraph
        ids = mb.n_id[mb.batch == b]
        assert np.unique(ids).size == ids.size
    alone = spsample.sample(g, [3], sampler=spsample.NodeWise([4, 4], disjoint=True),
                            batch_size=1, batch_offset=4 * 5 // 1 + 3)
    assert mb.to_pyg()["batch"].tolist() == mb.batch.tolist()
    assert alone[0].n_id.size > 0


def test_a_short_last_minibatch_sampled_alone_keeps_its_subgraphs():
    """Disjoint subgraphs are keyed by ``batch_id * batch_size + position``: a call holding
    only the last, short minibatch (2 seeds, batch_size 4) samples it as the whole call
    does (temporal on a HeteroGraph, disjoint on a plain Graph)."""
    g = hetero_graph(edge_time=True)
    t = np.random.default_rng(4).integers(0, 100, 10).astype(float)
    kw = dict(sampler=spsample.NodeWise([3, 2]), batch_size=4, seed=2)
    whole = spsample.sample(g, ("paper", np.arange(10)), seed_time=t, **kw)
    alone = spsample.sample(g, ("paper", [8, 9]), seed_time=t[8:], batch_offset=2, **kw)
    assert alone[0].equals(whole[2])
    plain = spsample.rmat(9, seed=3)
    kw["sampler"] = spsample.NodeWise([3, 2], disjoint=True)
    whole = spsample.sample(plain, np.arange(10), **kw)
    alone = spsample.sample(plain, [8, 9], batch_offset=2, **kw)
    assert alone[0].equals(whole[2])


def test_disjoint_native_equals_numpy_on_a_plain_graph():
    g = spsample.rmat(9, seed=3)
    s = spsample.NodeWise([5, 3], disjoint=True)
    a = spsample.sample(g, np.arange(40), sampler=s, batch_size=8, seed=4)
    with _native.disabled():
        b = spsample.sample(g, np.arange(40), sampler=s, batch_size=8, seed=4)
    assert a.path != b.path or not _native.AVAILABLE
    assert all(x.equals(y) for x, y in zip(a, b))


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("sampler, match", [
    (lambda: spsample.NodeWise({"writes": [1], "reviews": [1]}), "fanouts"),
    (lambda: spsample.NodeWise({"writes": [1]}), "misses relation"),
    (lambda: spsample.LADIES([4]), "heterogeneous"),
    (lambda: spsample.RandomWalk(2), "heterogeneous"),
])
def test_bad_samplers_are_typed_errors(sampler, match):
    with pytest.raises(spsample.SamplerError, match=match):
        spsample.sample(hetero_graph(), ("paper", [0]), sampler=sampler(), batch_size=1)


def test_bad_seeds_and_times_are_typed_errors():
    g, t = hetero_graph(), hetero_graph(edge_time=True)
    s = spsample.NodeWise([2])
    with pytest.raises(spsample.ArgumentError, match="node type"):
        spsample.sample(g, ("reviewer", [0]), sampler=s, batch_size=1)
    with pytest.raises(spsample.ArgumentTypeError, match="seeds"):
        spsample.sample(g, [0, 1], sampler=s, batch_size=1)
    with pytest.raises(spsample.SeedError, match="seeds"):
        spsample.sample(g, ("venue", [7]), sampler=s, batch_size=1)
    with pytest.raises(spsample.ArgumentError, match="seed_time"):
        spsample.sample(g, ("paper", [0]), sampler=s, batch_size=1, seed_time=[1.0])
    with pytest.raises(spsample.ArgumentError, match="seed_time"):
        spsample.sample(t, ("paper", [0, 1]), sampler=s, batch_size=1, seed_time=[1.0])
    with pytest.raises(spsample.SamplerError, match="HeteroGraph"):
        spsample.sample(spsample.rmat(6), [0], sampler=spsample.NodeWise({"r": [1]}),
                        batch_size=1)
    with pytest.raises(spsample.SamplerError, match="temporal_strategy"):
        spsample.NodeWise([1], temporal_strategy="first")


# ------------------------------------------------------------------ PyG
def test_pyg_round_trip():
    pyg = pytest.importorskip("torch_geometric")
    import torch
    from torch_geometric.sampler import HeteroSamplerOutput
    data = pyg.data.HeteroData()
    g = hetero_graph(edge_time=True)
    for t, n in COUNTS.items():
        data[t].num_nodes = n
    for rel in g.relations:
        indptr, indices, _ = g.csr(rel)
        dst = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        data[rel].edge_index = torch.from_numpy(np.stack([indices, dst]))
        data[rel].time = torch.from_numpy(g.edge_time(rel).copy())
    back = spsample.HeteroGraph.from_pyg(data)
    assert back == g
    mb = spsample.sample(back, ("paper", [0, 5]), sampler=spsample.NodeWise([3, 3]),
                         batch_size=2)[0]
    out = HeteroSamplerOutput(**mb.to_pyg())
    for rel in g.relations:
        src_g = out.node[rel[0]][out.row[rel]].numpy()
        dst_g = out.node[rel[2]][out.col[rel]].numpy()
        indptr, indices, _ = g.csr(rel)
        assert np.all(indices[out.edge[rel].numpy()] == src_g)
        assert np.all((out.edge[rel].numpy() >= indptr[dst_g]))
