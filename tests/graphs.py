"""Graph builders shared by the test modules (importable as ``graphs``; fixtures live in
conftest)."""

import numpy as np

import spsample


def random_graph(n, m, *, seed=0, weighted=False, zero_weight_fraction=0.0, self_loops=True):
    """A random directed multigraph (merged into a canonical Graph)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if not self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    w = None
    if weighted:
        w = rng.random(src.size) + 0.01
        w[rng.random(src.size) < zero_weight_fraction] = 0.0
    return spsample.Graph.from_edge_index(src, dst, num_nodes=n, weights=w)
