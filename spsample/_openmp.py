"""How idle OpenMP threads wait, set at ``import spsample`` before any OpenMP runtime loads.

``import spsample`` sets ``OMP_WAIT_POLICY=passive`` in the process's environment unless the
user chose a policy (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` or ``KMP_BLOCKTIME`` set),
:func:`set_passive_wait`. OpenMP runtimes (libgomp, which torch and the native kernels use;
Intel's and LLVM's) read it once, when they are loaded: an idle thread then sleeps at once
instead of spinning (libgomp's default spins about 300,000 times, a few milliseconds, after
every parallel region). Beside busy processes -- other ranks polling in an MPI barrier --
spinning threads take the cores those processes need and are descheduled in turn:
``spsample train --epochs 5`` on Cora took 25 s instead of 6 s. A runtime loaded before
``import spsample`` (``import torch`` first) has already read the default: the variable is
still set (for child processes), :data:`WAIT_POLICY` records that it came too late, and
:func:`warn_if_spinning` says so once.

Room ``native`` (``tests/rooms.py``), but a module of the package's top level: importing
:mod:`spsample.native` loads the extension, and with it an OpenMP runtime, so the policy must
be set by a module that loads neither. The thread counts are in :mod:`spsample.native`
(``_threads``), which re-exports these names.
"""

import os
import sys
import warnings

from ._errors import SpsampleWarning

__all__ = ["WAIT_VARIABLES", "WAIT_POLICY", "set_passive_wait", "openmp_loaded",
           "warn_if_spinning"]

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
    warnings.warn(
        f"an OpenMP runtime ({WAIT_POLICY['runtime']}) was loaded before spsample was imported "
        "and OMP_WAIT_POLICY was not set, so its idle threads spin instead of sleeping; "
        "beside busy processes (e.g. MPI ranks polling) training can be several times "
        "slower. Import spsample before torch, or set OMP_WAIT_POLICY=passive in the "
        "environment", SpsampleWarning, stacklevel=3)
