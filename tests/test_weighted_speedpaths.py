"""The weighted rule's one-pass screen (native/select.h: screen_levels, weighted_row_screened)
against the NumPy oracle, bit for bit, on weights where the first threshold fails.

A row's words are computed once; one vectorised pass over its words and weights counts the keys
surely below tau 2**k for k < 8 and keeps the positions whose key may be below tau; when fewer
than s keys are sure at tau, the next pass runs at the first level whose count reached s (or at
tau 2**8), over the same words. Rows with exactly s candidates take them without computing a
key. Skewed weights (R-MAT rows weighted 1 / (1 + degree of the column): a few heavy entries
among many light ones) make the first threshold fail on most long rows; weights spread over
more than 2**8 take more than one jump. Both the AVX-512 pass and the portable one
(``SPSAMPLE_NATIVE_SCALAR=1``) are checked.
"""

import numpy as np
import pytest

import spsample
from spsample import native as _native

from native_runs import portable_run

pytestmark = pytest.mark.skipif(not _native.AVAILABLE,
                                reason=f"native kernels not built: {_native.IMPORT_ERROR}")


def _skewed_graph(scale=12):
    g = spsample.rmat(scale, seed=3)
    degree = np.diff(g.indptr)
    return spsample.Graph.from_csr(g.indptr, g.indices, weights=1.0 / (1.0 + degree[g.indices]))


def _spread_graph():
    """Rows of 0 .. 700 entries whose weights are one heavy entry and light ones 2**-12 to
    2**-30 below it (the threshold climbs past the eight levels of one pass), and rows of equal
    weights (about s + sqrt(s) + 1 candidates, often exactly s)."""
    rng = np.random.default_rng(8)
    n = 500
    degrees = rng.integers(0, 700, n)
    degrees[::7] = rng.integers(1, 40, degrees[::7].size)
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    indices = rng.integers(0, n, indptr[-1]).astype(np.int64)
    w = 2.0 ** -rng.integers(12, 31, indptr[-1]).astype(np.float64)
    w[indptr[:-1][degrees > 0]] = 1.0
    rows = np.repeat(np.arange(n), degrees)
    equal = rows % 5 == 1
    w[equal] = 0.25
    return spsample.Graph.from_csr(indptr, indices, weights=w)


def _assert_native_equals_numpy(graph, sampler, seeds, batch_size=64):
    fast = spsample.sample(graph, seeds, sampler=sampler, batch_size=batch_size, seed=41)
    with _native.disabled():
        slow = spsample.sample(graph, seeds, sampler=sampler, batch_size=batch_size, seed=41)
    assert fast.path == "native" and slow.path != "native"
    np.testing.assert_array_equal(fast.n_id, slow.n_id)
    for a, b in zip(fast.hops, slow.hops):
        for name in ("dst", "src", "edge_id"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("fanouts", [[15, 10, 5], [1, 3], [40, 2]])
def test_skewed_weights_equal_numpy(fanouts, threads):
    g = _skewed_graph()
    seeds = np.random.default_rng(2).choice(g.num_nodes, 512, replace=False)
    before = _native.get_num_threads()
    _native.set_num_threads(threads)
    try:
        _assert_native_equals_numpy(g, spsample.NodeWise(fanouts, weighted=True), seeds)
    finally:
        _native.set_num_threads(before)


@pytest.mark.parametrize("fanouts", [[5, 5], [16, 1], [60]])
def test_spread_weights_equal_numpy(fanouts):
    g = _spread_graph()
    seeds = np.arange(g.num_nodes)
    _assert_native_equals_numpy(g, spsample.NodeWise(fanouts, weighted=True), seeds, batch_size=100)


def test_portable_screen_gives_the_same_bits():
    """SPSAMPLE_NATIVE_SCALAR=1: the compiler-vectorised flags and the portable Philox words."""
    code = ("import test_weighted_speedpaths as t; import numpy as np, spsample\n"
            "for g, f in ((t._skewed_graph(11), [15, 10, 5]), (t._spread_graph(), [5, 5])):\n"
            "    t._assert_native_equals_numpy(g, spsample.NodeWise(f, weighted=True), "
            "np.arange(min(g.num_nodes, 400)))\n"
            "print('ok')")
    assert portable_run(code) == ["ok"]
