"""``spsample.LinkLoader``: minibatches seeded by edges, with negatives (link prediction).

A link minibatch of ``b`` seed edges ``(u_i, v_i)`` of one relation draws its negatives from
the counter-based RNG (:mod:`spsample.engine._negatives`) and samples the neighbourhoods of every
endpoint -- positives' and negatives' -- in the same bulk, as one node-seeded minibatch whose
seeds are the endpoints (deduplicated in first-occurrence order; each its own subgraph when
disjoint or temporal). Labels follow PyG's ``LinkNeighborLoader``:

* ``neg_sampling="binary"``: ``edge_label_index`` (2, b + ceil(neg_ratio * b)) in local ids,
  positives first; ``edge_label`` the positives' labels (1 unless given), 0 for negatives;
* ``neg_sampling="triplet"``: ``src_index`` (b,), ``dst_pos_index`` (b,), ``dst_neg_index``
  (b, neg_ratio) -- or (b,) when ``neg_ratio == 1``;
* ``neg_sampling=None``: positives only.

``exclude_seed_edges=True`` removes the positive seed edges (and their reverses) from the
sampled message-passing edges after sampling, so a model cannot read the label off the
subgraph.
"""

import contextlib
import math
import time
from dataclasses import dataclass, fields, replace

import numpy as np

from .. import _rng, native as _native
from .._errors import ArgumentError, ArgumentTypeError
from ..graph._graph import Graph
from ..graph._hetero import HeteroSchema
from .._validate import as_float_array, as_index_array, check_memory, fail
from ..distributed import DistGraph
from ..distributed._strategies import check_strategy
from ..distributed._collective import check_same
from ..distributed._failure import abort_if_failing_alone
from ..engine._hetero_sample import is_disjoint, run_global, split_hetero
from ..engine._negatives import (MAX_ATTEMPTS, degree_weights, draw_negatives, negative_key,
                                 pickers, strict_failure)
from ..graph._times import as_times
from ._batch import Batch, bulk_edges, make_batch
from ._features import FetchFeatures, as_feature_source
from ._hetero import epoch_positions, fetch_typed, hetero_features, make_hetero_batch, record
from ._link_dist import ShardedLinks, checked_on_every_rank, fingerprint_arrays, grid_of
from ._loader import Loader, _grids_of, add_bytes, bulk_starts, init_common

__all__ = ["LinkLoader", "LinkBatch", "check_negatives"]

_WHERE = "LinkLoader"
_MODES = ("binary", "triplet", None)
_BATCH_FIELDS = tuple(f.name for f in fields(Batch))


@dataclass(eq=False)
class LinkBatch(Batch):
    """A :class:`~spsample.loader.Batch` seeded by edges, with PyG's link fields (see the
    module docstring); ``input_id`` are the seed edges' positions in the loader's ``edges``."""

    edge_label_index: object = None
    edge_label: object = None
    src_index: object = None
    dst_pos_index: object = None
    dst_neg_index: object = None
    edge_label_time: object = None
    input_id: object = None

    def to(self, device, non_blocking=False):
        return _map(self, lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self):
        return _map(self, lambda t: t.pin_memory())


def _map(obj, fn):
    return replace(obj, **{f.name: fn(getattr(obj, f.name)) for f in fields(obj)
                           if hasattr(getattr(obj, f.name), "pin_memory")})


class LinkLoader(Loader):
    """Link-prediction minibatches: seed edges, negatives, both endpoints' neighbourhoods.

    Parameters
    ----------
    data : Graph, Dataset, HeteroGraph, HeteroDataset, DistGraph, ShardedDataset or DistHeteroGraph
    edges : array of shape (2, E), (relation, array), a relation, or None
        The seed edges ``[src; dst]`` (local ids of their types on a heterogeneous graph,
        where ``relation`` names the relation). ``None``: every edge of the graph (of its only
        relation); a relation alone: every edge of that relation. Seed edges need not be in
        the graph (held-out edges for evaluation), but must be pairs of valid vertex ids.
    sampler : Sampler
    batch_size : int
        Seed edges per minibatch.
    neg_ratio : float
        Negatives per positive, ``> 0`` (an integer for ``"triplet"``).
    neg_sampling : {"binary", "triplet", None}
    strict : bool
        Never return a negative that is an edge of the graph (drawn again).
    neg_distribution : {"uniform", "degree"}
        Negative endpoints uniformly, or ``∝ degree ** 0.75``.
    edge_label : array of shape (E,), optional
        Labels of the seed edges (binary mode; default 1).
    edge_time : array of shape (E,), optional
        Temporal sampling: each seed edge's time; its endpoints' (and its negatives')
        neighbourhoods only see entries no later than it (disjoint subgraphs).
    exclude_seed_edges : bool
        Drop the positive seed edges and their reverses from the sampled edges.
    features : array / dict of arrays, optional
        As :class:`~spsample.Loader` (a dict per node type on heterogeneous graphs); a
        ``FeatureStore`` (a ``ShardedDataset``'s) is fetched by all-to-all.
    strategy : str or None
        Where a sharded graph is sampled (see ``DistGraph.sample``): a name in
        ``spsample.distributed.STRATEGIES``; ``None``: push.
    bulk_size, shuffle, seed, device, dtype, pipeline, queue_size, rank, world_size, comm,
    epoch
        As :class:`~spsample.Loader`; on a distributed graph ``rank`` and ``world_size``
        default to its grid's.

    Raises
    ------
    ArgumentError, ArgumentTypeError
        Naming the argument: ``neg_ratio <= 0``, an unknown ``neg_sampling``, seed edges of
        the wrong shape or with ids out of range, an unknown relation, ``edge_time`` of the
        wrong length, ``features`` without one row per node. On a distributed graph, on every
        rank.
    ResourceLimitError
        Naming ``neg_ratio``: a bulk's negatives would not fit in memory (estimated before
        any is drawn, :func:`check_negatives`).
    DistributedError
        On every rank, when the ranks pass different arguments or seed edges.

    Notes
    -----
    **Under mpiexec** ``data`` may be a :class:`~spsample.distributed.DistGraph`, a
    ``ShardedDataset``, a :class:`~spsample.distributed.DistHeteroGraph` or a dataset holding
    one; every rank builds the loader with the same arguments and the same seed edges (each
    rank holds the whole list). Each rank yields its share of every epoch's minibatches, each
    bit for bit the single-process batch of the same global id, for every ``p``, ``c`` and
    ``bulk_size``; negatives, strict edge tests, degree weights and sampling are collective
    (see :mod:`spsample.loader._link_dist` for what moves). Temporal link minibatches
    (``edge_time``) are cut at the seed edges' times by the rows' owners (push) or the
    ranks that fetch the rows (pull), as ``spsample.sample`` cuts them. An epoch's
    ``last_stats`` counts the bytes this rank sent drawing negatives (``negative_bytes``:
    degrees, strict edge tests) besides ``sampling_bytes`` and ``fetch_bytes``.

    Examples
    --------
    >>> import numpy as np, spsample
    >>> g = spsample.Graph.from_edge_index([0, 1, 2, 3], [1, 2, 3, 0], symmetrize=True)
    >>> loader = spsample.LinkLoader(g, sampler=spsample.NodeWise([2]), batch_size=4,
    ...                              neg_ratio=1.0, seed=0)
    >>> b = next(iter(loader))
    >>> b.edge_label_index.shape[1], b.edge_label.tolist()
    (8, [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    """

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, data, edges=None, *, sampler, batch_size, neg_ratio=1.0,
                 neg_sampling="binary", strict=False, neg_distribution="uniform",
                 edge_label=None, edge_time=None, exclude_seed_edges=False, bulk_size=4,
                 features=None, shuffle=True, seed=0, device="cpu", dtype="float32",
                 pipeline=True, queue_size=2, rank=None, world_size=None, comm=None, epoch=0,
                 strategy=None):
        grid = grid_of(getattr(data, "graph", data))
        if grid is not None and rank is None and world_size is None and comm is None:
            rank, world_size = grid.rank, grid.size
        with checked_on_every_rank(grid, _WHERE):
            init_common(self, _WHERE, "NodeWise, LABOR", sampler, batch_size, bulk_size,
                        queue_size, seed, epoch, shuffle, pipeline, device, dtype, rank,
                        world_size, comm)
            self._configure(data, edges, neg_sampling, neg_ratio, strict, neg_distribution,
                            exclude_seed_edges, strategy)
            if self.neg_sampling is not None:
                check_negatives(_WHERE, "neg_ratio", min(self.batch_size, self.seeds.size),
                                self.bulk_size, self.neg_ratio, self.neg_sampling,
                                edge_time is not None)
            self.edge_label = None if edge_label is None else _per_edge(
                "edge_label", edge_label, self.seeds.size)
            self.edge_time = None if edge_time is None else _per_edge_time(
                edge_time, self.seeds.size)
            self._check_time()
            self._features(features, self._dataset)
        self._grids = _grids_of(self._shared, self.features) if not self.hetero else \
            _grids_of(self._shared, None)
        self.collective = self._dist is not None or _fetched(self.features)
        if grid is not None:
            self._agree(grid)

    def _configure(self, data, edges, neg_sampling, neg_ratio, strict, neg_distribution,
                   exclude_seed_edges, strategy):
        """The graph (a rank's whole copy of a distributed one when it has it), the seed edges
        and the negatives' options, checked."""
        self.last_stats = None
        self._shared, self._dataset = _graph_of(data)
        self.strategy = _strategy(strategy)
        whole = getattr(self._shared, "whole", None) if grid_of(self._shared) else None
        self.graph = self._shared if whole is None else whole
        self.hetero = isinstance(self.graph, HeteroSchema)
        self.relation, self.src_ids, self.dst_ids = _seed_edges(self.graph, edges)
        self._dist = None
        if grid_of(self.graph) is not None:          # sharded: the rows' owners answer
            self._dist = ShardedLinks(self.graph, self._block(), self.strategy)
        count = self._block().num_edges if self.src_ids is None else self.src_ids.size
        self.seeds = np.arange(count, dtype=np.int64)    # edge positions
        self.neg_sampling, self.neg_ratio = _neg_options(neg_sampling, neg_ratio)
        self.strict = _flag("strict", strict)
        self.exclude_seed_edges = _flag("exclude_seed_edges", exclude_seed_edges)
        if neg_distribution not in ("uniform", "degree"):
            fail(ArgumentError, _WHERE, "neg_distribution", "must be 'uniform' or 'degree'",
                 neg_distribution)
        self.neg_distribution, self._degree_weights = neg_distribution, None
        self.labels = None
        self.num_nodes = self.graph.total_nodes if self.hetero else self.graph.num_nodes

    def _check_time(self):
        if self.edge_time is None:
            return
        if not (self.hetero and self.graph.is_temporal):
            fail(ArgumentError, _WHERE, "edge_time", "needs a temporal HeteroGraph",
                 show_value=False)

    def _agree(self, grid):
        """Collective: the ranks' arguments and seed edges compared; every edge of a sharded
        relation gathered when ``edges`` was ``None``."""
        with abort_if_failing_alone(grid.comm, _WHERE):
            check_same(grid.comm, _WHERE, "arguments (sampler, batch_size, bulk_size, "
                       "negatives, exclude_seed_edges, shuffle, seed, epoch, world_size, "
                       "strategy, relation, number of seed edges)", self._describe())
            if self.src_ids is None:
                (os_, od), _ = self._types()
                self.src_ids, self.dst_ids = self._dist.edge_index((os_, od))
            check_same(grid.comm, _WHERE, "argument 'edges' (SHA-256 of the seed edges, "
                       "their edge_label and edge_time)", fingerprint_arrays(
                           self.src_ids, self.dst_ids, self.edge_label, self.edge_time))

    def _describe(self):
        config = self.sampler.config() if hasattr(self.sampler, "config") else \
            repr(self.sampler)
        return repr(dict(sampler=config, batch_size=self.batch_size, bulk_size=self.bulk_size,
                         neg_sampling=self.neg_sampling, neg_ratio=self.neg_ratio,
                         strict=self.strict, neg_distribution=self.neg_distribution,
                         exclude_seed_edges=self.exclude_seed_edges, shuffle=self.shuffle,
                         seed=self.seed, epoch=self._next_epoch, world_size=self.world_size,
                         strategy=self.strategy, relation=self.relation,
                         edges=int(self.seeds.size)))

    def _features(self, features, dataset):
        if self.hetero:
            self.features = hetero_features(self.graph, features, dataset)
            return
        if features is None and dataset is not None:
            features = dataset.features
        self.features = as_feature_source(features, _WHERE, "features")
        rows = None if self.features is None else self.features.num_nodes
        if rows is not None and rows != self.graph.num_nodes:
            fail(ArgumentError, _WHERE, "features", f"must have one row per node "
                 f"({self.graph.num_nodes} rows)", rows)

    # ------------------------------------------------------------------ geometry
    @property
    def max_seeds(self):
        """The most seed vertices a minibatch can have (keys the disjoint subgraphs)."""
        b = self.batch_size
        neg = 0 if self.neg_sampling is None else math.ceil(self.neg_ratio * b)
        return 2 * b + (2 * neg if self.neg_sampling == "binary" else neg)

    def _types(self):
        """``(offsets, sizes)`` of the source and destination types."""
        if not self.hetero:
            n = self.graph.num_nodes
            return (0, 0), (n, n)
        s, _, d = self.relation
        return ((self.graph.offsets[s], self.graph.offsets[d]),
                (self.graph.num_nodes[s], self.graph.num_nodes[d]))

    def _block(self):
        return self.graph.relation_graph(self.relation) if self.hetero else self.graph

    # ------------------------------------------------------------------ the producer
    def _produce(self, epoch, start, stats):
        perm = epoch_positions(self.seeds.size, self.seed, epoch, self.shuffle)
        hi = self.batch_range()[1]
        b, k, m = self.batch_size, self.bulk_size, self.seeds.size
        stats.setdefault("negative_bytes", {})
        for j in bulk_starts(self, start):
            if j is None:    # padding for the collective calls: drawn, sampled, fetched, dropped
                pos, pos_off = perm[:1], np.array([0, 1], dtype=np.int64)
                batch_ids = np.array([self.num_batches + self.rank], dtype=np.int64)
            else:
                stop = min(j + k, hi)
                pos = perm[j * b: min(m, stop * b)]
                pos_off = np.minimum(np.arange(j, stop + 1, dtype=np.int64) * b, m) - j * b
                batch_ids = np.arange(j, stop, dtype=np.int64)
            batches = self._bulk(pos, pos_off, batch_ids, epoch, stats, padding=j is None)
            if j is not None:
                yield batches

    def _bulk(self, pos, pos_off, batch_ids, epoch, stats, padding=False):
        """The batches of one bulk (seed edges ``pos``, cut by ``pos_off``); its bytes added to
        ``stats``, and its counts and times unless it is ``padding`` (then no batch)."""
        t0, sent0 = time.perf_counter(), self._bytes_sent()
        with self._guard():
            links = self._links(pos, pos_off, batch_ids, epoch)
            sent1 = self._bytes_sent()
            mbs, prepared = self._sample(links, batch_ids, epoch)
            t1, sent2 = time.perf_counter(), self._bytes_sent()
            if self.hetero:
                xs = fetch_typed(self.features, mbs)
            else:
                xs = self.features.fetch_bulk([mb.n_id for mb in mbs]) \
                    if self.features is not None else [None] * len(mbs)
        t2, sent3 = time.perf_counter(), self._bytes_sent()
        for key, a, z in (("negative_bytes", sent0, sent1), ("sampling_bytes", sent1, sent2),
                          ("fetch_bytes", sent2, sent3)):
            add_bytes(stats[key], a, z)
        if padding:
            stats["fetch_seconds"] += t2 - t1
            return None
        batches = [self._batch(mb, x, link, epoch, e)
                   for mb, x, link, e in zip(mbs, xs, links, prepared)]
        record(stats, mbs, t0, t1, t2)
        return batches

    def _guard(self):
        """A lone rank's failure inside a bulk's collective calls ends the job (never a
        hang); nothing to guard in one process."""
        if not (self.collective and self._grids):
            return contextlib.nullcontext()
        return abort_if_failing_alone(self._grids[0].comm, _WHERE)

    def _links(self, pos, pos_off, batch_ids, epoch):
        """Per minibatch (seed edges ``pos[pos_off[j]:pos_off[j + 1]]``): positives,
        negatives, the seed vertices (global ids, deduplicated in first-occurrence order unless
        disjoint), each endpoint's position among them (``where``), their times; one native
        pass over the bulk when the native kernels are on, else (and for strict negatives on
        a sharded graph, whose edge tests are collective) the NumPy oracle."""
        counts = np.diff(pos_off)
        neg = self._negative_counts(counts)
        sharded_strict = self.strict and self._dist is not None   # edge tests by the owners
        if _native.enabled() and not sharded_strict:
            return self._links_native(pos, pos_off, batch_ids, epoch, neg)
        edge_pos = [pos[a:z] for a, z in zip(pos_off[:-1], pos_off[1:])]
        return self._links_numpy(edge_pos, batch_ids, epoch, neg)

    def _links_numpy(self, edge_pos, batch_ids, epoch, neg):
        """:meth:`_links` in NumPy: draw_negatives, then each minibatch's endpoints."""
        (os_, od), (ns, nd) = self._types()
        fixed = None
        if self.neg_sampling == "triplet":
            fixed = np.concatenate([np.repeat(self.src_ids[p], int(self.neg_ratio))
                                    for p in edge_pos])
        nsrc, ndst = (np.zeros(0, np.int64),) * 2
        if self.neg_sampling is not None:
            nsrc, ndst = draw_negatives(self._block(), batch_ids, neg, seed=self.seed,
                                        epoch=epoch, relation=self._rel_key(),
                                        offsets=(os_, od), sizes=(ns, nd), fixed_src=fixed,
                                        weights=self._weights(), strict=self.strict,
                                        edges=self._dist)
        bounds = np.concatenate([[0], np.cumsum(neg)])
        links = []
        for p, a, z in zip(edge_pos, bounds[:-1], bounds[1:]):
            link = self._link(p, nsrc[a:z], ndst[a:z])
            negs = [ndst[a:z] + od] if self.neg_sampling == "triplet" else \
                [nsrc[a:z] + os_, ndst[a:z] + od]
            flat = np.concatenate([link["src"] + os_, link["dst"] + od] + negs)
            if self._disjoint():
                link["seeds"], link["where"] = flat, np.arange(flat.size)
            else:
                link["seeds"], link["where"] = _first_occurrence(flat)
            links.append(link)
        return links

    def _links_native(self, pos, pos_off, batch_ids, epoch, neg):
        """:meth:`_links` in one pass of ``native/link.h``, parallel over minibatches."""
        (os_, od), (ns, nd) = self._types()
        neg_off = np.zeros(neg.size + 1, dtype=np.int64)
        np.cumsum(neg, out=neg_off[1:])
        strict = self.strict and self.neg_sampling is not None
        ratio = int(self.neg_ratio) if self.neg_sampling == "triplet" else 1
        nsrc, ndst, where, seeds, fresh, failed, end_off = _native.link_bulk(
            pos_off, pos, self.src_ids, self.dst_ids, neg_off, batch_ids,
            mode=self.neg_sampling, ratio=ratio, key=negative_key(
                self.seed, self._rel_key()), pickers=pickers((ns, nd), self._weights()),
            hop_word=_rng.hop_word(epoch, 0), block=self._block() if strict else None,
            max_attempts=MAX_ATTEMPTS, type_offsets=(os_, od), dedup=not self._disjoint())
        if failed.any():
            strict_failure(int(failed.sum()))
        links = []
        for j, (e, f) in enumerate(zip(end_off[:-1].tolist(), fresh.tolist())):
            a, z = neg_off[j], neg_off[j + 1]
            link = self._link(pos[pos_off[j]:pos_off[j + 1]], nsrc[a:z], ndst[a:z])
            link["seeds"], link["where"] = seeds[e:e + f], where[e:end_off[j + 1]]
            links.append(link)
        return links

    def _disjoint(self):
        """Every endpoint its own subgraph (the sampler asks for it, or seed edges have times)."""
        return is_disjoint(self.sampler, self.edge_time)

    def _weights(self):
        """The negatives' ``degree_weights`` (``"degree"``), computed once; ``None`` for
        uniform negatives."""
        if self.neg_distribution != "degree":
            return None
        if self._degree_weights is None:
            (os_, od), (ns, nd) = self._types()
            if self._dist is not None:
                self._degree_weights = self._dist.degree_weights((os_, od), (ns, nd))
            else:
                self._degree_weights = degree_weights(self._block(), os_, ns, od, nd)
        return self._degree_weights

    def _rel_key(self):
        return self.relation if self.hetero else ("", "", "")

    def _negative_counts(self, counts):
        if self.neg_sampling is None:
            return np.zeros(counts.size, dtype=np.int64)
        if self.neg_sampling == "triplet":
            return counts * int(self.neg_ratio)
        return np.array([math.ceil(self.neg_ratio * c) for c in counts], dtype=np.int64)

    def _link(self, pos, nsrc, ndst):
        """A minibatch's link: its seed edges, negatives, part sizes (positive sources,
        destinations, negatives) and its endpoints' times."""
        src, dst = self.src_ids[pos], self.dst_ids[pos]
        if self.neg_sampling == "triplet":
            sizes = [src.size, dst.size, ndst.size]
        else:
            sizes = [src.size, dst.size, nsrc.size, ndst.size]
        time_ = None
        if self.edge_time is not None:
            t = self.edge_time[pos]
            reps = [t, t, np.resize(t, nsrc.size if self.neg_sampling != "triplet"
                                    else ndst.size)]
            if self.neg_sampling != "triplet":
                reps.append(np.resize(t, ndst.size))
            time_ = np.concatenate(reps)
        return dict(pos=pos, src=src, dst=dst, nsrc=nsrc, ndst=ndst, sizes=sizes, time=time_)

    def _sample(self, links, batch_ids, epoch):
        """The bulk of node-seeded minibatches (seeds: each link's ``seeds``), and per
        minibatch what :meth:`_batch` builds on: ``None`` (heterogeneous, or the native
        kernels off), or ``(minibatch, (edge_index, e_id))`` from one native pass over the
        bulk, without the seed edges when ``exclude_seed_edges``."""
        seeds = [link["seeds"] for link in links]
        times = [link["time"] for link in links if link["time"] is not None]
        sizes = np.array([s.size for s in seeds], dtype=np.int64)
        flat = np.concatenate(seeds)
        seed_time = np.concatenate(times) if times else None
        local = self._dist is None
        bulk = run_global(self.graph, flat, sizes, batch_ids, self.max_seeds, self.sampler,
                          self.seed, epoch, seed_time,
                          minibatch_major=local and not (self.hetero or self.exclude_seed_edges
                                                         or self._disjoint()),
                          engine=None if local else self._dist.engine)
        if self.hetero:
            mbs = list(split_hetero(self.graph, bulk, bulk.schedule))
            return mbs, [None] * len(mbs)
        mbs = list(bulk)
        exclude = _seed_pairs(bulk, links) if self.exclude_seed_edges else None
        edges, kept = bulk_edges(bulk, exclude)
        if kept is None:                     # the native kernels off
            return mbs, edges
        shown = mbs if exclude is None else [_with_edges(mb, e, c)
                                             for mb, e, c in zip(mbs, edges, kept)]
        return mbs, list(zip(shown, edges))

    # ------------------------------------------------------------------ batches
    def _batch(self, mb, x, link, epoch, prepared=None):
        import torch
        edges = None
        if prepared is not None:
            mb, edges = prepared
        elif self.exclude_seed_edges:
            mb = self._excluded(mb, link)
        idx = self._local(mb, link)
        t64 = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))  # noqa
        fields_ = dict(input_id=t64(link["pos"]))
        b = link["pos"].size
        if self.neg_sampling == "triplet":
            k = int(self.neg_ratio)
            neg = idx[2].reshape(b, k) if k > 1 else idx[2]
            fields_.update(src_index=t64(idx[0]), dst_pos_index=t64(idx[1]),
                           dst_neg_index=t64(neg))
        else:
            negatives = idx[2].size if len(idx) > 2 else 0
            pairs = np.empty((2, b + negatives), dtype=np.int64)
            pairs[0, :b], pairs[1, :b] = idx[0], idx[1]
            if negatives:
                pairs[0, b:], pairs[1, b:] = idx[2], idx[3]
            label = np.zeros(b + negatives, dtype=np.float32)
            label[:b] = 1.0 if self.edge_label is None else self.edge_label[link["pos"]]
            fields_.update(edge_label_index=torch.from_numpy(pairs),
                           edge_label=torch.from_numpy(label))
        if self.edge_time is not None:
            fields_["edge_label_time"] = torch.from_numpy(self.edge_time[link["pos"]].copy())
        if self.hetero:
            out = make_hetero_batch(mb, x, None, epoch=epoch, dtype=self.dtype)
            out = replace(out, link_relation=self.relation, **fields_)
        else:
            base = make_batch(mb, x, None, epoch=epoch, dtype=self.dtype, edges=edges)
            out = LinkBatch(**{name: getattr(base, name) for name in _BATCH_FIELDS}, **fields_)
        if self.device.type != "cpu":
            out = out.pin_memory().to(self.device, non_blocking=True)
        return out

    def _local(self, mb, link):
        """Local ids of the link's endpoints (per part: pos src, pos dst, negatives)."""
        where = link["where"]
        if self.hetero:          # rank among the minibatch's seeds of the same type
            types = self.graph.type_of(link["seeds"])
            rank = np.zeros(types.size, dtype=np.int64)
            for t in np.unique(types):
                at = np.flatnonzero(types == t)
                rank[at] = np.arange(at.size)
            where = rank[where]
        parts, at = [], 0
        for size in link["sizes"]:
            parts.append(where[at:at + size])
            at += size
        return parts

    def _excluded(self, mb, link):
        """``mb`` without the sampled edges that are positive seed edges or their reverses."""
        (os_, od), _ = self._types()
        u, v = link["src"] + os_, link["dst"] + od
        if self.hetero:
            return _exclude_hetero(self.graph, mb, u, v)
        keys = np.concatenate([u * self.num_nodes + v, v * self.num_nodes + u])
        edges, ids = [], []
        for (dst, src), eid in zip(mb.edges, mb.edge_ids):
            keep = ~np.isin(mb.n_id[src] * self.num_nodes + mb.n_id[dst], keys)
            edges.append((dst[keep], src[keep]))
            ids.append(eid[keep])
        return replace(mb, edges=edges, edge_ids=ids)

    def __repr__(self):
        return (f"LinkLoader(edges={self.seeds.size}, relation={self.relation!r}, "
                f"sampler={self.sampler!r}, batch_size={self.batch_size}, "
                f"neg_sampling={self.neg_sampling!r}, neg_ratio={self.neg_ratio})")


#: Bytes a bulk holds per negative endpoint at least: its id, its place among the seeds, its
#: seed and its sampled vertex (int64 each), and its time when temporal.
_NEGATIVE_BYTES = 4 * 8
_TIME_BYTES = 8


def check_negatives(where, name, batch_size, bulk_size, neg_ratio, mode, temporal):
    """Raise :class:`~spsample.ResourceLimitError` naming ``name`` (``neg_ratio``, or a
    caller's argument that becomes it) before a bulk's negatives are drawn, when they cannot
    fit: ``bulk_size`` minibatches of ``ceil(neg_ratio * batch_size)`` negatives (binary: two
    endpoints each) or ``neg_ratio * batch_size`` (triplet: one), each endpoint at least
    :data:`_NEGATIVE_BYTES` (plus 8 when temporal) -- before its sampled neighbourhood."""
    per_batch = math.ceil(neg_ratio * batch_size)
    ends = 2 if mode == "binary" else 1
    each = ends * (_NEGATIVE_BYTES + (_TIME_BYTES if temporal else 0))
    check_memory(where, name, bulk_size * per_batch * each, f"{bulk_size:,d} minibatches of "
                 f"{per_batch:,d} {mode} negatives ({neg_ratio:g} per seed edge, batches of "
                 f"{batch_size:,d} edges)", "ask for fewer negatives per edge")


def _seed_pairs(bulk, links):
    """The ``exclude`` of :func:`~spsample.loader._batch.bulk_edges`: a homogeneous bulk's
    positive seed edges per minibatch."""
    offsets = np.zeros(len(links) + 1, dtype=np.int64)
    np.cumsum([link["src"].size for link in links], out=offsets[1:])
    return (bulk.n_id, bulk.node_offsets, np.concatenate([link["src"] for link in links]),
            np.concatenate([link["dst"] for link in links]), offsets)


def _with_edges(mb, edges, kept):
    """``mb`` with the edges of ``edges = (edge_index, e_id)``, ``kept[l]`` of them in hop
    ``l`` (views, no copy)."""
    (src, dst), e_id = edges
    bounds = np.zeros(len(kept) + 1, dtype=np.int64)
    np.cumsum(kept, out=bounds[1:])
    pairs = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
    return replace(mb, edges=[(dst[a:z], src[a:z]) for a, z in pairs],
                   edge_ids=[e_id[a:z] for a, z in pairs])


def _exclude_hetero(graph, mb, u, v):
    """Drop sampled edges ``u -> v`` (global ids) and ``v -> u`` in any relation."""
    n = graph.total_nodes
    keys = np.concatenate([u * n + v, v * n + u])
    edges, ids = {}, {}
    for rel, hops in mb.edges.items():
        os_, od = graph.offsets[rel[0]], graph.offsets[rel[2]]
        edges[rel], ids[rel] = [], []
        for (dst, src), eid in zip(hops, mb.edge_ids[rel]):
            gk = (mb.n_id[rel[0]][src] + os_) * n + (mb.n_id[rel[2]][dst] + od)
            keep = ~np.isin(gk, keys)
            edges[rel].append((dst[keep], src[keep]))
            ids[rel].append(eid[keep])
    return replace(mb, edges=edges, edge_ids=ids)


def _first_occurrence(ids):
    """``(distinct ids in first-occurrence order, position of each id among them)``."""
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(uniq.size)
    return ids[np.sort(first)], rank[inverse]


# ---------------------------------------------------------------------- argument checks
def _graph_of(data):
    """``(graph, dataset or None)``: a Graph, HeteroGraph, DistGraph or DistHeteroGraph, or a
    dataset holding one."""
    if _is_graph(data):
        return data, None
    graph = getattr(data, "graph", None)
    if _is_graph(graph):
        return graph, data
    fail(ArgumentTypeError, _WHERE, "data", "must be a spsample Graph, Dataset, HeteroGraph, "
         "HeteroDataset, DistGraph, DistHeteroGraph or ShardedDataset", type(data))


def _is_graph(obj):
    return isinstance(obj, (Graph, HeteroSchema, DistGraph))


def _strategy(strategy):
    if strategy is None:
        return "push"
    return check_strategy(_WHERE, strategy, allow_none=True)


def _fetched(features):
    """Whether fetching ``features`` (a source, or a dict of them) is collective."""
    sources = features.values() if isinstance(features, dict) else [features]
    return any(isinstance(f, FetchFeatures) for f in sources)


def _seed_edges(graph, edges):
    """``(relation or None, src, dst)``: the seed edges, checked; ``src`` and ``dst`` are
    ``None`` for every edge of a sharded relation (gathered later, collectively)."""
    hetero = isinstance(graph, HeteroSchema)
    relation = None
    if hetero:
        if isinstance(edges, dict):
            if len(edges) != 1:
                fail(ArgumentError, _WHERE, "edges", "as a dict must hold one relation",
                     list(edges))
            edges = next(iter(edges.items()))
        is_rel = isinstance(edges, str) or (isinstance(edges, tuple) and len(edges) == 3
                                            and all(isinstance(x, str) for x in edges))
        if edges is None or is_rel:            # every edge of the relation
            if edges is None and len(graph.relations) != 1:
                fail(ArgumentError, _WHERE, "edges", "must be (relation, edges) on a graph of "
                     "several relations", show_value=False)
            relation = graph.relation(edges or graph.relations[0], where=_WHERE,
                                      argname="edges")
            edges = None
        elif isinstance(edges, tuple) and len(edges) == 2 and not hasattr(edges[0], "shape"):
            relation = graph.relation(edges[0], where=_WHERE, argname="edges")
            edges = edges[1]
        else:
            fail(ArgumentTypeError, _WHERE, "edges", "on a HeteroGraph must be (relation, "
                 "edges), {relation: edges} or a relation name", type(edges))
    if edges is None:
        block = graph.relation_graph(relation) if hetero else graph
        if grid_of(block) is not None:
            return relation, None, None
        src, dst = block.edge_index()
        if hetero:
            src, dst = src - graph.offsets[relation[0]], dst - graph.offsets[relation[2]]
        return relation, src, dst
    if hasattr(edges, "detach"):
        edges = edges.detach().cpu().numpy()
    ei = as_index_array(_WHERE, "edges", edges, ndim=2)
    if ei.shape[0] != 2 or ei.shape[1] == 0:
        fail(ArgumentError, _WHERE, "edges", "must have shape (2, E), E >= 1 ([src; dst])",
             ei.shape)
    n_src = graph.num_nodes[relation[0]] if hetero else graph.num_nodes
    n_dst = graph.num_nodes[relation[2]] if hetero else graph.num_nodes
    for row, n, end in ((0, n_src, "source"), (1, n_dst, "destination")):
        if ei[row].min() < 0 or ei[row].max() >= n:
            bad = int(ei[row].min()) if ei[row].min() < 0 else int(ei[row].max())
            fail(ArgumentError, _WHERE, "edges", f"are not edges: a {end} id is outside "
                 f"[0, {n})", bad)
    return relation, ei[0].copy(), ei[1].copy()


def _neg_options(mode, ratio):
    if mode not in _MODES:
        fail(ArgumentError, _WHERE, "neg_sampling", "must be 'binary', 'triplet' or None", mode)
    if isinstance(ratio, (bool, np.bool_)) or not isinstance(ratio, (int, float, np.integer,
                                                                      np.floating)):
        fail(ArgumentTypeError, _WHERE, "neg_ratio", "must be a number", ratio)
    ratio = float(ratio)
    if not (np.isfinite(ratio) and ratio > 0):
        fail(ArgumentError, _WHERE, "neg_ratio", "must be > 0", ratio)
    if mode == "triplet" and ratio != int(ratio):
        fail(ArgumentError, _WHERE, "neg_ratio", "must be an integer for triplet negatives",
             ratio)
    return mode, ratio


def _flag(name, value):
    if not isinstance(value, (bool, np.bool_)):
        fail(ArgumentTypeError, _WHERE, name, "must be a bool", value)
    return bool(value)


def _per_edge_time(value, size):
    """Seed edge times: int64 for integers (exact, as the graph's times), float64 for reals."""
    arr = as_times(_WHERE, "edge_time", value)
    if arr.shape != (size,):
        fail(ArgumentError, _WHERE, "edge_time", f"must have one value per seed edge ({size})",
             arr.shape)
    return arr


def _per_edge(name, value, size):
    arr = as_float_array(_WHERE, name, value)
    if arr.shape != (size,):
        fail(ArgumentError, _WHERE, name, f"must have one value per seed edge ({size})",
             arr.shape)
    if not np.isfinite(arr).all():
        fail(ArgumentError, _WHERE, name, "must be finite", show_value=False)
    return arr

