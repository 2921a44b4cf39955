"""``DistGraph``: the adjacency split into block rows over the process rows of a :class:`Grid`."""

import hashlib
import time
from functools import partial

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, DistributedError
from ..graph._graph import Graph, frozen_array
from ..engine._run import run_numpy
from ..engine._hetero_sample import disjoint_ids, is_disjoint, run_scheduled
from ..engine._batches import sample_request
from ..engine._run import run_bulk
from .._validate import as_index_array, check_range, fail
from ..graph._weights import layerwise_scale as _layerwise_scale
from ..graph._checks import GraphFile
from ._collective import agree, check_same, mark_raised_on_every_rank, open_rows_everywhere
from ._failure import abort_if_failing_alone
from ._grid import Grid
from ._placement import (Placement, by_owner, original_rows, original_starts,
                         read_permutation, vertex_order)
from ._layout import rows_of_rank
from ..engine._lazy import NotLowerable
from ._sampling import run_distributed
from ._strategies import check_strategy

__all__ = ["DistGraph"]


class DistGraph:
    """A graph whose block rows are spread over the process rows of a :class:`Grid`.

    Rank ``r`` holds rows ``[lo, hi)`` of ``A`` (those of its process row; row ``v`` lists the
    vertices ``v`` aggregates from, so the owner of row ``v`` is the one that can sample
    ``v``'s neighbours, directed graphs included). Build it with :meth:`load` (each rank reads
    only its rows from an spsample HDF5 file) or :meth:`from_graph`; sample it with
    ``spsample.sample(dist_graph, seeds, ...)``, each rank passing its own seeds and
    ``batch_offset``.

    Implements :class:`~spsample.graph._source.GraphSource` (the whole-graph quantities,
    computed from the blocks and combined: the in-memory graph's, bit for bit) and
    :class:`~spsample.graph._source.RowSource` (this rank's rows, a block of the whole graph).

    Attributes
    ----------
    grid : Grid
    num_nodes, num_edges : int
        Of the whole graph.
    lo, hi : int
        The file rows held here: the global ids of the rows held here, unless the graph was
        loaded with a ``permutation`` (then the rows of vertices ``placement.vertices()``).
    placement : Placement
        The process row and local row of every vertex (:meth:`owner`, :meth:`local_rows`).
    indptr : int64, shape (hi - lo + 1,)
        Local row pointers (``indptr[0] == 0``).
    indices : int64, shape (indptr[-1],)
        Global column ids.
    weights : float64, shape (indptr[-1],), or None
    max_degree : int
        The longest row of the whole graph (a max over the blocks when built).
    edge_offset : int or None
        Position of this block's first entry in the global CSR ``indices`` (edge ids are
        global: ``edge_offset + local position``); ``None`` when the rows held here are not
        consecutive in the global CSR (a ``permutation``): :meth:`global_edges` maps them.
    replicated : bool
        ``True`` when every rank holds the whole graph (``replicate_graph=True``). Then, and
        when ``c = p`` (one process row holds every row), sampling runs the single-process
        engine on this rank's copy: no communication at all (``last_stats["modes"]``:
        ``"local"`` per hop).
    last_stats : dict
        Counters and phase times of the latest :meth:`sample` call on this rank.
    """

    def __init__(self, grid, num_nodes, lo, indptr, indices, weights, *, replicated=False,
                 placement=None, edge_starts=None):
        self.grid = grid
        self.num_nodes = int(num_nodes)
        self.lo, self.hi = int(lo), int(lo) + indptr.size - 1
        # read-only views no one can make writeable again (native code trusts them)
        indptr, indices = frozen_array(indptr), frozen_array(indices)
        weights = None if weights is None else frozen_array(weights)
        self.indptr, self.indices, self.weights = indptr, indices, weights
        self.replicated = bool(replicated)
        self.placement = placement or Placement(grid, self.num_nodes)
        comm = grid.comm if replicated else grid.col_comm
        nnz = comm.allgather(np.array([indices.size], dtype=np.int64))[:, 0]
        if replicated:
            self.edge_offset, self.num_edges = 0, int(nnz[0])
        else:
            self.edge_offset, self.num_edges = int(nnz[:grid.row].sum()), int(nnz.sum())
        self._edges = None if edge_starts is None else _PermutedEdges(indptr, edge_starts)
        if self._edges is not None:
            self.edge_offset = None
        degree = np.diff(indptr)
        self.max_degree = int(grid.comm.allreduce(
            np.array([degree.max() if degree.size else 0], dtype=np.int64), op="max")[0])
        # the whole graph on this rank (replicate_graph=True, or c = p: one process row):
        # sampled by the single-process engine, no communication
        whole = replicated or grid.num_rows == 1
        self._full = Graph(indptr, indices, weights) if whole else None
        self._column_weights = self._layerwise_scale = self._layerwise_weights = None
        self.last_stats = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_graph(cls, graph, grid, *, replicate_graph=False, root=None):
        """Distribute an in-memory :class:`~spsample.Graph`.

        Parameters
        ----------
        graph : Graph or None
            ``root=None``: every rank passes the same graph and keeps its own rows (checked:
            sizes and a SHA-256 of ``indptr``, ``indices`` and ``weights``, one pass over the
            arrays, about 1 s per GB). ``root=r``: only rank ``r``'s graph is used (others may
            pass ``None``); its rows are scattered.
        grid : Grid
        replicate_graph : bool
            Keep the whole graph on every rank (no sampling communication).
        root : int or None

        Raises
        ------
        ArgumentTypeError, ArgumentError
            On every rank, when ``graph``, ``grid`` or ``root`` is not valid on any rank.
        DistributedError
            On every rank, when ``root=None`` and the ranks pass different graphs (the
            message names the arrays that differ).
        """
        where = "DistGraph.from_graph"
        _check_grid(where, grid)
        with abort_if_failing_alone(grid.comm, where):
            if root is None:
                return cls._from_same_graph(graph, grid, replicate_graph)
            return cls._from_root(graph, grid, root, replicate_graph)

    @classmethod
    def _from_same_graph(cls, graph, grid, replicate_graph):
        where = "DistGraph.from_graph"

        def check():
            if not isinstance(graph, Graph):
                fail(ArgumentTypeError, where, "graph", "must be a spsample.Graph", type(graph))
            return _graph_summary(graph)
        _check_same_graph(grid.comm, where, agree(grid.comm, where, check))
        if replicate_graph:
            return cls(grid, graph.num_nodes, 0, graph.indptr, graph.indices, graph.weights,
                       replicated=True)
        lo, hi = grid.block(graph.num_nodes)
        indptr, indices, weights = _slice_rows(graph, lo, hi)
        return cls(grid, graph.num_nodes, lo, indptr, indices, weights)

    @classmethod
    def _from_root(cls, graph, grid, root, replicate_graph):
        where, comm = "DistGraph.from_graph", grid.comm

        def check_root():
            if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < comm.size:
                fail(ArgumentError, where, "root", f"must be None or a rank in [0, {comm.size})",
                     root)
            if comm.rank == root and not isinstance(graph, Graph):
                fail(ArgumentTypeError, where, "graph", "must be a spsample.Graph on the root rank",
                     type(graph))
        agree(comm, where, check_root)
        meta = comm.bcast(_graph_fingerprint(graph) if comm.rank == root else None, root=root)
        n, _, weighted = meta
        return cls._scatter(graph, grid, n, weighted, root, replicate_graph)

    @classmethod
    def _scatter(cls, graph, grid, n, weighted, root, replicate_graph):
        comm = grid.comm
        spans = [(0, n) if replicate_graph else
                 tuple(int(x) for x in _span(n, r, grid)) for r in range(comm.size)]
        if comm.rank == root:
            pieces = [_slice_rows(graph, lo, hi) for lo, hi in spans]
            degree = np.concatenate([np.diff(p[0]) for p in pieces])
            indices = np.concatenate([p[1] for p in pieces])
            weights = np.concatenate([p[2] for p in pieces]) if weighted else None
            row_counts = np.array([hi - lo for lo, hi in spans], dtype=np.int64)
            nnz_counts = np.array([p[1].size for p in pieces], dtype=np.int64)
        else:
            degree = indices = np.zeros(0, dtype=np.int64)
            weights = np.zeros(0) if weighted else None
            row_counts = nnz_counts = np.zeros(comm.size, dtype=np.int64)
        degree, _ = comm.alltoallv(degree, row_counts)
        indices, _ = comm.alltoallv(indices, nnz_counts)
        if weighted:
            weights, _ = comm.alltoallv(weights, nnz_counts)
        indptr = np.zeros(degree.size + 1, dtype=np.int64)
        np.cumsum(degree, out=indptr[1:])
        lo = spans[comm.rank][0]
        return cls(grid, n, lo, indptr, indices, weights, replicated=replicate_graph)

    @classmethod
    def load(cls, path, grid, *, replicate_graph=False, permutation=None):
        """Read this rank's block rows of the graph of an spsample HDF5 file.

        Only rows ``[lo, hi)`` are read, or all rows with ``replicate_graph=True``. They are
        checked as ``spsample.load`` checks the whole graph: before reading, the arrays'
        kinds and shapes, and their declared sizes against the bytes the file stores; then
        row pointers from 0 to ``len(indices)`` and non-decreasing, column ids in
        ``[0, num_nodes)``, weights finite and non-negative, the ``num_nodes`` attribute. Rows
        are sorted and duplicate entries merged, as :meth:`spsample.Graph.from_csr` does.

        Parameters
        ----------
        path : str or os.PathLike
        grid : Grid
        replicate_graph : bool
            Every rank reads the whole graph (no sampling communication).
        permutation : str or os.PathLike, optional
            The permutation file ``spsample partition`` wrote beside ``path`` (a relabelled
            dataset, ``<out>.perm.npz``). Each process row still reads one contiguous block
            of the file's rows (the partition's locality), but the graph is presented in the
            original vertex ids, edge ids are those of the original CSR, and sampling gives
            bit for bit the minibatches of the original dataset, whichever partition placed
            the rows. Without it the file's ids are used as they are. Costs every rank 16
            bytes per vertex of the graph (the permutation both ways) and 8 per entry it
            holds (the entries' original edge ids).

        Raises
        ------
        DatasetNotFoundError, DatasetError
            On every rank when the file is missing (or unreadable) on any rank, or any rank's
            rows are invalid (the message names the rank, the file and the array); naming
            ``permutation`` when that file is unreadable, not a permutation of the graph's
            vertices or written for another dataset.
        DistributedError
            On every rank when the ranks' files hold graphs of different sizes.
        """
        where = "DistGraph.load"
        _check_grid(where, grid)
        with abort_if_failing_alone(grid.comm, where):
            return cls._load(path, grid, replicate_graph, permutation)

    @classmethod
    def _load(cls, path, grid, replicate_graph, permutation):
        where, comm = "DistGraph.load", grid.comm
        open_rows_everywhere(comm, where, path).close()     # the path, format and version
        graph_file = agree(comm, where, lambda: GraphFile(where, path),
                           release=lambda opened: opened.close())
        with graph_file:
            n = graph_file.num_nodes
            check_same(comm, where, "graph of the file (num_nodes, num_edges, weighted)",
                       (n, graph_file.num_edges, graph_file.weighted))
            lo, hi = (0, n) if replicate_graph else grid.block(n)
            rows = agree(comm, where, lambda: graph_file.read_rows(lo, hi))
            if permutation is None:
                return cls(grid, n, lo, *rows, replicated=replicate_graph)
            old_id, file_degree = agree(
                comm, where,
                lambda: read_permutation(where, graph_file, permutation, (lo, rows[0])))
        return cls._in_original_ids(grid, n, lo, rows, old_id, file_degree, replicate_graph)

    @classmethod
    def _in_original_ids(cls, grid, n, lo, rows, old_id, file_degree, replicate_graph):
        """A DistGraph over rows read from a relabelled file, presented in the original ids."""
        indptr, indices, weights = rows
        placement = Placement(grid, n, old_id)
        indices, weights = original_rows(indptr, indices, weights, old_id)
        if replicate_graph or grid.num_rows == 1:        # the whole graph, in vertex order
            indptr, indices, weights = vertex_order(indptr, indices, weights,
                                                    placement.new_id)
            return cls(grid, n, 0, indptr, indices, weights, replicated=replicate_graph,
                       placement=placement)
        starts = original_starts(old_id, file_degree)[placement.vertices()]
        return cls(grid, n, lo, indptr, indices, weights, placement=placement,
                   edge_starts=starts)

    # ------------------------------------------------------------------ queries
    @property
    def is_weighted(self):
        return self.weights is not None

    @property
    def whole(self):
        """The whole graph as a :class:`~spsample.Graph` when this rank holds every row
        (``replicate_graph=True``, or one process row: ``c = p``), else ``None``."""
        return self._full

    def owner(self, ids):
        """The process row owning (holding the row of) each vertex.

        Parameters
        ----------
        ids : array_like of int, shape (m,)

        Returns
        -------
        int64, shape (m,), values in ``[0, grid.num_rows)``.
        """
        ids = as_index_array("DistGraph.owner", "ids", ids)
        check_range("DistGraph.owner", "ids", ids, 0, self.num_nodes)
        return self.placement.owner(ids)

    def local_rows(self, vertex):
        """The local row (into :attr:`indptr`) of each vertex whose row is held here.

        Parameters
        ----------
        vertex : int64 array, shape (m,)
            Vertices owned by this rank's process row (not checked).

        Returns
        -------
        int64, shape (m,)
        """
        if self._full is None and self.placement.permuted:
            return self.placement.local(vertex)
        return vertex - self.lo

    def global_edges(self, position):
        """The global edge id (position in the whole graph's CSR) of local entries.

        Parameters
        ----------
        position : int64 array, shape (m,)
            Positions in :attr:`indices`.

        Returns
        -------
        int64, shape (m,)
        """
        if self._edges is None:
            return position + self.edge_offset
        return self._edges.ids[position]

    def block_edges(self):
        """The global edge ids of all entries held here: a slice when they are consecutive in
        the global CSR, else an int64 array of shape (len(indices),)."""
        if self._edges is None:
            return slice(self.edge_offset, self.edge_offset + self.indices.size)
        return self._edges.ids

    def first_edges(self, rows):
        """The global edge id of entry 0 of each local row (where it would be, if empty).

        Parameters
        ----------
        rows : int64 array, shape (m,)
            Local rows.

        Returns
        -------
        int64, shape (m,)
        """
        if self._edges is None:
            return self.indptr[rows] + self.edge_offset
        return self._edges.row_start[rows]

    def local_edges(self, edge_ids):
        """The local position of global edge ids held here (the inverse of
        :meth:`global_edges`).

        Parameters
        ----------
        edge_ids : int64 array, shape (m,)

        Returns
        -------
        int64, shape (m,)
        """
        if self._edges is None:
            return edge_ids - self.edge_offset
        return self._edges.local(edge_ids)

    # ------------------------------------------------------------------ whole-graph quantities
    # (the GraphSource protocol of spsample.graph._source; max_degree: the allreduce of __init__)
    def column_weights(self):
        """FastGCN's ``(q, cumulative)`` of the whole graph, bit-identical to the serial ones.

        ``q[u] = Σ_v A[v,u]²`` must be summed in CSR order: each block sends its entries
        ``(u, A[v,u]²)`` in CSR order to the owner of ``u``, which sums them source by source
        (= block order = CSR order); the owners' pieces are then gathered on every rank.
        Computed once per graph (collective on the first call).

        Returns
        -------
        (q, cumulative) : float64 arrays of shape (num_nodes,), read-only
        """
        if self._column_weights is None:
            if self._full is not None:
                self._column_weights = self._full.column_weights()
            else:
                with abort_if_failing_alone(self.grid.comm, "DistGraph.column_weights"):
                    self._column_weights = _distributed_column_weights(self)
        return self._column_weights

    def layerwise_weights(self):
        """The weights of this rank's entries scaled by :meth:`layerwise_scale` (the whole
        graph's power of two): entry for entry the in-memory graph's ``layerwise_weights()`` at
        :meth:`global_edges`, bit for bit. Collective on the first call, memoised.

        Returns
        -------
        float64, shape (len(indices),), read-only; ``None`` for an unweighted graph.
        """
        if self.weights is None:
            return None
        if self._layerwise_weights is None:
            self._layerwise_weights = frozen_array(self.weights * self.layerwise_scale())
        return self._layerwise_weights

    def sorted_entry_time(self, time, check):
        """Entry times are checked on the rows a hop holds, not on a block of the graph.

        Raises
        ------
        NotLowerable
            Always (a temporal hop then fetches its rows, whose view checks them).
        """
        raise NotLowerable("the entry times of a distributed graph's block")

    def layerwise_scale(self):
        """The power of two that layer-wise samplers scale the weights by (``2**-e``, the
        largest weight of the whole graph scaled into ``[0.5, 1)``; see
        :func:`~spsample.graph._weights.scaled_weights`). Collective on the first call.

        Returns
        -------
        float
        """
        if self._layerwise_scale is None:
            w = self.weights
            local = np.array([w.max() if w is not None and w.size else 0.0])
            top = float(self.grid.comm.allreduce(local, op="max")[0])
            self._layerwise_scale = _layerwise_scale(top)
        return self._layerwise_scale

    # ------------------------------------------------------------------ sampling
    def sample(self, seeds, *, sampler, batch_size, seed=0, epoch=0, batch_offset=0,
               strategy="push"):
        """Sample this rank's minibatches (``spsample.sample(dist_graph, ...)`` calls this).

        Collective: every rank calls it with the same ``sampler``, ``batch_size``, ``seed``,
        ``epoch`` and ``strategy`` and its own ``seeds`` and ``batch_offset`` (global
        minibatch ids; a rank may pass no seeds). The result equals the single-process
        ``spsample.sample(graph, all_seeds, ...)`` restricted to this rank's minibatches, bit
        for bit, for every ``p`` and ``c``.

        Parameters
        ----------
        strategy : str
            A name in :data:`~spsample.distributed.STRATEGIES` (the registered strategies,
            :func:`~spsample.distributed.register_strategy`). ``"push"``: hops whose
            selection is row-local (node-wise rules, LABOR, walks, compositions of a row's
            own values) send each frontier row to its owner, which
            samples it and returns ``(vertex, edge id)`` per sample; layer-wise hops without
            float sums across owners (LADIES on an unweighted graph, FastGCN) move degrees,
            drawn entries and the layer's edges instead of rows; other hops fetch the rows they
            need. ``"pull"``: every hop fetches the frontier's rows of ``A`` and samples
            locally. ``last_stats["modes"]`` says where each hop ran. A disjoint sampler
            (``NodeWise(..., disjoint=True)``) gives every seed its own subgraph, as one
            process does.

        Raises
        ------
        SeedError, ArgumentError, SamplerError, DistributedError
            On every rank, when any rank's input is bad or the ranks disagree.

        Notes
        -----
        When one rank fails while sampling (an exception, ``sys.exit``, ``MemoryError``),
        the others would wait for it forever: the error is printed and the MPI job aborted
        (see :func:`spsample.distributed.set_abort_on_failure` to opt out).
        """
        with abort_if_failing_alone(self.grid.comm, "DistGraph.sample"):
            return self._sample(seeds, sampler, batch_size, seed, epoch, batch_offset, strategy)

    def _sample(self, seeds, sampler, batch_size, seed, epoch, batch_offset, strategy):
        t0 = time.perf_counter()
        args = agree(self.grid.comm, "sample",
                     lambda: self._check_sample(seeds, sampler, batch_size, seed, epoch,
                                                batch_offset, strategy),
                     same=_describe(sampler, batch_size, seed, epoch, strategy))
        seeds, sizes, batch_ids, seed, epoch, batch_size = args
        t1 = time.perf_counter()
        stats = {"validate_s": t1 - t0, "num_batches": int(sizes.size), "strategy": strategy}
        engine = partial(self._engine, strategy, stats)
        if is_disjoint(sampler, None):      # every seed its own subgraph, merged per minibatch
            out = run_scheduled(self, None, seeds, sizes, batch_ids, batch_size, sampler, seed,
                                epoch, engine=engine)
        else:
            out = engine(self, None, seeds, sizes, batch_ids, sampler, seed, epoch, None)
        stats["sample_s"] = time.perf_counter() - t1
        stats["sampled_edges"] = int(sum(sum(mb.num_sampled_edges) for mb in out))
        self.last_stats = stats
        return out

    def _engine(self, strategy, stats, graph, schedule, seeds, sizes, batch_ids, sampler, seed,
                epoch, seed_time):
        """One engine bulk (the engine of :func:`~spsample.engine._hetero_sample.run_scheduled`):
        the one-process engine on the whole graph held here, else the distributed hops."""
        if self._full is None:
            return run_distributed(self, seeds, sizes, batch_ids, sampler, seed, epoch,
                                   strategy, stats)
        if sizes.size:
            out = run_bulk(self._full, seeds, sizes, batch_ids, sampler, seed, epoch)
        else:               # no minibatch here: the NumPy evaluation takes none (kernels do not)
            out = run_numpy(self._full, seeds, sizes, batch_ids, sampler, seed, epoch)
        stats["mode"] = "replicated"
        stats["modes"] = ["local"] * sampler.num_hops
        stats["selection"] = ["native" if getattr(out, "path", None) == "native" else "numpy"
                              ] * sampler.num_hops
        return out

    def _check_sample(self, seeds, sampler, batch_size, seed, epoch, batch_offset, strategy):
        check_strategy("sample", strategy)
        # a rank may have no seeds (allow_empty); disjoint ids count positions in minibatches
        # of the batch_size asked for
        r = sample_request(self.num_nodes, seeds, sampler, batch_size, seed, epoch,
                           batch_offset, allow_empty=True)
        sampler.check_graph(self)
        if is_disjoint(sampler, None):      # seeds may repeat; ids of positions checked
            disjoint_ids(r.sizes, r.batch_ids, r.batch_size)
        else:
            r.check_unique()
        return r.seeds, r.sizes, r.batch_ids, r.seed, r.epoch, r.batch_size

    def __repr__(self):
        mode = ", replicated" if self.replicated else ""
        return (f"DistGraph(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
                f"rows=[{self.lo}, {self.hi}){mode}, {self.grid!r})")


# ---------------------------------------------------------------------- helpers
class _PermutedEdges:
    """Global edge ids of rows that are not consecutive in the global CSR (a permutation):
    entry ``j`` of local row ``r`` is global edge ``row_start[r] + j``."""

    def __init__(self, indptr, row_start):
        degree = np.diff(indptr)
        self.row_start = frozen_array(np.asarray(row_start, dtype=np.int64))
        self.ids = frozen_array(np.repeat(self.row_start - indptr[:-1], degree)
                                + np.arange(int(indptr[-1]), dtype=np.int64))
        self._indptr = indptr
        rows = np.flatnonzero(degree)
        self._rows = rows[np.argsort(self.row_start[rows], kind="stable")]
        self._sorted_start = self.row_start[self._rows]

    def local(self, edge_ids):
        at = np.searchsorted(self._sorted_start, edge_ids, side="right") - 1
        row = self._rows[at]
        return self._indptr[row] + (edge_ids - self.row_start[row])


def _check_grid(where, grid):
    if not isinstance(grid, Grid):
        fail(ArgumentTypeError, where, "grid", "must be a spsample.distributed.Grid", type(grid))


def _graph_fingerprint(graph):
    return (graph.num_nodes, graph.num_edges, graph.weights is not None)


def _graph_summary(graph):
    """Sizes and a SHA-256 (16 hex digits) of each array: what the ranks compare."""
    summary = {"num_nodes": graph.num_nodes, "num_edges": graph.num_edges}
    for name in ("indptr", "indices", "weights"):
        arr = getattr(graph, name)
        summary[name] = None if arr is None else hashlib.sha256(
            memoryview(np.ascontiguousarray(arr)).cast("B")).hexdigest()[:16]
    return summary


def _check_same_graph(comm, where, summary):
    """Raise :class:`DistributedError` on every rank unless all passed the same graph."""
    summaries = comm.allgather_object(summary)
    other = next((r for r, s in enumerate(summaries) if s != summaries[0]), None)
    if other is None:
        return
    differ = [k for k in summary if summaries[other][k] != summaries[0][k]]
    sizes = {k: summaries[0][k] for k in ("num_nodes", "num_edges")}
    raise mark_raised_on_every_rank(DistributedError(
        f"{where}: ranks disagree on argument 'graph': rank {other}'s differs from rank 0's in "
        f"{', '.join(differ)} (rank 0's has {sizes}); every rank must pass the same graph, or "
        "pass it on one rank only with root="))


def _describe(sampler, batch_size, seed, epoch, strategy):
    config = sampler.config() if hasattr(sampler, "config") else repr(sampler)
    return repr({"sampler": config, "batch_size": batch_size, "seed": seed, "epoch": epoch,
                 "strategy": strategy})


def _span(n, rank, grid):
    return rows_of_rank(n, rank, grid.size, grid.replication)


def _slice_rows(graph, lo, hi):
    start, stop = int(graph.indptr[lo]), int(graph.indptr[hi])
    indptr = np.array(graph.indptr[lo:hi + 1], dtype=np.int64) - start
    indices = np.array(graph.indices[start:stop], dtype=np.int64)
    weights = None if graph.weights is None else np.array(graph.weights[start:stop])
    return indptr, indices, weights


def _distributed_column_weights(dg):
    """``q[u]`` summed over the entries ``(v, u)`` in CSR order (rows ``v`` ascending: the
    serial order), gathered on every rank. Column ``u`` is summed by process row
    ``grid.owner(u, n)`` (the columns split as the rows of an ``n``-vertex graph, whatever
    rows the block holds: a relation block's columns are another node type's vertices, which
    its placement does not hold); each sums what the process rows send, in process-row order.
    """
    grid, col, placement = dg.grid, dg.grid.col_comm, dg.placement
    scaled = dg.layerwise_weights()
    values = np.ones(dg.indices.size) if scaled is None else scaled * scaled
    order, counts = by_owner(grid.owner(dg.indices, dg.num_nodes), col.size)  # CSR order
    width = 3 if placement.permuted else 2
    sent = np.empty((order.size, width), dtype=np.int64)
    sent[:, 0] = dg.indices[order]
    sent[:, 1] = values[order].view(np.int64)
    if placement.permuted:             # blocks are not in row order: send each entry's row
        rows = placement.vertices()[np.repeat(np.arange(dg.hi - dg.lo), np.diff(dg.indptr))]
        sent[:, 2] = rows[order]
    recv, _ = col.alltoallv(sent, counts)
    if placement.permuted:             # sources in process-row order; rows ascending needed
        recv = recv[np.argsort(recv[:, 2], kind="stable")]
    lo, hi = grid.block(dg.num_nodes)
    # bincount sums each bin sequentially, in the order the entries come
    q_block = np.bincount(recv[:, 0] - lo, weights=recv[:, 1].copy().view(np.float64),
                          minlength=hi - lo).astype(np.float64)
    q = col.allgatherv(q_block)                        # process rows in vertex order
    return frozen_array(q), frozen_array(np.cumsum(q))

