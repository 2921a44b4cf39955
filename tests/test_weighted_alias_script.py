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
