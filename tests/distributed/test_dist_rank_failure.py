"""A rank that fails alone ends the whole MPI job within 60 s with its error on stderr; it
never leaves the other ranks waiting (issue 17, item 7; the feature caches: issue 27).

The job tests spawn ``mpiexec -n 2`` and ``-n 4`` themselves on ``_rank_failure_job.py``, in
which one rank (drawn from a seed) fails at a point drawn from the seed among the collective
calls and sampler steps of three distributed ``sample`` calls, or among the collective calls
of building a ``CachedFeatureStore`` and fetching through it. They run in the serial suite
and are skipped inside an MPI job (a nested ``mpiexec`` would join its parent's job). The
in-process tests of the switch and the guard run at every world size."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spsample import ArgumentError, ArgumentTypeError, DistributedError
from spsample.distributed import (SelfComm, abort_on_failure, launched_under_mpi,
                                  set_abort_on_failure)
from spsample.distributed import _failure
from spsample.distributed._collective import mark_raised_on_every_rank
from spsample.distributed._failure import abort_if_failing_alone

from _dist_helpers import assert_all, mpi_timeout, raised, world_comm

pytestmark = [pytest.mark.mpi, mpi_timeout(120)]

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("_rank_failure_job.py")
LIMIT_S = 60
FAILURES = {   # mode: what its rank's error puts on stderr (mpiexec: on stdout)
    "raise": ["RuntimeError: injected raise at event"],
    "exit": ["SystemExit: injected exit at event"],
    "memory": ["MemoryError", "Unable to allocate"],
    "kill": ["about to fail: injected kill at event", "signal 9"],
}


def run_job(n, mode, seed, target="sample", **env):
    """Run the job; returns ``(returncode, stdout, stderr, seconds)``; fails the test if it is
    still running after ``LIMIT_S`` seconds (a hang), killing it."""
    if launched_under_mpi():
        pytest.skip("spawns its own mpiexec: runs in the serial suite")
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec is not installed")
    pytest.importorskip("mpi4py")
    child_env = {k: v for k, v in os.environ.items() if k != _failure.ENVIRONMENT_VARIABLE}
    child_env.update(OMP_NUM_THREADS="1", SPSAMPLE_THREADS="1", **env,
                     PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    start = time.monotonic()
    proc = subprocess.Popen([mpiexec, "-n", str(n), sys.executable, str(JOB), mode, str(seed),
                             target],
                            env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"mpiexec -n {n} ({mode}) still ran after {LIMIT_S} s: a hang\n{err[-3000:]}")
    return proc.returncode, out, err, time.monotonic() - start


@pytest.mark.parametrize("mode", sorted(FAILURES))
@pytest.mark.parametrize("n", [2, 4])
def test_one_rank_failing_inside_sample_ends_the_job(n, mode):
    seed = 1000 * n + sorted(FAILURES).index(mode)      # a different rank and point per case
    code, out, err, seconds = run_job(n, mode, seed)
    assert code != 0 and seconds < LIMIT_S, (code, seconds, err[-3000:])
    for text in FAILURES[mode]:     # mpiexec reports a killed rank on its stdout
        assert text in err + out, err[-3000:]
    victim = re.search(r"about to fail: injected \w+ at event \d+ on rank (\d+)", err).group(1)
    assert f"rank {victim}: finished" not in out
    if mode != "kill":      # a killed process prints nothing more; mpiexec reports the signal
        assert f"spsample: rank {victim} of {n} failed in DistGraph.sample" in err, err[-3000:]


@pytest.mark.parametrize("mode", ["raise", "memory", "kill"])
@pytest.mark.parametrize("n", [2, 4])
def test_one_rank_failing_inside_the_feature_cache_ends_the_job(n, mode):
    """A rank failing anywhere in building a CachedFeatureStore (and its FeatureStore) or in
    a fetch through it (4 ranks: 2 process rows of 2 replicas, so rows come from the row's
    cache and from the other process row) ends the job."""
    seed = 3000 + 10 * n + sorted(FAILURES).index(mode)
    code, out, err, seconds = run_job(n, mode, seed, target="cache")
    assert code != 0 and seconds < LIMIT_S, (code, seconds, err[-3000:])
    for text in FAILURES[mode]:
        assert text in err + out, err[-3000:]
    victim = re.search(r"about to fail: injected \w+ at event \d+ on rank (\d+)", err).group(1)
    assert f"rank {victim}: finished" not in out
    if mode != "kill":
        assert re.search(rf"spsample: rank {victim} of {n} failed in (Cached)?FeatureStore",
                         err), err[-3000:]


@pytest.mark.parametrize("n", [2, 4])
def test_feature_cache_job_is_right_and_survives_a_caught_failure_everywhere(n):
    code, out, err, _ = run_job(n, "none", 0, target="cache")
    assert code == 0, err[-3000:]
    assert sorted(re.findall(r"rank (\d+): ok", out)) == [str(r) for r in range(n)], out
    code, out, err, _ = run_job(n, "uncaught", 1, target="cache")
    assert code != 0 and "injected uncaught error between two samples" in err, err[-3000:]
    code, out, err, _ = run_job(2, "every", 0, target="cache", SPSAMPLE_ABORT_ON_FAILURE="0")
    assert code == 0 and out.count("ok after the failure") == 2, err[-3000:]


@pytest.mark.parametrize("n", [2, 4])
def test_uncaught_exception_outside_spsample_ends_the_job(n):
    code, out, err, seconds = run_job(n, "uncaught", 7)
    assert code != 0 and seconds < LIMIT_S, (code, seconds, err[-3000:])
    assert "RuntimeError: injected uncaught error between two samples" in err, err[-3000:]
    assert re.search(rf"spsample: rank \d of {n} raised an uncaught exception", err), err[-3000:]


@pytest.mark.parametrize("n", [2, 4])
def test_successful_job_is_unaffected(n):
    code, out, err, _ = run_job(n, "none", 0)
    assert code == 0, err[-3000:]
    assert sorted(re.findall(r"rank (\d+): ok", out)) == [str(r) for r in range(n)], out
    assert "WRONG" not in out
    assert "spsample: rank" not in err


def test_abort_turned_off_lets_every_rank_handle_its_error():
    """Every rank raises at the same point and catches it, then samples on: sound only when
    the abort is turned off (by default the job ends at the first failure)."""
    code, out, err, _ = run_job(2, "every", 0, SPSAMPLE_ABORT_ON_FAILURE="0")
    assert code == 0, err[-3000:]
    assert out.count("caught injected every at event 1") == 2, out
    assert out.count("ok after the failure") == 2, out


# ---------------------------------------------------------------------- in-process
def test_switch_returns_the_previous_setting_and_checks_its_type():
    before = abort_on_failure()
    try:
        assert set_abort_on_failure(False) is before
        assert abort_on_failure() is False
        assert set_abort_on_failure(True) is False
        exc = raised(lambda: set_abort_on_failure("no"))
        assert isinstance(exc, ArgumentTypeError) and "enabled" in str(exc)
    finally:
        set_abort_on_failure(before)


@pytest.mark.parametrize("value, expected", [("0", False), ("off", False), ("False", False),
                                             ("1", True), ("yes", True), (None, True)])
def test_environment_variable(monkeypatch, value, expected):
    monkeypatch.setattr(_failure, "_choice", None)
    if value is None:
        monkeypatch.delenv(_failure.ENVIRONMENT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(_failure.ENVIRONMENT_VARIABLE, value)
    assert abort_on_failure() is expected


def test_environment_variable_with_another_value(monkeypatch):
    monkeypatch.setattr(_failure, "_choice", None)
    monkeypatch.setenv(_failure.ENVIRONMENT_VARIABLE, "sometimes")
    with pytest.raises(ArgumentError, match="SPSAMPLE_ABORT_ON_FAILURE.*sometimes"):
        abort_on_failure()


def test_guard_lets_errors_of_every_rank_through():
    """Errors ``agree`` raises on every rank are raised normally: nobody is left waiting."""
    def fail_together():
        with abort_if_failing_alone(world_comm(), "test"):
            raise mark_raised_on_every_rank(DistributedError("all of us"))
    exc = raised(fail_together)
    assert_all(isinstance(exc, DistributedError) and str(exc) == "all of us", str(exc))


def test_guard_raises_on_one_rank_when_turned_off():
    def fail_alone():
        with abort_if_failing_alone(world_comm(), "test"):
            if world_comm().rank == world_comm().size - 1:
                raise RuntimeError("only me")
    before = set_abort_on_failure(False)
    try:
        exc = raised(fail_alone)
    finally:
        set_abort_on_failure(before)
    last = world_comm().rank == world_comm().size - 1
    assert_all(isinstance(exc, RuntimeError) if last else exc is None, str(exc))


def test_guard_never_aborts_a_single_rank():
    with pytest.raises(SystemExit) as info:
        with abort_if_failing_alone(SelfComm(), "test"):
            sys.exit(3)
    assert info.value.code == 3
