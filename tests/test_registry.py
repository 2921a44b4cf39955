"""One registration makes a sampler reachable everywhere: ``spsample sample``,
``spsample train``, ``Trainer`` and ``spsample plan`` (and the PyG adapter's capability check).

The sampler is a user's composition written the README's way (a ``NodeWise`` subclass whose
probabilities prefer low-degree neighbours), registered in this module.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

import spsample
from spsample import primitives as prim
from spsample.cli import main
from spsample.samplers import entry_of, names, register, registered, unregister

NAME = "lowdegree"
MADE = []           # every LowDegreeFirst built, to see which sampler a command ran


class LowDegreeFirst(spsample.NodeWise):
    """Node-wise, entry ``(v, u)`` weighted by ``1 / (1 + deg(u))``."""

    def __init__(self, fanouts):
        super().__init__(fanouts, weighted=True)
        MADE.append(self)

    def check_graph(self, graph):        # weighted by the vector, not by edge weights
        pass

    def probabilities(self, graph, Q, ctx):
        return prim.gather(graph, Q).scale_columns(1.0 / (1.0 + graph.degree()))


@pytest.fixture
def lowdegree():
    """``LowDegreeFirst`` registered as ``lowdegree`` for the test, forgotten after it."""
    MADE.clear()
    entry = register(NAME, LowDegreeFirst, fanouts=(6, 3), train_fanouts=(4, 4),
                     description="low-degree neighbours first", replace=True)
    yield entry
    unregister(NAME)


def test_the_built_ins_are_registered_with_their_capabilities():
    # first, in this order (the README's example registers one more in this process)
    assert names()[:5] == ("nodewise", "labor", "ladies", "fastgcn", "randomwalk")
    assert names(trainable=True)[:4] == ("nodewise", "labor", "ladies", "fastgcn")
    assert names(layerwise=True)[:2] == ("ladies", "fastgcn")
    assert names(walk=True)[:1] == ("randomwalk",)
    assert not registered("randomwalk").trainable and registered("nodewise").heterogeneous
    assert registered("nodewise").fanouts == (15, 10, 5)
    assert registered("ladies").train_fanouts == (256, 256)
    assert entry_of(spsample.LADIES([4])).name == "ladies"
    assert entry_of(LowDegreeFirst([2])).name == "nodewise"       # nearest registered base


def test_a_registered_sampler_runs_in_spsample_sample(lowdegree, tmp_path):
    out = tmp_path / "s.json"
    assert main(["sample", "cora", "--sampler", NAME, "--batch-size", "64",
                 "--max-batches", "3", "--json", str(out)]) == 0
    stats = json.loads(out.read_text())
    assert stats["sampler"] == NAME and stats["fanouts"] == [6, 3]
    assert [type(s) for s in MADE] == [LowDegreeFirst]
    # the counts are those of the class itself, sampled directly
    ds = spsample.io.load_cora()
    order = np.random.default_rng([0, 0]).permutation(ds.train_idx)[:3 * 64]
    direct = spsample.sample(ds.graph, order, sampler=LowDegreeFirst([6, 3]), batch_size=64)
    assert stats["sampled_edges"] == sum(int(sum(mb.num_sampled_edges)) for mb in direct)


def test_a_registered_sampler_trains_in_spsample_train(lowdegree, tmp_path, capsys):
    pytest.importorskip("torch")
    path = tmp_path / "m.json"
    assert main(["train", "--sampler", NAME, "--epochs", "1", "--hidden", "8",
                 "--batch-size", "128", "--metrics", str(path), "--quiet"]) == 0
    metrics = json.loads(path.read_text())
    assert metrics["config"]["sampler"] == NAME and metrics["config"]["fanouts"] == [4, 4]
    assert metrics["epochs"] == 1 and np.isfinite(metrics["loss"])
    assert {type(s) for s in MADE} == {LowDegreeFirst}
    assert "GraphSAGE on cora" in capsys.readouterr().out


def test_a_registered_sampler_is_accepted_by_the_trainer(lowdegree):
    pytest.importorskip("torch")
    from spsample.train import SAMPLERS, Trainer, make_sampler

    assert NAME in SAMPLERS and NAME in tuple(SAMPLERS)
    t = Trainer(spsample.io.load_cora(), sampler=NAME, epochs=1, hidden=8, batch_size=256,
                pipeline=False)
    assert isinstance(t.train_loader.sampler, LowDegreeFirst)
    assert t.config.fanouts == (4, 4) and t.config.model_class == "sage"
    assert isinstance(make_sampler(NAME, [2]), LowDegreeFirst)
    assert t.fit()["epochs"] == 1
    t.close()


def test_a_registered_sampler_is_planned(lowdegree, tmp_path, capsys):
    from spsample.distributed._plan import Workload

    assert main(["plan", "--nodes", "100000", "--edges", "2000000", "--ranks", "4",
                 "--sampler", NAME, "--fanouts", "5,5"]) == 0
    out = capsys.readouterr().out
    assert f"({NAME}, measured on" in out and "recommended:" in out
    assert MADE and all(type(s) is LowDegreeFirst for s in MADE)
    w = Workload.like(10000, 100000, sampler=NAME, fanouts=(5, 5), batch_size=64)
    assert w.sampler == NAME and w.draws == 0.0


def test_unregistered_names_are_refused_everywhere(capsys):
    unregister(NAME)                # also the README's, when its example ran before
    pytest.importorskip("torch")
    from spsample.distributed._plan import Workload
    from spsample.train import TrainConfig

    for command in ("sample", "train", "plan"):
        with pytest.raises(SystemExit) as exc:                 # argparse's usage error
            main([command, "--sampler", NAME])
        assert exc.value.code == 2
        assert f"invalid choice: '{NAME}'" in capsys.readouterr().err
    with pytest.raises(spsample.ArgumentError, match="argument 'sampler' must be one of"):
        TrainConfig(sampler=NAME)
    with pytest.raises(spsample.ArgumentError, match="argument 'sampler' must be one of"):
        Workload.like(1000, 10000, sampler=NAME)
    with pytest.raises(spsample.ArgumentError, match="argument 'sampler'"):
        TrainConfig(sampler="randomwalk")               # a walk is not for training


def test_register_checks_its_arguments():
    with pytest.raises(spsample.ArgumentError, match="registered already"):
        register("nodewise", LowDegreeFirst, fanouts=(2,))
    with pytest.raises(spsample.ArgumentError, match="argument 'name'"):
        register("Bad Name", LowDegreeFirst, fanouts=(2,))
    with pytest.raises(spsample.ArgumentError, match="argument 'fanouts' is required"):
        register("nofanouts", LowDegreeFirst)
    with pytest.raises(spsample.ArgumentError, match="argument 'fanouts'"):
        register("zero", LowDegreeFirst, fanouts=(0,))
    assert "zero" not in names() and "nofanouts" not in names()


def test_a_registered_layerwise_sampler_is_treated_as_one():
    class Wide(spsample.LADIES):
        pass

    @register("wide", fanouts=(32, 32), train_fanouts=(16, 16), layerwise=True)
    class Narrow(spsample.NodeWise):      # claims layer-wise: every consumer must agree
        pass

    try:
        from spsample.distributed._plan import LAYERWISE
        from spsample.train._trainer import TrainConfig

        assert "wide" in LAYERWISE and entry_of(Narrow([2])).layerwise
        assert entry_of(Wide([2])).name == "ladies"
        pytest.importorskip("torch")
        assert TrainConfig(sampler="wide").model_class == "gcn"
    finally:
        unregister("wide")


def test_the_command_line_imports_plugins(tmp_path):
    """``SPSAMPLE_PLUGINS`` names modules that register samplers for the command line."""
    (tmp_path / "my_plugin.py").write_text(
        "import spsample\n"
        "from spsample.samplers import register\n"
        "register('plugged', spsample.NodeWise, fanouts=(3, 2))\n")
    env = dict(__import__("os").environ, SPSAMPLE_PLUGINS="my_plugin",
               PYTHONPATH=f"{tmp_path}:{__import__('os').environ.get('PYTHONPATH', '')}")
    run = subprocess.run([sys.executable, "-m", "spsample", "sample", "cora", "--sampler",
                          "plugged", "--max-batches", "1"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "plugged 3,2" in run.stdout
    env["SPSAMPLE_PLUGINS"] = "no_such_plugin_module"
    run = subprocess.run([sys.executable, "-m", "spsample", "sample"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "SPSAMPLE_PLUGINS: cannot import module 'no_such_plugin_module'" in run.stderr
