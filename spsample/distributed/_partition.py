"""Locality partitioning: relabel a dataset so that its ``P`` balanced contiguous blocks of
rows (the blocks ``DistGraph`` gives its process rows) hold few cut edges.

``method="metis"`` partitions the symmetrised graph (self-loops dropped) with METIS
(``pymetis``, from PyPI; without it the method is refused with a typed error) and numbers the
vertices part by part (ascending old id within a part); ``method="block"`` keeps the ids (the
baseline). The permutation ``old_id`` (``old_id[new] = old``) maps both ways and is stored
beside the relabelled dataset with a fingerprint of it, so a permutation file that does not
belong to a dataset is refused.
"""

import hashlib

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, DatasetError
from .._validate import as_int, fail
from ..graph._graph import Graph
from ..io import Dataset
from ._layout import owner_of
from ..io._files import read_npz

__all__ = ["partition", "relabel", "cut_edges", "save_partition", "load_partition",
           "read_partition", "fingerprint", "METHODS", "have_metis"]

METHODS = ("metis", "block")


def have_metis():
    """Whether ``pymetis`` imports."""
    try:
        import pymetis  # noqa: F401
    except ImportError:
        return False
    return True


def partition(graph, parts, *, method="metis", seed=0):
    """``old_id`` (int64, shape (n,)): new vertex ``i`` is old vertex ``old_id[i]``.

    Raises
    ------
    ArgumentError, ArgumentTypeError
        Bad ``parts`` or ``method``; ``method="metis"`` without pymetis installed.
    """
    where = "partition"
    _check_homogeneous(where, graph)
    parts = as_int(where, "parts", parts, minimum=1)
    if not isinstance(method, str) or method not in METHODS:
        fail(ArgumentError, where, "method", f"must be one of {METHODS}", method)
    n = graph.num_nodes
    if method == "block" or parts == 1 or n == 0:
        return np.arange(n, dtype=np.int64)
    if not have_metis():
        fail(ArgumentError, where, "method", "'metis' needs pymetis (pip install pymetis)",
             method)
    import pymetis

    xadj, adjncy = _symmetric(graph)
    opts = pymetis.Options(seed=int(seed))
    if hasattr(pymetis, "CSRAdjacency"):                       # pymetis >= 2025.2
        result = pymetis.part_graph(parts, pymetis.CSRAdjacency(xadj, adjncy), options=opts)
    else:
        result = pymetis.part_graph(parts, xadj=xadj, adjncy=adjncy, options=opts)
    membership = result[1]
    return np.argsort(np.asarray(membership, dtype=np.int64), kind="stable")


def _check_homogeneous(where, graph):
    """Partitions relabel one :class:`~spsample.Graph`; refuse anything else by type."""
    if not isinstance(graph, Graph):
        kind = "a heterogeneous graph" if hasattr(graph, "relations") else type(graph).__name__
        fail(ArgumentTypeError, where, "graph", f"must be a spsample.Graph (homogeneous), not "
             f"{kind}: DistHeteroGraph splits each node type into contiguous blocks as stored",
             type(graph).__name__)


def _symmetric(graph):
    """CSR of ``A + A.T`` without self-loops (METIS's input)."""
    import scipy.sparse as sp

    n = graph.num_nodes
    a = sp.csr_matrix((np.ones(len(graph.indices), dtype=np.int8), np.asarray(graph.indices),
                       np.asarray(graph.indptr)), shape=(n, n))
    s = (a + a.T).tocsr()
    s.setdiag(0)
    s.eliminate_zeros()
    return s.indptr.astype(np.int64), s.indices.astype(np.int64)


def relabel(dataset, old_id):
    """The dataset with vertex ``old_id[i]`` renamed ``i``: rows and columns of ``A``, features,
    labels and split ids (renamed in their order, so ``old_id`` maps them back exactly)
    follow. ``dataset`` is not modified."""

    g = dataset.graph
    _check_homogeneous("relabel", g)
    n = g.num_nodes
    old_id = np.asarray(old_id, dtype=np.int64)
    if old_id.shape != (n,) or not np.array_equal(np.sort(old_id), np.arange(n)):
        fail(ArgumentError, "relabel", "old_id", f"must be a permutation of range({n})",
             old_id.shape)
    new_id = np.empty(n, dtype=np.int64)
    new_id[old_id] = np.arange(n)
    deg = np.diff(g.indptr)[old_id]
    indptr = np.concatenate([[0], np.cumsum(deg)])
    start = np.asarray(g.indptr)[old_id]
    pos = np.repeat(start - indptr[:-1], deg) + np.arange(indptr[-1])
    cols = new_id[np.asarray(g.indices)[pos]]
    row = np.repeat(np.arange(n), deg)
    order = np.lexsort((cols, row))
    weights = None if g.weights is None else np.asarray(g.weights)[pos][order]
    graph = Graph.from_csr(indptr, cols[order], weights=weights, num_nodes=n)
    feats = None if dataset.features is None else dataset.features[old_id]
    labels = None if dataset.labels is None else np.asarray(dataset.labels)[old_id]
    splits = {name: {k: new_id[np.asarray(v)] for k, v in part.items()}
              for name, part in dataset.splits.items()}
    return Dataset(graph, features=feats, labels=labels, splits=splits, name=dataset.name)


def cut_edges(graph, parts):
    """Entries ``(v, u)`` of ``A`` whose row and column fall in different blocks of the ``parts``
    balanced contiguous blocks (``DistGraph``'s process rows)."""

    n = graph.num_nodes
    row = np.repeat(np.arange(n), np.diff(graph.indptr))
    return int(np.count_nonzero(owner_of(row, n, parts) !=
                                owner_of(np.asarray(graph.indices), n, parts)))


def fingerprint(num_nodes, num_edges, indptr):
    """What a permutation file records of its relabelled graph: sizes and a SHA-256 of the row
    pointers."""
    h = hashlib.sha256()
    h.update(np.asarray(indptr, dtype=np.int64).tobytes())
    return f"{num_nodes}:{num_edges}:{h.hexdigest()[:32]}"


def _fingerprint(graph):
    return fingerprint(graph.num_nodes, len(graph.indices), graph.indptr)


def save_partition(path, graph, old_id, *, method, parts):
    """Write the permutation of the relabelled ``graph`` to ``path`` (``.npz``)."""
    np.savez(path, old_id=np.asarray(old_id, dtype=np.int64), method=np.str_(method),
             parts=np.int64(parts), fingerprint=np.str_(_fingerprint(graph)))


def load_partition(path, graph, *, where="load_partition", argname="partition"):
    """``old_id`` from a file of :func:`save_partition`, checked against ``graph``.

    Raises
    ------
    DatasetError
        Naming ``partition``: unreadable, not a permutation of the graph's vertices, or written
        for another graph.
    """
    if hasattr(graph, "relations"):
        fail(DatasetError, where, argname, "belongs to a homogeneous dataset; this dataset is "
             "heterogeneous (partitions relabel one Graph)", str(path))
    return read_partition(path, graph.num_nodes, _fingerprint(graph), where=where,
                          argname=argname)


def read_partition(path, num_nodes, expected, *, where="load_partition", argname="partition"):
    """``old_id`` (int64, shape (num_nodes,)) from a file of :func:`save_partition` whose
    fingerprint must be ``expected`` (:func:`fingerprint` of the relabelled graph)."""

    try:
        arrays = read_npz(where, path, ("old_id", "fingerprint"))
    except DatasetError as exc:
        fail(DatasetError, where, argname, f"is not a readable partition file ({exc})",
             str(path))
    old_id, recorded = arrays["old_id"], str(arrays["fingerprint"])
    n = int(num_nodes)
    if old_id.dtype.kind not in "iu" or old_id.shape != (n,) or \
            not np.array_equal(np.sort(old_id), np.arange(n)):
        fail(DatasetError, where, argname, f"is not a permutation of the dataset's {n} "
             "vertices", str(path))
    if recorded != expected:
        fail(DatasetError, where, argname, "was written for another dataset (its "
             "fingerprint differs)", str(path))
    return old_id.astype(np.int64)
