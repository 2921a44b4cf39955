"""The sampler protocol: a sampler is the set of matrix constructors of one hop.

For hop ``l`` (1-based, counted from the seeds) :meth:`Sampler.sample_hop` runs::

    Q = sampler.frontier(state, ctx)          # which (minibatch, vertex) rows expand
    P = sampler.probabilities(graph, Q, ctx)  # unnormalised probability matrix (RowMatrix)
    S = sampler.select(P, Q, ctx)             # the sampled matrix: a subset of P's entries
    sampler.extract(state, Q, S, ctx)         # new vertices + local edges into the state

for all ``k`` minibatches of a bulk at once. A new algorithm is a subclass that overrides some
of these four methods; bulk execution, determinism (the RNG streams of ``ctx``), distribution
and the torch loader come with the base class. See ``experiments/random_walk.py`` for a
complete sampler in a few lines.
"""

from dataclasses import dataclass, field

import numpy as np

from .._errors import SamplerError
from .._minibatch import MiniBatch
from .._validate import as_int, fail

__all__ = ["Sampler", "BulkState", "Frontier", "HopContext"]


@dataclass
class Frontier:
    """The rows of a frontier/selection matrix ``Q``: row ``r`` selects ``vertex[r]`` of
    minibatch ``batch[r]``.

    Attributes
    ----------
    batch : int64, shape (r,)
        Position of the row's minibatch in the bulk (0..k-1), non-decreasing.
    vertex : int64, shape (r,)
        Global vertex id.
    local : int64, shape (r,)
        The vertex's local id in its minibatch.
    """

    batch: np.ndarray
    vertex: np.ndarray
    local: np.ndarray

    def __len__(self):
        return int(self.vertex.size)


@dataclass
class HopContext:
    """What a sampler may know about the hop being sampled.

    Attributes
    ----------
    hop : int
        1-based hop (layer) counted from the seeds.
    fanout : int
        This hop's fanout (``-1``: all).
    seed, epoch : int
    key : (int, int)
        Philox key of ``seed``.
    hop_word : int
        RNG counter word 2 for (epoch, hop).
    batch_ids : int64, shape (k,)
        Global minibatch id of each minibatch of the bulk.
    backend : Backend
    scratch : dict
        Per-bulk storage shared by the hops (e.g. quantities computed once per bulk).
    """

    hop: int
    fanout: int
    seed: int
    epoch: int
    key: tuple
    hop_word: int
    batch_ids: np.ndarray
    backend: object
    scratch: dict = field(default_factory=dict)


class BulkState:
    """The vertices and edges sampled so far for the ``k`` minibatches of a bulk.

    Vertices are numbered per minibatch in the order they are added (seeds first); a vertex is
    stored once per minibatch (deduplication). Nodes and edges are kept per hop as flat arrays
    sorted by minibatch, so every operation is vectorised over the whole bulk.
    """

    def __init__(self, num_nodes, batch_ids):
        self.num_nodes = int(num_nodes)
        self.batch_ids = np.asarray(batch_ids, dtype=np.int64)
        self.k = self.batch_ids.size
        self.count = np.zeros(self.k, dtype=np.int64)
        self.hop_nodes = []      # per hop: Frontier of the vertices first reached at that hop
        self.hop_edges = []      # per hop: dict(batch, dst, src, edge_id, weight)
        self._keys = np.zeros(0, dtype=np.int64)    # sorted batch * n + vertex
        self._local = np.zeros(0, dtype=np.int64)   # local id of each key

    # ------------------------------------------------------------------ extraction
    def add_nodes(self, batch, vertex):
        """Append the vertices not yet in their minibatch, in first-occurrence order.

        Parameters
        ----------
        batch : int64, shape (m,)
            Bulk position of each candidate, non-decreasing.
        vertex : int64, shape (m,)

        Returns
        -------
        Frontier of the vertices actually added (this becomes the hop's new-node list).
        """
        key = batch * self.num_nodes + vertex
        known = self._contains(key)
        cand = np.flatnonzero(~known)
        _, first = np.unique(key[cand], return_index=True)
        first = cand[np.sort(first)]
        nb, nv = batch[first], vertex[first]
        start = np.searchsorted(nb, nb, side="left")
        local = self.count[nb] + (np.arange(nb.size) - start)
        self.count += np.bincount(nb, minlength=self.k)
        keys = np.concatenate([self._keys, nb * self.num_nodes + nv])
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._local = np.concatenate([self._local, local])[order]
        added = Frontier(nb, nv, local)
        self.hop_nodes.append(added)
        return added

    def add_edges(self, batch, dst, src, edge_id, weight=None):
        """Record one hop's edges (local ids), ordered by minibatch."""
        self.hop_edges.append(dict(batch=batch, dst=dst, src=src, edge_id=edge_id, weight=weight))

    def local_of(self, batch, vertex):
        """Local ids of vertices already in their minibatch (``-1`` where absent)."""
        key = batch * self.num_nodes + vertex
        pos = np.searchsorted(self._keys, key)
        pos = np.minimum(pos, max(self._keys.size - 1, 0))
        if self._keys.size == 0:
            return np.full(key.size, -1, dtype=np.int64)
        return np.where(self._keys[pos] == key, self._local[pos], -1)

    def _contains(self, key):
        if self._keys.size == 0:
            return np.zeros(key.size, dtype=bool)
        pos = np.minimum(np.searchsorted(self._keys, key), self._keys.size - 1)
        return self._keys[pos] == key

    # ------------------------------------------------------------------ frontiers
    def new_nodes(self, hop):
        """Vertices first reached at ``hop`` (0 = seeds), as a :class:`Frontier`."""
        return self.hop_nodes[hop]

    def all_nodes(self):
        """Every vertex so far, ordered by (minibatch, local id)."""
        batch = np.concatenate([f.batch for f in self.hop_nodes])
        vertex = np.concatenate([f.vertex for f in self.hop_nodes])
        local = np.concatenate([f.local for f in self.hop_nodes])
        order = np.lexsort((local, batch))
        return Frontier(batch[order], vertex[order], local[order])

    def edge_sources(self, hop):
        """The sampled neighbours of ``hop`` (with repetition, in edge order) as a Frontier."""
        e = self.hop_edges[hop - 1]
        vertex = self.vertex_of(e["batch"], e["src"])
        return Frontier(e["batch"], vertex, e["src"])

    def vertex_of(self, batch, local):
        """Global ids of local vertices (inverse of :meth:`local_of`)."""
        order = np.lexsort((self._local, self._keys // self.num_nodes))
        keys = self._keys[order]
        base = np.searchsorted(keys // self.num_nodes, batch)
        return keys[base + local] % self.num_nodes

    # ------------------------------------------------------------------ output
    def finish(self, batch_sizes):
        """Split the bulk into one :class:`MiniBatch` per minibatch."""
        node_bounds = [np.searchsorted(f.batch, np.arange(self.k + 1)) for f in self.hop_nodes]
        edge_bounds = [np.searchsorted(e["batch"], np.arange(self.k + 1)) for e in self.hop_edges]
        layerwise = any(e["weight"] is not None for e in self.hop_edges)
        out = []
        for j in range(self.k):
            parts = [f.vertex[b[j]:b[j + 1]] for f, b in zip(self.hop_nodes, node_bounds)]
            edges, ids, weights = [], [], []
            for e, b in zip(self.hop_edges, edge_bounds):
                sl = slice(b[j], b[j + 1])
                edges.append((e["dst"][sl].copy(), e["src"][sl].copy()))
                ids.append(e["edge_id"][sl].copy())
                if layerwise:
                    weights.append(e["weight"][sl].copy())
            out.append(MiniBatch(
                batch_id=int(self.batch_ids[j]), n_id=np.concatenate(parts),
                batch_size=int(batch_sizes[j]), num_sampled_nodes=[int(p.size) for p in parts],
                edges=edges, edge_ids=ids, weight=weights if layerwise else None))
        return out


class Sampler:
    """Base class of every sampler: ``fanouts`` per hop plus the four constructors.

    Parameters
    ----------
    fanouts : sequence of int
        Fanout of each hop, hop 1 (nearest the seeds) first; ``-1`` means all neighbours.

    Subclasses override :meth:`frontier`, :meth:`probabilities`, :meth:`select` and
    :meth:`extract` (and may override :meth:`sample_hop` with a fused fast path that gives the
    same result).
    """

    #: keyword options the constructor accepts, for error messages and :meth:`config`.
    options = ()

    def __init__(self, fanouts):
        self.fanouts = check_fanouts(type(self).__name__, fanouts)

    @property
    def num_hops(self):
        return len(self.fanouts)

    def config(self):
        """A dict that identifies the sampler's behaviour (ranks compare it)."""
        cfg = {"sampler": type(self).__name__, "fanouts": list(self.fanouts)}
        cfg.update({name: getattr(self, name) for name in self.options})
        return cfg

    def check_graph(self, graph):
        """Raise if the sampler cannot run on ``graph`` (e.g. weighted sampling, no weights)."""

    # ------------------------------------------------------------------ the protocol
    def frontier(self, state, ctx):
        """``Q``: the rows to expand at this hop (a :class:`Frontier`)."""
        raise NotImplementedError

    def probabilities(self, graph, Q, ctx):
        """``P``: a :class:`~spsample._primitives.RowMatrix` (rows unnormalised)."""
        raise NotImplementedError

    def select(self, P, Q, ctx):
        """``S``: the sampled subset of ``P``'s entries (a RowMatrix)."""
        raise NotImplementedError

    def extract(self, state, Q, S, ctx):
        """Add ``S``'s new vertices and edges to ``state`` (local ids)."""
        raise NotImplementedError

    def sample_hop(self, graph, state, ctx):
        """One hop for the whole bulk: the composition of the four constructors."""
        Q = self.frontier(state, ctx)
        P = self.probabilities(graph, Q, ctx)
        S = self.select(P, Q, ctx)
        self.extract(state, Q, S, ctx)

    def __repr__(self):
        opts = "".join(f", {k}={getattr(self, k)!r}" for k in self.options)
        return f"{type(self).__name__}({list(self.fanouts)}{opts})"

    def __eq__(self, other):
        return type(self) is type(other) and self.config() == other.config()

    __hash__ = None


def check_fanouts(where, fanouts):
    """Validate a fanout list: non-empty ints, each ``>= 1`` or ``-1``; at most 255 hops."""
    if isinstance(fanouts, (str, bytes)) or not hasattr(fanouts, "__len__"):
        from .._errors import ArgumentTypeError
        fail(ArgumentTypeError, where, "fanouts", "must be a sequence of integers", fanouts)
    out = [as_int(where, "fanouts", f, error_cls=SamplerError) for f in fanouts]
    if not out:
        fail(SamplerError, where, "fanouts", "must not be empty", list(fanouts))
    for f in out:
        if f == 0 or f < -1:
            fail(SamplerError, where, "fanouts", "entries must be >= 1, or -1 for all neighbours", out)
        if f >= 2**31:
            fail(SamplerError, where, "fanouts", "entries must be below 2**31", out)
    if len(out) > 255:
        fail(SamplerError, where, "fanouts", "must have at most 255 hops", len(out))
    return tuple(out)
