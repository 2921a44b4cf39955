"""LABOR's vector paths against the portable code, the NumPy path and the oracle, bit for bit.

* The hand-written AVX-512 column words (``column_words_avx512``: LABOR's word tables and short
  rows, LADIES' candidates, the walks' row words) equal word 0 of Philox block (0, u, hw, bid).
* The AVX-512 scan of a row through the hop's word table (``table_keeps_avx512``: 16 entries per
  step, the last d % 16 by the scalar loop) keeps the positions the scalar scan keeps: rows of
  lengths on both sides of every multiple of 16 that matters, hubs whose columns reach n - 1,
  hops that take the table (asserted), run with the vector code and with
  ``SPSAMPLE_NATIVE_SCALAR=1`` (the portable code) in a child process.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import spsample
from spsample import LABOR, native as _native
from spsample.engine._reference import reference_sample

from native_runs import bulk_digest, native_run

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")

N = 2000
BATCH = 50
LENGTHS = [0, 1, 3, 15, 16, 17, 31, 32, 33, 47, 48, 49, 255, 256, 257, 271, 1000]
SAMPLERS = {"15-10": LABOR([15, 10]), "1-16": LABOR([1, 16]), "16-256": LABOR([16, 256]),
            "255-3": LABOR([255, 3])}


def speedpath_graph():
    """Rows cycling through LENGTHS, and two hubs (30000 and 12000 entries) whose columns
    include the last vertex; columns drawn from all of [0, N)."""
    rng = np.random.default_rng(2028)
    deg = np.array([LENGTHS[v % len(LENGTHS)] for v in range(N)])
    deg[7], deg[8] = 30_000, 12_000
    indptr = np.concatenate([[0], np.cumsum(deg)])
    indices = rng.integers(0, N, int(indptr[-1]))
    indices[indptr[7]:indptr[7] + 40] = N - 1
    return spsample.Graph.from_csr(indptr, indices)


def speedpath_seeds():
    """Minibatches of BATCH distinct seeds; the first two hold both hubs, the second repeats
    the first."""
    rng = np.random.default_rng(2029)
    batches = [rng.permutation(N)[:BATCH] for _ in range(5)]
    others = np.setdiff1d(batches[0], [7, 8])[:BATCH - 2]
    batches[0] = np.concatenate([[7, 8], rng.permutation(others)])
    batches[1] = batches[0].copy()
    return np.concatenate(batches)


# (seed, u, s, d, p): under `seed` at epoch 1, column u's hop-1 word in minibatch 0 equals the
# limit ceil(s 2**32 / d) of a row of d entries at fanout s (so u is not kept there: LABOR keeps
# an entry when word * d < s 2**32); u is put at position p of the row: in the 16-lane steps
# (p = 17) and in the last d % 16 entries (p = 1080 of 1083). Checked by _is_tie.
TIES = [(7, 155, 283, 1336, 17), (10, 1922, 14, 1083, 1080)]


def _is_tie(seed, u, s, d):
    from spsample import _rng

    w = int(_rng.stream_words(np.zeros(1, np.int64), np.array([u], np.int64), _rng.hop_word(1, 1),
                              np.zeros(1, np.int64), _rng.split_seed(seed))[0])
    return w == -(-(s << 32) // d)


def tie_graph(u, d, p, n=2000):
    """Vertex 0's row: d distinct sorted columns, u at position p; vertices 1 .. 5 rows of 1500
    entries; the others rows of 0-3 entries."""
    rng = np.random.default_rng(7)
    row0 = np.concatenate([rng.choice(u, p, replace=False), [u],
                           u + 1 + rng.choice(n - 1 - u, d - 1 - p, replace=False)])
    rows = [np.sort(row0)] + [np.sort(rng.choice(n, 1500, replace=False)) for _ in range(5)]
    rows += [np.sort(rng.choice(n, k, replace=False)) for k in rng.integers(0, 4, n - 6)]
    indptr = np.concatenate([[0], np.cumsum([r.size for r in rows])])
    return spsample.Graph.from_csr(indptr, np.concatenate(rows).astype(np.int64))


def _native_digests():
    """{sampler name: digest} of the native bulks on the speed-path inputs (1 thread)."""
    _native.set_num_threads(1)
    g, s = speedpath_graph(), speedpath_seeds()
    out = {}
    for name, sampler in SAMPLERS.items():
        bulk = spsample.sample(g, s, sampler=sampler, batch_size=BATCH, seed=5, epoch=2)
        assert bulk.path == "native"
        out[name] = bulk_digest(bulk)
    return out


def _cpu_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def test_inputs_take_the_word_table():
    """Hop 1 of every minibatch reads >= 2 n entries of rows longer than the fanout (the word
    table) at fanouts 1, 15, 16 and 255, and rows of every length in LENGTHS are long."""
    g, s = speedpath_graph(), speedpath_seeds()
    deg = np.diff(g.indptr)
    for fanout in (1, 15, 16, 255):
        long_entries = [int(np.where(deg[b] > fanout, deg[b], 0).sum())
                        for b in s.reshape(-1, BATCH)]
        assert min(long_entries[:2]) >= 2 * N, fanout
    assert max(np.asarray(g.indices)) == N - 1


@needs_native
@pytest.mark.parametrize("path", ["avx512", "auto"])
def test_column_words_avx512_match_python_philox(path):
    """The AVX-512 column words (and what the kernel picks) are word 0 of stream (u, hw, bid)
    for several hop words, batch ids and keys (the rounds' constant parts depend on all three),
    and for every length around the 16-lane steps."""
    from spsample import _rng

    rng = np.random.default_rng(4)
    cases = [(0x0102, 77, 2**40 + 17), (0, 0, 0), (2**32 - 1, 2**32 - 1, 2**64 - 1)]
    cases += [tuple(int(x) for x in rng.integers(0, 2**32, size=2, dtype=np.uint64)) + (int(s),)
              for s in rng.integers(0, 2**63, size=3, dtype=np.uint64)]
    for size in list(range(0, 40)) + [1003]:
        u = rng.integers(0, 2**32 - 1, size=size, dtype=np.uint64).astype(np.uint32)
        for hw, bid, seed in cases:
            key = _rng.split_seed(seed)
            try:
                words = _native.kernels.column_words(u, hw, bid, int(key[0]), int(key[1]), path)
            except Exception as exc:  # the hook refuses "avx512" where the CPU has none
                if path == "avx512" and "AVX-512" in str(exc):
                    pytest.skip(str(exc))
                raise
            expected = _rng.stream_words(np.zeros(size, np.int64), u.astype(np.int64), hw,
                                         np.full(size, bid, np.int64), key)
            assert words.dtype == np.uint32 and np.array_equal(words, expected), (size, hw, bid)


@needs_native
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_table_scan_equals_numpy_and_oracle(name):
    """The kernel's own path (the AVX-512 scan where the CPU has it) = the NumPy path = the
    reference oracle, on rows of every length in LENGTHS, at 1 and 2 threads."""
    g, s, sampler = speedpath_graph(), speedpath_seeds(), SAMPLERS[name]
    kw = dict(sampler=sampler, batch_size=BATCH, seed=5, epoch=2)
    fast2, fast1 = native_run(g, s, 2, **kw), native_run(g, s, 1, **kw)
    with _native.disabled():
        slow = spsample.sample(g, s, **kw)
    oracle = reference_sample(g, s, **kw)
    for a, b, c, d in zip(fast1, fast2, slow, oracle):
        assert a.equals(b) and a.equals(c) and a.equals(d)
    assert len(fast1) == len(slow) == len(oracle)


@needs_native
@pytest.mark.parametrize("tie", TIES, ids=["in the 16-lane steps", "in the last d % 16"])
@pytest.mark.parametrize("table", [True, False], ids=["word table", "words per row"])
def test_word_equal_to_the_limit_is_not_kept(tie, table):
    """A column whose word equals its row's limit ceil(s 2**32 / d) is not kept, in a row read
    through the hop's word table (five more long rows among the seeds: >= 2 n long entries) and
    in one whose words are computed per row (no other long row), as the oracle says."""
    seed, u, s, d, p = tie
    assert _is_tie(seed, u, s, d)
    g = tie_graph(u, d, p)
    deg = np.diff(g.indptr)
    assert deg[0] == d and g.indices[g.indptr[0] + p] == u
    batch = np.array([0, 1, 2, 3, 4, 5] if table else [0, 6, 7, 8, 9, 10])
    assert (int(np.where(deg[batch] > s, deg[batch], 0).sum()) >= 2 * g.num_nodes) == table
    kw = dict(sampler=LABOR([s]), batch_size=batch.size, seed=seed, epoch=1)
    fast = spsample.sample(g, batch, **kw)
    assert fast.path == "native" and fast[0].batch_id == 0
    assert fast[0].equals(reference_sample(g, batch, **kw)[0])
    dst, _ = fast[0].edges[0]
    kept = np.asarray(fast[0].edge_ids[0])[np.asarray(dst) == 0]
    assert kept.size > 0 and p not in kept


@needs_native
def test_vector_and_portable_code_agree():
    """The same bulks with the vector code and with SPSAMPLE_NATIVE_SCALAR=1 (scalar table scan,
    generic column words), in a child process each."""
    code = ("import json, sys; sys.path.insert(0, %r); import test_labor_speedpaths as t; "
            "print(json.dumps(t._native_digests()))" % os.path.dirname(__file__))

    def run(**env):
        e = {k: v for k, v in os.environ.items() if k != "SPSAMPLE_NATIVE_SCALAR"}
        e.update(env)
        out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    vector, portable = run(), run(SPSAMPLE_NATIVE_SCALAR="1")
    assert vector == portable
    if not _cpu_has_avx512():
        pytest.skip("no AVX-512 on this CPU: both runs took the portable code")
