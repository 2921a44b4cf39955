"""Heterogeneous GraphSAGE and its node-classification training on spsample batches.

:class:`HeteroSAGE` is GraphSAGE with one mean aggregator per relation (R-GCN / PyG's
``to_hetero(SAGE)`` with ``aggr="sum"`` over relations): layer ``l`` computes, for every node
type ``t``, ``h_t' = W_root[t] h_t + Σ_{relations r into t} W_r · mean_{j in N_r(i)} h_j``,
then ReLU and dropout. Node types with features enter through a linear projection (sparse
rows are projected without densifying), the others through a learned embedding of their ids.
Every layer runs on the whole sampled subgraph of a :class:`~spsample.loader.HeteroBatch`.

:func:`fit_node` trains it on a :class:`~spsample.io.HeteroDataset` (e.g. HeCo's ACM or
DBLP with their fixed splits) and reports accuracy, macro- and micro-F1 of the
best-validation model.
"""

import time

import numpy as np

from .._errors import ArgumentError
from .._optional import import_torch
from .._validate import fail
from ._aggregate import scatter_aggregate
from ._trainer import run_epoch
from ..loader._sparse import SparseRows

torch = import_torch("spsample.train.hetero")

__all__ = ["HeteroSAGE", "fit_node", "macro_f1", "normalized_features"]


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
        """Per node type, the output rows of every sampled vertex (dict of tensors)."""
        h = self.embed(batch)
        for root, neigh in zip(self.root, self.neigh):
            h = {t: torch.nn.functional.dropout(torch.relu(v), self.dropout, self.training)
                 for t, v in h.items()}
            out = {t: root[t](v) for t, v in h.items()}
            for rel, ei in batch.edge_index_dict.items():
                s, _, d = rel
                if ei.shape[1] == 0 or s not in h or d not in h:
                    continue
                out[d] = out[d] + neigh[_key(rel)](scatter_aggregate(h[s], ei, h[d].shape[0]))
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
             patience=None, log=None, progress=False, comm=None, strategy=None):
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
        A tqdm progress bar over each epoch's minibatches.
    comm : mpi4py communicator, optional
        Data-parallel training over its ranks (every rank calls ``fit_node`` with the same
        arguments): each trains on its share of every epoch's minibatches, the gradients are
        averaged by one all-reduce per step, and the metrics are computed over all ranks'
        predictions. Default: the grid's ranks of a ``DistHeteroGraph``, else one process.
        The minibatches are the same whether the graph is whole on every rank or a
        ``DistHeteroGraph``, so are the losses (bit for bit).
    strategy : {"push", "pull"}, optional
        How a ``DistHeteroGraph`` is sampled (default push).

    Returns
    -------
    dict
        ``test_macro_f1``, ``test_micro_f1``, ``test_accuracy``, ``val_macro_f1``,
        ``best_epoch``, ``epochs_run``, ``seconds``, ``sampled_edges`` (all ranks),
        ``history`` (per epoch: ``loss``, the mean over all ranks' batches,
        ``val_macro_f1``, ``sampling_bytes``: ``{collective: bytes}`` this rank sent while
        sampling the epoch's training minibatches), ``world_size``.
    """
    import spsample

    from ._ddp import GradientAllReduce, sum_over_ranks, world_of
    from ._trainer import _grid_comm

    if not isinstance(ds.graph, spsample.HeteroGraph):
        comm = _grid_comm(ds.graph, comm)
    rank, size = world_of(comm)
    torch.manual_seed(seed)
    target = ds.target_type
    train, val, test = ds.split(split)
    feats = normalized_features(ds.features)
    labels = {target: ds.labels[target]}
    y = torch.from_numpy(ds.labels[target])

    def loader(seeds, fan, shuffle):
        return spsample.Loader(ds.graph, (target, seeds), sampler=spsample.NodeWise(list(fan)),
                               batch_size=batch_size, bulk_size=bulk_size, features=feats,
                               labels=labels, seed=seed, shuffle=shuffle, rank=rank,
                               world_size=size, strategy=strategy)

    train_loader = loader(train, fanouts, True)
    val_loader = loader(val, eval_fanouts or fanouts, False)
    test_loader = loader(test, eval_fanouts or fanouts, False)
    model = HeteroSAGE(ds.graph, {t: f.shape[1] for t, f in feats.items()}, hidden,
                       ds.num_classes, num_layers=len(fanouts), dropout=dropout)
    reduce = GradientAllReduce(list(model.parameters()), comm)
    reduce.broadcast_parameters()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best = dict(val_macro_f1=-1.0, state=None, epoch=-1)
    history, start, edges = [], time.perf_counter(), 0

    def loss_of(model, b):
        out = model(b)[target][:b.batch_size]
        return torch.nn.functional.cross_entropy(out, b.target)

    def evaluate(part_loader):
        return _evaluate(model, part_loader, target, y, ds.num_classes, reduce.comm)

    for epoch in range(epochs):
        loss, sampled = run_epoch(model, opt, train_loader, loss_of, progress,
                                  f"epoch {epoch + 1}", reduce)
        if reduce.comm is not None:         # the mean over every rank's batches
            steps = train_loader.last_stats["batches"]
            loss_sum, steps, sampled = sum_over_ranks(reduce.comm, [loss * steps, steps, sampled])
            loss = loss_sum / max(steps, 1)
        edges += sampled
        vf1, _ = evaluate(val_loader)
        entry = dict(epoch=epoch, loss=loss, val_macro_f1=vf1,
                     sampling_bytes=dict(train_loader.last_stats["sampling_bytes"]))
        history.append(entry)
        if log is not None:
            log(entry)
        if vf1 > best["val_macro_f1"]:
            best = dict(val_macro_f1=vf1, epoch=epoch,
                        state={k: v.clone() for k, v in model.state_dict().items()})
        elif patience is not None and epoch - best["epoch"] >= patience:
            break
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    tma, tmi = evaluate(test_loader)
    reduce.close()
    return dict(test_macro_f1=tma, test_micro_f1=tmi, test_accuracy=tmi,
                val_macro_f1=best["val_macro_f1"], best_epoch=best["epoch"],
                epochs_run=len(history), seconds=time.perf_counter() - start,
                sampled_edges=int(edges), history=history, world_size=size)


@torch.no_grad()
def _evaluate(model, loader, target, y, num_classes, comm=None):
    """``(macro-F1, micro-F1)`` over the predictions of every rank of ``comm`` (in the order of
    the minibatches' global ids: the ranks hold consecutive ranges)."""
    model.eval()
    pred, true = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for b in loader:
        out = model(b)[target][:b.batch_size]
        pred.append(out.argmax(1).numpy())
        true.append(y[b.n_id_dict[target][:b.batch_size]].numpy())
    pred, true = np.concatenate(pred), np.concatenate(true)
    if comm is not None:
        pred, true = (np.concatenate(comm.allgather(a)) for a in (pred, true))
    return macro_f1(pred, true, num_classes)
