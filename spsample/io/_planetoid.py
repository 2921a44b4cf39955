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

import numpy as np

from .._errors import DatasetError, DatasetNotFoundError
from .._graph import Graph
from .._validate import fail
from ._dataset import Dataset
from ._files import as_dir, fail_path

__all__ = ["from_planetoid", "planetoid_names"]

_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
_NUM_VAL = 500


def _allowed():
    import scipy.sparse as sp
    from numpy._core.multiarray import _reconstruct

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
    }


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
            IndexError) as exc:
        raise DatasetError(f"{where}: cannot read Planetoid file {str(path)!r}: {exc}") from exc


def planetoid_names(directory):
    """The dataset names ``<name>`` for which ``directory`` holds ``ind.<name>.graph``."""
    return sorted(p.name[4:-6] for p in as_dir("planetoid_names", directory).glob("ind.*.graph"))


def from_planetoid(directory, name=None, *, missing_features="zero", verify=True):
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

    Examples
    --------
    >>> import spsample
    >>> ds = spsample.io.from_planetoid("/work/shared/datasets/planetoid-cora")  # doctest: +SKIP
    >>> ds.num_nodes, ds.num_features, ds.num_classes
    (2708, 1433, 7)
    """
    where = "spsample.io.from_planetoid"
    directory = as_dir(where, directory)
    if missing_features not in ("zero", "nan"):
        fail(DatasetError, where, "missing_features", "must be 'zero' or 'nan'", missing_features)
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
    return _assemble(where, name, raw, test_index, missing_features)


def _pick_name(where, directory, name):
    names = planetoid_names(directory)
    if name is None:
        if len(names) != 1:
            fail(DatasetError, where, "name", f"must be given: {str(directory)!r} holds "
                 f"{len(names)} Planetoid datasets {names}", name)
        return names[0]
    if not isinstance(name, str) or name not in names:
        fail(DatasetNotFoundError, where, "name",
             f"has no ind.<name>.graph in {str(directory)!r} (found {names})", name)
    return name


def _read_index(where, path):
    try:
        return np.array(path.read_text().split(), dtype=np.int64)
    except ValueError as exc:
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


def _assemble(where, name, raw, test_index, missing_features):
    x, y, tx, ty, ally = (raw[k] for k in ("x", "y", "tx", "ty", "ally"))
    allx = raw.get("allx")
    if test_index.size == 0:
        raise DatasetError(f"{where}: ind.{name}.test.index is empty")
    num_train, num_known = y.shape[0], ally.shape[0]
    lo, hi = int(test_index.min()), int(test_index.max())
    if lo < num_known:
        raise DatasetError(f"{where}: ind.{name}.test.index has id {lo} < len(ally) = {num_known}")
    n = hi + 1  # test ids span [lo, hi]; gaps (citeseer) are nodes without features or label
    f = tx.shape[1]
    fill = 0.0 if missing_features == "zero" else np.nan
    features = np.full((n, f), fill, dtype=np.float32)
    known = allx if allx is not None else x
    features[:known.shape[0]] = _dense(known)
    sorted_test = np.sort(test_index)
    # tx row i belongs to node test_index[i] (PyG's x[test_index] = x[sorted_test_index] after
    # stacking tx in sorted order is the same assignment).
    features[test_index] = _dense(tx)
    labels = np.full(n, -1, dtype=np.int64)
    labels[:num_known] = _argmax_or_missing(ally)
    labels[test_index] = _argmax_or_missing(ty)

    graph_dict = raw["graph"]
    src = np.fromiter((u for u, vs in graph_dict.items() for _ in vs), dtype=np.int64)
    dst = np.fromiter((v for vs in graph_dict.values() for v in vs), dtype=np.int64)
    top = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
    if top > n:
        raise DatasetError(f"{where}: ind.{name}.graph names node {top - 1} but features "
                           f"and labels describe {n} nodes")
    graph = Graph.from_edge_index(src, dst, num_nodes=n, symmetrize=True)
    splits = {"default": {
        "train": np.arange(num_train),
        "val": np.arange(num_train, min(num_train + _NUM_VAL, num_known)),
        "test": sorted_test,
    }}
    return Dataset(graph, features=features, labels=labels, splits=splits, name=name)


def _dense(matrix):
    return matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix)


def _argmax_or_missing(onehot):
    onehot = np.asarray(onehot)
    labels = onehot.argmax(axis=1).astype(np.int64)
    labels[~onehot.any(axis=1)] = -1
    return labels
