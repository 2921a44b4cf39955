"""Heterogeneous, disjoint and temporal bulks on the one engine.

* **Heterogeneous hop = one engine step per relation.** Hop ``l`` runs, for every relation
  ``(s, name, d)`` whose destination type ``d`` was reached at hop ``l - 1`` (and whose fanout
  at ``l`` is not 0), the sampler's constructors on the relation's block (a square graph over
  the global ids, :meth:`~spsample.HeteroGraph.relation_graph`). Steps are ordered by relation
  (sorted: source type first), so the vertices one hop adds of a type are consecutive steps,
  and the next hop's frontier of that type is one range of steps. Each step's streams are
  keyed by ``(epoch, l)`` and a Philox key derived from the seed and the relation's name
  (:func:`relation_key`): a relation's samples do not depend on the other relations, on their
  order, on the bulk size, the rank count or the thread count. Vertices are deduplicated per
  minibatch across all relations (one id space).
* **Disjoint** (and **temporal**, which is always disjoint): each seed is its own engine
  minibatch, with the global id ``batch_id * batch_size + position`` (so the streams of a
  seed's subgraph depend on where the seed is, not on the bulk); the subgraphs are then merged
  per minibatch (:func:`merge_disjoint`): seeds first, then each hop's new vertices seed by
  seed, and ``batch`` says which seed each vertex belongs to.
* **Temporal**: the engine minibatch's time cuts the rows of the time-sorted relation blocks
  (:class:`~spsample.graph._hetero.TimeSortedGraph`); sampled edge ids are mapped back to the
  canonical CSR.
"""

import zlib
from dataclasses import dataclass, field
from functools import partial
from typing import Optional

import numpy as np

from .. import native as _native, _rng
from ._run import run_bulk, run_numpy
from .._errors import ArgumentError, ArgumentTypeError, SamplerError, SeedError
from ..graph._hetero import HeteroGraph, HeteroSchema, TimeSortedGraph
from ._batches import check_unique_per_batch, sample_request
from ._minibatch import Bulk, HopEdges
from .._validate import as_index_array, fail
from ..graph._times import as_times
from .._optional import import_torch

__all__ = ["Step", "Schedule", "relation_key", "build_schedule", "sample_hetero",
           "run_scheduled", "is_disjoint", "disjoint_ids", "run_disjoint", "merge_disjoint",
           "HeteroMiniBatch", "HeteroBulk", "split_hetero", "check_seed_time"]

_RELATION_TAG = 0x52454C41   # "RELA": counter word 1 of the relation-key derivation


def relation_key(seed, relation):
    """The Philox key of a relation's streams: Philox4x32-10 of the counter
    ``(crc32(name), RELA, 0, 0)`` under the seed's key, words 0 and 1 (``name`` = the three
    parts joined by ``\\x1f``)."""
    name = zlib.crc32("\x1f".join(relation).encode("utf-8"))
    w = _rng.philox4x32_scalar(name, _RELATION_TAG, 0, 0, *_rng.split_seed(seed))
    return int(w[0]), int(w[1])


@dataclass(frozen=True)
class Step:
    """One engine hop of a heterogeneous bulk: relation ``relation`` at hop ``hop``."""

    hop: int
    fanout: int
    relation: tuple
    graph: object
    key: tuple


@dataclass
class Schedule:
    """The steps of a heterogeneous bulk (see the module docstring)."""

    graph: HeteroGraph
    steps: list
    num_hops: int

    @property
    def num_nodes(self):
        return self.graph.total_nodes

    def degree_stats(self):
        return self.graph.degree_stats()

    def step_hops(self):
        return np.array([0] + [st.hop for st in self.steps], dtype=np.int64)


def build_schedule(graph, sampler, seed_types, seed, temporal):
    """The steps of ``sampler`` on ``graph`` from seeds of ``seed_types``.

    Raises
    ------
    SamplerError
        The sampler does not run on heterogeneous graphs, or its fanout dict does not match
        the graph's relations (naming ``fanouts``).
    """
    where = type(sampler).__name__
    if not getattr(sampler, "heterogeneous", False):
        fail(SamplerError, where, "sampler", "does not sample heterogeneous graphs (NodeWise "
             "and LABOR do)", where)
    fanouts = sampler.fanouts_for(graph)
    sampler.check_graph(graph)
    steps, reached = [], set(seed_types)
    for hop in range(1, sampler.num_hops + 1):
        added = set()
        for rel in graph.relations:          # sorted: steps adding one type are consecutive
            f = fanouts[rel][hop - 1]
            if f == 0 or rel[2] not in reached:
                continue
            block = graph.time_sorted(rel) if temporal else None
            steps.append(Step(hop, f, rel, block or graph.relation_graph(rel),
                              relation_key(seed, rel)))
            added.add(rel[0])
        reached = added
    return Schedule(graph, steps, sampler.num_hops)


# ---------------------------------------------------------------------- seeds and times
def resolve_seeds(where, graph, seeds, *, allow_empty=False):
    """``(input type, local seed ids)`` from ``(type, ids)``, ``{type: ids}`` or plain ids on a
    graph of one node type (``allow_empty``: a rank of a distributed call may pass none)."""
    if isinstance(seeds, dict):
        if len(seeds) != 1:
            fail(ArgumentError, where, "seeds", "as a dict must name exactly one node type",
                 list(seeds))
            return None
        seeds = next(iter(seeds.items()))
    if isinstance(seeds, tuple) and len(seeds) == 2 and isinstance(seeds[0], str):
        node_type = graph.node_type(seeds[0], where=where, argname="seeds")
        ids = seeds[1]
    elif len(graph.node_types) == 1:
        node_type, ids = graph.node_types[0], seeds
    else:
        fail(ArgumentTypeError, where, "seeds", "on a HeteroGraph must be (node_type, ids) or "
             "{node_type: ids}", type(seeds))
    ids = as_index_array(where, "seeds", ids, error_cls=SeedError)
    if ids.size == 0 and not allow_empty:
        fail(SeedError, where, "seeds", "must not be empty", ids.shape)
    n = graph.num_nodes[node_type]
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
        fail(SeedError, where, "seeds", f"has an id outside [0, {n}) of type {node_type!r}",
             bad)
    return node_type, ids


def check_seed_time(where, graph, seed_time, size):
    """``seed_time`` as a new array of ``size`` times (int64 for integers, exact; float64 for
    finite reals: :func:`spsample.graph._times.as_times`), or ``None``, on a temporal
    :class:`~spsample.HeteroGraph` or :class:`~spsample.distributed.DistHeteroGraph`
    (sharded or whole)."""
    if seed_time is None:
        return None
    if not getattr(graph, "is_temporal", False):
        fail(ArgumentError, where, "seed_time", "needs a temporal HeteroGraph (edge_time or "
             "node_time)", show_value=False)
    t = as_times(where, "seed_time", seed_time)
    if t.shape != (size,):
        fail(ArgumentError, where, "seed_time", f"must have one time per seed ({size})",
             t.shape)
    return t


# ---------------------------------------------------------------------- the bulk
def sample_hetero(graph, seeds, *, sampler, batch_size, seed, epoch, batch_offset,
                  seed_time=None):
    """:func:`spsample.sample` on a :class:`~spsample.HeteroGraph` (validated arguments but
    the seeds): a :class:`HeteroBulk`."""
    where = "sample"
    node_type, local = resolve_seeds(where, graph, seeds)
    seed_time = check_seed_time(where, graph, seed_time, local.size)
    glob = local + graph.offsets[node_type]
    r = sample_request(graph.total_nodes, glob, sampler, batch_size, seed, epoch, batch_offset)
    # disjoint ids count positions in minibatches of batch_size (checked), even in a call
    # with fewer seeds: a minibatch's subgraphs do not depend on the call
    bulk = run_global(graph, r.seeds, r.sizes, r.batch_ids, r.batch_size, sampler, r.seed,
                      r.epoch, seed_time)
    return split_hetero(graph, bulk, bulk.schedule, input_type=node_type)


def run_global(graph, seeds, sizes, batch_ids, batch_size, sampler, seed, epoch,
               seed_time=None, minibatch_major=False, engine=None):
    """One bulk of global-id ``seeds`` (any node types) on a Graph or HeteroGraph: the engine's
    :class:`~spsample.Bulk`, disjoint (merged) when the sampler asks for it or the bulk is
    temporal. A heterogeneous result carries its ``schedule``. ``minibatch_major`` (on a
    Graph, not disjoint): see :func:`~spsample.engine._run.run_bulk`. ``engine``: as
    :func:`run_scheduled`'s (a distributed graph's, which ``graph`` then is)."""
    hetero = isinstance(graph, HeteroSchema)
    if hetero:
        types = {graph.node_types[i] for i in np.unique(graph.type_of(seeds))}
        schedule = build_schedule(graph, sampler, types, seed, seed_time is not None)
    else:
        if sampler.relation_fanouts is not None:
            fail(SamplerError, "sample", "fanouts", "per relation need a HeteroGraph",
                 show_value=False)
        sampler.check_graph(graph)
        schedule = None
    if not is_disjoint(sampler, seed_time):
        check_unique_per_batch(seeds, sizes)
    if minibatch_major:
        engine = partial(_engine, minibatch_major=True)
    return run_scheduled(graph, schedule, seeds, sizes, batch_ids, batch_size, sampler, seed,
                         epoch, seed_time, engine=engine)


def is_disjoint(sampler, seed_time):
    """Whether a bulk gives every seed its own subgraph: the sampler asks for it, or the
    bulk is temporal."""
    return bool(getattr(sampler, "disjoint", False)) or seed_time is not None


def run_scheduled(graph, schedule, seeds, sizes, batch_ids, batch_size, sampler, seed, epoch,
                  seed_time=None, *, engine=None):
    """The bulk of checked ``seeds`` on a built ``schedule`` (``None`` on a plain Graph),
    disjoint when :func:`is_disjoint`; ``engine`` (arguments of :func:`run_bulk` with the
    graph and schedule first) runs the engine bulks: the one-process engine by default, a
    distributed graph's own otherwise."""
    engine = _engine if engine is None else engine
    if not is_disjoint(sampler, seed_time):
        bulk = engine(graph, schedule, seeds, sizes, batch_ids, sampler, seed, epoch, None)
    else:
        bulk = run_disjoint(graph, schedule, seeds, sizes, batch_ids, batch_size, sampler, seed,
                            epoch, seed_time, engine=engine)
    bulk.schedule = schedule
    return bulk


def _engine(graph, schedule, seeds, sizes, batch_ids, sampler, seed, epoch, seed_time,
            minibatch_major=False):
    if schedule is None:
        return run_bulk(graph, seeds, sizes, batch_ids, sampler, seed, epoch,
                        minibatch_major=minibatch_major)
    if not schedule.steps:                  # no relation reaches the seeds: seeds only
        return run_numpy(graph.relation_graph(graph.relations[0]), seeds, sizes, batch_ids,
                         sampler, seed, epoch, schedule=schedule, seed_time=seed_time)
    base = schedule.steps[0].graph
    return run_bulk(base, seeds, sizes, batch_ids, sampler, seed, epoch, schedule=schedule,
                    seed_time=seed_time)


def run_disjoint(graph, schedule, seeds, sizes, batch_ids, batch_size, sampler, seed, epoch,
                 seed_time, *, engine=None):
    """Every seed sampled as its own engine minibatch (global id ``batch_id * batch_size +
    position``), then merged per minibatch (:func:`merge_disjoint`)."""
    sub_ids = disjoint_ids(sizes, batch_ids, batch_size)
    ones = np.ones(sub_ids.size, dtype=np.int64)
    bulk = (engine or _engine)(graph, schedule, seeds, ones, sub_ids, sampler, seed, epoch,
                               seed_time)
    return merge_disjoint(bulk, sizes, batch_ids)


def disjoint_ids(sizes, batch_ids, batch_size):
    """The engine minibatch id of every seed of a disjoint bulk: ``batch_id * batch_size +
    position``.

    Raises
    ------
    ArgumentError
        An id reaches 2**32 (naming ``batch_offset``).
    """
    position = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes,
                                                                       sizes)
    sub_ids = np.repeat(batch_ids, sizes) * batch_size + position
    if sub_ids.size and int(sub_ids.max()) >= 2**32:
        fail(ArgumentError, "sample", "batch_offset", "times batch_size plus the seeds must "
             "stay below 2**32 for disjoint sampling", int(batch_ids[0]))
    return sub_ids


def merge_disjoint(bulk, sizes, batch_ids):
    """Merge consecutive one-seed minibatches into minibatches of ``sizes`` seeds.

    Within a merged minibatch the vertices are ordered by (hop, seed, order within the seed's
    subgraph): the seeds first, then hop 1's new vertices seed by seed, ...; edges keep their
    order (seed by seed within a hop) and are relabelled. ``node_batch`` gives each vertex's
    seed position.
    """
    k_sub = int(bulk.batch_ids.size)
    counts = np.asarray(bulk.num_sampled_nodes, dtype=np.int64)       # (k_sub, S + 1)
    steps = counts.shape[1]
    group = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)   # sub -> minibatch
    first_sub = np.cumsum(sizes) - sizes
    node_sub = np.repeat(np.arange(k_sub, dtype=np.int64), np.diff(bulk.node_offsets))
    node_step = np.repeat(np.tile(np.arange(steps, dtype=np.int64), k_sub), counts.ravel())
    order = np.lexsort((node_sub, node_step, group[node_sub]))   # stable: keeps within-sub order
    group_nodes = np.bincount(group[node_sub], minlength=sizes.size)
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(group_nodes, out=offsets[1:])
    new_local = np.empty(order.size, dtype=np.int64)
    new_local[order] = np.arange(order.size) - offsets[group[node_sub[order]]]
    merged_counts = np.add.reduceat(counts, first_sub, axis=0) if k_sub else counts
    hops = []
    for h in bulk.hops:
        edge_sub = np.repeat(np.arange(k_sub, dtype=np.int64), np.diff(h.offsets))
        base = bulk.node_offsets[edge_sub]
        hops.append(HopEdges(new_local[base + h.dst], new_local[base + h.src], h.edge_id,
                             h.weight, h.offsets[np.append(first_sub, k_sub)]))
    node_batch = (node_sub - first_sub[group[node_sub]])[order]
    return Bulk(batch_ids, sizes, bulk.n_id[order], offsets, merged_counts, hops,
                path=bulk.path, node_batch=node_batch)


# ---------------------------------------------------------------------- heterogeneous output
@dataclass(eq=False)
class HeteroMiniBatch:
    """One sampled minibatch of a heterogeneous graph, in per-type local ids.

    Attributes
    ----------
    batch_id : int
    input_type : str or None
        The seeds' node type (``None`` when the seeds have several types, e.g. link
        minibatches).
    batch_size : int
        Number of seeds (of every type).
    n_id : dict of str to int64 array
        Per node type, the ids (local to the type) of the minibatch's vertices of that type:
        seeds first, then the vertices first reached at hop 1, 2, ... (PyG's order).
    num_sampled_nodes : dict of str to list of int
        Per type, new vertices per hop (seeds as hop 0).
    edges : dict of relation to list of (dst, src)
        Per relation ``(s, name, d)`` and hop (hop 1 first): ``dst`` indexes ``n_id[d]``,
        ``src`` indexes ``n_id[s]``; ``dst`` aggregates from ``src``.
    edge_ids : dict of relation to list of int64 arrays
        Positions of the sampled edges in the relation's CSR (:meth:`HeteroGraph.csr`).
    batch : dict of str to int64 array, or None
        Disjoint / temporal sampling: per type, the seed each vertex belongs to.
    """

    batch_id: int
    input_type: Optional[str]
    batch_size: int
    n_id: dict
    num_sampled_nodes: dict
    edges: dict
    edge_ids: dict
    batch: Optional[dict] = None
    meta: dict = field(default_factory=dict)

    @property
    def num_hops(self):
        return len(next(iter(self.num_sampled_nodes.values()))) - 1

    @property
    def num_nodes(self):
        """Vertices per type (dict)."""
        return {t: int(v.size) for t, v in self.n_id.items()}

    @property
    def num_sampled_edges(self):
        """Edges per relation and hop (dict of lists)."""
        return {r: [int(d.size) for d, _ in hops] for r, hops in self.edges.items()}

    @property
    def seeds(self):
        """The input type's seed ids (local to the type)."""
        return self.n_id[self.input_type][: self.num_sampled_nodes[self.input_type][0]]

    def edge_index(self, relation):
        """A relation's edges over all hops as ``(2, E)`` int64 ``[src; dst]`` (local ids)."""
        hops = self.edges[relation]
        if not hops:
            return np.zeros((2, 0), dtype=np.int64)
        return np.stack([np.concatenate([s for _, s in hops]),
                         np.concatenate([d for d, _ in hops])])

    def to_pyg(self):
        """The fields of PyG's ``HeteroSamplerOutput`` as torch tensors: ``node`` (dict),
        ``row`` / ``col`` (source / destination local ids per relation), ``edge`` (edge ids per
        relation), ``batch`` (disjoint: per type), ``num_sampled_nodes`` and
        ``num_sampled_edges``. Pass them to
        ``torch_geometric.sampler.HeteroSamplerOutput(**fields)``."""

        torch = import_torch("HeteroMiniBatch.to_pyg")
        t = lambda a: torch.from_numpy(a if a.flags.writeable and a.flags.c_contiguous  # noqa
                                       else np.array(a))
        ei = {r: self.edge_index(r) for r in self.edges}
        return {
            "node": {k: t(v) for k, v in self.n_id.items()},
            "row": {r: t(e[0]) for r, e in ei.items()},
            "col": {r: t(e[1]) for r, e in ei.items()},
            "edge": {r: t(np.concatenate(ids) if ids else np.zeros(0, np.int64))
                     for r, ids in self.edge_ids.items()},
            "batch": None if self.batch is None else {k: t(v) for k, v in self.batch.items()},
            "num_sampled_nodes": {k: list(v) for k, v in self.num_sampled_nodes.items()},
            "num_sampled_edges": self.num_sampled_edges,
        }

    def equals(self, other):
        """Bit-for-bit equality of every field."""
        if not isinstance(other, HeteroMiniBatch):
            return False
        if (self.batch_id, self.input_type, self.batch_size) != \
                (other.batch_id, other.input_type, other.batch_size):
            return False
        if self.num_sampled_nodes != other.num_sampled_nodes or \
                set(self.edges) != set(other.edges) or \
                (self.batch is None) != (other.batch is None):
            return False
        same = all(np.array_equal(self.n_id[t], other.n_id[t]) for t in self.n_id)
        for r in self.edges:
            for (d1, s1), (d2, s2), e1, e2 in zip(self.edges[r], other.edges[r],
                                                  self.edge_ids[r], other.edge_ids[r]):
                same = same and np.array_equal(d1, d2) and np.array_equal(s1, s2) and \
                    np.array_equal(e1, e2)
        if self.batch is not None:
            same = same and all(np.array_equal(self.batch[t], other.batch[t]) for t in self.batch)
        return bool(same)

    def __repr__(self):
        return (f"HeteroMiniBatch(batch_id={self.batch_id}, input_type={self.input_type!r}, "
                f"batch_size={self.batch_size}, num_nodes={self.num_nodes})")


class HeteroBulk(list):
    """The result of a heterogeneous bulk: a list of :class:`HeteroMiniBatch`, plus the
    engine's flat :class:`~spsample.Bulk` in global ids (``flat``) and the ``path`` that ran."""

    def __init__(self, batches, flat):
        super().__init__(batches)
        self.flat = flat
        self.path = flat.path

    @property
    def num_edges(self):
        return self.flat.num_edges


def split_hetero(graph, bulk, schedule, *, input_type=None):
    """Per-type and per-relation views of a global-id bulk (:class:`HeteroBulk`): each
    minibatch's vertices grouped by type, its edges in per-type local ids; one native pass
    over the bulk when the native kernels are on (``native/typed.h``), else
    :func:`_group_numpy` (its oracle)."""
    k = int(bulk.batch_ids.size)
    types = graph.node_types
    T = len(types)
    group = _group_native if _native.enabled() else _group_numpy
    sorted_ids, sorted_batch, per_group, per_hop, ends = group(graph, bulk, schedule)
    group_first = (np.cumsum(per_group) - per_group).tolist()
    per_group = per_group.tolist()
    edges = _relation_edges(graph, bulk, schedule, ends)
    out = []
    for j in range(k):
        n_id, batch = {}, None if sorted_batch is None else {}
        for i, t in enumerate(types):
            a = group_first[j * T + i]
            b = a + per_group[j * T + i]
            n_id[t] = sorted_ids[a:b]
            if batch is not None:
                batch[t] = sorted_batch[a:b]
        mb_edges = {r: [(d[o[j]:o[j + 1]], s[o[j]:o[j + 1]]) for d, s, _, o in hops]
                    for r, hops in edges.items()}
        mb_ids = {r: [e[o[j]:o[j + 1]] for _, _, e, o in hops] for r, hops in edges.items()}
        out.append(HeteroMiniBatch(
            batch_id=int(bulk.batch_ids[j]), input_type=input_type,
            batch_size=int(bulk.batch_sizes[j]), n_id=n_id,
            num_sampled_nodes={t: per_hop[j, i].tolist() for i, t in enumerate(types)},
            edges=mb_edges, edge_ids=mb_ids, batch=batch))
    return HeteroBulk(out, bulk)


def _group_numpy(graph, bulk, schedule):
    """The grouping of :func:`split_hetero` in NumPy: ``(sorted_ids, sorted_batch,
    per_group, per_hop, ends)``. The vertices sorted (stably) by (minibatch, type), as local
    ids of their types (``sorted_batch``: their ``node_batch``, or ``None``); ``per_group``
    (k * T,) the size of each (minibatch, type) group; ``per_hop`` (k, T, L + 1) the group's
    vertices new at each hop; ``ends`` per engine step ``(dst, src)``, its edges' ends as
    positions within their group."""
    k = int(bulk.batch_ids.size)
    types = graph.node_types
    T = len(types)
    counts = np.asarray(bulk.num_sampled_nodes, dtype=np.int64)
    node_mb = np.repeat(np.arange(k, dtype=np.int64), np.diff(bulk.node_offsets))
    node_step = np.repeat(np.tile(np.arange(counts.shape[1], dtype=np.int64), k),
                          counts.ravel())
    node_hop = schedule.step_hops()[node_step]
    ti = graph.type_of(bulk.n_id)
    key = node_mb * T + ti
    # a stable sort of small keys is a radix sort in NumPy (int16)
    order = np.argsort(key.astype(np.int16) if k * T < 2 ** 15 else key, kind="stable")
    per_group = np.bincount(key, minlength=k * T)
    group_first = np.cumsum(per_group) - per_group
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size) - group_first[key[order]]
    L = schedule.num_hops
    per_hop = np.bincount(key * (L + 1) + node_hop, minlength=k * T * (L + 1)).reshape(k, T, L + 1)
    local_ids = bulk.n_id - np.array([graph.offsets[t] for t in types], dtype=np.int64)[ti]
    sorted_batch = None if bulk.node_batch is None else bulk.node_batch[order]
    ends = []
    for h in bulk.hops:
        # bulk position = the minibatch's first node + the minibatch-local position
        pos = np.repeat(bulk.node_offsets[:-1], np.diff(h.offsets))
        dst = rank.take(np.add(pos, h.dst, out=np.empty_like(pos)))
        ends.append((dst, rank.take(np.add(pos, h.src, out=pos))))
    return local_ids[order], sorted_batch, per_group, per_hop, ends


def _group_native(graph, bulk, schedule):
    """:func:`_group_numpy` in one native pass, parallel over minibatches."""
    type_off = np.array([graph.offsets[t] for t in graph.node_types] + [graph.total_nodes],
                        dtype=np.int64)
    sorted_ids, sorted_batch, per_group, per_hop, ends = _native.split_typed(
        bulk.n_id, bulk.node_offsets, bulk.num_sampled_nodes, schedule.step_hops(), type_off,
        bulk.node_batch, bulk.hops, schedule.num_hops)
    return sorted_ids, sorted_batch, per_group.ravel(), per_hop, ends


def _relation_edges(graph, bulk, schedule, ends):
    """Per relation and hop: ``(dst, src, edge id, offsets)`` flat over the bulk, in per-type
    local ids (``ends``: per engine step, of :func:`_group_numpy`) and canonical edge ids
    (empty where a relation has no step at a hop)."""
    k = int(bulk.batch_ids.size)
    empty = np.zeros(0, dtype=np.int64)
    zero_offsets = np.zeros(k + 1, dtype=np.int64)
    by_step = {(st.relation, st.hop): (i, st) for i, st in enumerate(schedule.steps)}
    out = {}
    for rel in graph.relations:
        hops = []
        for hop in range(1, schedule.num_hops + 1):
            if (rel, hop) not in by_step:
                hops.append((empty, empty, empty, zero_offsets))
                continue
            i, st = by_step[(rel, hop)]
            h = bulk.hops[i]
            eid = h.edge_id
            if isinstance(st.graph, TimeSortedGraph):
                eid = st.graph.canonical_edge[eid]
            hops.append((ends[i][0], ends[i][1], eid, h.offsets))
        out[rel] = hops
    return out
