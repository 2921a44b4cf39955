"""Layer-wise push: LADIES (unweighted) and FastGCN layers without moving whole rows of ``A``.

One layer ``l`` of every minibatch ``j`` (vertex set ``B_l``, rows in local order), in three
exchanges inside the grid's column communicator (the owners of the rows answer):

1. **rows**: the requester registers ``B_l``'s rows that are new at this layer with their
   owners (one id per row per minibatch out); each owner answers per row its degree and first
   global edge id (one packed word), and per minibatch the distinct columns of the rows it holds
   when there are at most ``s`` of them (else one "more than s" flag) -- what the single-process
   kernel learns by marking columns until ``s + 1`` are distinct.
2. **draws** (LADIES, when ``B_l``'s rows have more than ``s`` distinct columns): the requester
   draws entries exactly as one process does (draw ``t``: words ``2t, 2t + 1`` of stream
   ``(NO_VERTEX, hop word, batch id)``, entry ``E = min(floor(U D), D - 1)`` of the rows in
   local order), sends each drawn entry's global edge id to its row's owner and gets its column
   back (8 bytes each way), in rounds until ``s`` distinct columns came up (collective rounds:
   every rank joins until all are done). FastGCN draws from the global column weights alone.
3. **edges**: the requester sends each owner the minibatch's new vertices (its membership, one
   id each); the owner returns, for every registered row, its entries whose column is a member
   (storage order): ``(column, edge id)`` packed in one word, FastGCN with the row-normalised
   value ``a / q[u]``. LADIES's ``P[u]`` -- the count of ``u`` among the rows of ``B_l`` -- is
   the number of returned entries of column ``u``: integers, exact in any order, so the
   requester values the edges ``1 / P[u]`` row-normalised with the single-process bits.

Wire volume per layer: 8 bytes per row out and back, 16 per draw, 8 per member id, 8 per edge
(16 for FastGCN on a weighted graph), plus the distinct sets of owners holding at most ``s``
columns of a minibatch -- against whole rows (entries × 8 or 16 bytes) for pull.
"""

import time

import numpy as np

from ..engine import _primitives as prim
from ..engine._lazy import ColumnSelection, GlobalSelection
from ._placement import by_owner

__all__ = ["layer_pushable", "LayerPush"]


def layer_pushable(plan, graph_weighted):
    """Whether a traced layer-wise hop can be pushed: FastGCN (global distribution), or LADIES
    over an unweighted graph (its column sums are counts)."""
    if plan.kind != "layer" or plan.frontier.kind != "all_nodes":
        return False
    sel = plan.selection
    if isinstance(sel, GlobalSelection):
        return True
    return isinstance(sel, ColumnSelection) and not graph_weighted and sel.P.view.expr is None


class LayerPush:
    """The layer-wise push of one bulk (state kept across its layers).

    Parameters
    ----------
    dg : DistGraph
    """

    def __init__(self, dg):
        self.dg = dg
        self.col = dg.grid.col_comm
        self.owners = {}        # owner side: (source, batch id) -> {"rows", "members"}
        self.rows_sent = None   # requester: per minibatch, rows of n_id registered so far
        self.members_sent = None    # requester: per minibatch and owner, members sent so far
        self.holders = None     # requester: per minibatch, the owners holding rows of it
        self._table = None      # owner side: n-sized membership table, reused
        self.deg_bits = max(1, int(max(dg.max_degree, 1)).bit_length())
        self.edge_bits = max(1, int(max(dg.num_edges - 1, 1)).bit_length())
        self.vertex_bits = max(1, int(max(dg.num_nodes - 1, 1)).bit_length())

    # ------------------------------------------------------------------ one layer
    def __call__(self, plan, state, ctx, stats):
        t0 = time.perf_counter()
        k = state.k
        if self.rows_sent is None:
            self.rows_sent = np.zeros(k, dtype=np.int64)
            self.members_sent = np.zeros((k, self.col.size), dtype=np.int64)
            self.holders = [set() for _ in range(k)]
            self.row_info = [[] for _ in range(k)]     # per minibatch: (first edge, degree) rows
        Q = state.all_nodes()
        distinct = self._register_rows(state, ctx, plan, stats)
        if isinstance(plan.selection, GlobalSelection):
            chosen = prim.evaluate_selection(plan.selection)
        else:
            chosen = self._choose_columns(state, ctx, plan, distinct, stats)
        batch = np.repeat(np.arange(k, dtype=np.int64), chosen.row_lengths())
        state.add_nodes(batch, chosen.indices)
        self._edges(state, Q, plan, ctx, stats)
        stats["layer_s"] = stats.get("layer_s", 0.0) + time.perf_counter() - t0

    # ------------------------------------------------------------------ exchange 1: rows
    def _register_rows(self, state, ctx, plan, stats):
        """Send the rows new to each minibatch; get their degrees, first edge ids and the
        owners' distinct-column reports. Every owner holding rows of a minibatch reports (with
        this layer's fanout), new rows or not. Returns per minibatch the list of reports."""
        dg, col, k = self.dg, self.col, state.k
        n_id, offsets = state._flat_nodes()
        counts = np.diff(offsets)
        s = int(plan.selection.fanout)
        per_dest = [[] for _ in range(col.size)]          # (j, vertices) groups per owner
        for j in range(k):
            new = n_id[offsets[j] + self.rows_sent[j]:offsets[j] + counts[j]]
            owner = dg.placement.owner(new)
            self.holders[j].update(np.unique(owner).tolist())
            for o in sorted(self.holders[j]):
                per_dest[o].append((j, new[owner == o]))
        request, sizes = self._pack_groups(per_dest, ctx, extra=[s])
        received, rcounts = col.alltoallv(request, sizes)
        reply, reply_sizes = self._serve_rows(received, rcounts)
        answer, _ = col.alltoallv(reply, reply_sizes)
        report = self._read_rows(answer, per_dest, state)
        stats["frontier"] += int(sum(len(v) for groups in per_dest for _, v in groups))
        stats["distinct_ids"] = stats.get("distinct_ids", 0) + int(
            sum(r.size for rs in report for r in rs if r is not None))
        self.rows_sent = counts.copy()
        return report

    def _pack_groups(self, per_dest, ctx, extra=()):
        parts = []
        for groups in per_dest:
            head = [len(groups), *extra]
            for j, ids in groups:
                head += [int(ctx.batch_ids[j]), ids.size]
            body = [ids for _, ids in groups]
            parts.append(np.concatenate([np.array(head, dtype=np.int64)] + body)
                         if body else np.array(head, dtype=np.int64))
        return np.concatenate(parts), np.array([p.size for p in parts], dtype=np.int64)

    @staticmethod
    def _groups(received, rcounts, extra=0):
        """``[(batch id, ids)]`` per source and the extra header words."""
        out, pos = [], 0
        for count in rcounts:
            chunk = received[pos:pos + int(count)]
            pos += int(count)
            g = int(chunk[0])
            head = chunk[1:1 + extra]
            meta = chunk[1 + extra:1 + extra + 2 * g].reshape(g, 2)
            at = 1 + extra + 2 * g
            groups = []
            for bid, size in meta:
                groups.append((int(bid), chunk[at:at + int(size)]))
                at += int(size)
            out.append((groups, head))
        return out

    def _serve_rows(self, received, rcounts):
        dg = self.dg
        parts = []
        for source, (groups, head) in enumerate(self._groups(received, rcounts, extra=1)):
            s = int(head[0]) if head.size else 0
            words, reports = [], []
            for bid, ids in groups:         # ranks may sample the same minibatch: per source
                entry = self.owners.setdefault((source, bid),
                                               {"rows": [], "members": np.zeros(0, np.int64)})
                entry["rows"].append(ids)
                local = dg.local_rows(ids)
                degree = dg.indptr[local + 1] - dg.indptr[local]
                words.append((dg.first_edges(local) << self.deg_bits) | degree)
                reports.append(self._distinct(np.concatenate(entry["rows"]), s))
            head_out = np.array([r.size if r is not None else -1 for r in reports], dtype=np.int64)
            body = [w for w in words] + [r for r in reports if r is not None]
            parts.append(np.concatenate([head_out] + body) if body else head_out)
        return np.concatenate(parts), np.array([p.size for p in parts], dtype=np.int64)

    def _distinct(self, rows, s):
        """The distinct columns of ``rows`` (ascending) if at most ``s`` (any number when
        ``s < 0``: every column is chosen), else ``None``."""
        dg = self.dg
        local = dg.local_rows(rows)
        first, degree = dg.indptr[local], dg.indptr[local + 1] - dg.indptr[local]
        offset, seg = prim.segment_arange(degree)
        cols = dg.indices[first[seg] + offset]
        if s < 0:
            return np.unique(cols)
        seen, step = cols[:0], 4 * s + 4          # stop as soon as more than s came up
        for start in range(0, cols.size, step):
            seen = np.union1d(seen, cols[start:start + step])
            if seen.size > s:
                return None
        return seen

    def _read_rows(self, answer, per_dest, state):
        """Record each new row's (first edge, degree); return the reports per minibatch."""
        k = state.k
        reports = [[] for _ in range(k)]
        pos = 0
        mask = np.int64((1 << self.deg_bits) - 1)
        for o, groups in enumerate(per_dest):
            g = len(groups)
            head = answer[pos:pos + g]
            pos += g
            for j, ids in groups:
                words = answer[pos:pos + ids.size]
                pos += ids.size
                self.row_info[j].append((ids, words >> self.deg_bits, words & mask))
            for (j, _), size in zip(groups, head):
                if size < 0:
                    reports[j].append(None)
                else:
                    reports[j].append(answer[pos:pos + int(size)])
                    pos += int(size)
        return reports

    def _rows_of(self, state, j):
        """``(vertex, first edge, degree)`` of minibatch ``j``'s registered rows, in local
        order."""
        parts = self.row_info[j]
        ids = np.concatenate([p[0] for p in parts])
        first = np.concatenate([p[1] for p in parts])
        degree = np.concatenate([p[2] for p in parts])
        local = state.local_of(np.full(ids.size, j, dtype=np.int64), ids)
        order = np.argsort(local, kind="stable")
        return ids[order], first[order], degree[order]

    # ------------------------------------------------------------------ exchange 2: draws
    def _choose_columns(self, state, ctx, plan, reports, stats):
        """LADIES's columns: every candidate when at most ``s`` (the owners' reports say so),
        else draws of entries until ``s`` distinct came up (the rule of
        :func:`spsample.engine._primitives.sample_columns_by_entries`)."""
        k, s = state.k, int(plan.selection.fanout)
        chosen = [None] * k
        pending = {}
        for j in range(k):
            ids, first, degree = self._rows_of(state, j)
            sets = reports[j]
            if degree.size == 0 or degree.sum() == 0:
                chosen[j] = np.zeros(0, dtype=np.int64)
            elif all(r is not None for r in sets) and (
                    s < 0 or np.unique(np.concatenate(sets)).size <= s):
                chosen[j] = np.unique(np.concatenate(sets)) if sets else np.zeros(0, np.int64)
            else:
                pending[j] = dict(ids=ids, first=first, start=np.cumsum(degree) - degree,
                                  D=int(degree.sum()), seen=[], t=0)
        m = s + s // 4 + 16 if s > 0 else 16
        while True:
            done = self.col.allreduce(np.array([len(pending) == 0], dtype=np.int64), op="min")[0]
            if done:
                break
            self._draw_round(pending, chosen, s, m, ctx, stats)
            m *= 2
        indptr = np.zeros(k + 1, dtype=np.int64)
        np.cumsum([c.size for c in chosen], out=indptr[1:])
        return prim.RowMatrix(indptr, np.concatenate(chosen) if k else np.zeros(0, np.int64))

    def _draw_round(self, pending, chosen, s, m, ctx, stats):
        """One collective round: ``m`` more draws for every pending minibatch."""
        dg, col = self.dg, self.col
        drawn = {}
        edge_ids, row_vertices = [], []
        for j, p in pending.items():
            t = np.arange(p["t"], p["t"] + m, dtype=np.int64)
            u = prim._draws(t, np.int64(ctx.batch_ids[j]), ctx.hop_word, ctx.key)
            E = np.minimum(np.floor(u * float(p["D"])).astype(np.int64), p["D"] - 1)
            row = np.searchsorted(p["start"], E, side="right") - 1
            edge_ids.append(p["first"][row] + (E - p["start"][row]))
            row_vertices.append(p["ids"][row])
            drawn[j] = m
            p["t"] += m
        eids = np.concatenate(edge_ids) if edge_ids else np.zeros(0, dtype=np.int64)
        vertices = np.concatenate(row_vertices) if row_vertices else eids
        order, counts = by_owner(dg.placement.owner(vertices), col.size)
        received, rcounts = col.alltoallv(eids[order], counts)
        columns, _ = col.alltoallv(dg.indices[dg.local_edges(received)], rcounts,
                                   recvcounts=counts)
        got = np.empty(eids.size, dtype=np.int64)
        got[order] = columns
        stats["draws"] = stats.get("draws", 0) + int(eids.size)
        at = 0
        for j in list(pending):
            p = pending[j]
            p["seen"].append(got[at:at + drawn[j]])
            at += drawn[j]
            seen = np.concatenate(p["seen"])
            _, first = np.unique(seen, return_index=True)
            if first.size >= s:
                chosen[j] = np.sort(seen[np.sort(first)[:s]])
                del pending[j]

    # ------------------------------------------------------------------ exchange 3: edges
    def _edges(self, state, Q, plan, ctx, stats):
        """Send each owner holding rows of a minibatch the members it has not seen (all of
        them to an owner whose first rows came at this layer); get each registered row's
        member entries; record the layer."""
        col, k = self.col, state.k
        n_id, offsets = state._flat_nodes()
        counts = np.diff(offsets)
        per_dest = [[] for _ in range(col.size)]
        for j in range(k):
            for o in sorted(self.holders[j]):
                per_dest[o].append((j, n_id[offsets[j] + self.members_sent[j, o]:
                                            offsets[j] + counts[j]]))
                self.members_sent[j, o] = counts[j]
        fastgcn = isinstance(plan.selection, GlobalSelection)
        request, sizes = self._pack_groups(per_dest, ctx)
        received, rcounts = col.alltoallv(request, sizes)
        q = plan.selection.P.q if fastgcn else None
        reply, reply_sizes = self._serve_edges(received, rcounts, q)
        answer, _ = col.alltoallv(reply, reply_sizes)
        self._record_edges(answer, per_dest, state, Q, fastgcn, plan)
        edges = state.hop_edges[state.hop - 1]["dst"].size
        stats["layer_edges"] = stats.get("layer_edges", 0) + int(edges)
        stats["members_sent"] = stats.get("members_sent", 0) + int(
            sum(ids.size for groups in per_dest for _, ids in groups))

    def _serve_edges(self, received, rcounts, q):
        parts = []
        for source, (groups, _) in enumerate(self._groups(received, rcounts)):
            out = []
            for bid, new in groups:
                entry = self.owners[(source, bid)]
                entry["members"] = np.union1d(entry["members"], new)
                rows = np.concatenate(entry["rows"])
                out.append(self._member_entries(rows, entry["members"], q))
            parts.append(np.concatenate(out) if out else np.zeros(0, dtype=np.int64))
        return np.concatenate(parts), np.array([p.size for p in parts], dtype=np.int64)

    def _is_member(self, cols, members):
        """``cols`` in ``members``, through a reused n-sized table (O(entries + members))."""
        if self._table is None:
            self._table = np.zeros(self.dg.num_nodes, dtype=bool)
        self._table[members] = True
        hit = self._table[cols]
        self._table[members] = False
        return hit

    def _member_entries(self, rows, members, q):
        """``[hits per row, then per hit (column << edge_bits | edge id) (, value bits)]``."""
        dg = self.dg
        local = dg.local_rows(rows)
        first = dg.indptr[local]
        degree = dg.indptr[local + 1] - first
        offset, seg = prim.segment_arange(degree)
        e = first[seg] + offset
        cols = dg.indices[e]
        hit = self._is_member(cols, members)
        if dg.weights is not None:
            a = dg.weights[e] * dg.layerwise_scale()
            hit &= a * a > 0
        per_row = np.bincount(seg[hit], minlength=rows.size).astype(np.int64)
        words = (cols[hit] << self.edge_bits) | dg.global_edges(e[hit])
        body = [per_row, words]
        if q is not None:           # FastGCN: the owner values its rows' edges
            a = np.ones(int(hit.sum())) if dg.weights is None else \
                (dg.weights[e[hit]] * dg.layerwise_scale())
            indptr = np.zeros(rows.size + 1, dtype=np.int64)
            np.cumsum(per_row, out=indptr[1:])
            body.append(prim.normalize_rows(a / q[cols[hit]], indptr).view(np.int64))
        return np.concatenate(body)

    def _record_edges(self, answer, per_dest, state, Q, fastgcn, plan):
        """Assemble the layer's edges in (row local order, storage order) and record them."""
        k = state.k
        mask = np.int64((1 << self.edge_bits) - 1)
        per_j = [[] for _ in range(k)]
        pos = 0
        for o, groups in enumerate(per_dest):
            for j, _ in groups:
                rows = np.concatenate([ids for ids, _, _ in self.row_info[j]
                                       if ids.size])
                mine = rows[self.dg.placement.owner(rows) == o]
                per_row = answer[pos:pos + mine.size]
                pos += mine.size
                total = int(per_row.sum())
                words = answer[pos:pos + total]
                pos += total
                values = None
                if fastgcn:
                    values = answer[pos:pos + total].view(np.float64)
                    pos += total
                per_j[j].append((mine, per_row, words >> self.edge_bits, words & mask, values))
        self._add_layer(state, Q, per_j, fastgcn)

    def _add_layer(self, state, Q, per_j, fastgcn):
        batches, dsts, srcs, eids, weights = [], [], [], [], []
        for j, parts in enumerate(per_j):
            if not parts:
                continue
            rows = np.concatenate([p[0] for p in parts])
            per_row = np.concatenate([p[1] for p in parts])
            cols = np.concatenate([p[2] for p in parts])
            edge = np.concatenate([p[3] for p in parts])
            jj = np.full(rows.size, j, dtype=np.int64)
            local = state.local_of(jj, rows)
            order = np.argsort(local, kind="stable")          # rows in local order
            starts = np.cumsum(per_row) - per_row
            off, seg = prim.segment_arange(per_row[order])
            take = starts[order][seg] + off
            row_of_edge = local[order][seg]
            c, ed = cols[take], edge[take]
            src = state.local_of(np.full(c.size, j, dtype=np.int64), c)
            if fastgcn:
                w = np.concatenate([p[4] for p in parts])[take]
            else:                                  # LADIES: 1 / (count of u in B's rows)
                uniq, inverse, count = np.unique(c, return_inverse=True, return_counts=True)
                raw = 1.0 / count[inverse.ravel()].astype(np.float64)
                indptr = np.zeros(rows.size + 1, dtype=np.int64)
                np.cumsum(per_row[order], out=indptr[1:])
                w = prim.normalize_rows(raw, indptr)
            batches.append(np.full(c.size, j, dtype=np.int64))
            dsts.append(row_of_edge)
            srcs.append(src)
            eids.append(ed)
            weights.append(w)
        cat = lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dtype=dt)  # noqa: E731
        state._set_edges(dict(batch=cat(batches, np.int64), dst=cat(dsts, np.int64),
                              src=cat(srcs, np.int64), edge_id=cat(eids, np.int64),
                              weight=cat(weights, np.float64), src_vertex=None,
                              row_id=cat(dsts, np.int64)))
