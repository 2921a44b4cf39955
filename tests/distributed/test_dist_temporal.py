"""Temporal sampling on a sharded ``DistHeteroGraph`` == the single-process call restricted to
this rank's minibatches, bit for bit: uniform and ``"last"``, LABOR, weighted, edge times and
node times, push and pull, every replication factor of the world size (p = 1, 2, 4; serially
also worlds of p threads, p in {2, 3, 4, 8}), bulk sizes 1 to 3, native kernels on and off; no
sampled entry later than its seed's time; the time-sorted blocks against ``TimeSortedGraph``;
times read from a file (each rank its rows), damaged times giving the same typed error on every
rank."""

import numpy as np
import pytest

import spsample
from spsample import io, native as _native
from spsample.distributed import DistGraph, DistHeteroGraph
from spsample.engine._lowering import lower_requests
from spsample.engine._native_run import select_requests
from spsample.engine._rows import _canonical_edges
from spsample.distributed._timesorted import TimeSortedBlock

from _dist_helpers import (CITES, HAS, IN, SHARDED_LAYOUTS, WRITES, WRITTEN_BY,  # noqa: F401
                           assert_all, grid_for, layouts, matches, mpi_timeout, my_batches,
                           raised, replace_dataset, sample_share, spread, threaded, world_comm,
                           write_shared)

pytestmark = [pytest.mark.mpi, mpi_timeout(120)]

COUNTS = {"author": 24, "paper": 60, "term": 10}
BATCH = 4
NUM_SEEDS = 26             # 7 minibatches of papers, the last one of 2 seeds


def bibliography(kind):
    """Random authors, papers and terms with times (the same graph on every rank)::

        author --writes--> paper     (200 pairs; written_by: the reverse)
        paper  --cites---> paper     (300 pairs, repeats: a pair keeps its earliest time)
        paper  --has-----> term      (120 pairs; in: the reverse)

    ``"edge"``: every relation has edge times (integers in [0, 40): ties, sorted by column)
    and weights. ``"node"``: authors and papers have node times (a relation's entries take
    their source's), cites has edge times, terms have none (``in`` is never cut).
    """
    rng = np.random.default_rng(31)
    a, p = rng.integers(0, 24, 200), rng.integers(0, 60, 200)
    c1, c2 = rng.integers(0, 60, 300), rng.integers(0, 60, 300)
    pt, t = rng.integers(0, 60, 120), rng.integers(0, 10, 120)
    edges = {WRITES: (a, p), WRITTEN_BY: (p, a), CITES: (c1, c2), HAS: (pt, t), IN: (t, pt)}
    stamp = {rel: rng.integers(0, 40, src.size).astype(float) for rel, (src, _) in edges.items()}
    if kind == "edge":
        weights = {rel: rng.random(src.size) + 0.05 for rel, (src, _) in edges.items()}
        return spsample.HeteroGraph.from_edge_index(edges, num_nodes=COUNTS, weights=weights,
                                                    edge_time=stamp)
    node_time = {"author": rng.integers(0, 40, 24).astype(float),
                 "paper": rng.integers(0, 40, 60).astype(float)}
    return spsample.HeteroGraph.from_edge_index(edges, num_nodes=COUNTS,
                                                edge_time={CITES: stamp[CITES]},
                                                node_time=node_time)


GRAPHS = {kind: bibliography(kind) for kind in ("edge", "node")}
SAMPLERS = {
    "uniform": lambda: spsample.NodeWise({WRITES: [3, 2], WRITTEN_BY: [2, 2], CITES: [3, 1],
                                          HAS: [1, 2], IN: [0, 3]}),
    "last": lambda: spsample.NodeWise([3, 2], temporal_strategy="last"),
    "labor": lambda: spsample.LABOR([3, 2]),
    "weighted": lambda: spsample.NodeWise([2, 2], weighted=True),
}
CASES = [(name, kind) for name in sorted(SAMPLERS) for kind in sorted(GRAPHS)
         if not (name == "weighted" and kind == "node")]           # weights: the edge graph
rng = np.random.default_rng(9)
SEEDS = rng.permutation(COUNTS["paper"])[:NUM_SEEDS]
TIMES = rng.integers(0, 44, NUM_SEEDS).astype(float)
_REF = {}


def reference(name, kind, seed=5, epoch=2):
    key = (name, kind, seed, epoch)
    if key not in _REF:
        _REF[key] = spsample.sample(GRAPHS[kind], ("paper", SEEDS), sampler=SAMPLERS[name](),
                                    batch_size=BATCH, seed=seed, epoch=epoch, seed_time=TIMES)
    return _REF[key]


def sample_mine(dg, name, strategy, bulk=None, seed=5, epoch=2):
    """This rank's minibatches with their seeds' times, ``bulk`` at a time."""
    return sample_share(dg, SEEDS, BATCH, SAMPLERS[name], strategy, node_type="paper",
                        bulk=bulk, seed_time=TIMES, seed=seed, epoch=epoch)


@pytest.mark.parametrize("name, kind, strategy, p, c",
                         spread([(n, k, st) for n, k in CASES for st in ("push", "pull")],
                                per_case=1))
@threaded
def test_equals_single_process(name, kind, strategy, p, c):
    dg = DistHeteroGraph.from_graph(GRAPHS[kind], grid_for(c))
    out, b0, b1 = sample_mine(dg, name, strategy)
    assert_all(matches(out, reference(name, kind), b0, b1), (name, kind, strategy, c))
    where = "local" if dg.whole is not None else strategy
    assert_all(dg.last_stats["modes"] == [where] * len(dg.last_stats["relations"]),
               dg.last_stats["modes"])


@pytest.mark.parametrize("bulk, strategy, p, c",
                         spread([(b, st) for b in (1, 2, 3) for st in ("push", "pull")],
                                per_case=1, pool=SHARDED_LAYOUTS))
@threaded
def test_bulk_size_does_not_change_the_minibatches(bulk, strategy, p, c):
    for name, kind in (("uniform", "node"), ("last", "edge")):
        dg = DistHeteroGraph.from_graph(GRAPHS[kind], grid_for(c))
        out, b0, b1 = sample_mine(dg, name, strategy, bulk=bulk)
        assert_all(matches(out, reference(name, kind), b0, b1), (name, kind, bulk, strategy))


@pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built")
@pytest.mark.parametrize("strategy, p, c", spread(["push", "pull"], per_case=1,
                                                  pool=[(3, 1), (4, 2)]))
@threaded
def test_steps_run_natively_with_the_numpy_bits(strategy, p, c):
    """On a sharded graph each step's rows are cut and selected by the native request kernel
    (on the owners with push, on the fetched rows with pull); with the kernels off, the NumPy
    evaluation gives the same bits."""
    previous = _native.enabled()
    try:
        for native in (True, False):
            _native.set_enabled(native)
            for name, kind in CASES:
                dg = DistHeteroGraph.from_graph(GRAPHS[kind], grid_for(c))
                out, b0, b1 = sample_mine(dg, name, strategy)
                assert_all(matches(out, reference(name, kind), b0, b1), (name, kind, native))
                want = "native" if native and dg.whole is None else (
                    "numpy" if dg.whole is None else None)
                selection = dg.last_stats["selection"]
                assert_all(want is None or selection == [want] * len(selection), selection)
            world_comm().barrier()      # every rank done before the kernels are switched
    finally:
        _native.set_enabled(previous)


def entry_time(graph, rel):
    """The time of each canonical entry of ``rel`` (its edge times, else its source's node
    times), or ``None``."""
    t = graph.edge_time(rel)
    if t is None and graph.node_time(rel[0]) is not None:
        t = graph.node_time(rel[0])[graph.csr(rel)[1]]
    return t


@pytest.mark.parametrize("kind, strategy, p, c",
                         spread([(k, st) for k in sorted(GRAPHS) for st in ("push", "pull")],
                                per_case=1, pool=[(2, 1), (4, 1), (8, 2), (8, 4)]))
@threaded
def test_no_sampled_entry_is_later_than_its_seed(kind, strategy, p, c):
    """Every sampled edge is an entry of its relation (its canonical edge id) no later than the
    time of the seed whose subgraph holds it; ``"last"`` takes a row's latest entries."""
    graph = GRAPHS[kind]
    dg = DistHeteroGraph.from_graph(graph, grid_for(c))
    ok = True
    for name in ("uniform", "last", "labor"):
        out, b0, _ = sample_mine(dg, name, strategy)
        for j, mb in enumerate(out):
            seed_time = TIMES[(b0 + j) * BATCH:(b0 + j + 1) * BATCH]
            for rel, hops in mb.edges.items():
                s, _, d = rel
                indptr, indices, _ = graph.csr(rel)
                t = entry_time(graph, rel)
                for (dst, src), eid in zip(hops, mb.edge_ids[rel]):
                    ok &= bool(np.all(indices[eid] == mb.n_id[s][src]))
                    v = mb.n_id[d][dst]
                    ok &= bool(np.all((indptr[v] <= eid) & (eid < indptr[v + 1])))
                    if t is not None:
                        ok &= bool(np.all(t[eid] <= seed_time[mb.batch[d][dst]]))
                    if t is not None and name == "last":
                        ok &= _latest(t, indptr, dst, v, eid, seed_time[mb.batch[d][dst]])
    assert_all(ok, (kind, strategy))


def _latest(t, indptr, dst, v, eid, bound):
    """Whether, for each expanded vertex (``dst``: one copy per seed), no entry of its row no
    later than its seed's time is later than the earliest entry sampled from the row (the
    sample is the row's latest entries)."""
    ok = True
    for local in np.unique(dst):
        mine = dst == local
        row = v[mine][0]
        times = t[indptr[row]:indptr[row + 1]]
        kept = times[times <= bound[mine][0]]
        ok &= int(np.sum(kept > t[eid[mine]].min())) <= int(mine.sum())
    return bool(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1), (4, 2)]))
@threaded
def test_time_sorted_blocks_are_rows_of_the_time_sorted_graph(p, c):
    """Each rank's time-sorted rows (TimeSortedBlock) are, entry for entry, those rows of the
    one-process TimeSortedGraph, with its canonical edge ids; the ids a requester derives from
    fetched rows (_canonical_edges) are the same."""
    ok = True
    for kind, graph in GRAPHS.items():
        dg = DistHeteroGraph.from_graph(graph, grid_for(c))
        for rel in graph.relations:
            whole = graph.time_sorted(rel)
            block = dg.time_sorted(rel)
            if whole is None or dg.whole is not None:
                ok &= (block is None) == (whole is None)
                continue
            block_rows = dg.relation_graph(rel)
            a, b = block.edge_offset, block.edge_offset + block.indices.size
            ok &= isinstance(block, TimeSortedBlock) and block.lo == block_rows.lo
            ok &= np.array_equal(block.indices, whole.indices[a:b])
            ok &= np.array_equal(block.entry_time, whole.entry_time[a:b])
            ok &= np.array_equal(block.canonical_edge, whole.canonical_edge[a:b])
            ok &= block.weights is None or block.weights.tobytes() == whole.weights[a:b].tobytes()
            degree = np.diff(block.indptr)
            ok &= np.array_equal(_canonical_edges(degree, block.indptr[:-1] + a, block.indices),
                                 block.canonical_edge)
    assert_all(ok)


def test_canonical_edges_of_fetched_rows():
    """Rows sorted by time: a column's rank in its row is its canonical position."""
    #   row 0: columns 7 3 5 (by time)  -> canonical 3 5 7 at edges 10..12
    #   row 1: (empty)
    #   row 2: columns 2 9              -> canonical 2 9 at edges 40..41
    got = _canonical_edges(np.array([3, 0, 2]), np.array([10, 20, 40]),
                           np.array([7, 3, 5, 2, 9]))
    assert_all(got.tolist() == [12, 10, 11, 40, 41], got)


@pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built")
def test_native_requests_cut_at_their_times_as_numpy_does():
    """select_requests with per-request times == the owners' NumPy evaluation with the same
    cut (runs of one minibatch share a time), for uniform, last and LABOR steps."""
    from spsample.engine import _run as _engine
    from spsample import _rng
    from spsample.engine._rows import Block as _Block, owner_select as _owner_select
    graph = GRAPHS["edge"]
    dg = DistGraph.from_graph(graph.relation_graph(CITES), grid_for(world_comm().size))
    sorted_rows = graph.time_sorted(CITES)
    block = TimeSortedBlock(dg, graph.edge_time(CITES)) if dg.indices.size else None
    r = np.random.default_rng(3)
    vertex = np.sort(r.integers(0, COUNTS["paper"], 40)) + graph.offsets["paper"]
    batch = np.repeat(np.arange(8), 5)                  # 8 runs of 5 requests
    run_time = r.integers(-2, 44, 8).astype(float)
    batch_ids = np.arange(100, 108)
    ok = block is not None and np.array_equal(block.entry_time, sorted_rows.entry_time)
    for make in (SAMPLERS["last"], lambda: spsample.NodeWise([2]), lambda: spsample.LABOR([2])):
        plan = _engine.trace(make(), block, batch_ids, 5, 0,
                             seed_time=np.zeros(batch_ids.size))[0]
        ctx = type("Ctx", (), dict(hop_word=_rng.hop_word(0, 1), key=_rng.split_seed(5)))
        native = lower_requests(plan, block, edges=block.block_edges())
        got = select_requests(native, vertex, block.local_rows(vertex), batch_ids[batch],
                              ctx.hop_word, ctx.key, times=run_time[batch])
        want = _owner_select(plan.selection, _Block(block), vertex, vertex, batch, batch_ids,
                             ctx, run_time)
        ok &= np.array_equal(got.indptr, want.indptr) and np.array_equal(got.edge_id,
                                                                         want.edge_id)
        cut = sorted_rows.entry_time[got.edge_id] <= np.repeat(run_time[batch],
                                                              got.row_lengths())
        ok &= bool(cut.all()) and got.edge_id.size > 0
    assert_all(ok)


# ---------------------------------------------------------------------- files
def shared_file(tmp_path, graph, name, mutate=None):
    """Rank 0 writes ``graph`` (``mutate(h5py_file)`` may change it), every rank gets the
    path."""
    return write_shared(tmp_path, name, lambda: io.HeteroDataset(graph, name="bib"), mutate)


def group(f, name, part="relations"):
    grps = f[f"hetero/{part}"]
    return next(grps[k] for k in grps if grps[k].attrs["name"] == name)


def reversed_rows_with_repeats(f):
    """The cites rows stored backwards, and in every row of 3+ entries the first column
    repeated in place of the second (a repeated pair, with its own time): spsample.load
    sorts and merges them (earliest time, weights summed)."""
    grp = group(f, "cites")
    indptr, indices = grp["indptr"][:], grp["indices"][:]
    time, weights = grp["time"][:], grp["weights"][:]
    order = np.concatenate([np.arange(a, b)[::-1] for a, b in zip(indptr[:-1], indptr[1:])])
    indices, time, weights = indices[order], time[order], weights[order]
    for a, b in zip(indptr[:-1], indptr[1:]):
        if b - a >= 3:
            indices[a + 1] = indices[a]
    for name, data in (("indices", indices), ("time", time), ("weights", weights)):
        replace_dataset(grp, name, data)


@pytest.mark.parametrize("kind, mutate, p, c",
                         spread([("edge", None), ("node", None),
                                 ("edge", reversed_rows_with_repeats)], per_case=1,
                                pool=[(2, 1), (4, 2), (8, 1)]))
@threaded
def test_loaded_from_a_file_equals_one_process(tmp_path, kind, mutate, p, c):
    """Each rank reads its rows' entries and times (node times whole), merged as
    spsample.load merges the whole file: the samples are one process's on the loaded graph."""
    path = shared_file(tmp_path, GRAPHS[kind], f"t{kind}.h5", mutate)
    graph = spsample.load(path).graph
    dg = DistHeteroGraph.load(path, grid_for(c))
    ok = dg.is_temporal and (mutate is None) == (graph == GRAPHS[kind])
    for name in ("uniform", "last") + (("weighted",) if kind == "edge" else ()):
        ref = spsample.sample(graph, ("paper", SEEDS), sampler=SAMPLERS[name](),
                              batch_size=BATCH, seed=5, epoch=2, seed_time=TIMES)
        for strategy in ("push", "pull"):
            out, b0, b1 = sample_mine(dg, name, strategy)
            ok &= matches(out, ref, b0, b1)
    assert_all(ok, (kind, c))


def nan_time(f):
    group(f, "cites")["time"][-1] = np.nan


def short_time(f):
    grp = group(f, "cites")
    replace_dataset(grp, "time", grp["time"][:-1])


def node_time_nan(f):
    group(f, "paper", "node_types")["time"][3] = np.nan


def node_time_short(f):
    grp = group(f, "paper", "node_types")
    replace_dataset(grp, "time", grp["time"][:-2])


DAMAGE = {
    # name: (graph, mutation, words the message must hold)
    "nan-edge-time": ("edge", nan_time, ["cites", "time", "finite"]),
    "short-edge-time": ("edge", short_time, ["time", "one value per entry"]),
    "nan-node-time": ("node", node_time_nan, ["node_time['paper']", "finite"]),
    "short-node-time": ("node", node_time_short, ["node_time['paper']", "one timestamp"]),
}


@pytest.mark.parametrize("replicate", [False, True])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_times_fail_on_every_rank(tmp_path, damage, replicate):
    """The NaN edge time sits in the last row of cites, which only the last process row
    reads; every rank raises the same DatasetError naming the file and the array."""
    kind, mutate, words = DAMAGE[damage]
    path = shared_file(tmp_path, GRAPHS[kind], "damaged.h5", mutate)
    exc = raised(lambda: DistHeteroGraph.load(path, grid_for(1), replicate_graph=replicate))
    messages = world_comm().allgather_object(str(exc))
    ok = isinstance(exc, spsample.DatasetError) and str(path) in str(exc)
    whole = replicate or grid_for(1).num_rows == 1
    ok &= whole or all(w in str(exc) for w in words)
    assert_all(ok and len(set(messages)) == 1, f"{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------- bad calls
def test_seed_time_on_a_graph_without_times_fails_on_every_rank():
    """What stays unsupported: seed_time on a graph that has no times, sharded or not, and on
    a homogeneous DistGraph (an ArgumentError naming seed_time on every rank)."""
    graph = spsample.HeteroGraph.from_edge_index({CITES: ([0, 1, 2], [1, 2, 0])})
    hetero = DistHeteroGraph.from_graph(graph, grid_for(1))
    homogeneous = DistGraph.from_graph(graph.relation_graph(CITES), grid_for(1))
    for dg, seeds in ((hetero, ("paper", [0])), (homogeneous, [0])):
        exc = raised(lambda: spsample.sample(dg, seeds, sampler=spsample.NodeWise([2]),
                                             batch_size=1, seed_time=[1.0],
                                             batch_offset=world_comm().rank))
        messages = world_comm().allgather_object(str(exc))
        assert_all(isinstance(exc, spsample.ArgumentError) and "seed_time" in str(exc)
                   and len(set(messages)) == 1, f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("p, c", layouts([(3, 1)]))
@threaded
def test_bad_or_missing_seed_time_on_one_rank_fails_every_rank(p, c):
    """A NaN time on the last rank, then times on every rank but the last: every rank raises
    the same error (an ArgumentError naming seed_time, a DistributedError)."""
    comm = world_comm()
    dg = DistHeteroGraph.from_graph(GRAPHS["edge"], grid_for(c))
    last = comm.rank == comm.size - 1
    kw = dict(sampler=spsample.NodeWise([2]), batch_size=2, batch_offset=comm.rank)
    exc = raised(lambda: spsample.sample(dg, ("paper", [0, 1]),
                                         seed_time=[1.0, np.nan if last else 2.0], **kw))
    messages = comm.allgather_object(str(exc))
    assert_all(isinstance(exc, spsample.ArgumentError) and "seed_time" in str(exc)
               and len(set(messages)) == 1, f"{type(exc).__name__}: {exc}")
    if comm.size == 1:
        return
    exc = raised(lambda: spsample.sample(dg, ("paper", [0, 1]),
                                         seed_time=None if last else [1.0, 2.0], **kw))
    messages = comm.allgather_object(str(exc))
    assert_all(isinstance(exc, spsample.DistributedError) and len(set(messages)) == 1,
               f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("p, c", layouts([(4, 1)]))
@threaded
def test_ranks_without_minibatches_take_part(p, c):
    """Two minibatches over every rank: the others pass ("paper", []) with no times."""
    comm = world_comm()
    dg = DistHeteroGraph.from_graph(GRAPHS["node"], grid_for(c))
    seeds, times = SEEDS[:2 * BATCH], TIMES[:2 * BATCH]
    ref = spsample.sample(GRAPHS["node"], ("paper", seeds), sampler=SAMPLERS["uniform"](),
                          batch_size=BATCH, seed_time=times)
    ok = True
    for strategy in ("push", "pull"):
        part = slice(comm.rank * BATCH, (comm.rank + 1) * BATCH) if comm.rank < 2 else \
            slice(0, 0)
        out = spsample.sample(dg, ("paper", seeds[part]), sampler=SAMPLERS["uniform"](),
                              batch_size=BATCH, batch_offset=min(comm.rank, 2),
                              strategy=strategy, seed_time=times[part])
        ok &= matches(out, ref, min(comm.rank, 2), min(comm.rank + 1, 2))
    assert_all(ok)


@pytest.mark.parametrize("strategy, p, c", spread(["push", "pull"], per_case=1,
                                                  pool=[(2, 1), (8, 2)]))
@threaded
def test_loader_with_seed_times(strategy, p, c):
    """Each rank's temporal batches are those of the loader over the whole graph with the
    same rank and world size."""
    pytest.importorskip("torch")
    comm = world_comm()
    dg = DistHeteroGraph.from_graph(GRAPHS["node"], grid_for(c))
    kw = dict(sampler=SAMPLERS["uniform"](), batch_size=BATCH, bulk_size=2, seed=7,
              rank=comm.rank, world_size=comm.size, pipeline=False, seed_time=TIMES)
    mine = list(spsample.Loader(dg, ("paper", SEEDS), strategy=strategy, **kw))
    want = list(spsample.Loader(GRAPHS["node"], ("paper", SEEDS), **kw))
    ok = len(mine) == len(want) and all(a.minibatch.equals(b.minibatch)
                                        for a, b in zip(mine, want))
    assert_all(ok, (len(mine), len(want)))
    every = comm.allgather_object(len(mine))     # at p = 8 the last rank has none: it pads
    assert_all(sum(every) == -(-NUM_SEEDS // BATCH), every)


@pytest.mark.parametrize("p, c", layouts([(4, 1)]))
@threaded
def test_push_moves_fewer_bytes_than_pull_and_counts_them(p, c):
    """Push sends one time per run of a minibatch's rows; pull fetches whole rows with their
    times. On rows longer than the fanouts push moves fewer bytes; last_stats counts what the
    grid counted."""
    comm = world_comm()
    if grid_for(c).num_rows == 1:
        pytest.skip("one process row samples the whole graph locally: nothing is sent")
    r = np.random.default_rng(8)
    rel = ("a", "to", "a")
    graph = spsample.HeteroGraph.from_edge_index(
        {rel: (r.integers(0, 200, 8000), r.integers(0, 200, 8000))}, num_nodes={"a": 200},
        edge_time={rel: r.random(8000)})
    grid = grid_for(c)
    dg = DistHeteroGraph.from_graph(graph, grid)
    b0, b1 = my_batches(8)
    seeds, times = r.permutation(200)[:8 * 8], r.random(64) * 0.5 + 0.5
    sent = {}
    for strategy in ("push", "pull"):
        grid.reset_stats()
        spsample.sample(dg, ("a", seeds[b0 * 8:b1 * 8]), sampler=spsample.NodeWise([5, 3]),
                        batch_size=8, batch_offset=b0, strategy=strategy,
                        seed_time=times[b0 * 8:b1 * 8])
        st = grid.stats()
        sent[strategy] = st["alltoallv"]["sent"] + st.get("alltoall", {"sent": 0})["sent"]
        counted = sum(v for k, v in dg.last_stats["bytes_sent"].items()
                      if k.startswith("alltoall"))
        assert_all(counted == sent[strategy], (strategy, counted, sent[strategy]))
    push, pull = comm.allreduce(np.array([sent["push"], sent["pull"]], dtype=np.int64))
    assert_all(push < pull, (push, pull))
