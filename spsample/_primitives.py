"""Sparse primitives of bulk sampling, written against a backend's ``xp``.

The node-wise pipeline of one hop, for frontier rows ``r`` (vertex ``v_r`` of minibatch
``j(r)``) is::

    P = row_select(A, v)              # Q·A as a gather: row r of P is row v_r of A
    S = sample_rows(P, fanout, ...)   # at most `fanout` entries kept per row
    (extraction: new vertices, local ids; see samplers.BulkState)

and the layer-wise one (LADIES), for minibatch rows ``j`` with vertex sets ``B_j``::

    P = column_accumulate(A∘A, B)     # Q_b·(A∘A): segmented column sums, rows = minibatches
    S = sample_columns(P, fanout, ...)          # weighted A: Efraimidis–Spirakis keys
    S = sample_columns_by_entries(P, G, ...)    # unweighted A: draws of entries of G = Q_b·A

Rows of ``P`` are kept *unnormalised*: every selection rule here is invariant to scaling a row,
so ``normalise_rows`` is only applied where values are returned (LADIES edge weights).

Random words come from :mod:`spsample._rng`. For node-wise rows the stream is
``(v_r, hop word, batch id)`` and word ``p`` belongs to position ``p`` of the row (weighted) or
to draw ``p`` (uniform); for layer-wise keys the stream of candidate column ``u`` is
``(u, hop word, batch id)``, word 0, and layer-wise draws (FastGCN, unweighted LADIES) take words
``2t, 2t + 1`` of stream ``(NO_VERTEX, hop word, batch id)`` for draw ``t``.
"""

from dataclasses import dataclass

import numpy as np

from . import _rng
from ._errors import ArgumentError
from ._validate import as_int, fail

__all__ = [
    "RowMatrix", "Streams", "segment_arange", "row_select", "spgemm", "normalize_rows",
    "sample_rows", "column_accumulate", "sample_columns", "sample_columns_by_entries",
    "sample_global", "segmented_sum",
]


@dataclass
class RowMatrix:
    """A CSR matrix whose rows carry sampling metadata (``P`` or ``S`` of one hop).

    Attributes
    ----------
    indptr : int64, shape (r + 1,)
    indices : int64, shape (nnz,)
        Global column (vertex) ids, ascending within each row.
    data : float64, shape (nnz,), or None
        Unnormalised probabilities (edge weights, or column sums of squares); ``None`` when
        every entry of a row is equally likely.
    edge_id : int64, shape (nnz,), or None
        For rows gathered from ``A``: the index of each entry in ``A.indices``.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: object = None
    edge_id: object = None

    @property
    def num_rows(self):
        return self.indptr.size - 1

    @property
    def nnz(self):
        return self.indices.size

    def row_lengths(self):
        return np.diff(self.indptr)

    def take(self, keep_indptr, keep):
        """The sub-matrix holding entries ``keep`` (indices into this matrix), rows ``keep_indptr``."""
        return RowMatrix(keep_indptr, self.indices[keep],
                         None if self.data is None else self.data[keep],
                         None if self.edge_id is None else self.edge_id[keep])


@dataclass(frozen=True)
class Streams:
    """Which RNG stream each row of a matrix draws from.

    Attributes
    ----------
    vertex : int64, shape (r,)
        Counter word 1 of each row (the vertex being expanded).
    batch : int64, shape (r,)
        Counter word 3 of each row (its global minibatch id).
    hop_word : int
        Counter word 2, :func:`spsample._rng.hop_word` of (epoch, hop).
    key : (int, int)
        :func:`spsample._rng.split_seed` of the seed.
    """

    vertex: np.ndarray
    batch: np.ndarray
    hop_word: int
    key: tuple

    def words(self, rows, index, xp=np):
        """Word ``index[i]`` of the stream of row ``rows[i]``, uint64, shape like ``rows``."""
        return _rng.stream_words(index, self.vertex[rows], self.hop_word, self.batch[rows],
                                 self.key, xp=xp)


def segment_arange(counts, xp=np):
    """Concatenated ``arange(c)`` for each ``c`` in ``counts``, and the segment of each element.

    Returns
    -------
    offset : int64, shape (sum(counts),)
    segment : int64, shape (sum(counts),)
    """
    counts = xp.asarray(counts, dtype=xp.int64)
    segment = xp.repeat(xp.arange(counts.size, dtype=xp.int64), counts)
    starts = xp.cumsum(counts) - counts
    return xp.arange(segment.size, dtype=xp.int64) - starts[segment], segment


def _indptr_of(counts, xp=np):
    out = xp.zeros(counts.size + 1, dtype=xp.int64)
    xp.cumsum(counts, out=out[1:])
    return out


def row_select(indptr, indices, weights, rows, *, row_offset=0, xp=np):
    """``Q·A`` for a selection matrix ``Q``: a gather of rows of ``A``.

    Parameters
    ----------
    indptr, indices, weights : the CSR arrays of ``A`` (or of a block of its rows)
        ``weights`` may be ``None``.
    rows : int64, shape (r,)
        Row ids into ``indptr`` (global vertex ids minus ``row_offset``).
    row_offset : int
        Global id of the first row of the block; edge ids are relative to ``indices``.

    Returns
    -------
    RowMatrix with ``r`` rows; ``edge_id`` gives each entry's index into ``indices``.

    Complexity: O(r + nnz of the selected rows).
    """
    rows = xp.asarray(rows, dtype=xp.int64) - row_offset
    starts = indptr[rows]
    counts = indptr[rows + 1] - starts
    offset, segment = segment_arange(counts, xp)
    edge_id = starts[segment] + offset
    return RowMatrix(_indptr_of(counts, xp), indices[edge_id],
                     None if weights is None else weights[edge_id], edge_id)


def spgemm(x, y):
    """General sparse product ``x @ y`` of two backend sparse matrices (``sp`` CSR)."""
    return (x @ y).tocsr()


def normalize_rows(values, indptr, xp=np):
    """Divide each row's values by the row's sum, summed left to right (deterministic).

    Rows summing to zero are left as zeros.
    """
    sums = segmented_sum(values, indptr, xp)
    seg = xp.repeat(xp.arange(indptr.size - 1), xp.diff(indptr))
    denom = sums[seg]
    return xp.where(denom > 0, values / xp.where(denom > 0, denom, 1.0), 0.0)


def segmented_sum(values, indptr, xp=np):
    """Per-row sums of ``values``, each taken sequentially in storage order.

    ``bincount`` accumulates in input order, so this equals a serial loop over each row (and
    so does the native kernel); ``np.add.reduceat`` would sum pairwise instead.
    """
    seg = xp.repeat(xp.arange(indptr.size - 1), xp.diff(indptr))
    return xp.bincount(seg, weights=values, minlength=indptr.size - 1).astype(xp.float64)


# ------------------------------------------------------------------------------ node-wise
def sample_rows(P, fanout, streams, *, replace=False, weighted=False, xp=np):
    """Select at most ``fanout`` entries of each row of ``P``: the sampled matrix ``S``.

    Rules (``d`` = row length, ``s`` = fanout, ``-1`` meaning "all"):

    * uniform, without replacement: ``d <= s`` keeps the row; else Floyd's algorithm picks
      ``s`` distinct positions, draw ``i`` using word ``i`` as
      ``t = uniform_int(word_i, d - s + i + 1)``.
    * uniform, with replacement (``d > 0``): ``s`` positions ``uniform_int(word_i, d)``.
    * weighted, without replacement (Efraimidis–Spirakis): among entries with weight > 0,
      the ``s`` smallest keys ``neg_log(open_unit(word_p)) / w_p`` (ties: smaller position);
      all of them when there are at most ``s``.
    * weighted, with replacement: draw ``i`` is the position minimising
      ``neg_log(open_unit(word_{i*d + p})) / w_p`` over entries of weight > 0.

    Selected positions are returned in ascending order (with multiplicity for replacement).

    Parameters
    ----------
    P : RowMatrix
        ``data`` must be set when ``weighted``.
    fanout : int
    streams : Streams
        One stream per row of ``P``.

    Returns
    -------
    RowMatrix, the rows of ``P`` restricted to the selected entries.
    """
    d = P.row_lengths()
    if weighted:
        if replace:
            keep, counts = _weighted_with_replacement(P, d, fanout, streams, xp)
        else:
            keep, counts = _weighted_without_replacement(P, d, fanout, streams, xp)
    elif replace:
        keep, counts = _uniform_with_replacement(P, d, fanout, streams, xp)
    else:
        keep, counts = _uniform_without_replacement(P, d, fanout, streams, xp)
    return P.take(_indptr_of(counts, xp), keep)


def _uniform_without_replacement(P, d, s, streams, xp):
    if s < 0:
        return xp.arange(P.nnz, dtype=xp.int64), d
    counts = xp.minimum(d, s)
    full = d <= s
    # rows kept whole
    off, seg = segment_arange(xp.where(full, d, 0), xp)
    whole = P.indptr[seg] + off
    big = xp.flatnonzero(~full)
    picked = floyd(d[big], s, big, streams, xp)           # (len(big), s), sorted
    picked += P.indptr[big][:, None]
    # interleave in row order
    keep = xp.empty(int(counts.sum()), dtype=xp.int64)
    out_start = xp.cumsum(counts) - counts
    keep[(out_start[seg] + off)] = whole
    keep[(out_start[big][:, None] + xp.arange(s)).ravel()] = picked.ravel()
    return keep, counts


def floyd(d, s, rows, streams, xp=np):
    """Floyd's sampling of ``s`` distinct positions out of ``d`` (> s) for each row.

    Parameters
    ----------
    d : int64, shape (m,)
        Row lengths, all ``> s``.
    s : int
    rows : int64, shape (m,)
        Row ids into ``streams``.

    Returns
    -------
    int64, shape (m, s): positions, ascending within each row.
    """
    m = d.size
    sel = xp.empty((m, s), dtype=xp.int64)
    for i in range(s):
        word = streams.words(rows, xp.full(m, i, dtype=xp.int64), xp)
        j = d - s + i
        t = _rng.uniform_int(word, j + 1, xp)
        hit = (sel[:, :i] == t[:, None]).any(axis=1) if i else xp.zeros(m, dtype=bool)
        sel[:, i] = xp.where(hit, j, t)
    sel.sort(axis=1)
    return sel


def _uniform_with_replacement(P, d, s, streams, xp):
    if s < 0:
        return xp.arange(P.nnz, dtype=xp.int64), d
    counts = xp.where(d > 0, s, 0)
    rows = xp.flatnonzero(d > 0)
    draw = xp.repeat(xp.arange(s, dtype=xp.int64)[None, :], rows.size, axis=0)
    r = xp.repeat(rows[:, None], s, axis=1)
    word = streams.words(r.ravel(), draw.ravel(), xp).reshape(rows.size, s)
    pos = _rng.uniform_int(word, d[rows][:, None], xp)
    pos.sort(axis=1)
    return (pos + P.indptr[rows][:, None]).ravel(), counts


def _exp_keys(P, entry, rows, word_index, streams, xp):
    """``neg_log(open_unit(word)) / weight`` for entries ``entry`` of ``P`` in rows ``rows``."""
    word = streams.words(rows, word_index, xp)
    return _rng.neg_log(_rng.open_unit(word, xp), xp) / P.data[entry]


def _weighted_without_replacement(P, d, s, streams, xp):
    positive = P.data > 0
    seg = xp.repeat(xp.arange(d.size, dtype=xp.int64), d)
    eligible = xp.bincount(seg[positive], minlength=d.size).astype(xp.int64)
    counts = eligible if s < 0 else xp.minimum(eligible, s)
    if s < 0:
        return xp.flatnonzero(positive), counts
    entry = xp.flatnonzero(positive & (eligible[seg] > s))
    keep_all = xp.flatnonzero(positive & (eligible[seg] <= s))
    rows = seg[entry]
    pos = entry - P.indptr[rows]
    keys = _exp_keys(P, entry, rows, pos, streams, xp)
    order = xp.lexsort((pos, keys, rows))           # by row, then key, then position
    entry, rows = entry[order], rows[order]
    first = xp.searchsorted(rows, rows, side="left")
    rank = xp.arange(rows.size) - first
    chosen = entry[rank < s]
    keep = xp.sort(xp.concatenate([chosen, keep_all]))  # entries are row-major: sorting = row order, position order
    return keep, counts


def _weighted_with_replacement(P, d, s, streams, xp):
    positive = P.data > 0
    seg = xp.repeat(xp.arange(d.size, dtype=xp.int64), d)
    eligible = xp.bincount(seg[positive], minlength=d.size)
    if s < 0:
        return xp.flatnonzero(positive), eligible.astype(xp.int64)
    counts = xp.where(eligible > 0, s, 0).astype(xp.int64)
    entry = xp.flatnonzero(positive)
    rows = seg[entry]
    pos = entry - P.indptr[rows]
    chosen = []
    for i in range(s):
        keys = _exp_keys(P, entry, rows, i * d[rows] + pos, streams, xp)
        order = xp.lexsort((pos, keys, rows))
        r_sorted = rows[order]
        first = xp.flatnonzero(xp.r_[True, r_sorted[1:] != r_sorted[:-1]]) if r_sorted.size else r_sorted
        chosen.append(entry[order][first])
    if not chosen or entry.size == 0:
        return xp.zeros(0, dtype=xp.int64), counts
    return xp.sort(xp.concatenate(chosen)), counts


# ------------------------------------------------------------------------------ layer-wise
def column_accumulate(P_gathered, group, num_groups, *, square=True, xp=np):
    """``Q_b·(A∘A)``: per group (minibatch), sum the squared values of each column.

    Parameters
    ----------
    P_gathered : RowMatrix
        Rows of ``A`` gathered for all frontier vertices, grouped: rows of group ``g`` are
        contiguous and groups appear in increasing order.
    group : int64, shape (P_gathered.num_rows,)
        Group (minibatch position in the bulk) of each gathered row, non-decreasing.
    num_groups : int
    square : bool
        Sum ``a**2`` (LADIES) rather than ``a``.

    Returns
    -------
    RowMatrix with ``num_groups`` rows; columns ascending; ``data`` the sums, each taken in
    the order the entries are stored (frontier order, then position): deterministic. Entries
    of weight 0 contribute nothing and columns whose sum is 0 are dropped.
    """
    seg = xp.repeat(group, P_gathered.row_lengths())
    if P_gathered.data is None:
        vals = xp.ones(P_gathered.nnz)
    else:
        vals = P_gathered.data * P_gathered.data if square else P_gathered.data
    n_cols = int(P_gathered.indices.max()) + 1 if P_gathered.nnz else 1
    key = seg * n_cols + P_gathered.indices
    uniq, inverse = xp.unique(key, return_inverse=True)
    sums = xp.bincount(inverse.ravel(), weights=vals, minlength=uniq.size)
    nonzero = sums > 0
    uniq, sums = uniq[nonzero], sums[nonzero]
    g = uniq // n_cols
    return RowMatrix(_indptr_of(xp.bincount(g, minlength=num_groups), xp), uniq % n_cols, sums)


def sample_columns(P, fanout, batch, hop_word, key, xp=np):
    """Pick ``fanout`` distinct columns of each row of ``P`` with probability ∝ ``P.data``.

    Efraimidis–Spirakis keys ``neg_log(open_unit(w_u)) / P[j, u]`` where ``w_u`` is word 0 of
    stream ``(u, hop_word, batch[j])``; the ``fanout`` smallest keys win (ties: smaller
    column). Rows with at most ``fanout`` columns keep all of them.

    Returns
    -------
    RowMatrix of the chosen columns (ascending), ``data`` the row's values for them.
    """
    d = P.row_lengths()
    seg = xp.repeat(xp.arange(d.size, dtype=xp.int64), d)
    if fanout < 0:
        return P
    word = _rng.stream_words(xp.zeros(P.nnz, dtype=xp.int64), P.indices, hop_word,
                             batch[seg], key, xp=xp)
    keys = _rng.neg_log(_rng.open_unit(word, xp), xp) / P.data
    order = xp.lexsort((P.indices, keys, seg))
    rank = xp.arange(order.size) - P.indptr[seg[order]]
    keep = xp.sort(order[rank < fanout])
    return P.take(_indptr_of(xp.minimum(d, fanout), xp), keep)


def _draws(t, batch, hop_word, key, xp=np):
    """``unit53`` of words ``2t, 2t + 1`` of streams ``(NO_VERTEX, hop_word, batch)``: draw ``t``'s
    uniform in ``[0, 1)`` (elementwise; FastGCN and unweighted LADIES)."""
    w0 = _rng.stream_words(2 * t, _rng.NO_VERTEX, hop_word, batch, key, xp=xp)
    w1 = _rng.stream_words(2 * t + 1, _rng.NO_VERTEX, hop_word, batch, key, xp=xp)
    return _rng.unit53(w0, w1, xp)


def sample_columns_by_entries(P, G, group, fanout, batch, hop_word, key, xp=np):
    """Unweighted LADIES: ``fanout`` distinct columns of each row of ``P`` with probability ∝
    ``P.data``, drawn as entries of the gathered rows ``G`` (no key per candidate).

    Row ``j`` of ``P`` holds the column counts of the ``D_j`` entries of its gathered rows (rows
    in order, entries in storage order: entry ``E`` is the ``E``-th of that sequence). If it has
    at most ``fanout`` columns (or ``fanout < 0``) all are kept. Otherwise draw ``t = 0, 1, ...``
    takes words ``2t, 2t + 1`` of stream ``(NO_VERTEX, hop_word, batch[j])``, ``U =
    unit53(w0, w1)``, the entry ``E = min(floor(U * D_j), D_j - 1)`` and its column; the first
    ``fanout`` distinct columns drawn are chosen. A column is drawn with probability ∝ its
    count and repeats are skipped: successive sampling, the distribution of Efraimidis–Spirakis
    keys (:func:`sample_columns`), in about ``fanout`` draws when no few columns hold most
    entries.

    Parameters
    ----------
    P : RowMatrix, ``num_groups`` rows
        :func:`column_accumulate` of ``G`` (unweighted: every column has a count > 0).
    G : RowMatrix
        The gathered rows, grouped as in :func:`column_accumulate`.
    group : int64, shape (G.num_rows,)
        Row of ``P`` of each gathered row, non-decreasing.
    fanout : int
    batch : int64, shape (P.num_rows,)
        Global minibatch id of each row of ``P``.

    Returns
    -------
    RowMatrix: the chosen entries of ``P`` (columns ascending).

    Raises
    ------
    ArgumentError, ArgumentTypeError
        When ``G`` carries weights, ``group`` does not give each row of ``G`` a row of ``P`` in
        non-decreasing order, ``batch`` has not one id per row of ``P``, or ``fanout`` is not
        an integer.
    """
    where = "sample_columns_by_entries"
    fanout = as_int(where, "fanout", fanout)
    d = P.row_lengths()
    k = d.size
    if G.data is not None:
        fail(ArgumentError, where, "G", "must be unweighted (draws of entries are uniform; "
             "weighted rows: sample_columns)", show_value=False)
    if group.shape != (G.num_rows,) or (group.size and (
            bool(xp.any(group[1:] < group[:-1])) or int(group[0]) < 0 or int(group[-1]) >= k)):
        fail(ArgumentError, where, "group", f"must give each of the {G.num_rows} rows of G a row "
             f"of P in [0, {k}), non-decreasing", show_value=False)
    if batch.shape != (k,):
        fail(ArgumentError, where, "batch", f"must hold one minibatch id per row of P ({k})",
             batch.shape)
    if fanout < 0:
        return P
    entries = xp.bincount(group, weights=G.row_lengths(), minlength=k).astype(xp.int64)
    first_entry = _indptr_of(entries, xp)[:-1]
    width = int(P.indices.max()) + 1 if P.nnz else 1
    chosen = []                      # keys row * width + column of the drawn columns
    rows = xp.nonzero(d > fanout)[0]
    m = fanout + fanout // 4 + 16    # draws per row this round (doubled until enough)
    while rows.size:
        r = xp.repeat(rows, m)       # non-decreasing, draws in order within each row
        u = _draws(xp.tile(xp.arange(m, dtype=xp.int64), rows.size), batch[r], hop_word, key, xp)
        e = xp.minimum(xp.floor(u * entries[r].astype(xp.float64)).astype(xp.int64), entries[r] - 1)
        drawn = r * width + G.indices[first_entry[r] + e]
        _, first = xp.unique(drawn, return_index=True)     # first draw of each (row, column)
        first = xp.sort(first)                              # by row, then in draw order
        rank = xp.arange(first.size) - xp.searchsorted(r[first], r[first], side="left")
        which = xp.searchsorted(rows, r[first])
        done = xp.bincount(which, minlength=rows.size) >= fanout
        chosen.append(drawn[first[(rank < fanout) & done[which]]])
        rows, m = rows[~done], 2 * m
    seg = xp.repeat(xp.arange(k, dtype=xp.int64), d)
    keep = [xp.nonzero(d[seg] <= fanout)[0]]
    if chosen:
        keep.append(xp.searchsorted(seg * width + P.indices, xp.concatenate(chosen)))
    return P.take(_indptr_of(xp.minimum(d, fanout), xp), xp.sort(xp.concatenate(keep)))


def sample_global(cumulative, fanout, batch, hop_word, key, xp=np):
    """FastGCN: ``fanout`` i.i.d. draws per minibatch from a global distribution.

    Draw ``i`` of minibatch ``j`` takes words ``2i`` and ``2i + 1`` of stream
    ``(NO_VERTEX, hop_word, batch[j])``, forms ``U = unit53(w0, w1)`` and returns the first
    column whose cumulative weight exceeds ``U * total`` (columns of weight 0 are never drawn).

    Parameters
    ----------
    cumulative : float64, shape (n,)
        Serial prefix sums of the column weights.
    batch : int64, shape (k,)

    Returns
    -------
    RowMatrix of k rows: the distinct drawn columns of each minibatch, ascending.
    """
    k = batch.size
    draw = xp.tile(xp.arange(fanout, dtype=xp.int64), k)
    target = _draws(draw, xp.repeat(batch, fanout), hop_word, key, xp) * cumulative[-1]
    col = xp.minimum(xp.searchsorted(cumulative, target, side="right"), cumulative.size - 1)
    row = xp.repeat(xp.arange(k, dtype=xp.int64), fanout)
    uniq = xp.unique(row * cumulative.size + col)
    r = uniq // cumulative.size
    return RowMatrix(_indptr_of(xp.bincount(r, minlength=k), xp), uniq % cumulative.size)
