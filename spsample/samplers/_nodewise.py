"""Node-wise (GraphSAGE) sampling: every frontier vertex draws its own neighbours.

Hop ``l``: ``Q`` selects the vertices first reached at hop ``l - 1`` (the seeds for hop 1);
``P = Q·A`` is a row gather; ``S`` keeps at most ``fanouts[l-1]`` entries per row; extraction
appends the unseen neighbours in edge order and writes the edges in local ids.
"""

import numpy as np

from .. import _primitives as prim
from .._errors import SamplerError
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
        check_no_unknown("NodeWise", unknown, self.options)
        super().__init__(fanouts)
        for name, value in (("replace", replace), ("weighted", weighted)):
            if not isinstance(value, (bool, np.bool_)):
                from .._errors import ArgumentTypeError
                fail(ArgumentTypeError, "NodeWise", name, "must be a bool", value)
        self.replace = bool(replace)
        self.weighted = bool(weighted)

    def check_graph(self, graph):
        if self.weighted and graph.weights is None:
            fail(SamplerError, "NodeWise", "weighted",
                 "is True but the graph has no edge weights", self.weighted)

    # -------------------------------------------------------------- constructors
    def frontier(self, state, ctx):
        return state.new_nodes(ctx.hop - 1)

    def probabilities(self, graph, Q, ctx):
        weights = graph.weights if self.weighted else None
        return prim.row_select(graph.indptr, graph.indices, weights, Q.vertex)

    def streams(self, Q, ctx):
        """The RNG stream of each frontier row: keyed by its vertex and minibatch."""
        return prim.Streams(Q.vertex, ctx.batch_ids[Q.batch], ctx.hop_word, ctx.key)

    def select(self, P, Q, ctx):
        return prim.sample_rows(P, ctx.fanout, self.streams(Q, ctx),
                                replace=self.replace, weighted=self.weighted)

    def extract(self, state, Q, S, ctx):
        row = np.repeat(np.arange(len(Q), dtype=np.int64), S.row_lengths())
        batch = Q.batch[row]
        state.add_nodes(batch, S.indices)
        state.add_edges(batch, Q.local[row], state.local_of(batch, S.indices), S.edge_id)

    # -------------------------------------------------------------- native fast path (issue #3)
    def sample_bulk(self, graph, seeds, sizes, batch_ids, seed, epoch):
        """Every hop of a bulk in one fused native call (gather + sample + relabel per row).

        Returns ``None`` (and :func:`spsample._sample.run_bulk` takes the algebraic path) unless
        the native kernels are enabled and ``self`` is exactly a built-in ``NodeWise``; a
        subclass overriding the constructors always gets the algebraic path.
        """
        from .. import _native

        if type(self) is not NodeWise or not _native.enabled():
            return None
        return _native.nodewise_bulk(graph, seeds, sizes, batch_ids, self, seed, epoch)
