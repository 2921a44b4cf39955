"""Checks of a graph's entries read from a file, piece by piece, against checked row pointers.

The lean in-memory loader (:mod:`spsample.io._graph_read`) checks each piece it reads, and the
out-of-core graph (:class:`~spsample.DiskGraph`) each region of the file before a kernel reads
it, for what :meth:`spsample.Graph.from_csr` guarantees of a canonical graph: column ids in
``[0, n)``, weights finite and non-negative, and column ids strictly increasing within each row.
:func:`entry_problems` runs ``native/verify.h`` when the native kernels are on, else
:func:`first_problems`, its NumPy oracle (the same answers).
"""

import numpy as np
from .. import native as _native

__all__ = ["entry_problems", "first_problems", "NO_PROBLEM"]

#: What :func:`entry_problems` returns for entries that pass every check.
NO_PROBLEM = (-1, -1, -1)


def entry_problems(indptr, indices, weights=None, *, base=0, prev=None, starts=None,
                   ends=None, num_nodes=None):
    """The first entry failing each check, over the ranges ``[starts[i], ends[i])``.

    Parameters
    ----------
    indptr : int64, shape (n + 1,)
        Row pointers, already checked (from 0, non-decreasing).
    indices : int64, shape (m,)
        Column ids of the entries ``[base, base + m)``.
    weights : float64, shape (m,), optional
    base : int
        Position of ``indices[0]`` among the graph's entries.
    prev : int, optional
        The column id of entry ``base - 1``, compared with entry ``base`` (unless a row starts
        there); ``None``: no comparison there.
    starts, ends : int64 arrays, optional
        Ranges of positions inside ``[base, base + m)``; default: every entry held.
    num_nodes : int, optional
        Column ids must lie in ``[0, num_nodes)``; default ``len(indptr) - 1`` (rows of a
        square graph; other rows, e.g. some rows of one read back to back, name it).

    Returns
    -------
    (int, int, int)
        The lowest position holding a column id outside ``[0, n)``, a weight that is not
        finite or is negative, and a column id not above the one before it in its row; ``-1``
        where none (:data:`NO_PROBLEM` when all pass).
    """
    n = indptr.size - 1 if num_nodes is None else int(num_nodes)
    if starts is None:
        starts = np.array([base], dtype=np.int64)
        ends = np.array([base + indices.size], dtype=np.int64)
    if _native.AVAILABLE and _native.enabled():
        found = _native.check_entries(indptr, n, indices, weights, int(base),
                                      None if prev is None else int(prev), starts, ends)
        return tuple(int(f) for f in found)
    return first_problems(indptr, indices, weights, base, prev, starts, ends, n)


def first_problems(indptr, indices, weights, base, prev, starts, ends, num_nodes):
    """:func:`entry_problems` by NumPy, range by range (the oracle of ``native/verify.h``)."""
    found = [-1, -1, -1]
    n = num_nodes
    for a, b in zip(np.asarray(starts).tolist(), np.asarray(ends).tolist()):
        if b <= a:
            continue
        vals = indices[a - base:b - base]
        bad = [np.flatnonzero((vals < 0) | (vals >= n))]
        if weights is not None:
            w = weights[a - base:b - base]
            bad.append(np.flatnonzero(~(np.isfinite(w) & (w >= 0))))
        else:
            bad.append(np.zeros(0, dtype=np.int64))
        bad.append(_unsorted(indptr, indices, base, prev, a, vals))
        for c, positions in enumerate(bad):
            if positions.size:
                e = a + int(positions[0]) if c < 2 else int(positions[0])
                found[c] = e if found[c] < 0 else min(found[c], e)
    return tuple(found)


def _unsorted(indptr, indices, base, prev, a, vals):
    """Positions (absolute) in ``[a, a + len(vals))`` whose id does not exceed the one before
    it in the same row; the entry before ``a`` is ``indices``' own or ``prev``."""
    before = indices[a - 1 - base] if a > base else prev
    values = vals if before is None else np.concatenate([[before], vals])
    first = a if before is None else a - 1
    row_start = np.zeros(values.size, dtype=bool)
    lo, hi = np.searchsorted(indptr, [first + 1, first + values.size])
    row_start[indptr[lo:hi] - first] = True
    return first + 1 + np.flatnonzero((np.diff(values) <= 0) & ~row_start[1:])
