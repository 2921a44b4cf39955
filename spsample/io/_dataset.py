"""The in-memory dataset: a graph plus optional node features, labels and splits."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._errors import ArgumentTypeError, DatasetError
from .._graph import Graph
from .._validate import as_index_array, fail

__all__ = ["Dataset", "SPLIT_PARTS"]

#: The three index sets of every split, in this order.
SPLIT_PARTS = ("train", "val", "test")


@dataclass(eq=False)
class Dataset:
    """A node-property-prediction dataset.

    Parameters
    ----------
    graph : Graph
        The adjacency, ``n`` nodes; row ``v`` lists the vertices ``v`` aggregates from.
    features : ndarray, shape (n, f), optional
        Node features of any numeric dtype, kept as given (not copied, never modified).
    labels : array_like of int, shape (n,), optional
        Class ids ``0 .. num_classes - 1``; ``-1`` marks an unlabelled node. Stored as a new
        int64 array.
    splits : dict of str to dict of str to array_like of int
        ``splits[name] = {"train": idx, "val": idx, "test": idx}``: node ids in ``[0, n)``,
        stored as new int64 arrays. The split named ``"default"`` (else the first) is the one
        :attr:`train_idx`, :attr:`val_idx` and :attr:`test_idx` return.
    name : str
        A short name (``"cora"``), stored in the file.

    Raises
    ------
    ArgumentTypeError
        ``graph`` is not a :class:`~spsample.Graph`, or an array has a non-numeric dtype.
    DatasetError
        Shapes disagree with ``n``, a label is below -1, a split index is outside ``[0, n)``, a
        split lacks one of ``train``/``val``/``test``; the message names the argument.

    Examples
    --------
    >>> import numpy as np, spsample
    >>> g = spsample.Graph.from_edge_index([0, 1], [1, 2], num_nodes=3, symmetrize=True)
    >>> ds = spsample.Dataset(g, features=np.eye(3, dtype=np.float32), labels=[0, 1, -1],
    ...                       splits={"default": {"train": [0], "val": [1], "test": [2]}})
    >>> ds.num_nodes, ds.num_features, ds.num_classes, ds.train_idx.tolist()
    (3, 3, 2, [0])
    """

    graph: Graph
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    splits: dict = field(default_factory=dict)
    name: str = ""

    def __post_init__(self):
        where = "Dataset"
        if not isinstance(self.graph, Graph):
            fail(ArgumentTypeError, where, "graph", "must be a spsample.Graph", type(self.graph))
        if not isinstance(self.name, str):
            fail(ArgumentTypeError, where, "name", "must be a str", self.name)
        n = self.graph.num_nodes
        if self.features is not None:
            self.features = _check_features(where, self.features, n)
        if self.labels is not None:
            self.labels = _check_labels(where, self.labels, n)
        self.splits = _check_splits(where, self.splits, n)

    # ------------------------------------------------------------------ sizes
    @property
    def num_nodes(self):
        """Number of nodes ``n``."""
        return self.graph.num_nodes

    @property
    def num_edges(self):
        """Number of stored CSR entries (an undirected edge counts twice, a self-loop once)."""
        return self.graph.num_edges

    @property
    def num_features(self):
        """Feature width ``f`` (0 without features)."""
        return 0 if self.features is None else int(self.features.shape[1])

    @property
    def num_classes(self):
        """``max(labels) + 1`` (0 without labels or when every node is unlabelled)."""
        if self.labels is None or self.labels.size == 0:
            return 0
        return int(self.labels.max()) + 1

    # ------------------------------------------------------------------ splits
    def split(self, name=None):
        """The ``(train, val, test)`` int64 index arrays of split ``name``.

        ``name=None`` picks the split named ``"default"`` if present, else the first one.
        """
        if not self.splits:
            raise DatasetError(f"Dataset.split: dataset {self.name!r} has no splits")
        if name is None:
            name = "default" if "default" in self.splits else next(iter(self.splits))
        if name not in self.splits:
            fail(DatasetError, "Dataset.split", "name",
                 f"is not a split of this dataset (splits: {list(self.splits)})", name)
        part = self.splits[name]
        return tuple(part[key] for key in SPLIT_PARTS)

    @property
    def train_idx(self):
        """Training node ids of the default split, int64, shape (n_train,)."""
        return self.split()[0]

    @property
    def val_idx(self):
        """Validation node ids of the default split, int64, shape (n_val,)."""
        return self.split()[1]

    @property
    def test_idx(self):
        """Test node ids of the default split, int64, shape (n_test,)."""
        return self.split()[2]

    def __repr__(self):
        return (f"Dataset(name={self.name!r}, num_nodes={self.num_nodes}, "
                f"num_edges={self.num_edges}, num_features={self.num_features}, "
                f"num_classes={self.num_classes}, splits={list(self.splits)})")


def _check_features(where, features, n):
    if not isinstance(features, np.ndarray):
        try:
            features = np.asarray(features)
        except Exception as exc:
            fail(ArgumentTypeError, where, "features", f"cannot be read as an array ({exc})",
                 show_value=False)
    if features.dtype == object or features.dtype.kind not in "biuf":
        fail(ArgumentTypeError, where, "features", f"must hold real numbers, not {features.dtype}",
             show_value=False)
    if features.ndim != 2:
        fail(DatasetError, where, "features", "must be 2-dimensional (n, f)", features.shape)
    if features.shape[0] != n:
        fail(DatasetError, where, "features", f"must have one row per node ({n})", features.shape)
    return features


def _check_labels(where, labels, n):
    labels = as_index_array(where, "labels", labels, error_cls=DatasetError)
    if labels.size != n:
        fail(DatasetError, where, "labels", f"must have one entry per node ({n})", labels.shape)
    if labels.size and labels.min() < -1:
        fail(DatasetError, where, "labels", "must be >= -1 (-1 = unlabelled)", int(labels.min()))
    return labels


def _check_splits(where, splits, n):
    if not isinstance(splits, dict):
        fail(ArgumentTypeError, where, "splits", "must be a dict {name: {'train', 'val', 'test'}}",
             type(splits))
    checked = {}
    for name, part in splits.items():
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            fail(DatasetError, where, "splits", "must have non-empty str names without '/'", name)
        if not isinstance(part, dict) or set(part) != set(SPLIT_PARTS):
            keys = sorted(part) if isinstance(part, dict) else type(part)
            fail(DatasetError, where, f"splits[{name!r}]",
                 "must be a dict with exactly the keys 'train', 'val', 'test'", keys)
        checked[name] = {}
        for key in SPLIT_PARTS:
            arg = f"splits[{name!r}][{key!r}]"
            idx = as_index_array(where, arg, part[key], error_cls=DatasetError)
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
                fail(DatasetError, where, arg, f"has a node id outside [0, {n})", bad)
            checked[name][key] = idx
    return checked
