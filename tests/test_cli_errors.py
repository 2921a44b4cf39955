"""The command line on bad input and in a new user's hands (issue 17, items 11, 12, 15, 17):
one-line errors naming the flag, checked before any work; no source overwritten; formats
detected; honest output lines."""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import spsample
from spsample.cli import main

import crafted


def run_cli(argv, capsys):
    """``(exit status, stdout, stderr)`` of ``spsample ARGV``."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err, command, flag):
    assert err.startswith(f"spsample {command}: error: ") and len(err.splitlines()) == 1, err
    assert f"'{flag}'" in err, err
    assert f"error: spsample {command}: " not in err, err           # the prefix once


@pytest.mark.parametrize("argv, flag", [
    (["train", "--epochs", "1", "--resume", "missing.pt"], "--resume"),
    (["train", "--epochs", "1", "--metrics", "no/such/dir/m.json"], "--metrics"),
    (["train", "--epochs", "1", "--permutation", "p.npz"], "--permutation"),
    (["sample", "nonexistent.h5"], "dataset"),
    (["sample", "--json", "no/such/dir/x.json"], "--json"),
])
def test_error_lines_name_the_command_once(tmp_path, capsys, monkeypatch, argv, flag):
    """``spsample train: error: spsample train: ...`` was printed for the command's own
    checks: the prefix appears once."""
    if argv[0] == "train":
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"spsample {argv[0]}: error: "), err
    assert not err.startswith(f"spsample {argv[0]}: error: spsample "), err
    assert f"'{flag}'" in err, err


# ---------------------------------------------------------------------- item 11: flags
@pytest.mark.parametrize("flag", ["--metrics", "--checkpoint"])
def test_train_checks_outputs_before_training(tmp_path, capsys, flag):
    pytest.importorskip("torch")
    code, out, err = run_cli(["train", "--epochs", "1", flag, tmp_path / "no" / "x"], capsys)
    assert code == 2 and out == ""                              # nothing trained
    assert_one_line_error(err, "train", flag)
    assert "directory that does not exist" in err


@pytest.mark.parametrize("task", ["node", "link"])
@pytest.mark.parametrize("flag, value", [("--neg-ratio", "nan"), ("--neg-ratio", "-3"),
                                         ("--neg-ratio", "inf"), ("--eval-negatives", "0"),
                                         ("--eval-negatives", "-1")])
def test_train_checks_the_link_numbers_whatever_the_task(capsys, task, flag, value):
    """Issue 27 (every flag validated): with node classification (the default task)
    ``--neg-ratio nan`` or ``--eval-negatives -1`` were accepted and ignored."""
    pytest.importorskip("torch")
    code, out, err = run_cli(["train", "--epochs", "1", "--task", task, flag, value], capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, "train", flag)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_train_refuses_non_finite_learning_rates(capsys, value):
    pytest.importorskip("torch")
    code, out, err = run_cli(["train", "--epochs", "1", f"--lr={value}"], capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, "train", "--lr")


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated", b"not a checkpoint\n"])
def test_train_resume_from_a_bad_file(tmp_path, capsys, content):
    pytest.importorskip("torch")
    path = tmp_path / "c.pt"
    path.write_bytes(content)
    code, out, err = run_cli(["train", "--epochs", "1", "--resume", path], capsys)
    assert code == 2
    assert_one_line_error(err, "train", "--resume")
    assert "not a readable spsample checkpoint" in err
    code, out, err = run_cli(["train", "--epochs", "1", "--resume", tmp_path / "x"], capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, "train", "--resume")


@pytest.mark.parametrize("argv, flag", [
    (["--seed", "-1"], "--seed"),
    (["--seed", str(2**64)], "--seed"),
    (["--max-batches", "-3"], "--max-batches"),
    (["--max-batches", "0"], "--max-batches"),
    (["--batch-size", "0"], "--batch-size"),
    (["rmat:40"], "dataset"),
    (["rmat:x"], "dataset"),
])
def test_sample_flags_are_checked(capsys, argv, flag):
    code, out, err = run_cli(["sample", *argv], capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, "sample", flag)


def test_sample_rmat_scale_is_checked_against_memory(capsys, monkeypatch):
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "64M")
    code, out, err = run_cli(["sample", "rmat:20"], capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, "sample", "dataset")
    assert "would need 1.6 GiB" in err and "smaller rmat:SCALE" in err


def test_sample_checks_json_before_sampling(tmp_path, capsys):
    code, out, err = run_cli(["sample", "--json", tmp_path / "no" / "s.json"], capsys)
    assert code == 2 and out == ""
    assert_one_line_error(err, "sample", "--json")


# ---------------------------------------------------------------------- item 12: overwriting
def test_convert_never_replaces_its_source(tmp_path, capsys):
    src = tmp_path / "e.txt"
    src.write_text("0 1\n1 2\n")
    for extra in ([], ["--force"]):
        code, out, err = run_cli(["convert", src, src, *extra], capsys)
        assert code == 2 and "would overwrite the source" in err
        assert src.read_text() == "0 1\n1 2\n"
    link = tmp_path / "link.txt"
    os.link(src, link)                                          # the same file, another name
    code, out, err = run_cli(["convert", src, link, "--force"], capsys)
    assert code == 2 and src.read_text() == "0 1\n1 2\n"
    with pytest.raises(spsample.DatasetError, match="'dst' would overwrite the source"):
        spsample.convert(src, src)


def test_convert_needs_force_to_replace_an_existing_file(tmp_path, capsys):
    src = tmp_path / "e.txt"
    src.write_text("0 1\n1 2\n")
    dst = tmp_path / "notes.h5"
    dst.write_text("my notes")
    code, out, err = run_cli(["convert", src, dst], capsys)
    assert code == 2 and "--force" in err and dst.read_text() == "my notes"
    code, out, err = run_cli(["convert", src, dst, "--force"], capsys)
    assert code == 0 and spsample.load(dst).num_edges == 2


# ---------------------------------------------------------------------- item 15: CLI words
def test_unknown_format_names_the_flag(tmp_path, capsys):
    (tmp_path / "g.xyz").write_text("0 1\n")
    code, out, err = run_cli(["convert", tmp_path / "g.xyz", tmp_path / "g.h5"], capsys)
    assert code == 2 and "pass --format one of" in err and "format=" not in err


def test_reader_options_are_named_as_dash_o(tmp_path, capsys):
    folder = tmp_path / "musae"
    folder.mkdir()
    for prefix in ("DE", "ENGB"):
        (folder / f"{prefix}_edges.csv").write_text("from,to\n0,1\n")
        (folder / f"{prefix}.json").write_text('{"0": [0]}')
        (folder / f"{prefix}_target.csv").write_text("id,mature\n0,True\n1,False\n")
    code, out, err = run_cli(["convert", folder, tmp_path / "m.h5"], capsys)
    assert code == 2 and "argument '-o prefix=...' must be given" in err
    code, out, err = run_cli(["convert", folder, tmp_path / "m.h5", "-o", "prefix=DE"], capsys)
    assert code == 0 and "DE: 2 nodes" in out


def test_csv_edge_lists_are_detected_and_read(tmp_path, capsys):
    path = tmp_path / "edges.csv"
    path.write_text("source,target\n0,1\n1,2\n2,0\n")
    assert spsample.io.detect_format(path) == "edge_list"
    code, out, err = run_cli(["convert", path, tmp_path / "e.h5"], capsys)
    assert code == 0, err
    assert spsample.load(tmp_path / "e.h5").num_edges == 3
    gz = tmp_path / "edges.csv.gz"
    with gzip.open(gz, "wt") as f:
        f.write("0,1\n1,2\n")
    assert spsample.io.from_edge_list(gz).num_edges == 2


def test_comma_separated_text_file_gets_a_hint(tmp_path, capsys):
    path = tmp_path / "edges.txt"
    path.write_text("0,1\n1,2\n")
    code, out, err = run_cli(["convert", path, tmp_path / "e.h5"], capsys)
    assert code == 2 and "pass -o delimiter=','" in err
    code, out, err = run_cli(["convert", path, tmp_path / "e.h5", "-o", "delimiter=,"], capsys)
    assert code == 0 and spsample.load(tmp_path / "e.h5").num_edges == 2


def test_folders_holding_one_dataset_file_are_detected(tmp_path, capsys):
    folder = tmp_path / "gnnbench"
    folder.mkdir()
    crafted.write_gnnbench(folder / "cora.npz")
    (folder / "README.md").write_text("from shchur/gnn-benchmark")
    assert spsample.io.detect_format(folder) == "gnnbench"
    code, out, err = run_cli(["convert", folder, tmp_path / "g.h5"], capsys)
    assert code == 0 and "cora: 4 nodes" in out
    crafted.write_gnnbench(folder / "citeseer.npz")
    code, out, err = run_cli(["convert", folder, tmp_path / "h.h5"], capsys)
    assert code == 2 and "holding 2 dataset files (citeseer.npz, cora.npz)" in err


@pytest.mark.parametrize("command", ["train", "sample"])
def test_train_and_sample_on_raw_data_say_convert_first(tmp_path, capsys, command):
    if command == "train":
        pytest.importorskip("torch")
    folder = crafted.write_planetoid(tmp_path / "planetoid")
    raw = tmp_path / "edges.txt"
    raw.write_text("0 1\n")
    for target in (folder, raw):
        code, out, err = run_cli([command, target], capsys)
        assert code == 2 and out == ""
        assert len(err.splitlines()) == 1 and "run `spsample convert" in err, err


# ---------------------------------------------------------------------- item 17: smaller
def test_sample_layerwise_defaults_are_nodes_per_layer(tmp_path, capsys):
    path = tmp_path / "s.json"
    code, out, err = run_cli(["sample", "--sampler", "ladies", "--max-batches", "1",
                              "--json", path], capsys)
    assert code == 0, err
    stats = json.loads(path.read_text())
    assert stats["fanouts"] == [1024, 1024, 1024]
    assert "1 minibatch of" in out and "1 minibatches" not in out


def test_help_states_every_default(capsys):
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--sampler", "--seed SEED", "--seeds"):
        after = text.split(flag, 2)[-1]
        assert "(default:" in after.split(" --")[0], flag


def test_quiet_keeps_epoch_lines_and_bars_need_a_terminal(capsys):
    pytest.importorskip("torch")
    code, out, err = run_cli(["train", "--epochs", "2", "--hidden", "8", "--quiet"], capsys)
    assert code == 0 and out.count("\nepoch ") == 2
    code, out, err = run_cli(["train", "--epochs", "1", "--hidden", "8"], capsys)
    assert code == 0 and "it/s" not in err and "batch/s" not in err   # stderr is no terminal


def test_epoch_lines_report_the_sampling_rate(capsys):
    pytest.importorskip("torch")
    from spsample.train import Trainer

    trainer = Trainer(spsample.io.load_cora(), epochs=1, hidden=8, pipeline=False)
    entry = trainer.train_epoch()
    rate = entry["sampled_edges"] / entry["sample_seconds"]
    assert entry["sampling_edges_per_s"] == pytest.approx(rate)
    # the rate of the sampling phase alone, which is part of the epoch: not the end-to-end
    # rate (no ratio of times asserted: those move with the machine's load)
    assert 0 < entry["sample_seconds"] <= entry["seconds"]
    assert entry["sampling_edges_per_s"] != pytest.approx(entry["sampled_edges"] /
                                                          entry["seconds"])


def test_zero_epochs_say_so(capsys):
    pytest.importorskip("torch")
    code, out, err = run_cli(["train", "--epochs", "0"], capsys)
    assert code == 0 and "no epoch trained (--epochs 0)" in out
    assert "best validation" not in out


def test_sample_into_a_closed_pipe_ends_quietly():
    """``spsample sample ... | head -1``: the reader is gone before the output is written
    (``true`` reads nothing and exits at once, which makes the race certain)."""
    proc = subprocess.run(f"{sys.executable} -m spsample sample rmat:10 --batch-size 64 | true",
                          shell=True, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(crafted.REPO)))
    assert proc.stderr == "", proc.stderr


def test_convert_warns_when_most_nodes_lack_features(tmp_path, capsys):
    parts = crafted.planetoid_parts()
    del parts["allx"]
    folder = crafted.write_planetoid(tmp_path / "p", parts)
    code, out, err = run_cli(["convert", folder, tmp_path / "p.h5"], capsys)
    assert code == 0
    assert "spsample convert: warning: " in err and "only 5 nodes have features" in err


def test_convert_says_whether_the_graph_is_directed(tmp_path, capsys):
    path = tmp_path / "ego.txt"
    path.write_text("0 1\n0 2\n1 2\n")                 # undirected, each edge once
    code, out, err = run_cli(["convert", path, tmp_path / "a.h5"], capsys)
    assert code == 0 and "3 edges (directed)" in out
    assert "no edge appears in both directions" in err and "-o directed=false" in err
    code, out, err = run_cli(["convert", path, tmp_path / "b.h5", "-o", "directed=false"],
                             capsys)
    assert code == 0 and "6 edges (undirected" in out and err == ""


@pytest.mark.datasets
def test_real_pubmed_and_ego_facebook_messages(shared_datasets, tmp_path, capsys):
    code, out, err = run_cli(["convert", shared_datasets / "planetoid-pubmed",
                              tmp_path / "pubmed.h5"], capsys)
    assert code == 0 and "18,657 of the 19,717 nodes" in err and "1,060" in err
    code, out, err = run_cli(["convert", shared_datasets / "snap-ego-facebook",
                              tmp_path / "fb.h5"], capsys)
    assert code == 0 and "88234 edges (directed)" in out and "directed=false" in err
    assert np.isfinite(spsample.load(tmp_path / "fb.h5").num_edges)


@pytest.mark.parametrize("extra", [[], ["--task", "link"], ["--task", "link", "--fanouts", "5"],
                                   ["HETERO"]])
def test_a_model_too_wide_names_the_hidden_flag(tmp_path, capsys, extra):
    """``spsample train --hidden 10**11`` said ``argument 'hidden_channels'`` (and ``use a
    smaller hidden_channels``), the models' argument, not the flag the user typed; a one-hop
    link encoder named ``out_channels`` (its output is ``--hidden`` wide too)."""
    pytest.importorskip("torch")
    if extra == ["HETERO"]:
        extra = [crafted.write_hetero_hdf5(tmp_path / "hetero.h5")]
    code, out, err = run_cli(["train", *extra, "--epochs", "1", "--hidden", "100000000000",
                              "--quiet"], capsys)
    assert code == 2
    assert_one_line_error(err, "train", "--hidden")
    assert "use a smaller --hidden" in err and "channels" not in err, err


def test_the_python_api_still_names_hidden_channels():
    pytest.importorskip("torch")
    from spsample.train import GraphSAGE

    with pytest.raises(spsample.ResourceLimitError, match="argument 'hidden_channels'"):
        GraphSAGE(16, 10**11, 4)


@pytest.mark.parametrize("flag, value", [("--neg-ratio", "0"), ("--neg-ratio", "-3"),
                                         ("--eval-negatives", "0"),
                                         ("--eval-batch-size", "0"),
                                         ("--eval-batch-size", "-2")])
def test_both_train_checks_refuse_the_link_numbers_with_one_message(capsys, flag, value):
    """``spsample train``'s flag check and the tasks' check (link, heterogeneous) had each
    their copy of the ``--neg-ratio`` / ``--eval-negatives`` checks (``--eval-batch-size``
    only in the second): one function now, so the same values fail with the same message
    whichever runs first."""
    from spsample.cli import _tasks, _train, build_parser

    assert _train.check_link_numbers is _tasks.check_link_numbers
    messages = []
    for task in ("node", "link"):
        args = build_parser("train").parse_args(["train", "--task", task, flag, value])
        for check in (_train._check_flags, lambda a: _tasks._check(a, None, False)):
            with pytest.raises(spsample.ArgumentError) as exc:
                check(args)
            messages.append(str(exc.value))
    assert len(set(messages)) == 1, messages
    bound, got = ("> 0", float(value)) if flag == "--neg-ratio" else (">= 1", int(value))
    assert messages[0] == f"spsample train: argument '{flag}' must be {bound} (got {got})"
    pytest.importorskip("torch")
    for task in ("node", "link"):               # and so does the command
        code, out, err = run_cli(["train", "--epochs", "1", "--task", task, flag, value],
                                 capsys)
        assert code == 2 and out == ""
        assert err == f"spsample train: error: {messages[0][len('spsample train: '):]}\n"
