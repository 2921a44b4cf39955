"""Node-wise (GraphSAGE) sampling: every frontier vertex draws its own neighbours.

Hop ``l``: ``Q`` selects the vertices first reached at hop ``l - 1`` (the seeds for hop 1);
``P = Q·A`` is a view of their rows (valued by the edge weights when weighted); ``S`` keeps at
most ``fanouts[l-1]`` entries per row, from one stream per (minibatch, vertex); extraction
appends the unseen neighbours in edge order and writes the edges in local ids.

On a heterogeneous graph the engine runs one step per relation: ``Q`` holds the vertices of
the relation's destination type reached at hop ``l - 1``, ``P`` is a view of the relation's
block, and the streams are the relation's own (``ctx.key``). Temporal sampling masks ``P``:
``P.until(time, ctx.seed_time)`` keeps the entries no later than the minibatch's time (the
block's rows sorted by time, so a prefix of each row), and ``temporal_strategy="last"`` keeps
the latest ``fanout`` of them instead of a uniform sample.
"""

import numpy as np

from ..engine import _primitives as prim
from .._errors import ArgumentTypeError, SamplerError
from ..engine._lazy import Streams, gather
from .._validate import check_no_unknown, fail
from ..engine._protocol import Sampler

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
    weighted_method : {"keys", "alias"}
        How weighted rows are drawn. ``"keys"`` (default) ranks an exponential key per entry:
        O(degree) per row. ``"alias"`` draws from alias tables that the graph builds once from
        its weights (8 bytes per entry, reused by every hop, bulk and epoch): O(1) per draw,
        so hubs cost no more than small rows. Both give each sample the same law (successive
        sampling without replacement); their samples differ bit for bit, each reproducible.
    disjoint : bool
        Give every seed its own subgraph: no vertex is shared between the seeds of a
        minibatch (``mb.batch`` says which seed each vertex belongs to); the seeds of a
        minibatch may then repeat. Temporal sampling is always disjoint (as PyG).
    temporal_strategy : {"uniform", "last"}
        With seed times (``spsample.sample(..., seed_time=...)`` on a temporal
        ``HeteroGraph``): sample uniformly among the entries no later than the seed's time,
        or take the latest ``fanout`` of them.

    Examples
    --------
    >>> import spsample
    >>> g = spsample.Graph.from_edge_index([1, 2, 3, 0], [0, 0, 0, 1])
    >>> mb, = spsample.sample(g, [0], sampler=spsample.NodeWise([2]), batch_size=1, seed=7)
    >>> len(mb.edges[0][0])  # min(fanout, degree) edges for the seed
    2
    """

    options = ("replace", "weighted", "weighted_method", "disjoint", "temporal_strategy")
    heterogeneous = True

    def __init__(self, fanouts, *, replace=False, weighted=False, weighted_method="keys",
                 disjoint=False, temporal_strategy="uniform", **unknown):
        where = type(self).__name__
        check_no_unknown(where, unknown, self.options)
        super().__init__(fanouts)
        for name, value in (("replace", replace), ("weighted", weighted),
                            ("disjoint", disjoint)):
            if not isinstance(value, (bool, np.bool_)):
                fail(ArgumentTypeError, where, name, "must be a bool", value)
        self.replace = bool(replace)
        self.weighted = bool(weighted)
        self.disjoint = bool(disjoint)
        if temporal_strategy not in ("uniform", "last"):
            fail(SamplerError, where, "temporal_strategy", "must be 'uniform' or 'last'",
                 temporal_strategy)
        if temporal_strategy == "last" and (self.replace or self.weighted):
            fail(SamplerError, where, "temporal_strategy", "'last' takes the latest entries: "
                 "it needs replace=False and weighted=False", temporal_strategy)
        self.temporal_strategy = temporal_strategy
        if weighted_method not in ("keys", "alias"):
            fail(SamplerError, where, "weighted_method", "must be 'keys' or 'alias'",
                 weighted_method)
        self.weighted_method = weighted_method

    def check_graph(self, graph):
        if not self.weighted:
            return
        blocks = [graph.relation_graph(r) for r in graph.relations] \
            if hasattr(graph, "relations") else [graph]
        if any(g.weights is None for g in blocks):
            fail(SamplerError, type(self).__name__, "weighted",
                 "is True but the graph has no edge weights", self.weighted)

    # -------------------------------------------------------------- constructors
    def frontier(self, state, ctx):
        return state.new_nodes(ctx.hop - 1, ctx.dst_type)

    def probabilities(self, graph, Q, ctx):
        P = gather(graph, Q)
        return masked_by_time(P.with_weights() if self.weighted else P, graph, ctx)

    def streams(self, Q, ctx):
        """The RNG stream of each frontier row: keyed by its vertex and minibatch."""
        return Streams.per_vertex(Q, ctx)

    def select(self, P, Q, ctx):
        if self.temporal_strategy == "last" and P.cutoff is not None:
            return prim.select_rows(P, ctx.fanout, self.streams(Q, ctx), method="last")
        method = self.weighted_method if self.weighted else "keys"
        return prim.select_rows(P, ctx.fanout, self.streams(Q, ctx), replace=self.replace,
                                weighted=self.weighted, method=method)

    def extract(self, state, Q, S, ctx):
        state.add_sampled(Q, S)


def masked_by_time(P, graph, ctx):
    """``P`` restricted to the entries no later than the minibatch's time when the bulk is
    temporal (``ctx.seed_time``) and ``graph`` has times (a time-sorted relation block);
    ``P`` itself otherwise."""
    time = getattr(graph, "entry_time", None)
    if ctx.seed_time is None or time is None:
        return P
    return P.until(time, ctx.seed_time)
