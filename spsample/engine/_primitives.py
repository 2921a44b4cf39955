"""Sparse primitives of bulk sampling.

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


import numpy as np

from .. import _rng
from ..native import ALIAS_OVERFLOW
from .._errors import ArgumentError, ArgumentTypeError, SamplerError
from ..graph._weights import alias_tables
from ._csr import RowMatrix, _indptr_of, column_accumulate, segment_arange
from ._lazy import (
    _as_vector, check_values, ALIAS_ATTEMPTS, ALIAS_SHARE_MAX, ColumnSelection, ColumnSums,
    GlobalColumns, GlobalSelection, REJECTION_ATTEMPTS as A, RowSelection, RowView, Streams,
    ThresholdSelection,
)
from .._validate import as_index_array, as_int, check_memory, check_range, fail

__all__ = [
    "RowMatrix", "Streams", "segment_arange", "row_select", "spgemm", "normalize_rows",
    "sample_rows", "column_accumulate", "sample_columns", "sample_columns_by_entries",
    "sample_global", "segmented_sum", "choose_positions", "floyd", "threshold_positions",
    "select_rows", "select_threshold", "select_columns", "select_global", "evaluate_selection",
    "probabilities_of",
]


def row_select(indptr, indices, weights, rows, *, row_offset=0):
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

    Raises
    ------
    ArgumentError, ArgumentTypeError
        ``rows`` (minus ``row_offset``) not integers in ``[0, indptr.size - 1)``: a negative
        id is not a row counted from the end.

    Complexity: O(r + nnz of the selected rows).
    """
    rows = as_index_array("row_select", "rows", rows) - as_int("row_select", "row_offset",
                                                               row_offset)
    check_range("row_select", "rows", rows, 0, indptr.size - 1)
    starts = indptr[rows]
    counts = indptr[rows + 1] - starts
    offset, segment = segment_arange(counts)
    edge_id = starts[segment] + offset
    return RowMatrix(_indptr_of(counts), indices[edge_id],
                     None if weights is None else weights[edge_id], edge_id)


def spgemm(x, y):
    """General sparse product ``x @ y`` of two backend sparse matrices (``sp`` CSR)."""
    return (x @ y).tocsr()


def normalize_rows(values, indptr):
    """Divide each row's values by the row's sum, summed left to right (deterministic).

    Rows summing to zero are left as zeros.
    """
    sums = segmented_sum(values, indptr)
    seg = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    denom = sums[seg]
    return np.where(denom > 0, values / np.where(denom > 0, denom, 1.0), 0.0)


def segmented_sum(values, indptr):
    """Per-row sums of ``values``, each taken sequentially in storage order.

    ``bincount`` accumulates in input order, so this equals a serial loop over each row (and
    so does the native kernel); ``np.add.reduceat`` would sum pairwise instead.
    """
    seg = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return np.bincount(seg, weights=values, minlength=indptr.size - 1).astype(np.float64)


# ------------------------------------------------------------------------------ node-wise
# The row rules work on a row's length d, its fanout s (-1: all) and, for weighted rules, the
# values of its entries; they return the chosen *positions* (0..d-1, ascending within a row,
# with multiplicity under replacement), so the same code serves a RowView (positions index the
# row's extent in A, nothing gathered) and a materialised RowMatrix.

def sample_rows(P, fanout, streams, *, replace=False, weighted=False):
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
    P : RowMatrix or RowView
        ``data`` must be set when ``weighted``.
    fanout : int
    streams : Streams
        One stream per row of ``P``.

    Returns
    -------
    RowMatrix, the rows of ``P`` restricted to the selected entries.
    """
    if isinstance(P, RowView):
        P = P.materialize()
    where = "sample_rows"
    fanout = _check_fanout(where, fanout)
    if weighted and P.data is None:
        fail(ArgumentError, where, "P", "must carry values (data) for weighted sampling",
             show_value=False)
    d = P.row_lengths()
    s = np.full(d.size, fanout, dtype=np.int64)
    values = None if not weighted else (lambda rows, pos: P.data[P.indptr[rows] + pos])
    counts, pos = choose_positions(d, s, streams, replace=replace, values=values)
    row = np.repeat(np.arange(d.size, dtype=np.int64), counts)
    return P.take(_indptr_of(counts), P.indptr[row] + pos)


def _check_fanout(where, fanout):
    fanout = as_int(where, "fanout", fanout)
    if fanout == 0 or fanout < -1:
        fail(ArgumentError, where, "fanout", "must be >= 1, or -1 for all", fanout)
    return fanout


def choose_positions(d, s, streams, *, replace=False, values=None, method="keys", bound=None):
    """The positions each row keeps: the rules of :func:`sample_rows` with a fanout per row.

    Parameters
    ----------
    d : int64, shape (r,)
        Row lengths.
    s : int64, shape (r,)
        Fanout of each row (``-1``: all; ``0``: none).
    streams : Streams
        One stream per row.
    replace : bool
    values : callable ``(rows, positions) -> float64 values``, or None
        The entries' values, for the weighted rules (``None``: uniform).
    method : {"keys", "rejection", "alias", "last"}
        Weighted draws by exact keys, by rejection against ``bound`` (with replacement) or by
        the rows' alias tables (see :class:`spsample.engine._lazy.RowSelection`); ``"last"``:
        the last ``s`` positions of each row, no randomness (temporal ``"last"``: rows sorted
        by time).

    Returns
    -------
    counts : int64, shape (r,)
    positions : int64, shape (counts.sum(),)
        Row after row, ascending within a row.
    """
    if method == "last":
        return last_positions(d, s)
    if values is None:
        if replace:
            return _uniform_with_replacement(d, s, streams)
        return _uniform_without_replacement(d, s, streams)
    if replace and method == "rejection":
        return _rejection(d, s, streams, values, bound)
    seg = np.repeat(np.arange(d.size, dtype=np.int64), d)
    pos = np.arange(seg.size, dtype=np.int64) - (np.cumsum(d) - d)[seg]
    w = np.asarray(values(seg, pos), dtype=np.float64)
    if method == "alias":
        return _alias(d, s, streams, replace, seg, pos, w)
    if replace:
        return _weighted_with_replacement(d, s, streams, seg, pos, w)
    return _weighted_without_replacement(d, s, streams, seg, pos, w)


def last_positions(d, s):
    """``(counts, positions)``: the last ``min(d, s)`` positions of each row (all for
    ``s = -1``), ascending."""
    counts = np.where(s < 0, d, np.minimum(d, s)).astype(np.int64)
    row = np.repeat(np.arange(d.size, dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    pos = np.arange(row.size, dtype=np.int64) - first[row] + (d - counts)[row]
    return counts, pos


def _assemble(counts, parts):
    """Positions in row order from ``(rows, positions per row as a 2-D or flat array)`` parts,
    each part's rows distinct and its positions ascending within a row."""
    out = np.empty(int(counts.sum()), dtype=np.int64)
    first = np.cumsum(counts) - counts
    for rows, pos in parts:
        if rows.size == 0:
            continue
        if pos.ndim == 2:
            out[(first[rows][:, None] + np.arange(pos.shape[1])).ravel()] = pos.ravel()
        else:
            c = counts[rows]
            off, seg = segment_arange(c)
            out[first[rows][seg] + off] = pos
    return out


def _uniform_without_replacement(d, s, streams):
    whole = (s < 0) | (d <= s)
    counts = np.where(whole, d, s)
    wrows = np.flatnonzero(whole)
    off, _ = segment_arange(d[wrows])
    parts = [(wrows, off)]
    big = np.flatnonzero(~whole)
    for value in np.unique(s[big]):                  # rows grouped by fanout
        rows = big[s[big] == value]
        parts.append((rows, floyd(d[rows], int(value), rows, streams)))
    return counts, _assemble(counts, parts)


def floyd(d, s, rows, streams):
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

    Complexity: O(m s^2) comparisons for ``s <= 64``, else O(m s + sum(d)) with a bitmap of
    taken positions.
    """
    m = d.size
    sel = np.empty((m, s), dtype=np.int64)
    if m == 0:
        return sel
    taken = base = None
    if s > 64:
        base = np.cumsum(d) - d
        taken = np.zeros(int(d.sum()), dtype=bool)
    for i in range(s):
        word = streams.words(rows, np.full(m, i, dtype=np.int64))
        j = d - s + i
        t = _rng.uniform_int(word, j + 1)
        if taken is None:
            hit = (sel[:, :i] == t[:, None]).any(axis=1) if i else np.zeros(m, dtype=bool)
        else:
            hit = taken[base + t]
        x = np.where(hit, j, t)
        if taken is not None:
            taken[base + x] = True
        sel[:, i] = x
    sel.sort(axis=1)
    return sel


def _uniform_with_replacement(d, s, streams):
    whole = s < 0
    counts = np.where(whole, d, np.where(d > 0, np.maximum(s, 0), 0))
    wrows = np.flatnonzero(whole)
    parts = [(wrows, segment_arange(d[wrows])[0])]
    rows = np.flatnonzero(~whole & (counts > 0))
    draw, seg = segment_arange(counts[rows])
    r = rows[seg]
    pos = _rng.uniform_int(streams.words(r, draw), d[r])
    pos = pos[np.lexsort((pos, seg))]
    parts.append((rows, pos))
    return counts, _assemble(counts, parts)


def _exp_keys(w, words):
    return _rng.neg_log(_rng.open_unit(words)) / w


def _weighted_without_replacement(d, s, streams, seg, pos, w):
    positive = w > 0
    eligible = np.bincount(seg[positive], minlength=d.size).astype(np.int64)
    keep_all = (s < 0) | (eligible <= s)
    counts = np.where(keep_all, eligible, s)
    chosen = [np.flatnonzero(positive & keep_all[seg])]
    entry = np.flatnonzero(positive & ~keep_all[seg])
    rows = seg[entry]
    keys = _exp_keys(w[entry], streams.words(rows, pos[entry]))
    order = np.lexsort((pos[entry], keys, rows))     # by row, then key, then position
    entry, rows = entry[order], rows[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, rows, side="left")
    chosen.append(entry[rank < s[rows]])
    keep = np.sort(np.concatenate(chosen))           # entries are row-major
    return counts, pos[keep]


def _weighted_with_replacement(d, s, streams, seg, pos, w):
    positive = w > 0
    eligible = np.bincount(seg[positive], minlength=d.size)
    whole = s < 0
    counts = np.where(whole, eligible, np.where(eligible > 0, np.maximum(s, 0), 0)).astype(np.int64)
    chosen = [np.flatnonzero(positive & whole[seg])]
    entry = np.flatnonzero(positive & ~whole[seg] & (counts[seg] > 0))
    rows, p = seg[entry], pos[entry]
    for i in range(int(s[rows].max()) if rows.size else 0):
        live = i < s[rows]
        e, r, q = entry[live], rows[live], p[live]
        keys = _exp_keys(w[e], streams.words(r, i * d[r] + q))
        order = np.lexsort((q, keys, r))
        r_sorted = r[order]
        first = (np.flatnonzero(np.r_[True, r_sorted[1:] != r_sorted[:-1]]) if r_sorted.size
                 else r_sorted)
        chosen.append(e[order][first])
    keep = np.sort(np.concatenate(chosen))
    return counts, pos[keep]


def _alias(d, s, streams, replace, seg, pos, w):
    """Weighted draws by the rows' alias tables (see
    :class:`~spsample.engine._lazy.RowSelection`): the eligible entries of the rows that keep
    them all, the exact keys' sample of the concentrated rows, alias draws in the others."""
    table, share, finite = alias_tables(_indptr_of(d), w)
    positive = w > 0
    eligible = np.bincount(seg[positive], minlength=d.size).astype(np.int64)
    if not finite[eligible > 0].all():
        fail(SamplerError, "select_rows", "P", ALIAS_OVERFLOW, show_value=False)
    whole = (s < 0) if replace else (s < 0) | (eligible <= s)
    counts = np.where(whole, eligible, np.where(eligible > 0, np.maximum(s, 0), 0))
    counts = counts.astype(np.int64)
    by_keys = np.zeros(d.size, dtype=bool) if replace else \
        ~whole & (counts > 0) & (s * share > ALIAS_SHARE_MAX)
    drawn = np.flatnonzero(~whole & ~by_keys & (counts > 0))
    first = np.cumsum(d) - d
    parts = [(np.flatnonzero(whole), pos[positive & whole[seg]])]
    if by_keys.any():                                 # concentrated rows: the exact keys
        mine = by_keys[seg]
        _, kept = _weighted_without_replacement(d, s, streams, seg[mine], pos[mine], w[mine])
        parts.append((np.flatnonzero(by_keys), kept))
    if replace:
        parts.append((drawn, _alias_with_replacement(d, s, streams, table, first, drawn)))
    else:
        parts.append((drawn, _alias_without_replacement(d, s, streams, table, first, drawn, w)))
    return counts, _assemble(counts, parts)


def _alias_draw(streams, table, first, d, rows, a):
    """Alias draw ``a`` of each row in ``rows`` (words ``2a``, ``2a + 1``): positions."""
    i = _rng.uniform_int(streams.words(rows, 2 * a), d[rows])
    entry = first[rows] + i
    keep = streams.words(rows, 2 * a + 1) < table[entry, 0]
    return np.where(keep, i, table[entry, 1].astype(np.int64))


def _alias_with_replacement(d, s, streams, table, first, rows):
    draw, seg = segment_arange(s[rows])
    p = _alias_draw(streams, table, first, d, rows[seg], draw)
    return p[np.lexsort((p, seg))]


def _alias_without_replacement(d, s, streams, table, first, rows, w):
    """Attempts until each row kept ``s`` distinct entries or made ``ALIAS_ATTEMPTS * s``; the
    rows left short are filled by exact keys. Returns the positions, row after row."""
    width = int(s[rows].max(initial=0))
    kept = np.full((rows.size, width), -1, dtype=np.int64)
    have = np.zeros(rows.size, dtype=np.int64)
    live = np.arange(rows.size)
    for a in range(ALIAS_ATTEMPTS * width):
        live = live[(have[live] < s[rows[live]]) & (a < ALIAS_ATTEMPTS * s[rows[live]])]
        if live.size == 0:
            break
        p = _alias_draw(streams, table, first, d, rows[live], np.full(live.size, a))
        new = ~(kept[live] == p[:, None]).any(axis=1)
        at = live[new]
        kept[at, have[at]] = p[new]
        have[at] += 1
    for k in np.flatnonzero(have < s[rows]):          # rare: exact keys over the rest
        kept[k, have[k]:s[rows[k]]] = _keys_fill(d, s, streams, rows[k], kept[k, :have[k]],
                                                 first, w)
    kept.sort(axis=1)
    return kept[kept >= 0]


def _keys_fill(d, s, streams, row, taken, first, w):
    """The eligible positions of ``row`` not in ``taken`` with the smallest exact keys (words
    ``2 ALIAS_ATTEMPTS s + p``), as many as the row still needs."""
    p = np.arange(d[row], dtype=np.int64)
    wr = w[first[row]:first[row] + d[row]]
    free = (wr > 0) & ~np.isin(p, taken)
    p = p[free]
    words = streams.words(np.full(p.size, row, dtype=np.int64), 2 * ALIAS_ATTEMPTS * s[row] + p)
    keys = _exp_keys(wr[free], words)
    return p[np.lexsort((p, keys))][:s[row] - taken.size]


def _rejection(d, s, streams, values, bound):
    """Weighted draws with replacement by rejection (see
    :class:`~spsample.engine._lazy.RowSelection`)."""
    whole = s < 0
    if whole.any():
        fail(ArgumentError, "select_rows", "fanout", "must be >= 0 with method='rejection'",
             show_value=False)
    live_rows = np.flatnonzero((d > 0) & (s > 0))
    draw, seg = segment_arange(s[live_rows])
    row = live_rows[seg]                               # one element per pending draw
    got = np.full(row.size, -1, dtype=np.int64)
    pending = np.arange(row.size)
    for a in range(A):
        if pending.size == 0:
            break
        r, i = row[pending], draw[pending]
        index = 2 * (A * i + a)
        p = _rng.uniform_int(streams.words(r, index), d[r])
        v = _checked_values(values(r, p), bound)
        accept = _rng.open_unit(streams.words(r, index + 1)) * bound < v
        got[pending[accept]] = p[accept]
        pending = pending[~accept]
    if pending.size:                                  # exact keys over the row (rare)
        got[pending] = _rejection_fallback(d, s, streams, values, bound, row[pending],
                                           draw[pending])
    ok = got >= 0
    counts = np.bincount(row[ok], minlength=d.size).astype(np.int64)
    order = np.lexsort((got[ok], row[ok]))
    return counts, got[ok][order]


def _rejection_fallback(d, s, streams, values, bound, rows, draws):
    """Draw ``i`` of row ``r`` by exact keys on words ``2 A s + i d + p``: its position, or -1
    when no entry of the row has a positive value."""
    out = np.full(rows.size, -1, dtype=np.int64)
    for k in range(rows.size):
        r, i, dr = int(rows[k]), int(draws[k]), int(d[rows[k]])
        p = np.arange(dr, dtype=np.int64)
        rr = np.full(dr, r, dtype=np.int64)
        w = _checked_values(values(rr, p), bound)
        ok = w > 0
        if not ok.any():
            continue
        keys = _exp_keys(w[ok], streams.words(rr[ok], 2 * A * int(s[r]) + i * dr + p[ok]))
        best = np.lexsort((p[ok], keys))[0]
        out[k] = p[ok][best]
    return out


def _checked_values(v, bound):
    v = np.asarray(v, dtype=np.float64)
    if v.size and v.max() > bound:
        fail(SamplerError, "select_rows", "bound", f"is exceeded by an entry's value "
             f"{float(v.max())!r}: rejection needs every value <= bound", bound)
    return v


def threshold_positions(d, s, columns_of, words_of):
    """LABOR-0: entry ``u`` of a row of length ``d`` kept iff ``d <= s`` (or ``s < 0``) or
    ``w_u * d < s * 2**32`` (``w_u`` the column's word).

    Parameters
    ----------
    d, s : int64, shape (r,)
    columns_of : callable ``(rows, positions) -> columns``
    words_of : callable ``(rows, columns) -> uint64 words``

    Returns
    -------
    counts, positions : as :func:`choose_positions`.
    """
    seg = np.repeat(np.arange(d.size, dtype=np.int64), d)
    pos = np.arange(seg.size, dtype=np.int64) - (np.cumsum(d) - d)[seg]
    whole = (s < 0) | (d <= s)
    test = ~whole[seg]
    keep = ~test
    r, p = seg[test], pos[test]
    w = words_of(r, columns_of(r, p)).astype(np.uint64)
    keep[test] = w * d[r].astype(np.uint64) < (s[r].astype(np.uint64) << np.uint64(32))
    counts = np.bincount(seg[keep], minlength=d.size).astype(np.int64)
    return counts, pos[keep]


# ------------------------------------------------------------------------------ selections
def select_rows(P, fanout, streams, *, replace=False, weighted=False, method="keys", bound=None):
    """``S``: at most ``fanout`` entries of each row of a view ``P`` (node-wise rules).

    Parameters
    ----------
    P : RowView
        ``P = Q·A`` (see :func:`gather`); its values weigh the draws when ``weighted``.
    fanout : int or int array of shape (n,)
        Entries per row (``-1``: all), or one fanout per row vertex (``fanout[v]``, each
        ``>= 0`` or ``-1``).
    streams : Streams
        The rows' random streams: ``Streams.per_vertex(Q, ctx)`` (node-wise) or
        ``Streams.per_row(Q, ctx)`` (walks).
    replace, weighted : bool
    method : {"keys", "rejection", "alias", "last"}
        Weighted draws: exact keys (O(d) per row, or per draw with replacement), rejection
        against ``bound`` (with replacement; O(bound / mean value) per draw; every value must
        be ``<= bound``) or the rows' alias tables (O(1) reads per draw; the graph builds the
        table of its own weights once, 8 bytes per entry; the sample has the keys' law, not
        their bits: :class:`~spsample.engine._lazy.RowSelection`).
        ``"last"``: the last ``fanout`` entries of each row, no randomness (uniform, without
        replacement; temporal sampling's ``"last"`` on rows sorted by time).
    bound : float, optional
        Upper bound of the values, for ``method="rejection"``.

    Returns
    -------
    RowMatrix (``S``: rows of ``P`` restricted to the chosen entries, ``edge_id`` their
    positions in ``A.indices``), or a traced selection while the engine traces.

    Raises
    ------
    ArgumentError, ArgumentTypeError
        Naming the argument: a fanout that is not ``>= 1`` or ``-1`` (or a vector of the wrong
        length or with entries below ``-1``), ``weighted`` on an unvalued view, an unknown
        ``method``, ``rejection`` without replacement or without a positive finite ``bound``.
    SamplerError
        ``weighted`` on a view whose values are provably ``<= 0`` (a negative factor such as
        ``P * -2.0``: :func:`~spsample.engine._lazy.check_values`). Entries whose value is ``<= 0``
        are never drawn.
    """
    where = "select_rows"
    _check_type(where, "P", P, RowView, "a RowView (prim.gather(graph, Q))")
    _check_type(where, "streams", streams, Streams, "a Streams (Streams.per_vertex/per_row)")
    fanout, vector = _fanout_arg(where, fanout, P.graph.num_nodes)
    replace, weighted = _bool(where, "replace", replace), _bool(where, "weighted", weighted)
    if method not in ("keys", "rejection", "alias", "last"):
        fail(ArgumentError, where, "method", "must be 'keys', 'rejection', 'alias' or 'last'",
             method)
    if method == "alias" and not weighted:
        fail(ArgumentError, where, "method", "'alias' draws by the values (weighted=True)", method)
    if method == "last" and (weighted or replace):
        fail(ArgumentError, where, "method", "'last' takes a row's last entries (weighted=False, "
             "replace=False)", method)
    if weighted and P.expr is None:
        fail(ArgumentError, where, "weighted", "needs a valued view (e.g. P.with_weights())",
             show_value=False)
    if weighted:
        check_values(where, "P", P)
    if method == "rejection":
        if not (weighted and replace):
            fail(ArgumentError, where, "method", "'rejection' draws weighted with replacement "
                 "(weighted=True, replace=True)", method)
        bound = positive_number(where, "bound", bound)
    if streams.keyed_by == "column":
        fail(ArgumentError, where, "streams", "must be keyed per vertex or per row (per-column "
             "streams are for select_threshold)", streams.keyed_by)
    sel = RowSelection(P, fanout, streams, replace=replace, weighted=weighted, method=method,
                       bound=bound, fanout_vector=vector)
    return sel if (P.symbolic or streams.symbolic) else evaluate_selection(sel)


def select_threshold(P, fanout, streams):
    """``S`` by LABOR-0's rule: entry ``u`` of a row of length ``d`` is kept with probability
    ``min(1, fanout / d)`` through one uniform per (minibatch, ``u``) shared by every row.

    Parameters
    ----------
    P : RowView
    fanout : int or int array of shape (n,)
        As :func:`select_rows`.
    streams : Streams
        ``Streams.per_column(Q, ctx)``.

    Returns
    -------
    RowMatrix or a traced selection (see :class:`~spsample.engine._lazy.ThresholdSelection`).
    """
    where = "select_threshold"
    _check_type(where, "P", P, RowView, "a RowView (prim.gather(graph, Q))")
    _check_type(where, "streams", streams, Streams, "Streams.per_column(Q, ctx)")
    if streams.keyed_by != "column":
        fail(ArgumentError, where, "streams", "must be Streams.per_column(Q, ctx)",
             streams.keyed_by)
    fanout, vector = _fanout_arg(where, fanout, P.graph.num_nodes)
    sel = ThresholdSelection(P, fanout, streams)
    sel.fanout_vector = vector
    return sel if P.symbolic else evaluate_selection(sel)


def _check_type(where, name, value, cls, what):
    if not isinstance(value, cls):
        fail(ArgumentTypeError, where, name, f"must be {what}", type(value))


def _bool(where, name, value):
    if not isinstance(value, (bool, np.bool_)):
        fail(ArgumentTypeError, where, name, "must be a bool", value)
    return bool(value)


def positive_number(where, name, value):
    """``value`` as a positive finite float, or a typed error naming ``name``."""
    import numbers
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        fail(ArgumentTypeError, where, name, "must be a positive number", value)
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        fail(ArgumentError, where, name, "must be positive and finite", value)
    return value


def _fanout_arg(where, fanout, n):
    """``(fanout, vector)``: an int fanout, or ``(0, vector)`` for a per-vertex one."""
    if isinstance(fanout, (list, tuple, np.ndarray)):
        vec = _as_vector(where, "fanout", fanout, n, integer=True)
        if vec.size and vec.min() < -1:
            fail(ArgumentError, where, "fanout", "entries must be >= 0, or -1 for all",
                 int(vec.min()))
        return 0, vec
    fanout = _check_fanout(where, fanout)
    if fanout >= 2**31:
        fail(ArgumentError, where, "fanout", "must be below 2**31", fanout)
    return fanout, None


def _row_fanouts(sel, vertex):
    if sel.fanout_vector is not None:
        return sel.fanout_vector[vertex]
    return np.full(vertex.size, sel.fanout, dtype=np.int64)


def evaluate_selection(sel):
    """NumPy evaluation of a selection whose inputs are concrete: the sampled RowMatrix (its
    ``selection`` attribute is ``sel``)."""
    rules = ((RowSelection, _evaluate_rows), (ThresholdSelection, _evaluate_threshold),
             (ColumnSelection, _evaluate_columns), (GlobalSelection, _evaluate_global))
    for cls, rule in rules:
        if isinstance(sel, cls):
            S = rule(sel)
            S.selection = sel
            return S
    fail(ArgumentError, "evaluate_selection", "sel", "is not a selection", type(sel))


def probabilities_of(S):
    """The ``P`` a selection ``S`` was drawn from (traced or evaluated)."""
    sel = S.selection if isinstance(S, RowMatrix) else S
    if sel is None or not hasattr(sel, "P"):
        fail(ArgumentError, "probabilities_of", "S", "was not produced by a selection",
             show_value=False)
    return sel.P


def _evaluate_rows(sel):
    P = sel.P
    start, d = P.extents()
    s = _row_fanouts(sel, P.frontier.vertex)
    _check_row_output(P, d, s, sel.replace)
    values = None
    if sel.weighted:
        values = lambda rows, pos: P.values_at(rows, start[rows] + pos)  # noqa: E731
    counts, pos = choose_positions(d, s, sel.streams, replace=sel.replace, values=values,
                                   method=sel.method, bound=sel.bound)
    return _rows_result(P, start, counts, pos)


def _rows_result(P, start, counts, pos):
    row = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    edge_id = start[row] + pos
    return RowMatrix(_indptr_of(counts), P.graph.indices[edge_id], None, edge_id)


def _check_row_output(P, d, s, replace):
    """A typed error before allocating an output that cannot fit (3 int64 per sampled entry
    downstream)."""
    bound = np.where(s < 0, d, np.where(replace, np.where(d > 0, s, 0), np.minimum(d, s)))
    check_memory("sample", "fanout", 48 * int(bound.sum()), "a hop's sampled entries",
                 "lower the fanouts or batch_size")


def _evaluate_threshold(sel):
    P = sel.P
    start, d = P.extents()
    s = _row_fanouts(sel, P.frontier.vertex)
    batch = sel.streams.batch
    indices = P.graph.indices
    hw, key = sel.streams.hop_word, sel.streams.key
    counts, pos = threshold_positions(
        d, s, lambda rows, p: indices[start[rows] + p],
        lambda rows, u: _rng.stream_words(np.zeros(u.size, dtype=np.int64), u, hw, batch[rows],
                                          key))
    return _rows_result(P, start, counts, pos)


# ------------------------------------------------------------------------------ layer-wise


def sample_columns(P, fanout, batch, hop_word, key):
    """Pick ``fanout`` distinct columns of each row of ``P`` with probability ∝ ``P.data``.

    Efraimidis–Spirakis keys ``neg_log(open_unit(w_u)) / P[j, u]`` where ``w_u`` is word 0 of
    stream ``(u, hop_word, batch[j])``; the ``fanout`` smallest keys win (ties: smaller
    column). Rows with at most ``fanout`` columns keep all of them.

    Returns
    -------
    RowMatrix of the chosen columns (ascending), ``data`` the row's values for them.
    """
    d = P.row_lengths()
    seg = np.repeat(np.arange(d.size, dtype=np.int64), d)
    if fanout < 0:
        return P
    word = _rng.stream_words(np.zeros(P.nnz, dtype=np.int64), P.indices, hop_word,
                             batch[seg], key)
    keys = _rng.neg_log(_rng.open_unit(word)) / P.data
    order = np.lexsort((P.indices, keys, seg))
    rank = np.arange(order.size) - P.indptr[seg[order]]
    keep = np.sort(order[rank < fanout])
    return P.take(_indptr_of(np.minimum(d, fanout)), keep)


def _draws(t, batch, hop_word, key):
    """``unit53`` of words ``2t, 2t + 1`` of streams ``(NO_VERTEX, hop_word, batch)``: draw ``t``'s
    uniform in ``[0, 1)`` (elementwise; FastGCN and unweighted LADIES)."""
    w0 = _rng.stream_words(2 * t, _rng.NO_VERTEX, hop_word, batch, key)
    w1 = _rng.stream_words(2 * t + 1, _rng.NO_VERTEX, hop_word, batch, key)
    return _rng.unit53(w0, w1)


def sample_columns_by_entries(P, G, group, fanout, batch, hop_word, key):
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
            bool(np.any(group[1:] < group[:-1])) or int(group[0]) < 0 or int(group[-1]) >= k)):
        fail(ArgumentError, where, "group", f"must give each of the {G.num_rows} rows of G a row "
             f"of P in [0, {k}), non-decreasing", show_value=False)
    if batch.shape != (k,):
        fail(ArgumentError, where, "batch", f"must hold one minibatch id per row of P ({k})",
             batch.shape)
    if fanout < 0:
        return P
    entries = np.bincount(group, weights=G.row_lengths(), minlength=k).astype(np.int64)
    first_entry = _indptr_of(entries)[:-1]
    width = int(P.indices.max()) + 1 if P.nnz else 1
    chosen = []                      # keys row * width + column of the drawn columns
    rows = np.nonzero(d > fanout)[0]
    m = fanout + fanout // 4 + 16    # draws per row this round (doubled until enough)
    while rows.size:
        r = np.repeat(rows, m)       # non-decreasing, draws in order within each row
        u = _draws(np.tile(np.arange(m, dtype=np.int64), rows.size), batch[r], hop_word, key)
        e = np.minimum(np.floor(u * entries[r].astype(np.float64)).astype(np.int64), entries[r] - 1)
        drawn = r * width + G.indices[first_entry[r] + e]
        _, first = np.unique(drawn, return_index=True)     # first draw of each (row, column)
        first = np.sort(first)                              # by row, then in draw order
        rank = np.arange(first.size) - np.searchsorted(r[first], r[first], side="left")
        which = np.searchsorted(rows, r[first])
        done = np.bincount(which, minlength=rows.size) >= fanout
        chosen.append(drawn[first[(rank < fanout) & done[which]]])
        rows, m = rows[~done], 2 * m
    seg = np.repeat(np.arange(k, dtype=np.int64), d)
    keep = [np.nonzero(d[seg] <= fanout)[0]]
    if chosen:
        keep.append(np.searchsorted(seg * width + P.indices, np.concatenate(chosen)))
    return P.take(_indptr_of(np.minimum(d, fanout)), np.sort(np.concatenate(keep)))


def sample_global(cumulative, fanout, batch, hop_word, key):
    """FastGCN: ``fanout`` i.i.d. draws per minibatch from a global distribution.

    Draw ``i`` of minibatch ``j`` takes words ``2i`` and ``2i + 1`` of stream
    ``(NO_VERTEX, hop_word, batch[j])``, forms ``U = unit53(w0, w1)`` and returns the first
    column whose cumulative weight exceeds ``U * total``, clamped to the last column of positive
    weight (columns of weight 0 are never drawn).

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
    draw = np.tile(np.arange(fanout, dtype=np.int64), k)
    target = _draws(draw, np.repeat(batch, fanout), hop_word, key) * cumulative[-1]
    last_positive = int(np.searchsorted(cumulative, cumulative[-1], side="left"))
    col = np.minimum(np.searchsorted(cumulative, target, side="right"), last_positive)
    row = np.repeat(np.arange(k, dtype=np.int64), fanout)
    uniq = np.unique(row * cumulative.size + col)
    r = uniq // cumulative.size
    return RowMatrix(_indptr_of(np.bincount(r, minlength=k)), uniq % cumulative.size)


def select_columns(P, fanout, ctx):
    """``S``: ``fanout`` distinct columns per minibatch with probability ∝ ``P`` (LADIES).

    Parameters
    ----------
    P : ColumnSums
        ``column_sums(view, ctx)``. An unvalued view (every entry counts 1) is sampled by draws
        of entries (:func:`sample_columns_by_entries`), a valued one by Efraimidis–Spirakis keys
        (:func:`sample_columns`); both are successive sampling ∝ ``P``.
    fanout : int
        ``>= 1``, or ``-1`` for every column.
    ctx : HopContext

    Returns
    -------
    RowMatrix with one row per minibatch (the chosen columns, ascending), or a traced
    selection.
    """
    _check_type("select_columns", "P", P, ColumnSums, "a ColumnSums (prim.column_sums(...))")
    sel = ColumnSelection(P, _check_fanout("select_columns", fanout), ctx)
    return sel if P.symbolic else evaluate_selection(sel)


def select_global(P, fanout, ctx):
    """``S``: ``fanout`` i.i.d. draws per minibatch from a global column distribution
    (FastGCN; :func:`sample_global`), deduplicated.

    Parameters
    ----------
    P : GlobalColumns
    fanout : int, ``>= 1``
    ctx : HopContext
    """
    _check_type("select_global", "P", P, GlobalColumns, "a GlobalColumns (prim.global_columns(q))")
    n = getattr(getattr(ctx, "graph", None), "num_nodes", None)
    if n is not None and P.q.shape != (n,):
        fail(ArgumentError, "select_global", "P", f"must weigh the graph's {n} columns",
             P.q.shape)
    fanout = _check_fanout("select_global", fanout)
    if fanout < 1:
        fail(ArgumentError, "select_global", "fanout", "must be >= 1 (i.i.d. draws)", fanout)
    sel = GlobalSelection(P, fanout, ctx)
    return sel if getattr(ctx, "symbolic", False) else evaluate_selection(sel)


def _evaluate_columns(sel):
    P, ctx = sel.P, sel.ctx
    G = P.view
    if G.expr is None:
        return sample_columns_by_entries(P.matrix, G.materialize(), G.frontier.batch, sel.fanout,
                                         ctx.batch_ids, ctx.hop_word, ctx.key)
    return sample_columns(P.matrix, sel.fanout, ctx.batch_ids, ctx.hop_word, ctx.key)


def _evaluate_global(sel):
    ctx, cumulative = sel.ctx, sel.P.cumulative
    k = ctx.batch_ids.size
    if cumulative.size == 0 or cumulative[-1] <= 0:
        return RowMatrix(np.zeros(k + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    check_memory("sample", "fanout", 24 * sel.fanout * k, "the FastGCN draws",
                 "lower the FastGCN fanouts or the bulk size")
    return sample_global(cumulative, sel.fanout, ctx.batch_ids, ctx.hop_word, ctx.key)
