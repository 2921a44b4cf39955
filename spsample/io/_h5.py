"""The building blocks of spsample's HDF5 files, shared by the homogeneous (:mod:`._hdf5`) and
heterogeneous (:mod:`._hetero_hdf5`) layouts and by the readers of row blocks (the disk graph,
the distributed graphs): format and version, opening a file with its checks, reading and
writing arrays and CSR groups."""

import math
import os
from pathlib import Path

import numpy as np

from .._errors import ArgumentTypeError, DatasetError, DatasetNotFoundError
from .._validate import check_memory, fail
from ._files import fail_path
from ._untrusted import check_stored, csr_from_parts

__all__ = ["FORMAT", "VERSION", "LAYOUTS", "as_path", "open_file", "is_csr_group"]

FORMAT = "spsample"


VERSION = 2


#: The version written for files without sparse features (readable by older spsample).
_DENSE_VERSION = 1


#: The newest version read: 3 is the heterogeneous layout (``_hetero_hdf5.py``).
_MAX_VERSION = 3


_CHUNK_BYTES = 256 * 1024


#: How ``/graph/*`` is stored (:func:`save`'s ``layout``).
LAYOUTS = ("chunked", "contiguous")


def _write_csr(group, name, matrix, compression):
    """Create the group ``group[name]`` holding CSR ``matrix`` (see the module docstring)."""
    matrix = matrix if matrix.has_sorted_indices else matrix.sorted_indices()
    grp = group.create_group(name)
    grp.attrs.update(format="csr", shape=np.array(matrix.shape, dtype=np.int64))
    index_dtype = np.int32 if matrix.shape[1] < 2**31 else np.int64
    _write(grp, "indptr", np.asarray(matrix.indptr, dtype=np.int64), compression)
    _write(grp, "indices", np.asarray(matrix.indices, dtype=index_dtype), compression)
    _write(grp, "data", matrix.data, compression)


def _write(group, name, arr, compression):
    """Create ``group[name]`` from ``arr``: chunked by whole rows, compressed when asked."""
    arr = np.ascontiguousarray(arr)
    if arr.size == 0:
        return group.create_dataset(name, data=arr)
    row_bytes = arr.itemsize * (arr.size // arr.shape[0])
    rows = int(max(1, min(arr.shape[0], _CHUNK_BYTES // row_bytes)))
    opts = {} if compression is None else {"compression": "gzip", "compression_opts": 4,
                                           "shuffle": True}
    return group.create_dataset(name, data=arr, chunks=(rows,) + arr.shape[1:], **opts)


def _write_contiguous(group, name, arr, compression=None):
    """Create ``group[name]`` from ``arr`` in one contiguous, uncompressed extent."""
    return group.create_dataset(name, data=np.ascontiguousarray(arr))


_CSR_PARTS = ("indptr", "indices", "data")


def is_csr_group(obj):
    """Whether ``obj`` is a group holding sparse features (``attrs["format"] == "csr"``)."""
    if hasattr(obj, "shape"):
        return False
    fmt = obj.attrs.get("format")
    return isinstance(fmt, (str, bytes)) and fmt in ("csr", b"csr")


def _csr_features(where, path, group, arrays):
    """The CSR matrix of the ``/features`` group, its parts checked (:func:`csr_from_parts`)."""
    shape = np.asarray(group.attrs.get("shape", ()))
    if shape.shape != (2,) or shape.dtype.kind not in "iu":
        raise DatasetError(f"{where}: /features of {str(path)!r} needs a 'shape' attribute of "
                           f"two integers, not {shape!r:.40}")
    return csr_from_parts(where, f"/features of {str(path)!r}", arrays.pop("features/data"),
                          arrays.pop("features/indices"), arrays.pop("features/indptr"),
                          tuple(int(s) for s in shape))


def _check_sizes(where, path, dsets):
    """Every dataset holds the data its shape declares, and all of them fit in memory."""
    total = 0
    for dset in dsets.values():
        check_stored(where, path, dset)
        total += math.prod(dset.shape) * dset.dtype.itemsize
    has_features = "features" in dsets or "features/data" in dsets
    hint = ("pass features=False to leave /features in the file (read rows later with "
            "spsample.io.read_feature_rows)" if has_features else
            "the file declares more than fits in memory")
    check_memory(where, "path", total, f"the arrays of {str(path)!r}", hint)


def _shown(value):
    """An attribute's value for a message: NumPy scalars as plain numbers, at most 40
    characters."""
    if isinstance(value, np.generic):
        value = value.item()
    return f"{value!r:.40}"


def _as_name(value):
    """The ``name`` attribute as a str (h5py gives str, or bytes for fixed-length strings)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        raise DatasetError(f"attribute name={_shown(value)} must be a string")
    return value


def as_path(where, path):
    if not isinstance(path, (str, os.PathLike)):
        fail(ArgumentTypeError, where, "path", "must be a str or os.PathLike", type(path))
    return Path(path)


def open_file(where, path):
    """Open ``path`` read-only and check it is an spsample file of a known version.

    The file is closed again whenever the check fails (no handle leaks)."""
    import h5py

    if not path.exists():
        fail_path(DatasetNotFoundError, where, "path", "does not exist", path)
    if path.is_dir():
        fail_path(DatasetError, where, "path", "is a directory, not an spsample HDF5 file "
                  "(run `spsample convert` on it first)", path)
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise DatasetError(f"{where}: argument 'path' is not a readable HDF5 file "
                           f"({str(path)!r}: {exc}); if it is a dataset in another format, "
                           "run `spsample convert` on it first") from exc
    try:
        _check_format(where, path, f)
    except BaseException:
        f.close()
        raise
    return f


def _check_format(where, path, f):
    try:
        fmt, version = f.attrs.get("format"), f.attrs.get("version")
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise DatasetError(f"{where}: cannot read the attributes of {str(path)!r}: "
                           f"{exc}") from exc
    if isinstance(fmt, bytes):
        fmt = fmt.decode("utf-8", errors="replace")
    number = np.asarray(version) if version is not None else None
    good = (isinstance(fmt, str) and fmt == FORMAT and number is not None
            and number.shape == ()
            and number.dtype.kind in "iu" and 1 <= int(number) <= _MAX_VERSION)
    if not good:
        fail_path(DatasetError, where, "path",
                  f"is not an spsample dataset of version <= {_MAX_VERSION} "
                  f"(format={_shown(fmt)}, version={_shown(version)}); run `spsample convert` "
                  "on other formats first", path)


def _dataset(where, path, f, name):
    try:
        obj = f.get(name)
    except (OSError, KeyError) as exc:
        raise DatasetError(f"{where}: cannot read /{name} of {str(path)!r}: {exc}") from exc
    if obj is None or not hasattr(obj, "shape"):
        raise DatasetError(f"{where}: {str(path)!r} lacks the required dataset /{name}")
    if obj.shape is None:
        raise DatasetError(f"{where}: /{name} of {str(path)!r} is empty (no dataspace)")
    return obj


def _read_all(where, path, dset):
    """The whole of ``dset`` (sizes checked before, see :func:`_check_sizes`)."""
    try:
        return dset[()]
    except (OSError, ValueError, TypeError) as exc:
        raise DatasetError(f"{where}: cannot read {dset.name} of {str(path)!r} "
                           f"(truncated or corrupt?): {exc}") from exc
