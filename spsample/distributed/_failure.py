"""A rank that fails alone ends the whole MPI job, with its error printed, instead of hanging.

When one rank of a distributed call fails (an exception, ``sys.exit``, ``MemoryError``,
``KeyboardInterrupt``) while the others wait for it in a collective, those others would wait
forever. Two things prevent that, both on by default under MPI with more than one rank:

* **a guard around every collective operation** of :mod:`spsample.distributed`
  (:func:`abort_if_failing_alone`): an exception that leaves such an operation on one rank
  only is printed to ``stderr`` with the rank, then ``MPI.COMM_WORLD.Abort`` ends every
  process of the job. Typed errors that every rank raises together (bad arguments found by
  the collective checks of :func:`~spsample.distributed._collective.agree`) are raised
  normally: nobody is left waiting, and the caller may catch them.
* **an exception hook** (``sys.excepthook``), installed when the first MPI communicator of
  more than one rank is created: an uncaught exception on one rank (in the user's own code
  too) is printed as usual, then the job is aborted, as ``python -m mpi4py`` does.

Opt out explicitly with ``SPSAMPLE_ABORT_ON_FAILURE=0`` in the environment or
:func:`set_abort_on_failure` ``(False)``: failures are then raised on the failing rank only,
and the other ranks may wait forever, as in plain MPI.
"""

import contextlib
import os
import sys
import time
import traceback

from .._errors import ArgumentError, ArgumentTypeError
from .._validate import fail
from ._collective import RAISED_ON_EVERY_RANK

__all__ = ["set_abort_on_failure", "abort_on_failure", "abort_if_failing_alone",
           "install_excepthook", "ENVIRONMENT_VARIABLE"]

#: ``0``/``false``/``no``/``off`` turns the abort off, ``1``/``true``/``yes``/``on`` (or unset)
#: leaves it on.
ENVIRONMENT_VARIABLE = "SPSAMPLE_ABORT_ON_FAILURE"
_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

#: Seconds between printing the error and aborting: without a pause, mpiexec sometimes tears
#: the job down before it has forwarded the message (about 1 run in 12 with MPICH's hydra).
FORWARD_S = 0.5

_choice = None              # set_abort_on_failure's value; None: the environment decides
_previous_hook = None       # sys.excepthook before ours; None: ours is not installed


def set_abort_on_failure(enabled):
    """Turn the abort of the whole job on a lone rank's failure on or off (this process).

    Parameters
    ----------
    enabled : bool
        ``False``: an error inside a distributed operation is raised on its rank only and
        the other ranks may hang (plain MPI behaviour); uncaught exceptions end only their
        own process. ``True`` (the default): the job is aborted after the error is printed.
        Takes precedence over the environment variable ``SPSAMPLE_ABORT_ON_FAILURE``.

    Returns
    -------
    bool
        The previous setting.

    Examples
    --------
    >>> from spsample.distributed import set_abort_on_failure
    >>> before = set_abort_on_failure(False)
    >>> set_abort_on_failure(before)
    False
    """
    global _choice
    if not isinstance(enabled, bool):
        fail(ArgumentTypeError, "set_abort_on_failure", "enabled", "must be True or False",
             enabled)
    previous = abort_on_failure()
    _choice = enabled
    world = _world()
    if enabled and world is not None and world.Get_size() > 1:
        install_excepthook()
    return previous


def abort_on_failure():
    """Whether a lone rank's failure aborts the job (see :func:`set_abort_on_failure`).

    Raises
    ------
    ArgumentError
        ``SPSAMPLE_ABORT_ON_FAILURE`` holds something other than 0/1/false/true/no/yes/off/on.
    """
    if _choice is not None:
        return _choice
    value = os.environ.get(ENVIRONMENT_VARIABLE, "1").strip().lower()
    if value not in _ON + _OFF:
        fail(ArgumentError, "spsample.distributed", f"environment variable {ENVIRONMENT_VARIABLE}",
             f"must be one of {_ON + _OFF}", value)
    return value in _ON


@contextlib.contextmanager
def abort_if_failing_alone(comm, where):
    """Abort the MPI job when the enclosed collective code fails on this rank alone.

    Any exception (``BaseException``: ``SystemExit`` and ``KeyboardInterrupt`` included)
    leaving the block ends the job through ``MPI.COMM_WORLD.Abort`` after printing it with the
    rank, unless every rank raises it together (marked by ``agree``), ``comm`` has a single
    rank, or the abort is turned off (then it propagates unchanged). A communicator whose
    ranks share this process (:class:`~spsample.distributed.ThreadComm`, with a
    ``lone_failure(where, exc)`` method) is told instead: its other ranks' collectives raise,
    and the process is never aborted.

    Parameters
    ----------
    comm : Communicator
        The ranks that would be left waiting.
    where : str
        The operation, for the message.
    """
    try:
        yield
    except BaseException as exc:
        if getattr(exc, RAISED_ON_EVERY_RANK, False) or comm.size == 1:
            raise
        lone_failure = getattr(comm, "lone_failure", None)
        if lone_failure is not None:   # ranks in one process (ThreadComm): the others raise
            lone_failure(where, exc)
            raise
        if not _enabled():
            raise
        _abort(comm.rank, comm.size, f"failed in {where}", exc)
        raise


def _enabled():
    """:func:`abort_on_failure`, on (the default) when the environment variable is invalid:
    while handling a failure, a second error would only hide the first."""
    try:
        return abort_on_failure()
    except ArgumentError:
        return True


def install_excepthook():
    """Make an uncaught exception on any one rank abort the job (idempotent).

    The previous ``sys.excepthook`` still prints the traceback first. Called when the first
    MPI communicator of more than one rank is created, unless the abort is turned off.
    """
    global _previous_hook
    if _previous_hook is None and abort_on_failure():
        _previous_hook = sys.excepthook
        sys.excepthook = _excepthook


def _excepthook(exc_type, exc, tb):
    _previous_hook(exc_type, exc, tb)
    mpi = _world()
    if mpi is None or mpi.Get_size() == 1 or getattr(exc, RAISED_ON_EVERY_RANK, False):
        return
    if _enabled():
        _abort(mpi.Get_rank(), mpi.Get_size(), "raised an uncaught exception (printed above)",
               None, exit_code=_exit_code(exc))


def _world():
    """``MPI.COMM_WORLD`` if MPI is imported, initialised and not finalised, else None."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return None
    return mpi.COMM_WORLD


def _abort(rank, size, what, exc, *, exit_code=None):
    """Print why, flush, and end every process of the job."""
    try:
        detail = "" if exc is None else "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:  # noqa: BLE001 - e.g. no memory left to format it: say what we can
        detail = f"{type(exc).__name__}: {exc!r}\n"
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    message = (
        f"spsample: rank {rank} of {size} {what}; the other ranks cannot go on without it, "
        f"so the MPI job is aborted (MPI.COMM_WORLD.Abort). Set {ENVIRONMENT_VARIABLE}=0 "
        "or call spsample.distributed.set_abort_on_failure(False) to handle such failures "
        "yourself.\n" + detail)
    # also the process's own stderr when sys.stderr was replaced (e.g. captured by pytest)
    for stream in dict.fromkeys(s for s in (sys.stderr, sys.__stderr__) if s is not None):
        with contextlib.suppress(Exception):
            stream.write(message)
            stream.flush()
    world = _world()
    if world is not None:
        time.sleep(FORWARD_S)      # the launcher forwards the message before it kills us
        world.Abort(exit_code if exit_code is not None else _exit_code(exc))


def _exit_code(exc):
    """The job's exit status: ``sys.exit``'s code when it is a non-zero int, else 1."""
    code = getattr(exc, "code", None) if isinstance(exc, SystemExit) else None
    return code if isinstance(code, int) and 0 < code < 256 else 1
