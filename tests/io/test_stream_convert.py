"""Streaming edge-list conversion (spsample convert --memory-budget): chunks, sorted runs and
a windowed merge give from_edge_list's graph exactly, with budgets far below the file."""

import contextlib
import gzip
import os

import numpy as np
import pytest

import spsample
from spsample import native as _native
from spsample.cli import main
from spsample.io._stream import stream_edge_list


def _write(path, n=2000, m=30000, seed=0, gz=False):
    rng = np.random.default_rng(seed)
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    lines = ["# a SNAP header", "# FromNodeId\tToNodeId"]
    lines += [f"{a}\t{b}" if i % 3 else f"{a}  {b}" for i, (a, b) in enumerate(zip(u, v))]
    text = ("\n".join(lines) + "\n").encode()
    if gz:
        path.write_bytes(gzip.compress(text))
    else:
        path.write_bytes(text)
    return path


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("native", [True, False])
def test_same_graph_as_in_memory(tmp_path, directed, native):
    src = _write(tmp_path / "e.txt")
    ref = spsample.io.from_edge_list(src, directed=directed).graph
    with _native.disabled() if not native else contextlib.nullcontext():
        info = stream_edge_list(src, tmp_path / "o.h5", memory_budget=100_000,
                                directed=directed)
    got = spsample.load(tmp_path / "o.h5").graph
    assert info["runs"] > 3
    np.testing.assert_array_equal(got.indptr, ref.indptr)
    np.testing.assert_array_equal(got.indices, ref.indices)
    with spsample.load(tmp_path / "o.h5", mmap=True, memory_budget="1MB").graph as dg:
        s = spsample.NodeWise([5, 3])
        a = spsample.sample(dg, np.arange(100), sampler=s, batch_size=10)
        b = spsample.sample(ref, np.arange(100), sampler=s, batch_size=10)
        assert all(x.equals(y) for x, y in zip(a, b))


def test_cli_gzip(tmp_path):
    src = _write(tmp_path / "e.txt.gz", gz=True)
    assert main(["convert", str(src), str(tmp_path / "o.h5"), "--memory-budget", "200KB"]) == 0
    ref = spsample.io.from_edge_list(src).graph
    got = spsample.load(tmp_path / "o.h5").graph
    np.testing.assert_array_equal(got.indices, ref.indices)


def test_bad_lines_leave_nothing(tmp_path):
    src = tmp_path / "bad.txt"
    src.write_text("0 1\n2 3\n4 x\n")
    with pytest.raises(spsample.DatasetError, match="src"):
        stream_edge_list(src, tmp_path / "o.h5", memory_budget="1MB")
    src.write_text("0 1\n-2 3\n")
    with pytest.raises(spsample.DatasetError, match="negative"):
        stream_edge_list(src, tmp_path / "o.h5", memory_budget="1MB")
    assert sorted(os.listdir(tmp_path)) == ["bad.txt"]
    with pytest.raises(spsample.ArgumentError, match="memory_budget"):
        stream_edge_list(src, tmp_path / "o.h5", memory_budget="lots")
