"""Collective error handling: a bad input on one rank fails every rank, never hangs.

:func:`agree` runs a local check on every rank and exchanges the outcome (one small
``allgather_object``) before anyone goes on; if any rank failed, every rank raises the same
typed error with the same message, naming the first failing rank. Any exception a check
raises takes part, not only spsample's own: a ``ValueError`` from NumPy or an ``OSError`` from
h5py on one rank becomes, on every rank, a :class:`DistributedError` that is also a
``ValueError`` (resp. ``OSError``), so ``except ValueError`` keeps working.

Errors raised this way carry :data:`RAISED_ON_EVERY_RANK`; the abort-on-failure guard of
:mod:`spsample.distributed._failure` lets them through, since no rank is left waiting.
"""

import builtins
import hashlib
import threading

from .. import _errors
from .._errors import (
    ArgumentTypeError, DatasetError, DatasetNotFoundError, DistributedError, SpsampleError,
)
from .._validate import fail
from ..io import open_rows

__all__ = ["agree", "check_same", "fingerprint", "open_rows_everywhere", "RAISED_ON_EVERY_RANK",
           "mark_raised_on_every_rank"]

#: Attribute set (to True) on the errors every rank raises together.
RAISED_ON_EVERY_RANK = "spsample_raised_on_every_rank"


def agree(comm, where, check, *, same=None, release=None):
    """Run ``check()`` on every rank; raise on all ranks if it failed on any.

    Parameters
    ----------
    comm : Communicator
    where : str
        The public function, for messages.
    check : callable
        Returns a value or raises any :class:`Exception` (spsample's typed errors keep their
        class; others become a :class:`DistributedError` that is also their built-in class).
    same : object, optional
        A small description (e.g. ``repr`` of the configuration) that must be equal on every
        rank; a mismatch raises :class:`DistributedError` on all ranks.
    release : callable, optional
        Called with this rank's result when another rank failed (e.g. to close a file).

    Returns
    -------
    ``check()``'s value on this rank.
    """
    result, error = None, None
    try:
        result = check()
    except Exception as exc:  # noqa: BLE001 - every failure must reach the other ranks
        error = exc
    # one small exchange: the error (if any) and a 16-character hash of `same`
    mine = (None if error is None else _describe(where, error),
            None if same is None else fingerprint(same))
    outcomes = comm.allgather_object(mine)
    failed = [(r, e) for r, (e, _) in enumerate(outcomes) if e is not None]
    if failed:
        if error is None and release is not None:
            release(result)
        raise _rebuild(comm, failed, error) from error
    if same is not None and any(h != outcomes[0][1] for _, h in outcomes):
        if release is not None:
            release(result)
        raise mark_raised_on_every_rank(_disagreement(comm, where, same))
    return result


def mark_raised_on_every_rank(error):
    """Mark ``error`` as raised by every rank together (returns it)."""
    setattr(error, RAISED_ON_EVERY_RANK, True)
    return error


def _describe(where, error):
    """``(class name, message, built-in class name or None)`` of a check's error."""
    if isinstance(error, SpsampleError):
        return type(error).__name__, str(error), None
    return type(error).__name__, f"{where}: {type(error).__name__}: {error}", _builtin_of(error)


def _rebuild(comm, failed, error):
    """The error every rank raises: the first failing rank's, with its class and message."""
    rank, (cls_name, msg, builtin) = failed[0]
    if error is not None and comm.size == 1 and builtin is None:
        return mark_raised_on_every_rank(error)
    if builtin is None:
        cls = getattr(_errors, cls_name, DistributedError)
    else:
        cls = _typed(builtin) or DistributedError
    others = f" (and ranks {[r for r, _ in failed[1:]]})" if len(failed) > 1 else ""
    prefix = "" if comm.size == 1 else f"rank {rank}{others}: "
    return mark_raised_on_every_rank(cls(prefix + msg))


def _disagreement(comm, where, same):
    values = comm.allgather_object(same)      # only on a mismatch: the readable values
    differing = next(r for r, v in enumerate(values) if v != values[0])
    return DistributedError(
        f"{where}: ranks disagree: rank 0 has {values[0]}, rank {differing} has "
        f"{values[differing]}; every rank must pass the same values")


_TYPED = {}
_TYPED_LOCK = threading.Lock()      # ranks that are threads (ThreadComm) build them at once


def _builtin_of(error):
    """The name of the most specific built-in class of ``error`` that takes a message alone
    (``UnicodeDecodeError`` needs five arguments: its parent ``UnicodeError`` is used)."""
    for cls in type(error).__mro__:
        if getattr(builtins, cls.__name__, None) is cls and _typed(cls.__name__) is not None:
            return cls.__name__
    return "Exception"


def _typed(builtin_name):
    """``DistributedError`` subclass that is also the built-in ``builtin_name`` (cached), or
    None when the two cannot be combined or the result cannot take a message alone."""
    with _TYPED_LOCK:
        return _typed_locked(builtin_name)


def _typed_locked(builtin_name):
    if builtin_name not in _TYPED:
        base = getattr(builtins, builtin_name)
        name = f"Distributed{builtin_name}"
        try:
            cls = type(name, (DistributedError, base),
                       {"__module__": __name__, "__str__": BaseException.__str__,
                        "__doc__": f"A ``{builtin_name}`` raised on one rank, seen by all."})
            cls("probe")
        except TypeError:
            cls = None
        else:
            globals()[name] = cls           # found by name, so that it pickles
        _TYPED[builtin_name] = cls
    return _TYPED[builtin_name]


def __getattr__(name):
    """The ``Distributed<Builtin>`` classes, created on first use (so that they unpickle in a
    process that has not made them yet)."""
    base = getattr(builtins, name[len("Distributed"):], None) \
        if name.startswith("Distributed") else None
    if isinstance(base, type) and issubclass(base, Exception) and _typed(base.__name__):
        return _typed(base.__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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

    return agree(comm, where, check, release=lambda reader: reader.close())
