"""Memory estimates made before allocating: a typed error instead of an exhausted machine."""

import os

from ._errors import ResourceError

__all__ = ["available_bytes", "check_bytes", "set_memory_limit"]

_LIMIT = None   # bytes, or None: what the machine has available


def available_bytes():
    """Bytes a new allocation may take: the limit set by :func:`set_memory_limit`, else the
    machine's available memory (``MemAvailable``; 2**63 where unknown)."""
    if _LIMIT is not None:
        return _LIMIT
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 2**63


def set_memory_limit(nbytes):
    """Cap the memory one sampling call may plan to allocate (``None``: the machine's available
    memory). Returns the previous cap."""
    global _LIMIT
    previous, _LIMIT = _LIMIT, None if nbytes is None else int(nbytes)
    return previous


def check_bytes(where, nbytes, argument, what="the sampled output"):
    """Raise :class:`ResourceError` when ``nbytes`` would not fit.

    Parameters
    ----------
    where : str
        The public function (for the message).
    nbytes : int
        Estimated bytes about to be allocated.
    argument : str
        What the caller should change (e.g. ``"fanouts or batch_size"``).
    """
    limit = available_bytes()
    if nbytes > limit:
        raise ResourceError(
            f"{where}: {what} would need {_human(nbytes)}, more than the {_human(limit)} "
            f"available; lower {argument}")


def _human(nbytes):
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(nbytes) < 1024 or unit == "PB":
            return f"{nbytes:.1f} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1024
