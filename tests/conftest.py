"""Shared fixtures. Graphs are drawn in ASCII so a reader sees them."""

from pathlib import Path

import numpy as np
import pytest

import spsample

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture
def shared_datasets():
    """``../shared/datasets`` beside the checkout; skips where it is absent (a user's clone)."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip("../shared/datasets is not beside this checkout")
    return SHARED_DATASETS


@pytest.fixture
def star_graph():
    r"""Vertex 0 aggregates from 1..5; 1 aggregates from 0 and 2; 6 is isolated.

          2   3
           \ /
      1 --- 0 --- 4        row 0 = [1, 2, 3, 4, 5]
            |              row 1 = [0, 2]
            5     6        rows 2..6 = []
    """
    src = [1, 2, 3, 4, 5, 0, 2]
    dst = [0, 0, 0, 0, 0, 1, 1]
    return spsample.Graph.from_edge_index(src, dst, num_nodes=7)


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
