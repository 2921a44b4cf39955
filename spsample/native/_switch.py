"""Which path runs: the extension probed once, the on/off switch, threads and the output pool.

* :data:`AVAILABLE` -- the extension ``spsample._native_kernels`` imported (:data:`IMPORT_ERROR`
  says why not).
* :func:`enabled` -- the native path is active: available, and neither switched off by the
  environment variable ``SPSAMPLE_NATIVE=0`` (read once, at import) nor by :func:`set_enabled`
  / :func:`disabled` at run time.
* :func:`active_path` -- ``"native"`` or ``"numpy"``.
* :func:`set_num_threads` / :func:`get_num_threads` -- the kernels' OpenMP threads (default:
  OpenMP's, i.e. ``OMP_NUM_THREADS`` or all cores); results never depend on them;
  :func:`apply_env_threads` applies ``SPSAMPLE_THREADS`` (:mod:`._threads`) once.
* :func:`set_pool_limit` / :func:`pool_stats` -- the pool of recycled output blocks.
"""

import contextlib
import os

from .._errors import MissingDependencyError
from .._validate import as_int, memory_limit
from ._threads import check_threads, threads_from_env

__all__ = ["AVAILABLE", "IMPORT_ERROR", "kernels", "enabled", "set_enabled", "disabled",
           "active_path", "set_num_threads", "get_num_threads", "kernel_threads",
           "apply_env_threads",
           "set_pool_limit", "pool_stats"]

try:
    from .. import _native_kernels as kernels
    AVAILABLE = True
    IMPORT_ERROR = None
except ImportError as exc:  # not built (no compiler at install time) or built for another Python
    kernels = None
    AVAILABLE = False
    IMPORT_ERROR = exc

_ENABLED = AVAILABLE and os.environ.get("SPSAMPLE_NATIVE", "1").strip().lower() not in ("0", "false", "no", "off")
_THREADS = 0    # 0: OpenMP's default
_APPLIED = []   # SPSAMPLE_THREADS applied (once per process)

def enabled():
    """Whether the samplers use the native kernels now."""
    return _ENABLED


def active_path():
    """``"native"`` or ``"numpy"``: the path :func:`spsample.sample` takes now."""
    return "native" if _ENABLED else "numpy"


def set_enabled(flag):
    """Switch the native path on or off at run time; returns the previous setting.

    Raises
    ------
    MissingDependencyError
        When switching on while the extension is not available.
    """
    global _ENABLED
    previous = _ENABLED
    if flag and not AVAILABLE:
        raise MissingDependencyError(
            "the native kernels are not built (reinstall spsample with a C++17 compiler: "
            f"pip install -e .): {IMPORT_ERROR}")
    _ENABLED = bool(flag)
    return previous


@contextlib.contextmanager
def disabled():
    """Context manager running its body on the NumPy path."""
    previous = set_enabled(False)
    try:
        yield
    finally:
        if previous:
            set_enabled(True)


def set_num_threads(n):
    """Threads of the native kernels (``0``: OpenMP's default); returns the previous value.

    Raises
    ------
    ArgumentTypeError
        ``n`` is not an integer.
    ArgumentError
        ``n`` is negative or above :func:`~spsample.native.max_threads` (an OpenMP runtime
        asked for many more threads than it can create ends the process).
    """
    global _THREADS
    n = check_threads("set_num_threads", "n", n, minimum=0)
    previous, _THREADS = _THREADS, n
    return previous


def apply_env_threads():
    """Apply ``SPSAMPLE_THREADS`` to the native kernels, once per process.

    Returns the thread count applied, or ``None`` (unset, already applied, or no native
    kernels)."""
    if _APPLIED:
        return None
    _APPLIED.append(True)
    value = threads_from_env()
    if value is None or not AVAILABLE:
        return None
    set_num_threads(value)
    return value


def get_num_threads():
    """Threads the native kernels will use (1 when the extension has no OpenMP)."""
    if not AVAILABLE:
        return 1
    return _THREADS if (_THREADS and kernels.have_openmp()) else kernels.max_threads()


def kernel_threads():
    """The thread setting the kernels are called with (``0``: OpenMP's default)."""
    return _THREADS


def set_pool_limit(nbytes):
    """Bytes of freed output blocks the kernels keep for reuse; returns the old limit.

    A bulk's flat arrays are blocks of a process-wide pool: when NumPy frees the last array
    viewing one it goes back to the pool (the kernels' per-minibatch buffers too, once
    flattened), and later calls reuse it (already-resident memory, so no page faults; the
    least recently returned blocks are freed first). A block is never reused while an array views
    it. The default limit is 1 GiB; ``0`` turns pooling off and frees what is held. No-op
    (returns 0) without the extension. A limit beyond ``2**63 - 1`` is that.
    """
    nbytes = min(as_int("set_pool_limit", "nbytes", nbytes, minimum=0), 2**63 - 1)
    if not AVAILABLE:
        return 0
    previous = kernels.pool_stats()[1]
    kernels.set_pool_limit(nbytes)
    return int(previous)


def pool_stats():
    """``{"held": bytes in the pool now, "limit": its limit}`` (zeros without the extension)."""
    if not AVAILABLE:
        return {"held": 0, "limit": 0}
    held, limit = kernels.pool_stats()
    return {"held": int(held), "limit": int(limit)}


if AVAILABLE:      # the pool's default limit (set_pool_limit)
    kernels.set_pool_limit(int(min(2**31, memory_limit() // 8)))
