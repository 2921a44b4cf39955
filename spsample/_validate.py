"""Argument checks used at the public boundary.

Every check goes through these helpers, so messages have one shape:
``"<function>: argument '<name>' <problem> (got <value>)"``.
"""

import contextlib
import contextvars
import math
import numbers

import numpy as np

from ._errors import ArgumentError, ArgumentTypeError, ResourceLimitError, SamplerError

_MAX_SHOWN = 60


def _show(value):
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def fail(error_cls, where, name, problem, value=None, *, show_value=True):
    """Raise ``error_cls`` with the project's message shape."""
    msg = f"{where}: argument '{name}' {problem}"
    if show_value:
        msg += f" (got {_show(value)})"
    raise error_cls(msg)


def as_int(where, name, value, *, minimum=None, error_cls=ArgumentError):
    """Return ``value`` as a Python int; reject bools, floats and non-numbers."""
    if type(value) is int:                       # the common case, without the ABC check
        if minimum is not None and value < minimum:
            fail(error_cls, where, name, f"must be >= {minimum}", value)
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        fail(ArgumentTypeError, where, name, "must be an integer", value)
    value = int(value)
    if minimum is not None and value < minimum:
        fail(error_cls, where, name, f"must be >= {minimum}", value)
    return value


def as_index_array(where, name, value, *, ndim=1, error_cls=ArgumentError, allow_empty=True):
    """Return ``value`` as a new C-contiguous int64 array.

    Integer arrays (any width, signed or unsigned) and sequences of Python ints are accepted;
    float, bool, object or complex arrays raise :class:`ArgumentTypeError`. The caller's
    object is never modified (a copy is always made).
    """
    if hasattr(value, "__cuda_array_interface__") or (
        hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray)
    ):
        value = _to_numpy(value)
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged sequences and the like
        fail(ArgumentTypeError, where, name, f"cannot be read as an array ({exc})",
             show_value=False)
    if arr.dtype == object or arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(value, np.ndarray):
            arr = arr.astype(np.int64)  # [] from Python has float dtype
        else:
            fail(ArgumentTypeError, where, name,
                 f"must hold integers, not {arr.dtype}", show_value=False)
    if arr.ndim != ndim:
        fail(error_cls, where, name, f"must be {ndim}-dimensional, not {arr.ndim}-dimensional",
             arr.shape)
    if not allow_empty and arr.size == 0:
        fail(error_cls, where, name, "must not be empty", arr.shape)
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        fail(error_cls, where, name, "has values beyond the int64 range", int(arr.max()))
    return np.array(arr, dtype=np.int64, order="C", copy=True)


def as_float_array(where, name, value, *, ndim=1, error_cls=ArgumentError):
    """Return ``value`` as a new float64 array, rejecting non-numeric input."""
    try:
        arr = np.asarray(value)
    except Exception as exc:
        fail(ArgumentTypeError, where, name, f"cannot be read as an array ({exc})",
             show_value=False)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        fail(ArgumentTypeError, where, name, f"must hold real numbers, not {arr.dtype}",
             show_value=False)
    if arr.ndim != ndim:
        fail(error_cls, where, name, f"must be {ndim}-dimensional, not {arr.ndim}-dimensional",
             arr.shape)
    return np.array(arr, dtype=np.float64, order="C", copy=True)


def check_range(where, name, arr, low, high, *, error_cls=ArgumentError):
    """Check ``low <= arr < high`` elementwise; name the first offender."""
    if arr.size == 0:
        return
    lo, hi = arr.min(), arr.max()
    if lo < low:
        fail(error_cls, where, name, f"has a value below {low}", int(lo))
    if hi >= high:
        fail(error_cls, where, name, f"has a value >= {high}", int(hi))


def check_no_unknown(where, options, known):
    """Reject keyword options not in ``known`` (for ``**kwargs`` constructors)."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise SamplerError(f"{where}: unknown option(s) {unknown}; "
                           f"known options are {sorted(known)}")


def _to_numpy(value):
    if hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):
        return value.get()  # cupy
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()  # torch
    return np.from_dlpack(value)


# ---------------------------------------------------------------------- memory budget
#: Environment variable that caps the bytes one input may make spsample allocate
#: (e.g. ``SPSAMPLE_MEMORY_LIMIT=2G``); it can only lower the limit found from the system.
MEMORY_LIMIT_ENV = "SPSAMPLE_MEMORY_LIMIT"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def format_bytes(nbytes):
    """``nbytes`` for a message: ``"32.0 GiB"``, ``"7.2 KiB"``, ``"12 bytes"``."""
    nbytes = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{int(nbytes)} bytes" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


#: The largest size :func:`parse_size` accepts (what an int64 byte count holds).
MAX_SIZE = 2**63 - 1
SIZE_FORMS = ("a size such as '1GB', '512MiB' or '1048576': a finite number of bytes > 0, "
              "at most 2**63 - 1, with an optional unit K, M, G or T")


def _parse_size(text):
    """``"2G"``, ``"512MiB"``, ``"1048576"`` -> bytes (an int in ``[1, MAX_SIZE]``); None when
    ``text`` is not such a size (garbage, a unit it does not know, ``inf``, ``nan``, zero,
    negative, or beyond :data:`MAX_SIZE`)."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    number = text[: len(text) - len(unit)].strip()
    try:
        value = float(number)
    except ValueError:
        return None
    if not math.isfinite(value) or value * _UNITS[unit] >= MAX_SIZE + 1:
        return None
    nbytes = int(value * _UNITS[unit])
    return nbytes if nbytes >= 1 else None


def parse_size(where, name, text):
    """``text`` (a ``str``) as bytes: see :func:`_parse_size`.

    Raises
    ------
    ArgumentError
        Naming ``name`` of ``where`` (or, with ``where=None``, the environment variable
        ``name``), when ``text`` is not a size.
    """
    parsed = _parse_size(text) if text.strip() else None
    if parsed is None:
        if where is None:
            raise ArgumentError(f"environment variable {name} must be {SIZE_FORMS} "
                                f"(got {_show(text)})")
        fail(ArgumentError, where, name, f"must be {SIZE_FORMS}", text)
    return parsed


def _system_limits():
    """Byte limits this process runs under: physical memory, cgroup, rlimits, the env cap."""
    import os

    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            text = fh.read().strip()
        if text.isdigit():
            limits.append(int(text))
    except OSError:
        pass
    limits.extend(_rlimit_room())
    env = os.environ.get(MEMORY_LIMIT_ENV)
    if env:
        limits.append(parse_size(None, MEMORY_LIMIT_ENV, env))
    return limits


def _rlimit_room():
    """Room left under ``ulimit -v`` / ``ulimit -d`` (soft limits minus what is mapped)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return []
    room, mapped = [], None
    for which in (resource.RLIMIT_AS, getattr(resource, "RLIMIT_DATA", None)):
        if which is None:
            continue
        soft, _ = resource.getrlimit(which)
        if soft != resource.RLIM_INFINITY:
            mapped = _mapped_bytes() if mapped is None else mapped   # read /proc only then
            room.append(max(0, soft - mapped))
    return room


def _mapped_bytes():
    """Virtual memory this process has mapped (0 where /proc is absent)."""
    import os

    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def memory_limit():
    """The most bytes one input may make spsample allocate: the smallest of physical memory,
    the cgroup's ``memory.max``, the room under ``ulimit -v``/``-d`` and
    ``$SPSAMPLE_MEMORY_LIMIT``.

    Raises
    ------
    ArgumentError
        ``$SPSAMPLE_MEMORY_LIMIT`` is set to something other than a size (``infGB``, ``nan``,
        ``-1G``, ``5X``, ``1e30G``), naming the variable.
    """
    held = _HELD.get()
    if held is not None and held[0] is not None:
        return held[0]
    limits = _system_limits()
    limit = min(limits) if limits else 2**63 - 1
    if held is not None:
        held[0] = limit
    return limit


#: Inside :func:`memory_limit_held`: a one-slot list, the limit once read (else ``None``).
_HELD = contextvars.ContextVar("spsample_memory_limit", default=None)


@contextlib.contextmanager
def memory_limit_held():
    """Within the block, :func:`memory_limit` reads the system and the environment once (at
    its first call, so errors come where they would) and returns that value again: the checks
    of one call (the estimate, then the kernel's budget) share one reading. Per thread."""
    token = _HELD.set([None])
    try:
        yield
    finally:
        _HELD.reset(token)


def check_memory(where, name, nbytes, what, hint):
    """Raise :class:`~spsample._errors.ResourceLimitError` if ``nbytes`` exceed
    :func:`memory_limit`, before anything is allocated.

    Parameters
    ----------
    where, name : str
        The function and the argument (CLI: the flag) the user should change.
    nbytes : int
        The estimate, in bytes.
    what : str
        What would be allocated (``"the CSR row pointers of 4,294,967,291 nodes"``).
    hint : str
        What to do instead (``"pass relabel=True to renumber the ids"``).
    """

    limit = memory_limit()
    if nbytes > limit:
        raise ResourceLimitError(
            f"{where}: argument '{name}' would need {format_bytes(nbytes)} for {what}, more "
            f"than the {format_bytes(limit)} this process may use; {hint}")
