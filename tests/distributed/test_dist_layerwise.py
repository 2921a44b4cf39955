"""Layer-wise push (LADIES, FastGCN with ``strategy="push"``) == the single-process call, bit for
bit: issue 25's reproducer (which found the second hop short of edges at p = 4 and 8), small
graphs that isolate each defect found, and bounded random trials over p, c, fanouts, batch
sizes and batch offsets.

Serially on worlds of threads (p = 2 ... 8); under ``mpiexec`` the reproducer runs on the
job's ranks (p = 2, 4)."""

import numpy as np
import pytest

import spsample
from spsample.distributed import DistGraph, run_threads

from _dist_helpers import (assert_all, distributed_modes, grid_for, launched_under_mpi,
                           mpi_timeout, threaded, world_comm)

pytestmark = [pytest.mark.mpi, mpi_timeout(300)]

serial_only = pytest.mark.skipif(launched_under_mpi(), reason="threads of one process: serial")
LAYERWISE = {"ladies": lambda: spsample.LADIES([64, 64]),
             "fastgcn": lambda: spsample.FastGCN([64, 64])}


def issue_cells(p):
    """Issue 25's graphs and seeds per rank: four R-MAT graphs with 64 seeds per rank up to
    p = 4, ``rmat(12, seed=3)`` with 32 seeds per rank at p = 8."""
    if p >= 8:
        return [(12, 3)], 32
    return [(10, 1), (11, 2), (12, 3), (13, 4)], 64


@pytest.mark.parametrize("p, c", [(None, 1)] if launched_under_mpi() else [(4, 1), (8, 1)])
@threaded
def test_issue_25_reproducer(p, c):
    """On each rank the seeds ``default_rng(t).permutation(n)[:m p][m rank:m (rank + 1)]``,
    ``batch_size=16``, ``batch_offset=(m / 16) rank``, ``seed=t``, ``epoch=1``, t in {0, 1, 2};
    each rank's push bulk must equal ``spsample.sample(graph, ...)`` of the same arguments.
    Before the fix, 16 of 96 cells differed at p = 4 and every rank's at p = 8."""
    comm, grid = world_comm(), grid_for(c)
    cells, m = issue_cells(comm.size)
    bad = []
    for scale, s in cells:
        graph = spsample.rmat(scale, seed=s)
        dg = DistGraph.from_graph(graph, grid)
        for t in range(3):
            seeds = np.random.default_rng(t).permutation(graph.num_nodes)[:m * comm.size]
            mine = seeds[m * comm.rank:m * (comm.rank + 1)]
            args = dict(batch_size=16, batch_offset=(m // 16) * comm.rank, seed=t, epoch=1)
            for name, make in LAYERWISE.items():
                out = spsample.sample(dg, mine, sampler=make(), strategy="push", **args)
                ref = spsample.sample(graph, mine, sampler=make(), **args)
                if not distributed_modes(dg, ["push", "push"]):
                    bad.append((scale, t, name, dg.last_stats["modes"]))
                elif len(out) != len(ref) or not all(a.equals(b) for a, b in zip(out, ref)):
                    bad.append((scale, t, name, [mb.num_sampled_edges for mb in out],
                                [mb.num_sampled_edges for mb in ref]))
    assert_all(not bad, bad[:3])


@serial_only
@pytest.mark.parametrize("p", [2, 4])
def test_owner_reached_first_at_the_second_layer_gets_every_member(p):
    r"""The second layer's rows include vertices owned by a process row that held no row of the
    minibatch at the first layer; its entries into the first layer's vertices (seeds
    included) are edges of the layer too. Before the fix such an owner was sent only the
    vertices new at the second layer, and the layer lost those edges (fewer edges, same
    ``n_id``: the bug of issue 25).

    Eight vertices, p process rows of 8 / p; the seed 0's row lists 7 (the last process row);
    7's row lists 0 and 6::

        0 <- 7          row 0 = [7]
        7 <- 0, 6       row 7 = [0, 6]
    """
    graph = spsample.Graph.from_edge_index([7, 0, 6], [0, 7, 7], num_nodes=8)

    def body(comm):
        dg = DistGraph.from_graph(graph, grid_for_comm(comm))
        out = spsample.sample(dg, [0] if comm.rank == 0 else [], sampler=make(),
                              batch_size=1, strategy="push")
        return out, dg.last_stats["modes"]
    for make in (lambda: spsample.LADIES([4, 4]), lambda: spsample.FastGCN([4, 4])):
        ref = spsample.sample(graph, [0], sampler=make(), batch_size=1)
        (out, modes), *_ = run_threads(p, body)
        assert modes == ["push", "push"]
        assert ref[0].num_sampled_edges[1] >= 2          # 7 <- 0 is an edge of layer 2
        assert out[0].equals(ref[0]), (out[0].num_sampled_edges, ref[0].num_sampled_edges)


@serial_only
@pytest.mark.parametrize("seed", range(4))
def test_owner_without_new_rows_still_reports_its_columns(seed):
    r"""At the second layer every process row holding rows of the minibatch must report its
    distinct columns, new rows or not: before the fix only the owners of new rows reported,
    and when their columns were few enough to be all chosen, the other owners' columns were
    missing from the chosen set (fewer vertices).

    Two process rows (vertices 0-3 and 4-7); one minibatch of seeds 0 and 4; LADIES draws one
    vertex at layer 1 (of 1, 2, 3, 5), then takes every candidate at layer 2 (at most 10)::

        0 <- 1, 2, 3        row 0 = [1, 2, 3]
        4 <- 5              row 4 = [5]
    """
    graph = spsample.Graph.from_edge_index([1, 2, 3, 5], [0, 0, 0, 4], num_nodes=8)
    make = lambda: spsample.LADIES([1, 10])           # noqa: E731

    def body(comm):
        dg = DistGraph.from_graph(graph, grid_for_comm(comm))
        return spsample.sample(dg, [0, 4] if comm.rank == 0 else [], sampler=make(),
                               batch_size=2, seed=seed, strategy="push")
    ref = spsample.sample(graph, [0, 4], sampler=make(), batch_size=2, seed=seed)
    out = run_threads(2, body)[0]
    assert sorted(ref[0].n_id.tolist()) == [0, 1, 2, 3, 4, 5]
    assert out[0].equals(ref[0]), (out[0].n_id, ref[0].n_id)


@serial_only
@pytest.mark.parametrize("p, c", [(2, 1), (3, 1), (4, 2)])
def test_ranks_sampling_the_same_minibatch_ids(p, c):
    """Every rank may sample the same minibatch ids (e.g. each evaluating the same seeds):
    each gets one process's minibatches. The owners kept their per-minibatch state by
    minibatch id alone, so two requesters' rows were mixed (an IndexError, an abort under
    MPI)."""
    graph = spsample.rmat(10, seed=1)
    seeds = np.random.default_rng(0).permutation(graph.num_nodes)[:32]

    def body(comm, make):
        dg = DistGraph.from_graph(graph, grid_for_comm(comm, c))
        out = spsample.sample(dg, seeds, sampler=make(), batch_size=16, strategy="push")
        return out, dg.last_stats["modes"]
    for make in LAYERWISE.values():
        ref = spsample.sample(graph, seeds, sampler=make(), batch_size=16)
        for out, modes in run_threads(p, body, make):
            assert modes == ["push", "push"]
            assert len(out) == 2 and all(a.equals(b) for a, b in zip(out, ref))


def random_trial(trial):
    """A small random graph (self-loops, repeats, isolated vertices), world, fanouts and seeds
    per rank (some ranks none; sometimes every rank the same minibatch ids)."""
    rng = np.random.default_rng([25, trial])
    n = int(rng.integers(8, 120))
    m = int(rng.integers(n, 6 * n))
    graph = spsample.Graph.from_edge_index(rng.integers(0, n, m), rng.integers(0, n, m),
                                           num_nodes=n, weights=None)
    p = int(rng.choice([2, 3, 4, 8]))
    c = int(rng.choice([d for d in range(1, p) if p % d == 0]))
    batch = int(rng.integers(1, 6))
    per_rank = [int(rng.integers(0, 3)) for _ in range(p)]
    seeds = [rng.permutation(n)[:min(n, k * batch)] for k in per_rank]
    same_ids = rng.random() < 0.25
    offsets = [0] * p if same_ids else list(np.cumsum([0] + per_rank[:-1]))
    fanouts = [int(rng.choice([-1, 1, 2, 3, 8])), int(rng.integers(1, 40))]
    return graph, p, c, batch, seeds, offsets, fanouts, int(rng.integers(0, 100))


@serial_only
@pytest.mark.parametrize("trial", range(10))
def test_random_trials(trial):
    graph, p, c, batch, seeds, offsets, fanouts, seed = random_trial(trial)
    makers = {"ladies": lambda: spsample.LADIES(fanouts)}
    if min(fanouts) > 0:
        makers["fastgcn"] = lambda: spsample.FastGCN(fanouts)

    def body(comm, make):
        dg = DistGraph.from_graph(graph, grid_for_comm(comm, c))
        return spsample.sample(dg, seeds[comm.rank], sampler=make(), batch_size=batch,
                               batch_offset=offsets[comm.rank], seed=seed, strategy="push")
    for name, make in makers.items():
        outs = run_threads(p, body, make)
        for rank, out in enumerate(outs):
            ref = spsample.sample(graph, seeds[rank], sampler=make(), batch_size=batch,
                                  batch_offset=offsets[rank], seed=seed) if seeds[rank].size \
                else []
            same = len(out) == len(ref) and all(a.equals(b) for a, b in zip(out, ref))
            assert same, (trial, name, p, c, rank, fanouts)


def grid_for_comm(comm, c=1):
    from spsample.distributed import Grid
    return Grid(comm, replication=c)
