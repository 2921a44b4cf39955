"""Reading one block of rows of a graph file with the checks ``spsample.load`` applies to the
whole graph (:meth:`spsample.Graph.from_csr`), before any value is trusted.

A block is not a square matrix, so ``Graph.from_csr`` cannot take it; the same checks run here
on the block, through Graph's own helpers (ids in range, weights finite and non-negative,
rows sorted and duplicates merged; a relation's optional entry times finite), plus what a
partial read needs on top:

* before anything is read, the arrays must be one-dimensional datasets of the right kind
  (integers; real numbers for weights and times), and each one's declared size must be backed by
  the bytes the file really stores (a few KiB of file cannot hold 16 GiB of row pointers:
  gzip compresses at most about 1000:1);
* the row pointers must start at 0 and end at ``len(indices)`` (read on every rank: two
  values), and be non-decreasing over the block, so every rank's entries lie inside
  ``indices`` and the blocks of all ranks tile it exactly.
"""

import os

import numpy as np

from .._errors import DatasetError, GraphError
from ._graph import MAX_NODES, Graph, _check_ids, _check_weights
from .._validate import fail
from ._hetero import check_time

__all__ = ["GraphFile", "MAX_COMPRESSION"]

#: The most bytes of array one stored byte may stand for (deflate's limit is about 1032).
MAX_COMPRESSION = 1100
_ARRAYS = {"indptr": "iu", "indices": "iu", "weights": "iuf", "time": "iuf"}
_OPTIONAL = ("weights", "time")


class GraphFile:
    """The CSR arrays of an spsample HDF5 file, checked before anything is read.

    Parameters
    ----------
    where : str
        The public function, for messages.
    path : str or os.PathLike
        A file whose format and version are already checked (``spsample.io.open_rows``).
    group : str
        The group holding ``indptr``, ``indices`` and optional ``weights`` (and ``time``: a
        relation's edge times): ``"graph"``, or a heterogeneous file's relation,
        ``"hetero/relations/<i>"``.
    num_rows, num_columns : int, optional
        The sizes the CSR must have (a relation: its destination and source types' vertex
        counts). Default: a square graph with ``len(indptr) - 1`` rows, checked against the
        file's ``num_nodes`` attribute.

    Attributes
    ----------
    num_nodes, num_edges : int
        Rows and entries.
    num_columns : int
    weighted, timed : bool
        Whether the group stores weights, edge times.

    Raises
    ------
    DatasetError
        Naming ``path`` and the array or attribute at fault.
    """

    def __init__(self, where, path, *, group="graph", num_rows=None, num_columns=None):
        import h5py

        self.where, self.path, self.group = where, str(path), group
        self._rows, self.num_columns = num_rows, num_columns
        self._file = h5py.File(path, "r")
        try:
            self._arrays = {name: self._dataset(h5py, name) for name in _ARRAYS}
            self._check_sizes()
        except BaseException:
            self._file.close()
            raise

    # ------------------------------------------------------------------ metadata
    def _dataset(self, h5py, name):
        obj = self._file.get(f"{self.group}/{name}")
        if obj is None and name in _OPTIONAL:
            return None
        if not isinstance(obj, h5py.Dataset):
            self._fail(name, "must be a dataset", type(obj).__name__)
        if obj.shape is None or len(obj.shape) != 1:
            self._fail(name, "must be 1-dimensional", obj.shape)
        if obj.dtype.kind not in _ARRAYS[name]:
            kind = "real numbers" if name in _OPTIONAL else "integers"
            self._fail(name, f"must hold {kind}", str(obj.dtype))
        self._check_stored(name, obj)
        return obj

    def _check_stored(self, name, dset):
        """The declared size must be backed by stored bytes (before anything is allocated)."""
        declared = int(dset.shape[0]) * dset.dtype.itemsize
        stored = min(int(dset.id.get_storage_size()), os.path.getsize(self.path))
        if declared > MAX_COMPRESSION * stored:
            self._fail(name, f"declares {dset.shape[0]} entries ({_size(declared)}) but the file "
                       f"stores only {_size(stored)} for them (no supported compression packs "
                       f"more than {MAX_COMPRESSION} bytes into one)", dset.shape[0])

    def _check_sizes(self):
        indptr, indices, weights, time = (self._arrays[k] for k in _ARRAYS)
        n = indptr.shape[0] - 1
        if self._rows is not None:
            if n != self._rows:
                self._fail("indptr", f"must have length {self._rows + 1} (the destination "
                           "type's vertices + 1)", indptr.shape[0])
        elif n < 1:
            self._fail("indptr", "must have length num_nodes + 1 >= 2 (an empty graph cannot be "
                       "sampled)", indptr.shape[0])
        if n > MAX_NODES:
            self._fail("indptr", f"describes more than {MAX_NODES} nodes", n)
        for name, arr in (("weights", weights), ("time", time)):
            if arr is not None and arr.shape[0] != indices.shape[0]:
                self._fail(name, f"must have one value per entry of /{self.group}/indices "
                           f"({indices.shape[0]})", arr.shape[0])
        if self._rows is None:
            self._check_num_nodes_attribute(n)
            self.num_columns = n
        self.num_nodes, self.num_edges = n, int(indices.shape[0])
        self.weighted, self.timed = weights is not None, time is not None

    def _check_num_nodes_attribute(self, n):
        value = self._file.attrs.get("num_nodes")
        if value is None:
            return
        try:
            ok = int(value) == n and float(value) == n
        except (TypeError, ValueError):
            ok = False
        if not ok:
            shown = value.item() if isinstance(value, np.generic) else value
            fail(DatasetError, self.where, "path",
                 f"{self.path!r} has the attribute num_nodes={shown!r}, which disagrees with "
                 f"/graph/indptr ({n} nodes)", show_value=False)

    # ------------------------------------------------------------------ reading
    def read_rows(self, lo, hi):
        """Rows ``[lo, hi)``: ``(indptr from 0, indices, weights or None)``, checked and canonical
        (sorted within rows, duplicates merged with their weights summed), as ``Graph``'s."""
        indptr, indices, weights, _ = self.read_entries(lo, hi, time=False)
        block = Graph._canonical(indptr, indices, weights)
        return block.indptr, block.indices, block.weights

    def read_entries(self, lo, hi, *, time=True):
        """Rows ``[lo, hi)`` as stored: ``(indptr from 0, indices, weights or None, time or
        None)``, checked (column ids in range, weights finite and non-negative, times finite)
        but not merged (a heterogeneous relation merges its repeated pairs with their times,
        :func:`spsample.graph._hetero.merge_entries`). ``time=False`` does not read the times."""
        indptr = self._row_pointers(lo, hi)
        start, stop = int(indptr[0]), int(indptr[-1])
        indices = self._read("indices", start, stop)
        weights = None if not self.weighted else self._read("weights", start, stop)
        times = None if not (time and self.timed) else self._read("time", start, stop)
        return (indptr - start, *self._checked(indices, weights, times))

    def read_indptr(self):
        """All row pointers, int64 shape (num_nodes + 1,), checked as :meth:`read_rows` checks
        a block's."""
        return self._row_pointers(0, self.num_nodes)

    def _row_pointers(self, lo, hi):
        """``indptr[lo:hi + 1]`` of the group: the array starts at 0, ends at ``len(indices)``
        and does not decrease over the block."""
        indptr = self._read("indptr", lo, hi + 1)
        first, last = self._read("indptr", 0, 1)[0], self._read("indptr", self.num_nodes,
                                                                self.num_nodes + 1)[0]
        if first != 0:
            self._fail("indptr", "must start at 0", int(first))
        if last != self.num_edges:
            self._fail("indptr", f"must end at len(/{self.group}/indices) = {self.num_edges}",
                       int(last))
        steps = np.diff(indptr)
        if steps.size and steps.min() < 0:
            bad = lo + int(np.flatnonzero(steps < 0)[0]) + 1
            self._fail("indptr", f"must be non-decreasing (drops at position {bad})",
                       int(indptr[bad - lo]))
        start, stop = int(indptr[0]), int(indptr[-1])
        if start < 0 or stop > self.num_edges:
            self._fail("indptr", f"must stay within [0, len(/{self.group}/indices) = "
                       f"{self.num_edges}] (rows [{lo}, {hi}) point to [{start}, {stop}))",
                       (start, stop))
        return indptr

    def _read(self, name, start, stop):
        try:
            raw = self._arrays[name][start:stop]
        except (OSError, ValueError, TypeError) as exc:
            raise DatasetError(f"{self.where}: argument 'path' {self.path!r}: cannot read "
                               f"/{self.group}/{name}[{start}:{stop}] (truncated or corrupt?): "
                               f"{exc}") from exc
        if name in _OPTIONAL:
            return raw
        if raw.dtype == np.uint64 and raw.size and raw.max() > np.iinfo(np.int64).max:
            self._fail(name, "has values beyond the int64 range", int(raw.max()))
        return np.ascontiguousarray(raw, dtype=np.int64)

    def _checked(self, indices, weights, time):
        try:
            _check_ids(self.where, f"/{self.group}/indices", indices, self.num_columns)
            if weights is not None:
                weights = _check_weights(self.where, weights, indices.size)
            if time is not None:
                time = check_time(self.where, f"/{self.group}/time", time, indices.size)
        except GraphError as exc:
            raise DatasetError(f"{self.where}: argument 'path' {self.path!r} holds an invalid "
                               f"graph: {_without_where(self.where, exc)}") from exc
        return indices, weights, time

    # ------------------------------------------------------------------ helpers
    def _fail(self, name, problem, value):
        fail(DatasetError, self.where, "path",
             f"{self.path!r} holds an invalid graph: /{self.group}/{name} {problem}", value)

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _without_where(where, exc):
    """The message of a helper's error without its ``where: `` prefix."""
    text = str(exc)
    return text[len(where) + 2:] if text.startswith(f"{where}: ") else text


def _size(nbytes):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return None
