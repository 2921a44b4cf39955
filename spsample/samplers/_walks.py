"""Samplers written only as constructors: LABOR-0 and (node2vec) random walks."""

from ..engine import _primitives as prim
from ..engine._lazy import Streams, gather
from .._validate import as_int, check_no_unknown
from ..engine._protocol import Sampler
from ._nodewise import masked_by_time

__all__ = ["LABOR", "RandomWalk"]


class LABOR(Sampler):
    """Layer-neighbour sampling, LABOR-0 (Balın & Çatalyürek, NeurIPS 2023; DGL's
    ``LaborSampler``): each minibatch draws one uniform ``r_u`` per neighbour vertex ``u``,
    shared by all its rows, and row ``v`` (degree ``d``) keeps ``u`` iff ``r_u < fanout / d``.
    Each neighbour is kept with probability ``min(1, fanout / d)`` (``fanout`` per row in
    expectation), and rows of one minibatch pick the same neighbours where they can, so a hop
    reaches fewer new vertices than node-wise sampling.

    Parameters
    ----------
    fanouts : sequence of int
        Expected neighbours per vertex, hop 1 first; ``-1`` takes every neighbour.
    """

    heterogeneous = True

    def __init__(self, fanouts, **unknown):
        check_no_unknown(type(self).__name__, unknown, ())
        super().__init__(fanouts)

    def frontier(self, state, ctx):
        return state.new_nodes(ctx.hop - 1, ctx.dst_type)

    def probabilities(self, graph, Q, ctx):
        return masked_by_time(gather(graph, Q), graph, ctx)

    def select(self, P, Q, ctx):
        return prim.select_threshold(P, ctx.fanout, Streams.per_column(Q, ctx))

    def extract(self, state, Q, S, ctx):
        state.add_sampled(Q, S)


class RandomWalk(Sampler):
    """Random walks of ``walk_length`` steps from every seed; node2vec's second-order walks
    (Grover & Leskovec, KDD 2016) when ``p`` or ``q`` differ from 1.

    Step ``l`` moves every walk from where it stands (``state.edge_sources(l - 1)``) to one
    neighbour: uniformly, or -- node2vec, from ``v`` having come from ``t`` -- with weight
    ``1/p`` back to ``t``, ``1`` to a neighbour of ``t``, ``1/q`` elsewhere: the row view times
    ``1/q + (1 - 1/q)·A_t + I_t·((1/p - 1/q) - (1 - 1/q)·A_t)`` (``A_t`` the walks' previous
    rows, ``I_t`` the previous vertices as a selection matrix), drawn by rejection. Each walk
    draws from its own stream, keyed by the seed it started from, so a walk that stops (at a
    vertex without neighbours) does not shift the others. Minibatches hold each walk's steps
    as the edges of its hops (``dst`` = where the walk stood, ``src`` = where it went).

    Parameters
    ----------
    walk_length : int
        Steps, ``>= 1``.
    p, q : float
        node2vec's return and in-out parameters, positive and finite.
    """

    options = ("p", "q")

    def __init__(self, walk_length, p=1.0, q=1.0, **unknown):
        check_no_unknown(type(self).__name__, unknown, self.options)
        walk_length = as_int("RandomWalk", "walk_length", walk_length, minimum=1)
        super().__init__([1] * walk_length)
        self.p = prim.positive_number("RandomWalk", "p", p)
        self.q = prim.positive_number("RandomWalk", "q", q)

    def config(self):
        return {"sampler": type(self).__name__, "walk_length": self.num_hops, "p": self.p,
                "q": self.q}

    def __repr__(self):
        return f"RandomWalk({self.num_hops}, p={self.p!r}, q={self.q!r})"

    @property
    def biased(self):
        return self.p != 1.0 or self.q != 1.0

    def frontier(self, state, ctx):
        return state.new_nodes(0) if ctx.hop == 1 else state.edge_sources(ctx.hop - 1)

    def probabilities(self, graph, Q, ctx):
        P = gather(graph, Q)
        if ctx.hop == 1 or not self.biased:
            return P
        prev = Q.previous()
        A_t = gather(graph, prev)
        return P * (1 / self.q + (1 - 1 / self.q) * A_t
                    + prev.as_matrix() * ((1 / self.p - 1 / self.q) - (1 - 1 / self.q) * A_t))

    def select(self, P, Q, ctx):
        if P.expr is None:
            return prim.select_rows(P, ctx.fanout, Streams.per_row(Q, ctx))
        return prim.select_rows(P, ctx.fanout, Streams.per_row(Q, ctx), replace=True,
                                weighted=True, method="rejection",
                                bound=max(1.0, 1 / self.p, 1 / self.q))

    def extract(self, state, Q, S, ctx):
        state.add_sampled(Q, S)

