"""Distributed bulk sampling: the engine's hop loop, with ``Q·A`` computed across the process
rows of a column of the grid.

Every rank traces the sampler's constructors (:func:`spsample.engine._run.trace`), as one process
does, and each hop runs where its plan allows and the strategy places it (push or pull, below;
the strategies are registered in :mod:`spsample.distributed._strategies`), the same on every
rank:

* **push**, for hops whose selection is *row-local* (each row's sample depends on that row of
  ``A`` alone: node-wise rules, LABOR, walks, compositions of the row's own values): each
  frontier row ``(minibatch, v)`` goes to the owner of row ``v``, which samples it with the
  very RNG stream the single-process code uses and returns one ``(vertex, edge id)`` per
  sample. Wire format per owner: ``[runs, batch id × runs, rows × runs(, time × runs), v ×
  rows(, row key × rows)]`` int64 out (the times, the bits of the relation's int64 or float64
  entry times, only for temporal hops: one
  per run of a minibatch's rows, which the owner cuts its time-sorted rows at; the row keys
  only for streams keyed per row); back, the per-row sample
  counts in the narrowest unsigned type that holds the largest, then one uint64 per sample
  packing ``vertex << edge_bits | edge_id`` (two int64 when the ids need > 64 bits). The owner
  samples with the native row sampler where the rule allows, else with the NumPy evaluation
  of the hop's own selection on its block of rows (same bits).
* **pull** / row fetch (any other hop, or ``strategy="pull"``, or a sampler whose constructors
  cannot be traced): the rows of ``A`` the frontier needs and that this rank
  has not fetched yet in this bulk are requested from their owners (one id out; back the
  row's degree and first edge id, then its column ids, weights and, from a time-sorted
  block, entry times); the sampler's own constructors then run unchanged on a
  :class:`_FetchedRows` view (which cuts the rows at the minibatches' times as one process
  does). Layer-wise sums therefore run over the same values in the same order as on one
  process: bit-identical.

Temporal hops run on time-sorted blocks (:class:`~spsample.distributed._timesorted.
TimeSortedBlock`): samples report the canonical CSR's edge ids, as one process does.

Requests run inside the grid's column communicator (one rank per process row, same replica
index), so the ``c`` replicas of an owner share the requests of the ``p`` ranks.
"""

import time

import numpy as np

from ..engine import _primitives as prim
from ..engine._lazy import (
    ThresholdSelection,
)
from ..engine._rows import (Block as _Block, FetchHop, NO_ROWS as _NO_ROWS, concrete_frontier,
                           on_held_rows,
                           in_request_order, owner_select as _owner_select,
                           request_hop as _request_hop, row_local, trace_plans as _trace)
from ._layerpush import LayerPush, layer_pushable
from .._errors import ArgumentError
from ._collective import mark_raised_on_every_rank
from ._placement import by_owner
from ._strategies import registered_strategy
from ..engine._native_run import select_requests
from ..engine._run import run_hops

__all__ = ["run_distributed", "hop_modes", "push_modes", "pull_modes"]


def run_distributed(dg, seeds, sizes, batch_ids, sampler, seed, epoch, strategy, stats, *,
                    schedule=None, seed_time=None):
    """All hops of this rank's bulk on the engine's hop loop, each hop where its traced plan
    allows; every rank runs the same number of hops (collective).

    ``schedule`` (a heterogeneous bulk's :class:`~spsample.engine._hetero_sample.Schedule`) runs one
    engine hop per (hop, relation) step, each on its relation's block of rows (a
    :class:`DistGraph`, the step's ``graph``), exactly as a homogeneous hop runs on ``dg``;
    ``dg`` then only gives the grid; ``seed_time`` (int64 or float64, one per minibatch) is
    a temporal bulk's cut."""
    blocks = [dg] * sampler.num_hops if schedule is None else [st.graph for st in schedule.steps]
    plans = _trace(dg, sampler, batch_ids, seed, epoch, schedule, seed_time)
    modes = _agreed_modes(dg, plans, strategy, len(blocks),
                          any(block.weights is not None for block in blocks))
    fetches = _fetch_hops(blocks, plans, modes)
    layer_pushes = {}
    for name in ("frontier", "remote_frontier", "samples", "remote_samples", "fetched_rows",
                 "fetched_entries", "exchange_s", "owner_s", "local_s", "draws"):
        stats[name] = 0
    stats["selection"] = []          # per hop: "native" (lowered kernels) or "numpy"

    def hop(state, ctx):
        step = ctx.step - 1
        plan, block, mode = plans[step] if plans else None, blocks[step], modes[step]
        if mode == "push" and plan.kind == "layer":
            if id(block) not in layer_pushes:        # its state lasts the bulk
                layer_pushes[id(block)] = LayerPush(block)
            layer_pushes[id(block)](plan, state, ctx, stats)
            stats["selection"].append("numpy")
        elif mode == "push":
            push = _PushHop(block, plan)
            push(state, ctx, stats)
            stats["selection"].append("numpy" if push.native is None else "native")
        else:
            fetch = fetches[id(block)]
            fetch(sampler, state, ctx, stats, plan=plan)
            stats["selection"].append("native" if fetch.native_rows else "numpy")

    out = run_hops(dg, seeds, sizes, batch_ids, sampler, seed, epoch, hop, schedule=schedule,
                   seed_time=seed_time)
    stats["modes"] = modes
    stats["mode"] = modes[0] if len(set(modes)) == 1 else "mixed"
    return out


def _fetch_hops(blocks, plans, modes):
    """One :class:`_FetchHop` (the rows fetched in this bulk) per distinct block; it keeps its
    rows for the native kernels when every hop that pulls from it lowers onto them."""
    fetches = {}
    for block in blocks:
        if id(block) in fetches:
            continue
        pulled = [plans[h] if plans else None for h, (b, m) in enumerate(zip(blocks, modes))
                  if b is block and m == "pull"]
        fetches[id(block)] = _FetchHop(block, native_rows=bool(pulled) and all(
            _request_hop(plan, block, rows=_NO_ROWS) is not None for plan in pulled))
    return fetches


def hop_modes(plans, strategy, num_hops, *, weighted=False):
    """``"push"`` or ``"pull"`` per hop, as the registered ``strategy`` places them
    (:func:`~spsample.distributed.registered_strategy`); every hop pulls when the sampler's
    constructors could not be traced (``plans`` None)."""
    if plans is None:
        return ["pull"] * num_hops
    return registered_strategy(strategy, where="sample", argname="strategy").hop_modes(
        plans, weighted=weighted)


def push_modes(plans, weighted):
    """The ``"push"`` strategy's placement: push the hops whose selection is row-local
    (:func:`row_local`) or layer-wise without float sums across owners
    (:func:`~spsample.distributed._layerpush.layer_pushable`), pull the others."""
    return ["push" if row_local(plan) or layer_pushable(plan, weighted) else "pull"
            for plan in plans]


def pull_modes(plans, weighted):
    """The ``"pull"`` strategy's placement: every hop fetches its rows."""
    return ["pull"] * len(plans)


def _agreed_modes(dg, plans, strategy, num_hops, weighted):
    """The modes every rank uses (collective): the strategy's placement
    (:func:`hop_modes`) if all ranks agree, else pull everywhere (the plans are traced per
    rank; they agree unless a sampler behaves differently on some rank). A strategy that
    placed a hop as neither push nor pull, or pushed a hop that cannot be pushed
    (:func:`push_modes`), on any rank fails on every rank."""
    modes = hop_modes(plans, strategy, num_hops, weighted=weighted)
    pushable = ["pull"] * num_hops if plans is None else push_modes(plans, weighted)
    every = dg.grid.comm.allgather_object((tuple(modes), tuple(pushable)))
    entry = registered_strategy(strategy, where="sample", argname="strategy")
    for placed, allowed in every:
        try:
            entry.check_modes(placed, allowed)
        except ArgumentError as exc:
            raise mark_raised_on_every_rank(exc) from None
    return list(modes) if len({placed for placed, _ in every}) == 1 else ["pull"] * num_hops


# ---------------------------------------------------------------------------------- push


def reported_edges(dg, position):
    """The edge ids samples of ``dg``'s entries (local positions) report: their global ids,
    or, for a time-sorted block, those of the canonical CSR (as one process reports them)."""
    canonical = getattr(dg, "canonical_edge", None)
    return dg.global_edges(position) if canonical is None else canonical[position]


def _count_dtype(bound):
    for dt in (np.uint8, np.uint16, np.uint32):
        if bound <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


def _count_bound(sel, max_degree):
    """The most samples one frontier row can get at this hop."""
    vector = sel.fanout_vector
    fanout = sel.fanout if vector is None else (-1 if (vector < 0).any() else int(vector.max()))
    if fanout < 0 or isinstance(sel, ThresholdSelection):
        return max_degree
    return fanout if getattr(sel, "replace", False) else min(fanout, max_degree)


def _runs(values):
    """Run-length encoding of consecutive equal values: ``(value per run, length per run)``."""
    if values.size == 0:
        return values[:0], np.zeros(0, dtype=np.int64)
    start = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    return values[start], np.diff(np.r_[start, values.size]).astype(np.int64)


def _pad8(nbytes):
    return -nbytes % 8


class _PushHop:
    """One row-local hop with the sampling done by the owners of the frontier rows."""

    def __init__(self, dg, plan):
        self.dg, self.plan = dg, plan
        sel = plan.selection
        self.keyed_by_row = sel.streams.keyed_by == "row"
        self.timed = sel.P.cutoff is not None            # requests carry their runs' times
        self.count_dtype = _count_dtype(_count_bound(sel, dg.max_degree))
        self.edge_bits = max(1, int(dg.num_edges - 1).bit_length())
        vertex_bits = max(1, int(dg.num_nodes - 1).bit_length())
        self.packed = self.edge_bits + vertex_bits <= 64
        self.native = _request_hop(plan, dg, edges=dg.block_edges())

    def __call__(self, state, ctx, stats):
        Q = concrete_frontier(state, self.plan.frontier)
        S = on_held_rows(self.dg, Q, lambda rows: self._sample(rows, ctx, stats))
        t0 = time.perf_counter()
        state.add_sampled(Q, S, dedup=self.plan.dedup)
        stats["local_s"] += time.perf_counter() - t0

    def _sample(self, Q, ctx, stats):
        """``S`` of the frontier rows ``Q`` (rows of this block), sampled by their owners."""
        dg, col = self.dg, self.dg.grid.col_comm
        t0 = time.perf_counter()
        dest = dg.placement.owner(Q.vertex)
        order, rows_per_dest = by_owner(dest, col.size)
        request, counts = self._requests(Q, ctx, order, rows_per_dest)
        t1 = time.perf_counter()
        received, rcounts = col.alltoallv(request, counts)
        t2 = time.perf_counter()
        reply, reply_counts = self._serve(ctx, received, rcounts)
        t3 = time.perf_counter()
        answer, _ = col.alltoallv(reply, reply_counts)
        t4 = time.perf_counter()
        S = self._unpack(answer, rows_per_dest, order, len(Q))
        t5 = time.perf_counter()
        remote = dest != dg.grid.row
        stats["frontier"] += len(Q)
        stats["remote_frontier"] += int(remote.sum())
        lengths = S.row_lengths()
        stats["samples"] += int(lengths.sum())
        stats["remote_samples"] += int(lengths[remote].sum())
        stats["exchange_s"] += (t2 - t1) + (t4 - t3)
        stats["owner_s"] += t3 - t2
        stats["local_s"] += (t1 - t0) + (t5 - t4)
        return S

    def _requests(self, Q, ctx, order, rows_per_dest):
        batch, vertex = Q.batch[order], Q.vertex[order]
        keys = Q.row_id[order] if self.keyed_by_row else None
        bounds = np.r_[0, np.cumsum(rows_per_dest)]
        parts = []
        for d in range(rows_per_dest.size):
            lo, hi = bounds[d], bounds[d + 1]
            run_batch, run_len = _runs(batch[lo:hi])
            pieces = [[run_batch.size], ctx.batch_ids[run_batch], run_len]
            if self.timed:
                pieces.append(self._cut_times()[run_batch].view(np.int64))
            pieces.append(vertex[lo:hi])
            if keys is not None:
                pieces.append(keys[lo:hi])
            parts.append(np.concatenate(pieces).astype(np.int64))
        return np.concatenate(parts), np.array([p.size for p in parts], dtype=np.int64)

    def _cut_times(self):
        """The bulk's cut times in the kind of this hop's entry times (``RowView.until``
        converted them exactly), as every rank's block of the relation stores them."""
        return np.ascontiguousarray(self.plan.selection.P.cutoff[1])

    def _serve(self, ctx, received, rcounts):
        """Owner side: sample the rows requested by every source, reply per source."""
        dg = self.dg
        batch_ids, run_lengths, run_times, vertices, keys, rows_from = [], [], [], [], [], []
        width = 2 if self.keyed_by_row else 1
        per_run = 3 if self.timed else 2
        pos = 0
        for count in rcounts:
            runs = int(received[pos])
            batch_ids.append(received[pos + 1:pos + 1 + runs])
            run_lengths.append(received[pos + 1 + runs:pos + 1 + 2 * runs])
            run_times.append(received[pos + 1 + 2 * runs:pos + 1 + per_run * runs])
            rows = (int(count) - 1 - per_run * runs) // width
            first = pos + 1 + per_run * runs
            vertices.append(received[first:first + rows])
            keys.append(received[first + rows:first + 2 * rows] if width == 2 else None)
            rows_from.append(rows)
            pos += int(count)
        batch_ids = np.concatenate(batch_ids)
        run_lengths = np.concatenate(run_lengths)
        run_time = np.concatenate(run_times).view(dg.entry_time.dtype) if self.timed else None
        vertex = np.concatenate(vertices)
        key_words = np.concatenate(keys) if width == 2 else vertex
        batch = np.repeat(np.arange(batch_ids.size, dtype=np.int64), run_lengths)
        if self.native is not None:
            S = select_requests(self.native, vertex, dg.local_rows(vertex), batch_ids[batch],
                                ctx.hop_word, ctx.key,
                                keys=key_words if self.keyed_by_row else None,
                                times=None if run_time is None else run_time[batch])
        else:
            S = _owner_select(self.plan.selection, _Block(dg), vertex, key_words, batch,
                              batch_ids, ctx, run_time)
        S.edge_id = reported_edges(dg, S.edge_id)
        lengths = S.row_lengths()
        row_bounds = np.r_[0, np.cumsum(rows_from)]
        parts = []
        for s in range(len(rows_from)):
            r0, r1 = row_bounds[s], row_bounds[s + 1]
            e0, e1 = S.indptr[r0], S.indptr[r1]
            head = lengths[r0:r1].astype(self.count_dtype).view(np.uint8)
            parts.append(head)
            parts.append(np.zeros(_pad8(head.size), dtype=np.uint8))
            parts.append(self._pack(S.indices[e0:e1], S.edge_id[e0:e1]).view(np.uint8))
        sizes = [sum(p.size for p in parts[3 * s:3 * s + 3]) for s in range(len(rows_from))]
        return np.concatenate(parts), np.array(sizes, dtype=np.int64)

    def _pack(self, vertex, edge_id):
        if self.packed:
            return ((vertex.astype(np.uint64) << np.uint64(self.edge_bits))
                    | edge_id.astype(np.uint64))
        return np.concatenate([vertex, edge_id]).astype(np.int64)

    def _unpack_entries(self, raw, count):
        if self.packed:
            words = raw.view(np.uint64)
            mask = np.uint64((1 << self.edge_bits) - 1)
            return ((words >> np.uint64(self.edge_bits)).astype(np.int64),
                    (words & mask).astype(np.int64))
        words = raw.view(np.int64)
        return words[:count].copy(), words[count:].copy()

    def _unpack(self, answer, rows_per_dest, order, num_rows):
        """The replies (grouped by owner, in request order) as ``S`` in frontier order."""
        width = self.count_dtype.itemsize
        entry_bytes = 8 if self.packed else 16
        lens, verts, eids = [], [], []
        pos = 0
        for rows in rows_per_dest:
            head = rows * width
            length = answer[pos:pos + head].view(self.count_dtype).astype(np.int64)
            pos += head + _pad8(head)
            total = int(length.sum())
            v, e = self._unpack_entries(answer[pos:pos + total * entry_bytes], total)
            pos += total * entry_bytes
            lens.append(length)
            verts.append(v)
            eids.append(e)
        lens_sorted = np.concatenate(lens) if lens else np.zeros(0, dtype=np.int64)
        vert_sorted = np.concatenate(verts) if verts else np.zeros(0, dtype=np.int64)
        eid_sorted = np.concatenate(eids) if eids else np.zeros(0, dtype=np.int64)
        starts_sorted = np.cumsum(lens_sorted) - lens_sorted
        lengths = np.empty(num_rows, dtype=np.int64)
        lengths[order] = lens_sorted
        start = np.empty(num_rows, dtype=np.int64)
        start[order] = starts_sorted
        offset, segment = prim.segment_arange(lengths)
        take = start[segment] + offset
        indptr = np.zeros(num_rows + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        return prim.RowMatrix(indptr, vert_sorted[take], None, eid_sorted[take])


# ---------------------------------------------------------------------------------- pull


class _FetchHop(FetchHop):
    """:class:`~spsample.engine._rows.FetchHop` whose rows come from their owners: fetched
    over the grid's column communicator (``dg``: a :class:`~spsample.distributed.DistGraph`).
    A :class:`~spsample.graph._source.RowFetcher`."""

    def _record(self, stats, Q, need, degree):
        remote = self.dg.placement.owner(need) != self.dg.grid.row
        stats["frontier"] += len(Q)
        stats["remote_frontier"] += int(remote.sum())
        stats["fetched_rows"] += int(remote.sum())
        stats["fetched_entries"] += int(degree[remote].sum())

    def fetch_rows(self, need):
        """Rows ``need`` from their owners: ``(degree, start, indices, weights, time)``, in the
        order of ``need`` (``time``: the entries' times of a time-sorted block, or ``None``)."""
        dg, col = self.dg, self.dg.grid.col_comm
        order, counts = by_owner(dg.placement.owner(need), col.size)
        asked, asked_counts = col.alltoallv(need[order], counts)
        local = dg.local_rows(asked)
        first = dg.indptr[local]
        degree = dg.indptr[local + 1] - first
        head = np.stack([degree, dg.first_edges(local)], axis=1)
        got_head, _ = col.alltoallv(head, asked_counts, recvcounts=counts)
        offset, segment = prim.segment_arange(degree)
        entry = first[segment] + offset
        columns = [a for a in (dg.indices, dg.weights, getattr(dg, "entry_time", None))
                   if a is not None]
        body = np.empty((entry.size, len(columns)), dtype=np.int64)
        for i, a in enumerate(columns):               # floats (and times) travel as their bits
            body[:, i] = a.view(np.int64)[entry]
        source = np.repeat(np.arange(col.size), asked_counts)
        send_entries = np.bincount(source, weights=degree, minlength=col.size).astype(np.int64)
        back = np.repeat(np.arange(col.size), counts)
        recv_entries = np.bincount(back, weights=got_head[:, 0],
                                   minlength=col.size).astype(np.int64)
        got_body, _ = col.alltoallv(body, send_entries, recvcounts=recv_entries)
        degree, start, got_body = in_request_order(order, got_head[:, 0], got_head[:, 1],
                                                    got_body)
        parts = [np.ascontiguousarray(got_body[:, i]) for i in range(len(columns))]
        weights = parts.pop(1).view(np.float64) if dg.weights is not None else None
        time = parts.pop(1).view(dg.entry_time.dtype) if self.timed else None
        return degree, start, parts[0], weights, time
