"""Threads under mpiexec (issue 20): the ranks of a node together never run more model
threads, nor more sampler threads, than the node has cores (one each when there are more ranks
than cores). The two pools of one rank overlap only by the producer's share of the epoch.

Run by CI under ``mpiexec -n 2`` and ``-n 4`` (tests/run.sh, which sets OMP_NUM_THREADS=1;
these tests take it out to exercise the division of the cores) and collected serially at
world size 1. Assertions are reduced over the ranks.
"""

import os

import numpy as np
import pytest

from spsample import io
from spsample.loader import plan_threads
from spsample.loader._threads import local_ranks, process_cores

torch = pytest.importorskip("torch")

from _mpi_helpers import COMM, MPI_MARKS, SIZE, assert_all, gather  # noqa: E402
from spsample.train import Trainer  # noqa: E402

pytestmark = MPI_MARKS


def node_cores():
    return len(os.sched_getaffinity(0))


@pytest.fixture(autouse=True)
def restore_threads(monkeypatch):
    from spsample import native as _native

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("SPSAMPLE_THREADS", raising=False)
    model = torch.get_num_threads()
    sampler = _native.set_num_threads(0)
    _native.set_num_threads(sampler)
    yield
    torch.set_num_threads(model)
    _native.set_num_threads(sampler)


def test_local_ranks_agree_with_the_launcher():
    from_comm = local_ranks(COMM)                     # a shared-memory split (collective)
    from_env = local_ranks()
    assert_all(from_comm == SIZE and from_env == SIZE, f"{from_comm} {from_env} {SIZE}")


@pytest.mark.parametrize("share", [None, 0.0, 0.3, 0.8])
def test_ranks_times_threads_never_oversubscribe(share):
    cores = process_cores(local_ranks(COMM), environ={})
    plan = plan_threads(share, cores=cores)
    models, samplers = gather(plan.model), gather(plan.sampler)
    side_by_side = gather(plan.model + plan.sampler if plan.pipeline else
                          max(plan.model, plan.sampler))
    assert_all(sum(models) <= max(node_cores(), SIZE), f"model threads {models}")
    assert_all(sum(samplers) <= max(node_cores(), SIZE), f"sampler threads {samplers}")
    assert_all(sum(side_by_side) <= max(node_cores(), SIZE), f"threads {side_by_side}")


def test_trainer_under_mpiexec_splits_the_cores(monkeypatch):
    ds = io.load_cora()
    trainer = Trainer(ds, comm=COMM, epochs=2, hidden=8, batch_size=32)
    trainer.fit()
    for key in ("threads", "sampler_threads"):
        everyone = gather([e[key] for e in trainer.history])
        per_epoch = np.array(everyone).sum(axis=0)
        assert_all(np.all(per_epoch <= max(node_cores(), SIZE)), f"{key}: {everyone}")
    running = gather([e["threads"] + e["sampler_threads"] if e["pipeline"] else e["threads"]
                      for e in trainer.history])      # threads that run at once, per epoch
    per_epoch = np.array(running).sum(axis=0)
    assert_all(np.all(per_epoch <= max(node_cores(), SIZE)), f"threads at once: {running}")
    explicit = Trainer(ds, comm=COMM, epochs=1, hidden=8, threads=1, sampler_threads=1)
    explicit.fit()
    assert_all([(e["threads"], e["sampler_threads"]) for e in explicit.history] == [(1, 1)])
    trainer.close()
    explicit.close()
