"""The conformance cells under ``hypothesis``: random graphs (sizes, weights with zeros,
self-loops, empty rows), seeds (repeated across minibatches, within them when disjoint),
batch sizes, fanouts, ``seed``, ``epoch`` and ``batch_offset`` (up to the 2**32 limit), on
every path; each result equals the NumPy oracle bit for bit and passes the invariants.

Profiles (``tests/conftest.py``): ``ci`` (the default: a bounded number of examples per test,
derandomized so CI is reproducible) and ``soak`` (``SPSAMPLE_HYPOTHESIS_PROFILE=soak``: many
examples, random, for a long run). Every failing example found becomes an ``@example`` here
or a case of ``test_regressions.py``.
"""

import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import spsample  # noqa: E402
from spsample import testing  # noqa: E402

from .cells import LINK_OPTIONS  # noqa: E402
from .paths import PATHS  # noqa: E402

HOMOGENEOUS = [n for n, c in testing.samplers().items() if "graph" in c.kinds]
HETERO = [n for n, c in testing.samplers().items() if "hetero" in c.kinds]


def _paths(mode):
    return sorted(n for n, p in PATHS.items() if n != "numpy" and mode not in p.refuses)


@st.composite
def graphs(draw):
    """A random directed multigraph (merged): ``n`` in [1, 60], up to 300 drawn edges,
    optionally weighted with zero weights, optionally without self-loops, optionally with
    the lower half of the rows empty."""
    n = draw(st.integers(1, 60))
    m = draw(st.integers(0, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if draw(st.booleans()):                            # no self-loops
        keep = src != dst
        src, dst = src[keep], dst[keep]
    if draw(st.booleans()):                            # rows below n / 2 empty
        keep = dst >= n // 2
        src, dst = src[keep], dst[keep]
    w = None
    if draw(st.booleans()):
        w = rng.random(src.size) + 0.01
        w[rng.random(src.size) < draw(st.sampled_from([0.0, 0.3, 1.0]))] = 0.0
    return spsample.Graph.from_edge_index(src, dst, num_nodes=n, weights=w)


@st.composite
def fanouts(draw, case):
    """Fanouts for ``case``: its number of hops (a walk: 1 to 4 steps of 1), each -1 or 1..8."""
    if set(case.fanouts) == {1} and len(case.fanouts) > 2:        # a walk
        return (1,) * draw(st.integers(1, 4))
    low = max(case.min_fanout, -1)
    values = st.integers(1, 8) if low >= 1 else st.one_of(st.just(-1), st.integers(1, 8))
    return tuple(draw(values) for _ in case.fanouts)


@st.composite
def calls(draw, size, *, repeat, disjoint=False):
    """``(seeds, kw)``: seeds (repeats across minibatches; within them when ``repeat``),
    batch size, seed, epoch and batch offset (for disjoint bulks -- ``repeat`` or
    ``disjoint``, e.g. temporal ones -- below the limit of their ids: batch_id * batch_size
    + position < 2**32)."""
    count = draw(st.integers(1, 50))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    batch_size = draw(st.integers(1, 20))
    if not repeat:
        batch_size = min(batch_size, size)
    if repeat:
        seeds = rng.integers(0, size, count)
    else:                                    # distinct within each minibatch
        seeds = np.concatenate([rng.permutation(size)[:batch_size]
                                for _ in range(-(-count // batch_size))])[:count]
    k = -(-seeds.size // batch_size)
    offset = draw(st.one_of(st.integers(0, 1000), st.just(2**32 - k)))
    if repeat or disjoint:                   # disjoint ids: batch_id * batch_size < 2**32
        offset = min(offset, (2**32 - 1) // (batch_size * (k + 1)))
    kw = dict(batch_size=batch_size, batch_offset=offset,
              seed=draw(st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 3))),
              epoch=draw(st.integers(0, 2**24 - 1)))
    return seeds.astype(np.int64), kw


def _same_as_oracle(graph, seeds, sampler, path, kw, invariants_seeds):
    note(f"{sampler!r} on {graph!r} via {path}, seeds={seeds!r}, {kw}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = PATHS["numpy"](graph, seeds, sampler, **kw)
        got = PATHS[path](graph, seeds, sampler, **kw)
    testing.assert_same_bulk(got, expected)
    testing.check_invariants(graph, expected, sampler, seeds=invariants_seeds,
                             seed_time=kw.get("seed_time"), seed=kw["seed"],
                             epoch=kw["epoch"])


@given(data=st.data(), graph=graphs(), name=st.sampled_from(HOMOGENEOUS),
       path=st.sampled_from(_paths("node")))
def test_homogeneous_cells(data, graph, name, path):
    case = testing.samplers()[name]
    if case.weighted and graph.weights is None:
        return
    sampler = case(graph, data.draw(fanouts(case)))
    seeds, kw = data.draw(calls(graph.num_nodes, repeat=case.disjoint))
    if case.disjoint and path in _refusing("disjoint"):
        error, match = PATHS[path].refuses["disjoint"]
        with pytest.raises(error, match=match):
            PATHS[path](graph, seeds, sampler, **kw)
        return
    _same_as_oracle(graph, seeds, sampler, path, kw, seeds)


def _refusing(mode):
    return {n for n, p in PATHS.items() if p.refuses.get(mode) is not None}


@given(data=st.data(), gseed=st.integers(0, 2**32 - 1), temporal=st.booleans(),
       name=st.sampled_from(HETERO), path=st.sampled_from(_paths("hetero")))
def test_heterogeneous_and_temporal_cells(data, gseed, temporal, name, path):
    case = testing.samplers()[name]
    graph = (testing.temporal if temporal else testing.heterogeneous)(gseed)
    node_type = data.draw(st.sampled_from(["paper", "author", "venue"]))
    ids, kw = data.draw(calls(graph.num_nodes[node_type], repeat=case.disjoint,
                              disjoint=temporal))
    per_relation = name == "nodewise-per-relation"          # its own fanouts
    sampler = case(graph, None if per_relation else data.draw(fanouts(case)))
    if temporal:
        kw["seed_time"] = np.asarray(data.draw(st.lists(
            st.integers(-5, 105), min_size=ids.size, max_size=ids.size)), dtype=float)
    _same_as_oracle(graph, (node_type, ids), sampler, path, kw, ids)


@given(data=st.data(), graph=graphs(), name=st.sampled_from(
    ["nodewise", "nodewise-weighted", "disjoint", "labor", "ladies", "node2vec"]),
    path=st.sampled_from(_paths("link")))
def test_link_cells(data, graph, name, path):
    case = testing.samplers()[name]
    if (case.weighted and graph.weights is None) or graph.num_edges == 0:
        return
    src, dst = graph.edge_index()
    pick = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).integers(
        0, src.size, data.draw(st.integers(1, 30)))
    edges = np.stack([src[pick], dst[pick]])
    options = dict(LINK_OPTIONS, strict=False,
                   neg_ratio=data.draw(st.sampled_from([0.5, 1.0, 2.0])))
    kw = dict(batch_size=data.draw(st.integers(1, 12)), seed=data.draw(st.integers(0, 99)),
              epoch=data.draw(st.integers(0, 9)), link=options)
    sampler = case(graph, data.draw(fanouts(case)))
    note(f"{sampler!r} via {path}, edges={edges!r}, {kw}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = PATHS["numpy"](graph, edges, sampler, **kw)
        got = PATHS[path](graph, edges, sampler, **kw)
    testing.assert_same_bulk(got, expected)


def _dist_examples():
    """A third of the profile's examples: each runs p ranks in threads."""
    return max(10, hypothesis.settings.default.max_examples // 3)


@hypothesis.settings(max_examples=_dist_examples())
@given(data=st.data(), graph=graphs(), name=st.sampled_from(HOMOGENEOUS),
       p=st.sampled_from([2, 3, 4, 8]), strategy=st.sampled_from(["push", "pull"]),
       replicated=st.booleans())
def test_distributed_cells(data, graph, name, p, strategy, replicated):
    """``DistGraph`` over p ranks in threads, every c dividing p, push / pull / replicated."""
    from .paths import threads_dist_path
    case = testing.samplers()[name]
    if case.weighted and graph.weights is None:
        return
    c = data.draw(st.sampled_from([c for c in range(1, p + 1) if p % c == 0]))
    sampler = case(graph, data.draw(fanouts(case)))
    seeds, kw = data.draw(calls(graph.num_nodes, repeat=case.disjoint))
    note(f"{sampler!r} on {graph!r}: p={p} c={c} {strategy} replicated={replicated}, "
         f"seeds={seeds!r}, {kw}")
    expected = PATHS["numpy"](graph, seeds, sampler, **kw)
    got = threads_dist_path(p, c, strategy, replicated)(graph, seeds, sampler, **kw)
    testing.assert_same_bulk(got, expected)
