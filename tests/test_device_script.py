"""experiments/device_run.sh, the one prepared run for a machine with a GPU and 16 cores
(issue 29), and the pieces it runs: its dry run end to end here (no GPU: the GPU parts say
"skipped: no device"), without an MPI runtime and with a CuPy that only claims a GPU, with
--only and past its deadline; the summary's readers of the GPU parts' files (which cannot be
produced here); and the fixes its dry run led to.

The dry run takes seconds on a quiet machine (about a minute on a loaded 2-core one)."""

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample.gpu import _device as _gpu

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "device_run.sh"
PARTS = ["setup", "build", "gpu_tests", "gpu_bench", "cpu_sweep", "calibrate", "validate"]
NAME = re.compile(r"^[A-Za-z0-9._-]+$")

needs_native = pytest.mark.skipif(not _native.AVAILABLE, reason="native kernels not built: the "
                                  "dry run would build them (minutes)")


def _module(name, relpath):
    spec = importlib.util.spec_from_file_location(name, ROOT / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def _mpi_runs():
    """Whether ``mpiexec -n 2`` with mpi4py works here (as the script's setup checks it)."""
    if shutil.which("mpiexec") is None:
        return False
    probe = subprocess.run(["mpiexec", "-n", "2", sys.executable, "-c",
                            "from mpi4py import MPI; assert MPI.COMM_WORLD.Get_size() == 2"],
                           capture_output=True, timeout=120)
    return probe.returncode == 0


def run_script(out, *args, **env):
    """``OUT=out bash experiments/device_run.sh --dry-run args`` with ``env`` added."""
    full = {**os.environ, "OUT": str(out), **env}
    full.pop("PMI_RANK", None)
    return subprocess.run(["bash", str(SCRIPT), "--dry-run", *args], env=full,
                          capture_output=True, text=True, timeout=600)


def check_device_tool_limits(out):
    """What the device tool brings back of $OUT: at most 8 files, 16 MiB each, no deeper than
    two folders, names of letters, digits, '.', '_' and '-'."""
    files = [f for f in Path(out).rglob("*") if f.is_file()]
    assert 0 < len(files) <= 8, files
    for f in files:
        rel = f.relative_to(out)
        assert len(rel.parts) <= 3 and all(NAME.match(p) for p in rel.parts), rel
        assert f.stat().st_size <= 16 << 20, rel


def summary_of(out):
    summary = json.loads((Path(out) / "summary.json").read_text())
    assert list(summary["parts"]) == PARTS
    assert all(p["status"] in ("ok", "failed", "timeout", "skipped")
               for p in summary["parts"].values()), summary["parts"]
    return summary, summary["parts"]


def check_gpu_parts(parts):
    if _gpu.gpu_available():
        return
    for name in ("gpu_tests", "gpu_bench"):
        assert parts[name]["status"] == "skipped"
        assert parts[name]["reason"].startswith("skipped: no device"), parts[name]


@needs_native
def test_dry_run_end_to_end(tmp_path):
    out = tmp_path / "out"
    run = run_script(out)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary, parts = summary_of(out)
    assert summary["mode"] == "dry-run" and summary["status"] == "ok"
    assert parts["build"]["status"] == "ok" and parts["build"]["native"].startswith("True")
    check_gpu_parts(parts)
    check_device_tool_limits(out)
    log = (out / "device_run.log").read_text()
    assert "== [" in log and "summary (dry-run" in log
    if not _mpi_runs():
        assert parts["cpu_sweep"]["reason"].startswith("skipped: no MPI runtime")
        return
    check_sweep(parts, out)


def check_sweep(parts, out):
    sweep = parts["cpu_sweep"]
    assert sweep["status"] == "ok" and sweep["ranks_done"] == [1, 2, 4]
    assert all(sweep["per_p"][p]["complete"] for p in ("1", "2", "4"))
    runs = sweep["per_p"]["4"]["runs"]
    assert {(r["sampler"], r["c"]) for r in runs} == {(s, c) for s in ("nodewise", "labor")
                                                      for c in (1, 2)}
    assert all(r["strategy"] == "push" and r["sampling_bytes"] > 0 for r in runs)
    assert parts["calibrate"]["status"] == "ok"
    assert parts["calibrate"]["alpha_peer_s"] > 0 and parts["calibrate"]["sample_rate"]["labor"] > 0
    validate = parts["validate"]
    assert validate["status"] == "ok"
    errors = validate["median_abs_error_pct_by_p"]
    assert (errors["2"]["runs"], errors["4"]["runs"]) == (2, 4)
    assert errors["4"]["sample_s"] is not None
    assert errors["4"]["bytes"] < 50                # the byte formulas hold even on R-MAT 10
    fit = validate["fit_below"]                     # overheads fitted on p = 2, tested on 4
    assert fit["p"] == 4 and validate["fit_exit"] == 0
    assert fit["median_abs_error_pct_by_p"]["2"]["fitted"] is True
    assert fit["median_abs_error_pct_by_p"]["4"]["fitted"] is False
    assert "fitted to the runs with p < 4" in (out / "validation.txt").read_text()
    with tarfile.open(out / "results.tar.gz") as tar:
        names = set(tar.getnames())
    assert {"scaling/rmat10_p1.json", "scaling/rmat10_p4.json", "scaling/machine.json",
            "scaling/machine_fitted.json", "scaling/validation.json",
            "scaling/validation_fit.json", "scaling/mpi_smoke.log"} <= names


FAKE_CUPY = '''"""Imports and reports one GPU, and has nothing else: device_run.sh's GPU parts
start (and then fail), so their plumbing runs where there is no GPU."""
__version__ = "0+fake"


class cuda:
    class runtime:
        @staticmethod
        def getDeviceCount():
            return 1
'''


@needs_native
def test_without_mpi_and_with_a_gpu_that_fails_the_parts_say_so_and_the_rest_runs(tmp_path):
    """No MPI runtime (MPIEXEC points nowhere, no wheels): the sweep, calibrate and validate
    are skipped with "skipped: no MPI runtime". A CuPy that only claims a GPU: the GPU parts
    start -- pytest -m gpu runs (its tests fail without a real CuPy), run.py exits 1 -- and
    are recorded as failed with their numbers; the exit status is 1. On the device the same
    plumbing runs with the real CuPy."""
    fake = tmp_path / "fake" / "cupy"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(FAKE_CUPY)
    out = tmp_path / "out"
    run = run_script(out, MPIEXEC=str(tmp_path / "none" / "mpiexec"), WHEELS=str(tmp_path),
                     PYTHONPATH=str(fake.parent))
    assert run.returncode == 1, run.stdout[-3000:]
    summary, parts = summary_of(out)
    assert summary["failed_parts"] == ["gpu_tests", "gpu_bench"]
    assert parts["setup"]["mpi_ok"] == 0 and parts["build"]["status"] == "ok"
    for name in ("cpu_sweep", "calibrate", "validate"):
        assert parts[name]["status"] == "skipped"
        assert parts[name]["reason"].startswith("skipped: no MPI runtime"), parts[name]
    assert "skipped: no MPI runtime" in run.stdout
    tests = parts["gpu_tests"]
    assert tests["status"] == "failed" and "tests/test_gpu_cuda.py" in tests["files"]
    assert tests["tests"] > 10 and tests["failures"] + tests["errors"] > 0
    assert tests["failed_tests"][0].startswith("tests.test_gpu_cuda::")
    bench = parts["gpu_bench"]
    assert bench["status"] == "failed" and bench["run_py_exit"] == 1 and bench["runs"] == []
    assert "rmat12: 4096 nodes" in run.stdout          # the graph made while the build ran
    assert (out / "gpu_tests.xml").is_file()
    check_device_tool_limits(out)


@needs_native
def test_only_and_the_deadline_decide_which_parts_start(tmp_path):
    """--only leaves the GPU tests out; with 1 s to the deadline no CPU part is started."""
    if not _mpi_runs():
        pytest.skip("no MPI runtime here: the sweep is skipped before its deadline check")
    run = run_script(tmp_path / "out", "--deadline", "1", "--only", "gpu_bench,cpu_sweep")
    assert run.returncode == 1
    summary, parts = summary_of(tmp_path / "out")
    assert parts["gpu_tests"]["reason"] == "skipped: not asked for (--only gpu_bench,cpu_sweep)"
    assert summary["status"] == "failed" and "cpu_sweep" in summary["failed_parts"]
    for name in ("cpu_sweep", "calibrate", "validate"):
        assert parts[name]["status"] == "timeout"
        assert parts[name]["reason"].startswith("not run: out of time"), parts[name]


def test_unknown_argument_and_missing_out_are_refused(tmp_path):
    bad = subprocess.run(["bash", str(SCRIPT), "--no-such-flag"], capture_output=True,
                         text=True, env={**os.environ, "OUT": str(tmp_path)}, timeout=60)
    assert bad.returncode == 2 and "unknown argument" in bad.stderr
    bad = subprocess.run(["bash", str(SCRIPT), "--deadline", "7m"], capture_output=True,
                         text=True, env={**os.environ, "OUT": str(tmp_path)}, timeout=60)
    assert bad.returncode == 2 and "whole seconds" in bad.stderr
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    no_out = subprocess.run(["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True,
                            env=env, timeout=60)
    assert no_out.returncode != 0 and "set OUT" in no_out.stderr


# ------------------------------------------------------------- the summary's readers
summary_mod = _module("device_summary", "experiments/device_summary.py")

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0"
failures="1" skipped="1" tests="3"><testcase classname="tests.test_gpu_cuda" name="test_a"/>
<testcase classname="tests.test_gpu_cuda" name="test_b"><failure message="boom"/></testcase>
<testcase classname="tests.test_gpu_cuda" name="test_c"><skipped message="torch has no CUDA"/>
</testcase></testsuite></testsuites>"""


def _summary(tmp_path):
    path = tmp_path / "summary.json"
    summary_mod.main(["init", str(path), "--mode", "device", "--deadline", "450"])
    return path


def test_summary_counts_junit_and_fails_a_part_where_no_test_passed(tmp_path):
    path = _summary(tmp_path)
    xml = tmp_path / "gpu_tests.xml"
    xml.write_text(JUNIT)
    summary_mod.main(["part", str(path), "gpu_tests", "--status", "failed", "--junit", str(xml)])
    part = json.loads(path.read_text())["parts"]["gpu_tests"]
    assert (part["tests"], part["passed"], part["failures"], part["skipped"]) == (3, 1, 1, 1)
    assert part["failed_tests"] == ["tests.test_gpu_cuda::test_b"]
    assert part["skip_reasons"] == ["torch has no CUDA"]
    xml.write_text('<testsuites><testsuite tests="2" failures="0" errors="0" skipped="2">'
                   '</testsuite></testsuites>')
    summary_mod.main(["part", str(path), "gpu_tests", "--status", "ok", "--junit", str(xml)])
    part = json.loads(path.read_text())["parts"]["gpu_tests"]
    assert part["status"] == "failed" and part["reason"] == "no test passed (2 skipped)"


def test_summary_reads_the_benchmark_rows_of_a_run_cut_short(tmp_path):
    path = _summary(tmp_path)
    row = {"graph": "rmat22", "sampler": "nodewise", "sampled_edges": 100, "identical": True,
           "cpu": {"threads": 16, "seconds": 2.0, "edges_per_s": 50.0},
           "gpu": {"seconds": 0.5, "edges_per_s": 200.0}, "gpu_over_cpu": 4.0,
           "cugraph": {"skipped": "pylibcugraph not installed (No module)"}}
    log = tmp_path / "gpu_run.log"
    log.write_text("rmat22: ... nodes\n" + json.dumps(row) + "\n" + '{"graph": "rmat22", "sam')
    summary_mod.main(["part", str(path), "gpu_bench", "--status", "timeout",
                      "--gpu-run", str(tmp_path / "missing.json"), "--bench-log", str(log)])
    part = json.loads(path.read_text())["parts"]["gpu_bench"]
    assert part["status"] == "timeout" and "partial" in part and part["all_identical"]
    assert part["runs"] == [{"graph": "rmat22", "sampler": "nodewise", "sampled_edges": 100,
                             "identical": True, "gpu_edges_per_s": 200.0,
                             "cpu_edges_per_s": 50.0, "cpu_threads": 16, "gpu_over_cpu": 4.0,
                             "ratio_to_bound": None,
                             "cugraph_edges_per_s": "pylibcugraph not installed (No module)",
                             "ratio_to_cugraph": None}]


def test_summary_reads_the_benchmark_json_and_flags_a_bulk_that_differs(tmp_path):
    path = _summary(tmp_path)
    rows = [{"graph": "rmat22", "sampler": s, "identical": s != "ladies",
             "gpu": {"edges_per_s": 1e9}, "cpu": {"edges_per_s": 1e8}} for s in
            ("nodewise", "ladies")]
    rows[0]["ratio_to_bound"] = 0.4
    doc = {"device": "NVIDIA H100 80GB HBM3", "random_sectors_per_s": 2.5e10,
           "bound_edges_per_s": 5e9, "sectors_per_edge_model": 5.0, "runs": rows}
    (tmp_path / "run.json").write_text(json.dumps(doc))
    summary_mod.main(["part", str(path), "gpu_bench", "--status", "failed",
                      "--gpu-run", str(tmp_path / "run.json")])
    part = json.loads(path.read_text())["parts"]["gpu_bench"]
    assert part["device"] == "NVIDIA H100 80GB HBM3" and part["bound_edges_per_s"] == 5e9
    assert [r["ratio_to_bound"] for r in part["runs"]] == [0.4, None]
    assert part["all_identical"] is False


def test_summary_validation_medians_are_over_the_runs_with_c_below_p(tmp_path):
    def row(p, c, sample_meas, fitted=False):
        return {"p": p, "c": c, "k": 1, "sampler": "nodewise", "strategy": "push",
                "fitted": fitted, "bytes_pred": 110, "bytes_meas": 100,
                "feature_bytes_pred": 100, "feature_bytes_meas": 100,
                "sample_s_pred": 1.0, "sample_s_meas": sample_meas,
                "fetch_s_pred": 1.0, "fetch_s_meas": 4.0}
    rows = [row(2, 1, 2.0, True), row(2, 2, 9.0), row(4, 1, 0.5), row(4, 2, 4.0),
            row(4, 4, 100.0)]
    (tmp_path / "v.json").write_text(json.dumps(rows))
    out = summary_mod.validation_numbers(tmp_path / "v.json")
    by_p = out["median_abs_error_pct_by_p"]
    assert by_p["2"] == {"runs": 1, "bytes": 10.0, "feature_bytes": 0.0, "sample_s": 50.0,
                         "fetch_s": 75.0, "fitted": True}
    assert by_p["4"]["runs"] == 2 and by_p["4"]["sample_s"] == 87.5   # median of 100 %, 75 %
    assert by_p["4"]["fitted"] is False and out["median_abs_error_pct_all"]["runs"] == 3


def test_summary_finish_fails_on_a_failed_or_pending_part_not_on_a_skipped_one(tmp_path):
    path = _summary(tmp_path)
    for name in PARTS:
        summary_mod.main(["part", str(path), name, "--status",
                          "skipped" if name.startswith("gpu") else "ok"])
    assert summary_mod.main(["finish", str(path), "--elapsed", "3"]) == 0
    summary_mod.main(["part", str(path), "validate", "--status", "ok",
                      "--validation", str(tmp_path / "missing.json")])
    assert summary_mod.main(["finish", str(path)]) == 1
    summary = json.loads(path.read_text())
    assert summary["failed_parts"] == ["validate"] and "missing.json" in \
        summary["parts"]["validate"]["error"]


# ------------------------------------------------- fixes that the dry run led to
def test_calibrating_at_one_rank_count_writes_a_machine_file_that_loads(tmp_path):
    """model.py calibrate with one network probe (or latencies that do not grow with p) used
    to write alpha_peer_s = 0, which Machine.load refuses: validate then failed."""
    from spsample.distributed._plan import Machine
    model = _module("model_for_test", "experiments/model.py")
    one = [{"p": 2, "seconds": {"8": 3e-5, "8192": 4e-5, "1048576": 9e-3}}]
    flat = one + [{"p": 4, "seconds": {"8": 2e-5, "8192": 4e-5, "1048576": 9e-3}}]
    for net in (one, flat):
        alpha, alpha_peer, beta = model.fit_network(net)
        assert alpha > 0 and alpha_peer > 0 and beta > 0
        machine = Machine(name="t", cores_per_node=2, ranks_per_node=2, alpha_s=alpha,
                          alpha_peer_s=alpha_peer, beta_intra=beta, beta_inter=beta,
                          sample_rate={"nodewise": 1e7}, gather_rate=1e9, memory_per_rank=1e9)
        path = tmp_path / "machine.json"
        path.write_text(json.dumps(machine.__dict__))
        assert Machine.load(path).alpha_peer_s == alpha_peer


def test_the_scaling_sweep_warms_up_before_it_times(tmp_path, monkeypatch):
    """A process's first bulk pays one-time costs (0.19 s against 0.01 s after, R-MAT 12):
    each (c, sampler, strategy) first runs ``--warmup`` untimed bulks at the smallest k."""
    rmat_h5 = _module("rmat_h5", "experiments/rmat_h5.py")
    data = tmp_path / "rmat8.h5"
    rmat_h5.write_rmat(8, 16, 1, str(data))
    scaling = _module("scaling_for_test", "experiments/scaling.py")
    calls = []
    real = scaling.one_run

    def counted(dg, store, grid, sampler, k, *args):
        calls.append(k)
        return real(dg, store, grid, sampler, k, *args)
    monkeypatch.setattr(scaling, "one_run", counted)
    out = tmp_path / "p1.json"
    monkeypatch.setattr(sys, "argv", ["scaling.py", "--data", str(data), "--samplers",
                                      "nodewise,labor", "--strategies", "push", "--k", "2,1",
                                      "--batch-size", "16", "--out", str(out)])
    scaling.main()
    runs = json.loads(out.read_text())["runs"]
    assert [(r["sampler"], r["k"]) for r in runs] == [("nodewise", 2), ("nodewise", 1),
                                                     ("labor", 2), ("labor", 1)]
    assert calls == [1, 2, 1] * 2          # the untimed bulk first, at the smallest k
    assert json.loads(out.read_text())["complete"] is True


def test_a_scaling_sweep_stopped_midway_keeps_the_runs_it_measured(tmp_path, monkeypatch):
    """device_run.sh stops a sweep at its time limit: rank 0 rewrites its JSON after every
    run, so the runs measured before the stop are still validated."""
    rmat_h5 = _module("rmat_h5", "experiments/rmat_h5.py")
    data = tmp_path / "rmat8.h5"
    rmat_h5.write_rmat(8, 16, 1, str(data))
    scaling = _module("scaling_for_test", "experiments/scaling.py")
    real, calls = scaling.one_run, []

    def stops_at_the_fourth(*args):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt("time limit")
        return real(*args)
    monkeypatch.setattr(scaling, "one_run", stops_at_the_fourth)
    out = tmp_path / "p1.json"
    monkeypatch.setattr(sys, "argv", ["scaling.py", "--data", str(data), "--samplers",
                                      "nodewise,labor", "--strategies", "push", "--k", "1,2",
                                      "--batch-size", "16", "--out", str(out)])
    with pytest.raises(KeyboardInterrupt):
        scaling.main()
    doc = json.loads(out.read_text())
    assert doc["complete"] is False and doc["config"]["p"] == 1
    assert [(r["sampler"], r["k"]) for r in doc["runs"]] == [("nodewise", 1), ("nodewise", 2)]


def test_the_gpu_benchmark_reads_the_graph_written_once(tmp_path):
    """gpu/run.py --graph-dir reads rmat<scale>.h5 (written by rmat_h5.py while the extension
    builds on the device): the same graph as generating it."""
    run = _module("gpu_run_for_test", "experiments/gpu/run.py")
    rmat_h5 = _module("rmat_h5", "experiments/rmat_h5.py")
    rmat_h5.write_rmat(9, 16, 1, str(tmp_path / "rmat9.h5"))
    read, source = run.rmat_graph(9, str(tmp_path))
    made = spsample.rmat(9, seed=1)
    assert source.startswith("read from")
    assert np.array_equal(read.indptr, made.indptr) and np.array_equal(read.indices, made.indices)
    assert run.rmat_graph(8, str(tmp_path))[1] == "generated"
    assert run.parse_args(["--graph-dir", "x"]).graph_dir == "x"
