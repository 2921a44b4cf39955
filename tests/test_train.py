"""spsample.train: GraphSAGE layers, the Trainer, checkpoint/resume, random splits."""

import numpy as np
import pytest

import spsample
from spsample import io
from spsample._errors import ArgumentError, ArgumentTypeError, DatasetError

torch = pytest.importorskip("torch")

from spsample.loader import SparseRows, have_pyg  # noqa: E402
from spsample.train import (GraphSAGE, TrainConfig, Trainer, parameter_checksum,  # noqa: E402
                            random_split)


@pytest.fixture(scope="module")
def planted():
    """A 600-node graph with 4 planted communities; features are noisy class indicators.

    Edges stay inside a community with probability 0.9, so neighbour averaging denoises the
    features and GraphSAGE learns the classes in a few epochs.
    """
    rng = np.random.default_rng(0)
    n, k, f = 600, 4, 16
    labels = rng.integers(0, k, n)
    src = rng.integers(0, n, 4000)
    same = rng.random(4000) < 0.9
    members = [np.flatnonzero(labels == c) for c in range(k)]
    dst = np.where(same, [rng.choice(members[labels[s]]) for s in src], rng.integers(0, n, 4000))
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=n, symmetrize=True)
    x = rng.random((n, f)).astype(np.float32)
    x[np.arange(n), labels] += 0.6
    return io.Dataset(g, features=x, labels=labels, name="planted")


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One torch thread (the loader's producer thread has the other core); restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


SMALL = dict(hidden=16, batch_size=48, eval_batch_size=200, fanouts=(5, 5), dropout=0.2,
             lr=0.01, normalize="none")


def run_losses(trainer):
    return [e["losses"] for e in trainer.history]


def params(model):
    return [p.detach().clone() for p in model.parameters()]


# ---------------------------------------------------------------------- model
@pytest.mark.skipif(not have_pyg(), reason="torch_geometric is not installed")
def test_pyg_and_builtin_layers_compute_the_same_function(planted):
    loader = spsample.Loader(planted, sampler=spsample.NodeWise([4, 4]), batch_size=32)
    bt = next(iter(loader))
    torch.manual_seed(0)
    pyg = GraphSAGE(16, 24, 4, num_layers=2, conv="pyg").eval()
    own = GraphSAGE(16, 24, 4, num_layers=2, conv="torch").eval()
    own.load_state_dict(pyg.state_dict())              # same parameter names and shapes
    assert pyg.uses_pyg and not own.uses_pyg
    assert torch.allclose(pyg(bt), own(bt), atol=1e-5)


def test_builtin_layer_projects_first_without_changing_the_result(planted):
    bt = next(iter(spsample.Loader(planted, sampler=spsample.NodeWise([4]), batch_size=32)))
    torch.manual_seed(1)
    wide = GraphSAGE(16, 4, 4, num_layers=1, conv="torch").eval()     # out < in: project first
    layer = wide.convs[0]
    le = bt.layer(0)
    x_src, x_dst = bt.x[:le.num_src], bt.x[:le.num_dst]
    agg = torch.zeros(le.num_dst, 16).index_add_(0, le.edge_index[1], x_src[le.edge_index[0]])
    deg = torch.bincount(le.edge_index[1], minlength=le.num_dst).clamp(min=1).unsqueeze(1)
    expected = layer.lin_l(agg / deg) + layer.lin_r(x_dst)
    assert torch.allclose(wide(bt), expected[:bt.batch_size], atol=1e-5)


def test_model_rejects_mismatched_batches(planted):
    bt = next(iter(spsample.Loader(planted, sampler=spsample.LADIES([30, 30]), batch_size=16)))
    with pytest.raises(ArgumentError, match="'batch'"):
        GraphSAGE(16, 8, 4, num_layers=3, conv="torch")(bt)
    if have_pyg():
        with pytest.raises(ArgumentError, match="'batch'"):
            GraphSAGE(16, 8, 4, num_layers=2, conv="pyg")(bt)
        with pytest.raises(ArgumentError, match="'conv'"):
            GraphSAGE(16, 8, 4, conv="pyg", layerwise=True)
    assert GraphSAGE(16, 8, 4, num_layers=2, layerwise=True)(bt).shape == (16, 4)


# ---------------------------------------------------------------------- training
def test_training_learns_and_reports_metrics(planted):
    trainer = Trainer(planted, epochs=4, **SMALL)
    metrics = trainer.fit()
    assert metrics["epochs"] == 4 and len(metrics["losses"]) == 4
    assert metrics["losses"][-1] < 0.7 * metrics["losses"][0]
    assert metrics["test_accuracy"] > 0.7                       # chance is 0.25
    assert metrics["sampled_edges"] > 0 and metrics["sampled_edges_per_s"] > 0
    assert metrics["path"] in ("native", "numpy")
    # a random 60/20/20 split of the labelled nodes (the dataset has none)
    sizes = [trainer.train_idx.size, trainer.val_idx.size, trainer.test_idx.size]
    assert sizes == [360, 120, 120]


@pytest.mark.parametrize("sampler,fanouts", [("ladies", (60, 60)), ("fastgcn", (60, 60))])
def test_layerwise_samplers_train(planted, sampler, fanouts):
    metrics = Trainer(planted, epochs=2, **{**SMALL, "fanouts": fanouts},
                      sampler=sampler).fit()
    assert metrics["losses"][-1] < metrics["losses"][0]


def test_runs_are_deterministic_with_pipeline_on_or_off(planted):
    a = Trainer(planted, epochs=2, pipeline=True, bulk_size=2, **SMALL)
    b = Trainer(planted, epochs=2, pipeline=False, bulk_size=5, **SMALL)
    a.fit()
    b.fit()
    assert run_losses(a) == run_losses(b)
    assert all(torch.equal(p, q) for p, q in zip(params(a.model), params(b.model)))
    c = Trainer(planted, epochs=2, seed=1, **SMALL)
    c.fit()
    assert run_losses(c) != run_losses(a)


def test_checkpoint_resume_replays_the_uninterrupted_run(planted, tmp_path):
    whole = Trainer(planted, epochs=4, **SMALL)
    whole_metrics = whole.fit()

    path = tmp_path / "ckpt.pt"
    first = Trainer(planted, epochs=2, **SMALL)
    first.fit(checkpoint=path)
    torch.manual_seed(12345)                  # the global RNG state must not matter
    resumed = Trainer(planted, epochs=4, **SMALL)
    resumed.load_checkpoint(path)
    assert resumed.epoch == 2
    metrics = resumed.fit()
    assert run_losses(resumed) == run_losses(whole)              # same sample stream, same losses
    assert all(torch.equal(p, q) for p, q in zip(params(resumed.model), params(whole.model)))
    assert parameter_checksum(resumed.model).tolist() == parameter_checksum(whole.model).tolist()
    assert metrics["test_accuracy"] == whole_metrics["test_accuracy"]
    assert torch.equal(resumed.optimizer.state_dict()["state"][0]["exp_avg"],
                       whole.optimizer.state_dict()["state"][0]["exp_avg"])


def test_resume_refuses_a_different_run(planted, tmp_path):
    path = tmp_path / "ckpt.pt"
    Trainer(planted, epochs=1, **SMALL).fit(checkpoint=path)
    other = Trainer(planted, epochs=2, **{**SMALL, "batch_size": 64})
    with pytest.raises(ArgumentError, match="batch_size"):
        other.load_checkpoint(path)
    with pytest.raises(ArgumentError, match="'path'"):
        other.load_checkpoint(tmp_path / "missing.pt")


def test_trainer_on_embedded_cora_uses_the_standard_split():
    ds = io.load_cora()
    trainer = Trainer(ds, epochs=1, hidden=8, pipeline=False)
    assert [trainer.train_idx.size, trainer.val_idx.size, trainer.test_idx.size] == \
        [140, 500, 1000]
    assert 0.0 <= trainer.fit()["test_accuracy"] <= 1.0


def test_demo_defaults_reach_the_cora_target():
    """The demo's defaults (seed 0) on the embedded Cora: >= 0.79 test accuracy."""
    metrics = Trainer(io.load_cora()).fit()
    assert metrics["test_accuracy"] >= 0.79


@pytest.mark.slow
@pytest.mark.datasets
def test_musae_facebook_reaches_the_target(shared_datasets):
    """musae-facebook, random 60/20/20 split (seed 0), 5 epochs: >= 0.90 test accuracy."""
    ds = io.from_musae(shared_datasets / "musae-facebook")
    trainer = Trainer(ds, batch_size=512, epochs=5, eval_fanouts=(10, 10),
                      eval_batch_size=2048)
    assert trainer.sparse_features                    # 14 non-zeros in 4,714 columns
    assert trainer.fit()["test_accuracy"] >= 0.90


# ---------------------------------------------------------------------- splits and config
def test_random_split_is_disjoint_keyed_and_skips_unlabelled():
    labels = np.array([0, 1, -1] * 100)
    a = random_split(labels, seed=3)
    b = random_split(labels, seed=3)
    c = random_split(labels, seed=4)
    parts = [a["train"], a["val"], a["test"]]
    assert [p.size for p in parts] == [120, 40, 40]
    everything = np.concatenate(parts)
    assert np.unique(everything).size == 200 and np.all(labels[everything] >= 0)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["train"], c["train"])
    with pytest.raises(ArgumentError, match="'fractions'"):
        random_split(labels, fractions=(0.5, 0.5, 0.5))


@pytest.mark.parametrize("kwargs,error,name", [
    (dict(sampler="graphsaint"), ArgumentError, "sampler"),
    (dict(fanouts=5), ArgumentTypeError, "fanouts"),
    (dict(eval_fanouts=(5,)), ArgumentError, "eval_fanouts"),
    (dict(batch_size=0), ArgumentError, "batch_size"),
    (dict(lr=0), ArgumentError, "lr"),
    (dict(dropout=1.0), ArgumentError, "dropout"),
    (dict(normalize="l2"), ArgumentError, "normalize"),
])
def test_bad_config_raises_typed_errors(kwargs, error, name):
    with pytest.raises(error, match=f"'{name}'"):
        TrainConfig(**kwargs)


def test_trainer_needs_a_labelled_dataset(planted):
    with pytest.raises(ArgumentTypeError, match="'dataset'"):
        Trainer(planted.graph)
    with pytest.raises(DatasetError, match="'dataset'"):
        Trainer(io.Dataset(planted.graph, features=planted.features))


def test_sparse_features_train_like_dense_ones(planted, tmp_path):
    """CSR features (auto-chosen for bag-of-words data) compute the same model as dense ones,
    and resume exactly too."""
    rng = np.random.default_rng(1)
    bag = (rng.random((planted.num_nodes, 80)) < 0.02).astype(np.uint8)
    bag[np.arange(planted.num_nodes), planted.labels] = 1      # one word names the class
    ds = io.Dataset(planted.graph, features=bag, labels=planted.labels)
    # no dropout here: sparse dropout draws its mask over the non-zeros only
    kw = {**SMALL, "normalize": "row", "conv": "torch", "epochs": 2, "dropout": 0.0}
    sparse = Trainer(ds, **kw)                                  # auto: ~3 % non-zero -> CSR
    dense = Trainer(ds, sparse_features="off", **kw)
    assert sparse.sparse_features and not dense.sparse_features
    assert isinstance(next(iter(sparse.train_loader)).x, SparseRows)
    ms, md = sparse.fit(), dense.fit()
    assert np.allclose(ms["losses"], md["losses"], rtol=1e-4)
    assert all(torch.allclose(p, q, atol=1e-4)
               for p, q in zip(params(sparse.model), params(dense.model)))
    kw["dropout"] = 0.3
    sparse = Trainer(ds, **kw)
    sparse.fit()
    path = tmp_path / "sparse.pt"
    first = Trainer(ds, **{**kw, "epochs": 1})
    first.fit(checkpoint=path)
    resumed = Trainer(ds, **kw)
    resumed.load_checkpoint(path)
    resumed.fit()
    assert run_losses(resumed) == run_losses(sparse)


# ---------------------------------------------------------------------- sparse features (#17)
def bag_of_words(planted, density=0.02, seed=1):
    """Binary bag-of-words features (about ``density`` non-zero) that name each class."""
    rng = np.random.default_rng(seed)
    bag = (rng.random((planted.num_nodes, 80)) < density).astype(np.float32)
    bag[np.arange(planted.num_nodes), planted.labels] = 1
    return bag


@pytest.mark.skipif(not have_pyg(), reason="torch_geometric is not installed")
def test_pyg_layers_take_sparse_rows_without_densifying(planted, monkeypatch):
    import scipy.sparse as sp

    bag = bag_of_words(planted)
    loader = spsample.Loader(planted.graph, sampler=spsample.NodeWise([4, 3]), batch_size=32,
                             features=sp.csr_matrix(bag), pipeline=False)
    batch = next(iter(loader))
    assert isinstance(batch.x, SparseRows)
    torch.manual_seed(0)
    model = GraphSAGE(80, 16, 4, num_layers=2, conv="pyg", dropout=0.0).eval()
    assert model.uses_pyg
    dense = model(batch, x=batch.x.to_dense())
    monkeypatch.setattr(SparseRows, "to_dense", lambda self: pytest.fail("densified"))
    assert torch.allclose(model(batch), dense, atol=1e-5)


@pytest.mark.parametrize("conv", ["torch", "pyg"])
def test_scipy_sparse_dataset_features_stay_sparse_in_training(planted, conv):
    import scipy.sparse as sp

    if conv == "pyg" and not have_pyg():
        pytest.skip("torch_geometric is not installed")
    ds = io.Dataset(planted.graph, features=sp.csr_matrix(bag_of_words(planted)),
                    labels=planted.labels)
    trainer = Trainer(ds, **{**SMALL, "conv": conv, "epochs": 1})
    assert trainer.sparse_features and isinstance(next(iter(trainer.train_loader)).x,
                                                  SparseRows)
    assert trainer.model.uses_pyg == (conv == "pyg")
    assert np.isfinite(trainer.fit()["loss"])
    dense = Trainer(ds, **{**SMALL, "conv": conv, "epochs": 1, "sparse_features": "off"})
    assert not dense.sparse_features


def test_densifying_sparse_features_checks_memory_first(planted, monkeypatch):
    import scipy.sparse as sp

    from spsample._errors import ResourceLimitError

    ds = io.Dataset(planted.graph, features=sp.csr_matrix(bag_of_words(planted)),
                    labels=planted.labels)
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "64K")       # the dense copy is 188 KiB
    with pytest.raises(ResourceLimitError, match="'sparse_features' would need 187.5 KiB"):
        Trainer(ds, **{**SMALL, "sparse_features": "off"})
