"""Helpers shared by the native fast-path tests (importable as ``native_runs``)."""

import spsample
from spsample import native as _native


def same_minibatches(a, b):
    """Whether two lists of minibatches are equal, minibatch by minibatch, bit for bit."""
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


def native_run(g, s, threads=1, **kw):
    """``spsample.sample(g, s, **kw)`` on ``threads`` kernel threads, asserting that the native
    kernels ran it (not a fallback); the thread count is restored afterwards."""
    previous = _native.set_num_threads(threads)
    try:
        out = spsample.sample(g, s, **kw)
    finally:
        _native.set_num_threads(previous)
    assert out.path == "native"
    return out
