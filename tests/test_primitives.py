"""The primitives equal the matrix algebra they implement (SciPy as the reference)."""

import numpy as np
import scipy.sparse as sp

from spsample import primitives as prim

from graphs import random_graph


def _selection(batch_or_row, vertex, shape):
    return sp.csr_matrix((np.ones(vertex.size), (batch_or_row, vertex)), shape=shape)


def _dense(P, n):
    data = np.ones(P.nnz) if P.data is None else P.data
    return sp.csr_matrix((data, P.indices, P.indptr), shape=(P.num_rows, n)).toarray()


def test_row_select_is_selection_times_A():
    g = random_graph(60, 400, seed=1, weighted=True)
    A = g.to_scipy()
    rows = np.array([5, 0, 5, 59, 17])
    P = prim.row_select(g.indptr, g.indices, g.weights, rows)
    Q = _selection(np.arange(rows.size), rows, (rows.size, 60))
    np.testing.assert_array_equal(_dense(P, 60), prim.spgemm(Q, A).toarray())
    np.testing.assert_array_equal(g.indices[P.edge_id], P.indices)


def test_column_accumulate_is_batch_matrix_times_hadamard_square():
    g = random_graph(60, 400, seed=2, weighted=True)
    A = g.to_scipy()
    batch = np.array([0, 0, 0, 2, 2])
    vertex = np.array([3, 9, 10, 3, 40])
    G = prim.row_select(g.indptr, g.indices, g.weights, vertex)
    P = prim.column_accumulate(G, batch, 3)
    Qb = _selection(batch, vertex, (3, 60))
    np.testing.assert_allclose(_dense(P, 60), (Qb @ A.multiply(A)).toarray(), rtol=1e-14)
    assert P.row_lengths()[1] == 0


def test_normalize_rows_and_segmented_sum():
    indptr = np.array([0, 2, 2, 5])
    vals = np.array([1.0, 3.0, 2.0, 2.0, 4.0])
    np.testing.assert_allclose(prim.segmented_sum(vals, indptr), [4.0, 0.0, 8.0])
    np.testing.assert_allclose(prim.normalize_rows(vals, indptr), [0.25, 0.75, 0.25, 0.25, 0.5])


def test_segment_arange():
    off, seg = prim.segment_arange(np.array([2, 0, 3]))
    assert off.tolist() == [0, 1, 0, 1, 2] and seg.tolist() == [0, 0, 2, 2, 2]


def test_sample_rows_keeps_short_rows_whole_and_is_a_subset():
    g = random_graph(80, 800, seed=3)
    rows = np.arange(80)
    P = prim.row_select(g.indptr, g.indices, None, rows)
    streams = prim.Streams(rows, np.zeros(80, dtype=np.int64), 1, (0, 0))
    S = prim.sample_rows(P, 4, streams)
    d = P.row_lengths()
    assert np.array_equal(S.row_lengths(), np.minimum(d, 4))
    for r in range(80):
        got = S.indices[S.indptr[r]:S.indptr[r + 1]]
        row = P.indices[P.indptr[r]:P.indptr[r + 1]]
        assert np.all(np.isin(got, row)) and np.all(np.diff(got) >= 0)
        if d[r] <= 4:
            assert np.array_equal(got, row)
