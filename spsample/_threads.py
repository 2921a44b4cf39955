"""``SPSAMPLE_THREADS``: the native kernels' thread count from the environment, in one place.

``SPSAMPLE_THREADS=N`` (N >= 1; 0 = OpenMP's default) sets the thread count of the native
sampling kernels through :func:`spsample._native.set_num_threads`, once per process, the
first time :func:`apply_env_threads` runs: when a :class:`~spsample.Loader` is built and when
the ``spsample`` command starts. A later explicit ``set_num_threads`` call wins. Under
``mpiexec`` on a small machine, ``SPSAMPLE_THREADS=1`` gives each rank one thread (as
``tests/run.sh`` does). Results never depend on the thread count.
"""

import os

from ._errors import ArgumentError

__all__ = ["ENV", "threads_from_env", "apply_env_threads"]

ENV = "SPSAMPLE_THREADS"
_APPLIED = []


def threads_from_env(environ=None):
    """The thread count ``SPSAMPLE_THREADS`` asks for, or ``None`` when it is unset or empty.

    Raises
    ------
    ArgumentError
        The variable is set to something other than a non-negative integer.
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
                            f"(0 = OpenMP's default) (got {text!r})")
    return value


def apply_env_threads():
    """Apply ``SPSAMPLE_THREADS`` to the native kernels, once per process.

    Returns the thread count applied, or ``None`` (unset, already applied, or no native
    kernels)."""
    if _APPLIED:
        return None
    _APPLIED.append(True)
    value = threads_from_env()
    from . import _native

    if value is None or not _native.AVAILABLE:
        return None
    _native.set_num_threads(value)
    return value
