"""Integer times stay exact end to end (issue 27, item 1).

Nanosecond timestamps are above 2**53: as float64, ``T`` and ``T + 1`` are one number, so an
edge 1 ns after its seed's time was sampled (the future leaked). Integer times are now stored,
sorted and compared as int64 in the NumPy path, the native kernels, the reference sampler, the
HDF5 file and the temporal converter; real times against integer ones compare exactly too.
"""

import contextlib
from fractions import Fraction

import numpy as np
import pytest

import spsample
from spsample import native as _native, io
from spsample.engine._reference import reference_sample

REL = ("u", "msg", "u")
BASE = 2**60 + 3                     # nanoseconds: far above 2**53


def star(times):
    """Vertex 0 receives one message from each of 1 .. len(times), at ``times``::

        1 --t0--> 0 <--t9-- 10      (each edge its own time)
    """
    n = len(times)
    src, dst = np.arange(1, n + 1), np.zeros(n, dtype=np.int64)
    return spsample.HeteroGraph.from_edge_index({REL: (src, dst)}, edge_time={REL: times})


def paths():
    """Native kernels on (when built) and off."""
    out = [("numpy", _native.disabled)]
    if _native.AVAILABLE:
        out.append(("native", contextlib.nullcontext))
    return out


def sampled_times(g, seed_time, strategy="uniform", fanout=20):
    """Per path: the times of the edges sampled into seed vertex 0 at ``seed_time``."""
    sampler = spsample.NodeWise([fanout], temporal_strategy=strategy)
    out = {}
    for name, ctx in paths():
        with ctx():
            mb = spsample.sample(g, ("u", [0]), sampler=sampler, batch_size=1,
                                 seed_time=seed_time)[0]
        out[name] = np.sort(g.edge_time(REL)[mb.edge_ids[REL][0]])
    return out


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_nanosecond_edge_one_after_the_seed_is_not_sampled(strategy):
    times = BASE + np.arange(10, dtype=np.int64)
    g = star(times)
    assert g.edge_time(REL).dtype == np.int64 and np.array_equal(g.edge_time(REL), times)
    for name, got in sampled_times(g, np.array([BASE + 4]), strategy).items():
        assert got.tolist() == (times[:5]).tolist(), name    # BASE + 5 is 1 ns later: out


def test_reference_sampler_cuts_integer_times_exactly():
    from spsample.engine._hetero_sample import build_schedule
    g = star(BASE + np.arange(10, dtype=np.int64))
    sampler = spsample.NodeWise([20])
    schedule = build_schedule(g, sampler, {"u"}, 0, True)
    ref = reference_sample(schedule.steps[0].graph, np.array([g.offsets["u"]]),
                           sampler=sampler, batch_size=1, seed=0, epoch=0, schedule=schedule,
                           seed_time=np.array([BASE + 4]), batch_ids=np.array([0]))
    assert int(ref[0].num_sampled_edges[0]) == 5


def test_real_seed_times_against_integer_entries():
    g = star(np.arange(10, dtype=np.int64))
    for seed, want in ((4.5, 5), (4.0, 5), (3.999, 4), (-0.5, 0), (1e30, 10)):
        for name, got in sampled_times(g, [seed]).items():
            assert got.size == want, (seed, name)


def test_integer_seed_times_against_real_entries():
    """Float entries 256 apart near 2**60 (their spacing); an integer seed 1 below the next
    entry rounds up to it as float64 -- it must still be left out."""
    times = float(2**60) + 256.0 * np.arange(4)
    g = star(times)
    assert g.edge_time(REL).dtype == np.float64
    for name, got in sampled_times(g, np.array([2**60 + 255], dtype=np.int64)).items():
        assert got.tolist() == [float(2**60)], name
    for name, got in sampled_times(g, np.array([2**60 + 256], dtype=np.int64)).items():
        assert got.tolist() == times[:2].tolist(), name


def test_repeated_pairs_keep_the_exact_earliest_time():
    src, dst = np.array([1, 1, 1]), np.zeros(3, dtype=np.int64)
    t = np.array([BASE + 2, BASE + 1, BASE + 3])
    g = spsample.HeteroGraph.from_edge_index({REL: (src, dst)}, edge_time={REL: t})
    assert g.edge_time(REL).tolist() == [BASE + 1]


def test_integer_times_survive_save_and_load(tmp_path):
    times = BASE + np.arange(10, dtype=np.int64)
    node_time = {"u": BASE + np.arange(11, dtype=np.int64) * 7}
    g = spsample.HeteroGraph.from_edge_index({REL: (np.arange(1, 11), np.zeros(10, np.int64))},
                                             edge_time={REL: times}, node_time=node_time)
    io.save(io.HeteroDataset(g, name="ns"), tmp_path / "ns.h5")
    back = io.load(tmp_path / "ns.h5").graph
    assert back.edge_time(REL).dtype == np.int64 and np.array_equal(back.edge_time(REL), times)
    assert back.node_time("u").dtype == np.int64
    assert np.array_equal(back.node_time("u"), node_time["u"])
    for name, got in sampled_times(back, np.array([BASE + 4])).items():
        assert got.size == 5, name


def test_seed_edge_times_of_the_link_loader_stay_integers():
    pytest.importorskip("torch")
    times = BASE + np.arange(10, dtype=np.int64)
    g = star(times)
    src, dst = np.arange(1, 11), np.zeros(10, dtype=np.int64)
    loader = spsample.LinkLoader(g, (REL, np.stack([src, dst])),
                                 sampler=spsample.NodeWise([5]), batch_size=10, edge_time=times,
                                 shuffle=False)
    assert loader.edge_time.dtype == np.int64 and np.array_equal(loader.edge_time, times)


# ---------------------------------------------------------------------- the helpers
def test_as_times_keeps_the_kind_and_refuses_what_is_not_exact():
    from spsample.graph._times import as_times
    assert as_times("f", "t", np.array([2**62 + 1], dtype=np.uint64)).tolist() == [2**62 + 1]
    assert as_times("f", "t", [2**62 + 1]).dtype == np.int64
    assert as_times("f", "t", np.array([1.5], dtype=np.float32)).dtype == np.float64
    with pytest.raises(spsample.ArgumentError, match="int64 range"):
        as_times("f", "t", np.array([2**63], dtype=np.uint64))
    with pytest.raises(spsample.ArgumentError, match="int64 range"):
        as_times("f", "t", [2**63 + 5, 1])
    with pytest.raises(spsample.ArgumentError, match="finite"):
        as_times("f", "t", [1.0, np.nan])
    with pytest.raises(spsample.ArgumentTypeError):
        as_times("f", "t", np.array([True]))
    with pytest.raises(spsample.GraphError, match="int64 range"):
        star(np.array([2**63] * 10, dtype=np.uint64))


def test_cut_times_keeps_every_comparison():
    """``t <= cut_times(b)`` exactly when ``t <= b`` as real numbers, for both kinds."""
    from spsample.graph._times import cut_times
    rng = np.random.default_rng(0)
    big = 2**62
    ints = np.concatenate([rng.integers(-big, big, 300), [2**53, 2**53 + 1, -(2**53) - 1,
                                                          2**63 - 1, -(2**63), 0]])
    floats = np.concatenate([ints.astype(np.float64) + rng.choice([-0.5, 0.0, 0.25], ints.size),
                             [2.0**63, 1e300, -1.5, 0.5]])
    float_cuts = cut_times("f", "t", floats, np.int64)
    for b, c in zip(floats.tolist(), float_cuts.tolist()):
        for t in (c, c + 1) if c < 2**63 - 1 else (c,):
            assert (Fraction(t) <= Fraction(b)) == (t <= c), (b, c, t)
    int_cuts = cut_times("f", "t", ints, np.float64)
    for b, c in zip(ints.tolist(), int_cuts.tolist()):
        up = float(np.nextafter(c, np.inf))
        assert Fraction(c) <= b < Fraction(up), (b, c)          # the largest float <= b
    with pytest.raises(spsample.ArgumentError, match="below the int64 range"):
        cut_times("f", "t", np.array([-1e20]), np.int64)
