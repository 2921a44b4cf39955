"""The alias rule (``NodeWise(weighted=True, weighted_method="alias")``, ``select_rows(...,
method="alias")``): Walker alias tables built once per graph (``Graph.alias_table``, Vose's
construction in a fixed order), draws of O(1) reads, the same law as the exact keys.

Every path gives the NumPy evaluation's bits (the conformance suite runs the zoo's alias cases
on all of them); the tests here make each branch of the rule happen -- attempts, the rows that
are too concentrated for them, the rows whose attempts run out, rows built from other values --
check that the kernel reads the graph's table when it should, and check the law itself.
"""

import itertools

import numpy as np
import pytest

import spsample
from spsample import _rng, native as _native
from spsample.engine import _primitives as prim
from spsample.engine._lowering import RequestHop, lower
from spsample.engine._native_run import select_requests
from spsample.engine._run import trace
from spsample.engine._lazy import ALIAS_SHARE_MAX
from spsample.engine._reference import _alias_table
from spsample.graph._graph import frozen_array
from spsample.graph._weights import alias_tables

from test_weighted_speedpaths import _assert_native_equals_numpy, _skewed_graph

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")

ALIAS = dict(weighted=True, weighted_method="alias")


# ------------------------------------------------------------------------------ the tables
def _random_rows(seed, n=40):
    rng = np.random.default_rng(seed)
    degrees = rng.integers(0, 60, n)
    degrees[::5] = rng.integers(0, 4, degrees[::5].size)
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    w = rng.exponential(size=indptr[-1]) ** rng.choice([1.0, 4.0, 12.0])
    w[rng.random(w.size) < 0.15] = 0.0
    w[rng.random(w.size) < 0.05] = -2.0
    w[rng.random(w.size) < 0.03] = np.nan
    w[rng.random(w.size) < 0.03] = 1e-310           # x = w d / W underflows to 0
    return indptr, w


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_tables_equal_the_row_by_row_construction(seed):
    """``alias_tables`` (one vectorised step per column position) gives each row the table of
    the reference's plain loop over the row, bit for bit."""
    indptr, w = _random_rows(seed)
    table, share, finite = alias_tables(indptr, w)
    assert finite.all()
    for v in range(indptr.size - 1):
        row = w[indptr[v]:indptr[v + 1]].tolist()
        if not any(x > 0 for x in row):
            assert share[v] == 0.0
            continue
        threshold, alias, row_share = _alias_table(row)
        assert table[indptr[v]:indptr[v + 1], 0].tolist() == threshold
        assert table[indptr[v]:indptr[v + 1], 1].tolist() == alias
        assert share[v] == row_share


@pytest.mark.parametrize("seed", range(4))
def test_a_table_draws_each_entry_with_its_weight(seed):
    """Position ``p`` comes up with probability ``(threshold[p] + sum over the i aliased to p of
    (2**32 - threshold[i])) / (d 2**32)``: ``w_p / W`` up to a few 2^-32 per entry, exactly 0
    for the entries of weight ``<= 0`` or NaN."""
    indptr, w = _random_rows(seed)
    table, _, _ = alias_tables(indptr, w)
    for v in range(indptr.size - 1):
        a, b = indptr[v], indptr[v + 1]
        wpos = np.where(w[a:b] > 0, w[a:b], 0.0)
        if wpos.sum() == 0:
            continue
        d = b - a
        mass = table[a:b, 0].astype(np.float64)
        np.add.at(mass, table[a:b, 1].astype(np.int64), 2.0**32 - table[a:b, 0])
        prob = mass / (d * 2.0**32)
        assert np.all(prob[wpos == 0] == 0)
        np.testing.assert_allclose(prob, wpos / wpos.sum(), rtol=0, atol=d * 2.0**-31)


@needs_native
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("threads", [1, 2])
def test_the_kernels_build_the_same_tables(seed, threads):
    """``spsample.native.alias_tables`` (rows in parallel, alias_table_row) gives the vectorised
    construction's bits, rows summing past the largest double included; a graph's memo built
    by either is the same."""
    indptr, w = _random_rows(seed, n=3000)
    v = int(np.flatnonzero(np.diff(indptr) >= 2)[0])
    w[indptr[v]:indptr[v + 1]] = 1e308                  # a row too heavy for a table
    before = _native.set_num_threads(threads)
    try:
        fast = _native.alias_tables(indptr, w)
    finally:
        _native.set_num_threads(before)
    slow = alias_tables(indptr, w)
    assert not slow[2].all() and fast[2].dtype == bool
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    g = _skewed_graph(9)
    built = _native.alias_table(g)
    for a, b in zip(built, alias_tables(g.indptr, g.weights)[:2]):
        np.testing.assert_array_equal(a, b)
    assert _native.alias_table(spsample.rmat(5, seed=1)) is None


@needs_native
def test_the_kernels_refuse_inconsistent_arrays():
    with pytest.raises(ValueError, match="indptr"):
        _native.alias_tables(np.array([0, 3, 2]), np.ones(2))
    with pytest.raises(ValueError, match="indptr"):
        _native.alias_tables(np.array([0, 5]), np.ones(2))


def test_a_row_summing_past_the_largest_double_has_no_table():
    indptr = np.array([0, 2, 3])
    table, share, finite = alias_tables(indptr, np.array([1e308, 1e308, 1.0]))
    assert finite.tolist() == [False, True]
    g = spsample.Graph.from_csr(indptr, np.array([1, 0, 0]), weights=np.array([1e308, 1e308, 1.0]))
    assert g.alias_table() is None


def test_graph_memoises_frozen_tables():
    g = _skewed_graph(8)
    table, share = g.alias_table()
    again, _ = g.alias_table()
    assert again is table and not table.flags.writeable and not share.flags.writeable
    assert table.shape == (g.num_edges, 2) and share.shape == (g.num_nodes,)
    assert spsample.rmat(6, seed=1).alias_table() is None        # unweighted


# ------------------------------------------------------------------------------ the branches
def _branch_graph():
    """Rows that take every branch of the rule at fanout 4: flat hubs (attempts), one heavy
    entry among light ones (the keys), rows of two heavy entries among light ones (attempts that
    run out: after the two heavy ones, one in hundreds finds a light one), rows with zero
    weights, and short rows (all kept)."""
    rng = np.random.default_rng(5)
    rows = []
    for v in range(300):
        kind = v % 5
        if kind == 0:
            rows.append(rng.uniform(0.5, 1.5, rng.integers(30, 400)))
        elif kind == 1:
            w = rng.uniform(0.01, 0.02, rng.integers(6, 60))
            w[rng.integers(w.size)] = 10.0
            rows.append(w)
        elif kind == 2:                                  # two heavy, the rest light
            w = np.full(rng.integers(8, 20), 1e-3)
            w[:2] = 1.0
            rows.append(rng.permutation(w))
        elif kind == 3:
            w = rng.uniform(0.1, 1.0, rng.integers(5, 50))
            w[rng.random(w.size) < 0.3] = 0.0
            rows.append(w)
        else:
            rows.append(rng.uniform(0.1, 1.0, rng.integers(0, 5)))
    degrees = np.array([r.size for r in rows])
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    indices = rng.integers(0, len(rows), indptr[-1])
    return spsample.Graph.from_csr(indptr, indices, weights=np.concatenate(rows))


def _branches(graph, seeds, s):
    """How many rows of the seeds' hop took each branch (the NumPy evaluation, instrumented)."""
    table, share = graph.alias_table()
    stats = graph.row_weight_stats().reshape(-1, 3)
    eligible = stats[seeds, 0]
    return {"all": int((eligible <= s).sum()),
            "keys": int(((eligible > s) & (s * share[seeds] > ALIAS_SHARE_MAX)).sum()),
            "attempts": int(((eligible > s) & (s * share[seeds] <= ALIAS_SHARE_MAX)).sum())}


def test_the_branch_graph_takes_every_branch(monkeypatch):
    g = _branch_graph()
    seeds = np.arange(g.num_nodes)
    counts = _branches(g, seeds, 4)
    assert min(counts.values()) >= 30, counts
    filled = []
    real = prim._keys_fill
    monkeypatch.setattr(prim, "_keys_fill", lambda *a: filled.append(1) or real(*a))
    with _native.disabled():
        spsample.sample(g, seeds, sampler=spsample.NodeWise([4], **ALIAS), batch_size=64, seed=41)
    assert len(filled) >= 5                              # attempts that ran out


@needs_native
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("fanouts", [[4, 3], [1, 2], [40], [-1, 4]])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_kernel_equals_numpy(fanouts, replace, threads):
    g = _branch_graph()
    seeds = np.random.default_rng(3).permutation(g.num_nodes)[:256]
    before = _native.get_num_threads()
    _native.set_num_threads(threads)
    try:
        _assert_native_equals_numpy(g, spsample.NodeWise(fanouts, replace=replace, **ALIAS), seeds)
    finally:
        _native.set_num_threads(before)


@needs_native
@pytest.mark.parametrize("fanouts", [[15, 10, 5], [2, 2]])
def test_skewed_weights_equal_numpy(fanouts):
    g = _skewed_graph()
    seeds = np.random.default_rng(2).choice(g.num_nodes, 512, replace=False)
    _assert_native_equals_numpy(g, spsample.NodeWise(fanouts, **ALIAS), seeds)


class _ScaledAlias(spsample.NodeWise):
    """The alias rule on the weights times a number: values that are not the graph's own, so
    every row builds its own table (the same one when the number is 1)."""

    def __init__(self, fanouts, factor, **kw):
        super().__init__(fanouts, **ALIAS, **kw)
        self.factor = factor

    def probabilities(self, graph, Q, ctx):
        return super().probabilities(graph, Q, ctx) * self.factor


@needs_native
@pytest.mark.parametrize("replace", [False, True])
def test_rows_built_from_other_values_equal_numpy_and_the_graphs_table(replace):
    g = _branch_graph()
    seeds = np.arange(g.num_nodes)
    scaled = _ScaledAlias([4, 3], 3.0, replace=replace)
    _assert_native_equals_numpy(g, scaled, seeds)
    own = spsample.sample(g, seeds, sampler=spsample.NodeWise([4, 3], replace=replace, **ALIAS),
                          batch_size=64, seed=41)
    times_one = spsample.sample(g, seeds, sampler=_ScaledAlias([4, 3], 1.0, replace=replace),
                                batch_size=64, seed=41)
    for a, b in zip(own.hops, times_one.hops):
        np.testing.assert_array_equal(a.edge_id, b.edge_id)


@needs_native
def test_the_kernel_reads_the_graphs_table():
    """A doctored table in the graph's memo (every draw aliased to position 0 of its row)
    changes what the kernel keeps, and nothing the NumPy evaluation keeps: the kernel draws
    from the memoised table, not from one of its own."""
    seeds = np.arange(0, 300, 5)                         # the flat hubs: drawn from the table
    sampler = spsample.NodeWise([4], replace=True, **ALIAS)
    before = spsample.sample(_branch_graph(), seeds, sampler=sampler, batch_size=64, seed=41)
    g = _branch_graph()
    table, share = alias_tables(g.indptr, g.weights)[:2]
    g._cache["alias_table"] = (frozen_array(np.zeros_like(table)), frozen_array(share))
    after = spsample.sample(g, seeds, sampler=sampler, batch_size=64, seed=41)
    with _native.disabled():
        numpy = spsample.sample(g, seeds, sampler=sampler, batch_size=64, seed=41)
    first = g.indptr[seeds]
    assert np.isin(after.hops[0].edge_id, first).all()
    assert not np.isin(before.hops[0].edge_id, first).all()
    np.testing.assert_array_equal(numpy.hops[0].edge_id, before.hops[0].edge_id)


# ------------------------------------------------------------------------------ the law
def _successive_inclusion(w, s):
    """Exact inclusion probabilities of successive sampling of ``s`` of the weights ``w``."""
    d, total = len(w), sum(w)
    out = np.zeros(d)
    for order in itertools.permutations(range(d), s):
        p, left = 1.0, total
        for i in order:
            p *= w[i] / left
            left -= w[i]
        out[list(order)] += p
    return out


@pytest.mark.parametrize("w, s", [([8.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 2),   # keys branch
                                  ([1.0, 2.0, 3.0, 1.0, 1.5, 2.5, 1.0, 2.0], 3)])   # attempts
def test_inclusion_frequencies_are_successive_samplings(w, s):
    """One row drawn in 6000 minibatches (NumPy evaluation, as every path gives its bits):
    each entry's inclusion frequency is within 4.5 standard errors of the exact
    probability, for both the alias rule and the keys."""
    d, batches = len(w), 6000
    g = spsample.Graph.from_csr(np.array([0, d] + [d] * d), np.arange(1, d + 1),
                                weights=np.array(w))
    exact = _successive_inclusion(w, s)
    for method in ("alias", "keys"):
        bulk = spsample.sample(g, np.zeros(batches, dtype=np.int64),
                               sampler=spsample.NodeWise([s], weighted=True,
                                                         weighted_method=method),
                               batch_size=1, seed=7)
        freq = np.bincount(bulk.hops[0].edge_id, minlength=d) / batches
        err = np.sqrt(exact * (1 - exact) / batches)
        assert np.all(np.abs(freq - exact) <= 4.5 * err + 1e-12), (method, freq, exact)


# ------------------------------------------------------------------------------ errors
class _UnweightedAlias(spsample.NodeWise):
    """Asks for alias draws on an unvalued view."""

    def select(self, P, Q, ctx):
        return prim.select_rows(P, ctx.fanout, self.streams(Q, ctx), method="alias")


def test_bad_method_and_options_are_typed_errors():
    g = _branch_graph()
    with pytest.raises(spsample.SamplerError, match="weighted_method"):
        spsample.NodeWise([2], weighted=True, weighted_method="cdf")
    with pytest.raises(spsample.ArgumentError, match="select_rows: argument 'method'"):
        spsample.sample(g, [0], sampler=_UnweightedAlias([2]), batch_size=1)


@pytest.mark.parametrize("native_on", [False, True])
def test_a_row_summing_past_the_largest_double_is_a_typed_error(native_on):
    if native_on and not _native.AVAILABLE:
        pytest.skip("native kernels not built")
    indptr = np.array([0, 3, 3, 3, 3])
    g = spsample.Graph.from_csr(indptr, np.array([1, 2, 3]), weights=np.array([1e308, 1e308, 1.0]))
    previous = _native.set_enabled(native_on) if _native.AVAILABLE else None
    try:
        with pytest.raises(spsample.SamplerError, match="argument 'P'.*largest float64"):
            spsample.sample(g, [0], sampler=spsample.NodeWise([1], **ALIAS), batch_size=1)
    finally:
        if previous is not None:
            _native.set_enabled(previous)


@needs_native
def test_the_gpu_refuses_alias_draws_on_other_values():
    g = _branch_graph()
    with pytest.raises(spsample.ArgumentError, match="'device'.*alias"):
        spsample.sample(g, [0, 5], sampler=_ScaledAlias([2], 2.0), batch_size=2,
                        device="emulated")


def test_tables_past_the_memory_limit_are_a_typed_error(monkeypatch):
    """The table is sized before it is built: past the limit, the graph (and a sample that
    would build it) raise a ResourceLimitError naming ``weighted_method``."""
    g = _branch_graph()
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", str(40 * g.num_edges))
    with pytest.raises(spsample.ResourceLimitError, match="'weighted_method'.*alias tables"):
        g.alias_table()
    if _native.AVAILABLE:
        with pytest.raises(spsample.ResourceLimitError, match="'weighted_method'"):
            spsample.sample(g, [0, 5], sampler=spsample.NodeWise([2], **ALIAS), batch_size=2)


def _alias_hop(graph, sampler, host_tables):
    plans = trace(sampler, graph, np.arange(1), 0, 0)
    return lower(plans, graph, 1, host_tables=host_tables).spec["hops"][0]


def test_the_lowering_hands_over_the_graphs_tables_where_they_apply():
    """Whole rows of the graph's own weights get its table, shares and row statistics (the CPU
    also its float32 weights, for the rows that take the keys); other values get none, and
    their rows build their own."""
    g = _skewed_graph(8)
    cpu = _alias_hop(g, spsample.NodeWise([3], **ALIAS), True)
    gpu = _alias_hop(g, spsample.NodeWise([3], **ALIAS), False)
    assert cpu["alias"] is g.alias_table()[0] and gpu["alias"] is cpu["alias"]
    assert cpu["alias_all_positive"] and "screen_weights" in cpu and "screen_weights" not in gpu
    assert "alias" not in _alias_hop(g, _ScaledAlias([3], 2.0), True)
    assert not _alias_hop(_branch_graph(), spsample.NodeWise([3], **ALIAS),
                          True)["alias_all_positive"]


@needs_native
@pytest.mark.parametrize("replace", [False, True])
def test_requested_rows_build_their_own_tables(replace):
    """The owners' native selection on requested rows (``select_requests``, what a DistGraph's
    and a DiskGraph's hops run: no graph memo, every row builds its table) equals the NumPy
    rule on the same rows."""
    g = _branch_graph()
    key, hop_word = _rng.split_seed(99), _rng.hop_word(0, 1)
    vertex = np.repeat(np.arange(g.num_nodes), 2)
    batch = np.tile([3, 4], g.num_nodes)
    rule = _native.SelectRule.ALIAS_REP if replace else _native.SelectRule.ALIAS
    hop = dict(aux=None, program=[(_native.ValueOp.WEIGHT, 0, 0, 0.0)], select=rule, fanout=4,
               fanout_vec=-1, bound=0.0, key=0)
    lowered = RequestHop((g.indptr, g.indices, g.weights, None), hop, [], [], g.num_nodes)
    got = select_requests(lowered, vertex, vertex, batch, hop_word, key)
    start, d = g.indptr[vertex], np.diff(g.indptr)[vertex]
    counts, pos = prim.choose_positions(
        d, np.full(vertex.size, 4), prim.Streams(vertex, batch, hop_word, key), replace=replace,
        values=lambda rows, p: g.weights[start[rows] + p], method="alias")
    np.testing.assert_array_equal(got.row_lengths(), counts)
    np.testing.assert_array_equal(got.edge_id, np.repeat(start, counts) + pos)
