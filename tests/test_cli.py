"""The ``spsample train`` and ``spsample sample`` commands, run through ``spsample.cli.main``."""

import json

import pytest

import spsample
from spsample import io
from spsample.cli import main

pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def one_torch_thread():
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)             # `spsample train --threads` sets it


def test_train_on_embedded_cora_writes_metrics(tmp_path, capsys):
    path = tmp_path / "metrics.json"
    assert main(["train", "--epochs", "2", "--hidden", "16", "--metrics", str(path),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "GraphSAGE on cora: 2708 nodes" in out and "test accuracy" in out
    metrics = json.loads(path.read_text())
    assert metrics["epochs"] == 2 and metrics["dataset"] == "cora"
    assert 0.0 <= metrics["test_accuracy"] <= 1.0
    assert metrics["seconds"] > 0 and metrics["sampled_edges_per_s"] > 0
    assert metrics["config"]["hidden"] == 16 and metrics["config"]["fanouts"] == [10, 10]
    assert len(metrics["losses"]) == 2


def test_train_progress_bars_and_checkpoint_resume(tmp_path, capsys, monkeypatch):
    ckpt, m1, m2 = tmp_path / "c.pt", tmp_path / "m1.json", tmp_path / "m2.json"
    common = ["train", "--epochs", "2", "--hidden", "8", "--batch-size", "64",
              "--fanouts", "5,5"]
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)   # bars only on a terminal
    assert main(common + ["--checkpoint", str(ckpt), "--metrics", str(m1)]) == 0
    err = capsys.readouterr().err
    assert "epoch 1/2" in err and "loss=" in err                  # tqdm bars on stderr
    common[2] = "3"
    assert main(common + ["--resume", str(ckpt), "--metrics", str(m2), "--quiet"]) == 0
    first, resumed = json.loads(m1.read_text()), json.loads(m2.read_text())
    assert resumed["epochs"] == 3 and resumed["losses"][:2] == first["losses"]


def test_train_layerwise_sampler_on_a_file(tmp_path, capsys):
    path = tmp_path / "cora.h5"
    io.save(io.load_cora(), path)
    assert main(["train", str(path), "--sampler", "ladies", "--fanouts", "64,64",
                 "--epochs", "1", "--hidden", "8", "--quiet", "--no-pipeline"]) == 0
    assert "test accuracy" in capsys.readouterr().out


def test_train_reports_bad_input(capsys):
    assert main(["train", "no-such-dataset", "--quiet"]) == 2
    assert "'dataset'" in capsys.readouterr().err
    assert main(["train", "--epochs", "1", "--batch-size", "0", "--quiet"]) == 2
    assert "'--batch-size'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--fanouts", "ten"])


@pytest.mark.parametrize("native", ["on", "off"])
def test_sample_prints_statistics(tmp_path, capsys, native):
    if native == "on" and not spsample.native.AVAILABLE:
        pytest.skip("native kernels not built")
    path = tmp_path / "stats.json"
    assert main(["sample", "--fanouts", "5,3", "--batch-size", "32", "--bulk-size", "2",
                 "--native", native, "--json", str(path)]) == 0
    out = capsys.readouterr().out
    stats = json.loads(path.read_text())
    assert stats["path"] == ("native" if native == "on" else "numpy")
    assert stats["batches"] == 5 and stats["seeds"] == 140               # Cora's train split
    assert stats["sampled_nodes_per_hop"][0] == 140
    assert sum(stats["sampled_edges_per_hop"]) == stats["sampled_edges"] > 0
    assert f"{stats['sampled_edges']:,d} edges" in out and f"({stats['path']} path" in out


def test_sample_paths_agree_and_rmat_works(tmp_path, capsys):
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for p, native in zip(paths, ["auto", "off"]):
        assert main(["sample", "rmat:9", "--max-batches", "2", "--batch-size", "64",
                     "--json", str(p), "--native", native]) == 0
    a, b = (json.loads(p.read_text()) for p in paths)
    assert a["sampled_edges_per_hop"] == b["sampled_edges_per_hop"]      # deterministic
    assert a["seeds"] == 128 and a["num_nodes"] == 512
