"""What the row-wise and layer-wise device drivers share (:class:`DeviceDriver`): kernel
launches with their argument structs, prefix sums, and each minibatch's ``n_id`` on the device
with its deduplicated growth (``native/device/dedup.cuh``). The row-wise driver is in
:mod:`._device`, the layer-wise one in :mod:`._layers`; both build on this module alone.
"""

import numpy as np

from ._args import pack_args

__all__ = ["DeviceDriver"]


class DeviceDriver:
    """What the row-wise and layer-wise drivers share: launches, prefix sums, and each
    minibatch's ``n_id`` on the device with its deduplicated growth.

    State: ``nid`` (device; each minibatch's ``n_id``, minibatch after minibatch) with
    ``nid_off`` (host, ``k + 1``).
    """

    def __init__(self, device, sizes, batch_ids, key, epoch):
        self.dev, self.xp = device, device.xp
        self.k = int(sizes.size)
        self.key, self.epoch = key, epoch
        self.batch_ids = device.upload(np.ascontiguousarray(batch_ids, dtype=np.int64))
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self._live = []

    def hop_word(self, h):
        """Counter word 2 of hop ``h``'s streams (``spsample._rng.hop_word``)."""
        return ((self.epoch & 0xFFFFFF) << 8) | (h & 255)

    # ---------------------------------------------------------------- small helpers
    def _off(self, counts):
        out = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=out[1:])
        return out

    def _dev_off(self, counts):
        """Exclusive prefix sum of a device int64 array (length + 1) and its total."""
        xp = self.xp
        out = xp.zeros(int(counts.size) + 1, dtype=xp.int64)
        if counts.size:
            xp.cumsum(counts, out=out[1:])
        return out, int(out[-1])

    def _empty(self, n):
        return self.xp.empty(int(n), dtype=self.xp.int64)

    def _p(self, arr):
        """The address of ``arr`` for an argument array; ``arr`` is kept alive until the next
        launch has been issued (a temporary would otherwise be freed before the kernel runs)."""
        self._live.append(arr)
        return self.dev.ptr(arr)

    def _launch(self, kernel, items, /, **fields):
        """Launch ``kernel`` over ``items`` items with its argument struct filled by name
        (:func:`spsample.gpu._args.pack_args`: arrays for pointer fields, numbers otherwise)."""
        try:
            self.dev.launch(kernel, items, pack_args(kernel, self._p, **fields))
        finally:
            self._live = []

    # ---------------------------------------------------------------- extraction
    def _append_unique(self, items, item_off):
        """Local ids of ``items`` (device; minibatch j's are ``item_off[j]:item_off[j + 1]``),
        appending the vertices new to their minibatch in first-occurrence order."""
        xp, k = self.xp, self.k
        held = np.diff(self.nid_off)
        per = np.diff(item_off)
        caps = np.array([_capacity(int(a) + int(b)) for a, b in zip(held, per)], dtype=np.int64)
        tab_off = self._off(caps)
        slots = xp.zeros(int(tab_off[-1]), dtype=xp.uint64)
        I, N = int(item_off[-1]), int(self.nid_off[-1])
        nid_off_d, item_off_d = self.dev.upload(self.nid_off), self.dev.upload(item_off)
        tab_off_d = self.dev.upload(tab_off)
        self._launch("table_nodes", N, N=N, k=k, nid=self.nid, nid_off=nid_off_d,
                     tab_off=tab_off_d, slots=slots)
        item = dict(I=I, k=k, items=items, item_off=item_off_d, tab_off=tab_off_d, slots=slots)
        self._launch("table_items", I, **item)
        flags = self._empty(I)
        self._launch("first_flags", I, **item, flags=flags)
        rank, total = self._dev_off(flags)
        local, newv = self._empty(I), self._empty(total)
        self._launch("assign", I, **item, rank=rank, base=self.dev.upload(held), local=local,
                     newv=newv)
        added = np.diff(np.asarray(self.dev.download(rank[item_off_d]), dtype=np.int64))
        self._merge(newv, added)
        return local

    def _append_all(self, items, item_off):
        """Local ids of ``items`` appended without deduplication (one new vertex each)."""
        xp = self.xp
        held = np.diff(self.nid_off)
        per = np.diff(item_off)
        shift = self.dev.upload(np.repeat(held - item_off[:-1], per))
        local = shift + xp.arange(int(item_off[-1]), dtype=xp.int64)
        self._merge(items, per)
        return local

    def _merge(self, add, added):
        """Append ``added[j]`` vertices of ``add`` (device, minibatch after minibatch) to each
        minibatch's ``n_id``."""
        new_off = self._off(np.diff(self.nid_off) + added)
        N2 = int(new_off[-1])
        out = self._empty(N2)
        self._launch("merge_nodes", N2, N2=N2, k=self.k, out_off=self.dev.upload(new_off),
                     nid=self.nid, nid_off=self.dev.upload(self.nid_off), add=add,
                     add_off=self.dev.upload(self._off(added)), out=out)
        self.nid, self.nid_off = out, new_off

    def _member_table(self):
        """Per-minibatch dedup tables of the current ``n_id``, valued by local id:
        ``(slots, tab_off)`` (device; ``native/device/dedup.cuh``)."""
        N = int(self.nid_off[-1])
        tab_off = self._off([_capacity(int(h)) for h in np.diff(self.nid_off)])
        slots = self.xp.zeros(int(tab_off[-1]), dtype=self.xp.uint64)
        tab_off = self.dev.upload(tab_off)
        self._launch("table_nodes", N, N=N, k=self.k, nid=self.nid,
                     nid_off=self.dev.upload(self.nid_off), tab_off=tab_off, slots=slots)
        return slots, tab_off


def _capacity(entries):
    """native/device/dedup.cuh's dedup_capacity."""
    c = 16
    while c < 2 * entries:
        c <<= 1
    return c
