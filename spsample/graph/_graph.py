"""The sampled adjacency: a validated, canonical CSR matrix.

Row ``v`` lists the vertices ``v`` aggregates from (its in-neighbours in message-passing terms),
so node-wise sampling of ``v`` draws from row ``v``. Rows are canonical: column indices sorted
ascending, no duplicates (duplicate entries are merged, their weights summed). The position of
an entry inside its row therefore does not depend on how the graph was built, which the
counter-based RNG relies on (draws are keyed by position).
"""

import io

import numpy as np

from .._errors import ArgumentTypeError, GraphError
from .._validate import as_float_array, as_index_array, as_int, check_memory, fail
from ._pages import advise_huge_pages
from ._weights import (alias_tables, column_fence, column_sums, internal_columns,
                       layerwise_scale, row_weight_stats, scaled_weights, screen_weights,
                       uint32_columns)

__all__ = ["Graph", "MAX_NODES", "frozen_array", "frozen_filled"]

#: Vertex ids are keyed into 32-bit RNG counter words; one value is reserved as a tag.
MAX_NODES = 2**32 - 1


class Graph:
    """A directed graph in CSR form, the adjacency ``A`` of the design notes.

    Build it with :meth:`from_csr`, :meth:`from_edge_index` or :meth:`from_scipy`; the
    constructor itself takes already-validated canonical arrays and is internal.

    Implements :class:`~spsample.graph._source.GraphSource` (the whole-graph quantities:
    :attr:`max_degree`, :meth:`layerwise_scale`, :meth:`layerwise_weights`,
    :meth:`column_weights`, computed once and kept) and
    :class:`~spsample.graph._source.RowSource` (its rows, held in memory).

    Attributes
    ----------
    indptr : ndarray of int64, shape (num_nodes + 1,)
    indices : ndarray of int64, shape (num_edges,)
        Sorted ascending within each row, no duplicates.
    weights : ndarray of float64, shape (num_edges,), or None
        Non-negative finite edge weights; ``None`` for an unweighted graph (all ones).

    Examples
    --------
    The graph ``0 <- 1, 0 <- 2, 1 <- 2`` (row v lists whom v aggregates from)::

        >>> import spsample
        >>> g = spsample.Graph.from_csr([0, 2, 3, 3], [1, 2, 2])
        >>> g.num_nodes, g.num_edges
        (3, 3)
        >>> g.degree().tolist()
        [2, 1, 0]
    """

    __slots__ = ("_indptr", "_indices", "_weights", "_cache")

    def __init__(self, indptr, indices, weights=None):
        # Frozen, not just flagged read-only: native kernels trust these arrays once checked,
        # so no one may write to them afterwards (``arr.flags.writeable = True`` fails).
        self._indptr = frozen_array(indptr)
        self._indices = frozen_array(indices)
        self._weights = None if weights is None else frozen_array(weights)
        self._cache = {}  # derived read-only quantities (e.g. FastGCN's column weights)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_csr(cls, indptr, indices, *, weights=None, num_nodes=None):
        """Build a graph from CSR arrays (copied; the caller's arrays are never modified).

        Parameters
        ----------
        indptr : array_like of int, shape (n + 1,)
            Row pointers: starts at 0, non-decreasing, ends at ``len(indices)``.
        indices : array_like of int, shape (nnz,)
            Column ids, ``0 <= indices < n``. Rows need not be sorted; duplicates are merged.
        weights : array_like of float, shape (nnz,), optional
            Non-negative finite weights. Merged duplicates have their weights summed.
        num_nodes : int, optional
            Must equal ``len(indptr) - 1`` when given (a CSR matrix is square here).

        Raises
        ------
        GraphError
            With the argument named, for any inconsistency listed above, or an empty graph.
        """
        where = "Graph.from_csr"
        indptr = as_index_array(where, "indptr", indptr, error_cls=GraphError)
        indices = as_index_array(where, "indices", indices, error_cls=GraphError)
        if indptr.size < 2:
            fail(GraphError, where, "indptr", "must have length num_nodes + 1 >= 2 "
                 "(an empty graph cannot be sampled)", indptr.size)
        n = indptr.size - 1
        if num_nodes is not None:
            num_nodes = as_int(where, "num_nodes", num_nodes, minimum=1, error_cls=GraphError)
            if num_nodes != n:
                fail(GraphError, where, "num_nodes",
                     f"must equal len(indptr) - 1 = {n}", num_nodes)
        if n > MAX_NODES:
            fail(GraphError, where, "indptr", f"describes more than {MAX_NODES} nodes", n)
        if indptr[0] != 0:
            fail(GraphError, where, "indptr", "must start at 0", int(indptr[0]))
        steps = np.diff(indptr)
        if steps.size and steps.min() < 0:
            bad = int(np.flatnonzero(steps < 0)[0])
            fail(GraphError, where, "indptr",
                 f"must be non-decreasing (drops at position {bad + 1})", int(indptr[bad + 1]))
        if indptr[-1] != indices.size:
            fail(GraphError, where, "indptr",
                 f"must end at len(indices) = {indices.size}", int(indptr[-1]))
        _check_ids(where, "indices", indices, n)
        if weights is not None:
            weights = _check_weights(where, weights, indices.size)
        return cls._canonical(indptr, indices, weights)

    @classmethod
    def from_edge_index(cls, src, dst, *, num_nodes=None, weights=None, symmetrize=False):
        """Build a graph from an edge list in PyG's convention (messages flow ``src -> dst``).

        Edge ``(src[e], dst[e])`` puts ``src[e]`` into row ``dst[e]``: ``dst`` aggregates from
        ``src``.

        Parameters
        ----------
        src, dst : array_like of int, shape (E,)
        num_nodes : int, optional
            Defaults to ``max(src.max(), dst.max()) + 1``; must exceed every id when given.
        weights : array_like of float, shape (E,), optional
        symmetrize : bool
            Also add every reverse edge (with the same weight), making the graph undirected.

        Examples
        --------
        >>> import spsample
        >>> g = spsample.Graph.from_edge_index([1, 2], [0, 0], num_nodes=3)
        >>> g.indices.tolist()
        [1, 2]
        """
        where = "Graph.from_edge_index"
        src = as_index_array(where, "src", src, error_cls=GraphError)
        dst = as_index_array(where, "dst", dst, error_cls=GraphError)
        if src.size != dst.size:
            fail(GraphError, where, "dst", f"must have the same length as src ({src.size})",
                 dst.size)
        top = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
        if num_nodes is None:
            if top == 0:
                fail(GraphError, where, "src", "is empty and num_nodes is not given: "
                     "an empty graph cannot be sampled", src.size)
            n = top
        else:
            n = as_int(where, "num_nodes", num_nodes, minimum=1, error_cls=GraphError)
            if top > n:
                fail(GraphError, where, "num_nodes",
                     f"is smaller than the largest id + 1 ({top})", n)
        if n > MAX_NODES:
            fail(GraphError, where, "num_nodes", f"must be at most {MAX_NODES}", n)
        _check_ids(where, "src", src, n)
        _check_ids(where, "dst", dst, n)
        if weights is not None:
            weights = _check_weights(where, weights, src.size)
        symmetrize = _as_flag(where, "symmetrize", symmetrize)
        _check_node_memory(where, n, src.size * (2 if symmetrize else 1))
        if symmetrize:
            src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
            if weights is not None:
                weights = np.concatenate([weights, weights])
        order = np.argsort(dst, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
        return cls._canonical(indptr, src[order], None if weights is None else weights[order])

    @classmethod
    def from_scipy(cls, matrix):
        """Build a graph from a square ``scipy.sparse`` matrix (row v = whom v aggregates from).

        Explicit zeros are kept as edges of weight 0 only if the matrix is weighted; a matrix
        whose stored values are all 1 gives an unweighted graph.
        """
        import scipy.sparse as sp

        where = "Graph.from_scipy"
        if not sp.issparse(matrix):
            fail(ArgumentTypeError, where, "matrix", "must be a scipy.sparse matrix", type(matrix))
        if matrix.shape[0] != matrix.shape[1]:
            fail(GraphError, where, "matrix", "must be square", matrix.shape)
        if matrix.dtype.kind not in "biuf":
            fail(ArgumentTypeError, where, "matrix", f"must hold real numbers, not "
                 f"{matrix.dtype} (complex weights have no meaning here)", show_value=False)
        csr = sp.csr_matrix(matrix)
        data = np.asarray(csr.data, dtype=np.float64)
        weights = None if np.all(data == 1.0) else data
        return cls.from_csr(csr.indptr, csr.indices, weights=weights)

    @classmethod
    def _canonical(cls, indptr, indices, weights):
        """Sort each row by column and merge duplicate entries (weights summed)."""
        n = indptr.size - 1
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        if indices.size > 1:
            same_row = rows[1:] == rows[:-1]
            sorted_ok = not np.any(same_row & (indices[1:] <= indices[:-1]))
        else:
            sorted_ok = True
        if not sorted_ok:
            order = np.lexsort((indices, rows))
            rows, indices = rows[order], indices[order]
            if weights is not None:
                weights = weights[order]
            keep = np.ones(indices.size, dtype=bool)
            keep[1:] = (rows[1:] != rows[:-1]) | (indices[1:] != indices[:-1])
            if not keep.all():
                if weights is not None:
                    group = np.cumsum(keep) - 1
                    weights = np.bincount(group, weights=weights)
                rows, indices = rows[keep], indices[keep]
                indptr = np.zeros(n + 1, dtype=np.int64)
                np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(indptr, np.ascontiguousarray(indices),
                   None if weights is None else np.ascontiguousarray(weights))

    # ------------------------------------------------------------------ properties
    @property
    def num_nodes(self):
        """Number of vertices ``n``."""
        return self._indptr.size - 1

    @property
    def num_edges(self):
        """Number of stored entries (directed edges) ``nnz``."""
        return self._indices.size

    @property
    def indptr(self):
        """Row pointers, int64, shape (n + 1,), read-only."""
        return self._indptr

    @property
    def indices(self):
        """Column ids, int64, shape (nnz,), sorted within rows, read-only."""
        return self._indices

    @property
    def weights(self):
        """Edge weights, float64, shape (nnz,), read-only; ``None`` when unweighted."""
        return self._weights

    @property
    def is_weighted(self):
        return self._weights is not None

    def _memo(self, key, compute):
        """``compute()`` once per graph, memoised under the private ``key`` (graphs are
        immutable). Arrays in the result (an array, or a tuple of them) are frozen like the
        graph's own (:func:`frozen_array`), so a kernel may trust them as it trusts the graph."""
        if key not in self._cache:
            value = compute()
            if isinstance(value, np.ndarray):
                value = frozen_array(value)
            elif isinstance(value, tuple):
                value = tuple(frozen_array(v) if isinstance(v, np.ndarray) else v
                              for v in value)
            self._cache[key] = value
        return self._cache[key]

    # ------------------------------------------------------------------ whole-graph quantities
    # (the GraphSource protocol of spsample.graph._source; computed once, memoised here)
    @property
    def max_degree(self):
        """The longest row (most entries of one vertex), int; 0 without vertices."""
        return self._memo("max_degree", lambda: int(np.diff(self._indptr).max(initial=0)))

    def layerwise_scale(self):
        """The power of two the layer-wise samplers scale the weights by
        (:func:`~spsample.graph._weights.layerwise_scale` of the largest weight; 1.0 when
        unweighted).

        Returns
        -------
        float
        """
        def compute():
            w = self._weights
            return layerwise_scale(float(w.max()) if w is not None and w.size else 0.0)
        return self._memo("layerwise_scale", compute)

    def layerwise_weights(self):
        """The edge weights scaled by :meth:`layerwise_scale` (exactly: a power of two), the
        values layer-wise samplers square and sum
        (:func:`~spsample.graph._weights.scaled_weights`).

        Returns
        -------
        float64, shape (num_edges,), read-only, the same array on every call; ``None`` for an
        unweighted graph.
        """
        if self._weights is None:
            return None
        return self._memo("layerwise_weights", lambda: scaled_weights(self._weights))

    def column_weights(self):
        """FastGCN's column weights ``q[u] = Σ_v A[v,u]²`` (weights scaled by
        :meth:`layerwise_weights`; 1 per entry when unweighted), summed in CSR order, and
        their serial prefix sums (:func:`~spsample.graph._weights.column_sums`).

        Returns
        -------
        (q, cumulative) : float64 arrays of shape (num_nodes,), read-only
        """
        return self._memo("column_weights", lambda: column_sums(
            self._indices, self.layerwise_weights(), self.num_nodes))

    def indices32(self):
        """The column ids as uint32 (the row-wise kernels' copy, 4 bytes per edge), built once
        in its final frozen buffer.

        Returns
        -------
        uint32, shape (num_edges,), read-only
        """
        return self._memo("indices32", lambda: uint32_columns(self._indices, frozen_filled))

    def column_fence(self):
        """Every 16th column of :meth:`indices32` (:func:`~spsample.graph._weights.column_fence`),
        the node2vec kernel's index for its membership tests, built once.

        Returns
        -------
        (fence, phase) : uint32 array of shape (about num_edges / 16,), int
        """
        return self._memo("column_fence", lambda: column_fence(self.indices32()))

    def internal_columns(self):
        """The layer-wise kernel's column tables
        (:func:`~spsample.graph._weights.internal_columns`), built once.

        Returns
        -------
        (indices32, internal_of, vertex_of) : uint32 arrays of shapes (num_edges,), (n,), (n,)
        """
        return self._memo("internal_columns", lambda: internal_columns(
            self._indices, self.num_nodes, frozen_filled))

    def screen_weights(self):
        """float32 copies of the weights that the native weighted rule reads
        (:func:`~spsample.graph._weights.screen_weights`), built once: 4 bytes per entry, kept
        with the graph; ``None`` when the graph is unweighted or a positive weight lies outside
        ``SCREEN32_W_RANGE``.

        Returns
        -------
        ndarray, float32, shape (num_edges,), read-only, or None
        """
        if self._weights is None:
            return None
        return self._memo("screen_weights", lambda: screen_weights(self._weights, frozen_filled))

    def row_weight_stats(self):
        """The native weighted rule's per-row statistics
        (:func:`~spsample.graph._weights.row_weight_stats`), built once; ``None`` when the
        graph is unweighted.

        Returns
        -------
        ndarray, float64, shape (num_nodes * 3,) or None
        """
        if self._weights is None:
            return None
        return self._memo("row_weight_stats",
                          lambda: row_weight_stats(self._indptr, self._weights))

    def all_weights_positive(self):
        """Whether every edge weight is ``> 0`` (memoised; ``False`` when unweighted): every
        entry of a row is then eligible for the weighted rules, and the alias rule keeps a
        short row without reading anything about it."""
        if self._weights is None:
            return False
        return self._memo("all_weights_positive", lambda: bool(np.all(self._weights > 0)))

    def alias_table(self, build=None):
        """Walker's alias table of every row's weights
        (:func:`~spsample.graph._weights.alias_tables`), built once for the alias rule
        (``NodeWise(weighted=True, weighted_method="alias")``): 8 bytes per entry and 8 per
        vertex, kept with the graph; ``None`` when the graph is unweighted or a row's positive
        weights sum past the largest float64.

        Parameters
        ----------
        build : callable, optional
            A builder with :func:`~spsample.graph._weights.alias_tables`' contract and bits
            (the native kernels pass theirs, :func:`spsample.native.alias_tables`); used only
            by the first call, which builds the memo.

        Returns
        -------
        (table, share) or None
            ``table``: uint32, shape (num_edges, 2), ``[threshold, alias]`` per entry;
            ``share``: float64, shape (num_nodes,), each row's largest weight over its sum
            (read-only).

        Raises
        ------
        ResourceLimitError
            Naming ``weighted_method`` when building the table would pass the memory limit.
        """
        if self._weights is None:
            return None

        def make():
            check_memory("sample", "weighted_method", 80 * self.num_edges + 40 * self.num_nodes,
                         "the alias tables of the graph's weights",
                         "use weighted_method='keys' (no table) or raise the memory limit")
            table, share, finite = (build or alias_tables)(self._indptr, self._weights)
            return (table, share) if finite.all() else None
        return self._memo("alias_table", make)

    def sorted_entry_time(self, time, check):
        """``check()`` (the check that ``time`` holds one sortable time per entry, sorted
        within rows), run once per array ``time`` held by the graph and memoised.

        Returns
        -------
        ndarray, shape (num_edges,): what ``check()`` returns
        """
        held = self._memo(("sorted_entry_time", id(time)), lambda: (time, check()))
        return held[1] if held[0] is time else check()

    def degree(self):
        """Row lengths (number of neighbours each vertex aggregates from), int64, shape (n,)."""
        return np.diff(self._indptr)

    def to_scipy(self):
        """The adjacency as a ``scipy.sparse.csr_matrix`` (values 1.0 when unweighted)."""
        import scipy.sparse as sp

        data = np.ones(self.num_edges) if self._weights is None else self._weights
        return sp.csr_matrix((data, self._indices, self._indptr), shape=(self.num_nodes,) * 2)

    def edge_index(self):
        """``(src, dst)`` int64 arrays in PyG's convention (inverse of :meth:`from_edge_index`)."""
        dst = np.repeat(np.arange(self.num_nodes, dtype=np.int64), self.degree())
        return self._indices.copy(), dst

    def __eq__(self, other):
        if not isinstance(other, Graph):
            return NotImplemented
        if (self._weights is None) != (other._weights is None):
            return False
        return (np.array_equal(self._indptr, other._indptr)
                and np.array_equal(self._indices, other._indices)
                and (self._weights is None or np.array_equal(self._weights, other._weights)))

    __hash__ = None

    def __reduce__(self):
        # unpickled arrays own writeable memory: rebuild through __init__, which freezes them
        return (Graph, (self._indptr, self._indices, self._weights))

    def __repr__(self):
        kind = "weighted" if self.is_weighted else "unweighted"
        return f"Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges}, {kind})"


def frozen_array(arr):
    """A read-only array whose memory no one can make writeable again.

    ``arr.flags.writeable = False`` alone can be undone by anyone holding the array (or its
    base). The returned array views an immutable ``bytes`` object instead, so turning the flag
    back on raises ``ValueError``. Arrays that already are such views are returned as they
    are; others are copied once (C order, same dtype and shape). A copy of 4 MiB or more is
    put on transparent huge pages where the OS allows (:mod:`spsample.graph._pages`).

    Examples
    --------
    >>> import numpy as np
    >>> a = frozen_array(np.arange(3))
    >>> a.flags.writeable = True
    Traceback (most recent call last):
    ...
    ValueError: cannot set WRITEABLE flag to True of this array
    """
    if _is_frozen(arr):
        return arr
    arr = np.ascontiguousarray(arr)
    out = np.frombuffer(arr.tobytes(), dtype=arr.dtype)
    advise_huge_pages(out)
    return out if arr.ndim == 1 else out.reshape(arr.shape)


#: Entries filled at a time by :func:`frozen_filled` (in bytes).
PIECE_BYTES = 16 << 20


class _FillStream(io.RawIOBase):
    """Raw bytes produced by ``fill(position, piece)``: each :meth:`readinto` hands the
    caller's buffer, as whole entries of ``dtype``, to ``fill``."""

    def __init__(self, dtype, size, fill):
        super().__init__()
        self.dtype, self.size, self.fill, self.pos = np.dtype(dtype), int(size), fill, 0

    def readable(self):
        return True

    def readinto(self, b):
        itemsize = self.dtype.itemsize
        count = min(len(b) // itemsize, self.size - self.pos, PIECE_BYTES // itemsize)
        if count <= 0:
            if self.pos < self.size:        # BufferedReader asks for whole blocks of 2**k bytes
                raise RuntimeError("read a buffer smaller than one entry")
            return 0
        piece = np.frombuffer(b, dtype=self.dtype, count=count)
        self.fill(self.pos, piece)
        self.pos += count
        del piece
        return count * itemsize


def frozen_filled(dtype, size, fill):
    """A frozen array (see :func:`frozen_array`) of ``size`` entries of ``dtype`` written in
    place, piece by piece: ``fill(position, piece)`` writes entries ``position ..
    position + len(piece) - 1`` into ``piece`` (a writable view of part of the final memory).
    Peak memory: the array itself, no second copy. Like :func:`frozen_array`'s copies, an
    array of 4 MiB or more is put on transparent huge pages where the OS allows.

    Raises
    ------
    EOFError
        When ``fill`` stops the stream early (a short read).
    """
    dtype = np.dtype(dtype)
    nbytes = int(size) * dtype.itemsize
    # a large read() fills one new bytes object straight through readinto (no buffer copy)
    with io.BufferedReader(_FillStream(dtype, size, fill), buffer_size=1 << 16) as reader:
        data = reader.read(nbytes)
    if len(data) != nbytes:
        raise EOFError(f"frozen_filled: {len(data)} of {nbytes} bytes")
    out = np.frombuffer(data, dtype=dtype)
    advise_huge_pages(out)
    return out


def _is_frozen(arr):
    """Whether ``arr`` is a read-only, C-contiguous view of a ``bytes`` object."""
    if arr.flags.writeable or not arr.flags.c_contiguous:
        return False
    base = arr
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return isinstance(base, bytes)


def _as_flag(where, name, value):
    """``value`` if it is a bool: strings such as ``"no"`` are truthy and would flip it."""
    if not isinstance(value, (bool, np.bool_)):
        fail(ArgumentTypeError, where, name, "must be True or False", value)
    return bool(value)


def _check_node_memory(where, n, num_edges):
    """Check the CSR arrays of ``n`` nodes and ``num_edges`` entries fit, before building."""

    check_memory(where, "num_nodes", 16 * (n + 1) + 32 * num_edges,
                 f"the CSR arrays of {n:,d} nodes and {num_edges:,d} edges",
                 "pass a smaller num_nodes (the largest id + 1 is enough)")


def _check_ids(where, name, ids, n):
    if ids.size == 0:
        return
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0:
        fail(GraphError, where, name, "must be non-negative", lo)
    if hi >= n:
        fail(GraphError, where, name, f"has an id >= num_nodes ({n})", hi)


def _check_weights(where, weights, size):
    weights = as_float_array(where, "weights", weights, error_cls=GraphError)
    if weights.size != size:
        fail(GraphError, where, "weights", f"must have one value per edge ({size})", weights.size)
    if not np.all(np.isfinite(weights)):
        fail(GraphError, where, "weights", "must be finite (no NaN or inf)",
             weights[~np.isfinite(weights)][0])
    if weights.size and weights.min() < 0:
        fail(GraphError, where, "weights", "must be non-negative", float(weights.min()))
    return weights
