"""``FeatureStore``: the n × f feature matrix in ``p / c`` shards by vertex id, each shard
held by the ``c`` ranks of a process row (the same blocks as the graph's rows)."""

import hashlib

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError
from .._validate import as_index_array, check_range, fail
from ._collective import agree, check_same, open_rows_everywhere
from ._failure import abort_if_failing_alone
from ._grid import Grid
from ._placement import Placement, by_owner, permutation_of

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
        As given / as stored in the file (any fixed-size dtype).
    lo, hi : int
        The file rows held here (the vertices' ids unless loaded with a ``permutation``).
    placement : Placement
        The process row and local row of every vertex's feature row.
    shard : ndarray, shape (hi - lo, f, ...)
        The rows held here (read-only).
    last_stats : dict
        ``requested``, ``unique``, ``remote`` row counts of the latest :meth:`fetch`.
    """

    def __init__(self, grid, num_nodes, lo, shard, placement=None):
        self.grid = grid
        self.num_nodes = int(num_nodes)
        self.placement = placement or Placement(grid, self.num_nodes)
        self.lo, self.hi = int(lo), int(lo) + shard.shape[0]
        shard.flags.writeable = False
        self.shard = shard
        self.shape = (self.num_nodes,) + shard.shape[1:]
        self.dtype = shard.dtype
        self.last_stats = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_array(cls, features, grid, *, root=None):
        """Shard an in-memory array.

        Parameters
        ----------
        features : array_like, shape (n, f, ...)
            ``root=None``: every rank passes the same array and keeps its shard. ``root=r``:
            rank ``r``'s array is scattered (other ranks may pass ``None``).
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
            check_same(comm, where, "features (shape, dtype)", (arr.shape, str(arr.dtype)))
            lo, hi = grid.block(arr.shape[0])
            return cls(grid, arr.shape[0], lo, np.array(arr[lo:hi], copy=True))

        def check_root():
            if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < comm.size:
                fail(ArgumentError, where, "root", f"must be None or a rank in [0, {comm.size})",
                     root)
            return _as_features(where, features) if comm.rank == root else None
        arr = agree(comm, where, check_root)
        meta = comm.bcast((arr.shape, arr.dtype.str) if comm.rank == root else None, root=root)
        shape, dtype = meta[0], np.dtype(meta[1])
        if comm.rank == root:
            send = np.concatenate([arr[lo:hi] for lo, hi in _spans(shape[0], grid)])
            counts = np.array([hi - lo for lo, hi in _spans(shape[0], grid)], dtype=np.int64)
        else:
            send = np.zeros((0,) + tuple(shape[1:]), dtype=dtype)
            counts = np.zeros(comm.size, dtype=np.int64)
        shard, _ = comm.alltoallv(send, counts)
        return cls(grid, shape[0], grid.block(shape[0])[0], shard)

    @classmethod
    def load(cls, path, grid, *, permutation=None):
        """Read this rank's shard of ``/features`` from an spsample HDF5 file (only its rows).

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
            On every rank, when the file is missing on any rank or has no features, or the
            ``permutation`` file does not belong to the dataset.
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
            shard = agree(comm, where,
                          lambda: reader.read_feature_rows(np.arange(lo, hi, dtype=np.int64)))
        finally:
            reader.close()
        old_id = None if permutation is None else \
            agree(comm, where, lambda: permutation_of(where, path, permutation))
        return cls(grid, n, lo, np.ascontiguousarray(shard), Placement(grid, n, old_id))

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
        ndarray, shape (m, f, ...), dtype :attr:`dtype`: exactly the stored rows.

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
        got, _ = col.alltoallv(np.ascontiguousarray(rows), asked_counts, recvcounts=counts)
        self.last_stats = {"requested": int(ids.size), "unique": int(uniq.size),
                           "remote": int((owner != self.grid.row).sum())}
        if self.placement.permuted:       # got is in the order of uniq[order]
            at = np.empty_like(order)
            at[order] = np.arange(order.size)
            return got[at[inverse.ravel()]]
        return got[inverse.ravel()]

    def __repr__(self):
        return (f"FeatureStore(shape={self.shape}, dtype={self.dtype}, "
                f"rows=[{self.lo}, {self.hi}), {self.grid!r})")


def _check_grid(where, grid):
    if not isinstance(grid, Grid):
        fail(ArgumentTypeError, where, "grid", "must be a spsample.distributed.Grid", type(grid))


def _as_features(where, features):
    try:
        arr = np.asarray(features)
    except Exception as exc:
        fail(ArgumentTypeError, where, "features", f"cannot be read as an array ({exc})",
             show_value=False)
    if arr.dtype == object or arr.ndim < 1:
        fail(ArgumentTypeError, where, "features",
             "must be an array of fixed-size elements with ndim >= 1", show_value=False)
    return arr


def _spans(n, grid):
    from ._layout import rows_of_rank
    return [rows_of_rank(n, r, grid.size, grid.replication) for r in range(grid.size)]


class CachedFeatureStore:
    """A :class:`FeatureStore` fronted by a cache of hot rows partitioned across the ranks of
    each process row (DSP's design): hot row ``i`` (by descending score, ties to the smaller
    id) is held by replica ``i % c`` of every process row. :meth:`fetch` serves rows of this
    rank's own block from its shard, hot rows from the row's cache (one all-to-all inside the
    process row) and only the rest through the store's all-to-all across process rows; the
    rows are exactly the store's.

    Parameters
    ----------
    store : FeatureStore
    budget : int
        Bytes of cached rows per rank; the process row caches ``c * budget // row_bytes`` rows.
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
        row_bytes = max(1, int(np.prod(store.shape[1:])) * store.dtype.itemsize)
        c = self.grid.replication
        k = min(n, c * (int(budget) // row_bytes))
        ranked = np.lexsort((np.arange(n), -values))[:k]
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
        out = np.empty((uniq.size,) + self.shape[1:], dtype=self.dtype)
        out[hot] = self._from_row(uniq[hot], holder[hot])
        out[~hot] = self.store.fetch(uniq[~hot])
        self.last_stats = {"unique": int(uniq.size), "local": int(own.sum()),
                           "hits": int(hot.sum()), "cold": int((~hot & ~own).sum())}
        return out[inverse.ravel()]

    def _from_row(self, ids, holder):
        """Rows ``ids`` from the caches of this process row (``holder``: replica of each)."""
        row = self.grid.row_comm
        order = np.argsort(holder, kind="stable")
        counts = np.bincount(holder, minlength=row.size)
        asked, asked_counts = row.alltoallv(ids[order], counts)
        rows = self._rows[np.searchsorted(self.hot_ids, asked)]
        got, _ = row.alltoallv(np.ascontiguousarray(rows), asked_counts, recvcounts=counts)
        out = np.empty_like(got)
        out[order] = got
        return out
