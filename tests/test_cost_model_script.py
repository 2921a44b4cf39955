"""experiments/cost_model.py (issue 28's cost model): every built-in sampler is measured, the
bounds of each phase come from the right quantity, and the row-stream word hook it times gives
the engine's words."""
import argparse

import numpy as np
import pytest

from spsample import native

from native_runs import EXPERIMENTS, experiment_script

SAMPLERS = ("nodewise", "labor", "nodewise_w", "walk", "node2vec")

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="needs the native kernels")


@pytest.fixture
def cost_model(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))          # its bench_sampling import
    return experiment_script("cost_model")


@pytest.mark.parametrize("count", [0, 1, 3, 4, 5, 63, 64, 65, 1000])
@pytest.mark.parametrize("vertex, hw, bid, key",
                         [(7, 1, 2, (3, 4)), (2**32 - 1, 9, 0, (0, 2**32 - 1))])
def test_row_words_are_the_streams_words(count, vertex, hw, bid, key):
    """Every implementation of the weighted rows' stream words (the vector ones where this CPU
    has them) gives the scalar stream's words."""
    from spsample import _native_kernels as K
    idx = np.arange(count, dtype=np.int64)
    expect = K.philox_words(idx, np.full(count, vertex, np.int64), hw,
                            np.full(count, bid, np.int64), *key)
    ran = []
    for path in ("auto", "generic", "avx2", "avx512"):
        try:
            got = K.row_words(vertex, hw, bid, key[0], key[1], count, path)
        except ValueError:
            assert path in ("avx2", "avx512")            # this CPU or build lacks it
            continue
        ran.append(path)
        assert got.dtype == np.uint32 and np.array_equal(got, expect), path
    assert ran[:2] == ["auto", "generic"]


def test_row_words_refuses_an_unknown_path():
    from spsample import _native_kernels as K
    with pytest.raises(ValueError, match="path"):
        K.row_words(1, 2, 3, 4, 5, 8, "sse")


def test_profile_samplers_measures_every_builtin(cost_model):
    args = argparse.Namespace(graph="", scale=10, batches=2, batch_size=64, repeat=1,
                              fanouts="5,3")
    previous = native.set_num_threads(native.kernel_threads())
    try:
        rows, graph = cost_model.profile_samplers(args, list(SAMPLERS))
    finally:
        native.set_num_threads(previous)
    assert set(rows) == set(SAMPLERS)
    for r in rows.values():
        assert r["edges"] > 0 and r["total_ns"] > 0 and r["edges_per_cpu_s"] > 0
    assert rows["walk"]["edges"] <= 2 * 64 * 20                # one step per walk and hop
    assert 0 < graph["word_ns"] < 1e3 and graph["num_nodes"] == 2**10
    d = rows["node2vec"]["definition"]
    assert d["attempts"] >= 1 and 0 < d["reads"] < d["attempts"] and d["tests"] < d["attempts"]
    assert "definition" not in rows["walk"]


def _profiled(long_entries):
    return {"rows": 1.0, "select": 9.0, "gather": 2.0, "relabel": 3.0, "begin_end": 0.3,
            "output": 1.0, "total_ns": 16.3, "edges_per_cpu_s": 1e9 / 16.3, "word_table": 0.5,
            "edges_per_row": 5.0, "long_entries_per_edge": long_entries}


def test_bounds_per_sampler(cost_model):
    gather = {1: 0.5, 8: 1.0, 32: 2.0, 256: 5.0}
    mach = {"gather_ns": gather, "copy_gbs": 20.0, "stream_read_gbs": 40.0}
    graph = {"num_nodes": 2**20, "indptr_mib": 8.0, "indices32_mib": 32.0, "word_ns": 0.25}
    r = _profiled(40.0)
    assert cost_model.bounds_for("nodewise_w", r, graph, mach)["select"] == pytest.approx(10.0)
    slow = dict(mach, stream_read_gbs=16.0)                # 8 bytes a weight: 0.5 ns > 0.25
    assert cost_model.bounds_for("nodewise_w", r, graph, slow)["select"] == pytest.approx(20.0)
    walked = dict(r, definition={"attempts": 3.5, "reads": 2.5, "accepted_unread": 0.75,
                                 "tests": 0.75})
    assert cost_model.bounds_for("node2vec", walked, graph, mach)["select"] == pytest.approx(
        3.0 * cost_model.interp(gather, 32.0))             # 2.5 + 0.75 + 0.75 - the walk's 1
    labor = cost_model.bounds_for("labor", r, graph, mach)["select"]
    assert labor == pytest.approx(40.0 * cost_model.interp(gather, 4.0))
    for name in ("nodewise", "walk", "node2vec"):
        assert cost_model.bounds_for(name, r, graph, mach)["select"] is None
    older = dict(graph, word_ns=None)                      # a tree without the row_words hook
    assert cost_model.bounds_for("nodewise_w", r, older, mach)["select"] is None
    text = cost_model.table({n: _profiled(40.0) for n in SAMPLERS}, graph, mach)
    cold = [line for line in text.splitlines() if "one cold pass" in line]
    assert [line.split("|")[1].strip() for line in cold] == ["nodewise_w", "node2vec"]
    assert all("11.0" in line for line in cold)              # select + gather
    assert "long-row entries per edge 40.0" in text
    assert text.count("word tables") == 1                    # LABOR's only


def test_node2vec_reads_by_the_definition(cost_model):
    """A triangle 0-1-2 with a pendant 3 on 0, the step 1 -> 0 -> ?: values 1/p = 2 back to 1,
    1 to 2 (a neighbour of 1), 1/q = 0.5 to 3; bound 2, smallest value 0.5."""
    indptr = np.array([0, 3, 5, 7, 8])
    indices = np.array([1, 2, 3, 0, 2, 0, 1, 0])
    d = cost_model.node2vec_reads(indptr, indices, np.array([1]), np.array([0]), 0.5, 2.0)
    accept = (2 + 1 + 0.5) / 3 / 2
    assert d["attempts"] == pytest.approx(1 / accept)
    assert d["reads"] == pytest.approx(0.75 / accept)     # x >= 0.5: the column is read
    assert d["accepted_unread"] == pytest.approx(0.25 / accept)
    assert d["tests"] == pytest.approx((0.5 * 2 / 3 / 2) / accept)   # x in [0.5, 1), u != t


def test_the_table_sets_each_target_beside_its_bound(cost_model):
    gather = {1: 0.5, 8: 1.0, 32: 2.0, 256: 5.0}
    mach = {"gather_ns": gather, "copy_gbs": 20.0, "stream_read_gbs": 40.0}
    graph = {"num_nodes": 2**20, "indptr_mib": 8.0, "indices32_mib": 32.0, "word_ns": 0.25}
    rows = {n: _profiled(40.0) for n in SAMPLERS}
    rows["node2vec"]["definition"] = {"attempts": 3.5, "reads": 2.5, "accepted_unread": 0.75,
                                      "tests": 0.75}
    text = cost_model.table(rows, graph, mach)
    assert "attempts 3.50, column reads 2.50 + 0.75 by the gather, neighbour tests 0.75" in text
    targets = [line for line in text.splitlines() if "against 2 x measured" in line]
    assert [line.split("|")[1].strip() for line in targets] == ["nodewise_w", "node2vec"]
    assert all("32.6" in line for line in targets)        # twice the base's 16.3 ns
