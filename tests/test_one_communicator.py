"""One communicator: every collective of spsample goes through
``spsample.distributed.Communicator``, and mpi4py is imported by one module only.

Training takes any communicator -- ``MPIComm`` (or a raw mpi4py communicator, wrapped),
``NcclComm``, or a ``ThreadComm`` whose ranks are threads of this process -- because the
gradient all-reduce and every metric reduction call the communicator's methods. (The MPI
equivalence, thread ranks against MPI ranks bit for bit, is ``tests/mpi/test_train_threads.py``.)
"""

import ast
from pathlib import Path

import numpy as np
import pytest

import spsample
from spsample.distributed import ThreadComm, run_threads

PACKAGE = Path(spsample.__file__).resolve().parent
#: The one module that imports mpi4py.
MPI_MODULE = "distributed/_comm.py"


def _mpi_imports(path):
    """Lines of ``path`` importing mpi4py: ``import mpi4py...``, ``from mpi4py... import``
    (at any depth: module or function level), or ``importlib.import_module("mpi4py...")`` /
    ``__import__`` / ``require`` / ``have`` of a literal ``"mpi4py..."``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            names = [node.args[0].value] if name in ("import_module", "__import__", "require",
                                                     "have") else []
        else:
            continue
        if any(n == "mpi4py" or n.startswith("mpi4py.") for n in names):
            lines.append(node.lineno)
    return lines


def test_mpi4py_is_imported_by_one_module():
    found = {str(p.relative_to(PACKAGE)): _mpi_imports(p) for p in sorted(PACKAGE.rglob("*.py"))}
    importers = {name: lines for name, lines in found.items() if lines}
    assert set(importers) == {MPI_MODULE}, f"modules importing mpi4py: {importers}"
    assert len(importers[MPI_MODULE]) == 1, importers


def test_the_scan_sees_every_kind_of_import(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import os\n"
                    "def f():\n    from mpi4py import MPI\n"
                    "def g():\n    import mpi4py.MPI as M\n"
                    "def h():\n    importlib.import_module('mpi4py')\n"
                    "def k():\n    require('mpi4py', 'x')\n"
                    "from .mpi4py_like import x\n")
    assert _mpi_imports(path) == [3, 5, 7, 9]


def test_the_gradient_allreduce_goes_through_the_communicator():
    torch = pytest.importorskip("torch")
    from spsample.train import GradientAllReduce

    def rank(comm):
        layer = torch.nn.Linear(3, 2)
        for p in layer.parameters():
            p.grad = torch.full_like(p, float(comm.rank + 1))
        reduce = GradientAllReduce(list(layer.parameters()), comm)
        count = reduce(True)
        calls = reduce.comm.stats()["allreduce"]["calls"]
        grads = [p.grad.clone() for p in layer.parameters()]
        reduce.close()
        return count, calls, grads

    for count, calls, grads in run_threads(2, rank):
        assert count == 2 and calls == 1
        assert all(torch.equal(g, torch.full_like(g, 1.5)) for g in grads)


SMALL = dict(hidden=16, batch_size=64, eval_batch_size=256, fanouts=(5, 5), dropout=0.3,
             epochs=2, pipeline=False, threads=1, sampler_threads=1)


def _trainer_run(comm, ds):
    from spsample.train import Trainer, parameter_checksums

    trainer = Trainer(ds, comm=comm, **SMALL)
    metrics = trainer.fit()
    sums = parameter_checksums(trainer.model, comm)
    trainer.close()
    return [e["losses"] for e in metrics["history"]], metrics["world_size"], sums, \
        metrics["history"][-1]["bytes"]


def test_a_trainer_runs_over_thread_ranks():
    """Two thread ranks train data-parallel: each its share of the minibatches, replicas
    identical, the same losses at every run (dropout drawn per thread), and the gradient
    all-reduce counted in the metrics."""
    pytest.importorskip("torch")
    ds = spsample.io.load_cora()
    first = run_threads(2, _trainer_run, ds, timeout=600)
    again = run_threads(2, _trainer_run, ds, timeout=600)
    for (steps, size, sums, traffic), (steps2, _, sums2, _) in zip(first, again):
        assert size == 2 and steps == steps2 and np.array_equal(sums, sums2)
        assert np.array_equal(sums, first[0][2])                     # replicas identical
        assert traffic["gradient_allreduce"]["allreduce"] > 0
    alone, size, _, _ = _trainer_run(None, ds)
    assert size == 1 and len(alone[0]) == len(first[0][0][0]) + len(first[1][0][0])


def test_one_thread_rank_trains_as_one_process():
    pytest.importorskip("torch")
    ds = spsample.io.load_cora()
    (steps, size, sums, _), = run_threads(1, _trainer_run, ds, timeout=600)
    alone, _, sums_alone, _ = _trainer_run(None, ds)
    assert steps == alone and np.array_equal(sums, sums_alone)


def test_link_training_runs_over_thread_ranks():
    pytest.importorskip("torch")
    from spsample.train.link import fit_link

    ds = spsample.io.load_cora()

    def link(comm):
        m = fit_link(ds, comm=comm, epochs=1, hidden=8, out=8, batch_size=256, fanouts=(3, 3))
        return m["world_size"], [e["loss"] for e in m["history"]], m["test_auc"]

    runs = run_threads(2, link, timeout=600)
    assert [r[0] for r in runs] == [2, 2]
    assert runs[0][1] == runs[1][1] and runs[0][2] == runs[1][2]   # all-reduced alike


def test_a_communicator_of_another_kind_is_refused():
    pytest.importorskip("torch")
    from spsample.train import Trainer

    with pytest.raises(spsample.ArgumentTypeError, match="argument 'comm' must be a "
                       "spsample.distributed.Communicator"):
        Trainer(spsample.io.load_cora(), comm="world", epochs=1)
    assert isinstance(ThreadComm.create(1)[0], spsample.distributed.Communicator)


def test_the_command_line_trains_over_a_given_communicator(tmp_path, capsys):
    """``spsample.cli.main(argv, comm=...)``: ``spsample train`` over two thread ranks trains
    as the Trainer does over them (the same losses), each rank its share."""
    pytest.importorskip("torch")
    import json

    from spsample.cli import main

    def rank(comm):
        path = tmp_path / f"m{comm.rank}.json"
        code = main(["train", "--epochs", "2", "--hidden", "16", "--batch-size", "64",
                     "--fanouts", "5,5", "--dropout", "0.3", "--threads", "1",
                     "--sampler-threads", "1", "--quiet", "--metrics", str(path)], comm=comm)
        return code

    assert run_threads(2, rank, timeout=600) == [0, 0]
    metrics = json.loads((tmp_path / "m0.json").read_text())        # written by rank 0
    assert not (tmp_path / "m1.json").exists()
    assert metrics["world_size"] == 2 and metrics["config"]["fanouts"] == [5, 5]
    assert "2 ranks" in capsys.readouterr().out

    def trainer(comm):
        from spsample.train import Trainer

        t = Trainer(spsample.io.load_cora(), comm=comm, epochs=2, hidden=16, batch_size=64,
                    fanouts=(5, 5), dropout=0.3, threads=1, sampler_threads=1)
        m = t.fit()
        t.close()
        return m["losses"]

    assert run_threads(2, trainer, timeout=600)[0] == metrics["losses"]


def test_a_failing_rank_of_the_command_line_over_threads_ends_every_rank(capsys):
    pytest.importorskip("torch")
    from spsample.cli import main

    def rank(comm):
        argv = ["train", "--epochs", "1", "--quiet"]
        if comm.rank == 1:
            argv += ["--resume", "/no/such/checkpoint.pt"]
        return main(argv, comm=comm)

    assert run_threads(2, rank, timeout=600) == [2, 2]
    err = capsys.readouterr().err
    assert "argument '--resume' is not a file" in err
