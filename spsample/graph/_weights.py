"""Whole-graph quantities of the layer-wise samplers (LADIES, FastGCN) and the native kernels'
column tables, computed from a graph's arrays: the edge weights scaled by a power of two,
FastGCN's column weights, the uint32 column ids and the layer-wise kernel's internal ids.

The graphs compute them through these functions and memoise them (:class:`~spsample.Graph`
and its relation graphs in memory; the disk and distributed graphs sum the same terms in the
same order from their rows: see :mod:`spsample.graph._source`). Callers ask a graph's
methods (``graph.layerwise_weights()``, ``graph.column_weights()``, ...); the functions
:func:`layerwise_weights` and :func:`column_weights` below are those methods' old spellings.
"""

import numpy as np

__all__ = ["layerwise_weights", "layerwise_scale", "column_weights", "scaled_weights",
           "column_sums", "uint32_columns", "column_fence", "internal_columns", "alias_tables",
           "ALIAS_ALWAYS"]


def layerwise_weights(graph):
    """``graph.layerwise_weights()``: the edge weights scaled by :func:`layerwise_scale`.

    Returns
    -------
    float64, shape (num_edges,), read-only (memoised by the graph); ``None`` when unweighted.
    """
    return graph.layerwise_weights()


def column_weights(graph):
    """``graph.column_weights()``: FastGCN's ``q[u] = Σ_v A[v,u]²`` and its prefix sums.

    Returns
    -------
    (q, cumulative) : float64 arrays of shape (n,), read-only
    """
    return graph.column_weights()


def layerwise_scale(top):
    """The power of two :func:`scaled_weights` multiplies the weights by, given the largest
    ``top``: ``2**-e`` with ``top = m * 2**e``, ``0.5 <= m < 1`` (1 when ``top <= 0``), at most
    ``2**1023`` (the largest power of two a float64 holds; ``2**-e`` itself overflows for a
    subnormal ``top``). The in-memory, on-disk and distributed graphs all scale by it."""
    return 2.0 ** min(-int(np.frexp(top)[1]), 1023) if top > 0 else 1.0


def scaled_weights(weights):
    """The edge weights scaled by a power of two, ``2**-e``, so that the largest is in
    ``[0.5, 1)``: the values layer-wise samplers square and sum. Every selection and edge weight
    they produce is invariant to scaling ``A`` (sampling ∝ ``A∘A``, values row-normalised), and
    a power of two scales exactly, so any finite positive weights work (1e-200 and 1e200
    included) with the same bits as unscaled weights in the normal range. An entry whose scaled
    weight squares to 0 (below ``2**-537`` of the largest) counts as weight 0. Subnormal weights
    (all below ``2**-1022``) are scaled by ``2**1023`` (:func:`layerwise_scale`), exactly: the
    largest lands in ``[2**-51, 1)`` and none squares to 0.

    Parameters
    ----------
    weights : float64, shape (nnz,)

    Returns
    -------
    float64, shape (nnz,), a new array
    """
    top = float(weights.max()) if weights.size else 0.0
    return weights * layerwise_scale(top)


def column_sums(indices, scaled, num_nodes):
    """FastGCN's ``q[u] = Σ_v A[v,u]²`` summed in CSR order (one add at a time, bincount's),
    from the column ids and the scaled weights (``None``: unweighted, 1 per entry).

    Parameters
    ----------
    indices : int64, shape (nnz,)
    scaled : float64, shape (nnz,), or None
        :func:`scaled_weights` of the graph's weights.
    num_nodes : int

    Returns
    -------
    (q, cumulative) : float64 arrays of shape (num_nodes,) (``cumulative``: serial prefix sums)
    """
    sq = None if scaled is None else scaled * scaled
    q = np.bincount(indices, weights=sq, minlength=num_nodes).astype(np.float64)
    return q, np.cumsum(q)


def uint32_columns(indices, filled):
    """The column ids as uint32 (4 bytes per edge: the row-wise kernel's random reads of sampled
    columns touch half the memory), built in place in the buffer ``filled(dtype, size, fill)``
    returns (:func:`~spsample.graph._graph.frozen_filled`: one copy, frozen).

    Returns
    -------
    uint32, shape (nnz,)
    """
    def fill(pos, piece):
        np.copyto(piece, indices[pos:pos + piece.size], casting="unsafe")
    return filled(np.uint32, len(indices), fill)


#: Columns per fence entry (:func:`column_fence`): 16 uint32 columns are one 64-byte line.
FENCE_STRIDE = 16


def column_fence(indices32):
    """Every 16th column of ``indices32``, from the first one whose address is a multiple of
    64 bytes: the row-wise kernel's membership test (node2vec's lookups) searches this small
    array and then reads one cache line of the row (``native/select.h``).

    Parameters
    ----------
    indices32 : uint32, shape (nnz,)
        The columns, in the memory the kernel will read (the phase depends on its address).

    Returns
    -------
    (fence, phase) : uint32 array of shape (ceil((nnz - phase) / 16),), int in [0, 16)
        ``fence[j] = indices32[phase + 16 j]``.
    """
    addr = indices32.ctypes.data
    phase = (-addr % 64) // 4 if addr % 4 == 0 else 0
    phase = min(phase, len(indices32))
    return np.ascontiguousarray(indices32[phase::FENCE_STRIDE]), phase


def internal_columns(indices, n, filled=None):
    """The layer-wise kernel's internal column ids: columns ranked by in-degree (descending, ties
    by id), so that the hubs most entries point to share a few cache lines of its vertex-indexed
    arrays. Results do not depend on it (see ``native/layerwise.h``).

    Parameters
    ----------
    indices : int64, shape (nnz,)
    n : int
        Number of vertices.
    filled : callable, optional
        ``filled(dtype, size, fill)`` building the ``indices32`` buffer in place
        (:func:`~spsample.graph._graph.frozen_filled`); a plain array when ``None``.

    Returns
    -------
    indices32 : uint32, shape (nnz,)
        ``internal_of[indices]``: the CSR's columns as internal ids (rows keep their order).
    internal_of, vertex_of : uint32, shape (n,)
        Inverse permutations: vertex -> internal id, internal id -> vertex.
    """
    in_degree = np.bincount(indices, minlength=n)
    vertex_of = np.argsort(-in_degree, kind="stable").astype(np.uint32)
    internal_of = np.empty(n, dtype=np.uint32)
    internal_of[vertex_of] = np.arange(n, dtype=np.uint32)
    if filled is None:
        return internal_of[indices], internal_of, vertex_of

    def fill(pos, piece):            # frozen in place: the graph's memo keeps it as it is
        np.take(internal_of, indices[pos:pos + piece.size], out=piece)
    return filled(np.uint32, len(indices), fill), internal_of, vertex_of


#: Weights for which the native weighted rule screens keys without logarithms (select.h:
#: KEY_W_MIN, KEY_W_MAX); a row with an eligible weight outside has no maximum in
#: :func:`row_weight_stats`.
KEY_W_RANGE = (2.0**-900, 2.0**900)


#: Weights the native weighted rule may read as float32 (select.h: SCREEN32_W_MIN,
#: SCREEN32_W_MAX): :func:`screen_weights` makes float32 copies only when every positive weight
#: of the graph lies in this range.
SCREEN32_W_RANGE = (2.0**-30, 2.0**30)


def screen_weights(weights, filled=None):
    """float32 copies of ``weights`` for the native weighted rule, or ``None``.

    The rule (select.h) reads a row's weights once per threshold to rule out the entries whose
    key cannot be among the ``s`` smallest, then ranks the candidates left; it reads these
    copies instead of the float64 weights (half the bytes) and goes back to the float64 weights
    only where two candidates' keys are too close for the copies to order them. Its margins
    cover the float32 rounding of weights in :data:`SCREEN32_W_RANGE`, so the copies are made
    only when every positive weight lies there (zero, negative and NaN weights are never
    eligible and keep their sign or NaN). The samples do not depend on the copies.

    Parameters
    ----------
    weights : ndarray, float64, shape (nnz,)
    filled : callable, optional
        ``filled(dtype, size, fill)`` building the copies in place
        (:func:`~spsample.graph._graph.frozen_filled`); a plain array when ``None``.

    Returns
    -------
    ndarray, float32, shape (nnz,), or None
        ``weights.astype(np.float32)``; ``None`` when a positive weight is outside the range
        (the rule then reads the float64 weights, with the same result).
    """
    w = np.asarray(weights, dtype=np.float64)
    lo, hi = SCREEN32_W_RANGE
    if np.any((w > 0) & ~((w >= lo) & (w <= hi))):
        return None
    if filled is None:
        return w.astype(np.float32)

    def fill(pos, piece):
        np.copyto(piece, w[pos:pos + piece.size], casting="same_kind")
    return filled(np.float32, len(w), fill)


def row_weight_stats(indptr, weights):
    """Per row: ``(eligible, wmax, wsum)`` -- how many weights are ``> 0``, their maximum (NaN
    when one is outside :data:`KEY_W_RANGE`, 0 when there are none) and about their sum. The
    native weighted rule (select.h) screens a row's keys against ``wmax`` without reading its
    weights.

    Parameters
    ----------
    indptr : ndarray, int64, shape (n + 1,)
    weights : ndarray, float64, shape (nnz,)

    Returns
    -------
    ndarray, float64, shape (n * 3,)
        Row ``v``'s statistics at ``[3 v, 3 v + 3)``.
    """
    w = np.asarray(weights, dtype=np.float64)
    indptr = np.asarray(indptr, dtype=np.int64)
    n = indptr.size - 1
    eligible = w > 0
    lo, hi = KEY_W_RANGE
    odd = eligible & ~((w >= lo) & (w <= hi))
    wpos = np.where(eligible, w, 0.0)
    out = np.zeros((n, 3), dtype=np.float64)
    rows = np.flatnonzero(indptr[1:] > indptr[:-1])
    if rows.size:
        starts = indptr[rows]
        out[rows, 0] = np.add.reduceat(eligible.astype(np.int64), starts)
        out[rows, 1] = np.maximum.reduceat(wpos, starts)
        out[rows, 2] = np.add.reduceat(wpos, starts)
        bad = np.add.reduceat(odd.astype(np.int64), starts) > 0
        out[rows[bad], 1] = np.nan
    return out.reshape(-1)


#: The alias table's threshold of an entry that is always kept (``2**32 - 1``; its alias is
#: itself, so the one word it rejects changes nothing).
ALIAS_ALWAYS = 0xFFFFFFFF


def alias_tables(indptr, weights):
    """Walker's alias table of every row's weights, built by Vose's method, for the alias rule
    of :func:`~spsample.primitives.select_rows` (``method="alias"``).

    Row ``v`` of length ``d`` draws position ``i`` with ``uniform_int(w0, d)`` and keeps it when
    ``w1 < threshold[i]``, else takes ``alias[i]``: position ``p`` comes up with probability
    ``(threshold[p] + sum over the i aliased to p of (2**32 - threshold[i])) / (d 2**32)``,
    which is ``max(weight, 0) / row sum`` up to 2^-32 per entry. Entries of weight ``<= 0`` (or
    NaN) have threshold 0 and alias a positive entry: they never come up.

    The construction is Vose's, row by row, in float64 and in a fixed order, so that every
    implementation gives the same table: the row sum ``W`` is summed left to right; entry ``i``
    gets ``x_i = (max(w_i, 0) * d) / W``; the small stack holds the positive entries with
    ``x < 1`` in ascending order, then the zero ones (on top); the large stack the entries with
    ``x >= 1`` in ascending order. While both are non-empty: pop ``l`` (small) and ``g`` (large);
    ``threshold[l] = floor(x_l 2**32)``, ``alias[l] = g``; ``x_g = (x_g + x_l) - 1``; push ``g``
    on the small stack if ``x_g < 1``, back on the large one otherwise. What is left keeps
    itself (threshold :data:`ALIAS_ALWAYS`), except a zero entry, which aliases the row's first
    positive entry. ``spsample.engine._reference`` builds the same table row by row.

    Parameters
    ----------
    indptr : ndarray, int64, shape (n + 1,)
    weights : ndarray, float64, shape (nnz,)

    Returns
    -------
    table : ndarray, uint32, shape (nnz, 2)
        ``[threshold, alias]`` of each entry; ``alias`` is a position within the row.
    share : ndarray, float64, shape (n,)
        Each row's largest positive weight divided by ``W`` (0 for a row without one): the
        rule draws a row of fanout ``s`` from its table only when ``s * share`` is at most
        ``ALIAS_SHARE_MAX`` (2, :mod:`spsample.engine._lazy`).
    finite : ndarray, bool, shape (n,)
        Whether each row's positive weights sum to a finite float64 (a row where they do not
        has no table: its entries keep themselves and it must not be drawn from).

    Complexity: O(nnz) work in O(max degree) vectorised steps.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    n, nnz = indptr.size - 1, w.size
    d = np.diff(indptr)
    row = np.repeat(np.arange(n, dtype=np.int64), d)
    base = indptr[:-1]
    wpos = np.where(w > 0, w, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):   # bincount adds in storage order
        total = np.bincount(row, weights=wpos, minlength=n).astype(np.float64)
    finite = np.isfinite(total)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = (wpos * d[row].astype(np.float64)) / total[row]
    usable = finite[row] & (total[row] > 0)
    small_entry = usable & (x < 1.0)
    large_entry = usable & ~small_entry
    zero = wpos == 0
    small, n_small = _stack(base, row, np.flatnonzero(small_entry), zero, nnz, n)
    large, n_large = _stack(base, row, np.flatnonzero(large_entry), None, nnz, n)
    threshold = np.full(nnz, ALIAS_ALWAYS, dtype=np.uint32)
    alias = np.arange(nnz, dtype=np.int64)
    _pair_stacks(base, small, n_small, large, n_large, x, threshold, alias)
    _alias_left_zero_entries(indptr, row, wpos, zero, threshold, alias)
    table = np.empty((nnz, 2), dtype=np.uint32)
    table[:, 0] = threshold
    table[:, 1] = alias - base[row]
    largest = np.zeros(n, dtype=np.float64)
    np.maximum.at(largest, row, wpos)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(finite & (total > 0), largest / total, 0.0)
    return table, share, finite


def _stack(base, row, entries, zero, nnz, n):
    """A stack per row in the row's own slots of one array: ``entries`` (ascending), those
    that are ``zero`` last (on top). Returns ``(stack, height)``."""
    r = row[entries]
    if zero is not None:
        order = np.lexsort((zero[entries], r))      # by row, non-zero first, stable
        entries, r = entries[order], r[order]
    height = np.bincount(r, minlength=n).astype(np.int64)
    slot = np.arange(entries.size, dtype=np.int64) - (np.cumsum(height) - height)[r]
    stack = np.empty(nnz, dtype=np.int64)
    stack[base[r] + slot] = entries
    return stack, height


def _pair_stacks(base, small, n_small, large, n_large, x, threshold, alias):
    """Vose's pairing loop, every row with both stacks non-empty in step."""
    live = np.flatnonzero((n_small > 0) & (n_large > 0))
    while live.size:
        b = base[live]
        lo = small[b + n_small[live] - 1]
        hi = large[b + n_large[live] - 1]
        threshold[lo] = np.floor(x[lo] * 4294967296.0).astype(np.uint32)
        alias[lo] = hi
        x[hi] = (x[hi] + x[lo]) - 1.0
        n_small[live] -= 1
        moved = x[hi] < 1.0
        to = live[moved]
        small[base[to] + n_small[to]] = hi[moved]
        n_small[to] += 1
        n_large[to] -= 1
        live = live[(n_small[live] > 0) & (n_large[live] > 0)]


def _alias_left_zero_entries(indptr, row, wpos, zero, threshold, alias):
    """Zero entries that no pairing reached alias their row's first positive entry."""
    left = np.flatnonzero(zero & (threshold == ALIAS_ALWAYS))
    if left.size == 0:
        return
    positive = np.flatnonzero(wpos > 0)
    first = np.searchsorted(positive, indptr[row[left]])
    has = first < positive.size
    has[has] = row[positive[first[has]]] == row[left[has]]
    threshold[left] = 0
    alias[left[has]] = positive[first[has]]
