"""``spsample.convert``: detect a source format, convert it, save it as spsample HDF5."""

import inspect
import os
from pathlib import Path

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, DatasetError
from .._validate import fail
from ._converters import (
    from_csr_npz,
    from_edge_list,
    from_heterophilous_npz,
    from_musae,
    from_npz_gnnbench,
    from_ogb,
)
from ._files import as_file, check_writable, fail_path
from ._hdf5 import load, save
from ._hetero_converters import (EDGE_LIST_SUFFIXES, IGNORED_FILES, from_heco, from_kg,
                                 from_temporal_edges, is_heco_folder, looks_temporal)
from ._planetoid import from_planetoid, planetoid_names

__all__ = ["convert", "detect_format", "FORMATS"]

#: Format name -> reader. ``convert(..., format=...)`` accepts these names (``-`` or ``_``).
FORMATS = {
    "planetoid": from_planetoid,
    "gnnbench": from_npz_gnnbench,
    "heterophilous": from_heterophilous_npz,
    "musae": from_musae,
    "edge_list": from_edge_list,
    "csr_npz": from_csr_npz,
    "ogb": from_ogb,
    "heco": from_heco,
    "temporal": from_temporal_edges,
    "kg": from_kg,
    "spsample": load,
}
_ALIASES = {"npz_gnnbench": "gnnbench", "heterophilous_npz": "heterophilous", "snap": "edge_list",
            "hdf5": "spsample", "h5": "spsample", "temporal_edges": "temporal",
            "knowledge_graph": "kg"}
_EDGE_LIST_SUFFIXES = EDGE_LIST_SUFFIXES
_IGNORED = IGNORED_FILES
#: Readers of one file: given a folder (format named), they read its one dataset file.
_FILE_FORMATS = ("gnnbench", "heterophilous", "edge_list", "csr_npz", "temporal", "spsample")


def detect_format(src):
    """Guess the format name of ``src`` (a file or folder) from its name and contents.

    Folders: ``ind.<name>.graph`` -> ``"planetoid"``, ``raw/edge.csv.gz`` -> ``"ogb"``,
    ``<prefix>_edges.csv`` -> ``"musae"``, ``labels.npy`` with ``xy.txt`` relation files ->
    ``"heco"``; a folder holding one dataset file (besides a README or checksums) -> that
    file's format. Files: ``.tar.gz`` / ``.tgz`` -> ``"kg"`` (ConvE's knowledge graphs);
    ``.h5``/``.hdf5`` -> ``"spsample"``; ``.npz``
    by its member names (``adj_indptr`` -> ``"gnnbench"``, ``edges`` + ``node_features`` ->
    ``"heterophilous"``, ``indptr`` + ``indices`` -> ``"csr_npz"``); ``.txt``, ``.tsv``,
    ``.csv``, ``.edges`` (optionally ``.gz``) -> ``"temporal"`` when its lines hold three or
    more numeric columns whose last one holds times (Unix times, or integers sorted in
    increasing order: SNAP's CollegeMsg, email-Eu-core-temporal, bitcoin; see
    :func:`~spsample.io._hetero_converters.looks_temporal`), else ``"edge_list"``; pass
    ``format="edge_list"`` to read a temporal list as a static graph.

    Raises
    ------
    DatasetNotFoundError
        ``src`` does not exist.
    DatasetError
        Nothing matches; the message suggests passing ``format``.
    """
    return _detect(src)[1]


def _detect(src):
    """``(the file or folder to read, its format)`` for ``src``."""
    where = "spsample.convert"
    if not isinstance(src, (str, os.PathLike)):
        fail(ArgumentTypeError, where, "src", "must be a str or os.PathLike", type(src))
    path = Path(src)
    if path.is_dir():
        return _detect_folder(where, path)
    path = as_file(where, path, "src")
    return path, _detect_file(where, path)


def _detect_folder(where, path):
    if planetoid_names(path):
        return path, "planetoid"
    if (path / "raw" / "edge.csv.gz").is_file():
        return path, "ogb"
    if any(path.glob("*_edges.csv")):
        return path, "musae"
    if is_heco_folder(path):
        return path, "heco"
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.name not in _IGNORED)
    known = [p for p in files if p.name.lower().endswith((".npz", ".h5", ".hdf5")
                                                         + _EDGE_LIST_SUFFIXES)]
    if len(known) == 1:
        return known[0], _detect_file(where, known[0])
    if len(known) > 1:
        fail_path(DatasetError, where, "src", f"is a folder holding {len(known)} dataset "
                  f"files ({', '.join(p.name for p in known)}); pass one of them", path)
    fail_path(DatasetError, where, "src", "is a folder of no known layout (Planetoid, OGB, "
              f"MUSAE, or one dataset file); pass format= one of {sorted(FORMATS)}", path)


def single_file(where, path):
    """The one dataset file of a folder (a format that reads files was named)."""
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.name not in _IGNORED)
    known = [p for p in files if p.name.lower().endswith((".npz", ".h5", ".hdf5")
                                                         + _EDGE_LIST_SUFFIXES)]
    if len(known) != 1:
        fail_path(DatasetError, where, "src", f"is a folder holding {len(known)} dataset files "
                  f"({', '.join(p.name for p in known) or 'none'}); pass one of them", path)
    return known[0]


def _detect_file(where, path):
    lower = path.name.lower()
    if lower.endswith((".h5", ".hdf5")):
        return "spsample"
    if lower.endswith((".tar.gz", ".tgz")):
        return "kg"
    if lower.endswith(".npz"):
        return _detect_npz(where, path)
    if lower.endswith(_EDGE_LIST_SUFFIXES):
        return "temporal" if looks_temporal(path) else "edge_list"
    fail_path(DatasetError, where, "src", "has an unknown format; pass format= one of "
              f"{sorted(FORMATS)}", path)


def _detect_npz(where, path):
    try:
        with np.load(path, allow_pickle=False) as archive:
            keys = set(archive.files)
    except Exception as exc:
        raise DatasetError(f"{where}: argument 'src' {str(path)!r} is not a readable npz "
                           f"archive ({exc})") from exc
    if "adj_indptr" in keys:
        return "gnnbench"
    if {"edges", "node_features"} <= keys:
        return "heterophilous"
    if {"indptr", "indices"} <= keys:
        return "csr_npz"
    fail_path(DatasetError, where, "src", f"is an npz of no known layout (members "
              f"{sorted(keys)}); pass format=", path)


def convert(src, dst, *, format=None, name=None, features_dtype=None, compression="gzip",
            **options):
    """Convert a dataset file or folder into spsample's HDF5 layout at ``dst``.

    Parameters
    ----------
    src : str or os.PathLike
        A file or folder in one of :data:`FORMATS`.
    dst : str or os.PathLike
        The ``.h5`` file to write, never ``src`` itself (checked before anything is read).
    format : str, optional
        One of ``planetoid, gnnbench, heterophilous, musae, edge_list, csr_npz, ogb, heco,
        temporal, kg, spsample``; detected with :func:`detect_format` when omitted. ``heco``,
        ``temporal`` and ``kg`` give a :class:`HeteroDataset`.
    name : str, optional
        The dataset name to store (default: the converter's, e.g. ``"cora"``). For a Planetoid
        folder holding several datasets it also selects which one.
    features_dtype : str or numpy.dtype, optional
        Store features in this dtype (e.g. ``"uint8"`` for binary bag-of-words); refused when
        a value would change.
    compression : {"gzip", None}
        Passed to :func:`save`.
    **options
        Keyword arguments of the format's reader (e.g. ``directed=False`` for
        :func:`from_edge_list`).

    Returns
    -------
    Dataset
        What was written.

    Raises
    ------
    ArgumentError
        Unknown ``format`` or reader option (named).
    DatasetError, DatasetNotFoundError
        From detection, the reader or :func:`save`.
    """
    where = "spsample.convert"
    if not isinstance(src, (str, os.PathLike)):
        fail(ArgumentTypeError, where, "src", "must be a str or os.PathLike", type(src))
    dst = check_destination(where, src, dst)
    if format is None:
        src, format = _detect(src)
    elif not isinstance(format, str):
        fail(ArgumentTypeError, where, "format", "must be a str", format)
    key = format.lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in FORMATS:
        fail(ArgumentError, where, "format", f"must be one of {sorted(FORMATS)}", format)
    reader = FORMATS[key]
    params = list(inspect.signature(reader).parameters.values())[1:]
    known = {p.name for p in params}
    unknown = sorted(set(options) - known)
    if unknown:
        fail(ArgumentError, where, unknown[0], f"is not an option of format {key!r} "
             f"(options: {sorted(known)})", options[unknown[0]])
    if name is not None and not isinstance(name, str):
        fail(ArgumentTypeError, where, "name", "must be a str", name)
    if features_dtype is not None:
        features_dtype = _as_dtype(where, features_dtype)
    if key in _FILE_FORMATS and Path(src).is_dir():
        src = single_file(where, Path(src))
    if key == "planetoid" and name is not None and "name" not in options:
        if Path(src).is_dir() and name in planetoid_names(src):
            options["name"] = name
    dataset = reader(src, **options)
    if name is not None:
        dataset.name = name
    if features_dtype is not None and isinstance(dataset.features, dict):
        dataset.features = {t: _cast_features(where, f, features_dtype)
                            for t, f in dataset.features.items()}
    elif features_dtype is not None and dataset.features is not None:
        dataset.features = _cast_features(where, dataset.features, features_dtype)
    save(dataset, dst, compression=compression)
    return dataset


def check_destination(where, src, dst):
    """``dst`` as a Path: writable, and not the source (or a file inside a source folder)."""

    dst = check_writable(where, "dst", dst, error_cls=DatasetError)
    if not (os.path.exists(src) and dst.exists()):
        return dst
    inside = Path(src).is_dir() and Path(src).resolve() in dst.resolve().parents
    if inside or os.path.samefile(src, dst):
        fail_path(DatasetError, where, "dst", f"would overwrite the source {str(src)!r} "
                  "(or a file in it); choose another file", dst)
    return dst


def _as_dtype(where, dtype):
    try:
        dtype = np.dtype(dtype)
    except TypeError as exc:
        fail(ArgumentTypeError, where, "features_dtype", f"is not a NumPy dtype ({exc})", dtype)
    if dtype.kind not in "biuf":
        fail(ArgumentError, where, "features_dtype", "must be a numeric dtype", str(dtype))
    return dtype


def _cast_features(where, features, dtype):
    """``features`` (dense or CSR) in ``dtype``, refused if a stored value would change."""
    values = features.data if hasattr(features, "tocsr") else features
    with np.errstate(invalid="ignore", over="ignore"):
        cast = values.astype(dtype)
        same = np.array_equal(cast, values, equal_nan=dtype.kind == "f"
                              and values.dtype.kind == "f")
    if not same:
        fail(DatasetError, where, "features_dtype",
             f"would change feature values (stored as {features.dtype})", str(dtype))
    if hasattr(features, "tocsr"):
        return features.astype(dtype)
    return cast
