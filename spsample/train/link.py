"""Link prediction on spsample batches: a GraphSAGE encoder and a dot-product decoder.

:func:`fit_link` splits the edges (random 85/5/10 on a plain graph, chronological 70/15/15 on a
temporal one, or a dataset's stored ``edge_splits``), trains on
:class:`~spsample.LinkLoader` batches (binary negatives, the seed edges excluded from message
passing) and reports, for the best-validation model, the test **AUC** (positives against
their triplet negatives, ties counted half) and **MRR** (each positive ranked against its
``eval_negatives`` strict negatives with the same source; rank = 1 + #higher + #ties / 2).
Temporal graphs sample each seed edge's neighbourhood as it was at the edge's time.
"""

import math
import time

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError
from ..graph._hetero import HeteroGraph, HeteroSchema
from ..samplers import NodeWise
from .._optional import import_torch
from .._validate import as_int, fail
from ..distributed import DistGraph, FeatureStore
from ..distributed._strategies import check_strategy
from ..graph._graph import Graph
from ..loader import LinkLoader
from ..loader._link import check_negatives
from ..loader._link_dist import gathered_edge_index, grid_of
from ._checkpoint import TaskRun, start_run
from ._ddp import GradientAllReduce, sum_over_ranks, world_of
from ._model import GraphSAGE
from ._steps import seeded_init
from ._trainer import _grid_comm, _mean_bytes, epoch_traffic, evaluation_batches, run_epoch
from .hetero import HeteroSAGE, normalized_features

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
            self._plain(graph, relation, split, seed)

    def _plain(self, graph, relation, split, seed):
        """Undirected pairs once each, split; the message graph holds the training pairs (on
        a sharded graph: every rank gathers the pairs, each keeps its rows of the message
        graph)."""
        if relation is not None:
            fail(ArgumentError, "fit_link", "relation", "names a relation of a heterogeneous "
                 "graph; this graph is homogeneous (one kind of edge): leave it out", relation)
        if split in ("time", "stored"):
            fail(ArgumentError, "fit_link", "split", "must be auto or random on a homogeneous "
                 "graph (it has no edge times and no stored edge splits)", split)
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
        stored = getattr(data, "edge_splits", None) or {}
        if split == "stored" or (split == "auto" and stored):
            self.graph = graph
            self.edges = {p: (rel, _stored_part(stored, p, rel, relation))
                          for p in ("train", "val", "test")}
            self.times = {p: None for p in self.edges}
            return
        if self.sharded and graph.is_temporal and split != "random":
            fail(ArgumentError, "fit_link", "data", "is a temporal graph sharded over the "
                 "ranks: its chronological split and reverse relation are built from the "
                 "whole graph, so temporal link training needs it on every rank "
                 "(replicate_graph=True, or replication = the number of ranks)",
                 show_value=False)
        time_ = None if self.sharded else graph.edge_time(rel)
        if split == "random" or time_ is None:
            _no_split(split, rel)
        indptr, indices, _ = graph.csr(rel)
        dst = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        parts = split_edges(indices, dst, time=time_, fractions=(0.70, 0.15, 0.15), seed=seed)
        self.graph = _with_reverse(graph, rel)
        self.edges = {p: (rel, np.stack([indices[i], dst[i]])) for p, i in parts.items()}
        self.times = {p: time_[i] for p, i in parts.items()}

    @property
    def disjoint(self):
        """Whether every seed of a minibatch is sampled as its own subgraph (temporal)."""
        return self.times["train"] is not None

    def mean_degree(self):
        """Message-passing entries per vertex of the graph sampled (every relation)."""
        if not self.hetero:         # the training pairs, both directions
            return 2.0 * self.edges["train"][1].shape[1] / max(1, self.graph.num_nodes)
        return sum(self.graph.num_edges.values()) / max(1, self.graph.total_nodes)


#: Relations an error message lists at most.
_SHOWN = 8


def _stored_part(stored, part, rel, relation):
    """The stored ``(2, E)`` edges of ``rel`` in ``part``, or an :class:`ArgumentError`
    naming the relation and those the part holds."""
    held = stored.get(part, {})
    if rel in held and held[rel].shape[1] > 0:
        return held[rel]
    if not stored:
        fail(ArgumentError, "fit_link", "split", "'stored' needs stored edge_splits; the "
             "data has none", "stored")
    present = sorted(r for r, e in held.items() if e.shape[1] > 0)
    shown = "; ".join(",".join(r) for r in present[:_SHOWN])
    more = f"; ... ({len(present)} in all)" if len(present) > _SHOWN else ""
    fail(ArgumentError, "fit_link", "relation" if relation is not None else "data",
         f"{','.join(rel)} has no {part} edges in the stored edge_splits; relations with "
         f"{part} edges: {shown or 'none'}{more}", show_value=False)


def _no_split(split, rel):
    """Raise the error of a heterogeneous relation that cannot be split as asked."""
    if split == "random":
        fail(ArgumentError, "fit_link", "split", "'random' is not available on a "
             "heterogeneous graph (the held-out edges would stay in the message graph): use "
             "'time' on a temporal graph or 'stored' edge_splits", split)
    if split == "time":
        fail(ArgumentError, "fit_link", "split", f"'time' needs edge times; relation {rel!r} "
             "has none", split)
    fail(ArgumentError, "fit_link", "data", f"cannot be split for link prediction: relation "
         f"{rel!r} has no edge times and the data has no stored edge_splits (a random split "
         "would leave the held-out edges in the message graph); store train/val/test "
         "edge_splits (spsample convert does for knowledge graphs) or use a temporal graph",
         show_value=False)


def _message_graph(graph, src, dst):
    """The undirected graph of the pairs ``src < dst``: a :class:`~spsample.Graph`, or on a
    sharded ``graph`` a :class:`~spsample.distributed.DistGraph` on its grid holding this
    process row's rows of that very graph (the same rows, order and edge ids; collective)."""
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


# ---------------------------------------------------------------------- automatic settings
#: ``fit_link(fanouts=None)`` on a temporal graph, where every seed is its own subgraph: the
#: first of these whose measured subgraphs hold at most :data:`SEED_VERTICES` vertices per
#: seed (else the last); ``DEFAULT_FANOUTS`` elsewhere.
TEMPORAL_FANOUTS = ((10, 10), (10, 5), (5, 5))
DEFAULT_FANOUTS = (10, 10)
SEED_VERTICES = 32
#: ``eval_negatives=None``: the first of these with which a validation pass samples at most
#: :data:`EVAL_SHARE` of the seed vertices of a training epoch.
EVAL_NEGATIVES = (20, 10, 5, 2, 1)
EVAL_SHARE = 0.5
#: Seed edges of the minibatch measured to choose a temporal graph's fanouts.
_PROBE_EDGES = 128


def _subgraph_vertices(fanouts, degree):
    """Estimated vertices of one seed's subgraph: ``1 + sum_l prod_{i <= l} min(f_i, d)``."""
    total = layer = 1.0
    for f in fanouts:
        layer *= min(float(f), degree)
        total += layer
    return total


def _measured_vertices(task, fanouts, seed):
    """Sampled vertices per seed of a training minibatch of :data:`_PROBE_EDGES` seed edges
    (epoch 0's first; one negative per edge) with ``fanouts``: the whole graph, sampled here
    alone (every rank measures the same)."""
    rel, ei = task.edges["train"]
    loader = LinkLoader(task.graph, (rel, ei), sampler=NodeWise(
        list(fanouts)), batch_size=min(_PROBE_EDGES, ei.shape[1]), bulk_size=1,
        edge_time=task.times["train"], exclude_seed_edges=True, seed=seed, pipeline=False,
        rank=0, world_size=1)
    with loader.iter_epoch(0) as batches:
        b = next(batches)
    return sum(int(v.shape[0]) for v in b.n_id_dict.values()) / b.batch_size


def link_settings(task, *, fanouts, eval_negatives, eval_batch_size, batch_size, neg_ratio,
                  seed):
    """``(fanouts, eval_negatives, eval_batch_size)`` of a run, each ``None`` chosen from the
    graph (see :func:`fit_link`)."""
    if fanouts is None:
        fanouts = DEFAULT_FANOUTS
        if task.disjoint:
            for fanouts in TEMPORAL_FANOUTS:
                if _measured_vertices(task, fanouts, seed) <= SEED_VERTICES:
                    break
    train_edges = task.edges["train"][1].shape[1]
    val_edges = task.edges["val"][1].shape[1]
    per_edge = 2 + 2 * neg_ratio               # seeds per training edge (binary negatives)
    if eval_negatives is None:
        budget = EVAL_SHARE * train_edges * per_edge
        eval_negatives = next((k for k in EVAL_NEGATIVES if val_edges * (2 + k) <= budget),
                              EVAL_NEGATIVES[-1])
    if eval_batch_size is None:
        eval_batch_size = _eval_batch(task, fanouts, batch_size, per_edge, eval_negatives)
    return tuple(int(f) for f in fanouts), int(eval_negatives), int(eval_batch_size)


def _eval_batch(task, fanouts, batch_size, per_edge, eval_negatives):
    """The largest evaluation batch (at most ``batch_size`` edges) whose minibatch samples
    no more vertices (estimated) than a training minibatch: seeds times
    :func:`_subgraph_vertices`, capped at the graph's vertices unless disjoint."""
    n = task.graph.total_nodes if task.hetero else task.graph.num_nodes
    per_seed = _subgraph_vertices(fanouts, task.mean_degree())

    def vertices(seeds):
        return seeds * per_seed if task.disjoint else min(n, seeds * per_seed)
    limit = vertices(batch_size * per_edge)
    size = batch_size
    while size > 1 and vertices(size * (2 + eval_negatives)) > limit:
        size = max(1, min(size - 1, int(limit / ((2 + eval_negatives) * per_seed))))
    return size


# ---------------------------------------------------------------------- training
def fit_link(data, *, relation=None, split="auto", fanouts=None, hidden=64, out=64,
             epochs=20, lr=0.005, weight_decay=0.0, dropout=0.2, batch_size=512, bulk_size=4,
             neg_ratio=1.0, eval_negatives=None, eval_batch_size=None, seed=0, log=None,
             progress=False, comm=None, strategy=None, features=None, checkpoint=None,
             resume=None):
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
        Heterogeneous data: the relation to predict (default: the first). Refused on a
        homogeneous graph.
    split : {"auto", "random", "time", "stored"}
        ``auto``: stored edge splits if the dataset has them, chronological on a temporal
        graph, random 85/5/10 on a plain graph.
    fanouts : sequence of int, optional
        Per hop. Default ``(10, 10)``; on a temporal graph, where every seed of a minibatch
        is its own subgraph (cut at its time), the first of :data:`TEMPORAL_FANOUTS`
        (``(10, 10)``, ``(10, 5)``, ``(5, 5)``) whose subgraphs hold at most
        :data:`SEED_VERTICES` (32) vertices per seed, measured on one training minibatch of
        128 edges (else ``(5, 5)``).
    eval_negatives : int, optional
        Strict negatives per positive for validation and test (AUC and MRR). Default: the
        first of 20, 10, 5, 2, 1 with which a validation pass samples at most half the seed
        vertices of a training epoch (``val edges * (2 + K) <= 0.5 * train edges * (2 + 2 *
        ceil(neg_ratio))``): 20 on a random 85/5/10 split, 5 on a chronological 70/15/15 one.
    eval_batch_size : int, optional
        Seed edges per evaluation minibatch. Default: the largest, at most ``batch_size``,
        whose minibatch samples no more vertices than a training minibatch (estimated: seeds
        times ``1 + sum_l prod_{i <= l} min(f_i, mean degree)``, capped at the graph's
        vertices unless every seed is its own subgraph).
    neg_ratio : float
        Training negatives per positive (binary); their memory is estimated before any is
        drawn (:class:`~spsample.ResourceLimitError` naming ``neg_ratio``; the evaluation
        negatives' naming ``eval_negatives``).
    log : callable, optional
        Called with each epoch's dict.
    progress : bool
        tqdm progress bars over each epoch's minibatches and over the evaluation's.
    comm : spsample.distributed.Communicator or mpi4py communicator, optional
        Data-parallel training over its ranks (``MPIComm``, ``NcclComm``, a ``ThreadComm``; every
        rank calls ``fit_link`` with the same arguments): each trains on its share of every epoch's
        minibatches, gradients are averaged by one all-reduce per step, AUC and MRR are computed
        over all ranks' scores. Default: the grid's ranks of distributed data, else one process. The
        minibatches are the same whether the graph is whole on every rank or sharded, so are the
        losses.
    strategy : str, optional
        How a sharded graph is sampled: a name in ``spsample.distributed.STRATEGIES`` (the
        registered strategies; default push).
    features : array, scipy.sparse matrix or FeatureStore, optional
        Node features to use instead of ``data``'s (e.g. held whole by every rank beside a
        sharded graph).
    checkpoint : str or os.PathLike, optional
        Written (by rank 0, atomically) after every epoch: model, optimizer, history,
        best-validation model, settings.
    resume : str or os.PathLike, optional
        A ``checkpoint`` of a run with the same settings (and world size): training continues
        at its next epoch up to ``epochs``, with the losses an uninterrupted run has, bit for
        bit (each epoch's minibatches come from ``(seed, epoch)``, its dropout masks from
        ``(seed, epoch, rank)``).

    Returns
    -------
    dict
        ``test_auc``, ``test_mrr``, ``val_auc``, ``val_mrr``, ``best_epoch``, ``seconds``,
        ``sampled_edges`` (all ranks), ``fanouts``, ``eval_negatives``, ``eval_batch_size``
        (as chosen), ``split`` sizes, ``world_size``, ``history`` (per epoch: ``loss``, the
        mean over all ranks' batches, ``val_auc``, ``val_mrr``, ``seconds`` of training (the
        slowest rank's), ``eval_seconds`` (validation), this rank's seconds per phase
        (``sample_seconds``, ``fetch_seconds``, ``convert_seconds``, ``wait_seconds``,
        ``forward_seconds``, ``backward_seconds``, ``optimizer_seconds``), ``threads`` and
        ``sampler_threads``, ``bytes``: what the ranks sent together per phase,
        ``sampling``, ``negatives``, ``feature_fetch`` and ``gradient_allreduce``),
        ``bytes_per_epoch`` (their mean, with a ``total`` per phase).
    """
    if split not in ("auto", "random", "time", "stored"):
        fail(ArgumentError, "fit_link", "split", "must be auto, random, time or stored", split)
    epochs = as_int("fit_link", "epochs", epochs, minimum=0)
    batch_size = as_int("fit_link", "batch_size", batch_size, minimum=1)
    for name, value in (("eval_negatives", eval_negatives),
                        ("eval_batch_size", eval_batch_size)):
        if value is not None:
            as_int("fit_link", name, value, minimum=1)
    if isinstance(neg_ratio, bool) or not isinstance(neg_ratio, (int, float, np.number)):
        fail(ArgumentTypeError, "fit_link", "neg_ratio", "must be a number", neg_ratio)
    if not (math.isfinite(neg_ratio) and neg_ratio > 0):
        fail(ArgumentError, "fit_link", "neg_ratio", "must be a finite number > 0", neg_ratio)
    check_strategy("fit_link", strategy, allow_none=True)
    graph = getattr(data, "graph", data)
    if grid_of(graph) is not None:
        comm = _grid_comm(graph, comm)
    rank, size = world_of(comm)
    task = _Task(data, relation, split, seed, features)
    fanouts, eval_negatives, eval_batch_size = link_settings(
        task, fanouts=fanouts, eval_negatives=eval_negatives, eval_batch_size=eval_batch_size,
        batch_size=batch_size, neg_ratio=neg_ratio, seed=seed)
    feats = _features(task)

    def loader(part, **kw):
        rel, ei = task.edges[part]
        return LinkLoader(task.graph, ei if rel is None else (rel, ei),
                          sampler=NodeWise(list(fanouts)), bulk_size=bulk_size,
                          features=feats, edge_time=task.times[part],
                          exclude_seed_edges=True, seed=seed, rank=rank, world_size=size,
                          strategy=strategy if task.sharded else None, **kw)

    train = loader("train", neg_ratio=neg_ratio, batch_size=batch_size)
    check_negatives("fit_link", "eval_negatives", eval_batch_size, bulk_size, eval_negatives,
                    "triplet", task.disjoint)
    val, test = (loader(p, neg_sampling="triplet", neg_ratio=eval_negatives, strict=True,
                        shuffle=False, batch_size=eval_batch_size) for p in ("val", "test"))
    with seeded_init(seed):
        model = _encoder(task, feats, hidden, out, len(fanouts), dropout)
    reduce = GradientAllReduce(list(model.parameters()), comm)
    reduce.broadcast_parameters()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    settings = dict(relation=task.relation, split=split, fanouts=fanouts, hidden=hidden,
                    out=out, lr=lr, weight_decay=weight_decay, dropout=dropout,
                    batch_size=batch_size, bulk_size=bulk_size, neg_ratio=neg_ratio,
                    eval_negatives=eval_negatives, eval_batch_size=eval_batch_size, seed=seed)
    run = TaskRun("fit_link", "link", settings, model, opt, "val_auc", rank, size)
    start_run(run, reduce.comm, checkpoint, resume)
    start = time.perf_counter()

    def loss_of(model, b):
        score, label = _scores(task, model, b)
        return torch.nn.functional.binary_cross_entropy_with_logits(score, label)

    while run.epoch < epochs:
        entry = _train_epoch(model, opt, train, loss_of, progress, run.epoch, reduce, seed)
        t0 = time.perf_counter()
        entry["val_auc"], entry["val_mrr"] = _evaluate(task, model, val, reduce.comm,
                                                       progress, "validation")
        entry["eval_seconds"] = time.perf_counter() - t0
        run.record(entry, dict(val_auc=entry["val_auc"], val_mrr=entry["val_mrr"]))
        if log is not None:
            log(entry)
        if checkpoint is not None:
            run.save(checkpoint)
    run.restore_best()
    ta, tm = _evaluate(task, model, test, reduce.comm, progress, "test")
    reduce.close()
    history = run.history
    return dict(test_auc=ta, test_mrr=tm, val_auc=run.best["val_auc"],
                val_mrr=run.best.get("val_mrr", 0.0), best_epoch=run.best["epoch"],
                seconds=time.perf_counter() - start,
                sampled_edges=int(sum(e["sampled_edges"] for e in history)),
                fanouts=list(fanouts), eval_negatives=eval_negatives,
                eval_batch_size=eval_batch_size, world_size=size,
                split={p: int(e[1].shape[1]) for p, e in task.edges.items()}, history=history,
                bytes_per_epoch=_mean_bytes(history))


def _train_epoch(model, opt, loader, loss_of, progress, epoch, reduce, seed):
    """One data-parallel epoch: its history entry (loss and sampled edges over all ranks,
    the slowest rank's seconds, this rank's phases, the ranks' bytes per phase)."""
    t0, gradient_bytes = time.perf_counter(), reduce.bytes_sent
    done = run_epoch(model, opt, loader, loss_of, epoch=epoch, seed=seed, progress=progress,
                     desc=f"epoch {epoch + 1}", reduce=reduce, rank=reduce.rank)
    seconds, stats = time.perf_counter() - t0, done.pop("stats")
    loss_sum, steps, sampled = sum_over_ranks(reduce.comm, [done["loss"] * done["batches"],
                                                            done["batches"],
                                                            done["sampled_edges"]])
    traffic = epoch_traffic(reduce.comm, stats, reduce.bytes_sent - gradient_bytes, phases=(
        ("sampling", "sampling_bytes"), ("negatives", "negative_bytes"),
        ("feature_fetch", "fetch_bytes")))
    if reduce.comm is not None:
        seconds = max(reduce.comm.allgather_object(seconds))
    return dict(done, epoch=epoch, loss=loss_sum / max(steps, 1), sampled_edges=int(sampled),
                seconds=seconds, bytes=traffic)


@torch.no_grad()
def _evaluate(task, model, loader, comm=None, progress=False, desc="evaluation"):
    """``(AUC, MRR)`` over the scores of every rank of ``comm`` (in the order of the
    minibatches' global ids: the ranks hold consecutive ranges)."""
    model.eval()
    width = int(loader.neg_ratio)
    pos, neg = [np.zeros(0, dtype=np.float32)], [np.zeros((0, width), dtype=np.float32)]
    for b in evaluation_batches(loader, progress, desc):
        p, n = _scores(task, model, b)
        pos.append(p.numpy())
        neg.append(n.numpy().reshape(p.shape[0], width))
    pos, neg = np.concatenate(pos), np.concatenate(neg)
    if comm is not None:
        pos, neg = (np.concatenate(comm.allgather_object(a)) for a in (pos, neg))
    return auc(pos, neg), mrr(pos, neg)
