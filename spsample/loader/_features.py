"""Feature sources: where a minibatch's feature rows come from.

A source answers one question, ``fetch(n_id) -> rows`` (rows in the order of ``n_id``, repeats
allowed). Three kinds are built in, chosen once by :func:`as_feature_source` from the type of
what the user passed:

* :class:`ArrayFeatures` -- a NumPy array or a torch tensor in memory (a row gather);
* :class:`HDF5Features` -- an ``(n, f)`` HDF5 dataset (spsample's ``/features`` by default),
  reading only the requested rows: deduplicated, sorted, one hyperslab per touched chunk;
* anything else with a ``fetch(n_id)`` method, e.g. the distributed ``FeatureStore``, used as is.

The loader asks for the rows of a whole bulk at once (:meth:`FeatureSource.fetch_bulk`), so a
vertex shared by several minibatches of the bulk is read once (from a file or a remote store),
and the bulk's rows land in one buffer of the shared :class:`~spsample.loader._buffers.BufferPool`
(memory of earlier bulks whose batches are gone, not freshly faulted-in pages).
"""

import os
import warnings

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, DatasetError
from .._validate import fail, memory_limit
from ..io._h5 import is_csr_group
from ..io._hdf5 import read_sparse_features
from ..io._untrusted import check_stored
from ._buffers import DEFAULT_POOL, gather_rows
from ._source import FeatureSource, _split, _spread, checked_bulk, checked_ids
from ._sparse import SparseFeatures

__all__ = ["FeatureSource", "ArrayFeatures", "HDF5Features", "FetchFeatures",
           "as_feature_source"]

#: HDF5 reads: touched chunks closer than this are read in one call; one read at most this.
MERGE_BYTES = 1 << 18
RUN_BYTES = 1 << 25


class ArrayFeatures(FeatureSource):
    """Features held in memory: a NumPy array or a CPU/GPU torch tensor of shape (n, f).

    The rows of a bulk are gathered directly (no deduplication across the bulk: a gather from
    memory is cheaper than the bookkeeping) into one reused buffer, minibatch after minibatch
    (each minibatch's rows are a view of it); a GPU tensor is gathered on its device.
    """

    def __init__(self, array, pool=None):
        self.array = array
        self.num_nodes = int(array.shape[0])
        self.num_features = int(array.shape[1])
        self._torch = not isinstance(array, np.ndarray)
        self.pool = DEFAULT_POOL if pool is None else pool
        self._cpu = _cpu_tensor(array)

    def fetch(self, n_id):
        return self._fetch_bulk([checked_ids("ArrayFeatures.fetch", n_id, self.num_nodes)])[0]

    def fetch_bulk(self, n_ids):
        return self._fetch_bulk(checked_bulk("ArrayFeatures.fetch_bulk", n_ids, self.num_nodes))

    def _fetch_bulk(self, n_ids):
        if self._cpu is None:                      # a GPU tensor: gather on its device
            import torch

            return [self.array.index_select(0, torch.from_dlpack(np.ascontiguousarray(n_id))
                                            .to(self.array.device)) for n_id in n_ids]
        flat = np.concatenate(n_ids) if len(n_ids) > 1 else n_ids[0]
        out = self.pool.empty((flat.size, self.num_features), _numpy_dtype(self._cpu))
        gather_rows(self._cpu, flat, out)
        if self._torch:
            import torch

            out = torch.from_numpy(out)
        return _split(out, n_ids)


class HDF5Features(FeatureSource):
    """Feature rows read on demand from an HDF5 dataset of shape (n, f).

    Only the requested rows are read: ids are deduplicated and sorted, and the chunks (blocks
    of rows) that hold some of them are read as contiguous hyperslabs (nearby chunks in one
    call), then the wanted rows are picked out. The file stays open until :meth:`close`; h5py
    serialises access, so the loader's background thread may read while the main thread trains.

    With ``cache``, every block read is kept in memory (an array of the dataset's shape whose
    pages become resident only as blocks are read into it): a block is read from the file once,
    and a bulk whose blocks are all cached is one gather from memory, as fast as from a NumPy
    array. ``"auto"`` caches datasets of at most an eighth of the memory limit (physical
    memory, cgroup, ``ulimit``, ``$SPSAMPLE_MEMORY_LIMIT``); larger ones are read per bulk.

    Parameters
    ----------
    source : str, os.PathLike or h5py.Dataset
        A file path (then ``key`` names the dataset inside it) or an open h5py dataset.
    key : str
        Dataset path inside the file, default ``"features"`` (spsample's layout).
    cache : bool or "auto"

    Raises
    ------
    ArgumentError, ArgumentTypeError
        The file does not exist or lacks ``key``, or the dataset is not 2-dimensional and
        numeric.
    DatasetError
        The file is not readable HDF5, or the dataset holds fewer rows than its shape
        declares; :meth:`fetch` raises it for rows a truncated or corrupt file cannot give.
    """

    def __init__(self, source, key="features", cache="auto"):
        import h5py

        where = "HDF5Features"
        if cache not in (True, False, "auto"):
            fail(ArgumentError, where, "cache", "must be True, False or 'auto'", cache)
        self._file = None
        if isinstance(source, (str, os.PathLike)):
            dset = self.open_file(where, source, key)
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
        self._cache = self._loaded = None
        self._complete = False
        if cache == "auto":
            nbytes = self.num_nodes * self.num_features * self.dtype.itemsize
            cache = nbytes <= memory_limit() // 8 and self.dtype.isnative
        if cache:
            self._cache = np.empty((self.num_nodes, self.num_features), dtype=self.dtype)
            self._loaded = np.zeros(-(-self.num_nodes // self._block), dtype=bool)

    def open_file(self, where, source, key):
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
        return self._fetch_bulk([checked_ids("HDF5Features.fetch", n_id, self.num_nodes)])[0]

    def fetch_bulk(self, n_ids):
        return self._fetch_bulk(checked_bulk("HDF5Features.fetch_bulk", n_ids, self.num_nodes))

    def _fetch_bulk(self, n_ids):
        allv = np.concatenate(n_ids)
        if self._cache is not None:
            self._load_blocks(allv)
            out = DEFAULT_POOL.empty((allv.size, self.num_features), self.dtype)
            return _split(_take_rows(self._cache, allv, out), n_ids)
        uniq, inverse = np.unique(allv, return_inverse=True)
        return _spread(self._read_sorted(uniq), inverse, n_ids)

    def _load_blocks(self, ids):
        """Read the blocks holding rows ``ids`` that are not cached yet, consecutive blocks
        together (no sort: a mark per block)."""
        if self._complete:
            return
        touched = np.zeros(self._loaded.size, dtype=bool)
        touched[ids // self._block] = True
        missing = np.flatnonzero(touched & ~self._loaded)
        if missing.size == 0:
            return
        cut = np.flatnonzero(np.diff(missing) > 1) + 1
        bounds = np.concatenate([[0], cut, [missing.size]]).tolist()
        for s, e in zip(bounds[:-1], bounds[1:]):
            lo = int(missing[s]) * self._block
            hi = min(self.num_nodes, (int(missing[e - 1]) + 1) * self._block)
            self._read_into(self._cache[lo:hi], lo, hi)
            self._loaded[missing[s]:missing[e - 1] + 1] = True
        self._complete = bool(self._loaded.all())

    def _read_into(self, dest, lo, hi):
        """``dest[:] = dataset[lo:hi]`` (a typed error for a file that cannot give them)."""
        try:
            self.dataset.read_direct(dest, np.s_[lo:hi])
        except (OSError, ValueError, RuntimeError, TypeError) as exc:
            raise DatasetError(f"HDF5Features.fetch: cannot read rows [{lo}, {hi}) of "
                               f"{self.dataset.name} (truncated or corrupt file?): "
                               f"{exc}") from exc
        self.rows_read += hi - lo

    def _read_sorted(self, uniq):
        """Rows of the sorted unique ids ``uniq``: one read per run of touched blocks.

        Touched blocks (chunks) closer than :data:`MERGE_BYTES` are read together in one
        hyperslab (one libhdf5 call costs about as much as copying a few hundred KB), runs
        capped at :data:`RUN_BYTES`; each run lands in a reused buffer and its wanted rows are
        gathered into the result."""
        out = DEFAULT_POOL.empty((uniq.size, self.num_features), self.dtype)
        if uniq.size == 0:
            return out
        for s, e, lo, hi in self._runs(uniq):
            span = DEFAULT_POOL.empty((hi - lo, self.num_features), self.dtype)
            self._read_into(span, lo, hi)
            _take_rows(span, uniq[s:e] - lo, out[s:e])
        return out

    def _runs(self, uniq):
        """``(s, e, lo, hi)``: ids ``uniq[s:e]`` lie in rows ``[lo, hi)``, one read each."""
        row_bytes = max(1, self.num_features * self.dtype.itemsize)
        gap = max(1, MERGE_BYTES // (row_bytes * self._block))       # in blocks
        cap = max(self._block, RUN_BYTES // row_bytes)               # in rows
        block = uniq // self._block
        cut = np.flatnonzero(np.diff(block) > gap) + 1
        bounds = np.concatenate([[0], cut, [uniq.size]]).tolist()
        for s, e in zip(bounds[:-1], bounds[1:]):
            while s < e:
                lo = int(uniq[s])
                stop = s + int(np.searchsorted(uniq[s:e], lo + cap, side="left"))
                yield s, stop, lo, int(uniq[stop - 1]) + 1
                s = stop

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None
        self._cache = self._loaded = None

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


def _take_rows(rows, index, out):
    """``out[:] = rows[index]`` (a parallel row gather when torch can do it)."""
    if rows.dtype.kind in "biuf" and rows.dtype.isnative:
        import torch

        return gather_rows(torch.from_numpy(rows), index, out)
    np.take(rows, index, axis=0, out=out)
    return out


def _cpu_tensor(array):
    """A CPU torch tensor sharing ``array``'s memory (None for a tensor on another device)."""
    if isinstance(array, np.ndarray):
        return _from_numpy(np.ascontiguousarray(array))
    if array.device.type != "cpu":
        return None
    return array.contiguous()


def _from_numpy(array):
    """``torch.from_numpy`` without its warning for read-only arrays (we only read them)."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array)


def _numpy_dtype(tensor):
    import torch

    return torch.empty(0, dtype=tensor.dtype).numpy().dtype


def _hdf5_source(path):
    """An spsample file's features: :class:`HDF5Features` for a dataset, the whole CSR
    matrix in memory (:class:`SparseFeatures`) for sparse features (version 2 files)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            sparse = "features" in f and is_csr_group(f["features"])
    except OSError:
        sparse = False  # HDF5Features reports it
    if not sparse:
        return HDF5Features(path)
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
