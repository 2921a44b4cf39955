"""Every Python example of the README runs as written.

Each ```python block is run in a fresh namespace, in a temporary working directory. An HTML
comment on the line before a block (invisible on GitHub) may change how it runs:

* ``<!-- readme-test: mpiexec -n N -->`` -- run the block as a script under ``mpiexec -n N``
  (skipped where mpiexec or mpi4py is missing);
* ``<!-- readme-test: replace "OLD" "NEW" -->`` -- run it with the text ``OLD`` replaced by
  ``NEW`` (e.g. fewer epochs); ``OLD`` must occur in the block.

Directives may be combined, separated by ``;``. Some blocks also have checks of what they
compute (below the generic test).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"(?:<!--\s*readme-test:(?P<directives>[^>]*)-->\s*\n)?"
                    r"```python\n(?P<code>.*?)```", re.S)


def python_blocks():
    """``[(code as run, directives)]`` for every python block of the README."""
    blocks = []
    for match in _BLOCK.finditer(README.read_text()):
        code, directives = match["code"], _parse(match["directives"] or "")
        for old, new in directives.get("replace", []):
            assert old in code, f"README: {old!r} is not in the block it should replace"
            code = code.replace(old, new)
        blocks.append((code, directives))
    return blocks


def _parse(text):
    directives = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        words = shlex.split(part)
        if words[:2] == ["mpiexec", "-n"] and len(words) == 3:
            directives["mpiexec"] = int(words[2])
        elif words[0] == "replace" and len(words) == 3:
            directives.setdefault("replace", []).append((words[1], words[2]))
        else:
            raise AssertionError(f"README: unknown readme-test directive {part!r}")
    return directives


def _block_id(block):
    code, directives = block
    first = next(line for line in code.splitlines() if line.strip()
                 and not line.startswith(("import", "from")))
    return ("mpi: " if "mpiexec" in directives else "") + first[:40].strip()


@pytest.fixture
def restore_torch_threads():
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def run_block(code, tmp_path):
    """Execute ``code`` in a fresh namespace inside ``tmp_path``; return the namespace."""
    scope = {"__name__": "__readme__"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, str(README), "exec"), scope)
    finally:
        os.chdir(cwd)
    return scope


def run_under_mpiexec(code, ranks, tmp_path):
    if shutil.which("mpiexec") is None:
        pytest.skip("mpiexec is not installed")
    pytest.importorskip("mpi4py")
    script = tmp_path / "readme_block.py"
    script.write_text(code)
    env = dict(os.environ, OMP_NUM_THREADS="1", SPSAMPLE_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(README.parent)] + [
                   p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    for name in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        env.pop(name, None)                   # a fresh job, even from an MPI test run
    proc = subprocess.run(["mpiexec", "-n", str(ranks), sys.executable, str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


def _needs(code):
    if "torch" in code or "spsample.Loader" in code:
        pytest.importorskip("torch")


@pytest.mark.parametrize("block", python_blocks(), ids=_block_id)
def test_every_python_block_runs_as_written(block, tmp_path, restore_torch_threads):
    code, directives = block
    _needs(code)
    if "mpiexec" in directives:
        run_under_mpiexec(code, directives["mpiexec"], tmp_path)
    else:
        run_block(code, tmp_path)


def test_the_readme_has_the_examples_it_promises():
    blocks = python_blocks()
    assert len(blocks) >= 5
    assert any("mpiexec" in d for _, d in blocks), "the mpiexec example must be tested"


# ---------------------------------------------------------------------- what blocks compute
def block_containing(text):
    found = [code for code, _ in python_blocks() if text in code]
    assert len(found) == 1, f"README: expected one python block containing {text!r}"
    return found[0]


def test_bulk_sampling_example(tmp_path):
    scope = run_block(block_containing("spsample.sample(graph, seeds"), tmp_path)
    mb = scope["mb"]
    assert len(scope["batches"]) == 8
    assert mb.batch_size == 1024 and np.array_equal(mb.n_id[:1024], scope["seeds"][:1024])
    assert sum(mb.num_sampled_nodes) == mb.n_id.size


def test_training_loop_example(tmp_path, restore_torch_threads):
    pytest.importorskip("torch")
    import torch

    scope = run_block(block_containing("loader.set_epoch(epoch)"), tmp_path)
    assert scope["epoch"] == 1 and scope["batch"].batch_size >= 1
    assert torch.get_num_threads() == scope["plan"].model     # balance_threads applied its plan
    assert scope["plan"].share is not None                     # measured on epoch 0
    assert scope["batch"]._adjacency is not None              # the loader built the CSR


def test_sparse_features_example_never_densifies(tmp_path, restore_torch_threads):
    pytest.importorskip("torch")
    from spsample.loader import SparseRows

    scope = run_block(block_containing("batch.x.matmul_t"), tmp_path)
    assert isinstance(scope["batch"].x, SparseRows)
    assert tuple(scope["h"].shape) == (scope["batch"].x.shape[0], 64)
    assert tuple(scope["logits"].shape) == (scope["batch"].batch_size, 7)


@pytest.mark.parametrize("text, result", [("Streams.per_row(Q, ctx)", "walks"),
                                          ("class LowDegreeFirst", "batches")])
def test_sampler_examples_run_as_written_on_the_native_engine(text, result, tmp_path):
    import warnings

    from spsample import native as _native
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no NotLoweredWarning: they lower
        scope = run_block(block_containing(text), tmp_path)
    bulk = scope[result]
    assert bulk.path == ("native" if _native.enabled() else "numpy")
    assert len(bulk) == 1 and bulk[0].batch_size == 3
