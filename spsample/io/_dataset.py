"""The in-memory dataset: a graph plus optional node features, labels and splits."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._errors import ArgumentTypeError, DatasetError
from ..graph._graph import Graph
from .._validate import as_index_array, check_memory, fail
from ._disk_graph import DiskGraph

__all__ = ["Dataset", "SPLIT_PARTS", "SPARSE_DENSITY", "features_as", "check_sparse_option"]

#: The three index sets of every split, in this order.
SPLIT_PARTS = ("train", "val", "test")

#: Features with at most this fraction of non-zero entries are kept sparse by default.
SPARSE_DENSITY = 0.05


@dataclass(eq=False)
class Dataset:
    """A node-property-prediction dataset.

    Parameters
    ----------
    graph : Graph or DiskGraph
        The adjacency, ``n`` nodes; row ``v`` lists the vertices ``v`` aggregates from. A
        ``DiskGraph`` (``spsample.load(path, mmap=True)``) stays on disk.
    features : ndarray or scipy.sparse matrix, shape (n, f), optional
        Node features of any numeric dtype, kept as given (not copied, never modified); a
        sparse matrix is kept sparse (converted to CSR if in another sparse format; its
        structure is checked). Sparse features stay sparse in files and in the loader's
        batches (:class:`~spsample.loader.SparseRows`).
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
    features: object = None
    labels: np.ndarray | None = None
    splits: dict = field(default_factory=dict)
    name: str = ""

    def __post_init__(self):
        where = "Dataset"
        if not isinstance(self.graph, (Graph, DiskGraph)):
            fail(ArgumentTypeError, where, "graph", "must be a spsample.Graph (or a DiskGraph)",
                 type(self.graph))
        if not isinstance(self.name, str):
            fail(ArgumentTypeError, where, "name", "must be a str", self.name)
        check_name(where, "name", self.name)
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
    def sparse_features(self):
        """Whether the features are a ``scipy.sparse`` CSR matrix."""
        return _is_sparse(self.features)

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
        return split_of("Dataset.split", self.splits, name, self.name)

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


def split_of(where, splits, name, dataset_name):
    """``(train, val, test)`` of ``splits[name]``; ``name=None`` picks the split named
    ``"default"`` if present, else the first one. The shared rule of every dataset's
    ``split``; ``where`` names the caller in errors.

    Raises
    ------
    DatasetError
        No splits, or ``name`` is not one of them.
    """
    if not splits:
        raise DatasetError(f"{where}: dataset {dataset_name!r} has no splits")
    if name is None:
        name = "default" if "default" in splits else next(iter(splits))
    if name not in splits:
        fail(DatasetError, where, "name",
             f"is not a split of this dataset (splits: {list(splits)})", name)
    return tuple(splits[name][key] for key in SPLIT_PARTS)


def _is_sparse(value):
    return type(value).__module__.startswith("scipy.sparse")


def _check_sparse_features(where, features, n):
    """A sparse feature matrix as CSR, its structure checked (O(nnz), no copy when CSR)."""
    import scipy.sparse as sp

    if len(features.shape) != 2:
        fail(DatasetError, where, "features", "must be 2-dimensional (n, f)", features.shape)
    if features.format != "csr":
        features = features.tocsr()
    if features.dtype == object or features.dtype.kind not in "biuf":
        fail(ArgumentTypeError, where, "features", f"must hold real numbers, not "
             f"{features.dtype}", show_value=False)
    if features.shape[0] != n:
        fail(DatasetError, where, "features", f"must have one row per node ({n})",
             features.shape)
    try:  # a new matrix object sharing the arrays: check_format may rebind its attributes
        checked = sp.csr_matrix((features.data, features.indices, features.indptr),
                                shape=features.shape)
        checked.check_format(full_check=True)
    except (ValueError, TypeError) as exc:
        fail(DatasetError, where, "features", f"is not a valid CSR matrix ({exc})",
             show_value=False)
    return checked


def check_sparse_option(where, value, name="sparse_features"):
    """``value`` if it is True, False or None, else :class:`ArgumentTypeError` naming it."""
    if value is not None and not isinstance(value, (bool, np.bool_)):
        fail(ArgumentTypeError, where, name, "must be True, False or None (auto)", value)
    return None if value is None else bool(value)


def features_as(where, name, matrix, sparse_features, what):
    """Features in the form asked for: a CSR ``matrix`` kept sparse or made dense.

    Parameters
    ----------
    where : str
        The reader, for messages.
    name : str
        Its argument that chooses the form (``"sparse_features"``).
    matrix : scipy.sparse matrix, shape (n, f)
    sparse_features : bool or None
        ``True``: keep sparse; ``False``: dense; ``None``: sparse when at most
        :data:`SPARSE_DENSITY` of the entries are non-zero.
    what : str
        What the features are, for the memory message.
    """

    sparse_features = check_sparse_option(where, sparse_features, name)
    rows, cols = matrix.shape
    if sparse_features is None:
        sparse_features = matrix.nnz <= SPARSE_DENSITY * rows * cols
    if sparse_features:
        return matrix
    check_memory(where, name, rows * cols * matrix.dtype.itemsize,
                 f"{what} as a dense {rows:,d} x {cols:,d} {matrix.dtype} array",
                 f"pass {name}=True to keep them sparse")
    return matrix.toarray()


def _check_features(where, features, n):
    if _is_sparse(features):
        return _check_sparse_features(where, features, n)
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
    """Labels as int64, one per node, ``-1 <= label < n``: ``num_classes`` (the largest label
    + 1) is the width of every model's output layer and logits, so a single huge label (e.g.
    2**40) would make a model ask for terabytes; with at most ``n`` classes it stays within
    the graph's size."""
    labels = as_index_array(where, "labels", labels, error_cls=DatasetError)
    if labels.size != n:
        fail(DatasetError, where, "labels", f"must have one entry per node ({n})", labels.shape)
    if labels.size and labels.min() < -1:
        fail(DatasetError, where, "labels", "must be >= -1 (-1 = unlabelled)", int(labels.min()))
    if labels.size and labels.max() >= max(n, 2):
        fail(DatasetError, where, "labels", f"must be class ids below the number of nodes "
             f"({max(n, 2)}): num_classes = the largest label + 1 sizes the model's output, "
             "so renumber the classes 0 .. C-1", int(labels.max()))
    return labels


def check_name(where, argname, name):
    """``name`` (a dataset or split name) must be UTF-8 encodable, as files store it."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        fail(DatasetError, where, argname, "is not valid Unicode text (a lone surrogate): "
             "names must be encodable as UTF-8", name)


def _check_splits(where, splits, n):
    if not isinstance(splits, dict):
        fail(ArgumentTypeError, where, "splits", "must be a dict {name: {'train', 'val', 'test'}}",
             type(splits))
    checked = {}
    for name, part in splits.items():
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            fail(DatasetError, where, "splits", "must have non-empty str names without '/'", name)
        check_name(where, "splits", name)
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
