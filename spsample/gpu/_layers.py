"""The GPU backend of the layer-wise engine: LADIES (weighted and unweighted) and FastGCN run by
the kernels of ``native/device/layerwise.cuh``, on a CUDA device or the host emulator, with
the CPU engine's bits (``native/layerwise.h``; the NumPy oracle ``spsample.engine._primitives``).

Layer ``l`` of the whole bulk (:meth:`LayerWiseDriver._layer`):

1. the rows: every vertex of every minibatch so far (``state.all_nodes()``), and their
   entries, numbered in (row, storage) order; each entry keyed ``j * n + u`` (minibatch,
   column);
2. LADIES: a stable sort of the keys puts each (minibatch, column) segment's entries
   together in the CPU's order, and one thread per segment takes its serial sum of ``a**2``
   (its length, unweighted): ``P_l[j, u]``;
3. the chosen columns: unweighted LADIES draws entries (one thread per minibatch that has more
   than ``s`` columns), weighted LADIES keeps the ``s`` smallest Efraimidis-Spirakis keys by
   stable sorts, FastGCN draws ``s`` times per minibatch; they join ``n_id`` in ascending
   order (the row-wise engine's dedup kernels);
4. the layer's edges: the entries whose column is in the new ``n_id`` (and ``a**2 > 0``),
   valued ``a / P`` and divided by their row's serial sum.
"""

import numpy as np

from .. import native
from .._errors import ArgumentError
from .._validate import fail
from ..engine._minibatch import Bulk, HopEdges
from ._driver import DeviceDriver

__all__ = ["run_layerwise", "LayerWiseDriver", "check_key_range"]


def run_layerwise(lowered, graph, seeds, sizes, batch_ids, seed, epoch, device):
    """Run a layer-wise :class:`~spsample.engine._lowering.Lowered` sampler on ``device``.

    Same arguments and checks as :func:`spsample.engine._native_run.run`; returns a
    :class:`~spsample.Bulk` (``layerwise``: edges carry weights) whose ``n_id`` and edge
    arrays live on the device and whose offsets and counts are NumPy arrays.

    Raises
    ------
    ArgumentError
        Naming ``device`` when ``minibatches * num_nodes`` reaches ``2**63`` (the kernels key
        entries by ``j * n + u`` in int64).
    """
    _, _, seeds, sizes, batch_ids, k0, k1 = native.bulk_args(graph, seeds, sizes, batch_ids,
                                                                 seed, epoch)
    check_key_range(int(sizes.size), graph.num_nodes)
    driver = LayerWiseDriver(lowered.spec, graph, device, sizes, batch_ids, (k0, k1), int(epoch))
    return driver.run(seeds)


def check_key_range(k, n):
    """The kernels key entries ``j * n + u`` (minibatch ``j < k``, column ``u < n``) in int64.

    Raises
    ------
    ArgumentError
        Naming ``device`` when ``k * n`` reaches ``2**63``.
    """
    if k * max(n, 1) >= 2**63:
        fail(ArgumentError, "sample", "device", f"samples layer-wise bulks of fewer than 2**63 / "
             f"num_nodes = {2**63 // max(n, 1)} minibatches", k)


class LayerWiseDriver(DeviceDriver):
    """The launches of one layer-wise bulk (see ``native/device/layerwise.cuh``).

    Parameters
    ----------
    spec : dict
        ``Lowered.spec`` of a layer-wise sampler: ``fanouts`` (layer 1 first) and
        ``column_weights`` (FastGCN's ``(q, cumulative)``, float64 of shape (n,), or None).
    graph : Graph
    device : EmulatedDevice or CupyDevice
    sizes, batch_ids : int64, shape (k,)
    key : (int, int)
        The Philox key words.
    epoch : int
    """

    def __init__(self, spec, graph, device, sizes, batch_ids, key, epoch):
        super().__init__(device, sizes, batch_ids, key, epoch)
        self.fanouts = [int(f) for f in spec["fanouts"]]
        self.n = int(graph.num_nodes)
        up = device.upload
        self.indptr, self.indices = up(native.as_i64(graph.indptr)), up(native.as_i64(graph.indices))
        self.weights = None if graph.weights is None else up(graph.layerwise_weights())
        self.fastgcn = spec["column_weights"] is not None
        self.q = self.cumulative = None
        if self.fastgcn:
            q, cumulative = (native.as_f64(a) for a in spec["column_weights"])
            self.q, self.cumulative = up(q), up(cumulative)
            positive = np.flatnonzero(q > 0)
            self.total = float(cumulative[-1]) if cumulative.size else 0.0
            self.last_positive = int(positive[-1]) if positive.size else -1

    # ---------------------------------------------------------------- the bulk
    def run(self, seeds):
        self.nid = self.dev.upload(np.ascontiguousarray(seeds, dtype=np.int64))
        self.nid_off = self._off(self.sizes)
        counts = [self.sizes.copy()]
        hops = []
        for l, s in enumerate(self.fanouts):
            held = np.diff(self.nid_off)
            hops.append(self._layer(l, s))
            counts.append(np.diff(self.nid_off) - held)
        return Bulk(np.asarray(self.dev.download(self.batch_ids)), self.sizes, self.nid,
                    self.nid_off, np.stack(counts, axis=1), hops, layerwise=True,
                    path=self.dev.name)

    def _layer(self, l, s):
        """Choose layer ``l``'s columns (fanout ``s``), append them, return its HopEdges."""
        rows = self._rows()
        sums = None if self.fastgcn else self._column_sums(rows)
        hw = self.hop_word(l + 1)
        if self.fastgcn:
            chosen = self._choose_fastgcn(s, hw)
        elif self.weights is None:
            chosen = self._choose_by_entries(s, hw, rows, sums)
        else:
            chosen = self._choose_by_keys(s, hw, sums)
        self._append_sorted(chosen)
        return self._edges(rows, sums)

    # ---------------------------------------------------------------- rows and entries
    def _rows(self):
        """Every row of the layer (the minibatches' vertices) and their entries, keyed."""
        N = int(self.nid_off[-1])
        nid_off = self.dev.upload(self.nid_off)
        first, deg, rbatch = self._empty(N), self._empty(N), self._empty(N)
        self._launch("lw_rows", N, N=N, k=self.k, nid=self.nid, nid_off=nid_off,
                     indptr=self.indptr, first=first, deg=deg, rbatch=rbatch)
        ent_off, D = self._dev_off(deg)
        key, eid, erow = self._empty(D), self._empty(D), self._empty(D)
        self._launch("lw_entries", D, D=D, N=N, ent_off=ent_off, first=first, rbatch=rbatch,
                     indices=self.indices, n=self.n, key=key, eid=eid, erow=erow)
        return dict(N=N, D=D, nid_off=self.nid_off, nid_off_d=nid_off, first=first,
                    rbatch=rbatch, ent_off=ent_off, key=key, eid=eid, erow=erow)

    def _column_sums(self, rows):
        """LADIES ``P_l``: one (minibatch, column) segment per distinct key, its serial sum."""
        xp, D = self.xp, rows["D"]
        order = self.dev.stable_argsort(rows["key"])
        ks = rows["key"][order]
        head = xp.ones(D, dtype=bool)
        if D > 1:
            head[1:] = ks[1:] != ks[:-1]
        seg_pos = xp.nonzero(head)[0].astype(xp.int64)
        S = int(seg_pos.size)
        seg_off = xp.concatenate([seg_pos, xp.full(1, D, dtype=xp.int64)])
        psum, seg_of = xp.empty(S, dtype=xp.float64), self._empty(D)
        self._launch("lw_colsum", S, S=S, seg_off=seg_off, order=order, eid=rows["eid"],
                     weights=self.weights, psum=psum, seg_of=seg_of)
        return dict(S=S, key=ks[seg_pos], psum=psum, seg_of=seg_of)

    # ---------------------------------------------------------------- selections
    def _per_batch(self, batch_of):
        """How many of the items (minibatch ``batch_of[i]``, non-decreasing) each minibatch
        has (host, ``k``)."""
        xp = self.xp
        bounds = xp.searchsorted(batch_of, xp.arange(self.k + 1, dtype=xp.int64))
        return np.diff(np.asarray(self.dev.download(bounds), dtype=np.int64))

    def _choose_by_entries(self, s, hw, rows, sums):
        """Unweighted LADIES: every column where there are at most ``s``, else entries drawn
        until ``s`` distinct columns came up (keys ``j * n + u``, unsorted)."""
        xp, seg_key = self.xp, sums["key"]
        if s < 0:
            return seg_key
        seg_batch = seg_key // self.n
        draw = self._per_batch(seg_batch) > s
        keep_all = seg_key[~self.dev.upload(draw)[seg_batch]]
        which = np.flatnonzero(draw).astype(np.int64)
        nd = int(which.size)
        if nd == 0:
            return keep_all
        cap = _set_capacity(s)
        table = xp.zeros(nd * cap, dtype=xp.uint64)
        chosen = self._empty(nd * s)
        self._launch("lw_draw_entries", nd, nd=nd, which=self.dev.upload(which), s=s, hw=hw,
                     k0=self.key[0], k1=self.key[1], batch_ids=self.batch_ids,
                     nid_off=rows["nid_off_d"], ent_off=rows["ent_off"], first=rows["first"],
                     indices=self.indices, n=self.n, set=table, cap=cap, chosen=chosen)
        return xp.concatenate([keep_all, chosen])

    def _choose_by_keys(self, s, hw, sums):
        """Weighted LADIES: every column with ``P > 0`` where there are at most ``s``, else the
        ``s`` smallest (key, column) pairs (keys ``j * n + u``, unsorted)."""
        xp = self.xp
        cand = xp.nonzero(sums["psum"] > 0)[0].astype(xp.int64)
        if s < 0:
            return sums["key"][cand]
        cand_batch = sums["key"][cand] // self.n
        draw = self.dev.upload(self._per_batch(cand_batch) > s)[cand_batch]
        keep_all = sums["key"][cand[~draw]]
        keyed, keyed_batch = cand[draw], cand_batch[draw]
        M = int(keyed.size)
        if M == 0:
            return keep_all
        bits = self._empty(M)
        self._launch("lw_keys", M, M=M, cand=keyed, seg_key=sums["key"], psum=sums["psum"],
                     n=self.n, hw=hw, k0=self.key[0], k1=self.key[1], batch_ids=self.batch_ids,
                     bits=bits)
        by_key = self.dev.stable_argsort(bits)        # ties: columns ascending (cand order)
        order = by_key[self.dev.stable_argsort(keyed_batch[by_key])]
        batch_sorted = keyed_batch[order]
        rank = xp.arange(M, dtype=xp.int64) - xp.searchsorted(batch_sorted, batch_sorted)
        return xp.concatenate([keep_all, sums["key"][keyed[order[rank < s]]]])

    def _choose_fastgcn(self, s, hw):
        """FastGCN: ``s`` draws per minibatch (keys ``j * n + u``, with repeats)."""
        if self.n == 0 or not self.total > 0:
            return self._empty(0)
        M = self.k * s
        keys = self._empty(M)
        self._launch("lw_fastgcn", M, M=M, s=s, hw=hw, k0=self.key[0], k1=self.key[1],
                     batch_ids=self.batch_ids, cumulative=self.cumulative, n=self.n,
                     last_positive=self.last_positive, total=self.total, keys=keys)
        return keys

    def _append_sorted(self, chosen):
        """Append each minibatch's chosen columns (keys ``j * n + u``) not already in its
        ``n_id``, ascending."""
        keys = self.xp.unique(chosen)
        items = keys % self.n if keys.size else keys
        self._append_unique(items, self._off(self._per_batch(keys // max(self.n, 1))))

    # ---------------------------------------------------------------- edges
    def _edges(self, rows, sums):
        """The layer's edges: entries of its rows whose column is in the new ``n_id``."""
        xp, D, N = self.xp, rows["D"], rows["N"]
        slots, tab_off = self._member_table()
        hit, lu = self._empty(D), self._empty(D)
        self._launch("lw_hits", D, D=D, key=rows["key"], eid=rows["eid"], n=self.n,
                     weights=self.weights, tab_off=tab_off, slots=slots, hit=hit, lu=lu)
        hit_off, E = self._dev_off(hit)
        dst, src, edge, vrow = (self._empty(E) for _ in range(4))
        value = xp.empty(E, dtype=xp.float64)
        psum, seg_of = (None, None) if sums is None else (sums["psum"], sums["seg_of"])
        self._launch("lw_edges", D, D=D, hit_off=hit_off, erow=rows["erow"], eid=rows["eid"],
                     key=rows["key"], lu=lu, rbatch=rows["rbatch"], nid_off=rows["nid_off_d"],
                     n=self.n, weights=self.weights, fastgcn=int(self.fastgcn), q=self.q,
                     psum=psum, seg_of=seg_of, dst=dst, src=src, edge=edge, value=value,
                     vrow=vrow)
        row_edges = hit_off[rows["ent_off"]]
        total = xp.empty(N, dtype=xp.float64)
        self._launch("lw_row_sums", N, N=N, row_edges=row_edges, value=value, total=total)
        self._launch("lw_normalise", E, E=E, vrow=vrow, total=total, value=value)
        off = row_edges[self.dev.upload(rows["nid_off"])]
        return HopEdges(dst, src, edge, value, np.asarray(self.dev.download(off), dtype=np.int64))


def _set_capacity(s):
    """Slots of the set of distinct columns one minibatch's draws fill (native/device/
    rules.cuh's set_insert: a power of two, >= 2 s, so probing ends)."""
    c = 16
    while c < 2 * s:
        c <<= 1
    return c
