"""Heterogeneous training batches, and the Loader on heterogeneous graphs.

:class:`HeteroBatch` holds one minibatch as dicts keyed like PyG's ``HeteroData``:
``x_dict`` (features per node type), ``edge_index_dict`` (per relation ``(src, name, dst)``,
``[src; dst]`` in per-type local ids), ``n_id_dict``, ... so a PyG heterogeneous model
(``to_hetero``, ``HeteroConv``) runs as ``model(batch.x_dict, batch.edge_index_dict)``.
"""

import time
from dataclasses import dataclass, field, fields, replace
from typing import Optional

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, SeedError
from ..graph._hetero import HeteroGraph, HeteroSchema
from ..native import apply_env_threads
from .._validate import fail
from ..engine._hetero_sample import check_seed_time, resolve_seeds
from ..samplers._sample import sample
from ._batch import _tensor
from ._features import as_feature_source
from ._loader import (Loader, _grids_of, _resolve_labels, _resolve_strategy, add_bytes, bulk_starts,
                      epoch_order, init_common)
from ._pyg import import_pyg
from ._sparse import SparseRows

__all__ = ["HeteroBatch", "make_hetero_batch", "HeteroLoader", "is_hetero_data",
           "hetero_features", "hetero_labels"]

_WHERE = "Loader"


@dataclass(eq=False)
class HeteroBatch:
    """One training step's data on a heterogeneous graph, as torch tensors in dicts.

    Attributes
    ----------
    x_dict : dict of str to Tensor (or SparseRows)
        Feature rows of ``n_id_dict[t]`` for the types that have features.
    y : Tensor or None
        Labels of ``n_id_dict[input_type]`` (use :attr:`target` for the seeds').
    edge_index_dict : dict of relation to LongTensor (2, E)
        ``[src; dst]``: ``src`` indexes the source type's nodes, ``dst`` the destination's;
        hop 1's edges first.
    n_id_dict, e_id_dict : dict
        Per type the ids of the batch's vertices (local to the type: seeds first); per
        relation the edges' positions in the relation's CSR.
    batch_size : int
        Seeds (of ``input_type``; for link batches, of every type).
    input_type : str or None
    num_sampled_nodes_dict, num_sampled_edges_dict : dict of lists
        Per type / relation, counts per hop (PyG's ``trim_to_layer`` layout).
    batch_dict : dict or None
        Disjoint / temporal sampling: the seed each vertex belongs to.
    edge_label_index, edge_label, src_index, dst_pos_index, dst_neg_index, edge_label_time,
    input_id, link_relation
        Link minibatches (:class:`~spsample.LinkLoader`), as in PyG's
        ``LinkNeighborLoader``; ``None`` otherwise.
    """

    x_dict: dict
    y: object
    edge_index_dict: dict
    n_id_dict: dict
    e_id_dict: dict
    batch_size: int
    input_type: Optional[str]
    num_sampled_nodes_dict: dict
    num_sampled_edges_dict: dict
    batch_dict: Optional[dict] = None
    batch_id: int = 0
    epoch: int = 0
    minibatch: object = field(default=None, repr=False)
    edge_label_index: object = None
    edge_label: object = None
    src_index: object = None
    dst_pos_index: object = None
    dst_neg_index: object = None
    edge_label_time: object = None
    input_id: object = None
    link_relation: object = None

    @property
    def target(self):
        """Labels of the seeds (``y[:batch_size]``)."""
        return None if self.y is None else self.y[: self.batch_size]

    @property
    def num_nodes_dict(self):
        return {t: int(v.shape[0]) for t, v in self.n_id_dict.items()}

    def to(self, device, non_blocking=False):
        """A copy with every tensor moved to ``device``."""
        return _map_tensors(self, lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self):
        return _map_tensors(self, lambda t: t.pin_memory())

    def to_pyg_data(self):
        """The batch as ``torch_geometric.data.HeteroData`` (needs PyG): ``x``, ``n_id``,
        ``num_sampled_nodes`` per type, ``edge_index``, ``e_id``, ``num_sampled_edges`` per
        relation, ``y`` and ``batch_size`` on the input type."""
        pyg = import_pyg("HeteroBatch.to_pyg_data")
        data = pyg.data.HeteroData()
        for t, n_id in self.n_id_dict.items():
            data[t].n_id = n_id
            data[t].num_nodes = int(n_id.shape[0])
            data[t].num_sampled_nodes = list(self.num_sampled_nodes_dict[t])
            if t in self.x_dict:
                x = self.x_dict[t]
                data[t].x = x.to_dense() if isinstance(x, SparseRows) else x
        for rel, ei in self.edge_index_dict.items():
            data[rel].edge_index = ei
            data[rel].e_id = self.e_id_dict[rel]
            data[rel].num_sampled_edges = list(self.num_sampled_edges_dict[rel])
        if self.input_type is not None:
            if self.y is not None:
                data[self.input_type].y = self.y
            data[self.input_type].batch_size = self.batch_size
        return data

    def __repr__(self):
        return (f"HeteroBatch(batch_id={self.batch_id}, input_type={self.input_type!r}, "
                f"batch_size={self.batch_size}, num_nodes={self.num_nodes_dict})")


def _map_tensors(obj, fn):
    def move(v):
        if isinstance(v, dict):
            return {k: move(x) for k, x in v.items()}
        return fn(v) if hasattr(v, "pin_memory") else v
    return replace(obj, **{f.name: move(getattr(obj, f.name)) for f in fields(obj)
                           if f.name != "minibatch"})


def make_hetero_batch(mb, xs, y, *, epoch, dtype=None):
    """A :class:`HeteroBatch` from a :class:`~spsample.HeteroMiniBatch`, its feature rows per
    type (``xs``) and the label rows of its input type (``y``); NumPy crosses by DLPack."""
    import torch

    x_dict = {}
    for t, x in xs.items():
        xt = _tensor(torch, x)
        if dtype is not None and xt.dtype != dtype:
            xt = xt.to(dtype)
        x_dict[t] = xt
    t64 = lambda a: torch.from_numpy(np.array(a, dtype=np.int64))  # noqa: E731
    ei = {r: t64(mb.edge_index(r)) for r in mb.edges}
    eid = {r: t64(np.concatenate(ids) if ids else np.zeros(0, np.int64))
           for r, ids in mb.edge_ids.items()}
    return HeteroBatch(
        x_dict=x_dict, y=None if y is None else _tensor(torch, y), edge_index_dict=ei,
        n_id_dict={t: t64(v) for t, v in mb.n_id.items()}, e_id_dict=eid,
        batch_size=mb.batch_size, input_type=mb.input_type,
        num_sampled_nodes_dict={t: list(v) for t, v in mb.num_sampled_nodes.items()},
        num_sampled_edges_dict=mb.num_sampled_edges,
        batch_dict=None if mb.batch is None else {t: t64(v) for t, v in mb.batch.items()},
        batch_id=mb.batch_id, epoch=epoch, minibatch=mb)


def is_hetero_data(data):
    """Whether ``data`` is a HeteroGraph, a DistHeteroGraph or a HeteroDataset."""
    return isinstance(data, HeteroSchema) or isinstance(getattr(data, "graph", None),
                                                        HeteroSchema)


def hetero_features(graph, features, dataset):
    """``{type: FeatureSource}`` from a dict (or the dataset's features)."""
    if features is None and dataset is not None:
        features = dataset.features
    if features is None:
        return {}
    if not isinstance(features, dict):
        fail(ArgumentTypeError, _WHERE, "features", "on a heterogeneous graph must be a dict "
             "{node_type: features}", type(features))
    out = {}
    for t, f in features.items():
        t = graph.node_type(t, where=_WHERE, argname="features")
        src = as_feature_source(f, _WHERE, f"features[{t!r}]")
        if src.num_nodes is not None and src.num_nodes != graph.num_nodes[t]:
            fail(ArgumentError, _WHERE, f"features[{t!r}]", f"must have one row per {t} node "
                 f"({graph.num_nodes[t]})", src.num_nodes)
        out[t] = src
    return out


def hetero_labels(graph, labels, dataset):
    """``{type: int64 array}`` from a dict (or the dataset's labels)."""
    if labels is None and dataset is not None:
        labels = dataset.labels
    if labels is None:
        return {}
    if not isinstance(labels, dict):
        fail(ArgumentTypeError, _WHERE, "labels", "on a heterogeneous graph must be a dict "
             "{node_type: labels}", type(labels))
    return {graph.node_type(t, where=_WHERE, argname="labels"):
            _resolve_labels(y, graph.num_nodes[t]) for t, y in labels.items()}


def fetch_typed(features, mbs):
    """Per minibatch, ``{type: rows}``: each type's rows of a bulk fetched in one call."""
    out = [dict() for _ in mbs]
    for t, src in features.items():
        rows = src.fetch_bulk([mb.n_id[t] for mb in mbs])
        for d, r in zip(out, rows):
            d[t] = r
    return out


class HeteroLoader(Loader):
    """The :class:`~spsample.Loader` on a :class:`~spsample.HeteroGraph` (or
    :class:`~spsample.io.HeteroDataset`): seeds of one node type, :class:`HeteroBatch`
    batches. Built by ``spsample.Loader(...)``; same arguments, plus ``seed_time`` (one time
    per seed, temporal sampling); ``seeds`` is ``(node_type, ids)``, a split name of the
    dataset's target type, or ``None`` (its training split).

    On a :class:`~spsample.distributed.DistHeteroGraph` (or a dataset holding one) every rank
    must build the loader with the same arguments and ``rank`` / ``world_size`` (or ``comm``)
    of the graph's grid: each rank yields its share of every epoch's minibatches, sampled
    collectively (``strategy``: ``"push"`` by default, or ``"pull"``); a rank with fewer
    bulks samples padding ones so that the collective calls match."""

    @staticmethod
    def claims(data):
        """``Loader(data, ...)`` is a HeteroLoader for heterogeneous ``data``."""
        return is_hetero_data(data)

    def __init__(self, data, seeds=None, *, sampler, batch_size, bulk_size=4, features=None,
                 labels=None, shuffle=True, seed=0, device="cpu", dtype="float32",
                 pipeline=True, queue_size=2, rank=None, world_size=None, comm=None, epoch=0,
                 seed_time=None, strategy=None):
        apply_env_threads()
        dataset = None if isinstance(data, HeteroSchema) else data
        self.graph = data if dataset is None else data.graph
        init_common(self, _WHERE, "NodeWise, LABOR", sampler, batch_size, bulk_size,
                    queue_size, seed, epoch, shuffle, pipeline, device, dtype, rank, world_size,
                    comm)
        options = _resolve_strategy(strategy, self.graph)
        distributed = not isinstance(self.graph, HeteroGraph)
        self._sample_options = options if distributed else {}
        self.collective, self.last_stats = distributed, None
        self._grids = _grids_of(self.graph, None)
        self.input_type, self.seeds = _hetero_seeds(self.graph, seeds, dataset)
        self.seed_time = check_seed_time(_WHERE, self.graph, seed_time, self.seeds.size)
        self.num_nodes = self.graph.num_nodes[self.input_type]
        self.features = hetero_features(self.graph, features, dataset)
        self.labels = hetero_labels(self.graph, labels, dataset)

    def _produce(self, epoch, start, stats):
        perm = epoch_positions(self.seeds.size, self.seed, epoch, self.shuffle)
        b, k, m = self.batch_size, self.bulk_size, self.seeds.size
        hi = self.batch_range()[1]
        for j in bulk_starts(self, start):
            t0, sent0 = time.perf_counter(), self._bytes_sent()
            part = perm[:1] if j is None else perm[j * b: min(m, min(j + k, hi) * b)]
            mbs = self._sample(part, epoch, self.num_batches + self.rank if j is None else j)
            t1, sent1 = time.perf_counter(), self._bytes_sent()
            add_bytes(stats["sampling_bytes"], sent0, sent1)
            xs = fetch_typed(self.features, mbs)
            t2 = time.perf_counter()
            if j is None:        # padding for the collective calls: sampled, dropped
                continue
            y = self.labels.get(self.input_type)
            batches = [self._finish(make_hetero_batch(mb, x, None if y is None else
                                                      y[mb.n_id[self.input_type]],
                                                      epoch=epoch, dtype=self.dtype))
                       for mb, x in zip(mbs, xs)]
            record(stats, mbs, t0, t1, t2)
            yield batches

    def _sample(self, part, epoch, batch_offset):
        """The minibatches of the seeds at positions ``part``, the first with the global id
        ``batch_offset``."""
        st = None if self.seed_time is None else self.seed_time[part]
        return sample(self.graph, (self.input_type, self.seeds[part]), sampler=self.sampler,
                      batch_size=self.batch_size, seed=self.seed, epoch=epoch,
                      batch_offset=batch_offset, seed_time=st, **self._sample_options)

    def _finish(self, batch):
        if self.device.type != "cpu":
            batch = batch.pin_memory().to(self.device, non_blocking=True)
        return batch

    def __repr__(self):
        return (f"Loader(hetero, input_type={self.input_type!r}, seeds={self.seeds.size}, "
                f"sampler={self.sampler!r}, batch_size={self.batch_size}, "
                f"bulk_size={self.bulk_size})")


def epoch_positions(m, seed, epoch, shuffle):
    """The seed positions epoch ``epoch`` visits, in order (see ``epoch_order``)."""
    return epoch_order(np.arange(m, dtype=np.int64), seed, epoch, shuffle)


def record(stats, mbs, t0, t1, t2):
    """Add a bulk's counts and times to an epoch's stats."""
    t3 = time.perf_counter()
    stats["sample_seconds"] += t1 - t0
    stats["fetch_seconds"] += t2 - t1
    stats["convert_seconds"] += t3 - t2
    stats["batches"] += len(mbs)
    stats["seeds"] += sum(mb.batch_size for mb in mbs)
    nodes = [mb.num_nodes for mb in mbs]
    stats["sampled_nodes"] += sum(sum(n.values()) if isinstance(n, dict) else n for n in nodes)
    edges = [mb.num_sampled_edges for mb in mbs]
    stats["sampled_edges"] += sum(sum(map(sum, e.values())) if isinstance(e, dict) else sum(e)
                                  for e in edges)


def _hetero_seeds(graph, seeds, dataset):
    """``(input type, distinct local ids)``."""
    if seeds is None or isinstance(seeds, str):
        parts = ("train", "val", "test")
        if dataset is None or not dataset.splits:
            fail(ArgumentError, _WHERE, "seeds", "must be (node_type, ids) when data has no "
                 "splits", seeds)
        if seeds is not None and seeds not in parts:
            fail(ArgumentError, _WHERE, "seeds", f"as a string must be one of {parts}", seeds)
        ids = dataset.split()[parts.index(seeds or "train")].copy()
        return dataset.target_type, ids
    node_type, ids = resolve_seeds(_WHERE, graph, seeds)
    srt = np.sort(ids)
    if np.any(srt[1:] == srt[:-1]):
        fail(SeedError, _WHERE, "seeds", "must be distinct (each seed is visited once per "
             "epoch)", int(srt[np.flatnonzero(srt[1:] == srt[:-1])[0]]))
    return node_type, ids
