"""Distributed bulk sampling: the hop loop of :func:`spsample._sample.run_bulk`, with ``Q·A``
computed across the process rows of a column of the grid.

Two ways to distribute the product (DESIGN §7):

* **push** (node-wise): each frontier row ``(minibatch, v)`` goes to the owner of row ``v``,
  which samples it with the very RNG stream the single-process code uses (keyed by ``v`` and
  the global minibatch id) and returns one ``(vertex, edge id)`` per sample. Wire format per
  owner: ``[runs, batch id × runs, rows × runs, v × rows]`` int64 out; back, the per-row
  sample counts in the narrowest unsigned type that holds the fanout, then one uint64 per
  sample packing ``vertex << edge_bits | edge_id`` (two int64 when the ids need > 64 bits).
* **pull** / row fetch (any sampler): the rows of ``A`` the frontier needs and that this rank
  has not fetched yet in this bulk are requested from their owners (one id out; back the
  row's degree and first edge id, then its column ids and weights); the sampler's own
  constructors then run unchanged on a :class:`_FetchedRows` view. Layer-wise sums therefore
  run over the same values in the same order as on one process: bit-identical.

Requests run inside the grid's column communicator (one rank per process row, same replica
index), so the ``c`` replicas of an owner share the requests of the ``p`` ranks.
"""

import dataclasses
import time

import numpy as np

from .. import _native
from .. import _primitives as prim
from .. import _rng
from .._backend import NUMPY
from .._errors import SamplerError
from ..samplers._nodewise import NodeWise
from ..samplers._protocol import BulkState, HopContext

__all__ = ["run_distributed", "pushable"]


def pushable(sampler):
    """Whether ``sampler`` can be sampled by the owners: a ``NodeWise`` whose probability,
    stream and selection rules are NodeWise's own (frontier and extraction may differ)."""
    cls = type(sampler)
    return (isinstance(sampler, NodeWise) and cls.probabilities is NodeWise.probabilities
            and cls.streams is NodeWise.streams and cls.select is NodeWise.select
            and cls.sample_hop is NodeWise.sample_hop)


def run_distributed(dg, seeds, sizes, batch_ids, sampler, seed, epoch, strategy, stats):
    """All hops of this rank's bulk; every rank runs the same number of hops (collective)."""
    state = BulkState(dg.num_nodes, batch_ids)
    state.begin_hop(0)
    state.add_nodes(np.repeat(np.arange(sizes.size, dtype=np.int64), sizes), seeds)
    key = _rng.split_seed(seed)
    scratch = {}
    if strategy == "push" and pushable(sampler):
        hop_impl = _PushHop(dg, sampler)
        stats["mode"] = "push"
    else:
        hop_impl = _FetchHop(dg, native_rows=pushable(sampler) and _native.enabled())
        stats["mode"] = "pull"
    for name in ("frontier", "remote_frontier", "samples", "remote_samples", "fetched_rows",
                 "fetched_entries", "exchange_s", "owner_s", "local_s"):
        stats[name] = 0
    for hop, fanout in enumerate(sampler.fanouts, start=1):
        ctx = HopContext(hop=hop, fanout=fanout, seed=seed, epoch=epoch, key=key,
                         hop_word=_rng.hop_word(epoch, hop), batch_ids=batch_ids,
                         backend=NUMPY, scratch=scratch, graph=dg)
        state.begin_hop(hop)
        hop_impl(sampler, state, ctx, stats)
        state.end_hop()
    return state.finish(sizes)


# ---------------------------------------------------------------------------------- push
def _select_rows(sampler, indptr, indices, weights, vertex, batch_ids, batch, ctx, *, row_offset):
    """``S`` for the node-wise rows ``vertex`` (row ``i`` of minibatch ``batch_ids[batch[i]]``)
    of the CSR block ``(indptr, indices, weights)``: the native row sampler of ``native/rows.h``
    when the kernels are enabled, else the sampler's own NumPy constructors (the oracle; both
    give the same bits). ``edge_id`` counts from the block's first entry; ``data`` may be
    ``None``. Only for :func:`pushable` samplers."""
    if _native.enabled():
        return _native.sample_rows(indptr, indices, weights, vertex, batch_ids[batch], ctx.fanout,
                                   ctx.hop_word, ctx.key, replace=sampler.replace,
                                   weighted=sampler.weighted, row_offset=row_offset)
    P = prim.row_select(indptr, indices, weights, vertex, row_offset=row_offset)
    streams = prim.Streams(vertex, batch_ids[batch], ctx.hop_word, ctx.key)
    return prim.sample_rows(P, ctx.fanout, streams, replace=sampler.replace,
                            weighted=sampler.weighted)


def _count_dtype(bound):
    for dt in (np.uint8, np.uint16, np.uint32):
        if bound <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


def _count_bound(sampler, max_degree):
    """The most samples one frontier row can get at any hop."""
    bound = 0
    for fanout in sampler.fanouts:
        if fanout < 0:
            bound = max(bound, max_degree)
        else:
            bound = max(bound, fanout if sampler.replace else min(fanout, max_degree))
    return bound


def _runs(values):
    """Run-length encoding of consecutive equal values: ``(value per run, length per run)``."""
    if values.size == 0:
        return values[:0], np.zeros(0, dtype=np.int64)
    start = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    return values[start], np.diff(np.r_[start, values.size]).astype(np.int64)


def _pad8(nbytes):
    return -nbytes % 8


class _PushHop:
    """One node-wise hop with the sampling done by the owners of the frontier rows."""

    def __init__(self, dg, sampler):
        self.dg = dg
        self.count_dtype = _count_dtype(_count_bound(sampler, dg.max_degree))
        self.edge_bits = max(1, int(dg.num_edges - 1).bit_length())
        vertex_bits = max(1, int(dg.num_nodes - 1).bit_length())
        self.packed = self.edge_bits + vertex_bits <= 64
        self.weights = dg.weights if sampler.weighted else None

    def __call__(self, sampler, state, ctx, stats):
        dg, col = self.dg, self.dg.grid.col_comm
        t0 = time.perf_counter()
        Q = sampler.frontier(state, ctx)
        dest = dg.grid.owner(Q.vertex, dg.num_nodes)
        order = np.argsort(dest, kind="stable")
        rows_per_dest = np.bincount(dest, minlength=col.size)
        request, counts = self._requests(Q, ctx, order, rows_per_dest)
        t1 = time.perf_counter()
        received, rcounts = col.alltoallv(request, counts)
        t2 = time.perf_counter()
        reply, reply_counts = self._serve(sampler, ctx, received, rcounts)
        t3 = time.perf_counter()
        answer, _ = col.alltoallv(reply, reply_counts)
        t4 = time.perf_counter()
        S = self._unpack(answer, rows_per_dest, order, len(Q))
        sampler.extract(state, Q, S, ctx)
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

    def _requests(self, Q, ctx, order, rows_per_dest):
        batch, vertex = Q.batch[order], Q.vertex[order]
        bounds = np.r_[0, np.cumsum(rows_per_dest)]
        parts = []
        for d in range(rows_per_dest.size):
            run_batch, run_len = _runs(batch[bounds[d]:bounds[d + 1]])
            parts.append(np.concatenate([[run_batch.size], ctx.batch_ids[run_batch], run_len,
                                         vertex[bounds[d]:bounds[d + 1]]]).astype(np.int64))
        return np.concatenate(parts), np.array([p.size for p in parts], dtype=np.int64)

    def _serve(self, sampler, ctx, received, rcounts):
        """Owner side: sample the rows requested by every source, reply per source."""
        dg = self.dg
        batch_ids, run_lengths, vertices, rows_from = [], [], [], []
        pos = 0
        for count in rcounts:
            runs = int(received[pos])
            batch_ids.append(received[pos + 1:pos + 1 + runs])
            run_lengths.append(received[pos + 1 + runs:pos + 1 + 2 * runs])
            vertices.append(received[pos + 1 + 2 * runs:pos + count])
            rows_from.append(int(count) - 1 - 2 * runs)
            pos += int(count)
        batch_ids = np.concatenate(batch_ids)
        run_lengths = np.concatenate(run_lengths)
        vertex = np.concatenate(vertices)
        batch = np.repeat(np.arange(batch_ids.size, dtype=np.int64), run_lengths)
        S = _select_rows(sampler, dg.indptr, dg.indices, self.weights, vertex, batch_ids, batch,
                         ctx, row_offset=dg.lo)
        S.edge_id = S.edge_id + dg.edge_offset
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
            return (vertex.astype(np.uint64) << np.uint64(self.edge_bits)) | edge_id.astype(np.uint64)
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
class _FetchedRows:
    """The rows of ``A`` fetched so far, laid out as a graph over all ``n`` vertices (rows not
    fetched are empty), so that a sampler's constructors run on it unchanged. ``edge_ids``
    maps each stored entry to its global edge id."""

    def __init__(self, num_nodes, ids, degree, indices, weights, edge_ids, whole_graph):
        self.num_nodes = num_nodes
        lengths = np.zeros(num_nodes, dtype=np.int64)
        lengths[ids] = degree
        self.indptr = np.zeros(num_nodes + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.indptr[1:])
        self.indices, self.weights, self.edge_ids = indices, weights, edge_ids
        self._whole_graph = whole_graph

    def cached(self, name, compute):
        """Whole-graph quantities come from the distributed graph, never from these rows."""
        if name == "fastgcn_column_weights":
            return self._whole_graph.column_weights()
        if name == "layerwise_weights":         # these rows' weights, scaled as the whole graph's
            return self.weights * self._whole_graph.layerwise_scale()
        raise SamplerError(
            f"sample: the sampler needs the whole-graph quantity {name!r}, which a DistGraph "
            "does not provide; use replicate_graph=True")


class _FetchHop:
    """One hop of any sampler after fetching the rows its frontier needs (cached per bulk).

    Two ways to keep the fetched rows. Any sampler: merged into a CSR sorted by vertex after
    every fetch (:meth:`_merge`), on which the sampler's constructors run unchanged through a
    :class:`_FetchedRows` view. Node-wise rules with the native kernels (``native_rows``):
    appended in arrival order (:meth:`_append`, O(new entries) per hop, no re-sort of the
    entries) and sampled by the native row sampler, which reads each request's row through its
    slot and keys the streams by the vertex; the NumPy way stays the oracle (same bits).
    """

    def __init__(self, dg, native_rows=False):
        self.dg = dg
        self.native_rows = native_rows
        self.ids = np.zeros(0, dtype=np.int64)          # ascending
        self.degree = np.zeros(0, dtype=np.int64)
        self.start = np.zeros(0, dtype=np.int64)         # global edge id of each row's entry 0
        self.indices = np.zeros(0, dtype=np.int64)       # rows in the order of self.ids
        self.weights = None if dg.weights is None else np.zeros(0)
        # native_rows: self.start, self.indices and self.weights are in arrival (slot) order
        self.slot = np.zeros(0, dtype=np.int64)          # slot of each of self.ids
        self.row_ptr = np.zeros(1, dtype=np.int64)       # slot -> its entries in self.indices

    def __call__(self, sampler, state, ctx, stats):
        t0 = time.perf_counter()
        Q = sampler.frontier(state, ctx)
        need = np.setdiff1d(np.unique(Q.vertex), self.ids, assume_unique=True)
        t1 = time.perf_counter()
        fetched = self._fetch(need)
        t2 = time.perf_counter()
        if self.native_rows:
            self._append(need, *fetched)
            self._sample_native(sampler, state, Q, ctx)
        else:
            self._merge(need, *fetched)
            view = self._view()
            sampler.sample_hop(view, state, dataclasses.replace(ctx, graph=view))
            edges = state.hop_edges[ctx.hop - 1]
            if edges is not None:
                edges["edge_id"] = view.edge_ids[edges["edge_id"]]
        t3 = time.perf_counter()
        remote = self.dg.grid.owner(need, self.dg.num_nodes) != self.dg.grid.row
        stats["frontier"] += len(Q)
        stats["remote_frontier"] += int(remote.sum())
        stats["fetched_rows"] += int(remote.sum())
        stats["fetched_entries"] += int(fetched[0][remote].sum())
        stats["exchange_s"] += t2 - t1
        stats["local_s"] += (t1 - t0) + (t3 - t2)

    def _append(self, need, degree, start, indices, weights):
        """Store the rows ``need`` after the ones fetched so far (new slots, arrival order)."""
        first_slot = self.start.size
        ids = np.concatenate([self.ids, need])
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order]
        self.slot = np.concatenate([self.slot, np.arange(first_slot, first_slot + need.size)])[order]
        self.row_ptr = np.concatenate([self.row_ptr, self.row_ptr[-1] + np.cumsum(degree)])
        self.start = np.concatenate([self.start, start])
        self.indices = np.concatenate([self.indices, indices])
        if self.weights is not None:
            self.weights = np.concatenate([self.weights, weights])

    def _sample_native(self, sampler, state, Q, ctx):
        """One node-wise hop on the stored rows with the native row sampler."""
        rows = self.slot[np.searchsorted(self.ids, Q.vertex)]
        S = _native.sample_rows(self.row_ptr, self.indices, self.weights if sampler.weighted else None,
                                Q.vertex, ctx.batch_ids[Q.batch], ctx.fanout, ctx.hop_word, ctx.key,
                                replace=sampler.replace, weighted=sampler.weighted, rows=rows)
        first_edge = self.start[rows] - self.row_ptr[rows]      # buffer position -> edge id
        S.edge_id = S.edge_id + np.repeat(first_edge, S.row_lengths())
        sampler.extract(state, Q, S, ctx)

    def _fetch(self, need):
        """Rows ``need`` (ascending) from their owners: ``(degree, start, indices, weights)``."""
        dg, col = self.dg, self.dg.grid.col_comm
        counts = np.bincount(dg.grid.owner(need, dg.num_nodes), minlength=col.size)
        asked, asked_counts = col.alltoallv(need, counts)
        local = asked - dg.lo
        first = dg.indptr[local]
        degree = dg.indptr[local + 1] - first
        head = np.stack([degree, first + dg.edge_offset], axis=1)
        got_head, _ = col.alltoallv(head, asked_counts, recvcounts=counts)
        offset, segment = prim.segment_arange(degree)
        entry = first[segment] + offset
        width = 1 if dg.weights is None else 2
        body = np.empty((entry.size, width), dtype=np.int64)
        body[:, 0] = dg.indices[entry]
        if width == 2:
            body[:, 1] = dg.weights[entry].view(np.int64)
        source = np.repeat(np.arange(col.size), asked_counts)
        send_entries = np.bincount(source, weights=degree, minlength=col.size).astype(np.int64)
        back = np.repeat(np.arange(col.size), counts)
        recv_entries = np.bincount(back, weights=got_head[:, 0], minlength=col.size).astype(np.int64)
        got_body, _ = col.alltoallv(body, send_entries, recvcounts=recv_entries)
        weights = None if width == 1 else got_body[:, 1].copy().view(np.float64)
        return got_head[:, 0].copy(), got_head[:, 1].copy(), got_body[:, 0].copy(), weights

    def _merge(self, need, degree, start, indices, weights):
        ids = np.concatenate([self.ids, need])
        order = np.argsort(ids, kind="stable")
        all_degree = np.concatenate([self.degree, degree])
        all_start = np.concatenate([self.start, start])
        all_indices = np.concatenate([self.indices, indices])
        row_first = np.cumsum(all_degree) - all_degree
        offset, segment = prim.segment_arange(all_degree[order])
        take = row_first[order][segment] + offset
        self.ids, self.degree, self.start = ids[order], all_degree[order], all_start[order]
        self.indices = all_indices[take]
        if self.weights is not None:
            self.weights = np.concatenate([self.weights, weights])[take]

    def _view(self):
        offset, segment = prim.segment_arange(self.degree)
        edge_ids = self.start[segment] + offset
        return _FetchedRows(self.dg.num_nodes, self.ids, self.degree, self.indices,
                            self.weights, edge_ids, self.dg)
