"""Planetoid (Yang et al. 2016) citation datasets: ``ind.<name>.{x,y,tx,ty,allx,ally,graph}``.

The files are Python-2 pickles. Unpickling can run arbitrary code, so they are read with a
restricted unpickler that resolves only the handful of NumPy/SciPy/builtin names these files
use, and their SHA-256 is checked against a ``SHA256SUMS`` file when one lies beside them.

Node order and split follow Kipf & Welling's ``load_data`` and PyG's ``read_planetoid_data``:
nodes ``0 .. len(ally) - 1`` are the ``allx``/``ally`` rows, the remaining ones the test nodes,
placed at the positions ``ind.<name>.test.index`` gives; train = ``range(len(y))``, val =
``range(len(y), len(y) + 500)``, test = the test index (sorted).
"""

import collections
import hashlib
import pickle
import warnings

import numpy as np

from .._errors import (
    ArgumentError,
    ArgumentTypeError,
    DatasetError,
    DatasetNotFoundError,
    SpsampleWarning,
)
from ..graph._graph import Graph
from .._validate import fail
from ._dataset import Dataset, check_sparse_option, features_as
from ._files import as_bool, as_dir, fail_path
from ._untrusted import check_count_by_file, check_dense, csr_from_parts

__all__ = ["from_planetoid", "planetoid_names"]

_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
_NUM_VAL = 500


def _allowed():
    import scipy.sparse as sp

    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct

    return {
        ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
        ("scipy.sparse._csr", "csr_matrix"): sp.csr_matrix,
        ("collections", "defaultdict"): collections.defaultdict,
        ("__builtin__", "list"): list,
        ("builtins", "list"): list,
        # Python 3 writes bytes in protocols <= 2 as _codecs.encode(text, "latin1")
        ("_codecs", "encode"): _latin1_bytes,
    }


def _latin1_bytes(text, encoding="latin1"):
    """The one use of ``_codecs.encode`` protocol-2 pickles make: latin-1 text to bytes."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise pickle.UnpicklingError(f"refusing _codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the NumPy/SciPy/builtin names Planetoid files use; refuses the rest."""

    def find_class(self, module, name):
        try:
            return _allowed()[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing to load {module}.{name}: not a class Planetoid files need") from None


def _unpickle(where, path):
    try:
        with open(path, "rb") as f:
            return _RestrictedUnpickler(f, encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
            IndexError, KeyError, MemoryError, OverflowError) as exc:
        raise DatasetError(f"{where}: cannot read Planetoid file {str(path)!r}: "
                           f"{type(exc).__name__}: {exc}") from exc


def planetoid_names(directory):
    """The dataset names ``<name>`` for which ``directory`` holds ``ind.<name>.graph``."""
    return sorted(p.name[4:-6] for p in as_dir("planetoid_names", directory).glob("ind.*.graph"))


def from_planetoid(directory, name=None, *, missing_features="zero", verify=True,
                   sparse_features=None):
    """Read a Planetoid dataset (cora, citeseer, pubmed) from its pickles.

    Parameters
    ----------
    directory : str or os.PathLike
        Folder holding ``ind.<name>.x``, ``.y``, ``.tx``, ``.ty``, ``.allx`` (optional: pubmed's
        copy here lacks it), ``.ally``, ``.graph`` and ``.test.index``.
    name : str, optional
        ``"cora"``, ``"citeseer"``, ...; may be omitted when the folder holds one dataset.
    missing_features : {"zero", "nan"}
        How rows without features are filled: citeseer's 15 test-index gaps and, when ``allx``
        is absent, every node outside ``x`` and ``tx``. ``"zero"`` is PyG's convention;
        ``"nan"`` makes such rows impossible to use by accident.
    verify : bool
        Check the files' SHA-256 against ``SHA256SUMS`` in ``directory`` or its parent, when
        that file lists them (before anything is unpickled).
    sparse_features : bool or None
        Return the features as a ``scipy.sparse`` CSR matrix (``True``), a dense array
        (``False``), or sparse when at most 5 % of the entries are non-zero (``None``).

    Returns
    -------
    Dataset
        ``n = len(ally) + span of the test index`` nodes; graph symmetrised (each undirected
        edge stored in both rows, self-loops kept once); features float32, shape (n, f);
        labels int64 (``-1`` for nodes with an all-zero label row, e.g. citeseer's gaps); one
        split ``"default"``: train ``range(len(y))``, val the next 500 nodes (fewer only if
        ``ally`` is shorter), test the sorted ``test.index``.

    Raises
    ------
    DatasetNotFoundError
        ``directory`` or a required file is missing.
    DatasetError
        A file fails its checksum, refuses to unpickle, or has inconsistent shapes.
    ResourceLimitError
        Dense features would not fit in memory (``sparse_features``).

    Warns
    -----
    SpsampleWarning
        When more than a tenth of the nodes have no feature row (pubmed without ``allx``:
        18,657 of 19,717).

    Examples
    --------
    >>> import spsample
    >>> ds = spsample.io.from_planetoid("datasets/planetoid-cora")  # doctest: +SKIP
    >>> ds.num_nodes, ds.num_features, ds.num_classes  # doctest: +SKIP
    (2708, 1433, 7)
    """
    where = "spsample.io.from_planetoid"
    directory = as_dir(where, directory)
    if missing_features not in ("zero", "nan"):
        fail(ArgumentError, where, "missing_features", "must be 'zero' or 'nan'", missing_features)
    verify = as_bool(where, "verify", verify)
    sparse_features = check_sparse_option(where, sparse_features)
    name = _pick_name(where, directory, name)
    paths = {part: directory / f"ind.{name}.{part}" for part in _PARTS + ("test.index",)}
    for part, p in paths.items():
        if part != "allx" and not p.is_file():
            fail_path(DatasetNotFoundError, where, "directory", f"lacks {p.name}", directory)
    if not paths["allx"].is_file():
        del paths["allx"]
    if verify:
        _verify(where, directory, paths.values())
    raw = {part: _unpickle(where, p) for part, p in paths.items() if part != "test.index"}
    test_index = _read_index(where, paths["test.index"])
    return _assemble(where, name, raw, test_index, paths,
                     dict(missing_features=missing_features, sparse_features=sparse_features))


def _pick_name(where, directory, name):
    names = planetoid_names(directory)
    if name is None:
        if len(names) != 1:
            fail(DatasetError, where, "name", f"must be given: {str(directory)!r} holds "
                 f"{len(names)} Planetoid datasets {names}", name)
        return names[0]
    if not isinstance(name, str):
        fail(ArgumentTypeError, where, "name", "must be a str", name)
    if name not in names:
        fail(DatasetNotFoundError, where, "name",
             f"has no ind.<name>.graph in {str(directory)!r} (found {names})", name)
    return name


def _read_index(where, path):
    try:
        return np.array(path.read_text(encoding="utf-8").split(), dtype=np.int64)
    except (ValueError, OverflowError) as exc:  # UnicodeDecodeError is a ValueError
        raise DatasetError(f"{where}: {str(path)!r} must hold one integer per line") from exc


def _verify(where, directory, paths):
    """Compare SHA-256 sums with ``SHA256SUMS`` beside ``directory``; unlisted files pass."""
    for sums in (directory / "SHA256SUMS", directory.parent / "SHA256SUMS"):
        if sums.is_file():
            break
    else:
        return
    expected = {}
    for line in sums.read_text().splitlines():
        digest, _, rel = line.strip().partition(" ")
        rel = rel.strip().lstrip("*")
        expected[rel.removeprefix("./")] = digest.lower()
    for p in paths:
        rel = p.relative_to(sums.parent).as_posix()
        if rel in expected:
            actual = hashlib.sha256(p.read_bytes()).hexdigest()
            if actual != expected[rel]:
                raise DatasetError(f"{where}: {str(p)!r} fails its SHA-256 check against "
                                   f"{str(sums)!r} (expected {expected[rel]}, got {actual}); "
                                   "refusing to unpickle it")


def _check_shapes(where, name, raw, test_index):
    """Raise :class:`DatasetError` unless the unpickled parts fit together (see the module doc).

    Returns the parts as 2-D arrays or sparse matrices, ``allx`` None when absent.
    """
    def bad(part, problem):
        raise DatasetError(f"{where}: ind.{name}.{part} {problem}")

    parts = {}
    for part in ("x", "tx", "allx", "y", "ty", "ally"):
        value = raw.get(part)
        if value is None and part == "allx":
            parts[part] = None
            continue
        if hasattr(value, "toarray"):
            value = _checked_csr(where, f"ind.{name}.{part}", value)
        else:
            if not isinstance(value, np.ndarray):
                bad(part, f"must hold an array or a sparse matrix, not {type(value).__name__}")
            if value.dtype == object or value.dtype.kind not in "biuf":
                bad(part, f"must hold numbers, not {value.dtype}")
        if len(value.shape) != 2:
            bad(part, f"must be 2-dimensional, not of shape {value.shape}")
        parts[part] = value
    x, tx, allx, y, ty, ally = (parts[k] for k in ("x", "tx", "allx", "y", "ty", "ally"))
    width = tx.shape[1]
    for part in ("x", "allx"):
        if parts[part] is not None and parts[part].shape[1] != width:
            bad(part, f"has {parts[part].shape[1]} feature columns but tx has {width}")
    for part in ("y", "ally"):
        if parts[part].shape[1] != ty.shape[1]:
            bad(part, f"has {parts[part].shape[1]} label columns but ty has {ty.shape[1]}")
    for a, b in (("x", "y"), ("tx", "ty"), ("allx", "ally")):
        if parts[a] is not None and parts[a].shape[0] != parts[b].shape[0]:
            bad(a, f"has {parts[a].shape[0]} rows but {b} has {parts[b].shape[0]}")
    if y.shape[0] > ally.shape[0]:
        bad("y", f"has {y.shape[0]} rows, more than ally ({ally.shape[0]})")
    if test_index.size != ty.shape[0]:
        bad("test.index", f"lists {test_index.size} nodes but ty has {ty.shape[0]} rows")
    if test_index.size == 0:
        bad("test.index", "is empty")
    if np.unique(test_index).size != test_index.size:
        bad("test.index", "lists a node twice")
    if not isinstance(raw["graph"], dict):
        bad("graph", f"must hold a dict of adjacency lists, not {type(raw['graph']).__name__}")
    return x, y, tx, ty, allx, ally


def _checked_csr(where, what, matrix):
    """A new CSR matrix from the parts of an unpickled one, after checking them (the pickle
    sets ``indptr``, ``indices`` and ``shape`` directly: nothing checked them yet)."""
    state = getattr(matrix, "__dict__", {})
    missing = [k for k in ("data", "indices", "indptr", "_shape") if k not in state]
    if missing:
        raise DatasetError(f"{where}: {what} holds a sparse matrix without {missing}")
    return csr_from_parts(where, what, state["data"], state["indices"], state["indptr"],
                          state["_shape"])


def _graph_edges(where, name, graph_dict, path):
    """``(src, dst)`` int64 arrays of a Planetoid ``{node: [neighbours]}`` dict.

    The number of entries is bounded by the file's size first: lists shared between keys
    would otherwise let a small pickle expand into billions of edges."""
    try:
        count = sum(len(vs) for vs in graph_dict.values())
    except TypeError as exc:
        raise DatasetError(f"{where}: ind.{name}.graph must map integer node ids to lists of "
                           f"integer node ids ({exc})") from exc
    check_count_by_file(where, f"ind.{name}.graph", count, path)
    try:
        src = np.fromiter((u for u, vs in graph_dict.items() for _ in vs), dtype=np.int64)
        dst = np.fromiter((v for vs in graph_dict.values() for v in vs), dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DatasetError(f"{where}: ind.{name}.graph must map integer node ids to lists of "
                           f"integer node ids ({exc})") from exc
    return src, dst


def _check_gaps(where, name, n, num_rows):
    """Refuse a test index whose gaps outnumber the nodes with rows (citeseer has 15 gaps in
    3,327 nodes): ``n`` follows from one number in a text file."""
    if n - num_rows > num_rows:
        raise DatasetError(f"{where}: ind.{name}.test.index names node {n - 1}, leaving "
                           f"{n - num_rows:,d} nodes without features or labels (more than "
                           f"the {num_rows:,d} with them)")


def _features(where, name, known, tx, test_index, n, options):
    """The (n, f) float32 features: ``known`` rows first, ``tx`` row ``i`` at node
    ``test_index[i]``, the fill row (zeros or NaN) elsewhere; sparse or dense as asked."""
    import scipy.sparse as sp

    k, t, f = known.shape[0], tx.shape[0], tx.shape[1]
    source = np.full(n, k + t, dtype=np.int64)          # row k + t of the stack: the fill row
    source[:k] = np.arange(k)
    source[test_index] = k + np.arange(t)
    missing = int(np.count_nonzero(source == k + t))
    nan_fill = options["missing_features"] == "nan" and missing
    fill = np.full((1, f), np.nan if nan_fill else 0.0, dtype=np.float32)
    parts = [sp.csr_matrix(part, dtype=np.float32) for part in (known, tx, fill)]
    nnz = sum(p.nnz for p in parts[:2]) + (missing * f if nan_fill else 0)
    check_dense(where, "directory", (nnz, 3), np.float32, f"the entries of ind.{name}",
                "the Planetoid files declare more than fits in memory")
    matrix = sp.vstack(parts, format="csr")[source]
    if missing * 10 > n:
        warnings.warn(f"{where}: {missing:,d} of the {n:,d} nodes of ind.{name} have no feature "
                      f"row (filled with {'NaN' if nan_fill else 'zeros'}); only "
                      f"{n - missing:,d} nodes have features", SpsampleWarning, stacklevel=4)
    return features_as(where, "sparse_features", matrix, options["sparse_features"],
                       f"the features of ind.{name}")


def _assemble(where, name, raw, test_index, paths, options):
    x, y, tx, ty, allx, ally = _check_shapes(where, name, raw, test_index)
    num_train, num_known = y.shape[0], ally.shape[0]
    lo, hi = int(test_index.min()), int(test_index.max())
    if lo < num_known:
        raise DatasetError(f"{where}: ind.{name}.test.index has id {lo} < len(ally) = {num_known}")
    n = hi + 1  # test ids span [lo, hi]; gaps (citeseer) are nodes without features or label
    _check_gaps(where, name, n, num_known + test_index.size)
    # tx row i belongs to node test_index[i] (PyG's x[test_index] = x[sorted_test_index] after
    # stacking tx in sorted order is the same assignment).
    features = _features(where, name, allx if allx is not None else x, tx, test_index, n,
                         options)
    sorted_test = np.sort(test_index)
    labels = np.full(n, -1, dtype=np.int64)
    labels[:num_known] = _argmax_or_missing(ally)
    labels[test_index] = _argmax_or_missing(ty)

    src, dst = _graph_edges(where, name, raw["graph"], paths["graph"])
    top = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
    if top > n:
        raise DatasetError(f"{where}: ind.{name}.graph names node {top - 1} but features "
                           f"and labels describe {n} nodes")
    try:
        graph = Graph.from_edge_index(src, dst, num_nodes=n, symmetrize=True)
    except (ArgumentError, ArgumentTypeError) as exc:
        raise DatasetError(f"{where}: ind.{name}.graph holds an invalid graph: {exc}") from exc
    splits = {"default": {
        "train": np.arange(num_train),
        "val": np.arange(num_train, min(num_train + _NUM_VAL, num_known)),
        "test": sorted_test,
    }}
    return Dataset(graph, features=features, labels=labels, splits=splits, name=name)


def _argmax_or_missing(onehot):
    onehot = np.asarray(onehot)
    labels = onehot.argmax(axis=1).astype(np.int64)
    labels[~onehot.any(axis=1)] = -1
    return labels
