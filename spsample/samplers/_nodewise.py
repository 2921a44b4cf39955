"""Node-wise (GraphSAGE) sampling: every frontier vertex draws its own neighbours.

Hop ``l``: ``Q`` selects the vertices first reached at hop ``l - 1`` (the seeds for hop 1);
``P = Q·A`` is a view of their rows (valued by the edge weights when weighted); ``S`` keeps at
most ``fanouts[l-1]`` entries per row, from one stream per (minibatch, vertex); extraction
appends the unseen neighbours in edge order and writes the edges in local ids.
"""

import numpy as np

from .. import _primitives as prim
from .._errors import ArgumentTypeError, SamplerError
from .._lazy import Streams, gather
from .._validate import check_no_unknown, fail
from ._protocol import Sampler

__all__ = ["NodeWise"]


class NodeWise(Sampler):
    """GraphSAGE-style neighbour sampling, ``fanouts[l-1]`` neighbours per vertex at hop ``l``.

    Parameters
    ----------
    fanouts : sequence of int
        Hop 1 first (PyG's order); ``-1`` takes every neighbour.
    replace : bool
        Sample with replacement (exactly ``fanout`` draws per vertex of non-zero degree; the
        same neighbour may appear several times).
    weighted : bool
        Draw proportionally to the graph's edge weights (Efraimidis–Spirakis without
        replacement; exponential races with replacement). Needs a weighted graph.

    Examples
    --------
    >>> import spsample
    >>> g = spsample.Graph.from_edge_index([1, 2, 3, 0], [0, 0, 0, 1])
    >>> mb, = spsample.sample(g, [0], sampler=spsample.NodeWise([2]), batch_size=1, seed=7)
    >>> len(mb.edges[0][0])  # min(fanout, degree) edges for the seed
    2
    """

    options = ("replace", "weighted")

    def __init__(self, fanouts, *, replace=False, weighted=False, **unknown):
        check_no_unknown(type(self).__name__, unknown, self.options)
        super().__init__(fanouts)
        for name, value in (("replace", replace), ("weighted", weighted)):
            if not isinstance(value, (bool, np.bool_)):
                fail(ArgumentTypeError, type(self).__name__, name, "must be a bool", value)
        self.replace = bool(replace)
        self.weighted = bool(weighted)

    def check_graph(self, graph):
        if self.weighted and graph.weights is None:
            fail(SamplerError, type(self).__name__, "weighted",
                 "is True but the graph has no edge weights", self.weighted)

    # -------------------------------------------------------------- constructors
    def frontier(self, state, ctx):
        return state.new_nodes(ctx.hop - 1)

    def probabilities(self, graph, Q, ctx):
        P = gather(graph, Q)
        return P.with_weights() if self.weighted else P

    def streams(self, Q, ctx):
        """The RNG stream of each frontier row: keyed by its vertex and minibatch."""
        return Streams.per_vertex(Q, ctx)

    def select(self, P, Q, ctx):
        return prim.select_rows(P, ctx.fanout, self.streams(Q, ctx), replace=self.replace,
                                weighted=self.weighted)

    def extract(self, state, Q, S, ctx):
        state.add_sampled(Q, S)
