"""Sampling a :class:`~spsample.io._disk_graph.DiskGraph`: the engine's hop loop with the rows of
``A`` read from disk in position order: through a memory map of the file, or through the
graph's bounded block cache.

Every hop is traced as on one process (:func:`spsample.engine._run.trace`) and runs in one of two
ways, the two ways the distributed code computes ``Q·A`` (:mod:`spsample.distributed._sampling`)
with the disk in the place of the rows' owners:

* **scan** -- hops whose selection is *row-local* (each row's sample depends on that row of
  ``A`` alone: node-wise rules, LABOR, walks, compositions of the row's own values;
  :func:`~spsample.engine._rows.row_local`). With the native row sampler on a file
  whose arrays can be mapped (contiguous, native dtypes: ``DiskGraph.mapped``), the rows are
  sampled in place from the map, window by window of the file, each window's pages released
  once it is done (:mod:`spsample.io._disk_map`: warm data costs no read and no copy, and the
  sampler touches only the entries it draws): a sampler that lowers whole runs every hop of
  the bulk in one call of the windowed row-wise kernel (``native/windowed.h``: hop-major, the
  relabelling done natively), any other hop by hop (``select_requests`` over the windows, the
  engine's state in between). Otherwise the frontier's requests are sorted by row and read:
  sparse hops range by range (``DiskGraph.read_rows``), others block by block, the blocks
  streamed in order (read ahead by a background thread) and each block's rows sampled where
  they lie -- by the native row sampler where the rule allows, else by the NumPy evaluation of
  the hop's own selection on the block (the owner side of push sampling, with the same random
  streams). A row that spans blocks is assembled in a buffer of its own. Memory: one map
  window per thread, or one block in use plus the read-ahead and the longest row.
* **fetch** -- any other hop (LADIES, FastGCN, node2vec's lookups, constructors that cannot be
  traced): the rows the hop needs are read into a compact CSR (kept for the bulk's later hops
  while it fits ``DiskGraph.hop_bytes``), and the sampler's own constructors run on it
  unchanged (:class:`~spsample.engine._rows.FetchHop`, as pull sampling does). A hop
  whose rows alone exceed that room raises :class:`~spsample.ResourceLimitError` naming
  ``memory_budget``.

Either way the minibatches are the in-memory graph's, bit for bit.
"""

import time

import numpy as np

from ..engine import _primitives as prim
from .._errors import ResourceLimitError
from .._validate import check_memory, format_bytes
from ..engine._rows import (NO_ROWS, FetchHop, concrete_frontier, owner_select, request_hop,
                           row_local, trace_plans)
from ..engine._batches import sample_request
from ..engine._run import estimate_output_bytes, run_hops
from .. import native as _native
from ..engine._lazy import NotLowerable
from ..engine._lowering import RequestHop, lower_rows
from ..engine._native_run import run as run_native, select_requests
from ._disk_map import RELEASE_BLOCK
from ..engine._hetero_sample import run_disjoint

__all__ = ["sample_on_disk", "run_on_disk", "hop_modes"]

#: Requests of one window below which its native selection runs on one thread (a parallel
#: region costs milliseconds on a loaded machine; the bits do not depend on the threads).
_PARALLEL = 4096
#: A row-local hop reads its rows range by range (not whole cache blocks) when they hold less
#: than this share of the entries of the blocks they touch (contiguous files, native kernels).
_DIRECT_SHARE = 0.5
#: Row-local hops sample files that can be mapped (``DiskGraph.mapped``) through the map.
_MAP = True
#: ... all of a bulk's hops in one native call when the sampler lowers whole (else hop by hop).
_WINDOWED = True


def sample_on_disk(dg, seeds, sampler, batch_size, seed, epoch, batch_offset):
    """:func:`spsample.sample` on a :class:`DiskGraph` (arguments checked as there)."""

    r = sample_request(dg.num_nodes, seeds, sampler, batch_size, seed, epoch, batch_offset)
    sampler.check_graph(dg)
    seeds, sizes, batch_ids, seed, epoch = r.seeds, r.sizes, r.batch_ids, r.seed, r.epoch
    stats = {}
    t0 = time.perf_counter()
    if getattr(sampler, "disjoint", False):      # each seed its own engine minibatch
        engine = lambda _g, _s, s, z, ids, smp, sd, ep, _t: run_on_disk(  # noqa: E731
            dg, s, z, ids, smp, sd, ep, stats)
        out = run_disjoint(dg, None, seeds, sizes, batch_ids, r.batch_size, sampler, seed,
                           epoch, None, engine=engine)
    else:
        r.check_unique()
        out = run_on_disk(dg, seeds, sizes, batch_ids, sampler, seed, epoch, stats)
    stats["sample_s"] = time.perf_counter() - t0
    dg.last_stats = stats
    return out


def hop_modes(plans, num_hops):
    """``"scan"`` for the row-local hops of the traced ``plans``, ``"fetch"`` for the others
    (every hop when the sampler cannot be traced)."""
    if plans is None:
        return ["fetch"] * num_hops
    return ["scan" if row_local(plan) else "fetch" for plan in plans]


def run_on_disk(dg, seeds, sizes, batch_ids, sampler, seed, epoch, stats):
    """Every hop of one bulk (see the module docstring); fills ``stats`` with the hop modes,
    blocks and bytes read, cache hits and times."""

    plans = trace_plans(dg, sampler, batch_ids, seed, epoch)
    if plans is not None:
        check_memory("sample", "sampler", estimate_output_bytes(plans, dg, sizes),
                     "the sampled output", "lower the fanouts, batch_size or the number of "
                     "seeds per call")
    modes = hop_modes(plans, sampler.num_hops)
    lowered = _windowed_plan(dg, plans, modes, batch_ids)
    if lowered is not None:
        return _run_windowed(dg, lowered, seeds, sizes, batch_ids, seed, epoch, stats, modes)
    fetch = _ReadHop(dg)          # hops that are not row-local: the sampler's constructors
    before = dict(dg.cache.stats)
    for name in ("frontier", "rows_read", "entries_read", "read_s", "exchange_s", "local_s"):
        stats[name] = 0

    def hop(state, ctx):
        plan = plans[ctx.hop - 1] if plans else None
        if modes[ctx.hop - 1] == "scan":
            _ScanHop(dg, plan)(state, ctx, stats)
        else:
            fetch(sampler, state, ctx, stats, plan=plan)

    out = run_hops(dg, seeds, sizes, batch_ids, sampler, seed, epoch, hop)
    stats["modes"] = modes
    for key, value in dg.cache.stats.items():
        stats[f"cache_{key}"] = value - before[key]
    return out


def _windowed_plan(dg, plans, modes, batch_ids):
    """The sampler lowered for the windowed row-wise kernel (every hop row-local and lowered,
    frontiers of the bulk, one graph: the map), or ``None``."""
    if not (_MAP and _WINDOWED and dg.mapped and plans) or \
            any(mode != "scan" for mode in modes):
        return None
    try:
        lowered = lower_rows(plans, dg, int(batch_ids.size), indices32=False, arrays=False)
    except NotLowerable:
        return None
    rows = _native.Frontier.ROWS
    if any(h["graph"] or h["aux"] is not None or h["time"] >= 0 or h["frontier"][0] == rows
           for h in lowered.spec["hops"]):
        return None
    return lowered


class _MappedGraph:
    """The arrays of a DiskGraph's map as the native engine's graph."""

    def __init__(self, dg, indices, weights):
        self.indptr, self.indices, self.weights = dg.indptr, indices, weights
        self.num_nodes = dg.num_nodes


def _run_windowed(dg, lowered, seeds, sizes, batch_ids, seed, epoch, stats, modes):
    """Every hop through the windowed row-wise kernel (``native/windowed.h``) on the map: the
    whole file checked first (once), each window's pages released as soon as it is sampled."""
    m = dg.map
    dg.cache.clear()                                      # the windows take the cache's room
    t0 = time.perf_counter()
    m.check_all()
    m.check_size()
    graph = _MappedGraph(dg, *m.arrays())
    lowered.spec["graphs"] = [(graph.indptr, graph.indices, graph.weights, None)]
    span = max(1, m.span // _native.get_num_threads())
    try:
        out = run_native(lowered, graph, seeds, sizes, batch_ids, seed, epoch,
                         windows=(span, m.view(), RELEASE_BLOCK))
    except BaseException:
        m.release(0, dg.num_edges)                        # windows the failed call left mapped
        raise
    if out is None:
        m.release(0, dg.num_edges)
        dg.refuse_changed()
    stats.update(modes=modes, window_span=span, read_s=time.perf_counter() - t0)
    return out


class _Window:
    """Consecutive rows ``[row_offset, ...)`` of ``A`` held in memory (a cache block, or one
    row assembled from several), read as a graph indexed by global vertex ids: a
    :class:`~spsample.graph._source.RowSource`, as :class:`~spsample.engine._rows.Block`."""

    def __init__(self, dg, indptr, indices, weights, row_offset, edge_offset):
        self.indptr, self.indices, self.weights = indptr, indices, weights
        self.num_nodes, self.num_edges = dg.num_nodes, dg.num_edges
        self.row_offset, self.edge_offset = row_offset, edge_offset

    def local_rows(self, vertex):
        return vertex - self.row_offset

    def global_edges(self, position):
        return position + self.edge_offset


class _Pieces:
    """The samples of a hop's requests, gathered in processing order, put back in frontier
    order at the end (:meth:`matrix`)."""

    def __init__(self):
        self.requests, self.counts, self.columns, self.edges = [], [], [], []

    def add(self, requests, S, first_edge):
        self.requests.append(requests)
        self.counts.append(S.row_lengths())
        self.columns.append(S.indices)
        self.edges.append(S.edge_id + first_edge)

    def matrix(self, num_rows):
        """``S`` with row ``r`` = the samples of request ``r`` (none for unread rows)."""
        empty = np.zeros(0, dtype=np.int64)
        cat = (lambda parts: np.concatenate(parts) if parts else empty)
        requests, counts = cat(self.requests), cat(self.counts)
        columns, edges = cat(self.columns), cat(self.edges)
        lengths = np.zeros(num_rows, dtype=np.int64)
        lengths[requests] = counts
        start = np.zeros(num_rows, dtype=np.int64)
        start[requests] = np.cumsum(counts) - counts
        offset, segment = prim.segment_arange(lengths)
        take = start[segment] + offset
        indptr = np.zeros(num_rows + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        return prim.RowMatrix(indptr, columns[take], None, edges[take])


class _ScanHop:
    """One row-local hop, its rows sampled block by block as they are read (module docstring).
    """

    def __init__(self, dg, plan):
        self.dg, self.plan = dg, plan
        self.native = request_hop(plan, dg, rows=NO_ROWS)   # lowered once, per window below
        self.keyed_by_row = plan.selection.streams.keyed_by == "row"

    def __call__(self, state, ctx, stats):
        Q = concrete_frontier(state, self.plan.frontier)
        S = self.sample(Q, ctx, stats)
        t1 = time.perf_counter()
        state.add_sampled(Q, S, dedup=self.plan.dedup)
        stats["frontier"] += len(Q)
        stats["local_s"] += time.perf_counter() - t1

    def sample(self, Q, ctx, stats):
        """``S`` for the rows of ``Q`` (RowMatrix, global edge ids)."""
        dg, B = self.dg, self.dg.block_entries
        if self.native is not None and _MAP and dg.mapped:
            return self._sample_mapped(Q, ctx, stats)
        order = np.argsort(Q.vertex, kind="stable")
        vertex = Q.vertex[order]
        start, end = dg.indptr[vertex], dg.indptr[vertex + 1]
        first, last = start // B, np.maximum(end - 1, start) // B
        inside = np.flatnonzero((end > start) & (first == last))
        spill = _SpillRows(vertex, start, end, first, last)
        blocks = np.union1d(first[inside], spill.blocks())
        distinct = np.r_[True, vertex[1:] != vertex[:-1]] if vertex.size else vertex > 0
        needed = int((end - start)[distinct].sum())
        if self.native is not None and dg.direct and needed < _DIRECT_SHARE * blocks.size * B:
            return self._sample_direct(Q, order, vertex, distinct, ctx, stats)
        bounds = np.searchsorted(first[inside], blocks), np.searchsorted(first[inside], blocks,
                                                                         side="right")
        pieces = _Pieces()
        t0 = time.perf_counter()
        for i, (b, idx, w) in enumerate(dg.cache.stream(blocks)):
            group = inside[bounds[0][i]:bounds[1][i]]
            if group.size:
                self._sample_block(Q, order, vertex, group, b * B, idx, w, ctx, pieces)
            for v, requests, data, weights, row_start in spill.advance(b, B, idx, w):
                window = _Window(dg, np.array([0, data.size]), data, weights, v, row_start)
                self._sample(Q, order, requests, window, ctx, pieces)
        stats["read_s"] += time.perf_counter() - t0
        stats["rows_read"] += int(np.unique(vertex[end > start]).size)
        stats["entries_read"] += needed
        return pieces.matrix(len(Q))

    def _sample_mapped(self, Q, ctx, stats):
        """Every request sampled in place from the graph's memory map, window by window, in
        one native call (:mod:`spsample.io._disk_map`): the regions a window touches checked
        first (the first time only), each window's pages released once it is sampled."""
        dg, m = self.dg, self.dg.map
        dg.cache.clear()                                  # the windows take the cache's room
        t0 = time.perf_counter()
        start, end = dg.indptr[Q.vertex], dg.indptr[Q.vertex + 1]
        threads = 1 if len(Q) < _PARALLEL else _native.get_num_threads()
        order, bounds, lo, hi = m.windows(start, end, threads)
        m.check_windows(start, end, order, bounds)
        m.check_size()
        vertex, batch = Q.vertex[order], Q.batch[order]
        n = self.native
        lowered = RequestHop((dg.indptr, *m.arrays(), None), n.hop, n.f64, n.i64, n.n_vertices)
        try:
            S = select_requests(
                lowered, vertex, vertex, ctx.batch_ids[batch], ctx.hop_word, ctx.key,
                keys=Q.row_id[order] if self.keyed_by_row else None, num_threads=threads,
                windows=(order, bounds[1:], m.view(), m.release_ranges(lo, hi)))
        except BaseException:
            m.release(0, dg.num_edges)                # windows the failed call left mapped
            raise
        dg.check_sampled(S.indices)
        stats["read_s"] += time.perf_counter() - t0
        stats["mapped_hops"] = stats.get("mapped_hops", 0) + 1
        stats["windows"] = stats.get("windows", 0) + bounds.size - 1
        return S

    def _sample_direct(self, Q, order, vertex, distinct, ctx, stats):
        """Sparse hops: the distinct rows read range by range (``DiskGraph.read_rows``), in
        groups that fit ``hop_bytes``, each sampled as one window."""
        dg = self.dg
        rows = vertex[distinct]
        rows = rows[dg.indptr[rows + 1] > dg.indptr[rows]]
        deg = dg.indptr[rows + 1] - dg.indptr[rows]
        cap = max(dg.max_degree, dg.hop_bytes // (2 * dg.entry_bytes))   # rows + a copy
        cut = np.searchsorted(np.cumsum(deg), np.arange(cap, int(deg.sum()) + cap, cap),
                              side="right")
        pieces = _Pieces()
        t0 = time.perf_counter()
        for g0, g1 in zip(np.r_[0, cut[:-1]], cut):
            if g1 <= g0:
                continue
            group = rows[g0:g1]
            indptr, idx, w = dg.read_rows(group)
            lo, hi = np.searchsorted(vertex, [group[0], group[-1] + 1])
            requests = np.arange(lo, hi)
            requests = requests[np.isin(vertex[requests], group)]
            slot = np.searchsorted(group, vertex[requests])
            self._sample_slots(Q, order, requests, slot, group, indptr, idx, w, ctx, pieces)
        stats["read_s"] += time.perf_counter() - t0
        stats["rows_read"] += int(rows.size)
        stats["entries_read"] += int(deg.sum())
        stats["direct_hops"] = stats.get("direct_hops", 0) + 1
        return pieces.matrix(len(Q))

    def _sample_slots(self, Q, order, requests, slot, group, indptr, idx, w, ctx, pieces):
        """Requests whose rows are ``group[slot]``, held back to back in ``idx``."""
        rows = order[requests]
        vertex, batch = Q.vertex[rows], Q.batch[rows]
        n = self.native
        lowered = RequestHop((indptr, idx, _native.as_f64(w), None), n.hop, n.f64, n.i64,
                             n.n_vertices)
        S = select_requests(lowered, vertex, slot, ctx.batch_ids[batch], ctx.hop_word, ctx.key,
                            keys=Q.row_id[rows] if self.keyed_by_row else None)
        first = self.dg.indptr[group[slot]] - indptr[slot]       # buffer position -> edge id
        S.edge_id = S.edge_id + np.repeat(first, S.row_lengths())
        pieces.add(rows, S, 0)

    def _sample_block(self, Q, order, vertex, group, b0, idx, w, ctx, pieces):
        """Requests ``group`` (positions in sorted order), whose rows lie in the block that
        starts at entry ``b0``."""
        dg = self.dg
        lo, hi = int(vertex[group[0]]), int(vertex[group[-1]])
        e0, e1 = int(dg.indptr[lo]), int(dg.indptr[hi + 1])
        window = _Window(dg, dg.indptr[lo:hi + 2] - e0, idx[e0 - b0:e1 - b0],
                         None if w is None else w[e0 - b0:e1 - b0], lo, e0)
        self._sample(Q, order, group, window, ctx, pieces)

    def _sample(self, Q, order, requests, window, ctx, pieces):
        """Sample the requests (positions in sorted order) whose rows ``window`` holds."""
        rows = order[requests]
        vertex, batch = Q.vertex[rows], Q.batch[rows]
        keys = Q.row_id[rows] if self.keyed_by_row else vertex
        if self.native is not None:
            n = self.native
            arrays = (_native.as_i64(window.indptr), _native.as_i64(window.indices),
                      _native.as_f64(window.weights), None)
            lowered = RequestHop(arrays, n.hop, n.f64, n.i64, n.n_vertices)
            S = select_requests(lowered, vertex, window.local_rows(vertex),
                                ctx.batch_ids[batch], ctx.hop_word, ctx.key,
                                keys=keys if self.keyed_by_row else None,
                                num_threads=None if vertex.size >= _PARALLEL else 1)
        else:
            S = owner_select(self.plan.selection, window, vertex, keys, batch,
                              ctx.batch_ids, ctx)
        pieces.add(rows, S, window.edge_offset)


class _SpillRows:
    """The requested rows that span more than one block, assembled as their blocks stream by
    (rows never overlap, so one row is in progress at a time)."""

    def __init__(self, vertex, start, end, first, last):
        pos = np.flatnonzero((end > start) & (first < last))
        self.vertex, self.start, self.end = vertex[pos], start[pos], end[pos]
        self.first, self.last, self.pos = first[pos], last[pos], pos
        cut = np.flatnonzero(np.r_[True, self.vertex[1:] != self.vertex[:-1]]) \
            if pos.size else np.zeros(0, dtype=np.int64)
        self.rows = cut                                   # first request of each distinct row
        self.row_end = np.r_[cut[1:], pos.size].astype(np.int64)
        self.next, self.buffer = 0, None

    def blocks(self):
        """Every block a spilling row touches."""
        r = self.rows
        counts = (self.last[r] - self.first[r] + 1).astype(np.int64)
        offset, segment = prim.segment_arange(counts)
        return self.first[r][segment] + offset

    def advance(self, b, B, idx, w):
        """Copy block ``b``'s part of the rows in progress; yield each row completed, as
        ``(vertex, request positions, column ids, weights, first edge id)``."""
        while self.next < self.rows.size:
            r = self.rows[self.next]
            if self.first[r] > b:
                return
            s, e = int(self.start[r]), int(self.end[r])
            if self.buffer is None:
                self.buffer = (np.empty(e - s, dtype=np.int64),
                               None if w is None else np.empty(e - s))
            lo, hi = max(s, b * B), min(e, (b + 1) * B)
            self.buffer[0][lo - s:hi - s] = idx[lo - b * B:hi - b * B]
            if w is not None:
                self.buffer[1][lo - s:hi - s] = w[lo - b * B:hi - b * B]
            if self.last[r] > b:
                return
            data, weights = self.buffer
            self.buffer = None
            yield int(self.vertex[r]), self.pos[r:self.row_end[self.next]], data, weights, s
            self.next += 1


class _ReadHop(FetchHop):
    """A hop that is not row-local: the rows it needs read from disk into the compact CSR of
    :class:`~spsample.engine._rows.FetchHop`, which runs the sampler's constructors
    on them. Rows stay for the bulk's later hops while they fit ``DiskGraph.hop_bytes``.
    A :class:`~spsample.graph._source.RowFetcher` (rows read from disk)."""

    def _missing(self, rows):
        need = super()._missing(rows)
        dg = self.dg
        held = self.indices.size
        new = int((dg.indptr[need + 1] - dg.indptr[need]).sum())
        if (held + new) * dg.entry_bytes > dg.hop_bytes and held:
            self.__init__(dg, self.native_rows)            # forget the rows of earlier hops
            need, new = rows, int((dg.indptr[rows + 1] - dg.indptr[rows]).sum())
        if new * dg.entry_bytes > dg.hop_bytes:
            raise ResourceLimitError(
                f"sample: argument 'memory_budget' of the DiskGraph "
                f"({format_bytes(dg.memory_budget)}) leaves {format_bytes(dg.hop_bytes)} "
                f"for the rows a hop that is not row-local "
                f"holds at once, and this hop needs {format_bytes(new * dg.entry_bytes)} "
                f"({rows.size:,d} rows); raise memory_budget or sample fewer minibatches per "
                "call")
        return need

    def fetch_rows(self, need):
        """Rows ``need`` (ascending) read through the cache: ``(degree, start, indices,
        weights, None)`` (:class:`~spsample.graph._source.RowFetcher`)."""
        dg = self.dg
        start, degree = dg.indptr[need], dg.indptr[need + 1] - dg.indptr[need]
        indices = np.empty(int(degree.sum()), dtype=np.int64)
        weights = np.empty(indices.size) if dg.is_weighted else None
        dest = np.cumsum(degree) - degree
        end = start + degree
        B = dg.block_entries
        live = degree > 0
        blocks = _blocks_of(start[live], end[live], B)
        for b, idx, w in dg.cache.stream(blocks):
            b0, b1 = b * B, (b + 1) * B
            r0, r1 = np.searchsorted(end, b0, side="right"), np.searchsorted(start, b1)
            lo = np.maximum(start[r0:r1], b0)
            hi = np.minimum(end[r0:r1], b1)
            offset, seg = prim.segment_arange(np.maximum(hi - lo, 0))
            src = lo[seg] + offset
            out = dest[r0:r1][seg] + (src - start[r0:r1][seg])
            indices[out] = idx[src - b0]
            if weights is not None:
                weights[out] = w[src - b0]
        return degree, start, indices, weights, None

    def _record(self, stats, Q, need, degree):
        stats["frontier"] += len(Q)
        stats["rows_read"] += int(need.size)
        stats["entries_read"] += int(degree.sum())


def _blocks_of(start, end, B):
    """The ascending distinct blocks touched by the entry ranges ``[start, end)`` (non-empty)."""
    if start.size == 0:
        return np.zeros(0, dtype=np.int64)
    first, last = start // B, (end - 1) // B
    offset, segment = prim.segment_arange(last - first + 1)
    return np.unique(first[segment] + offset)
