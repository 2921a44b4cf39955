"""Heterogeneous GraphSAGE and its node-classification training on spsample batches.

:class:`HeteroSAGE` is GraphSAGE with one mean aggregator per relation (R-GCN / PyG's
``to_hetero(SAGE)`` with ``aggr="sum"`` over relations): layer ``l`` computes, for every node
type ``t``, ``h_t' = W_root[t] h_t + Σ_{relations r into t} W_r · mean_{j in N_r(i)} h_j``,
then ReLU and dropout. Node types with features enter through a linear projection (sparse
rows are projected without densifying), the others through a learned embedding of their ids.
Layer ``l`` runs on the part of a :class:`~spsample.loader.HeteroBatch` the later layers read
(the vertices within ``L - 1 - l`` hops of the seeds), as PyG's ``trim_to_layer``; dropout
draws 16-bit masks (:func:`spsample.train.dropout`).

:func:`fit_node` trains it on a :class:`~spsample.io.HeteroDataset` (e.g. HeCo's ACM or
DBLP with their fixed splits) and reports accuracy, macro- and micro-F1 of the
best-validation model.
"""

import time

import numpy as np

from .._errors import ArgumentError
from .._optional import import_torch
from .._validate import as_int, check_memory, fail
from ..distributed._strategies import check_strategy
from ..graph._hetero import HeteroGraph
from ..loader import Loader
from ..samplers import NodeWise
from ._aggregate import scatter_aggregate
from ._dropout import dropout
from ._trainer import _grid_comm, evaluation_batches, run_epoch
from ..loader._sparse import SparseRows
from ._checkpoint import TaskRun, start_run
from ._ddp import GradientAllReduce, sum_over_ranks, world_of
from ._steps import seeded_init

torch = import_torch("spsample.train.hetero")

__all__ = ["HeteroSAGE", "fit_node", "macro_f1", "normalized_features"]


def _check_widths(graph, in_channels, hidden_channels, out_channels, num_layers):
    """``(hidden_channels, out_channels)`` checked, and the float32 weights they imply
    (inputs, then two matrices per type or relation and layer) against the memory limit
    before torch is asked for them (a width of 10**20 overflowed inside torch)."""
    hidden = as_int("HeteroSAGE", "hidden_channels", hidden_channels, minimum=1)
    out = as_int("HeteroSAGE", "out_channels", out_channels, minimum=1)
    rows = sum(int(in_channels[t]) if t in in_channels else int(graph.num_nodes[t])
               for t in graph.node_types)
    per_layer = len(graph.node_types) + len(graph.relations)
    nbytes = 4 * hidden * (rows + per_layer * (hidden * (num_layers - 1) + out))
    check_memory("HeteroSAGE", "hidden_channels", nbytes, "the weights of the input, root "
                 "and neighbour layers", "use a smaller hidden_channels")
    return hidden, out


class HeteroSAGE(torch.nn.Module):
    """GraphSAGE over the relations of a heterogeneous graph (see the module docstring).

    Parameters
    ----------
    graph : HeteroGraph
        Gives the node types, relations and type sizes (embeddings).
    in_channels : dict of str to int
        Feature width of the types that have features; the others get embeddings.
    hidden_channels, out_channels : int
        ``out_channels`` is the width of the last layer (classes, or embedding size).
    num_layers : int
    dropout : float
    """

    def __init__(self, graph, in_channels, hidden_channels, out_channels, num_layers=2, *,
                 dropout=0.5):
        super().__init__()
        if not isinstance(num_layers, int) or num_layers < 1:
            fail(ArgumentError, "HeteroSAGE", "num_layers", "must be an int >= 1", num_layers)
        self.types, self.relations = graph.node_types, graph.relations
        hidden_channels, out_channels = _check_widths(graph, in_channels, hidden_channels,
                                                      out_channels, num_layers)
        self.inputs = torch.nn.ModuleDict()
        for t in self.types:
            if t in in_channels:
                self.inputs[t] = torch.nn.Linear(in_channels[t], hidden_channels)
            else:
                self.inputs[t] = torch.nn.Embedding(graph.num_nodes[t], hidden_channels)
        sizes = [hidden_channels] * num_layers + [out_channels]
        self.root = torch.nn.ModuleList()
        self.neigh = torch.nn.ModuleList()
        for a, b in zip(sizes[:-1], sizes[1:]):
            self.root.append(torch.nn.ModuleDict({t: torch.nn.Linear(a, b) for t in self.types}))
            self.neigh.append(torch.nn.ModuleDict({_key(r): torch.nn.Linear(a, b, bias=False)
                                                   for r in self.relations}))
        self.dropout = float(dropout)

    def embed(self, batch):
        """Every sampled vertex's input representation, per type."""
        h = {}
        for t in self.types:
            if t not in batch.n_id_dict:
                continue
            layer = self.inputs[t]
            if isinstance(layer, torch.nn.Embedding):
                h[t] = layer(batch.n_id_dict[t])
            else:
                x = batch.x_dict[t]
                h[t] = (x.matmul_t(layer.weight) if isinstance(x, SparseRows)
                        else torch.nn.functional.linear(x, layer.weight)) + layer.bias
        return h

    def forward(self, batch):
        """Per node type, the output rows of the batch's seeds (its hop-0 vertices:
        ``num_sampled_nodes_dict[t][0]`` rows of type ``t``, seeds first as in ``n_id_dict``).

        Layer ``l`` of ``L`` computes only the rows the later layers read: the vertices of
        hops ``0 .. L - 1 - l`` from the edges of hops ``1 .. L - l`` (PyG's
        ``trim_to_layer``); the last hop's vertices enter through their inputs only."""
        h = self.embed(batch)
        nodes = batch.num_sampled_nodes_dict
        edges = batch.num_sampled_edges_dict
        last = len(self.root) - 1
        for layer, (root, neigh) in enumerate(zip(self.root, self.neigh)):
            hops = last - layer + 1                   # hops 0 .. hops - 1 are computed
            h = {t: dropout(torch.relu(v), self.dropout, self.training) for t, v in h.items()}
            rows = {t: int(sum(nodes[t][:hops])) for t in h}
            out = {t: root[t](v[:rows[t]]) for t, v in h.items()}
            for rel, ei in batch.edge_index_dict.items():
                s, _, d = rel
                count = int(sum(edges[rel][:hops]))
                if count == 0 or s not in h or d not in h:
                    continue
                agg = scatter_aggregate(h[s], ei[:, :count], rows[d])
                out[d] = out[d] + neigh[_key(rel)](agg)
            h = out
        return h


def _key(rel):
    return "__".join(rel)


# ---------------------------------------------------------------------- metrics
def macro_f1(pred, true, num_classes):
    """``(macro-F1, micro-F1)`` of integer predictions (micro-F1 = accuracy here)."""
    pred, true = np.asarray(pred), np.asarray(true)
    f1 = []
    for c in range(num_classes):
        tp = np.sum((pred == c) & (true == c))
        fp = np.sum((pred == c) & (true != c))
        fn = np.sum((pred != c) & (true == c))
        f1.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(f1)), float(np.mean(pred == true))


def normalized_features(features):
    """Each type's features with rows scaled to sum 1 (dense float32 or CSR float32)."""
    import scipy.sparse as sp
    out = {}
    for t, x in features.items():
        if sp.issparse(x):
            x = sp.csr_matrix(x, dtype=np.float32)
            s = np.asarray(abs(x).sum(axis=1)).ravel()
            out[t] = sp.diags(1.0 / np.where(s > 0, s, 1.0)).astype(np.float32) @ x
        else:
            x = np.asarray(x, dtype=np.float32)
            s = np.abs(x).sum(axis=1, keepdims=True)
            out[t] = x / np.where(s > 0, s, 1.0)
    return out


# ---------------------------------------------------------------------- training
def fit_node(ds, *, split=None, fanouts=(10, 10), eval_fanouts=None, hidden=64, epochs=100,
             lr=0.005, weight_decay=5e-4, dropout=0.5, batch_size=256, bulk_size=4, seed=0,
             patience=None, log=None, progress=False, comm=None, strategy=None,
             checkpoint=None, resume=None):
    """Train :class:`HeteroSAGE` on the target type of ``ds`` and test the best-validation
    model.

    Parameters
    ----------
    ds : HeteroDataset
        With ``target_type``, its labels and ``splits``. Its graph may be a
        :class:`~spsample.distributed.DistHeteroGraph`
        (:func:`spsample.distributed.load_hetero_dataset`): each rank holds its block rows.
    split : str, optional
        Split name (default: the dataset's default).
    fanouts, eval_fanouts : sequence of int
        Per hop, for every relation (evaluation: default the training fanouts).
    patience : int, optional
        Stop after this many epochs without a better validation macro-F1.
    log : callable, optional
        Called with each epoch's dict.
    progress : bool
        tqdm progress bars over each epoch's minibatches and over the evaluation's.
    comm : spsample.distributed.Communicator or mpi4py communicator, optional
        Data-parallel training over its ranks (``MPIComm``, ``NcclComm``, a ``ThreadComm``; every
        rank calls ``fit_node`` with the same arguments): each trains on its share of every epoch's
        minibatches, the gradients are averaged by one all-reduce per step, and the metrics are
        computed over all ranks' predictions. Default: the grid's ranks of a ``DistHeteroGraph``,
        else one process. The minibatches are the same whether the graph is whole on every rank or a
        ``DistHeteroGraph``, so are the losses (bit for bit).
    strategy : str, optional
        How a ``DistHeteroGraph`` is sampled: a name in ``spsample.distributed.STRATEGIES``
        (the registered strategies; default push).
    checkpoint : str or os.PathLike, optional
        Written (by rank 0, atomically) after every epoch.
    resume : str or os.PathLike, optional
        A ``checkpoint`` of a run with the same settings and world size: training continues
        at its next epoch, with the losses of an uninterrupted run, bit for bit.

    Returns
    -------
    dict
        ``test_macro_f1``, ``test_micro_f1``, ``test_accuracy``, ``val_macro_f1``,
        ``best_epoch``, ``epochs_run``, ``seconds``, ``sampled_edges`` (all ranks),
        ``history`` (per epoch: ``loss``, the mean over all ranks' batches,
        ``val_macro_f1``, ``seconds`` (training, this rank), ``eval_seconds``, this rank's
        seconds per phase (``sample_seconds``, ``fetch_seconds``, ``convert_seconds``,
        ``wait_seconds``, ``forward_seconds``, ``backward_seconds``,
        ``optimizer_seconds``), ``threads``, ``sampler_threads``, ``sampled_edges`` (all
        ranks) and ``sampling_bytes``: ``{collective: bytes}`` this rank sent while sampling
        the epoch's training minibatches), ``world_size``.
    """
    check_strategy("fit_node", strategy, allow_none=True)
    if not isinstance(ds.graph, HeteroGraph):
        comm = _grid_comm(ds.graph, comm)
    rank, size = world_of(comm)
    epochs = as_int("fit_node", "epochs", epochs, minimum=0)
    target = ds.target_type
    train, val, test = ds.split(split)
    feats = normalized_features(ds.features)
    labels = {target: ds.labels[target]}
    y = torch.from_numpy(ds.labels[target])

    def loader(seeds, fan, shuffle):
        return Loader(ds.graph, (target, seeds), sampler=NodeWise(list(fan)),
                      batch_size=batch_size, bulk_size=bulk_size, features=feats,
                      labels=labels, seed=seed, shuffle=shuffle, rank=rank, world_size=size,
                      strategy=strategy)

    train_loader = loader(train, fanouts, True)
    val_loader = loader(val, eval_fanouts or fanouts, False)
    test_loader = loader(test, eval_fanouts or fanouts, False)
    with seeded_init(seed):
        model = HeteroSAGE(ds.graph, {t: f.shape[1] for t, f in feats.items()}, hidden,
                           ds.num_classes, num_layers=len(fanouts), dropout=dropout)
    reduce = GradientAllReduce(list(model.parameters()), comm)
    reduce.broadcast_parameters()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    settings = dict(split=split, fanouts=tuple(fanouts), eval_fanouts=eval_fanouts,
                    hidden=hidden, lr=lr, weight_decay=weight_decay, dropout=dropout,
                    batch_size=batch_size, bulk_size=bulk_size, seed=seed)
    run = TaskRun("fit_node", "node", settings, model, opt, "val_macro_f1", rank, size)
    start_run(run, reduce.comm, checkpoint, resume)
    start = time.perf_counter()

    def loss_of(model, b):
        out = model(b)[target][:b.batch_size]
        return torch.nn.functional.cross_entropy(out, b.target)

    def evaluate(part_loader, desc):
        return _evaluate(model, part_loader, target, y, ds.num_classes, reduce.comm,
                         progress, desc)

    while run.epoch < epochs:
        epoch = run.epoch
        t0 = time.perf_counter()
        done = run_epoch(model, opt, train_loader, loss_of, epoch=epoch, seed=seed,
                         progress=progress, desc=f"epoch {epoch + 1}", reduce=reduce,
                         rank=rank)
        seconds, stats = time.perf_counter() - t0, done.pop("stats")
        loss_sum, steps, sampled = sum_over_ranks(reduce.comm, [
            done["loss"] * done["batches"], done["batches"], done["sampled_edges"]])
        t1 = time.perf_counter()
        vf1, _ = evaluate(val_loader, "validation")
        entry = dict(done, epoch=epoch, loss=loss_sum / max(steps, 1), val_macro_f1=vf1,
                     sampled_edges=int(sampled), seconds=seconds,
                     eval_seconds=time.perf_counter() - t1,
                     sampling_bytes=dict(stats["sampling_bytes"]))
        run.record(entry, dict(val_macro_f1=vf1))
        if log is not None:
            log(entry)
        if checkpoint is not None:
            run.save(checkpoint)
        if patience is not None and run.best["epoch"] != epoch \
                and epoch - run.best["epoch"] >= patience:
            break
    run.restore_best()
    tma, tmi = evaluate(test_loader, "test")
    reduce.close()
    history = run.history
    return dict(test_macro_f1=tma, test_micro_f1=tmi, test_accuracy=tmi,
                val_macro_f1=run.best["val_macro_f1"], best_epoch=run.best["epoch"],
                epochs_run=len(history), seconds=time.perf_counter() - start,
                sampled_edges=int(sum(e["sampled_edges"] for e in history)), history=history,
                world_size=size)


@torch.no_grad()
def _evaluate(model, loader, target, y, num_classes, comm=None, progress=False,
              desc="evaluation"):
    """``(macro-F1, micro-F1)`` over the predictions of every rank of ``comm`` (in the order of
    the minibatches' global ids: the ranks hold consecutive ranges)."""
    model.eval()
    pred, true = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for b in evaluation_batches(loader, progress, desc):
        out = model(b)[target][:b.batch_size]
        pred.append(out.argmax(1).numpy())
        true.append(y[b.n_id_dict[target][:b.batch_size]].numpy())
    pred, true = np.concatenate(pred), np.concatenate(true)
    if comm is not None:
        pred, true = (np.concatenate(comm.allgather_object(a)) for a in (pred, true))
    return macro_f1(pred, true, num_classes)
