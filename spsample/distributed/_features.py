"""``FeatureStore``: the n × f feature matrix in ``p / c`` shards by vertex id, each shard
held by the ``c`` ranks of a process row (the same blocks as the graph's rows).

Sparse features (a ``scipy.sparse`` matrix, or a CSR ``/features`` group of an spsample file)
stay sparse: each shard is a CSR block of rows, and a fetch moves the requested rows' non-zeros
only (row lengths, column ids and values: three all-to-alls instead of one), so the memory and
the bytes are in proportion to the non-zeros, never ``rows × f``.
"""

import hashlib

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError
from .._validate import as_index_array, check_range, fail
from ._collective import agree, check_same, open_rows_everywhere
from ._failure import abort_if_failing_alone
from ._grid import Grid
from ._placement import Placement, by_owner, permutation_of
from ._layout import rows_of_rank

__all__ = ["FeatureStore", "CachedFeatureStore"]


class FeatureStore:
    """Feature rows ``[lo, hi)`` of this rank's process row; any rows fetched on demand.

    Build it with :meth:`from_array` or :meth:`load`; call :meth:`fetch` collectively.

    Attributes
    ----------
    grid : Grid
    num_nodes : int
    shape : tuple
        Of the whole matrix, ``(num_nodes, f, ...)``.
    dtype : numpy.dtype
        As given / as stored in the file (any fixed-size dtype; the values' dtype when
        sparse).
    sparse : bool
        Whether the shard is a CSR block (sparse features): :meth:`fetch` then returns a
        ``scipy.sparse.csr_matrix``, the type the loader's
        :class:`~spsample.loader.SparseFeatures` gives, so that batches carry
        :class:`~spsample.loader.SparseRows`.
    lo, hi : int
        The file rows held here (the vertices' ids unless loaded with a ``permutation``).
    placement : Placement
        The process row and local row of every vertex's feature row.
    shard : ndarray, shape (hi - lo, f, ...), or scipy.sparse.csr_matrix, shape (hi - lo, f)
        The rows held here (read-only arrays; a CSR block has sorted column ids in each row).
    last_stats : dict
        ``requested``, ``unique``, ``remote`` row counts of the latest :meth:`fetch`.
    """

    def __init__(self, grid, num_nodes, lo, shard, placement=None):
        self.grid = grid
        self.num_nodes = int(num_nodes)
        self.placement = placement or Placement(grid, self.num_nodes)
        self.sparse = _is_sparse(shard)
        shard = _frozen_csr(shard) if self.sparse else shard
        self.lo, self.hi = int(lo), int(lo) + shard.shape[0]
        if not self.sparse:
            shard.flags.writeable = False
        self.shard = shard
        self.shape = (self.num_nodes,) + tuple(shard.shape[1:])
        self.dtype = shard.dtype
        self.last_stats = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_array(cls, features, grid, *, root=None):
        """Shard an in-memory array.

        Parameters
        ----------
        features : array_like, shape (n, f, ...), or scipy.sparse matrix, shape (n, f)
            ``root=None``: every rank passes the same array and keeps its shard. ``root=r``:
            rank ``r``'s array is scattered (other ranks may pass ``None``). A
            ``scipy.sparse`` matrix gives a sparse store (CSR shards; checked first).
        grid : Grid
        root : int or None
        """
        where = "FeatureStore.from_array"
        _check_grid(where, grid)
        with abort_if_failing_alone(grid.comm, where):
            return cls._from_array(features, grid, root)

    @classmethod
    def _from_array(cls, features, grid, root):
        where, comm = "FeatureStore.from_array", grid.comm
        if root is None:
            def check():
                arr = _as_features(where, features)
                return arr
            arr = agree(comm, where, check)
            check_same(comm, where, "features (shape, dtype, sparse, nnz)", _summary(arr))
            lo, hi = grid.block(arr.shape[0])
            if _is_sparse(arr):
                return cls(grid, arr.shape[0], lo, arr[lo:hi])
            return cls(grid, arr.shape[0], lo, np.array(arr[lo:hi], copy=True))

        def check_root():
            if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < comm.size:
                fail(ArgumentError, where, "root", f"must be None or a rank in [0, {comm.size})",
                     root)
            return _as_features(where, features) if comm.rank == root else None
        arr = agree(comm, where, check_root)
        meta = comm.bcast(_summary(arr)[:3] if comm.rank == root else None, root=root)
        shape, dtype, sparse = tuple(meta[0]), np.dtype(meta[1]), meta[2]
        spans = _spans(shape[0], grid)
        counts = np.zeros(comm.size, dtype=np.int64)
        if comm.rank == root:
            counts[:] = [hi - lo for lo, hi in spans]
            rows = np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in spans])
            send = arr[rows] if sparse else np.concatenate([arr[lo:hi] for lo, hi in spans])
        else:
            send = _empty_rows(shape, dtype, sparse)
        lo, hi = grid.block(shape[0])
        recvcounts = np.zeros(comm.size, dtype=np.int64)
        recvcounts[root] = hi - lo
        shard = alltoallv_rows(comm, send, counts, recvcounts, _index_dtype(shape))
        return cls(grid, shape[0], lo, shard)

    @classmethod
    def load(cls, path, grid, *, permutation=None):
        """Read this rank's shard of ``/features`` from an spsample HDF5 file (only its rows).

        Sparse features (a CSR ``/features`` group) stay sparse: each rank reads its rows'
        slices of the three CSR parts, checked first (see
        :meth:`spsample.io.RowReader.read_sparse_feature_rows`).

        Parameters
        ----------
        path : str or os.PathLike
        grid : Grid
        permutation : str or os.PathLike, optional
            The permutation file of a relabelled dataset (``spsample partition``): rows are
            read as stored, fetched by original vertex id (see :meth:`DistGraph.load`).

        Raises
        ------
        DatasetNotFoundError, DatasetError
            On every rank, when the file is missing on any rank or has no features, its
            features are invalid (CSR structure, column ids, dtypes, declared sizes against
            the bytes stored) on any rank, or the ``permutation`` file does not belong to the
            dataset.
        DistributedError
            On every rank, when the ranks' files hold features of different widths, dtypes
            or kinds.
        """
        where = "FeatureStore.load"
        _check_grid(where, grid)
        with abort_if_failing_alone(grid.comm, where):
            return cls._load(path, grid, permutation)

    @classmethod
    def _load(cls, path, grid, permutation):
        where, comm = "FeatureStore.load", grid.comm
        reader = open_rows_everywhere(comm, where, path, need_features=True)
        try:
            n = reader.num_nodes
            agree(comm, where, lambda: None, same=("num_nodes of the file", n))
            lo, hi = grid.block(n)
            shard = agree(comm, where, lambda: _read_shard(reader, lo, hi))
        finally:
            reader.close()
        check_same(comm, where, "features (width, dtype, sparse)", _summary(shard)[1:3]
                   + (shard.shape[1:],))
        old_id = None if permutation is None else \
            agree(comm, where, lambda: permutation_of(where, path, permutation))
        return cls(grid, n, lo, shard, Placement(grid, n, old_id))

    # ------------------------------------------------------------------ fetching
    def fetch(self, n_id):
        """The feature rows of ``n_id`` (collective over the grid).

        Requests are deduplicated, bucketed by owning process row (ids ascending, so the
        buckets are contiguous) and exchanged with one all-to-all inside this rank's column
        (the ``p / c`` ranks of its replica index); the owners answer with their rows.

        Parameters
        ----------
        n_id : array_like of int, shape (m,)
            Any order, repeats allowed, may be empty; ``0 <= n_id < num_nodes``.

        Returns
        -------
        ndarray, shape (m, f, ...), dtype :attr:`dtype`: exactly the stored rows; a sparse
        store's a ``scipy.sparse.csr_matrix`` of shape (m, f) (column ids sorted in each row):
        exactly the stored rows' non-zeros.

        Raises
        ------
        ArgumentError
            On every rank, when any rank asks for a row that does not exist.
        """
        with abort_if_failing_alone(self.grid.comm, "FeatureStore.fetch"):
            return self._fetch(n_id)

    def _fetch(self, n_id):
        where = "FeatureStore.fetch"

        def check():
            ids = as_index_array(where, "n_id", n_id)
            check_range(where, "n_id", ids, 0, self.num_nodes)
            return ids
        ids = agree(self.grid.comm, where, check)
        col = self.grid.col_comm
        uniq, inverse = np.unique(ids, return_inverse=True)
        owner = self.placement.owner(uniq)
        order, counts = by_owner(owner, col.size)
        asked, asked_counts = col.alltoallv(uniq[order], counts)
        rows = self.shard[self.placement.local(asked)]
        got = alltoallv_rows(col, rows, asked_counts, counts, self._index_dtype)
        self.last_stats = {"requested": int(ids.size), "unique": int(uniq.size),
                           "remote": int((owner != self.grid.row).sum())}
        if self.placement.permuted:       # got is in the order of uniq[order]
            at = np.empty_like(order)
            at[order] = np.arange(order.size)
            return got[at[inverse.ravel()]]
        return got[inverse.ravel()]

    @property
    def _index_dtype(self):
        return _index_dtype(self.shape) if self.sparse else None

    def _with_shard(self, shard):
        """The same store (grid, rows, placement) holding ``shard`` instead (e.g. the rows
        converted to or from CSR; not collective)."""
        return FeatureStore(self.grid, self.num_nodes, self.lo, shard, self.placement)

    def __repr__(self):
        kind = f", sparse (nnz here={self.shard.nnz})" if self.sparse else ""
        return (f"FeatureStore(shape={self.shape}, dtype={self.dtype}{kind}, "
                f"rows=[{self.lo}, {self.hi}), {self.grid!r})")


def _check_grid(where, grid):
    if not isinstance(grid, Grid):
        fail(ArgumentTypeError, where, "grid", "must be a spsample.distributed.Grid", type(grid))


def _as_features(where, features):
    if type(features).__module__.startswith("scipy.sparse"):
        return _as_sparse_features(where, features)
    try:
        arr = np.asarray(features)
    except Exception as exc:
        fail(ArgumentTypeError, where, "features", f"cannot be read as an array ({exc})",
             show_value=False)
    if arr.dtype == object or arr.ndim < 1:
        fail(ArgumentTypeError, where, "features",
             "must be an array of fixed-size elements with ndim >= 1", show_value=False)
    return arr


def _as_sparse_features(where, features):
    """A ``scipy.sparse`` matrix as a checked CSR matrix (the caller's is not modified)."""
    import scipy.sparse as sp

    if len(features.shape) != 2:
        fail(ArgumentError, where, "features", "must be 2-dimensional (n, f)", features.shape)
    if features.dtype.kind not in "biuf":
        fail(ArgumentTypeError, where, "features", f"must hold real numbers, not "
             f"{features.dtype}", show_value=False)
    try:
        matrix = sp.csr_matrix(features)
        # checked on a new wrapper: check_format may rebind (never rewrite) its arrays
        matrix = sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr),
                               shape=matrix.shape, copy=False)
        matrix.check_format(full_check=True)
    except (ValueError, IndexError, TypeError) as exc:
        fail(ArgumentError, where, "features", f"is not a valid sparse matrix ({exc})",
             show_value=False)
    return matrix


def _is_sparse(rows):
    return type(rows).__module__.startswith("scipy.sparse")


def _frozen_csr(matrix):
    """``matrix`` as a CSR matrix with sorted column ids in every row and read-only arrays
    (a copy when it must be sorted: the caller's arrays are never modified)."""
    import scipy.sparse as sp

    matrix = matrix if isinstance(matrix, sp.csr_matrix) else sp.csr_matrix(matrix)
    if not matrix.has_sorted_indices:
        matrix = matrix.sorted_indices()
    for part in (matrix.data, matrix.indices, matrix.indptr):
        part.flags.writeable = False
    return matrix


def _summary(arr):
    """``(shape, dtype, sparse, nnz)``: what must agree between the ranks' feature inputs."""
    sparse = _is_sparse(arr)
    return (tuple(int(s) for s in arr.shape), arr.dtype.str, sparse,
            int(arr.nnz) if sparse else None)


def _index_dtype(shape):
    """The dtype column ids travel in: the same on every rank (int32 when ``f < 2**31``)."""
    return np.dtype(np.int32 if shape[1] < 2**31 else np.int64)


def _empty_rows(shape, dtype, sparse):
    if sparse:
        import scipy.sparse as sp

        return sp.csr_matrix((0, shape[1]), dtype=dtype)
    return np.zeros((0,) + tuple(shape[1:]), dtype=dtype)


def _read_shard(reader, lo, hi):
    """File rows ``[lo, hi)`` of the features: a CSR block when stored sparse."""
    if reader.sparse_features:
        return reader.read_sparse_feature_rows(lo, hi)
    return np.ascontiguousarray(reader.read_feature_rows(np.arange(lo, hi, dtype=np.int64)))


def alltoallv_rows(comm, rows, sendcounts, recvcounts, index_dtype=None):
    """Personalised all-to-all of feature rows (a dense array or CSR rows) with known
    ``recvcounts`` (rows from each rank).

    Dense rows travel in one ``alltoallv``. CSR rows travel as their lengths (int64), then
    their column ids (``index_dtype``, the same on every rank) and values: three
    ``alltoallv``; each rank knows from the lengths how many entries come from each peer.

    Returns
    -------
    ndarray, or scipy.sparse.csr_matrix of ``recvcounts.sum()`` rows, the rows from rank 0
    first.
    """
    if not _is_sparse(rows):
        return comm.alltoallv(np.ascontiguousarray(rows), sendcounts, recvcounts=recvcounts)[0]
    import scipy.sparse as sp

    lengths = np.diff(rows.indptr).astype(np.int64)
    got, _ = comm.alltoallv(lengths, sendcounts, recvcounts=recvcounts)
    send_nnz, recv_nnz = _sums(lengths, sendcounts), _sums(got, recvcounts)
    indices, _ = comm.alltoallv(np.ascontiguousarray(rows.indices, dtype=index_dtype),
                                send_nnz, recvcounts=recv_nnz)
    data, _ = comm.alltoallv(np.ascontiguousarray(rows.data), send_nnz, recvcounts=recv_nnz)
    indptr = np.zeros(got.size + 1, dtype=np.int64)
    np.cumsum(got, out=indptr[1:])
    return sp.csr_matrix((data, indices, indptr), shape=(got.size, rows.shape[1]))


def _sums(values, counts):
    """Sums of consecutive segments of ``values``, ``counts[i]`` entries in segment ``i``."""
    total = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum(values, out=total[1:])
    bounds = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    return total[bounds[1:]] - total[bounds[:-1]]


def _spans(n, grid):
    return [rows_of_rank(n, r, grid.size, grid.replication) for r in range(grid.size)]


class CachedFeatureStore:
    """A :class:`FeatureStore` fronted by a cache of hot rows partitioned across the ranks of
    each process row (DSP's design): hot row ``i`` (by descending score, ties to the smaller
    id) is held by replica ``i % c`` of every process row. :meth:`fetch` serves rows of this
    rank's own block from its shard, hot rows from the row's cache (one all-to-all inside the
    process row) and only the rest through the store's all-to-all across process rows; the
    rows are exactly the store's.

    A sparse store's cache holds CSR rows: hot row ``i`` costs its non-zeros' bytes (column
    id and value) plus 8 bytes of row length, and the hot rows are the longest prefix of the
    ranking that every replica's share of fits in ``budget`` (the row lengths of all ``n``
    rows are gathered once, 8 bytes each). :meth:`fetch` then returns CSR rows, as the
    store's does.

    Parameters
    ----------
    store : FeatureStore
    budget : int
        Bytes of cached rows per rank; the process row caches ``c * budget // row_bytes`` rows
        (dense rows).
    scores : array_like, shape (n,)
        Hotness per vertex, the same on every rank (in-degree, sampled counts): compared
        across the ranks (SHA-256 of their float64 values), since ranks that ranked rows
        differently would serve each other the wrong rows.

    Raises
    ------
    ArgumentTypeError, ArgumentError
        On every rank, when any rank's ``budget`` or ``scores`` is invalid.
    DistributedError
        On every rank, when the ranks' ``budget`` or ``scores`` differ (even slightly).

    Attributes
    ----------
    hot_ids : int64, shape (k,)
        The rows this rank caches.
    last_stats : dict
        ``unique``, ``local``, ``hits``, ``cold`` row counts of the latest :meth:`fetch`.

    Building one and :meth:`fetch` are collective over the grid.
    """

    def __init__(self, store, budget, scores):
        where = "CachedFeatureStore"
        if not isinstance(store, FeatureStore):
            fail(ArgumentTypeError, where, "store", "must be a FeatureStore", type(store))
        with abort_if_failing_alone(store.grid.comm, where):
            self._build(store, budget, scores)

    def _build(self, store, budget, scores):
        where, comm = "CachedFeatureStore", store.grid.comm
        n = store.num_nodes

        def check():
            if isinstance(budget, (bool, np.bool_)) or \
                    not isinstance(budget, (int, np.integer)):
                fail(ArgumentTypeError, where, "budget", "must be an int (bytes)", budget)
            if budget < 0:
                fail(ArgumentError, where, "budget", "must be >= 0", budget)
            values = np.asarray(scores)
            if values.shape != (n,) or values.dtype.kind not in "biuf" or \
                    not np.all(np.isfinite(values)):
                fail(ArgumentError, where, "scores", f"must be {n} finite numbers",
                     values.shape)
            return values.astype(np.float64) + 0.0          # -0.0 ranks as 0.0
        values = agree(comm, where, check)
        # Every rank must rank the same rows hot: a process row's replicas ask each other for
        # rows by position, so scores that differ at all would return other rows' features.
        check_same(comm, where, "budget", int(budget))
        check_same(comm, where, "scores (SHA-256 of their float64 values)",
                   hashlib.sha256(np.ascontiguousarray(values).view(np.uint8)).hexdigest())
        self.store, self.grid = store, store.grid
        self.num_nodes, self.shape, self.dtype = n, store.shape, store.dtype
        c = self.grid.replication
        ranked = np.lexsort((np.arange(n), -values))
        ranked = ranked[:_hot_count(store, int(budget), ranked, c)]
        k = ranked.size
        self._holder = np.full(n, -1, dtype=np.int64)
        self._holder[ranked] = np.arange(k) % c
        self.hot_ids = np.sort(ranked[self.grid.replica::c])
        self._rows = store.fetch(self.hot_ids)
        self.last_stats = {}

    def fetch(self, n_id):
        """The feature rows of ``n_id`` (collective); as :meth:`FeatureStore.fetch`."""
        with abort_if_failing_alone(self.grid.comm, "CachedFeatureStore.fetch"):
            return self._fetch(n_id)

    def _fetch(self, n_id):
        where = "CachedFeatureStore.fetch"

        def check():
            ids = as_index_array(where, "n_id", n_id)
            check_range(where, "n_id", ids, 0, self.num_nodes)
            return ids
        ids = agree(self.grid.comm, where, check)
        uniq, inverse = np.unique(ids, return_inverse=True)
        own = self.store.placement.owner(uniq) == self.grid.row
        holder = np.where(own, -1, self._holder[uniq])
        hot = holder >= 0
        hot_rows = self._from_row(uniq[hot], holder[hot])
        cold_rows = self.store.fetch(uniq[~hot])
        self.last_stats = {"unique": int(uniq.size), "local": int(own.sum()),
                           "hits": int(hot.sum()), "cold": int((~hot & ~own).sum())}
        at = np.empty(uniq.size, dtype=np.int64)        # row of each unique id in the stack
        at[hot] = np.arange(hot_rows.shape[0])
        at[~hot] = hot_rows.shape[0] + np.arange(cold_rows.shape[0])
        return _stacked(hot_rows, cold_rows)[at[inverse.ravel()]]

    def _from_row(self, ids, holder):
        """Rows ``ids`` from the caches of this process row (``holder``: replica of each)."""
        row = self.grid.row_comm
        order = np.argsort(holder, kind="stable")
        counts = np.bincount(holder, minlength=row.size).astype(np.int64)
        asked, asked_counts = row.alltoallv(ids[order], counts)
        rows = self._rows[np.searchsorted(self.hot_ids, asked)]
        got = alltoallv_rows(row, rows, asked_counts, counts, self.store._index_dtype)
        back = np.empty_like(order)                     # got is in the order of ids[order]
        back[order] = np.arange(order.size)
        return got[back]


def _hot_count(store, budget, ranked, c):
    """How many rows of the ranking ``ranked`` the process row caches: dense rows
    ``c * budget // row_bytes``; CSR rows the longest prefix whose rows held by each replica
    (every ``c``-th) take at most ``budget`` bytes together (collective for a sparse store)."""
    n = store.num_nodes
    if not store.sparse:
        row_bytes = max(1, int(np.prod(store.shape[1:])) * store.dtype.itemsize)
        return min(n, c * (budget // row_bytes))
    lengths = store.grid.col_comm.allgatherv(np.diff(store.shard.indptr).astype(np.int64))
    lengths = store.placement.by_vertex(lengths)            # file rows -> vertices
    entry = store._index_dtype.itemsize + store.dtype.itemsize
    cost = 8 + lengths[ranked] * entry
    padded = np.zeros(-(-n // c) * c, dtype=np.int64)
    padded[:n] = cost
    held = np.cumsum(padded.reshape(-1, c), axis=0).ravel()[:n]  # bytes of replica i % c
    over = np.flatnonzero(held > budget)
    return int(over[0]) if over.size else n


def _stacked(a, b):
    """Rows of ``a`` then rows of ``b`` (dense arrays or CSR matrices)."""
    if _is_sparse(a):
        import scipy.sparse as sp

        return sp.vstack([a, b], format="csr")
    return np.concatenate([a, b])
