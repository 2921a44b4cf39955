"""Link minibatches: negatives (strictness, distributions), labels, exclusion, temporal; the
heterogeneous Loader."""

import contextlib

import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample.engine._negatives import degree_weights, draw_negatives

torch = pytest.importorskip("torch")
needs_native = pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built")

REL = ("author", "writes", "paper")


def ring(n=40):
    """An undirected ring with chords ``i -- i + 1`` and ``i -- i + 7``."""
    i = np.arange(n)
    src = np.concatenate([i, i])
    dst = np.concatenate([(i + 1) % n, (i + 7) % n])
    return spsample.Graph.from_edge_index(src, dst, num_nodes=n, symmetrize=True)


def bipartite(seed=0, temporal=False):
    rng = np.random.default_rng(seed)
    a, p = rng.integers(0, 30, 400), rng.integers(0, 50, 400)
    edges = {REL: (a, p), ("paper", "written_by", "author"): (p, a)}
    t = rng.integers(0, 100, 400).astype(float)
    return spsample.HeteroGraph.from_edge_index(
        edges, num_nodes={"author": 30, "paper": 50},
        edge_time={REL: t, ("paper", "written_by", "author"): t} if temporal else None)


def has_edge(graph, u, v):
    indptr, indices = graph.indptr, graph.indices
    return np.array([u_ in indices[indptr[v_]:indptr[v_ + 1]] for u_, v_ in zip(u, v)])


def test_binary_batches_label_the_seed_edges_and_strict_negatives():
    g = ring()
    src, dst = g.edge_index()
    loader = spsample.LinkLoader(g, np.stack([src, dst]), sampler=spsample.NodeWise([3, 2]),
                                 batch_size=16, neg_ratio=2.0, strict=True, seed=4)
    seen = 0
    for b in loader:
        n_id = b.n_id.numpy()
        ei, label = b.edge_label_index.numpy(), b.edge_label.numpy()
        npos = b.input_id.numpy().size
        assert np.array_equal(label, np.r_[np.ones(npos), np.zeros(ei.shape[1] - npos)])
        assert ei.shape[1] - npos == int(np.ceil(2.0 * npos))
        gu, gv = n_id[ei[0]], n_id[ei[1]]
        assert np.array_equal(gu[:npos], src[b.input_id.numpy()])
        assert np.array_equal(gv[:npos], dst[b.input_id.numpy()])
        assert not has_edge(g, gu[npos:], gv[npos:]).any()     # strict: never an edge
        assert b.n_id[:b.batch_size].unique().numel() == b.batch_size
        seen += npos
    assert seen == src.size


def test_triplet_shapes_and_determinism_across_bulk_sizes():
    g = ring()
    kw = dict(sampler=spsample.NodeWise([2, 2]), batch_size=8, neg_sampling="triplet",
              neg_ratio=3, strict=True, seed=2)
    a = list(spsample.LinkLoader(g, bulk_size=1, **kw))
    b = list(spsample.LinkLoader(g, bulk_size=3, pipeline=False, **kw))
    for x, y in zip(a, b):
        assert x.dst_neg_index.shape == (x.src_index.numel(), 3)
        for name in ("n_id", "edge_index", "src_index", "dst_pos_index", "dst_neg_index"):
            assert torch.equal(getattr(x, name), getattr(y, name))
        n_id = x.n_id.numpy()
        u = np.repeat(n_id[x.src_index.numpy()], 3)
        v = n_id[x.dst_neg_index.numpy().ravel()]
        assert not has_edge(g, u, v).any()


def test_exclude_seed_edges_removes_them_and_their_reverses():
    g = ring()
    loader = spsample.LinkLoader(g, sampler=spsample.NodeWise([-1, -1]), batch_size=10,
                                 neg_sampling=None, exclude_seed_edges=True, seed=1)
    src, dst = g.edge_index()
    for b in loader:
        n_id = b.n_id.numpy()
        pos = {(int(u), int(v)) for u, v in zip(src[b.input_id.numpy()],
                                                dst[b.input_id.numpy()])}
        sampled = zip(n_id[b.edge_index[0].numpy()], n_id[b.edge_index[1].numpy()])
        for u, v in sampled:
            assert (u, v) not in pos and (v, u) not in pos


@pytest.mark.parametrize("distribution", ["uniform", "degree"])
def test_negatives_follow_the_stated_distribution(distribution):
    from scipy.stats import chisquare
    rng = np.random.default_rng(0)
    n = 20
    src, dst = rng.integers(0, n, 300), rng.integers(0, n, 300) ** 2 % n   # uneven degrees
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=n)
    weights = degree_weights(g, 0, n, 0, n) if distribution == "degree" else None
    counts = np.full(50, 400)
    s, d = draw_negatives(g, np.arange(50), counts, seed=3, epoch=0, relation=("", "", ""),
                          offsets=(0, 0), sizes=(n, n), weights=weights)
    for drawn, w in ((s, None if weights is None else weights[0]),
                     (d, None if weights is None else weights[1])):
        expected = np.full(n, 1.0 / n) if w is None else w / w.sum()
        observed = np.bincount(drawn, minlength=n)
        keep = expected > 0
        assert observed[~keep].sum() == 0
        assert chisquare(observed[keep], expected[keep] * drawn.size).pvalue > 1e-3


def test_heterogeneous_link_batches_index_their_types():
    g = bipartite()
    loader = spsample.LinkLoader(g, REL, sampler=spsample.NodeWise([4, 3]), batch_size=12,
                                 neg_ratio=1.0, strict=True, seed=5)
    src, dst = loader.src_ids, loader.dst_ids
    for b in loader:
        ei = b.edge_label_index.numpy()
        npos = b.input_id.numel()
        u = b.n_id_dict["author"].numpy()[ei[0]]
        v = b.n_id_dict["paper"].numpy()[ei[1]]
        assert np.array_equal(u[:npos], src[b.input_id.numpy()])
        assert np.array_equal(v[:npos], dst[b.input_id.numpy()])
        block = g.relation_graph(REL)
        assert not has_edge(block, u[npos:] + g.offsets["author"],
                            v[npos:] + g.offsets["paper"]).any()
        assert b.link_relation == REL


def test_temporal_link_batches_never_see_the_future():
    g = bipartite(temporal=True)
    t = g.edge_time(REL)
    loader = spsample.LinkLoader(g, REL, sampler=spsample.NodeWise([5, 5]), batch_size=10,
                                 edge_time=t, neg_ratio=1.0, seed=7)
    for b in loader:
        when = b.edge_label_time.numpy()
        seeds_time = np.concatenate([when, when, when, when])   # pos src, dst, neg src, dst
        for rel, ei in b.edge_index_dict.items():
            eid = b.e_id_dict[rel].numpy()
            owner = b.batch_dict[rel[2]].numpy()[ei[1].numpy()]
            assert np.all(g.edge_time(rel)[eid] <= seeds_time[owner])


@pytest.mark.parametrize("kwargs, match", [
    (dict(neg_ratio=0), "neg_ratio"),
    (dict(neg_ratio=-1.0), "neg_ratio"),
    (dict(neg_ratio=1.5, neg_sampling="triplet"), "neg_ratio"),
    (dict(neg_sampling="pairs"), "neg_sampling"),
    (dict(edges=np.array([[0, 1], [1, 99]])), "not edges"),
    (dict(edges=np.array([0, 1])), "edges"),
    (dict(neg_distribution="zipf"), "neg_distribution"),
    (dict(edge_time=[1.0]), "edge_time"),
])
def test_bad_arguments_are_typed_errors(kwargs, match):
    kw = dict(sampler=spsample.NodeWise([2]), batch_size=4)
    kw.update(kwargs)
    with pytest.raises(spsample.SpsampleError, match=match):
        spsample.LinkLoader(ring(), **kw)


def test_bad_relation_is_a_typed_error():
    with pytest.raises(spsample.ArgumentError, match="relation"):
        spsample.LinkLoader(bipartite(), ("paper", "cites", "paper"),
                            sampler=spsample.NodeWise([2]), batch_size=4)


def test_hetero_loader_feeds_a_pyg_heterogeneous_model():
    pyg = pytest.importorskip("torch_geometric")
    g = bipartite()
    feats = {"author": np.random.default_rng(0).random((30, 5)).astype(np.float32),
             "paper": np.random.default_rng(1).random((50, 3)).astype(np.float32)}
    labels = {"paper": np.arange(50) % 3}
    loader = spsample.Loader(g, ("paper", np.arange(50)), sampler=spsample.NodeWise([4, 4]),
                             batch_size=16, features=feats, labels=labels, seed=0)
    conv = pyg.nn.HeteroConv({rel: pyg.nn.SAGEConv((-1, -1), 8) for rel in g.relations})
    total = 0
    for b in loader:
        out = conv(b.x_dict, b.edge_index_dict)
        assert out["paper"].shape == (b.n_id_dict["paper"].numel(), 8)
        assert torch.equal(b.target, torch.from_numpy(labels["paper"])[
            b.n_id_dict["paper"][:b.batch_size]])
        total += b.batch_size
    assert total == 50
    data = b.to_pyg_data()
    assert data["paper"].batch_size == b.batch_size


LINK_CASES = {
    "binary strict": dict(neg_ratio=2.0, strict=True),
    "binary fraction": dict(neg_ratio=0.5),
    "triplet": dict(neg_sampling="triplet", neg_ratio=3, strict=True),
    "positives only": dict(neg_sampling=None),
    "degree": dict(neg_distribution="degree", strict=True),
    "disjoint": dict(sampler=spsample.NodeWise([2, 2], disjoint=True)),
    "excluded": dict(exclude_seed_edges=True, neg_ratio=3.0),
}


@contextlib.contextmanager
def native_threads(threads):
    """The native kernels on (whatever SPSAMPLE_NATIVE says), with ``threads`` threads."""
    enabled, previous = _native.set_enabled(True), _native.set_num_threads(threads)
    try:
        yield
    finally:
        _native.set_num_threads(previous)
        _native.set_enabled(enabled)


def _links_both_ways(loader, threads):
    """``(native links, NumPy links)`` of four minibatches (16, 16, 8 and 5 seed edges)."""
    perm = np.random.default_rng(1).permutation(loader.seeds.size)[:45]
    pos_off = np.array([0, 16, 32, 40, 45])
    bids = np.array([0, 1, 2, 7])
    with native_threads(threads):
        native = loader._links(perm, pos_off, bids, 3)
    with _native.disabled():
        numpy = loader._links(perm, pos_off, bids, 3)
    return native, numpy


@needs_native
@pytest.mark.parametrize("case", sorted(LINK_CASES))
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_native_link_pass_gives_the_numpy_negatives_and_seeds(case, threads):
    """native/link.h (negatives, endpoints, first occurrences; parallel over minibatches) ==
    draw_negatives + the loader's NumPy code, whatever the thread count."""
    kw = dict(sampler=spsample.NodeWise([3, 2]), batch_size=16, seed=4)
    kw.update(LINK_CASES[case])
    native, numpy = _links_both_ways(spsample.LinkLoader(ring(), **kw), threads)
    assert len(native) == len(numpy) == 4
    for x, y in zip(native, numpy):
        for name in ("pos", "src", "dst", "nsrc", "ndst", "seeds", "where"):
            assert x[name].dtype == y[name].dtype == np.int64
            assert np.array_equal(x[name], y[name]), name
        assert x["sizes"] == y["sizes"]


@needs_native
def test_native_link_pass_on_a_heterogeneous_relation():
    loader = spsample.LinkLoader(bipartite(), REL, sampler=spsample.NodeWise([4, 3]),
                                 batch_size=12, neg_ratio=2.0, strict=True,
                                 neg_distribution="degree", seed=5)
    for x, y in zip(*_links_both_ways(loader, 2)):
        for name in ("nsrc", "ndst", "seeds", "where"):
            assert np.array_equal(x[name], y[name]), name


@needs_native
def test_strict_negatives_that_cannot_be_found_fail_alike_on_both_paths():
    n = 3
    u, v = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)   # every pair is an edge
    g = spsample.Graph.from_edge_index(u, v, num_nodes=n)
    kw = dict(sampler=spsample.NodeWise([1]), batch_size=4, strict=True, pipeline=False)
    messages = []
    for native in (True, False):
        with pytest.raises(spsample.SamplerError, match="strict") as err:
            with native_threads(2) if native else _native.disabled():
                next(iter(spsample.LinkLoader(g, **kw)))
        messages.append(str(err.value))
    assert messages[0] == messages[1]


@needs_native
def test_native_link_pass_refuses_inconsistent_arrays():
    from spsample.engine._negatives import pickers
    ok = dict(mode="binary", ratio=1, pickers=pickers((5, 5)), key=(1, 2), hop_word=0,
              block=None, max_attempts=1, type_offsets=(0, 0), dedup=True)
    ids = np.arange(4)
    for pos, pos_off, neg_off in (([0, 9], [0, 2], [0, 2]),        # position out of range
                                  ([0, 1], [0, 3], [0, 2]),        # offsets past the array
                                  ([0, 1], [0, 2], [0, -1])):      # decreasing offsets
        with pytest.raises(ValueError):
            _native.link_bulk(pos_off, pos, ids, ids, neg_off, [0], **ok)
    with pytest.raises(ValueError):                                # an id outside its type
        _native.link_bulk([0, 1], [3], ids, ids, [0, 0], [0], **dict(ok, pickers=pickers((3, 5))))


@needs_native
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_bulk_edges_are_make_batch_edges(threads):
    """native/link.h minibatch_edges == MiniBatch.edge_index() and the concatenated edge ids,
    with empty minibatches and hops."""
    from spsample.loader._batch import _edges, bulk_edges
    g = spsample.Graph.from_edge_index([0, 1, 2, 3, 4], [1, 2, 3, 4, 0], num_nodes=8)
    bulk = spsample.sample(g, [0, 1, 5, 6, 2, 7, 3], sampler=spsample.NodeWise([2, -1, 1]),
                           batch_size=2)
    with native_threads(threads):
        edges, kept = bulk_edges(bulk)
    assert any(mb.num_sampled_edges == [0, 0, 0] for mb in bulk)
    for mb, (ei, e_id), counts in zip(bulk, edges, kept.tolist()):
        ref_ei, ref_e_id = _edges(mb)
        assert ei.dtype == e_id.dtype == np.int64 and ei.shape == ref_ei.shape
        assert np.array_equal(ei, ref_ei) and np.array_equal(e_id, ref_e_id)
        assert counts == mb.num_sampled_edges
    with _native.disabled():
        assert bulk_edges(bulk) == ([None] * len(bulk), None)


@needs_native
@pytest.mark.parametrize("sampler", [spsample.NodeWise([2, -1, 1]), spsample.LABOR([3, 2]),
                                     spsample.NodeWise([3, 3], replace=True)], ids=repr)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_minibatch_major_bulks_are_the_hop_major_bulks(sampler, threads):
    """run_rowwise(minibatch_major=True): the same minibatches, hop arrays, counts and edges
    as the flat per-hop layout, and edge_index / e_id views equal to make_batch's."""
    from spsample.engine._hetero_sample import run_global
    from spsample.engine._minibatch import MinibatchMajorBulk
    from spsample.loader._batch import _edges, bulk_edges
    g = spsample.Graph.from_edge_index([0, 1, 2, 3, 4, 9], [1, 2, 3, 4, 0, 3], num_nodes=12,
                                       symmetrize=True)
    seeds, sizes = np.array([0, 1, 5, 6, 2, 7, 3, 9]), np.array([2, 2, 2, 2])
    args = (g, seeds, sizes, np.array([0, 1, 2, 5]), 2, sampler, 3, 1)
    with native_threads(threads):
        ref = run_global(*args)
        got = run_global(*args, minibatch_major=True)
        edges, kept = bulk_edges(got)
    assert isinstance(got, MinibatchMajorBulk) and not isinstance(ref, MinibatchMajorBulk)
    assert len(got) == len(ref) and got.num_edges == ref.num_edges
    assert any(mb.num_sampled_edges == [0] * len(mb.edges) for mb in ref)
    for x, y, (ei, e_id), counts in zip(got, ref, edges, kept.tolist()):
        assert x.equals(y) and counts == y.num_sampled_edges
        ref_ei, ref_e_id = _edges(y)
        assert np.array_equal(ei, ref_ei) and np.array_equal(e_id, ref_e_id)
    for a, b in zip(got.hops, ref.hops):                   # built on first use
        for name in ("dst", "src", "edge_id", "offsets"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(got.n_id, ref.n_id)
    assert np.array_equal(got.num_sampled_nodes, ref.num_sampled_nodes)


@needs_native
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_bulk_edges_without_the_seed_pairs_are_the_numpy_exclusion(threads):
    """minibatch_edges with pairs to exclude == LinkLoader._excluded (np.isin, both ways),
    hop by hop, including a minibatch without pairs."""
    from spsample.loader._batch import _edges, bulk_edges
    from spsample.loader._link import _seed_pairs, _with_edges
    g = ring()
    loader = spsample.LinkLoader(g, sampler=spsample.NodeWise([-1, 3]), batch_size=6,
                                 exclude_seed_edges=True)
    src, dst = loader.src_ids, loader.dst_ids
    links = [dict(src=src[p], dst=dst[p]) for p in (np.arange(6), np.arange(0), [9, 3, 70])]
    bulk = spsample.sample(g, [0, 1, 2, 5, 8, 9, 10, 11, 33], sampler=loader.sampler,
                           batch_size=3)
    with native_threads(threads):
        edges, kept = bulk_edges(bulk, _seed_pairs(bulk, links))
    dropped = 0
    for mb, link, e, counts in zip(bulk, links, edges, kept):
        ref = loader._excluded(mb, link)
        got = _with_edges(mb, e, counts)
        assert got.equals(ref) and np.array_equal(e[0], _edges(ref)[0])
        dropped += sum(mb.num_sampled_edges) - sum(ref.num_sampled_edges)
    assert dropped > 0
    with pytest.raises(ValueError):           # a pair id outside [0, 2**32 - 1)
        bulk_edges(bulk, (bulk.n_id, bulk.node_offsets, [-1], [0], [0, 1, 1, 1]))


@needs_native
@pytest.mark.parametrize("case", sorted(LINK_CASES))
def test_link_batches_are_the_same_with_the_native_kernels_off(case):
    """Negatives, seed relabelling, sampling and edge layout (native, per bulk) give the NumPy
    path's batches, over bulk sizes and thread counts."""
    kw = dict(sampler=spsample.NodeWise([3, 2]), batch_size=16, seed=4, pipeline=False)
    kw.update(LINK_CASES[case])
    with _native.disabled():
        numpy = list(spsample.LinkLoader(ring(), **kw))
    for threads, bulk in ((1, 4), (2, 3), (3, 1)):
        with native_threads(threads):
            native = list(spsample.LinkLoader(ring(), bulk_size=bulk, **kw))
        assert len(native) == len(numpy)
        for x, y in zip(native, numpy):
            assert x.minibatch.equals(y.minibatch)
            for name in ("n_id", "edge_index", "e_id", "edge_label_index", "edge_label",
                         "src_index", "dst_pos_index", "dst_neg_index", "input_id"):
                a, b = getattr(x, name), getattr(y, name)
                assert (a is None and b is None) or torch.equal(a, b), name
