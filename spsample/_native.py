"""The optional native engine: probed once, switchable, and the lowering of traced samplers.

``spsample._native_kernels`` is a C++17 extension (pybind11 over NumPy buffers, OpenMP across
minibatches; sources in ``native/``) built by ``pip install``. A sampler's constructors, traced
by :mod:`spsample.engine._run` into one :class:`~spsample.engine._bulk.HopPlan` per hop, are *lowered*
here onto one of two bulk kernels that run every hop of every minibatch in one call and return
exactly what the NumPy evaluation of the same constructors returns (same bits, same order):

* the row-wise engine (``native/rowwise.h``): hops whose selection is per row -- node-wise
  (uniform / weighted, with or without replacement, fanout per hop or per vertex), walks and
  node2vec (streams per row, values looked up in aligned rows, rejection), LABOR (threshold on
  per-column variates), with or without deduplication;
* the layer-wise engine (``native/layerwise.h``): hops that choose columns per minibatch
  (LADIES: column sums of ``A∘A``) or globally (FastGCN) and take the layer's edges.

Which class a sampler is plays no part: a subclass, or a user's sampler built from the same
lazy matrices, lowers to the same kernels. What cannot be lowered raises
:class:`~spsample.engine._lazy.NotLowerable` (the engine then runs NumPy and warns once).

Which path runs:

* :data:`AVAILABLE` -- the extension imported (``IMPORT_ERROR`` says why not).
* :func:`enabled` -- the native path is active: available, and neither switched off by the
  environment variable ``SPSAMPLE_NATIVE=0`` (read once, at import) nor by
  :func:`set_enabled` / :func:`disabled` at run time.
* :func:`active_path` -- ``"native"`` or ``"numpy"``.

Threads: :func:`set_num_threads` (default: OpenMP's, i.e. ``OMP_NUM_THREADS`` or all cores).
Results never depend on it: each minibatch is sampled by one thread from its own keyed streams.
"""

import contextlib
import os

import numpy as np

from ._errors import ArgumentError, MissingDependencyError, ResourceLimitError, SamplerError
from .graph._graph import frozen_filled
from .engine._lazy import (
    ColumnSelection, ColumnSums, GlobalColumns, GlobalSelection, NotLowerable, RowSelection,
    ThresholdSelection,
)
from ._validate import as_int, fail

__all__ = ["AVAILABLE", "IMPORT_ERROR", "enabled", "set_enabled", "disabled", "active_path",
           "set_num_threads", "get_num_threads", "set_pool_limit", "pool_stats", "lower", "run",
           "Lowered", "sample_rows", "insert_bulk", "lookup_bulk", "link_bulk",
           "minibatch_edges", "parse_edges"]

try:
    from . import _native_kernels as _kernels
    AVAILABLE = True
    IMPORT_ERROR = None
except ImportError as exc:  # not built (no compiler at install time) or built for another Python
    _kernels = None
    AVAILABLE = False
    IMPORT_ERROR = exc

_ENABLED = AVAILABLE and os.environ.get("SPSAMPLE_NATIVE", "1").strip().lower() not in ("0", "false", "no", "off")
_THREADS = 0    # 0: OpenMP's default


def enabled():
    """Whether the samplers use the native kernels now."""
    return _ENABLED


def active_path():
    """``"native"`` or ``"numpy"``: the path :func:`spsample.sample` takes now."""
    return "native" if _ENABLED else "numpy"


def set_enabled(flag):
    """Switch the native path on or off at run time; returns the previous setting.

    Raises
    ------
    MissingDependencyError
        When switching on while the extension is not available.
    """
    global _ENABLED
    previous = _ENABLED
    if flag and not AVAILABLE:
        raise MissingDependencyError(
            "the native kernels are not built (reinstall spsample with a C++17 compiler: "
            f"pip install -e .): {IMPORT_ERROR}")
    _ENABLED = bool(flag)
    return previous


@contextlib.contextmanager
def disabled():
    """Context manager running its body on the NumPy path."""
    previous = set_enabled(False)
    try:
        yield
    finally:
        if previous:
            set_enabled(True)


def set_num_threads(n):
    """Threads of the native kernels (``0``: OpenMP's default); returns the previous value.

    Raises
    ------
    ArgumentTypeError
        ``n`` is not an integer.
    ArgumentError
        ``n`` is negative or above :func:`spsample._threads.max_threads` (an OpenMP runtime
        asked for many more threads than it can create ends the process).
    """
    global _THREADS
    from ._threads import check_threads

    n = check_threads("set_num_threads", "n", n, minimum=0)
    previous, _THREADS = _THREADS, n
    return previous


def get_num_threads():
    """Threads the native kernels will use (1 when the extension has no OpenMP)."""
    if not AVAILABLE:
        return 1
    return _THREADS if (_THREADS and _kernels.have_openmp()) else _kernels.max_threads()


def set_pool_limit(nbytes):
    """Bytes of freed output blocks the kernels keep for reuse; returns the old limit.

    A bulk's flat arrays are blocks of a process-wide pool: when NumPy frees the last array
    viewing one it goes back to the pool (the kernels' per-minibatch buffers too, once
    flattened), and later calls reuse it (already-resident memory, so no page faults; the
    least recently returned blocks are freed first). A block is never reused while an array views
    it. The default limit is 1 GiB; ``0`` turns pooling off and frees what is held. No-op
    (returns 0) without the extension. A limit beyond ``2**63 - 1`` is that.
    """
    nbytes = min(as_int("set_pool_limit", "nbytes", nbytes, minimum=0), 2**63 - 1)
    if not AVAILABLE:
        return 0
    previous = _kernels.pool_stats()[1]
    _kernels.set_pool_limit(nbytes)
    return int(previous)


def pool_stats():
    """``{"held": bytes in the pool now, "limit": its limit}`` (zeros without the extension)."""
    if not AVAILABLE:
        return {"held": 0, "limit": 0}
    held, limit = _kernels.pool_stats()
    return {"held": int(held), "limit": int(limit)}


# ------------------------------------------------------------------------------ wrappers
def _i64(a):
    return a if (a.dtype == np.int64 and a.flags.c_contiguous) else np.ascontiguousarray(a, dtype=np.int64)


def _f64(a):
    if a is None:
        return None
    return a if (a.dtype == np.float64 and a.flags.c_contiguous) else np.ascontiguousarray(a, dtype=np.float64)


def _bulk_args(graph, seeds, sizes, batch_ids, seed, epoch):
    """Buffers for the kernels, with every bound the C++ code relies on checked here.

    Raises
    ------
    ArgumentError
        (a ``ValueError``) naming the argument, before any native code runs: arrays not
        one-dimensional, CSR arrays inconsistent, ``sizes`` negative or not summing to
        ``len(seeds)``, ``batch_ids`` of another length or outside ``[0, 2**32)``, seeds outside
        ``[0, num_nodes)``, ``seed`` outside ``[0, 2**64)``, ``epoch`` outside ``[0, 2**24)``.
    """
    where = "native bulk"
    n = graph.num_nodes
    indptr, indices = _i64(graph.indptr), _i64(graph.indices)
    seeds, sizes, batch_ids = _i64(np.asarray(seeds)), _i64(np.asarray(sizes)), _i64(np.asarray(batch_ids))
    for name, arr in (("graph.indptr", indptr), ("graph.indices", indices), ("seeds", seeds),
                      ("sizes", sizes), ("batch_ids", batch_ids)):
        if arr.ndim != 1:
            fail(ArgumentError, where, name, "must be one-dimensional", arr.shape)
    if n >= 2**32 - 1:
        fail(ArgumentError, where, "graph", "must have fewer than 2**32 - 1 vertices", n)
    if indptr.size != n + 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        fail(ArgumentError, where, "graph.indptr", "must run from 0 to len(indices) over n + 1 entries",
             indptr.size)
    if graph.weights is not None and graph.weights.size != indices.size:
        fail(ArgumentError, where, "graph.weights", "must match indices", graph.weights.size)
    if sizes.size == 0 or sizes.min() < 0 or int(sizes.sum()) != seeds.size:
        fail(ArgumentError, where, "sizes", f"must be non-negative and sum to len(seeds) = {seeds.size}",
             sizes)
    if batch_ids.size != sizes.size:
        fail(ArgumentError, where, "batch_ids", f"must have one entry per minibatch ({sizes.size})",
             batch_ids.size)
    if batch_ids.min() < 0 or batch_ids.max() >= 2**32:
        fail(ArgumentError, where, "batch_ids", "must be in [0, 2**32)", batch_ids)
    if seeds.size and (seeds.min() < 0 or seeds.max() >= n):
        fail(ArgumentError, where, "seeds", f"must be vertex ids in [0, {n})", seeds)
    if not 0 <= int(seed) < 2**64:
        fail(ArgumentError, where, "seed", "must be in [0, 2**64)", seed)
    if not 0 <= int(epoch) < 2**24:
        fail(ArgumentError, where, "epoch", "must be in [0, 2**24)", epoch)
    seed = int(seed)
    return indptr, indices, seeds, sizes, batch_ids, seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF


def _indices32(graph):
    """The graph's column ids as uint32, cached on it (4 bytes per edge): the row-wise kernel's
    random reads of sampled columns touch half the memory."""
    def compute():                  # frozen in place: the cache keeps it without a copy
        def fill(pos, piece):
            np.copyto(piece, graph.indices[pos:pos + piece.size], casting="unsafe")
        return frozen_filled(np.uint32, len(graph.indices), fill)
    cached = getattr(graph, "cached", None)
    return compute() if cached is None else cached("native_indices32", compute)


def _internal_columns(indices, n):
    """The layer-wise kernel's internal column ids: columns ranked by in-degree (descending, ties
    by id), so that the hubs most entries point to share a few cache lines of its vertex-indexed
    arrays. Results do not depend on it (see ``native/layerwise.h``).

    Returns
    -------
    indices32 : uint32, shape (nnz,)
        ``internal_of[indices]``: the CSR's columns as internal ids (rows keep their order).
    internal_of, vertex_of : uint32, shape (n,)
        Inverse permutations: vertex -> internal id, internal id -> vertex.
    """
    in_degree = np.bincount(indices, minlength=n)
    vertex_of = np.argsort(-in_degree, kind="stable").astype(np.uint32)
    internal_of = np.empty(n, dtype=np.uint32)
    internal_of[vertex_of] = np.arange(n, dtype=np.uint32)

    def fill(pos, piece):            # frozen in place: the graph's cache keeps it as it is
        np.take(internal_of, indices[pos:pos + piece.size], out=piece)
    return frozen_filled(np.uint32, len(indices), fill), internal_of, vertex_of


# ------------------------------------------------------------------------------ lowering
# Codes shared with native/rowwise.h and native/select.h.
_FRONTIER = {"new_nodes": 0, "all_nodes": 1, "edge_sources": 2, "edge_destinations": 3, "rows": 4}
_S_UNIFORM, _S_UNIFORM_REP, _S_WEIGHTED, _S_WEIGHTED_REP, _S_REJECTION, _S_THRESHOLD, _S_LAST = range(7)
_V_CONST, _V_WEIGHT, _V_COLUMN, _V_ROW, _V_EDGE, _V_INDICATOR, _V_FOUND, _V_MUL, _V_ADD, _V_SQUARE = range(10)
_VALUE_STACK = 32


class Lowered:
    """A traced sampler lowered onto one native kernel (:func:`lower`); run it with :func:`run`.

    Attributes
    ----------
    kernel : {"rowwise", "layerwise"}
    spec : dict
        The kernel's arguments besides the bulk (graphs, hop specs, vectors / fanouts, ...).
    """

    def __init__(self, kernel, spec):
        self.kernel, self.spec = kernel, spec


class _NotLowered(NotLowerable):
    """Lowering failed at a constructor (``constructor``: frontier, probabilities, select or
    extract), for the engine's warning."""

    def __init__(self, constructor, what):
        super().__init__(what)
        self.constructor = constructor


def lower(plans, graph, num_batches):
    """Lower the traced hops of a bulk onto a native kernel.

    Parameters
    ----------
    plans : list of HopPlan
        One per hop (:func:`spsample.engine._run.trace`).
    graph : Graph
        The bulk's graph.
    num_batches : int
        Minibatches of the bulk (``k``).

    Returns
    -------
    Lowered

    Raises
    ------
    NotLowerable
        (with ``constructor`` naming the protocol method) when a hop uses something the
        kernels do not implement.
    """
    kinds = {p.kind for p in plans}
    if kinds == {"rows"}:
        return _lower_rows(plans, graph, num_batches)
    if kinds == {"layer"}:
        return _lower_layers(plans, graph)
    raise _NotLowered("extract", "hops mix node-wise (add_sampled) and layer-wise (add_layer) "
                      "extraction")


class _Tables:
    """The arrays a row-wise plan refers to by index (graphs, float64 and int64 vectors)."""

    def __init__(self, graph):
        self.graphs, self.f64, self.i64 = [graph], [], []

    def graph(self, g):
        for i, known in enumerate(self.graphs):
            if known is g:
                return i
        if g.num_nodes != self.graphs[0].num_nodes:
            raise _NotLowered("probabilities", "a view of a graph with another number of vertices")
        self.graphs.append(g)
        return len(self.graphs) - 1

    def vector(self, arr, table):
        for i, known in enumerate(table):
            if known is arr:
                return i
        table.append(arr)
        return len(table) - 1


def _frontier_spec(Q, hop, k, tables, referenced):
    if not Q.symbolic:
        raise _NotLowered("frontier", "a frontier given as arrays (build it from the state: "
                          "state.new_nodes(h), state.edge_sources(h), state.rows(...), ...)")
    code = _FRONTIER[Q.kind]
    if Q.kind in ("edge_sources", "edge_destinations"):
        referenced.add(Q.hop)
    if Q.kind == "rows":
        batch, vertex = Q.given
        offsets = np.searchsorted(batch, np.arange(k + 1)).astype(np.int64)
        return (code, hop, tables.vector(offsets, tables.i64), tables.vector(_i64(vertex), tables.i64))
    return (code, Q.hop, -1, -1, Q.hop if Q.hop_last is None else Q.hop_last)


class _Program:
    """Postfix encoding of a value Expr relative to a base view (see native/select.h)."""

    def __init__(self, base, tables):
        self.base, self.tables = base, tables
        self.code, self.aux, self.aux_graph = [], None, None

    def encode(self, expr, ctx=0, graph=None):
        graph = self.base.graph if graph is None else graph
        op = expr.op
        if op == "const":
            self.code.append((_V_CONST, 0, 0, expr.value))
        elif op == "weight":
            if expr.graph is not graph:
                raise _NotLowered("probabilities", "edge weights of another graph than the view's")
            self.code.append((_V_WEIGHT, ctx, 0, 0.0))
        elif op in ("column", "row", "edge"):
            code = {"column": _V_COLUMN, "row": _V_ROW, "edge": _V_EDGE}[op]
            vec = np.ascontiguousarray(expr.vector, dtype=np.float64)
            self.code.append((code, ctx, self.tables.vector(vec, self.tables.f64), 0.0))
        elif op in ("mul", "add"):
            self.encode(expr.args[0], ctx, graph)
            self.encode(expr.args[1], ctx, graph)
            self.code.append((_V_MUL if op == "mul" else _V_ADD, 0, 0, 0.0))
        elif op == "square":
            self.encode(expr.args[0], ctx, graph)
            self.code.append((_V_SQUARE, 0, 0, 0.0))
        elif op == "indicator":
            if expr.frontier.same_rows(self.base.frontier):
                self.code.append((_V_INDICATOR, 0, 0, 0.0))
            elif ctx == 0:
                self._set_aux(expr.frontier, None)
                self.code.append((_V_INDICATOR, 1, 0, 0.0))
            else:
                raise _NotLowered("probabilities", "an indicator inside a lookup")
        elif op == "view":
            self._view(expr.view, ctx)
        else:
            raise _NotLowered("probabilities", f"value expression {op!r}")

    def _view(self, view, ctx):
        if view.frontier.same_rows(self.base.frontier) and view.graph is self.base.graph:
            self.encode(view._value(), ctx)
            return
        if ctx != 0:
            raise _NotLowered("probabilities", "a lookup inside a lookup")
        self._set_aux(view.frontier, view.graph)
        self.encode(view._value(), 1, view.graph)
        self.code.append((_V_FOUND, 0, 0, 0.0))

    def _set_aux(self, frontier, graph):
        if not frontier.aligned_with(self.base.frontier):
            raise _NotLowered("probabilities", f"values refer to {frontier!r}, not aligned with "
                              "the view's rows")
        if self.aux is not None and not self.aux.same_rows(frontier):
            raise _NotLowered("probabilities", "values refer to more than one other frontier")
        self.aux = frontier
        if graph is not None:
            if self.aux_graph is not None and self.aux_graph is not graph:
                raise _NotLowered("probabilities", "lookups into more than one graph")
            self.aux_graph = graph

    def depth_ok(self):
        depth = top = 0
        for op, *_ in self.code:
            depth += 1 if op <= _V_INDICATOR else (-1 if op in (_V_MUL, _V_ADD) else 0)
            top = max(top, depth)
        return top <= _VALUE_STACK


def _lower_rows(plans, graph, k, indices32=True, arrays=True):
    """The row-wise spec of ``plans``; ``arrays=False`` leaves out the graphs' arrays (requests
    that read other rows: a graph on disk is then never read whole)."""
    tables = _Tables(graph)
    referenced, hops = set(), []
    for h, plan in enumerate(plans, start=1):
        sel, Q = plan.selection, plan.frontier
        P = sel.P
        if not P.frontier.same_rows(Q):
            raise _NotLowered("select", "the selection's rows are not the frontier's rows")
        spec = dict(frontier=_frontier_spec(Q, h, k, tables, referenced), aux=None, aux_graph=0,
                    graph=tables.graph(P.graph), program=[], bound=0.0, dedup=bool(plan.dedup),
                    keep_row_ids=False, key=0)
        streams = sel.streams
        if isinstance(sel, RowSelection):
            if streams.keyed_by not in ("vertex", "row") or not streams.frontier.same_rows(Q):
                raise _NotLowered("select", "streams not keyed per vertex or per row of the frontier "
                                  "(Streams.per_vertex / Streams.per_row)")
            spec["key"] = 0 if streams.keyed_by == "vertex" else 1
            if sel.method == "last":
                spec["select"] = _S_LAST
            elif not sel.weighted:
                spec["select"] = _S_UNIFORM_REP if sel.replace else _S_UNIFORM
            elif sel.method == "rejection":
                spec["select"], spec["bound"] = _S_REJECTION, float(sel.bound)
            else:
                spec["select"] = _S_WEIGHTED_REP if sel.replace else _S_WEIGHTED
            if sel.weighted:
                program = _Program(P, tables)
                program.encode(P.expr)
                if not program.depth_ok():
                    raise _NotLowered("probabilities", "a value expression deeper than "
                                      f"{_VALUE_STACK} operands")
                spec["program"] = program.code
                if program.aux is not None:
                    spec["aux"] = _frontier_spec(program.aux, h, k, tables, referenced)
                    spec["aux_graph"] = tables.graph(program.aux_graph or P.graph)
        elif isinstance(sel, ThresholdSelection):
            spec["select"] = _S_THRESHOLD
        else:
            raise _NotLowered("select", f"{type(sel).__name__} in a node-wise hop")
        spec["hop_word"], spec["rng_key"] = int(streams.hop_word), tuple(streams.key)
        spec["time"] = spec["batch_time"] = -1
        spec["time_int"] = False
        if P.cutoff is not None:              # entry and cut times of one kind (RowView.until)
            time, batch_time = P.cutoff
            spec["time_int"] = time.dtype == np.int64
            table = tables.i64 if spec["time_int"] else tables.f64
            spec["time"] = tables.vector(time, table)
            spec["batch_time"] = tables.vector(batch_time, table)
        spec["fanout"] = int(sel.fanout) if sel.fanout_vector is None else 0
        spec["fanout_vec"] = -1 if sel.fanout_vector is None else tables.vector(
            np.ascontiguousarray(sel.fanout_vector, dtype=np.int64), tables.i64)
        hops.append(spec)
    for h in referenced:
        if 1 <= h <= len(hops):
            hops[h - 1]["keep_row_ids"] = True
    graphs = [(_i64(g.indptr), _i64(g.indices), _f64(g.weights),
               _indices32(g) if indices32 else None) for g in tables.graphs] if arrays else []
    return Lowered("rowwise", dict(graphs=graphs, hops=hops, f64=tables.f64, i64=tables.i64))


def _lower_layers(plans, graph):
    fanouts, family, q = [], None, None
    for plan in plans:
        sel, Q = plan.selection, plan.frontier
        if not (Q.symbolic and Q.kind == "all_nodes"):
            raise _NotLowered("frontier", "a layer-wise hop whose frontier is not state.all_nodes()")
        _check_numerator(plan.values, Q, graph)
        if isinstance(sel, ColumnSelection):
            P = sel.P
            if not isinstance(P, ColumnSums) or plan.probabilities is not P:
                raise _NotLowered("extract", "LADIES edges valued by other sums than the selection's")
            _check_ladies_view(P.view, Q, graph)
            hop_family = "ladies"
        elif isinstance(sel, GlobalSelection):
            if plan.probabilities is not sel.P or not isinstance(sel.P, GlobalColumns):
                raise _NotLowered("extract", "FastGCN edges valued by another distribution")
            if q is not None and (q.q is not sel.P.q or q.cumulative is not sel.P.cumulative):
                raise _NotLowered("probabilities", "a different global distribution per layer")
            q = sel.P
            hop_family = "fastgcn"
        else:
            raise _NotLowered("select", f"{type(sel).__name__} in a layer-wise hop")
        if family not in (None, hop_family):
            raise _NotLowered("select", "layers mixing LADIES and FastGCN selections")
        family = hop_family
        fanouts.append(int(sel.fanout))
    column_weights = None
    if family == "fastgcn":
        if q.q.shape != (graph.num_nodes,) or q.cumulative.shape != (graph.num_nodes,):
            raise _NotLowered("probabilities", "global column weights of the wrong length")
        column_weights = (q.q, q.cumulative)
    return Lowered("layerwise", dict(fanouts=fanouts, column_weights=column_weights))


def _check_numerator(view, Q, graph):
    """Layer edges are valued by A's own values (the scaled weights, or 1 unweighted)."""
    from .engine._lazy import RowView
    if not (isinstance(view, RowView) and view.graph is graph and view.frontier.same_rows(Q)
            and _is_layer_values(view.expr, graph)):
        raise _NotLowered("extract", "layer edges valued by something other than A's values")


def _check_ladies_view(view, Q, graph):
    """LADIES sums A∘A: the squared scaled weights (weighted graph) or 1 per entry."""
    ok = view.graph is graph and view.frontier.same_rows(Q)
    if graph.weights is None:
        ok = ok and view.expr is None
    else:
        ok = ok and view.expr is not None and view.expr.op == "square" \
            and _is_layer_values(view.expr.args[0], graph)
    if not ok:
        raise _NotLowered("probabilities", "layer-wise column sums of other values than A∘A")


def _is_layer_values(expr, graph):
    """``expr`` is what the layer-wise kernel reads as A's values: nothing on an unweighted
    graph, the layerwise_weights of a weighted one (by identity: the graph's cached array)."""
    from .graph._weights import layerwise_weights
    if graph.weights is None:
        return expr is None
    return expr is not None and expr.op == "edge" and expr.vector is layerwise_weights(graph)


def run(lowered, graph, seeds, sizes, batch_ids, seed, epoch, *, windows=None,
        minibatch_major=False):
    """Run a lowered sampler on one bulk: a :class:`~spsample.Bulk`, the same bits as the
    NumPy evaluation (a :class:`~spsample.engine._minibatch.MinibatchMajorBulk` for a row-wise
    sampler when ``minibatch_major``: the same minibatches, edges laid out per minibatch).

    ``windows=(span, map, block)`` runs a row-wise plan hop-major over the windows of a graph
    whose arrays lie in the memory map ``map`` (``native/windowed.h``; ``span`` entries per
    window, pages released in blocks of ``block`` bytes); it then returns ``None`` when a column
    id outside ``[0, n)`` was read (see :mod:`spsample.io._disk_map`).

    Raises
    ------
    ResourceLimitError
        When the output would exceed the memory available (checked as the buffers grow).
    SamplerError
        When a rejection rule meets a value above its bound.
    """
    from .engine._minibatch import Bulk, HopEdges, MinibatchMajorBulk
    from ._validate import memory_limit
    indptr, indices, seeds, sizes, batch_ids, k0, k1 = _bulk_args(graph, seeds, sizes, batch_ids, seed, epoch)
    spec = lowered.spec
    budget = int(min(memory_limit(), 2**63 - 1))
    try:
        if windows is not None:
            out = _kernels.run_rowwise_windowed(
                spec["graphs"], seeds, sizes, batch_ids, spec["hops"], spec["f64"], spec["i64"],
                k0, k1, int(epoch), budget, _THREADS, *windows)
            if out is None:
                return None
        elif lowered.kernel == "rowwise":
            out = _kernels.run_rowwise(spec["graphs"], seeds, sizes, batch_ids, spec["hops"],
                                       spec["f64"], spec["i64"], k0, k1, int(epoch), budget,
                                       _THREADS, bool(minibatch_major))
            if minibatch_major:
                return MinibatchMajorBulk(batch_ids, sizes, *out)
        else:
            out = _layerwise(graph, indptr, indices, seeds, sizes, batch_ids, spec, k0, k1, epoch,
                             budget)
    except MemoryError as exc:
        raise ResourceLimitError(f"sample: argument 'sampler': {exc} (the memory this process may "
                                 "use); lower the fanouts, batch_size or bulk size") from None
    except ArithmeticError as exc:
        raise SamplerError(f"sample: select_rows: argument 'bound' is exceeded ({exc})") from None
    n_id, node_offsets, counts, hops = out
    layerwise = lowered.kernel == "layerwise"
    return Bulk(batch_ids, sizes, n_id, node_offsets, counts,
                [HopEdges(d, s, e, w, o) for d, s, e, w, o in hops], layerwise=layerwise,
                path="native")


def _layerwise(graph, indptr, indices, seeds, sizes, batch_ids, spec, k0, k1, epoch, budget):
    q = cumulative = None
    if spec["column_weights"] is not None:
        q, cumulative = (_f64(a) for a in spec["column_weights"])
    indices32, internal_of, vertex_of = graph.cached("native_layerwise_columns",
                                                     lambda: _internal_columns(indices, graph.num_nodes))
    from .graph._weights import layerwise_weights
    weights = None if graph.weights is None else _f64(layerwise_weights(graph))
    return _kernels.layerwise_bulk(indptr, indices, indices32, internal_of, vertex_of, weights,
                                   seeds, sizes, batch_ids, spec["fanouts"], k0, k1, int(epoch), q,
                                   cumulative, budget, _THREADS)



class RequestHop:
    """One traced row-local hop lowered for requested rows (:func:`lower_requests`).

    Attributes
    ----------
    graph : tuple
        ``(indptr, indices, weights, indices32)`` of the rows requests read.
    hop : dict
        The hop's rule (the row-wise kernel's hop spec).
    f64, i64 : list of ndarray
        The vectors the rule refers to.
    n_vertices : int
        Vertices of the whole graph (per-vertex vectors and fanouts).
    """

    def __init__(self, graph, hop, f64, i64, n_vertices):
        self.graph, self.hop, self.f64, self.i64 = graph, hop, f64, i64
        self.n_vertices = n_vertices


def lower_requests(plan, graph, *, rows=None, edges=None):
    """Lower a traced row-local hop (node-wise rules, LABOR's threshold, walks keyed per row,
    values composed of the row's own entries) for :func:`select_requests`.

    Parameters
    ----------
    plan : HopPlan
        Traced on ``graph`` (its selection's view reads ``graph``).
    graph : Graph or DistGraph
        Whose rows the requests read, unless ``rows`` is given.
    rows : tuple (indptr, indices, weights, time), optional
        Other rows to read (rows fetched from their owners, in arrival order); the hop may
        then not read per-edge vectors. ``time`` (int64 or float64 as the traced hop's
        entry times, one per entry, non-decreasing
        within rows, or ``None``): the entries' times, which a temporal hop (a view cut by
        :meth:`~spsample.engine._lazy.RowView.until`) reads instead of the traced graph's.
    edges : slice or int64 array of shape (nnz,), optional
        The global edge ids of ``graph``'s entries (a block of rows of a larger graph): where
        per-edge vectors are read. Default: ``graph`` is the whole graph.

    A temporal hop cuts each request's row at the time :func:`select_requests` is given for
    it (``times``): the rule's ``time`` is then the entries' times of the rows read.

    Raises
    ------
    NotLowerable
        When the kernels do not implement the hop's rule (its NumPy evaluation then runs).
    """
    spec = _lower_rows([plan], graph, 1, indices32=False, arrays=rows is None).spec
    hop = dict(spec["hops"][0], keep_row_ids=False)
    if hop["aux"] is not None or hop["graph"] != 0:
        raise _NotLowered("probabilities", "values looked up in other rows or graphs")
    f64, i64, program = list(spec["f64"]), list(spec["i64"]), list(hop["program"])
    nnz = len(graph.indices) if rows is None else len(rows[1])
    for i, (op, ctx, arg, value) in enumerate(program):
        if op != _V_EDGE:
            continue
        if rows is not None:
            raise _NotLowered("probabilities", "a per-edge vector over fetched rows")
        f64.append(f64[arg][slice(0, nnz) if edges is None else edges])
        program[i] = (op, ctx, len(f64) - 1, value)
    hop["program"] = program
    hop["batch_time"] = -1                   # requests carry their own times
    if hop["time"] >= 0 and rows is not None:
        if rows[3] is None or (np.asarray(rows[3]).dtype == np.int64) != hop["time_int"]:
            raise _NotLowered("probabilities", "a temporal hop over fetched rows without times "
                              "of the traced kind")
        table = i64 if hop["time_int"] else f64
        table.append(_i64(rows[3]) if hop["time_int"] else _f64(rows[3]))
        hop["time"] = len(table) - 1
    arrays = spec["graphs"][0] if rows is None else (
        _i64(rows[0]), _i64(rows[1]), _f64(rows[2]), None)
    return RequestHop(arrays, hop, f64, i64, graph.num_nodes)


def _request_times(lowered, times):
    """The requests' cut times in the kind of the hop's entry times (exactly converted)."""
    from .graph._times import cut_times
    kind = np.int64 if lowered.hop.get("time_int") else np.float64
    return np.ascontiguousarray(cut_times("sample", "seed_time", np.asarray(times), kind))


def select_requests(lowered, vertex, row, batch, hop_word, key, *, keys=None, num_threads=None,
                    windows=None, times=None):
    """The lowered hop's selection on requested rows (``native/rowwise.h``): the bits of the
    single-process kernel and of the hop's NumPy evaluation on the same rows.

    Parameters
    ----------
    lowered : RequestHop
    vertex : int64, shape (r,)
        Global vertex of each request.
    row : int64, shape (r,)
        Its row in ``lowered.graph``.
    batch : int64, shape (r,)
        Global minibatch id of each request; requests of one minibatch are best adjacent.
    hop_word : int
    key : (int, int)
    keys : int64, shape (r,), optional
        Stream words of hops keyed per row (walk ids).
    num_threads : int, optional
        Threads for this call (default: :func:`get_num_threads`); 1 for small calls, where
        starting a parallel region costs more than the work (the result is the same).
    windows : tuple, optional
        ``(order, ends, map, release)``: the requests come grouped in windows (window ``w``
        ends before request ``ends[w]``), taken in that order, a window's pages released once
        its requests are done (``release[w]``: pairs of page-aligned byte offsets into
        ``map``, a uint8 view of a read-only shared file mapping, or ``None``); request ``i``'s
        samples become row ``order[i]`` (a permutation). See :mod:`spsample.io._disk_map`.
    times : int64 or float64, shape (r,), optional
        A temporal hop's cut (and only then): request ``i`` reads the prefix of its row whose
        entry times are ``<= times[i]`` (compared exactly whatever the two kinds).

    Returns
    -------
    RowMatrix with ``r`` rows: ``indices`` the kept columns, ``edge_id`` their positions in
    ``lowered.graph``'s indices (ascending within a row, repeated under replacement).
    """
    from .engine._primitives import RowMatrix
    from ._validate import memory_limit
    if len(vertex) == 0:                 # also where there are no rows to read
        empty = np.zeros(0, dtype=np.int64)
        return RowMatrix(np.zeros(1, dtype=np.int64), empty, None, empty.copy())
    k0, k1 = (int(k) for k in key)
    budget = int(min(memory_limit(), 2**63 - 1))
    try:
        count, edge, column = _kernels.select_requests(
            lowered.graph, lowered.hop, lowered.f64, lowered.i64, lowered.n_vertices,
            _i64(vertex), _i64(row), None if keys is None else _i64(keys), _i64(batch),
            int(hop_word), k0, k1, budget,
            _THREADS if num_threads is None else int(num_threads), windows,
            None if times is None else _request_times(lowered, times))
    except MemoryError as exc:
        raise ResourceLimitError(f"sample: argument 'sampler': {exc} (the memory this process may "
                                 "use); lower the fanouts, batch_size or bulk size") from None
    except ArithmeticError as exc:
        raise SamplerError(f"sample: select_rows: argument 'bound' is exceeded ({exc})") from None
    indptr = np.zeros(count.size + 1, dtype=np.int64)
    np.cumsum(count, out=indptr[1:])
    return RowMatrix(indptr, column, None, edge)


def sample_rows(indptr, indices, weights, vertex, batch, fanout, hop_word, key, *, replace=False,
                weighted=False, row_offset=0, rows=None):
    """Node-wise sampling of requested rows of a block of ``A`` (the owner side of push).

    ``sample_rows(row_select(indptr, indices, weights, vertex, row_offset=row_offset), fanout,
    Streams(vertex, batch, hop_word, key), replace=..., weighted=...)`` of
    :mod:`spsample.engine._primitives`, bit for bit, computed by :func:`select_requests` (the row-wise
    engine's selection pass; OpenMP over the minibatches of the requests; the result does not
    depend on the number of threads).

    Parameters
    ----------
    indptr : int64, shape (n + 1,)
        Rows of the block, from 0 to ``len(indices)``.
    indices : int64, shape (nnz,)
        Global column ids.
    weights : float64, shape (nnz,), or None
        Needed when ``weighted``.
    vertex : int64, shape (r,)
        Global ids of the requested rows, in ``[row_offset, row_offset + n)``; repeats allowed.
    batch : int64, shape (r,)
        Global minibatch id of each request, in ``[0, 2**32)``.
    fanout : int
        ``>= 1``, or ``-1`` for every neighbour.
    hop_word : int
        ``(epoch << 8) | hop`` (:func:`spsample._rng.hop_word`), in ``[0, 2**32)``.
    key : (int, int)
        The Philox key (:func:`spsample._rng.split_seed`).
    replace, weighted : bool
    row_offset : int
        Global id of the block's first row.
    rows : int64, shape (r,), or None
        Where the rows are not stored by vertex id (rows fetched from other ranks, in arrival
        order): the row of ``indptr`` holding each request's vertex; ``row_offset`` is then
        ignored and ``vertex`` only keys the streams.

    Returns
    -------
    RowMatrix with ``r`` rows: ``indices`` the sampled columns, ``edge_id`` their positions in
    ``indices`` (ascending within a row, repeated under replacement); ``data`` is ``None``.

    Raises
    ------
    ArgumentError
        Before any native code runs, naming the argument: CSR arrays inconsistent, ``vertex``
        (or ``rows``) outside the block, ``batch`` outside ``[0, 2**32)``, ``batch`` or
        ``rows`` of another length, a fanout other than ``>= 1`` or ``-1``, ``hop_word`` or
        ``key`` out of range, ``weighted`` without weights.
    """
    from .engine._primitives import RowMatrix

    where = "native sample_rows"
    indptr, indices = _i64(np.asarray(indptr)), _i64(np.asarray(indices))
    vertex, batch = _i64(np.asarray(vertex)), _i64(np.asarray(batch))
    for name, arr in (("indptr", indptr), ("indices", indices), ("vertex", vertex), ("batch", batch)):
        if arr.ndim != 1:
            fail(ArgumentError, where, name, "must be one-dimensional", arr.shape)
    if indptr.size < 1 or indptr[0] != 0 or indptr[-1] != indices.size or \
            (indptr[1:] < indptr[:-1]).any():
        fail(ArgumentError, where, "indptr", "must run from 0 to len(indices), non-decreasing",
             indptr.size)
    n, row_offset = indptr.size - 1, as_int(where, "row_offset", row_offset)
    if rows is not None:
        rows = _i64(np.asarray(rows))
        if rows.shape != vertex.shape:
            fail(ArgumentError, where, "rows", f"must have one entry per request ({vertex.size})", rows.shape)
        if rows.size and (rows.min() < 0 or rows.max() >= n):
            fail(ArgumentError, where, "rows", f"must be row ids in [0, {n})", rows)
        if vertex.size and (vertex.min() < 0 or vertex.max() >= 2**32 - 1):
            fail(ArgumentError, where, "vertex", "must be vertex ids in [0, 2**32 - 1)", vertex)
    elif vertex.size and (vertex.min() < row_offset or vertex.max() >= row_offset + n
                          or vertex.max() >= 2**32 - 1):
        fail(ArgumentError, where, "vertex", f"must be row ids in [{row_offset}, {row_offset + n})", vertex)
    if batch.size != vertex.size:
        fail(ArgumentError, where, "batch", f"must have one entry per request ({vertex.size})", batch.size)
    if batch.size and (batch.min() < 0 or batch.max() >= 2**32):
        fail(ArgumentError, where, "batch", "must be in [0, 2**32)", batch)
    fanout = as_int(where, "fanout", fanout)
    if (fanout < 1 and fanout != -1) or fanout >= 2**31:
        fail(ArgumentError, where, "fanout", "must be >= 1 (below 2**31) or -1", fanout)
    if not 0 <= as_int(where, "hop_word", hop_word) < 2**32:
        fail(ArgumentError, where, "hop_word", "must be in [0, 2**32)", hop_word)
    k0, k1 = (int(k) for k in key)
    if not (0 <= k0 < 2**32 and 0 <= k1 < 2**32):
        fail(ArgumentError, where, "key", "must be two words in [0, 2**32)", key)
    weights = _f64(None if weights is None else np.asarray(weights))
    if weights is not None and weights.shape != indices.shape:
        fail(ArgumentError, where, "weights", "must match indices", weights.shape)
    if weighted and weights is None:
        fail(ArgumentError, where, "weights", "are needed for weighted sampling", show_value=False)
    if weighted and weights.size and (not np.isfinite(weights).all() or weights.min() < 0):
        fail(ArgumentError, where, "weights", "must be finite and >= 0", show_value=False)
    if weighted:
        select, program = (_S_WEIGHTED_REP if replace else _S_WEIGHTED), [(_V_WEIGHT, 0, 0, 0.0)]
    else:
        select, program = (_S_UNIFORM_REP if replace else _S_UNIFORM), []
    hop = dict(aux=None, program=program, select=select, fanout=fanout, fanout_vec=-1, bound=0.0,
               key=0)
    n_vertices = max(n, int(vertex.max()) + 1 if vertex.size else 0)
    lowered = RequestHop((indptr, indices, weights if weighted else None, None), hop, [], [],
                         n_vertices)
    row = vertex - row_offset if rows is None else rows
    return select_requests(lowered, vertex, row, batch, hop_word, (k0, k1))


def _relabel_args(known_offsets, known, cand_offsets, cand):
    arrays = [_i64(np.asarray(a)) for a in (known_offsets, known, cand_offsets, cand)]
    for name, arr in zip(("known_offsets", "known", "cand_offsets", "cand"), arrays):
        if arr.ndim != 1:
            fail(ArgumentError, "native relabel", name, "must be one-dimensional", arr.shape)
    return arrays


def insert_bulk(known_offsets, known, cand_offsets, cand):
    """Deduplicating insertion of ``(minibatch, vertex)`` pairs (``native/relabel.h``).

    Parameters
    ----------
    known_offsets : int64, shape (k + 1,)
        Minibatch ``j`` knows ``known[known_offsets[j]:known_offsets[j + 1]]``.
    known : int64, shape (K,)
        Vertices in local order; ``-1`` marks a slot that is never found.
    cand_offsets : int64, shape (k + 1,)
        Minibatch ``j``'s candidates are ``cand[cand_offsets[j]:cand_offsets[j + 1]]``.
    cand : int64, shape (m,)
        Vertex ids, in edge order.

    Returns
    -------
    local : int64, shape (m,)
        Local id of every candidate (new vertices numbered after the known ones, in first-
        occurrence order).
    fresh : int64, shape (k,)
        New vertices per minibatch.
    added : int64, shape (m,)
        Minibatch ``j``'s new vertices at ``added[cand_offsets[j]:cand_offsets[j] + fresh[j]]``
        (the rest is undefined).

    Raises
    ------
    ValueError
        Offsets inconsistent with the arrays, or ids outside ``[0, 2**32 - 1)``, before any
        native code reads them.
    """
    return _kernels.insert_bulk(*_relabel_args(known_offsets, known, cand_offsets, cand),
                                _THREADS)


def lookup_bulk(known_offsets, known, query_offsets, query):
    """Local ids of ``(minibatch, vertex)`` queries, ``-1`` where absent; arguments as
    :func:`insert_bulk`. Returns int64, shape (len(query),)."""
    return _kernels.lookup_bulk(*_relabel_args(known_offsets, known, query_offsets, query),
                                _THREADS)


_LINK_MODES = {"binary": 0, "triplet": 1, None: 2}


def link_bulk(pos_offsets, pos, src_ids, dst_ids, neg_offsets, batch_ids, *, mode, ratio,
              pickers, key, hop_word, block, max_attempts, type_offsets, dedup):
    """A bulk of link minibatches' negatives, seed endpoints and their first-occurrence
    relabelling, parallel over minibatches (``native/link.h``; the same bits as
    :func:`spsample.engine._negatives.draw_negatives` and the loader's NumPy code).

    Parameters
    ----------
    pos_offsets : int64, shape (k + 1,)
        Minibatch ``j``'s seed edges are ``pos[pos_offsets[j]:pos_offsets[j + 1]]``.
    pos : int64, shape (P,)
        Positions into ``src_ids`` / ``dst_ids``.
    src_ids, dst_ids : int64, shape (E,)
        The seed edges' ends (local ids of their types).
    neg_offsets : int64, shape (k + 1,)
        Minibatch ``j``'s negative slots.
    batch_ids : int64, shape (k,)
        Global minibatch ids.
    mode : {"binary", "triplet", None}
    ratio : int
        Triplet: negatives per positive (slot ``i`` keeps positive ``i // ratio``'s source).
    pickers : (_Picker, _Picker)
        :func:`spsample.engine._negatives.pickers` of the source and destination types.
    key : (int, int)
        :func:`spsample.engine._negatives.negative_key`.
    hop_word : int
    block : Graph or None
        Strict negatives: the relation's block (a candidate that is an entry is drawn again).
    max_attempts : int
    type_offsets : (int, int)
        Global offsets of the source and destination types.
    dedup : bool
        False: every endpoint its own seed (disjoint sampling).

    Returns
    -------
    nsrc, ndst : int64, shape (neg_offsets[-1],)
        Negatives (local ids), minibatch after minibatch.
    where : int64, shape (T,)
        Per minibatch, each endpoint's position among its seeds; endpoints ``[src, dst,
        nsrc, ndst]`` (binary), ``[src, dst, ndst]`` (triplet), ``[src, dst]`` (none).
    seeds : int64, shape (T,)
        Minibatch ``j``'s seeds (global ids, first-occurrence order) at
        ``end_offsets[j]:end_offsets[j] + fresh[j]``.
    fresh, failed : int64, shape (k,)
        Seeds per minibatch; strict slots that found no non-edge.
    end_offsets : int64, shape (k + 1,)

    Raises
    ------
    ValueError
        Inconsistent offsets, positions or ids out of range, before any native code reads
        them.
    """
    graph = None if block is None else (_i64(block.indptr), _i64(block.indices), None, None)
    ends = tuple((p.n, _f64(p.cumulative), p.last) for p in pickers)
    arrays = [_i64(np.asarray(a)) for a in (pos_offsets, pos, src_ids, dst_ids, neg_offsets,
                                            batch_ids)]
    return _kernels.link_bulk(*arrays, _LINK_MODES[mode], int(ratio), ends, int(key[0]),
                              int(key[1]), int(hop_word), graph, int(max_attempts),
                              int(type_offsets[0]), int(type_offsets[1]), bool(dedup),
                              _THREADS)


def minibatch_edges(hops, exclude=None):
    """Every minibatch's edges of a bulk as ``MiniBatch.edge_index()`` and its concatenated
    ``edge_ids`` lay them out, in one pooled block, parallel over minibatches, optionally
    without the seed edges of link minibatches (``native/link.h``).

    Parameters
    ----------
    hops : list of HopEdges
        A :class:`~spsample.Bulk`'s ``hops`` (at least one).
    exclude : tuple or None
        ``(n_id, node_offsets, u, v, pair_offsets)``: the bulk's ``n_id`` and
        ``node_offsets``, and per minibatch ``j`` the pairs ``(u[i], v[i])`` (global ids,
        ``pair_offsets[j] <= i < pair_offsets[j + 1]``) whose edges, either way, are dropped.

    Returns
    -------
    out : int64, shape (3 E,)
        Minibatch ``j`` at ``3 * edge_offsets[j]``: its ``K_j`` kept sources (hop 1 first),
        its destinations, its edge ids (the rest of its ``3 E_j`` entries is unused).
    edge_offsets : int64, shape (k + 1,)
    kept : int64, shape (k, L)
        Kept edges per minibatch and hop.

    Raises
    ------
    ValueError
        Inconsistent offsets, or ids out of range, before any native code reads them.
    """
    if exclude is not None:
        exclude = tuple(_i64(np.asarray(a)) for a in exclude)
    return _kernels.minibatch_edges([_i64(h.dst) for h in hops], [_i64(h.src) for h in hops],
                                    [_i64(h.edge_id) for h in hops],
                                    [_i64(h.offsets) for h in hops], exclude, _THREADS)


def split_typed(n_id, node_offsets, counts, step_hops, type_offsets, node_batch, hops,
                num_hops):
    """A heterogeneous bulk's vertices grouped by (minibatch, node type) and its edges in
    per-type local ids, parallel over minibatches (``native/typed.h``; the same bits as
    :func:`spsample.engine._hetero_sample._group_numpy`, its oracle).

    Parameters
    ----------
    n_id : int64, shape (N,)
        Global ids, minibatch after minibatch (``node_offsets``, k + 1), each minibatch's seeds
        first, then ``counts[j, s]`` new vertices of engine step ``s``.
    counts : int64, shape (k, S + 1)
    step_hops : int64, shape (S + 1,)
        The hop of each step (0: the seeds), at most ``num_hops``.
    type_offsets : int64, shape (T + 1,)
        The first global id of each node type, then the total.
    node_batch : int64, shape (N,), or None
    hops : list of HopEdges, length S
        Each step's edges (``dst`` / ``src``: minibatch-local positions, ``offsets``).
    num_hops : int

    Returns
    -------
    sorted_ids : int64, shape (N,)
        Per minibatch, the vertices of each type (types in order; n_id order within a type),
        as local ids of their type.
    sorted_batch : int64, shape (N,), or None
        ``node_batch`` in the same order.
    per_group : int64, shape (k, T)
    per_hop : int64, shape (k, T, num_hops + 1)
    ends : list of (dst, src), int64 each
        Per step, the edges' ends as positions within their (minibatch, type) group.

    Raises
    ------
    ValueError
        Inconsistent sizes, an id outside the types or an edge end outside its minibatch.
    """
    batch = None if node_batch is None else _i64(np.asarray(node_batch))
    return _kernels.split_typed(
        _i64(np.asarray(n_id)), _i64(np.asarray(node_offsets)),
        _i64(np.asarray(counts)).ravel(), _i64(np.asarray(step_hops)),
        _i64(np.asarray(type_offsets)), batch, [_i64(h.dst) for h in hops],
        [_i64(h.src) for h in hops], [_i64(h.offsets) for h in hops], int(num_hops), _THREADS)


def parse_edges(text, comment, delimiter):
    """The first two columns of the edge lines of ``text`` (``native/parse.h``).

    Parameters
    ----------
    text : bytes
        Whole lines.
    comment, delimiter : str
        One character each, or ``""`` (no comments; columns split on runs of blanks).

    Returns
    -------
    int64 array of shape (E, 2), or ``None`` when a line does not match the parser's strict
    grammar (the caller falls back to ``numpy.loadtxt``).
    """
    edges, _ = _kernels.parse_edges(text, comment, delimiter)
    return edges


if AVAILABLE:      # the pool's default limit (set_pool_limit)
    from ._validate import memory_limit as _memory_limit  # noqa: E402
    _kernels.set_pool_limit(int(min(2**31, _memory_limit() // 8)))

# SPSAMPLE_THREADS (spsample._threads) applies from the first use of the native kernels on,
# before any explicit set_num_threads call (which then wins).
from ._threads import apply_env_threads as _apply_env_threads  # noqa: E402

_apply_env_threads()
