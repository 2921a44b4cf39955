"""The sampler zoo: every built-in sampler with its options, and user samplers written in the
documented vocabulary (:mod:`spsample.primitives`; README, "Writing a new sampler").

The user samplers below are public so that they can serve as examples and as test inputs:
each overrides one constructor of a built-in the way the README shows, and between them they
use every value transform (per column, per row, per edge, numbers, sums and squares), every
stream keying (per vertex, per row), given frontier rows, per-vertex fanouts, rejection
sampling, and extraction without deduplication.
"""

from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import numpy as np

from ..engine import _primitives as _prim
from ..engine._lazy import Streams, gather
from ..samplers import LABOR, LADIES, FastGCN, NodeWise, RandomWalk
from .._validate import as_int

__all__ = ["SamplerCase", "samplers", "Subclass", "SubclassLADIES", "ColumnScaled",
           "RowScaled", "EdgeValued", "SumOfSquares", "PerVertexFanout", "WalkPerRow",
           "GivenRows", "NoDedup", "WeightedWalk", "RejectionNodeWise", "BranchingWalk"]


def _num_nodes(graph):
    return getattr(graph, "total_nodes", None) or graph.num_nodes


def _num_edges(graph):
    m = graph.num_edges
    return sum(m.values()) if isinstance(m, dict) else int(m)


def _degree(graph):
    """Row lengths over the global ids (a HeteroGraph's relations together)."""
    if hasattr(graph, "to_homogeneous"):
        graph = graph.to_homogeneous()
    return graph.degree()


# ---------------------------------------------------------------------- user samplers
def _largest_weight(graph):
    """The largest edge weight of ``graph`` (1 without weights), at least 1e-300."""
    w = getattr(graph, "weights", None)          # a HeteroGraph has none: refused later
    return max(float(w.max()) if w is not None and w.size else 1.0, 1e-300)


class Subclass(NodeWise):
    """``NodeWise`` subclassed, nothing overridden (must run exactly as its parent)."""


class SubclassLADIES(LADIES):
    """``LADIES`` subclassed, nothing overridden."""


class ColumnScaled(NodeWise):
    """Node-wise, neighbour ``u`` weighted by ``1 / (1 + deg(u))`` (a per-column vector): the
    README's ``LowDegreeFirst``.

    Parameters
    ----------
    fanouts : sequence of int
    graph : Graph
        Gives the vector (shape ``(n,)``).
    """

    def __init__(self, fanouts, graph):
        super().__init__(fanouts, weighted=True)
        self.vec = 1.0 / (1.0 + _degree(graph))

    def check_graph(self, graph):
        pass

    def probabilities(self, graph, Q, ctx):
        return gather(graph, Q).scale_columns(self.vec)


class RowScaled(NodeWise):
    """Weighted node-wise by ``(col[u] + 0.25 a_vu) * row[v]``: a per-column vector plus a
    view times a number (a sum of two views of the same rows), scaled per row."""

    def __init__(self, fanouts, graph):
        super().__init__(fanouts, weighted=True)
        rng = np.random.default_rng(1)
        n = _num_nodes(graph)
        self.col, self.row = rng.random(n), rng.random(n) + 0.5

    def check_graph(self, graph):
        pass

    def probabilities(self, graph, Q, ctx):
        P = gather(graph, Q)
        return (P.scale_columns(self.col) + P * 0.25).scale_rows(self.row)


class EdgeValued(NodeWise):
    """Weighted node-wise by a per-edge array (a quarter of its values 0: never drawn),
    without replacement."""

    def __init__(self, fanouts, graph):
        super().__init__(fanouts, weighted=True)
        rng = np.random.default_rng(2)
        m = _num_edges(graph)
        self.edge = rng.random(m) + 0.01
        self.edge[rng.random(m) < 0.25] = 0.0

    def check_graph(self, graph):
        pass

    def probabilities(self, graph, Q, ctx):
        return gather(graph, Q).scale_edges(self.edge)


class SumOfSquares(NodeWise):
    """Values from every transform, ``(w·col + w²)·row·edge`` (``w`` the edge weight, 1 on an
    unweighted graph), drawn with replacement."""

    def __init__(self, fanouts, graph):
        super().__init__(fanouts, weighted=True, replace=True)
        rng = np.random.default_rng(0)
        n = _num_nodes(graph)
        self.col, self.row = rng.random(n), rng.random(n) + 0.5
        self.edge = rng.random(_num_edges(graph))

    def check_graph(self, graph):
        pass

    def probabilities(self, graph, Q, ctx):
        P = gather(graph, Q)
        W = P.with_weights() if graph.weights is not None else P
        return (W.scale_columns(self.col) + W.square()).scale_rows(self.row).scale_edges(
            self.edge)


class PerVertexFanout(NodeWise):
    """A fanout per row vertex: ``v`` keeps ``1 + v % 4`` neighbours, all of them when
    ``v % 7 == 0`` (``-1``); with or without replacement."""

    def __init__(self, fanouts, graph, *, replace=False):
        super().__init__(fanouts, replace=replace)
        v = np.arange(_num_nodes(graph))
        self.fan = np.where(v % 7 == 0, -1, 1 + v % 4)

    def select(self, P, Q, ctx):
        return _prim.select_rows(P, self.fan, self.streams(Q, ctx), replace=self.replace)


class WalkPerRow(NodeWise):
    """The README's random walk: one step per hop from where each walk stands, one random
    stream per walk (keyed by its row, not its vertex)."""

    def __init__(self, walk_length):
        super().__init__([1] * walk_length)

    def frontier(self, state, ctx):
        return state.new_nodes(0) if ctx.hop == 1 else state.edge_sources(ctx.hop - 1)

    def streams(self, Q, ctx):
        return Streams.per_row(Q, ctx)


class GivenRows(NodeWise):
    """Hop 1 expands two given vertices per minibatch (``(7 b + 3) % n`` and
    ``(7 b + 11) % n`` for global minibatch id ``b``) instead of its seeds."""

    def frontier(self, state, ctx):
        if ctx.hop != 1:
            return super().frontier(state, ctx)
        k = ctx.batch_ids.size
        batch = np.repeat(np.arange(k), 2)
        vertex = (np.repeat(ctx.batch_ids, 2) * 7 + np.tile([3, 11], k)) % state.num_nodes
        return state.rows(batch, vertex)


class NoDedup(NodeWise):
    """No deduplication: every sampled entry is a new vertex (a tree per seed)."""

    def extract(self, state, Q, S, ctx):
        state.add_sampled(Q, S, dedup=False)


class WeightedWalk(RandomWalk):
    """node2vec on a weighted graph: the edge weights times the second-order bias, drawn by
    rejection under a bound.

    The bound comes from the graph given here, not from ``ctx.graph``: on a ``DiskGraph`` or
    a ``DistGraph`` a hop may run on a view of the rows it fetched, whose weights are not the
    whole graph's (a bound read there would change the draws with the path).
    """

    def __init__(self, walk_length, graph, p=1.0, q=1.0):
        super().__init__(walk_length, p=p, q=q)
        self.bound = max(1.0, 1 / self.p, 1 / self.q) * _largest_weight(graph)

    def probabilities(self, graph, Q, ctx):
        P = super().probabilities(graph, Q, ctx)
        return P.with_weights() if P.expr is not None else P

    def select(self, P, Q, ctx):
        if P.expr is None:
            return super().select(P, Q, ctx)
        return _prim.select_rows(P, 1, Streams.per_row(Q, ctx), replace=True, weighted=True,
                                 method="rejection", bound=self.bound)


class RejectionNodeWise(NodeWise):
    """Weighted node-wise with replacement, each row's ``fanout`` draws made by rejection
    against the graph's largest weight (a uniform position, kept with chance ``w / bound``)
    instead of the exact keys: the rejection rule at fanouts above 1.

    Parameters
    ----------
    fanouts : sequence of int
    graph : Graph
        Gives the bound (its largest weight), as :class:`WeightedWalk` does.
    """

    def __init__(self, fanouts, graph):
        super().__init__(fanouts, weighted=True, replace=True)
        self.bound = _largest_weight(graph)

    def select(self, P, Q, ctx):
        return _prim.select_rows(P, ctx.fanout, self.streams(Q, ctx), replace=True,
                                 weighted=True, method="rejection", bound=self.bound)


class BranchingWalk(RandomWalk):
    """node2vec's second-order values drawn ``branches`` times per row and step (a walk that
    branches): ``RandomWalk`` with fanout ``branches`` at every step, so its steps after the
    first take the rejection rule on node2vec's value program at that fanout, which the native
    engine runs row by row (a node2vec walk's fanout-1 steps take the batched kernel instead).

    Parameters
    ----------
    walk_length : int
    p, q : float
    branches : int
        Draws per row and step, ``>= 1``.
    """

    def __init__(self, walk_length, p=1.0, q=1.0, branches=2):
        super().__init__(walk_length, p=p, q=q)
        branches = as_int("BranchingWalk", "branches", branches, minimum=1)
        self.fanouts = [branches] * self.num_hops

    def __repr__(self):
        return (f"BranchingWalk({self.num_hops}, p={self.p!r}, q={self.q!r}, "
                f"branches={self.fanouts[0]})")


# ---------------------------------------------------------------------- the zoo
ALL_KINDS = ("graph", "hetero", "temporal")


@dataclass(frozen=True)
class SamplerCase:
    """One sampler of the zoo.

    Attributes
    ----------
    name : str
    build : callable
        ``build(graph, fanouts) -> Sampler``.
    fanouts : tuple of int
        The default fanouts (a walk's length is ``len(fanouts)``).
    kinds : tuple of str
        The graph kinds it samples (see :class:`GraphCase`); on another kind
        :func:`spsample.sample` refuses it with a :class:`~spsample.SamplerError`.
    weighted : bool
        It needs edge weights (on an unweighted graph: a :class:`~spsample.SamplerError`).
    disjoint : bool
        Every seed gets its own subgraph.
    min_fanout : int
        The smallest fanout it accepts (``-1``: all neighbours; FastGCN: 1).
    refuses : tuple of str or None
        The graph kinds on which :func:`spsample.sample` raises a typed error for it
        (``None``: every kind not in ``kinds``); a kind in neither runs but is not covered.
    """

    name: str
    build: Callable
    fanouts: Tuple[int, ...] = (4, 3)
    kinds: Tuple[str, ...] = ALL_KINDS
    weighted: bool = False
    disjoint: bool = False
    min_fanout: int = -1
    refuses: Optional[Tuple[str, ...]] = None

    def __call__(self, graph, fanouts=None):
        """The sampler for ``graph`` (fanouts: the default ones unless given)."""
        return self.build(graph, tuple(self.fanouts if fanouts is None else fanouts))

    def refused(self, graph_case):
        """Whether :func:`spsample.sample` refuses it on ``graph_case`` with a typed error."""
        if self.applies(graph_case):
            return False
        if graph_case.kind not in self.kinds:
            return self.refuses is None or graph_case.kind in self.refuses
        return True                           # weighted, on an unweighted graph

    def applies(self, graph_case):
        """Whether it samples ``graph_case`` (a :class:`GraphCase`): kind and weights."""
        return graph_case.kind in self.kinds and (graph_case.weighted or not self.weighted)

    def __repr__(self):
        return f"SamplerCase({self.name!r})"


def _nodewise(**kw):
    return lambda g, f: NodeWise(list(f), **kw)


def _case(name, build, **kw):
    return SamplerCase(name, build, **kw)


def _homogeneous(name, build, **kw):
    """A sampler of plain graphs only (layer-wise, walks, per-edge arrays of one graph)."""
    return SamplerCase(name, build, kinds=("graph",), **kw)


_ZOO = (
    _case("nodewise", _nodewise()),
    _case("nodewise-3hops", _nodewise(), fanouts=(3, 2, 2)),
    _case("nodewise-all", _nodewise(), fanouts=(-1, 2)),
    _case("nodewise-large", _nodewise(), fanouts=(40, 2)),
    _case("nodewise-replace", _nodewise(replace=True)),
    _case("nodewise-weighted", _nodewise(weighted=True), weighted=True),
    _case("nodewise-weighted-all", _nodewise(weighted=True), fanouts=(-1, 2), weighted=True),
    _case("nodewise-weighted-replace", _nodewise(weighted=True, replace=True), weighted=True),
    _case("nodewise-weighted-alias", _nodewise(weighted=True, weighted_method="alias"),
          fanouts=(2, 1), weighted=True),
    _case("nodewise-weighted-alias-replace",
          _nodewise(weighted=True, weighted_method="alias", replace=True), weighted=True),
    _case("nodewise-last", _nodewise(temporal_strategy="last")),
    _case("nodewise-per-relation",
          lambda g, f: NodeWise({"writes": [2, 1], "cites": [4, 0], "written_by": [1, 3],
                                 "in": [-1, 1], "has": [2, 2]}),
          kinds=("hetero", "temporal")),
    _case("disjoint", _nodewise(disjoint=True), disjoint=True),
    _case("per-vertex-fanout", lambda g, f: PerVertexFanout(list(f), g)),
    _case("per-vertex-fanout-replace", lambda g, f: PerVertexFanout(list(f), g, replace=True)),
    _case("labor", lambda g, f: LABOR(list(f)), fanouts=(5, 3)),
    _case("labor-all", lambda g, f: LABOR(list(f)), fanouts=(-1, 2)),
    _case("subclass", lambda g, f: Subclass(list(f))),
    _case("column-scaled", lambda g, f: ColumnScaled(list(f), g)),
    _case("row-scaled", lambda g, f: RowScaled(list(f), g)),
    # given rows on a HeteroGraph join the step that gives them, so a given vertex of another
    # type than that step's is not expanded at the next hop: not covered there
    _case("given-rows", lambda g, f: GivenRows(list(f)), fanouts=(3, 2), kinds=("graph",),
          refuses=()),
    _case("no-dedup", lambda g, f: NoDedup(list(f)), fanouts=(3, 2)),
    _homogeneous("edge-valued", lambda g, f: EdgeValued(list(f), g)),
    _homogeneous("sum-of-squares", lambda g, f: SumOfSquares(list(f), g), fanouts=(3, 2)),
    _homogeneous("ladies", lambda g, f: LADIES(list(f)), fanouts=(10, 20)),
    _homogeneous("ladies-all", lambda g, f: LADIES(list(f)), fanouts=(-1, 4)),
    _homogeneous("ladies-3layers", lambda g, f: LADIES(list(f)), fanouts=(3, 3, 3)),
    _homogeneous("subclass-ladies", lambda g, f: SubclassLADIES(list(f)), fanouts=(8, 8)),
    _homogeneous("fastgcn", lambda g, f: FastGCN(list(f)), fanouts=(10, 30), min_fanout=1),
    _homogeneous("fastgcn-one-draw", lambda g, f: FastGCN(list(f)), fanouts=(1, 100),
                 min_fanout=1),
    _homogeneous("randomwalk", lambda g, f: RandomWalk(len(f)), fanouts=(1, 1, 1, 1)),
    _homogeneous("node2vec", lambda g, f: RandomWalk(len(f), p=0.5, q=2.0),
                 fanouts=(1, 1, 1, 1)),
    _homogeneous("node2vec-inward", lambda g, f: RandomWalk(len(f), p=4.0, q=0.25),
                 fanouts=(1, 1, 1)),
    _homogeneous("weighted-walk", lambda g, f: WeightedWalk(len(f), g, p=0.5, q=2.0),
                 fanouts=(1, 1, 1), weighted=True),
    _homogeneous("nodewise-rejection", lambda g, f: RejectionNodeWise(list(f), g),
                 fanouts=(3, 2), weighted=True),
    _homogeneous("node2vec-branching", lambda g, f: BranchingWalk(len(f), p=0.5, q=2.0),
                 fanouts=(1, 1, 1)),
    _homogeneous("walk-per-row", lambda g, f: WalkPerRow(len(f)), fanouts=(1, 1, 1, 1)),
)


def samplers(graph_case=None):
    """The sampler zoo, by name.

    Parameters
    ----------
    graph_case : GraphCase, optional
        Only the samplers that sample this graph (:meth:`SamplerCase.applies`).

    Returns
    -------
    dict of str to SamplerCase
        In a fixed order; ``case(graph)`` (or ``case(graph, fanouts)``) makes the sampler.

    Examples
    --------
    >>> import spsample
    >>> from spsample import testing
    >>> g = testing.graphs()["random"](seed=0)
    >>> sampler = testing.samplers()["column-scaled"](g)
    >>> bulk = spsample.sample(g, [1, 2, 3], sampler=sampler, batch_size=2)
    >>> testing.check_invariants(g, bulk, sampler, seeds=[1, 2, 3])
    """
    return {c.name: c for c in _ZOO if graph_case is None or c.applies(graph_case)}
