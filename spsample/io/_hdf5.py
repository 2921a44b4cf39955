"""spsample's dataset file: one HDF5 layout, read whole or by row ranges.

Layout (format version 1; version 2 when the features are sparse)::

    /                      attrs: format="spsample", version=1|2, name (str), num_nodes (int)
    /graph/indptr          int64, shape (n + 1,)       CSR row pointers (required)
    /graph/indices         int64, shape (nnz,)         column ids, sorted within rows (required)
    /graph/weights         float64, shape (nnz,)       edge weights (absent when unweighted)
    /features              any numeric dtype, (n, f)   chunked by whole rows (absent if none)
    /labels                int64, shape (n,)           -1 = unlabelled (absent if none)
    /splits/<name>/train   int64 node ids              one group per split, in insertion
    /splits/<name>/val     int64 node ids              order (the first, or the one named
    /splits/<name>/test    int64 node ids              "default", is the default split)

Sparse features (version 2) are a group instead of the ``/features`` dataset::

    /features              attrs: format="csr", shape=(n, f)
    /features/indptr       int64, shape (n + 1,)
    /features/indices      int32 (int64 when f >= 2**31), shape (nnz,), sorted within rows
    /features/data         any numeric dtype, shape (nnz,)

Row ``v`` of the CSR lists the vertices ``v`` aggregates from (see :class:`spsample.Graph`).
Large arrays are chunked and gzip-compressed by default; features are chunked by whole rows
(about 256 KiB per chunk), so reading a few rows decompresses only the chunks that hold them.

Row-range reads (for a loader that owns rows ``[lo, hi)``) need only three slices::

    indptr = /graph/indptr[lo:hi + 1]; indices = /graph/indices[indptr[0]:indptr[-1]]
    features = /features[lo:hi]

:func:`read_rows`, :func:`read_feature_rows` and :func:`open_rows` do exactly that.
"""

import os

import numpy as np

from .._errors import (
    ArgumentError,
    ArgumentTypeError,
    DatasetError,
    DatasetNotFoundError,
    SpsampleError,
)
from ..graph._graph import Graph
from .._validate import as_index_array, as_int, check_memory, check_range, fail
from ._dataset import _check_labels, _check_splits, Dataset, SPLIT_PARTS
from ._files import fail_path, temporary_beside
from ._h5 import (FORMAT, LAYOUTS, VERSION, _CSR_PARTS, _DENSE_VERSION, _as_name, _check_sizes,
                  _csr_features, _dataset, _read_all, _shown, _write, _write_contiguous,
                  _write_csr, as_path, is_csr_group, open_file)
from ._graph_read import read_graph
from ._untrusted import check_stored, csr_from_parts
from ..graph._hetero import HeteroGraph
from ._hetero_dataset import HeteroDataset
from ._hetero_hdf5 import is_hetero_file, read_hetero, write_hetero
from ._disk_graph import DiskGraph

__all__ = ["save", "load", "open_rows", "read_rows", "read_feature_rows", "RowReader",
           "read_node_targets",
           "FORMAT", "VERSION"]


# ---------------------------------------------------------------------- writing
def save(dataset, path, *, compression="gzip", layout="chunked"):
    """Write ``dataset`` to ``path`` in spsample's HDF5 layout (see the module docstring).

    The file is written beside ``path`` under a temporary name (``.<name>.<pid>.tmp``) and
    renamed into place, so an interrupted save never leaves a truncated dataset behind; the
    temporary file is removed on SIGTERM, SIGHUP and SIGINT too, and stale ones of killed
    processes are removed by the next save to ``path``.

    Parameters
    ----------
    dataset : Dataset
    path : str or os.PathLike
        Destination file (overwritten). Its directory must exist.
    compression : {"gzip", None}
        ``"gzip"`` (level 4, with byte shuffling) or ``None`` for uncompressed chunks.
    layout : {"chunked", "contiguous"}
        ``"contiguous"`` stores ``/graph/*`` uncompressed in one contiguous extent each, so a
        graph opened with ``load(path, mmap=True)`` reads any range with one ``pread`` (the
        other arrays follow ``compression``). ``"chunked"`` (default): every array chunked.

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
    if not isinstance(dataset, (Dataset, HeteroDataset)):
        fail(ArgumentTypeError, where, "dataset", "must be a spsample.Dataset or "
             "HeteroDataset", type(dataset))
    if isinstance(dataset, HeteroDataset) and not isinstance(dataset.graph, HeteroGraph):
        fail(ArgumentTypeError, where, "dataset", "must hold a whole HeteroGraph (a "
             "DistHeteroGraph holds only this rank's rows)", type(dataset.graph))
    if compression not in ("gzip", None):
        fail(DatasetError, where, "compression", "must be 'gzip' or None", compression)
    if layout not in LAYOUTS:
        fail(ArgumentError, where, "layout", f"must be one of {LAYOUTS}", layout)
    path = as_path(where, path)
    if not path.parent.is_dir():
        fail(DatasetNotFoundError, where, "path", "is in a directory that does not exist",
             str(path))
    if path.is_dir():
        fail_path(DatasetError, where, "path", "is a directory, not a file name", path)
    with temporary_beside(path) as tmp:
        with h5py.File(tmp, "w", track_order=True) as f:
            if isinstance(dataset, HeteroDataset):
                write_hetero(f, dataset, compression)
            else:
                _write_dataset(f, dataset, compression, layout)
        os.replace(tmp, path)
    return path


def _write_dataset(f, dataset, compression, layout="chunked"):
    """Write every part of ``dataset`` into the open file ``f`` (the module's layout)."""
    g = dataset.graph
    version = VERSION if dataset.sparse_features else _DENSE_VERSION
    f.attrs.update(format=FORMAT, version=version, name=dataset.name, num_nodes=g.num_nodes)
    grp = f.create_group("graph")
    write = _write if layout == "chunked" else _write_contiguous
    write(grp, "indptr", g.indptr, compression)
    write(grp, "indices", g.indices, compression)
    if g.weights is not None:
        write(grp, "weights", g.weights, compression)
    if dataset.sparse_features:
        _write_csr(f, "features", dataset.features, compression)
    elif dataset.features is not None:
        _write(f, "features", dataset.features, compression)
    if dataset.labels is not None:
        _write(f, "labels", dataset.labels, compression)
    splits = f.create_group("splits", track_order=True)
    for name, part in dataset.splits.items():
        sg = splits.create_group(name)
        for key in SPLIT_PARTS:
            _write(sg, key, part[key], compression)


# ---------------------------------------------------------------------- reading
def load(path, *, features=True, mmap=False, memory_budget=None):
    """Read a dataset written by :func:`save`.

    Parameters
    ----------
    path : str or os.PathLike
    features : bool
        Read ``/features`` (default). ``False`` leaves ``Dataset.features`` as ``None``, for
        callers that fetch feature rows later with :func:`read_feature_rows`.
    mmap : bool
        ``True``: open the graph without reading it (a :class:`~spsample.DiskGraph`: row
        pointers in memory, column ids read on demand through a bounded block cache, sampled
        with the same results as in memory); labels and splits are read, the features stay
        in the file (``Dataset.features`` is ``None``; the loader reads their rows when given
        ``features=path``).
    memory_budget : int or str, optional
        With ``mmap=True``: the bytes the graph may hold (row pointers, block cache, the rows
        a hop holds at once), e.g. ``"1GB"``; default 1 GiB.

    Returns
    -------
    Dataset or HeteroDataset
        The graph is validated as :meth:`Graph.from_csr` validates it: a canonical graph is
        read straight into its final arrays and checked piece by piece (peak memory about the
        graph's own size), any other is rebuilt with :meth:`Graph.from_csr`; a heterogeneous
        file's with :meth:`HeteroGraph.from_edge_index`; or the graph is opened as a
        ``DiskGraph`` (``mmap=True``; its blocks checked as they are read).

    Raises
    ------
    DatasetNotFoundError
        ``path`` does not exist.
    DatasetError
        ``path`` is not an spsample HDF5 file, is truncated, lacks a required array (the
        message names it, e.g. ``/graph/indptr``), or holds inconsistent arrays.
    """
    where = "spsample.load"
    path = as_path(where, path)
    _check_mmap(where, mmap, memory_budget)
    if mmap:
        return _load_on_disk(where, path, memory_budget)
    with open_file(where, path) as f:
        if is_hetero_file(f):
            return read_hetero(where, path, f, features)
        try:
            dsets = _datasets_to_read(where, path, f, features)
            _check_sizes(where, path, dsets)
            graph = read_graph(dsets)
            arrays = {name: _read_all(where, path, dset) for name, dset in dsets.items()
                      if graph is None or not name.startswith("graph/")}
            if "features/indptr" in arrays:
                arrays["features"] = _csr_features(where, path, f["features"], arrays)
            name = f.attrs.get("name", "")
            num_nodes = f.attrs.get("num_nodes")
        except SpsampleError:
            raise
        except (OSError, KeyError, RuntimeError, ValueError, TypeError) as exc:
            raise DatasetError(f"{where}: cannot read {str(path)!r} (truncated or corrupt?): "
                               f"{type(exc).__name__}: {exc}") from exc
    splits = {}
    for key in arrays:
        if key.startswith("splits/"):
            split, part = key.split("/")[1:]
            splits.setdefault(split, {})[part] = arrays[key]
    try:
        if graph is None:
            graph = Graph.from_csr(arrays["graph/indptr"], arrays["graph/indices"],
                                   weights=arrays.get("graph/weights"))
        _check_num_nodes(num_nodes, graph.num_nodes)
        return Dataset(graph, features=arrays.get("features"), labels=arrays.get("labels"),
                       splits=splits, name=_as_name(name))
    except SpsampleError as exc:
        raise DatasetError(f"{where}: argument 'path' {str(path)!r} holds an invalid "
                           f"dataset: {exc}") from exc


def _check_mmap(where, mmap, memory_budget):
    if not isinstance(mmap, (bool, np.bool_)):
        fail(ArgumentTypeError, where, "mmap", "must be True or False", mmap)
    if memory_budget is not None and not mmap:
        fail(ArgumentError, where, "memory_budget", "applies to mmap=True only",
             memory_budget)


def _load_on_disk(where, path, memory_budget):
    """The dataset with its graph opened as a DiskGraph; labels and splits read."""

    with open_file(where, path) as f:
        if is_hetero_file(f):
            fail(ArgumentError, where, "mmap", "opens homogeneous graphs only; read a "
                 "heterogeneous file whole (mmap=False)", True)
    graph = DiskGraph.open(path, "1GB" if memory_budget is None else memory_budget,
                           where=where)
    try:
        with open_file(where, path) as f:
            dsets = {k: v for k, v in _datasets_to_read(where, path, f, False).items()
                     if not k.startswith("graph/")}
            _check_sizes(where, path, dsets)
            arrays = {name: _read_all(where, path, dset) for name, dset in dsets.items()}
            name = f.attrs.get("name", "")
        splits = {}
        for key in arrays:
            if key.startswith("splits/"):
                split, part = key.split("/")[1:]
                splits.setdefault(split, {})[part] = arrays[key]
        return Dataset(graph, labels=arrays.get("labels"), splits=splits, name=_as_name(name))
    except SpsampleError as exc:
        graph.close()
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"{where}: argument 'path' {str(path)!r} holds an invalid "
                           f"dataset: {exc}") from exc
    except BaseException:
        graph.close()
        raise


def _datasets_to_read(where, path, f, features):
    """``{name: h5py.Dataset}`` of everything :func:`load` reads, in reading order."""
    dsets = {name: _dataset(where, path, f, name) for name in ("graph/indptr", "graph/indices")}
    for name in ("graph/weights", "labels"):
        if name in f:
            dsets[name] = _dataset(where, path, f, name)
    if features and "features" in f:
        if is_csr_group(f["features"]):
            for part in _CSR_PARTS:
                dsets[f"features/{part}"] = _dataset(where, path, f, f"features/{part}")
        else:
            dsets["features"] = _dataset(where, path, f, "features")
    if "splits" in f:
        splits = f["splits"]
        if not hasattr(splits, "keys"):
            raise DatasetError(f"{where}: /splits of {str(path)!r} must be a group")
        for split in splits:
            for key in SPLIT_PARTS:
                dsets[f"splits/{split}/{key}"] = _dataset(where, path, f,
                                                          f"splits/{split}/{key}")
    return dsets


def open_layout(path):
    """``"hetero"`` or ``"homogeneous"``: the layout of the spsample file ``path`` (checked
    as :func:`load` checks it, nothing else read)."""

    where = "spsample.io.open_layout"
    with open_file(where, as_path(where, path)) as f:
        return "hetero" if is_hetero_file(f) else "homogeneous"


def read_node_targets(path):
    """Everything of a dataset file but its graph and features: what each rank of a sharded
    run holds whole (labels and splits are ``O(n)`` integers; the graph and features are read
    by blocks of rows, see :func:`open_rows`).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    dict
        ``name`` (str), ``num_nodes``, ``num_edges``, ``num_features`` (int),
        ``weighted`` (bool), ``labels`` (int64 ndarray, shape (n,), or None) and ``splits``
        (``{name: {"train", "val", "test": int64 ndarray}}``), checked as :func:`load`
        checks them.

    Raises
    ------
    DatasetNotFoundError, DatasetError
        As :func:`load`.
    """

    where = "spsample.io.read_node_targets"
    path = as_path(where, path)
    if open_layout(path) == "hetero":
        fail_path(DatasetError, where, "path", "holds a heterogeneous dataset (no single "
                  "node set to shard)", path)
    with RowReader(path) as reader:
        f = reader._file
        try:
            dsets = _datasets_to_read(where, path, f, features=False)
            dsets = {k: v for k, v in dsets.items() if not k.startswith("graph/")}
            _check_sizes(where, path, dsets)
            arrays = {name: _read_all(where, path, dset) for name, dset in dsets.items()}
            name = _as_name(f.attrs.get("name", ""))
            num_edges = int(reader._indices.shape[0])
        except SpsampleError:
            raise
        except (OSError, KeyError, RuntimeError, ValueError, TypeError) as exc:
            raise DatasetError(f"{where}: cannot read {str(path)!r} (truncated or corrupt?): "
                               f"{type(exc).__name__}: {exc}") from exc
        n, width, weighted = reader.num_nodes, reader.num_features, reader._weights is not None
    splits = {}
    for key in arrays:
        if key.startswith("splits/"):
            split, part = key.split("/")[1:]
            splits.setdefault(split, {})[part] = arrays[key]
    try:
        labels = arrays.get("labels")
        labels = None if labels is None else _check_labels(where, labels, n)
        splits = _check_splits(where, splits, n)
    except SpsampleError as exc:
        raise DatasetError(f"{where}: argument 'path' {str(path)!r} holds an invalid "
                           f"dataset: {exc}") from exc
    return dict(name=name, num_nodes=n, num_edges=num_edges, num_features=width,
                weighted=weighted, labels=labels, splits=splits)


def read_sparse_features(path):
    """The CSR ``/features`` group of ``path`` (a version-2 file) as a checked matrix."""
    where = "spsample.io.read_sparse_features"
    path = as_path(where, path)
    with open_file(where, path) as f:
        if "features" not in f or not is_csr_group(f["features"]):
            raise DatasetError(f"{where}: {str(path)!r} has no sparse /features")
        dsets = {f"features/{p}": _dataset(where, path, f, f"features/{p}")
                 for p in _CSR_PARTS}
        _check_sizes(where, path, dsets)
        arrays = {name: _read_all(where, path, dset) for name, dset in dsets.items()}
        return _csr_features(where, path, f["features"], arrays)


def _check_num_nodes(num_nodes, n):
    """The file's ``num_nodes`` attribute (optional) must be the integer ``n``."""
    if num_nodes is None:
        return
    value = np.asarray(num_nodes)
    if value.shape != () or value.dtype.kind not in "iu" or int(value) != n:
        raise DatasetError(f"attribute num_nodes={_shown(num_nodes)} disagrees with "
                           f"/graph/indptr ({n} nodes)")


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
    sparse_features : bool
        Whether ``/features`` is a CSR group (read its rows with
        :meth:`read_sparse_feature_rows`).
    """

    def __init__(self, path):
        where = "spsample.io.open_rows"
        self.path = as_path(where, path)
        self._file = open_file(where, self.path)
        self._csr = self._csr_nnz = None
        try:
            self._indptr = _dataset(where, self.path, self._file, "graph/indptr")
            self._indices = _dataset(where, self.path, self._file, "graph/indices")
            self._weights = self._file.get("graph/weights")
            self._features = self._file.get("features")
        except BaseException:
            self._file.close()
            raise
        self.num_nodes = int(self._indptr.shape[0]) - 1
        self.num_features = self._feature_width(where)

    def _feature_width(self, where):
        """``f`` of ``/features`` (a dataset or a CSR group), 0 without features."""
        feats = self._features
        if feats is None:
            return 0
        if is_csr_group(feats):
            shape = np.asarray(feats.attrs.get("shape", ()))
            parts = [feats.get(part) for part in _CSR_PARTS]
            if shape.shape != (2,) or shape.dtype.kind not in "iu" or None in parts:
                self._file.close()
                raise DatasetError(f"{where}: /features of {str(self.path)!r} is not a valid "
                                   "CSR group (shape attribute, indptr, indices, data)")
            self._csr = dict(zip(_CSR_PARTS, parts))
            return int(shape[1])
        if not hasattr(feats, "shape") or feats.ndim != 2:
            self._file.close()
            raise DatasetError(f"{where}: /features of {str(self.path)!r} must be a 2-D "
                               "dataset or a CSR group")
        return int(feats.shape[1])

    @property
    def sparse_features(self):
        return self._csr is not None

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
        if self._csr is not None:
            return self._read_csr_rows(where, ids)
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

    def _read_csr_rows(self, where, ids):
        """Rows ``ids`` of CSR ``/features``, densified: one read of the row range they span
        (checked like every array from a file before it is used)."""
        uniq, inverse = np.unique(ids, return_inverse=True)
        if uniq.size == 0:
            return np.zeros((0, self.num_features), dtype=self._csr["data"].dtype)
        lo, hi = int(uniq[0]), int(uniq[-1]) + 1
        block = self._csr_block(where, lo, hi)
        return block[uniq - lo].toarray()[inverse]

    def read_sparse_feature_rows(self, lo, hi):
        """Rows ``[lo, hi)`` of CSR ``/features`` as a ``scipy.sparse.csr_matrix`` of shape
        (hi - lo, f), never densified: one read of the rows' slices of the three parts.

        Everything read is checked before it is used: the parts' dtypes and shapes against
        the ``shape`` attribute and the graph's ``num_nodes``, the bytes each part stores
        against its declared shape, ``indptr[0] == 0`` and ``indptr[n] == nnz``, the rows'
        pointers non-decreasing and inside the parts, their column ids in ``[0, f)``; the
        block's bytes against the memory limit before they are read.

        Raises
        ------
        DatasetError
            The file has no CSR ``/features``, or any check fails (naming it).
        ResourceLimitError
            The block would not fit in memory.
        """
        where = "RowReader.read_sparse_feature_rows"
        if self._csr is None:
            raise DatasetError(f"{where}: {str(self.path)!r} has no sparse /features")
        lo = as_int(where, "lo", lo, minimum=0)
        hi = as_int(where, "hi", hi, minimum=lo)
        if hi > self.num_nodes:
            fail(ArgumentError, where, "hi", f"must be <= num_nodes ({self.num_nodes})", hi)
        return self._csr_block(where, lo, hi)

    def _csr_block(self, where, lo, hi):
        """The checked CSR rows ``[lo, hi)`` of ``/features`` (see
        :meth:`read_sparse_feature_rows`)."""
        what = f"/features of {str(self.path)!r}"
        nnz = self._check_csr_parts(where, what)
        parts = self._csr
        try:
            raw = parts["indptr"][lo:hi + 1]
            if raw.dtype == np.uint64 and raw.max() > np.iinfo(np.int64).max:
                raise DatasetError(f"{where}: {what} has row pointers beyond the int64 range")
            indptr = raw.astype(np.int64)
            start, stop = int(indptr[0]), int(indptr[-1])
            if not 0 <= start <= stop <= nnz:
                raise DatasetError(f"{where}: {what} has row pointers outside its "
                                   f"{nnz} entries ([{start}, {stop}) for rows [{lo}, {hi}))")
            item = parts["indices"].dtype.itemsize + parts["data"].dtype.itemsize
            check_memory(where, "path", (stop - start) * (2 * item + 8),
                         f"rows [{lo:,d}, {hi:,d}) of {what} ({stop - start:,d} entries)",
                         "use more ranks (a smaller block of rows per rank)")
            indices = parts["indices"][start:stop]
            data = parts["data"][start:stop]
        except OSError as exc:
            raise DatasetError(f"{where}: cannot read {what}: {exc}") from exc
        return csr_from_parts(where, what, data, indices, indptr - start,
                              (hi - lo, self.num_features))

    def _check_csr_parts(self, where, what):
        """The CSR parts' dtypes, shapes and stored bytes, and the two ends of ``indptr``
        (checked once per reader); returns ``nnz``."""
        if self._csr_nnz is not None:
            return self._csr_nnz
        parts, n = self._csr, self.num_nodes
        shape = tuple(int(s) for s in self._features.attrs["shape"])
        bad = None
        if shape[0] != n or shape[1] < 0:
            bad = f"a shape attribute {shape} for a graph of {n} nodes"
        elif any(getattr(parts[p], "shape", None) is None or len(parts[p].shape) != 1
                 for p in _CSR_PARTS):
            bad = "indptr, indices or data that is not a 1-D dataset"
        elif parts["indptr"].dtype.kind not in "iu" or parts["indices"].dtype.kind not in "iu":
            bad = (f"indptr of dtype {parts['indptr'].dtype} and indices of dtype "
                   f"{parts['indices'].dtype} (both must be integer)")
        elif parts["data"].dtype.kind not in "biuf":
            bad = f"values of dtype {parts['data'].dtype} (not real numbers)"
        elif parts["indptr"].shape[0] != n + 1:
            bad = f"{parts['indptr'].shape[0]} row pointers for {n} rows"
        elif parts["indices"].shape != parts["data"].shape:
            bad = (f"{parts['indices'].shape[0]} column ids but {parts['data'].shape[0]} "
                   "values")
        if bad is not None:
            raise DatasetError(f"{where}: {what} has {bad}")
        try:
            for p in _CSR_PARTS:
                check_stored(where, self.path, parts[p])
            ends = [int(parts["indptr"][i]) for i in (0, n)]
        except OSError as exc:
            raise DatasetError(f"{where}: cannot read {what}: {exc}") from exc
        nnz = int(parts["indices"].shape[0])
        if ends != [0, nnz]:
            raise DatasetError(f"{where}: {what} has row pointers from {ends[0]} to "
                               f"{ends[1]}, not from 0 to its {nnz} entries")
        self._csr_nnz = nnz
        return nnz

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


