"""A sampler written against the public protocol gets bulk execution and determinism for free."""

import importlib.util
from pathlib import Path

import numpy as np

import spsample

from graphs import random_graph

_SPEC = importlib.util.spec_from_file_location(
    "random_walk", Path(__file__).resolve().parents[2] / "experiments" / "random_walk.py")
random_walk = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(random_walk)


def test_random_walk_follows_edges_and_is_k_invariant():
    g = random_graph(100, 800, seed=4)
    A = g.to_scipy()
    seeds = np.random.default_rng(0).permutation(100)[:40]
    rw = random_walk.RandomWalk(5)
    whole = spsample.sample(g, seeds, sampler=rw, batch_size=10, seed=3)
    split = (spsample.sample(g, seeds[:20], sampler=rw, batch_size=10, seed=3)
             + spsample.sample(g, seeds[20:], sampler=rw, batch_size=10, seed=3, batch_offset=2))
    assert all(a.equals(b) for a, b in zip(whole, split))
    for mb in whole:
        position = mb.seeds[g.degree()[mb.seeds] > 0]
        for dst, src in mb.edges:
            gd, gs = mb.n_id[dst], mb.n_id[src]
            assert np.all(A[gd, gs] != 0)
            # walks continue from where they stand
            assert np.array_equal(np.sort(gd), np.sort(position))
            position = gs[g.degree()[gs] > 0]


def test_walks_meeting_at_a_vertex_move_independently():
    r"""Seeds 0 and 1 both step to hub 2 (their only neighbour); 2 has neighbours 3..52.
    Keyed by vertex the two walks would always take the same second step; keyed by walk
    index they coincide with probability 1/50."""
    src = [2, 2] + list(range(3, 53))
    dst = [0, 1] + [2] * 50
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=53)
    same = 0
    walks = random_walk.RandomWalk(2)
    for mb in spsample.sample(g, np.tile([0, 1], 200), sampler=walks, batch_size=2):
        dst2, src2 = mb.edges[1]
        assert mb.n_id[dst2].tolist() == [2, 2]
        same += int(src2[0] == src2[1])
    assert same < 20
