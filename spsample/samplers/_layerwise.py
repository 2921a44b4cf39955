"""Layer-wise sampling (LADIES, FastGCN): each minibatch draws one vertex set per layer.

Layer ``l`` of minibatch ``j`` with current vertex set ``B_j`` (all its vertices so far):

1. ``Q_b``: the rows of ``B_j`` (a k × n batch-membership matrix, as a :class:`Frontier`);
2. ``P``: LADIES ``P[j, u] ∝ Σ_{v∈B_j} A[v,u]²`` (a segmented column sum of gathered rows);
   FastGCN ``P[u] ∝ Σ_v A[v,u]²`` for every minibatch;
3. ``S_j``: ``fanouts[l-1]`` columns per minibatch (LADIES: distinct, without replacement --
   on unweighted graphs by drawing entries of the gathered rows, each column with probability
   ∝ its count, until that many distinct columns came up; on weighted graphs by
   Efraimidis–Spirakis keys; FastGCN: i.i.d. draws, deduplicated);
4. extraction: ``C_j = B_j ∪ S_j`` becomes the next set (so every vertex keeps a path to
   itself); the layer's edges are all entries ``A[v,u] ≠ 0`` with ``v ∈ B_j``, ``u ∈ C_j``
   (``R_j·A·C_jᵀ``), valued ``A[v,u] / P[j,u]`` and row-normalised (the importance weights of
   the LADIES paper; the factor ``1/s`` cancels in the normalisation).
"""

import numpy as np

from .. import _primitives as prim
from .._errors import SamplerError
from .._validate import check_no_unknown, fail
from ._protocol import Sampler

__all__ = ["LADIES", "FastGCN", "column_weights"]


class _LayerWise(Sampler):
    def __init__(self, fanouts, **unknown):
        check_no_unknown(type(self).__name__, unknown, ())
        super().__init__(fanouts)

    def frontier(self, state, ctx):
        return state.all_nodes()

    def gathered(self, graph, Q, ctx):
        """Rows of ``A`` for every vertex of ``Q`` (kept in ``ctx.scratch`` for extraction)."""
        G = prim.row_select(graph.indptr, graph.indices, graph.weights, Q.vertex)
        ctx.scratch["gathered"] = G
        return G

    def extract(self, state, Q, S, ctx):
        G = ctx.scratch.pop("gathered")
        q = ctx.scratch.pop("column_probability")   # (batch, u) -> P[batch, u]
        batch = np.repeat(np.arange(S.num_rows, dtype=np.int64), S.row_lengths())
        state.add_nodes(batch, S.indices)
        row = np.repeat(np.arange(len(Q), dtype=np.int64), G.row_lengths())
        eb = Q.batch[row]
        src = state.local_of(eb, G.indices)
        a = np.ones(G.nnz) if G.data is None else G.data
        keep = (src >= 0) & (a > 0)
        row, eb, src, a, col = row[keep], eb[keep], src[keep], a[keep], G.indices[keep]
        raw = a / q(eb, col)
        indptr = np.zeros(len(Q) + 1, dtype=np.int64)
        np.cumsum(np.bincount(row, minlength=len(Q)), out=indptr[1:])
        weight = prim.normalize_rows(raw, indptr)
        state.add_edges(eb, Q.local[row], src, G.edge_id[keep], weight)


def _table_lookup(sorted_keys, values, n):
    """``(batch, u) -> value`` for a table keyed by ``batch * n + u`` (sorted)."""
    return lambda batch, u: values[np.searchsorted(sorted_keys, batch * n + u)]


class LADIES(_LayerWise):
    """LAyer-Dependent ImportancE Sampling (Zou et al., NeurIPS 2019), any number of layers.

    Parameters
    ----------
    fanouts : sequence of int
        Vertices sampled per minibatch at each layer, layer 1 (nearest the seeds) first.

    Examples
    --------
    >>> import spsample
    >>> g = spsample.Graph.from_edge_index([1, 2, 3, 0, 0], [0, 0, 0, 1, 2], num_nodes=4)
    >>> mb, = spsample.sample(g, [0], sampler=spsample.LADIES([2]), batch_size=1)
    >>> mb.num_sampled_nodes[1] <= 2, round(float(mb.weight[0].sum()), 6)
    (True, 1.0)
    """

    def probabilities(self, graph, Q, ctx):
        G = self.gathered(graph, Q, ctx)
        P = prim.column_accumulate(G, Q.batch, ctx.batch_ids.size, square=True)
        row = np.repeat(np.arange(P.num_rows, dtype=np.int64), P.row_lengths())
        ctx.scratch["column_probability"] = _table_lookup(row * graph.num_nodes + P.indices,
                                                          P.data, graph.num_nodes)
        return P

    def select(self, P, Q, ctx):
        """``fanout`` distinct columns per minibatch with probability ∝ ``P`` (all if fewer).

        Unweighted graphs draw entries of the gathered rows until that many distinct columns
        came up (:func:`~spsample._primitives.sample_columns_by_entries`: about ``fanout``
        draws, no key per candidate); weighted graphs rank every candidate by its
        Efraimidis–Spirakis key (:func:`~spsample._primitives.sample_columns`). Both are
        successive sampling ∝ ``P``; they use different random words.
        """
        G = ctx.scratch["gathered"]
        if G.data is None:
            return prim.sample_columns_by_entries(P, G, Q.batch, ctx.fanout, ctx.batch_ids,
                                                  ctx.hop_word, ctx.key)
        return prim.sample_columns(P, ctx.fanout, ctx.batch_ids, ctx.hop_word, ctx.key)

    # -------------------------------------------------------------- native fast path (issue #3)
    def sample_bulk(self, graph, seeds, sizes, batch_ids, seed, epoch):
        """Every layer of a bulk in one native call (unweighted: draws of entries, the column
        sums of the sampled vertices only; weighted: segmented column sums, no SpGEMM), or
        ``None`` unless the native kernels are enabled and ``self`` is exactly ``LADIES``."""
        from .. import _native

        if type(self) is not LADIES or not _native.enabled():
            return None
        return _native.layerwise_bulk(graph, seeds, sizes, batch_ids, self, seed, epoch)


def column_weights(graph):
    """FastGCN's ``q[u] = Σ_v A[v,u]²``, summed in CSR order, and its serial prefix sums.

    Returns
    -------
    (q, cumulative) : float64 arrays of shape (n,)
    """
    def compute():
        sq = None if graph.weights is None else graph.weights * graph.weights
        q = np.bincount(graph.indices, weights=sq, minlength=graph.num_nodes).astype(np.float64)
        return q, np.cumsum(q)
    return graph.cached("fastgcn_column_weights", compute)


class FastGCN(_LayerWise):
    """FastGCN (Chen et al., ICLR 2018): layer-wise i.i.d. draws from ``q[u] ∝ ‖A[:,u]‖²``.

    Each minibatch draws ``fanouts[l-1]`` vertices with replacement at layer ``l`` (so up to
    that many distinct vertices), independently of its current vertex set. Fanouts must be
    positive (``-1`` is not meaningful for i.i.d. draws).
    """

    def __init__(self, fanouts, **unknown):
        super().__init__(fanouts, **unknown)
        if min(self.fanouts) < 1:
            fail(SamplerError, "FastGCN", "fanouts", "entries must be >= 1", list(self.fanouts))

    def probabilities(self, graph, Q, ctx):
        G = self.gathered(graph, Q, ctx)
        q, cumulative = column_weights(graph)
        ctx.scratch["cumulative"] = cumulative
        ctx.scratch["column_probability"] = lambda batch, u: q[u]   # the same for every minibatch
        return G

    # -------------------------------------------------------------- native fast path (issue #3)
    def sample_bulk(self, graph, seeds, sizes, batch_ids, seed, epoch):
        """Every layer of a bulk in one native call, or ``None`` unless the native kernels are
        enabled and ``self`` is exactly ``FastGCN``."""
        from .. import _native

        if type(self) is not FastGCN or not _native.enabled():
            return None
        return _native.layerwise_bulk(graph, seeds, sizes, batch_ids, self, seed, epoch,
                                      column_weights=column_weights(graph))

    def select(self, P, Q, ctx):
        cumulative = ctx.scratch.pop("cumulative")
        k = ctx.batch_ids.size
        if cumulative.size == 0 or cumulative[-1] <= 0:
            return prim.RowMatrix(np.zeros(k + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        return prim.sample_global(cumulative, ctx.fanout, ctx.batch_ids, ctx.hop_word, ctx.key)
