"""The sampled minibatch, and the flat result of a bulk that the minibatches are views of."""

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np
from .._optional import import_torch

__all__ = ["MiniBatch", "Bulk", "HopEdges", "MinibatchMajorBulk"]


@dataclass(eq=False)
class MiniBatch:
    """One sampled minibatch, in local ids.

    Attributes
    ----------
    batch_id : int
        Global minibatch id (``batch_offset + i``).
    n_id : int64, shape (N,)
        Global ids of every vertex of the minibatch, unique: the ``batch_size`` seeds first,
        then the vertices first reached at hop 1, hop 2, ... (in the order they were reached).
    batch_size : int
        Number of seeds (the first ``batch_size`` entries of ``n_id``).
    num_sampled_nodes : list of int, length L + 1
        New vertices per hop, seeds as hop 0; sums to ``N``.
    edges : list of (dst, src) pairs of int64 arrays, length L
        Hop 1 first. ``dst[e]`` aggregates from ``src[e]`` (local ids into ``n_id``).
    edge_ids : list of int64 arrays, length L
        Index of each sampled edge in the graph's CSR ``indices`` (for edge features).
    weight : list of float64 arrays, or None
        Layer-wise samplers only: the importance-rescaled, row-normalised edge values.
    batch : int64 array of shape (N,), or None
        Disjoint sampling only (``NodeWise(..., disjoint=True)``, temporal sampling): the seed
        (position ``0 .. batch_size - 1``) whose subgraph each vertex belongs to; the seeds'
        subgraphs share no vertex (a vertex reached from two seeds appears twice in ``n_id``).

    Examples
    --------
    >>> import spsample
    >>> g = spsample.Graph.from_edge_index([1, 2, 3], [0, 0, 1], num_nodes=4)
    >>> mb, = spsample.sample(g, [0], sampler=spsample.NodeWise([5, 5]), batch_size=1)
    >>> mb.n_id.tolist(), mb.num_sampled_nodes
    ([0, 1, 2, 3], [1, 2, 1])
    """

    batch_id: int
    n_id: np.ndarray
    batch_size: int
    num_sampled_nodes: List[int]
    edges: List[Tuple[np.ndarray, np.ndarray]]
    edge_ids: List[np.ndarray]
    weight: Optional[List[np.ndarray]] = None
    batch: Optional[np.ndarray] = None
    meta: dict = field(default_factory=dict)

    @property
    def num_hops(self):
        return len(self.edges)

    @property
    def num_nodes(self):
        return int(self.n_id.size)

    @property
    def num_sampled_edges(self):
        """Edges per hop, hop 1 first."""
        return [int(d.size) for d, _ in self.edges]

    @property
    def seeds(self):
        return self.n_id[: self.batch_size]

    def edge_index(self):
        """All hops' edges as one PyG-style ``(2, E)`` int64 array ``[src; dst]`` in local ids."""
        if not self.edges:
            return np.zeros((2, 0), dtype=np.int64)
        out = np.empty((2, sum(int(d.size) for d, _ in self.edges)), dtype=np.int64)
        np.concatenate([s for _, s in self.edges], out=out[0])     # one copy, no stack
        np.concatenate([d for d, _ in self.edges], out=out[1])
        return out

    def global_edges(self, hop):
        """``(dst, src)`` of hop ``hop`` (1-based) in global vertex ids."""
        dst, src = self.edges[hop - 1]
        return self.n_id[dst], self.n_id[src]

    def to_pyg(self):
        """The fields of PyG's ``SamplerOutput`` as torch tensors.

        Returns
        -------
        dict with keys ``node`` (n_id), ``row`` (source = sampled neighbour, local),
        ``col`` (destination, local), ``edge`` (global edge ids), ``batch`` (None: one
        minibatch per output; disjoint sampling: the seed of each vertex, as PyG's disjoint
        output), ``num_sampled_nodes`` and ``num_sampled_edges`` (lists).
        Pass them to ``torch_geometric.sampler.SamplerOutput(**fields)``.

        Raises
        ------
        MissingDependencyError
            When torch is not installed.
        """

        torch = import_torch("MiniBatch.to_pyg")
        ei = self.edge_index()
        edge = np.concatenate(self.edge_ids) if self.edge_ids else np.zeros(0, dtype=np.int64)
        return {
            "node": torch.from_numpy(np.ascontiguousarray(self.n_id)),
            "row": torch.from_numpy(np.ascontiguousarray(ei[0])),
            "col": torch.from_numpy(np.ascontiguousarray(ei[1])),
            "edge": torch.from_numpy(edge),
            "batch": None if self.batch is None else torch.from_numpy(
                np.ascontiguousarray(self.batch)),
            "num_sampled_nodes": list(self.num_sampled_nodes),
            "num_sampled_edges": self.num_sampled_edges,
        }

    def equals(self, other):
        """Bit-for-bit equality of every field (the determinism tests use this)."""
        if not isinstance(other, MiniBatch):
            return False
        same = (self.batch_id == other.batch_id and self.batch_size == other.batch_size
                and np.array_equal(self.n_id, other.n_id)
                and list(self.num_sampled_nodes) == list(other.num_sampled_nodes)
                and len(self.edges) == len(other.edges)
                and (self.weight is None) == (other.weight is None)
                and (self.batch is None) == (other.batch is None)
                and (self.batch is None or np.array_equal(self.batch, other.batch)))
        if not same:
            return False
        for (d1, s1), (d2, s2), e1, e2 in zip(self.edges, other.edges, self.edge_ids,
                                              other.edge_ids):
            if not (np.array_equal(d1, d2) and np.array_equal(s1, s2) and np.array_equal(e1, e2)):
                return False
        if self.weight is not None:
            return all(w1.tobytes() == w2.tobytes() for w1, w2 in zip(self.weight, other.weight))
        return True

    def __repr__(self):
        return (f"MiniBatch(batch_id={self.batch_id}, batch_size={self.batch_size}, "
                f"num_nodes={self.num_nodes}, num_sampled_nodes={self.num_sampled_nodes}, "
                f"num_sampled_edges={self.num_sampled_edges})")


@dataclass(eq=False)
class HopEdges:
    """The edges of one hop for every minibatch of a bulk, minibatch after minibatch.

    Attributes
    ----------
    dst, src : int64, shape (E,)
        Local ids (into the minibatch's ``n_id``); ``dst`` aggregates from ``src``.
    edge_id : int64, shape (E,)
        Index of each edge in the graph's CSR ``indices``.
    weight : float64, shape (E,), or None
        Layer-wise samplers: importance-rescaled, row-normalised edge values.
    offsets : int64, shape (k + 1,)
        Minibatch ``j`` holds entries ``offsets[j]:offsets[j + 1]``.
    """

    dst: np.ndarray
    src: np.ndarray
    edge_id: np.ndarray
    weight: Optional[np.ndarray]
    offsets: np.ndarray


class Bulk(list):
    """The result of one bulk: flat arrays for all ``k`` minibatches, and the minibatches as
    views of them (a ``list`` of :class:`MiniBatch`, so ``bulk[i]``, ``len(bulk)`` and
    iteration work as on a list).

    Attributes
    ----------
    batch_ids : int64, shape (k,)
        Global minibatch ids.
    batch_sizes : int64, shape (k,)
        Seeds per minibatch.
    n_id : int64, shape (N,)
        Every minibatch's ``n_id``, minibatch after minibatch (fetch a bulk's features with one
        call on it).
    node_offsets : int64, shape (k + 1,)
        Minibatch ``j``'s vertices are ``n_id[node_offsets[j]:node_offsets[j + 1]]``.
    num_sampled_nodes : int64, shape (k, L + 1)
        New vertices per hop, seeds as hop 0.
    hops : list of HopEdges, length L
        Hop 1 first.
    path : str
        ``"native"`` or ``"numpy"``: which engine produced it.
    node_batch : int64, shape (N,), or None
        Disjoint sampling: the seed of each vertex (``MiniBatch.batch``).
    """

    def __init__(self, batch_ids, batch_sizes, n_id, node_offsets, num_sampled_nodes, hops,
                 *, layerwise=False, path="numpy", node_batch=None):
        self.batch_ids = np.asarray(batch_ids, dtype=np.int64)
        self.batch_sizes = np.asarray(batch_sizes, dtype=np.int64)
        self.n_id = n_id
        self.node_offsets = node_offsets
        self.num_sampled_nodes = num_sampled_nodes
        self.hops = hops
        self.path = path
        self.node_batch = node_batch
        super().__init__(self._views(layerwise))

    def _views(self, layerwise):
        counts = self.num_sampled_nodes.tolist()
        no, bids = self.node_offsets.tolist(), self.batch_ids.tolist()
        sizes = self.batch_sizes.tolist()
        hop_offsets = [h.offsets.tolist() for h in self.hops]
        out = []
        for j in range(len(bids)):
            edges, ids, weights = [], [], []
            for h, off in zip(self.hops, hop_offsets):
                a, b = off[j], off[j + 1]
                edges.append((h.dst[a:b], h.src[a:b]))
                ids.append(h.edge_id[a:b])
                if layerwise:
                    weights.append(h.weight[a:b])
            nb = None if self.node_batch is None else self.node_batch[no[j]:no[j + 1]]
            out.append(MiniBatch(batch_id=bids[j], n_id=self.n_id[no[j]:no[j + 1]],
                                 batch_size=sizes[j], num_sampled_nodes=counts[j], edges=edges,
                                 edge_ids=ids, weight=weights if layerwise else None,
                                 batch=nb))
        return out

    @property
    def num_edges(self):
        """Sampled edges of the whole bulk."""
        return int(sum(h.dst.size for h in self.hops))


class MinibatchMajorBulk(Bulk):
    """A row-wise :class:`Bulk` whose edges lie minibatch after minibatch in one block (the
    native engine's layout for :class:`~spsample.LinkLoader`): minibatch ``j``'s ``E_j``
    sources of every hop (hop 1 first), then its destinations, then its edge ids, at
    ``3 * edge_offsets[j]`` of ``edge_block``; so :meth:`edge_index` of every minibatch is a
    view, and its per-hop edges too. ``hops`` (the flat per-hop arrays of :class:`Bulk`) is
    built on first use, by copying.

    Attributes
    ----------
    edge_block : int64, shape (3 E,)
    edge_offsets : int64, shape (k + 1,)
    hop_edges : int64, shape (k, L)
        Edges per minibatch and hop.
    """

    def __init__(self, batch_ids, batch_sizes, n_id, node_offsets, num_sampled_nodes,
                 edge_block, edge_offsets, hop_edges, *, path="native"):
        self.edge_block, self.edge_offsets, self.hop_edges = edge_block, edge_offsets, hop_edges
        super().__init__(batch_ids, batch_sizes, n_id, node_offsets, num_sampled_nodes, None,
                         path=path)

    @property
    def hops(self):
        if self._hops is None:
            self._hops = self._hop_major()
        return self._hops

    @hops.setter
    def hops(self, value):
        self._hops = value

    def edge_index(self, j):
        """Minibatch ``j``'s ``(edge_index (2, E_j), e_id (E_j,))``: views of the block."""
        a, e = int(self.edge_offsets[j]), int(self.edge_offsets[j + 1] - self.edge_offsets[j])
        block = self.edge_block[3 * a:3 * (a + e)]
        return block[:2 * e].reshape(2, e), block[2 * e:]

    @property
    def num_edges(self):
        return int(self.hop_edges.sum())

    def _views(self, layerwise):
        counts, no = self.num_sampled_nodes.tolist(), self.node_offsets.tolist()
        bids, sizes = self.batch_ids.tolist(), self.batch_sizes.tolist()
        out = []
        for j, per_hop in enumerate(self.hop_edges.tolist()):
            (src, dst), eid = self.edge_index(j)
            bounds = np.concatenate([[0], np.cumsum(per_hop)]).tolist()
            spans = list(zip(bounds[:-1], bounds[1:]))
            out.append(MiniBatch(batch_id=bids[j], n_id=self.n_id[no[j]:no[j + 1]],
                                 batch_size=sizes[j], num_sampled_nodes=counts[j],
                                 edges=[(dst[a:z], src[a:z]) for a, z in spans],
                                 edge_ids=[eid[a:z] for a, z in spans]))
        return out

    def _hop_major(self):
        """The flat per-hop :class:`HopEdges` of :class:`Bulk` (copies)."""
        hops = []
        for h in range(self.hop_edges.shape[1]):
            offsets = np.zeros(len(self) + 1, dtype=np.int64)
            np.cumsum(self.hop_edges[:, h], out=offsets[1:])
            columns = ([mb.edges[h][0] for mb in self], [mb.edges[h][1] for mb in self],
                       [mb.edge_ids[h] for mb in self])
            dst, src, eid = (np.concatenate(c) if c else np.zeros(0, dtype=np.int64)
                             for c in columns)
            hops.append(HopEdges(dst, src, eid, None, offsets))
        return hops
