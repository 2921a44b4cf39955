"""The sampler protocol: a sampler is the set of matrix constructors of one hop.

For hop ``l`` (1-based, counted from the seeds) :meth:`Sampler.sample_hop` runs::

    Q = sampler.frontier(state, ctx)          # which (minibatch, vertex) rows expand
    P = sampler.probabilities(graph, Q, ctx)  # unnormalised probability matrix (RowMatrix)
    S = sampler.select(P, Q, ctx)             # the sampled matrix: a subset of P's entries
    sampler.extract(state, Q, S, ctx)         # new vertices + local edges into the state

for all ``k`` minibatches of a bulk at once. A new algorithm is a subclass that overrides some
of these four methods; bulk execution, determinism (the RNG streams of ``ctx``), distribution
and the torch loader come with the base class. See ``experiments/random_walk.py`` for a
complete sampler in a few lines.
"""

from dataclasses import dataclass, field

import numpy as np

from .._bulk import BulkState
from .._errors import SamplerError
from .._lazy import Frontier
from .._validate import as_int, fail

__all__ = ["Sampler", "BulkState", "Frontier", "HopContext"]


@dataclass
class HopContext:
    """What a sampler may know about the hop being sampled.

    Attributes
    ----------
    hop : int
        1-based hop (layer) counted from the seeds.
    fanout : int
        This hop's fanout (``-1``: all).
    seed, epoch : int
    key : (int, int)
        Philox key of ``seed``.
    hop_word : int
        RNG counter word 2 for (epoch, hop).
    batch_ids : int64, shape (k,)
        Global minibatch id of each minibatch of the bulk.
    backend : Backend
    scratch : dict
        Per-bulk storage shared by the hops (e.g. quantities computed once per bulk).
    symbolic : bool
        True while the engine traces the constructors (no sampled data exists yet).
    graph : Graph or None
        The graph being sampled.
    """

    hop: int
    fanout: int
    seed: int
    epoch: int
    key: tuple
    hop_word: int
    batch_ids: np.ndarray
    backend: object
    scratch: dict = field(default_factory=dict)
    symbolic: bool = False
    graph: object = None


class Sampler:
    """Base class of every sampler: ``fanouts`` per hop plus the four constructors.

    Parameters
    ----------
    fanouts : sequence of int
        Fanout of each hop, hop 1 (nearest the seeds) first; ``-1`` means all neighbours.

    Subclasses override :meth:`frontier`, :meth:`probabilities`, :meth:`select` and
    :meth:`extract` (and may override :meth:`sample_hop` with a fused fast path that gives the
    same result).
    """

    #: keyword options the constructor accepts, for error messages and :meth:`config`.
    options = ()

    def __init__(self, fanouts):
        self.fanouts = check_fanouts(type(self).__name__, fanouts)

    @property
    def num_hops(self):
        return len(self.fanouts)

    def config(self):
        """A dict that identifies the sampler's behaviour (ranks compare it)."""
        cfg = {"sampler": type(self).__name__, "fanouts": list(self.fanouts)}
        cfg.update({name: getattr(self, name) for name in self.options})
        return cfg

    def check_graph(self, graph):
        """Raise if the sampler cannot run on ``graph`` (e.g. weighted sampling, no weights)."""

    # ------------------------------------------------------------------ the protocol
    def frontier(self, state, ctx):
        """``Q``: the rows to expand at this hop (a :class:`Frontier`)."""
        raise NotImplementedError

    def probabilities(self, graph, Q, ctx):
        """``P``: a :class:`~spsample._primitives.RowMatrix` (rows unnormalised)."""
        raise NotImplementedError

    def select(self, P, Q, ctx):
        """``S``: the sampled subset of ``P``'s entries (a RowMatrix)."""
        raise NotImplementedError

    def extract(self, state, Q, S, ctx):
        """Add ``S``'s new vertices and edges to ``state`` (local ids)."""
        raise NotImplementedError

    def sample_hop(self, graph, state, ctx):
        """One hop for the whole bulk: the composition of the four constructors."""
        Q = self.frontier(state, ctx)
        P = self.probabilities(graph, Q, ctx)
        S = self.select(P, Q, ctx)
        self.extract(state, Q, S, ctx)

    def __repr__(self):
        opts = "".join(f", {k}={getattr(self, k)!r}" for k in self.options)
        return f"{type(self).__name__}({list(self.fanouts)}{opts})"

    def __eq__(self, other):
        return type(self) is type(other) and self.config() == other.config()

    __hash__ = None


def check_fanouts(where, fanouts):
    """Validate a fanout list: non-empty ints, each ``>= 1`` or ``-1``; at most 255 hops."""
    if isinstance(fanouts, (str, bytes)) or not hasattr(fanouts, "__len__"):
        from .._errors import ArgumentTypeError
        fail(ArgumentTypeError, where, "fanouts", "must be a sequence of integers", fanouts)
    out = [as_int(where, "fanouts", f, error_cls=SamplerError) for f in fanouts]
    if not out:
        fail(SamplerError, where, "fanouts", "must not be empty", list(fanouts))
    for f in out:
        if f == 0 or f < -1:
            fail(SamplerError, where, "fanouts", "entries must be >= 1, or -1 for all neighbours",
                 out)
        if f >= 2**31:
            fail(SamplerError, where, "fanouts", "entries must be below 2**31", out)
    if len(out) > 255:
        fail(SamplerError, where, "fanouts", "must have at most 255 hops", len(out))
    return tuple(out)
