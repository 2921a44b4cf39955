"""Row-compressed matrices of one hop (``P``, ``S``, ``Q_b·(A∘A)``) and the segment helpers
they are built with: concrete arrays, below the lazy vocabulary (:mod:`._lazy`) that evaluates
onto them and the selection rules (:mod:`._primitives`) that sample them."""

from dataclasses import dataclass

import numpy as np

from .._errors import ArgumentError
from .._validate import fail

__all__ = ["RowMatrix", "segment_arange", "column_accumulate"]


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
    selection: object = None     # the selection this matrix was evaluated from, if any

    @property
    def num_rows(self):
        return self.indptr.size - 1

    @property
    def nnz(self):
        return self.indices.size

    def row_lengths(self):
        return np.diff(self.indptr)

    def take(self, keep_indptr, keep):
        """The sub-matrix of entries ``keep`` (indices into this matrix), rows ``keep_indptr``."""
        return RowMatrix(keep_indptr, self.indices[keep],
                         None if self.data is None else self.data[keep],
                         None if self.edge_id is None else self.edge_id[keep])


def segment_arange(counts):
    """Concatenated ``arange(c)`` for each ``c`` in ``counts``, and the segment of each element.

    Returns
    -------
    offset : int64, shape (sum(counts),)
    segment : int64, shape (sum(counts),)

    Raises
    ------
    ArgumentError
        A negative count.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size and counts.min() < 0:
        fail(ArgumentError, "segment_arange", "counts", "must be >= 0", int(counts.min()))
    segment = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    return np.arange(segment.size, dtype=np.int64) - starts[segment], segment


def _indptr_of(counts):
    out = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def column_accumulate(P_gathered, group, num_groups, *, square=True):
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
    seg = np.repeat(group, P_gathered.row_lengths())
    if P_gathered.data is None:
        vals = np.ones(P_gathered.nnz)
    else:
        vals = P_gathered.data * P_gathered.data if square else P_gathered.data
    n_cols = int(P_gathered.indices.max()) + 1 if P_gathered.nnz else 1
    key = seg * n_cols + P_gathered.indices
    uniq, inverse = np.unique(key, return_inverse=True)
    sums = np.bincount(inverse.ravel(), weights=vals, minlength=uniq.size)
    nonzero = sums > 0
    uniq, sums = uniq[nonzero], sums[nonzero]
    g = uniq // n_cols
    return RowMatrix(_indptr_of(np.bincount(g, minlength=num_groups)), uniq % n_cols, sums)
