"""node2vec's fast path in the row-wise engine (rowwise.h: select_rejection1, select.h:
rejection_rows1 and rejection_words1) against the NumPy path and the oracle, bit for bit.

A node2vec hop is the rejection rule at fanout 1 with node2vec's bias as a value program; the
fast path draws every row of the hop in rounds of many rows (draw, read the column, search row
t of the previous vertex a level at a time in the graph's fence -- every 16th column -- then one
line of the row), with the rows' first stream words computed up front
(AVX-512 where the CPU has it, else the compiler's loop). Adversarial inputs: dead ends, self-
loops, a clique (many neighbours of t: the lookup finds them) and a star (walks return to t),
previous vertices whose rows have 15, 16, 17, 31-33, 1000 and 2400 entries (searches that end
at once, at the row's last 16 entries, after one level, after many), columns at either end of
those rows; p and q that make each attempt's fast accept, the column's decision and the lookup
decide, and p = q = 1e6 (every attempt rejected: the exact phase, and words past those computed
ahead); p = q = 8 (most rows draw at a late attempt); hops of more rows than a round holds
(R-MAT); 1 and 2 threads, one bulk and minibatch by minibatch; the portable words, rounds and
fence windows (SPSAMPLE_NATIVE_SCALAR=1) in a subprocess. With AVX-512 the rounds run eight rows
per vector (rejection_rows1_avx512, fence_find_avx512); the portable rounds are their oracle.
"""

import numpy as np
import pytest

import spsample
from spsample import RandomWalk, native as _native
from spsample.engine._reference import reference_sample
from spsample.testing import BranchingWalk

from native_runs import (assert_threads_and_bulks_agree, bulk_digest, native_run as _native_run,
                         portable_run, same_minibatches as _same)

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")

N = 3000
BATCH = 128
SIZES = (15, 16, 17, 31, 32, 33, 1000, 2400)


SINKS = 300  # vertices N - SINKS .. N - 1: dead ends (rows of degree 0) that walks reach


def adversarial_graph():
    """Symmetric but for the dead ends: rows of 1-3 random entries, each with a quarter chance
    of one more into a dead end; a clique on 0..39 (with self-loops), a star around 40 (its
    leaves 41..99 point only to it), rows of SIZES entries at 100.. (every other one containing
    the extreme ids 0 and N - SINKS - 1); every other edge both ways (so the vertex a walk left
    is among the next row's columns, and a walk can return)."""
    rng = np.random.default_rng(2808)
    src, dst = [], []

    def add(u, v):
        src.extend([u, v])
        dst.extend([v, u])
    for v in range(200, N - SINKS):
        for u in rng.integers(200, N - SINKS, rng.integers(1, 4)):
            add(v, int(u))
        if rng.random() < 0.25:
            src.append(v)
            dst.append(int(rng.integers(N - SINKS, N)))
    for a in range(40):
        for b in range(a, 40):
            add(a, b)
    for leaf in range(41, 100):
        add(40, leaf)
    for i, d in enumerate(SIZES):
        v = 100 + i
        cols = rng.permutation(np.arange(200, N - SINKS))[:d - 2]
        for u in np.concatenate([cols, [0, N - SINKS - 1]] if i % 2 == 0 else [cols, [1, 2]]):
            add(v, int(u))
    a = np.unique(np.stack([src, dst], 1), axis=0)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(a[:, 0], minlength=N))])
    return spsample.Graph.from_csr(indptr, a[:, 1])


def seeds():
    """Minibatches of distinct seeds: the clique, the star, its leaves and the long rows in the
    first (repeated as the second); random vertices in the others."""
    rng = np.random.default_rng(2809)
    first = np.concatenate([np.arange(0, 100, 3), np.arange(100, 100 + len(SIZES))])
    rest = rng.permutation(np.setdiff1d(np.arange(N), first))
    first = np.concatenate([first, rest[:BATCH - first.size]])
    batches = [first, first.copy()] + [rng.permutation(N)[:BATCH] for _ in range(3)]
    return np.concatenate(batches)


# (p, q): return / in-out weights 1/p, 1/q against the bound max(1, 1/p, 1/q)
WALKS = [RandomWalk(20, p=0.5, q=2.0), RandomWalk(12, p=4.0, q=0.25), RandomWalk(10, p=1.0, q=0.5),
         RandomWalk(10, p=2.0, q=1.0), RandomWalk(10, p=0.25, q=4.0), RandomWalk(4, p=1e6, q=1e6)]


def test_inputs_are_adversarial():
    g = adversarial_graph()
    deg = np.diff(g.indptr)
    assert np.all(deg[N - SINKS:] == 0) and np.all(deg[:100 + len(SIZES)] > 0)
    assert np.isin(np.arange(N - SINKS, N), g.indices).mean() > 0.5
    assert [int(deg[100 + i]) for i in range(len(SIZES))] == list(SIZES)
    assert all(v in g.indices[g.indptr[v]:g.indptr[v + 1]] for v in range(40))
    assert np.array_equal(g.indices[g.indptr[41]:g.indptr[42]], [40])


@needs_native
@pytest.mark.parametrize("sampler", WALKS, ids=repr)
def test_node2vec_equals_numpy_and_oracle(sampler):
    g = adversarial_graph()
    s = seeds()[:BATCH] if sampler.p > 1e3 else seeds()  # every step exact: slow in the oracle
    kw = dict(sampler=sampler, batch_size=BATCH, seed=29, epoch=1)
    fast = _native_run(g, s, **kw)
    with _native.disabled():
        slow = spsample.sample(g, s, **kw)
    assert _same(fast, slow), "native != NumPy path"
    assert _same(fast, reference_sample(g, s, **kw)), "native != reference oracle"


@needs_native
def test_walks_return_and_find_neighbours():
    """In the first minibatch some steps return to the previous vertex, some go to one of its
    neighbours (the clique) and some elsewhere: each of node2vec's three values is drawn."""
    g = adversarial_graph()
    mb = _native_run(g, seeds()[:BATCH], sampler=WALKS[0], batch_size=BATCH, seed=3)[0]
    rows = [set(g.indices[g.indptr[v]:g.indptr[v + 1]].tolist()) for v in range(N)]
    back = near = far = 0
    for (d0, s0), (d1, s1) in zip(mb.edges[:-1], mb.edges[1:]):
        prev = dict(zip(mb.n_id[s0].tolist(), mb.n_id[d0].tolist()))
        for v, x in zip(mb.n_id[d1].tolist(), mb.n_id[s1].tolist()):
            t = prev.get(v)
            if t is None:
                continue
            back += x == t
            near += x != t and x in rows[t]
            far += x != t and x not in rows[t]
    assert min(back, near, far) > 0, (back, near, far)


@needs_native
@pytest.mark.parametrize("sampler", [WALKS[0], WALKS[1]], ids=repr)
def test_rmat_threads_and_bulks_agree(sampler):
    """R-MAT 12 (hops of up to 1024 rows: more than a round's 512), the same bits at 1 and 2
    threads, in one bulk and minibatch by minibatch, and the NumPy path's."""
    g = spsample.rmat(12, seed=3)
    s = np.random.default_rng(5).permutation(g.num_nodes)[:2048]
    assert_threads_and_bulks_agree(g, s, sampler=sampler, batch_size=1024, seed=4)


@needs_native
@pytest.mark.parametrize("walk", [BranchingWalk(4, p=0.5, q=2.0), BranchingWalk(3, p=4.0, q=0.25)],
                         ids=repr)
def test_rejection_rows_of_fanout_two_equal_numpy(walk):
    """The rejection rule at fanout 2 reads its rows' first words drawn ahead (and prefetches
    their first draws' columns): a regression test, those words went undrawn (stale reads, a
    crash) after the alias rule's prefetch took their place in select_rows_pass."""
    g = adversarial_graph()
    kw = dict(sampler=walk, batch_size=BATCH, seed=31)
    fast = _native_run(g, seeds(), **kw)
    with _native.disabled():
        slow = spsample.sample(g, seeds(), **kw)
    assert _same(fast, slow), "native != NumPy path"
    r = spsample.rmat(12, seed=3)
    s = np.random.default_rng(6).permutation(r.num_nodes)[:1024]
    assert_threads_and_bulks_agree(r, s, sampler=walk, batch_size=256, seed=7)


# p = q = 8 against the bound 1: an attempt is accepted at once with chance 1/8, so most rows
# make many attempts, past the words computed ahead (4 attempts with AVX-512, 8 without).
LATE = RandomWalk(8, p=8.0, q=8.0)


@needs_native
def test_late_attempts_equal_numpy():
    """Rows that draw their position at attempt 4 or later (their words computed in the round,
    not ahead), on the adversarial graph and on R-MAT 12 (hops of 1024 rows; rounds that keep
    most of their rows), against the NumPy path."""
    for g, s, b in ((adversarial_graph(), seeds(), BATCH),
                    (spsample.rmat(12, seed=3), np.random.default_rng(6).permutation(4096)[:2048],
                     1024)):
        kw = dict(sampler=LATE, batch_size=b, seed=37, epoch=3)
        fast = _native_run(g, s, **kw)
        with _native.disabled():
            assert _same(fast, spsample.sample(g, s, **kw))


_SCALAR_RUN = """
import numpy as np, spsample
from native_runs import bulk_digest
from test_node2vec_speedpaths import adversarial_graph, seeds, WALKS, LATE
g = adversarial_graph()
print(" ".join(bulk_digest(spsample.sample(g, seeds(), sampler=w, batch_size=128, seed=29))
               for w in WALKS[:2] + WALKS[-1:] + [LATE]))
"""


@needs_native
def test_generic_words_equal_vector_words():
    """The portable words and rounds (SPSAMPLE_NATIVE_SCALAR=1, a fresh process: the compiler's
    word loop, 16 words ahead, rejection_rows1_generic): the same walks as this process's
    kernels (with AVX-512, rejection_rows1_avx512 and 8 words ahead)."""
    g = adversarial_graph()
    here = " ".join(bulk_digest(_native_run(g, seeds(), sampler=w, batch_size=BATCH, seed=29))
                    for w in WALKS[:2] + WALKS[-1:] + [LATE])
    assert " ".join(portable_run(_SCALAR_RUN)) == here


# ---- the fence (select.h: fence_find; Graph.column_fence)

def test_column_fence_is_every_16th_column_from_a_line():
    g = adversarial_graph()
    cols = g.indices32()
    fence, phase = g.column_fence()
    assert g.column_fence()[0] is fence  # built once
    assert 0 <= phase < 16 and (cols.ctypes.data + 4 * phase) % 64 == 0
    assert fence.dtype == np.uint32 and np.array_equal(fence, cols[phase::16])
    assert not fence.flags.writeable


@pytest.mark.parametrize("offset", range(0, 20, 3))
def test_column_fence_of_any_columns(offset):
    """Columns without a memo (built per call): the phase follows their address."""
    cols = np.arange(1000, dtype=np.uint32)[offset:]
    fence, phase = _native.column_fence(object(), cols)
    assert (cols.ctypes.data + 4 * phase) % 64 == 0 and np.array_equal(fence, cols[phase::16])
    tiny = cols[:2]
    fence, phase = _native.column_fence(object(), tiny)
    assert phase <= 2 and np.array_equal(fence, tiny[phase::16])


@needs_native
def test_node2vec_hops_carry_the_fence():
    """The lowered plan hands the kernel the fence of the graph its hops look rows up in (and
    no fence to a plain walk), so the fast path runs."""
    from spsample.engine._run import lower_sampler
    g = adversarial_graph()
    for sampler, want in ((WALKS[0], True), (RandomWalk(5), False)):
        spec = lower_sampler(sampler, g, np.arange(2), 0, 0).spec
        fence = spec["graphs"][0][4]
        assert (fence is not None) == want
        if want:
            assert fence[0] is g.column_fence()[0] and fence[1] == g.column_fence()[1]


def test_the_gpu_lowering_carries_no_fence():
    """The GPU's lowering (``host_tables=False``) leaves out the tables only the CPU kernel
    reads: no fence is built or handed over for it."""
    from spsample.engine._lowering import lower
    from spsample.engine._run import trace
    g = adversarial_graph()
    plans = trace(WALKS[0], g, np.arange(2), 0, 0)
    assert all(arrays[4] is None for arrays in lower(plans, g, 2, host_tables=False).spec["graphs"])
    assert lower(plans, g, 2).spec["graphs"][0][4] is not None


@needs_native
@pytest.mark.parametrize("sampler", [WALKS[0], WALKS[4]], ids=repr)
def test_every_fence_phase(sampler):
    """The fence from each of the 16 possible first columns (the phase follows the columns'
    address, so one run sees one): windows before a row's first fence entry, rows without
    any, rows whose last block is short; the same walks as the NumPy path every time."""
    g = adversarial_graph()
    s = seeds()
    kw = dict(sampler=sampler, batch_size=BATCH, seed=31, epoch=2)
    with _native.disabled():
        slow = spsample.sample(g, s, **kw)
    cols = g.indices32()
    for phase in range(16):
        g._cache["column_fence"] = (np.ascontiguousarray(cols[phase::16]), phase)
        assert _same(_native_run(g, s, **kw), slow), f"phase {phase}"


@needs_native
def test_a_fence_that_is_not_the_columns_is_refused():
    g = adversarial_graph()
    fence, phase = g.column_fence()
    for bad in ((fence[:-1].copy(), phase), (fence + np.uint32(1), phase),
                (fence, 16), (fence, (phase + 1) % 16)):
        g._cache["column_fence"] = bad
        with pytest.raises(ValueError, match="fence"):
            _native_run(g, seeds()[:BATCH], sampler=WALKS[0], batch_size=BATCH, seed=1)


_SCALAR_PHASES = """
from test_node2vec_speedpaths import test_every_fence_phase, WALKS
for w in (WALKS[0], WALKS[4]):
    test_every_fence_phase(w)
print("ok")
"""


@needs_native
def test_generic_fence_windows_every_phase():
    """fence_find's windows without AVX-512 (SPSAMPLE_NATIVE_SCALAR=1, a fresh process: the
    loops instead of the masked loads), every phase, against the NumPy path."""
    assert portable_run(_SCALAR_PHASES) == ["ok"]
