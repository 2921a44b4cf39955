"""The cost model's byte formulas (spsample.distributed._plan) against the bytes the
implementation's collectives count, summed over the ranks: push, pull and the feature fetch for
node-wise, LABOR and LADIES at every replication factor below the world size (at c = p nothing
moves)."""

import numpy as np
import pytest

import spsample
from spsample.distributed._plan import Workload, feature_bytes, sampling_bytes
from spsample.distributed import DistGraph, FeatureStore

from _dist_helpers import (assert_all, grid_for, job_layouts, launched_under_mpi, mpi_timeout,
                           threaded, world_comm)

pytestmark = [pytest.mark.mpi, mpi_timeout(180)]

BATCH, MINIBATCHES, WIDTH = 128, 16, 16
SAMPLERS = {"nodewise": lambda: spsample.NodeWise([10, 5]),
            "labor": lambda: spsample.LABOR([10, 5]),
            "ladies": lambda: spsample.LADIES([128, 128])}
# push of node-wise and LABOR: ids out and back (+ small headers); LADIES's draws are counted
# as s per layer though the requester draws until s distinct columns came up (more)
PUSH_TOLERANCE = {"nodewise": 0.10, "labor": 0.10, "ladies": 0.25}


def _sent(grid):
    st = grid.stats()
    return sum(st.get(kind, {"sent": 0})["sent"] for kind in ("alltoallv", "alltoall"))


@pytest.fixture(scope="module")
def graph():
    return spsample.rmat(12, seed=3)


def _layouts():
    """The job's c < p, and serially a few thread layouts (MINIBATCHES divisible by p)."""
    job = [(p, c) for p, c in job_layouts() if c < world_comm().size]
    return job if launched_under_mpi() else job + [(2, 1), (4, 2), (8, 1)]


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("p, c", _layouts())
@threaded
def test_predicted_bytes_match_counted(graph, name, p, c):
    comm, grid = world_comm(), grid_for(c)
    dg = DistGraph.from_graph(graph, grid)
    store = FeatureStore.from_array(np.ones((graph.num_nodes, WIDTH), np.float32), grid)
    seeds = np.random.default_rng(2).permutation(graph.num_nodes)[:MINIBATCHES * BATCH]
    per = MINIBATCHES // comm.size
    mine = seeds[comm.rank * per * BATCH:(comm.rank + 1) * per * BATCH]
    reference = spsample.sample(graph, seeds, sampler=SAMPLERS[name](), batch_size=BATCH)
    w = Workload.from_bulk(graph, SAMPLERS[name](), reference, name=name, batch_size=BATCH,
                           feature_dim=WIDTH)
    ratios = {}
    for strategy in ("push", "pull"):
        grid.reset_stats()
        out = spsample.sample(dg, mine, sampler=SAMPLERS[name](), batch_size=BATCH,
                              batch_offset=comm.rank * per, strategy=strategy)
        sampled = _sent(grid)
        grid.reset_stats()
        store.fetch(out.n_id)
        counted = comm.allreduce(np.array([sampled, _sent(grid)], dtype=np.int64))
        predicted = comm.size * np.array([sampling_bytes(w, comm.size, c, per, strategy),
                                          feature_bytes(w, comm.size, c, per)])
        ratios[strategy] = counted / predicted
    ok = (abs(ratios["push"][0] - 1) <= PUSH_TOLERANCE[name]
          and abs(ratios["pull"][0] - 1) <= 0.05 and abs(ratios["push"][1] - 1) <= 0.05)
    assert_all(ok, ratios)
