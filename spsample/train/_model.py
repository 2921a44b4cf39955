"""The reference models for spsample batches: GraphSAGE and an importance-weighted GCN.

* :class:`GraphSAGE` (Hamilton et al. 2017, mean aggregator): ``h_i' = W_l · mean_{j in N(i)}
  h_j + b + W_r · h_i`` over the edges a :class:`~spsample.loader.Batch` gives each layer
  (:meth:`Batch.layer`); with layer-wise batches (LADIES, FastGCN) the mean becomes the
  weighted sum with the sampler's row-normalised importance weights.
* :class:`GCN` (Kipf & Welling 2017, as LADIES and FastGCN train it): ``h_i' = W · (h_i +
  sum_j a_ij h_j) / (1 + sum_j a_ij) + b`` with ``a_ij`` the importance weights of layer-wise
  batches (the mean, ``1 / deg``, for node-wise ones): one weight matrix, a self loop.

The built-in layers (:class:`SAGELayer`, :class:`GCNLayer`) aggregate with a CSR sparse-dense
product on each layer's sampled adjacency (:meth:`Batch.adjacency`, ``aggregation="spmm"``,
the default) or by scatter-add over the edge list (``"scatter"``, the oracle); both project
first (``W h`` before aggregating) when the layer narrows the width, as DGL's ``SAGEConv``
does. GraphSAGE can also run PyG's ``SAGEConv`` (``conv="pyg"``), unchanged; the built-in
layers are the default (faster on CPU, measured: README, "Training loop"). Both models drop
out with :func:`~spsample.train.dropout` (torch's generator, 16-bit masks).
"""

from .._errors import ArgumentError
from .._validate import as_int, check_memory, fail
from ..loader._adjacency import Adjacency
from ..loader._sparse import SparseRows
from ._aggregate import AGGREGATIONS, aggregate, scatter_aggregate
from ._dropout import dropout as _dropout
from ._dropout import thread_generator as _thread_generator
from .._optional import import_pyg, import_torch

torch = import_torch("spsample.train")

__all__ = ["GraphSAGE", "GCN", "SAGELayer", "GCNLayer", "make_layer", "CONVS"]

#: GraphSAGE layer implementations: ``"auto"`` (the built-in), ``"pyg"``, ``"torch"``.
CONVS = ("auto", "pyg", "torch")


def _aggregate(h, edges, num_dst, edge_weight):
    """``A @ h``: by SpMM for an :class:`Adjacency`, by scatter-add for an edge list."""
    if isinstance(edges, Adjacency):
        return aggregate(h, edges)
    return scatter_aggregate(h, edges, num_dst, edge_weight)


def _row_sums(edges, num_dst, edge_weight, like):
    """``sum_j a_ij`` per destination (1 for a mean over a non-empty row, else 0)."""
    if isinstance(edges, Adjacency):
        return edges.row_sums(like.dtype, like.device)
    dst = edges[1]
    w = torch.ones_like(dst, dtype=like.dtype) if edge_weight is None \
        else edge_weight.to(like.dtype)
    sums = torch.zeros(num_dst, dtype=like.dtype, device=like.device).index_add_(0, dst, w)
    return sums.clamp(max=1) if edge_weight is None else sums


def _project(x, weight):
    """``x @ weight.T`` for a dense tensor or :class:`SparseRows`."""
    if isinstance(x, SparseRows):
        return x.matmul_t(weight)
    return torch.nn.functional.linear(x, weight)


class SAGELayer(torch.nn.Module):
    """One GraphSAGE layer with mean (or given-weight) aggregation, in plain torch.

    Parameters
    ----------
    in_channels, out_channels : int

    Notes
    -----
    ``forward(x, edges, edge_weight=None)``: ``x`` is a pair ``(x_src, x_dst)`` of shapes
    (num_src, in) and (num_dst, in); ``edges`` is the layer's
    :class:`~spsample.loader.Adjacency` (aggregation by one CSR product each way) or an
    ``edge_index`` (2, E) of ``[src; dst]`` local ids (scatter-add; ``edge_weight`` (E,),
    when given, replaces the mean by a weighted sum). Returns a tensor of shape
    (num_dst, out). Both are deterministic on the CPU. When ``out < in`` the neighbours are
    projected by ``lin_l`` before they are aggregated (the same function, fewer flops);
    sparse input (:class:`~spsample.loader.SparseRows`) is then projected without densifying.
    Parameters are named as in PyG's ``SAGEConv`` (``lin_l`` with bias, ``lin_r``), so
    checkpoints move between the two.
    """

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.lin_l = torch.nn.Linear(in_channels, out_channels, bias=True)
        self.lin_r = torch.nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edges, edge_weight=None):
        x_src, x_dst = x
        # the mean and lin_l commute (both linear): project first when that shrinks the rows
        project_first = self.out_channels < self.in_channels
        if isinstance(x_src, SparseRows) and not project_first:
            x_src, x_dst = x_src.to_dense(), x_dst.to_dense()
        h = _project(x_src, self.lin_l.weight) if project_first else x_src
        agg = _aggregate(h, edges, x_dst.shape[0], edge_weight)
        out = agg + self.lin_l.bias if project_first else self.lin_l(agg)
        return out + _project(x_dst, self.lin_r.weight)

    def extra_repr(self):
        return f"{self.in_channels}, {self.out_channels}, aggr='mean'"


class GCNLayer(torch.nn.Module):
    """One GCN layer with a self loop: ``W · (h_i + sum_j a_ij h_j) / (1 + sum_j a_ij) + b``.

    Parameters
    ----------
    in_channels, out_channels : int

    Notes
    -----
    ``forward(x, edges, num_dst=None, edge_weight=None)``: ``x`` (num_src, in), whose first
    ``num_dst`` rows are the destinations (the batch layout: destinations are a prefix of
    the sources); ``edges`` an :class:`~spsample.loader.Adjacency` (``num_dst`` from it) or an
    ``edge_index`` (2, E) with ``num_dst`` given, ``a_ij`` = ``edge_weight`` or ``1 / deg``.
    Projects first when ``out < in`` (sparse rows then stay sparse).
    """

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.lin = torch.nn.Linear(in_channels, out_channels, bias=True)

    def forward(self, x, edges, num_dst=None, edge_weight=None):
        if isinstance(edges, Adjacency):
            num_dst = edges.num_dst
        elif num_dst is None:
            fail(ArgumentError, "GCNLayer.forward", "num_dst", "is needed with an edge_index",
                 None)
        project_first = self.out_channels < self.in_channels
        if isinstance(x, SparseRows) and not project_first:
            x = x.to_dense()
        h = _project(x, self.lin.weight) if project_first else x
        agg = _aggregate(h, edges, num_dst, edge_weight)
        norm = 1.0 / (1.0 + _row_sums(edges, num_dst, edge_weight, agg))
        z = (agg + h[:num_dst]) * norm.unsqueeze(1)
        return z + self.lin.bias if project_first else self.lin(z)

    def extra_repr(self):
        return f"{self.in_channels}, {self.out_channels}, self_loops=True"


def make_layer(in_channels, out_channels, conv="auto"):
    """A GraphSAGE layer: :class:`SAGELayer` (``"auto"``, ``"torch"``) or PyG's ``SAGEConv``
    (``"pyg"``)."""
    if conv == "pyg":
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


def _check_sizes(where, in_channels, hidden_channels, out_channels, num_layers, dropout,
                 aggregation):
    sizes = [as_int(where, name, value, minimum=1) for name, value in
             (("in_channels", in_channels), ("hidden_channels", hidden_channels),
              ("out_channels", out_channels), ("num_layers", num_layers))]
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
            or not 0 <= dropout < 1:
        fail(ArgumentError, where, "dropout", "must be a number in [0, 1)", dropout)
    if aggregation not in AGGREGATIONS:
        fail(ArgumentError, where, "aggregation", f"must be one of {AGGREGATIONS}", aggregation)
    _check_weight_bytes(where, *sizes)
    return sizes


def _check_weight_bytes(where, in_channels, hidden_channels, out_channels, num_layers):
    """A typed ``ResourceLimitError`` naming the widest argument when the layers' float32
    weights alone (two matrices per layer) exceed the memory limit, before torch is asked
    for them (a width of 10**20 overflowed inside torch with a TypeError)."""
    widths = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
    nbytes = 8 * sum(a * b for a, b in zip(widths[:-1], widths[1:]))
    used = {"in_channels": in_channels, "out_channels": out_channels}
    if num_layers > 1:
        used["hidden_channels"] = hidden_channels
    name = max(sorted(used), key=used.get)
    check_memory(where, name, nbytes, f"the weights of {num_layers} layer(s) of widths "
                 f"{widths}", f"use a smaller {name}")


class _SampledGNN(torch.nn.Module):
    """Layers applied to a batch's layers in turn: dropout, layer, ReLU (not after the last)."""

    where = "model"

    def _layer_input(self, batch, x):
        where = f"{self.where}.forward"
        if batch.num_layers != self.num_layers:
            fail(ArgumentError, where, "batch", f"has {batch.num_layers} hops but the model "
                 f"has {self.num_layers} layers", batch.num_layers)
        x = batch.x if x is None else x
        if x is None:
            fail(ArgumentError, where, "batch", "has no features (x is None)", None)
        return x

    def _dropout(self, x, layer):
        if layer == 0 and not self.input_dropout:
            return x
        if isinstance(x, SparseRows):
            return x.dropout(self.dropout, self.training, generator=_thread_generator())
        return _dropout(x, self.dropout, self.training)

    def _edges(self, batch, i):
        """``(edges, LayerEdges)`` of layer ``i``: the Adjacency (SpMM) or the edge list."""
        le = batch.layer(i)
        if self.aggregation == "spmm":
            return batch.adjacency(i), le
        return le.edge_index, le


class GraphSAGE(_SampledGNN):
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
    input_dropout : bool
        Drop out the features too (the first layer's input); ``False``: between layers only
        (as DGL's and PyG's examples do).
    conv : {"auto", "torch", "pyg"}
        Layer implementation: the built-in :class:`SAGELayer` (``"auto"``, ``"torch"``) or
        PyG's ``SAGEConv`` (``"pyg"``, unchanged; node-wise batches only: it has no edge
        weights). The built-in layers are the default: faster on CPU, measured.
    aggregation : {"spmm", "scatter"}
        Built-in layers: CSR sparse-dense products on :meth:`Batch.adjacency` (default) or
        scatter-add over the edge list (the oracle; same function up to float rounding).
    layerwise : bool
        Whether the model will see layer-wise (weighted) batches (refused with ``"pyg"``).
    sparse_input : bool
        Kept for compatibility: every layer kind takes :class:`~spsample.loader.SparseRows`
        without densifying them (the first layer projects the rows before it aggregates).

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

    where = "GraphSAGE"

    def __init__(self, in_channels, hidden_channels, out_channels, num_layers=2, *,
                 dropout=0.5, input_dropout=True, conv="auto", aggregation="spmm",
                 layerwise=False, sparse_input=False):
        super().__init__()
        sizes = _check_sizes(self.where, in_channels, hidden_channels, out_channels,
                             num_layers, dropout, aggregation)
        if conv not in CONVS:
            fail(ArgumentError, self.where, "conv", f"must be one of {CONVS}", conv)
        if layerwise and conv == "pyg":
            fail(ArgumentError, self.where, "conv", "'pyg' cannot aggregate with layer-wise "
                 "edge weights; use 'torch' or 'auto'", conv)
        in_channels, hidden_channels, out_channels, num_layers = sizes
        widths = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(make_layer(a, b, conv)
                                         for a, b in zip(widths[:-1], widths[1:]))
        self.dropout = float(dropout)
        self.input_dropout = bool(input_dropout)
        self.num_layers = num_layers
        self.aggregation = aggregation
        self.uses_pyg = conv == "pyg"

    def forward(self, batch, x=None):
        """Logits of the batch's seeds, shape (batch_size, out_channels).

        ``x`` (N, f) replaces ``batch.x`` (e.g. normalised features)."""
        if self.uses_pyg and batch.edge_weight is not None:
            fail(ArgumentError, "GraphSAGE.forward", "batch", "comes from a layer-wise sampler; "
                 "build the model with layerwise=True (PyG's SAGEConv has no edge weights)",
                 "edge_weight")
        x = self._layer_input(batch, x)
        for i, conv in enumerate(self.convs):
            x = self._dropout(x, i)
            if self.uses_pyg:
                le = batch.layer(i)
                pair = (x[:le.num_src], x[:le.num_dst])
                if isinstance(x, SparseRows):
                    x = _pyg_sage_on_sparse_rows(conv, pair, le)
                else:
                    x = conv(pair, le.edge_index, size=(le.num_src, le.num_dst))
            else:
                edges, le = self._edges(batch, i)
                x = conv((x[:le.num_src], x[:le.num_dst]), edges, le.edge_weight)
            if i < self.num_layers - 1:
                x = torch.relu(x)
        return x[:batch.batch_size]


class GCN(_SampledGNN):
    """A GCN for sampled batches, aggregating with the sampler's importance weights.

    Each layer is a :class:`GCNLayer`: ``h_i' = W · (h_i + sum_j a_ij h_j) / (1 + sum_j a_ij)
    + b``, with ``a_ij`` the row-normalised importance weights of LADIES and FastGCN batches
    (``mb.weight``: the unbiased estimate of the layer's propagation that the two samplers are
    built for) or ``1 / deg`` for node-wise batches; ReLU and dropout between layers.

    Parameters
    ----------
    in_channels, hidden_channels, out_channels, num_layers, dropout, input_dropout, aggregation
        As for :class:`GraphSAGE`.

    Examples
    --------
    >>> import spsample
    >>> from spsample.train import GCN
    >>> ds = spsample.io.load_cora()
    >>> loader = spsample.Loader(ds, sampler=spsample.LADIES([64, 64]), batch_size=16)
    >>> tuple(GCN(ds.num_features, 8, ds.num_classes, num_layers=2)(next(iter(loader))).shape)
    (16, 7)
    """

    where = "GCN"
    uses_pyg = False

    def __init__(self, in_channels, hidden_channels, out_channels, num_layers=2, *,
                 dropout=0.5, input_dropout=True, aggregation="spmm"):
        super().__init__()
        sizes = _check_sizes(self.where, in_channels, hidden_channels, out_channels,
                             num_layers, dropout, aggregation)
        in_channels, hidden_channels, out_channels, num_layers = sizes
        widths = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(GCNLayer(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.dropout = float(dropout)
        self.input_dropout = bool(input_dropout)
        self.num_layers = num_layers
        self.aggregation = aggregation

    def forward(self, batch, x=None):
        """Logits of the batch's seeds, shape (batch_size, out_channels)."""
        x = self._layer_input(batch, x)
        for i, conv in enumerate(self.convs):
            x = self._dropout(x, i)
            edges, le = self._edges(batch, i)
            x = conv(x[:le.num_src], edges, le.num_dst, le.edge_weight)
            if i < self.num_layers - 1:
                x = torch.relu(x)
        return x[:batch.batch_size]
