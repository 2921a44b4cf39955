"""A random-walk sampler written only against spsample's public sampler protocol.

Node-wise sampling with fanout 1: at step l every walk moves from where it stands (even a
vertex the minibatch already holds) to one uniformly drawn neighbour. Walks are independent:
each draws from its own RNG stream, keyed by the seed it started from (``Streams.per_row``), so
a walk that stops at a vertex without neighbours does not shift the others. Both constructors
are lazy matrices, so this sampler runs on the native engine like the built-ins (the built-in
``spsample.RandomWalk`` adds node2vec's bias). Run: python experiments/random_walk.py
"""

import spsample
from spsample.primitives import Streams


class RandomWalk(spsample.NodeWise):
    """``walk_length`` steps of one uniform neighbour from each seed."""

    def __init__(self, walk_length):
        super().__init__([1] * walk_length)

    def frontier(self, state, ctx):  # Q: the walks' current positions (repeats allowed)
        return state.new_nodes(0) if ctx.hop == 1 else state.edge_sources(ctx.hop - 1)

    def streams(self, Q, ctx):  # one stream per walk, not per vertex
        return Streams.per_row(Q, ctx)


if __name__ == "__main__":
    graph = spsample.rmat(10)
    mb, = spsample.sample(graph, [1, 2, 3], sampler=RandomWalk(4), batch_size=3, seed=0)
    for hop, (dst, src) in enumerate(mb.edges, start=1):
        print(f"step {hop}:", list(zip(mb.n_id[dst].tolist(), mb.n_id[src].tolist())))
