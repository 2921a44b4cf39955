"""Converters of heterogeneous, temporal and knowledge-graph datasets into
:class:`HeteroDataset`.

* :func:`from_heco` -- HeCo's folders (ACM, DBLP, AMiner, Freebase): one ``xy.txt`` per
  relation (``x<TAB>y`` lines, ids local to each type), ``*_feat.npz`` features,
  ``labels.npy`` and the ``train/val/test_{20,40,60}.npy`` splits. Every ``xy.txt`` gives the
  relations ``(X, "to", Y)`` and ``(Y, "to", X)`` (messages both ways).
* :func:`from_temporal_edges` -- SNAP temporal edge lists (``SRC DST TIME`` as CollegeMsg and
  email-Eu-core-temporal, ``SOURCE,TARGET,RATING,TIME`` as bitcoin-alpha/otc): one node type
  ``"node"`` and the relation ``("node", "to", "node")`` with edge times (a repeated pair
  keeps its earliest time).
* :func:`from_kg` -- ConvE's knowledge-graph archives (WN18RR, FB15k-237): one node type
  ``"entity"``, one relation per relation name built from ``train.txt``, the three files as
  ``edge_splits``.
"""

import tarfile
import zlib
from pathlib import Path

import numpy as np

from .._errors import (
    ArgumentTypeError, DatasetError, DatasetNotFoundError, ResourceLimitError, SpsampleError,
)
from ..graph._hetero import HeteroGraph, RELATION_BLOCK_BYTES, RELATION_FIXED_BYTES
from .._validate import check_memory, fail
from ._converters import _check_node_count, _is_header
from ._files import (
    as_path, as_bool, as_dir, as_file, data_lines, fail_path, metered, read_integer_columns,
    read_npz, read_table, read_time_column,
)
from ._hetero_dataset import HeteroDataset
from ._untrusted import csr_from_parts

__all__ = ["from_heco", "from_temporal_edges", "from_kg", "is_heco_folder", "HECO_TYPES",
           "edge_list_file", "looks_temporal"]

#: Node type of each file letter, and the labelled type, per HeCo dataset.
from ._dataset import features_as
HECO_TYPES = {
    "acm": ({"p": "paper", "a": "author", "s": "subject"}, "paper"),
    "dblp": ({"a": "author", "p": "paper", "t": "term", "c": "conference"}, "author"),
    "aminer": ({"p": "paper", "a": "author", "r": "reference"}, "paper"),
    "freebase": ({"m": "movie", "a": "actor", "d": "director", "w": "writer"}, "movie"),
}


def is_heco_folder(path):
    """Whether ``path`` looks like a HeCo dataset folder (``labels.npy`` and ``xy.txt``)."""
    path = Path(path)
    return (path / "labels.npy").is_file() and any(
        len(p.stem) == 2 for p in path.glob("*.txt"))


def from_heco(directory, *, sparse_features=None):
    """Read one HeCo dataset folder (``acm``, ``dblp``, ``aminer`` or ``freebase``).

    Parameters
    ----------
    directory : str or os.PathLike
        The folder; its name picks the type names (other names: the file letters).
    sparse_features : bool or None
        Keep sparse feature files sparse (``None``: when at most 5 % non-zero).

    Returns
    -------
    HeteroDataset
        ``target_type`` the labelled type, splits ``"20"``, ``"40"``, ``"60"`` (labelled nodes
        per class; ``"20"`` is the default), features for the types that have them.

    Raises
    ------
    DatasetError, DatasetNotFoundError
        A missing or malformed file, ids out of range.
    """
    where = "spsample.io.from_heco"
    directory = as_dir(where, directory)
    letters, target = HECO_TYPES.get(directory.name.lower(), ({}, None))
    rel_files = sorted(p for p in directory.glob("*.txt") if len(p.stem) == 2)
    if not rel_files or not (directory / "labels.npy").is_file():
        fail_path(DatasetError, where, "directory", "is not a HeCo folder (labels.npy and "
                  "xy.txt relation files)", directory)
    type_of = lambda c: letters.get(c, c)  # noqa: E731
    edges = {}
    for p in rel_files:
        table = read_table(where, p, dtype=np.int64, comment=None)
        if table.shape[1] != 2:
            raise DatasetError(f"{where}: {str(p)!r} must have two columns (got {table.shape})")
        x, y = type_of(p.stem[0]), type_of(p.stem[1])
        edges[(x, "to", y)] = (table[:, 0], table[:, 1])
        edges[(y, "to", x)] = (table[:, 1], table[:, 0])
    labels = _integers(where, directory / "labels.npy", _npy(where, directory / "labels.npy"))
    target = target or _guess_target(edges, labels)
    features = _heco_features(where, directory, type_of, sparse_features)
    counts = _heco_counts(edges, labels, target, features)
    _check_heco_counts(where, directory, counts, edges, labels)
    splits = _heco_splits(where, directory)
    try:
        graph = HeteroGraph.from_edge_index(edges, num_nodes=counts)
        return HeteroDataset(graph, features=features, labels={target: labels}, splits=splits,
                             target_type=target, name=directory.name)
    except ResourceLimitError:
        raise
    except SpsampleError as exc:
        raise DatasetError(f"{where}: {str(directory)!r} holds inconsistent arrays: "
                           f"{exc}") from exc


#: A HeCo folder whose ids imply more than this many vertices, and more than
#: ``_SPARSE_IDS_RATIO`` vertices per edge, label and feature row, is refused (as edge lists).
_SPARSE_IDS_MIN = 2**20
_SPARSE_IDS_RATIO = 64


def _check_heco_counts(where, directory, counts, edges, labels):
    """Refuse ids that would make a small folder allocate blocks over billions of (mostly
    isolated) vertices, before anything is built: the vertices the ids imply against the
    entries the files hold (as :func:`~spsample.io.from_edge_list` checks its ids), then the
    relation blocks against the memory limit."""
    total = sum(counts.values())
    entries = sum(src.size for src, _ in edges.values()) + labels.size
    if total > _SPARSE_IDS_MIN and total > _SPARSE_IDS_RATIO * max(1, entries):
        big = max(counts, key=counts.get)
        raise ResourceLimitError(
            f"{where}: argument 'directory' {str(directory)!r} has ids up to "
            f"{counts[big] - 1:,d} for type {big!r}: {total:,d} vertices for {entries:,d} "
            "edges and labels, more than one file entry per "
            f"{_SPARSE_IDS_RATIO} vertices (a damaged id?); HeCo's ids are 0 .. n-1 per type")
    _check_relation_blocks(where, directory, len(edges), total)


def _integers(where, path, arr):
    """``arr`` (labels or split ids) as int64 when its values are integers, else a
    :class:`DatasetError` (a float ``1.5`` or ``nan`` would otherwise become some class)."""
    arr = np.asarray(arr).ravel()
    if arr.dtype.kind in "iu" and not (arr.dtype == np.uint64 and arr.size
                                       and arr.max() >= 2**63):
        return arr.astype(np.int64)
    if arr.dtype.kind == "f" and (arr.size == 0 or (np.isfinite(arr).all()
                                                    and np.array_equal(arr, np.round(arr))
                                                    and np.abs(arr).max() <= 2**53)):
        return arr.astype(np.int64)
    raise DatasetError(f"{where}: {str(path)!r} must hold integers (got {arr.dtype} values "
                       "that are not)")


def _npy(where, path):
    """A ``.npy`` array (no pickle): its header's declared size checked against the bytes of
    the file and the memory limit before NumPy allocates it."""
    try:
        with open(path, "rb") as f:
            shape, dtype = _npy_header(f)
            stored = path.stat().st_size - f.tell()
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if dtype.hasobject or declared > stored:
            raise DatasetError(f"{where}: {str(path)!r} declares {dtype} of shape {shape} "
                               f"({declared:,d} bytes) but holds {stored:,d} bytes of data")
        check_memory(where, "directory", declared, f"{str(path)!r}", "check the file")
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, TypeError, OverflowError) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"{where}: cannot read {str(path)!r} as a .npy array: {exc}") \
            from exc
    if not isinstance(arr, np.ndarray):
        raise DatasetError(f"{where}: {str(path)!r} is an archive, not a single .npy array")
    return arr


def _npy_header(f):
    """``(shape, dtype)`` of an open ``.npy`` file, whose header NumPy parses as a Python
    literal: any failure of that parse (SyntaxError, tokenize errors, ...) is a
    :class:`ValueError` here."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else \
            fmt.read_array_header_2_0
        shape, _, dtype = read_header(f)
    except (OSError, EOFError, ValueError):
        raise
    except Exception as exc:                       # noqa: BLE001 - an unparsable header
        raise ValueError(f"the .npy header does not parse ({type(exc).__name__}: {exc})") \
            from None
    return shape, dtype


def _guess_target(edges, labels):
    counts = {}
    for (s, _, d), (src, dst) in edges.items():
        counts[s] = max(counts.get(s, 0), int(src.max(initial=-1)) + 1)
    same = [t for t, n in counts.items() if n == labels.size]
    return same[0] if len(same) == 1 else next(iter(sorted(counts)))


def _heco_features(where, directory, type_of, sparse_features):
    import scipy.sparse as sp
    out = {}
    for p in sorted(directory.glob("?_feat.npz")):
        t = type_of(p.name[0])
        with open(p, "rb") as f:
            magic = f.read(6)
        if magic == b"\x93NUMPY":                 # a plain .npy under an .npz name (DBLP t)
            dense = _npy(where, p)
            if dense.ndim != 2 or dense.dtype.kind not in "biuf":
                raise DatasetError(f"{where}: {str(p)!r} must be a 2-D numeric array")
            out[t] = dense
            continue
        z = read_npz(where, p, ("format", "shape", "data"), optional=("indices", "indptr",
                                                                      "row", "col"))
        fmt = bytes(np.asarray(z["format"]).tobytes()).strip(b"\x00")
        shape = tuple(int(s) for s in np.asarray(z["shape"]).ravel())
        if fmt == b"coo" and "row" in z and "col" in z:
            coo = _checked_coo(where, p, z, shape)
            matrix = coo.tocsr()
        elif fmt == b"csr" and "indices" in z and "indptr" in z:
            matrix = csr_from_parts(where, repr(str(p)), z["data"], z["indices"], z["indptr"],
                                    shape)
        else:
            raise DatasetError(f"{where}: {str(p)!r} is a sparse matrix of unknown format "
                               f"{fmt!r}")
        out[t] = features_as(where, "sparse_features", sp.csr_matrix(matrix), sparse_features,
                             f"features of {t!r}")
    return out


def _checked_coo(where, path, z, shape):
    import scipy.sparse as sp
    row, col, data = (np.asarray(z[k]) for k in ("row", "col", "data"))
    ok = (len(shape) == 2 and row.ndim == col.ndim == data.ndim == 1
          and row.size == col.size == data.size and row.dtype.kind in "iu"
          and col.dtype.kind in "iu" and data.dtype.kind in "biuf")
    if ok and row.size:
        ok = row.min() >= 0 and col.min() >= 0 and row.max() < shape[0] and col.max() < shape[1]
    if not ok:
        raise DatasetError(f"{where}: {str(path)!r} holds an invalid COO matrix")
    rows = int(shape[0])
    if rows > _SPARSE_IDS_MIN and rows > _SPARSE_IDS_RATIO * max(1, row.size):
        raise ResourceLimitError(
            f"{where}: argument 'directory' {str(path)!r} declares {rows:,d} rows for "
            f"{row.size:,d} entries: its CSR row pointers would take {8 * rows:,d} bytes "
            "(a damaged shape?)")
    return sp.coo_matrix((data, (row, col)), shape=shape)


def _heco_counts(edges, labels, target, features):
    counts = {}
    for (s, _, d), (src, dst) in edges.items():
        counts[s] = max(counts.get(s, 0), int(src.max(initial=-1)) + 1)
        counts[d] = max(counts.get(d, 0), int(dst.max(initial=-1)) + 1)
    counts[target] = max(counts.get(target, 0), labels.size)
    for t, f in features.items():
        counts[t] = max(counts.get(t, 0), int(f.shape[0]))
    return counts


def _heco_splits(where, directory):
    splits = {}
    for size in ("20", "40", "60"):
        files = {part: directory / f"{name}_{size}.npy"
                 for part, name in (("train", "train"), ("val", "val"), ("test", "test"))}
        if all(f.is_file() for f in files.values()):
            splits[size] = {part: _integers(where, f, _npy(where, f))
                            for part, f in files.items()}
    return splits


# ---------------------------------------------------------------------- temporal edge lists
def from_temporal_edges(path, *, time_column=-1, delimiter=None, relabel=True,
                        directed=True):
    """Read a SNAP temporal edge list: ``SRC DST [...] TIME`` per line, plain or ``.gz``.

    Parameters
    ----------
    path : str or os.PathLike
        The file, or a folder holding exactly one edge-list file (besides a README or
        checksums), as ``spsample convert`` detects it.
    time_column : int
        Which column holds the time (default the last: CollegeMsg, email-Eu-core-temporal,
        bitcoin's ``SOURCE,TARGET,RATING,TIME``).
    delimiter : str, optional
        Default ``","`` for ``.csv`` files, whitespace otherwise.
    relabel : bool
        Renumber the distinct ids ``0 .. n - 1`` in increasing order (default): new id ``i``
        is ``numpy.unique(file ids)[i]``, so no vertex is made up for ids the file never
        uses (CollegeMsg's ids start at 1, bitcoin's have gaps); ids already ``0 .. n - 1``
        stay as they are. ``False`` keeps the file's ids (``n = max id + 1``, unused ids
        become isolated vertices).
    directed : bool
        ``False`` adds every reverse edge with the same time.

    Returns
    -------
    HeteroDataset
        One node type ``"node"``, the relation ``("node", "to", "node")`` with edge times
        (int64 when the file's times are integers, exact at any size; float64 for decimal
        times; a repeated pair keeps the earliest), no features or splits.

    Raises
    ------
    DatasetError, DatasetNotFoundError
        Naming the file: fewer than three columns, ids that are not integers (ids are parsed
        as int64, never through float64), times that are not finite numbers.
    """
    where = "spsample.io.from_temporal_edges"
    relabel = as_bool(where, "relabel", relabel)
    directed = as_bool(where, "directed", directed)
    if not isinstance(time_column, int) or isinstance(time_column, bool):
        fail(ArgumentTypeError, where, "time_column", "must be an int", time_column)
    if delimiter is not None and not isinstance(delimiter, str):
        fail(ArgumentTypeError, where, "delimiter", "must be a str or None", delimiter)
    path = edge_list_file(where, path)
    if delimiter is None and path.name.lower().removesuffix(".gz").endswith(".csv"):
        delimiter = ","
    lines = data_lines(path, limit=1)
    skiprows = int(bool(lines) and _is_header(lines[0], delimiter))
    columns = len((data_lines(path, limit=1 + skiprows) or [""])[-1].split(delimiter))
    if columns < 3 or not -columns <= time_column < columns:
        raise DatasetError(f"{where}: {str(path)!r} needs SRC, DST and a time column "
                           f"{time_column} (it has {columns} columns)")
    options = dict(delimiter=delimiter, skiprows=skiprows)
    ids = read_integer_columns(where, path, (0, 1), **options)
    time = read_time_column(where, path, time_column % columns, **options)
    src, dst = ids[:, 0], ids[:, 1]
    if relabel:
        _, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
        src, dst = inverse[:src.size], inverse[src.size:]
    elif src.size:
        _check_node_count(where, path, src, dst, None)
    if not directed:
        src, dst, time = np.concatenate([src, dst]), np.concatenate([dst, src]), \
            np.concatenate([time, time])
    rel = ("node", "to", "node")
    name = path.name.removesuffix(".gz").rsplit(".", 1)[0]
    try:
        graph = HeteroGraph.from_edge_index({rel: (src, dst)}, edge_time={rel: time})
        return HeteroDataset(graph, name=name)
    except SpsampleError as exc:
        raise DatasetError(f"{where}: {str(path)!r} holds an invalid edge list: {exc}") from exc


#: Unix times from 1973 on, in seconds to nanoseconds: a last column in this range is a time.
_UNIX_TIME = (1e8, 1e19)


def looks_temporal(path, *, sample=1000):
    """Whether a text edge list (plain or ``.gz``) is a temporal one, from its first
    ``sample`` data lines (after a header line, if any): every line has the same three or
    more numeric columns, and the last column holds non-negative times: Unix times
    (``1e8 <= t < 1e19``: seconds to nanoseconds since 1973) or integers that never decrease
    and do not all repeat (a list sorted by time, as SNAP's CollegeMsg and
    email-Eu-core-temporal are). A static list (``u v``, or ``u v w`` with weights) is not.
    """
    path = Path(path)
    delimiter = "," if path.name.lower().removesuffix(".gz").endswith(".csv") else None
    lines = data_lines(path, limit=sample + 1)
    if lines and _is_header(lines[0], delimiter):
        lines = lines[1:]
    try:
        rows = [[float(word) for word in line.split(delimiter)] for line in lines]
    except ValueError:
        return False
    if not rows or len({len(r) for r in rows}) != 1 or len(rows[0]) < 3:
        return False
    last = np.array([r[-1] for r in rows])
    if not np.isfinite(last).all() or last.min() < 0:
        return False
    if _UNIX_TIME[0] <= last.min() and last.max() < _UNIX_TIME[1]:
        return True
    integral = np.array_equal(last, np.round(last))
    return bool(integral and last.size > 1 and np.all(np.diff(last) >= 0)
                and last[-1] > last[0])


#: Files a dataset folder may hold besides the dataset itself.
IGNORED_FILES = ("README", "README.md", "README.txt", "SHA256SUMS", "LICENSE", "LICENSE.txt")
EDGE_LIST_SUFFIXES = (".txt", ".txt.gz", ".tsv", ".tsv.gz", ".edges", ".edges.gz", ".el",
                      ".csv", ".csv.gz")


def edge_list_file(where, path):
    """``path`` as an edge-list file: itself, or the one edge-list file of a folder."""
    path = as_path(where, "path", path)
    if not path.is_dir():
        return as_file(where, path)
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.name not in IGNORED_FILES and p.name.lower().endswith(
                       EDGE_LIST_SUFFIXES))
    if len(files) != 1:
        fail_path(DatasetError, where, "path", f"is a folder holding {len(files)} edge-list "
                  f"files ({', '.join(p.name for p in files) or 'none'}); pass one file", path)
    return files[0]


# ---------------------------------------------------------------------- knowledge graphs
def from_kg(path, *, reverse=False):
    """Read a knowledge graph as ConvE publishes it: a ``.tar.gz`` (or a folder) holding
    ``train.txt``, ``valid.txt``, ``test.txt`` with ``head<TAB>relation<TAB>tail`` lines.

    Parameters
    ----------
    path : str or os.PathLike
    reverse : bool
        Also add ``("entity", "rev_" + name, "entity")`` for every relation (messages from tail
        to head), as relational GNN encoders usually do.

    Returns
    -------
    HeteroDataset
        One node type ``"entity"`` (ids: the sorted entity strings of all three files), one
        relation ``("entity", name, "entity")`` per relation name (messages head -> tail)
        holding the training triples; ``edge_splits`` ``"train"``, ``"val"``, ``"test"``.
    """
    where = "spsample.io.from_kg"
    reverse = as_bool(where, "reverse", reverse)
    entities, names, parts = _kg_triples(where, Path(path))
    splits = {part: _per_relation(names, *ids) for part, ids in parts.items()}
    _check_relation_blocks(where, path, len(names) * (2 if reverse else 1), len(entities))
    edges = {("entity", r, "entity"): np.zeros((2, 0), dtype=np.int64) for r in sorted(names)}
    edges.update(splits.get("train", {}))
    if reverse:
        edges.update({("entity", "rev_" + r[1], "entity"): ei[::-1] for r, ei in
                      list(edges.items())})
    try:
        graph = HeteroGraph.from_edge_index(edges, num_nodes={"entity": len(entities)})
        name = Path(path).name.split(".")[0]
        return HeteroDataset(graph, edge_splits=splits, name=name)
    except ResourceLimitError:
        raise
    except SpsampleError as exc:
        raise DatasetError(f"{where}: {str(path)!r} holds inconsistent triples: {exc}") from exc


def _check_relation_blocks(where, path, relations, nodes):
    """Every relation is a CSR over all the graph's vertices (row pointers ``nodes + 1`` per
    relation, whatever its edges): refuse before building when they cannot fit."""
    check_memory(where, "path", relations * ((nodes + 1) * RELATION_BLOCK_BYTES
                                             + RELATION_FIXED_BYTES),
                 f"the row pointers of {relations:,d} relations over {nodes:,d} vertices "
                 f"(one CSR per relation) of {str(path)!r}",
                 "keep fewer relations (merge rare ones) or convert a smaller graph")


_KG_FILES = {"train": "train.txt", "val": "valid.txt", "test": "test.txt"}
#: Peak bytes per byte of knowledge-graph text: the bytes, a chunk's lines split into
#: strings, the name -> id dicts and three int64 ids per triple (measured: 2 on FB15k-237, 8
#: on WN18RR, 16 for the shortest possible lines).
KG_TEXT_RATIO = 24
#: Members a knowledge-graph archive may hold (ConvE's hold three).
KG_MAX_MEMBERS = 1000


def _kg_triples(where, path):
    """``(entities, relations, {part: (head, relation, tail)})``: the sorted entity and
    relation names of all three files, and per file its triples as int64 ids into them (file
    order). Lines are read one at a time from the file's bytes (nothing per line is kept but
    three ids), the bytes checked against the memory limit before they are read (declared
    sizes) and as they decompress."""
    if not path.exists():
        fail_path(DatasetNotFoundError, where, "path", "does not exist", path)
    texts = _kg_folder(where, path) if path.is_dir() else _kg_archive(where, path)
    if "train" not in texts:
        fail_path(DatasetError, where, "path", "holds no train.txt", path)
    entity, relation, parts = {}, {}, {}
    for part in list(texts):
        data = texts.pop(part)                 # each file's bytes freed once parsed
        parts[part] = _kg_ids(where, f"{_KG_FILES[part]} of {str(path)!r}", data, entity,
                              relation)
    return _sorted_ids(entity, relation, parts)


#: Bytes of a knowledge-graph file parsed at a time (their lines' strings are transient).
_KG_CHUNK = 1 << 20


def _kg_ids(where, what, data, entity, relation):
    """The triples of one file's bytes as three int64 arrays of first-seen ids (``entity``
    and ``relation`` map names to them and grow), parsed a chunk of whole lines at a time."""
    heads, rels, tails = [], [], []
    pos, lines_before, size = 0, 0, len(data)
    while pos < size:
        end = data.rfind(b"\n", pos, pos + _KG_CHUNK) + 1 if pos + _KG_CHUNK < size else size
        if end <= pos:                          # one line longer than a chunk
            end = data.find(b"\n", pos + _KG_CHUNK)
            end = size if end < 0 else end + 1
        chunk, pos = data[pos:end], end
        h, r, t = _kg_chunk(where, what, chunk, lines_before)
        lines_before += chunk.count(b"\n")
        heads.append(_ids(entity, h))
        rels.append(_ids(relation, r))
        tails.append(_ids(entity, t))
    if not heads:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(3))
    return tuple(np.concatenate(a) for a in (heads, rels, tails))


def _kg_chunk(where, what, chunk, lines_before):
    """``(heads, relations, tails)`` (lists of names, stripped) of a chunk of whole lines;
    blank lines skipped; a line of other than three tab-separated fields, or bytes that are
    not UTF-8, refused naming the line."""
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lines_before + chunk.count(b"\n", 0, exc.start) + 1
        column = exc.start - (chunk.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetError(f"{where}: {what} is not UTF-8 text: line {line}, column {column} "
                           f"holds the byte 0x{chunk[exc.start]:02x} ({exc.reason})") from None
    lines = text.split("\n")
    keep = [line for line in lines if line.count("\t") == 2]
    if len(keep) != len(lines):
        for i, line in enumerate(lines):
            if line.count("\t") != 2 and line.strip():
                raise DatasetError(f"{where}: {what} has a line that is not "
                                   f"head<TAB>relation<TAB>tail (line {lines_before + i + 1})"
                                   f": {line.split(chr(9))!r:.60}")
    fields = list(map(str.strip, "\t".join(keep).split("\t"))) if keep else []
    return fields[0::3], fields[1::3], fields[2::3]


def _ids(table, names):
    """int64 ids of ``names`` in ``table`` (a dict name -> id), new names numbered in order."""
    for name in dict.fromkeys(names):
        if name not in table:
            table[name] = len(table)
    return np.fromiter(map(table.__getitem__, names), dtype=np.int64, count=len(names))


def _sorted_ids(entity, relation, parts):
    """First-seen ids renumbered in the sorted order of the names."""
    out = []
    for names in (entity, relation):
        ordered = sorted(names)
        remap = np.empty(len(names), dtype=np.int64)
        remap[np.fromiter((names[x] for x in ordered), np.int64, len(ordered))] = \
            np.arange(len(ordered))
        out.append((ordered, remap))
    (entities, emap), (relations, rmap) = out
    return entities, relations, {part: (emap[h], rmap[r], emap[t])
                                 for part, (h, r, t) in parts.items()}


def _per_relation(names, heads, rels, tails):
    """``{("entity", name, "entity"): (2, E) int64 [head; tail]}``, relations in the order
    they first appear, triples in file order."""
    order = np.argsort(rels, kind="stable")
    ids, first = np.unique(rels, return_index=True)
    bounds = np.searchsorted(rels[order], ids, side="left")
    ends = np.r_[bounds[1:], order.size]
    out = {}
    for k in np.argsort(first, kind="stable"):
        take = order[bounds[k]:ends[k]]
        out[("entity", names[ids[k]], "entity")] = np.stack([heads[take], tails[take]])
    return out


def _kg_memory(where, path, total):
    check_memory(where, "path", total * KG_TEXT_RATIO,
                 f"the triples of {str(path)!r} ({total:,d} bytes of text)",
                 "convert a smaller knowledge graph")


def _kg_folder(where, path):
    files = {part: path / fn for part, fn in _KG_FILES.items() if (path / fn).is_file()}
    _kg_memory(where, path, sum(f.stat().st_size for f in files.values()))
    return {part: f.read_bytes() for part, f in files.items()}


def _kg_archive(where, path):
    """The bytes of the archive's three files: their declared sizes checked against the
    memory limit before any is read, their decompressed bytes as they stream."""
    try:
        with tarfile.open(path, "r:*") as tar:
            members = {}
            for i, m in enumerate(tar):
                if i >= KG_MAX_MEMBERS:
                    raise DatasetError(f"{where}: {str(path)!r} holds more than "
                                       f"{KG_MAX_MEMBERS} members (ConvE's archives hold three)")
                if m.isfile() and m.name.lstrip("./") in _KG_FILES.values():
                    members[m.name.lstrip("./")] = m
            wanted = {part: members[fn] for part, fn in _KG_FILES.items() if fn in members}
            _kg_memory(where, path, sum(m.size for m in wanted.values()))
            return {part: _read_member(where, path, tar, m) for part, m in wanted.items()}
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise DatasetError(f"{where}: cannot read {str(path)!r} as a tar archive: {exc}") \
            from exc


def _read_member(where, path, tar, member):
    stream = metered(where, tar.extractfile(member), KG_TEXT_RATIO, "path",
                     f"{member.name} of {str(path)!r}")
    with stream:
        return stream.read()
