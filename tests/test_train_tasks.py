"""Link prediction and heterogeneous node classification (``spsample.train.link`` /
``spsample.train.hetero`` and ``spsample train --task``) on small generated datasets whose
answer is in the graph: a model that does not use the sampled neighbourhoods cannot pass."""

import json

import numpy as np
import pytest

import spsample
from spsample.cli import main
from spsample.io import Dataset, HeteroDataset

torch = pytest.importorskip("torch")

from spsample.train.hetero import HeteroSAGE, fit_node, macro_f1  # noqa: E402
from spsample.train.link import auc, fit_link, mrr, split_edges  # noqa: E402

WRITES, WRITTEN_BY = ("author", "writes", "paper"), ("paper", "written_by", "author")


def authorship(seed=0, papers=240, authors=24):
    """Papers take their class from their (one or two) authors, who all share a class::

        author a: class a % 2, features one-hot(class) + noise
        paper p:  written by authors of one class, features pure noise, label = that class

    Only the author -> paper messages carry the label, so accuracy above chance needs them.
    """
    rng = np.random.default_rng(seed)
    cls = np.arange(authors) % 2
    label = rng.integers(0, 2, papers)
    first = 2 * rng.integers(0, authors // 2, papers) + label
    second = 2 * rng.integers(0, authors // 2, papers) + label
    two = rng.random(papers) < 0.5
    a = np.concatenate([first, second[two]])
    p = np.concatenate([np.arange(papers), np.arange(papers)[two]])
    g = spsample.HeteroGraph.from_edge_index({WRITES: (a, p), WRITTEN_BY: (p, a)},
                                             num_nodes={"author": authors, "paper": papers})
    feats = {"author": (np.eye(2)[cls] + 0.1 * rng.random((authors, 2))).astype(np.float32),
             "paper": rng.random((papers, 3)).astype(np.float32)}
    order = rng.permutation(papers)
    return HeteroDataset(g, features=feats, labels={"paper": label}, target_type="paper",
                         splits={"s": {"train": order[:40], "val": order[40:80],
                                       "test": order[80:]}}, name="authorship")


def community_edges(rng, n, m, k=4):
    """``m`` random edges inside ``k`` communities (``v % k``) of ``n`` nodes, and the
    features one-hot(community) + noise. A random negative lies inside a community with
    probability ``1 / k``, so a model that knows only the communities reaches an AUC of
    ``1 - 1 / (2 k)`` = 0.875; one that ignores them, 0.5."""
    comm = np.arange(n) % k
    src = rng.integers(0, n, m)
    dst = k * rng.integers(0, n // k, m) + comm[src]
    x = (np.eye(k)[comm] + 0.3 * rng.random((n, k))).astype(np.float32)
    return src, dst, x


def communities(seed=0, n=160):
    """Four communities, edges only inside one (about 6 per node); see community_edges."""
    rng = np.random.default_rng(seed)
    src, dst, x = community_edges(rng, n, 3 * n)
    keep = src != dst
    g = spsample.Graph.from_edge_index(src[keep], dst[keep], num_nodes=n, symmetrize=True)
    return Dataset(g, features=x, labels=np.arange(n) % 4, name="communities")


def test_metrics_against_hand_computed_values():
    assert auc([3.0, 2.0], [1.0, 2.0]) == pytest.approx((2 + 1.5) / 4)
    assert mrr([2.0, 0.0], [[1.0, 3.0], [0.0, -1.0]]) == pytest.approx((1 / 2 + 1 / 1.5) / 2)
    assert macro_f1([0, 0, 1, 1], [0, 1, 1, 1], 2) == pytest.approx(((2 / 3 + 0.8) / 2, 0.75))
    parts = split_edges(np.arange(20), np.arange(20), time=np.arange(20)[::-1])
    assert parts["train"].tolist() == list(range(19, 2, -1))        # earliest first
    assert sorted(np.concatenate(list(parts.values())).tolist()) == list(range(20))


def test_hetero_node_classification_uses_the_relations():
    ds = authorship()
    result = fit_node(ds, split="s", fanouts=(4, 4), hidden=16, epochs=10, lr=0.02,
                      batch_size=20, dropout=0.0, weight_decay=0.0)
    assert result["test_accuracy"] >= 0.9 and result["sampled_edges"] > 0
    assert len(result["history"]) == 10 and 0 <= result["best_epoch"] < 10
    model = HeteroSAGE(ds.graph, {"paper": 3}, 8, 2, num_layers=2)
    assert isinstance(model.inputs["author"], torch.nn.Embedding)   # featureless: embedded


def test_link_prediction_on_a_plain_graph():
    result = fit_link(communities(), fanouts=(5, 5), hidden=16, out=16, epochs=6, lr=0.02,
                      batch_size=128, eval_negatives=10, dropout=0.0)
    assert result["test_auc"] >= 0.8 and result["test_mrr"] > 1 / 11
    assert set(result["split"]) == {"train", "val", "test"}
    total = sum(result["split"].values())
    assert result["split"]["train"] == round(0.85 * total)


def test_link_prediction_on_a_temporal_graph_splits_by_time():
    rng = np.random.default_rng(1)
    n, m = 80, 900
    src, dst, x = community_edges(rng, n, m)
    rel = ("node", "to", "node")
    g = spsample.HeteroGraph.from_edge_index({rel: (src, dst)}, num_nodes={"node": n},
                                             edge_time={rel: rng.random(m)})
    result = fit_link(HeteroDataset(g, features={"node": x}), fanouts=(5,), hidden=16,
                      out=16, epochs=5, lr=0.02, batch_size=128, eval_negatives=5,
                      dropout=0.0)
    m_once = g.num_edges[rel]
    assert result["split"]["train"] == round(0.70 * m_once)
    assert result["test_auc"] >= 0.8


def test_cli_tasks_write_their_metrics(tmp_path, capsys):
    het, plain = tmp_path / "a.h5", tmp_path / "c.h5"
    spsample.save(authorship(), het)
    spsample.save(communities(), plain)
    out = tmp_path / "m.json"
    assert main(["train", str(het), "--epochs", "2", "--hidden", "8", "--fanouts", "3,3",
                 "--split", "s", "--quiet", "--metrics", str(out)]) == 0
    node = json.loads(out.read_text())
    assert node["task"] == "node" and 0 <= node["test_macro_f1"] <= 1
    assert "heterogeneous GraphSAGE" in capsys.readouterr().out
    assert main(["train", str(plain), "--task", "link", "--epochs", "2", "--hidden", "8",
                 "--fanouts", "3", "--quiet", "--metrics", str(out)]) == 0
    link = json.loads(out.read_text())
    assert link["task"] == "link" and {"test_auc", "test_mrr"} <= set(link)
    assert "test AUC" in capsys.readouterr().out


def test_cli_tasks_take_the_thread_flags(tmp_path, monkeypatch):
    """``--threads`` / ``--sampler-threads`` set torch's and the sampler's threads for the
    tasks as for node classification (they were ignored)."""
    import torch
    from spsample import native as _native

    path = tmp_path / "c.h5"
    spsample.save(communities(), path)
    before = torch.get_num_threads(), _native.get_num_threads()
    seen = []
    real = fit_link.__globals__["_train_epoch"]

    def spy(*a, **kw):
        seen.append((torch.get_num_threads(), _native.get_num_threads()))
        return real(*a, **kw)
    monkeypatch.setitem(fit_link.__globals__, "_train_epoch", spy)
    try:
        for threads in ("1", "2"):
            assert main(["train", str(path), "--task", "link", "--epochs", "1", "--hidden",
                         "8", "--fanouts", "3", "--quiet", "--threads", threads,
                         "--sampler-threads", "3"]) == 0
    finally:
        torch.set_num_threads(before[0])
        _native.set_num_threads(before[1])
    assert seen == [(1, 3), (2, 3)] or not _native.AVAILABLE


@pytest.mark.parametrize("flags, name", [
    (["--task", "link", "--neg-ratio", "0"], "--neg-ratio"),
    (["--task", "link", "--split", "60"], "--split"),
    (["--task", "link", "--eval-negatives", "0"], "--eval-negatives"),
    (["--task", "link", "--order", "owner"], "--order"),
])
def test_cli_task_flags_are_checked(tmp_path, capsys, flags, name):
    path = tmp_path / "c.h5"
    spsample.save(communities(), path)
    assert main(["train", str(path), "--epochs", "1", "--quiet", *flags]) == 2
    assert name in capsys.readouterr().err


def test_cli_relation_flag_needs_three_parts(capsys):
    with pytest.raises(SystemExit):
        main(["train", "cora", "--task", "link", "--relation", "a,b"])
    assert "SRC,NAME,DST" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["binary", "triplet"])
def test_link_scores_have_reproducible_gradients_with_threads(kind):
    """The pair scores' gradient sums each vertex's rows in a fixed order whatever the torch
    thread count (``index_select``; advanced indexing's ``index_put_`` adds float32 rows with
    atomics across threads), so link training is bit-reproducible at 2 threads."""
    import hashlib
    from types import SimpleNamespace

    import torch
    from spsample.train.link import _scores

    gen = torch.Generator().manual_seed(0)
    h0 = torch.randn(300, 64, generator=gen)
    pairs = torch.randint(0, 300, (3, 8192), generator=gen)
    if kind == "binary":
        b = SimpleNamespace(edge_label_index=pairs[:2], edge_label=torch.ones(8192))
    else:
        b = SimpleNamespace(edge_label_index=None, src_index=pairs[0],
                            dst_pos_index=pairs[1], dst_neg_index=pairs[2])
    task = SimpleNamespace(hetero=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        digests = set()
        for _ in range(8):
            h = h0.clone().requires_grad_(True)
            first, second = _scores(task, lambda _: h, b)
            (first.sum() + (second.sum() if kind == "triplet" else 0)).backward()
            digests.add(hashlib.sha256(h.grad.numpy().tobytes()).hexdigest())
    finally:
        torch.set_num_threads(threads)
    assert len(digests) == 1
