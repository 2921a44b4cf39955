"""Integer (nanosecond) times on a sharded ``DistHeteroGraph`` stay exact (issue 27, item 1):
the owners (push) and the ranks that fetch rows (pull) cut rows at int64 times 1 ns apart,
above 2**53 where float64 would merge them, exactly as one process does, with the native
kernels on and off, from memory and from a file; no sampled entry is later than its seed."""

import contextlib

import numpy as np
import pytest

import spsample
from spsample import io, native as _native
from spsample.distributed import DistHeteroGraph

from _dist_helpers import (CITES, HAS, IN, WRITES, WRITTEN_BY, assert_all, grid_for, matches,
                           mpi_timeout, sample_share, valid_replications, write_shared)

pytestmark = [pytest.mark.mpi, mpi_timeout(120)]

COUNTS = {"author": 24, "paper": 60, "term": 10}
BATCH = 4
BASE = 2**61 + 1                  # nanoseconds, far beyond float64's 2**53


def ns_graph():
    """Random authors, papers and terms; every relation's edges 0 .. 39 ns after ``BASE``
    (ties within rows; float64 would see a single time)."""
    rng = np.random.default_rng(31)
    a, p = rng.integers(0, 24, 200), rng.integers(0, 60, 200)
    c1, c2 = rng.integers(0, 60, 300), rng.integers(0, 60, 300)
    pt, t = rng.integers(0, 60, 120), rng.integers(0, 10, 120)
    edges = {WRITES: (a, p), WRITTEN_BY: (p, a), CITES: (c1, c2), HAS: (pt, t), IN: (t, pt)}
    stamp = {rel: BASE + rng.integers(0, 40, src.size) for rel, (src, _) in edges.items()}
    return spsample.HeteroGraph.from_edge_index(edges, num_nodes=COUNTS, edge_time=stamp)


GRAPH = ns_graph()
rng = np.random.default_rng(9)
SEEDS = rng.permutation(COUNTS["paper"])[:26]
TIMES = BASE + rng.integers(0, 44, SEEDS.size)
SAMPLERS = {"uniform": lambda: spsample.NodeWise([3, 2]),
            "last": lambda: spsample.NodeWise([3, 2], temporal_strategy="last")}


def _paths():
    return [contextlib.nullcontext, _native.disabled] if _native.AVAILABLE else \
        [_native.disabled]


def _no_future(graph, out, b0):
    ok = True
    for j, mb in enumerate(out):
        seed_time = TIMES[(b0 + j) * BATCH:(b0 + j + 1) * BATCH]
        for rel, hops in mb.edges.items():
            t = graph.edge_time(rel)
            for (dst, _), eid in zip(hops, mb.edge_ids[rel]):
                ok &= bool(np.all(t[eid] <= seed_time[mb.batch[rel[2]][dst]]))
    return ok


@pytest.mark.parametrize("c", valid_replications())
@pytest.mark.parametrize("source", ["memory", "file"])
def test_nanosecond_times_equal_one_process(tmp_path, source, c):
    graph = GRAPH
    if source == "file":
        path = write_shared(tmp_path, "ns.h5", lambda: io.HeteroDataset(GRAPH, name="ns"))
        graph = spsample.load(path).graph
        dg = DistHeteroGraph.load(path, grid_for(c))
    else:
        dg = DistHeteroGraph.from_graph(GRAPH, grid_for(c))
    ok = graph.edge_time(CITES).dtype == np.int64 and graph == GRAPH
    for name, make in SAMPLERS.items():
        ref = spsample.sample(graph, ("paper", SEEDS), sampler=make(), batch_size=BATCH,
                              seed=5, epoch=2, seed_time=TIMES)
        ok &= _no_future(graph, ref, 0)
        for path_ctx in _paths():
            with path_ctx():
                for strategy in ("push", "pull"):
                    out, b0, b1 = sample_share(dg, SEEDS, BATCH, make, strategy,
                                               node_type="paper", seed_time=TIMES, seed=5,
                                               epoch=2)
                    ok &= matches(out, ref, b0, b1) and _no_future(graph, out, b0)
    assert_all(ok, (source, c))
