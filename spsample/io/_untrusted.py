"""Checks for arrays read from files: every array out of a pickle, npz or HDF5 file is untrusted.

Nothing that trusts an array's structure (``csr_matrix.toarray``, a native kernel, a fancy
index, an allocation sized by a declared shape) may see it before these checks:

* :func:`csr_from_parts` -- the parts of a CSR matrix: integer index arrays, ``indptr``
  starting at 0, non-decreasing, ending at ``nnz``, every column id in ``[0, num_cols)``,
  a shape of two non-negative integers; returns a *new* ``csr_matrix`` built from checked
  copies (never the object a pickle produced).
* :func:`check_dense` -- the bytes a dense array of a declared shape would take, against the
  memory limit (:func:`spsample._validate.check_memory`), before it is allocated.
* :func:`check_stored` -- an HDF5 dataset's declared size against the data the file holds.
* :func:`check_count_by_file` -- a count derived from shared references (e.g. the adjacency
  lists of a pickled dict) against the size of the file that holds them.
"""

import math

import numpy as np

from .._errors import DatasetError
from .._validate import check_memory, format_bytes

__all__ = ["csr_from_parts", "check_dense", "check_stored", "check_count_by_file",
           "DEFLATE_MAX_RATIO"]

#: Deflate (gzip) cannot expand a stored byte into more than about 1032 bytes.
DEFLATE_MAX_RATIO = 1100


def _index_array(where, what, name, value):
    """``value`` as an int64 1-D copy, else :class:`DatasetError` naming ``what``/``name``."""
    arr = np.asarray(value) if isinstance(value, np.ndarray) else None
    if arr is None:
        raise DatasetError(f"{where}: {what} has a '{name}' that is not an array "
                           f"({type(value).__name__})")
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise DatasetError(f"{where}: {what} needs a 1-D integer '{name}', not "
                           f"{arr.dtype} of shape {arr.shape}")
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise DatasetError(f"{where}: {what} has a '{name}' beyond the int64 range")
    return arr.astype(np.int64, copy=True)


def _shape(where, what, shape):
    try:
        rows, cols = (int(s) for s in shape)
        ok = all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape)
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or rows < 0 or cols < 0:
        raise DatasetError(f"{where}: {what} needs a shape of two non-negative integers, not "
                           f"{shape!r:.60}")
    return rows, cols


def csr_from_parts(where, what, data, indices, indptr, shape):
    """A new ``scipy.sparse.csr_matrix`` from untrusted parts, after checking them all.

    Parameters
    ----------
    where : str
        The public function, for the message.
    what : str
        What the matrix is (``"ind.cora.tx"``, ``"'attr_*' of cora.npz"``), for the message.
    data : ndarray, shape (nnz,)
        Real numbers (bool, integer or float; finite or not, as stored).
    indices : ndarray of int, shape (nnz,)
    indptr : ndarray of int, shape (num_rows + 1,)
    shape : (int, int)

    Raises
    ------
    DatasetError
        Naming ``what`` and the first inconsistency.
    """
    import scipy.sparse as sp

    rows, cols = _shape(where, what, shape)
    indptr = _index_array(where, what, "indptr", indptr)
    indices = _index_array(where, what, "indices", indices)
    if not isinstance(data, np.ndarray) or data.ndim != 1 or data.dtype.kind not in "biuf":
        raise DatasetError(f"{where}: {what} needs 1-D numeric 'data', not "
                           f"{getattr(data, 'dtype', type(data).__name__)} of shape "
                           f"{getattr(data, 'shape', '?')}")
    _check_indptr(where, what, indptr, rows, indices.size)
    if data.size != indices.size:
        raise DatasetError(f"{where}: {what} has {data.size} values but {indices.size} "
                           "column indices")
    if indices.size and (indices.min() < 0 or indices.max() >= cols):
        bad = int(indices.min()) if indices.min() < 0 else int(indices.max())
        raise DatasetError(f"{where}: {what} has a column index {bad} outside [0, {cols})")
    matrix = sp.csr_matrix((data.copy(), indices, indptr), shape=(rows, cols))
    return matrix


def _check_indptr(where, what, indptr, rows, nnz):
    if indptr.size != rows + 1:
        raise DatasetError(f"{where}: {what} has {indptr.size} row pointers for {rows} rows "
                           f"(needs {rows + 1})")
    if indptr[0] != 0:
        raise DatasetError(f"{where}: {what} has row pointers starting at {int(indptr[0])}, "
                           "not 0")
    if rows and np.any(indptr[1:] < indptr[:-1]):
        raise DatasetError(f"{where}: {what} has decreasing row pointers")
    if indptr[-1] != nnz:
        raise DatasetError(f"{where}: {what} has row pointers ending at {int(indptr[-1])} "
                           f"but {nnz} column indices")


def check_dense(where, name, shape, dtype, what, hint):
    """Check that a dense array of ``shape`` and ``dtype`` fits the memory limit.

    Raises :class:`~spsample._errors.ResourceLimitError` naming ``name`` (see
    :func:`spsample._validate.check_memory`)."""
    nbytes = math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize
    check_memory(where, name, nbytes, f"{what} ({' x '.join(f'{int(s):,d}' for s in shape)} "
                 f"{np.dtype(dtype).name})", hint)


def check_count_by_file(where, what, count, path):
    """A genuine file stores each counted item at least once, in at least one byte: refuse
    ``count`` items from a file of fewer bytes (shared references expand a small pickle)."""
    size = path.stat().st_size
    if count > size:
        raise DatasetError(f"{where}: {what} expands to {count:,d} entries, more than the "
                           f"{size:,d} bytes of {str(path)!r} could hold (shared references?)")


def check_stored(where, path, dset):
    """Check that HDF5 dataset ``dset`` holds the data its shape declares.

    Contiguous datasets must have all their bytes allocated; chunked ones every chunk
    (unallocated chunks read as the fill value: a few bytes of metadata could declare
    terabytes of zeros), and no more than :data:`DEFLATE_MAX_RATIO` logical bytes per stored
    byte.

    Raises
    ------
    DatasetError
        Naming the dataset and both sizes.
    """
    declared = math.prod(dset.shape) * dset.dtype.itemsize if dset.shape else dset.dtype.itemsize
    if declared == 0:
        return
    stored = dset.id.get_storage_size()
    name = f"/{dset.name.lstrip('/')}"

    def bad(problem):
        raise DatasetError(f"{where}: {name} of {str(path)!r} declares shape {dset.shape} "
                           f"({format_bytes(declared)}) but {problem}")

    if dset.chunks is None:
        if stored < declared:
            bad(f"holds only {format_bytes(stored)}")
        return
    expected = math.prod(-(-s // c) for s, c in zip(dset.shape, dset.chunks))
    try:
        allocated = dset.id.get_num_chunks()
    except (AttributeError, OSError, RuntimeError):  # very old HDF5
        allocated = expected
    if allocated < expected:
        bad(f"holds only {allocated:,d} of its {expected:,d} chunks")
    if declared > DEFLATE_MAX_RATIO * stored:
        bad(f"stores only {format_bytes(stored)}")
