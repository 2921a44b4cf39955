"""Tools for testing samplers: a zoo of samplers and graphs, bit-for-bit comparison of bulks,
and the invariants every sample satisfies.

spsample's own conformance suite (``tests/conformance``) runs every sampler of the zoo on every
graph of the zoo through every execution path and compares each result with the NumPy
evaluation of the sampler's constructors, bit for bit; the same pieces serve anyone who writes
a sampler::

    import spsample
    from spsample import testing

    for name in ("random", "power-law", "weighted-zeros", "self-loops", "directed"):
        g = testing.graphs()[name](seed=0)
        seeds = testing.pick_seeds(g, 40, seed=1)
        sampler = MySampler([5, 5])
        bulk = spsample.sample(g, seeds, sampler=sampler, batch_size=8)
        testing.check_invariants(g, bulk, sampler, seeds=seeds)
        parts = (spsample.sample(g, seeds[:16], sampler=sampler, batch_size=8)
                 + spsample.sample(g, seeds[16:], sampler=sampler, batch_size=8,
                                   batch_offset=2))
        testing.assert_same_bulk(bulk, parts)

Contents
--------
graphs(kind=None)
    The graph zoo: ``{name: GraphCase}``; ``case(seed)`` makes the graph (random, power-law
    with a hub, weighted with zero weights, isolated vertices, self-loops, directed, empty
    rows, one vertex, heterogeneous, temporal with edge or node times).
samplers(graph_case=None)
    The sampler zoo: ``{name: SamplerCase}``; ``case(graph, fanouts=None)`` makes the sampler
    (every built-in with its options, and user compositions of :mod:`spsample.primitives`).
pick_seeds(graph, count, seed)
    Distinct seeds for a graph of the zoo (``(node_type, ids)`` on a HeteroGraph).
assert_same_bulk(a, b)
    Bit-for-bit equality of two results, naming the first minibatch, hop and field that
    differ.
check_invariants(graph, bulk, sampler, seeds=None, seed_time=None)
    Sampled edges ⊆ A, seeds first, unique ``n_id``, per-row counts within the fanout,
    layer-wise edges = every entry between the rows and the drawn columns, walks follow
    edges, temporal: nothing later than its seed.
The user samplers of the zoo (``ColumnScaled``, ``RowScaled``, ``EdgeValued``,
``SumOfSquares``, ``PerVertexFanout``, ``WalkPerRow``, ``GivenRows``, ``NoDedup``,
``WeightedWalk``, ``Subclass``, ``SubclassLADIES``) are importable as examples.
"""

import numpy as np

from ._compare import assert_same_bulk
from ._graphs import (HETERO_RELATIONS, GraphCase, directed, empty_rows, graphs,
                      heterogeneous, isolated_vertices, one_vertex, power_law, random_graph,
                      self_loops, temporal, temporal_node_times, weighted_zeros)
from ._invariants import check_invariants
from ._samplers import (BranchingWalk, ColumnScaled, EdgeValued, GivenRows, NoDedup,
                        PerVertexFanout, RejectionNodeWise, RowScaled, SamplerCase, Subclass,
                        SubclassLADIES, SumOfSquares, WalkPerRow, WeightedWalk, samplers)

__all__ = [
    "graphs", "samplers", "pick_seeds", "assert_same_bulk", "check_invariants",
    "GraphCase", "SamplerCase", "HETERO_RELATIONS",
    "random_graph", "power_law", "weighted_zeros", "isolated_vertices", "self_loops",
    "directed", "empty_rows", "one_vertex", "heterogeneous", "temporal",
    "temporal_node_times",
    "Subclass", "SubclassLADIES", "ColumnScaled", "RowScaled", "EdgeValued", "SumOfSquares",
    "PerVertexFanout", "WalkPerRow", "GivenRows", "NoDedup", "WeightedWalk",
    "RejectionNodeWise", "BranchingWalk",
]


def pick_seeds(graph, count, seed=0, *, node_type="paper"):
    """``count`` distinct seeds of ``graph`` in a random order (fewer when it has fewer
    vertices).

    Parameters
    ----------
    graph : Graph or HeteroGraph
    count : int
    seed : int
    node_type : str
        On a HeteroGraph: the seeds' type.

    Returns
    -------
    int64 array of shape (min(count, n),), or ``(node_type, ids)`` on a HeteroGraph.
    """
    rng = np.random.default_rng(seed)
    if hasattr(graph, "node_types"):
        n = graph.num_nodes[node_type]
        return node_type, rng.permutation(n)[:count].astype(np.int64)
    return rng.permutation(graph.num_nodes)[:count].astype(np.int64)
