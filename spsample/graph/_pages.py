"""Transparent huge pages for the large frozen arrays the kernels read at random (column ids,
weights, row pointers): one TLB entry covers 2 MiB instead of 4 KiB, so the random reads of a
sampled hop miss the TLB far less often.

Linux only, best effort: where the kernel has transparent huge pages off, or lacks
``MADV_COLLAPSE`` (before 6.1), the memory simply stays on small pages. The contents never
change. ``SPSAMPLE_HUGE_PAGES=0`` (or ``off``) turns it off (to compare).
"""

import ctypes
import os
import sys

__all__ = ["advise_huge_pages", "HUGE_PAGE_BYTES", "MIN_BYTES"]

#: The size of a transparent huge page on x86-64 and arm64 (4 KiB base pages).
HUGE_PAGE_BYTES = 2 << 20
#: Arrays smaller than this are left alone (at most one whole huge page inside them).
MIN_BYTES = 4 << 20

_MADV_HUGEPAGE = 14
_MADV_COLLAPSE = 25
_libc = []
#: The errno of each ``MADV_COLLAPSE`` the kernel refused (it cannot always find free huge
#: pages at once; the memory then stays on small pages until khugepaged collapses it).
collapse_refusals = []


def _madvise():
    if not _libc:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            libc.madvise.restype = ctypes.c_int
            _libc.append(libc.madvise)
        except (OSError, AttributeError):
            _libc.append(None)
    return _libc[0]


def enabled():
    """Whether huge pages are asked for: Linux, and ``SPSAMPLE_HUGE_PAGES`` is not off (``0``,
    ``false``, ``no`` or ``off``, as ``SPSAMPLE_NATIVE`` reads it)."""
    switch = os.environ.get("SPSAMPLE_HUGE_PAGES", "1").strip().lower()
    return sys.platform.startswith("linux") and switch not in ("0", "false", "no", "off")


def advise_huge_pages(arr):
    """Back the whole 2 MiB pages inside ``arr``'s memory with huge pages, now.

    Parameters
    ----------
    arr : ndarray, C-contiguous, any dtype and shape
        Read-only is fine: the advice changes the mapping, never the bytes.

    Returns
    -------
    int
        The bytes advised (0 where nothing was: a small or non-contiguous array, another OS,
        ``SPSAMPLE_HUGE_PAGES=0``, or a kernel that refused).
    """
    if not enabled() or arr.nbytes < MIN_BYTES or not arr.flags.c_contiguous:
        return 0
    madvise = _madvise()
    if madvise is None:
        return 0
    start = arr.ctypes.data
    lo = (start + HUGE_PAGE_BYTES - 1) // HUGE_PAGE_BYTES * HUGE_PAGE_BYTES
    hi = (start + arr.nbytes) // HUGE_PAGE_BYTES * HUGE_PAGE_BYTES
    if hi <= lo or madvise(lo, hi - lo, _MADV_HUGEPAGE) != 0:
        return 0
    if madvise(lo, hi - lo, _MADV_COLLAPSE) != 0:   # synchronous; else khugepaged does it later
        collapse_refusals.append(ctypes.get_errno())  # e.g. EAGAIN / ENOMEM: no free huge pages
    return hi - lo
