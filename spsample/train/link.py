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
from .._hetero import HeteroGraph, HeteroSchema
from .._optional import import_torch
from .._validate import fail
from ..loader._link_dist import gathered_edge_index, grid_of
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
    """The graph to sample, seed edges per part, times, encoder and how to score a batch.

    A distributed graph whose rows this rank holds whole (``replicate_graph=True``, or
    ``c = p``) is used as that whole graph; a sharded one stays sharded: ``sharded``."""

    def __init__(self, data, relation, split, seed, features=None):
        graph = data.graph if hasattr(data, "graph") else data
        if grid_of(graph) is not None and graph.whole is not None:
            graph = graph.whole
        self.features = getattr(data, "features", None) if features is None else features
        self.hetero = isinstance(graph, HeteroSchema)
        self.sharded = grid_of(graph) is not None
        if self.hetero:
            self._hetero(data, graph, relation, split, seed)
        else:
            self._plain(graph, split, seed)

    def _plain(self, graph, split, seed):
        """Undirected pairs once each, split; the message graph holds the training pairs (on
        a sharded graph: every rank gathers the pairs, each keeps its rows of the message
        graph)."""
        if self.sharded and graph.placement.permuted:
            fail(ArgumentError, "fit_link", "data", "is a DistGraph loaded with a "
                 "permutation: link prediction takes a graph in its file's ids", graph)
        src, dst = gathered_edge_index(graph) if self.sharded else graph.edge_index()
        once = src < dst
        src, dst = src[once], dst[once]
        parts = split_edges(src, dst, seed=seed)
        tr = parts["train"]
        self.graph = _message_graph(graph, src[tr], dst[tr])
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
        if self.sharded and graph.is_temporal:
            fail(ArgumentError, "fit_link", "data", "is a temporal graph sharded over the "
                 "ranks: its chronological split and reverse relation are built from the "
                 "whole graph, so temporal link training needs it on every rank "
                 "(replicate_graph=True, or replication = the number of ranks)",
                 show_value=False)
        if self.sharded:
            fail(ArgumentError, "fit_link", "split", "a random split of a heterogeneous "
                 "relation needs it removed from the graph: use stored edge_splits", split)
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


def _message_graph(graph, src, dst):
    """The undirected graph of the pairs ``src < dst``: a :class:`~spsample.Graph`, or on a
    sharded ``graph`` a :class:`~spsample.distributed.DistGraph` on its grid holding this
    process row's rows of that very graph (the same rows, order and edge ids; collective)."""
    from .._graph import Graph
    from ..distributed import DistGraph
    n = graph.num_nodes
    if grid_of(graph) is None:
        return Graph.from_edge_index(src, dst, num_nodes=n, symmetrize=True)
    lo, hi = graph.grid.block(n)
    rows, cols = np.concatenate([dst, src]), np.concatenate([src, dst])
    keep = (rows >= lo) & (rows < hi)
    rows, cols = rows[keep], cols[keep]
    order = np.lexsort((cols, rows))                # distinct pairs: no duplicates to merge
    indptr = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows - lo, minlength=hi - lo), out=indptr[1:])
    return DistGraph(graph.grid, n, lo, indptr, cols[order], None)


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
    """The task's features with rows scaled to sum 1 (a ``FeatureStore``: its shard's rows,
    the same bits)."""
    from ..distributed import FeatureStore
    from .hetero import normalized_features
    x = task.features
    if x is None:
        return None
    if task.hetero:
        return normalized_features(x)
    if isinstance(x, FeatureStore):
        return FeatureStore(x.grid, x.num_nodes, x.lo, normalized_features({"x": x.shard})["x"],
                            x.placement)
    return normalized_features({"x": x})["x"]


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
                     conv="torch",
                     sparse_input=sp.issparse(feats) or getattr(feats, "sparse", False))


def _scores(task, model, b):
    """Scores of the batch's labelled pairs: binary ``(scores, labels)`` or triplet
    ``(positive scores, negative scores (b, K))``.

    Rows are gathered with ``index_select``, whose gradient (``index_add_``) sums in a fixed
    order: advanced indexing's gradient (``index_put_`` with accumulation) adds float32 rows
    with atomics across threads, so training would not be bit-reproducible."""
    if task.hetero:
        h = model(b)
        hs, hd = h[task.relation[0]], h[task.relation[2]]
    else:
        hs = hd = model(b)
    if b.edge_label_index is not None:
        ei = b.edge_label_index
        return (hs.index_select(0, ei[0]) * hd.index_select(0, ei[1])).sum(-1), b.edge_label
    u = hs.index_select(0, b.src_index)
    pos = (u * hd.index_select(0, b.dst_pos_index)).sum(-1)
    neg_index = b.dst_neg_index.reshape(-1)
    neg = hd.index_select(0, neg_index).reshape(u.shape[0], -1, hd.shape[1])
    return pos, (u.unsqueeze(1) * neg).sum(-1)


def fit_link(data, *, relation=None, split="auto", fanouts=(10, 10), hidden=64, out=64,
             epochs=20, lr=0.005, weight_decay=0.0, dropout=0.2, batch_size=512, bulk_size=4,
             neg_ratio=1.0, eval_negatives=20, seed=0, log=None, progress=False, comm=None,
             strategy=None, features=None):
    """Train a GraphSAGE encoder + dot-product decoder for link prediction; test the
    best-validation model (see the module docstring).

    Parameters
    ----------
    data : Dataset, HeteroDataset, a graph, or distributed data
        Node features are used when present (learned embeddings for featureless types). A
        :class:`~spsample.distributed.DistGraph` (or ``ShardedDataset``) or a
        ``DistHeteroGraph`` (or a dataset holding one, e.g. from
        :func:`~spsample.distributed.load_hetero_dataset`) trains with each rank holding its
        block rows: every rank gathers the graph's pairs (24 bytes per entry, once), splits
        them as one process does and keeps its rows of the training pairs' graph; a
        heterogeneous one needs stored ``edge_splits`` (a temporal graph's chronological
        split needs the whole graph on every rank: ``replicate_graph=True``).
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
    comm : mpi4py communicator, optional
        Data-parallel training over its ranks (every rank calls ``fit_link`` with the same
        arguments): each trains on its share of every epoch's minibatches, gradients are
        averaged by one all-reduce per step, AUC and MRR are computed over all ranks' scores.
        Default: the grid's ranks of distributed data, else one process. The minibatches are
        the same whether the graph is whole on every rank or sharded, so are the losses.
    strategy : {"push", "pull"}, optional
        How a sharded graph is sampled (default push).
    features : array, scipy.sparse matrix or FeatureStore, optional
        Node features to use instead of ``data``'s (e.g. held whole by every rank beside a
        sharded graph).

    Returns
    -------
    dict
        ``test_auc``, ``test_mrr``, ``val_auc``, ``val_mrr``, ``best_epoch``, ``seconds``,
        ``sampled_edges`` (all ranks), ``split`` sizes, ``world_size``, ``history`` (per
        epoch: ``loss``, the mean over all ranks' batches, ``val_auc``, ``val_mrr``,
        ``seconds`` of training (the slowest rank's), ``bytes``: what the ranks sent
        together per phase, ``sampling``, ``negatives``, ``feature_fetch`` and
        ``gradient_allreduce``), ``bytes_per_epoch`` (their mean, with a ``total`` per phase).
    """
    import spsample

    from ._ddp import GradientAllReduce, world_of
    from ._trainer import _grid_comm, _mean_bytes
    if split not in ("auto", "random", "time", "stored"):
        fail(ArgumentError, "fit_link", "split", "must be auto, random, time or stored", split)
    graph = getattr(data, "graph", data)
    if grid_of(graph) is not None:
        comm = _grid_comm(graph, comm)
    rank, size = world_of(comm)
    torch.manual_seed(seed)
    task = _Task(data, relation, split, seed, features)
    feats = _features(task)

    def loader(part, **kw):
        rel, ei = task.edges[part]
        return spsample.LinkLoader(task.graph, ei if rel is None else (rel, ei),
                                   sampler=spsample.NodeWise(list(fanouts)),
                                   batch_size=batch_size, bulk_size=bulk_size, features=feats,
                                   edge_time=task.times[part], exclude_seed_edges=True,
                                   seed=seed, rank=rank, world_size=size,
                                   strategy=strategy if task.sharded else None, **kw)

    train = loader("train", neg_ratio=neg_ratio)
    val, test = (loader(p, neg_sampling="triplet", neg_ratio=eval_negatives, strict=True,
                        shuffle=False) for p in ("val", "test"))
    model = _encoder(task, feats, hidden, out, len(fanouts), dropout)
    reduce = GradientAllReduce(list(model.parameters()), comm)
    reduce.broadcast_parameters()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, history, start = dict(val_auc=-1.0, epoch=-1, state=None), [], time.perf_counter()

    def loss_of(model, b):
        score, label = _scores(task, model, b)
        return torch.nn.functional.binary_cross_entropy_with_logits(score, label)

    for epoch in range(epochs):
        entry = _train_epoch(model, opt, train, loss_of, progress, epoch, reduce)
        entry["val_auc"], entry["val_mrr"] = _evaluate(task, model, val, reduce.comm)
        history.append(entry)
        if log is not None:
            log(entry)
        if entry["val_auc"] > best["val_auc"]:
            best = dict(val_auc=entry["val_auc"], val_mrr=entry["val_mrr"], epoch=epoch,
                        state={k: v.clone() for k, v in model.state_dict().items()})
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    ta, tm = _evaluate(task, model, test, reduce.comm)
    reduce.close()
    return dict(test_auc=ta, test_mrr=tm, val_auc=best["val_auc"],
                val_mrr=best.get("val_mrr", 0.0), best_epoch=best["epoch"],
                seconds=time.perf_counter() - start,
                sampled_edges=int(sum(e["sampled_edges"] for e in history)),
                eval_negatives=eval_negatives, world_size=size,
                split={p: int(e[1].shape[1]) for p, e in task.edges.items()}, history=history,
                bytes_per_epoch=_mean_bytes(history))


def _train_epoch(model, opt, loader, loss_of, progress, epoch, reduce):
    """One data-parallel epoch: its history entry (loss and sampled edges over all ranks,
    the slowest rank's seconds, the ranks' bytes per phase)."""
    from ._ddp import sum_over_ranks
    from ._trainer import epoch_traffic
    t0, gradient_bytes = time.perf_counter(), reduce.bytes_sent
    loss, sampled = run_epoch(model, opt, loader, loss_of, progress, f"epoch {epoch + 1}",
                              reduce)
    seconds, stats = time.perf_counter() - t0, loader.last_stats
    steps = stats["batches"]
    loss_sum, steps, sampled = sum_over_ranks(reduce.comm, [loss * steps, steps, sampled])
    traffic = epoch_traffic(reduce.comm, stats, reduce.bytes_sent - gradient_bytes, phases=(
        ("sampling", "sampling_bytes"), ("negatives", "negative_bytes"),
        ("feature_fetch", "fetch_bytes")))
    if reduce.comm is not None:
        seconds = max(reduce.comm.allgather(seconds))
    return dict(epoch=epoch, loss=loss_sum / max(steps, 1), sampled_edges=int(sampled),
                seconds=seconds, bytes=traffic)


@torch.no_grad()
def _evaluate(task, model, loader, comm=None):
    """``(AUC, MRR)`` over the scores of every rank of ``comm`` (in the order of the
    minibatches' global ids: the ranks hold consecutive ranges)."""
    model.eval()
    width = int(loader.neg_ratio)
    pos, neg = [np.zeros(0, dtype=np.float32)], [np.zeros((0, width), dtype=np.float32)]
    for b in loader:
        p, n = _scores(task, model, b)
        pos.append(p.numpy())
        neg.append(n.numpy().reshape(p.shape[0], width))
    pos, neg = np.concatenate(pos), np.concatenate(neg)
    if comm is not None:
        pos, neg = (np.concatenate(comm.allgather(a)) for a in (pos, neg))
    return auc(pos, neg), mrr(pos, neg)
