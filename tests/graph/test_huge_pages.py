"""The large frozen arrays the kernels read at random go on transparent huge pages
(spsample.graph._pages), without changing a byte; small arrays and SPSAMPLE_HUGE_PAGES=0 are
left alone."""
import hashlib
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

import spsample
from spsample.graph import _graph, _pages
from spsample.graph._graph import frozen_array, frozen_filled

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _thp_usable():
    if not sys.platform.startswith("linux") or not THP.exists():
        return False
    if "[never]" in THP.read_text():
        return False
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    return (major, minor) >= (6, 1)                     # MADV_COLLAPSE


needs_thp = pytest.mark.skipif(not _thp_usable(), reason="no transparent huge pages with "
                               "MADV_COLLAPSE (Linux >= 6.1) here")


@pytest.fixture(autouse=True)
def _switched_on(monkeypatch):
    monkeypatch.delenv("SPSAMPLE_HUGE_PAGES", raising=False)


def _huge_kib(arr):
    """AnonHugePages (KiB) of the mapping holding arr's first whole huge page (the advice
    splits the mapping at the huge pages' bounds)."""
    H = _pages.HUGE_PAGE_BYTES
    addr = -(-arr.ctypes.data // H) * H
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= addr < hi
        elif inside and line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0


def _assert_huge(arr, refusals_before):
    """arr's first whole huge page is huge, unless the kernel refused a collapse meanwhile
    (no free huge pages at that moment, e.g. under another tenant's memory pressure): then the
    advice was given and the outcome is the kernel's, so the test skips."""
    if _huge_kib(arr) >= 2048:
        return
    refused = _pages.collapse_refusals[refusals_before:]
    if refused:
        pytest.skip(f"the kernel refused MADV_COLLAPSE now (errno {refused}): no free huge pages")
    assert _huge_kib(arr) >= 2048


def _digest(arr):
    return hashlib.sha256(arr.tobytes()).hexdigest()


@needs_thp
def test_a_large_frozen_array_goes_on_huge_pages_unchanged():
    src = np.random.default_rng(1).integers(0, 2**31, size=(6 << 20) // 4, dtype=np.int64)
    before = _digest(src)
    refusals = len(_pages.collapse_refusals)
    out = frozen_array(src)
    _assert_huge(out, refusals)
    assert _digest(out) == before and _digest(src) == before
    assert not out.flags.writeable


@needs_thp
def test_frozen_filled_and_indices32_go_on_huge_pages():
    n = 1 << 16
    rng = np.random.default_rng(2)
    indptr = np.arange(0, 40 * (n + 1), 40, dtype=np.int64)
    indices = np.sort(rng.integers(0, n, size=(n, 40)), axis=1).ravel()
    g = spsample.Graph.from_csr(indptr, indices)       # duplicates merged: fewer entries
    refusals = len(_pages.collapse_refusals)
    i32 = g.indices32()
    assert i32.nbytes >= _pages.MIN_BYTES + _pages.HUGE_PAGE_BYTES
    _assert_huge(i32, refusals)
    assert np.array_equal(i32, g.indices)
    refusals = len(_pages.collapse_refusals)
    filled = frozen_filled(np.int32, 3 << 20, lambda pos, piece: piece.__setitem__(
        slice(None), np.arange(pos, pos + piece.size, dtype=np.int32)))
    _assert_huge(filled, refusals)
    assert np.array_equal(filled, np.arange(3 << 20, dtype=np.int32))


def test_small_noncontiguous_and_switched_off_arrays_are_left_alone(monkeypatch):
    assert _pages.advise_huge_pages(np.zeros(1000)) == 0
    big = np.zeros((_pages.MIN_BYTES // 8) * 4)
    assert _pages.advise_huge_pages(big[::2]) == 0
    for off in ("0", "off", " False ", "no"):
        monkeypatch.setenv("SPSAMPLE_HUGE_PAGES", off)
        assert _pages.advise_huge_pages(big) == 0


@needs_thp
def test_the_advised_bytes_are_the_whole_huge_pages_inside():
    big = np.ones(5 << 20, dtype=np.uint8)
    got = _pages.advise_huge_pages(big)
    start, end = big.ctypes.data, big.ctypes.data + big.nbytes
    H = _pages.HUGE_PAGE_BYTES
    assert got == (end // H - -(-start // H)) * H and got >= H
    assert big.sum() == big.size                        # contents unchanged


def test_graph_arrays_are_advised(monkeypatch):
    seen = []
    monkeypatch.setattr(_graph, "advise_huge_pages", lambda a: seen.append(a.nbytes) or 0)
    g = spsample.Graph.from_csr(np.array([0, 2, 3]), np.array([0, 1, 1]))
    g.indices32()
    assert len(seen) >= 3                                # indptr, indices, indices32
