"""The native fast paths of weighted sampling without replacement and of node2vec's rejection
draws (native/select.h) against the NumPy oracle, bit for bit, on inputs chosen to break them.

Weighted rows screen their entries with bounds on the keys and compute the exact key
(``neg_log(open_unit(word)) / w``) only for entries that can be among the ``s`` smallest; the
bounds rest on ``v <= -det_log(u) <= v / u`` (``u = open_unit(word)``, ``v = 1 - u``) within a
factor ``1 -+ 2**-30``, checked here on the words where it is tightest and on a random sample
(every one of the 2**32 words was checked once; experiments/README.md). Two routes are covered:
the per-request rows (``sample_rows``: weights read per row) and the fused bulk sampler (per-row
statistics cached on the graph). node2vec's draws are decided from the value program's table
where the lookup cannot change the outcome; graphs with self-loops, returns and rows of every
length around the search's linear tail exercise it.
"""

import numpy as np
import pytest

import spsample
from spsample import native as _native, _rng
from spsample.engine import _primitives as prim
from spsample.engine._native_run import sample_rows as native_sample_rows

from native_runs import portable_run

pytestmark = pytest.mark.skipif(not _native.AVAILABLE,
                                reason=f"native kernels not built: {_native.IMPORT_ERROR}")

KEY = _rng.split_seed(0x0DDB_A11_5EED)
HOP_WORD = _rng.hop_word(3, 1)


# ------------------------------------------------------------------------------ the bounds
def _bound_words():
    rng = np.random.default_rng(11)
    edges = np.concatenate([np.arange(0, 2**18), np.arange(2**32 - 2**18, 2**32)])
    middle = np.concatenate([np.arange(c - 2**12, c + 2**12) for c in
                             (2**31, int(2**32 * 0.7071067811865476), 2**30, 3 * 2**30)])
    return np.concatenate([edges, middle, rng.integers(0, 2**32, 2**21)]).astype(np.uint64)


def test_det_log_within_the_screen_bounds():
    words = _bound_words()
    u = _rng.open_unit(words)
    v = ((2**32 - 1 - words).astype(np.float64) + 0.5) * (1.0 / 4294967296.0)
    assert np.array_equal(v, 1.0 - u)            # v is exact
    nl = _rng.neg_log(u)
    assert np.all(nl >= v * (1.0 - 2.0**-30))
    assert np.all(nl <= (v / u) * (1.0 + 2.0**-30))


# -------------------------------------------------------------------------- weighted rows
def _numpy_rows(indptr, indices, weights, vertex, batch, fanout):
    P = prim.row_select(indptr, indices, weights, vertex)
    with np.errstate(over="ignore"):       # keys of denormal weights overflow to +inf
        return prim.sample_rows(P, fanout, prim.Streams(vertex, batch, HOP_WORD, KEY),
                                replace=False, weighted=True)


def _assert_rows_equal(indptr, indices, weights, vertex, batch, fanout):
    got = native_sample_rows(indptr, indices, weights, vertex, batch, fanout, HOP_WORD, KEY,
                             replace=False, weighted=True)
    want = _numpy_rows(indptr, indices, weights, vertex, batch, fanout)
    for name in ("indptr", "indices", "edge_id"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    return got


def _rows(degrees, weight_of, seed=0):
    """CSR arrays with the given row lengths, weights from ``weight_of(rng, d)``."""
    rng = np.random.default_rng(seed)
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    indices = np.concatenate([np.sort(rng.choice(10**6, d, replace=False)) for d in degrees])
    weights = np.concatenate([weight_of(rng, d) for d in degrees]).astype(np.float64)
    return indptr, indices.astype(np.int64), weights


def _requests(n_rows, per_row=6):
    vertex = np.repeat(np.arange(n_rows), per_row)
    batch = np.tile(np.arange(per_row) * 7919 + 3, n_rows)
    return vertex, batch


WEIGHTS = {
    "uniform": lambda rng, d: rng.random(d) + 1e-3,
    "equal": lambda rng, d: np.ones(d),
    "decades": lambda rng, d: 10.0 ** rng.uniform(-200, 200, d),
    "zeros": lambda rng, d: np.where(rng.random(d) < 0.5, 0.0, rng.random(d)),
    "few-eligible": lambda rng, d: np.where(np.arange(d) % 7 == 0, rng.random(d) + 0.5, 0.0),
    "one-heavy": lambda rng, d: np.where(np.arange(d) == d // 2, 1e6, rng.random(d)),
    "tiny-and-huge": lambda rng, d: np.where(rng.random(d) < 0.1, 2.0**-1000,
                                             np.where(rng.random(d) < 0.1, 1e300, rng.random(d))),
    "denormal": lambda rng, d: np.where(rng.random(d) < 0.2, 5e-324, rng.random(d)),
}


@pytest.mark.parametrize("kind", sorted(WEIGHTS))
@pytest.mark.parametrize("fanout", [1, 5, 23, 24, 25, 60])
def test_rows_equal_numpy(kind, fanout):
    degrees = [0, 1, 5, 7, 8, 9, 23, 24, 25, 26, 40, 64, 65, 100, 333, 1000, 4096]
    indptr, indices, weights = _rows(degrees, WEIGHTS[kind], seed=len(kind) + fanout)
    vertex, batch = _requests(len(degrees))
    _assert_rows_equal(indptr, indices, weights, vertex, batch, fanout)


def _stream_words(vertex, batch, d):
    return _rng.stream_words(np.arange(d, dtype=np.uint64), vertex, HOP_WORD, batch, KEY)


@pytest.mark.parametrize("fanout", [1, 7, 50])
def test_near_ties_at_the_threshold(fanout):
    """Weights chosen so that every key of the row is the same number up to an ulp or two:
    every entry sits at the threshold; ties are broken by position, as the oracle does."""
    d, vertex, batch = 500, 0, 12345
    nl = _rng.neg_log(_rng.open_unit(_stream_words(vertex, batch, d)))
    for c in (1.0, 3.0e-7, 2.0**-40):
        weights = nl / c
        weights[::5] = weights[1::5][:weights[::5].size]      # exact duplicates of neighbours
        indptr = np.array([0, d])
        indices = np.arange(d, dtype=np.int64)
        out = _assert_rows_equal(indptr, indices, weights, np.array([vertex]), np.array([batch]),
                                 fanout)
        assert out.edge_id.size == fanout


def _weights_with_key(nl, key):
    """Weights ``w`` with ``nl / w == key`` exactly for every entry (``key`` a power of two:
    ``w = nl / key`` is exact)."""
    w = nl / key
    assert np.all(nl / w == key)
    return w


@pytest.mark.parametrize("d", [60, 300])
@pytest.mark.parametrize("fanout", [1, 7, 30, 59])
def test_equal_keys_go_to_the_smaller_positions(d, fanout):
    """Every key of the row is the same double: the oracle orders by (key, position), so the
    kept entries are the first ``fanout`` positions; the native selection must break the ties
    the same way (every entry is a candidate: pairwise ranks for the row of 60, at most 64
    candidates; a heap for the row of 300)."""
    vertex, batch = 0, 777
    nl = _rng.neg_log(_rng.open_unit(_stream_words(vertex, batch, d)))
    for key in (1.0, 0.25, 2.0**-20):
        weights = _weights_with_key(nl, key)
        indptr, indices = np.array([0, d]), np.arange(d, dtype=np.int64)
        out = _assert_rows_equal(indptr, indices, weights, np.array([vertex]), np.array([batch]),
                                 fanout)
        np.testing.assert_array_equal(out.edge_id, np.arange(fanout))


def test_equal_keys_portable_selection():
    """The same ties with SPSAMPLE_NATIVE_SCALAR=1 (the compiler-vectorised pairwise ranks)."""
    code = ("import test_weighted_screen as t\n"
            "for d in (60, 300):\n"
            "    for f in (1, 7, 30, 59):\n"
            "        t.test_equal_keys_go_to_the_smaller_positions(d, f)\n"
            "print('ok')")
    assert portable_run(code) == ["ok"]


@pytest.mark.parametrize("fanout", [5, 40, 1500])
def test_long_row_and_fanout_at_or_above_eligible(fanout):
    rng = np.random.default_rng(5)
    d = 10**5
    weights = rng.random(d) ** 8                      # most keys large, a few tiny weights
    indptr, indices = np.array([0, d]), np.arange(d, dtype=np.int64)
    _assert_rows_equal(indptr, indices, weights, np.array([0, 0, 0]), np.array([1, 2, 3]), fanout)
    eligible = np.zeros(d)
    eligible[rng.choice(d, fanout, replace=False)] = 1.0   # exactly `fanout` eligible entries
    out = _assert_rows_equal(indptr, indices, eligible, np.array([0]), np.array([9]), fanout)
    assert out.edge_id.size == fanout
    eligible[rng.choice(np.flatnonzero(eligible == 0), 1)] = 0.5    # one more than the fanout
    _assert_rows_equal(indptr, indices, eligible, np.array([0]), np.array([9]), fanout)


def _bulk(graph, sampler, seeds, native):
    _native.set_enabled(native)
    try:
        with np.errstate(over="ignore"):   # keys of denormal weights overflow to +inf
            return spsample.sample(graph, seeds, sampler=sampler, batch_size=64, seed=77)
    finally:
        _native.set_enabled(_native.AVAILABLE)


def _assert_bulks_equal(graph, sampler, seeds):
    fast, oracle = _bulk(graph, sampler, seeds, True), _bulk(graph, sampler, seeds, False)
    assert fast.path == "native" and oracle.path != "native"
    np.testing.assert_array_equal(fast.n_id, oracle.n_id)
    for a, b in zip(fast.hops, oracle.hops):
        for name in ("dst", "src", "edge_id"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("kind", ["uniform", "equal", "decades", "zeros", "tiny-and-huge",
                                  "denormal"])
def test_bulk_with_row_statistics_equals_numpy(kind):
    g = spsample.rmat(11, 16, seed=4)
    rng = np.random.default_rng(len(kind))
    weights = WEIGHTS[kind](rng, g.num_edges)
    gw = spsample.Graph.from_csr(g.indptr, g.indices, weights=weights)
    seeds = rng.choice(g.num_nodes, 256, replace=False)
    _assert_bulks_equal(gw, spsample.NodeWise([25, 10, 3], weighted=True), seeds)


def test_row_weight_stats():
    from spsample.native._buffers import row_weight_stats

    indptr = np.array([0, 0, 3, 6, 8])
    indices = np.array([0, 1, 2, 0, 1, 2, 1, 3])
    weights = np.array([0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1e300, 0.5])
    g = spsample.Graph.from_csr(indptr, indices, weights=weights)
    stats = row_weight_stats(g).reshape(-1, 3)
    assert stats[0].tolist() == [0.0, 0.0, 0.0]
    assert stats[1].tolist() == [2.0, 2.0, 3.0]
    assert stats[2].tolist() == [0.0, 0.0, 0.0]
    assert stats[3, 0] == 2.0 and np.isnan(stats[3, 1])       # 1e300 > 2**900: no fast path


# -------------------------------------------------------------------------------- node2vec
def _walk_graph(seed=2):
    """Rows of every length from 0 to 70 and a few hubs, with self-loops and reciprocal edges
    (returns, neighbours of the previous vertex, and lookups at every search boundary)."""
    rng = np.random.default_rng(seed)
    n = 400
    rows = []
    for v in range(n):
        d = v % 71 if v % 50 else 300
        cols = set(rng.choice(n, d, replace=False).tolist())
        if v % 3 == 0:
            cols.add(v)                                  # self-loop: u == v
        rows.append(sorted(cols))
    for v in range(0, n, 2):                             # make many edges reciprocal
        for u in rows[v][:10]:
            if v not in rows[u]:
                rows[u] = sorted(rows[u] + [v])
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    indices = np.concatenate([np.array(r, dtype=np.int64) for r in rows])
    return spsample.Graph.from_csr(indptr, indices)


@pytest.mark.parametrize("p,q", [(0.5, 2.0), (4.0, 0.25), (1.0, 0.3), (2.0, 2.0), (0.1, 1.0)])
def test_node2vec_equals_numpy(p, q):
    g = _walk_graph()
    seeds = np.flatnonzero(np.diff(g.indptr) > 0)[:192]
    _assert_bulks_equal(g, spsample.RandomWalk(12, p=p, q=q), seeds)


def test_weighted_node2vec_equals_numpy():
    """Edge weights times the bias (testing's WeightedWalk): the values depend on the entry, so
    the table does not apply and the general rejection path runs."""
    from spsample.testing._samplers import WeightedWalk

    g = _walk_graph(3)
    w = np.random.default_rng(0).random(g.num_edges) + 0.1
    gw = spsample.Graph.from_csr(g.indptr, g.indices, weights=w)
    seeds = np.flatnonzero(np.diff(g.indptr) > 0)[:128]
    _assert_bulks_equal(gw, WeightedWalk(8, gw, p=0.5, q=2.0), seeds)


def _rows_graph(weight_of, seed=3):
    """Rows of every length 0 .. 90 (around the screen's 8- and 16-word steps) and a few hubs,
    weights from ``weight_of(rng, nnz)``."""
    rng = np.random.default_rng(seed)
    n = 600
    degrees = [v % 91 if v % 60 else 400 + v % 199 for v in range(n)]
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    indices = np.concatenate([np.sort(rng.choice(n, d, replace=False)) for d in degrees])
    return spsample.Graph.from_csr(indptr, indices, weights=weight_of(rng, indices.size))


SCREEN_WEIGHTS = {
    "uniform": WEIGHTS["uniform"],
    "equal": WEIGHTS["equal"],
    # rows whose largest weight is the screen's bound (2**-900 or 2**900): tau * wmax extreme,
    # so that no word or every word passes the integer threshold
    "bounds": lambda rng, d: np.where(rng.random(d) < 0.5, 2.0**-900,
                                      2.0**-900 * (1 + rng.random(d))),
    "huge": lambda rng, d: np.where(rng.random(d) < 0.3, 2.0**900, 2.0**899 * (1 + rng.random(d))),
    "steps": lambda rng, d: 2.0 ** rng.integers(-30, 30, d).astype(np.float64),
}


@pytest.mark.parametrize("kind", sorted(SCREEN_WEIGHTS))
def test_bulk_word_threshold_equals_numpy(kind):
    """The row-statistics route screens a row's words with one integer threshold per row
    (select.h: first_passing_word, passing_positions: 16 or 8 words per compare, then the
    row's tail): every row length around those steps, fanouts around them, bounds at both
    ends of the screen's weight range."""
    g = _rows_graph(SCREEN_WEIGHTS[kind], seed=len(kind))
    seeds = np.arange(g.num_nodes)
    for fanouts in ([1, 8], [15, 16, 17]):
        _assert_bulks_equal(g, spsample.NodeWise(fanouts, weighted=True), seeds)
