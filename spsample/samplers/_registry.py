"""The registry of samplers: one registration makes a sampler reachable by name everywhere.

``spsample sample --sampler NAME``, ``spsample train --sampler NAME``,
``Trainer(sampler=NAME)``, ``spsample plan --sampler NAME`` (:meth:`Workload.like`) and the
PyG adapter all read this registry; none keeps a list of its own. A registration holds how to
build the sampler from its fanouts, its default fanouts and what it can do::

    >>> import spsample
    >>> from spsample.samplers import register, registered, unregister
    >>> @register("mine", fanouts=(8, 4))
    ... class Mine(spsample.NodeWise):
    ...     pass
    >>> type(registered("mine").make([2, 2])).__name__
    'Mine'
    >>> "mine" in names(trainable=True)
    True
    >>> unregister("mine")

The built-in samplers are registered in ``spsample/samplers/__init__.py``.
"""

import re
from dataclasses import dataclass

from .._errors import ArgumentError, ArgumentTypeError
from .._validate import fail

__all__ = ["SamplerEntry", "register", "unregister", "registered", "names", "entry_of",
           "NameView"]

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_REGISTRY = {}


@dataclass(frozen=True)
class SamplerEntry:
    """One registered sampler.

    Attributes
    ----------
    name : str
        Its name on the command line and in ``TrainConfig(sampler=...)``.
    factory : callable
        ``factory(fanouts)`` (a list of int, hop 1 first) returns the sampler; for a walk
        (``walk=True``) ``factory(length, p=1.0, q=1.0)``. Usually the class itself.
    cls : type or None
        The class the factory builds (the factory itself when it is a class): what
        :func:`entry_of` looks up for a sampler object.
    fanouts : tuple of int or None
        Default fanouts of ``spsample sample`` (None for a walk).
    train_fanouts : tuple of int or None
        Default fanouts of ``Trainer`` / ``spsample train``; None: not a training sampler.
    layerwise : bool
        Its hops are layers of nodes with importance-weighted edges (LADIES, FastGCN): trained
        with the GCN, modelled by the planner as layer-wise draws, refused by PyG.
    walk : bool
        A random walk: one neighbour per step, built from a walk length and node2vec's
        ``p``, ``q`` (``spsample sample --walk-length``).
    heterogeneous : bool
        ``factory`` also takes per-relation fanouts (a dict ``relation -> fanouts``), as the
        CLI samples heterogeneous datasets.
    description : str
        One line for ``--help``.
    """

    name: str
    factory: object
    cls: object = None
    fanouts: tuple = None
    train_fanouts: tuple = None
    layerwise: bool = False
    walk: bool = False
    heterogeneous: bool = False
    description: str = ""

    @property
    def trainable(self):
        """Whether ``Trainer`` and ``spsample train`` take it (it has training fanouts)."""
        return self.train_fanouts is not None

    def make(self, fanouts):
        """The sampler with ``fanouts`` (list of int, or a dict per relation)."""
        return self.factory(fanouts if isinstance(fanouts, dict) else list(fanouts))


def _fanout_tuple(name, value):
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) == 0:
        fail(ArgumentTypeError, "register", name, "must be a non-empty sequence of int", value)
    out = tuple(int(v) for v in value)
    if any(v < 1 for v in out):
        fail(ArgumentError, "register", name, "must hold positive fanouts", list(out))
    return out


def register(name, factory=None, *, fanouts=None, train_fanouts=None, layerwise=False,
             walk=False, heterogeneous=False, description="", replace=False):
    """Register a sampler under ``name`` (use as ``register(name, cls, ...)`` or as a class
    decorator ``@register(name, ...)``).

    Parameters
    ----------
    name : str
        Lower case letters, digits, ``-`` and ``_``, starting with a letter.
    factory : callable, optional
        ``factory(fanouts) -> Sampler`` (a :class:`~spsample.Sampler` subclass, usually);
        omitted: returns a decorator registering the decorated class.
    fanouts : sequence of int
        Default fanouts of ``spsample sample`` and ``spsample plan``'s measurement (hop 1
        first); required unless ``walk``.
    train_fanouts : sequence of int, optional
        Default fanouts of the Trainer; default ``fanouts``. Pass ``train_fanouts=False`` for a
        sampler that is not for training (walks are not).
    layerwise, walk, heterogeneous : bool
        Capabilities, see :class:`SamplerEntry`.
    description : str
    replace : bool
        Replace an existing registration of ``name`` (else it is an error).

    Returns
    -------
    SamplerEntry, or the decorator (which returns the class unchanged).

    Raises
    ------
    ArgumentError
        ``name`` malformed or taken, fanouts missing or not positive.
    """
    if factory is None:
        def decorate(cls):
            register(name, cls, fanouts=fanouts, train_fanouts=train_fanouts,
                     layerwise=layerwise, walk=walk, heterogeneous=heterogeneous,
                     description=description, replace=replace)
            return cls
        return decorate
    if not isinstance(name, str) or not _NAME.match(name):
        fail(ArgumentError, "register", "name", "must be lower case letters, digits, '-' or "
             "'_', starting with a letter", name)
    if name in _REGISTRY and not replace:
        fail(ArgumentError, "register", "name", "is registered already (pass replace=True)",
             name)
    if not callable(factory):
        fail(ArgumentTypeError, "register", "factory", "must be callable (a Sampler class)",
             type(factory))
    if fanouts is None and not walk:
        fail(ArgumentError, "register", "fanouts", "is required (the default fanouts)", None)
    fanouts = _fanout_tuple("fanouts", fanouts)
    if train_fanouts is False or walk:
        train_fanouts = None
    else:
        train_fanouts = _fanout_tuple("train_fanouts", train_fanouts) or fanouts
    entry = SamplerEntry(name=name, factory=factory,
                         cls=factory if isinstance(factory, type) else None,
                         fanouts=fanouts, train_fanouts=train_fanouts,
                         layerwise=bool(layerwise), walk=bool(walk),
                         heterogeneous=bool(heterogeneous), description=str(description))
    _REGISTRY[name] = entry
    return entry


def unregister(name):
    """Forget the registration of ``name`` (nothing when there is none)."""
    _REGISTRY.pop(name, None)


def registered(name, *, where="registered", argname="name", **capabilities):
    """The :class:`SamplerEntry` of ``name``.

    ``capabilities`` (e.g. ``trainable=True``, ``walk=False``) restrict the names accepted.

    Raises
    ------
    ArgumentError
        Naming ``argname``, listing the names accepted.
    """
    entry = _REGISTRY.get(name) if isinstance(name, str) else None
    if entry is None or not _matches(entry, capabilities):
        fail(ArgumentError, where, argname, f"must be one of {names(**capabilities)}", name)
    return entry


def _matches(entry, capabilities):
    return all(getattr(entry, key) == value for key, value in capabilities.items())


def names(**capabilities):
    """The registered names (in registration order) whose entries have ``capabilities``
    (e.g. ``names(trainable=True)``, ``names(walk=False)``), as a tuple."""
    return tuple(n for n, e in _REGISTRY.items() if _matches(e, capabilities))


def entry_of(sampler):
    """The entry of ``sampler``'s class or of its nearest registered base class (None when
    none is registered)."""
    by_class = {}
    for entry in _REGISTRY.values():
        if entry.cls is not None:
            by_class.setdefault(entry.cls, entry)
    for cls in type(sampler).__mro__:
        if cls in by_class:
            return by_class[cls]
    return None


class NameView:
    """A live, read-only sequence of the registered names with some capabilities: what
    ``spsample.train.SAMPLERS`` and the CLI's ``SAMPLERS`` are (a sampler registered later
    appears in them)."""

    def __init__(self, **capabilities):
        self._capabilities = capabilities

    def _names(self):
        return names(**self._capabilities)

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())

    def __getitem__(self, index):
        return self._names()[index]

    def __contains__(self, name):
        return name in self._names()

    def __eq__(self, other):
        return tuple(self) == tuple(other) if isinstance(other, (tuple, list, NameView)) \
            else NotImplemented

    def __hash__(self):
        return hash(self._names())

    def __repr__(self):
        return repr(self._names())
