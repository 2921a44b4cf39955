"""Lowered plans kept by the graph, so that repeated :func:`spsample.sample` calls with the
same sampler (one call per minibatch) trace and lower it once. An entry holds the lowering (the
kernels' arrays and codes) and the traced plans' output bounds as plain numbers, never the
graph object or the plans, so the graph is freed as soon as its last user drops it.

Only the built-in samplers are memoised, and only while they are exactly what their class
builds: the key holds the class, its protocol methods (a method patched on the class is
another key), every instance attribute's type and value (an instance with an attribute its
class does not set, e.g. a method patched on the instance, is not memoised), the number of
minibatches, the seed and the epoch (the plans' RNG words). The graph is immutable and holds
the memo (a few entries, oldest dropped first), so a plan never outlives its graph or serves
another. A user's sampler is traced on every call: its constructors may read anything.
"""

from itertools import repeat

__all__ = ["memoise_plans", "plan_key", "lookup", "store", "output_bound"]

#: The slot in the graph's cache (a key none of the graph's own quantities uses).
_SLOT = ("engine", "plans")
#: Entries kept per graph (one per sampler configuration, seed and epoch in use).
ENTRIES = 8
_PROTOCOL = ("frontier", "probabilities", "streams", "select", "extract", "values",
             "sample_hop")
_TYPES = {}


def memoise_plans(*samplers):
    """Memoise the plans of the classes of ``samplers`` (instances as their constructors build
    them: the attributes they set are the ones a memoised instance may have). The samplers'
    room declares its built-ins here."""
    for s in samplers:
        _TYPES[type(s)] = frozenset(vars(s))


def plan_key(sampler, graph, num_batches, seed, epoch):
    """The memo key of tracing ``sampler`` on ``graph``, or ``None`` when it is not memoised
    (a user's sampler or subclass, an instance with extra attributes, an unhashable value, a
    graph without a cache)."""
    cls = type(sampler)
    names = _TYPES.get(cls)
    state = getattr(sampler, "__dict__", None)
    if names is None or state is None or state.keys() != names or \
            not isinstance(getattr(graph, "_cache", None), dict):
        return None
    values = tuple([(name, type(v), tuple(v) if type(v) in (list, tuple) else v)
                    for name, v in state.items()])
    key = (cls, tuple(map(getattr, repeat(cls), _PROTOCOL, repeat(None))), values,
           int(num_batches), int(seed), int(epoch))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def lookup(graph, key):
    """The memo entry ``{"hops", "lowered", "bounds"}`` under ``key``, or ``None``."""
    if key is None:
        return None
    return graph._cache.get(_SLOT, {}).get(key)


def store(graph, key, hops, lowered):
    """Keep the plans' output bounds (``_run.hop_bounds``: plain numbers) and their lowering
    (the kernels' arrays and codes) under ``key``; returns the entry. Neither refers to the
    graph object, so the memo makes no reference cycle: the graph is freed as soon as it is
    dropped, as before."""
    entry = {"hops": hops, "lowered": lowered, "bounds": {}}
    if key is None:
        return entry
    memo = graph._cache.setdefault(_SLOT, {})
    for old in list(memo)[:max(0, len(memo) - ENTRIES + 1)]:    # a copy: other threads may
        memo.pop(old, None)                                       # store at the same time
    memo[key] = entry
    return entry


def output_bound(entry, size, compute):
    """The output bound of one minibatch of ``size`` seeds, ``compute(size)`` once per size."""
    bounds = entry["bounds"]
    if size not in bounds:
        bounds[size] = compute(size)
    return bounds[size]
