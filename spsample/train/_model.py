"""The reference GraphSAGE (Hamilton et al. 2017, mean aggregator) for spsample batches.

Each layer computes ``h_i' = W_l · mean_{j in N(i)} h_j + b + W_r · h_i`` over the edges a
:class:`~spsample.loader.Batch` gives it for that layer (:meth:`Batch.layer`): node-wise
batches shrink layer by layer as in PyG's ``trim_to_layer``; layer-wise batches (LADIES,
FastGCN) carry per-layer edges with importance weights, and the mean becomes the weighted sum
with those (row-normalised) weights.

The layers are PyG's ``SAGEConv`` when PyG is installed and the batches are node-wise, else
:class:`SAGELayer`, a small torch implementation with the same parameters (``lin_l`` with bias
for the neighbours, ``lin_r`` without bias for the root), so checkpoints move between the two.
"""

from .._errors import ArgumentError
from .._validate import as_int, fail
from ..loader._sparse import SparseRows

__all__ = ["GraphSAGE", "SAGELayer", "make_layer"]

_CONVS = ("auto", "pyg", "torch")


from .._optional import import_torch

torch = import_torch("spsample.train")


class SAGELayer(torch.nn.Module):
    """One GraphSAGE layer with mean (or given-weight) aggregation, in plain torch.

    Parameters
    ----------
    in_channels, out_channels : int

    Notes
    -----
    ``forward(x, edge_index, edge_weight=None)``: ``x`` is a pair ``(x_src, x_dst)`` of shapes
    (num_src, in) and (num_dst, in); ``edge_index`` (2, E) holds ``[src; dst]`` local ids;
    ``edge_weight`` (E,), when given, replaces the mean by a weighted sum (weights already
    normalised per destination). Returns a tensor of shape (num_dst, out). Aggregation is an
    ``index_add_``, deterministic on the CPU. When ``out < in`` the neighbours are projected
    by ``lin_l`` before they are averaged (the same function, fewer flops); sparse input
    (:class:`~spsample.loader.SparseRows`) is then projected without densifying.
    """

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.lin_l = torch.nn.Linear(in_channels, out_channels, bias=True)
        self.lin_r = torch.nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index, edge_weight=None):
        x_src, x_dst = x
        src, dst = edge_index[0], edge_index[1]
        # mean and lin_l commute (both linear): project first when that shrinks the rows
        project_first = self.out_channels < self.in_channels
        sparse = isinstance(x_src, SparseRows)
        if sparse and not project_first:
            x_src, x_dst, sparse = x_src.to_dense(), x_dst.to_dense(), False
        if sparse:
            h = x_src.matmul_t(self.lin_l.weight)
        else:
            h = torch.nn.functional.linear(x_src, self.lin_l.weight) if project_first else x_src
        msg = h.index_select(0, src)
        if edge_weight is not None:
            msg = msg * edge_weight.to(msg.dtype).unsqueeze(1)
        agg = torch.zeros((x_dst.shape[0], h.shape[1]), dtype=h.dtype,
                          device=h.device).index_add_(0, dst, msg)
        if edge_weight is None:
            count = torch.zeros(x_dst.shape[0], dtype=h.dtype, device=h.device)
            count.index_add_(0, dst, torch.ones_like(dst, dtype=h.dtype))
            agg = agg / count.clamp(min=1).unsqueeze(1)
        out = agg + self.lin_l.bias if project_first else self.lin_l(agg)
        return out + (x_dst.matmul_t(self.lin_r.weight) if sparse else self.lin_r(x_dst))

    def extra_repr(self):
        return f"{self.in_channels}, {self.out_channels}, aggr='mean'"


def make_layer(in_channels, out_channels, conv="auto"):
    """A GraphSAGE layer: PyG's ``SAGEConv`` (``conv="pyg"``, or ``"auto"`` with PyG
    installed) or :class:`SAGELayer` (``"torch"``)."""
    from ..loader._pyg import have_pyg, import_pyg

    if conv == "pyg" or (conv == "auto" and have_pyg()):
        pyg = import_pyg("GraphSAGE(conv='pyg')")
        return pyg.nn.SAGEConv(in_channels, out_channels, aggr="mean")
    return SAGELayer(in_channels, out_channels)


def _pyg_sage_on_sparse_rows(conv, pair, edges):
    """PyG ``SAGEConv`` (mean, root weight, no projection) on sparse rows, never densified.

    ``lin_l(mean_j x_j) + lin_r(x_i) = mean_j(x_j W_l^T) + b_l + x_i W_r^T``: the linear maps
    commute with the mean, so the rows are projected first (``SparseRows.matmul_t``, one
    ``embedding_bag``) and PyG's own ``propagate`` averages the projections. Same parameters,
    same function as ``conv(dense x)`` up to float rounding."""
    x_src, x_dst = pair
    h = x_src.matmul_t(conv.lin_l.weight)
    out = conv.propagate(edges.edge_index, x=(h, None), size=(edges.num_src, edges.num_dst))
    if conv.lin_l.bias is not None:
        out = out + conv.lin_l.bias
    return out + x_dst.matmul_t(conv.lin_r.weight)


class GraphSAGE(torch.nn.Module):
    """GraphSAGE with mean aggregation, ReLU and dropout between layers.

    Parameters
    ----------
    in_channels : int
        Feature width ``f``.
    hidden_channels : int
    out_channels : int
        Number of classes.
    num_layers : int
        Equal to the sampler's number of hops.
    dropout : float
        Dropout probability on each layer's input, ``0 <= dropout < 1``.
    conv : {"auto", "pyg", "torch"}
        Layer implementation: PyG's ``SAGEConv`` or the built-in :class:`SAGELayer`.
        ``"auto"`` picks PyG when it is installed and the model sees neither layer-wise
        batches nor sparse rows; the built-in layers otherwise. Batches from layer-wise
        samplers (with ``edge_weight``) aggregate with their weights, which needs ``"torch"``
        layers.
    layerwise : bool
        Whether the model will see layer-wise (weighted) batches.
    sparse_input : bool
        Whether ``x`` will be :class:`~spsample.loader.SparseRows`; ``"auto"`` then picks the
        built-in layers. Either kind takes sparse rows without densifying them: the first
        layer projects the rows (``embedding_bag``) before it aggregates.

    Examples
    --------
    >>> import spsample
    >>> from spsample.train import GraphSAGE
    >>> ds = spsample.io.load_cora()
    >>> loader = spsample.Loader(ds, sampler=spsample.NodeWise([5, 5]), batch_size=16)
    >>> model = GraphSAGE(ds.num_features, 8, ds.num_classes, num_layers=2)
    >>> tuple(model(next(iter(loader))).shape)
    (16, 7)
    """

    def __init__(self, in_channels, hidden_channels, out_channels, num_layers=2, *,
                 dropout=0.5, conv="auto", layerwise=False, sparse_input=False):
        super().__init__()
        where = "GraphSAGE"
        in_channels = as_int(where, "in_channels", in_channels, minimum=1)
        hidden_channels = as_int(where, "hidden_channels", hidden_channels, minimum=1)
        out_channels = as_int(where, "out_channels", out_channels, minimum=1)
        num_layers = as_int(where, "num_layers", num_layers, minimum=1)
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            fail(ArgumentError, where, "dropout", "must be a number in [0, 1)", dropout)
        if conv not in _CONVS:
            fail(ArgumentError, where, "conv", f"must be one of {_CONVS}", conv)
        if layerwise and conv == "pyg":
            fail(ArgumentError, where, "conv", "'pyg' cannot aggregate with layer-wise "
                 "edge weights; use 'torch' or 'auto'", conv)
        if (layerwise or sparse_input) and conv == "auto":
            conv = "torch"
        sizes = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(make_layer(a, b, conv)
                                         for a, b in zip(sizes[:-1], sizes[1:]))
        self.dropout = float(dropout)
        self.num_layers = num_layers
        self.uses_pyg = not isinstance(self.convs[0], SAGELayer)

    def forward(self, batch, x=None):
        """Logits of the batch's seeds, shape (batch_size, out_channels).

        ``x`` (N, f) replaces ``batch.x`` (e.g. normalised features)."""
        where = "GraphSAGE.forward"
        if batch.num_layers != self.num_layers:
            fail(ArgumentError, where, "batch", f"has {batch.num_layers} hops but the model "
                 f"has {self.num_layers} layers", batch.num_layers)
        if self.uses_pyg and batch.edge_weight is not None:
            fail(ArgumentError, where, "batch", "comes from a layer-wise sampler; build the "
                 "model with layerwise=True (PyG's SAGEConv has no edge weights)",
                 "edge_weight")
        x = batch.x if x is None else x
        if x is None:
            fail(ArgumentError, where, "batch", "has no features (x is None)", None)
        for i, conv in enumerate(self.convs):
            edges = batch.layer(i)
            if isinstance(x, SparseRows):
                x = x.dropout(self.dropout, self.training)
            else:
                x = torch.nn.functional.dropout(x, p=self.dropout, training=self.training)
            pair = (x[:edges.num_src], x[:edges.num_dst])
            if self.uses_pyg and isinstance(x, SparseRows):
                x = _pyg_sage_on_sparse_rows(conv, pair, edges)
            elif self.uses_pyg:
                x = conv(pair, edges.edge_index, size=(edges.num_src, edges.num_dst))
            else:
                x = conv(pair, edges.edge_index, edges.edge_weight)
            if i < self.num_layers - 1:
                x = torch.relu(x)
        return x[:batch.batch_size]
