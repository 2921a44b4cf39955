"""The per-call fast paths of ``spsample.sample`` (issue 28, "per call"): the plans memoised on
the graph, the distinct-seed check without a full sort, the estimate per minibatch size, one
reading of the memory limit per memoised call, ``as_int``'s fast path. Each must give exactly
what the slow path gives, and a memo must never serve a plan of another sampler, graph, seed,
epoch or number of minibatches."""

import numpy as np
import pytest

import spsample
from spsample import FastGCN, LABOR, LADIES, NodeWise, RandomWalk
from spsample import native as _native
from spsample import _validate
from spsample.engine import _batches, _plan_memo, _run
from spsample.engine import _primitives as prim
from spsample.engine._lazy import Streams

from graphs import random_graph

needs_native = pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built")

BUILTINS = [NodeWise([5, 3, -1]), NodeWise([4, 2], replace=True), LABOR([4, 3]),
            RandomWalk(6), RandomWalk(5, p=0.5, q=2.0), LADIES([10, 20]), FastGCN([10, 30])]
WEIGHTED = [NodeWise([5, 3], weighted=True), NodeWise([4, 2], weighted=True, replace=True)]


def _same(a, b):
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


def _numpy(g, seeds, **kw):
    """The NumPy evaluation of the constructors (traced afresh: the oracle)."""
    with _native.disabled():
        return spsample.sample(g, seeds, **kw)


def _memo(g):
    return g._cache.get(_plan_memo._SLOT, {})


@pytest.fixture
def traces(monkeypatch):
    """Counts the engine's traces of a bulk."""
    calls = []
    trace = _run.trace

    def counted(*a, **kw):
        calls.append(a[0])
        return trace(*a, **kw)
    monkeypatch.setattr(_run, "trace", counted)
    return calls


# ------------------------------------------------------------------------- the plan memo
@needs_native
@pytest.mark.parametrize("sampler,weighted", [(s, False) for s in BUILTINS] +
                         [(s, True) for s in WEIGHTED], ids=repr)
def test_per_minibatch_calls_trace_once_and_equal_the_bulk(sampler, weighted, traces):
    """One call per minibatch (the memo serves every call after the first) gives the bulk's
    minibatches and the NumPy evaluation's, bit for bit; the sampler is traced once."""
    g = random_graph(300, 3000, seed=5, weighted=weighted)
    seeds = np.random.default_rng(6).permutation(300)[:96]
    kw = dict(sampler=sampler, seed=3, epoch=2)
    parts = []
    for j in range(6):
        parts += spsample.sample(g, seeds[16 * j:16 * (j + 1)], batch_size=16, batch_offset=j,
                                 **kw)
    assert len(traces) == 1 and len(_memo(g)) == 1
    whole = spsample.sample(g, seeds, batch_size=16, **kw)
    assert _same(parts, whole)
    assert _same(parts, _numpy(g, seeds, batch_size=16, **kw))


@needs_native
@pytest.mark.parametrize("change", ["seed", "epoch", "minibatches"])
def test_the_memo_is_keyed_by_seed_epoch_and_minibatches(change, traces):
    g = random_graph(300, 3000, seed=7)
    seeds = np.random.default_rng(8).permutation(300)[:64]
    kw = dict(sampler=LABOR([4, 3]), batch_size=16, seed=1, epoch=0)
    spsample.sample(g, seeds[:16], **kw)
    other = {"seed": dict(seed=2), "epoch": dict(epoch=1), "minibatches": {}}[change]
    call = dict(kw, **other)
    got = spsample.sample(g, seeds if change == "minibatches" else seeds[:16], **call)
    assert len(traces) == 2
    assert _same(got, _numpy(g, seeds if change == "minibatches" else seeds[:16], **call))


@needs_native
def test_the_memo_is_per_graph():
    """Two graphs of the same size: each gets its own plans (they refer to its arrays)."""
    a, b = random_graph(200, 1500, seed=1), random_graph(200, 1500, seed=2)
    seeds = np.arange(0, 200, 7)
    kw = dict(sampler=NodeWise([4, 4]), batch_size=10, seed=5)
    spsample.sample(a, seeds, **kw)
    assert _same(spsample.sample(b, seeds, **kw), _numpy(b, seeds, **kw))
    assert _same(spsample.sample(a, seeds, **kw), _numpy(a, seeds, **kw))


@needs_native
@pytest.mark.parametrize("mutate, rebuilt", [
    (lambda s: setattr(s, "fanouts", (2, 1)), lambda: NodeWise([2, 1])),
    (lambda s: setattr(s, "fanouts", [6, 6]), lambda: NodeWise([6, 6])),
    (lambda s: setattr(s, "replace", True), lambda: NodeWise([4, 3], replace=True)),
], ids=["fanouts", "fanouts-list", "replace"])
def test_a_mutated_sampler_gets_a_new_plan(mutate, rebuilt):
    g = random_graph(300, 3000, seed=9)
    seeds = np.arange(0, 300, 9)
    s = NodeWise([4, 3])
    first = spsample.sample(g, seeds, sampler=s, batch_size=8, seed=4)
    mutate(s)
    got = spsample.sample(g, seeds, sampler=s, batch_size=8, seed=4)
    assert not _same(got, first)
    assert _same(got, spsample.sample(g, seeds, sampler=rebuilt(), batch_size=8, seed=4))
    assert _same(got, _numpy(g, seeds, sampler=rebuilt(), batch_size=8, seed=4))


@needs_native
def test_a_mutated_walk_gets_a_new_plan():
    g = random_graph(300, 3000, seed=9)
    seeds = np.arange(0, 300, 9)
    s = RandomWalk(6)
    spsample.sample(g, seeds, sampler=s, batch_size=8, seed=4)
    s.p, s.q = 0.25, 4.0
    assert _same(spsample.sample(g, seeds, sampler=s, batch_size=8, seed=4),
                 _numpy(g, seeds, sampler=RandomWalk(6, p=0.25, q=4.0), batch_size=8, seed=4))


def _one_neighbour(self, P, Q, ctx):
    return prim.select_rows(P, 1, Streams.per_vertex(Q, ctx))


@needs_native
def test_a_method_patched_on_the_class_gets_a_new_plan(monkeypatch):
    g = random_graph(300, 3000, seed=10)
    seeds = np.arange(0, 300, 5)
    kw = dict(sampler=NodeWise([4, 3]), batch_size=12, seed=6)
    before = spsample.sample(g, seeds, **kw)
    monkeypatch.setattr(NodeWise, "select", _one_neighbour)
    got = spsample.sample(g, seeds, **kw)
    assert max(mb.num_sampled_edges[0] - mb.batch_size for mb in got) <= 0
    assert not _same(got, before) and _same(got, _numpy(g, seeds, **kw))


@needs_native
def test_instances_with_extra_attributes_and_subclasses_are_not_memoised(traces):
    g = random_graph(300, 3000, seed=11)
    seeds = np.arange(0, 300, 5)
    patched = NodeWise([4, 3])
    patched.select = _one_neighbour.__get__(patched)

    class Mine(NodeWise):
        select = _one_neighbour

    for s in (patched, Mine([4, 3])):
        assert _plan_memo.plan_key(s, g, 1, 0, 0) is None
        del traces[:]
        a = spsample.sample(g, seeds, sampler=s, batch_size=12)
        b = spsample.sample(g, seeds, sampler=s, batch_size=12)
        assert len(traces) == 2 and not _memo(g)
        assert _same(a, b) and _same(a, _numpy(g, seeds, sampler=s, batch_size=12))
    assert _plan_memo.plan_key(NodeWise([4, 3]), g, 1, 0, 0) is not None


def test_plan_keys_tell_configurations_apart():
    g = random_graph(50, 200, seed=1)
    key = lambda s, k=1, seed=0, epoch=0: _plan_memo.plan_key(s, g, k, seed, epoch)  # noqa: E731
    base = key(NodeWise([3, 2]))
    assert base == key(NodeWise([3, 2])) == key(NodeWise((3, 2)))
    for other in (key(NodeWise([3, 3])), key(NodeWise([3, 2], replace=True)), key(LABOR([3, 2])),
                  key(NodeWise([3, 2]), k=2), key(NodeWise([3, 2]), seed=1),
                  key(NodeWise([3, 2]), epoch=1)):
        assert other != base
    assert key(RandomWalk(3, p=2.0)) != key(RandomWalk(3, p=0.5))
    odd = NodeWise([3, 2])
    odd.fanouts = np.array([3, 2])               # unhashable: traced every call
    assert key(odd) is None


@needs_native
def test_the_memo_keeps_a_few_entries_per_graph():
    g = random_graph(200, 1500, seed=3)
    for seed in range(_plan_memo.ENTRIES + 3):
        spsample.sample(g, [1, 2, 3], sampler=NodeWise([2]), batch_size=3, seed=seed)
    assert len(_memo(g)) == _plan_memo.ENTRIES
    assert _plan_memo.lookup(g, _plan_memo.plan_key(NodeWise([2]), g, 1, 0, 0)) is None


@needs_native
def test_a_memoised_call_still_checks_the_output_estimate(monkeypatch):
    g = random_graph(300, 3000, seed=12)
    kw = dict(sampler=NodeWise([-1, -1]), batch_size=8)
    spsample.sample(g, np.arange(8), **kw)
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "1000")
    with pytest.raises(spsample.ResourceLimitError, match="'sampler' would need"):
        spsample.sample(g, np.arange(8, 16), **kw)
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "nonsense")
    with pytest.raises(spsample.ArgumentError, match="SPSAMPLE_MEMORY_LIMIT"):
        spsample.sample(g, np.arange(8, 16), **kw)


def test_estimates_per_size_equal_the_plain_estimate():
    g = random_graph(300, 3000, seed=13)
    for sampler in BUILTINS:
        plans = _run.trace(sampler, g, np.arange(5, dtype=np.int64), 0, 0)
        memo = {"bounds": {}}
        for sizes in ([7], [16, 16, 16, 3], [4, 9, 4, 1], [5, 5], [2, 7]):
            sizes = np.array(sizes, dtype=np.int64)
            want = _estimate_by_unique(plans, g, sizes)
            assert _run.estimate_output_bytes(plans, g, sizes) == want
            per_size = lambda b, f: _plan_memo.output_bound(memo, b, f)  # noqa: E731
            assert _run.estimate_output_bytes(plans, g, sizes, per_size=per_size) == want


def _estimate_by_unique(plans, g, sizes):
    total = 0
    for b, count in zip(*np.unique(sizes, return_counts=True)):
        total += int(count) * _run._minibatch_bytes(_run.hop_bounds(plans, g.max_degree),
                                                    g.num_nodes, g.num_edges, int(b))
    return total


def test_size_counts_equal_unique():
    rng = np.random.default_rng(0)
    for _ in range(300):
        k = int(rng.integers(1, 9))
        sizes = np.full(k, int(rng.integers(1, 5)), dtype=np.int64)
        sizes[-1] = int(rng.integers(1, 5))
        if rng.random() < 0.3:
            sizes = rng.integers(1, 4, k)
        want = [(int(b), int(c)) for b, c in zip(*np.unique(sizes, return_counts=True))]
        assert _run._size_counts(sizes) == want


# ------------------------------------------------------------------ distinct seeds
def _first_repeat_by_sort(seeds, sizes):
    """The check as it was: one sort of (minibatch, vertex) keys."""
    batch = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    m = int(seeds.max()) + 1
    key = np.sort(batch * m + seeds)
    dup = np.flatnonzero(key[1:] == key[:-1])
    if dup.size:
        return (f"repeats vertex {int(key[dup[0]] % m)} within minibatch "
                f"{int(key[dup[0]] // m)}; seeds must be distinct within a minibatch")
    return None


def test_the_distinct_seed_check_names_the_first_repeat_as_the_sort_did():
    """Random seeds (dense, so the count runs; and sparse, so the rows are sorted) in
    minibatches of split_batches and of other layouts: the same repeat named, or none."""
    rng = np.random.default_rng(1)
    for trial in range(4000):
        n = int(rng.integers(1, 300))
        m = int(rng.integers(1, 100)) if trial % 5 else int(rng.integers(1024, 1300))
        seeds = rng.integers(0, n, m) if trial % 4 else rng.permutation(max(n, m))[:m]
        if trial % 3:
            sizes = _batches.split_batches(m, int(rng.integers(1, 40)))
        else:
            cuts = np.sort(rng.integers(0, m + 1, int(rng.integers(0, 5))))
            sizes = np.diff(np.concatenate([[0], cuts, [m]])).astype(np.int64)
        want = _first_repeat_by_sort(seeds, sizes)
        if want is None:
            _batches.check_unique_per_batch(seeds, sizes)
        else:
            with pytest.raises(spsample.SeedError) as err:
                _batches.check_unique_per_batch(seeds, sizes)
            assert str(err.value) == f"sample: argument 'seeds' {want}"


def test_repeats_across_minibatches_pass_the_count_and_the_sort():
    """Dense seeds repeated across minibatches (allowed): the count cannot prove them distinct,
    the per-minibatch sort passes them; one repeat within a minibatch still raises."""
    b = _batches._COUNT_MIN
    seeds = np.concatenate([np.arange(b), np.arange(b)[::-1], np.arange(b)])
    _batches.check_unique_per_batch(seeds, _batches.split_batches(seeds.size, b))
    seeds[2 * b + 5] = seeds[2 * b + 9]
    with pytest.raises(spsample.SeedError, match=f"repeats vertex {seeds[2 * b + 9]} within "
                       "minibatch 2"):
        _batches.check_unique_per_batch(seeds, _batches.split_batches(seeds.size, b))


@pytest.mark.parametrize("stride", [1, 19])            # the count, and the sort
def test_sample_rejects_a_repeated_seed_in_a_minibatch(stride):
    g = random_graph(40_000, 100_000, seed=2)
    seeds = np.arange(2048) * stride
    seeds[17] = seeds[20]
    for batch_size in (2048, 8):
        with pytest.raises(spsample.SeedError, match=f"'seeds' repeats vertex {seeds[20]} "
                           f"within minibatch {17 // batch_size}"):
            spsample.sample(g, seeds, sampler=NodeWise([2]), batch_size=batch_size)
    out = spsample.sample(g, seeds, sampler=NodeWise([2]), batch_size=18)  # 17 | 20: apart
    assert [mb.batch_size for mb in out[:2]] == [18, 18]


# ------------------------------------------------------------------ small checks
def test_as_int_fast_path_keeps_every_error():
    assert _validate.as_int("f", "x", 5) == 5 and _validate.as_int("f", "x", np.int64(5)) == 5
    for bad in (True, np.bool_(True), 2.0, "3", None):
        with pytest.raises(spsample.ArgumentTypeError, match="'x' must be an integer"):
            _validate.as_int("f", "x", bad)
    with pytest.raises(spsample.ArgumentError, match="'x' must be >= 1"):
        _validate.as_int("f", "x", 0, minimum=1)
    with pytest.raises(spsample.SeedError, match="'x' must be >= 1"):
        _validate.as_int("f", "x", -3, minimum=1, error_cls=spsample.SeedError)


def test_memory_limit_held_reads_once_and_only_inside(monkeypatch):
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "1000")
    with _validate.memory_limit_held():
        assert _validate.memory_limit() <= 1000
        monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "2000")
        assert _validate.memory_limit() <= 1000
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "3")
    assert _validate.memory_limit() == 3
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "bad")
    with _validate.memory_limit_held():
        for _ in range(2):                        # an error is not held: raised at every read
            with pytest.raises(spsample.ArgumentError, match="SPSAMPLE_MEMORY_LIMIT"):
                _validate.memory_limit()


def test_the_memo_keeps_no_reference_to_its_graph():
    """The memo lives in the graph's cache; its entries hold plain bounds and the kernels'
    arrays, not the graph, so dropping the graph frees it at once (no reference cycle left
    for the cyclic collector, which may run much later: a large graph would stay in memory)."""
    import gc
    import sys

    g = spsample.rmat(12, seed=1)
    spsample.sample(g, np.arange(64), sampler=spsample.NodeWise([5, 5]), batch_size=32)
    assert _plan_memo.lookup(g, next(iter(g._cache[_plan_memo._SLOT]))) is not None
    column_ids = g.indices
    held = sys.getrefcount(column_ids)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del g
        assert sys.getrefcount(column_ids) < held
        assert sys.getrefcount(column_ids) == 2        # ours and getrefcount's argument
    finally:
        if enabled:
            gc.enable()
