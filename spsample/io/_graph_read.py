"""The graph of an spsample file read into memory at about its own size.

:func:`read_graph` reads ``/graph/indptr``, ``/graph/indices`` and ``/graph/weights`` straight
into the immutable buffers the :class:`~spsample.Graph` keeps (no copy: an
:func:`spsample.graph._graph.frozen_filled` allocates one ``bytes`` object per array and has h5py
decompress or read each piece into it), and checks every piece as it
arrives: row pointers from 0, non-decreasing, ending at the entry count; column ids in
``[0, n)`` and strictly increasing within rows (:func:`spsample.io._entries.entry_problems`);
weights finite and non-negative. Peak memory: the three arrays plus one piece.

A graph that is not already canonical and valid (unsorted rows, duplicates, any error) or whose
arrays are not native int64 / float64 is left to the general path (``Graph.from_csr`` on
arrays read whole), which canonicalises it or raises the error it always raised.
"""

import numpy as np

from ._entries import NO_PROBLEM, entry_problems
from ..graph._graph import MAX_NODES, Graph, frozen_filled

__all__ = ["read_graph", "read_indptr"]

_DTYPES = {"graph/indptr": np.dtype(np.int64), "graph/indices": np.dtype(np.int64),
           "graph/weights": np.dtype(np.float64)}


class _NotCanonical(Exception):
    """A piece failed a check: the general path takes over."""


def _read_frozen(dset, check):
    """The whole of ``dset`` in a read-only array over one ``bytes`` object (frozen), read by
    h5py piece by piece straight into it, each piece handed to ``check(position, piece)``."""
    def fill(pos, piece):
        dset.read_direct(piece, np.s_[pos:pos + piece.size])
        check(pos, piece)
    try:
        return frozen_filled(dset.dtype, int(dset.shape[0]), fill)
    except EOFError as exc:
        raise _NotCanonical("short read") from exc


def _indptr_check(num_edges):
    """Row pointers: from 0, non-decreasing across pieces (the end is checked after)."""
    last = [0]

    def check(pos, piece):
        if (pos == 0 and piece[0] != 0) or piece[0] < last[0] or \
                np.any(piece[1:] < piece[:-1]) or piece[-1] > num_edges:
            raise _NotCanonical("indptr")
        last[0] = piece[-1]
    return check


def _indices_check(indptr):
    """Column ids in range and strictly increasing within rows, across pieces."""
    prev = [None]

    def check(pos, piece):
        if entry_problems(indptr, piece, base=pos, prev=prev[0]) != NO_PROBLEM:
            raise _NotCanonical("indices")
        prev[0] = int(piece[-1])
    return check


def _weights_check(pos, piece):
    if not np.all(np.isfinite(piece)) or piece.min() < 0:
        raise _NotCanonical("weights")


def read_indptr(dset, num_edges):
    """The row pointers ``dset`` (1-D, ``num_edges`` entries after them), read lean and
    frozen, or ``None`` when they are not native int64 or fail a check (from 0, non-decreasing,
    ending at ``num_edges``): the caller's general path then reads them and says why."""
    if dset.ndim != 1 or dset.dtype != _DTYPES["graph/indptr"] or dset.shape[0] < 1:
        return None
    try:
        indptr = _read_frozen(dset, _indptr_check(num_edges))
    except (_NotCanonical, OSError, ValueError, TypeError, RuntimeError, KeyError):
        return None
    return indptr if indptr[-1] == num_edges else None


def read_graph(dsets):
    """The :class:`~spsample.Graph` of an spsample file, read lean (module docstring), or
    ``None`` when the general path must read it.

    Parameters
    ----------
    dsets : dict
        ``{name: h5py.Dataset}`` with ``"graph/indptr"``, ``"graph/indices"`` and optionally
        ``"graph/weights"``; their storage already checked against their shapes and the total
        against the memory limit (``_hdf5._check_sizes``).
    """
    names = [name for name in _DTYPES if name in dsets]
    if any(dsets[name].ndim != 1 or dsets[name].dtype != _DTYPES[name] for name in names):
        return None
    nnz = int(dsets["graph/indices"].shape[0])
    n = int(dsets["graph/indptr"].shape[0]) - 1
    if n < 1 or n > MAX_NODES or ("graph/weights" in dsets and
                                  dsets["graph/weights"].shape[0] != nnz):
        return None
    indptr = read_indptr(dsets["graph/indptr"], nnz)
    if indptr is None:
        return None
    try:
        indices = _read_frozen(dsets["graph/indices"], _indices_check(indptr))
        weights = None
        if "graph/weights" in dsets:
            weights = _read_frozen(dsets["graph/weights"], _weights_check)
    except (_NotCanonical, OSError, ValueError, TypeError, RuntimeError, KeyError):
        return None
    return Graph(indptr, indices, weights)
