"""Layer-wise sampling (LADIES, FastGCN): each minibatch draws one vertex set per layer.

Layer ``l`` of minibatch ``j`` with current vertex set ``B_j`` (all its vertices so far):

1. ``Q_b``: the rows of ``B_j`` (``state.all_nodes()``, a k × n batch-membership matrix);
2. ``P``: LADIES ``P[j, u] = Σ_{v∈B_j} A[v,u]²`` (``column_sums`` of the view
   ``(Q_b·A)∘(Q_b·A)``);
   FastGCN ``P[u] = Σ_v A[v,u]²`` for every minibatch (``global_columns``);
3. ``S_j``: ``fanouts[l-1]`` columns per minibatch (LADIES: distinct, without replacement --
   on unweighted graphs by drawing entries of the gathered rows, each column with probability
   ∝ its count, until that many distinct columns came up; on weighted graphs by
   Efraimidis–Spirakis keys; FastGCN: i.i.d. draws, deduplicated);
4. extraction (``state.add_layer``): ``C_j = B_j ∪ S_j`` becomes the next set (so every vertex
   keeps a path to itself); the layer's edges are all entries ``A[v,u] ≠ 0`` with ``v ∈ B_j``,
   ``u ∈ C_j`` (``R_j·A·C_jᵀ``), valued ``A[v,u] / P[j,u]`` and row-normalised (the importance
   weights of the LADIES paper; the factor ``1/s`` cancels in the normalisation).
"""


from ..engine import _primitives as prim
from ..graph._weights import column_weights, layerwise_scale, layerwise_weights  # noqa: F401
from .._errors import SamplerError
from ..engine._lazy import Expr, column_sums, gather, global_columns
from .._validate import check_no_unknown, fail
from ..engine._protocol import Sampler

__all__ = ["LADIES", "FastGCN", "column_weights", "layerwise_weights"]


class _LayerWise(Sampler):
    def __init__(self, fanouts, **unknown):
        check_no_unknown(type(self).__name__, unknown, ())
        super().__init__(fanouts)

    def frontier(self, state, ctx):
        return state.all_nodes()

    def values(self, graph, Q):
        """``Q_b·A`` valued by A's own values: the numerators of the layer's edge weights (on a
        weighted graph, the weights scaled by the graph's ``layerwise_weights()``)."""
        G = gather(graph, Q)
        return G if graph.weights is None else G * Expr("edge", vector=graph.layerwise_weights())

    def extract(self, state, Q, S, ctx):
        state.add_layer(Q, S, values=self.values(ctx.graph, Q),
                        probabilities=prim.probabilities_of(S))


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
        return column_sums(self.values(graph, Q).square(), ctx)

    def select(self, P, Q, ctx):
        """``fanout`` distinct columns per minibatch with probability ∝ ``P`` (all if fewer):
        by draws of entries on unweighted graphs, by keys on weighted ones
        (:func:`~spsample.engine._primitives.select_columns`)."""
        return prim.select_columns(P, ctx.fanout, ctx)


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
        return global_columns(*graph.column_weights())

    def select(self, P, Q, ctx):
        return prim.select_global(P, ctx.fanout, ctx)
