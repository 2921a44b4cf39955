"""Link prediction on spsample batches: a GraphSAGE encoder and a dot-product decoder.

:func:`fit_link` splits the edges (random 85/5/10 on a plain graph, chronological 70/15/15 on a
temporal one, or a dataset's stored ``edge_splits``), trains on
:class:`~spsample.LinkLoader` batches (binary negatives, the seed edges excluded from message
passing) and reports, for the best-validation model, the test **AUC** (positives against
their triplet negatives, ties counted half) and **MRR** (each positive ranked against its
``eval_negatives`` strict negatives with the same source; rank = 1 + #higher + #ties / 2).
Temporal graphs sample each seed edge's neighbourhood as it was at the edge's time.
"""

import time

import numpy as np

from .._errors import ArgumentError
from .._hetero import HeteroGraph
from .._optional import import_torch
from .._validate import fail
from ._trainer import run_epoch

torch = import_torch("spsample.train.link")

__all__ = ["fit_link", "auc", "mrr", "split_edges"]


def auc(pos, neg):
    """Area under the ROC curve of scores ``pos`` (positives) against ``neg``: the
    Mann-Whitney statistic, ties counted half."""
    pos, neg = np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64).ravel()
    scores = np.concatenate([pos, neg])
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(scores.size)
    s = scores[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    ends = np.r_[starts[1:], s.size]
    avg = (starts + ends + 1) / 2.0                      # 1-based average rank of each tie run
    ranks[order] = np.repeat(avg, ends - starts)
    u = ranks[:pos.size].sum() - pos.size * (pos.size + 1) / 2.0
    return float(u / (pos.size * neg.size))


def mrr(pos, neg):
    """Mean reciprocal rank of each positive among itself and its row of negatives."""
    pos = np.asarray(pos, dtype=np.float64)[:, None]
    neg = np.asarray(neg, dtype=np.float64).reshape(pos.shape[0], -1)
    rank = 1.0 + (neg > pos).sum(1) + 0.5 * (neg == pos).sum(1)
    return float(np.mean(1.0 / rank))


def split_edges(src, dst, *, time=None, fractions=(0.85, 0.05, 0.10), seed=0):
    """``{"train" | "val" | "test": positions}`` of the edges: chronological when ``time`` is
    given (earliest first), else a random permutation keyed by ``seed``."""
    m = np.asarray(src).size
    if time is not None:
        order = np.argsort(np.asarray(time), kind="stable")
    else:
        order = np.random.default_rng(seed).permutation(m)
    a = int(round(fractions[0] * m))
    b = a + int(round(fractions[1] * m))
    return {"train": order[:a], "val": order[a:b], "test": order[b:]}


# ---------------------------------------------------------------------- the task
class _Task:
    """The graph to sample, seed edges per part, times, encoder and how to score a batch."""

    def __init__(self, data, relation, split, seed):
        from .._hetero import HeteroGraph
        graph = data.graph if hasattr(data, "graph") else data
        self.features = getattr(data, "features", None)
        self.hetero = isinstance(graph, HeteroGraph)
        if self.hetero:
            self._hetero(data, graph, relation, split, seed)
        else:
            self._plain(graph, split, seed)

    def _plain(self, graph, split, seed):
        """Undirected pairs once each, split; the message graph holds the training pairs."""
        import spsample
        src, dst = graph.edge_index()
        once = src < dst
        src, dst = src[once], dst[once]
        parts = split_edges(src, dst, seed=seed)
        tr = parts["train"]
        self.graph = spsample.Graph.from_edge_index(src[tr], dst[tr], num_nodes=graph.num_nodes,
                                                    symmetrize=True)
        self.edges = {p: (None, np.stack([src[i], dst[i]])) for p, i in parts.items()}
        self.times = {p: None for p in parts}
        self.relation = None

    def _hetero(self, data, graph, relation, split, seed):
        rel = graph.relation(relation or graph.relations[0], where="fit_link",
                             argname="relation")
        self.relation = rel
        stored = getattr(data, "edge_splits", None)
        if split == "stored" or (split == "auto" and stored):
            self.graph = graph
            self.edges = {p: (rel, stored[p][rel]) for p in ("train", "val", "test")}
            self.times = {p: None for p in self.edges}
            return
        indptr, indices, _ = graph.csr(rel)
        dst = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        time_ = graph.edge_time(rel)
        temporal = time_ is not None and split in ("auto", "time")
        parts = split_edges(indices, dst, time=time_ if temporal else None,
                            fractions=(0.70, 0.15, 0.15) if temporal else (0.85, 0.05, 0.10),
                            seed=seed)
        self.graph = _with_reverse(graph, rel) if temporal else graph
        self.edges = {p: (rel, np.stack([indices[i], dst[i]])) for p, i in parts.items()}
        self.times = {p: (time_[i] if temporal else None) for p, i in parts.items()}
        if not temporal:
            fail(ArgumentError, "fit_link", "split", "a random split of a heterogeneous "
                 "relation needs it removed from the graph: use a temporal graph or stored "
                 "edge_splits", split)


def _with_reverse(graph, rel):
    """``graph`` plus ``(dst, "rev_" + name, src)`` with the same times, so messages flow
    both ways along the predicted relation."""
    s, name, d = rel
    rev = (d, "rev_" + name, s)
    if rev in graph.relations:
        return graph
    edges, times = {}, {}
    for r in graph.relations:
        indptr, indices, _ = graph.csr(r)
        dst = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        edges[r] = (indices, dst)
        times[r] = graph.edge_time(r)
    edges[rev] = (edges[rel][1], edges[rel][0])
    times[rev] = times[rel]
    return HeteroGraph.from_edge_index(edges, num_nodes=graph.num_nodes,
                                       edge_time={r: t for r, t in times.items()
                                                  if t is not None} or None,
                                       node_time={t: graph.node_time(t) for t in
                                                  graph.node_types
                                                  if graph.node_time(t) is not None} or None)


def _features(task):
    from .hetero import normalized_features
    if task.features is None:
        return None
    if task.hetero:
        return normalized_features(task.features)
    return normalized_features({"x": task.features})["x"]


def _encoder(task, feats, hidden, out, layers, dropout):
    from ._model import GraphSAGE
    from .hetero import HeteroSAGE
    if task.hetero:
        return HeteroSAGE(task.graph, {t: f.shape[1] for t, f in (feats or {}).items()},
                          hidden, out, num_layers=layers, dropout=dropout)
    if feats is None:
        fail(ArgumentError, "fit_link", "data", "needs node features on a plain graph", None)
    import scipy.sparse as sp
    return GraphSAGE(feats.shape[1], hidden, out, num_layers=layers, dropout=dropout,
                     conv="torch", sparse_input=sp.issparse(feats))


def _scores(task, model, b):
    """Scores of the batch's labelled pairs: binary ``(scores, labels)`` or triplet
    ``(positive scores, negative scores (b, K))``."""
    if task.hetero:
        h = model(b)
        hs, hd = h[task.relation[0]], h[task.relation[2]]
    else:
        hs = hd = model(b)
    if b.edge_label_index is not None:
        ei = b.edge_label_index
        return (hs[ei[0]] * hd[ei[1]]).sum(-1), b.edge_label
    u = hs[b.src_index]
    pos = (u * hd[b.dst_pos_index]).sum(-1)
    neg = (u.unsqueeze(1) * hd[b.dst_neg_index.reshape(u.shape[0], -1)]).sum(-1)
    return pos, neg


def fit_link(data, *, relation=None, split="auto", fanouts=(10, 10), hidden=64, out=64,
             epochs=20, lr=0.005, weight_decay=0.0, dropout=0.2, batch_size=512, bulk_size=4,
             neg_ratio=1.0, eval_negatives=20, seed=0, log=None,
             progress=False):
    """Train a GraphSAGE encoder + dot-product decoder for link prediction; test the
    best-validation model (see the module docstring).

    Parameters
    ----------
    data : Dataset or HeteroDataset (or a graph)
        Node features are used when present (learned embeddings for featureless types).
    relation : relation, optional
        Heterogeneous data: the relation to predict (default: the first).
    split : {"auto", "random", "time", "stored"}
        ``auto``: stored edge splits if the dataset has them, chronological on a temporal
        graph, random 85/5/10 on a plain graph.
    eval_negatives : int
        Strict negatives per positive for validation and test (AUC and MRR).
    log : callable, optional
        Called with each epoch's dict.
    progress : bool
        A tqdm progress bar over each epoch's minibatches.

    Returns
    -------
    dict
        ``test_auc``, ``test_mrr``, ``val_auc``, ``val_mrr``, ``best_epoch``, ``seconds``,
        ``sampled_edges``, ``split`` sizes, ``history``.
    """
    import spsample
    if split not in ("auto", "random", "time", "stored"):
        fail(ArgumentError, "fit_link", "split", "must be auto, random, time or stored", split)
    torch.manual_seed(seed)
    task = _Task(data, relation, split, seed)
    feats = _features(task)

    def loader(part, **kw):
        rel, ei = task.edges[part]
        return spsample.LinkLoader(task.graph, ei if rel is None else (rel, ei),
                                   sampler=spsample.NodeWise(list(fanouts)),
                                   batch_size=batch_size, bulk_size=bulk_size, features=feats,
                                   edge_time=task.times[part], exclude_seed_edges=True,
                                   seed=seed, **kw)

    train = loader("train", neg_ratio=neg_ratio)
    val, test = (loader(p, neg_sampling="triplet", neg_ratio=eval_negatives, strict=True,
                        shuffle=False) for p in ("val", "test"))
    model = _encoder(task, feats, hidden, out, len(fanouts), dropout)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, history, start, edges = dict(val_auc=-1.0, epoch=-1, state=None), [], \
        time.perf_counter(), 0

    def loss_of(model, b):
        score, label = _scores(task, model, b)
        return torch.nn.functional.binary_cross_entropy_with_logits(score, label)

    for epoch in range(epochs):
        loss, sampled = run_epoch(model, opt, train, loss_of, progress, f"epoch {epoch + 1}")
        edges += sampled
        va, vm = _evaluate(task, model, val)
        entry = dict(epoch=epoch, loss=loss, val_auc=va, val_mrr=vm)
        history.append(entry)
        if log is not None:
            log(entry)
        if va > best["val_auc"]:
            best = dict(val_auc=va, val_mrr=vm, epoch=epoch,
                        state={k: v.clone() for k, v in model.state_dict().items()})
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    ta, tm = _evaluate(task, model, test)
    return dict(test_auc=ta, test_mrr=tm, val_auc=best["val_auc"],
                val_mrr=best.get("val_mrr", 0.0), best_epoch=best["epoch"],
                seconds=time.perf_counter() - start, sampled_edges=int(edges),
                eval_negatives=eval_negatives,
                split={p: int(e[1].shape[1]) for p, e in task.edges.items()}, history=history)


@torch.no_grad()
def _evaluate(task, model, loader):
    model.eval()
    pos, neg = [], []
    for b in loader:
        p, n = _scores(task, model, b)
        pos.append(p.numpy())
        neg.append(n.numpy())
    pos, neg = np.concatenate(pos), np.concatenate(neg)
    return auc(pos, neg), mrr(pos, neg)
