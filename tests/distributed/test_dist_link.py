"""``LinkLoader`` on a sharded graph (``DistGraph``, a ``DistHeteroGraph`` relation) == the
single-process loader's batches of the same global minibatch ids, bit for bit: binary and
triplet negatives, uniform and degree-weighted, strict, ``exclude_seed_edges``, disjoint,
temporal (seed edges with times), push and pull, every replication factor of the current
world size (the suite runs at p = 1, 2 and 4, and serially on worlds of p threads), several
bulk sizes; strict negatives never edges; the bytes of each phase; bad input giving the same
typed error on every rank."""

import numpy as np
import pytest

import spsample
from spsample import ArgumentError, DistributedError, SamplerError, native as _native
from spsample.distributed import DistGraph, DistHeteroGraph, ShardedDataset

from _dist_helpers import (SHARDED_LAYOUTS, assert_all, grid_for, layouts, mpi_timeout,
                           raised, spread, threaded, world_comm)

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.mpi, mpi_timeout(300)]

WRITES, WRITTEN_BY = ("author", "writes", "paper"), ("paper", "written_by", "author")
FIELDS = ("n_id", "edge_index", "e_id", "x", "edge_label_index", "edge_label", "src_index",
          "dst_pos_index", "dst_neg_index", "input_id", "batch_size", "batch_id",
          "num_sampled_nodes", "num_sampled_edges")
HETERO_FIELDS = ("x_dict", "n_id_dict", "edge_index_dict", "e_id_dict", "batch_dict",
                 "edge_label_index", "edge_label", "src_index", "dst_pos_index",
                 "dst_neg_index", "input_id", "batch_size", "batch_id")
CASES = {
    "binary": dict(),
    "strict": dict(strict=True, neg_ratio=2.0),
    "degree": dict(neg_distribution="degree", neg_ratio=1.5),
    "triplet": dict(neg_sampling="triplet", neg_ratio=3, strict=True),
    "degree-triplet": dict(neg_sampling="triplet", neg_ratio=2, neg_distribution="degree",
                           strict=True),
    "excluded": dict(exclude_seed_edges=True, strict=True),
    "disjoint": dict(sampler=spsample.NodeWise([3, 2], disjoint=True)),
    "positives": dict(neg_sampling=None, exclude_seed_edges=True),
}


def graph():
    """R-MAT scale 8 made undirected (256 vertices), with 4 float features per vertex."""
    return spsample.rmat(8, seed=3, symmetrize=True)


def seed_edges(g):
    """210 seed edges: 180 entries of ``g`` and 30 held-out pairs (not all of them edges)."""
    src, dst = g.edge_index()
    rng = np.random.default_rng(7)
    pick = rng.permutation(src.size)[:180]
    other = rng.integers(0, g.num_nodes, (2, 30))
    return np.concatenate([np.stack([src[pick], dst[pick]]), other], axis=1)


G = graph()
X = np.random.default_rng(1).random((G.num_nodes, 4)).astype(np.float32)
EDGES = seed_edges(G)


def bibliography():
    """Authors writing papers, and the reverse relation (the same graph on every rank)."""
    rng = np.random.default_rng(0)
    a, p = rng.integers(0, 30, 400), rng.integers(0, 50, 400)
    return spsample.HeteroGraph.from_edge_index({WRITES: (a, p), WRITTEN_BY: (p, a)},
                                                num_nodes={"author": 30, "paper": 50})


H = bibliography()
HX = {"author": np.random.default_rng(2).random((30, 3)).astype(np.float32),
      "paper": np.random.default_rng(3).random((50, 2)).astype(np.float32)}


def options(case, bulk_size=3):
    kw = dict(sampler=spsample.NodeWise([4, 3]), batch_size=20, bulk_size=bulk_size, seed=2,
              pipeline=False)
    kw.update(CASES[case])
    return kw


def equal(a, b):
    """Whether two tensors / dicts of tensors / plain values are identical."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and \
            all(equal(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and \
            a.dtype == b.dtype and torch.equal(a, b)
    return a == b


def differences(out, ref, fields):
    """The fields in which this rank's batches differ from the one-process ones."""
    if len(out) != len(ref):
        return [("count", len(out), len(ref))]
    return [(i, f) for i, (a, b) in enumerate(zip(out, ref)) for f in fields
            if not equal(getattr(a, f), getattr(b, f))]


def mine_of(loader_kw, data, *args, epoch=1, **more):
    """The one-process batches of this rank's share: ``LinkLoader(data, rank, world_size)``."""
    comm = world_comm()
    return list(spsample.LinkLoader(data, *args, rank=comm.rank, world_size=comm.size,
                                    epoch=epoch, **loader_kw, **more))


@pytest.mark.parametrize("case, strategy, p, c",
                         spread([(k, st) for k in sorted(CASES) for st in ("push", "pull")],
                                per_case=1))
@threaded
def test_batches_equal_one_process(case, strategy, p, c):
    kw = options(case)
    dg = DistGraph.from_graph(G, grid_for(c))
    loader = spsample.LinkLoader(dg, EDGES, features=X, strategy=strategy, epoch=1, **kw)
    out = list(loader)
    bad = differences(out, mine_of(kw, G, EDGES, features=X), FIELDS)
    assert_all(not bad, (case, strategy, c, bad[:4]))
    sharded = c < world_comm().size
    modes = loader._dist.last_stats["modes"] if sharded else [strategy] * 2
    assert_all(loader.collective == sharded and modes == [strategy] * 2, modes)


@pytest.mark.parametrize("case, bulk_size, p, c",
                         spread([(k, b) for k in ["strict", "degree-triplet", "disjoint"]
                                 for b in (1, 2, 5)], per_case=1, pool=SHARDED_LAYOUTS))
@threaded
def test_bulk_size_does_not_change_the_batches(case, bulk_size, p, c):
    kw = options(case, bulk_size)
    dg = DistGraph.from_graph(G, grid_for(c))
    out = list(spsample.LinkLoader(dg, EDGES, features=X, epoch=1, **kw))
    bad = differences(out, mine_of(options(case), G, EDGES, features=X), FIELDS)
    assert_all(not bad, (case, bulk_size, bad[:4]))


@pytest.mark.parametrize("case, strategy, p, c",
                         spread([(k, st) for k in ["binary", "strict", "degree-triplet",
                                                   "excluded", "disjoint"]
                                 for st in ("push", "pull")], per_case=1))
@threaded
def test_heterogeneous_relation_equals_one_process(case, strategy, p, c):
    """Seed edges author -> paper: hop 1 expands both endpoint types, each relation's block
    asked only for its destination type's rows."""
    kw = dict(options(case), batch_size=30, features=HX)
    indptr, indices, _ = H.csr(WRITES)                 # local ids: authors -> papers
    edges = (WRITES, np.stack([indices, np.repeat(np.arange(50), np.diff(indptr))])[:, ::2])
    dg = DistHeteroGraph.from_graph(H, grid_for(c))
    out = list(spsample.LinkLoader(dg, edges, strategy=strategy, epoch=1, **kw))
    bad = differences(out, mine_of(kw, H, edges), HETERO_FIELDS)
    assert_all(not bad, (case, strategy, c, bad[:4]))


@pytest.mark.parametrize("strategy, p, c", spread(["push", "pull"], per_case=1,
                                                  pool=[(3, 1), (4, 2)]))
@threaded
def test_the_numpy_path_gives_the_same_batches(strategy, p, c):
    """With the native kernels off (the NumPy link pass, owners and fetched rows selected by
    the NumPy evaluation) a heterogeneous relation's batches are still one process's."""
    kw = dict(options("strict"), batch_size=30, features=HX)
    edges = (WRITES, np.stack([H.csr(WRITES)[1], np.repeat(np.arange(50), np.diff(
        H.csr(WRITES)[0]))]))
    with _native.disabled():
        dg = DistHeteroGraph.from_graph(H, grid_for(c))
        out = list(spsample.LinkLoader(dg, edges, strategy=strategy, epoch=1, **kw))
        world_comm().barrier()          # every rank done before the kernels are back on
    bad = differences(out, mine_of(kw, H, edges), HETERO_FIELDS)
    assert_all(not bad, bad[:4])


@pytest.mark.parametrize("hetero, p, c", spread([False, True], per_case=1,
                                                pool=[(2, 1), (8, 2)]))
@threaded
def test_every_edge_by_default(hetero, p, c):
    """``edges=None``: every entry of the (sharded) relation, in its CSR order."""
    data, whole, args = (DistGraph.from_graph(G, grid_for(c)), G, ()) if not hetero else \
        (DistHeteroGraph.from_graph(H, grid_for(c)), H, (WRITES,))
    kw = dict(options("strict"), batch_size=64)
    loader = spsample.LinkLoader(data, *args, **kw)
    ref = spsample.LinkLoader(whole, *args, **kw)
    same = np.array_equal(loader.src_ids, ref.src_ids) and \
        np.array_equal(loader.dst_ids, ref.dst_ids)
    bad = differences(list(loader), mine_of(kw, whole, *args, epoch=0),
                      HETERO_FIELDS if hetero else FIELDS)
    assert_all(same and not bad, bad[:4])


@pytest.mark.parametrize("p, c", layouts([(3, 1)]))
@threaded
def test_strict_negatives_are_never_edges(p, c):
    """Dense graph (~40 % of the pairs are edges): many candidates are redrawn, by rounds in
    which every rank takes part; none of the negatives is an edge."""
    rng = np.random.default_rng(5)
    u, v = rng.integers(0, 40, 700), rng.integers(0, 40, 700)
    g = spsample.Graph.from_edge_index(u, v, num_nodes=40, symmetrize=True)
    dg = DistGraph.from_graph(g, grid_for(c))
    loader = spsample.LinkLoader(dg, sampler=spsample.NodeWise([2]), batch_size=32,
                                 neg_ratio=3.0, strict=True, pipeline=False, seed=9)
    dense = g.to_scipy().toarray() != 0                 # row v holds u for an edge u -> v
    negatives, ok = 0, True
    for b in loader:
        n_id, ei = b.n_id.numpy(), b.edge_label_index.numpy()
        npos = b.input_id.numel()
        u, v = n_id[ei[0, npos:]], n_id[ei[1, npos:]]
        ok &= not dense[v, u].any()
        negatives += u.size
    redrawn = sum(loader.last_stats["negative_bytes"].values())
    sharded = loader.collective
    assert_all(ok and negatives > 0 and (redrawn > 0) == sharded, (negatives, redrawn))


@pytest.mark.parametrize("p, c", layouts([(4, 2)]))
@threaded
def test_bytes_per_phase(p, c):
    """Strict negatives ask the rows' owners (bytes in ``negative_bytes``); uniform negatives
    move nothing; a FeatureStore's rows arrive by all-to-all, equal to the array's."""
    grid = grid_for(c)
    ds = ShardedDataset.from_dataset(spsample.io.Dataset(G, features=X, labels=np.zeros(
        G.num_nodes, dtype=np.int64)), grid)
    sharded = grid.num_rows > 1
    stats = {}
    for case in ("binary", "strict"):
        kw = options(case)
        loader = spsample.LinkLoader(ds, EDGES, epoch=1, **kw)
        out = list(loader)
        bad = differences(out, mine_of(kw, G, EDGES, features=X), FIELDS)
        assert_all(not bad, (case, bad[:4]))
        stats[case] = loader.last_stats
    negatives = stats["strict"]["negative_bytes"].get("alltoallv", 0)
    ok = stats["binary"]["negative_bytes"] == {} and (negatives > 0) == sharded
    ok &= (stats["binary"]["sampling_bytes"].get("alltoallv", 0) > 0) == sharded
    ok &= (stats["binary"]["fetch_bytes"].get("alltoallv", 0) > 0) == sharded
    assert_all(ok, stats)


@pytest.mark.parametrize("p, c", layouts([(3, 1), (8, 4)]))
@threaded
def test_ranks_without_minibatches_pad(p, c):
    """Fewer minibatches than ranks: the ranks without one join every collective call."""
    kw = dict(options("strict"), batch_size=100, neg_distribution="degree")
    dg = DistGraph.from_graph(G, grid_for(c))
    out = list(spsample.LinkLoader(dg, EDGES[:, :150], features=X, **kw))
    bad = differences(out, mine_of(kw, G, EDGES[:, :150], features=X, epoch=0), FIELDS)
    assert_all(not bad, bad)


@pytest.mark.parametrize("strict, strategy, p, c",
                         spread([(s, st) for s in (False, True) for st in ("push", "pull")],
                                per_case=1, pool=[(2, 1), (4, 1), (4, 2), (8, 2)]))
@threaded
def test_temporal_link_batches_equal_one_process(strict, strategy, p, c):
    """Seed edges with times on a DistHeteroGraph (sharded for c < p): each endpoint's
    subgraph (and its negatives') cut at the edge's time by the rows' owners or the fetching
    ranks, as one process cuts it."""
    rng = np.random.default_rng(4)
    t = rng.integers(0, 100, 400).astype(float)
    a, p = rng.integers(0, 30, 400), rng.integers(0, 50, 400)
    g = spsample.HeteroGraph.from_edge_index(
        {WRITES: (a, p), WRITTEN_BY: (p, a)}, num_nodes={"author": 30, "paper": 50},
        edge_time={WRITES: t, WRITTEN_BY: t})
    edges, times = (WRITES, np.stack([a[:60], p[:60]])), t[:60] + 0.5
    kw = dict(sampler=spsample.NodeWise([3, 2]), batch_size=16, pipeline=False, strict=strict,
              edge_time=times)
    ref = mine_of(kw, g, edges, epoch=0)
    dg = DistHeteroGraph.from_graph(g, grid_for(c))
    out = list(spsample.LinkLoader(dg, edges, strategy=strategy, **kw))
    bad = differences(out, ref, HETERO_FIELDS + ("edge_label_time",))
    assert_all(not bad and any(b.batch_dict for b in out) == bool(out), (c, bad[:4]))


# ---------------------------------------------------------------------- bad input
def last_rank():
    return world_comm().rank == world_comm().size - 1


def same_error_everywhere(exc, cls, *words):
    ok = isinstance(exc, cls) and all(w in str(exc) for w in words)
    return ok and len(set(world_comm().allgather_object(str(exc)))) == 1


@pytest.mark.parametrize("ratio, p, c", spread([0.0, -1.0], per_case=1, pool=[(3, 1)]))
@threaded
def test_bad_negative_ratio_on_one_rank(ratio, p, c):
    dg = DistGraph.from_graph(G, grid_for(c))
    exc = raised(lambda: spsample.LinkLoader(dg, EDGES, sampler=spsample.NodeWise([2]),
                                             batch_size=8, neg_ratio=ratio if last_rank()
                                             else 1.0))
    assert_all(same_error_everywhere(exc, ArgumentError, "neg_ratio", "> 0"), str(exc))


def test_seed_edges_that_are_not_edges_on_one_rank():
    dg = DistGraph.from_graph(G, grid_for(1))
    edges = EDGES.copy()
    if last_rank():
        edges[1, 3] = G.num_nodes + 2
    exc = raised(lambda: spsample.LinkLoader(dg, edges, sampler=spsample.NodeWise([2]),
                                             batch_size=8))
    assert_all(same_error_everywhere(exc, ArgumentError, "edges", "are not edges"), str(exc))


@pytest.mark.parametrize("what, words, p, c",
                         spread([("edges", ("'edges'", "disagree")),
                                 ("strict", ("arguments", "disagree"))], per_case=1,
                                pool=[(2, 1), (4, 4)]))
@threaded
def test_a_rank_with_other_seed_edges_or_arguments(what, words, p, c):
    """Seed edges of the same shape or another argument differing on one rank: a
    DistributedError naming it on every rank (nothing to compare on one process)."""
    dg = DistGraph.from_graph(G, grid_for(c))
    odd = last_rank() and world_comm().size > 1
    edges = EDGES.copy()
    if odd and what == "edges":
        edges[0, 5] = (edges[0, 5] + 1) % G.num_nodes
    exc = raised(lambda: spsample.LinkLoader(dg, edges, sampler=spsample.NodeWise([2]),
                                             batch_size=8, strict=odd and what == "strict"))
    if world_comm().size == 1:
        assert_all(exc is None, str(exc))
    else:
        assert_all(same_error_everywhere(exc, DistributedError, *words), str(exc))


def test_bad_strategy_on_one_rank():
    dg = DistGraph.from_graph(G, grid_for(1))
    exc = raised(lambda: spsample.LinkLoader(dg, EDGES, sampler=spsample.NodeWise([2]),
                                             batch_size=8, strategy="shout" if last_rank()
                                             else "push"))
    assert_all(same_error_everywhere(exc, ArgumentError, "strategy"), str(exc))


def test_strict_negatives_that_cannot_be_found_fail_on_every_rank():
    """Every pair is an edge: no rank finds a non-edge; all raise the same SamplerError, and
    the grid still works afterwards."""
    n = 8
    u, v = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    dg = DistGraph.from_graph(spsample.Graph.from_edge_index(u, v, num_nodes=n), grid_for(1))
    loader = spsample.LinkLoader(dg, sampler=spsample.NodeWise([1]), batch_size=4,
                                 strict=True, pipeline=False)
    exc = raised(lambda: list(loader))
    assert_all(same_error_everywhere(exc, SamplerError, "strict"), str(exc))
    again = list(spsample.LinkLoader(dg, sampler=spsample.NodeWise([1]), batch_size=4,
                                     pipeline=False))
    assert_all(len(again) == len(spsample.LinkLoader(
        dg, sampler=spsample.NodeWise([1]), batch_size=4)))
