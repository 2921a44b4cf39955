"""The heterogeneous dataset: a HeteroGraph plus per-type features and labels, node splits of a
target type, and edge splits (link prediction)."""

from __future__ import annotations

from dataclasses import dataclass, field


from .._errors import ArgumentTypeError, DatasetError
from ..graph._hetero import HeteroGraph, HeteroSchema
from .._validate import as_index_array, fail
from ._dataset import (SPLIT_PARTS, _check_features, _check_labels, _check_splits, _is_sparse,
                       check_name, split_of)

__all__ = ["HeteroDataset"]


@dataclass(eq=False)
class HeteroDataset:
    """A heterogeneous (or temporal, or knowledge-graph) dataset.

    Parameters
    ----------
    graph : HeteroGraph or distributed.DistHeteroGraph
        A ``DistHeteroGraph`` (:func:`spsample.distributed.load_hetero_dataset`) keeps its
        block rows on each rank; features, labels and splits are then held whole.
    features : dict of str to array or scipy.sparse matrix, optional
        Per node type, ``(num_nodes[type], f_type)`` features (sparse stays sparse).
    labels : dict of str to array_like of int, optional
        Per node type, class ids (``-1``: unlabelled).
    splits : dict, optional
        ``{name: {"train", "val", "test": ids}}``: node ids of ``target_type``.
    target_type : str
        The node type ``splits`` index (and whose labels are predicted); ``""`` if none.
    edge_splits : dict, optional
        ``{"train" | "val" | "test": {relation: (2, E) int64 array [src; dst]}}``: edges of a
        fixed link-prediction split (local ids per type; e.g. a knowledge graph's triples).
    name : str

    Raises
    ------
    ArgumentTypeError, DatasetError
        Naming the argument: unknown node types or relations, shapes that disagree with the
        graph, split ids out of range.
    """

    graph: HeteroGraph    # or a distributed.DistHeteroGraph
    features: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    splits: dict = field(default_factory=dict)
    target_type: str = ""
    edge_splits: dict = field(default_factory=dict)
    name: str = ""

    def __post_init__(self):
        where = "HeteroDataset"
        if not isinstance(self.name, str):
            fail(ArgumentTypeError, where, "name", "must be a str", self.name)
        check_name(where, "name", self.name)
        if not isinstance(self.graph, HeteroSchema):
            fail(ArgumentTypeError, where, "graph", "must be a spsample.HeteroGraph or "
                 "distributed.DistHeteroGraph", type(self.graph))
        counts = self.graph.num_nodes
        self.features = {self._type(t, "features"): _check_features(
            where, f, counts[t]) for t, f in (self.features or {}).items()}
        self.labels = {self._type(t, "labels"): _check_labels(where, y, counts[t])
                       for t, y in (self.labels or {}).items()}
        if self.target_type:
            self._type(self.target_type, "target_type")
        elif self.splits:
            fail(DatasetError, where, "target_type", "must name the node type the splits index",
                 self.target_type)
        n = counts[self.target_type] if self.target_type else 0
        self.splits = _check_splits(where, self.splits or {}, n)
        self.edge_splits = _check_edge_splits(where, self.graph, self.edge_splits or {})

    def _type(self, t, argname):
        return self.graph.node_type(t, where="HeteroDataset", argname=argname)

    @property
    def num_classes(self):
        """Classes of the target type's labels (0 without)."""
        y = self.labels.get(self.target_type)
        return 0 if y is None or y.size == 0 else int(y.max()) + 1

    @property
    def num_features(self):
        """Feature width per node type that has features (dict)."""
        return {t: int(f.shape[1]) for t, f in self.features.items()}

    def split(self, name=None):
        """``(train, val, test)`` ids of the target type (the split ``"default"``, else the
        first, when ``name`` is None)."""
        return split_of("HeteroDataset.split", self.splits, name, self.name)

    @property
    def sparse_features(self):
        return {t: _is_sparse(f) for t, f in self.features.items()}

    def __repr__(self):
        return (f"HeteroDataset(name={self.name!r}, node_types={list(self.graph.node_types)}, "
                f"relations={len(self.graph.relations)}, target_type={self.target_type!r}, "
                f"num_classes={self.num_classes}, splits={list(self.splits)}, "
                f"edge_splits={list(self.edge_splits)})")


def _check_edge_splits(where, graph, edge_splits):
    if not isinstance(edge_splits, dict):
        fail(ArgumentTypeError, where, "edge_splits", "must be a dict {part: {relation: "
             "(2, E) array}}", type(edge_splits))
    out = {}
    counts = graph.num_nodes
    for part, rels in edge_splits.items():
        if part not in SPLIT_PARTS or not isinstance(rels, dict):
            fail(DatasetError, where, "edge_splits", "must map 'train'/'val'/'test' to dicts "
                 "of relations", part)
        out[part] = {}
        for key, arr in rels.items():
            rel = graph.relation(key, where=where, argname="edge_splits")
            name = f"edge_splits[{part!r}][{rel!r}]"
            ei = as_index_array(where, name, arr, ndim=2, error_cls=DatasetError)
            if ei.shape[0] != 2:
                fail(DatasetError, where, name, "must have shape (2, E)", ei.shape)
            for row, t in ((0, rel[0]), (1, rel[2])):
                if ei.shape[1] and (ei[row].min() < 0 or ei[row].max() >= counts[t]):
                    fail(DatasetError, where, name, f"has an id outside [0, {counts[t]}) of "
                         f"type {t!r}", show_value=False)
            out[part][rel] = ei
    return out


