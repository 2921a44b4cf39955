"""Collective error handling: a bad input on one rank fails every rank, never hangs.

:func:`agree` runs a local check on every rank and exchanges the outcome (one small
``allgather_object``) before anyone goes on; if any rank failed, every rank raises the same
typed error with the same message, naming the first failing rank.
"""

import hashlib

from .. import _errors
from .._errors import DistributedError, SpsampleError

__all__ = ["agree", "check_same", "fingerprint"]


def agree(comm, where, check, *, same=None):
    """Run ``check()`` on every rank; raise on all ranks if it failed on any.

    Parameters
    ----------
    comm : Communicator
    where : str
        The public function, for messages.
    check : callable
        Returns a value or raises a :class:`SpsampleError` subclass.
    same : object, optional
        A small description (e.g. ``repr`` of the configuration) that must be equal on every
        rank; a mismatch raises :class:`DistributedError` on all ranks.

    Returns
    -------
    ``check()``'s value on this rank.
    """
    result, error = None, None
    try:
        result = check()
    except SpsampleError as exc:
        error = exc
    # one small exchange: the error (if any) and a 16-character hash of `same`
    mine = (None if error is None else (type(error).__name__, str(error)),
            None if same is None else fingerprint(same))
    outcomes = comm.allgather_object(mine)
    failed = [(r, e) for r, (e, _) in enumerate(outcomes) if e is not None]
    if failed:
        rank, (cls_name, msg) = failed[0]
        if error is not None and comm.size == 1:
            raise error
        cls = getattr(_errors, cls_name, DistributedError)
        others = f" (and ranks {[r for r, _ in failed[1:]]})" if len(failed) > 1 else ""
        raise cls(f"rank {rank}{others}: {msg}") from error
    if same is not None and any(h != outcomes[0][1] for _, h in outcomes):
        values = comm.allgather_object(same)      # only on a mismatch: the readable values
        differing = next(r for r, v in enumerate(values) if v != values[0])
        raise DistributedError(
            f"{where}: ranks disagree: rank 0 has {values[0]}, rank {differing} has "
            f"{values[differing]}; every rank must pass the same values")
    return result


def fingerprint(*values):
    """A short stable hash of ``repr(values)`` (compared across ranks)."""
    return hashlib.sha256(repr(values).encode()).hexdigest()[:16]


def check_same(comm, where, description, value):
    """Raise :class:`DistributedError` on all ranks unless ``value`` is equal everywhere."""
    agree(comm, where, lambda: None, same=(description, value))


def open_rows_everywhere(comm, where, path, *, need_features=False):
    """``spsample.io.open_rows(path)`` on every rank, failing on all ranks together.

    Raises
    ------
    ArgumentTypeError, DatasetNotFoundError, DatasetError
        On every rank, when ``path`` is not a path, is missing on any rank, cannot be read, or
        (``need_features``) holds no ``/features``.
    """
    import os

    from .._errors import ArgumentTypeError, DatasetError, DatasetNotFoundError
    from .._validate import fail
    from ..io import open_rows

    def check():
        if not isinstance(path, (str, os.PathLike)):
            fail(ArgumentTypeError, where, "path", "must be a str or os.PathLike", type(path))
        if not os.path.exists(path):
            raise DatasetNotFoundError(
                f"{where}: argument 'path' {str(path)!r} does not exist on this rank")
        reader = open_rows(path)
        if need_features and reader.num_features == 0:
            reader.close()
            raise DatasetError(f"{where}: {str(path)!r} has no /features")
        return reader

    return agree(comm, where, check)
