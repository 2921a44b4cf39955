"""Training over ranks that are threads (``ThreadComm``) is training over MPI ranks.

Under ``mpiexec -n N`` every rank trains with ``comm=MPI.COMM_WORLD``, then, in its own
process, ``run_threads(N, ...)`` trains the same run over a ``ThreadComm``: the per-step
losses, the epochs' losses and the final parameters must be those of the MPI run (bit for bit
at N <= 2, where a sum of two buffers has one order; at N = 4 MPI may sum the gradient buffers
in another order than rank order, so within float rounding). Collected serially (N = 1),
``run_threads(1, ...)`` is compared with the one-process run. Every gradient all-reduce goes
through the communicator's ``allreduce``, whatever it is.
"""

import numpy as np
import pytest

import spsample
from spsample.distributed import run_threads

torch = pytest.importorskip("torch")

from _mpi_helpers import (COMM, MPI_MARKS, RANK, SIZE, assert_all,  # noqa: E402,F401
                          gather)

from spsample.train import Trainer, parameter_checksums  # noqa: E402
from spsample.train.link import fit_link  # noqa: E402

pytestmark = MPI_MARKS

SMALL = dict(hidden=16, batch_size=64, eval_batch_size=256, fanouts=(5, 5), dropout=0.3,
             epochs=2, pipeline=False, threads=1, sampler_threads=1)


def _node_run(comm, ds):
    trainer = Trainer(ds, comm=comm, **SMALL)
    metrics = trainer.fit()
    sums = parameter_checksums(trainer.model, comm)
    trainer.close()
    return dict(steps=[e["losses"] for e in metrics["history"]], losses=metrics["losses"],
                world_size=metrics["world_size"], sums=sums,
                test_accuracy=metrics["test_accuracy"])


def _link_run(comm, ds):
    metrics = fit_link(ds, comm=comm, epochs=2, hidden=16, out=16, batch_size=256,
                       fanouts=(4, 4), dropout=0.2)
    return dict(losses=[e["loss"] for e in metrics["history"]],
                world_size=metrics["world_size"], auc=metrics["test_auc"])


def _same(a, b):
    if SIZE <= 2:
        return a == b
    return np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                       rtol=1e-4, atol=1e-6)


def test_trainer_over_thread_ranks_trains_as_over_mpi_ranks():
    ds = spsample.io.load_cora()
    mpi = _node_run(COMM, ds)
    threads = run_threads(SIZE, _node_run, ds, timeout=600)
    mine = threads[RANK]
    assert_all(mine["world_size"] == SIZE == mpi["world_size"])
    assert_all(_same(mine["steps"], mpi["steps"]),
               f"per-step losses differ: threads {mine['steps']} MPI {mpi['steps']}")
    assert_all(_same(mine["losses"], mpi["losses"]))
    assert_all(_same(mine["sums"].tolist(), mpi["sums"].tolist()), "parameters differ")
    # the thread ranks' replicas are identical, as the MPI ranks' are
    assert_all(all(np.array_equal(t["sums"], threads[0]["sums"]) for t in threads))


def test_link_training_over_thread_ranks_trains_as_over_mpi_ranks():
    ds = spsample.io.load_cora()
    mpi = _link_run(COMM, ds)
    mine = run_threads(SIZE, _link_run, ds, timeout=600)[RANK]
    assert_all(mine["world_size"] == SIZE)
    assert_all(_same(mine["losses"], mpi["losses"]),
               f"losses differ: threads {mine['losses']} MPI {mpi['losses']}")
