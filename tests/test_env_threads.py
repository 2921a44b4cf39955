"""``SPSAMPLE_THREADS`` sets the native kernels' thread count (issue 17, item 13)."""

import json
import os
import subprocess
import sys

import pytest

from spsample import native as _native
from spsample._errors import ArgumentError
from spsample.native import threads_from_env

import crafted

needs_openmp = pytest.mark.skipif(not (_native.AVAILABLE and _native.kernels.have_openmp()),
                                  reason="native kernels with OpenMP not built")


def run(argv, **env):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(crafted.REPO), **env))


@needs_openmp
def test_spsample_sample_honours_spsample_threads(tmp_path):
    path = tmp_path / "s.json"
    proc = run(["-m", "spsample", "sample", "rmat:8", "--batch-size", "64", "--json",
                str(path)], SPSAMPLE_THREADS="3")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(path.read_text())["threads"] == 3


@needs_openmp
def test_loader_start_applies_spsample_threads_once():
    pytest.importorskip("torch")
    code = ("import spsample; from spsample import native as _native\n"
            "before = _native.get_num_threads()\n"
            "spsample.Loader(spsample.rmat(6), sampler=spsample.NodeWise([2]), batch_size=8)\n"
            "first = _native.get_num_threads(); _native.set_num_threads(2)\n"
            "spsample.Loader(spsample.rmat(6), sampler=spsample.NodeWise([2]), batch_size=8)\n"
            "print(first, _native.get_num_threads())")
    proc = run(["-c", code], SPSAMPLE_THREADS="3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "2"]          # applied once; an explicit call wins


def test_a_bad_value_is_a_typed_error():
    assert threads_from_env({}) is None and threads_from_env({"SPSAMPLE_THREADS": " "}) is None
    assert threads_from_env({"SPSAMPLE_THREADS": "4"}) == 4
    for text in ("four", "-1", "1.5"):
        with pytest.raises(ArgumentError, match="SPSAMPLE_THREADS must be a non-negative"):
            threads_from_env({"SPSAMPLE_THREADS": text})
    proc = run(["-m", "spsample", "sample", "rmat:6"], SPSAMPLE_THREADS="many")
    assert proc.returncode == 2 and "SPSAMPLE_THREADS" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
