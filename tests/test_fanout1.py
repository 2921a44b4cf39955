"""The row-wise engine's fast path for uniform hops at fanout 1 (walks, node-wise fanout 1,
users' samplers with fanout-1 hops) against the NumPy path and the oracle, bit for bit.

Adversarial rows: dead ends (rows of degree 0, also in the middle of a hop's frontier), degree 1,
self-loops, repeated columns, rows of 64 / 65 / 1024 / 1025 entries (Floyd's register, bitmap
and list branches of the general rule), a hub; walks that revisit vertices (short cycles);
seeds repeated across minibatches; hops shorter and longer than the gather lag (64 edges); 1 and
2 threads, one bulk and minibatch by minibatch.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import spsample
from spsample import NodeWise, RandomWalk, native as _native
from spsample.engine._reference import reference_sample

from native_runs import (assert_threads_and_bulks_agree, native_run as _native_run,
                         same_minibatches as _same)

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")

_SPEC = importlib.util.spec_from_file_location(
    "random_walk", Path(__file__).resolve().parents[1] / "experiments" / "random_walk.py")
user_walks = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(user_walks)

N = 2000
BATCH = 100


def adversarial_graph():
    """Rows of 0-3 distinct entries (a quarter empty: dead ends), every 10th non-empty row with a
    self-loop, every 89th row 64, 65, 1024 or 1025 entries, one of 1999; a 5-cycle 0..4 whose
    vertices only point along it (walks from it revisit every vertex four times in 20 steps)."""
    rng = np.random.default_rng(280)
    deg = rng.integers(0, 4, N)
    deg[7::89], deg[8::89], deg[9::89], deg[10::89] = 64, 65, 1024, 1025
    deg[5] = N - 1
    deg[:5] = 1
    rows = [np.sort(rng.permutation(N)[:d]) for d in deg]
    for v in range(5):
        rows[v] = np.array([(v + 1) % 5])
    for v in range(20, N, 10):
        if deg[v] > 0 and v not in rows[v]:
            rows[v] = np.sort(np.concatenate([rows[v][1:], [v]]))
    indptr = np.concatenate([[0], np.cumsum(deg)])
    return spsample.Graph.from_csr(indptr, np.concatenate(rows))


def seeds():
    """Minibatches of 100 distinct seeds, the cycle and the hub in the first, repeated as the
    second; vertices repeated across the others."""
    rng = np.random.default_rng(281)
    batches = [rng.permutation(N)[:BATCH] for _ in range(5)]
    others = np.setdiff1d(batches[0], np.arange(6))[:BATCH - 6]
    batches[0] = np.concatenate([np.arange(6), rng.permutation(others)])
    batches[1] = batches[0].copy()
    return np.concatenate(batches)


SAMPLERS = [RandomWalk(20), RandomWalk(1), user_walks.RandomWalk(12), NodeWise([1, 1, 1]),
            NodeWise([1, 1], replace=True), NodeWise([1, 3, 1]), NodeWise([2, 1])]


def test_inputs_are_adversarial():
    """Dead ends inside frontiers, self-loops, the cycle, and rows on both sides of Floyd's
    branches are present among the seeds' walks."""
    g = adversarial_graph()
    deg = np.diff(g.indptr)
    assert (deg == 0).mean() > 0.2 and {1, 64, 65, 1024, 1025} <= set(deg.tolist())
    assert all(v in g.indices[g.indptr[v]:g.indptr[v + 1]] for v in range(20, N, 10) if deg[v])
    assert g.indices[g.indptr[:5]].tolist() == [1, 2, 3, 4, 0]


@needs_native
@pytest.mark.parametrize("sampler", SAMPLERS, ids=repr)
def test_fanout1_equals_numpy_and_oracle(sampler):
    g = adversarial_graph()
    kw = dict(sampler=sampler, batch_size=BATCH, seed=13, epoch=2)
    fast = _native_run(g, seeds(), **kw)
    with _native.disabled():
        slow = spsample.sample(g, seeds(), **kw)
    assert _same(fast, slow), "native != NumPy path"
    assert _same(fast, reference_sample(g, seeds(), **kw)), "native != reference oracle"


@needs_native
def test_walks_revisit_and_stop():
    """The first minibatch's walks from the cycle revisit its vertices; some walks stop at a
    dead end before step 20 (their later hops have fewer edges than the first)."""
    g = adversarial_graph()
    mb = _native_run(g, seeds()[:BATCH], sampler=RandomWalk(20), batch_size=BATCH, seed=1)[0]
    visits = [int(mb.n_id[src][mb.n_id[dst] == 0].size) for dst, src in mb.edges]
    assert min(visits) >= 1                       # the 5 walks on the cycle: one at 0 each step
    assert len(mb.edges[-1][0]) < len(mb.edges[0][0]) < BATCH


@needs_native
@pytest.mark.parametrize("sampler", [RandomWalk(20), NodeWise([1, 1, 1])], ids=repr)
def test_rmat_threads_and_bulks_agree(sampler):
    """R-MAT 12 (hops of 256 rows, longer than the gather lag): the same bits at 1 and 2
    threads, in one bulk and minibatch by minibatch, and the NumPy path's."""
    g = spsample.rmat(12, seed=3)
    s = np.random.default_rng(5).permutation(g.num_nodes)[:1024]
    assert_threads_and_bulks_agree(g, s, sampler=sampler, batch_size=256, seed=4)
