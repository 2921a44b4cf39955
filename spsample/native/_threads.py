"""The native kernels' thread counts: ``SPSAMPLE_THREADS`` and the ceiling on every count.

``SPSAMPLE_THREADS=N`` (N >= 1; 0 = OpenMP's default) sets the thread count of the native
sampling kernels through :func:`spsample.native.set_num_threads`, once per process, the
first time :func:`~spsample.native.apply_env_threads` runs: when :mod:`spsample.native` is
imported, when a :class:`~spsample.Loader` is built and when the ``spsample`` command starts.
A later explicit ``set_num_threads`` call wins. Under ``mpiexec`` on a small machine,
``SPSAMPLE_THREADS=1`` gives each rank one thread (as ``tests/run.sh`` does). Results never
depend on the thread count.

Every thread count (this variable, ``set_num_threads``, ``spsample train --threads`` and
``--sampler-threads``, ``Trainer``'s ``threads``) is at most :func:`max_threads`: 256, or 8
per CPU of the machine where that is more. An OpenMP runtime asked for far more threads than
it can create ends the process (32,768 threads: libgomp aborts; 100,000: a segmentation
fault), so a larger count is a typed error naming the variable or argument, never a clamp.

How idle OpenMP threads wait is set before any runtime loads, by :mod:`spsample._openmp`.
"""

import os

from .._errors import ArgumentError
from .._validate import as_int, fail

__all__ = ["ENV", "threads_from_env", "max_threads", "check_threads"]

ENV = "SPSAMPLE_THREADS"
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
    value = as_int(where, name, value, minimum=minimum)
    top = max_threads()
    if value > top:
        fail(ArgumentError, where, name, f"must be at most {top} threads (8 per CPU, at "
             "least 256): an OpenMP runtime cannot create many more", value)
    return value


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
