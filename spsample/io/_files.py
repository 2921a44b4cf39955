"""Small file helpers shared by the converters: path checks, text tables, npz archives."""

import gzip
import os
import warnings
import zipfile
from pathlib import Path

import numpy as np

from .._errors import ArgumentTypeError, DatasetError, DatasetNotFoundError
from .._validate import fail

__all__ = ["as_bool", "as_dir", "as_file", "fail_path", "read_table", "read_npz"]


def fail_path(error_cls, where, name, problem, path):
    """Like :func:`spsample._validate.fail`, but shows the whole path (never shortened)."""
    fail(error_cls, where, name, f"{problem} (got {str(path)!r})", show_value=False)


def as_bool(where, name, value):
    """``value`` if it is a bool (or NumPy bool), else :class:`ArgumentTypeError` naming ``name``.

    Strings such as ``"false"`` are refused: they are truthy, so accepting them would silently
    flip the meaning of an option.
    """
    if not isinstance(value, (bool, np.bool_)):
        fail(ArgumentTypeError, where, name, "must be True or False", value)
    return bool(value)


def _as_path(where, name, path):
    if not isinstance(path, (str, os.PathLike)):
        fail(ArgumentTypeError, where, name, "must be a str or os.PathLike", type(path))
    return Path(path)


def as_dir(where, path, name="directory"):
    """``path`` as a Path to an existing directory, else a typed error naming ``name``."""
    path = _as_path(where, name, path)
    if not path.exists():
        fail_path(DatasetNotFoundError, where, name, "does not exist", path)
    if not path.is_dir():
        fail_path(DatasetError, where, name, "must be a directory", path)
    return path


def as_file(where, path, name="path"):
    """``path`` as a Path to an existing regular file, else a typed error naming ``name``."""
    path = _as_path(where, name, path)
    if not path.exists():
        fail_path(DatasetNotFoundError, where, name, "does not exist", path)
    if not path.is_file():
        fail_path(DatasetError, where, name, "must be a file, not a directory", path)
    return path


def read_table(where, path, *, dtype, delimiter=None, comment="#", skiprows=0, usecols=None):
    """Read a numeric text table (plain or ``.gz``) into a 2-D array, shape (rows, columns).

    ``delimiter=None`` splits on any whitespace (spaces or tabs); ``comment`` lines (and
    trailing comments) are skipped; an empty table gives shape (0, len(usecols) or 0).
    """
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", newline=None) as f, \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            table = np.loadtxt(f, dtype=dtype, delimiter=delimiter, comments=comment,
                               skiprows=skiprows, usecols=usecols, ndmin=2)
    except (ValueError, OSError, EOFError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{where}: cannot parse {str(path)!r} as a numeric table: "
                           f"{exc}") from exc
    if table.size == 0:
        table = table.reshape(0, len(usecols) if usecols is not None else 0)
    return table


def read_npz(where, path, keys, optional=()):
    """``{key: array}`` for ``keys`` (required) and ``optional`` keys of an ``.npz`` archive.

    Object arrays are refused (``allow_pickle=False``): an npz never runs code here.
    """
    try:
        with open(path, "rb") as handle:  # closed even when np.load fails half-way
            try:
                archive = np.load(handle, allow_pickle=False)
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
                raise DatasetError(f"{where}: cannot read {str(path)!r} as an npz archive: "
                                   f"{exc}") from exc
            if not hasattr(archive, "files"):  # a plain .npy file
                raise DatasetError(f"{where}: {str(path)!r} is a single .npy array, not an "
                                   "npz archive")
            with archive:
                missing = [k for k in keys if k not in archive.files]
                if missing:
                    raise DatasetError(f"{where}: {str(path)!r} lacks the array(s) {missing} "
                                       f"(it holds {sorted(archive.files)})")
                return {k: archive[k] for k in (*keys, *optional) if k in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"{where}: cannot read {str(path)!r}: {exc}") from exc
