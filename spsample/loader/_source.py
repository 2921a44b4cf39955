"""The feature-source interface: :class:`FeatureSource` (``fetch(n_id) -> rows``, a bulk's
rows fetched once per vertex) and the checks and row spreading every source shares.

The sources themselves live in :mod:`spsample.loader._features` (dense arrays, HDF5, stores)
and :mod:`spsample.loader._sparse` (``scipy.sparse`` matrices).
"""

import numpy as np

from .._errors import ArgumentTypeError
from .._validate import as_index_array, check_range, fail
from ._buffers import DEFAULT_POOL, gather_rows

__all__ = ["FeatureSource", "checked_ids", "checked_bulk"]


class FeatureSource:
    """Base class: ``fetch(n_id)`` returns the feature rows of ``n_id`` (in that order).

    Attributes
    ----------
    num_nodes : int or None
        Number of rows (``None`` when the source cannot tell, e.g. a remote store).
    num_features : int or None
        Row width.
    """

    num_nodes = None
    num_features = None

    def fetch(self, n_id):
        """Rows ``n_id`` (int64, shape (N,)) as an array of shape (N, f).

        Raises
        ------
        ArgumentTypeError, ArgumentError
            (The built-in sources.) ``n_id`` does not hold integers, is not 1-D, or has an id
            outside ``[0, num_nodes)`` (``-1`` is never "the last row").
        """
        raise NotImplementedError

    def fetch_bulk(self, n_ids):
        """Rows of several minibatches, each vertex fetched once: a list of (N_i, f) arrays."""
        if len(n_ids) == 1:
            return [self.fetch(n_ids[0])]
        n_ids = checked_bulk(f"{type(self).__name__}.fetch_bulk", n_ids, self.num_nodes)
        allv = np.concatenate(n_ids)
        uniq, inverse = np.unique(allv, return_inverse=True)
        rows = self.fetch(uniq)
        if type(rows).__module__.startswith("scipy.sparse"):     # CSR rows stay sparse
            return _split_sparse(rows, inverse, n_ids)
        return _spread(_as_numpy(rows), inverse, n_ids)

    def close(self):
        """Release files or handles (idempotent)."""


def checked_ids(where, n_id, num_nodes, name="n_id"):
    """``n_id`` as a 1-D int64 array of row ids in ``[0, num_nodes)`` (not copied when it
    already is one; ``num_nodes=None``: any id >= 0).

    Raises
    ------
    ArgumentTypeError
        ``n_id`` does not hold integers (floats, bools, strings).
    ArgumentError
        ``n_id`` is not 1-D, or has a negative id or one ``>= num_nodes``.
    """
    if isinstance(n_id, np.ndarray) and n_id.dtype == np.int64 and n_id.ndim == 1:
        ids = n_id
    else:
        ids = as_index_array(where, name, n_id)
    check_range(where, name, ids, 0, np.iinfo(np.int64).max if num_nodes is None else num_nodes)
    return ids


def checked_bulk(where, n_ids, num_nodes):
    """:func:`checked_ids` of each minibatch's ids, as a list."""
    if isinstance(n_ids, np.ndarray) or not hasattr(n_ids, "__len__"):
        fail(ArgumentTypeError, where, "n_ids", "must be a sequence of id arrays (one per "
             "minibatch)", type(n_ids))
    return [checked_ids(where, n_id, num_nodes, "n_ids") for n_id in n_ids]


def _split(rows, n_ids):
    """``rows`` (sum of sizes, f) cut into one view per ``n_ids`` entry."""
    bounds = np.cumsum([0] + [a.size for a in n_ids]).tolist()
    return [rows[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


def _split_sparse(rows, inverse, n_ids):
    """CSR ``rows`` of a bulk's unique vertices as one CSR matrix per minibatch (its rows in
    ``n_ids`` order: ``rows[inverse]`` cut by minibatch)."""
    bounds = np.cumsum([0] + [a.size for a in n_ids]).tolist()
    return [rows[inverse[lo:hi]] for lo, hi in zip(bounds[:-1], bounds[1:])]


def _spread(rows, inverse, n_ids):
    """The bulk's rows ``rows[inverse]`` (each minibatch's in ``n_ids`` order) gathered into
    one pooled buffer, cut into one view per minibatch."""
    rows = np.ascontiguousarray(rows)
    if rows.dtype.kind not in "biuf" or not rows.dtype.isnative or not rows.flags.writeable:
        return _split(rows[inverse], n_ids)
    out = DEFAULT_POOL.empty((inverse.size,) + rows.shape[1:], rows.dtype)
    import torch

    gather_rows(torch.from_numpy(rows), inverse, out)
    return _split(out, n_ids)


def _as_numpy(rows):
    if isinstance(rows, np.ndarray):
        return rows
    if hasattr(rows, "detach"):
        return rows.detach().cpu().numpy()
    if hasattr(rows, "get") and hasattr(rows, "__cuda_array_interface__"):
        return rows.get()
    return np.asarray(rows)
