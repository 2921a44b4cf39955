"""experiments/per_core.py (issue 28's measurement) on a tiny graph without the DGL peer: every
sampler is measured on the native kernels and the in-library ratios are computed."""
import json
import os

import pytest

from spsample import native

from native_runs import experiment_script


def _load():
    return experiment_script("per_core")


@pytest.mark.skipif(not native.AVAILABLE, reason="needs the native kernels")
def test_per_core_measures_every_sampler_and_the_ratios(tmp_path, capsys, monkeypatch):
    per_core = _load()
    out = tmp_path / "r.json"
    # the script sets these (and the kernels' thread count) for its process: keep them local
    for name in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY"):
        monkeypatch.setenv(name, os.environ.get(name, "passive" if "POLICY" in name else "2"))
    previous = native.set_num_threads(native.kernel_threads())
    try:
        ran = per_core.main(["--scale", "10", "--dataset", "none", "--rounds", "2",
                             "--batches", "2", "--batch-size", "64", "--peer", "none",
                             "--threads", "1", "--walk-length", "4", "--out", str(out)])
    finally:
        native.set_num_threads(previous)
    assert ran == 0
    rows = json.loads(out.read_text())
    measured = {r["sampler"]: r for r in rows if "library" in r}
    assert set(measured) == set(per_core.SAMPLERS)
    for name, r in measured.items():
        assert r["library"] == "spsample" and r["units"] > 0 and r["rounds"] == 2
        assert 0 < r["wall"] <= r["wall_median"] and r["cpu"] > 0 and r["ns_per_unit_core"] > 0
    assert measured["walk"]["units"] == 128 * 4                 # walks x length, as steps
    ratios = {r["sampler"]: r for r in rows if "cost_ratio" in r}
    assert ratios["node2vec"]["vs"] == "walk"
    for weighted in ("nodewise_w", "nodewise_wa"):
        assert ratios[weighted]["vs"] == "nodewise"
        expect = (measured[weighted]["ns_per_unit_core"] /
                  measured["nodewise"]["ns_per_unit_core"])
        assert ratios[weighted]["cost_ratio"] == pytest.approx(expect, rel=0.05)
    assert "loadavg_before" in capsys.readouterr().out


def test_per_core_refuses_an_unknown_sampler():
    with pytest.raises(SystemExit):
        _load().parse_args(["--samplers", "nodewise,nosuch"])
