"""The sampling engine: one hop loop for every sampler.

A sampler is only its constructors (:class:`~spsample.Sampler`). For a bulk the engine

1. **traces** them: runs every hop's constructors on a symbolic bulk state, which records one
   :class:`~spsample.engine._bulk.HopPlan` per hop (what the frontier, values, selection and
   extraction are) without sampling anything;
2. **lowers** the plans onto a native bulk kernel (:func:`~spsample.engine._lowering.lower`)
   and runs it;
3. or, when the native kernels are off, or a constructor reads sampled data (or builds
   something no kernel implements), **evaluates** the same constructors with NumPy on a
   concrete state -- the oracle of the lowering -- warning once per constructor that was not
   lowered, so no sampler is silently 10-100x slower.

Nothing here looks at which class a sampler is, except to keep the built-in samplers' lowered
plans on the graph between calls (:mod:`~spsample.engine._plan_memo`: the same plans, traced
once per configuration, seed and epoch).
"""

import sys
import warnings
from functools import partial

import numpy as np

from .. import native as _native, _rng
from . import _plan_memo
from ._bulk import BulkState
from ._lowering import lower
from ._native_run import run as run_native
from .._errors import NotLoweredWarning, SpsampleError
from ._lazy import NotLowerable
from .._validate import check_memory, memory_limit_held
from ._protocol import HopContext

__all__ = ["run_bulk", "run_numpy", "run_hops", "trace", "lower_sampler", "estimate_output_bytes",
           "UNTRACEABLE"]

_WARNED = set()


def run_bulk(graph, seeds, sizes, batch_ids, sampler, seed, epoch, *, schedule=None,
             seed_time=None, minibatch_major=False):
    """Sample one bulk: validated ``seeds`` cut into minibatches of ``sizes`` with global ids
    ``batch_ids``. Returns a :class:`~spsample.Bulk`.

    ``schedule`` (a heterogeneous graph's :class:`~spsample.engine._hetero_sample.Schedule`)
    runs one engine hop per (hop, relation) step on the relations' blocks (``graph`` is then the
    first step's block); ``seed_time`` (int64 or float64, one per minibatch) is the temporal cut;
    ``minibatch_major``: the native row-wise engine lays the edges out per minibatch
    (:class:`~spsample.engine._minibatch.MinibatchMajorBulk`; the NumPy path ignores it).

    Raises
    ------
    ResourceLimitError
        Before sampling, when the output's estimated size (:func:`estimate_output_bytes`) does
        not fit the memory available; while sampling, when the output grows past it.
    """
    native = _native.enabled()
    extra = dict(schedule=schedule, seed_time=seed_time)
    key = _plan_memo.plan_key(sampler, graph, batch_ids.size, seed, epoch) \
        if native and schedule is None and seed_time is None else None
    entry = _plan_memo.lookup(graph, key)
    if entry is not None:
        return _run_memoised(entry, graph, seeds, sizes, batch_ids, seed, epoch, minibatch_major)
    plans = _trace_quietly(sampler, graph, batch_ids, seed, epoch, **extra)
    hops = None
    if plans is not None:
        n, nnz, max_degree = _graph_sizes(schedule or graph)
        hops = hop_bounds(plans, max_degree)
        _check_bytes(estimate_from_hops(hops, n, nnz, sizes))
    if native:
        lowered = lower_sampler(sampler, graph, batch_ids, seed, epoch, plans, **extra)
        if lowered is not None:
            if hops is not None and key is not None:     # (key: no schedule, so hops are graph's)
                _plan_memo.store(graph, key, hops, lowered)
            return run_native(lowered, graph, seeds, sizes, batch_ids, seed, epoch,
                              minibatch_major=minibatch_major)
    return run_numpy(graph, seeds, sizes, batch_ids, sampler, seed, epoch, **extra)


def _check_bytes(nbytes):
    check_memory("sample", "sampler", nbytes, "the sampled output", "lower the fanouts, "
                 "batch_size or the number of seeds per call")


def _run_memoised(entry, graph, seeds, sizes, batch_ids, seed, epoch, minibatch_major):
    """:func:`run_bulk` with the lowering and the output bounds from the memo: the same checks
    and kernel; the estimate's check and the kernel's budget share one reading of the memory
    limit (nothing is allocated between them)."""
    n, nnz, _ = _graph_sizes(graph)
    with memory_limit_held():
        _check_bytes(estimate_from_hops(entry["hops"], n, nnz, sizes,
                                        per_size=partial(_plan_memo.output_bound, entry)))
        return run_native(entry["lowered"], graph, seeds, sizes, batch_ids, seed, epoch,
                          minibatch_major=minibatch_major)


#: What a constructor raises when it cannot run on traced placeholders (it reads data that
#: does not exist yet, or uses a placeholder as an array): such a sampler is evaluated with
#: NumPy instead. Anything else (spsample's own errors, MemoryError, ...) propagates.
UNTRACEABLE = (NotLowerable, TypeError, AttributeError, IndexError, KeyError)


def _trace_quietly(sampler, graph, batch_ids, seed, epoch, **extra):
    """The plans, or ``None`` when the constructors cannot be traced (the engine then warns in
    :func:`lower_sampler`, or evaluates them with NumPy)."""
    try:
        return trace(sampler, graph, batch_ids, seed, epoch, **extra)
    except SpsampleError:
        raise
    except UNTRACEABLE:
        return None


def estimate_output_bytes(plans, graph, sizes, *, per_size=None):
    """An upper estimate of a bulk's output (n_id and edge arrays), in bytes, from the plans.

    Per minibatch of ``b`` seeds, hop by hop: rows of the frontier (vertices new at the hop it
    names, every vertex so far, or one row per edge of an earlier hop), at most ``min(fanout,
    max degree)`` entries per row (the fanout under replacement, the max degree for ``-1``),
    and never more entries than ``A`` holds for rows of distinct vertices. LABOR counts
    ``min(fanout, max degree)`` per row (its expected size); layer-wise hops, whose outputs are
    bounded by the minibatch's vertex sets, end the estimate. ``per_size(b, compute)``, when
    given, returns ``compute(b)`` (the bytes of one minibatch of ``b`` seeds), e.g. memoised.
    """
    n, nnz, max_degree = _graph_sizes(graph)
    return estimate_from_hops(hop_bounds(plans, max_degree), n, nnz, sizes, per_size=per_size)


def _graph_sizes(graph):
    if hasattr(graph, "degree_stats"):               # a heterogeneous schedule
        n, (nnz, max_degree) = graph.num_nodes, graph.degree_stats()
        return n, nnz, max_degree
    return graph.num_nodes, graph.num_edges, graph.max_degree


def hop_bounds(plans, max_degree):
    """What :func:`estimate_output_bytes` reads of the plans, as plain numbers (no reference to
    the graph or the plans, so a memo on the graph can keep it): per leading row-wise hop,
    ``(frontier kind, hop, hop_last, rows of given frontiers, entries per row, capped by nnz,
    dedup)``."""
    hops = []
    for plan in plans:
        if plan.kind != "rows":
            break
        Q, sel = plan.frontier, plan.selection
        given = 0
        if Q.kind not in ("new_nodes", "all_nodes", "edge_sources", "edge_destinations"):
            batch = Q.given[0]                           # given rows: the most of one minibatch
            given = int(np.bincount(batch, minlength=1).max()) if batch.size else 0
        capped = Q.kind in ("new_nodes", "all_nodes", "rows") and not getattr(sel, "replace", False)
        hops.append((Q.kind, getattr(Q, "hop", None), getattr(Q, "hop_last", None), given,
                     _row_bound(sel, max_degree), capped, bool(plan.dedup)))
    return tuple(hops)


def estimate_from_hops(hops, n, nnz, sizes, *, per_size=None):
    """:func:`estimate_output_bytes` from :func:`hop_bounds`; ``n``, ``nnz``: the graph's."""
    sizes = np.asarray(sizes, dtype=np.int64)

    def bound(b):
        return _minibatch_bytes(hops, n, nnz, b)

    total = 0
    for b, count in _size_counts(sizes):
        total += count * (bound(b) if per_size is None else per_size(b, bound))
    return total


def _size_counts(sizes):
    """``[(b, minibatches of b seeds)]`` over the distinct sizes: ``np.unique``'s pairs, without
    its sort when every minibatch but the last has the first's size (:func:`split_batches`)."""
    if sizes.size and (sizes.size == 1 or (sizes[:-1] == sizes[0]).all()):
        first, last = int(sizes[0]), int(sizes[-1])
        if first == last:
            return [(first, int(sizes.size))]
        return sorted([(first, int(sizes.size) - 1), (last, 1)])
    return [(int(b), int(c)) for b, c in zip(*np.unique(sizes, return_counts=True))]


def _minibatch_bytes(hops, n, nnz, b):
    """:func:`estimate_output_bytes` of one minibatch of ``b`` seeds."""
    new, edges, nodes, out = [int(b)], [], int(b), 0
    for kind, hop, hop_last, given, per_row, capped, dedup in hops:
        rows = _rows_bound(kind, hop, hop_last, given, new, edges, nodes)
        e = rows * per_row
        if capped:
            e = min(e, nnz)
        added = min(e, n) if dedup else e
        nodes = min(nodes + added, n) if dedup else nodes + added
        new.append(added)
        edges.append(e)
        out += 24 * e
    return out + 8 * nodes


def _rows_bound(kind, hop, hop_last, given, new, edges, nodes):
    if kind == "new_nodes":
        return sum(new[hop:hop_last + 1])
    if kind == "all_nodes":
        return nodes
    if kind in ("edge_sources", "edge_destinations"):
        return edges[hop - 1]
    return given


def _row_bound(sel, max_degree):
    vector = getattr(sel, "fanout_vector", None)
    s = sel.fanout if vector is None else (-1 if (vector < 0).any() else int(vector.max()))
    if s < 0:
        return max_degree
    return s if getattr(sel, "replace", False) else min(s, max_degree)


def _contexts(sampler, graph, batch_ids, seed, epoch, symbolic, schedule=None,
              seed_time=None):
    """``(graph of the step, HopContext)`` per engine hop: the sampler's hops on a plain graph,
    the schedule's (hop, relation) steps on a heterogeneous one."""
    key = _rng.split_seed(seed)
    scratch = {}
    common = dict(seed=seed, epoch=epoch, batch_ids=batch_ids, scratch=scratch,
                  symbolic=symbolic, seed_time=seed_time)
    if schedule is None:
        for hop, fanout in enumerate(sampler.fanouts, start=1):
            yield graph, HopContext(hop=hop, fanout=fanout, key=key, step=hop, graph=graph,
                                    hop_word=_rng.hop_word(epoch, hop), **common)
        return
    for step, st in enumerate(schedule.steps, start=1):
        yield st.graph, HopContext(hop=st.hop, fanout=st.fanout, key=st.key, step=step,
                                   hop_word=_rng.hop_word(epoch, st.hop), graph=st.graph,
                                   relation=st.relation, src_type=st.relation[0],
                                   dst_type=st.relation[2], **common)


def _state(graph, batch_ids, schedule, symbolic):
    if schedule is None:
        return BulkState(graph.num_nodes, batch_ids, symbolic=symbolic)
    return BulkState(schedule.num_nodes, batch_ids, symbolic=symbolic,
                     steps=[(st.hop, st.relation[0]) for st in schedule.steps])


def run_numpy(graph, seeds, sizes, batch_ids, sampler, seed, epoch, *, schedule=None,
              seed_time=None):
    """The NumPy evaluation of the sampler's constructors over the whole bulk (the oracle)."""
    return run_hops(graph, seeds, sizes, batch_ids, sampler, seed, epoch,
                    lambda state, ctx: sampler.sample_hop(ctx.graph, state, ctx),
                    schedule=schedule, seed_time=seed_time)


def run_hops(graph, seeds, sizes, batch_ids, sampler, seed, epoch, hop, *, schedule=None,
             seed_time=None):
    """The hop loop on a concrete bulk state: the seeds, then ``hop(state, ctx)`` for every hop
    (the NumPy evaluation of the constructors, or the distributed strategies), then the flat
    result. ``ctx.graph`` is the graph of the step (a relation's block on a heterogeneous
    graph)."""
    state = _state(graph, batch_ids, schedule, symbolic=False)
    state.begin_hop(0)
    state.add_nodes(np.repeat(np.arange(sizes.size, dtype=np.int64), sizes), seeds)
    for _, ctx in _contexts(sampler, graph, batch_ids, seed, epoch, False, schedule,
                            seed_time):
        state.begin_hop(ctx.step)
        hop(state, ctx)
        state.end_hop()
    return state.finish(sizes)


def trace(sampler, graph, batch_ids, seed, epoch, *, schedule=None, seed_time=None):
    """The sampler's hops as :class:`~spsample.engine._bulk.HopPlan` objects (nothing is sampled).

    Raises
    ------
    NotLowerable
        When a constructor reads data that exists only once sampled (e.g. ``Q.vertex``).
    """
    state = _state(graph, batch_ids, schedule, symbolic=True)
    state.begin_hop(0)
    for step_graph, ctx in _contexts(sampler, graph, batch_ids, seed, epoch, True,
                                     schedule, seed_time):
        state.begin_hop(ctx.step)
        sampler.sample_hop(step_graph, state, ctx)
        state.end_hop()
    return state.plans


def lower_sampler(sampler, graph, batch_ids, seed, epoch, plans=None, **extra):
    """The sampler traced (unless ``plans`` are given) and lowered
    (:class:`spsample.engine._lowering.Lowered`), or ``None`` (after a one-time warning naming the
    constructor) when it cannot run natively."""
    try:
        if plans is None:
            plans = trace(sampler, graph, batch_ids, seed, epoch, **extra)
        return lower(plans, graph, int(batch_ids.size))
    except NotLowerable as exc:
        _warn_not_lowered(sampler, exc, getattr(exc, "constructor", None) or _culprit(sampler, exc))
    except SpsampleError:
        raise
    except Exception as exc:  # a constructor that cannot run on placeholders at all
        _warn_not_lowered(sampler, NotLowerable(f"{type(exc).__name__}: {exc}"),
                          _culprit(sampler, exc))
    return None


def _culprit(sampler, exc):
    """The innermost method of ``sampler`` on the traceback of ``exc`` (e.g. ``"streams"``)."""
    name = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_locals.get("self") is sampler:
            name = tb.tb_frame.f_code.co_name
        tb = tb.tb_next
    return name or "sample_hop"


def _defining_class(sampler, method):
    for cls in type(sampler).__mro__:
        if method in vars(cls):
            return cls.__name__
    return type(sampler).__name__


def _warn_not_lowered(sampler, exc, method):
    owner = _defining_class(sampler, method)
    what = getattr(exc, "what", str(exc))
    key = (type(sampler), method, what)
    if key in _WARNED:
        return
    _WARNED.add(key)
    warnings.warn(
        f"spsample: {owner}.{method} was not lowered to the native engine ({what}); "
        f"{type(sampler).__name__} runs on the NumPy path, typically 10-100x slower. Build it "
        "from the lazy matrices of spsample.primitives (gather, select_rows, Streams.per_row, "
        "state.add_sampled, ...; README: 'Writing a new sampler') to run natively.",
        NotLoweredWarning, stacklevel=_user_stacklevel())


def _user_stacklevel():
    """Point the warning at the first frame outside spsample."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("spsample"):
        frame = frame.f_back
        level += 1
    return level
