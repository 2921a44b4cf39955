"""spsample's dataset file: one HDF5 layout, read whole or by row ranges.

Layout (format version 1)::

    /                      attrs: format="spsample", version=1, name (str), num_nodes (int)
    /graph/indptr          int64, shape (n + 1,)       CSR row pointers (required)
    /graph/indices         int64, shape (nnz,)         column ids, sorted within rows (required)
    /graph/weights         float64, shape (nnz,)       edge weights (absent when unweighted)
    /features              any numeric dtype, (n, f)   chunked by whole rows (absent if none)
    /labels                int64, shape (n,)           -1 = unlabelled (absent if none)
    /splits/<name>/train   int64 node ids              one group per split, in insertion
    /splits/<name>/val     int64 node ids              order (the first, or the one named
    /splits/<name>/test    int64 node ids              "default", is the default split)

Row ``v`` of the CSR lists the vertices ``v`` aggregates from (see :class:`spsample.Graph`).
Large arrays are chunked and gzip-compressed by default; features are chunked by whole rows
(about 256 KiB per chunk), so reading a few rows decompresses only the chunks that hold them.

Row-range reads (for a loader that owns rows ``[lo, hi)``) need only three slices::

    indptr = /graph/indptr[lo:hi + 1]; indices = /graph/indices[indptr[0]:indptr[-1]]
    features = /features[lo:hi]

:func:`read_rows`, :func:`read_feature_rows` and :func:`open_rows` do exactly that.
"""

import os
from pathlib import Path

import numpy as np

from .._errors import (
    ArgumentError,
    ArgumentTypeError,
    DatasetError,
    DatasetNotFoundError,
    SpsampleError,
)
from .._graph import Graph
from .._validate import as_index_array, as_int, check_range, fail
from ._dataset import SPLIT_PARTS, Dataset
from ._files import fail_path

__all__ = ["save", "load", "open_rows", "read_rows", "read_feature_rows", "RowReader",
           "FORMAT", "VERSION"]

FORMAT = "spsample"
VERSION = 1
_CHUNK_BYTES = 256 * 1024


# ---------------------------------------------------------------------- writing
def save(dataset, path, *, compression="gzip"):
    """Write ``dataset`` to ``path`` in spsample's HDF5 layout (see the module docstring).

    The file is written beside ``path`` under a temporary name and renamed into place, so an
    interrupted save never leaves a truncated dataset behind.

    Parameters
    ----------
    dataset : Dataset
    path : str or os.PathLike
        Destination file (overwritten). Its directory must exist.
    compression : {"gzip", None}
        ``"gzip"`` (level 4, with byte shuffling) or ``None`` for uncompressed chunks.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import spsample, tempfile, os
    >>> ds = spsample.io.load_cora()
    >>> out = spsample.save(ds, os.path.join(tempfile.mkdtemp(), "cora.h5"))
    >>> spsample.load(out).num_nodes
    2708
    """
    import h5py

    where = "spsample.save"
    if not isinstance(dataset, Dataset):
        fail(ArgumentTypeError, where, "dataset", "must be a spsample.Dataset", type(dataset))
    if compression not in ("gzip", None):
        fail(DatasetError, where, "compression", "must be 'gzip' or None", compression)
    path = _as_path(where, path)
    if not path.parent.is_dir():
        fail(DatasetNotFoundError, where, "path", "is in a directory that does not exist",
             str(path))
    if path.is_dir():
        fail_path(DatasetError, where, "path", "is a directory, not a file name", path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    g = dataset.graph
    try:
        with h5py.File(tmp, "w", track_order=True) as f:
            f.attrs.update(format=FORMAT, version=VERSION, name=dataset.name,
                           num_nodes=g.num_nodes)
            grp = f.create_group("graph")
            _write(grp, "indptr", g.indptr, compression)
            _write(grp, "indices", g.indices, compression)
            if g.weights is not None:
                _write(grp, "weights", g.weights, compression)
            if dataset.features is not None:
                _write(f, "features", dataset.features, compression)
            if dataset.labels is not None:
                _write(f, "labels", dataset.labels, compression)
            splits = f.create_group("splits", track_order=True)
            for name, part in dataset.splits.items():
                sg = splits.create_group(name)
                for key in SPLIT_PARTS:
                    _write(sg, key, part[key], compression)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _write(group, name, arr, compression):
    """Create ``group[name]`` from ``arr``: chunked by whole rows, compressed when asked."""
    arr = np.ascontiguousarray(arr)
    if arr.size == 0:
        return group.create_dataset(name, data=arr)
    row_bytes = arr.itemsize * (arr.size // arr.shape[0])
    rows = int(max(1, min(arr.shape[0], _CHUNK_BYTES // row_bytes)))
    opts = {} if compression is None else {"compression": "gzip", "compression_opts": 4,
                                           "shuffle": True}
    return group.create_dataset(name, data=arr, chunks=(rows,) + arr.shape[1:], **opts)


# ---------------------------------------------------------------------- reading
def load(path, *, features=True):
    """Read a dataset written by :func:`save`.

    Parameters
    ----------
    path : str or os.PathLike
    features : bool
        Read ``/features`` (default). ``False`` leaves ``Dataset.features`` as ``None``, for
        callers that fetch feature rows later with :func:`read_feature_rows`.

    Returns
    -------
    Dataset
        The graph is rebuilt (and validated) with :meth:`Graph.from_csr`.

    Raises
    ------
    DatasetNotFoundError
        ``path`` does not exist.
    DatasetError
        ``path`` is not an spsample HDF5 file, is truncated, lacks a required array (the
        message names it, e.g. ``/graph/indptr``), or holds inconsistent arrays.
    """
    where = "spsample.load"
    path = _as_path(where, path)
    with _open(where, path) as f:
        indptr = _read(where, path, f, "graph/indptr")
        indices = _read(where, path, f, "graph/indices")
        weights = _read(where, path, f, "graph/weights", required=False)
        feats = _read(where, path, f, "features", required=False) if features else None
        labels = _read(where, path, f, "labels", required=False)
        splits = {}
        if "splits" in f:
            for name in f["splits"]:
                splits[name] = {key: _read(where, path, f, f"splits/{name}/{key}")
                                for key in SPLIT_PARTS}
        name = f.attrs.get("name", "")
        num_nodes = f.attrs.get("num_nodes")
    try:
        graph = Graph.from_csr(indptr, indices, weights=weights)
        if num_nodes is not None and int(num_nodes) != graph.num_nodes:
            raise DatasetError(f"attribute num_nodes={int(num_nodes)} disagrees with "
                               f"/graph/indptr ({graph.num_nodes} nodes)")
        return Dataset(graph, features=feats, labels=labels, splits=splits, name=str(name))
    except SpsampleError as exc:
        raise DatasetError(f"{where}: argument 'path' {str(path)!r} holds an invalid "
                           f"dataset: {exc}") from exc


class RowReader:
    """Reads row ranges of the graph and rows of the features from an open dataset file.

    Obtain one with :func:`open_rows`; use it as a context manager (or call :meth:`close`).
    Each read touches only the slices (and compressed chunks) it needs.

    Attributes
    ----------
    path : pathlib.Path
    num_nodes : int
    num_features : int
        0 when the file has no ``/features``.
    """

    def __init__(self, path):
        where = "spsample.io.open_rows"
        self.path = _as_path(where, path)
        self._file = _open(where, self.path)
        try:
            self._indptr = _dataset(where, self.path, self._file, "graph/indptr")
            self._indices = _dataset(where, self.path, self._file, "graph/indices")
            self._weights = self._file.get("graph/weights")
            self._features = self._file.get("features")
        except BaseException:
            self._file.close()
            raise
        self.num_nodes = int(self._indptr.shape[0]) - 1
        self.num_features = 0 if self._features is None else int(self._features.shape[1])

    def read_rows(self, lo, hi):
        """CSR rows ``[lo, hi)`` of the graph.

        Returns
        -------
        indptr : ndarray of int64, shape (hi - lo + 1,)
            Rebased so that ``indptr[0] == 0``.
        indices : ndarray of int64, shape (indptr[-1],)
            Global column ids.
        weights : ndarray of float64, shape (indptr[-1],), or None
        """
        where = "RowReader.read_rows"
        lo = as_int(where, "lo", lo, minimum=0)
        hi = as_int(where, "hi", hi, minimum=lo)
        if hi > self.num_nodes:
            fail(ArgumentError, where, "hi", f"must be <= num_nodes ({self.num_nodes})", hi)
        try:
            indptr = np.asarray(self._indptr[lo:hi + 1], dtype=np.int64)
            start, stop = int(indptr[0]), int(indptr[-1])
            indices = np.asarray(self._indices[start:stop], dtype=np.int64)
            weights = None if self._weights is None else np.asarray(
                self._weights[start:stop], dtype=np.float64)
        except OSError as exc:
            raise DatasetError(f"{where}: cannot read rows [{lo}, {hi}) of "
                               f"{str(self.path)!r}: {exc}") from exc
        return indptr - start, indices, weights

    def read_feature_rows(self, ids):
        """Feature rows ``ids`` (any order, repeats allowed), shape (len(ids), f), stored dtype.

        Only the chunks holding the requested rows are read and decompressed.
        """
        where = "RowReader.read_feature_rows"
        if self._features is None:
            raise DatasetError(f"{where}: {str(self.path)!r} has no /features")
        ids = as_index_array(where, "ids", ids)
        check_range(where, "ids", ids, 0, self.num_nodes)
        dset = self._features
        uniq, inverse = np.unique(ids, return_inverse=True)
        out = np.empty((uniq.size,) + dset.shape[1:], dtype=dset.dtype)
        block = dset.chunks[0] if dset.chunks else max(1, uniq.size)
        chunk_of = uniq // block
        starts = np.flatnonzero(np.r_[True, chunk_of[1:] != chunk_of[:-1]]) if uniq.size else []
        ends = np.r_[starts[1:], uniq.size] if uniq.size else []
        try:
            for s, e in zip(starts, ends):
                lo, hi = int(uniq[s]), int(uniq[e - 1]) + 1
                out[s:e] = dset[lo:hi][uniq[s:e] - lo]
        except OSError as exc:
            raise DatasetError(f"{where}: cannot read /features of {str(self.path)!r}: "
                               f"{exc}") from exc
        return out[inverse]

    def close(self):
        """Close the file (idempotent)."""
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_rows(path):
    """Open ``path`` for row-range reads; returns a :class:`RowReader` (a context manager).

    Examples
    --------
    >>> import spsample
    >>> with spsample.io.open_rows(spsample.io.embedded_path("cora")) as r:
    ...     indptr, indices, weights = r.read_rows(0, 2)
    ...     x = r.read_feature_rows([5, 0, 5])
    >>> indptr.tolist(), x.shape
    ([0, 3, 6], (3, 1433))
    """
    return RowReader(path)


def read_rows(path, lo, hi):
    """CSR rows ``[lo, hi)`` of the graph in ``path``: ``(indptr rebased to 0, indices,
    weights or None)``; see :meth:`RowReader.read_rows`."""
    with RowReader(path) as reader:
        return reader.read_rows(lo, hi)


def read_feature_rows(path, ids):
    """Feature rows ``ids`` of ``path``, shape (len(ids), f); see
    :meth:`RowReader.read_feature_rows`."""
    with RowReader(path) as reader:
        return reader.read_feature_rows(ids)


# ---------------------------------------------------------------------- helpers
def _as_path(where, path):
    if not isinstance(path, (str, os.PathLike)):
        fail(ArgumentTypeError, where, "path", "must be a str or os.PathLike", type(path))
    return Path(path)


def _open(where, path):
    """Open ``path`` read-only and check it is an spsample file of a known version."""
    import h5py

    if not path.exists():
        fail_path(DatasetNotFoundError, where, "path", "does not exist", path)
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise DatasetError(f"{where}: argument 'path' is not a readable HDF5 file "
                           f"({str(path)!r}: {exc})") from exc
    fmt, version = f.attrs.get("format"), f.attrs.get("version")
    if fmt != FORMAT or version is None or int(version) > VERSION:
        f.close()
        fail_path(DatasetError, where, "path",
             f"is not an spsample dataset of version <= {VERSION} "
             f"(format={fmt!r}, version={version!r})", path)
    return f


def _dataset(where, path, f, name):
    try:
        obj = f.get(name)
    except (OSError, KeyError) as exc:
        raise DatasetError(f"{where}: cannot read /{name} of {str(path)!r}: {exc}") from exc
    if obj is None or not hasattr(obj, "shape"):
        raise DatasetError(f"{where}: {str(path)!r} lacks the required dataset /{name}")
    return obj


def _read(where, path, f, name, *, required=True):
    if not required and name not in f:
        return None
    dset = _dataset(where, path, f, name)
    try:
        return dset[()]
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{where}: cannot read /{name} of {str(path)!r} "
                           f"(truncated or corrupt?): {exc}") from exc
