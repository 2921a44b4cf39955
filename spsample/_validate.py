"""Argument checks used at the public boundary.

Every check goes through these helpers, so messages have one shape:
``"<function>: argument '<name>' <problem> (got <value>)"``.
"""

import numbers

import numpy as np

from ._errors import ArgumentError, ArgumentTypeError

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
        fail(ArgumentTypeError, where, name, f"cannot be read as an array ({exc})", show_value=False)
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
        fail(ArgumentTypeError, where, name, f"cannot be read as an array ({exc})", show_value=False)
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
        from ._errors import SamplerError
        raise SamplerError(f"{where}: unknown option(s) {unknown}; known options are {sorted(known)}")


def _to_numpy(value):
    if hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):
        return value.get()  # cupy
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()  # torch
    return np.from_dlpack(value)
