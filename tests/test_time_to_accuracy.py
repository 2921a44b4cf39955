"""experiments/time_to_accuracy.py: the bookkeeping that turns curves into the reported
numbers (target, time to target, ratios, when a configuration stops), on hand-made runs."""

import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "time_to_accuracy", Path(__file__).resolve().parents[1] / "experiments" / "time_to_accuracy.py")
tta = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(tta)


def run(config, accuracies, seconds_per_epoch):
    """A worker's result: validation accuracy after each epoch, evaluation at epoch 0."""
    curve = [dict(epoch=e, seconds=e * seconds_per_epoch, val_accuracy=a)
             for e, a in enumerate(accuracies)]
    epochs = [dict(epoch=e, seconds=seconds_per_epoch) for e in range(len(accuracies) - 1)]
    return dict(config=config, curve=curve, epochs=epochs, model="m",
                train_peak_rss_mb=100.0, process_peak_rss_mb=120.0)


def test_target_is_the_reference_accuracy_at_the_target_epoch_minus_the_tolerance():
    args = tta.parse_args(["--target-epoch", "2", "--tolerance", "0.01"])
    runs = [run("dgl:neighbor", [0.1, 0.5, 0.80, 0.9], 10.0),
            run("spsample:fastgcn", [0.1, 0.6, 0.79, 0.95], 2.0),
            run("spsample:ladies", [0.1, 0.2, 0.3, 0.4], 1.0)]
    summary = tta.summarize(runs, args)
    assert summary["target"] == pytest.approx(0.79)
    fast, ref = summary["configs"]["spsample:fastgcn"], summary["configs"]["dgl:neighbor"]
    assert ref["time_to_target"] == 20.0 and fast["time_to_target"] == 4.0
    assert fast["ratio_to_dgl_neighbor"] == pytest.approx(0.2)
    assert fast["epoch_ratio_to_dgl_neighbor"] == pytest.approx(0.2)
    assert ref["epochs_to_target"] == 2 and fast["epochs_to_target"] == 2
    assert fast["median_epoch_ratio_to_dgl_neighbor"] == pytest.approx(0.2)
    assert summary["configs"]["spsample:ladies"]["time_to_target"] is None
    assert summary["configs"]["spsample:ladies"]["ratio_to_dgl_neighbor"] is None


def test_stop_at_target_runs_the_reference_first_then_stops_the_others_at_its_target():
    args = tta.parse_args(["--stop-at-target", "--target-epoch", "2", "--tolerance", "0.01"])
    assert tta._stop_args(args, "dgl:neighbor", []) == ["--epochs", "2"]
    assert tta._stop_args(args, "spsample:labor", []) == []
    ref = run("dgl:neighbor", [0.1, 0.5, 0.80], 10.0)
    stop = tta._stop_args(args, "spsample:labor", [ref])
    assert stop[0] == "--stop-at" and float(stop[1]) == pytest.approx(0.79)
    worker = tta.parse_args(["--stop-at", stop[1]])
    assert not tta._reached(worker, [dict(val_accuracy=0.78)])
    assert tta._reached(worker, [dict(val_accuracy=0.80)])
    assert not tta._reached(tta.parse_args([]), [dict(val_accuracy=1.0)])
    assert tta._stop_args(tta.parse_args([]), "spsample:labor", [ref]) == []


def test_configurations_take_their_own_settings():
    args = tta.parse_args(["--fanouts", "15,10,5", "--batch-size", "1024"])
    cfg = tta.parse_config("spsample:nodewise@fanouts=10-5,batch=256,dense=1", args)
    assert cfg["fanouts"] == [10, 5] and cfg["layers"] == 2
    assert cfg["batch"] == 256 and cfg["dense"] == 1
    cfg = tta.parse_config("spsample:ladies", args)
    assert cfg["nodes"] == 4096 and cfg["layers"] == 3 and cfg["dense"] == 0


def test_a_repeat_that_never_reaches_the_target_counts_as_infinitely_late():
    args = tta.parse_args(["--target-epoch", "1", "--tolerance", "0.0"])
    runs = [run("dgl:neighbor", [0.1, 0.8, 0.9], 10.0), run("dgl:neighbor", [0.1, 0.8, 0.9], 10.0),
            run("dgl:neighbor", [0.1, 0.5, 0.6], 10.0), run("spsample:labor", [0.1, 0.5, 0.6], 1.0)]
    summary = tta.summarize(runs, args)
    ref = summary["configs"]["dgl:neighbor"]
    assert summary["target"] == pytest.approx(0.8)
    assert ref["time_to_target"] == 10.0 and ref["reached"] == "2/3"
    labor = summary["configs"]["spsample:labor"]
    assert labor["time_to_target"] is None and labor["reached"] == "0/1"
    assert labor["ratio_to_dgl_neighbor"] is None


def test_schedule_alternates_and_puts_every_reference_repeat_first_when_stopping():
    configs = ["spsample:labor", "dgl:neighbor", "dgl:labor"]
    assert tta.schedule(configs, 2, False) == [
        (0, "spsample:labor"), (0, "dgl:neighbor"), (0, "dgl:labor"),
        (1, "spsample:labor"), (1, "dgl:neighbor"), (1, "dgl:labor")]
    assert tta.schedule(configs, 2, True) == [
        (0, "dgl:neighbor"), (1, "dgl:neighbor"), (0, "spsample:labor"), (0, "dgl:labor"),
        (1, "spsample:labor"), (1, "dgl:labor")]
