"""The training batch: one sampled minibatch with its features and labels, as torch tensors."""

from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from .. import native as _native
from .._errors import ArgumentError
from .._optional import require
from ..engine._minibatch import MiniBatch, MinibatchMajorBulk
from ._adjacency import build_adjacency, prefix_adjacency
from ._pyg import import_pyg
from ._sparse import SparseRows, sparse_rows

__all__ = ["Batch", "Block", "LayerEdges", "make_batch", "bulk_edges"]


@dataclass(eq=False)
class LayerEdges:
    """The edges one GNN layer aggregates over (see :meth:`Batch.layer`).

    Attributes
    ----------
    edge_index : torch.LongTensor, shape (2, E)
        ``[src; dst]`` in local ids; ``src < num_src``, ``dst < num_dst``.
    edge_weight : torch.Tensor of shape (E,), or None
        Layer-wise samplers only: aggregate with these weights (a weighted mean).
    num_src, num_dst : int
        The layer reads rows ``x[:num_src]`` and writes rows ``[:num_dst]`` (a prefix).
    """

    edge_index: object
    edge_weight: object
    num_src: int
    num_dst: int


@dataclass(eq=False)
class Block:
    """One layer of a minibatch as a DGL-style block, in NumPy arrays (no DGL needed).

    The layer's input ("source") nodes are ``src_n_id``; its output ("destination") nodes are
    the prefix ``src_n_id[:num_dst]`` (DGL's convention: dst nodes come first among the src).

    Attributes
    ----------
    src_n_id : int64, shape (num_src,)
        Global ids of the input nodes.
    num_dst : int
    src : int64, shape (E,)
        Edge sources, local into ``src_n_id``.
    dst : int64, shape (E,)
        Edge destinations, local into ``dst_n_id``.
    e_id : int64, shape (E,)
        Position of each edge in the graph's CSR ``indices``.
    weight : float64, shape (E,), or None
        Layer-wise samplers' importance weights.
    """

    src_n_id: np.ndarray
    num_dst: int
    src: np.ndarray
    dst: np.ndarray
    e_id: np.ndarray
    weight: Optional[np.ndarray] = None

    @property
    def num_src(self):
        return int(self.src_n_id.size)

    @property
    def dst_n_id(self):
        """Global ids of the output nodes, ``src_n_id[:num_dst]``."""
        return self.src_n_id[: self.num_dst]

    @property
    def num_edges(self):
        return int(self.src.size)

    def to_dgl(self):
        """A ``dgl.create_block`` of this layer (needs DGL), ``dgl.NID``/``dgl.EID`` set."""
        dgl = require("dgl", "Block.to_dgl")
        import torch

        blk = dgl.create_block((torch.from_numpy(self.src), torch.from_numpy(self.dst)),
                               num_src_nodes=self.num_src, num_dst_nodes=self.num_dst)
        blk.srcdata[dgl.NID] = torch.from_numpy(self.src_n_id)
        blk.dstdata[dgl.NID] = torch.from_numpy(self.src_n_id[: self.num_dst].copy())
        blk.edata[dgl.EID] = torch.from_numpy(self.e_id)
        if self.weight is not None:
            blk.edata["w"] = torch.from_numpy(self.weight)
        return blk


@dataclass(eq=False)
class Batch:
    """One training step's data: a sampled minibatch with features and labels as tensors.

    The layout is PyG's (``NeighborLoader`` batches), so PyG layers take it unchanged: the
    ``batch_size`` seeds come first in ``n_id``, then the vertices first reached at hop 1, hop
    2, ...; ``edge_index`` lists hop 1's edges first, then hop 2's, ... Per-hop counts make
    PyG's ``trim_to_layer`` work.

    Attributes
    ----------
    x : torch.Tensor, shape (N, f), SparseRows, or None
        Feature rows of ``n_id`` (``None`` when the loader has no features; CSR
        :class:`~spsample.loader.SparseRows` when the features are a ``scipy.sparse`` matrix).
    y : torch.LongTensor, shape (N,), or None
        Labels of ``n_id`` (PyG's convention: use ``y[:batch_size]`` for the loss).
    edge_index : torch.LongTensor, shape (2, E)
        ``[src; dst]`` in local ids (``dst`` aggregates from ``src``), hop 1 first.
    edge_weight : torch.Tensor, shape (E,), or None
        Layer-wise samplers (LADIES, FastGCN): the importance-rescaled, row-normalised edge
        values; aggregate with them (a weighted mean). ``None`` for node-wise samplers.
    n_id : torch.LongTensor, shape (N,)
        Global vertex ids, unique, seeds first.
    e_id : torch.LongTensor, shape (E,)
        Position of each edge in the graph's CSR ``indices`` (for edge features).
    batch_size : int
    num_sampled_nodes : list of int, length L + 1
        New vertices per hop, seeds as hop 0.
    num_sampled_edges : list of int, length L
        Edges per hop, hop 1 first.
    batch_id : int
        Global minibatch id (its position in the epoch).
    epoch : int
    minibatch : MiniBatch
        The sampler's output this batch was made from (its arrays are shared, not copied).

    Notes
    -----
    Node-wise edges of hop ``h`` go from hop-``h`` vertices to vertices of hop ``h - 1``, so a
    GNN layer at depth ``d`` (``d = L`` nearest the input) uses the edges of hops ``1..d``.
    Layer-wise samplers build one complete bipartite layer per hop instead (hop ``h``: every
    vertex of hops ``0..h-1`` to its sampled neighbours among hops ``0..h``), so layer ``d``
    uses the edges of hop ``d`` alone. :meth:`layer` hides the difference.
    """

    x: object
    y: object
    edge_index: object
    edge_weight: object
    n_id: object
    e_id: object
    batch_size: int
    num_sampled_nodes: List[int]
    num_sampled_edges: List[int]
    batch_id: int = 0
    epoch: int = 0
    minibatch: Optional[MiniBatch] = field(default=None, repr=False)
    _adjacency: Optional[list] = field(default=None, repr=False)

    # ------------------------------------------------------------------ sizes
    @property
    def num_nodes(self):
        return int(self.n_id.shape[0])

    @property
    def num_edges(self):
        return int(self.edge_index.shape[1])

    @property
    def num_layers(self):
        """Number of hops ``L`` (a GNN on this batch has ``L`` layers)."""
        return len(self.num_sampled_edges)

    @property
    def layerwise(self):
        """Whether the batch came from a layer-wise sampler (per-layer edges and weights)."""
        return self.edge_weight is not None

    @property
    def target(self):
        """Labels of the seeds, ``y[:batch_size]``."""
        return None if self.y is None else self.y[: self.batch_size]

    # ------------------------------------------------------------------ layers
    def _bounds(self, layer):
        L = self.num_layers
        if not 0 <= layer < L:
            raise ArgumentError(f"Batch.layer: argument 'layer' must be in [0, {L}) (got {layer})")
        hop = L - layer
        ncum = np.cumsum(self.num_sampled_nodes)
        ecum = np.concatenate([[0], np.cumsum(self.num_sampled_edges)])
        lo = int(ecum[hop - 1]) if self.layerwise else 0
        return hop, lo, int(ecum[hop]), int(ncum[hop]), int(ncum[hop - 1])

    def layer(self, layer):
        """The edges GNN layer ``layer`` (0 = the input layer) aggregates over.

        Returns
        -------
        LayerEdges
            ``edge_index`` and ``edge_weight`` are views (slices) of the batch's tensors.
        """
        _, lo, hi, num_src, num_dst = self._bounds(layer)
        w = None if self.edge_weight is None else self.edge_weight[lo:hi]
        return LayerEdges(self.edge_index[:, lo:hi], w, num_src, num_dst)

    def adjacency(self, layer):
        """GNN layer ``layer``'s aggregation matrix in CSR form (built once, then cached).

        Returns
        -------
        Adjacency
            ``A`` of shape (num_dst, num_src): ``1 / deg`` per edge for node-wise batches (a
            mean), the importance weights for layer-wise ones; ``A @ x[:num_src]`` is the
            layer's aggregation (the built-in layers take it). Node-wise layers share one CSR
            (layer ``i``'s rows are a prefix of layer ``i - 1``'s).
        """
        _, lo, hi, num_src, num_dst = self._bounds(layer)
        if self._adjacency is None:
            self._adjacency = [None] * self.num_layers
        if self._adjacency[layer] is None:
            ei = _numpy(self.edge_index)
            if self.layerwise:
                w = _numpy(self.edge_weight)[lo:hi]
                adj = build_adjacency(ei[0, lo:hi], ei[1, lo:hi], num_src, num_dst, w)
            else:
                full = self._adjacency[0]
                if full is None:
                    _, _, hi0, src0, dst0 = self._bounds(0)
                    full = build_adjacency(ei[0, :hi0], ei[1, :hi0], src0, dst0)
                    self._adjacency[0] = full
                adj = full if layer == 0 else prefix_adjacency(full, num_dst, num_src)
            self._adjacency[layer] = adj
        return self._adjacency[layer]

    def prepare_adjacency(self, dtype=None):
        """Build every layer's :meth:`adjacency`, with the torch CSR tensors of ``A`` and
        ``A.T`` in ``dtype`` (default: the features' floating dtype, else float32), e.g. in
        the loader's background thread. Returns ``self``."""
        if dtype is None:
            x = self.x
            floating = x is not None and x.is_floating_point()
            dtype = x.dtype if floating else None
        for layer in range(self.num_layers):
            self.adjacency(layer).prepare(dtype, self.n_id.device)
        return self

    def blocks(self):
        """The minibatch as DGL-style blocks, one per layer, input layer first.

        Returns
        -------
        list of Block, length L
            Block ``i`` reads ``src_n_id`` and writes its prefix ``dst_n_id``; the last
            block's ``dst_n_id`` are the seeds.
        """
        n_id = _numpy(self.n_id)
        ei = _numpy(self.edge_index)
        e_id = _numpy(self.e_id)
        w = None if self.edge_weight is None else _numpy(self.edge_weight)
        out = []
        for layer in range(self.num_layers):
            _, lo, hi, num_src, num_dst = self._bounds(layer)
            out.append(Block(src_n_id=n_id[:num_src], num_dst=num_dst,
                             src=ei[0, lo:hi], dst=ei[1, lo:hi], e_id=e_id[lo:hi],
                             weight=None if w is None else w[lo:hi].astype(np.float64)))
        return out

    # ------------------------------------------------------------------ conversions
    def to(self, device, non_blocking=False):
        """A copy with every tensor moved to ``device`` (the same object if already there)."""
        import torch

        device = torch.device(device)
        if self.n_id.device == device:
            return self
        move = (lambda t: None if t is None else t.to(device, non_blocking=non_blocking))
        return Batch(x=move(self.x), y=move(self.y), edge_index=move(self.edge_index),
                     edge_weight=move(self.edge_weight), n_id=move(self.n_id),
                     e_id=move(self.e_id), batch_size=self.batch_size,
                     num_sampled_nodes=list(self.num_sampled_nodes),
                     num_sampled_edges=list(self.num_sampled_edges), batch_id=self.batch_id,
                     epoch=self.epoch, minibatch=self.minibatch)

    def pin_memory(self):
        """A copy in page-locked host memory (for asynchronous copies to a GPU)."""
        pin = (lambda t: None if t is None else t.pin_memory())
        return Batch(x=pin(self.x), y=pin(self.y), edge_index=pin(self.edge_index),
                     edge_weight=pin(self.edge_weight), n_id=pin(self.n_id), e_id=pin(self.e_id),
                     batch_size=self.batch_size, num_sampled_nodes=list(self.num_sampled_nodes),
                     num_sampled_edges=list(self.num_sampled_edges), batch_id=self.batch_id,
                     epoch=self.epoch, minibatch=self.minibatch)

    def to_pyg_data(self):
        """The batch as ``torch_geometric.data.Data`` (needs PyG), as PyG's loaders build it.

        Fields: ``x`` (dense, also for sparse features), ``y``, ``edge_index``, ``n_id``,
        ``e_id``, ``batch_size``, ``num_sampled_nodes``, ``num_sampled_edges``, and
        ``edge_weight`` for layer-wise
        samplers (whose per-layer edges need :meth:`layer`, not ``trim_to_layer``).
        """
        pyg = import_pyg("Batch.to_pyg_data")
        data = pyg.data.Data(edge_index=self.edge_index, num_nodes=self.num_nodes)
        if self.x is not None:
            data.x = self.x.to_dense() if isinstance(self.x, SparseRows) else self.x
        if self.y is not None:
            data.y = self.y
        if self.edge_weight is not None:
            data.edge_weight = self.edge_weight
        data.n_id = self.n_id
        data.e_id = self.e_id
        data.batch_size = self.batch_size
        data.num_sampled_nodes = list(self.num_sampled_nodes)
        data.num_sampled_edges = list(self.num_sampled_edges)
        return data

    def __repr__(self):
        xs = None if self.x is None else tuple(self.x.shape)
        return (f"Batch(batch_id={self.batch_id}, epoch={self.epoch}, "
                f"batch_size={self.batch_size}, num_nodes={self.num_nodes}, "
                f"num_edges={self.num_edges}, x={xs}, layerwise={self.layerwise})")


def _numpy(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def _tensor(torch, arr):
    """NumPy -> torch without a copy (DLPack); torch tensors pass through; scipy.sparse
    rows become :class:`~spsample.loader.SparseRows`."""
    if isinstance(arr, np.ndarray):
        return torch.from_dlpack(np.ascontiguousarray(arr))
    if type(arr).__module__.startswith("scipy.sparse"):
        return sparse_rows(arr)
    return arr


def bulk_edges(bulk, exclude=None):
    """Every minibatch's ``(edge_index, e_id)`` of a :class:`~spsample.Bulk` as
    :func:`make_batch` builds them (``edge_index`` (2, E) ``[src; dst]`` over all hops, hop 1
    first; ``e_id`` (E,)): one native pass over the bulk, parallel over minibatches, into one
    pooled block (``native/link.h``).

    Parameters
    ----------
    bulk : Bulk
    exclude : tuple or None
        Edges to drop (``exclude`` of :func:`spsample.native.minibatch_edges`).

    Returns
    -------
    edges : list of (ndarray, ndarray), or of None
        ``None`` per minibatch when the native kernels are off (:func:`make_batch` then
        builds them with NumPy, the oracle); views, without a copy, of a
        :class:`~spsample.engine._minibatch.MinibatchMajorBulk` (``exclude`` must be ``None``).
    kept : int64 ndarray of shape (k, L), or None
        Kept edges per minibatch and hop (``None`` with the native kernels off).
    """
    if isinstance(bulk, MinibatchMajorBulk) and exclude is None:
        return [bulk.edge_index(j) for j in range(len(bulk))], bulk.hop_edges
    if not _native.enabled() or not bulk.hops:
        return [None] * len(bulk), None
    out, offsets, kept = _native.minibatch_edges(bulk.hops, exclude)
    edges = []
    for a, k in zip(offsets[:-1].tolist(), kept.sum(axis=1).tolist()):
        at = 3 * a
        edges.append((out[at:at + 2 * k].reshape(2, k), out[at + 2 * k:at + 3 * k]))
    return edges, kept


def _edges(mb):
    """``(edge_index, e_id)`` of a minibatch in NumPy (the oracle of :func:`bulk_edges`)."""
    e_id = np.concatenate(mb.edge_ids) if mb.edge_ids else np.zeros(0, dtype=np.int64)
    return mb.edge_index(), e_id


def make_batch(mb, x, y, *, epoch, dtype=None, weight_dtype=None, edges=None):
    """Build a :class:`Batch` from a :class:`MiniBatch` and its feature and label rows.

    NumPy arrays cross into torch by DLPack (zero copy); ``x`` is cast to ``dtype`` when given
    and different (e.g. uint8 features to float32), which is the only copy made. ``edges``:
    the minibatch's ``(edge_index, e_id)`` from :func:`bulk_edges` (built here when ``None``).
    """
    import torch

    ei, e_id = _edges(mb) if edges is None else edges
    xt = None if x is None else _tensor(torch, x)
    if xt is not None and dtype is not None and xt.dtype != dtype:
        xt = xt.to(dtype)
    yt = None if y is None else _tensor(torch, y)
    w = None
    if mb.weight is not None:
        w = torch.from_dlpack(np.concatenate(mb.weight) if mb.weight else np.zeros(0))
        w = w.to(weight_dtype or (xt.dtype if xt is not None and xt.is_floating_point()
                                  else torch.float32))
    return Batch(x=xt, y=yt, edge_index=torch.from_dlpack(ei), edge_weight=w,
                 n_id=torch.from_dlpack(mb.n_id), e_id=torch.from_dlpack(e_id),
                 batch_size=mb.batch_size, num_sampled_nodes=list(mb.num_sampled_nodes),
                 num_sampled_edges=mb.num_sampled_edges, batch_id=mb.batch_id, epoch=epoch,
                 minibatch=mb)
