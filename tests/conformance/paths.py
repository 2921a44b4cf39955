"""The execution paths of the conformance suite: a registry of functions
``path(graph, seeds, sampler, **kw) -> bulk`` that each sample the same call another way.

``kw`` holds ``batch_size``, ``seed``, ``epoch``, ``batch_offset``, and ``seed_time`` for
temporal cells; a link cell's ``seeds`` are its seed edges and ``kw`` holds the loader's
options under ``link``. A path that does not support a cell raises the library's typed error
for it: :data:`REFUSALS` says which one, and the suite asserts exactly that. Adding a path is
adding one entry to :data:`PATHS` (and its refusals).

The oracle is the ``numpy`` path (the NumPy evaluation of the sampler's constructors over the
whole call), and every other path must give its bits.
"""

import atexit
import collections
import contextlib
import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Dict, Tuple

import numpy as np

import spsample
from spsample.io import _disk_sampling
from spsample import native as _native
from spsample.gpu import _device as _gpu
from spsample._errors import ResourceLimitError

MODES = ("node", "disjoint", "hetero", "temporal", "link", "hetero-link")


# ---------------------------------------------------------------------- helpers
@contextlib.contextmanager
def native(enabled):
    """The native kernels on or off (off is the NumPy evaluation)."""
    previous = _native.set_enabled(enabled) if (enabled or _native.AVAILABLE) else None
    try:
        yield
    finally:
        if previous is not None:
            _native.set_enabled(previous)


@contextlib.contextmanager
def threads(n):
    previous = _native.set_num_threads(n) if _native.AVAILABLE else None
    try:
        yield
    finally:
        if previous is not None:
            _native.set_num_threads(previous)


def mode_of(seeds, kw):
    """The cell's mode from its arguments."""
    if "link" in kw:
        return "link"
    if kw.get("seed_time") is not None:
        return "temporal"
    if isinstance(seeds, tuple):
        return "hetero"
    return "node"


def _sample(graph, seeds, sampler, **kw):
    if "link" in kw:
        return _link(graph, seeds, sampler, **kw)
    return spsample.sample(graph, seeds, sampler=sampler, **kw)


def _link(graph, edges, sampler, *, batch_size, seed, epoch, link, batch_offset=0,
          seed_time=None, **loader):
    del batch_offset, seed_time
    options = dict(link)
    if isinstance(edges, tuple) and len(edges) == 3:        # (relation, edges, edge_time)
        relation, pairs, edge_time = edges
        edges = (relation, pairs)
        if edge_time is not None:
            options["edge_time"] = edge_time
    out = spsample.LinkLoader(graph, edges, sampler=sampler, batch_size=batch_size, seed=seed,
                              epoch=epoch, pipeline=False, **options, **loader)
    return list(out)


# ---------------------------------------------------------------------- in-memory paths
def numpy_path(graph, seeds, sampler, **kw):
    """The NumPy evaluation of the constructors, one call (the oracle)."""
    with native(False):
        out = _sample(graph, seeds, sampler, **kw)
    assert "link" in kw or out.path == "numpy"
    return out


def native_path(graph, seeds, sampler, **kw):
    """The native kernels, one call (the constructors lowered)."""
    with native(True):
        out = _sample(graph, seeds, sampler, **kw)
    if "link" not in kw and _native.AVAILABLE:
        assert out.path == "native", f"{sampler!r} did not run natively"
    return out


def threads_path(n):
    def path(graph, seeds, sampler, **kw):
        with native(True), threads(n):
            return _sample(graph, seeds, sampler, **kw)
    path.__doc__ = f"The native kernels on {n} thread(s)."
    return path


def split_path(parts):
    """The call cut at minibatch boundaries into ``parts`` calls (``None``: one call per
    minibatch), each with its ``batch_offset``; a link cell's loader with ``bulk_size`` 1
    (``None``) or as ``parts`` ranks' shares (``rank``, ``world_size``)."""
    def path(graph, seeds, sampler, **kw):
        if "link" in kw:
            if parts is None:
                return _link(graph, seeds, sampler, bulk_size=1, **kw)
            shares = [_link(graph, seeds, sampler, rank=r, world_size=parts, **kw)
                      for r in range(parts)]
            return sorted((b for share in shares for b in share), key=lambda b: b.batch_id)
        return _split(graph, seeds, sampler, parts, **kw)
    path.__doc__ = split_path.__doc__
    return path


def _split(graph, seeds, sampler, parts, *, batch_size, batch_offset=0, seed_time=None, **kw):
    typed = isinstance(seeds, tuple)
    ids = np.asarray(seeds[1] if typed else seeds)
    k = -(-ids.size // batch_size)
    per = 1 if parts is None else -(-k // parts)
    out = []
    with native(True):
        for first in range(0, k, per):
            part = slice(first * batch_size, (first + per) * batch_size)
            mine = (seeds[0], ids[part]) if typed else ids[part]
            extra = {} if seed_time is None else {"seed_time": np.asarray(seed_time)[part]}
            out += spsample.sample(graph, mine, sampler=sampler, batch_size=batch_size,
                                   batch_offset=batch_offset + first, **extra, **kw)
    return out


def emulated_path(graph, seeds, sampler, **kw):
    """The GPU kernels run on the host (``device=EmulatedDevice``: 2 threads, indices in a
    shuffled order)."""
    if "link" in kw:
        raise NotImplementedError("no link path on a device")
    out = spsample.sample(graph, seeds, sampler=sampler,
                          device=_gpu.EmulatedDevice(threads=2, order_seed=1), **kw)
    assert out.path == "emulated"
    return out


def reference_path(graph, seeds, sampler, *, batch_size, seed=0, epoch=0, batch_offset=0,
                   seed_time=None):
    """:mod:`spsample.engine._reference`: one minibatch at a time, scalar Philox; heterogeneous,
    temporal and disjoint bulks through the engine's schedule and merge."""
    from spsample.engine._hetero_sample import (
        build_schedule, disjoint_ids, is_disjoint, merge_disjoint, split_hetero,
    )
    from spsample.engine._reference import reference_sample
    from spsample.samplers._sample import split_batches
    typed = isinstance(seeds, tuple)
    ids = np.asarray(seeds[1] if typed else seeds, dtype=np.int64)
    schedule, base = None, graph
    if typed:
        ids = ids + graph.offsets[seeds[0]]
        schedule = build_schedule(graph, sampler, {seeds[0]}, seed, seed_time is not None)
        base = schedule.steps[0].graph if schedule.steps else \
            graph.relation_graph(graph.relations[0])
    sizes = split_batches(ids.size, min(batch_size, ids.size))
    batch_ids = batch_offset + np.arange(sizes.size, dtype=np.int64)
    kw = dict(sampler=sampler, seed=seed, epoch=epoch, schedule=schedule)
    if is_disjoint(sampler, seed_time):
        sub = disjoint_ids(sizes, batch_ids, batch_size)
        flat = _as_bulk(reference_sample(base, ids, batch_size=1, batch_ids=sub,
                                         seed_time=seed_time, **kw))
        flat = merge_disjoint(flat, sizes, batch_ids)
    else:
        mbs = reference_sample(base, ids, batch_size=int(sizes[0]), batch_ids=batch_ids, **kw)
        if not typed:
            return mbs
        flat = _as_bulk(mbs)
    if not typed:
        return flat
    with native(False):
        return split_hetero(graph, flat, schedule, input_type=seeds[0])


def _as_bulk(mbs):
    """Reference minibatches as one flat :class:`~spsample.Bulk`."""
    from spsample.engine._minibatch import Bulk, HopEdges
    cat = lambda xs, dt=np.int64: np.concatenate(xs) if xs else np.zeros(0, dt)  # noqa: E731
    offsets = np.concatenate([[0], np.cumsum([m.n_id.size for m in mbs])]).astype(np.int64)
    counts = np.array([m.num_sampled_nodes for m in mbs], dtype=np.int64)
    layerwise = bool(mbs) and mbs[0].weight is not None
    hops = []
    for h in range(mbs[0].num_hops if mbs else 0):
        off = np.concatenate([[0], np.cumsum([m.edges[h][0].size for m in mbs])])
        hops.append(HopEdges(cat([m.edges[h][0] for m in mbs]), cat([m.edges[h][1] for m in mbs]),
                             cat([m.edge_ids[h] for m in mbs]),
                             cat([m.weight[h] for m in mbs], np.float64) if layerwise else None,
                             off.astype(np.int64)))
    return Bulk(np.array([m.batch_id for m in mbs], dtype=np.int64),
                np.array([m.batch_size for m in mbs], dtype=np.int64), cat([m.n_id for m in mbs]),
                offsets, counts, hops, layerwise=layerwise)


# ---------------------------------------------------------------------- graphs on disk
_DIR = None
_FILES = collections.OrderedDict()
_MAX_FILES = 64
_NAMES = itertools.count()


def _file_of(graph):
    """The graph saved once (contiguous, uncompressed) in a temporary directory (the
    latest :data:`_MAX_FILES` graphs' files are kept)."""
    global _DIR
    key = id(graph)
    if key in _FILES:
        _FILES.move_to_end(key)
    else:
        while len(_FILES) >= _MAX_FILES:
            _, (_, old) = _FILES.popitem(last=False)
            os.remove(old)
        if _DIR is None:
            _DIR = tempfile.mkdtemp(prefix="spsample-conformance-")
            atexit.register(shutil.rmtree, _DIR, True)
        path = os.path.join(_DIR, f"g{next(_NAMES)}.h5")
        dataset = spsample.HeteroDataset(graph) if hasattr(graph, "relations") else \
            spsample.Dataset(graph)
        spsample.save(dataset, path, layout="contiguous", compression=None)
        _FILES[key] = (graph, path)          # the graph is kept: its id stays unique
    return _FILES[key][1]


def disk_path(mapped):
    """``spsample.load(path, mmap=True)`` with the smallest budget (row pointers plus 4, 8,
    16, ... longest rows) that holds the rows of the call's hops, through the memory map
    (``mapped``) or the block cache; asserts that the call read the file piecewise."""
    def path(graph, seeds, sampler, **kw):
        file = _file_of(graph)
        factor = 4
        while True:
            budget = _budget(graph, factor)
            with _disk_mode(mapped):
                dataset = spsample.load(file, mmap=True, memory_budget=budget)
                dg = dataset.graph
                try:
                    out = _sample(dg, seeds, sampler, **kw)
                except ResourceLimitError as exc:
                    if "memory_budget" not in str(exc) or factor > 2**12:
                        raise
                    factor *= 2
                    continue
                finally:
                    dg.close()
            if out_edges(out):                  # else no row had entries to read
                assert_read_from_disk(dg, mapped, smallest=factor == 4)
            return out
    path.__doc__ = disk_path.__doc__
    return path


def _budget(graph, factor):
    """Row pointers plus ``factor`` longest rows of 16-byte entries (id and weight), at least
    the smallest budget a DiskGraph takes (three cache blocks of 8 entries and the longest
    row)."""
    if not isinstance(graph, spsample.Graph):
        return "1MB"                         # a HeteroGraph: refused whatever the budget
    longest = int(graph.degree().max())
    return 8 * (graph.num_nodes + 1) + 16 * max(factor * longest, 3 * 8 + longest)


@contextlib.contextmanager
def _disk_mode(mapped):
    previous = _disk_sampling._MAP
    _disk_sampling._MAP = mapped
    try:
        yield
    finally:
        _disk_sampling._MAP = previous


def out_edges(out):
    """The sampled edges of a result (minibatches or loader batches)."""
    return sum(int(d.size) for mb in out for d, _ in getattr(mb, "minibatch", mb).edges)


#: Graphs with at least this many entries are larger than the smallest cache and map
#: window (smaller ones are read from disk too, but may fit).
PIECEWISE_EDGES = 200


def assert_read_from_disk(dg, mapped, smallest=True):
    """The call read the file through the map's windows or the block cache, and (graphs of
    :data:`PIECEWISE_EDGES` entries or more, at the ``smallest`` budget: not raised for a
    hop that holds many rows at once) neither could hold the whole graph, so rows really
    came and went."""
    stats = dg.last_stats or {}
    capacity = dg.cache_blocks * dg.block_entries
    large = dg.num_edges >= PIECEWISE_EDGES and smallest
    if "window_span" in stats:
        assert stats["window_span"] < dg.num_edges or not large, \
            f"one map window held the graph {stats}"
    elif stats.get("mapped_hops") and not stats.get("cache_misses"):
        assert stats["windows"] > 1 or dg.map_span < dg.num_edges or not large, stats
    else:
        assert stats.get("cache_misses", 0) > 0 or stats.get("rows_read", 0) > 0, stats
        assert capacity < dg.num_edges or not large, \
            f"the cache ({capacity} entries) held the graph"
    if not mapped:
        assert "window_span" not in stats and not stats.get("mapped_hops"), stats


# ---------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class Path:
    """An execution path: ``run(graph, seeds, sampler, **kw)``, and what it refuses.

    ``refuses[mode]`` is ``(error class, message regex)`` for the modes whose cells the path
    refuses with a typed error, or ``None`` where the path does not exist for a mode (e.g. no
    link minibatches on a device); the README's table lists both."""

    name: str
    run: Callable
    refuses: Dict[str, Tuple] = field(default_factory=dict)
    note: str = ""

    def __call__(self, graph, seeds, sampler, **kw):
        return self.run(graph, seeds, sampler, **kw)


_DEVICE = (spsample.ArgumentError, r"'device'")
_DISK_HETERO = (spsample.ArgumentError, r"'mmap'.*homogeneous")
_DISK_LINK = (spsample.ArgumentTypeError, r"LinkLoader: argument 'data'")
_DISK_REFUSALS = {"hetero": _DISK_HETERO, "temporal": _DISK_HETERO, "link": _DISK_LINK,
                  "hetero-link": _DISK_HETERO}

PATHS = {p.name: p for p in (
    Path("numpy", numpy_path, note="the oracle"),
    Path("native", native_path),
    Path("reference", reference_path, {"link": None, "hetero-link": None}),
    Path("emulated", emulated_path, {"disjoint": _DEVICE, "hetero": _DEVICE, "temporal": _DEVICE,
                                     "link": None, "hetero-link": None}),
    Path("disk-map", disk_path(True), _DISK_REFUSALS),
    Path("disk-cache", disk_path(False), _DISK_REFUSALS),
    Path("split-2", split_path(2)),
    Path("split-each", split_path(None)),
    Path("threads-1", threads_path(1)),
    Path("threads-2", threads_path(2)),
)}


# ---------------------------------------------------------------------- distributed paths
def my_batches(num_batches, rank, size):
    """Rank ``rank``'s contiguous share ``[b0, b1)`` of ``num_batches`` minibatches."""
    per = -(-num_batches // size)
    b0 = min(rank * per, num_batches)
    return b0, min(b0 + per, num_batches)


def dist_share(comm, graph, seeds, sampler, *, replication, strategy, replicated=False,
               batch_size, batch_offset=0, seed_time=None, link=None, grid=None, **kw):
    """This rank's share of the call on ``graph`` distributed over ``comm`` (a
    :class:`~spsample.distributed.Communicator`; or over ``grid``, a ``Grid`` of it with
    that replication): ``(minibatches, b0, b1)`` with ``[b0, b1)`` its minibatches'
    positions in the whole call. Collective."""
    from spsample.distributed import DistGraph, DistHeteroGraph, Grid
    grid = Grid(comm, replication=replication) if grid is None else grid
    hetero = hasattr(graph, "relations")
    dg = (DistHeteroGraph if hetero else DistGraph).from_graph(graph, grid,
                                                               replicate_graph=replicated)
    if link is not None:
        out = _link(dg, seeds, sampler, batch_size=batch_size, link=link, strategy=strategy,
                    **kw)
        ids = [b.batch_id for b in out]
        return out, (min(ids) if ids else 0), (max(ids) + 1 if ids else 0)
    typed = isinstance(seeds, tuple)
    ids = np.asarray(seeds[1] if typed else seeds)
    b0, b1 = my_batches(-(-ids.size // batch_size), comm.rank, comm.size)
    part = slice(b0 * batch_size, b1 * batch_size)
    mine = (seeds[0], ids[part]) if typed else ids[part]
    extra = {} if seed_time is None else {"seed_time": np.asarray(seed_time)[part]}
    out = spsample.sample(dg, mine, sampler=sampler, batch_size=batch_size,
                          batch_offset=batch_offset + (b0 if b1 > b0 else 0), strategy=strategy,
                          **extra, **kw)
    if b1 > b0 and grid.num_rows > 1 and not replicated:      # exchanged rows, not local
        modes = (dg.last_stats or {}).get("modes", [])
        assert modes and "local" not in modes, f"the distributed engine did not run: {modes}"
    return list(out), b0, b1


def threads_dist_path(p, replication, strategy, replicated=False):
    """``DistGraph`` / ``DistHeteroGraph`` over ``p`` ranks in threads of this process
    (``spsample.distributed.run_threads``), ``replication`` c, ``strategy``; the ranks'
    shares concatenated in rank order."""
    def path(graph, seeds, sampler, **kw):
        from spsample import distributed
        run_threads = getattr(distributed, "run_threads", None)
        if run_threads is None:
            import pytest
            pytest.skip("spsample.distributed.run_threads is not available yet (issue 25, "
                        "part 2)")
        shares = run_threads(p, _thread_body, graph, seeds, sampler, kw, replication,
                             strategy, replicated, timeout=120)
        return [mb for out, _, _ in shares for mb in out]
    path.__doc__ = threads_dist_path.__doc__
    return path


def _thread_body(comm, graph, seeds, sampler, kw, replication, strategy, replicated):
    import copy
    return dist_share(comm, graph, seeds, copy.deepcopy(sampler), replication=replication,
                      strategy=strategy, replicated=replicated, **kw)


DIST_P = (2, 3, 4, 8)


def _dist_paths():
    """p ∈ {2, 3, 4, 8}: push and pull at every c dividing p (c = p: every rank holds the
    whole graph as one process row, sampling locally), and the replicated graph."""
    out = []
    for p in DIST_P:
        for c in (c for c in range(1, p + 1) if p % c == 0):
            for strategy in ("push", "pull"):
                name = f"dist-p{p}-c{c}-{strategy}"
                out.append(Path(name, threads_dist_path(p, c, strategy)))
        out.append(Path(f"dist-p{p}-replicated", threads_dist_path(p, 1, "push", True)))
    return out


DIST_PATHS = {p.name: p for p in _dist_paths()}
