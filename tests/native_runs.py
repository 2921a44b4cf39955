"""Helpers shared by the native fast-path tests (importable as ``native_runs``)."""

import os
import subprocess
import sys
from pathlib import Path

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


def assert_threads_and_bulks_agree(g, seeds, **kw):
    """The native kernels give the same bits at 1 and 2 threads, in one bulk and minibatch by
    minibatch (``kw["batch_size"]`` seeds a call, numbered by ``batch_offset``), and equal the
    NumPy path's."""
    size = kw["batch_size"]
    one, two = native_run(g, seeds, 1, **kw), native_run(g, seeds, 2, **kw)
    parts = []
    for i in range(-(-len(seeds) // size)):
        parts += native_run(g, seeds[i * size:(i + 1) * size], batch_offset=i, **kw)
    with _native.disabled():
        slow = spsample.sample(g, seeds, **kw)
    assert same_minibatches(one, two), "1 thread != 2 threads"
    assert same_minibatches(one, parts), "one bulk != minibatch by minibatch"
    assert same_minibatches(one, slow), "native != NumPy path"


def portable_run(code, timeout=300):
    """The stdout words of ``code`` run in a fresh interpreter with ``SPSAMPLE_NATIVE_SCALAR=1``
    (the portable kernels: the switch is read once per process) and this folder on
    ``sys.path`` (so ``code`` can import the test modules); fails with the child's stderr."""
    here = str(Path(__file__).resolve().parent)
    code = f"import sys; sys.path.insert(0, {here!r})\n" + code
    out = subprocess.run([sys.executable, "-c", code],
                         capture_output=True, text=True, timeout=timeout,
                         env=dict(os.environ, SPSAMPLE_NATIVE_SCALAR="1"))
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()
