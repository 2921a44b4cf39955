"""A relabelled dataset (``spsample partition``) loaded with its permutation: each process row
reads one contiguous block of the relabelled file, yet the graph and the features are presented
in the original ids, and sampling gives bit for bit the minibatches of the original dataset --
for every sampler, strategy, replication factor and partition (a random permutation, METIS,
blocks)."""

import numpy as np
import pytest

import spsample
from spsample.distributed._partition import have_metis, partition, relabel, save_partition
from spsample.distributed import DistGraph, FeatureStore, ShardedDataset

from _dist_helpers import (SHARDED_LAYOUTS, assert_all, distributed_modes,  # noqa: F401
                           grid_for, layouts, mpi_timeout, my_batches, raised, rank_cache,
                           rmat10, rmat10_weighted, spread, threaded, world_comm)
from test_dist_sampling import EXPECTED_MODES, SAMPLERS, WEIGHTED_SAMPLERS, matches

pytestmark = [pytest.mark.mpi, mpi_timeout(180)]

BATCH = 32
NUM_SEEDS = 300
METHODS = ["random", "block"] + (["metis"] if have_metis() else [])


def _old_id(graph, method):
    if method == "random":
        return np.random.default_rng(4).permutation(graph.num_nodes)
    return partition(graph, 4, method=method)


def files(graph, method, tmp_path_factory):
    """``(original path, relabelled path, permutation path, old_id)``, written by rank 0 once
    per graph, method and world."""
    _FILES = rank_cache().setdefault("partition files", {})
    key = (id(graph), method)
    if key not in _FILES:
        comm = world_comm()
        paths = None
        if comm.rank == 0:
            base = tmp_path_factory.mktemp(f"part-{method}")
            x = np.random.default_rng(2).standard_normal((graph.num_nodes, 3))
            labels = np.arange(graph.num_nodes) % 5
            n = graph.num_nodes
            order = np.random.default_rng(6).permutation(n)       # splits in no order
            splits = {"default": {"train": order[:n // 2], "val": order[n // 2:3 * n // 4],
                                  "test": order[3 * n // 4:]}}
            ds = spsample.Dataset(graph, features=x, labels=labels, splits=splits, name="g")
            old_id = _old_id(graph, method)
            new = relabel(ds, old_id)
            paths = [str(base / "orig.h5"), str(base / "new.h5"), str(base / "new.perm.npz")]
            spsample.save(ds, paths[0])
            spsample.save(new, paths[1])
            save_partition(paths[2], new.graph, old_id, method=method, parts=4)
        paths = comm.bcast(paths)
        _FILES[key] = (*paths, comm.bcast(_old_id(graph, method) if comm.rank == 0 else None))
    return _FILES[key]


def sample_both(graph, dg, make, strategy):
    seeds = np.random.default_rng(3).permutation(graph.num_nodes)[:NUM_SEEDS]
    ref = spsample.sample(graph, seeds, sampler=make(), batch_size=BATCH, seed=9, epoch=2)
    b0, b1 = my_batches(-(-NUM_SEEDS // BATCH))
    out = spsample.sample(dg, seeds[b0 * BATCH:b1 * BATCH], sampler=make(), batch_size=BATCH,
                          seed=9, epoch=2, batch_offset=b0, strategy=strategy)
    return out, ref, b0, b1


@pytest.mark.parametrize("name, method, strategy, p, c",
                         spread([(n, m, st) for n in sorted(SAMPLERS) for m in METHODS
                                 for st in ("push", "pull")], per_case=1, every=3,
                                pool=SHARDED_LAYOUTS))
@threaded
def test_relabelled_file_samples_the_original_minibatches(rmat10, tmp_path_factory, name,
                                                          method, strategy, p, c):
    _, new, perm, old_id = files(rmat10, method, tmp_path_factory)
    grid = grid_for(c)
    dg = DistGraph.load(new, grid, permutation=perm)
    out, ref, b0, b1 = sample_both(rmat10, dg, SAMPLERS[name], strategy)
    assert_all(matches(out, ref, b0, b1), (name, method, strategy, c))
    assert_all(distributed_modes(dg, EXPECTED_MODES[name](strategy)), dg.last_stats["modes"])
    if c < grid.size:       # one contiguous block of the relabelled file per process row
        lo, hi = grid.block(rmat10.num_nodes)
        assert_all(np.array_equal(np.sort(dg.placement.vertices()), np.sort(old_id[lo:hi])))


@pytest.mark.parametrize("name, strategy, p, c",
                         spread([(n, st) for n in sorted(WEIGHTED_SAMPLERS)
                                 for st in ("push", "pull")], per_case=1,
                                pool=SHARDED_LAYOUTS))
@threaded
def test_weighted_relabelled_file_same_bits(rmat10_weighted, tmp_path_factory, name, strategy,
                                            p, c):
    """Float sums (LADIES, FastGCN's column weights) in the serial order on any placement."""
    _, new, perm, _ = files(rmat10_weighted, "random", tmp_path_factory)
    dg = DistGraph.load(new, grid_for(c), permutation=perm)
    out, ref, b0, b1 = sample_both(rmat10_weighted, dg, WEIGHTED_SAMPLERS[name], strategy)
    ok = matches(out, ref, b0, b1)
    ok &= all(_same_weights(a, b) for a, b in zip(out, ref[b0:b1]))
    assert_all(ok, (name, strategy, c))


def _same_weights(a, b):
    if a.weight is None or b.weight is None:
        return a.weight is None and b.weight is None
    return all(w1.tobytes() == w2.tobytes() for w1, w2 in zip(a.weight, b.weight))


@pytest.mark.parametrize("p, c", layouts([(4, 2)]))
@threaded
def test_replicated_relabelled_graph_is_the_original(rmat10_weighted, tmp_path_factory, p, c):
    _, new, perm, _ = files(rmat10_weighted, "random", tmp_path_factory)
    dg = DistGraph.load(new, grid_for(c), replicate_graph=True, permutation=perm)
    ok = np.array_equal(dg.indptr, rmat10_weighted.indptr)
    ok &= np.array_equal(dg.indices, rmat10_weighted.indices)
    ok &= dg.weights.tobytes() == rmat10_weighted.weights.tobytes()
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1), (8, 2)]))
@threaded
def test_edge_ids_are_those_of_the_original_csr(rmat10_weighted, tmp_path_factory, p, c):
    _, new, perm, _ = files(rmat10_weighted, "random", tmp_path_factory)
    dg = DistGraph.load(new, grid_for(c), permutation=perm)
    rows = dg.placement.vertices() if dg.edge_offset is None else \
        np.arange(dg.lo, dg.hi, dtype=np.int64)
    ok = True
    for local, v in enumerate(rows):
        first = int(dg.indptr[local])
        ids = dg.global_edges(np.arange(first, int(dg.indptr[local + 1])))
        ok &= np.array_equal(ids, np.arange(rmat10_weighted.indptr[v],
                                            rmat10_weighted.indptr[v + 1]))
        ok &= np.array_equal(dg.local_edges(ids), np.arange(first, int(dg.indptr[local + 1])))
    ok &= np.array_equal(dg.local_rows(rows), np.arange(rows.size))
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(4, 1), (8, 4)]))
@threaded
def test_features_fetched_by_original_id(rmat10, tmp_path_factory, p, c):
    orig, new, perm, old_id = files(rmat10, "random", tmp_path_factory)
    grid = grid_for(c)
    plain = FeatureStore.load(orig, grid)
    store = FeatureStore.load(new, grid, permutation=perm)
    ids = np.random.default_rng(10 + world_comm().rank).integers(0, rmat10.num_nodes, 50)
    got, want = store.fetch(ids), plain.fetch(ids)
    lo, hi = grid.block(rmat10.num_nodes)
    ok = got.tobytes() == want.tobytes()
    ok &= store.shard.shape[0] == hi - lo                 # the relabelled file's block
    ok &= np.array_equal(store.placement.vertices(), old_id[lo:hi])
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2)]))
@threaded
def test_sharded_dataset_in_original_ids(rmat10, tmp_path_factory, p, c):
    orig, new, perm, _ = files(rmat10, "random", tmp_path_factory)
    grid = grid_for(c)
    a = ShardedDataset.load(orig, grid)
    b = ShardedDataset.load(new, grid, permutation=perm)
    ok = np.array_equal(a.labels, b.labels) and np.array_equal(a.train_idx, b.train_idx)
    ids = np.arange(0, rmat10.num_nodes, 7)
    ok &= a.features.fetch(ids).tobytes() == b.features.fetch(ids).tobytes()
    out, ref, b0, b1 = sample_both(rmat10, b.graph, SAMPLERS["nodewise"], "push")
    ok &= matches(out, ref, b0, b1) and distributed_modes(b.graph, ["push"] * 2)
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1)]))
@threaded
def test_wrong_or_damaged_permutation_fails_on_every_rank(rmat10, tmp_path_factory, p, c):
    comm = world_comm()
    _, new, perm, _ = files(rmat10, "random", tmp_path_factory)
    _, _, other_perm, _ = files(rmat10, "block", tmp_path_factory)   # fits another file
    bad = comm.bcast(str(tmp_path_factory.mktemp("badperm") / "bad.npz")
                     if comm.rank == 0 else None)
    if comm.rank == 0:
        with open(bad, "wb") as f:
            f.write(b"PK\x03\x04 not a zip")
    comm.barrier()
    grid = grid_for(c)
    cases = {"another dataset": other_perm, "readable partition file": bad,
             "readable partition file ": bad + ".missing"}
    ok = True
    for expected, path in cases.items():
        for load in (lambda p: DistGraph.load(new, grid, permutation=p),
                     lambda p: FeatureStore.load(new, grid, permutation=p)):
            exc = raised(lambda: load(path))
            ok &= isinstance(exc, spsample.DatasetError) and "permutation" in str(exc) and \
                expected.strip() in str(exc)
    # a rank alone with a damaged permutation: every rank raises the same error
    mine = perm if comm.rank else bad
    exc = raised(lambda: DistGraph.load(new, grid, permutation=mine))
    ok &= isinstance(exc, spsample.DatasetError) and "permutation" in str(exc)
    messages = comm.allgather_object(str(exc))
    ok &= len(set(messages)) == 1
    assert_all(ok, messages)


@pytest.mark.parametrize("p, c", layouts([(4, 1), (8, 2)]))
@threaded
def test_owner_order_deals_each_rank_its_own_rows(rmat10, tmp_path_factory, p, c):
    """``Loader(order="owner")``: with the seeds spread evenly over the process rows, every
    minibatch of a rank holds seeds of its own process row only (a random permutation places
    them), every seed is dealt once, and push sampling sends fewer bytes than in a random
    order; the same epoch again gives the same minibatches."""
    pytest.importorskip("torch")
    _, new, perm, _ = files(rmat10, "random", tmp_path_factory)
    grid = grid_for(c)
    dg = DistGraph.load(new, grid, permutation=perm)
    seeds = np.arange(rmat10.num_nodes)
    comm = world_comm()

    def epoch(order):
        ld = spsample.Loader(dg, seeds, sampler=spsample.NodeWise([4, 3]), batch_size=32,
                             order=order, rank=comm.rank, world_size=comm.size,
                             pipeline=False, seed=3)
        got = [b.n_id[:b.batch_size].numpy() for b in ld.iter_epoch(1)]
        sent = sum(ld.last_stats["sampling_bytes"].values())
        return got, sent

    mine, sent = epoch("owner")
    again, _ = epoch("owner")
    _, sent_random = epoch("random")
    dealt = np.concatenate(mine) if mine else np.zeros(0, dtype=np.int64)
    everyone = np.concatenate(comm.allgather_object(dealt))
    ok = all(np.array_equal(a, b) for a, b in zip(mine, again)) and len(mine) == len(again)
    ok &= bool(np.all(dg.owner(dealt) == grid.row))
    ok &= np.array_equal(np.sort(everyone), seeds)
    if grid.num_rows > 1:
        ok &= comm.allreduce(sent) < comm.allreduce(sent_random)
    assert_all(ok, (c, sent, sent_random))
