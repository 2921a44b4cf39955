"""Running the training tasks (``spsample train`` node / heterogeneous / link, ``fit_link``,
``fit_node``): settings chosen from the graph, checkpoint and resume, the metrics' phase
split, and the messages of a task that cannot run."""

import json

import numpy as np
import pytest

import spsample
from spsample import ArgumentError, ResourceLimitError
from spsample.cli import main
from spsample.io import HeteroDataset

torch = pytest.importorskip("torch")

from test_train_tasks import WRITES, authorship, communities, community_edges  # noqa: E402

from spsample.train.hetero import fit_node  # noqa: E402
from spsample.train import link  # noqa: E402
from spsample.train.link import _Task, fit_link  # noqa: E402

PHASES = ("sample_seconds", "fetch_seconds", "convert_seconds", "wait_seconds",
          "forward_seconds", "backward_seconds", "optimizer_seconds", "threads",
          "sampler_threads")
LINK = dict(fanouts=(3, 3), hidden=8, out=8, lr=0.02, batch_size=64, bulk_size=2,
            eval_negatives=3, dropout=0.3)
REL = ("node", "to", "node")


@pytest.fixture(autouse=True)
def restore_threads():
    from spsample import native as _native
    before = torch.get_num_threads(), _native.get_num_threads()
    yield
    torch.set_num_threads(before[0])
    _native.set_num_threads(before[1])


def temporal(n=80, m=900, seed=1):
    """A temporal graph of ``m`` edges inside 4 communities of ``n`` nodes, random times."""
    rng = np.random.default_rng(seed)
    src, dst, x = community_edges(rng, n, m)
    g = spsample.HeteroGraph.from_edge_index({REL: (src, dst)}, num_nodes={"node": n},
                                             edge_time={REL: rng.random(m)})
    return HeteroDataset(g, features={"node": x}, name="temporal")


def with_edge_splits(ds, drop=None):
    """``ds`` with stored splits of its ``writes`` pairs; ``drop``: a part left without
    them (the other relation's pairs stand in)."""
    splits = {}
    for rel in ds.graph.relations:
        indptr, indices, _ = ds.graph.csr(rel)
        pairs = np.stack([indices, np.repeat(np.arange(indptr.size - 1), np.diff(indptr))])
        order = np.random.default_rng(3).permutation(pairs.shape[1])
        a, b = int(0.7 * order.size), int(0.85 * order.size)
        for part, i in (("train", order[:a]), ("val", order[a:b]), ("test", order[b:])):
            if not (part == drop and rel == WRITES):
                splits.setdefault(part, {})[rel] = pairs[:, i]
    return HeteroDataset(ds.graph, features=ds.features, edge_splits=splits, name="a")


# ---------------------------------------------------------------------- automatic settings
def settings(data, **given):
    kw = dict(fanouts=None, eval_negatives=None, eval_batch_size=None, batch_size=512,
              neg_ratio=1.0, seed=0)
    return link.link_settings(_Task(data, None, "auto", 0), **dict(kw, **given))


def test_temporal_link_settings_come_from_the_graph():
    """Every seed of a temporal minibatch is its own subgraph: on a dense temporal graph the
    automatic fanouts shrink until a seed's measured subgraph holds <= 32 vertices (here
    none does: the last, 5,5); on a sparse one they stay 10,10. The chronological 70/15/15
    split gets 5 evaluation negatives (validation: at most half the seeds of a training
    epoch) and evaluation batches no larger in seeds than a training batch (disjoint:
    512 * 4 // 7 edges)."""
    dense = _Task(temporal(n=300, m=6000), None, "auto", 0)
    assert all(link._measured_vertices(dense, f, 0) > link.SEED_VERTICES
               for f in link.TEMPORAL_FANOUTS)
    assert settings(temporal(n=300, m=6000)) == ((5, 5), 5, 512 * 4 // 7)
    assert settings(temporal(n=400, m=500))[0] == (10, 10)
    assert settings(temporal(n=400, m=500), neg_ratio=3.0)[1:] == (10, 512 * 8 // 12)


def test_plain_link_settings_keep_the_defaults():
    """A random 85/5/10 split on a small graph: every minibatch samples about the whole
    graph anyway, so 20 evaluation negatives in batches of 512 edges, fanouts 10,10; the
    run reports what it chose."""
    assert settings(communities()) == ((10, 10), 20, 512)
    result = fit_link(communities(), epochs=0, hidden=8, out=8)
    assert (result["fanouts"], result["eval_negatives"], result["eval_batch_size"]) == \
        ([10, 10], 20, 512)


def test_chosen_settings_can_be_given():
    assert settings(temporal(), fanouts=(4,), eval_negatives=2, eval_batch_size=7) == \
        ((4,), 2, 7)
    for name in ("eval_negatives", "eval_batch_size"):
        with pytest.raises(ArgumentError, match=name):
            fit_link(temporal(), epochs=0, **{name: 0})


@pytest.mark.datasets
def test_collegemsg_settings(shared_datasets, tmp_path):
    """SNAP CollegeMsg (1,899 vertices, 20,296 temporal pairs): fanouts 5,5, 5 evaluation
    negatives, evaluation batches of 292 edges (experiments/README.md has the epochs)."""
    path = tmp_path / "msg.h5"
    assert main(["convert", "--format", "temporal",
                 str(shared_datasets / "snap-collegemsg" / "CollegeMsg.txt"), str(path)]) == 0
    assert settings(spsample.load(path)) == ((5, 5), 5, 292)


def test_evaluation_draws_progress_bars(monkeypatch):
    """Validation and test passes show a progress bar (they were silent for minutes)."""
    from spsample.train import _trainer
    seen = []
    real = _trainer._progress_bar

    def spy(show, total, desc):
        seen.append((show, desc))
        return real(False, total, desc)
    monkeypatch.setattr(_trainer, "_progress_bar", spy)
    fit_link(communities(), epochs=1, progress=True, **LINK)
    assert (True, "validation") in seen and (True, "test") in seen
    seen.clear()
    fit_node(authorship(), split="s", fanouts=(3, 3), hidden=8, epochs=1, batch_size=20,
             progress=True)
    assert (True, "validation") in seen and (True, "test") in seen


# ---------------------------------------------------------------------- checkpoint / resume
def trained(result):
    return [(e["loss"], e.get("val_auc", e.get("val_macro_f1"))) for e in result["history"]]


@pytest.mark.parametrize("data", ["plain", "temporal", "stored"])
def test_link_resume_replays_the_uninterrupted_run(tmp_path, data):
    """Stopped after 2 epochs and resumed to 4, link training gives the uninterrupted run's
    losses, validation and test metrics, bit for bit (dropout 0.3: the masks come from
    (seed, epoch, rank), not from the generator's history)."""
    make = dict(plain=communities, temporal=temporal,
                stored=lambda: with_edge_splits(authorship()))[data]
    kw = dict(LINK, relation=WRITES if data == "stored" else None)
    whole = fit_link(make(), epochs=4, **kw)
    path = tmp_path / "link.pt"
    fit_link(make(), epochs=2, checkpoint=path, **kw)
    assert path.is_file()
    resumed = fit_link(make(), epochs=4, resume=path, checkpoint=path, **kw)
    assert trained(resumed) == trained(whole)
    assert [resumed[k] for k in ("test_auc", "test_mrr", "best_epoch", "sampled_edges")] == \
        [whole[k] for k in ("test_auc", "test_mrr", "best_epoch", "sampled_edges")]


def test_hetero_node_resume_replays_the_uninterrupted_run(tmp_path):
    kw = dict(split="s", fanouts=(3, 3), hidden=8, batch_size=20, lr=0.02)
    whole = fit_node(authorship(), epochs=4, **kw)
    path = tmp_path / "node.pt"
    fit_node(authorship(), epochs=1, checkpoint=path, **kw)
    resumed = fit_node(authorship(), epochs=4, resume=path, **kw)
    assert trained(resumed) == trained(whole) and len(resumed["history"]) == 4
    assert (resumed["test_macro_f1"], resumed["best_epoch"]) == \
        (whole["test_macro_f1"], whole["best_epoch"])


def test_resume_refuses_another_run(tmp_path):
    path = tmp_path / "link.pt"
    fit_link(communities(), epochs=1, checkpoint=path, **LINK)
    with pytest.raises(ArgumentError, match=r"argument 'resume' .*fanouts=\[3, 3\], this run "
                                            r"has fanouts=\[4, 4\]"):
        fit_link(communities(), epochs=2, resume=path, **dict(LINK, fanouts=(4, 4)))
    with pytest.raises(ArgumentError, match="argument 'resume' .*link prediction"):
        fit_node(authorship(), split="s", epochs=2, resume=path)
    with pytest.raises(ArgumentError, match="argument 'resume' does not exist"):
        fit_link(communities(), epochs=1, resume=tmp_path / "missing.pt", **LINK)


@pytest.mark.parametrize("task", ["node", "hetero", "link"])
def test_cli_checkpoint_and_resume_for_every_task(tmp_path, capsys, task):
    """``--checkpoint`` writes a file after every epoch and ``--resume`` continues there with
    the uninterrupted run's losses, for every task (it wrote nothing for heterogeneous and
    link training, and --resume restarted at epoch 1)."""
    path = tmp_path / "d.h5"
    spsample.save(authorship() if task == "hetero" else communities(), path)
    flags = dict(node=[], hetero=["--split", "s"], link=["--task", "link"])[task]
    common = ["train", str(path), "--hidden", "8", "--fanouts", "3,3", "--batch-size", "32",
              "--quiet", "--dropout", "0.3", *flags]
    whole, first, second = (tmp_path / f"{n}.json" for n in ("whole", "first", "second"))
    ckpt = tmp_path / "c.pt"
    assert main(common + ["--epochs", "3", "--metrics", str(whole)]) == 0
    assert main(common + ["--epochs", "2", "--metrics", str(first), "--checkpoint",
                          str(ckpt)]) == 0
    assert ckpt.is_file()
    assert main(common + ["--epochs", "3", "--metrics", str(second), "--resume",
                          str(ckpt)]) == 0
    losses = [[e["loss"] for e in json.loads(p.read_text())["history"]]
              for p in (whole, first, second)]
    assert len(losses[1]) == 2 and losses[2] == losses[0] and losses[2][:2] == losses[1]
    capsys.readouterr()


# ---------------------------------------------------------------------- metrics
@pytest.mark.parametrize("task", ["node", "hetero", "link"])
def test_metrics_json_has_the_phase_split_of_every_epoch(tmp_path, task):
    """README: the metrics JSON splits each epoch's seconds into sample, fetch, wait,
    forward, backward and optimizer, with the thread split, for every task."""
    path = tmp_path / "d.h5"
    spsample.save(authorship() if task == "hetero" else communities(), path)
    flags = dict(node=[], hetero=["--split", "s"], link=["--task", "link"])[task]
    out = tmp_path / "m.json"
    assert main(["train", str(path), "--epochs", "2", "--hidden", "8", "--fanouts", "3,3",
                 "--quiet", "--metrics", str(out), *flags]) == 0
    history = json.loads(out.read_text())["history"]
    assert len(history) == 2
    for entry in history:
        assert set(PHASES) <= set(entry), sorted(set(PHASES) - set(entry))
        assert entry["forward_seconds"] > 0 and entry["threads"] >= 1
        assert all(entry[k] >= 0 for k in PHASES)


# ---------------------------------------------------------------------- messages
def run(argv, capsys):
    code = main(argv)
    return code, capsys.readouterr().err


def test_cli_file_without_labels_suggests_link_prediction(tmp_path, capsys):
    """A knowledge graph (edge splits, no labels): node classification says to use --task
    link (it said 'has no splits'); so does a homogeneous file without labels."""
    path, plain = tmp_path / "kg.h5", tmp_path / "p.h5"
    ds = with_edge_splits(authorship())
    spsample.save(HeteroDataset(ds.graph, edge_splits=ds.edge_splits, name="kg"), path)
    code, err = run(["train", str(path), "--epochs", "1", "--quiet"], capsys)
    assert code == 2 and "--task link" in err and "no node labels" in err
    g = communities()
    spsample.save(spsample.Dataset(g.graph, features=g.features, name="p"), plain)
    code, err = run(["train", str(plain), "--epochs", "1", "--quiet"], capsys)
    assert code == 2 and "--task link" in err


def test_cli_link_on_a_heterogeneous_file_that_cannot_be_split(tmp_path, capsys):
    """No stored edge splits, no edge times: the message says what the file lacks instead of
    '--split ... (got 'auto')' (a value the help did not name); the help names auto now."""
    path = tmp_path / "a.h5"
    spsample.save(authorship(), path)
    code, err = run(["train", str(path), "--task", "link", "--epochs", "1", "--quiet"],
                    capsys)
    assert code == 2 and "no edge times" in err and "edge_splits" in err
    assert "got 'auto'" not in err and "--split" not in err
    code, err = run(["train", str(path), "--task", "link", "--split", "random", "--epochs",
                     "1", "--quiet"], capsys)
    assert code == 2 and "argument '--split'" in err
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "auto" in text.split("--split SPLIT dataset split name")[1].split("--split-seed")[0]


@pytest.mark.parametrize("task", ["node", "link"])
def test_cli_relation_on_a_homogeneous_file_is_refused(capsys, task):
    code, err = run(["train", "cora", "--task", task, "--relation", "a,b,c", "--epochs", "1",
                     "--quiet"], capsys)
    assert code == 2 and "argument '--relation'" in err


def test_relation_missing_from_the_stored_split(tmp_path, capsys):
    """``--relation R`` whose stored val split holds no edge: a typed error naming R and
    the relations the split holds (it was a KeyError)."""
    ds = with_edge_splits(authorship(), drop="val")
    with pytest.raises(ArgumentError, match=r"argument 'relation' author,writes,paper has no "
                                            r"val edges .*paper,written_by,author"):
        fit_link(ds, relation=WRITES, epochs=1, **LINK)
    path = tmp_path / "kg.h5"
    spsample.save(ds, path)
    code, err = run(["train", str(path), "--task", "link", "--relation",
                     "author,writes,paper", "--epochs", "1", "--quiet"], capsys)
    assert code == 2 and "argument '--relation'" in err and "paper,written_by,author" in err
    with pytest.raises(ArgumentError, match="argument 'relation'"):
        fit_link(communities(), relation=WRITES, epochs=0)


# ---------------------------------------------------------------------- link loader input
def test_link_loader_checks_feature_rows_at_construction():
    ds = communities()
    with pytest.raises(ArgumentError, match=r"argument 'features' must have one row per node"):
        spsample.LinkLoader(ds.graph, sampler=spsample.NodeWise([2]), batch_size=8,
                            features=ds.features[:-1])


def test_negatives_memory_is_estimated_before_drawing(monkeypatch, tmp_path, capsys):
    """1e6 negatives per edge asked for GBs before anything said so: a ResourceLimitError
    naming neg_ratio (CLI: --neg-ratio; evaluation: eval_negatives / --eval-negatives)."""
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", "256MB")
    ds = communities()
    with pytest.raises(ResourceLimitError, match="argument 'neg_ratio'"):
        spsample.LinkLoader(ds, sampler=spsample.NodeWise([2]), batch_size=512,
                            neg_ratio=1e6)
    with pytest.raises(ResourceLimitError, match="argument 'eval_negatives'"):
        fit_link(ds, epochs=1, eval_negatives=10**6, **{k: v for k, v in LINK.items()
                                                          if k != "eval_negatives"})
    path = tmp_path / "c.h5"
    spsample.save(ds, path)
    for flag in ("--neg-ratio", "--eval-negatives"):
        code, err = run(["train", str(path), "--task", "link", flag, "1000000", "--epochs",
                         "1", "--quiet"], capsys)
        assert code == 2 and f"argument '{flag}'" in err and "would need" in err


def test_hetero_sage_trims_layers_to_what_the_seeds_read():
    """Layer l computes only the vertices within L - 1 - l hops (PyG's trim_to_layer): the
    seeds' outputs equal those of the whole subgraph run through every layer."""
    import dataclasses

    from spsample.train.hetero import HeteroSAGE
    ds = authorship()
    loader = spsample.Loader(ds.graph, ("paper", np.arange(40)),
                             sampler=spsample.NodeWise([3, 3, 3]), batch_size=16,
                             features=ds.features, pipeline=False)
    batch = next(iter(loader))
    torch.manual_seed(0)
    model = HeteroSAGE(ds.graph, {t: f.shape[1] for t, f in ds.features.items()}, 8, 2,
                       num_layers=3).eval()
    whole = dataclasses.replace(
        batch, num_sampled_nodes_dict={t: [v.shape[0]] for t, v in batch.n_id_dict.items()},
        num_sampled_edges_dict={r: [e.shape[1]] for r, e in batch.edge_index_dict.items()})
    trimmed, full = model(batch), model(whole)
    assert trimmed["paper"].shape[0] == batch.batch_size
    assert torch.allclose(trimmed["paper"], full["paper"][:batch.batch_size], atol=1e-6)
    assert sum(batch.num_sampled_nodes_dict["paper"]) > batch.batch_size
