"""Synthetic graphs for tests and benchmarks."""

import numpy as np

from ._graph import Graph
from .._validate import as_int

__all__ = ["rmat"]


def rmat(scale, edge_factor=16, *, a=0.57, b=0.19, c=0.19, seed=0, symmetrize=True):
    """An R-MAT graph with Graph500 parameters (Chakrabarti et al., SDM 2004).

    Parameters
    ----------
    scale : int
        ``n = 2**scale`` vertices.
    edge_factor : int
        ``edge_factor * n`` edges are drawn (before symmetrisation and merging duplicates).
    a, b, c : float
        Quadrant probabilities (``d = 1 - a - b - c``).
    seed : int
    symmetrize : bool
        Add reverse edges (an undirected graph). Self-loops are dropped.

    Returns
    -------
    Graph, unweighted, with vertex ids randomly permuted (so degree is not correlated with id).
    """
    scale = as_int("rmat", "scale", scale, minimum=1)
    edge_factor = as_int("rmat", "edge_factor", edge_factor, minimum=1)
    n, m = 1 << scale, edge_factor << scale
    rng = np.random.default_rng(seed)
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    ab, abc = a + b, a + b + c
    for bit in range(scale):
        r = rng.random(m)
        src |= ((r >= ab).astype(np.int64)) << bit
        dst |= (((r >= a) & (r < ab)) | (r >= abc)).astype(np.int64) << bit
    perm = rng.permutation(n)
    src, dst = perm[src], perm[dst]
    keep = src != dst
    return Graph.from_edge_index(src[keep], dst[keep], num_nodes=n, symmetrize=symmetrize)
