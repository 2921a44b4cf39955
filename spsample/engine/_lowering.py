"""The lowering: a sampler's traced constructors turned into a native kernel's request.

A sampler's constructors, traced by the engine into one ``HopPlan`` per hop, are *lowered*
here onto one of two bulk kernels that run every hop of every minibatch in one call and return
exactly what the NumPy evaluation of the same constructors returns (same bits, same order):

* the row-wise engine (``native/rowwise.h``): hops whose selection is per row -- node-wise
  (uniform / weighted, with or without replacement, fanout per hop or per vertex), walks and
  node2vec (streams per row, values looked up in aligned rows, rejection), LABOR (threshold on
  per-column variates), with or without deduplication (:func:`lower_rows`);
* the layer-wise engine (``native/layerwise.h``): hops that choose columns per minibatch
  (LADIES: column sums of ``A∘A``) or globally (FastGCN) and take the layer's edges.

One traced row-local hop is also lowered alone for requested rows (:func:`lower_requests`: the
owner side of distributed sampling, rows fetched from other ranks, a graph on disk).

Which class a sampler is plays no part: a subclass, or a user's sampler built from the same
lazy matrices, lowers to the same kernels. What cannot be lowered raises
:class:`~spsample.engine._lazy.NotLowerable` naming the constructor (the engine then runs NumPy
and warns once). The codes written into a plan come from the extension
(:mod:`spsample.native._codes`).
"""

import numpy as np

from ..native import (VALUE_STACK, Frontier, SelectRule, StreamKey, ValueOp, alias_table,
                      as_f64, as_i64)
from ..native import column_fence as graph_column_fence
from ..native import indices32 as graph_indices32
from ._lazy import (ColumnSelection, ColumnSums, GlobalColumns, GlobalSelection, NotLowerable,
                    RowSelection, RowView, ThresholdSelection)

__all__ = ["Lowered", "lower", "lower_rows", "RequestHop", "lower_requests"]


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


def lower(plans, graph, num_batches, host_tables=True):
    """Lower the traced hops of a bulk onto a native kernel.

    Parameters
    ----------
    plans : list of HopPlan
        One per hop (:func:`spsample.engine._run.trace`).
    graph : Graph
        The bulk's graph.
    num_batches : int
        Minibatches of the bulk (``k``).
    host_tables : bool
        Hand the CPU kernel the graph's tables that only it reads: weighted hops' per-row
        weight statistics (``row_weight_stats``) and float32 weights (``screen_weights``)
        and, for graphs that rejection hops look rows up in, the column fence
        (``column_fence``). The GPU leaves them out (nothing is built
        for it).

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
        return lower_rows(plans, graph, num_batches, host_tables=host_tables)
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


def _weight_table(graph, name):
    """The graph's memoised table ``name`` for the weighted rule: ``row_weight_stats`` (per-row
    statistics for its screen) or ``screen_weights`` (float32 copies of the weights); ``None``
    where the graph kind has none (rows read from disk or fetched) or the graph has none (no
    copies when a weight is out of their range). Without them the rule reads the float64
    weights, with the same result."""
    table = getattr(graph, name, None)
    return None if table is None else table()


def _own_weights(P, program):
    """Whether a weighted hop reads whole rows valued by its graph's own weights: the rows the
    graph's memoised weight tables describe."""
    return P.cutoff is None and program.code == [(ValueOp.WEIGHT, 0, 0, 0.0)]


def _key_tables(spec, P, tables, host_tables):
    """Hand the screened keys their graph's row statistics (and, to the CPU kernel, its float32
    weights). Returns whether the graph has statistics (rows held in memory)."""
    stats = _weight_table(P.graph, "row_weight_stats")
    if stats is None:
        return False
    spec["row_stats"] = tables.vector(stats, tables.f64)
    screen = _weight_table(P.graph, "screen_weights") if host_tables else None
    if screen is not None:
        spec["screen_weights"] = screen
    return True


def _alias_tables(spec, P, program, tables, arrays, host_tables):
    """Hand an alias hop its graph's alias table and shares (built once per graph), with the
    tables of the keys that its concentrated rows take, where its rows are whole rows of an
    in-memory graph valued by the graph's own weights; the kernels build the table of any other
    row from its values (the same table)."""
    if not (arrays and _own_weights(P, program)):
        return
    alias = alias_table(P.graph)
    if alias is None or not _key_tables(spec, P, tables, host_tables):
        return
    spec["alias"], share = alias
    spec["alias_share"] = tables.vector(share, tables.f64)
    spec["alias_all_positive"] = bool(_weight_table(P.graph, "all_weights_positive"))


def _frontier_spec(Q, hop, k, tables, referenced):
    if not Q.symbolic:
        raise _NotLowered("frontier", "a frontier given as arrays (build it from the state: "
                          "state.new_nodes(h), state.edge_sources(h), state.rows(...), ...)")
    code = int(Frontier[Q.kind.upper()])
    if Q.kind in ("edge_sources", "edge_destinations"):
        referenced.add(Q.hop)
    if Q.kind == "rows":
        batch, vertex = Q.given
        offsets = np.searchsorted(batch, np.arange(k + 1)).astype(np.int64)
        return (code, hop, tables.vector(offsets, tables.i64), tables.vector(as_i64(vertex), tables.i64))
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
            self.code.append((ValueOp.CONST, 0, 0, expr.value))
        elif op == "weight":
            if expr.graph is not graph:
                raise _NotLowered("probabilities", "edge weights of another graph than the view's")
            self.code.append((ValueOp.WEIGHT, ctx, 0, 0.0))
        elif op in ("column", "row", "edge"):
            code = {"column": ValueOp.COLUMN, "row": ValueOp.ROW, "edge": ValueOp.EDGE}[op]
            vec = np.ascontiguousarray(expr.vector, dtype=np.float64)
            self.code.append((code, ctx, self.tables.vector(vec, self.tables.f64), 0.0))
        elif op in ("mul", "add"):
            self.encode(expr.args[0], ctx, graph)
            self.encode(expr.args[1], ctx, graph)
            self.code.append((ValueOp.MUL if op == "mul" else ValueOp.ADD, 0, 0, 0.0))
        elif op == "square":
            self.encode(expr.args[0], ctx, graph)
            self.code.append((ValueOp.SQUARE, 0, 0, 0.0))
        elif op == "indicator":
            if expr.frontier.same_rows(self.base.frontier):
                self.code.append((ValueOp.INDICATOR, 0, 0, 0.0))
            elif ctx == 0:
                self._set_aux(expr.frontier, None)
                self.code.append((ValueOp.INDICATOR, 1, 0, 0.0))
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
        self.code.append((ValueOp.FOUND, 0, 0, 0.0))

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
            depth += 1 if op <= ValueOp.INDICATOR else (-1 if op in (ValueOp.MUL, ValueOp.ADD) else 0)
            top = max(top, depth)
        return top <= VALUE_STACK


def lower_rows(plans, graph, k, indices32=True, arrays=True, host_tables=True):
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
            spec["key"] = StreamKey.VERTEX if streams.keyed_by == "vertex" else StreamKey.ROW
            if sel.method == "last":
                spec["select"] = SelectRule.LAST
            elif not sel.weighted:
                spec["select"] = SelectRule.UNIFORM_REP if sel.replace else SelectRule.UNIFORM
            elif sel.method == "rejection":
                spec["select"], spec["bound"] = SelectRule.REJECTION, float(sel.bound)
            elif sel.method == "alias":
                spec["select"] = SelectRule.ALIAS_REP if sel.replace else SelectRule.ALIAS
            else:
                spec["select"] = SelectRule.WEIGHTED_REP if sel.replace else SelectRule.WEIGHTED
            if sel.weighted:
                program = _Program(P, tables)
                program.encode(P.expr)
                if not program.depth_ok():
                    raise _NotLowered("probabilities", "a value expression deeper than "
                                      f"{VALUE_STACK} operands")
                spec["program"] = program.code
                if (host_tables and arrays and indices32 and spec["select"] == SelectRule.WEIGHTED
                        and _own_weights(P, program)):
                    _key_tables(spec, P, tables, host_tables)
                if sel.method == "alias":
                    _alias_tables(spec, P, program, tables, arrays, host_tables)
                if program.aux is not None:
                    spec["aux"] = _frontier_spec(program.aux, h, k, tables, referenced)
                    spec["aux_graph"] = tables.graph(program.aux_graph or P.graph)
        elif isinstance(sel, ThresholdSelection):
            spec["select"] = SelectRule.THRESHOLD
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
    looked_up = {h["aux_graph"] for h in hops if host_tables and
                 h["select"] == SelectRule.REJECTION and h["aux"] is not None}
    graphs = [_graph_arrays(g, indices32, i in looked_up) for i, g in enumerate(tables.graphs)] \
        if arrays else []
    return Lowered("rowwise", dict(graphs=graphs, hops=hops, f64=tables.f64, i64=tables.i64))


def _graph_arrays(g, indices32, fence):
    """``(indptr, indices, weights, indices32, fence)`` of a graph for the kernel: the fence
    (:func:`~spsample.native.column_fence`) where a rejection hop looks rows of ``g`` up."""
    cols = graph_indices32(g) if indices32 else None
    return (as_i64(g.indptr), as_i64(g.indices), as_f64(g.weights), cols,
            graph_column_fence(g, cols) if fence and cols is not None else None)


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
    graph, the layerwise_weights of a weighted one (by identity: the array the graph keeps)."""
    if graph.weights is None:
        return expr is None
    return expr is not None and expr.op == "edge" and expr.vector is graph.layerwise_weights()


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
    spec = lower_rows([plan], graph, 1, indices32=False, arrays=rows is None).spec
    hop = dict(spec["hops"][0], keep_row_ids=False)
    if "alias" in hop:            # requested rows build their own tables (the same tables)
        for name in ("alias", "alias_share", "alias_all_positive", "row_stats", "screen_weights"):
            hop.pop(name, None)
    if hop["aux"] is not None or hop["graph"] != 0:
        raise _NotLowered("probabilities", "values looked up in other rows or graphs")
    f64, i64, program = list(spec["f64"]), list(spec["i64"]), list(hop["program"])
    nnz = len(graph.indices) if rows is None else len(rows[1])
    for i, (op, ctx, arg, value) in enumerate(program):
        if op != ValueOp.EDGE:
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
        table.append(as_i64(rows[3]) if hop["time_int"] else as_f64(rows[3]))
        hop["time"] = len(table) - 1
    arrays = spec["graphs"][0][:4] if rows is None else (
        as_i64(rows[0]), as_i64(rows[1]), as_f64(rows[2]), None)
    return RequestHop(arrays, hop, f64, i64, graph.num_nodes)
