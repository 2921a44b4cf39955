"""Graph reading in the kernels: edge-list parsing, checks of CSR entries, ranges of a file
gathered in one pass."""

import numpy as np

from ._buffers import as_i64
from ._switch import kernel_threads, kernels

__all__ = ["parse_edges", "check_entries", "gather_ranges"]


def parse_edges(text, comment, delimiter):
    """The first two columns of the edge lines of ``text`` (``native/parse.h``).

    Parameters
    ----------
    text : bytes
        Whole lines.
    comment, delimiter : str
        One character each, or ``""`` (no comments; columns split on runs of blanks).

    Returns
    -------
    int64 array of shape (E, 2), or ``None`` when a line does not match the parser's strict
    grammar (the caller falls back to ``numpy.loadtxt``).
    """
    edges, _ = kernels.parse_edges(text, comment, delimiter)
    return edges


def check_entries(indptr, num_nodes, indices, weights, base, prev, starts, ends):
    """The first bad entries of a block of CSR entries (``native/verify.h``), in parallel.

    Parameters
    ----------
    indptr : int64, shape (n + 1,)
    num_nodes : int
        Column ids must lie in ``[0, num_nodes)``.
    indices : int64, shape (m,)
        The entries held, from global position ``base`` on.
    weights : float64, shape (m,), or None
    base : int
    prev : int or None
        The column id before ``base`` (its row's predecessor check), or ``None``.
    starts, ends : int64, shape (r,)
        The global entry ranges ``[starts[i], ends[i])`` to check (inside the entries held).

    Returns
    -------
    (int, int, int)
        Global positions of the first column id out of range, the first weight not finite or
        negative, the first entry not above its predecessor in its row; ``-1`` when none.
    """
    return kernels.check_entries(indptr, num_nodes, indices, weights, base, prev,
                                 as_i64(np.asarray(starts)), as_i64(np.asarray(ends)),
                                 kernel_threads())


def gather_ranges(fd, base, itemsize, starts, ends, gap):
    """The bytes of item ranges ``[starts[i], ends[i])`` of a file, read in one pass
    (``native/gather.h``; ranges less than ``gap`` items apart are read together).

    Returns
    -------
    (uint8 array, int)
        The ranges' bytes, concatenated, and the reader's status (0: complete).
    """
    return kernels.gather_ranges(fd, base, itemsize, starts, ends, gap)
