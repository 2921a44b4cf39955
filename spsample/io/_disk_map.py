"""The column ids (and weights) of a contiguous spsample file as a read-only memory map: how
the out-of-core graph's row-local hops read warm data (:mod:`spsample.io._disk_sampling`).

Requests are taken **window by window**: a window holds the requests whose rows start in one
span of entries, so the pages it maps lie in that span plus the longest row and a region on
either side. The native row sampler reads the rows in place (only the entries it draws, for
uniform rules) and a window's pages are released with ``madvise(MADV_DONTNEED)`` once it is
sampled: they leave the process's resident set but stay in the page cache. A sampler that
lowers whole runs every hop in one call of the windowed kernel (``native/windowed.h``, which
releases the windows itself); others run hop by hop (``select_requests(windows=...)``).

Every region of the file is checked before the kernels read it (:func:`check_all` before a
windowed bulk, the regions a window touches before a hop by hop one;
:func:`spsample.io._entries.entry_problems`: ids in ``[0, n)``, weights finite and non-negative,
rows strictly increasing), once: checked regions stay trusted while the graph is open, and the
sampled ids are checked again after each call. The map is advised ``MADV_HUGEPAGE``: data it
reads from the device comes into the page cache in 2 MiB folios, which a window then maps (and
releases) 2 MiB at a time. (``posix_fadvise(WILLNEED)`` read-ahead was tried and dropped: it
reads at most one read-ahead window a call, in small folios that cost every later window a
fault per 64 KiB.)

The file must not change while it is mapped: a file that shrinks between two calls gives a
:class:`~spsample.DatasetError`; one truncated while a call reads it ends the process with
``SIGBUS``, as for any memory map.
"""

import mmap
import os

import numpy as np

from ..engine import _primitives as prim
from ._entries import NO_PROBLEM, entry_problems

__all__ = ["MappedColumns", "can_map", "MAX_REGION_ENTRIES", "RELEASE_BLOCK"]

#: Entries of the largest region checked at once (2 MiB of int64 column ids).
MAX_REGION_ENTRIES = 1 << 18
#: Pages are released in aligned blocks of this size: a fault maps the page cache's neighbours
#: too (fault-around, 64 KiB; a 2 MiB folio mapped whole), beyond the entries read.
RELEASE_BLOCK = max(mmap.PAGESIZE, 2 << 20)
_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", None)
_NATIVE = {"indices": np.dtype(np.int64), "weights": np.dtype(np.float64)}


def can_map(sources):
    """Whether every array of ``sources`` (``DiskGraph._sources``) is contiguous in the file,
    stored as native int64 / float64 and aligned, so a memory map can serve it as it is."""
    return all(src.offset is not None and src.dtype == _NATIVE[name]
               and src.offset % src.dtype.itemsize == 0 for name, src in sources.items())


class MappedColumns:
    """The memory map of a :class:`~spsample.DiskGraph`'s file and what it has checked.

    Parameters
    ----------
    dg : DiskGraph
    span : int
        Entries whose rows one window may start in; the window's pages then lie in ``span +
        dg.max_degree + 2 * region`` entries.
    region : int
        Entries checked at a time (a power of two).

    Attributes
    ----------
    checked : bool ndarray
        Per region: already checked.
    stats : dict
        ``regions_checked`` since creation.
    """

    def __init__(self, dg, span, region):
        self.dg, self.span, self.region = dg, int(span), int(region)
        self.checked = np.zeros(-(-dg.num_edges // self.region), dtype=bool)
        self._map = self._arrays = None
        self.stats = {"regions_checked": 0}

    # ------------------------------------------------------------------ the map
    def arrays(self):
        """``(indices, weights or None)``: read-only views of the map (made on first use)."""
        if self._arrays is None:
            self.check_size()
            self._map = mmap.mmap(self.dg._fd, 0, access=mmap.ACCESS_READ)
            if _HUGEPAGE is not None:          # data read through the map: 2 MiB folios
                self._map.madvise(_HUGEPAGE)
            self._arrays = tuple(
                None if src is None else np.frombuffer(
                    self._map, dtype=src.dtype, count=src.size, offset=src.offset)
                for src in (self.dg._sources.get("indices"), self.dg._sources.get("weights")))
        return self._arrays

    def check_size(self):
        """A :class:`~spsample.DatasetError` unless the file still holds every mapped array."""
        size = os.fstat(self.dg._fd).st_size
        for src in self.dg._sources.values():
            if src.size and src.offset + src.size * src.dtype.itemsize > size:
                src.fail(0, src.size, "the file ends before the dataset does (truncated?)")

    def close(self):
        """Unmap (the views a caller still holds keep their pages until dropped)."""
        self._arrays = None
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:          # a view outlives the graph: unmapped when dropped
                pass
            self._map = None

    def view(self):
        """The whole map as uint8 (what the native kernels release pages of)."""
        self.arrays()
        return np.frombuffer(self._map, dtype=np.uint8)

    # ------------------------------------------------------------------ windows
    def windows(self, start, end, threads):
        """Requests of rows ``[start, end)`` grouped in windows of ``span / threads`` entries
        (``threads`` windows may be mapped at once): ``(order, bounds, lo, hi)``, window ``i``
        holding the requests ``order[bounds[i]:bounds[i + 1]]`` (frontier order inside each),
        its rows within the regions of entries ``[lo[i], hi[i])``."""
        win = start // max(1, self.span // max(1, threads))
        if win.size and int(win.max()) > 4 * win.size + 1024:    # tiny spans: number them
            _, win = np.unique(win, return_inverse=True)
        count = np.bincount(win)
        order = np.argsort(win.astype(np.uint16) if count.size <= 1 << 16 else win,
                           kind="stable")
        bounds = np.r_[0, np.cumsum(count[count > 0])]
        first = bounds[:-1]
        lo = np.minimum.reduceat(start[order], first) // self.region * self.region
        hi = -(-np.maximum.reduceat(end[order], first) // self.region) * self.region
        return order, bounds, lo, np.minimum(hi, self.dg.num_edges)

    def release_ranges(self, lo, hi):
        """Per window, the byte ranges of entries ``[lo, hi)`` of every mapped array: int64,
        shape ``(windows, 2 * arrays)`` (for ``select_requests(windows=...)``)."""
        out = [np.stack(self._bytes(src, lo, hi), axis=1) for src in self.dg._sources.values()]
        return np.ascontiguousarray(np.concatenate(out, axis=1), dtype=np.int64)

    def check_windows(self, start, end, order, bounds):
        """Check the regions each window touches for the first time, window after window."""
        if self.checked.all():
            return
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            todo = self.touched(start[order[a:b]], end[order[a:b]]) & ~self.checked
            if todo.any():
                self.check(todo)

    def touched(self, start, end):
        """The regions holding entries of the rows ``[start, end)``, as a bool mask."""
        live = end > start
        first, last = start[live] // self.region, (end[live] - 1) // self.region
        mask = np.zeros(self.checked.size, dtype=bool)
        mask[first] = True
        mask[last] = True
        wide = np.flatnonzero(last - first > 1)
        if wide.size:
            offset, seg = prim.segment_arange(last[wide] - first[wide] + 1)
            mask[first[wide][seg] + offset] = True
        return mask

    def check_all(self):
        """Check every region not checked yet, a window's worth at a time."""
        step = max(1, self.span // self.region)
        for a in range(0, self.checked.size, step):
            if not self.checked[a:a + step].all():
                todo = np.zeros_like(self.checked)
                todo[a:a + step] = ~self.checked[a:a + step]
                self.check(todo)

    def check(self, todo):
        """Check the regions ``todo`` (bool mask, none checked yet), then release their pages
        (and the entry before each run of them, compared with the run's first); raise the
        graph's :class:`~spsample.DatasetError` for the first problem found."""
        runs = _runs(todo)
        if not runs:
            return
        idx, w = self.arrays()
        starts = np.array([lo for lo, _ in runs], dtype=np.int64) * self.region
        ends = np.minimum(np.array([hi for _, hi in runs], dtype=np.int64) * self.region,
                          self.dg.num_edges)
        try:
            found = entry_problems(self.dg.indptr, idx, w, starts=starts, ends=ends)
            if found != NO_PROBLEM:
                self.dg._refuse(found, int(starts[0]), int(ends[-1]), idx, w)
        finally:
            for lo, hi in zip(starts.tolist(), ends.tolist()):
                self.release(max(0, lo - 1), hi)
        self.checked |= todo
        self.stats["regions_checked"] += int(todo.sum())

    def release(self, lo, hi):
        """Drop the pages of entries ``[lo, hi)`` from the process (not from the page cache)."""
        if self._map is None or hi <= lo:
            return
        for src in self.dg._sources.values():
            a, b = (int(x) for x in self._bytes(src, lo, hi))
            self._map.madvise(mmap.MADV_DONTNEED, a, b - a)

    def _bytes(self, src, lo, hi):
        """The byte ranges of entries ``[lo, hi)`` of ``src`` (scalars or arrays), widened to
        whole release blocks (:data:`RELEASE_BLOCK`), inside the map."""
        block = RELEASE_BLOCK
        a = (src.offset + np.asarray(lo) * src.dtype.itemsize) // block * block
        b = src.offset + np.minimum(hi, src.size) * src.dtype.itemsize
        end = len(self._map) if self._map is not None else os.fstat(self.dg._fd).st_size
        return a, np.minimum(-(-b // block) * block, end)


def _runs(mask):
    """``[(lo, hi), ...]``: the runs of consecutive True entries of ``mask``."""
    if not mask.any():
        return []
    edges = np.flatnonzero(np.diff(np.r_[0, mask.view(np.int8), 0]))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))
