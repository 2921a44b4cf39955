"""The row-wise engine's walk kernel (native/rowwise.h: walk_minibatch, taken when every hop is
uniform at fanout 1 and reads the previous hop's sources) and its packed 32-bit outputs, widened
into the flat arrays by native/bind/flatten.h, against the NumPy path and the oracle, bit for bit.

Walks keyed by row (RandomWalk) and by vertex, with and without replacement; walks that all stop
(later hops without rows); minibatches longer than the gather lag; 1, 2 and 3 threads; the link
loader's minibatch-major layout; the portable widening (SPSAMPLE_NATIVE_SCALAR=1) against the
vector one; the output budget.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spsample
from spsample import NodeWise, RandomWalk, native as _native
from spsample.engine._reference import reference_sample

from native_runs import (assert_minibatch_major_is_hop_major, bulk_digest,
                         native_run as _native_run, same_minibatches as _same)
from spsample.primitives import Streams

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("random_walk",
                                               ROOT / "experiments" / "random_walk.py")
user_walks = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(user_walks)


class VertexKeyedWalk(user_walks.RandomWalk):
    """A walk whose steps draw from the stream of the vertex it stands on (walks at one vertex
    of a minibatch at one step move together)."""

    def streams(self, Q, ctx):
        return Streams.per_vertex(Q, ctx)


class ReplacingWalk(NodeWise):
    """A walk through the rule with replacement (the same draw at fanout 1)."""

    def __init__(self, walk_length):
        super().__init__([1] * walk_length, replace=True)

    def frontier(self, state, ctx):
        return state.new_nodes(0) if ctx.hop == 1 else state.edge_sources(ctx.hop - 1)

    def streams(self, Q, ctx):
        return Streams.per_row(Q, ctx)


def web_like_graph(n=3000, seed=290):
    """Rows of 0-12 entries (a third empty), mostly local columns (walks revisit vertices), a
    hub of 2000 entries and self-loops."""
    rng = np.random.default_rng(seed)
    deg = rng.integers(0, 13, n)
    deg[rng.random(n) < 0.33] = 0
    deg[17] = 2000
    rows = []
    for v, d in enumerate(deg):
        near = (v + rng.integers(-40, 41, d)) % n
        rows.append(np.sort(np.where(rng.random(d) < 0.8, near, rng.integers(0, n, d))))
    for v in range(0, n, 7):
        if deg[v]:
            rows[v][0] = v
            rows[v].sort()
    return spsample.Graph.from_csr(np.concatenate([[0], np.cumsum(deg)]), np.concatenate(rows))


def dying_graph():
    """0 -> 1 -> 2 -> 3 (a dead end) and 4 <-> 5: walks from 0..3 stop within 3 steps, walks
    from 4 and 5 go on; a minibatch of {0, 1, 2, 3} has no rows from step 4 on."""
    return spsample.Graph.from_edge_index([0, 1, 2, 4, 5], [1, 2, 3, 5, 4], num_nodes=6)


WALKS = [RandomWalk(20), RandomWalk(1), user_walks.RandomWalk(7), VertexKeyedWalk(9),
         ReplacingWalk(11)]


def web_seeds(g):
    """Four minibatches of 300 (longer than the gather lag of 64), the first repeated."""
    rng = np.random.default_rng(291)
    batches = [rng.permutation(g.num_nodes)[:300] for _ in range(4)]
    batches[1] = batches[0]
    return np.concatenate(batches)


@needs_native
@pytest.mark.parametrize("sampler", WALKS, ids=repr)
def test_walks_equal_numpy_and_oracle(sampler):
    g = web_like_graph()
    s = web_seeds(g)
    kw = dict(sampler=sampler, batch_size=300, seed=21, epoch=3)
    fast = _native_run(g, s, **kw)
    with _native.disabled():
        slow = spsample.sample(g, s, **kw)
    assert _same(fast, slow), "native != NumPy path"
    assert _same(fast, reference_sample(g, s, **kw)), "native != reference oracle"
    assert fast.num_edges > 0 and fast[0].equals(slow[0])


@needs_native
def test_vertex_keyed_walks_move_together():
    """The vertex-keyed walks: walks standing on one vertex at one step take the same step (the
    inputs exercise K_VERTEX, not just K_ROW); the row-keyed ones do not always."""
    g = web_like_graph()
    s = web_seeds(g)[:300]

    def moved_together(sampler):
        mb = _native_run(g, s, sampler=sampler, batch_size=300, seed=5)[0]
        together = []
        for dst, src in mb.edges[1:]:
            for v in np.unique(dst):
                together.append(np.unique(src[dst == v]).size == 1)
        return together

    vertex = moved_together(VertexKeyedWalk(9))
    assert all(vertex) and len(vertex) > 100
    assert not all(moved_together(user_walks.RandomWalk(9)))


@needs_native
@pytest.mark.parametrize("sampler", [RandomWalk(8), VertexKeyedWalk(8)], ids=repr)
def test_walks_that_all_stop(sampler):
    """Minibatches whose walks all stop: later hops have no rows (and no edges), the others
    go on; equal to the NumPy path."""
    g = dying_graph()
    s = np.array([0, 1, 2, 3, 4, 5, 0, 3])
    kw = dict(sampler=sampler, batch_size=4, seed=2)
    fast = _native_run(g, s, **kw)
    with _native.disabled():
        assert _same(fast, spsample.sample(g, s, **kw))
    assert fast[0].num_sampled_edges == [3, 2, 1, 0, 0, 0, 0, 0]
    assert fast[1].num_sampled_edges == [3, 3, 3] + [2] * 5


@needs_native
@pytest.mark.parametrize("threads", [2, 3])
def test_threads_agree(threads):
    g = web_like_graph()
    s = web_seeds(g)
    kw = dict(sampler=RandomWalk(20), batch_size=150, seed=8)
    assert _same(_native_run(g, s, 1, **kw), _native_run(g, s, threads, **kw))


@needs_native
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sampler", [RandomWalk(6), VertexKeyedWalk(5)], ids=repr)
def test_minibatch_major_walks_are_the_hop_major_walks(sampler, threads):
    """The link loader's layout (flatten_minibatch_major) from the packed walks: the same
    minibatches, hop arrays, counts and edges as the flat per-hop layout."""
    g = web_like_graph()
    assert_minibatch_major_is_hop_major(g, web_seeds(g)[:600], sampler, threads)


_DIGEST = """
import sys
import spsample
sys.path.insert(0, {tests!r})
from native_runs import bulk_digest
from test_walk_speedpaths import web_like_graph, web_seeds
g = web_like_graph()
print(bulk_digest(spsample.sample(g, web_seeds(g), sampler=spsample.RandomWalk(20),
                                  batch_size=300, seed=4)))
"""


@needs_native
def test_portable_widening_equals_the_vector_one():
    """SPSAMPLE_NATIVE_SCALAR=1 (the portable widening and words) gives the same bytes."""
    code = _DIGEST.format(tests=str(ROOT / "tests"))

    def digest(scalar):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("SPSAMPLE_NATIVE_SCALAR", None)
        if scalar:
            env["SPSAMPLE_NATIVE_SCALAR"] = "1"
        return subprocess.run([sys.executable, "-c", code], env=env, check=True,
                              capture_output=True, text=True).stdout.strip()

    vector, portable = digest(False), digest(True)
    assert len(vector) == 64 and vector == portable
    g = web_like_graph()
    with _native.disabled():
        numpy = bulk_digest(spsample.sample(g, web_seeds(g), sampler=RandomWalk(20),
                                            batch_size=300, seed=4))
    assert vector == numpy


@needs_native
def test_the_budget_stops_walks(monkeypatch):
    """The walk kernel charges its packed outputs to the call's budget (the estimate, which
    bounds a walk's output, is passed; the kernel is given a smaller budget)."""
    from spsample.native import _kernel_calls
    g = web_like_graph()
    kw = dict(sampler=RandomWalk(20), batch_size=300, seed=1)
    assert _native_run(g, web_seeds(g), **kw).num_edges > 0
    monkeypatch.setattr(_kernel_calls, "_budget", lambda: 20_000)
    with pytest.raises(spsample.ResourceLimitError, match="lower the fanouts"):
        spsample.sample(g, web_seeds(g), **kw)


@needs_native
@pytest.mark.parametrize("bad", [-1, 3000, 2**40])
def test_the_kernel_rejects_seeds_outside_the_graph(bad):
    """run_rowwise's seed check (one check per call): a seed outside [0, n) anywhere in the
    bulk is a ValueError naming the seeds, not a read outside the graph."""
    from spsample._native_kernels import run_rowwise
    g = web_like_graph()
    hops = [dict(frontier=(0, 0, -1, -1, 0) if h == 1 else (2, h - 1, -1, -1, h - 1), aux=None,
                 aux_graph=0, graph=0, program=[], select=0, fanout=1, fanout_vec=-1, bound=0.0,
                 dedup=True, keep_row_ids=h < 3, key=1, hop_word=h, rng_key=(7, h), time=-1,
                 batch_time=-1) for h in (1, 2, 3)]
    graphs = [(g.indptr, g.indices, None, g.indices.astype(np.uint32))]
    args = (hops, [], [], 11, 12, 0, 1 << 30, 1, False)
    sizes, ids = np.array([2, 3]), np.array([5, 6])
    ok = run_rowwise(graphs, np.array([3, 100, 7, 400, 9]), sizes, ids, *args)
    assert sum(h[0].size for h in ok[3]) > 0
    with pytest.raises(ValueError, match="seeds"):
        run_rowwise(graphs, np.array([3, 100, 7, 400, bad]), sizes, ids, *args)
