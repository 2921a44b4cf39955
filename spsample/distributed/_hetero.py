"""``DistHeteroGraph``: a heterogeneous graph split over the process rows of a :class:`Grid`,
one :class:`DistGraph` block per relation.

Layout (that of :class:`~spsample.distributed.DistGraph`, per node type). Global ids are
:class:`~spsample.HeteroGraph`'s (node types sorted by name, each a consecutive range). A
relation ``(s, name, d)`` is a CSR whose rows are the destination type's vertices. The rows of
every node type ``t`` are split over the ``p / c`` process rows as :class:`DistGraph` splits a
homogeneous graph of ``num_nodes[t]`` rows (``grid.block(num_nodes[t])``), each block held by
the ``c`` ranks of its process row; so one process row holds, of every relation into ``t``, the
same rows, and the rows a vertex expands over all its relations have one owner. A relation's
block is a :class:`DistGraph` over the global ids (columns: global source ids; rows
``[offsets[d] + lo, offsets[d] + hi)``) placed by the destination type's split
(:class:`_TypePlacement`: the owner and local row of each vertex, as the exchanges look them
up).

Sampling. A heterogeneous bulk is one engine hop per (hop, relation) step with the
relation's own Philox key (:mod:`spsample.engine._hetero_sample`); here each step is the
homogeneous distributed hop (push or pull, :mod:`spsample.distributed._sampling`) on that
relation's block, so every rank gets exactly the single-process minibatches of its global
minibatch ids, for every ``p``, ``c`` and bulk size. With one process row (``c = p``) or
``replicate_graph=True`` every rank holds the whole :class:`~spsample.HeteroGraph` and
samples it with the one-process engine.

Temporal sampling. Each rank keeps the times of its rows' entries (a relation's edge times,
or its source type's node times, which every rank holds whole), and a temporal bulk's steps
run on the relation's rows sorted by entry time
(:class:`~spsample.distributed._timesorted.TimeSortedBlock`, built on first use, locally):
with push the requests carry their minibatch's time (one per run of a minibatch's rows) and
the owner cuts the row before it selects; with pull the fetched rows carry their entries'
times and the requester cuts them. The samples report the canonical CSR's edge ids, as one
process does.
"""

import hashlib
import time
import zlib
from functools import partial

import numpy as np

from .._errors import ArgumentTypeError, DatasetError, SpsampleError
from ..graph._hetero import HeteroGraph, HeteroSchema, entry_times, merge_entries
from .._validate import fail
from ..graph._checks import GraphFile
from ._collective import agree, check_same
from ._failure import abort_if_failing_alone
from ._graph import DistGraph, _check_grid, _check_same_graph, _describe
from ._placement import Placement
from ._strategies import check_strategy
from ..io import HeteroDataset
from ..io._h5 import as_path, open_file
from ..io._hetero_hdf5 import is_hetero_file, read_hetero, read_hetero_parts
from ..engine._run import run_numpy
from ._timesorted import TimeSortedBlock
from ..engine._hetero_sample import (
    build_schedule, check_seed_time, disjoint_ids, is_disjoint, resolve_seeds, run_scheduled,
    split_hetero,
)
from ._sampling import run_distributed
from ..engine._batches import sample_request

__all__ = ["DistHeteroGraph", "load_hetero_dataset"]


class _TypePlacement(Placement):
    """Where the rows of one node type live: its vertices (global ids ``[offset, offset +
    num_nodes)``) split over the process rows as the rows of a homogeneous graph of
    ``num_nodes`` vertices. The placement of every relation block into that type."""

    def __init__(self, grid, offset, num_nodes):
        super().__init__(grid, num_nodes)
        self.offset = int(offset)

    def file_rows(self, ids):
        return np.asarray(ids, dtype=np.int64) - self.offset

    def vertices(self, lo=None, hi=None):
        return super().vertices(lo, hi) + self.offset


def _relation_block(grid, total_nodes, dst_offset, dst_rows, lo, indptr, indices, weights):
    """One relation's rows held by this rank: a :class:`DistGraph` over the global ids whose
    rows are the destination type's ``[dst_offset + lo, dst_offset + hi)``, ``[lo, hi) =
    grid.block(dst_rows)``, placed by the destination type's split."""
    return DistGraph(grid, total_nodes, dst_offset + lo, indptr, indices, weights,
                     placement=_TypePlacement(grid, dst_offset, dst_rows))


class DistHeteroGraph(HeteroSchema):
    """A :class:`~spsample.HeteroGraph` whose relations are split into block rows over the
    process rows of a :class:`Grid` (see the module docstring for the layout).

    Build it with :meth:`load` (each rank reads only its block rows of every relation from a
    heterogeneous spsample HDF5 file) or :meth:`from_graph`; sample it with
    ``spsample.sample(dist_hetero_graph, (node_type, ids), ...)``, each rank passing its own
    seeds and ``batch_offset`` (collective). ``spsample.Loader`` takes it as it takes a
    ``HeteroGraph`` (each rank its share of the minibatches).

    Attributes
    ----------
    grid : Grid
    node_types, relations, num_nodes, offsets, total_nodes
        As :class:`~spsample.HeteroGraph`'s.
    num_edges : dict of relation to int
        Entries of each whole relation.
    rows : dict of str to (int, int)
        Per node type, the local ids ``[lo, hi)`` whose rows (of every relation into the type)
        this rank holds.
    replicated : bool
        Built with ``replicate_graph=True``: every rank holds the whole graph.
    is_temporal : bool
        Whether the graph has edge or node times (``seed_time`` samples it temporally).
    whole : HeteroGraph or None
        The whole graph, when this rank holds it (``replicate_graph=True``, or one process
        row: ``c = p``); it is then sampled locally, without communication.
    last_stats : dict
        Of the latest :meth:`sample` on this rank: ``modes`` and ``relations`` (per engine
        step: where it ran, ``"push"``, ``"pull"`` or ``"local"``, and its relation),
        ``selection``, counts (``frontier``, ``remote_frontier``, ``samples``,
        ``remote_samples``, ``fetched_rows``, ``fetched_entries``), phase times, and
        ``bytes_sent``: ``{collective: bytes}`` this rank sent during the call.

    Examples
    --------
    >>> import spsample
    >>> from spsample.distributed import DistHeteroGraph, Grid
    >>> writes = ("author", "writes", "paper")
    >>> g = spsample.HeteroGraph.from_edge_index({writes: ([0, 1, 1], [0, 0, 1])})
    >>> dg = DistHeteroGraph.from_graph(g, Grid())
    >>> sampler = spsample.NodeWise({writes: [2]})
    >>> mb, = spsample.sample(dg, ("paper", [0, 1]), sampler=sampler, batch_size=2)
    >>> mb.equals(spsample.sample(g, ("paper", [0, 1]), sampler=sampler, batch_size=2)[0])
    True
    """

    def __init__(self, grid, num_nodes, blocks, *, whole=None, replicated=False, times=None):
        super().__init__(num_nodes, blocks)
        self.grid, self.whole, self.replicated = grid, whole, bool(replicated)
        self._blocks = None if whole is not None else dict(blocks)
        # per relation with times: the times of this rank's entries (canonical order)
        self._times = {r: t for r, t in (times or {}).items() if t is not None}
        self._sorted = {}
        self.last_stats = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_graph(cls, graph, grid, *, replicate_graph=False):
        """Distribute an in-memory :class:`~spsample.HeteroGraph`: every rank passes the same
        graph (checked: sizes and a SHA-256 of every relation's arrays and times) and keeps
        its rows.

        Raises
        ------
        ArgumentTypeError
            On every rank, when ``graph`` or ``grid`` is not valid on any rank.
        DistributedError
            On every rank, when the ranks pass different graphs.
        """
        where = "DistHeteroGraph.from_graph"
        _check_grid(where, grid)
        with abort_if_failing_alone(grid.comm, where):
            def check():
                if not isinstance(graph, HeteroGraph):
                    fail(ArgumentTypeError, where, "graph", "must be a spsample.HeteroGraph",
                         type(graph))
                return _hetero_summary(graph)
            _check_same_graph(grid.comm, where, agree(grid.comm, where, check))
            if replicate_graph or grid.num_rows == 1:
                return cls(grid, graph.num_nodes, graph.relations, whole=graph,
                           replicated=replicate_graph)
            blocks = {rel: _block_of(graph, rel, grid) for rel in graph.relations}
            times = {rel: _times_of(graph, rel, blocks[rel]) for rel in graph.relations}
            return cls(grid, graph.num_nodes, blocks, times=times)

    @classmethod
    def load(cls, path, grid, *, replicate_graph=False):
        """Read this rank's block rows of every relation of a heterogeneous spsample HDF5 file
        (``spsample convert`` of HeCo's folders, or ``spsample.save`` of a
        :class:`~spsample.io.HeteroDataset`).

        Only the rows of :attr:`rows` are read (all of them with ``replicate_graph=True`` or
        one process row, through ``spsample.load``'s checks). They are checked as
        :meth:`DistGraph.load` checks a homogeneous file's: before reading, each relation's
        arrays must be 1-D datasets of the right kind whose declared sizes the stored bytes
        can back, ``indptr`` one longer than the destination type's vertices; then row
        pointers from 0 to ``len(indices)`` without decreasing, source ids within the source
        type, weights finite and non-negative, edge times (``time``, one per entry) finite;
        node times (read whole by every rank) one finite time per vertex. Repeated pairs are
        merged as ``spsample.load`` merges them (weights summed, the earliest time kept).

        Raises
        ------
        DatasetNotFoundError, DatasetError
            On every rank, when the file is missing, homogeneous or damaged on any rank (the
            message names the rank, the file and the array).
        DistributedError
            On every rank, when the ranks' files hold different graphs.
        """
        return _loaded("DistHeteroGraph.load", path, grid, replicate_graph, features=False)[0]

    @classmethod
    def _load(cls, where, path, grid, replicate_graph, meta):
        comm = grid.comm
        check_same(comm, where, "heterogeneous graph of the file (node types, relations)",
                   (meta["num_nodes"], sorted(meta["relations"])))
        counts = meta["num_nodes"]
        if replicate_graph or grid.num_rows == 1:
            graph = agree(comm, where, lambda: _read_whole(where, path))
            return cls(grid, counts, graph.relations, whole=graph, replicated=replicate_graph)
        schema = HeteroSchema(counts, meta["relations"])
        blocks, times = {}, {}
        for rel in schema.relations:
            blocks[rel], edge_time = _read_block(where, path, meta["relations"][rel], schema,
                                                 rel, grid)
            times[rel] = entry_times(edge_time, meta["node_time"].get(rel[0]),
                                     blocks[rel].indices - schema.offsets[rel[0]])
        return cls(grid, counts, blocks, times=times)

    # ------------------------------------------------------------------ queries
    @property
    def num_edges(self):
        return {r: self.relation_graph(r).num_edges for r in self.relations}

    @property
    def is_temporal(self):
        """Whether the graph has edge or node times."""
        return self.whole.is_temporal if self.whole is not None else bool(self._times)

    @property
    def rows(self):
        counts = self.num_nodes
        if self.whole is not None:
            return {t: (0, n) for t, n in counts.items()}
        return {t: self.grid.block(n) for t, n in counts.items()}

    def relation_graph(self, relation):
        """The relation's rows held here: a :class:`DistGraph` over the global ids (its rows:
        the destination type's :attr:`rows`), or the whole relation's ``Graph`` when this
        rank holds :attr:`whole`."""
        rel = self.relation(relation, where="DistHeteroGraph.relation_graph")
        return self.whole.relation_graph(rel) if self.whole is not None else self._blocks[rel]

    def time_sorted(self, relation):
        """The relation's rows held here sorted by entry time (a
        :class:`~spsample.distributed._timesorted.TimeSortedBlock`, built on first use,
        without communication; the whole graph's ``TimeSortedGraph`` when this rank holds
        :attr:`whole`), or ``None`` when the relation has no times."""
        rel = self.relation(relation, where="DistHeteroGraph.time_sorted")
        if self.whole is not None:
            return self.whole.time_sorted(rel)
        if rel not in self._sorted:
            t = self._times.get(rel)
            self._sorted[rel] = None if t is None else TimeSortedBlock(self._blocks[rel], t)
        return self._sorted[rel]

    # ------------------------------------------------------------------ sampling
    def sample(self, seeds, *, sampler, batch_size, seed=0, epoch=0, batch_offset=0,
               strategy="push", seed_time=None):
        """Sample this rank's minibatches (``spsample.sample(dist_hetero_graph, ...)`` calls
        this).

        Collective: every rank calls it with the same ``sampler``, ``batch_size``, ``seed``,
        ``epoch``, ``strategy`` and seed node type, and its own seed ids and
        ``batch_offset`` (global minibatch ids; a rank may pass no ids, e.g. ``("paper",
        [])``). The result equals the single-process ``spsample.sample(hetero_graph,
        all_seeds, ...)`` restricted to this rank's minibatches, bit for bit, for every
        ``p``, ``c`` and bulk size.

        Parameters
        ----------
        seeds : (str, array_like of int) or dict
            ``(node_type, ids)`` (ids local to the type) or ``{node_type: ids}``.
        sampler : NodeWise or LABOR
            Fanouts per relation (a dict) or one list for all; ``disjoint=True`` works too.
        strategy : str
            A name in :data:`~spsample.distributed.STRATEGIES`, placing each (hop, relation)
            step as :meth:`DistGraph.sample`: ``"push"`` sends each
            frontier row to the owner of its block row, which samples it and returns only
            the samples; ``"pull"`` fetches the rows and samples locally.
        seed_time : array_like of float, optional
            Temporal sampling (a temporal graph): one time per seed of this rank; only
            entries no later than the seed's time are sampled, each seed its own subgraph.
            Every rank passes it (an empty array with no seeds) or none does.

        Returns
        -------
        HeteroBulk
            A list of :class:`~spsample.HeteroMiniBatch`.

        Raises
        ------
        SeedError, ArgumentError, SamplerError, DistributedError
            On every rank, when any rank's input is bad or the ranks disagree (e.g. some
            pass ``seed_time`` and others do not).
        """
        with abort_if_failing_alone(self.grid.comm, "DistHeteroGraph.sample"):
            return self._sample(seeds, sampler, batch_size, seed, epoch, batch_offset, strategy,
                                seed_time)

    def _sample(self, seeds, sampler, batch_size, seed, epoch, batch_offset, strategy,
                seed_time):

        comm, t0, sent = self.grid.comm, time.perf_counter(), _sent(self.grid)
        args = agree(comm, "sample", lambda: self._check_sample(
            seeds, sampler, batch_size, seed, epoch, batch_offset, strategy, seed_time),
            same=(_describe(sampler, batch_size, seed, epoch, strategy),
                  "temporal" if seed_time is not None else "not temporal"))
        node_type, ids, sizes, batch_ids, batch_size, seed, epoch, seed_time, schedule = args
        check_same(comm, "sample", "node type of the seeds", node_type)
        t1 = time.perf_counter()
        stats = {"validate_s": t1 - t0, "num_batches": int(sizes.size), "strategy": strategy}
        graph, engine = self, partial(self._distributed_engine, strategy, stats)
        if self.whole is not None:          # the one-process engine, on this rank's copy
            graph, engine = self.whole, None if sizes.size else _no_minibatch
            stats.update(mode="replicated", modes=["local"] * len(schedule.steps))
        bulk = run_scheduled(graph, schedule, ids, sizes, batch_ids, batch_size, sampler, seed,
                             epoch, seed_time, engine=engine)
        out = split_hetero(self, bulk, schedule, input_type=node_type)
        stats.setdefault("selection", [bulk.path] * len(schedule.steps))
        stats.update(relations=[st.relation for st in schedule.steps],
                     sample_s=time.perf_counter() - t1, sampled_edges=int(bulk.num_edges),
                     bytes_sent=_sent(self.grid, since=sent))
        self.last_stats = stats
        return out

    def _distributed_engine(self, strategy, stats, graph, schedule, seeds, sizes, batch_ids,
                            sampler, seed, epoch, seed_time):
        """The engine of :func:`~spsample.engine._hetero_sample.run_scheduled`: every step as the
        homogeneous distributed hop on its relation's block."""
        return run_distributed(self, seeds, sizes, batch_ids, sampler, seed, epoch, strategy,
                               stats, schedule=schedule, seed_time=seed_time)

    def _check_sample(self, seeds, sampler, batch_size, seed, epoch, batch_offset, strategy,
                      seed_time):
        check_strategy("sample", strategy)
        node_type, local = resolve_seeds("sample", self, seeds, allow_empty=True)
        times = check_seed_time("sample", self, seed_time, local.size)
        r = sample_request(self.total_nodes, local + self.offsets[node_type], sampler,
                           batch_size, seed, epoch, batch_offset, allow_empty=True)
        schedule = build_schedule(self if self.whole is None else self.whole, sampler,
                                  {node_type}, r.seed, times is not None)
        if is_disjoint(sampler, times):
            disjoint_ids(r.sizes, r.batch_ids, r.batch_size)
        else:
            r.check_unique()
        return (node_type, r.seeds, r.sizes, r.batch_ids, r.batch_size, r.seed, r.epoch, times,
                schedule)

    def __repr__(self):
        layout = "whole" if self.whole is not None else "sharded"
        return (f"DistHeteroGraph(node_types={list(self.node_types)}, "
                f"relations={len(self.relations)}, total_nodes={self.total_nodes}, {layout}, "
                f"{self.grid!r})")


def load_hetero_dataset(path, grid, *, replicate_graph=False):
    """A heterogeneous dataset for training under ``mpiexec``: its graph a
    :class:`DistHeteroGraph` (each rank reads only its block rows of every relation, see
    :meth:`DistHeteroGraph.load`), its features, labels and splits held whole by every rank.

    Parameters
    ----------
    path : str or os.PathLike
        A heterogeneous spsample HDF5 file, the same on every rank.
    grid : Grid
    replicate_graph : bool
        Every rank holds the whole graph too.

    Returns
    -------
    HeteroDataset
        Whose ``graph`` is the :class:`DistHeteroGraph`; ``spsample.Loader`` and
        :func:`spsample.train.hetero.fit_node` take it.

    Raises
    ------
    DatasetNotFoundError, DatasetError
        On every rank, when the file is missing or invalid on any rank.
    DistributedError
        On every rank, when the ranks' files hold different datasets.
    """
    def dataset(where, graph, meta):
        check_same(grid.comm, where, "dataset (labels, splits, feature shapes)",
                   _dataset_fingerprint(meta))
        return agree(grid.comm, where, lambda: _hetero_dataset(where, path, graph, meta))
    return _loaded("load_hetero_dataset", path, grid, replicate_graph, features=True,
                   then=dataset)


def _loaded(where, path, grid, replicate_graph, *, features, then=None):
    """``(DistHeteroGraph, the file's other parts)`` of ``path``, or ``then(where, graph,
    parts)``: collective, any failure raised on every rank together."""
    _check_grid(where, grid)
    with abort_if_failing_alone(grid.comm, where):
        meta = agree(grid.comm, where, lambda: _read_meta(where, path, features))
        graph = DistHeteroGraph._load(where, path, grid, replicate_graph, meta)
        return (graph, meta) if then is None else then(where, graph, meta)


def _hetero_dataset(where, path, graph, meta):
    try:
        return HeteroDataset(graph, features=meta["features"], labels=meta["labels"],
                             splits=meta["splits"], target_type=meta["target_type"],
                             edge_splits=meta["edge_splits"], name=meta["name"])
    except SpsampleError as exc:
        raise DatasetError(f"{where}: argument 'path' {str(path)!r} holds an invalid "
                           f"heterogeneous dataset: {exc}") from exc


def _dataset_fingerprint(meta):
    """A CRC-32 of the labels and splits, and the features' shapes: what the ranks compare."""
    crc = 0
    for t in sorted(meta["labels"]):
        crc = zlib.crc32(np.ascontiguousarray(meta["labels"][t]).tobytes(), crc)
    for name in sorted(meta["splits"]):
        for part in sorted(meta["splits"][name]):
            crc = zlib.crc32(np.ascontiguousarray(meta["splits"][name][part]).tobytes(), crc)
    shapes = {t: tuple(f.shape) for t, f in meta["features"].items()}
    return meta["name"], meta["target_type"], sorted(shapes.items()), crc


# ---------------------------------------------------------------------- helpers
def _hetero_summary(graph):
    """Sizes, and a SHA-256 (16 hex digits) of each relation's arrays and times: what the
    ranks compare."""
    summary = {"num_nodes": graph.num_nodes, "num_edges": graph.num_edges}
    for rel in graph.relations:
        g = graph.relation_graph(rel)
        arrays = (g.indptr, g.indices, g.weights, graph.edge_time(rel))
        summary[str(rel)] = [None if a is None else _sha(a) for a in arrays]
    for t in graph.node_types:
        time_of = graph.node_time(t)
        summary[f"node_time[{t!r}]"] = None if time_of is None else _sha(time_of)
    return summary


def _sha(arr):
    return hashlib.sha256(memoryview(np.ascontiguousarray(arr)).cast("B")).hexdigest()[:16]


def _block_of(graph, rel, grid):
    """This rank's rows of ``rel`` of an in-memory graph."""
    d = rel[2]
    indptr = graph.csr(rel)[0]
    g = graph.relation_graph(rel)
    lo, hi = grid.block(graph.num_nodes[d])
    start, stop = int(indptr[lo]), int(indptr[hi])
    weights = None if g.weights is None else np.array(g.weights[start:stop])
    return _relation_block(grid, graph.total_nodes, graph.offsets[d], graph.num_nodes[d], lo,
                          np.array(indptr[lo:hi + 1], dtype=np.int64) - start,
                          np.array(g.indices[start:stop], dtype=np.int64), weights)


def _times_of(graph, rel, block):
    """The times of the entries of ``block`` (this rank's rows of ``rel`` of an in-memory
    graph), or ``None``."""
    edge_time = graph.edge_time(rel)
    if edge_time is not None:
        start = block.edge_offset
        edge_time = np.array(edge_time[start:start + block.indices.size])
    return entry_times(edge_time, graph.node_time(rel[0]),
                       block.indices - graph.offsets[rel[0]])


def _read_meta(where, path, features):
    """The file's heterogeneous parts but the relations' arrays (every rank reads them)."""

    path = as_path(where, path)
    with open_file(where, path) as f:
        if not is_hetero_file(f):
            raise DatasetError(f"{where}: argument 'path' {str(path)!r} holds a homogeneous "
                               "dataset: use DistGraph.load")
        return read_hetero_parts(where, path, f, features)


def _read_whole(where, path):
    """The whole graph of the file, checked as ``spsample.load`` checks it."""

    path = as_path(where, path)
    with open_file(where, path) as f:
        return read_hetero(where, path, f, features=False).graph


def _read_block(where, path, group, schema, rel, grid):
    """This rank's rows of relation ``rel`` (its ``group`` in the file), checked and merged
    as ``spsample.load`` merges them, as ``(DistGraph block, edge times or None)``
    (collective: the ranks' outcomes and sizes are compared)."""
    s, _, d = rel
    counts, offsets = schema.num_nodes, schema.offsets
    lo, hi = grid.block(counts[d])

    def read():
        try:
            with GraphFile(where, path, group=group, num_rows=counts[d],
                           num_columns=counts[s]) as stored:
                sizes = (stored.num_edges, stored.weighted, stored.timed)
                return sizes, _merged(*stored.read_entries(lo, hi))
        except DatasetError as exc:
            raise DatasetError(f"{exc} (relation {rel})") from exc
    sizes, (indptr, indices, weights, time_of) = agree(grid.comm, where, read)
    check_same(grid.comm, where, f"relation {rel} of the file (edges, weighted, timed)",
               sizes)
    return _relation_block(grid, schema.total_nodes, offsets[d], counts[d], lo, indptr,
                          indices + offsets[s], weights), time_of


def _merged(indptr, indices, weights, time_of):
    """Rows as stored merged into canonical rows: :func:`~spsample.graph._hetero.merge_entries`
    (what ``HeteroGraph`` does to the whole relation) on a block of rows."""
    rows = indptr.size - 1
    row = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr))
    row, indices, weights, time_of = merge_entries(row, indices, weights, time_of)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=rows), out=indptr[1:])
    return indptr, indices, weights, time_of


def _no_minibatch(graph, schedule, seeds, sizes, batch_ids, sampler, seed, epoch, seed_time):
    """The engine of a bulk without minibatches (a rank with no seeds): the NumPy evaluation,
    which takes one (the native kernels do not)."""
    return run_numpy(graph, seeds, sizes, batch_ids, sampler, seed, epoch, schedule=schedule,
                     seed_time=seed_time)


def _sent(grid, since=None):
    """``{collective: bytes}`` this rank has sent on the grid's communicators (minus
    ``since``)."""
    sent = {kind: entry["sent"] for kind, entry in grid.stats().items()}
    if since is None:
        return sent
    return {kind: n - since.get(kind, 0) for kind, n in sent.items() if n != since.get(kind, 0)}
