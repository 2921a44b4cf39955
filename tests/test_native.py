"""The native kernels (``spsample.native``) against the oracle and the NumPy path, bit for bit.

Every native-specific test is skipped when the extension is not built; the NumPy-path tests
(the ``SPSAMPLE_NATIVE=0`` subprocess, the switch) run everywhere.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import spsample
from spsample import FastGCN, LADIES, NodeWise, native as _native
from spsample.engine._reference import reference_sample
from spsample.samplers._sample import split_batches

from graphs import random_graph

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")

UNWEIGHTED = [
    NodeWise([5, 3, 2]),
    NodeWise([3, -1]),
    NodeWise([40, 2]),                     # fanout > 32: the hashed Floyd branch
    NodeWise([4, 2], replace=True),
    NodeWise([-1, 3], replace=True),
    LADIES([10, 20]),
    LADIES([-1, 4]),
    LADIES([1, 1, 1]),
    LADIES([60, 200]),                     # most candidates chosen: many draws per column
    FastGCN([10, 30]),
    FastGCN([1]),
]
WEIGHTED = UNWEIGHTED + [
    NodeWise([5, 3], weighted=True),
    NodeWise([40, 2], weighted=True),
    NodeWise([4, 2], weighted=True, replace=True),
    NodeWise([-1, 2], weighted=True),
    NodeWise([-1, 2], weighted=True, replace=True),
]


def _same(a, b):
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


def _native_numpy_oracle(g, seeds, **kw):
    """Sample with the native path, the NumPy path and the oracle; assert all three agree."""
    with _native_on():
        fast = spsample.sample(g, seeds, **kw)
    with _native.disabled():
        slow = spsample.sample(g, seeds, **kw)
    oracle = reference_sample(g, seeds, **kw)
    assert _same(fast, slow), "native != NumPy path"
    assert _same(fast, oracle), "native != reference oracle"
    return fast


class _native_on:
    """Context manager: the native path on (and restored afterwards)."""

    def __enter__(self):
        self.previous = _native.set_enabled(True)

    def __exit__(self, *exc):
        _native.set_enabled(self.previous)


@needs_native
@pytest.mark.parametrize("sampler", UNWEIGHTED, ids=repr)
def test_random_graph_equals_oracle(sampler):
    g = random_graph(300, 2500, seed=1)
    seeds = np.random.default_rng(2).permutation(300)[:90]
    _native_numpy_oracle(g, seeds, sampler=sampler, batch_size=16, seed=7, epoch=2, batch_offset=3)


@needs_native
@pytest.mark.parametrize("sampler", WEIGHTED, ids=repr)
def test_weighted_graph_equals_oracle(sampler):
    g = random_graph(250, 3000, seed=3, weighted=True, zero_weight_fraction=0.15)
    seeds = np.random.default_rng(4).permutation(250)[:70]
    _native_numpy_oracle(g, seeds, sampler=sampler, batch_size=20, seed=2**40 + 5, epoch=1)


def _skewed_graph():
    """Vertex 0 aggregates from 10**5 vertices; a sparse random graph around it."""
    n = 100_001
    rng = np.random.default_rng(5)
    hub_src = np.arange(1, n, dtype=np.int64)
    src = np.concatenate([hub_src, rng.integers(0, n, 3000), np.zeros(50, dtype=np.int64)])
    dst = np.concatenate([np.zeros(n - 1, dtype=np.int64), rng.integers(0, n, 3000),
                          rng.integers(1, n, 50)])
    w = rng.random(src.size) + 0.05
    return spsample.Graph.from_edge_index(src, dst, num_nodes=n, weights=w)


@needs_native
@pytest.mark.parametrize("sampler", [NodeWise([25, 5]), NodeWise([40, 3]), NodeWise([3, 3], replace=True),
                                     NodeWise([7, 2], weighted=True), LADIES([50, 50]),
                                     FastGCN([30])], ids=repr)
def test_skewed_graph_equals_oracle(sampler):
    g = _skewed_graph()
    seeds = np.concatenate([[0], np.random.default_rng(6).integers(1, g.num_nodes, 40)])
    seeds = np.unique(seeds)
    _native_numpy_oracle(g, seeds, sampler=sampler, batch_size=12, seed=3)


@needs_native
@pytest.mark.parametrize("sampler", [NodeWise([40, 50]), NodeWise([7, 3]), NodeWise([33, 2], replace=True),
                                     NodeWise([40, 5], weighted=True), LADIES([100, 100])], ids=repr)
def test_dense_rows_equal_oracle(sampler):
    """Rows of 100-400 entries: Floyd in the bitmap (fanout below and above 32), sorting paths."""
    g = random_graph(400, 80_000, seed=15, weighted=True)
    seeds = np.random.default_rng(16).permutation(400)[:60]
    _native_numpy_oracle(g, seeds, sampler=sampler, batch_size=20, seed=6, epoch=5)


@needs_native
@pytest.mark.parametrize("fanout", [1, 10, 32, 33, 62, 63, 64], ids=str)
def test_floyd_rows_around_one_word_equal_oracle(fanout):
    """Rows of every length 1-70 (Floyd's bitmap in one register up to 64 entries, in words
    above), fanouts up to d - 1, and the relabelling of many repeats."""
    d = np.arange(1, 71)
    indptr = np.concatenate([[0], np.cumsum(d)])
    indices = np.random.default_rng(17).integers(0, d.size, int(indptr[-1]))
    g = spsample.Graph.from_csr(indptr, indices)
    _native_numpy_oracle(g, np.arange(d.size)[::-1].copy(), sampler=NodeWise([fanout, 3]),
                         batch_size=9, seed=2, epoch=3)


@needs_native
@pytest.mark.parametrize("sampler", [NodeWise([4, 4]), NodeWise([2, 2], replace=True),
                                     NodeWise([-1, 2], weighted=True), LADIES([6, 6]),
                                     FastGCN([5, 5])], ids=repr)
def test_isolated_vertices_and_self_loops(sampler):
    """Rows 0..9 are empty; every vertex of 10..39 has a self-loop; seeds mix both kinds."""
    rng = np.random.default_rng(8)
    loops = np.arange(10, 40)
    src = np.concatenate([loops, rng.integers(10, 40, 120)])
    dst = np.concatenate([loops, rng.integers(10, 40, 120)])
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=40, weights=rng.random(src.size) + 0.1)
    seeds = rng.permutation(40)
    mbs = _native_numpy_oracle(g, seeds, sampler=sampler, batch_size=7, seed=9, epoch=4)
    isolated_only = [mb for mb in mbs if mb.seeds.max() < 10]
    for mb in isolated_only:
        assert mb.num_sampled_edges == [0] * len(mb.edges)


@needs_native
@pytest.mark.parametrize("sampler", [NodeWise([3, 3]), LADIES([4]), FastGCN([4])], ids=repr)
def test_empty_frontiers(sampler):
    """Seeds with no in-neighbours at all: every hop is empty, the seeds stay."""
    g = spsample.Graph.from_edge_index([0, 1], [1, 0], num_nodes=10)
    seeds = np.arange(2, 10)
    mbs = _native_numpy_oracle(g, seeds, sampler=sampler, batch_size=3)
    assert [mb.n_id.tolist() for mb in mbs][0] == [2, 3, 4] or isinstance(sampler, FastGCN)


@needs_native
def test_zero_weight_rows_sample_nothing():
    g = spsample.Graph.from_edge_index([1, 2, 3, 0], [0, 0, 0, 1], num_nodes=4,
                                       weights=[0.0, 0.0, 0.0, 1.0])
    for sampler in (NodeWise([2], weighted=True), NodeWise([2], weighted=True, replace=True),
                    NodeWise([-1], weighted=True)):
        mbs = _native_numpy_oracle(g, [0, 1], sampler=sampler, batch_size=1)
        assert mbs[0].num_sampled_edges == [0]
        assert mbs[1].num_sampled_edges == [2 if sampler.replace else 1]   # with multiplicity


@needs_native
@pytest.mark.parametrize("sampler", [NodeWise([6, 4, 2]), NodeWise([3, 2], weighted=True),
                                     LADIES([30, 30]), FastGCN([20, 20])], ids=repr)
def test_thread_count_invariance(sampler):
    g = random_graph(2000, 30000, seed=10, weighted=True)
    seeds = np.random.default_rng(11).permutation(2000)[:640]
    previous = _native.set_num_threads(1)
    try:
        one = spsample.sample(g, seeds, sampler=sampler, batch_size=32, seed=4)
        _native.set_num_threads(2)
        two = spsample.sample(g, seeds, sampler=sampler, batch_size=32, seed=4)
        _native.set_num_threads(3)
        three = spsample.sample(g, seeds, sampler=sampler, batch_size=32, seed=4)
    finally:
        _native.set_num_threads(previous)
    assert _same(one, two) and _same(one, three)


@needs_native
def test_bulk_size_invariance_on_rmat():
    """Native, one bulk vs. minibatch-by-minibatch calls; and == NumPy path on a real-ish graph."""
    g = spsample.rmat(12, seed=3)
    seeds = np.random.default_rng(12).permutation(g.num_nodes)[:1024]
    kw = dict(sampler=NodeWise([10, 5, 3]), batch_size=128, seed=5, epoch=7)
    whole = spsample.sample(g, seeds, **kw)
    parts = []
    for i in range(8):
        parts += spsample.sample(g, seeds[i * 128:(i + 1) * 128], batch_offset=i, **kw)
    assert _same(whole, parts)
    with _native.disabled():
        assert _same(whole, spsample.sample(g, seeds, **kw))


@needs_native
def test_outputs_are_owned_int64_arrays():
    g = random_graph(100, 800, seed=13)
    mb = spsample.sample(g, np.arange(10), sampler=NodeWise([3, 3]), batch_size=10)[0]
    arrays = [mb.n_id] + [a for pair in mb.edges for a in pair] + list(mb.edge_ids)
    for a in arrays:
        assert a.dtype == np.int64 and a.ndim == 1 and a.flags.c_contiguous
    lw = spsample.sample(g, np.arange(10), sampler=LADIES([5]), batch_size=10)[0]
    assert lw.weight[0].dtype == np.float64 and lw.weight[0].size == lw.edges[0][0].size


@needs_native
def test_rng_hooks_match_python():
    from spsample import _rng

    idx = np.arange(0, 40, dtype=np.int64)
    vtx = np.arange(100, 140, dtype=np.int64)
    bat = np.full(40, 7, dtype=np.int64)
    key = _rng.split_seed(2**33 + 9)
    native = _native.kernels.philox_words(idx, vtx, 5, bat, int(key[0]), int(key[1]))
    python = _rng.stream_words(idx, vtx, 5, bat, key)
    assert native.dtype == np.uint32 and np.array_equal(native, python)
    x = np.concatenate([np.geomspace(1e-300, 1e300, 1001), np.random.default_rng(0).random(1000)])
    assert np.array_equal(_native.kernels.det_log(x), _rng.det_log(x))


@needs_native
@pytest.mark.parametrize("path", ["auto", "generic", "avx2"])
def test_ladies_candidate_words_match_python_philox(path):
    """Every implementation of the LADIES candidates' words (the hand-written AVX2 one, the
    compiler-vectorised clones, the one the kernel picks) is word 0 of stream (u, hw, bid),
    for several hop words, batch ids and keys (the AVX2 one folds the rounds' constant parts,
    which depend on all three)."""
    from spsample import _rng

    rng = np.random.default_rng(3)
    u = rng.integers(0, 2**32 - 1, size=1003, dtype=np.uint64).astype(np.uint32)
    cases = [(0x0102, 77, 2**40 + 17), (0, 0, 0), (2**32 - 1, 2**32 - 1, 2**64 - 1)]
    cases += [tuple(int(x) for x in rng.integers(0, 2**32, size=2, dtype=np.uint64)) + (int(s),)
              for s in rng.integers(0, 2**63, size=5, dtype=np.uint64)]
    for hw, bid, seed in cases:
        key = _rng.split_seed(seed)
        try:
            words = _native.kernels.column_words(u, hw, bid, int(key[0]), int(key[1]), path)
        except Exception as exc:  # the hook refuses "avx2" where the CPU or build has none
            if path == "avx2" and "AVX2" in str(exc):
                pytest.skip(str(exc))
            raise
        expected = _rng.stream_words(np.zeros(u.size, np.int64), u.astype(np.int64), hw,
                                     np.full(u.size, bid, np.int64), key)
        assert words.dtype == np.uint32 and np.array_equal(words, expected), (hw, bid, seed)


# ------------------------------------------------------------------------- switch and bounds
def _run_python(code, **env):
    """Run ``code`` in a fresh interpreter with extra environment variables; its stdout words."""
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_switched_off_by_environment():
    code = ("import numpy as np, spsample; from spsample import native as _native; "
            "g = spsample.rmat(8, seed=1); "
            "mbs = spsample.sample(g, np.arange(64), sampler=spsample.NodeWise([4, 2]), batch_size=16); "
            "from spsample.engine._reference import reference_sample; "
            "ref = reference_sample(g, np.arange(64), sampler=spsample.NodeWise([4, 2]), batch_size=16); "
            "assert all(a.equals(b) for a, b in zip(mbs, ref)) and len(mbs) == 4; "
            "print(_native.active_path(), _native.enabled())")
    assert _run_python(code, SPSAMPLE_NATIVE="0") == ["numpy", "False"]


_BLOCK_EXTENSION = (
    "import sys\n"
    "class _NoExtension:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'spsample._native_kernels':\n"
    "            raise ImportError('blocked by the test: no extension')\n"
    "sys.meta_path.insert(0, _NoExtension())\n")


def test_runs_without_the_extension():
    """A checkout with no built extension (a fresh clone, a machine before its build) imports
    every room and samples on the NumPy path: the plan codes are empty enums then, and no module
    may read one at import (a link-mode table once did, so ``import spsample.io`` failed)."""
    code = _BLOCK_EXTENSION + (
        "import numpy as np, spsample, spsample.io, spsample.loader\n"
        "from spsample import native as _native\n"
        "g = spsample.rmat(8, seed=1)\n"
        "mbs = spsample.sample(g, np.arange(64), sampler=spsample.NodeWise([4, 2]), batch_size=16)\n"
        "from spsample.engine._reference import reference_sample\n"
        "ref = reference_sample(g, np.arange(64), sampler=spsample.NodeWise([4, 2]), batch_size=16)\n"
        "assert len(mbs) == 4 and all(a.equals(b) for a, b in zip(mbs, ref))\n"
        "print(_native.AVAILABLE, _native.active_path(), len(_native.LinkMode))\n")
    assert _run_python(code) == ["False", "numpy", "0"]


@needs_native
@pytest.mark.parametrize("weighted", [False, True])
def test_portable_membership_scan_gives_the_same_bits(weighted):
    """SPSAMPLE_NATIVE_SCALAR=1 forces the portable layer-wise code (scalar membership scan,
    compiler-vectorised Philox words instead of the AVX2 ones); its LADIES / FastGCN results must
    equal the NumPy path's, as the default's do."""
    code = ("import numpy as np, spsample; from spsample import native as _native; "
            f"g = spsample.rmat(11, seed=5); w = {weighted!r}; "
            "g = spsample.Graph.from_csr(g.indptr, g.indices, weights=np.linspace(0.1, 2.0, g.num_edges)) if w else g; "
            "seeds = np.random.default_rng(1).permutation(g.num_nodes)[:600]; "
            "ok = True\n"
            "for s in (spsample.LADIES([64, 64, 32]), spsample.FastGCN([64, 32])):\n"
            "    fast = spsample.sample(g, seeds, sampler=s, batch_size=100, seed=9)\n"
            "    with _native.disabled():\n"
            "        slow = spsample.sample(g, seeds, sampler=s, batch_size=100, seed=9)\n"
            "    ok = ok and all(a.equals(b) for a, b in zip(fast, slow))\n"
            "print(ok)")
    assert _run_python(code, SPSAMPLE_NATIVE_SCALAR="1") == ["True"]


@needs_native
def test_ladies_counts_switch_from_touched_bits_to_count_scan():
    """Unweighted LADIES lists its candidate columns from a touched bitset while the rows
    accumulated so far hold fewer than n / 8 entries, and by scanning the counts once they hold
    more: here layer 1 (the rows of low-degree seeds, all adjacent to hub 0) takes the first way and
    layer 2 (after the hub joined) the second, within every minibatch; both must give the oracle's bits."""
    rng = np.random.default_rng(21)
    n, hubs = 6000, 8
    src = np.concatenate([np.repeat(np.arange(hubs), 900), rng.integers(hubs, n, 4000)])
    dst = np.concatenate([rng.integers(0, n, hubs * 900), rng.integers(0, n, 4000)])
    g = spsample.Graph.from_edge_index(np.concatenate([src, dst]), np.concatenate([dst, src]), num_nodes=n)
    degree = np.diff(g.indptr)
    hub_neighbours = np.zeros(n, dtype=bool)
    hub_neighbours[g.indices[g.indptr[0]:g.indptr[1]]] = True
    seeds = rng.permutation(np.flatnonzero(hub_neighbours & (degree <= 4)))[:60]
    mbs = _native_numpy_oracle(g, seeds, sampler=LADIES([6, 6]), batch_size=20, seed=2)
    for mb in mbs:
        b0, new1 = mb.num_sampled_nodes[0], mb.num_sampled_nodes[1]
        assert degree[mb.n_id[:b0]].sum() < n / 8 <= degree[mb.n_id[:b0 + new1]].sum()


def test_internal_columns_rank_by_in_degree_and_invert():
    """The layer-wise kernel's internal ids: a permutation ranking columns by in-degree
    (descending, ties by id), its inverse, and the CSR's columns translated."""
    g = random_graph(300, 2500, seed=4)
    idx32, internal_of, vertex_of = _native.internal_columns(g.indices, g.num_nodes)
    assert idx32.dtype == internal_of.dtype == vertex_of.dtype == np.uint32
    np.testing.assert_array_equal(np.sort(vertex_of), np.arange(g.num_nodes))
    np.testing.assert_array_equal(internal_of[vertex_of], np.arange(g.num_nodes))
    in_degree = np.bincount(g.indices, minlength=g.num_nodes)
    ranked = in_degree[vertex_of]
    assert np.all(ranked[:-1] >= ranked[1:])
    ties = ranked[:-1] == ranked[1:]
    assert np.all(vertex_of[:-1][ties] < vertex_of[1:][ties])
    np.testing.assert_array_equal(idx32, internal_of[g.indices])


def test_disabled_context_restores_the_setting():
    before = _native.enabled()
    with _native.disabled():
        assert _native.active_path() == "numpy"
    assert _native.enabled() == before


def test_set_num_threads_rejects_negative():
    with pytest.raises(ValueError, match="n"):
        _native.set_num_threads(-1)


def _args(g, **over):
    seeds = np.arange(4, dtype=np.int64)
    a = dict(graph=g, seeds=seeds, sizes=split_batches(4, 2), batch_ids=np.arange(2), seed=0, epoch=0)
    a.update(over)
    return a


@pytest.mark.parametrize("override,match", [
    (dict(seeds=np.array([0, 1, 2, 99])), "seeds"),
    (dict(seeds=np.array([0, 1, 2, -1])), "seeds"),
    (dict(sizes=np.array([2, 1])), "sizes"),
    (dict(sizes=np.array([5, -1])), "sizes"),
    (dict(batch_ids=np.array([0, 2**32])), "batch_ids"),
    (dict(batch_ids=np.array([0])), "batch_ids"),
    (dict(seed=2**64), "seed"),
    (dict(epoch=2**24), "epoch"),
    (dict(seeds=np.zeros((2, 2), dtype=np.int64)), "seeds"),
])
def test_bulk_args_checked_before_native_code(override, match):
    g = random_graph(20, 60, seed=14)
    a = _args(g, **override)
    with pytest.raises(ValueError, match=match):
        _native.bulk_args(a["graph"], a["seeds"], a["sizes"], a["batch_ids"], a["seed"], a["epoch"])


def _snapshot(mbs):
    return [(mb.n_id.copy(), [(d.copy(), s.copy()) for d, s in mb.edges], [e.copy() for e in mb.edge_ids],
             [w.copy() for w in mb.weight or []]) for mb in mbs]


def _unchanged(mbs, snap):
    for mb, (n_id, edges, eids, weights) in zip(mbs, snap):
        assert np.array_equal(mb.n_id, n_id)
        for (d, s), (d0, s0) in zip(mb.edges, edges):
            assert np.array_equal(d, d0) and np.array_equal(s, s0)
        for e, e0 in zip(mb.edge_ids, eids):
            assert np.array_equal(e, e0)
        for w, w0 in zip(mb.weight or [], weights):
            assert np.array_equal(w, w0)   # bit-identical (no NaN here)


@needs_native
@pytest.mark.parametrize("sampler", [LADIES([64, 64, 64]), FastGCN([64, 64]), NodeWise([8, 4])],
                         ids=repr)
def test_bulk_blocks_reused_without_aliasing(sampler):
    """A bulk's flat arrays go back to the pool when the last view of them is freed, and later
    calls reuse them -- never while a minibatch still views them."""
    g = spsample.rmat(11, seed=4)
    seeds = np.random.default_rng(3).permutation(g.num_nodes)[:512]
    kw = dict(sampler=sampler, batch_size=64)
    previous = _native.set_pool_limit(1 << 30)
    try:
        with _native_on():
            first = spsample.sample(g, seeds, seed=1, **kw)
            kept = [first[0], first[5]]
            snap = _snapshot(kept)
            del first                       # the kept views hold the bulk's arrays
            second = spsample.sample(g, seeds, seed=2, **kw)
            _unchanged(kept, snap)
            held_before = _native.pool_stats()["held"]
            del second                      # its blocks go back to the pool
            held_freed = _native.pool_stats()["held"]
            assert held_freed > held_before
            third = spsample.sample(g, seeds, seed=1, **kw)    # reuses them
            assert _native.pool_stats()["held"] < held_freed
            _unchanged(kept, snap)          # earlier results untouched by the later calls
            assert _same(kept, [third[0], third[5]])
            _native.set_pool_limit(0)       # off: fresh memory each call, same results
            assert _native.pool_stats()["held"] == 0
            second = spsample.sample(g, seeds, seed=2, **kw)
            assert _same(second, spsample.sample(g, seeds, seed=2, **kw))
        with _native.disabled():
            assert _same(second, spsample.sample(g, seeds, seed=2, **kw))
    finally:
        _native.set_pool_limit(previous)


@needs_native
def test_layerwise_rmat_equals_numpy_path_and_bulk_invariant():
    """Three LADIES layers on a skewed R-MAT graph: one bulk == per-minibatch calls == NumPy path."""
    g = spsample.rmat(12, seed=6)
    seeds = np.random.default_rng(8).permutation(g.num_nodes)[:512]
    kw = dict(sampler=LADIES([128, 128, 128]), batch_size=128, seed=3, epoch=5)
    with _native_on():
        whole = spsample.sample(g, seeds, **kw)
        parts = []
        for i in range(4):
            parts += spsample.sample(g, seeds[i * 128:(i + 1) * 128], batch_offset=i, **kw)
    assert _same(whole, parts)
    with _native.disabled():
        assert _same(whole, spsample.sample(g, seeds, **kw))


def test_set_pool_limit_rejects_negative():
    with pytest.raises(spsample._errors.ArgumentError, match="nbytes"):
        _native.set_pool_limit(-1)
