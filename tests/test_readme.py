"""The README's Python examples run as written (single-process ones; the mpiexec one is covered
by tests/distributed)."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def block_containing(text):
    found = [b for b in python_blocks() if text in b]
    assert len(found) == 1, f"README: expected one python block containing {text!r}"
    return found[0]


def test_bulk_sampling_example():
    scope = {}
    exec(block_containing("spsample.sample(graph, seeds"), scope)
    mb = scope["mb"]
    assert len(scope["batches"]) == 8
    assert mb.batch_size == 1024 and np.array_equal(mb.n_id[:1024], scope["seeds"][:1024])
    assert sum(mb.num_sampled_nodes) == mb.n_id.size


def test_training_loop_example():
    pytest.importorskip("torch")
    code = block_containing("spsample.Loader(ds").replace("range(20)", "range(2)")
    scope = {}
    exec(code, scope)
    assert scope["epoch"] == 1 and scope["batch"].batch_size >= 1


def test_distributed_example_names_exist():
    from spsample.distributed import DistGraph, FeatureStore, Grid
    code = block_containing("DistGraph.load")
    for name, obj in [("Grid(", Grid), ("DistGraph.load(", DistGraph.load),
                      ("FeatureStore.load(", FeatureStore.load)]:
        assert name in code and callable(obj)


@pytest.mark.parametrize("text, result", [("Streams.per_row(Q, ctx)", "walks"),
                                          ("class LowDegreeFirst", "batches")])
def test_sampler_examples_run_as_written_on_the_native_engine(text, result):
    import warnings

    from spsample import _native
    scope = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no NotLoweredWarning: they lower
        exec(block_containing(text), scope)
    bulk = scope[result]
    assert bulk.path == ("native" if _native.enabled() else "numpy")
    assert len(bulk) == 1 and bulk[0].batch_size == 3
