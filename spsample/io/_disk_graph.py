"""``DiskGraph``: the adjacency of an spsample HDF5 file, sampled without reading it whole.

``spsample.load(path, mmap=True, memory_budget="1GB")`` opens the graph this way. What stays in
memory, all of it inside ``memory_budget``:

* the row pointers (``8 (n + 1)`` bytes), read and checked when the file is opened;
* a :class:`BlockCache` of fixed-size blocks of ``/graph/indices`` (and ``/graph/weights``),
  least recently used first out, filled by ``pread`` from a contiguous dataset or through
  h5py from a chunked one (blocks aligned to its chunks) -- or, in the same room, the windows
  of a read-only memory map of a contiguous file (:mod:`spsample.io._disk_map`: the pages a
  window maps are released once it is sampled, so they leave the resident set);
* room for the longest row (a row that spans blocks is assembled there) and for the rows that
  a hop which is not row-local needs at once (see :mod:`spsample.io._disk_sampling`).

Sampling (``spsample.sample(disk_graph, ...)``) runs the engine's hop loop with every hop's
rows read in position order, through the map or through the cache (a background thread
reading the next blocks while the current one is sampled); results are bit-identical to the
in-memory graph's.

Every block is checked when read, and every region of the map the first time a window touches
it (column ids in ``[0, n)``, weights finite and non-negative, rows strictly increasing); a
file that shrinks under the reader gives a :class:`~spsample.DatasetError` naming the file and
the array.
"""

import collections
import os
import queue
import threading

import numpy as np

from ._disk_map import MAX_REGION_ENTRIES, MappedColumns, can_map
from ._entries import NO_PROBLEM, entry_problems
from .._errors import ArgumentError, ArgumentTypeError, DatasetError
from ..graph._graph import frozen_array
from .._validate import (
    MAX_SIZE, as_index_array, as_int, check_range, fail, format_bytes, parse_size,
)
from ..graph._checks import GraphFile
from ._h5 import as_path, open_file
from ._graph_read import read_indptr
from .. import native as _native
from ..engine._lazy import NotLowerable
from ..graph._weights import layerwise_scale
from ._disk_sampling import sample_on_disk

__all__ = ["DiskGraph", "BlockCache", "as_budget", "MAX_BLOCK_BYTES"]

#: The largest cache block (bytes of column ids); smaller budgets get smaller blocks.
MAX_BLOCK_BYTES = 4 << 20
_MIN_BLOCK_ENTRIES = 8
_MIN_BLOCKS = 3
_READ_AHEAD = 4


def as_budget(where, value):
    """``memory_budget`` in bytes: an int in ``[1, 2**63 - 1]``, or a string such as ``"1GB"``,
    ``"512MiB"`` (:func:`spsample._validate.parse_size`).

    Raises
    ------
    ArgumentTypeError, ArgumentError
        Naming ``memory_budget``: not an int or str; zero, negative, ``inf``, ``nan``, beyond
        ``2**63 - 1`` bytes, or a unit other than K, M, G, T.
    """
    if isinstance(value, str):
        return parse_size(where, "memory_budget", value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        fail(ArgumentTypeError, where, "memory_budget", "must be an int (bytes) or a str such "
             "as '1GB'", value)
    if value < 1:
        fail(ArgumentError, where, "memory_budget", "must be positive", value)
    if value > MAX_SIZE:
        fail(ArgumentError, where, "memory_budget", "must be at most 2**63 - 1 bytes", value)
    return int(value)


class _Source:
    """One 1-D array of the file: ``read(start, stop, out)`` fills ``out`` (converted to its
    dtype) with entries ``[start, stop)``, by ``pread`` when the dataset is contiguous and
    uncompressed, else through h5py (whole chunks, decompressed)."""

    def __init__(self, path, dset, fd):
        self.path, self.name, self.fd = path, dset.name, fd
        self.dtype, self.size = dset.dtype, int(dset.shape[0])
        self.chunk = int(dset.chunks[0]) if dset.chunks else 1
        offset = dset.id.get_offset() if dset.chunks is None else None
        self.offset = None if offset is None else int(offset)
        self.dset = dset
        if self.offset is not None and self.size:
            end = self.offset + self.size * self.dtype.itemsize
            if end > os.fstat(fd).st_size:
                self.fail(0, self.size, "the file ends before the dataset does (truncated?)")

    def read(self, start, stop, out):
        if self.offset is None:
            self._read_h5(start, stop, out)
        elif out.dtype == self.dtype:
            self._pread(start, stop, out.view(np.uint8))
        else:
            raw = np.empty(stop - start, dtype=self.dtype)
            self._pread(start, stop, raw.view(np.uint8))
            out[:] = raw

    def _pread(self, start, stop, buf):
        pos, want = self.offset + start * self.dtype.itemsize, buf.size
        done = 0
        while done < want:
            try:
                got = os.preadv(self.fd, [memoryview(buf[done:])], pos + done)
            except OSError as exc:
                self.fail(start, stop, f"{exc}")
            if got <= 0:
                self.fail(start, stop, "the file ends before the dataset does (truncated?)")
            done += got

    def _read_h5(self, start, stop, out):
        try:
            raw = self.dset[start:stop]
        except (OSError, ValueError, TypeError, RuntimeError) as exc:
            self.fail(start, stop, f"{type(exc).__name__}: {exc}")
        out[:] = raw

    def fail(self, start, stop, problem):
        raise DatasetError(f"DiskGraph: cannot read {self.name}[{start}:{stop}] of "
                           f"{self.path!r}: {problem}")


class _Slot:
    """One cache slot: a block's column ids (and weights), pinned while in use."""

    __slots__ = ("block", "indices", "weights", "pins", "ready", "error")

    def __init__(self, entries, weighted):
        self.block = -1
        self.indices = np.empty(entries, dtype=np.int64)
        self.weights = np.empty(entries, dtype=np.float64) if weighted else None
        self.pins = 0
        self.ready = threading.Event()
        self.error = None


class BlockCache:
    """A bounded, reusable cache of fixed-size blocks of a graph's column ids (and weights).

    Block ``b`` holds entries ``[b * block_entries, (b + 1) * block_entries)`` (the last one
    fewer). At most ``capacity`` blocks are held; the least recently used one that no reader
    holds is reused for the next miss.

    Parameters
    ----------
    graph : DiskGraph
        Whose sources are read and whose checks each block passes.
    block_entries : int
    capacity : int
        ``>= 3`` (the block in use, one being read, one read ahead).

    Attributes
    ----------
    stats : dict
        ``hits``, ``misses``, ``bytes_read`` since creation.
    """

    def __init__(self, graph, block_entries, capacity):
        self.graph, self.block_entries, self.capacity = graph, int(block_entries), int(capacity)
        self._slots = collections.OrderedDict()      # block -> _Slot, least recent first
        self._free = []
        self._lock = threading.Lock()
        self._verified = set()
        self.stats = {"hits": 0, "misses": 0, "bytes_read": 0}

    @property
    def num_blocks(self):
        return -(-self.graph.num_edges // self.block_entries)

    def block_range(self, b):
        """Entries ``[start, stop)`` of block ``b``."""
        start = b * self.block_entries
        return start, min(start + self.block_entries, self.graph.num_edges)

    def stream(self, blocks):
        """Yield ``(block, indices, weights)`` for each of the ascending ``blocks``, read by a
        background thread up to a few blocks ahead; each block's arrays stay valid until the
        next one is asked for."""
        blocks = [int(b) for b in blocks]
        if not blocks:
            return
        depth = max(1, min(_READ_AHEAD, self.capacity - 2))   # + the one in use + one in hand
        ahead = queue.Queue(maxsize=depth)
        stop = threading.Event()
        worker = threading.Thread(target=self._read_ahead, args=(blocks, ahead, stop),
                                  daemon=True)
        worker.start()
        current = None
        try:
            for _ in blocks:
                if current is not None:       # released before the next is taken: the
                    self._release(current)    # reader may then hold depth + 2 blocks only
                    current = None
                slot = ahead.get()
                current = slot
                if isinstance(slot, BaseException):
                    current = None
                    raise slot
                n = self.block_range(slot.block)[1] - self.block_range(slot.block)[0]
                yield slot.block, slot.indices[:n], \
                    None if slot.weights is None else slot.weights[:n]
        finally:
            stop.set()
            if current is not None:
                self._release(current)
            self._drain(ahead, worker)

    def _read_ahead(self, blocks, ahead, stop):
        for b in blocks:
            if stop.is_set():
                return
            try:
                item = self._acquire(b)
            except BaseException as exc:       # handed to the consumer, raised there
                item = exc
            while not stop.is_set():
                try:
                    ahead.put(item, timeout=0.05)
                    break
                except queue.Full:
                    continue
            else:
                if not isinstance(item, BaseException):
                    self._release(item)
                return
            if isinstance(item, BaseException):
                return

    def _drain(self, ahead, worker):
        while worker.is_alive() or not ahead.empty():
            try:
                item = ahead.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(item, _Slot):
                self._release(item)
        worker.join()

    def _acquire(self, b):
        with self._lock:
            slot = self._slots.get(b)
            if slot is not None:
                self._slots.move_to_end(b)
                slot.pins += 1
                self.stats["hits"] += 1
                return slot
            slot = self._evict()
            slot.block, slot.pins = b, 1
            self._slots[b] = slot
            self.stats["misses"] += 1
        try:
            self._load(slot)
        except BaseException:
            with self._lock:
                del self._slots[b]
                slot.pins, slot.block = 0, -1
                self._free.append(slot)
            raise
        return slot

    def _evict(self):
        if self._free:
            return self._free.pop()
        if len(self._slots) < self.capacity:
            return _Slot(self.block_entries, self.graph.is_weighted)
        for b, slot in self._slots.items():
            if slot.pins == 0:
                del self._slots[b]
                return slot
        raise RuntimeError("BlockCache: every block is in use (capacity too small)")

    def _release(self, slot):
        with self._lock:
            slot.pins -= 1

    def clear(self):
        """Free every block no reader holds (their room serves the graph's memory map)."""
        with self._lock:
            self._free.clear()
            for b in [b for b, slot in self._slots.items() if slot.pins == 0]:
                del self._slots[b]

    def _load(self, slot):
        start, stop = self.block_range(slot.block)
        n = stop - start
        self.graph._sources["indices"].read(start, stop, slot.indices[:n])
        nbytes = n * self.graph._sources["indices"].dtype.itemsize
        if slot.weights is not None:
            self.graph._sources["weights"].read(start, stop, slot.weights[:n])
            nbytes += n * self.graph._sources["weights"].dtype.itemsize
        self.graph._check_block(slot.block, start, stop, slot, slot.block not in self._verified)
        self._verified.add(slot.block)
        self.stats["bytes_read"] += nbytes


class _DiskArray:
    """``graph.indices`` / ``graph.weights`` of a :class:`DiskGraph`: the array stays on disk;
    ``arr[a:b]`` reads a range (checked like every block)."""

    def __init__(self, graph, name):
        self._graph, self._name = graph, name
        source = graph._sources[name]
        self.shape, self.size = (source.size,), source.size
        self.dtype = np.dtype(np.int64 if name == "indices" else np.float64)
        self.ndim = 1

    def __len__(self):
        return self.size

    def __getitem__(self, key):
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError(f"DiskGraph.{self._name} is on disk: read contiguous ranges "
                            "(arr[a:b]) or sample through spsample.sample")
        start, stop, _ = key.indices(self.size)
        return self._graph.read_entries(start, max(start, stop))[self._name]

    def __repr__(self):
        return f"<on-disk {self._name} of {self.size} entries>"


def _max_step(indptr, piece=1 << 20):
    """``max(diff(indptr))`` (0 when empty), a piece at a time (no n-sized temporary)."""
    top = 0
    for a in range(0, indptr.size - 1, piece):
        top = max(top, int(np.diff(indptr[a:a + piece + 1]).max()))
    return top


class DiskGraph:
    """An spsample HDF5 graph kept on disk: row pointers in memory, column ids (and weights)
    read on demand through a bounded :class:`BlockCache`.

    Open one with ``spsample.load(path, mmap=True, memory_budget=...)`` (or
    :meth:`open`); sample it with ``spsample.sample(graph, seeds, ...)``: every sampler runs
    (built-in or user-written), with the same results as on the in-memory graph, bit for bit.

    Implements :class:`~spsample.graph._source.GraphSource`: its whole-graph quantities
    (:attr:`max_degree`, :meth:`layerwise_scale`, :meth:`column_weights`) are computed from
    the file in CSR order, the in-memory graph's bit for bit; its rows reach the engine
    through row sources (read by a :class:`~spsample.graph._source.RowFetcher`, or scanned
    as :class:`~spsample.graph._source.RowSource` windows).

    Attributes
    ----------
    path : str
    num_nodes, num_edges : int
    indptr : int64, shape (num_nodes + 1,)
        In memory, read-only.
    max_degree : int
        The longest row (read from ``indptr`` when the graph opens).
    indices, weights : on-disk arrays (``weights`` is ``None`` when unweighted); ``a[i:j]``
        reads a range.
    memory_budget : int
        Bytes for the row pointers, the block cache and the rows a hop holds at once.
    block_entries : int
        Entries per cache block.
    cache : BlockCache
    map : MappedColumns or None
        The memory map row-local hops sample through (files whose arrays are contiguous,
        native int64 / float64); ``None`` for others.
    map_span, map_region : int
        Entries whose rows a map window starts in (divided among the threads), and entries
        checked at a time.
    last_stats : dict
        Counters of the latest :meth:`sample` call (hop modes, blocks read, bytes, map
        windows, times).

    Examples
    --------
    >>> import spsample
    >>> ds = spsample.load(spsample.io.embedded_path("cora"), mmap=True, memory_budget="1MB")
    >>> g = ds.graph
    >>> g.num_nodes, g.num_edges
    (2708, 10556)
    >>> mine = spsample.sample(g, [0, 1], sampler=spsample.NodeWise([5, 5]), batch_size=2)
    >>> ref = spsample.sample(spsample.load(spsample.io.embedded_path("cora")).graph, [0, 1],
    ...                       sampler=spsample.NodeWise([5, 5]), batch_size=2)
    >>> mine[0].equals(ref[0])
    True
    """

    def __init__(self, path, graph_file, memory_budget, *, where="DiskGraph.open"):
        self.path = str(path)
        self._file = graph_file
        self.num_nodes, self.num_edges = graph_file.num_nodes, graph_file.num_edges
        self._fd = os.open(self.path, os.O_RDONLY)
        try:
            arrays = graph_file._arrays
            self._sources = {name: _Source(self.path, arrays[name], self._fd)
                             for name in ("indices", "weights") if arrays[name] is not None}
            self.memory_budget = memory_budget
            self.indptr = self._read_indptr(where, arrays["indptr"])
            self.max_degree = _max_step(self.indptr)
            self._plan_memory(where)
        except BaseException:
            self.close()
            raise
        self.indices = _DiskArray(self, "indices")
        self.weights = _DiskArray(self, "weights") if "weights" in self._sources else None
        self.cache = BlockCache(self, self.block_entries, self.cache_blocks)
        self.map = MappedColumns(self, self.map_span, self.map_region) \
            if can_map(self._sources) else None
        self._column_weights = self._layerwise_scale = None
        self.last_stats = {}

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path, memory_budget, *, where="DiskGraph.open"):
        """Open the graph of an spsample HDF5 file with ``memory_budget`` bytes (see the class).

        Raises
        ------
        DatasetNotFoundError, DatasetError
            The file is missing, not an spsample file, or its arrays are inconsistent
            (row pointers not from 0 to ``len(indices)`` or decreasing, sizes not backed by
            stored bytes).
        ArgumentError, ArgumentTypeError
            ``memory_budget`` is not a size, or too small to hold the row pointers, three cache
            blocks and the longest row (the message gives the smallest budget that works).
        """

        budget = as_budget(where, memory_budget)
        path = as_path(where, path)
        open_file(where, path).close()                      # exists, format, version
        graph_file = GraphFile(where, path)
        try:
            return cls(path, graph_file, budget, where=where)
        except BaseException:
            graph_file.close()
            raise

    def _read_indptr(self, where, dset):
        """The row pointers, checked: from 0 to ``num_edges``, non-decreasing (the budget must
        hold them: they stay in memory). Read in place and checked piece by piece
        (:func:`spsample.io._graph_read.read_indptr`); pointers that fail are read whole again
        to name the problem."""
        need = 8 * (self.num_nodes + 1)
        if need > self.memory_budget:
            fail(ArgumentError, where, "memory_budget", f"must hold the row pointers "
                 f"({format_bytes(need)}) plus the block cache; at least "
                 f"{format_bytes(need + self._min_work(0))} for {self.path!r}",
                 self.memory_budget)
        lean = read_indptr(dset, self.num_edges)
        if lean is not None:
            return lean
        indptr = self._file._read("indptr", 0, self.num_nodes + 1)
        if indptr[0] != 0 or indptr[-1] != self.num_edges:
            self._file._fail("indptr", f"must run from 0 to len(/graph/indices) = "
                             f"{self.num_edges}", (int(indptr[0]), int(indptr[-1])))
        steps = np.diff(indptr)
        if steps.size and steps.min() < 0:
            bad = int(np.flatnonzero(steps < 0)[0]) + 1
            self._file._fail("indptr", f"must be non-decreasing (drops at position {bad})",
                             int(indptr[bad]))
        return frozen_array(indptr)

    @property
    def entry_bytes(self):
        """Bytes one entry takes in the cache (column id, and weight when weighted)."""
        return 8 + (8 if "weights" in self._sources else 0)

    def _chunk_entries(self):
        """Blocks are whole multiples of the datasets' HDF5 chunks (1 when contiguous)."""
        chunk = 1
        for source in self._sources.values():
            chunk = int(np.lcm(chunk, source.chunk))
        return chunk

    def _min_work(self, max_degree=None):
        """The smallest budget beyond the row pointers: three blocks (in use, being read, read
        ahead) and the longest row."""
        chunk = getattr(self, "_chunk", None) or self._chunk_entries()
        block = -(-_MIN_BLOCK_ENTRIES // chunk) * chunk
        degree = self.max_degree if max_degree is None else max_degree
        return (_MIN_BLOCKS * block + degree) * self.entry_bytes

    def _plan_memory(self, where):
        """Split the budget: row pointers, cache blocks, the longest row, rows held by a hop."""
        self._chunk = self._chunk_entries()
        work = self.memory_budget - self.indptr.nbytes
        if work < self._min_work():
            fail(ArgumentError, where, "memory_budget",
                 f"is smaller than the row pointers ({format_bytes(self.indptr.nbytes)}) plus "
                 f"three cache blocks plus the longest row ({self.max_degree:,d} entries) of "
                 f"{self.path!r}: at least "
                 f"{format_bytes(self.indptr.nbytes + self._min_work())} ("
                 f"{self.indptr.nbytes + self._min_work()} bytes)", self.memory_budget)
        entry = self.entry_bytes
        spill = self.max_degree * entry
        block = min(MAX_BLOCK_BYTES // 8, max(_MIN_BLOCK_ENTRIES, work // (16 * entry)))
        block = max(1, block // self._chunk) * self._chunk
        while _MIN_BLOCKS * block * entry + spill > work and block > self._chunk:
            block = max(self._chunk, (block // 2) // self._chunk * self._chunk)
        self.block_entries = int(block)
        cache = max(_MIN_BLOCKS * block * entry, (work - spill) // 2)
        self.cache_blocks = int(cache // (block * entry))
        self.hop_bytes = int(work - spill - self.cache_blocks * block * entry)
        self._plan_map((self.cache_blocks * block * entry + spill) // entry)

    def _plan_map(self, window):
        """The memory map's windows share the room of the cache and the longest row (a mapped
        hop holds no block): ``window`` entries, two regions and a longest row included."""
        room = max(1, (window - self.max_degree) // 8)
        self.map_region = 1 << int(min(MAX_REGION_ENTRIES, room)).bit_length() - 1
        self.map_span = max(1, window - self.max_degree - 2 * self.map_region)

    # ------------------------------------------------------------------ reading
    def _check_block(self, b, start, stop, slot, first_time):
        """Column ids in ``[0, n)``, weights finite and non-negative and rows strictly
        increasing (every read); the first time block ``b`` is read, its first entry is also
        compared with the one before it (one extra read)."""
        n = stop - start
        idx = slot.indices[:n]
        w = None if slot.weights is None else slot.weights[:n]
        prev = None
        if first_time and start > 0:
            one = np.empty(1, dtype=np.int64)
            self._sources["indices"].read(start - 1, start, one)
            prev = int(one[0])
        found = entry_problems(self.indptr, idx, w, base=start, prev=prev)
        if found != NO_PROBLEM:
            self._refuse(found, start, stop, idx, w, base=start)

    def _refuse(self, found, start, stop, idx, w, *, base=0, position=None):
        """Raise for the first of ``found`` (:func:`~spsample.io._entries.entry_problems` on
        ``idx``/``w``, which hold entries from ``base``) in entries ``[start, stop)``;
        ``position`` maps a found position to the entry it is in the file."""
        bad_id, bad_w, unsorted = found
        at = position or (lambda p: p)
        if bad_id >= 0:
            self._fail_data("indices", start, stop, f"has a column id outside [0, "
                            f"{self.num_nodes})", int(idx[bad_id - base]))
        if bad_w >= 0:
            self._fail_data("weights", start, stop, "must be finite and non-negative",
                            float(w[bad_w - base]))
        self._fail_data("indices", start, stop, f"is not sorted strictly within its rows at "
                        f"entry {at(unsorted)} (convert the file with spsample convert, or "
                        "save it with spsample.save, to store canonical rows)",
                        int(idx[unsorted - base]))

    def check_sampled(self, ids):
        """Column ids sampled from the map, in ``[0, n)`` again (the checked regions are
        trusted; this keeps the next hop's kernels in bounds should the file change)."""
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_nodes):
            self.refuse_changed(int(ids[(ids < 0) | (ids >= self.num_nodes)][0]))

    def refuse_changed(self, value=None):
        """The :class:`~spsample.DatasetError` of a file that changed after its checks."""
        fail(DatasetError, "DiskGraph", "path", f"{self.path!r} changed while it was "
             f"sampled: a column id outside [0, {self.num_nodes}) was read", value,
             show_value=value is not None)

    def _fail_data(self, name, start, stop, problem, value):
        fail(DatasetError, "DiskGraph", "path", f"{self.path!r} holds an invalid graph: "
             f"/graph/{name}[{start}:{stop}] {problem}", value)

    def read_entries(self, start, stop):
        """Entries ``[start, stop)`` through the cache: ``{"indices": int64, "weights":
        float64 or None}`` (new arrays).

        Raises
        ------
        ArgumentTypeError, ArgumentError
            ``start``, ``stop`` not integers with ``0 <= start <= stop <= num_edges``.
        """
        where = "DiskGraph.read_entries"
        start = as_int(where, "start", start, minimum=0)
        stop = as_int(where, "stop", stop, minimum=start)
        if stop > self.num_edges:
            fail(ArgumentError, where, "stop", f"must be <= num_edges ({self.num_edges})", stop)
        out = {"indices": np.empty(stop - start, dtype=np.int64),
               "weights": np.empty(stop - start) if self.is_weighted else None}
        if stop <= start:
            return out
        first, last = start // self.block_entries, (stop - 1) // self.block_entries
        for b, idx, w in self.cache.stream(range(first, last + 1)):
            b0, b1 = self.cache.block_range(b)
            lo, hi = max(b0, start), min(b1, stop)
            out["indices"][lo - start:hi - start] = idx[lo - b0:hi - b0]
            if w is not None:
                out["weights"][lo - start:hi - start] = w[lo - b0:hi - b0]
        return out

    @property
    def mapped(self):
        """Whether row-local hops read the file through :attr:`map` (contiguous native
        arrays, native kernels on)."""
        return self.map is not None and _native.AVAILABLE and _native.enabled()

    @property
    def direct(self):
        """Whether rows can be read one range each (contiguous datasets, native kernels)."""
        return _native.AVAILABLE and _native.enabled() and all(
            src.offset is not None for src in self._sources.values())

    def read_rows(self, rows):
        """Rows ``rows`` (ascending, distinct) read range by range (:attr:`direct` files), not
        through the cache, and checked: ``(indptr (r + 1,), indices int64, weights float64 or
        None)`` with the rows back to back.

        Raises
        ------
        ArgumentTypeError, ArgumentError
            ``rows`` not integers, not 1-D, out of ``[0, num_nodes)``, or not ascending and
            distinct; or the file is not :attr:`direct`.
        """
        rows = self._checked_rows("DiskGraph.read_rows", rows)
        if not self.direct:
            fail(ArgumentError, "DiskGraph.read_rows", "path", "must be a contiguous, "
                 "uncompressed file read with the native kernels on (DiskGraph.direct); "
                 "read_entries reads any file", self.path)
        start, end = self.indptr[rows], self.indptr[rows + 1]
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(end - start, out=indptr[1:])
        out = {name: self._gather(src, start, end) for name, src in self._sources.items()}
        idx, w = out["indices"].astype(np.int64, copy=False), out.get("weights")
        w = None if w is None else w.astype(np.float64, copy=False)
        found = entry_problems(indptr, idx, w, num_nodes=self.num_nodes)
        if found != NO_PROBLEM:
            def position(p):                       # buffer position -> entry of the file
                r = int(np.searchsorted(indptr, p, side="right")) - 1
                return int(start[r] + p - indptr[r])
            self._refuse(found, int(start[0]), int(end[-1]), idx, w, position=position)
        return indptr, idx, w

    def _checked_rows(self, where, rows):
        """``rows`` as int64 row ids, ascending and distinct (not copied when they are)."""
        if not (isinstance(rows, np.ndarray) and rows.dtype == np.int64 and rows.ndim == 1):
            rows = as_index_array(where, "rows", rows)
        check_range(where, "rows", rows, 0, self.num_nodes)
        if rows.size > 1 and not (rows[1:] > rows[:-1]).all():
            fail(ArgumentError, where, "rows", "must be ascending and distinct",
                 show_value=False)
        return rows

    def _gather(self, src, start, end):
        raw, status = _native.gather_ranges(self._fd, src.offset, src.dtype.itemsize,
                                            np.ascontiguousarray(start),
                                            np.ascontiguousarray(end), 4096)
        if status < 0:
            i = -1 - int(status)
            src.fail(int(start[i]), int(end[i]), "the file ends before the dataset does "
                     "(truncated?)")
        return raw.view(src.dtype)

    # ------------------------------------------------------------------ queries
    @property
    def is_weighted(self):
        return "weights" in self._sources

    def degree(self):
        """Row lengths, int64, shape (n,)."""
        return np.diff(self.indptr)

    # ------------------------------------------------------------------ whole-graph quantities
    # (the GraphSource protocol of spsample.graph._source; max_degree is read with indptr)
    def layerwise_weights(self):
        """The layer-wise values of entries held in memory: a graph on disk holds none.

        Raises
        ------
        NotLowerable
            Always (a sampler traced on the disk graph then runs hop by hop on rows read from
            disk, whose ``layerwise_weights()`` are these rows' weights times
            :meth:`layerwise_scale`: the in-memory graph's values, bit for bit).
        """
        raise NotLowerable("the layer-wise weights of a graph on disk (its entries are not in "
                           "memory)")

    def sorted_entry_time(self, time, check):
        """Entry times of a graph on disk are not held in memory.

        Raises
        ------
        NotLowerable
            Always (the hops then run on rows read from disk).
        """
        raise NotLowerable("the entry times of a graph on disk")

    def column_weights(self):
        """FastGCN's ``(q, cumulative)``: one pass over the entries in CSR order (the same sums
        as the in-memory graph's, bit for bit), memoised.

        Returns
        -------
        (q, cumulative) : float64 arrays of shape (num_nodes,), read-only
        """
        if self._column_weights is None:
            scale = self.layerwise_scale() if self.is_weighted else None
            q = np.zeros(self.num_nodes)
            for _, idx, w in self.cache.stream(range(self.cache.num_blocks)):
                if w is None:                   # integer counts: exact in any grouping
                    q += np.bincount(idx, minlength=self.num_nodes)
                else:                           # in CSR order, one add at a time (bincount's)
                    np.add.at(q, idx, (w * scale) * (w * scale))
            self._column_weights = (frozen_array(q), frozen_array(np.cumsum(q)))
        return self._column_weights

    def layerwise_scale(self):
        """The power of two layer-wise samplers scale the weights by (one pass over the weights,
        memoised; 1.0 when unweighted; see :func:`~spsample.graph._weights.scaled_weights`).

        Returns
        -------
        float
        """
        if self._layerwise_scale is None:
            top = 0.0
            blocks = range(self.cache.num_blocks) if self.is_weighted else ()
            for _, _, w in self.cache.stream(blocks):
                top = max(top, float(w.max()) if w.size else 0.0)
            self._layerwise_scale = layerwise_scale(top)
        return self._layerwise_scale

    # ------------------------------------------------------------------ sampling
    def sample(self, seeds, *, sampler, batch_size, seed=0, epoch=0, batch_offset=0):
        """Sample minibatches (``spsample.sample(disk_graph, ...)`` calls this); same arguments
        and result as :func:`spsample.sample` on the in-memory graph, bit for bit."""
        return sample_on_disk(self, seeds, sampler, batch_size, seed, epoch, batch_offset)

    def close(self):
        """Close the file (idempotent)."""
        if getattr(self, "map", None) is not None:
            self.map.close()
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)
            self._fd = None
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        kind = "weighted" if self.is_weighted else "unweighted"
        return (f"DiskGraph({self.path!r}, num_nodes={self.num_nodes}, "
                f"num_edges={self.num_edges}, {kind}, memory_budget="
                f"{format_bytes(self.memory_budget)})")
