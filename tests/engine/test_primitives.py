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


def test_sample_columns_by_entries_is_a_subset_of_P_and_follows_the_draws():
    """Group 0 (rows 3, 9, 10) has more than 4 columns: 4 are chosen, the first 4 distinct
    columns of its entry draws; group 1 (row 40 alone) keeps all of its columns if it has at
    most 4; group 2 has no rows."""
    g = random_graph(60, 400, seed=2)
    batch = np.array([0, 0, 0, 1])
    vertex = np.array([3, 9, 10, 40])
    G = prim.row_select(g.indptr, g.indices, None, vertex)
    P = prim.column_accumulate(G, batch, 3)
    ids = np.array([7, 8, 9])
    S = prim.sample_columns_by_entries(P, G, batch, 4, ids, 5, (1, 2))
    d = P.row_lengths()
    assert d[0] > 4 and d[2] == 0
    assert S.row_lengths().tolist() == [4, min(d[1], 4), 0]
    for j in range(3):
        cols = S.indices[S.indptr[j]:S.indptr[j + 1]]
        assert np.all(np.diff(cols) > 0)
        mine = P.indices[P.indptr[j]:P.indptr[j + 1]]
        np.testing.assert_array_equal(S.data[S.indptr[j]:S.indptr[j + 1]],
                                      P.data[P.indptr[j] + np.searchsorted(mine, cols)])
        if d[j] <= 4:
            np.testing.assert_array_equal(cols, mine)
    # group 0 by hand: draw t = words 2t, 2t + 1 of stream (NO_VERTEX, 5, 7)
    from spsample import _rng
    entries = G.indices[:G.indptr[3]]
    drawn, t = [], 0
    while len(set(drawn)) < 4:
        w0 = _rng.stream_word_scalar(2 * t, _rng.NO_VERTEX, 5, 7, (1, 2))
        w1 = _rng.stream_word_scalar(2 * t + 1, _rng.NO_VERTEX, 5, 7, (1, 2))
        u = float(_rng.unit53(w0, w1))
        drawn.append(int(entries[min(int(u * entries.size), entries.size - 1)]))
        t += 1
    assert sorted(set(drawn)) == S.indices[:4].tolist()
    assert prim.sample_columns_by_entries(P, G, batch, -1, ids, 5, (1, 2)) is P


def test_sample_columns_by_entries_rejects_bad_arguments():
    import pytest
    from spsample import ArgumentError, ArgumentTypeError
    g = random_graph(60, 400, seed=2)
    batch = np.array([0, 0, 1])
    G = prim.row_select(g.indptr, g.indices, None, np.array([3, 9, 40]))
    P = prim.column_accumulate(G, batch, 2)
    ids = np.array([7, 8])
    call = lambda **kw: prim.sample_columns_by_entries(  # noqa: E731
        **{"P": P, "G": G, "group": batch, "fanout": 2, "batch": ids, "hop_word": 5, "key": (1, 2),
           **kw})
    with pytest.raises(ArgumentError, match="'group'"):
        call(group=np.array([1, 0, 0]))
    with pytest.raises(ArgumentError, match="'group'"):
        call(group=np.array([0, 0, 2]))
    with pytest.raises(ArgumentError, match="'group'"):
        call(group=np.array([0, 0]))
    with pytest.raises(ArgumentError, match="'batch'"):
        call(batch=np.array([7]))
    with pytest.raises(ArgumentTypeError, match="'fanout'"):
        call(fanout=2.5)
    Gw = prim.row_select(g.indptr, g.indices, np.ones(g.indices.size), np.array([3, 9, 40]))
    with pytest.raises(ArgumentError, match="'G'"):
        call(G=Gw)
    assert call().row_lengths().tolist() == [2, min(P.row_lengths()[1], 2)]
