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

from ._bulk import BulkState
from .._errors import ArgumentTypeError, SamplerError, SpsampleError
from ._lazy import Frontier, RowView
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
    scratch : dict
        Per-bulk storage shared by the hops (e.g. quantities computed once per bulk).
    symbolic : bool
        True while the engine traces the constructors (no sampled data exists yet).
    graph : Graph or None
        The graph being sampled (on a heterogeneous graph: the hop's relation block). A hop
        of a ``DiskGraph`` or a ``DistGraph`` that fetches its rows sees a view of the rows
        it fetched (their ids as in the whole graph, but its arrays hold those rows only):
        a constructor must not decide samples from its data (e.g. a rejection bound from
        ``ctx.graph.weights.max()``), or the minibatches change with the path; take such
        values from the graph given to the sampler's ``__init__``.
    relation : (str, str, str) or None
        Heterogeneous graphs: the relation this step samples (a hop is one step per relation
        whose destination type was reached at the hop before); ``None`` on a plain graph.
    src_type, dst_type : str or None
        The relation's source and destination node types.
    step : int
        The engine hop (1-based): equals ``hop`` on a plain graph.
    seed_time : int64 or float64 array of shape (k,), or None
        Temporal sampling: the time of each minibatch of the bulk (entries later than it are
        masked out, :meth:`~spsample.engine._lazy.RowView.until`).
    """

    hop: int
    fanout: int
    seed: int
    epoch: int
    key: tuple
    hop_word: int
    batch_ids: np.ndarray
    scratch: dict = field(default_factory=dict)
    symbolic: bool = False
    graph: object = None
    relation: object = None
    src_type: object = None
    dst_type: object = None
    step: int = 0
    seed_time: object = None


class Sampler:
    """Base class of every sampler: ``fanouts`` per hop plus the four constructors.

    Parameters
    ----------
    fanouts : sequence of int, or dict of relation to sequence of int
        Fanout of each hop, hop 1 (nearest the seeds) first; ``-1`` means all neighbours. On a
        :class:`~spsample.HeteroGraph`, a dict gives each relation its own fanouts (keys:
        ``(src, name, dst)`` triples or unique relation names; every relation of the graph,
        the same number of hops each; ``0`` skips a relation at a hop); a list applies to every
        relation.

    Subclasses override :meth:`frontier`, :meth:`probabilities`, :meth:`select` and
    :meth:`extract` (and may override :meth:`sample_hop` with a fused fast path that gives the
    same result).
    """

    #: keyword options the constructor accepts, for error messages and :meth:`config`.
    options = ()
    #: whether the sampler runs on heterogeneous graphs (a step per relation, see HopContext).
    heterogeneous = False

    def __init__(self, fanouts):
        if isinstance(fanouts, dict):
            self.relation_fanouts = check_relation_fanouts(type(self).__name__, fanouts)
            self.fanouts = _hop_maxima(self.relation_fanouts)
        else:
            self.relation_fanouts = None
            self.fanouts = check_fanouts(type(self).__name__, fanouts)

    @property
    def num_hops(self):
        return len(self.fanouts)

    def config(self):
        """A dict that identifies the sampler's behaviour (ranks compare it)."""
        cfg = {"sampler": type(self).__name__, "fanouts": list(self.fanouts)}
        if self.relation_fanouts is not None:
            cfg["relation_fanouts"] = {str(k): list(v) for k, v in self.relation_fanouts.items()}
        cfg.update({name: getattr(self, name) for name in self.options})
        return cfg

    def fanouts_for(self, graph):
        """``{relation: fanouts}`` for every relation of the heterogeneous ``graph``.

        Raises
        ------
        SamplerError
            The dict names an unknown relation or misses one of the graph's (naming
            ``fanouts``).
        """
        where = type(self).__name__
        if self.relation_fanouts is None:
            return {rel: self.fanouts for rel in graph.relations}
        out = {}
        for key, value in self.relation_fanouts.items():
            try:
                rel = graph.relation(key, where=where, argname="fanouts")
            except SpsampleError as exc:
                raise SamplerError(str(exc)) from None
            if rel in out:
                fail(SamplerError, where, "fanouts", "names a relation twice", key)
            out[rel] = value
        missing = [rel for rel in graph.relations if rel not in out]
        if missing:
            fail(SamplerError, where, "fanouts", f"misses relation {missing[0]} of the graph "
                 "(give every relation its fanouts, 0 to skip it)", sorted(map(str, out)))
        return out

    def check_graph(self, graph):
        """Raise if the sampler cannot run on ``graph`` (e.g. weighted sampling, no weights)."""

    # ------------------------------------------------------------------ the protocol
    def frontier(self, state, ctx):
        """``Q``: the rows to expand at this hop (a :class:`Frontier`)."""
        raise NotImplementedError

    def probabilities(self, graph, Q, ctx):
        """``P``: a :class:`~spsample.engine._primitives.RowMatrix` (rows unnormalised)."""
        raise NotImplementedError

    def select(self, P, Q, ctx):
        """``S``: the sampled subset of ``P``'s entries (a RowMatrix)."""
        raise NotImplementedError

    def extract(self, state, Q, S, ctx):
        """Add ``S``'s new vertices and edges to ``state`` (local ids)."""
        raise NotImplementedError

    def sample_hop(self, graph, state, ctx):
        """One hop for the whole bulk: the composition of the four constructors. In a
        temporal bulk, ``P`` keeps only the entries no later than each minibatch's time
        whether or not ``probabilities`` cut it (:func:`cut_in_time`)."""
        Q = self.frontier(state, ctx)
        P = cut_in_time(self.probabilities(graph, Q, ctx), graph, ctx)
        S = self.select(P, Q, ctx)
        self.extract(state, Q, S, ctx)

    def __repr__(self):
        opts = "".join(f", {k}={getattr(self, k)!r}" for k in self.options)
        return f"{type(self).__name__}({list(self.fanouts)}{opts})"

    def __eq__(self, other):
        return type(self) is type(other) and self.config() == other.config()

    __hash__ = None


def cut_in_time(P, graph, ctx):
    """``P`` cut at the minibatch times of a temporal bulk (``P.until``) when it is a view of
    the step's time-sorted rows that its constructor left uncut (a user's ``probabilities``
    need not know about time); ``P`` itself otherwise."""
    time = getattr(graph, "entry_time", None)
    if ctx.seed_time is None or time is None or not isinstance(P, RowView) or \
            P.cutoff is not None or P.graph is not graph:
        return P
    return P.until(time, ctx.seed_time)


def check_fanouts(where, fanouts, *, allow_zero=False):
    """Validate a fanout list: non-empty ints, each ``>= 1`` or ``-1`` (or ``0`` with
    ``allow_zero``); at most 255 hops."""
    if isinstance(fanouts, (str, bytes)) or not hasattr(fanouts, "__len__"):
        fail(ArgumentTypeError, where, "fanouts", "must be a sequence of integers", fanouts)
    out = [as_int(where, "fanouts", f, error_cls=SamplerError) for f in fanouts]
    if not out:
        fail(SamplerError, where, "fanouts", "must not be empty", list(fanouts))
    for f in out:
        if (f == 0 and not allow_zero) or f < -1:
            fail(SamplerError, where, "fanouts", "entries must be >= 1, or -1 for all neighbours"
                 + (" (0: skip the relation)" if allow_zero else ""), out)
        if f >= 2**31:
            fail(SamplerError, where, "fanouts", "entries must be below 2**31", out)
    if len(out) > 255:
        fail(SamplerError, where, "fanouts", "must have at most 255 hops", len(out))
    return tuple(out)


def check_relation_fanouts(where, fanouts):
    """Validate per-relation fanouts: a non-empty dict, each value a fanout list (``0`` allowed:
    the relation is skipped at that hop), all of one length. Returns ``{key: tuple}``."""
    if not fanouts:
        fail(SamplerError, where, "fanouts", "must not be an empty dict", fanouts)
    out, length = {}, None
    for key, value in fanouts.items():
        if isinstance(key, list):
            key = tuple(key)
        if not (isinstance(key, str) or (isinstance(key, tuple) and len(key) == 3
                                         and all(isinstance(x, str) for x in key))):
            fail(SamplerError, where, "fanouts", "keys must be (src, name, dst) triples or "
                 "relation names", key)
        hops = check_fanouts(where, value, allow_zero=True)
        if length is not None and len(hops) != length:
            fail(SamplerError, where, "fanouts", f"must give every relation the same number of "
                 f"hops ({length})", {key: list(hops)})
        length = len(hops)
        out[key] = hops
    return out


def _hop_maxima(relation_fanouts):
    """Per hop, the largest fanout over the relations (``-1`` if any takes all)."""
    per_hop = zip(*relation_fanouts.values())
    return tuple(-1 if -1 in fs else max(fs) for fs in per_hop)
