"""Threads where the time is (issue 20): the cores split between the model and the sampler
from the producer's measured share; explicit settings win; MPI ranks divide the cores."""

import time

import numpy as np
import pytest

import spsample
from spsample import io
from spsample._errors import ArgumentError, ArgumentTypeError
from spsample.cli import main
from spsample.loader import _threads as threads_mod
from spsample.loader import ThreadPlan, balance_threads, plan_threads

torch = pytest.importorskip("torch")

from spsample.train import Trainer  # noqa: E402


@pytest.fixture(autouse=True)
def restore_threads():
    from spsample import native as _native

    model = torch.get_num_threads()
    sampler = _native.set_num_threads(0)
    _native.set_num_threads(sampler)
    yield
    torch.set_num_threads(model)
    _native.set_num_threads(sampler)


@pytest.mark.parametrize("share,cores,model,sampler", [
    (None, 2, 1, 1), (0.0, 2, 1, 1), (0.05, 2, 1, 1), (0.3, 2, 1, 1), (0.9, 2, 1, 1),
    (0.1, 8, 7, 1), (0.3, 8, 6, 2), (0.6, 8, 3, 5), (1.5, 4, 1, 3), (-1.0, 4, 3, 1),
    (None, 16, 15, 1)])
def test_plan_gives_the_model_the_cores_the_producer_leaves(share, cores, model, sampler):
    plan = plan_threads(share, cores=cores)
    assert (plan.model, plan.sampler, plan.cores, plan.pipeline) == (model, sampler, cores,
                                                                     True)
    assert plan.model + plan.sampler <= plan.cores          # never more threads than cores


@pytest.mark.parametrize("share", [None, 0.0, 0.5, 1.0])
def test_one_core_runs_the_producer_in_the_training_thread(share):
    """On one core a background producer could only take turns with the model: the plan
    turns the pipeline off, so one thread runs at a time."""
    assert plan_threads(share, cores=1) == ThreadPlan(1, 1, 1, share, pipeline=False)


def test_an_explicit_count_leaves_the_other_the_cores_left():
    assert plan_threads(None, cores=4, sampler_threads=2) == ThreadPlan(2, 2, 4, None)
    assert plan_threads(None, cores=4, model_threads=1) == ThreadPlan(1, 3, 4, None)
    assert plan_threads(None, cores=2, model_threads=2).model == 2      # kept as given
    assert plan_threads(None, cores=2, sampler_threads=1) == ThreadPlan(1, 1, 2, None)


def test_plan_keeps_explicit_settings_and_shares_nothing_without_pipeline():
    assert plan_threads(0.9, cores=8, model_threads=6).model == 6
    assert plan_threads(0.0, cores=8, sampler_threads=3).sampler == 3
    plan = plan_threads(0.5, cores=4, pipeline=False)
    assert (plan.model, plan.sampler) == (4, 4)
    with pytest.raises(ArgumentError, match="'cores'"):
        plan_threads(0.1, cores=0)
    with pytest.raises(ArgumentTypeError, match="'model_threads'"):
        plan_threads(0.1, cores=2, model_threads=1.5)
    with pytest.raises(ArgumentError, match="'share'"):
        plan_threads(float("nan"), cores=2)


def test_cores_are_divided_among_local_ranks_and_capped_by_omp_num_threads(monkeypatch):
    monkeypatch.setattr(threads_mod.os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(threads_mod, "_cgroup_cores", lambda: None)
    assert threads_mod.process_cores(1, environ={}) == 16
    assert threads_mod.process_cores(4, environ={}) == 4
    assert threads_mod.process_cores(32, environ={}) == 1
    assert threads_mod.process_cores(2, environ={"OMP_NUM_THREADS": "3"}) == 3
    assert threads_mod.process_cores(8, environ={"OMP_NUM_THREADS": "3"}) == 2
    monkeypatch.setattr(threads_mod, "_cgroup_cores", lambda: 6)
    assert threads_mod.process_cores(1, environ={}) == 6
    assert threads_mod.local_ranks(environ={"MPI_LOCALNRANKS": "4"}) == 4
    assert threads_mod.local_ranks(environ={"OMPI_COMM_WORLD_LOCAL_SIZE": "3"}) == 3
    assert threads_mod.local_ranks(environ={"SLURM_NTASKS_PER_NODE": "2(x3)"}) == 2
    assert threads_mod.local_ranks(environ={}) == 1


class SlowFeatures:
    """A feature source whose fetch takes 20 ms: a producer busy most of the epoch."""

    def __init__(self, x):
        self.x = x
        self.num_nodes, self.num_features = x.shape

    def fetch(self, n_id):
        time.sleep(0.02)
        return self.x[n_id]


def test_balance_measures_the_producer_share_of_the_last_epoch(monkeypatch):
    monkeypatch.setattr(threads_mod, "process_cores", lambda ranks: 4)
    monkeypatch.delenv("SPSAMPLE_THREADS", raising=False)
    ds = io.load_cora()
    loader = spsample.Loader(ds, sampler=spsample.NodeWise([5]), batch_size=8, bulk_size=1,
                             features=SlowFeatures(ds.features))
    first = balance_threads(loader, ranks=1)
    assert first.share is None and (first.model, first.sampler) == (3, 1)
    for _ in loader:                       # the model waits for a slow producer
        pass
    stats = loader.last_stats
    assert stats["epoch_seconds"] >= stats["fetch_seconds"] > 0.3
    assert stats["wait_seconds"] > 0.5 * stats["fetch_seconds"]
    plan = balance_threads(loader, ranks=1)
    assert plan.share > 0.6 and plan.model == 1 and plan.sampler == 3
    assert torch.get_num_threads() == 1
    assert balance_threads(loader, ranks=1, model_threads=2, apply=False).model == 2
    assert loader.pipeline


def test_balance_on_one_core_turns_the_loaders_background_thread_off(monkeypatch):
    monkeypatch.setattr(threads_mod, "process_cores", lambda ranks: 1)
    ds = io.load_cora()
    loader = spsample.Loader(ds, sampler=spsample.NodeWise([5]), batch_size=64)
    plan = balance_threads(loader, ranks=1, apply=False)
    assert not plan.pipeline and loader.pipeline               # apply=False changes nothing
    plan = balance_threads(loader, ranks=1)
    assert (plan.model, plan.pipeline, loader.pipeline) == (1, False, False)
    assert torch.get_num_threads() == 1
    batches = [b.n_id for b in loader.iter_epoch(0)]
    again = spsample.Loader(ds, sampler=spsample.NodeWise([5]), batch_size=64)
    assert all(np.array_equal(a, b.n_id) for a, b in zip(batches, again.iter_epoch(0)))


def test_trainer_respects_explicit_threads_and_restores_the_callers(monkeypatch):
    from spsample import native as _native

    torch.set_num_threads(2)
    ds = io.load_cora()
    metrics = Trainer(ds, epochs=2, hidden=8, threads=1, sampler_threads=1).fit()
    assert metrics["epochs"] == 2
    t = Trainer(ds, epochs=1, hidden=8, threads=1, sampler_threads=1)
    t.fit()
    assert [(e["threads"], e["sampler_threads"]) for e in t.history] == [(1, 1)]
    assert torch.get_num_threads() == 2                  # the caller's count is back
    monkeypatch.setenv("OMP_NUM_THREADS", "1")           # a user's setting caps "auto"
    monkeypatch.setenv("SPSAMPLE_THREADS", "1")
    t = Trainer(ds, epochs=2, hidden=8)
    t.fit()
    assert [(e["threads"], e["sampler_threads"]) for e in t.history] == [(1, 1), (1, 1)]
    assert t.history[1]["producer_share"] is not None
    if _native.AVAILABLE:
        assert _native.get_num_threads() >= 1
    with pytest.raises(ArgumentError, match="'threads'"):
        Trainer(ds, threads=0)
    with pytest.raises(ArgumentTypeError, match="'sampler_threads'"):
        Trainer(ds, sampler_threads="many")


def test_cli_threads_flag(capsys, monkeypatch):
    assert main(["train", "--epochs", "1", "--hidden", "8", "--threads", "1",
                 "--sampler-threads", "1", "--quiet"]) == 0
    assert "threads 1+1 of " in capsys.readouterr().out
    monkeypatch.delenv("SPSAMPLE_THREADS", raising=False)
    for cores, text in ((2, "threads 1+1 of 2 cores"), (4, "threads 3+1 of 4 cores"),
                        (1, "threads 1, then 1 sampling of 1 core")):
        monkeypatch.setattr(threads_mod, "process_cores", lambda ranks, c=cores: c)
        assert main(["train", "--epochs", "1", "--hidden", "8", "--quiet"]) == 0
        assert text in capsys.readouterr().out          # model + sampler <= cores
    with pytest.raises(SystemExit) as exc:
        main(["train", "--threads", "0"])
    assert exc.value.code == 2
    assert "--threads" in capsys.readouterr().err
