"""experiments/node2vec_attempts.py (issue 28: node2vec against a uniform walk): the rule's
attempts and neighbour tests per step, against a per-entry count, and the script's rows on
a tiny graph."""
import json
import os

import numpy as np
import pytest

import spsample
from spsample import native

from native_runs import experiment_script


def _per_entry(indptr, indices, t, v, p, q):
    """The rule's expected attempts and tests of one step, entry by entry."""
    row_v = indices[indptr[v]:indptr[v + 1]]
    row_t = set(indices[indptr[t]:indptr[t + 1]].tolist())
    values = [1 / p if u == t else (1.0 if u in row_t else 1 / q) for u in row_v.tolist()]
    B = max(1.0, 1 / p, 1 / q)
    attempts = B * row_v.size / sum(values)
    tested = sum(u != t for u in row_v.tolist()) / row_v.size * abs(1 - 1 / q) / B
    # folded: every entry under max(1, 1/q), the return entry's excess drawn on its own
    Bf = max(1.0, 1 / q)
    excess = sum(max(0.0, x - Bf) for x in values)
    mass = Bf * row_v.size + excess
    folded = mass / sum(values)
    folded_tested = Bf * row_v.size / mass * sum(u != t for u in row_v.tolist()) / row_v.size \
        * abs(1 - 1 / q) / Bf
    return attempts, attempts * tested, folded, folded * folded_tested


@pytest.mark.parametrize("p, q", [(0.5, 2.0), (1.0, 2.0), (2.0, 0.5), (4.0, 1.0), (1.0, 1.0)])
def test_rule_counts_equal_a_count_entry_by_entry(p, q):
    script = experiment_script("node2vec_attempts")
    g = spsample.rmat(8, seed=2)                 # has self loops and directed pairs
    indptr, indices = g.indptr, g.indices
    rng = np.random.default_rng(0)
    v = rng.choice(np.flatnonzero(np.diff(indptr) > 0), 300)
    t = rng.integers(0, g.num_nodes, v.size)     # any previous vertex, neighbour or not
    src = np.repeat(np.arange(g.num_nodes), np.diff(indptr))
    t[:100] = src[indptr[v[:100]]]               # ... and some that are (t -> v exists)
    t[100:110] = v[100:110]                      # ... and some that stood still (a self loop)
    attempts, tests, folded = script.rule_counts(indptr, indices, t, v, p, q)
    want = np.array([_per_entry(indptr, indices, a, b, p, q) for a, b in zip(t, v)])
    # the folded draw's tests per step, counted entry by entry, are the rule's tests again
    for got, i, name in ((attempts, 0, "attempts"), (tests, 1, "tests"), (folded, 2, "folded"),
                         (tests, 3, "folded_tests")):
        np.testing.assert_allclose(got, want[:, i], rtol=1e-12, atol=1e-12, err_msg=name)
    assert np.all(folded <= attempts + 1e-12)
    if p == q == 1.0:
        assert np.all(attempts == 1) and np.all(tests == 0)
    if p == 0.5 and q == 2.0:                    # the return entry dominates the bound
        assert folded.mean() < 0.75 * attempts.mean()


def test_rule_counts_refuse_an_empty_row():
    script = experiment_script("node2vec_attempts")
    g = spsample.Graph.from_csr(np.array([0, 1, 1]), np.array([0]))
    with pytest.raises(ValueError, match="'v'"):
        script.rule_counts(g.indptr, g.indices, np.array([0]), np.array([1]), 0.5, 2.0)


@pytest.mark.skipif(not native.AVAILABLE, reason="needs the native kernels")
def test_node2vec_attempts_rows(tmp_path, capsys):
    script = experiment_script("node2vec_attempts")
    out = tmp_path / "r.json"
    before, env = native.get_num_threads(), dict(os.environ)
    assert script.main(["--scale", "9", "--dataset", "none", "--rounds", "1", "--batches", "2",
                        "--batch-size", "32", "--walk-length", "4", "--pairs", "50",
                        "--pq", "0.5,2;4,1", "--out", str(out)]) == 0
    assert native.get_num_threads() == before and dict(os.environ) == env
    rows = json.loads(out.read_text())
    assert [(r["p"], r["q"]) for r in rows] == [(0.5, 2.0), (4.0, 1.0)]
    for r in rows:
        assert r["walk_ns"] > 0 and r["node2vec_ns"] > 0 and r["steps_counted"] == 50
        assert r["ratio"] == pytest.approx(r["node2vec_ns"] / r["walk_ns"], abs=0.01)
        assert r["attempts_per_step"] >= 1
        assert 1 <= r["folded_attempts_per_step"] <= r["attempts_per_step"] + 1e-3
    assert rows[0]["attempts_per_step"] > rows[1]["attempts_per_step"]
    assert rows[1]["tests_per_step"] == 0          # q = 1: the column alone decides
    assert "loadavg_before" in capsys.readouterr().out


@pytest.mark.parametrize("pq", ["0.5", "0.5,2;x,1", "0,2", ""])
def test_bad_pairs_are_refused(pq):
    script = experiment_script("node2vec_attempts")
    with pytest.raises(SystemExit):
        script.parse_args(["--pq", pq])
