"""experiments/call_overhead.py (issue 28, per call) on a tiny graph: one row per sampler and
seed count, the kernel's share inside the call's time, and the kernel left unwrapped after."""
import json

import pytest

from spsample import native

from native_runs import experiment_script


def _load():
    return experiment_script("call_overhead")


@pytest.mark.skipif(not native.AVAILABLE, reason="needs the native kernels")
def test_call_overhead_times_every_case_and_splits_off_the_kernel(tmp_path):
    from spsample import _native_kernels

    script, out = _load(), tmp_path / "r.json"
    kernel = _native_kernels.run_rowwise
    previous = native.set_num_threads(native.kernel_threads())
    try:
        script.main(["--scale", "8", "--dataset", "none", "--seeds", "16,80",
                     "--batch-size", "32", "--repeat", "3", "--min-seconds", "0",
                     "--out", str(out)])
    finally:
        native.set_num_threads(previous)
    assert _native_kernels.run_rowwise is kernel
    rows = json.loads(out.read_text())
    assert [(r["sampler"], r["seeds"], r["minibatches"]) for r in rows] == [
        (s, m, k) for s in ("nodewise", "labor", "walk") for m, k in ((16, 1), (80, 3))]
    for r in rows:
        assert r["calls"] >= 3 and r["edges"] > 0
        assert 0 < r["kernel_ms"] <= r["wall_ms"]
        assert abs(r["rest_ms"] - (r["wall_ms"] - r["kernel_ms"])) < 1e-3
