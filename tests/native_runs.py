"""Helpers shared by the native fast-path tests (importable as ``native_runs``)."""

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import spsample
from spsample import native as _native

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def same_minibatches(a, b):
    """Whether two lists of minibatches are equal, minibatch by minibatch, bit for bit."""
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


def bulk_digest(bulk):
    """SHA-256 of a bulk's minibatches: each one's ``n_id``, then every hop's ``dst``, ``src``
    and edge ids, as int64 bytes (for comparing bulks across processes)."""
    h = hashlib.sha256()
    for mb in bulk:
        h.update(np.ascontiguousarray(mb.n_id, dtype=np.int64).tobytes())
        for (dst, src), eid in zip(mb.edges, mb.edge_ids):
            for a in (dst, src, eid):
                h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()


def experiment_script(name):
    """``experiments/<name>.py`` loaded as a module (not run), for tests of the scripts."""
    spec = importlib.util.spec_from_file_location(f"{name}_for_test", EXPERIMENTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def assert_minibatch_major_is_hop_major(g, seeds, sampler, threads):
    """The link loader's layout (``minibatch_major``, flatten_minibatch_major) of a bulk of
    ``sampler`` on ``threads`` kernel threads holds the same minibatches, hop arrays, counts and
    edges as the flat per-hop layout (4 minibatches of 150, 150, 200 and 100 of ``seeds``)."""
    from spsample.engine._hetero_sample import run_global
    from spsample.loader._batch import _edges, bulk_edges
    args = (g, seeds, np.array([150, 150, 200, 100]), np.array([0, 1, 2, 7]), 150, sampler, 3, 1)
    previous = _native.set_num_threads(threads)
    try:
        ref = run_global(*args)
        got = run_global(*args, minibatch_major=True)
        edges, kept = bulk_edges(got)
    finally:
        _native.set_num_threads(previous)
    assert len(got) == len(ref) and got.num_edges == ref.num_edges > 0
    for x, y, (ei, e_id), counts in zip(got, ref, edges, kept.tolist()):
        assert x.equals(y) and counts == y.num_sampled_edges
        ref_ei, ref_e_id = _edges(y)
        assert np.array_equal(ei, ref_ei) and np.array_equal(e_id, ref_e_id)
    for a, b in zip(got.hops, ref.hops):
        for name in ("dst", "src", "edge_id", "offsets"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(got.n_id, ref.n_id)


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
