"""The graph zoo: small graphs, each made by a function of a seed, that between them hold the
shapes a sampler can trip over (hubs, zero weights, empty rows, isolated vertices, self-loops,
one vertex, several node types, times).

Every function takes ``seed`` (int, default 0) and returns a new
:class:`~spsample.Graph` (or :class:`~spsample.HeteroGraph`); the same seed gives the same
graph. Sizes are a few hundred vertices and edges at most, so that the scalar reference
(:mod:`spsample.engine._reference`) samples them in milliseconds.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..graph._graph import Graph
from ..graph._hetero import HeteroGraph
from ..graph._generate import rmat

__all__ = ["GraphCase", "graphs", "random_graph", "power_law", "weighted_zeros",
           "isolated_vertices", "self_loops", "directed", "empty_rows", "one_vertex",
           "heterogeneous", "temporal", "temporal_node_times", "HETERO_RELATIONS"]


def _edges(rng, n, m):
    return rng.integers(0, n, m), rng.integers(0, n, m)


def random_graph(seed=0):
    """Uniformly random directed multigraph (merged): 120 vertices, 900 drawn edges,
    unweighted."""
    rng = np.random.default_rng(seed)
    src, dst = _edges(rng, 120, 900)
    return Graph.from_edge_index(src, dst, num_nodes=120)


def power_law(seed=0):
    """R-MAT scale 7 (128 vertices, skewed degrees) plus vertex 0 as a hub in both directions
    (row 0 lists every other vertex, and 0 is in every row): unweighted."""
    g = rmat(7, edge_factor=8, seed=seed)
    src, dst = g.edge_index()
    others = np.arange(1, g.num_nodes)
    zeros = np.zeros(others.size, dtype=np.int64)
    return Graph.from_edge_index(np.concatenate([src, others, zeros]),
                                 np.concatenate([dst, zeros, others]), num_nodes=g.num_nodes)


def weighted_zeros(seed=0):
    """Random weighted graph, 100 vertices, 800 drawn edges, a fifth of the weights 0 (a
    zero-weight entry is in ``A`` but never drawn by a weighted rule)."""
    rng = np.random.default_rng(seed)
    src, dst = _edges(rng, 100, 800)
    w = rng.random(src.size) + 0.01
    w[rng.random(src.size) < 0.2] = 0.0
    return Graph.from_edge_index(src, dst, num_nodes=100, weights=w)


def isolated_vertices(seed=0):
    """Vertices 0..29 isolated (empty rows, never a neighbour); 30..99 random, weighted."""
    rng = np.random.default_rng(seed)
    src, dst = _edges(rng, 70, 500)
    w = rng.random(src.size) + 0.05
    return Graph.from_edge_index(src + 30, dst + 30, num_nodes=100, weights=w)


def self_loops(seed=0):
    """Every vertex of 0..59 aggregates from itself, plus 240 random edges; weighted::

        v --> v for every v, and random u --> v
    """
    rng = np.random.default_rng(seed)
    loops = np.arange(60)
    src, dst = _edges(rng, 60, 240)
    w = rng.random(60 + src.size) + 0.1
    return Graph.from_edge_index(np.concatenate([loops, src]), np.concatenate([loops, dst]),
                                 num_nodes=60, weights=w)


def directed(seed=0):
    """A DAG: row ``v`` lists only ``u < v`` (80 vertices, 600 drawn edges), so row 0 is empty
    and walks run towards vertex 0 and stop; unweighted."""
    rng = np.random.default_rng(seed)
    a, b = _edges(rng, 80, 600)
    keep = a != b
    lo, hi = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    return Graph.from_edge_index(lo, hi, num_nodes=80)


def empty_rows(seed=0):
    """Even vertices aggregate from nobody but are everybody's neighbours: rows 0, 2, 4, ...
    empty, columns of odd rows only even (90 vertices, 500 drawn edges); weighted."""
    rng = np.random.default_rng(seed)
    src = 2 * rng.integers(0, 45, 500)
    dst = 2 * rng.integers(0, 45, 500) + 1
    w = rng.random(src.size) + 0.05
    return Graph.from_edge_index(src, dst, num_nodes=90, weights=w)


def one_vertex(seed=0):
    """One vertex, no edge (weighted, with no weights)::

        0
    """
    del seed
    return Graph.from_csr(np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64),
                          weights=np.zeros(0))


#: The relations of :func:`heterogeneous` and :func:`temporal`.
HETERO_RELATIONS = (("author", "writes", "paper"), ("paper", "cites", "paper"),
                    ("paper", "written_by", "author"), ("paper", "in", "venue"),
                    ("venue", "has", "paper"))
_COUNTS = {"author": 30, "paper": 50, "venue": 4}


def _hetero(seed, *, edge_time=False, node_time=False):
    rng = np.random.default_rng(seed)
    edges, weights, times = {}, {}, {}
    for rel in HETERO_RELATIONS:
        s, _, d = rel
        m = 40 if rel[1] == "has" else 160
        edges[rel] = (rng.integers(0, _COUNTS[s], m), rng.integers(0, _COUNTS[d], m))
        weights[rel] = rng.random(m) + 0.05
        times[rel] = rng.integers(0, 100, m).astype(float)
    ntime = {t: rng.integers(0, 100, n).astype(float) for t, n in _COUNTS.items()}
    return HeteroGraph.from_edge_index(edges, num_nodes=_COUNTS, weights=weights,
                                       edge_time=times if edge_time else None,
                                       node_time=ntime if node_time else None)


def heterogeneous(seed=0):
    """Three node types, five relations, weighted (30 authors, 50 papers, 4 venues)::

        author --writes--> paper --cites--> paper
        paper --written_by--> author;  paper --in--> venue --has--> paper
    """
    return _hetero(seed)


def temporal(seed=0):
    """:func:`heterogeneous` with a time in ``[0, 100)`` on every edge."""
    return _hetero(seed, edge_time=True)


def temporal_node_times(seed=0):
    """:func:`heterogeneous` with a time on every vertex (an entry's time is its source's)."""
    return _hetero(seed, node_time=True)


@dataclass(frozen=True)
class GraphCase:
    """One graph of the zoo.

    Attributes
    ----------
    name : str
    make : callable
        ``make(seed) -> Graph or HeteroGraph``.
    kind : {"graph", "hetero", "temporal"}
        A plain :class:`~spsample.Graph`, a :class:`~spsample.HeteroGraph`, or a temporal
        one (sampled with ``seed_time``).
    weighted : bool
        Whether the graph has edge weights (weighted samplers need them).
    """

    name: str
    make: Callable
    kind: str
    weighted: bool

    def __call__(self, seed=0):
        return self.make(seed)

    def __repr__(self):
        return f"GraphCase({self.name!r})"


_ZOO = (
    GraphCase("random", random_graph, "graph", False),
    GraphCase("power-law", power_law, "graph", False),
    GraphCase("weighted-zeros", weighted_zeros, "graph", True),
    GraphCase("isolated", isolated_vertices, "graph", True),
    GraphCase("self-loops", self_loops, "graph", True),
    GraphCase("directed", directed, "graph", False),
    GraphCase("empty-rows", empty_rows, "graph", True),
    GraphCase("one-vertex", one_vertex, "graph", True),
    GraphCase("hetero", heterogeneous, "hetero", True),
    GraphCase("temporal", temporal, "temporal", True),
    GraphCase("temporal-nodes", temporal_node_times, "temporal", True),
)


def graphs(kind=None):
    """The graph zoo, by name.

    Parameters
    ----------
    kind : {None, "graph", "hetero", "temporal"}
        Only the graphs of this kind (``None``: all).

    Returns
    -------
    dict of str to GraphCase
        In a fixed order; ``case(seed)`` makes the graph.

    Examples
    --------
    >>> from spsample import testing
    >>> g = testing.graphs()["power-law"](seed=3)
    >>> g.num_nodes
    128
    """
    return {c.name: c for c in _ZOO if kind is None or c.kind == kind}
