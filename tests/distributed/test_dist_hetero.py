"""Distributed heterogeneous sampling (``DistHeteroGraph``) == the single-process call
restricted to this rank's minibatches, bit for bit: per-relation fanouts, LABOR, disjoint, push
and pull, every replication factor of the current world size (the suite runs at p = 1, 2 and 4,
and serially on worlds of p threads), any bulk size; invariants of the samples; loading each
rank's rows from a heterogeneous file; the loader; bad input giving the same typed error on
every rank."""

import numpy as np
import pytest

import spsample
from spsample import io, native as _native
from spsample.distributed import DistHeteroGraph, Grid, load_hetero_dataset

from _dist_helpers import (CITES, HAS, IN, SHARDED_LAYOUTS, WRITES, WRITTEN_BY,  # noqa: F401
                           assert_all, grid_for, layouts, matches, mpi_timeout, my_batches,
                           raised, sample_share, spread, threaded, world_comm, write_shared)

pytestmark = [pytest.mark.mpi, mpi_timeout(120)]

COUNTS = {"author": 30, "paper": 80, "term": 12}
BATCH = 8
NUM_SEEDS = 70             # 9 minibatches of papers, the last one of 6 seeds


def bibliography(weighted=False):
    """Random authors, papers and terms (the same graph on every rank)::

        author --writes--> paper     (240 pairs; written_by: the reverse)
        paper  --cites---> paper     (400 pairs, self-citations dropped)
        paper  --has-----> term      (200 pairs; in: the reverse)

    Rows are destinations: a paper's ``writes`` row lists its authors. ``weighted``: every
    relation carries weights in [0.05, 1.05), every 13th one zero (never drawn).
    """
    rng = np.random.default_rng(21)
    a, p = rng.integers(0, 30, 240), rng.integers(0, 80, 240)
    c1, c2 = rng.integers(0, 80, 400), rng.integers(0, 80, 400)
    keep = c1 != c2
    pt, t = rng.integers(0, 80, 200), rng.integers(0, 12, 200)
    edges = {WRITES: (a, p), WRITTEN_BY: (p, a), CITES: (c1[keep], c2[keep]), HAS: (pt, t),
             IN: (t, pt)}
    weights = None
    if weighted:
        weights = {}
        for rel, (src, _) in edges.items():
            w = rng.random(src.size) + 0.05
            w[::13] = 0.0
            weights[rel] = w
    return spsample.HeteroGraph.from_edge_index(edges, num_nodes=COUNTS, weights=weights)


GRAPHS = {False: bibliography(), True: bibliography(weighted=True)}
SAMPLERS = {
    # name: (sampler factory, weighted graph)
    "per-relation": (lambda: spsample.NodeWise({WRITES: [3, 2], WRITTEN_BY: [2, 2],
                                                CITES: [4, 0], HAS: [1, 2], IN: [0, 3]}), False),
    "one-list": (lambda: spsample.NodeWise([3, 2]), False),
    "all-neighbours": (lambda: spsample.NodeWise([-1, 2]), False),
    "replace": (lambda: spsample.NodeWise([3, 2], replace=True), False),
    "labor": (lambda: spsample.LABOR([3, 2]), False),
    "disjoint": (lambda: spsample.NodeWise([2, 2], disjoint=True), False),
    "weighted": (lambda: spsample.NodeWise({WRITES: [2, 2], WRITTEN_BY: [2, 1], CITES: [3, 2],
                                            HAS: [2, 0], IN: [0, 2]}, weighted=True), True),
}
SEEDS = np.random.default_rng(4).permutation(COUNTS["paper"])[:NUM_SEEDS]
_REF = {}


def reference(name, seed=5, epoch=3):
    make, weighted = SAMPLERS[name]
    key = (name, seed, epoch)
    if key not in _REF:
        _REF[key] = spsample.sample(GRAPHS[weighted], ("paper", SEEDS), sampler=make(),
                                    batch_size=BATCH, seed=seed, epoch=epoch)
    return _REF[key]


def sample_mine(dg, name, strategy, bulk=None, seed=5, epoch=3):
    """This rank's minibatches, ``bulk`` at a time (every rank makes the same number of
    calls: a rank out of minibatches passes no seeds)."""
    return sample_share(dg, SEEDS, BATCH, SAMPLERS[name][0], strategy, node_type="paper",
                        bulk=bulk, seed=seed, epoch=epoch)


@pytest.mark.parametrize("name, strategy, p, c",
                         spread([(n, st) for n in sorted(SAMPLERS) for st in ("push", "pull")]))
@threaded
def test_equals_single_process(name, strategy, p, c):
    dg = DistHeteroGraph.from_graph(GRAPHS[SAMPLERS[name][1]], grid_for(c))
    out, b0, b1 = sample_mine(dg, name, strategy)
    assert_all(matches(out, reference(name), b0, b1), (name, strategy, c))
    steps = dg.last_stats["relations"]
    where = "local" if c == world_comm().size else strategy   # one process row: whole graph
    assert_all(dg.last_stats["modes"] == [where] * len(steps), dg.last_stats["modes"])


@pytest.mark.parametrize("bulk, strategy, p, c",
                         spread([(b, st) for b in (1, 2, 3) for st in ("push", "pull")],
                                per_case=1, pool=SHARDED_LAYOUTS))
@threaded
def test_bulk_size_does_not_change_the_minibatches(bulk, strategy, p, c):
    """k-invariance: this rank's minibatches sampled ``bulk`` at a time."""
    for name in ("per-relation", "labor"):
        dg = DistHeteroGraph.from_graph(GRAPHS[False], grid_for(c))
        out, b0, b1 = sample_mine(dg, name, strategy, bulk=bulk)
        assert_all(matches(out, reference(name), b0, b1), (name, bulk, strategy))


@pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built")
@pytest.mark.parametrize("strategy, p, c", spread(["push", "pull"], per_case=1,
                                                  pool=[(4, 1), (8, 2)]))
@threaded
def test_steps_run_natively_with_the_numpy_bits(strategy, p, c):
    """Each relation's step is selected by the native row kernels (on the owners with push,
    on the fetched rows with pull); with the kernels off, the NumPy evaluation of the same
    steps gives the same bits."""
    previous = _native.enabled()
    try:
        for native in (True, False):
            _native.set_enabled(native)
            for name in ("per-relation", "labor", "weighted", "replace"):
                dg = DistHeteroGraph.from_graph(GRAPHS[SAMPLERS[name][1]], grid_for(c))
                out, b0, b1 = sample_mine(dg, name, strategy)
                # a replicated rank without minibatches evaluates its empty bulk with NumPy
                idle = dg.last_stats.get("mode") == "replicated" and b1 == b0
                kernel = "native" if native and not idle else "numpy"
                want = [kernel] * len(dg.last_stats["relations"])
                assert_all(matches(out, reference(name), b0, b1), (name, native))
                assert_all(dg.last_stats["selection"] == want, dg.last_stats["selection"])
            world_comm().barrier()      # every rank done before the kernels are switched
    finally:
        _native.set_enabled(previous)


@pytest.mark.parametrize("p, c", layouts([(4, 1)]))
@threaded
def test_samples_are_edges_of_their_relation_within_the_fanouts(p, c):
    """Every sampled edge is an entry of its relation; a destination draws min(fanout,
    degree) sources per relation and hop; relations with fanout 0 at a hop sample nothing."""
    graph = GRAPHS[False]
    make = SAMPLERS["per-relation"][0]
    fanouts = make().relation_fanouts
    dg = DistHeteroGraph.from_graph(graph, grid_for(c))
    out, _, _ = sample_mine(dg, "per-relation", "push")
    ok = True
    for mb in out:
        for rel, hops in mb.edges.items():
            s, _, d = rel
            indptr, indices, _ = graph.csr(rel)
            for hop, ((dst, src), eid) in enumerate(zip(hops, mb.edge_ids[rel])):
                u, v = mb.n_id[s][src], mb.n_id[d][dst]
                ok &= bool(np.all(indices[eid] == u))                     # the entry's source
                ok &= bool(np.all((indptr[v] <= eid) & (eid < indptr[v + 1])))   # in v's row
                rows, counts = np.unique(v, return_counts=True)
                want = np.minimum(fanouts[rel][hop], np.diff(indptr)[rows])
                ok &= bool(np.array_equal(counts, want))
                ok &= bool(fanouts[rel][hop]) or dst.size == 0
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1), (8, 2)]))
@threaded
def test_ranks_without_minibatches_take_part(p, c):
    """Two minibatches over every rank: the others pass ("paper", []) and join the steps."""
    comm = world_comm()
    dg = DistHeteroGraph.from_graph(GRAPHS[False], grid_for(c))
    seeds = SEEDS[:2 * BATCH]
    make = SAMPLERS["one-list"][0]
    ref = spsample.sample(GRAPHS[False], ("paper", seeds), sampler=make(), batch_size=BATCH)
    ok = True
    for strategy in ("push", "pull"):
        mine = seeds[comm.rank * BATCH:(comm.rank + 1) * BATCH] if comm.rank < 2 else []
        out = spsample.sample(dg, ("paper", mine), sampler=make(), batch_size=BATCH,
                              batch_offset=min(comm.rank, 2), strategy=strategy)
        ok &= matches(out, ref, min(comm.rank, 2), min(comm.rank + 1, 2))
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1), (4, 2)]))
@threaded
def test_rows_are_split_per_node_type(p, c):
    """Each relation's block holds the destination type's grid.block rows (global ids)."""
    grid = grid_for(c)
    dg = DistHeteroGraph.from_graph(GRAPHS[True], grid)
    g = GRAPHS[True]
    ok = dg.num_edges == g.num_edges and dg.total_nodes == g.total_nodes
    for rel in g.relations:
        d = rel[2]
        lo, hi = grid.block(COUNTS[d])
        ok &= dg.rows[d] == (lo, hi)
        if dg.whole is None:
            block, whole = dg.relation_graph(rel), g.relation_graph(rel)
            first = g.offsets[d] + lo
            start, stop = whole.indptr[first], whole.indptr[g.offsets[d] + hi]
            ok &= (block.lo, block.hi) == (first, g.offsets[d] + hi)
            ok &= np.array_equal(block.indices, whole.indices[start:stop])
            ok &= block.weights.tobytes() == whole.weights[start:stop].tobytes()
            ok &= block.edge_offset == start - whole.indptr[g.offsets[d]]
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(4, 1)]))
@threaded
def test_push_volume_near_ideal_and_below_pull(p, c):
    """Push moves one 8-byte id per remote frontier row and one packed word per sample (plus
    small headers); pull moves whole rows, more on a graph whose rows are longer than the
    fanout."""
    comm = world_comm()
    if grid_for(c).num_rows == 1:
        pytest.skip("one process row samples the whole graph locally: nothing is sent")
    rng = np.random.default_rng(8)
    n = {"a": 300, "b": 200}
    edges = {("a", "to", "b"): (rng.integers(0, 300, 6000), rng.integers(0, 200, 6000)),
             ("b", "to", "a"): (rng.integers(0, 200, 6000), rng.integers(0, 300, 6000))}
    graph = spsample.HeteroGraph.from_edge_index(edges, num_nodes=n)
    grid = grid_for(c)
    dg = DistHeteroGraph.from_graph(graph, grid)
    b0, b1 = my_batches(8)
    seeds = rng.permutation(200)[:8 * 16]
    sent = {}
    for strategy in ("push", "pull"):
        grid.reset_stats()
        spsample.sample(dg, ("b", seeds[b0 * 16:b1 * 16]), sampler=spsample.NodeWise([5, 3]),
                        batch_size=16, batch_offset=b0, strategy=strategy)
        st, s = grid.stats(), dg.last_stats
        sent[strategy] = st["alltoallv"]["sent"] + st.get("alltoall", {"sent": 0})["sent"]
        if strategy == "push":
            ideal = 8 * (s["remote_frontier"] + s["remote_samples"])
            counted = sum(v for k, v in s["bytes_sent"].items() if k.startswith("alltoall"))
    push, ideal, pull, counted = comm.allreduce(np.array(
        [sent["push"], ideal, sent["pull"], counted], dtype=np.int64))
    assert_all(push <= 1.2 * ideal, (push, ideal))
    assert_all(push < pull, (push, pull))
    assert_all(counted == push, (counted, push))        # last_stats counts the same bytes


@pytest.mark.parametrize("p, c", layouts([(2, 1), (8, 4)]))
@threaded
def test_loaded_from_a_file_equals_from_graph(tmp_path, p, c):
    """Each rank reads only its rows of every relation; the samples are the same."""
    comm, grid = world_comm(), grid_for(c)
    graph = GRAPHS[True]
    path = shared_file(tmp_path, graph)
    loaded = DistHeteroGraph.load(path, grid)
    built = DistHeteroGraph.from_graph(graph, grid)
    ok = loaded.rows == built.rows and (loaded.whole is None) == (built.whole is None)
    for rel in graph.relations:
        a, b = loaded.relation_graph(rel), built.relation_graph(rel)
        ok &= np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
        ok &= a.weights.tobytes() == b.weights.tobytes() and a.num_edges == b.num_edges
    out, b0, b1 = sample_mine(loaded, "weighted", "push")
    ok &= matches(out, reference("weighted"), b0, b1)
    ok &= loaded.whole is not None or c < comm.size
    assert_all(ok)


def shared_file(tmp_path, graph, name="bib.h5", mutate=None):
    """Rank 0 writes ``graph`` (uncompressed; ``mutate(h5py_file)`` may damage it), every
    rank gets the path."""
    def dataset():
        labels = {"paper": np.arange(COUNTS["paper"]) % 3}
        feats = {"paper": np.eye(4, dtype=np.float32)[np.arange(COUNTS["paper"]) % 4]}
        order = np.random.default_rng(0).permutation(COUNTS["paper"])
        return io.HeteroDataset(graph, features=feats, labels=labels, target_type="paper",
                                splits={"s": {"train": order[:40], "val": order[40:60],
                                              "test": order[60:]}}, name="bib")
    return write_shared(tmp_path, name, dataset, mutate)


def cites_group(f):
    """The group of the cites relation (its index in the file)."""
    rels = f["hetero/relations"]
    return next(rels[k] for k in rels if rels[k].attrs["name"] == "cites")


def last_index_too_large(f):
    cites_group(f)["indices"][-1] = COUNTS["paper"] + 3


def indptr_drops(f):
    indptr = cites_group(f)["indptr"]
    indptr[COUNTS["paper"] - 1] = indptr[COUNTS["paper"]] + 2


def huge_declared_indices(f):
    grp = cites_group(f)
    del grp["indices"]
    d = grp.create_dataset("indices", shape=(2**31,), dtype=np.int64, chunks=(1024,),
                           compression="gzip")
    d[:1024] = 1


def short_indptr(f):
    grp = cites_group(f)
    data = grp["indptr"][:-1]
    del grp["indptr"]
    grp.create_dataset("indptr", data=data)


DAMAGE = {
    # name: (mutation, words the message must hold)
    "index-too-large": (last_index_too_large, ["cites", "indices", str(COUNTS["paper"] + 3)]),
    "indptr-drops": (indptr_drops, ["cites", "indptr", "non-decreasing"]),
    "huge-declared-indices": (huge_declared_indices, ["indices", "2147483648", "stores"]),
    "short-indptr": (short_indptr, ["indptr", f"length {COUNTS['paper'] + 1}"]),
}


@pytest.mark.parametrize("replicate", [False, True])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_file_fails_on_every_rank(tmp_path, damage, replicate):
    """The damage sits in the last rows of the cites relation, which only the last process
    row reads; a rank holding the whole graph (replicate_graph, or one process row) reads it
    with spsample.load's checks."""
    mutate, words = DAMAGE[damage]
    path = shared_file(tmp_path, GRAPHS[False], "damaged.h5", mutate)
    exc = raised(lambda: DistHeteroGraph.load(path, grid_for(1), replicate_graph=replicate))
    messages = world_comm().allgather_object(str(exc))
    ok = isinstance(exc, spsample.DatasetError) and str(path) in str(exc)
    whole = replicate or grid_for(1).num_rows == 1
    ok &= whole or all(w in str(exc) for w in words)
    assert_all(ok and len(set(messages)) == 1, f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("p, c", layouts([(3, 1)]))
@threaded
def test_a_file_damaged_on_one_rank_only(tmp_path, p, c):
    """Rank 1 (rank 0 alone) reads a damaged copy (its cites row pointers one short), the
    others a good one: every rank raises the DatasetError that names the rank and the file."""
    comm = world_comm()
    good = shared_file(tmp_path, GRAPHS[False], "good.h5")
    bad = shared_file(tmp_path, GRAPHS[False], "bad.h5", DAMAGE["short-indptr"][0])
    culprit = min(1, comm.size - 1)
    path = bad if comm.rank == culprit else good
    for load in (lambda: DistHeteroGraph.load(path, grid_for(c)),
                 lambda: load_hetero_dataset(path, grid_for(c))):
        exc = raised(load)
        messages = comm.allgather_object(str(exc))
        ok = isinstance(exc, spsample.DatasetError) and "bad.h5" in str(exc)
        ok &= comm.size == 1 or f"rank {culprit}" in str(exc)
        assert_all(ok and len(set(messages)) == 1, f"{type(exc).__name__}: {exc}")


def test_a_homogeneous_file_is_refused_on_every_rank(tmp_path):
    exc = raised(lambda: DistHeteroGraph.load(io.embedded_path("cora"), grid_for(1)))
    assert_all(isinstance(exc, spsample.DatasetError) and "DistGraph.load" in str(exc),
               str(exc))


BAD_CALLS = {
    # name: (keyword arguments of sample that differ, error class, word of the message)
    "unknown-relation": (dict(sampler=spsample.NodeWise({("paper", "sells", "term"): [2]})),
                         spsample.SamplerError, "fanouts"),
    "missing-relation": (dict(sampler=spsample.NodeWise({WRITES: [2]})),
                         spsample.SamplerError, "fanouts"),
    "unknown-node-type": (dict(seeds=("venue", [0])), spsample.ArgumentError, "seeds"),
    "bad-strategy": (dict(strategy="broadcast"), spsample.ArgumentError, "strategy"),
    "layerwise-sampler": (dict(sampler=spsample.LADIES([4])), spsample.SamplerError,
                          "sampler"),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_arguments_fail_on_every_rank(name):
    changes, cls, word = BAD_CALLS[name]
    dg = DistHeteroGraph.from_graph(GRAPHS[False], grid_for(1))
    kwargs = dict(seeds=("paper", SEEDS[:BATCH]), sampler=spsample.NodeWise([2]),
                  batch_size=BATCH, strategy="push")
    kwargs.update(changes)
    exc = raised(lambda: spsample.sample(dg, **kwargs))
    messages = world_comm().allgather_object(str(exc))
    assert_all(isinstance(exc, cls) and word in str(exc) and len(set(messages)) == 1,
               f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("p, c", layouts([(2, 1)]))
@threaded
def test_a_bad_seed_on_one_rank_fails_every_rank(p, c):
    comm = world_comm()
    dg = DistHeteroGraph.from_graph(GRAPHS[False], grid_for(c))
    seeds = [0, 1] if comm.rank != comm.size - 1 else [0, COUNTS["paper"]]    # out of range
    exc = raised(lambda: spsample.sample(dg, ("paper", seeds), sampler=spsample.NodeWise([2]),
                                         batch_size=2, batch_offset=comm.rank))
    messages = comm.allgather_object(str(exc))
    assert_all(isinstance(exc, spsample.SeedError) and len(set(messages)) == 1, str(exc))


@pytest.mark.parametrize("p, c", layouts([(3, 1)]))
@threaded
def test_ranks_with_different_seed_types_or_graphs_fail_together(p, c):
    comm = world_comm()
    if comm.size == 1:
        pytest.skip("needs two ranks")
    grid = grid_for(c)
    dg = DistHeteroGraph.from_graph(GRAPHS[False], grid)
    kind = "paper" if comm.rank == 0 else "author"
    exc = raised(lambda: spsample.sample(dg, (kind, [0]), sampler=spsample.NodeWise([2]),
                                         batch_size=1, batch_offset=comm.rank))
    assert_all(isinstance(exc, spsample.DistributedError) and "node type" in str(exc), str(exc))
    graph = GRAPHS[comm.rank == 1]                  # rank 1 passes the weighted graph
    exc = raised(lambda: DistHeteroGraph.from_graph(graph, grid))
    assert_all(isinstance(exc, spsample.DistributedError) and "graph" in str(exc), str(exc))


def test_replication_that_does_not_divide_the_ranks():
    p = world_comm().size
    exc = raised(lambda: Grid(world_comm(), replication=p + 1))
    assert_all(isinstance(exc, spsample.DistributedError) and "replication" in str(exc),
               str(exc))


def temporal_graph():
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 20, 120), rng.integers(0, 20, 120)
    rel = ("n", "to", "n")
    return spsample.HeteroGraph.from_edge_index({rel: (src, dst)}, num_nodes={"n": 20},
                                                edge_time={rel: rng.random(120)})


@pytest.mark.parametrize("p, c", layouts([(2, 2), (4, 2)]))
@threaded
def test_temporal_sampling_in_every_layout(p, c):
    """Temporal bulks give the one-process bits whether each rank holds the whole graph
    (replicate_graph=True, or c = p) or its rows (test_dist_temporal.py covers the sharded
    graph in depth)."""
    comm = world_comm()
    graph = temporal_graph()
    seeds, times = np.arange(8), np.linspace(0.2, 0.9, 8)
    kw = dict(sampler=spsample.NodeWise([3, 2]), batch_size=4, seed=1)
    ref = spsample.sample(graph, ("n", seeds), seed_time=times, **kw)
    b0, b1 = min(comm.rank, 2), min(comm.rank + 1, 2)
    part = slice(4 * b0, 4 * b1)
    for replicate in (False, True):
        dg = DistHeteroGraph.from_graph(graph, grid_for(c), replicate_graph=replicate)
        out = []
        exc = raised(lambda: out.extend(spsample.sample(
            dg, ("n", seeds[part]), seed_time=times[part], batch_offset=b0, **kw)))
        assert_all(exc is None and matches(out, ref, b0, b1), str(exc))
        whole = replicate or c == comm.size
        assert_all((dg.whole is not None) == whole and dg.is_temporal, replicate)


@pytest.mark.parametrize("strategy, p, c", spread(["push", "pull"], per_case=1,
                                                  pool=[(3, 1), (4, 2)]))
@threaded
def test_loader_over_a_dist_hetero_graph(strategy, p, c):
    """Each rank's batches are those of the loader over the whole graph with the same rank
    and world size (ranks with fewer bulks sample padding ones)."""
    pytest.importorskip("torch")
    comm = world_comm()
    graph = GRAPHS[False]
    dg = DistHeteroGraph.from_graph(graph, grid_for(c))
    feats = {"paper": np.arange(COUNTS["paper"] * 2, dtype=np.float32).reshape(-1, 2)}
    kw = dict(sampler=spsample.NodeWise([3, 2]), batch_size=BATCH, bulk_size=2, seed=7,
              features=feats, rank=comm.rank, world_size=comm.size, pipeline=False)
    seeds = ("paper", SEEDS[:5 * BATCH])       # 5 minibatches: uneven over 2 or 4 ranks
    mine = list(spsample.Loader(dg, seeds, strategy=strategy, **kw))
    want = list(spsample.Loader(graph, seeds, **kw))
    ok = len(mine) == len(want) and all(
        a.minibatch.equals(b.minibatch) and bool((a.x_dict["paper"] == b.x_dict["paper"]).all())
        for a, b in zip(mine, want))
    assert_all(ok, (len(mine), len(want)))


def test_loaded_dataset_holds_the_file(tmp_path):
    """load_hetero_dataset: the graph sharded, the features, labels and splits whole."""
    path = shared_file(tmp_path, GRAPHS[False])
    ds = load_hetero_dataset(path, grid_for(1))
    whole = spsample.load(path)
    ok = isinstance(ds.graph, DistHeteroGraph) and ds.target_type == "paper"
    ok &= np.array_equal(ds.features["paper"], whole.features["paper"])
    ok &= np.array_equal(ds.labels["paper"], whole.labels["paper"])
    ok &= all(np.array_equal(a, b) for a, b in zip(ds.split("s"), whole.split("s")))
    exc = raised(lambda: spsample.save(ds, tmp_path / f"copy{world_comm().rank}.h5"))
    ok &= isinstance(exc, spsample.ArgumentTypeError)
    assert_all(ok, str(exc))
