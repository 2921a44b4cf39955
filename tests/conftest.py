"""Shared fixtures. Graphs are drawn in ASCII so a reader sees them."""

from pathlib import Path

import numpy as np
import pytest

import spsample
from graphs import random_graph  # noqa: F401  (re-exported for fixtures)

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


