"""Where each vertex's row of ``A`` (and its feature row) lives on a :class:`Grid`.

Process row ``i`` holds block ``i`` of a file's rows (``[bounds[i], bounds[i + 1])``, balanced
contiguous ranges: :func:`spsample.distributed._layout.block_bounds`). Normally the file's row
ids are the vertices' ids. A dataset relabelled by ``spsample partition`` stores vertex
``old_id[i]`` as row ``i``; given that permutation, a distributed graph presents the vertices
under their original ids while each process row still reads one contiguous block of the file
(the partition's locality), and vertex ``v``'s row is file row ``new_id[v]``::

    old_id = [2, 0, 3, 1]           file rows 0..3 hold vertices 2, 0, 3, 1
    p / c = 2 process rows          row 0: file rows [0, 2) = vertices {2, 0}
                                    row 1: file rows [2, 4) = vertices {3, 1}
    owner([0, 1, 2, 3]) = [0, 1, 0, 1]     local([0, 2]) on row 0 = [1, 0]

Sampling keys its random streams by vertex id and draws by position within rows sorted by
vertex id, so presenting the original ids gives exactly the minibatches of the original
dataset, whichever partition placed the rows.
"""

import numpy as np
from ..engine._primitives import segment_arange
from ..graph._checks import GraphFile
from .._errors import DatasetError
from .._validate import fail
from ._partition import fingerprint, read_partition

__all__ = ["Placement", "by_owner", "original_starts", "original_rows", "vertex_order",
           "read_permutation", "permutation_of"]


class Placement:
    """The process row and local row of each vertex.

    Parameters
    ----------
    grid : Grid
    num_nodes : int
    old_id : int64 array of shape (num_nodes,), or None
        ``old_id[i]``: the vertex stored as file row ``i`` (a checked permutation); ``None``:
        file row ``i`` is vertex ``i``.

    Attributes
    ----------
    lo, hi : int
        The file rows held by this rank's process row.
    permuted : bool
    """

    def __init__(self, grid, num_nodes, old_id=None):
        self.grid, self.num_nodes = grid, int(num_nodes)
        self.lo, self.hi = grid.block(self.num_nodes)
        self.old_id = old_id
        self.new_id = None
        if old_id is not None:
            self.new_id = np.empty(self.num_nodes, dtype=np.int64)
            self.new_id[old_id] = np.arange(self.num_nodes, dtype=np.int64)

    @property
    def permuted(self):
        return self.old_id is not None

    def file_rows(self, ids):
        """The file row of each vertex, int64 like ``ids``."""
        ids = np.asarray(ids, dtype=np.int64)
        return ids if self.new_id is None else self.new_id[ids]

    def holds(self, ids):
        """Whether each vertex has a row here at all (a relation block's placement holds its
        destination type's vertices only), bool shape like ``ids``."""
        rows = self.file_rows(ids)
        return (rows >= 0) & (rows < self.num_nodes)

    def owner(self, ids):
        """The process row holding each vertex's row, int64 shape like ``ids``."""
        return self.grid.owner(self.file_rows(ids), self.num_nodes)

    def local(self, ids):
        """The local row (``0 .. hi - lo``) of each vertex held here."""
        return self.file_rows(ids) - self.lo

    def vertices(self, lo=None, hi=None):
        """The vertices stored as file rows ``[lo, hi)`` (default: this rank's), in file order."""
        lo = self.lo if lo is None else lo
        hi = self.hi if hi is None else hi
        if self.old_id is None:
            return np.arange(lo, hi, dtype=np.int64)
        return self.old_id[lo:hi]

    def by_vertex(self, values):
        """Values given per file row (all ``num_nodes`` of them, file order) as per vertex."""
        if self.old_id is None:
            return values
        out = np.empty_like(values)
        out[self.old_id] = values
        return out


def by_owner(owner, size):
    """``(order, counts)``: a stable order grouping entries by ``owner`` (ascending) and the
    number per owner, shape (size,) -- the send layout of an all-to-all."""
    order = np.argsort(owner, kind="stable")
    return order, np.bincount(owner, minlength=size).astype(np.int64)


def original_starts(old_id, file_degree):
    """The first edge id of every vertex's row in the original CSR (vertex order), from the
    row lengths of a relabelled file (file order), int64 shape (n,)."""
    degree = np.empty_like(file_degree)
    degree[old_id] = file_degree
    return np.cumsum(degree) - degree


def original_rows(indptr, indices, weights, old_id):
    """Rows read from a relabelled file with their columns renamed to the original ids and
    re-sorted (weights follow): the rows as the original CSR holds them.

    Parameters
    ----------
    indptr : int64, shape (r + 1,)
    indices : int64, shape (indptr[-1],)
        Column ids in file ids, sorted within rows.
    weights : float64, shape (indptr[-1],), or None
    old_id : int64, shape (n,)

    Returns
    -------
    (indices, weights) in original ids, sorted within rows.
    """
    cols = old_id[indices]
    row = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    order = np.lexsort((cols, row))
    return cols[order], None if weights is None else weights[order]


def vertex_order(indptr, indices, weights, new_id):
    """All ``n`` rows of a file (file order) rearranged so that row ``v`` is vertex ``v``'s
    (file row ``new_id[v]``): ``(indptr, indices, weights)``."""

    degree = np.diff(indptr)[new_id]
    offset, segment = segment_arange(degree)
    take = indptr[new_id][segment] + offset
    out = np.zeros(new_id.size + 1, dtype=np.int64)
    np.cumsum(degree, out=out[1:])
    return out, indices[take], None if weights is None else weights[take]


def permutation_of(where, path, permutation):
    """``old_id`` of the relabelled dataset ``path`` from its ``permutation`` file, checked
    against the dataset's graph (see :func:`read_permutation`)."""

    with GraphFile(where, path) as graph_file:
        return _checked_permutation(where, graph_file, permutation)[0]


def read_permutation(where, graph_file, path, block):
    """``(old_id, file row lengths)`` for an open relabelled graph file from its permutation
    file ``path``, checked: a permutation of the file's vertices, written for this very graph
    (the fingerprint of its row pointers), and rows without duplicate entries (``block``:
    ``(lo, row pointers)`` of the canonical rows this rank read, whose lengths must be the
    file's).

    Raises
    ------
    DatasetError
        Naming ``permutation`` (or ``path`` for duplicate entries).
    """

    old_id, file_degree = _checked_permutation(where, graph_file, path)
    lo, block_indptr = block
    if not np.array_equal(np.diff(block_indptr), file_degree[lo:lo + block_indptr.size - 1]):
        fail(DatasetError, where, "path", f"{str(graph_file.path)!r} holds duplicate entries "
             "within rows; a relabelled dataset (with a permutation) must be canonical",
             show_value=False)
    return old_id, file_degree


def _checked_permutation(where, graph_file, path):

    indptr = graph_file.read_indptr()
    expected = fingerprint(graph_file.num_nodes, graph_file.num_edges, indptr)
    old_id = read_partition(path, graph_file.num_nodes, expected, where=where,
                            argname="permutation")
    return old_id, np.diff(indptr)
