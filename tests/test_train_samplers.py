"""Every sampler trains (issue 20): ``--sampler nodewise|labor|ladies|fastgcn`` from the CLI
and from ``Trainer``, each with its model (GraphSAGE for node-wise and LABOR, the
importance-weighted GCN for LADIES and FastGCN), lowers the loss on the embedded Cora."""

import json

import pytest

from spsample import io
from spsample.cli import main

torch = pytest.importorskip("torch")

from spsample.train import GCN, SAMPLERS, GraphSAGE, Trainer  # noqa: E402

FANOUTS = {"nodewise": (10, 10), "labor": (10, 10), "ladies": (128, 128),
           "fastgcn": (128, 128)}
MODEL = {"nodewise": GraphSAGE, "labor": GraphSAGE, "ladies": GCN, "fastgcn": GCN}


@pytest.fixture(autouse=True)
def restore_torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_every_sampler_has_a_model():
    assert set(SAMPLERS) == set(MODEL)


@pytest.mark.parametrize("sampler", sorted(FANOUTS))
def test_each_sampler_trains_from_the_trainer(sampler):
    trainer = Trainer(io.load_cora(), sampler=sampler, fanouts=FANOUTS[sampler], epochs=4,
                      hidden=32, lr=0.03, batch_size=35, eval_batch_size=500)
    assert type(trainer.model) is MODEL[sampler]
    metrics = trainer.fit()
    steps = [loss for e in trainer.history for loss in e["losses"]]
    assert len(steps) == 16                                   # 140 seeds / 35, 4 epochs
    losses = metrics["losses"]                                # epoch means
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.97 * losses[0] and sum(steps[-4:]) < sum(steps[:4])
    assert metrics["val_accuracy"] > 1 / 7                    # better than chance
    entry = trainer.history[-1]
    for phase in ("sample", "fetch", "forward", "backward", "optimizer"):
        assert entry[f"{phase}_seconds"] > 0


@pytest.mark.parametrize("sampler", sorted(FANOUTS))
def test_each_sampler_trains_from_the_cli(sampler, tmp_path, capsys):
    path = tmp_path / "m.json"
    fanouts = ",".join(map(str, FANOUTS[sampler]))
    assert main(["train", "--sampler", sampler, "--fanouts", fanouts, "--epochs", "3",
                 "--hidden", "32", "--lr", "0.03", "--batch-size", "35", "--metrics",
                 str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    name = MODEL[sampler].__name__
    assert out.startswith(f"{name} on cora") and f"{sampler} {fanouts}" in out
    metrics = json.loads(path.read_text())
    assert metrics["config"]["sampler"] == sampler
    assert metrics["losses"][-1] < metrics["losses"][0]
