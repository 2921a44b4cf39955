"""Library calls that raised raw tracebacks (or silently did the wrong thing) now raise typed
errors naming the argument (issue 17, item 11): file attributes, interrupted saves, HDF5
feature sources, complex matrices, non-bool flags, checkpoints."""

import os
import signal
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

import spsample
from spsample import io
from spsample._errors import (
    ArgumentError,
    ArgumentTypeError,
    DatasetError,
    ResourceLimitError,
    SpsampleError,
)

import crafted


# ---------------------------------------------------------------------- load() attributes
@pytest.mark.parametrize("attr, value, match", [
    ("num_nodes", "forty", "num_nodes='forty' disagrees"),
    ("num_nodes", 41, "num_nodes=41 disagrees"),
    ("num_nodes", np.array([40, 40]), "disagrees with /graph/indptr"),
    ("version", "one", "version='one'"),
    ("version", 1.5, "version=1.5"),
    ("version", np.array([1, 1]), "not an spsample dataset"),
    ("name", 7, "name=7 must be a string"),
])
def test_load_bad_attributes_are_typed_and_close_the_file(tmp_path, attr, value, match):
    path = crafted.write_hdf5(tmp_path / "d.h5")
    with h5py.File(path, "a") as f:
        f.attrs[attr] = value
    with pytest.raises(DatasetError, match=match):
        spsample.load(path)
    with h5py.File(path, "w"):        # fails ("already open") if load leaked its handle
        pass


# ---------------------------------------------------------------------- interrupted saves
_SAVE_AND_DIE = textwrap.dedent("""
    import os, signal, sys
    import spsample
    from spsample.io import _hdf5

    real_write = _hdf5._write
    def write_then_die(*args, **kwargs):
        real_write(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)   # the job scheduler ends the job mid-save
    _hdf5._write = write_then_die
    spsample.save(spsample.io.load_cora(), sys.argv[1])
""")


def test_sigterm_during_save_leaves_no_temporary_file(tmp_path):
    dst = tmp_path / "cora.h5"
    proc = subprocess.run([sys.executable, "-c", _SAVE_AND_DIE, str(dst)],
                          env=dict(os.environ, PYTHONPATH=str(crafted.REPO)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_stale_temporary_files_of_dead_processes_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".d.h5.{dead.pid}.tmp"
    stale.write_bytes(b"half a file")
    alive = tmp_path / f".d.h5.{os.getppid()}.tmp"     # a running process's: left alone
    alive.write_bytes(b"in progress")
    spsample.save(io.load(crafted.write_hdf5(tmp_path / "src.h5")), tmp_path / "d.h5")
    assert not stale.exists() and alive.exists()
    assert spsample.load(tmp_path / "d.h5").num_nodes == 40


# ---------------------------------------------------------------------- HDF5 feature sources
def _features_file(tmp_path, **create):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("features", **create)
    return path


@pytest.mark.parametrize("create, error, match", [
    (dict(data=np.arange(5.0)), ArgumentError, "2-dimensional"),
    (dict(data=np.array([[b"a", b"b"]] * 3)), ArgumentTypeError, "real numbers"),
    (dict(shape=(2**30, 4), dtype=np.float32, chunks=(1024, 4)), DatasetError,
     "0 of its 1,048,576 chunks"),
])
def test_hdf5_feature_source_shape_type_and_presence(tmp_path, create, error, match):
    pytest.importorskip("torch")
    from spsample.loader import HDF5Features

    path = _features_file(tmp_path, **create)
    with pytest.raises(error, match=match):
        HDF5Features(path)
    with h5py.File(path, "w"):        # the failed source closed its file
        pass


def test_hdf5_feature_source_corrupt_or_truncated(tmp_path):
    pytest.importorskip("torch")
    from spsample.loader import HDF5Features

    good = crafted.write_hdf5(tmp_path / "good.h5", compression=None)
    data = good.read_bytes()
    (tmp_path / "noise.h5").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(DatasetError, match="'source' is not a readable HDF5 file"):
        HDF5Features(tmp_path / "noise.h5")
    failures = 0
    for cut in (len(data) - 700, len(data) - 400, len(data) // 2):
        (tmp_path / "cut.h5").write_bytes(data[:cut])
        try:
            source = HDF5Features(tmp_path / "cut.h5")
            rows = source.fetch(np.arange(40))
            source.close()
        except SpsampleError:
            failures += 1
            continue
        assert rows.shape == (40, 6)               # whatever was still readable
    assert failures >= 1


# ---------------------------------------------------------------------- graphs
@pytest.mark.parametrize("matrix", [sp.csr_matrix(np.array([[0, 1 + 2j], [1j, 0]])),
                                    sp.csr_matrix(np.array([[0, 1 + 0j], [1, 0]]))])
def test_from_scipy_refuses_complex_matrices(matrix):
    with pytest.raises(ArgumentTypeError, match="'matrix' must hold real numbers"):
        spsample.Graph.from_scipy(matrix)


@pytest.mark.parametrize("flag", ["no", "False", 0, None, 1.0])
def test_from_edge_index_symmetrize_must_be_a_bool(flag):
    with pytest.raises(ArgumentTypeError, match="'symmetrize' must be True or False"):
        spsample.Graph.from_edge_index([0, 1], [1, 2], symmetrize=flag)
    g = spsample.Graph.from_edge_index([0, 1], [1, 2], symmetrize=False)
    assert g.num_edges == 2


def test_from_edge_index_checks_memory_for_num_nodes(monkeypatch):
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "1M")
    with pytest.raises(ResourceLimitError, match="'num_nodes' would need"):
        spsample.Graph.from_edge_index([0], [1], num_nodes=10**6)


# ---------------------------------------------------------------------- training
@pytest.fixture
def tiny():
    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    g = spsample.Graph.from_edge_index(rng.integers(0, 60, 300), rng.integers(0, 60, 300),
                                       num_nodes=60, symmetrize=True)
    return io.Dataset(g, features=rng.random((60, 5)).astype(np.float32),
                      labels=rng.integers(0, 3, 60), name="tiny")


SMALL = dict(hidden=4, batch_size=16, eval_batch_size=64, fanouts=(3, 3), epochs=1,
             pipeline=False)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("name", ["lr", "weight_decay", "dropout"])
def test_train_config_refuses_non_finite_numbers(name, value):
    pytest.importorskip("torch")
    from spsample.train import TrainConfig

    with pytest.raises(ArgumentError, match=f"'{name}' must be a finite"):
        TrainConfig(**{name: value})


def test_train_config_refuses_an_unknown_strategy():
    pytest.importorskip("torch")
    from spsample.train import TrainConfig

    with pytest.raises(ArgumentError, match="'strategy'"):
        TrainConfig(strategy="sideways")


def test_train_order_owner_needs_sharded_data(tiny):
    pytest.importorskip("torch")
    from spsample.train import TrainConfig, Trainer

    with pytest.raises(ArgumentError, match="'order'"):
        TrainConfig(order="sorted")
    with pytest.raises(ArgumentError, match="'order'.*sharded graph"):
        Trainer(tiny, **dict(SMALL, order="owner"))


def test_fit_checks_the_checkpoint_path_before_training(tiny, tmp_path):
    from spsample.train import Trainer

    trainer = Trainer(tiny, **SMALL)
    with pytest.raises(ArgumentError, match="'checkpoint' is in a directory that does not"):
        trainer.fit(checkpoint=tmp_path / "missing" / "c.pt")
    assert trainer.history == [] and trainer.epoch == 0


def _checkpoint(tiny, tmp_path):
    from spsample.train import Trainer

    path = tmp_path / "c.pt"
    Trainer(tiny, **SMALL).fit(checkpoint=path)
    return path


@pytest.mark.parametrize("damage, match", [
    ("empty", "not a readable spsample checkpoint"),
    ("truncated", "not a readable spsample checkpoint"),
    ("text", "not a readable spsample checkpoint"),
    ("foreign", "not an spsample training checkpoint"),
    ("no_model", "lacks the entry 'model'"),
    ("bad_epoch", "'epoch' of type str"),
    ("wrong_model", "model or optimizer that does not fit"),
])
def test_resume_from_a_damaged_checkpoint_is_typed(tiny, tmp_path, damage, match):
    import torch

    from spsample.train import Trainer

    path = _checkpoint(tiny, tmp_path)
    data = path.read_bytes()
    state = torch.load(path, weights_only=True)
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "text":
        path.write_text("epoch 3\n")
    elif damage == "foreign":
        torch.save({"state_dict": state["model"]}, path)
    elif damage == "no_model":
        del state["model"]
        torch.save(state, path)
    elif damage == "bad_epoch":
        torch.save({**state, "epoch": "3"}, path)
    elif damage == "wrong_model":
        state["model"] = {k: v[:1] for k, v in state["model"].items()}
        torch.save(state, path)
    trainer = Trainer(tiny, **SMALL)
    with pytest.raises(ArgumentError, match=match):
        trainer.load_checkpoint(path)
