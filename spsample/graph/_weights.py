"""Whole-graph quantities of the layer-wise samplers (LADIES, FastGCN): the edge weights scaled
by a power of two, and FastGCN's column weights. Every graph (in memory, on disk, distributed)
scales by :func:`layerwise_scale`; the results are cached on the graph."""

import numpy as np

from ._graph import frozen_array

__all__ = ["layerwise_weights", "layerwise_scale", "column_weights"]


def layerwise_weights(graph):
    """The edge weights scaled by a power of two, ``2**-e``, so that the largest is in
    ``[0.5, 1)``: the values layer-wise samplers square and sum. Every selection and edge weight
    they produce is invariant to scaling ``A`` (sampling ∝ ``A∘A``, values row-normalised), and
    a power of two scales exactly, so any finite positive weights work (1e-200 and 1e200
    included) with the same bits as unscaled weights in the normal range. An entry whose scaled
    weight squares to 0 (below ``2**-537`` of the largest) counts as weight 0. Subnormal weights
    (all below ``2**-1022``) are scaled by ``2**1023`` (:func:`layerwise_scale`), exactly: the
    largest lands in ``[2**-51, 1)`` and none squares to 0.

    Returns
    -------
    float64, shape (num_edges,), read-only (cached on the graph).
    """
    def compute():
        w = graph.weights
        top = float(w.max()) if w.size else 0.0
        out = w * layerwise_scale(top)
        out.flags.writeable = False
        return out
    return graph.cached("layerwise_weights", compute)


def layerwise_scale(top):
    """The power of two :func:`layerwise_weights` multiplies the weights by, given the largest
    ``top``: ``2**-e`` with ``top = m * 2**e``, ``0.5 <= m < 1`` (1 when ``top <= 0``), at most
    ``2**1023`` (the largest power of two a float64 holds; ``2**-e`` itself overflows for a
    subnormal ``top``). The in-memory, on-disk and distributed graphs all scale by it."""
    return 2.0 ** min(-int(np.frexp(top)[1]), 1023) if top > 0 else 1.0


def column_weights(graph):
    """FastGCN's ``q[u] = Σ_v A[v,u]²`` (weights scaled by :func:`layerwise_weights`), summed in
    CSR order, and its serial prefix sums.

    Returns
    -------
    (q, cumulative) : float64 arrays of shape (n,), read-only
    """
    def compute():
        w = None if graph.weights is None else layerwise_weights(graph)
        sq = None if w is None else w * w
        q = np.bincount(graph.indices, weights=sq, minlength=graph.num_nodes).astype(np.float64)
        return frozen_array(q), frozen_array(np.cumsum(q))
    return graph.cached("fastgcn_column_weights", compute)
