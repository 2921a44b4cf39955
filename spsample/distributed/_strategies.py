"""The registry of distributed strategies: one registration makes a strategy reachable by name
everywhere.

A strategy says where each hop of a distributed bulk runs: ``"push"`` (the frontier rows go to
the owners of their rows of ``A``, which select there) or ``"pull"`` (the rows are fetched and
the hop's own constructors select locally). Both give the single-process minibatches bit for
bit, so a strategy only moves bytes. :meth:`DistGraph.sample` / :meth:`DistHeteroGraph.sample`
(``strategy=``), the loaders, ``TrainConfig(strategy=...)``, ``spsample train --strategy``,
the planner's candidates (:func:`spsample.distributed._plan.plan`, ``spsample plan``) and the
link and heterogeneous fit functions all read this registry; none keeps a list of its own.
:data:`STRATEGIES` is a live view of the names. A registration holds the hop placement, the
planner's bytes model and a one-line description::

    >>> from spsample.distributed import (STRATEGIES, register_strategy, registered_strategy,
    ...                                   unregister_strategy)
    >>> push = registered_strategy("push")
    >>> entry = register_strategy("eager", lambda plans, weighted: ["pull"] * len(plans),
    ...                           sampling_bytes=registered_strategy("pull").sampling_bytes,
    ...                           description="fetch every row (as pull)")
    >>> "eager" in STRATEGIES
    True
    >>> unregister_strategy("eager")
    >>> STRATEGIES
    ('push', 'pull')

The built-in strategies are registered in ``spsample/distributed/__init__.py``.
"""

import re
from dataclasses import dataclass

from .._errors import ArgumentError, ArgumentTypeError
from .._validate import fail

__all__ = ["StrategyEntry", "register_strategy", "unregister_strategy", "registered_strategy",
           "strategy_names", "check_strategy", "STRATEGIES", "HOP_KINDS"]

#: Where one hop can run: at the rows' owners, or on rows fetched to the requester.
HOP_KINDS = ("push", "pull")

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_REGISTRY = {}


@dataclass(frozen=True)
class StrategyEntry:
    """One registered distributed strategy.

    Attributes
    ----------
    name : str
        Its name in ``sample(..., strategy=NAME)``, ``TrainConfig(strategy=NAME)`` and
        ``spsample train --strategy NAME``.
    modes : callable
        ``modes(plans, weighted)``: where each hop runs, one of :data:`HOP_KINDS` per hop.
        ``plans`` is the list of the bulk's traced hop plans (hop 1 first; their
        ``selection``, ``kind`` and ``frontier`` say what the hop does), ``weighted`` whether
        the graph has edge weights. A hop that cannot be pushed must be pulled (the push
        strategy's :func:`~spsample.distributed._sampling.push_modes` says which can; a
        strategy pushing another fails with an ``ArgumentError`` on every rank).
        Called on every rank with the same plans: it must answer the same everywhere.
    sampling_bytes : callable
        ``sampling_bytes(w, p, c, k)``: the planner's expected bytes one rank's bulk of ``k``
        minibatches moves for sampling (a :class:`~spsample.distributed._plan.Workload`
        ``w``, ``p`` ranks, replication ``c``), see :mod:`spsample.distributed._plan`.
    description : str
        One line for ``--help``.
    """

    name: str
    modes: object
    sampling_bytes: object
    description: str = ""

    def hop_modes(self, plans, *, weighted=False):
        """``modes(plans, weighted)`` as a list (unchecked: :meth:`check_modes` checks it)."""
        return list(self.modes(list(plans), bool(weighted)))

    def check_modes(self, modes, pushable):
        """``modes`` (what :meth:`hop_modes` gave) as a list, if it places each hop as one of
        :data:`HOP_KINDS` and pushes only hops that ``pushable`` (one of :data:`HOP_KINDS` per
        hop: what the push strategy would do) allows.

        Raises
        ------
        ArgumentError
            Naming ``strategy``: the strategy's ``modes`` answered something else.
        """
        modes, pushable = list(modes), list(pushable)
        if len(modes) != len(pushable) or any(not isinstance(m, str) or m not in HOP_KINDS
                                              for m in modes):
            fail(ArgumentError, "sample", "strategy", f"{self.name!r} must place each of the "
                 f"{len(pushable)} hop(s) as one of {HOP_KINDS}; its modes gave {modes!r}",
                 self.name)
        wrong = [h + 1 for h, (m, a) in enumerate(zip(modes, pushable))
                 if m == "push" and a != "push"]
        if wrong:
            fail(ArgumentError, "sample", "strategy", f"{self.name!r} pushes hop(s) {wrong}, "
                 "whose selection cannot be pushed (it is neither row-local nor layer-wise "
                 "without float sums across owners): its modes must pull them", self.name)
        return modes


def register_strategy(name, modes, *, sampling_bytes, description="", replace=False):
    """Register a distributed strategy under ``name``.

    Parameters
    ----------
    name : str
        Lower case letters, digits, ``-`` and ``_``, starting with a letter.
    modes : callable
        ``modes(plans, weighted) -> sequence of str``, one of :data:`HOP_KINDS` per hop (see
        :class:`StrategyEntry`).
    sampling_bytes : callable
        ``sampling_bytes(w, p, c, k) -> float``, the planner's bytes model (see
        :class:`StrategyEntry`).
    description : str
        One line for ``spsample train --help``.
    replace : bool
        Replace an existing registration of ``name`` (else it is an error).

    Returns
    -------
    StrategyEntry

    Raises
    ------
    ArgumentError
        ``name`` malformed or taken.
    ArgumentTypeError
        ``modes`` or ``sampling_bytes`` not callable.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        fail(ArgumentError, "register_strategy", "name", "must be lower case letters, digits, "
             "'-' or '_', starting with a letter", name)
    if name in _REGISTRY and not replace:
        fail(ArgumentError, "register_strategy", "name",
             "is registered already (pass replace=True)", name)
    for argname, value in (("modes", modes), ("sampling_bytes", sampling_bytes)):
        if not callable(value):
            fail(ArgumentTypeError, "register_strategy", argname, "must be callable",
                 type(value))
    entry = StrategyEntry(name=name, modes=modes, sampling_bytes=sampling_bytes,
                          description=str(description))
    _REGISTRY[name] = entry
    return entry


def unregister_strategy(name):
    """Forget the registration of ``name`` (nothing when there is none)."""
    _REGISTRY.pop(name, None)


def strategy_names():
    """The registered names, in registration order, as a tuple."""
    return tuple(_REGISTRY)


def registered_strategy(name, *, where="registered_strategy", argname="name"):
    """The :class:`StrategyEntry` of ``name``.

    Raises
    ------
    ArgumentError
        Naming ``argname``, listing the names registered.
    """
    entry = _REGISTRY.get(name) if isinstance(name, str) else None
    if entry is None:
        fail(ArgumentError, where, argname, f"must be one of {strategy_names()}", name)
    return entry


def check_strategy(where, strategy, *, allow_none=False):
    """``strategy`` if it is registered (or None, when ``allow_none``).

    Raises
    ------
    ArgumentError
        Naming ``strategy``, listing the names registered.
    """
    if strategy is None and allow_none:
        return None
    if not isinstance(strategy, str) or strategy not in _REGISTRY:
        accepted = "None or one of" if allow_none else "one of"
        fail(ArgumentError, where, "strategy", f"must be {accepted} {strategy_names()}",
             strategy)
    return strategy


class _StrategyNames:
    """A live, read-only sequence of the registered strategy names (:data:`STRATEGIES`): a
    tuple's comparisons, membership and ``repr``."""

    def __iter__(self):
        return iter(strategy_names())

    def __len__(self):
        return len(_REGISTRY)

    def __getitem__(self, index):
        return strategy_names()[index]

    def __contains__(self, name):
        return isinstance(name, str) and name in _REGISTRY

    def __eq__(self, other):
        return strategy_names() == tuple(other) if isinstance(other, (tuple, list,
                                                                      _StrategyNames)) \
            else NotImplemented

    def __hash__(self):
        return hash(strategy_names())

    def __repr__(self):
        return repr(strategy_names())


#: The registered strategies' names, a live view of the registry (``"push"``, ``"pull"`` and
#: any registered later).
STRATEGIES = _StrategyNames()
