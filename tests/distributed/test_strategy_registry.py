"""One registration makes a distributed strategy reachable everywhere (issue 26): a strategy
registered in this module is sampled by ``DistGraph`` and ``DistHeteroGraph`` (minibatches bit
for bit those of push, pull and one process: strategies only move bytes), accepted by the
loaders, ``TrainConfig``, ``Trainer``, ``fit_link`` and ``fit_node``, offered by
``spsample train --strategy`` and a candidate of the planner (``plan`` and ``spsample plan``).

Two strategies are registered for the module: ``mirror`` (push's placement and bytes under
another name) and ``alternate`` (a real variant: push's placement on odd hops, every even hop
pulled). Runs serially (thread worlds) and under ``mpiexec`` (the job's world)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spsample
from spsample.cli import build_parser, main
from spsample.distributed import (STRATEGIES, DistGraph, DistHeteroGraph, launched_under_mpi,
                                  register_strategy, registered_strategy, unregister_strategy)

from _dist_helpers import (CITES, HAS, IN, WRITES, WRITTEN_BY, assert_all,  # noqa: F401
                           grid_for, layouts, matches, mpi_timeout, my_batches, raised,
                           rmat10, threaded, world_comm)

pytestmark = [pytest.mark.mpi, mpi_timeout(120)]

BATCH = 32
NUM_SEEDS = 300
NEW = ("mirror", "alternate")


def alternate_modes(plans, weighted):
    """Push's placement on hops 1, 3, ...; hops 2, 4, ... fetch their rows."""
    push = registered_strategy("push").modes(plans, weighted)
    return [mode if hop % 2 == 0 else "pull" for hop, mode in enumerate(push)]


@pytest.fixture(scope="module", autouse=True)
def strategies():
    """``mirror`` and ``alternate`` registered for this module, forgotten after it."""
    push, pull = registered_strategy("push"), registered_strategy("pull")
    register_strategy("mirror", push.modes, sampling_bytes=push.sampling_bytes,
                      description="push under another name", replace=True)
    register_strategy("alternate", alternate_modes,
                      sampling_bytes=lambda w, p, c, k: (push.sampling_bytes(w, p, c, k)
                                                         + pull.sampling_bytes(w, p, c, k)) / 2,
                      description="push odd hops, pull even ones", replace=True)
    yield
    for name in NEW:
        unregister_strategy(name)


def test_the_registry_lists_them():
    assert STRATEGIES[:2] == ("push", "pull") and set(NEW) <= set(STRATEGIES)
    assert tuple(STRATEGIES)[-2:] == NEW and len(STRATEGIES) == 4
    assert registered_strategy("alternate").description == "push odd hops, pull even ones"
    # the view is live: a name forgotten leaves it at once
    register_strategy("brief", alternate_modes, sampling_bytes=lambda w, p, c, k: 0.0)
    assert "brief" in STRATEGIES
    unregister_strategy("brief")
    assert "brief" not in STRATEGIES and STRATEGIES == ("push", "pull") + NEW


def test_register_strategy_checks_its_arguments():
    push = registered_strategy("push")
    with pytest.raises(spsample.ArgumentError, match="registered already"):
        register_strategy("push", push.modes, sampling_bytes=push.sampling_bytes)
    with pytest.raises(spsample.ArgumentError, match="argument 'name'"):
        register_strategy("Bad Name", push.modes, sampling_bytes=push.sampling_bytes)
    with pytest.raises(spsample.ArgumentTypeError, match="argument 'sampling_bytes'"):
        register_strategy("nobytes", push.modes, sampling_bytes=None)
    with pytest.raises(spsample.ArgumentTypeError, match="argument 'modes'"):
        register_strategy("nomodes", "push", sampling_bytes=push.sampling_bytes)
    with pytest.raises(spsample.ArgumentError, match=r"argument 'name' must be one of \("):
        registered_strategy("nosuch")
    assert not {"Bad Name", "nobytes", "nomodes"} & set(STRATEGIES)


# ------------------------------------------------------------------ DistGraph, DistHeteroGraph
def _seeds(graph):
    return np.random.default_rng(3).permutation(graph.num_nodes)[:NUM_SEEDS]


def _mine(dg, graph, make, strategy):
    b0, b1 = my_batches(-(-NUM_SEEDS // BATCH))
    out = spsample.sample(dg, _seeds(graph)[b0 * BATCH:b1 * BATCH], sampler=make(),
                          batch_size=BATCH, seed=9, epoch=2, batch_offset=b0, strategy=strategy)
    return out, b0, b1


MAKERS = {"nodewise": lambda: spsample.NodeWise([5, 3]), "labor": lambda: spsample.LABOR([4, 3]),
          "ladies": lambda: spsample.LADIES([40, 20])}


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2), (4, 1)]))
@threaded
def test_dist_graph_samples_the_same_minibatches_with_every_strategy(rmat10, name, p, c):
    """Determinism across strategies: push, pull, mirror and alternate give the one-process
    minibatches bit for bit, each hop placed as its strategy says."""
    make = MAKERS[name]
    ref = spsample.sample(rmat10, _seeds(rmat10), sampler=make(), batch_size=BATCH, seed=9,
                          epoch=2)
    dg = DistGraph.from_graph(rmat10, grid_for(c))
    placed = {}
    for strategy in ("push", "pull") + NEW:
        out, b0, b1 = _mine(dg, rmat10, make, strategy)
        assert_all(matches(out, ref, b0, b1), (name, strategy, c))
        placed[strategy] = dg.last_stats["modes"]
        assert_all(dg.last_stats["strategy"] == strategy)
    if dg.grid.num_rows == 1:                    # the whole graph here: one-process engine
        assert_all(all(m == ["local", "local"] for m in placed.values()), placed)
    else:
        assert_all(placed["push"] == ["push", "push"] and placed["pull"] == ["pull", "pull"],
                   placed)
        assert_all(placed["mirror"] == placed["push"], placed)
        assert_all(placed["alternate"] == ["push", "pull"], placed)


def _bibliography():
    rng = np.random.default_rng(21)
    counts = {"author": 30, "paper": 80}
    a, p = rng.integers(0, 30, 240), rng.integers(0, 80, 240)
    c1, c2 = rng.integers(0, 80, 400), rng.integers(0, 80, 400)
    edges = {WRITES: (a, p), WRITTEN_BY: (p, a), CITES: (c1[c1 != c2], c2[c1 != c2])}
    return spsample.HeteroGraph.from_edge_index(edges, num_nodes=counts)


@pytest.mark.parametrize("p, c", layouts([(2, 1), (4, 2)]))
@threaded
def test_dist_hetero_graph_samples_the_same_minibatches_with_a_registered_strategy(p, c):
    graph = _bibliography()
    seeds = np.random.default_rng(4).permutation(80)[:60]
    make = lambda: spsample.NodeWise([3, 2])      # noqa: E731
    ref = spsample.sample(graph, ("paper", seeds), sampler=make(), batch_size=8, seed=5)
    dg = DistHeteroGraph.from_graph(graph, grid_for(c))
    b0, b1 = my_batches(-(-seeds.size // 8))
    placed = {}
    for strategy in ("push",) + NEW:
        out = spsample.sample(dg, ("paper", seeds[b0 * 8:b1 * 8]), sampler=make(),
                              batch_size=8, seed=5, batch_offset=b0, strategy=strategy)
        assert_all(matches(out, ref, b0, b1), (strategy, c))
        placed[strategy] = dg.last_stats["modes"]
    assert_all(placed["mirror"] == placed["push"], placed)
    if c < world_comm().size:
        steps = dg.last_stats["relations"]       # (hop, relation) steps: hop 1's pushed
        assert_all("pull" in placed["alternate"] and "push" in placed["alternate"], placed)
        assert_all(len(placed["alternate"]) == len(steps), placed)


@pytest.mark.parametrize("p, c", layouts([(2, 1)]))
@threaded
def test_a_strategy_that_misplaces_hops_fails_on_every_rank(rmat10, p, c):
    register_strategy("broken", lambda plans, weighted: ["everywhere"] * len(plans),
                      sampling_bytes=lambda w, p, c, k: 0.0, replace=True)
    try:
        dg = DistGraph.from_graph(rmat10, grid_for(c))
        exc = raised(lambda: _mine(dg, rmat10, MAKERS["nodewise"], "broken"))
        if dg.grid.num_rows == 1:                  # one-process engine: no hop is placed
            assert_all(exc is None, exc)
        else:
            assert_all(isinstance(exc, spsample.ArgumentError)
                       and "argument 'strategy'" in str(exc) and "'everywhere'" in str(exc),
                       exc)
    finally:
        world_comm().barrier()
        unregister_strategy("broken")


@pytest.mark.parametrize("p, c", layouts([(2, 1)]))
@threaded
def test_a_strategy_cannot_push_what_push_cannot(rmat10, p, c):
    """node2vec's hops 2 and 3 look into other rows (not row-local): a strategy pushing every
    hop is refused on every rank, where push itself pulls them."""
    register_strategy("all-push", lambda plans, weighted: ["push"] * len(plans),
                      sampling_bytes=registered_strategy("push").sampling_bytes, replace=True)
    try:
        dg = DistGraph.from_graph(rmat10, grid_for(c))
        node2vec = lambda: spsample.RandomWalk(3, p=0.5, q=2.0)      # noqa: E731
        exc = raised(lambda: _mine(dg, rmat10, node2vec, "all-push"))
        out, b0, b1 = _mine(dg, rmat10, MAKERS["nodewise"], "all-push")   # row-local: fine
        ref = spsample.sample(rmat10, _seeds(rmat10), sampler=MAKERS["nodewise"](),
                              batch_size=BATCH, seed=9, epoch=2)
        assert_all(matches(out, ref, b0, b1))
        if dg.grid.num_rows == 1:
            assert_all(exc is None, exc)
        else:
            assert_all(isinstance(exc, spsample.ArgumentError)
                       and "'all-push' pushes hop(s) [2, 3]" in str(exc), exc)
            assert_all(dg.last_stats["modes"] == ["push", "push"], dg.last_stats["modes"])
    finally:
        world_comm().barrier()
        unregister_strategy("all-push")


@pytest.mark.parametrize("p, c", layouts([(2, 1)]))
@threaded
def test_an_unregistered_strategy_is_refused_on_every_rank(rmat10, p, c):
    dg = DistGraph.from_graph(rmat10, grid_for(c))
    exc = raised(lambda: _mine(dg, rmat10, MAKERS["nodewise"], "nosuch"))
    assert_all(isinstance(exc, spsample.ArgumentError)
               and "argument 'strategy' must be one of ('push', 'pull', 'mirror', "
                   "'alternate')" in str(exc), exc)


# ------------------------------------------------------------------ loaders, Trainer, fits
@pytest.mark.parametrize("p, c", layouts([(2, 1)]))
@threaded
def test_the_loader_samples_with_a_registered_strategy(rmat10, p, c):
    pytest.importorskip("torch")
    dg = DistGraph.from_graph(rmat10, grid_for(c))
    comm = world_comm()
    seeds = _seeds(rmat10)[:128]
    epochs = {}
    for strategy in ("push", "alternate"):
        loader = spsample.Loader(dg, seeds, sampler=spsample.NodeWise([4, 2]), batch_size=16,
                                 seed=1, pipeline=False, rank=comm.rank,
                                 world_size=comm.size, strategy=strategy)
        epochs[strategy] = [b.n_id.numpy().tobytes() for b in loader]
    assert_all(epochs["alternate"] == epochs["push"])
    with pytest.raises(spsample.ArgumentError, match="argument 'strategy' must be None or "
                       r"one of \('push', 'pull', 'mirror', 'alternate'\)"):
        spsample.Loader(dg, seeds, sampler=spsample.NodeWise([4, 2]), batch_size=16,
                        strategy="nosuch")


def test_train_config_and_trainer_take_a_registered_strategy():
    pytest.importorskip("torch")
    from spsample.train import TrainConfig, Trainer

    assert TrainConfig(strategy="mirror").strategy == "mirror"
    with pytest.raises(spsample.ArgumentError,
                       match=r"argument 'strategy' must be one of \('push', 'pull', 'mirror'"):
        TrainConfig(strategy="nosuch")
    trainer = Trainer(spsample.io.load_cora(), strategy="alternate", epochs=1, hidden=8,
                      batch_size=512, pipeline=False)
    assert trainer.config.strategy == "alternate"
    trainer.close()


def test_fit_functions_check_the_strategy_against_the_registry():
    pytest.importorskip("torch")
    from spsample.train.hetero import fit_node
    from spsample.train.link import fit_link

    graph = spsample.rmat(7, seed=2)
    with pytest.raises(spsample.ArgumentError, match="fit_link: argument 'strategy' must be "
                       r"None or one of \('push', 'pull', 'mirror', 'alternate'\)"):
        fit_link(graph, epochs=0, strategy="nosuch")
    with pytest.raises(spsample.ArgumentError, match="fit_node: argument 'strategy'"):
        fit_node(None, epochs=0, strategy="nosuch")
    feats = np.random.default_rng(1).random((graph.num_nodes, 4), dtype=np.float32)
    result = fit_link(graph, epochs=1, hidden=8, out=8, batch_size=256, strategy="mirror",
                      features=feats)
    assert len(result["history"]) == 1 and 0.0 <= result["test_auc"] <= 1.0


# ------------------------------------------------------------------ the command line, planner
def test_spsample_train_offers_the_registered_strategies(capsys):
    parser = build_parser("train")
    args = parser.parse_args(["train", "--strategy", "alternate"])
    assert args.strategy == "alternate"
    with pytest.raises(SystemExit):
        build_parser("train").parse_args(["train", "--strategy", "nosuch"])
    assert "choose from 'push', 'pull', 'mirror', 'alternate'" in capsys.readouterr().err
    train = next(a for a in build_parser("train")._actions if a.dest == "command")
    text = " ".join(train.choices["train"].format_help().split())
    assert "--strategy {push,pull,mirror,alternate}" in text
    assert "alternate: push odd hops, pull even ones" in text


def test_the_planner_weighs_every_registered_strategy(tmp_path):
    from spsample.distributed._plan import Machine, Workload, plan, sampling_bytes

    w = Workload.like(100000, 2000000, sampler="nodewise", fanouts=(5, 5), batch_size=256)
    machine = Machine.load(Path(spsample.__file__).parent / "data" / "machines"
                           / "perlmutter.json")
    result = plan(w, machine, 8)
    seen = {r["strategy"] for r in result["candidates"]}
    assert seen == {"push", "pull", "mirror", "alternate"}
    for row in result["candidates"]:
        push = sampling_bytes(w, 8, row["c"], row["k"], "push")
        pull = sampling_bytes(w, 8, row["c"], row["k"], "pull")
        want = {"push": push, "pull": pull, "mirror": push, "alternate": (push + pull) / 2}
        assert row["sampling_bytes"] == want[row["strategy"]]
    # ties (mirror = push) go to the strategy registered first
    assert result["best"]["strategy"] != "mirror"
    out = tmp_path / "plan.json"
    assert main(["plan", "--nodes", "100000", "--edges", "2000000", "--ranks", "8",
                 "--fanouts", "5,5", "--json", str(out)]) == 0
    cands = json.loads(out.read_text())["candidates"]
    assert {r["strategy"] for r in cands} == {"push", "pull", "mirror", "alternate"}


def test_the_command_line_imports_strategy_plugins(tmp_path):
    """A module named in ``SPSAMPLE_PLUGINS`` that registers a strategy: ``spsample train``
    offers it. (Serial only: one subprocess, not one per rank.)"""
    if launched_under_mpi():
        pytest.skip("runs in the serial suite")
    (tmp_path / "my_strategy.py").write_text(
        "from spsample.distributed import register_strategy, registered_strategy\n"
        "push = registered_strategy('push')\n"
        "register_strategy('plugged', push.modes, sampling_bytes=push.sampling_bytes,\n"
        "                  description='push, from a plugin')\n")
    env = dict(os.environ, SPSAMPLE_PLUGINS="my_strategy",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-m", "spsample", "train", "--help"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    text = " ".join(run.stdout.split())
    assert "--strategy {push,pull,plugged}" in text and "plugged: push, from a plugin" in text
