"""experiments/weighted_alias.py (issue 28: weighted against uniform node-wise, by the keys
and by alias tables) on a tiny graph: every kind of weights is measured on the native
kernels, and the ratios are those of the measured times."""
import json

import pytest

from spsample import native

from native_runs import experiment_script


@pytest.mark.skipif(not native.AVAILABLE, reason="needs the native kernels")
def test_weighted_alias_measures_every_kind_of_weights(tmp_path, capsys):
    script = experiment_script("weighted_alias")
    out = tmp_path / "r.json"
    before = native.get_num_threads()
    assert script.main(["--scale", "10", "--dataset", "none", "--rounds", "2", "--batches", "2",
                        "--batch-size", "64", "--out", str(out)]) == 0
    assert native.get_num_threads() == before
    rows = json.loads(out.read_text())
    assert [r["weights"] for r in rows] == list(script.WEIGHTS)
    for r in rows:
        ns = r["ns_per_edge"]
        assert set(ns) == {"uniform", "keys", "alias"} and min(ns.values()) > 0
        assert r["alias_vs_uniform"] == pytest.approx(ns["alias"] / ns["uniform"], abs=0.01)
        assert r["keys_vs_uniform"] == pytest.approx(ns["keys"] / ns["uniform"], abs=0.01)
        assert r["table_build_s"] >= 0
    assert "loadavg_before" in capsys.readouterr().out


def test_unknown_weights_are_refused():
    script = experiment_script("weighted_alias")
    with pytest.raises(SystemExit):
        script.parse_args(["--weights", "column,zipf"])


def _column_row(tmp_path, *options):
    """The script's one row for column weights on R-MAT 10 (2 x 64 seeds, 1 round) with
    ``options``."""
    script = experiment_script("weighted_alias")
    out = tmp_path / "r.json"
    assert script.main(["--scale", "10", "--dataset", "none", "--rounds", "1", "--batches", "2",
                        "--batch-size", "64", "--weights", "column", *options,
                        "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    return row


@pytest.mark.skipif(not native.AVAILABLE, reason="needs the native kernels")
def test_same_rows_replays_the_alias_epochs_rows_hop_by_hop(tmp_path):
    same = _column_row(tmp_path, "--fanouts", "4,3", "--same-rows")["same_rows"]
    assert [h["hop"] for h in same["hops"]] == [0, 1]
    assert [h["fanout"] for h in same["hops"]] == [4, 3]
    assert same["hops"][0]["rows"] == 2 * 64              # hop 0 replays the seeds
    for h in same["hops"]:
        classes = h["classes"]
        assert set(classes) == {"whole", "keys", "alias"}
        assert sum(rows for rows, _ in classes.values()) == h["rows"]
        assert sum(edges for _, edges in classes.values()) == h["edges"]
        assert h["alias_vs_uniform"] == pytest.approx(
            h["ns_per_edge"]["alias"] / h["ns_per_edge"]["uniform"], abs=0.01)
    ns = same["ns_per_edge"]
    assert set(ns) == {"uniform", "keys", "alias"} and min(ns.values()) > 0
    assert same["alias_vs_uniform"] == pytest.approx(ns["alias"] / ns["uniform"], abs=0.01)


def test_row_classes_follow_the_alias_rule():
    import numpy as np
    import spsample

    script = experiment_script("weighted_alias")
    # row 0: 2 eligible entries of 3 (whole at s = 2 and 3); row 1: one weight holds 0.9 of
    # the row (alias at s = 2, as 2 * 0.9 <= ALIAS_SHARE_MAX = 2; keys at s = 3); row 2: five
    # equal weights (alias); row 3: empty (whole, no edges)
    indptr = np.array([0, 3, 7, 12, 12, 12, 12, 12, 12])
    indices = np.arange(12) % 8
    weights = np.array([1.0, 0.0, 2.0, 9.0, 1 / 3, 1 / 3, 1 / 3, 1, 1, 1, 1, 1])
    g = spsample.Graph.from_csr(indptr, indices, weights=weights)
    rows = np.array([0, 1, 2, 3])
    assert script.row_classes(g, rows, 2) == {"whole": [2, 2], "keys": [0, 0],
                                              "alias": [2, 4]}
    assert script.row_classes(g, rows, 3) == {"whole": [2, 2], "keys": [1, 3],
                                              "alias": [1, 3]}


@pytest.mark.skipif(not native.AVAILABLE, reason="needs the native kernels")
def test_by_kind_times_one_hop_from_each_kind_of_row(tmp_path):
    kinds = _column_row(tmp_path, "--by-kind", "3")["by_kind"]["3"]
    assert set(kinds) <= {"whole", "keys", "alias"} and "whole" in kinds and "alias" in kinds
    for k in kinds.values():
        assert 0 < k["rows"] <= 2 * 64
        assert set(k["ns_per_edge"]) == {"uniform", "keys", "alias"}


def test_by_kind_fanouts_must_be_positive():
    script = experiment_script("weighted_alias")
    with pytest.raises(SystemExit):
        script.parse_args(["--by-kind", "5,0"])
