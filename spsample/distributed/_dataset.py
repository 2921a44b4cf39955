"""``ShardedDataset``: a node-classification dataset spread over a process grid.

The graph is a :class:`DistGraph` (each process row holds one block of rows) and the features
a :class:`FeatureStore` (the same blocks, replicated ``c`` times, fetched by all-to-all; sparse
features stay sparse: CSR blocks, their non-zeros fetched);
labels and splits — ``O(n)`` integers — are held whole by every rank. It offers what
``spsample.Dataset`` offers a training loop (sizes, splits, labels), so
``spsample.train.Trainer`` and ``spsample train`` under ``mpiexec`` take it as they take a
``Dataset``.
"""

import zlib

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, DatasetError, DistributedError
from .._validate import fail
from ..io._dataset import SPLIT_PARTS, split_of
from ._collective import agree, check_same
from ._failure import abort_if_failing_alone
from ._features import FeatureStore
from ._graph import DistGraph
from ._grid import Grid
from ..io import Dataset, read_node_targets

__all__ = ["ShardedDataset"]


class ShardedDataset:
    """A dataset whose graph and features are partitioned over the ranks of a grid.

    Build it with :meth:`load` (each rank reads only its block of an spsample HDF5 file) or
    :meth:`from_dataset` (each rank keeps its block of an in-memory dataset).

    Parameters
    ----------
    graph : DistGraph
    features : FeatureStore
        On the same grid as ``graph``.
    labels : ndarray of int64, shape (n,)
    splits : dict
        ``{name: {"train", "val", "test": int64 node ids}}``.
    name : str
    num_edges : int
        Stored entries of the whole graph.

    Attributes
    ----------
    grid : Grid
    num_nodes, num_edges, num_features, num_classes : int
    sparse_features : bool
        Whether the features are sparse (CSR shards, from a CSR ``/features`` group or a
        ``scipy.sparse`` dataset matrix): batches then carry
        :class:`~spsample.loader.SparseRows`, as for a sparse ``spsample.Dataset``.
    """

    def __init__(self, graph, features, labels, splits, name, num_edges):
        if not isinstance(graph, DistGraph):
            fail(ArgumentTypeError, "ShardedDataset", "graph", "must be a DistGraph",
                 type(graph))
        if not isinstance(features, FeatureStore):
            fail(ArgumentTypeError, "ShardedDataset", "features", "must be a FeatureStore",
                 type(features))
        if features.grid is not graph.grid or features.num_nodes != graph.num_nodes:
            fail(ArgumentError, "ShardedDataset", "features", "must be a FeatureStore of "
                 "the graph's grid and num_nodes", features)
        self.graph, self.features, self.grid = graph, features, graph.grid
        self.labels, self.splits, self.name = labels, splits, name
        self.num_edges = int(num_edges)

    # ------------------------------------------------------------------ construction
    @classmethod
    def load(cls, path, grid, *, replicate_graph=False, permutation=None):
        """Read this rank's blocks of an spsample HDF5 file, plus the labels and splits.

        Parameters
        ----------
        path : str or os.PathLike
            The same dataset on every rank (a shared file, or identical copies).
        grid : Grid
            ``p / c`` process rows of ``c`` replicas: rank ``r`` reads graph and feature rows
            ``grid.block(n)`` only.
        replicate_graph : bool
            Every rank reads the whole graph (sampling needs no communication); the features
            stay sharded.
        permutation : str or os.PathLike, optional
            The permutation file of a relabelled dataset (``spsample partition``): each rank
            reads its blocks of the relabelled file, and graph, features, labels and splits
            are presented in the original ids (see :meth:`DistGraph.load`): the minibatches,
            and the training, of the original dataset.

        Raises
        ------
        DatasetNotFoundError, DatasetError
            On every rank: the file is missing or invalid on any rank, or has no features or
            labels.
        DistributedError
            On every rank: the ranks' files hold different datasets, or the graph has fewer
            rows than the grid has process rows.
        """
        where = "ShardedDataset.load"
        _check_grid(where, grid)
        with abort_if_failing_alone(grid.comm, where):
            return cls._load(path, grid, replicate_graph, permutation)

    @classmethod
    def _load(cls, path, grid, replicate_graph, permutation):

        where, comm = "ShardedDataset.load", grid.comm
        meta = agree(comm, where, lambda: _checked_targets(where, path, read_node_targets))
        _check_same_dataset(comm, where, meta)
        _check_splittable(comm, where, meta["num_nodes"], grid)
        graph = DistGraph.load(path, grid, replicate_graph=replicate_graph,
                               permutation=permutation)
        features = FeatureStore.load(path, grid, permutation=permutation)
        labels, splits = meta["labels"], meta["splits"]
        if permutation is not None:                  # file ids -> the original ids
            old_id = graph.placement.old_id
            labels = graph.placement.by_vertex(labels)
            splits = {name: {k: old_id[v] for k, v in part.items()}
                      for name, part in splits.items()}
        return cls(graph, features, labels, splits, meta["name"], meta["num_edges"])

    @classmethod
    def from_dataset(cls, dataset, grid, *, replicate_graph=False):
        """Keep this rank's blocks of an in-memory ``spsample.Dataset`` (the same on every
        rank); the caller may drop the dataset afterwards.

        Raises
        ------
        ArgumentTypeError, DatasetError, DistributedError
            On every rank, as :meth:`load`.
        """
        where = "ShardedDataset.from_dataset"
        _check_grid(where, grid)
        with abort_if_failing_alone(grid.comm, where):
            return cls._from_dataset(dataset, grid, replicate_graph)

    @classmethod
    def _from_dataset(cls, dataset, grid, replicate_graph):

        where, comm = "ShardedDataset.from_dataset", grid.comm

        def check():
            if not isinstance(dataset, Dataset):
                fail(ArgumentTypeError, where, "dataset", "must be a spsample.Dataset",
                     type(dataset))
            _require_targets(where, dataset.features is not None, dataset.labels, dataset.name)
            return dict(name=dataset.name, num_nodes=dataset.num_nodes,
                        num_edges=dataset.num_edges, num_features=dataset.num_features,
                        weighted=dataset.graph.weights is not None, labels=dataset.labels,
                        splits=dataset.splits)
        meta = agree(comm, where, check)
        _check_same_dataset(comm, where, meta)
        _check_splittable(comm, where, meta["num_nodes"], grid)
        graph = DistGraph.from_graph(dataset.graph, grid, replicate_graph=replicate_graph)
        store = FeatureStore.from_array(dataset.features, grid)     # scipy.sparse: CSR shards
        return cls(graph, store, meta["labels"].copy(), _copied(meta["splits"]), meta["name"],
                   meta["num_edges"])

    # ------------------------------------------------------------------ what a trainer reads
    @property
    def num_nodes(self):
        return self.graph.num_nodes

    @property
    def num_features(self):
        return int(self.features.shape[1])

    @property
    def num_classes(self):
        """``max(labels) + 1``."""
        return int(self.labels.max()) + 1 if self.labels.size else 0

    @property
    def sparse_features(self):
        return self.features.sparse

    def split(self, name=None):
        """The ``(train, val, test)`` int64 node ids of split ``name`` (as
        :meth:`spsample.Dataset.split`)."""
        return split_of("ShardedDataset.split", self.splits, name, self.name)

    @property
    def train_idx(self):
        return self.split()[0]

    @property
    def val_idx(self):
        return self.split()[1]

    @property
    def test_idx(self):
        return self.split()[2]

    def held_rows(self):
        """``(graph rows, feature rows)`` held by this rank."""
        return int(self.graph.indptr.size - 1), int(self.features.shard.shape[0])

    def __repr__(self):
        graph_rows, feature_rows = self.held_rows()
        return (f"ShardedDataset({self.name!r}, num_nodes={self.num_nodes}, "
                f"num_edges={self.num_edges}, num_features={self.num_features}, "
                f"replication={self.grid.replication}, rank={self.grid.rank}/{self.grid.size}, "
                f"graph rows held={graph_rows}, feature rows held={feature_rows})")


def _check_grid(where, grid):
    if not isinstance(grid, Grid):
        fail(ArgumentTypeError, where, "grid", "must be a spsample.distributed.Grid", type(grid))


def _checked_targets(where, path, read):
    meta = read(path)
    _require_targets(where, meta["num_features"] > 0, meta["labels"], meta["name"])
    return meta


def _require_targets(where, has_features, labels, name):
    if not has_features or labels is None:
        missing = "features" if not has_features else "labels"
        raise DatasetError(f"{where}: dataset {name!r} has no {missing} (node classification "
                           "needs both)")


def _fingerprint(meta):
    """What must agree between ranks: sizes, and checksums of the labels and splits."""
    crc = zlib.crc32(np.ascontiguousarray(meta["labels"]).tobytes())
    for name in sorted(meta["splits"]):
        for key in SPLIT_PARTS:
            crc = zlib.crc32(np.ascontiguousarray(meta["splits"][name][key]).tobytes(), crc)
    return (meta["name"], meta["num_nodes"], meta["num_edges"], meta["num_features"],
            meta["weighted"], sorted(meta["splits"]), crc)


def _check_same_dataset(comm, where, meta):
    check_same(comm, where, "dataset (name, nodes, edges, features, weighted, splits, "
               "checksum of labels and splits)", _fingerprint(meta))


def _check_splittable(comm, where, n, grid):
    """Every process row must hold at least one row of the graph."""
    def check():
        if n < grid.num_rows:
            raise DistributedError(
                f"{where}: the graph has {n} rows, fewer than the {grid.num_rows} process rows "
                f"of {grid.size} ranks with replication {grid.replication}: use a larger "
                "replication (at most the number of ranks) or fewer ranks")
    agree(comm, where, check)


def _copied(splits):
    return {name: {key: idx.copy() for key, idx in part.items()}
            for name, part in splits.items()}
