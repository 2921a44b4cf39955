"""Threads from the environment, in one place: how idle OpenMP threads wait, and
``SPSAMPLE_THREADS``.

**Waiting policy.** ``import spsample`` sets ``OMP_WAIT_POLICY=passive`` in the process's
environment unless the user chose a policy (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` or
``KMP_BLOCKTIME`` set), :func:`set_passive_wait`. OpenMP runtimes (libgomp, which torch and the
native kernels use; Intel's and LLVM's) read it once, when they are loaded: an idle thread
then sleeps at once instead of spinning (libgomp's default spins about 300,000 times, a few
milliseconds, after every parallel region). Beside busy processes -- other ranks polling in
an MPI barrier -- spinning threads take the cores those processes need and are descheduled in
turn: ``spsample train --epochs 5`` on Cora took 25 s instead of 6 s. A runtime loaded before
``import spsample`` (``import torch`` first) has already read the default: the variable is
still set (for child processes), :data:`WAIT_POLICY` records that it came too late, and
:func:`warn_if_spinning` says so once.

``SPSAMPLE_THREADS=N`` (N >= 1; 0 = OpenMP's default) sets the thread count of the native
sampling kernels through :func:`spsample.native.set_num_threads`, once per process, the
first time :func:`apply_env_threads` runs: when a :class:`~spsample.Loader` is built and when
the ``spsample`` command starts. A later explicit ``set_num_threads`` call wins. Under
``mpiexec`` on a small machine, ``SPSAMPLE_THREADS=1`` gives each rank one thread (as
``tests/run.sh`` does). Results never depend on the thread count.

Every thread count (this variable, ``set_num_threads``, ``spsample train --threads`` and
``--sampler-threads``, ``Trainer``'s ``threads``) is at most :func:`max_threads`: 256, or 8
per CPU of the machine where that is more. An OpenMP runtime asked for far more threads than
it can create ends the process (32,768 threads: libgomp aborts; 100,000: a segmentation
fault), so a larger count is a typed error naming the variable or argument, never a clamp.
"""

import os
import sys

from ._errors import ArgumentError

__all__ = ["ENV", "WAIT_VARIABLES", "WAIT_POLICY", "set_passive_wait", "openmp_loaded",
           "warn_if_spinning", "threads_from_env", "apply_env_threads", "max_threads",
           "check_threads"]

ENV = "SPSAMPLE_THREADS"
_APPLIED = []
#: The thread ceiling: this many, or :data:`_PER_CPU` per CPU where that is more.
_MIN_CEILING = 256
_PER_CPU = 8


def max_threads():
    """The most threads one process may ask for: 256, or 8 per CPU where that is more."""
    return max(_MIN_CEILING, _PER_CPU * (os.cpu_count() or 1))


def check_threads(where, name, value, *, minimum=1):
    """``value`` as an int in ``[minimum, max_threads()]``.

    Raises
    ------
    ArgumentTypeError
        ``value`` is not an integer (bools and floats included).
    ArgumentError
        Below ``minimum`` or above :func:`max_threads`; the message names ``name``.
    """
    from ._validate import as_int, fail

    value = as_int(where, name, value, minimum=minimum)
    top = max_threads()
    if value > top:
        fail(ArgumentError, where, name, f"must be at most {top} threads (8 per CPU, at "
             "least 256): an OpenMP runtime cannot create many more", value)
    return value

#: Environment variables by which a user chooses how OpenMP threads wait (any one set: kept).
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
#: File names of OpenMP runtimes (GNU, Intel, LLVM) as they appear in ``/proc/self/maps``.
_OPENMP_RUNTIMES = ("libgomp", "libiomp", "libomp")
#: What :func:`set_passive_wait` did: ``chosen_by`` ("user" or "spsample"), and ``too_late``
#: (an OpenMP runtime was already loaded, with its default policy, when spsample set it).
WAIT_POLICY = {"chosen_by": None, "too_late": False, "runtime": None}
_WARNED = []


def set_passive_wait(environ=None):
    """Set ``OMP_WAIT_POLICY=passive`` unless a waiting policy was chosen (at import).

    Returns
    -------
    dict
        :data:`WAIT_POLICY`: ``chosen_by`` is ``"user"`` when one of :data:`WAIT_VARIABLES`
        was set (nothing is changed), else ``"spsample"``; ``too_late`` is True when an
        OpenMP runtime (``runtime``) was already loaded, so that this process's threads keep
        the runtime's default (spinning) policy.
    """
    environ = os.environ if environ is None else environ
    if any(environ.get(name, "").strip() for name in WAIT_VARIABLES):
        WAIT_POLICY.update(chosen_by="user", too_late=False, runtime=None)
        return WAIT_POLICY
    runtime = openmp_loaded()
    environ["OMP_WAIT_POLICY"] = "passive"
    WAIT_POLICY.update(chosen_by="spsample", too_late=runtime is not None, runtime=runtime)
    return WAIT_POLICY


def openmp_loaded():
    """The path of an OpenMP runtime already loaded in this process, or None.

    Read from ``/proc/self/maps`` (Linux); elsewhere, a loaded ``torch`` counts as one."""
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                name = line.rsplit("/", 1)[-1]
                if any(name.startswith(lib) for lib in _OPENMP_RUNTIMES):
                    return line.split(None, 5)[-1].strip()
    except OSError:
        return "torch" if "torch" in sys.modules else None
    return None


def warn_if_spinning():
    """Warn once (:class:`~spsample.SpsampleWarning`) when this process's OpenMP threads spin
    because a runtime was loaded before ``import spsample`` set the passive policy."""
    if not WAIT_POLICY["too_late"] or _WARNED:
        return
    _WARNED.append(True)
    import warnings

    from ._errors import SpsampleWarning

    warnings.warn(
        f"an OpenMP runtime ({WAIT_POLICY['runtime']}) was loaded before spsample was imported "
        "and OMP_WAIT_POLICY was not set, so its idle threads spin instead of sleeping; "
        "beside busy processes (e.g. MPI ranks polling) training can be several times "
        "slower. Import spsample before torch, or set OMP_WAIT_POLICY=passive in the "
        "environment", SpsampleWarning, stacklevel=3)


def threads_from_env(environ=None):
    """The thread count ``SPSAMPLE_THREADS`` asks for, or ``None`` when it is unset or empty.

    Raises
    ------
    ArgumentError
        The variable is set to something other than an integer in ``[0, max_threads()]``.
    """
    text = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ArgumentError(f"environment variable {ENV} must be a non-negative integer "
                            f"(0 = OpenMP's default) (got {text[:40]!r})")
    if value > max_threads():
        raise ArgumentError(f"environment variable {ENV} must be at most {max_threads()} "
                            "threads (8 per CPU, at least 256): an OpenMP runtime cannot "
                            f"create many more (got {text[:40]!r})")
    return value


def apply_env_threads():
    """Apply ``SPSAMPLE_THREADS`` to the native kernels, once per process.

    Returns the thread count applied, or ``None`` (unset, already applied, or no native
    kernels)."""
    if _APPLIED:
        return None
    _APPLIED.append(True)
    value = threads_from_env()
    from . import native as _native

    if value is None or not _native.AVAILABLE:
        return None
    _native.set_num_threads(value)
    return value
