"""The native per-request row sampler (``sample_rows`` over ``select_requests``,
``spsample.engine._native_run``)
against the NumPy primitives ``sample_rows(row_select(...))``, bit for bit.

This is the owner side of distributed push sampling: a block of rows of ``A`` (global rows
``[lo, hi)``), requests ``(vertex, global minibatch id)``, one hop word and key.
"""

import numpy as np
import pytest

import spsample
from spsample import native as _native, _rng
from spsample.engine import _primitives as prim
from spsample.engine._native_run import sample_rows as native_sample_rows
from spsample._errors import ArgumentError

pytestmark = pytest.mark.skipif(not _native.AVAILABLE,
                                reason=f"native kernels not built: {_native.IMPORT_ERROR}")

KEY = _rng.split_seed(0x1234_5678_9ABC_DEF0)
HOP_WORD = _rng.hop_word(5, 2)
RULES = [(False, False), (False, True), (True, False), (True, True)]   # (weighted, replace)


def _block(graph, weights, lo, hi):
    """The CSR arrays of rows ``[lo, hi)`` of ``graph`` (indices stay global column ids)."""
    a, b = graph.indptr[lo], graph.indptr[hi]
    return (graph.indptr[lo:hi + 1] - a, graph.indices[a:b],
            None if weights is None else weights[a:b])


def _numpy(block, vertex, batch, fanout, weighted, replace, lo):
    indptr, indices, weights = block
    P = prim.row_select(indptr, indices, weights if weighted else None, vertex, row_offset=lo)
    return prim.sample_rows(P, fanout, prim.Streams(vertex, batch, HOP_WORD, KEY),
                            replace=replace, weighted=weighted)


def _native_rows(block, vertex, batch, fanout, weighted, replace, lo):
    indptr, indices, weights = block
    return native_sample_rows(indptr, indices, weights, vertex, batch, fanout, HOP_WORD, KEY,
                              replace=replace, weighted=weighted, row_offset=lo)


def _assert_same(native, numpy):
    for name in ("indptr", "indices", "edge_id"):
        a, b = getattr(native, name), getattr(numpy, name)
        assert a.dtype == np.int64, name
        np.testing.assert_array_equal(a, b, err_msg=name)


def _check(block, vertex, batch, fanout, weighted, replace, lo=0):
    native = _native_rows(block, vertex, batch, fanout, weighted, replace, lo)
    _assert_same(native, _numpy(block, vertex, batch, fanout, weighted, replace, lo))
    return native


@pytest.fixture(scope="module")
def rmat_block():
    """Rows [300, 3300) of an R-MAT graph (degrees 0 to a few hundred), with weights of which
    a fifth are 0 (ineligible under weighted sampling), and 4,000 requests into the block:
    repeated vertices, and the same vertex in several minibatches."""
    graph = spsample.rmat(12, 8, seed=3)
    rng = np.random.default_rng(0)
    weights = rng.random(graph.num_edges)
    weights[rng.random(graph.num_edges) < 0.2] = 0.0
    lo, hi = 300, 3300
    vertex = rng.integers(lo, hi, 4000)
    batch = rng.integers(0, 2**32, 4000)
    batch[1::2] = batch[::2]                      # pairs of requests in the same minibatch
    return _block(graph, weights, lo, hi), vertex, batch, lo


@pytest.mark.parametrize("weighted,replace", RULES)
@pytest.mark.parametrize("fanout", [1, 3, 25, 40, -1])
def test_equals_numpy_sample_rows(rmat_block, fanout, weighted, replace):
    block, vertex, batch, lo = rmat_block
    out = _check(block, vertex, batch, fanout, weighted, replace, lo)
    degree = np.diff(block[0])[vertex - lo]
    counts = np.diff(out.indptr)
    if not weighted and fanout > 0:
        assert np.array_equal(counts, np.where(degree > 0, fanout, 0) if replace
                              else np.minimum(degree, fanout))
    assert np.all(block[1][out.edge_id] == out.indices)


@pytest.mark.parametrize("weighted,replace", RULES)
def test_degree_zero_and_zero_weight_rows(weighted, replace):
    # row 0: degree 0; row 1: three entries of weight 0; row 2: mixed; row 3: degree 0
    indptr = np.array([0, 0, 3, 8, 8])
    indices = np.array([1, 2, 3, 0, 1, 2, 3, 4])
    weights = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.5, 3.0])
    vertex = np.array([10, 11, 12, 13, 12, 10])
    batch = np.array([0, 0, 0, 1, 1, 7])
    for fanout in (1, 2, 10, -1):
        out = _check((indptr, indices, weights), vertex, batch, fanout, weighted, replace, lo=10)
        counts = np.diff(out.indptr)
        assert counts[0] == counts[3] == counts[5] == 0
        if weighted:
            assert counts[1] == 0
            assert np.all(weights[out.edge_id] > 0)


def test_no_requests():
    indptr, indices = np.array([0, 2]), np.array([0, 1])
    out = _check((indptr, indices, None), np.zeros(0, np.int64), np.zeros(0, np.int64), 3, False, False)
    assert out.indptr.tolist() == [0] and out.edge_id.size == 0


@pytest.fixture(scope="module")
def hub_block():
    """Vertex 0 with 10**5 neighbours (positive random weights), two small rows after it."""
    d = 10**5
    rng = np.random.default_rng(1)
    indices = np.concatenate([np.arange(1, d + 1), [0, 5], [7]])
    indptr = np.array([0, d, d + 2, d + 3])
    weights = rng.random(indices.size) + 0.01
    return indptr, indices, weights


# weighted with replacement: the NumPy oracle draws fanout * degree words, so fanout 5 only
@pytest.mark.parametrize("fanout,weighted,replace", [
    (f, w, r) for f in (5, 40, 1500) for w, r in RULES if f == 5 or not (w and r)])
def test_hub_of_degree_1e5(hub_block, fanout, weighted, replace):
    vertex = np.array([0, 1, 0, 2, 0])
    batch = np.array([3, 3, 4, 4, 2**32 - 1])
    out = _check(hub_block, vertex, batch, fanout, weighted, replace)
    first = out.edge_id[out.indptr[0]:out.indptr[1]]
    assert first.size == fanout
    assert np.all(np.diff(first) >= (0 if replace else 1))
    assert not np.array_equal(first, out.edge_id[out.indptr[2]:out.indptr[3]])  # other minibatch


@pytest.mark.parametrize("weighted,replace", RULES)
def test_thread_invariance(rmat_block, hub_block, weighted, replace):
    block, vertex, batch, lo = rmat_block
    hub_vertex = np.where(np.arange(200) % 10 == 0, 0, 1 + np.arange(200) % 2)  # 20 hub rows
    previous = _native.set_num_threads(1)
    try:
        one = _native_rows(block, vertex, batch, 7, weighted, replace, lo)
        hub_one = _native_rows(hub_block, hub_vertex, np.arange(200), 3, weighted, replace, 0)
        for threads in (2, 3, 8):
            _native.set_num_threads(threads)
            _assert_same(_native_rows(block, vertex, batch, 7, weighted, replace, lo), one)
            _assert_same(_native_rows(hub_block, hub_vertex, np.arange(200), 3, weighted, replace, 0),
                         hub_one)
    finally:
        _native.set_num_threads(previous)


@pytest.mark.parametrize("weighted,replace", RULES)
def test_rows_stored_in_arrival_order(rmat_block, weighted, replace):
    """``rows=``: the block's rows shuffled into slots (as fetched rows are stored) sample the
    same positions, keyed by the vertex; only the buffer positions move."""
    (indptr, indices, weights), vertex, batch, lo = rmat_block
    n = indptr.size - 1
    perm = np.random.default_rng(5).permutation(n)               # slot i holds row perm[i]
    degree = np.diff(indptr)[perm]
    slot_ptr = np.r_[0, np.cumsum(degree)]
    offset, segment = prim.segment_arange(degree)
    take = indptr[perm][segment] + offset
    slot_of_row = np.argsort(perm)
    rows = slot_of_row[vertex - lo]
    direct = _native_rows((indptr, indices, weights), vertex, batch, 9, weighted, replace, lo)
    stored = native_sample_rows(slot_ptr, indices[take], weights[take], vertex, batch, 9,
                                HOP_WORD, KEY, replace=replace, weighted=weighted, rows=rows)
    np.testing.assert_array_equal(stored.indptr, direct.indptr)
    np.testing.assert_array_equal(stored.indices, direct.indices)
    np.testing.assert_array_equal(take[stored.edge_id], direct.edge_id)


def test_matches_the_fused_bulk_sampler(rmat_block):
    """Hop 1 of the fused single-process kernel draws the same rows as the row sampler."""
    graph = spsample.rmat(10, 8, seed=4)
    seeds = np.random.default_rng(2).permutation(graph.num_nodes)[:200]
    batches = spsample.sample(graph, seeds, sampler=spsample.NodeWise([6]), batch_size=50,
                              seed=0x1234_5678_9ABC_DEF0, epoch=5, batch_offset=3)
    out = native_sample_rows(graph.indptr, graph.indices, None, seeds, np.repeat([3, 4, 5, 6], 50),
                             6, _rng.hop_word(5, 1), KEY)
    np.testing.assert_array_equal(np.concatenate([mb.edge_ids[0] for mb in batches]), out.edge_id)


@pytest.mark.parametrize("change,name", [
    (dict(vertex=np.array([9])), "vertex"),
    (dict(vertex=np.array([12])), "vertex"),
    (dict(vertex=np.array([[10]]), batch=np.array([[0]])), "vertex"),
    (dict(batch=np.array([0, 1])), "batch"),
    (dict(batch=np.array([-1])), "batch"),
    (dict(batch=np.array([2**32])), "batch"),
    (dict(fanout=0), "fanout"),
    (dict(fanout=-2), "fanout"),
    (dict(hop_word=2**32), "hop_word"),
    (dict(key=(0, 2**32)), "key"),
    (dict(indptr=np.array([0, 1, 3])), "indptr"),
    (dict(indptr=np.array([1, 2, 2])), "indptr"),
    (dict(weights=np.ones(3)), "weights"),
    (dict(weights=None, weighted=True), "weights"),
    (dict(rows=np.array([2])), "rows"),
    (dict(rows=np.array([-1])), "rows"),
    (dict(rows=np.array([0, 1])), "rows"),
    (dict(rows=np.array([0]), vertex=np.array([-1])), "vertex"),
])
def test_bad_input_raises_before_native_code(change, name):
    args = dict(indptr=np.array([0, 1, 2]), indices=np.array([0, 1]), weights=np.ones(2),
                vertex=np.array([10]), batch=np.array([0]), fanout=2, hop_word=1, key=(1, 2))
    options = dict(replace=False, weighted=False, row_offset=10, rows=None)
    for k, v in change.items():
        (options if k in options else args)[k] = v
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    with pytest.raises(ArgumentError, match=f"'{name}'"):
        native_sample_rows(*args.values(), **options)
    for k, v in args.items():          # inputs unmodified
        assert np.array_equal(v, before[k]) if isinstance(v, np.ndarray) else v == before[k]
