"""The weighted rule on float32 copies of the weights (``Graph.screen_weights``; native/select.h:
screen_levels32, kept_at_level, exact_smallest32) against the NumPy oracle, bit for bit.

A graph whose positive weights all lie in ``SCREEN32_W_RANGE`` keeps float32 copies; the CPU
kernel screens long rows on them (half the bytes of the float64 weights), takes the candidates
of a higher threshold from the levels its one pass wrote, and ranks the candidates by keys
computed from the copies. Those keys are within ``1 -+ 2**-23`` of the exact ones, so the
copies decide only where the ``s``-th and ``(s + 1)``-th smallest are further apart than the
rule's margin; at near ties the float64 weights decide. The rows below are built from the
bulk's own stream words so that every key of a row is the same number, or the same up to the
last bits of the float64 weights: the copies cannot order them, and a kernel that trusted them
there would keep the wrong entries.
"""

import numpy as np
import pytest

import spsample
from spsample import _rng, native as _native
from spsample.engine._lowering import lower
from spsample.engine._run import trace
from spsample.graph._graph import frozen_array
from spsample.graph._weights import SCREEN32_W_RANGE, screen_weights

from native_runs import portable_run
from test_weighted_speedpaths import (_assert_native_equals_numpy as _assert_bulks_equal,
                                      _skewed_graph)

pytestmark = pytest.mark.skipif(not _native.AVAILABLE,
                                reason=f"native kernels not built: {_native.IMPORT_ERROR}")

SEED = 2024


# ------------------------------------------------------------------------------ the copies
def test_copies_are_the_weights_in_float32():
    w = np.array([0.3, 0.0, -1.0, np.nan, 2.0**-30, 2.0**30, 1e-3])
    out = screen_weights(w)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, w.astype(np.float32))


@pytest.mark.parametrize("bad", [2.0**-31, 2.0**31, np.inf, 1e-300])
def test_no_copies_when_a_positive_weight_is_out_of_range(bad):
    assert screen_weights(np.array([1.0, bad, 0.5])) is None
    lo, hi = SCREEN32_W_RANGE
    assert not lo <= bad <= hi


def test_graph_memoises_frozen_copies():
    g = spsample.rmat(8, seed=1)
    assert g.screen_weights() is None                    # unweighted
    gw = spsample.Graph.from_csr(g.indptr, g.indices, weights=np.full(g.num_edges, 0.5))
    x = gw.screen_weights()
    assert x is gw.screen_weights() and not x.flags.writeable
    np.testing.assert_array_equal(x, np.float32(0.5))


def _weighted_hop(graph, host_tables):
    sampler = spsample.NodeWise([3], weighted=True)
    plans = trace(sampler, graph, np.arange(1), 0, 0)
    return lower(plans, graph, 1, host_tables=host_tables).spec["hops"][0]


def test_only_the_cpu_lowering_hands_over_the_copies():
    g = _equal_key_row(40)[0]
    cpu, gpu = _weighted_hop(g, True), _weighted_hop(g, False)
    assert cpu["screen_weights"] is g.screen_weights()
    assert "screen_weights" not in gpu


# ------------------------------------------------------------------------------ the rows
def _row_words(d, fanout_seed=SEED):
    """The stream words of vertex 0's row at hop 1 of minibatch 0, epoch 0 (a bulk's first)."""
    return _rng.stream_words(np.arange(d, dtype=np.uint64), np.uint64(0), _rng.hop_word(0, 1),
                             np.uint64(0), _rng.split_seed(fanout_seed))


def _equal_key_row(d, key=2.0**-4, jitter=None):
    """A graph whose vertex 0 has d entries, each of key exactly ``key`` (``w = nl / key``,
    exact for a power of two), or, with ``jitter`` (d,), of key ``key / (1 + jitter)``."""
    nl = _rng.neg_log(_rng.open_unit(_row_words(d)))
    w = nl / key
    if jitter is not None:
        w = w * (1.0 + jitter)
    indptr = np.array([0, d] + [d] * d, dtype=np.int64)
    indices = np.arange(1, d + 1, dtype=np.int64)
    g = spsample.Graph.from_csr(indptr, indices, weights=w)
    assert g.screen_weights() is not None
    return g, w


def _sample(graph, fanout, native=True):
    sampler = spsample.NodeWise([fanout], weighted=True)
    if native:
        return spsample.sample(graph, np.array([0]), sampler=sampler, batch_size=1, seed=SEED)
    with _native.disabled():
        return spsample.sample(graph, np.array([0]), sampler=sampler, batch_size=1, seed=SEED)


def _assert_native_equals_numpy(graph, fanout):
    fast, slow = _sample(graph, fanout), _sample(graph, fanout, native=False)
    assert fast.path == "native" and slow.path != "native"
    np.testing.assert_array_equal(fast.hops[0].edge_id, slow.hops[0].edge_id)
    return fast.hops[0].edge_id


# d = 16 at s = 7 takes every entry's key unscreened; d = 60 is screened, every entry a
# candidate (at most 64: the pairwise ranks); d = 300 has more candidates than ranks take.
@pytest.mark.parametrize("d,fanout", [(16, 7), (60, 7), (60, 1), (60, 30), (300, 7)])
def test_equal_keys_are_decided_by_the_float64_weights(d, fanout):
    """Every key is the same double, so the oracle keeps the first ``fanout`` positions; the
    float32 copies' keys differ in their last bits and would order the row at random."""
    g, _ = _equal_key_row(d)
    kept = _assert_native_equals_numpy(g, fanout)
    np.testing.assert_array_equal(kept, np.arange(fanout))


@pytest.mark.parametrize("d,fanout", [(16, 7), (60, 7), (60, 59)])
def test_keys_apart_only_in_float64_are_ordered_by_float64(d, fanout):
    """Keys ``key / (1 + j 2**-40)``: strictly decreasing in float64, equal once the weights are
    rounded to float32; the oracle keeps the last ``fanout`` positions."""
    g, _ = _equal_key_row(d, jitter=np.arange(d) * 2.0**-40)
    kept = _assert_native_equals_numpy(g, fanout)
    np.testing.assert_array_equal(kept, np.arange(d - fanout, d))


def test_the_kernel_reads_the_copies():
    """Copies that are not the weights (the first and last right, which is all the decoder
    checks) change the sample: the kernel ranked by them. Copies growing along the row make
    the last entries' keys the smallest, where the true keys are all equal."""
    g, w = _equal_key_row(60)
    fake = (w * (1.0 + np.arange(60) * 2.0**-12)).astype(np.float32)
    fake[0], fake[-1] = np.float32(w[0]), np.float32(w[-1])
    g._cache["screen_weights"] = frozen_array(fake)
    kept = _sample(g, 7).hops[0].edge_id
    assert not np.array_equal(kept, np.arange(7))


def test_copies_that_are_not_the_weights_are_refused():
    for change in (0, -1):
        g, w = _equal_key_row(40)
        bad = w.astype(np.float32)
        bad[change] *= np.float32(2.0)
        g._cache["screen_weights"] = frozen_array(bad)
        with pytest.raises(ValueError, match="screen_weights"):
            _sample(g, 5)


# ------------------------------------------------------------------------------ whole graphs
@pytest.mark.parametrize("copies", [True, False])
@pytest.mark.parametrize("fanouts", [[10, 5], [25, 2]])
def test_skewed_graph_with_and_without_copies(copies, fanouts):
    """R-MAT rows weighted 1 / (1 + column degree): the first threshold fails on most long rows,
    so the candidates come from the levels of the one pass (copies) or from a second pass
    (float64 weights, the copies withheld)."""
    g = _skewed_graph()
    if not copies:
        g._cache["screen_weights"] = None
    assert (g.screen_weights() is not None) == copies
    seeds = np.random.default_rng(3).choice(g.num_nodes, 256, replace=False)
    _assert_bulks_equal(g, spsample.NodeWise(fanouts, weighted=True), seeds)


_PORTABLE = """
import test_weighted_float32 as t
for d, f in ((16, 7), (60, 7), (300, 7)):
    t.test_equal_keys_are_decided_by_the_float64_weights(d, f)
t.test_keys_apart_only_in_float64_are_ordered_by_float64(60, 7)
t.test_skewed_graph_with_and_without_copies(True, [10, 5])
print("ok")
"""


def test_portable_kernels_give_the_same_bits():
    """The same rows with SPSAMPLE_NATIVE_SCALAR=1 (the float32 screen's portable loop, which
    counts every level in one pass and screens again instead of reading levels)."""
    assert portable_run(_PORTABLE) == ["ok"]
