"""Fixtures of the distributed suite (helpers and the collective-assertion rules live in
``_dist_helpers.py``)."""

import numpy as np
import pytest

import spsample
from _dist_helpers import world_comm


@pytest.fixture(scope="session")
def comm():
    return world_comm()


@pytest.fixture(scope="session")
def rmat10():
    """R-MAT scale 10 (1024 vertices, directed: rows are not symmetric), the same on every rank."""
    return spsample.rmat(10, seed=11, symmetrize=False)


@pytest.fixture(scope="session")
def rmat10_weighted(rmat10):
    w = np.random.default_rng(5).random(rmat10.num_edges) + 0.05
    w[::17] = 0.0   # zero-weight entries are never drawn
    return spsample.Graph.from_csr(rmat10.indptr, rmat10.indices, weights=w)
