"""The per-core kernels of issue 28 against the NumPy path and the oracle, bit for bit, on
adversarial rows: empty rows, degree == fanout and fanout + 1, degrees 1024 / 1025 around the
bitmap limit, huge degrees (hubs), seeds repeated across minibatches.

Covers the row-wise engine's deferred gather of the sampled columns (read GATHER_LAG edges after
their entry was selected: hops shorter and longer than the lag) and LABOR's per-hop table of
column words (taken when a hop's rows longer than their fanout hold >= 2 n entries: the inputs
below have minibatches on both sides of that line, asserted by test_inputs_cover_both_paths).
LABOR hops without the table compute many short rows' words in one call (the short-rows tests).
"""

import numpy as np
import pytest

import spsample
from spsample import LABOR, NodeWise, native as _native
from spsample.engine._reference import reference_sample

from native_runs import assert_threads_and_bulks_agree, native_run, same_minibatches as _same

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")

N = 3000
BATCH = 64


def adversarial_graph():
    """Rows of 0-3 entries, with every 97th row of 15, 16, 1024 or 1025 entries, and two hubs
    (50000 and 20000 entries, repeated columns)."""
    rng = np.random.default_rng(28)
    deg = rng.integers(0, 4, N)
    deg[::97], deg[1::97], deg[2::97], deg[3::97] = 1024, 1025, 15, 16
    deg[4], deg[5] = 50_000, 20_000
    indptr = np.concatenate([[0], np.cumsum(deg)])
    indices = rng.integers(0, N, int(indptr[-1]))
    return spsample.Graph.from_csr(indptr, indices)


def seeds():
    """Minibatches of 64 distinct seeds, vertices repeated across minibatches, hubs in some."""
    rng = np.random.default_rng(29)
    batches = [rng.permutation(N)[:BATCH] for _ in range(6)]
    others = np.setdiff1d(batches[0], [4, 5])[:BATCH - 2]
    batches[0] = np.concatenate([[4, 5], rng.permutation(others)])   # both hubs
    batches[1] = batches[0].copy()                        # the same seeds again
    return np.concatenate(batches)


def test_inputs_cover_both_paths():
    """Hop 1 of some minibatches reads >= 2 n entries of rows longer than the fanout (the word
    table), of others fewer (words per row)."""
    g, s, fanout = adversarial_graph(), seeds(), 15
    deg = np.diff(g.indptr)
    long_entries = [int(np.where(deg[b] > fanout, deg[b], 0).sum())
                    for b in s.reshape(-1, BATCH)]
    assert max(long_entries) >= 2 * N and min(long_entries) < 2 * N


@needs_native
@pytest.mark.parametrize("sampler", [LABOR([15, 10, 5]), LABOR([1, 1024]), LABOR([1025, 3]),
                                     LABOR([-1, 2]), NodeWise([15, 10, 5]), NodeWise([1024, 2]),
                                     NodeWise([1025, 3]), NodeWise([2, 2], replace=True),
                                     NodeWise([-1, 1])], ids=repr)
def test_adversarial_rows_equal_numpy_and_oracle(sampler):
    g = adversarial_graph()
    kw = dict(sampler=sampler, batch_size=BATCH, seed=11, epoch=1)
    previous = _native.set_enabled(True)
    try:
        fast = spsample.sample(g, seeds(), **kw)
    finally:
        _native.set_enabled(previous)
    assert fast.path == "native"
    with _native.disabled():
        slow = spsample.sample(g, seeds(), **kw)
    assert _same(fast, slow), "native != NumPy path"
    assert _same(fast, reference_sample(g, seeds(), **kw)), "native != reference oracle"


@needs_native
@pytest.mark.parametrize("sampler", [LABOR([5, 5]), NodeWise([5, 5])], ids=repr)
def test_rmat_threads_and_bulks_agree(sampler):
    """R-MAT 12: LABOR hops past 2 n entries per minibatch, node-wise hops far longer than the
    gather lag; the same bits at 1 and 2 threads, in one bulk or minibatch by minibatch."""
    g = spsample.rmat(12, seed=3)
    s = np.random.default_rng(5).permutation(g.num_nodes)[:1024]
    assert_threads_and_bulks_agree(g, s, sampler=sampler, batch_size=128, seed=4)


@needs_native
def test_word_table_limit_is_threshold_keeps():
    """A kept entry of a row with the word table has word < threshold_limit(d, s); LABOR's rule
    is word * d < s * 2**32. The two agree at the limit and one below it, for degrees around
    powers of two, 1024 / 1025, primes and 2**32 - 1, and every fanout below some of them."""
    from spsample import _native_kernels as K
    cases = [(d, s) for d in (2, 3, 7, 1023, 1024, 1025, 65537, 2**31 - 1, 2**32 - 1)
             for s in {0, 1, 2, d // 3, d // 2, d - 2, d - 1} if 0 <= s < d]
    cases += [(d, s) for d in range(2, 70) for s in range(d)]
    for d, s in cases:
        limit = K.threshold_limit(d, s)
        assert 0 <= limit < 2**32, (d, s, limit)
        for word in (limit - 1, limit):
            if 0 <= word < 2**32:
                assert (word < limit) == (word * d < s << 32), (d, s, word, limit)


# LABOR without the word table computes the words of rows of at most 256 entries 64 rows (at
# most 2048 entries) at a time; longer rows compute their own. The graph below has rows of
# 0-40 entries with every 13th row of 255, 256 or 257 entries, so a batch ends at the row
# limit, at the entry limit (in the middle of a block of rows) and beside rows left to the
# per-row path, and the frontiers are longer than 64 rows.
SHORT_N = 6000


def short_rows_graph():
    rng = np.random.default_rng(281)
    deg = rng.integers(0, 41, SHORT_N)
    deg[::13], deg[5::13], deg[9::13] = 255, 256, 257
    deg[7::97] = rng.integers(2000, 2100, len(deg[7::97]))   # rows of many batches' entries
    indptr = np.concatenate([[0], np.cumsum(deg)])
    indices = rng.integers(0, SHORT_N, int(indptr[-1]))
    return spsample.Graph.from_csr(indptr, indices)


def short_seeds():
    """Minibatches of 64 seeds, vertices repeated across minibatches, one minibatch twice."""
    rng = np.random.default_rng(282)
    batches = [rng.permutation(SHORT_N)[:BATCH] for _ in range(3)]
    batches[2] = batches[0].copy()
    return np.concatenate(batches)


def test_short_rows_inputs_take_the_batched_words():
    """Hop 1 reads fewer than 2 n entries of rows longer than the fanout (no word table), and
    more than 2048 of rows of at most 256 entries (several batches per hop)."""
    g, s = short_rows_graph(), short_seeds()
    deg = np.diff(g.indptr)
    for b in s.reshape(-1, BATCH):
        long_rows = deg[b][deg[b] > 15]
        assert long_rows.sum() < 2 * SHORT_N
        assert long_rows[long_rows <= 256].sum() > 2048


@needs_native
@pytest.mark.parametrize("sampler,threads,oracle",
                         [(LABOR([15, 4]), 1, True), (LABOR([15, 4]), 2, False),
                          (LABOR([1, 1]), 1, False), (LABOR([255, 2]), 1, False),
                          (LABOR([256, 40]), 1, False), (LABOR([257, 3]), 1, False)],
                         ids=repr)
def test_short_rows_equal_numpy_and_oracle(sampler, threads, oracle):
    g, s = short_rows_graph(), short_seeds()
    kw = dict(sampler=sampler, batch_size=BATCH, seed=2**40 + 7, epoch=3)
    fast = native_run(g, s, threads, **kw)
    with _native.disabled():
        slow = spsample.sample(g, s, **kw)
    assert _same(fast, slow), "native != NumPy path"
    if oracle:
        assert _same(fast, reference_sample(g, s, **kw)), "native != reference oracle"
