"""Converters from public graph formats into :class:`Dataset`.

Convention everywhere: row ``v`` of the CSR lists the vertices ``v`` aggregates from. An edge
``u v`` of an edge list (or ``src,dst`` row) is a message ``u -> v``, so ``u`` lands in row ``v``
(PyG's ``edge_index`` convention). Undirected sources are symmetrised, so each undirected edge
is stored in both rows and a self-loop once. Self-loops are kept as given.
"""

import csv
import json

import numpy as np

from .._errors import (
    ArgumentError,
    ArgumentTypeError,
    DatasetError,
    DatasetNotFoundError,
    ResourceLimitError,
)
from ..graph._graph import Graph
from .._validate import as_int, check_memory, fail, format_bytes
from ._dataset import Dataset, check_sparse_option, features_as
from ._files import (as_bool, as_dir, as_file, data_lines, fail_path, read_integer_columns,
                     read_npz, read_table)
from ._untrusted import csr_from_parts

__all__ = ["from_npz_gnnbench", "from_heterophilous_npz", "from_musae", "from_edge_list",
           "from_csr_npz", "from_scipy", "from_ogb"]


# ---------------------------------------------------------------------- npz formats
def from_npz_gnnbench(path, *, symmetrize=False, sparse_features=None):
    """Read a gnn-benchmark (Shchur et al. 2018) ``.npz``: ``adj_*``, ``attr_*``, ``labels``.

    Parameters
    ----------
    path : str or os.PathLike
        An archive with ``adj_data, adj_indices, adj_indptr, adj_shape`` (a CSR adjacency),
        optionally ``attr_data, attr_indices, attr_indptr, attr_shape`` (or a dense
        ``attr_matrix``) and ``labels``. Pickled members (``idx_to_node``) are never read.
    symmetrize : bool
        Add every reverse edge. ``False`` (default) keeps the stored direction: row ``i`` of
        ``A`` (the papers ``i`` cites) becomes the row ``i`` aggregates from.
    sparse_features : bool or None
        For CSR ``attr_*`` features: keep them a ``scipy.sparse`` CSR matrix (``True``),
        densify them (``False``), or keep them sparse when at most 5 % of the entries are
        non-zero (``None``, default). A dense ``attr_matrix`` stays dense.

    Returns
    -------
    Dataset
        Graph with ``nnz(A)`` entries (unweighted when every value is 1); features shape
        (n, f), stored dtype (float32); labels int64; no splits (the benchmark draws random
        ones).
    """
    where = "spsample.io.from_npz_gnnbench"
    symmetrize = as_bool(where, "symmetrize", symmetrize)
    sparse_features = check_sparse_option(where, sparse_features)
    path = as_file(where, path)
    z = read_npz(where, path, ["adj_data", "adj_indices", "adj_indptr", "adj_shape"],
                 optional=["attr_data", "attr_indices", "attr_indptr", "attr_shape",
                           "attr_matrix", "labels"])
    adj = _csr_parts(where, path, z, "adj")
    graph = _graph_from_matrix(where, adj, symmetrize, path=path)
    features = None
    if "attr_data" in z:
        features = features_as(where, "sparse_features", _csr_parts(where, path, z, "attr"),
                               sparse_features, f"'attr_*' of {path.name}")
    elif "attr_matrix" in z:
        features = z["attr_matrix"]
    return _dataset(where, path, graph, features=features, labels=z.get("labels"),
                    name=path.stem)


def _csr_parts(where, path, z, prefix):
    """The CSR matrix stored as ``<prefix>_{data,indices,indptr,shape}`` in archive ``z``,
    its structure checked (:func:`~spsample.io._untrusted.csr_from_parts`)."""
    keys = [f"{prefix}_{k}" for k in ("data", "indices", "indptr", "shape")]
    missing = [k for k in keys if k not in z]
    if missing:
        raise DatasetError(f"{where}: {str(path)!r} lacks the array(s) {missing}")
    data, indices, indptr, shape = (z[k] for k in keys)
    if shape.shape != (2,) or shape.dtype.kind not in "iu":
        raise DatasetError(f"{where}: {str(path)!r} holds an invalid CSR matrix "
                           f"'{prefix}_*': {keys[3]} must hold two integers, not {shape!r:.60}")
    return csr_from_parts(where, f"{str(path)!r}: the CSR matrix '{prefix}_*'", data, indices,
                          indptr, tuple(int(s) for s in shape))


def from_heterophilous_npz(path):
    """Read a heterophilous-graphs benchmark (Platonov et al. 2023) ``.npz``.

    Parameters
    ----------
    path : str or os.PathLike
        An archive with ``node_features`` (n, f), ``node_labels`` (n,), ``edges`` (E, 2; each
        undirected edge once) and ``train_masks``, ``val_masks``, ``test_masks`` (k, n).

    Returns
    -------
    Dataset
        Graph symmetrised (``2 E`` entries without self-loops); features as stored; labels
        int64; ``k`` splits named ``"0" .. str(k - 1)`` (the first is the default).
    """
    where = "spsample.io.from_heterophilous_npz"
    path = as_file(where, path)
    z = read_npz(where, path, ["node_features", "node_labels", "edges", "train_masks",
                               "val_masks", "test_masks"])
    if z["node_labels"].ndim != 1:
        raise DatasetError(f"{where}: 'node_labels' in {str(path)!r} must have shape (n,), "
                           f"not {z['node_labels'].shape}")
    n = z["node_labels"].shape[0]
    edges = z["edges"]
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise DatasetError(f"{where}: 'edges' in {str(path)!r} must have shape (E, 2), "
                           f"not {edges.shape}")
    graph = _graph(where, path, edges[:, 0], edges[:, 1], n, symmetrize=True)
    masks = [np.atleast_2d(z[f"{part}_masks"]) for part in ("train", "val", "test")]
    if len({m.shape for m in masks}) != 1 or masks[0].shape[1] != n:
        raise DatasetError(f"{where}: the masks in {str(path)!r} must all have shape (k, {n}), "
                           f"not {[m.shape for m in masks]}")
    splits = {str(i): {part: np.flatnonzero(m[i]) for part, m in zip(("train", "val", "test"),
                                                                      masks)}
              for i in range(masks[0].shape[0])}
    return _dataset(where, path, graph, features=z["node_features"], labels=z["node_labels"],
                    splits=splits, name=path.stem)


def from_csr_npz(path, *, transpose=False):
    """Read a bare CSR ``.npz``: ``indptr`` (n + 1,), ``indices`` (nnz,), optional ``data``.

    Parameters
    ----------
    path : str or os.PathLike
    transpose : bool
        ``False`` (default) keeps the rows as stored: for successor lists (``law-cnr-2000``)
        row ``v`` then aggregates from ``v``'s successors. ``True`` stores the transpose, so
        that ``v`` aggregates from its predecessors (messages follow the links).

    Returns
    -------
    Dataset
        Graph only (weighted when ``data`` is present and not all ones).
    """
    import scipy.sparse as sp

    where = "spsample.io.from_csr_npz"
    transpose = as_bool(where, "transpose", transpose)
    path = as_file(where, path)
    z = read_npz(where, path, ["indptr", "indices"], optional=["data"])
    if z["indptr"].ndim != 1 or z["indptr"].size == 0:
        raise DatasetError(f"{where}: {str(path)!r} holds an 'indptr' of shape "
                           f"{z['indptr'].shape}, not (n + 1,)")
    n = z["indptr"].shape[0] - 1
    if not transpose and "data" not in z:
        try:
            graph = Graph.from_csr(z["indptr"], z["indices"])
        except (ArgumentError, ArgumentTypeError) as exc:
            raise DatasetError(f"{where}: {str(path)!r} holds an invalid CSR: {exc}") from exc
    else:
        data = z.get("data", np.ones(z["indices"].shape[0], dtype=np.float64))
        try:
            adj = sp.csr_matrix((data, z["indices"], z["indptr"]), shape=(n, n))
            adj.check_format(full_check=True)
        except (ValueError, TypeError) as exc:
            raise DatasetError(f"{where}: {str(path)!r} holds an invalid CSR: {exc}") from exc
        graph = _graph_from_matrix(where, adj.T if transpose else adj, False, path=path)
    return _dataset(where, path, graph, name=path.stem)


# ---------------------------------------------------------------------- text formats
def from_edge_list(path, *, directed=True, comment="#", relabel=False, weighted=False,
                   delimiter=None, skiprows=None, num_nodes=None):
    """Read a SNAP-style edge list: one ``u v`` (or ``u<TAB>v``) per line, plain or ``.gz``.

    Parameters
    ----------
    path : str or os.PathLike
    directed : bool
        ``True``: line ``u v`` puts ``u`` in row ``v`` only. ``False``: symmetrise.
    comment : str or None
        Lines starting with it are skipped (``"#"``, SNAP's header marker).
    relabel : bool
        ``False`` (default) keeps the ids: ``n = max id + 1`` and unused ids become isolated
        nodes. ``True`` renumbers the distinct ids ``0 .. n - 1`` in increasing order, so new
        id ``i`` is ``numpy.unique(original ids)[i]``.
    weighted : bool
        Read a third column as edge weights.
    delimiter : str, optional
        Column separator; default ``","`` for ``.csv`` files, any whitespace otherwise.
    skiprows : int, optional
        Header lines to skip before parsing; default 1 when the first line that is not a
        comment holds a word that is not a number (a header such as ``id_1,id_2``), else 0.
    num_nodes : int, optional
        Make the graph this large (must exceed every id); ignored when ``relabel``.

    Returns
    -------
    Dataset
        Graph only; duplicate lines are merged (weights summed).
    """
    where = "spsample.io.from_edge_list"
    directed, relabel, weighted = (as_bool(where, name, value) for name, value in (
        ("directed", directed), ("relabel", relabel), ("weighted", weighted)))
    if skiprows is not None:
        skiprows = as_int(where, "skiprows", skiprows, minimum=0)
    if num_nodes is not None:
        num_nodes = as_int(where, "num_nodes", num_nodes, minimum=1)
    if comment is not None and not isinstance(comment, str):
        fail(ArgumentTypeError, where, "comment", "must be a str or None", comment)
    if delimiter is not None and not isinstance(delimiter, str):
        fail(ArgumentTypeError, where, "delimiter", "must be a str or None", delimiter)
    path = as_file(where, path)
    if delimiter is None and path.name.lower().removesuffix(".gz").endswith(".csv"):
        delimiter = ","
    first = _first_line(path, comment)
    if skiprows is None:
        skiprows = int(_is_header(first, delimiter))
    options = dict(delimiter=delimiter, comment=comment, skiprows=skiprows)
    try:
        table = read_integer_columns(where, path, (0, 1), **options)   # int64: ids exact
        weights = read_table(where, path, dtype=np.float64, usecols=(2,), **options)[:, 0] \
            if weighted else None
    except DatasetError as exc:
        raise DatasetError(f"{exc}; {_layout_hint(first, delimiter)}") from exc
    src, dst = table[:, 0], table[:, 1]
    if relabel:
        ids, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
        src, dst = inverse[:src.size], inverse[src.size:]
        num_nodes = ids.size
    else:
        _check_node_count(where, path, src, dst, num_nodes)
    graph = _graph(where, path, src, dst, num_nodes, symmetrize=not directed, weights=weights)
    name = path.name.removesuffix(".gz").rsplit(".", 1)[0]
    return _dataset(where, path, graph, name=name)


def _first_line(path, comment):
    """The first line of a text file (plain or ``.gz``) that is not a comment, or ``""``
    (at most 64 KiB of it: :func:`~spsample.io._files.data_lines`)."""
    lines = data_lines(path, comment, limit=1)
    return lines[0] if lines else ""


def _is_header(line, delimiter):
    """Whether ``line`` holds a word that is not a number (``id_1,id_2``, ``src dst``)."""
    for word in line.split(delimiter):
        try:
            float(word)
        except ValueError:
            return bool(word.strip())
    return False


def _layout_hint(line, delimiter):
    """What to pass when a line of an edge list did not parse."""
    if delimiter is None and "," in line:
        return ("the file looks comma-separated: pass delimiter=',' (and pass skiprows=1 if "
                "its first line is a header)")
    return (f"its first line is {line[:40]!r}: pass delimiter=... (the column separator) and "
            "skiprows=... (header lines) to match its layout")


#: Edge lists whose ids imply more than this many nodes, and more than
#: ``_SPARSE_IDS_RATIO`` nodes per edge, need ``relabel=True`` or an explicit ``num_nodes``.
_SPARSE_IDS_MIN = 2**20
_SPARSE_IDS_RATIO = 64


def _check_node_count(where, path, src, dst, num_nodes):
    """Refuse ids that would make a small edge list allocate row pointers for billions of
    (mostly isolated) nodes, before anything is allocated."""
    top = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
    n = top if num_nodes is None else max(num_nodes, top)
    nbytes = 8 * (n + 1)
    hint = "pass relabel=True to renumber the ids 0 .. (distinct ids - 1)"
    if num_nodes is None and n > _SPARSE_IDS_MIN and n > _SPARSE_IDS_RATIO * max(1, src.size):
        raise ResourceLimitError(
            f"{where}: argument 'relabel' is needed: the ids of {str(path)!r} go up to "
            f"{top - 1}, so the graph would have {n:,d} nodes (needing "
            f"{format_bytes(nbytes)} of row pointers) for only {src.size:,d} "
            f"edge{'s' if src.size != 1 else ''}; {hint}, "
            f"or pass num_nodes={n} to keep the ids")
    check_memory(where, "relabel" if num_nodes is None else "num_nodes", nbytes,
                 f"the CSR row pointers of {n:,d} nodes", hint)


def from_musae(directory, prefix=None, *, label_column=None, id_column=None,
               num_features=None, sparse_features=None):
    """Read a MUSAE dataset (Rozemberczki et al. 2019): edges CSV, features JSON, target CSV.

    Parameters
    ----------
    directory : str or os.PathLike
        Folder with ``<prefix>_edges.csv`` (header line, then ``u,v``, each undirected edge
        once), ``<prefix>.json`` (``{"node": [feature ids]}``) and ``<prefix>_target.csv``.
    prefix : str, optional
        ``"facebook"``, ``"DE"``, ...; may be omitted when the folder holds one dataset.
    label_column : str, optional
        Target column holding the class; default the first of ``page_type``, ``mature``,
        ``ml_target``, ``target`` present.
    id_column : str, optional
        Target column holding the node id; default ``new_id`` if present (Twitch), else ``id``.
    num_features : int, optional
        Feature width; default ``max feature id + 1``.
    sparse_features : bool or None
        Features as a ``scipy.sparse`` CSR matrix (``True``), a dense array (``False``), or
        sparse when at most 5 % of the entries are non-zero (``None``, default: the MUSAE
        graphs are about 0.3 % non-zero, so they stay sparse).

    Returns
    -------
    Dataset
        Graph symmetrised; features uint8 0/1, shape (n, f); labels int64, class ``i``
        being the ``i``-th distinct label value in sorted order (numeric order when every value
        is an integer; ``"False"`` < ``"True"``); no splits.
    """
    where = "spsample.io.from_musae"
    directory = as_dir(where, directory)
    sparse_features = check_sparse_option(where, sparse_features)
    if prefix is None:
        found = sorted(p.name[:-len("_edges.csv")] for p in directory.glob("*_edges.csv"))
        if len(found) != 1:
            fail(DatasetError, where, "prefix", f"must be given: {str(directory)!r} holds "
                 f"{len(found)} MUSAE edge files {found}", prefix)
        prefix = found[0]
    paths = {k: directory / f"{prefix}{suffix}"
             for k, suffix in (("edges", "_edges.csv"), ("json", ".json"),
                               ("target", "_target.csv"))}
    for p in paths.values():
        if not p.is_file():
            fail(DatasetNotFoundError, where, "prefix", f"has no {p.name} in {str(directory)!r}",
                 prefix)
    edges = read_table(where, paths["edges"], dtype=np.int64, delimiter=",", skiprows=1,
                       usecols=(0, 1))
    node_ids, labels = _musae_targets(where, paths["target"], label_column, id_column)
    rows, cols = _musae_features(where, paths["json"])
    if num_features is not None:
        num_features = as_int(where, "num_features", num_features, minimum=0)
    if node_ids.size and node_ids.min() < 0:
        raise DatasetError(f"{where}: {str(paths['target'])!r} holds a negative node id "
                           f"({int(node_ids.min())})")
    if np.unique(node_ids).size != node_ids.size:
        raise DatasetError(f"{where}: {str(paths['target'])!r} lists a node id twice")
    n = 1 + max(int(edges.max(initial=-1)), int(node_ids.max(initial=-1)),
                int(rows.max(initial=-1)))
    check_memory(where, "directory", 24 * (n + 1), f"the row pointers of {n:,d} nodes (the "
                 "largest node id in the files + 1)", "the MUSAE files name node ids far "
                 "beyond their size")
    f = int(cols.max(initial=-1)) + 1 if num_features is None else num_features
    if cols.size and cols.max() >= f:
        fail(ArgumentError, where, "num_features", f"is too small for feature id {cols.max()}",
             f)
    features = features_as(where, "sparse_features", _binary_csr(rows, cols, (n, f)),
                           sparse_features, f"the features of {paths['json'].name}")
    full_labels = np.full(n, -1, dtype=np.int64)
    full_labels[node_ids] = labels
    graph = _graph(where, paths["edges"], edges[:, 0], edges[:, 1], n, symmetrize=True)
    return _dataset(where, directory, graph, features=features, labels=full_labels, name=prefix)


def _binary_csr(rows, cols, shape):
    """The uint8 0/1 CSR matrix with ones at ``(rows, cols)`` (repeats count once)."""
    import scipy.sparse as sp

    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    keep = np.ones(rows.size, dtype=bool)
    keep[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    rows, cols = rows[keep], cols[keep]
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    return sp.csr_matrix((np.ones(cols.size, dtype=np.uint8), cols, indptr), shape=shape)


def _musae_targets(where, path, label_column, id_column):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            records = list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DatasetError(f"{where}: cannot read {str(path)!r} as CSV: {exc}") from exc
    if id_column is None:
        id_column = "new_id" if "new_id" in header else "id"
    if label_column is None:
        label_column = next((c for c in ("page_type", "mature", "ml_target", "target")
                             if c in header), None)
    for arg, col in (("id_column", id_column), ("label_column", label_column)):
        if col not in header:
            fail(DatasetError, where, arg, f"is not a column of {path.name} (columns {header})",
                 col)
    try:
        ids = np.array([int(r[id_column]) for r in records], dtype=np.int64)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{where}: column {id_column!r} of {str(path)!r} must hold integer "
                           f"node ids ({exc})") from exc
    values = [r[label_column] for r in records]
    if None in values:
        raise DatasetError(f"{where}: a row of {str(path)!r} lacks column {label_column!r}")
    classes = sorted(set(values), key=_class_key(values))
    index = {c: i for i, c in enumerate(classes)}
    return ids, np.array([index[v] for v in values], dtype=np.int64)


def _class_key(values):
    try:
        [int(v) for v in set(values)]
    except ValueError:
        return str
    return int


def _musae_features(where, path):
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
        rows = np.fromiter((int(k) for k, v in table.items() for _ in v), dtype=np.int64)
        cols = np.fromiter((int(c) for v in table.values() for c in v), dtype=np.int64)
    except (ValueError, TypeError, AttributeError) as exc:
        raise DatasetError(f"{where}: {str(path)!r} must map node ids to lists of feature "
                           f"ids ({exc})") from exc
    if rows.size and min(rows.min(), cols.min()) < 0:
        raise DatasetError(f"{where}: {str(path)!r} holds a negative id")
    return rows, cols


def from_ogb(directory, *, directed=True):
    """Read OGB's raw node-property-prediction layout (as unpacked from its zip).

    Parameters
    ----------
    directory : str or os.PathLike
        Folder with ``raw/edge.csv.gz`` (``src,dst`` per line, no header) and optionally
        ``raw/num-node-list.csv.gz``, ``raw/node-feat.csv.gz`` (one comma-separated row per
        node), ``raw/node-label.csv.gz`` (one value per node, ``nan`` = unlabelled) and
        ``split/<name>/{train,valid,test}.csv.gz`` (node ids).
    directed : bool
        ``True`` (default): ``src,dst`` puts ``src`` in row ``dst`` only (ogbn-arxiv is
        directed). ``False``: symmetrise (ogbn-products stores each edge once).

    Returns
    -------
    Dataset
        Features float32, shape (n, f); labels int64; one split per ``split/<name>``, with
        ``valid`` renamed ``val``, in sorted order of names.
    """
    where = "spsample.io.from_ogb"
    directed = as_bool(where, "directed", directed)
    directory = as_dir(where, directory)
    raw = directory / "raw"
    if not (raw / "edge.csv.gz").is_file():
        fail_path(DatasetNotFoundError, where, "directory", "lacks raw/edge.csv.gz (the OGB raw "
             "node-property-prediction layout)", directory)
    edges = read_table(where, raw / "edge.csv.gz", dtype=np.int64, delimiter=",",
                       comment=None, usecols=(0, 1))
    features = labels = num_nodes = None
    if (raw / "num-node-list.csv.gz").is_file():
        counts = read_table(where, raw / "num-node-list.csv.gz", dtype=np.int64, comment=None)
        if counts.size != 1:
            raise DatasetError(f"{where}: raw/num-node-list.csv.gz must hold one count (one "
                               f"graph), not {counts.size}")
        num_nodes = int(counts.ravel()[0])
    if (raw / "node-feat.csv.gz").is_file():
        features = read_table(where, raw / "node-feat.csv.gz", dtype=np.float32, delimiter=",",
                              comment=None)
    if (raw / "node-label.csv.gz").is_file():
        table = read_table(where, raw / "node-label.csv.gz", dtype=np.float64, delimiter=",",
                           comment=None)
        if table.shape[1] != 1:
            raise DatasetError(f"{where}: raw/node-label.csv.gz has {table.shape[1]} columns; "
                               "only single-label (multi-class) datasets are supported")
        labels = np.where(np.isnan(table[:, 0]), -1, np.nan_to_num(table[:, 0])).astype(np.int64)
    if num_nodes is None:
        num_nodes = max([int(edges.max(initial=-1)) + 1]
                        + [a.shape[0] for a in (features, labels) if a is not None])
    graph = _graph(where, raw / "edge.csv.gz", edges[:, 0], edges[:, 1], num_nodes,
                   symmetrize=not directed)
    splits = {}
    split_root = directory / "split"
    files = {"train": "train.csv.gz", "val": "valid.csv.gz", "test": "test.csv.gz"}
    for sub in sorted(split_root.iterdir()) if split_root.is_dir() else []:
        if not sub.is_dir():
            continue
        for fn in files.values():
            if not (sub / fn).is_file():
                fail_path(DatasetNotFoundError, where, "directory",
                          f"lacks split/{sub.name}/{fn}", directory)
        splits[sub.name] = {part: read_table(where, sub / fn, dtype=np.int64, comment=None,
                                             delimiter=",").ravel()
                            for part, fn in files.items()}
    return _dataset(where, directory, graph, features=features, labels=labels, splits=splits,
                    name=directory.name)


# ---------------------------------------------------------------------- in memory
def from_scipy(matrix, *, features=None, labels=None, splits=None, name=""):
    """Wrap a square ``scipy.sparse`` adjacency (row ``v`` = whom ``v`` aggregates from).

    Parameters
    ----------
    matrix : scipy.sparse matrix or array, shape (n, n)
        Stored values become edge weights unless they are all 1 (then unweighted).
    features : ndarray, shape (n, f), optional
    labels : array_like of int, shape (n,), optional
    splits : dict, optional
        As for :class:`Dataset`.
    name : str

    Examples
    --------
    >>> import scipy.sparse as sp, spsample
    >>> ds = spsample.io.from_scipy(sp.csr_matrix([[0, 1], [1, 0]]))
    >>> ds.num_nodes, ds.num_edges, ds.graph.is_weighted
    (2, 2, False)
    """
    graph = Graph.from_scipy(matrix)
    return Dataset(graph, features=features, labels=labels, splits=splits or {}, name=name)


# ---------------------------------------------------------------------- helpers
def _graph(where, path, src, dst, num_nodes, *, symmetrize, weights=None):
    try:
        return Graph.from_edge_index(src, dst, num_nodes=num_nodes, weights=weights,
                                     symmetrize=symmetrize)
    except (ArgumentError, ArgumentTypeError) as exc:
        raise DatasetError(f"{where}: {str(path)!r} holds an invalid edge list: {exc}") from exc


def _graph_from_matrix(where, adj, symmetrize, path):
    if adj.shape[0] != adj.shape[1]:
        raise DatasetError(f"{where}: the adjacency in {str(path)!r} must be square, "
                           f"not {adj.shape}")
    coo = adj.tocoo()
    data = np.asarray(coo.data, dtype=np.float64)
    weights = None if np.all(data == 1.0) else data
    return _graph(where, path, coo.col, coo.row, adj.shape[0], symmetrize=symmetrize,
                  weights=weights)


def _dataset(where, path, graph, **fields):
    """Build a Dataset; inconsistent arrays in a source file are a :class:`DatasetError`."""
    try:
        return Dataset(graph, **fields)
    except (ArgumentError, TypeError, DatasetError) as exc:
        raise DatasetError(f"{where}: {str(path)!r} holds inconsistent arrays: {exc}") from exc
