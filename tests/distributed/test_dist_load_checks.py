"""``DistGraph.load`` validates the rows each rank reads, as ``spsample.load`` validates the
whole graph: a corrupt or crafted file gives the same typed error on every rank (never a
crash, a hang, or rows silently cut short), and a file with unsorted rows loads canonically.

Rank 0 writes the file, every rank reads it. The damage sits in the last rows, which only the
last process row reads, unless the whole file is affected."""

import numpy as np
import pytest

import spsample
from spsample import DatasetError
from spsample.distributed import DistGraph

from _dist_helpers import (assert_all, grid_for, layouts, mpi_timeout, raised,  # noqa: F401
                           replace_dataset, spread, threaded, world_comm, write_shared)

pytestmark = [pytest.mark.mpi, mpi_timeout(60)]

N = 40


def ring_graph():
    r"""Row v aggregates from v + 1, v + 2 and v + 5 (mod 40), weight 1 + v / 100.

        v <- v+1, v+2, v+5        120 edges, every row of length 3
    """
    v = np.arange(N)
    src = np.concatenate([(v + 1) % N, (v + 2) % N, (v + 5) % N])
    dst = np.concatenate([v, v, v])
    w = 1.0 + dst / 100.0
    return spsample.Graph.from_edge_index(src, dst, num_nodes=N, weights=w)


def shared_file(tmp_path, name, mutate=None):
    """Rank 0 writes a valid file (uncompressed, so that ``mutate(h5py_file)`` can rewrite
    single entries in place); every rank gets its path."""
    return write_shared(tmp_path, name, lambda: spsample.Dataset(ring_graph(), name="ring"),
                        mutate)


def set_entry(name, position, value):
    def mutate(f):
        f[name][position] = value
    return mutate


def set_indptr_tail(f):
    """The last row pointer points past the end of /graph/indices."""
    indptr = f["graph/indptr"][()]
    indptr[-1] += 7
    replace_dataset(f, "graph/indptr", indptr)


def indptr_drops(f):
    """indptr[N - 1] exceeds indptr[N]: the last row has a negative length."""
    f["graph/indptr"][N - 1] = f["graph/indptr"][N] + 2


def indptr_not_from_zero(f):
    indptr = f["graph/indptr"][()]
    indptr[0] = 1
    replace_dataset(f, "graph/indptr", indptr)


def float_indices(f):
    replace_dataset(f, "graph/indices", f["graph/indices"][()] + 0.5)


def float_indptr(f):
    replace_dataset(f, "graph/indptr", f["graph/indptr"][()].astype(np.float64))


def two_dimensional_indices(f):
    replace_dataset(f, "graph/indices", f["graph/indices"][()].reshape(-1, 3))


def short_weights(f):
    replace_dataset(f, "graph/weights", f["graph/weights"][:-1])


def string_weights(f):
    replace_dataset(f, "graph/weights", np.array([b"x"] * f["graph/weights"].shape[0]))


def huge_declared_indices(f):
    """2**31 column ids declared (16 GiB), one chunk of them stored: a file of a few KiB."""
    del f["graph/indices"]
    d = f.create_dataset("graph/indices", shape=(2**31,), dtype=np.int64, chunks=(1024,),
                         compression="gzip")
    d[:1024] = 1
    indptr = f["graph/indptr"][()]
    indptr[-1] = 2**31
    replace_dataset(f, "graph/indptr", indptr)


def huge_declared_indptr(f):
    """2**31 row pointers declared with no stored data (reading them would take 16 GiB)."""
    del f["graph/indptr"]
    f.create_dataset("graph/indptr", shape=(2**31,), dtype=np.int64, chunks=(4096,),
                     compression="gzip")


def bad_num_nodes_attribute(f):
    f.attrs["num_nodes"] = N + 1


def text_num_nodes_attribute(f):
    f.attrs["num_nodes"] = "forty"


def indices_is_a_group(f):
    del f["graph/indices"]
    f.create_group("graph/indices")


LAST = 3 * (N - 1) + 2          # the last entry of the last row (row N - 1)
DAMAGE = {
    # name: (mutation, words the message must hold)
    "index-too-large": (set_entry("graph/indices", LAST, N + 5), ["indices", str(N + 5)]),
    "index-huge": (set_entry("graph/indices", LAST, 2 * 10**9), ["indices", str(2 * 10**9)]),
    "index-negative": (set_entry("graph/indices", LAST, -10**6), ["indices", "negative"]),
    "indptr-drops": (indptr_drops, ["indptr", "non-decreasing"]),
    "indptr-past-indices": (set_indptr_tail, ["indptr", "indices"]),
    "indptr-not-from-zero": (indptr_not_from_zero, ["indptr", "start at 0"]),
    "float-indices": (float_indices, ["indices", "integer"]),
    "float-indptr": (float_indptr, ["indptr", "integer"]),
    "2d-indices": (two_dimensional_indices, ["indices", "1-dimensional"]),
    "short-weights": (short_weights, ["weights", "one value per"]),
    "string-weights": (string_weights, ["weights", "real numbers"]),
    "negative-weight": (set_entry("graph/weights", LAST, -1.0), ["weights", "non-negative"]),
    "nan-weight": (set_entry("graph/weights", LAST, np.nan), ["weights", "finite"]),
    "huge-declared-indices": (huge_declared_indices, ["indices", "2147483648", "stores"]),
    "huge-declared-indptr": (huge_declared_indptr, ["indptr", "2147483648", "stores"]),
    "num-nodes-attribute": (bad_num_nodes_attribute, ["num_nodes", str(N + 1)]),
    "num-nodes-text": (text_num_nodes_attribute, ["num_nodes", "forty"]),
    "indices-group": (indices_is_a_group, ["indices"]),
}


@pytest.mark.parametrize("damage, replicate, p, c",
                         spread([(d, r) for d in sorted(DAMAGE) for r in (False, True)],
                                per_case=1, every=2, pool=[(3, 1), (4, 2), (2, 1)]))
@threaded
def test_damaged_file_fails_on_every_rank(tmp_path, damage, replicate, p, c):
    mutate, words = DAMAGE[damage]
    path = shared_file(tmp_path, "damaged.h5", mutate)
    exc = raised(lambda: DistGraph.load(path, grid_for(c), replicate_graph=replicate))
    messages = world_comm().allgather_object(str(exc))
    ok = isinstance(exc, DatasetError) and all(w in str(exc) for w in words + [str(path)])
    assert_all(ok and len(set(messages)) == 1, f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("p, c", layouts([(3, 1), (8, 1)]))
@threaded
def test_damage_only_one_rank_reads_is_reported_by_it(tmp_path, p, c):
    """The bad id sits in the last block: every rank names the last rank."""
    path = shared_file(tmp_path, "damaged.h5", DAMAGE["index-too-large"][0])
    grid = grid_for(c)
    exc = raised(lambda: DistGraph.load(path, grid))
    # the first rank of the last process row (every rank when c = p) reads the damage first
    first = (grid.num_rows - 1) * grid.replication      # process row of rank r: r // c
    assert_all(isinstance(exc, DatasetError) and (grid.size == 1 or f"rank {first}" in str(exc)),
               str(exc))


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2)]))
@threaded
def test_unsorted_rows_with_duplicates_load_like_spsample_load(tmp_path, p, c):
    """Rows written unsorted with a repeated entry are sorted and merged on every rank as
    ``spsample.load`` does, so sampling gives the single-process minibatches."""
    def unsort(f):
        indices, weights = f["graph/indices"][()], f["graph/weights"][()]
        indices[0:3] = indices[2::-1]            # row 0 reversed
        weights[0:3] = weights[2::-1]
        indices[3 * (N - 1) + 1] = indices[3 * (N - 1)]      # row N - 1 repeats an entry
        replace_dataset(f, "graph/indices", indices)
        replace_dataset(f, "graph/weights", weights)
    path = shared_file(tmp_path, "unsorted.h5", unsort)
    graph = spsample.load(path).graph
    dg = DistGraph.load(path, grid_for(c))
    lo, hi = dg.lo, dg.hi
    start, stop = graph.indptr[lo], graph.indptr[hi]
    ok = np.array_equal(dg.indptr, graph.indptr[lo:hi + 1] - start)
    ok &= np.array_equal(dg.indices, graph.indices[start:stop])
    ok &= dg.weights.tobytes() == graph.weights[start:stop].tobytes()
    ok &= dg.num_edges == graph.num_edges == 3 * N - 1
    sampler = spsample.NodeWise([3, 2], weighted=True)
    seeds = [0, N - 1, 7]
    out = spsample.sample(dg, seeds, sampler=sampler, batch_size=2)    # every rank the same
    ref = spsample.sample(graph, seeds, sampler=sampler, batch_size=2)
    ok &= all(a.equals(b) for a, b in zip(out, ref)) and len(out) == len(ref)
    assert_all(ok)


@pytest.mark.parametrize("p, c", layouts([(3, 1)]))
@threaded
def test_valid_file_still_loads_every_row_once(tmp_path, p, c):
    path = shared_file(tmp_path, "ok.h5")
    dg = DistGraph.load(path, grid_for(c))
    rows = world_comm().allgather_object((dg.lo, dg.hi, dg.indices.size))
    c = dg.grid.replication                          # each row is held by c replicas
    ok = sum(hi - lo for lo, hi, _ in rows) == c * N and sum(e for _, _, e in rows) == 3 * c * N
    ok &= dg.num_edges == 3 * N and dg.num_nodes == N
    assert_all(ok, rows)


def test_block_arrays_cannot_be_made_writeable(tmp_path):
    """Native kernels read a DistGraph's blocks: no one may flip them writeable."""
    from spsample.distributed import DistGraph, Grid
    g = spsample.rmat(6, seed=1)
    dg = DistGraph.from_graph(g, Grid())
    for arr in (dg.indptr, dg.indices):
        with pytest.raises(ValueError):
            arr.flags.writeable = True
