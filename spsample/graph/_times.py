"""Timestamps of temporal graphs: integer times stay integers, so comparisons are exact.

A temporal relation's entry times (edge times, or the node times of its sources) and the seed
times a bulk is cut at come in one of two kinds:

* **int64** -- integer timestamps of any size (Unix seconds, milliseconds or nanoseconds):
  exact. Integer input of any width is stored as int64 (uint64 beyond the int64 range is
  refused), never converted to float64, whose 53-bit mantissa would merge ``2**53`` and
  ``2**53 + 1`` (two events 1 ns apart in 2024 would become the same time).
* **float64** -- real timestamps (finite).

Comparisons ``entry <= cut`` are exact whatever the two kinds: :func:`cut_times` converts the
cut times into the entries' kind without changing the outcome of any comparison (a real cut
``x`` becomes ``floor(x)`` against integer entries; an integer cut ``T`` becomes the largest
float64 not above ``T`` against real entries), so the NumPy path, the native kernels and the
distributed exchanges all compare numbers of one kind.
"""

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError
from .._validate import fail

__all__ = ["as_times", "cut_times", "TIME_KINDS"]

#: The dtypes times are stored in.
TIME_KINDS = (np.dtype(np.int64), np.dtype(np.float64))

_INT64_MIN, _INT64_END = -(2**63), 2**63        # [min, end): the int64 range, as floats exact


def _to_numpy(value):
    if hasattr(value, "detach"):                  # torch
        return value.detach().cpu().numpy()
    if hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):
        return value.get()                        # cupy
    return value


def as_times(where, name, value, *, error_cls=ArgumentError):
    """``value`` as a new 1-D array of times: int64 for integer input, float64 for real input.

    Parameters
    ----------
    where, name : str
        The function and the argument, for messages.
    value : array_like, shape (m,)
        Integers (any width; uint64 up to the int64 range) or real numbers (finite). Python
        ints beyond the int64 range are refused.

    Returns
    -------
    ndarray, shape (m,), int64 or float64
        A copy; the caller's array is never modified.

    Raises
    ------
    ArgumentTypeError
        Not numbers (bool, complex, object, strings).
    error_cls
        Not 1-D, non-finite reals, integers beyond the int64 range.
    """
    value = _to_numpy(value)
    try:
        arr = np.asarray(value)
    except (OverflowError, ValueError, TypeError) as exc:   # ragged sequences
        fail(ArgumentTypeError, where, name, f"cannot be read as an array of times ({exc})",
             show_value=False)
    if not isinstance(value, np.ndarray) and arr.dtype.kind in "fO" and _big_ints(value):
        fail(error_cls, where, name, "has integer times beyond the int64 range",
             show_value=False)          # NumPy would have made them (inexact) floats
    if arr.dtype.kind not in "iuf":
        fail(ArgumentTypeError, where, name, f"must hold integer or real times, not {arr.dtype}",
             show_value=False)
    if arr.ndim != 1:
        fail(error_cls, where, name, f"must be 1-dimensional, not {arr.ndim}-dimensional",
             arr.shape)
    if arr.dtype.kind == "f":
        out = np.array(arr, dtype=np.float64, order="C", copy=True)
        if out.size and not np.isfinite(out).all():
            fail(error_cls, where, name, "must hold finite (sortable) times: no NaN or inf",
                 show_value=False)
        return out
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= _INT64_END:
        fail(error_cls, where, name, "has integer times beyond the int64 range",
             int(arr.max()))
    return np.array(arr, dtype=np.int64, order="C", copy=True)


def _big_ints(seq):
    """Whether a Python sequence holds an int outside the int64 range."""
    try:
        items = np.asarray(seq, dtype=object).reshape(-1).tolist()
    except (ValueError, TypeError):
        return False
    return any(isinstance(v, int) and not isinstance(v, bool)
               and not _INT64_MIN <= v < _INT64_END for v in items)


def cut_times(where, name, bound, dtype):
    """Cut times ``bound`` in the entries' kind ``dtype``, every comparison kept exact.

    For every value ``t`` of ``dtype``: ``t <= out[i]`` exactly when ``t <= bound[i]`` as real
    numbers.

    Parameters
    ----------
    where, name : str
        For the message of a refused cut.
    bound : int64 or float64 array, shape (k,)
    dtype : numpy.dtype
        int64 or float64: the entries' kind.

    Returns
    -------
    ndarray of ``dtype``, shape (k,)
        ``bound`` itself when the kinds agree, else a new array.

    Raises
    ------
    ArgumentError
        A real cut time below the int64 range against integer entry times (no int64 value
        keeps every entry out).
    """
    bound = np.asarray(bound)
    dtype = np.dtype(dtype)
    if bound.dtype == dtype:
        return bound
    if dtype == np.int64:                             # a real cut against integer entries
        if bound.size and bound.min() < _INT64_MIN:
            fail(ArgumentError, where, name, "has a real time below the int64 range of the "
                 "graph's integer times", float(bound.min()))
        out = np.floor(bound)
        above = out >= _INT64_END
        out[above] = 0.0
        out = out.astype(np.int64)
        out[above] = np.iinfo(np.int64).max
        return out
    out = bound.astype(np.float64)                    # an integer cut against real entries
    exact = np.abs(bound) <= 2**53
    if not exact.all():
        big = ~exact
        rounded = out[big]
        top = rounded >= _INT64_END
        back = np.where(top, 0.0, rounded).astype(np.int64)
        over = top | (back > bound[big])          # rounded above the integer: one float down
        rounded[over] = np.nextafter(rounded[over], -np.inf)
        out[big] = rounded
    return out
