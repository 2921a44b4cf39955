"""Feature sources: where a minibatch's feature rows come from.

A source answers one question, ``fetch(n_id) -> rows`` (rows in the order of ``n_id``, repeats
allowed). Three kinds are built in, chosen once by :func:`as_feature_source` from the type of
what the user passed:

* :class:`ArrayFeatures` -- a NumPy array or a torch tensor in memory (a row gather);
* :class:`HDF5Features` -- an ``(n, f)`` HDF5 dataset (spsample's ``/features`` by default),
  reading only the requested rows: deduplicated, sorted, one hyperslab per touched chunk;
* anything else with a ``fetch(n_id)`` method, e.g. the distributed ``FeatureStore``, used as is.

The loader asks for the rows of a whole bulk at once (:meth:`FeatureSource.fetch_bulk`), so a
vertex shared by several minibatches of the bulk is read once.
"""

import os

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, DatasetError
from .._validate import fail

__all__ = ["FeatureSource", "ArrayFeatures", "HDF5Features", "FetchFeatures",
           "as_feature_source"]


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
        """Rows ``n_id`` (int64, shape (N,)) as an array of shape (N, f)."""
        raise NotImplementedError

    def fetch_bulk(self, n_ids):
        """Rows of several minibatches, each vertex fetched once: a list of (N_i, f) arrays."""
        if len(n_ids) == 1:
            return [self.fetch(n_ids[0])]
        allv = np.concatenate(n_ids)
        uniq, inverse = np.unique(allv, return_inverse=True)
        rows = _as_numpy(self.fetch(uniq))
        bounds = np.cumsum([0] + [a.size for a in n_ids])
        return [rows[inverse[lo:hi]] for lo, hi in zip(bounds[:-1], bounds[1:])]

    def close(self):
        """Release files or handles (idempotent)."""


class ArrayFeatures(FeatureSource):
    """Features held in memory: a NumPy array or a CPU/GPU torch tensor of shape (n, f).

    The rows of each minibatch are gathered directly (no deduplication across the bulk: a
    gather from memory is cheaper than the bookkeeping).
    """

    def __init__(self, array):
        self.array = array
        self.num_nodes = int(array.shape[0])
        self.num_features = int(array.shape[1])
        self._torch = not isinstance(array, np.ndarray)

    def fetch(self, n_id):
        if self._torch:
            import torch

            index = torch.from_dlpack(np.ascontiguousarray(n_id)).to(self.array.device)
            return self.array.index_select(0, index)
        return self.array.take(n_id, axis=0)

    def fetch_bulk(self, n_ids):
        return [self.fetch(n_id) for n_id in n_ids]


class HDF5Features(FeatureSource):
    """Feature rows read on demand from an HDF5 dataset of shape (n, f).

    Only the requested rows are read: ids are deduplicated and sorted, and each chunk (block of
    rows) that holds some of them is read once as one contiguous hyperslab, then the wanted rows
    are picked out of it. The file stays open until :meth:`close`; h5py serialises access, so
    the loader's background thread may read while the main thread trains.

    Parameters
    ----------
    source : str, os.PathLike or h5py.Dataset
        A file path (then ``key`` names the dataset inside it) or an open h5py dataset.
    key : str
        Dataset path inside the file, default ``"features"`` (spsample's layout).

    Raises
    ------
    ArgumentError, ArgumentTypeError
        The file does not exist or lacks ``key``, or the dataset is not 2-dimensional and
        numeric.
    DatasetError
        The file is not readable HDF5, or the dataset holds fewer rows than its shape
        declares; :meth:`fetch` raises it for rows a truncated or corrupt file cannot give.
    """

    def __init__(self, source, key="features"):
        import h5py

        where = "HDF5Features"
        self._file = None
        if isinstance(source, (str, os.PathLike)):
            dset = self._open(where, source, key)
        elif isinstance(source, h5py.Dataset):
            dset = source
        else:
            fail(ArgumentTypeError, where, "source", "must be a path or an h5py.Dataset",
                 type(source))
        try:
            self._check(where, dset)
        except BaseException:
            self.close()
            raise
        self.dataset = dset
        self.num_nodes, self.num_features = (int(s) for s in dset.shape)
        self.dtype = dset.dtype
        self._block = int(dset.chunks[0]) if dset.chunks else 1024
        self.rows_read = 0        # statistics: rows transferred from the file (incl. chunk slack)

    def _open(self, where, source, key):
        """Open the file and return its dataset ``key`` (typed errors for every failure)."""
        import h5py

        if not os.path.exists(source):
            fail(ArgumentError, where, "source", "does not exist", str(source))
        try:
            self._file = h5py.File(source, "r")
        except OSError as exc:
            fail(DatasetError, where, "source", f"is not a readable HDF5 file ({exc})",
                 str(source))
        try:
            dset = self._file.get(key)
        except (OSError, KeyError, RuntimeError) as exc:
            self.close()
            fail(DatasetError, where, "key", f"cannot be read from {str(source)!r} ({exc})",
                 key)
        if not isinstance(dset, h5py.Dataset):
            self.close()
            fail(ArgumentError, where, "key", f"is not a dataset of {str(source)!r}", key)
        return dset

    @staticmethod
    def _check(where, dset):
        """2-D, numeric, and holding the rows its shape declares."""
        from ..io._untrusted import check_stored

        if dset.ndim != 2:
            fail(ArgumentError, where, "source", "must be a 2-dimensional (n, f) dataset",
                 dset.shape)
        if dset.dtype.kind not in "biuf":
            fail(ArgumentTypeError, where, "source", f"must hold real numbers, not "
                 f"{dset.dtype}", show_value=False)
        try:
            check_stored(where, dset.file.filename, dset)
        except (OSError, RuntimeError) as exc:
            fail(DatasetError, where, "source", f"cannot be inspected ({exc})", dset.name)

    def fetch(self, n_id):
        n_id = np.asarray(n_id, dtype=np.int64)
        uniq, inverse = np.unique(n_id, return_inverse=True)
        return self._read_sorted(uniq)[inverse]

    def fetch_bulk(self, n_ids):
        allv = np.concatenate(n_ids)
        uniq, inverse = np.unique(allv, return_inverse=True)
        rows = self._read_sorted(uniq)
        bounds = np.cumsum([0] + [a.size for a in n_ids])
        return [rows[inverse[lo:hi]] for lo, hi in zip(bounds[:-1], bounds[1:])]

    def _read_sorted(self, uniq):
        """Rows of the sorted unique ids ``uniq``: one slice read per touched block."""
        out = np.empty((uniq.size, self.num_features), dtype=self.dtype)
        if uniq.size == 0:
            return out
        block = uniq // self._block
        starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
        ends = np.r_[starts[1:], uniq.size]
        for s, e in zip(starts.tolist(), ends.tolist()):
            lo, hi = int(uniq[s]), int(uniq[e - 1]) + 1
            try:
                out[s:e] = self.dataset[lo:hi][uniq[s:e] - lo]
            except (OSError, ValueError, RuntimeError) as exc:
                raise DatasetError(f"HDF5Features.fetch: cannot read rows [{lo}, {hi}) of "
                                   f"{self.dataset.name} (truncated or corrupt file?): "
                                   f"{exc}") from exc
            self.rows_read += hi - lo
        return out

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class FetchFeatures(FeatureSource):
    """Wraps any object with a ``fetch(n_id)`` method (e.g. ``spsample.distributed.FeatureStore``).

    The bulk's vertices are deduplicated and fetched in one call. A distributed store's fetch
    is collective: every rank must call it the same number of times, which the loader does (it
    runs the same number of bulks on every rank).
    """

    def __init__(self, store):
        self.store = store
        self.num_nodes = _maybe_int(getattr(store, "num_nodes", None))
        self.num_features = _maybe_int(getattr(store, "num_features", None))

    def fetch(self, n_id):
        return self.store.fetch(n_id)


def _maybe_int(value):
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _as_numpy(rows):
    if isinstance(rows, np.ndarray):
        return rows
    if hasattr(rows, "detach"):
        return rows.detach().cpu().numpy()
    if hasattr(rows, "get") and hasattr(rows, "__cuda_array_interface__"):
        return rows.get()
    return np.asarray(rows)


def _hdf5_source(path):
    """An spsample file's features: :class:`HDF5Features` for a dataset, the whole CSR
    matrix in memory (:class:`SparseFeatures`) for sparse features (version 2 files)."""
    import h5py

    from ..io._hdf5 import _is_csr_group

    try:
        with h5py.File(path, "r") as f:
            sparse = "features" in f and _is_csr_group(f["features"])
    except OSError:
        sparse = False  # HDF5Features reports it
    if not sparse:
        return HDF5Features(path)
    from ..io._hdf5 import read_sparse_features
    from ._sparse import SparseFeatures

    return SparseFeatures(read_sparse_features(path))


def as_feature_source(value, where="Loader", name="features"):
    """Turn what the user passed into a :class:`FeatureSource` (``None`` stays ``None``).

    Accepts a NumPy array, a torch tensor, a ``scipy.sparse`` matrix (batches then carry
    :class:`~spsample.loader.SparseRows`), a path to an HDF5 file (``/features``), an
    ``h5py.Dataset``, a :class:`FeatureSource`, or any object with ``fetch(n_id)``.
    """
    if value is None or isinstance(value, FeatureSource):
        return value
    if type(value).__module__.startswith("scipy.sparse"):
        from ._sparse import SparseFeatures

        if len(value.shape) != 2:
            fail(ArgumentError, where, name, "must be 2-dimensional (num_nodes, f)",
                 value.shape)
        return SparseFeatures(value)
    if isinstance(value, np.ndarray):
        if value.ndim != 2:
            fail(ArgumentError, where, name, "must be 2-dimensional (num_nodes, f)", value.shape)
        if value.dtype == object or value.dtype.kind not in "biuf":
            fail(ArgumentTypeError, where, name, f"must hold real numbers, not {value.dtype}",
                 show_value=False)
        return ArrayFeatures(value)
    if type(value).__module__.startswith("torch") and hasattr(value, "index_select"):
        if value.dim() != 2:
            fail(ArgumentError, where, name, "must be 2-dimensional (num_nodes, f)",
                 tuple(value.shape))
        return ArrayFeatures(value)
    if isinstance(value, (str, os.PathLike)):
        return _hdf5_source(value)
    if type(value).__module__.startswith("h5py"):
        return HDF5Features(value)
    if callable(getattr(value, "fetch", None)):
        return FetchFeatures(value)
    fail(ArgumentTypeError, where, name, "must be an array, a torch tensor, an HDF5 path or "
         "dataset, or an object with fetch(n_id)", type(value))
