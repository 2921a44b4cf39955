"""Bad input on any one rank fails every rank with one typed message, and never hangs."""

import pickle

import h5py
import numpy as np
import pytest

import spsample
from spsample import (ArgumentError, ArgumentTypeError, DatasetNotFoundError, DistributedError,
                      SamplerError, SeedError, SpsampleError)
from spsample.distributed import DistGraph, FeatureStore, Grid
from spsample.distributed._collective import agree

from _dist_helpers import (assert_all, grid_for, layouts, mpi_timeout, raised,  # noqa: F401
                           rank_cache, rmat10, rmat10_weighted, threaded, world_comm)

pytestmark = [pytest.mark.mpi, mpi_timeout(60)]


def last_rank():
    return world_comm().rank == world_comm().size - 1


def same_error_everywhere(exc, cls, *words):
    """Every rank raised ``cls`` with the same message, naming ``words``."""
    ok = isinstance(exc, cls) and all(w in str(exc) for w in words)
    messages = world_comm().allgather_object(str(exc))
    return ok and len(set(messages)) == 1


#: The job's world, and serially three threads (where the ranks really disagree).
LAYOUTS = layouts([(3, 1)])


def dist(rmat10, c):
    """The DistGraph of ``rmat10`` over this world's grid of replication ``c`` (once)."""
    cache = rank_cache()
    if ("dg", c) not in cache:
        cache[("dg", c)] = DistGraph.from_graph(rmat10, grid_for(c))
    return cache[("dg", c)]


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_replication_not_dividing_world_size(p, c):
    p = world_comm().size
    exc = raised(lambda: Grid(world_comm(), replication=p + 1))
    assert_all(same_error_everywhere(exc, DistributedError, "replication", str(p + 1)), str(exc))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_seed_out_of_range_on_one_rank(rmat10, p, c):
    dg = dist(rmat10, c)
    seeds = [dg.num_nodes + 5] if last_rank() else [1, 2]
    exc = raised(lambda: spsample.sample(dg, seeds, sampler=spsample.NodeWise([2]), batch_size=2))
    assert_all(same_error_everywhere(exc, SeedError, "seeds", str(dg.num_nodes)), str(exc))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_duplicate_seed_in_a_minibatch_on_one_rank(rmat10, p, c):
    dg = dist(rmat10, c)
    seeds = [4, 4] if last_rank() else [1, 2]
    exc = raised(lambda: spsample.sample(dg, seeds, sampler=spsample.NodeWise([2]), batch_size=2))
    assert_all(same_error_everywhere(exc, SeedError, "repeats"), str(exc))


@pytest.mark.parametrize("what", ["sampler", "seed", "fanouts", "strategy", "batch_size"])
@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_ranks_disagreeing(rmat10, what, p, c):
    dg = dist(rmat10, c)
    odd = last_rank() and world_comm().size > 1
    args = dict(sampler=spsample.NodeWise([2, 2]), batch_size=2, seed=1, strategy="push")
    if odd:
        args.update({"sampler": dict(sampler=spsample.LADIES([2, 2])),
                     "seed": dict(seed=2),
                     "fanouts": dict(sampler=spsample.NodeWise([2, 3])),
                     "strategy": dict(strategy="pull"),
                     "batch_size": dict(batch_size=3)}[what])
    exc = raised(lambda: spsample.sample(dg, [1, 2, 3], **args))
    if world_comm().size == 1:
        assert_all(exc is None)
    else:
        assert_all(same_error_everywhere(exc, DistributedError, "disagree"), str(exc))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_bad_strategy_and_unweighted_graph(rmat10, p, c):
    dg = dist(rmat10, c)
    e1 = raised(lambda: spsample.sample(dg, [1], sampler=spsample.NodeWise([2]), batch_size=1,
                                        strategy="broadcast"))
    e2 = raised(lambda: spsample.sample(dg, [1], sampler=spsample.NodeWise([2], weighted=True),
                                        batch_size=1))
    assert_all(same_error_everywhere(e1, ArgumentError, "strategy", "broadcast"), str(e1))
    assert_all(same_error_everywhere(e2, SamplerError, "weighted"), str(e2))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_missing_feature_rows_on_one_rank(p, c):
    store = FeatureStore.from_array(np.zeros((10, 2)), grid_for(c))
    exc = raised(lambda: store.fetch([3, 10] if last_rank() else [1]))
    assert_all(same_error_everywhere(exc, ArgumentError, "n_id", "10"), str(exc))
    exc = raised(lambda: store.fetch([-1] if last_rank() else [1]))
    assert_all(same_error_everywhere(exc, ArgumentError, "n_id"), str(exc))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_path_existing_on_some_ranks_only(rmat10, tmp_path, p, c):
    comm = world_comm()
    path = tmp_path / f"rank{comm.rank}.h5"
    if not last_rank() or comm.size == 1:
        spsample.save(spsample.Dataset(rmat10, features=np.zeros((rmat10.num_nodes, 1)), name="x"),
                      path)
    if comm.size == 1:
        path = tmp_path / "absent.h5"
    e1 = raised(lambda: DistGraph.load(path, grid_for(c)))
    e2 = raised(lambda: FeatureStore.load(path, grid_for(c)))
    assert_all(same_error_everywhere(e1, DatasetNotFoundError, "does not exist"), str(e1))
    assert_all(same_error_everywhere(e2, DatasetNotFoundError, "does not exist"), str(e2))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_bad_constructor_arguments(rmat10, p, c):
    e1 = raised(lambda: DistGraph.from_graph("graph", grid_for(c)))
    e2 = raised(lambda: DistGraph.from_graph(rmat10, "grid"))
    e3 = raised(lambda: DistGraph.from_graph(rmat10, grid_for(c), root=world_comm().size))
    assert_all(isinstance(e1, spsample.ArgumentTypeError) and "graph" in str(e1))
    assert_all(isinstance(e2, spsample.ArgumentTypeError) and "grid" in str(e2))
    assert_all(same_error_everywhere(e3, ArgumentError, "root"), str(e3))
    e4 = raised(lambda: DistGraph.from_graph(rmat10, grid_for(c)).owner([rmat10.num_nodes]))
    assert_all(isinstance(e4, ArgumentError) and "ids" in str(e4))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_ragged_seeds_on_one_rank(rmat10, p, c):
    dg = dist(rmat10, c)
    seeds = [[1, 2], [3]] if last_rank() else [1, 2]
    exc = raised(lambda: spsample.sample(dg, seeds, sampler=spsample.NodeWise([2]), batch_size=2))
    assert_all(same_error_everywhere(exc, ArgumentTypeError, "seeds"), str(exc))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_batch_size_beyond_int64_on_one_rank(rmat10, p, c):
    dg = dist(rmat10, c)
    batch_size = 10**30 if last_rank() else 2
    exc = raised(lambda: spsample.sample(dg, [1, 2], sampler=spsample.NodeWise([2]),
                                         batch_size=batch_size))
    if world_comm().size == 1:      # one minibatch of both seeds, as for any batch_size >= 2
        assert_all(exc is None, str(exc))
    else:
        assert_all(same_error_everywhere(exc, SpsampleError, "batch_size"), str(exc))


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_bad_file_attribute_on_one_rank(rmat10, tmp_path, p, c):
    """A file whose ``version`` attribute is not a number (read with ``int()``), on the last
    rank (each rank its own copy)."""
    path = tmp_path / f"g{world_comm().rank}.h5"
    spsample.save(spsample.Dataset(rmat10, name="g"), path)
    if last_rank():
        with h5py.File(path, "r+") as f:
            f.attrs["version"] = "one"
    exc = raised(lambda: DistGraph.load(path, grid_for(c)))
    assert_all(same_error_everywhere(exc, SpsampleError) and isinstance(exc, ValueError),
               f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("error", [ValueError("bad value"), OverflowError("too large"),
                                   KeyError("no key"), MemoryError("no memory"),
                                   UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad byte")],
                         ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_any_exception_of_a_check_fails_every_rank_with_one_typed_error(error, p, c):
    """Not only spsample's errors: the rank raising goes through the exchange too."""
    def check():
        if last_rank():
            raise error
        return "fine"
    exc = raised(lambda: agree(world_comm(), "a check", check))
    builtin = UnicodeError if isinstance(error, UnicodeError) else type(error)
    ok = same_error_everywhere(exc, DistributedError, "a check", type(error).__name__)
    ok &= isinstance(exc, builtin) and str(error).strip("'") in str(exc)
    again = pickle.loads(pickle.dumps(exc))
    ok &= type(again) is type(exc) and str(again) == str(exc)
    assert_all(ok, f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_ranks_passing_different_replication(p, c):
    p = world_comm().size
    exc = raised(lambda: Grid(world_comm(), replication=p if last_rank() else 1))
    if p == 1:
        assert_all(exc is None, str(exc))
    else:
        assert_all(same_error_everywhere(exc, DistributedError, "replication", "disagree"),
                   str(exc))


def altered(graph, change):
    """``graph`` with one entry changed; same num_nodes, num_edges and weightedness."""
    indptr, indices = graph.indptr.copy(), graph.indices.copy()
    weights = graph.weights.copy()
    rows = np.flatnonzero(np.diff(indptr) >= 2)
    row = next(r for r in rows[len(rows) // 2:]    # whose first id is not in the row above
               if indices[indptr[r]] not in indices[indptr[r - 1]:indptr[r]])
    first = indptr[row]
    if change == "weights":
        weights[first] += 1.0
    elif change == "indices":       # the row's first id replaced by one not in the row
        indices[first] = np.setdiff1d(np.arange(graph.num_nodes), indices[first:indptr[row + 1]])[0]
    else:                           # the row's first entry moved to the row above
        indptr[row] += 1
    return spsample.Graph.from_csr(indptr, indices, weights=weights)


@pytest.mark.parametrize("change", ["indptr", "indices", "weights"])
@pytest.mark.parametrize("p, c", LAYOUTS)
@threaded
def test_ranks_passing_different_graphs_of_the_same_size(rmat10_weighted, change, p, c):
    graph = rmat10_weighted
    if last_rank() and world_comm().size > 1:
        graph = altered(graph, change)
    same_sizes = (graph.num_nodes, graph.num_edges) == (rmat10_weighted.num_nodes,
                                                        rmat10_weighted.num_edges)
    exc = raised(lambda: DistGraph.from_graph(graph, grid_for(c)))
    if world_comm().size == 1:
        assert_all(exc is None, str(exc))
    else:
        same_error = same_error_everywhere(exc, DistributedError, "disagree", change)
        assert_all(same_sizes and same_error, str(exc))


def test_the_grid_still_works_after_errors(rmat10):
    """No rank was left behind in a collective by the tests above (the job's world)."""
    dg = dist(rmat10, 1)
    out = spsample.sample(dg, [1, 2], sampler=spsample.NodeWise([2]), batch_size=2)
    ref = spsample.sample(rmat10, [1, 2], sampler=spsample.NodeWise([2]), batch_size=2)
    assert_all(out[0].equals(ref[0]))
