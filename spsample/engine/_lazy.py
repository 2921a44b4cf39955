"""The lazy matrices of one hop: the vocabulary samplers are written in.

A sampler's constructors build these objects; they are the same whether the engine *traces*
the constructors (to lower the whole bulk onto native kernels) or *evaluates* them with NumPy
(the oracle, and the path of constructors that read data). ::

    Q  Frontier        rows (minibatch position, vertex) to expand          (r rows)
    P  RowView         Q·A as a view: row extents into A, values an Expr    (r × n)
       Expr            entry values: edge weights, per-column / per-row / per-edge vectors,
                       lookups into aligned rows, indicators, + and ×
       ColumnSums      Q_b·f(A): per-minibatch column sums (layer-wise)     (k × n)
       GlobalColumns   one column distribution for every minibatch (FastGCN)
    S  selections      RowSelection, ThresholdSelection, ColumnSelection, GlobalSelection

*Symbolic* objects (while tracing) know what they are (e.g. "the vertices first reached at hop
2") but hold no data; asking one for data raises :class:`NotLowerable`, which makes the engine
fall back to the NumPy path for that sampler (with a one-time warning). *Concrete* objects hold
NumPy arrays. Every rule here is also implemented by the native kernels (``native/``) and by the
scalar reference (:mod:`spsample.engine._reference`), bit for bit.
"""

import numbers

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, SamplerError
from .._validate import as_index_array, fail
from ._csr import RowMatrix, column_accumulate
from ..graph._times import as_times, cut_times
from .. import _rng

__all__ = [
    "NotLowerable", "Frontier", "Expr", "RowView", "gather", "ColumnSums", "GlobalColumns",
    "column_sums", "global_columns", "Streams", "RowSelection", "ThresholdSelection",
    "ColumnSelection", "GlobalSelection", "is_symbolic", "REJECTION_ATTEMPTS",
    "ALIAS_ATTEMPTS", "ALIAS_SHARE_MAX",
]

#: Attempts of the rejection rule before it falls back to exact keys (see RowSelection).
REJECTION_ATTEMPTS = 256

#: The alias rule without replacement makes at most ``ALIAS_ATTEMPTS * s`` draws in a row of
#: fanout ``s`` before the exact keys choose the rest (see RowSelection).
ALIAS_ATTEMPTS = 4

#: The alias rule without replacement draws a row of fanout ``s`` from its table only when its
#: largest value is at most ``ALIAS_SHARE_MAX / s`` of the row's sum; rows more concentrated
#: than that (where attempts would mostly repeat kept entries) take the exact keys' sample.
ALIAS_SHARE_MAX = 2.0


class NotLowerable(Exception):
    """A constructor needed data that exists only once the bulk is sampled (while tracing),
    or built something the native engine has no kernel for. ``what`` says which."""

    def __init__(self, what):
        super().__init__(what)
        self.what = what


def is_symbolic(obj):
    """Whether ``obj`` (a Frontier, RowView, ...) is a traced placeholder without data."""
    return getattr(obj, "symbolic", False)


# ------------------------------------------------------------------------------------ Q
class Frontier:
    """``Q``: the rows of a frontier/selection matrix; row ``r`` selects vertex ``vertex[r]`` of
    minibatch ``batch[r]``.

    Built by the bulk state (``state.new_nodes(h)``, ``state.all_nodes()``,
    ``state.edge_sources(h)``, ``state.edge_destinations(h)``, ``state.rows(batch, vertex)``) or
    directly from arrays (``Frontier(batch, vertex, local)``: integer arrays of one entry per
    row, ``batch`` and ``vertex`` ``>= 0``, ``batch`` non-decreasing unless ``row_id`` is
    given; :func:`gather` checks ``vertex`` against the graph; a typed error otherwise).

    Attributes
    ----------
    batch : int64, shape (r,)
        Position of the row's minibatch in the bulk (0..k-1), non-decreasing.
    vertex : int64, shape (r,)
        Global vertex id.
    local : int64, shape (r,)
        The vertex's local id in its minibatch.
    row_id : int64, shape (r,)
        A stable id of the row within its minibatch, for streams keyed per row: the local id
        for vertex sets, the producing row's id for edge ends (so a walk keeps the id of the
        seed it started from), the position among the minibatch's rows for given rows.
    kind, hop : str, int
        What the rows are: ``"new_nodes"``, ``"all_nodes"``, ``"edge_sources"``,
        ``"edge_destinations"``, ``"rows"`` (given), or ``"arrays"`` (built from arrays).
    hop_last : int
        ``"new_nodes"``: the vertices first reached at engine hops ``hop .. hop_last`` (the
        sub-hops of one heterogeneous hop; ``hop`` alone on a plain graph; an empty range when
        ``hop_last == hop - 1``).
    """

    symbolic = False

    hop_last = None

    def __init__(self, batch, vertex, local=None, *, row_id=None):
        where = "Frontier"
        self.kind, self.hop, self.hop_last = "arrays", 0, 0
        self.batch = _int_vector(where, "batch", batch)
        self.vertex = _int_vector(where, "vertex", vertex, self.batch.size)
        if self.batch.size and self.batch.min() < 0:
            fail(ArgumentError, where, "batch", "must be bulk positions >= 0",
                 int(self.batch.min()))
        if row_id is None and (self.batch[1:] < self.batch[:-1]).any():
            fail(ArgumentError, where, "batch", "must be non-decreasing (rows grouped by "
                 "minibatch) unless row_id is given", show_value=False)
        if self.vertex.size and self.vertex.min() < 0:
            fail(ArgumentError, where, "vertex", "must be vertex ids >= 0",
                 int(self.vertex.min()))
        self.local = self.vertex * 0 - 1 if local is None else \
            _int_vector(where, "local", local, self.batch.size)
        self.row_id = (_positions(self.batch) if row_id is None
                       else _int_vector(where, "row_id", row_id, self.batch.size))

    @classmethod
    def _of(cls, kind, hop, batch, vertex, local, row_id, hop_last=None):
        f = cls.__new__(cls)
        f.kind, f.hop, f.hop_last = kind, hop, hop if hop_last is None else hop_last
        f.batch, f.vertex, f.local, f.row_id = batch, vertex, local, row_id
        return f

    def __len__(self):
        return int(self.vertex.size)

    def same_rows(self, other):
        """Whether ``other`` has the very rows of this frontier."""
        if self is other:
            return True
        if not isinstance(other, Frontier) or self.symbolic or other.symbolic:
            return (isinstance(other, Frontier) and self.symbolic and other.symbolic
                    and self._what() == other._what())
        return self._what() == other._what() and len(self) == len(other) and \
            np.array_equal(self.batch, other.batch) and np.array_equal(self.vertex, other.vertex)

    def _what(self):
        return (self.kind, self.hop, self.hop_last)

    def aligned_with(self, other):
        """Whether row ``r`` of ``other`` belongs to the same minibatch and edge/row as row ``r``
        here (so values of one may look up the other): the same rows, or the two ends of one
        hop's edges."""
        if self.same_rows(other):
            return True
        ends = {"edge_sources", "edge_destinations"}
        if self.symbolic or other.symbolic:
            return (isinstance(other, Frontier) and {self.kind, other.kind} == ends
                    and self.hop == other.hop)
        return len(self) == len(other) and np.array_equal(self.batch, other.batch)

    def previous(self):
        """For the ends of a hop's edges (e.g. where walks stand), the other ends of the same
        edges, row for row: where each walk stood one step before."""
        other = {"edge_sources": "edge_destinations", "edge_destinations": "edge_sources"}
        if self.kind not in other:
            raise SamplerError(f"Frontier.previous: {self!r} is not the ends of a hop's edges "
                               "(state.edge_sources(h) / state.edge_destinations(h))")
        if self.symbolic:
            return SymbolicFrontier(other[self.kind], self.hop)
        return self._state_ends[other[self.kind]](self.hop)

    def as_matrix(self):
        """This frontier as a selection matrix, for use in values: entry ``(r, u)`` is 1 where
        ``u == vertex[r]`` (e.g. node2vec's return to the previous vertex)."""
        return Expr("indicator", frontier=self)

    def __repr__(self):
        numbered = self.kind not in ("all_nodes", "arrays")
        last = self.hop_last
        hops = f"{self.hop}" if last in (None, self.hop) else f"{self.hop}..{last}"
        what = f"{self.kind}" + (f"({hops})" if numbered else "")
        return f"Frontier({what}{', symbolic' if self.symbolic else f', {len(self)} rows'})"


class SymbolicFrontier(Frontier):
    """A traced ``Q`` (no data)."""

    symbolic = True

    def __init__(self, kind, hop, rows=None, hop_last=None):   # noqa: D107 (not public)
        self.kind, self.hop = kind, hop
        self.hop_last = hop if hop_last is None else hop_last
        self.given = rows       # kind "rows": (batch, vertex) arrays of the user's rows

    def __len__(self):
        raise NotLowerable(f"len() of the symbolic frontier {self!r}")

    def _no_data(self, name):
        raise NotLowerable(f"Frontier.{name} of {self!r}")

    batch = property(lambda self: self._no_data("batch"))
    vertex = property(lambda self: self._no_data("vertex"))
    local = property(lambda self: self._no_data("local"))
    row_id = property(lambda self: self._no_data("row_id"))


def _int_vector(where, name, value, size=None):
    """``value`` as a 1-D int64 array (not copied when it is one), of ``size`` entries."""
    if not (isinstance(value, np.ndarray) and value.dtype == np.int64 and value.ndim == 1):
        value = as_index_array(where, name, value)
    if size is not None and value.size != size:
        fail(ArgumentError, where, name, f"must have one entry per row ({size})", value.shape)
    return value


def _positions(batch):
    """Position of each row within its minibatch (rows sorted by minibatch)."""
    return np.arange(batch.size, dtype=np.int64) - np.searchsorted(batch, batch, side="left")


# ------------------------------------------------------------------------------------ values
def _as_vector(where, name, value, length, *, integer=False):
    """A read-only float64 (or int64) copy of a per-vertex / per-edge vector, checked."""
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind not in ("iuf" if not integer else "iu"):
        fail(ArgumentTypeError, where, name,
             "must be a numeric array" if not integer else "must be an integer array",
             show_value=False)
    if arr.shape != (length,):
        fail(ArgumentError, where, name, f"must have shape ({length},)", arr.shape)
    if integer:
        out = arr.astype(np.int64)
    else:
        out = arr.astype(np.float64)
        if out.size and (not np.isfinite(out).all() or out.min() < 0):
            fail(ArgumentError, where, name, "must hold finite values >= 0", show_value=False)
    out.flags.writeable = False
    return out


class Expr:
    """A value of the entries of a :class:`RowView`, as an expression tree.

    Leaves: ``const`` (a number), ``weight`` (the edge weight of A), ``column`` (``vec[u]``),
    ``row`` (``vec[v]`` of the row's vertex), ``edge`` (``arr[e]``), ``view`` (the value of
    another :class:`RowView`: the entry's own value if it has the same rows, else a lookup of
    column ``u`` in the aligned row, 0 where absent), ``indicator`` (``u == t_r`` for an aligned
    frontier). Inner nodes: ``mul``, ``add``, ``square`` (``x * x``). Evaluated with exactly
    rounded IEEE operations in the tree's order, by NumPy, the native program and the scalar
    reference alike.
    """

    __slots__ = ("op", "args", "value", "vector", "graph", "view", "frontier")

    def __init__(self, op, *args, value=None, vector=None, graph=None, view=None, frontier=None):
        self.op, self.args = op, args
        self.value, self.vector, self.graph = value, vector, graph
        self.view, self.frontier = view, frontier

    # arithmetic builds trees; numbers become constants
    def __mul__(self, other):
        if isinstance(other, RowView):
            return other.__mul__(self)
        return Expr("mul", self, as_expr(other))

    def __rmul__(self, other):
        return Expr("mul", as_expr(other), self)

    def __add__(self, other):
        return Expr("add", self, as_expr(other))

    def __radd__(self, other):
        return Expr("add", as_expr(other), self)

    def __sub__(self, other):
        return Expr("add", self, Expr("mul", const(-1.0), as_expr(other)))

    def __rsub__(self, other):
        return Expr("add", as_expr(other), Expr("mul", const(-1.0), self))

    def leaves(self):
        """Every leaf of the tree, left to right."""
        if not self.args:
            yield self
        for a in self.args:
            yield from a.leaves()

    def __repr__(self):
        if self.op == "const":
            return repr(self.value)
        if self.args:
            return f"{self.op}({', '.join(map(repr, self.args))})"
        return self.op


def const(value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        fail(ArgumentTypeError, "RowView", "value", "must be a real number", value)
    value = float(value)
    if not np.isfinite(value):
        fail(ArgumentError, "RowView", "value", "must be finite", value)
    return Expr("const", value=value)


def signs(expr):
    """``(may_be_positive, may_be_negative)`` of the values of ``expr``, from its tree alone.

    Exact as far as it goes (no rounding, no false claim): constants have their own sign;
    edge weights, checked vectors, indicators and unvalued views are ``>= 0``; a product is
    negative where one factor is, a sum where either term may be, a square never. A view's
    value counts 0 off its entries. ``(False, True)`` proves every value ``<= 0``.
    """
    op = expr.op
    if op == "const":
        return expr.value > 0, expr.value < 0
    if op == "view":
        view = expr.view
        return (True, False) if view.expr is None else signs(view.expr)
    if op == "mul":
        (ap, an), (bp, bn) = signs(expr.args[0]), signs(expr.args[1])
        return (ap and bp) or (an and bn), (ap and bn) or (an and bp)
    if op == "add":
        (ap, an), (bp, bn) = signs(expr.args[0]), signs(expr.args[1])
        return ap or bp, an or bn
    if op == "square":
        positive, negative = signs(expr.args[0])
        return positive or negative, False
    return True, False          # weight, column, row, edge, indicator: checked >= 0


def check_values(where, name, view):
    """Refuse a view whose values are provably ``<= 0`` and not all 0 (e.g. ``P * -2.0``, or
    ``-P``) as the distribution of a weighted selection or of column sums: entries are drawn ∝
    their values and those ``<= 0`` never, so it would sample nothing.

    Raises
    ------
    SamplerError
        Naming ``name`` of ``where``.
    """
    if view.expr is not None and signs(view.expr) == (False, True):
        fail(SamplerError, where, name, "has values <= 0 on every entry (a negative factor, "
             "e.g. P * -2.0): entries are drawn in proportion to their values, so nothing "
             "would be sampled; values must be >= 0", view.expr)


def as_expr(x):
    """``x`` as an :class:`Expr`: numbers become constants, row views become ``view`` leaves."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, RowView):
        return Expr("view", view=x)
    if isinstance(x, Frontier):
        return x.as_matrix()
    return const(x)


# ------------------------------------------------------------------------------------ P
class RowView:
    """``P = Q·A`` as a view: row ``r`` is row ``Q.vertex[r]`` of ``A`` (its extent in ``A``,
    never copied), each entry valued by :attr:`expr` (``None``: every entry 1).

    Values compose: ``P.with_weights()`` (A's edge weights), ``P.square()`` (``A∘A``),
    ``P.scale_columns(vec)`` (``vec[u]``), ``P.scale_rows(vec)`` (``vec[v]``),
    ``P.scale_edges(arr)`` (``arr[e]``), and arithmetic with numbers, expressions and other
    views. A product keeps ``P``'s entries (its support is always its own rows of ``A``); the
    sum of two views of the same rows too. Any other sum (``P + 1``, ``1/q + A_t``) is an
    :class:`Expr` -- dense, a view counting 0 off its entries -- meant as a factor:
    ``P * (1 + A_t)``. A view of *other* rows, aligned with these (e.g. the walks' previous
    vertices), is looked up entry by entry: column ``u`` in the aligned row, 0 where absent.

    Parameters
    ----------
    graph : Graph
    frontier : Frontier
    expr : Expr or None
    """

    __slots__ = ("graph", "frontier", "expr", "cutoff", "_cache")

    def __init__(self, graph, frontier, expr=None, cutoff=None):
        self.graph, self.frontier, self.expr = graph, frontier, expr
        self.cutoff = cutoff     # (entry time, per-minibatch time) of until(), or None
        self._cache = {}

    @property
    def symbolic(self):
        return self.frontier.symbolic

    def _with(self, expr):
        return RowView(self.graph, self.frontier, expr, self.cutoff)

    def _value(self):
        return Expr("const", value=1.0) if self.expr is None else self.expr

    # -------------------------------------------------------------- value transforms
    def with_weights(self):
        """Entries valued by A's edge weights (times the current values)."""
        if self.graph.weights is None:
            fail(SamplerError, "RowView.with_weights", "graph", "has no edge weights",
                 show_value=False)
        return self * Expr("weight", graph=self.graph)

    def square(self):
        """Entries squared (``A∘A`` for a view of A); unvalued stays unvalued (1² = 1)."""
        return self if self.expr is None else self._with(Expr("square", self.expr))

    def scale_columns(self, vec):
        """Entries ``(r, u)`` times ``vec[u]``; ``vec`` of shape (n,), finite, ``>= 0``."""
        return self * Expr("column", vector=_as_vector("RowView.scale_columns", "vec", vec,
                                                        self.graph.num_nodes))

    def scale_rows(self, vec):
        """Entries of row ``r`` times ``vec[Q.vertex[r]]``; ``vec`` of shape (n,)."""
        return self * Expr("row", vector=_as_vector("RowView.scale_rows", "vec", vec,
                                                     self.graph.num_nodes))

    def scale_edges(self, arr):
        """Entry with edge id ``e`` (its position in ``A.indices``) times ``arr[e]``. On a view
        of rows fetched from a larger graph (a ``DiskGraph``'s or a ``DistGraph``'s fetched
        hop: ``whole_num_edges``, ``edge_ids``), ``arr`` is the whole graph's and is read at
        the fetched entries' edge ids."""
        whole = getattr(self.graph, "whole_num_edges", None)
        vec = _as_vector("RowView.scale_edges", "arr", arr,
                         self.graph.num_edges if whole is None else whole)
        if whole is not None:
            vec = vec[self.graph.edge_ids]
            vec.flags.writeable = False
        return self * Expr("edge", vector=vec)

    def until(self, time, batch_time):
        """The entries no later than their minibatch's time: row ``r`` keeps the entries
        ``e`` with ``time[e] <= batch_time[Q.batch[r]]`` (temporal sampling: a mask on P).

        Parameters
        ----------
        time : int64 or float64, shape (nnz,)
            A time per entry of the graph, non-decreasing within every row (so the kept
            entries are a prefix of each row: the rows of a
            :class:`~spsample.graph._hetero.TimeSortedGraph`). Checked once per array.
        batch_time : int64 or float64, shape (k,)
            The time of each minibatch of the bulk (``ctx.seed_time``). Compared with
            ``time`` exactly whatever the two kinds (:func:`spsample.graph._times.cut_times`).

        Raises
        ------
        ArgumentError
            Wrong lengths, non-finite times, or times not sorted within a row.
        """
        where = "RowView.until"
        time = _sorted_entry_time(where, self.graph, time)
        bt = as_times(where, "batch_time", batch_time)    # a copy: the caller's stays as is
        bt = cut_times(where, "batch_time", bt, time.dtype)
        bt.flags.writeable = False
        return RowView(self.graph, self.frontier, self.expr, (time, bt))

    def __mul__(self, other):
        if isinstance(other, RowView) and other.frontier.same_rows(self.frontier) \
                and other.graph is self.graph:
            other = other._value()
        other = as_expr(other)
        return self._with(other if self.expr is None else Expr("mul", self.expr, other))

    __rmul__ = __mul__

    def __add__(self, other):
        if isinstance(other, RowView) and other.frontier.same_rows(self.frontier) \
                and other.graph is self.graph:
            return self._with(Expr("add", self._value(), other._value()))
        return Expr("add", as_expr(self), as_expr(other))   # dense: 0 + other off the support

    def __radd__(self, other):
        return Expr("add", as_expr(other), as_expr(self))

    def __sub__(self, other):
        return self + (-1.0) * as_expr(other)

    def __rsub__(self, other):
        return Expr("add", as_expr(other), Expr("mul", const(-1.0), as_expr(self)))

    def __neg__(self):
        return self * -1.0

    # -------------------------------------------------------------- concrete evaluation
    def extents(self):
        """``(start, degree)``: each row's first entry in ``A.indices`` and its length."""
        if self.frontier.symbolic:
            raise NotLowerable(f"the entries of the traced view {self!r}")
        if "extents" not in self._cache:
            v = block_rows(self.graph, self.frontier.vertex)
            start = self.graph.indptr[v]
            degree = self.graph.indptr[v + 1] - start
            if self.cutoff is not None:
                time, batch_time = self.cutoff
                degree = prefix_lengths(time, start, degree, batch_time[self.frontier.batch])
            self._cache["extents"] = (start, degree)
        return self._cache["extents"]

    def row_lengths(self):
        return self.extents()[1]

    @property
    def num_rows(self):
        return len(self.frontier)

    def entries(self):
        """``(row, edge_id)`` of every entry, row-major (O(entries): materialises the rows)."""
        if "entries" not in self._cache:
            start, degree = self.extents()
            row = np.repeat(np.arange(degree.size, dtype=np.int64), degree)
            first = np.cumsum(degree) - degree
            offset = np.arange(row.size, dtype=np.int64) - first[row]
            self._cache["entries"] = (row, start[row] + offset)
        return self._cache["entries"]

    def values_at(self, row, edge_id):
        """The values of the entries ``(row, edge_id)`` (float64), or ``None`` if unvalued."""
        if self.expr is None:
            return None
        env = _Env(self, row, edge_id)
        return np.asarray(evaluate(self.expr, env), dtype=np.float64) * np.ones(row.size)

    def materialize(self):
        """This view as a concrete :class:`~spsample.engine._primitives.RowMatrix`."""
        if "matrix" not in self._cache:
            start, degree = self.extents()
            indptr = np.zeros(degree.size + 1, dtype=np.int64)
            np.cumsum(degree, out=indptr[1:])
            row, eid = self.entries()
            self._cache["matrix"] = RowMatrix(indptr, self.graph.indices[eid],
                                              self.values_at(row, eid), eid)
        return self._cache["matrix"]

    # a concrete view reads like the RowMatrix it stands for
    indptr = property(lambda self: self.materialize().indptr)
    indices = property(lambda self: self.materialize().indices)
    data = property(lambda self: self.materialize().data)
    edge_id = property(lambda self: self.materialize().edge_id)
    nnz = property(lambda self: self.materialize().nnz)

    def take(self, keep_indptr, keep):
        return self.materialize().take(keep_indptr, keep)

    def __repr__(self):
        return f"RowView({self.frontier!r}, values={self.expr!r})"


def _sorted_entry_time(where, graph, time):
    """``time`` checked once per (graph, array): one finite value per entry, sorted within
    every row."""
    def check():
        arr = np.asarray(time)
        if arr.shape != (graph.num_edges,) or arr.dtype not in (np.int64, np.float64):
            fail(ArgumentError, where, "time", f"must be int64 or float64 of shape "
                 f"({graph.num_edges},)", arr.shape)
        if arr.size and not np.isfinite(arr).all():
            fail(ArgumentError, where, "time", "must hold finite (sortable) times",
                 show_value=False)
        row = np.repeat(np.arange(graph.num_nodes, dtype=np.int64), graph.degree())
        if arr.size > 1 and np.any((row[1:] == row[:-1]) & (arr[1:] < arr[:-1])):
            fail(ArgumentError, where, "time", "must be non-decreasing within every row (rows "
                 "sorted by time: HeteroGraph.time_sorted)", show_value=False)
        return arr
    memo = getattr(graph, "sorted_entry_time", None)        # GraphSource.sorted_entry_time
    return check() if memo is None else memo(time, check)


def prefix_lengths(time, start, degree, bound):
    """Per row ``r``: how many of its entries ``time[start[r] : start[r] + degree[r]]``
    (sorted) are ``<= bound[r]`` (a vectorised binary search, ``upper_bound``)."""
    lo = np.asarray(start, dtype=np.int64).copy()
    hi = lo + degree
    first = lo.copy()
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) >> 1
        le = np.zeros(lo.size, dtype=bool)
        le[active] = time[mid[active]] <= bound[active]
        lo = np.where(active & le, mid + 1, lo)
        hi = np.where(active & ~le, mid, hi)
    return lo - first


def gather(graph, Q):
    """``P = Q·A``: the rows of ``A`` selected by ``Q``, as a view (every entry valued 1).

    Parameters
    ----------
    graph : Graph
    Q : Frontier

    Returns
    -------
    RowView with ``len(Q)`` rows.
    """
    if not isinstance(Q, Frontier):
        fail(ArgumentTypeError, "gather", "Q", "must be a Frontier", type(Q))
    if Q.kind == "arrays" and not Q.symbolic and len(Q) and Q.vertex.max() >= graph.num_nodes:
        fail(ArgumentError, "gather", "Q", f"selects a vertex >= num_nodes ({graph.num_nodes})",
             int(Q.vertex.max()))
    return RowView(graph, Q)


class _Env:
    """Where an expression is evaluated: entries ``(row, edge_id)`` of a concrete view."""

    def __init__(self, view, row, edge_id):
        self.view, self.row, self.edge_id = view, row, edge_id
        self.column = view.graph.indices[edge_id]
        self.vertex = view.frontier.vertex[row]


def block_rows(graph, vertex):
    """The rows of ``vertex`` in ``graph``: the vertex ids themselves, or, for a block of rows
    of a larger graph (a distributed owner's rows, an on-disk window), ``graph.local_rows``."""
    local_rows = getattr(graph, "local_rows", None)
    return vertex if local_rows is None else local_rows(vertex)


def block_edges(graph, position):
    """The global edge ids of entries of ``graph`` (positions in its ``indices``): the same
    numbers, or, for a block of rows of a larger graph, ``graph.global_edges``."""
    global_edges = getattr(graph, "global_edges", None)
    return position if global_edges is None else global_edges(position)


def evaluate(expr, env):
    """NumPy value of ``expr`` at the entries of ``env`` (float64 array or scalar)."""
    op = expr.op
    if op == "const":
        return np.float64(expr.value)
    if op == "weight":
        return expr.graph.weights[env.edge_id]
    if op == "column":
        return expr.vector[env.column]
    if op == "row":
        return expr.vector[env.vertex]
    if op == "edge":
        return expr.vector[block_edges(env.view.graph, env.edge_id)]
    if op == "mul":
        return evaluate(expr.args[0], env) * evaluate(expr.args[1], env)
    if op == "add":
        return evaluate(expr.args[0], env) + evaluate(expr.args[1], env)
    if op == "square":
        x = evaluate(expr.args[0], env)
        return x * x
    if op == "indicator":
        t = _aligned(expr.frontier, env).vertex[env.row]
        return (env.column == t).astype(np.float64)
    if op == "view":
        return _view_value(expr.view, env)
    raise SamplerError(f"unknown value expression {op!r}")


def _aligned(frontier, env):
    base = env.view.frontier
    if not frontier.aligned_with(base):
        raise SamplerError(f"values of {env.view!r} refer to {frontier!r}, whose rows are not "
                           "aligned with the view's rows")
    return frontier


def _view_value(view, env):
    """The value of ``view`` at the entries of ``env``: the entry's own value for a view of the
    same rows and graph, else a lookup of the column in the aligned row (0 where absent)."""
    base = env.view
    if view.frontier.same_rows(base.frontier) and view.graph is base.graph:
        return evaluate(view._value(), env)
    _aligned(view.frontier, env)
    t = view.frontier.vertex[env.row]
    found, where = lookup(view.graph, t, env.column)
    inner = _Env.__new__(_Env)
    inner.view, inner.row, inner.edge_id = view, env.row, np.where(found, where, 0)
    inner.column, inner.vertex = env.column, t
    value = evaluate(view._value(), inner) * np.ones(found.size)
    return np.where(found, value, 0.0)


def lookup(graph, rows, columns):
    """Whether column ``columns[i]`` is in row ``rows[i]`` of ``graph``, and its edge id.

    Rows are sorted, so this is a binary search per pair (as in the native program).

    Returns
    -------
    found : bool, shape (m,)
    edge_id : int64, shape (m,) (meaningful where found)
    """
    lo = graph.indptr[rows].astype(np.int64)
    hi = graph.indptr[rows + 1].astype(np.int64)
    # vectorised binary search: first position in [lo, hi) with indices >= column
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) >> 1
        less = np.zeros(lo.size, dtype=bool)
        less[active] = graph.indices[mid[active]] < columns[active]
        lo = np.where(active & less, mid + 1, lo)
        hi = np.where(active & ~less, mid, hi)
    end = graph.indptr[rows + 1]
    found = lo < end
    found[found] = graph.indices[lo[found]] == columns[found]
    return found, lo


# ------------------------------------------------------------------------------------ layer-wise P
class ColumnSums:
    """``Q_b·f(A)``: for each minibatch, the sums of a view's values per column, taken in
    storage order (rows in frontier order, entries in row order); rows = minibatches.

    Attributes
    ----------
    view : RowView
        The gathered rows (``f(A)`` their values; unvalued: each entry counts 1).
    matrix : RowMatrix or None
        Concrete sums (k rows, columns ascending, ``data`` the sums > 0); ``None`` when traced.
    """

    def __init__(self, view, num_batches):
        self.view = view
        self.num_batches = num_batches
        self.matrix = None
        if not view.symbolic:
            self.matrix = column_accumulate(view.materialize(), view.frontier.batch, num_batches,
                                            square=False)

    @property
    def symbolic(self):
        return self.view.symbolic

    def value(self, batch, column):
        """``P[batch, column]`` for arrays of pairs present in the sums."""
        m, n = self.matrix, self.view.graph.num_nodes
        if "keys" not in self.__dict__:
            row = np.repeat(np.arange(m.num_rows, dtype=np.int64), m.row_lengths())
            self.keys = row * n + m.indices
        return m.data[np.searchsorted(self.keys, batch * n + column)]


def column_sums(view, ctx):
    """``P = Q_b·f(A)`` of a view (layer-wise importance): see :class:`ColumnSums`."""
    if not isinstance(view, RowView):
        fail(ArgumentTypeError, "column_sums", "view", "must be a RowView (prim.gather(...))",
             type(view))
    check_values("column_sums", "view", view)
    return ColumnSums(view, int(ctx.batch_ids.size))


class GlobalColumns:
    """One column distribution for every minibatch (FastGCN's ``q[u] ∝ ‖A[:,u]‖²``).

    Attributes
    ----------
    q : float64, shape (n,)
        Column weights, finite and ``>= 0``.
    cumulative : float64, shape (n,)
        Their serial prefix sums.
    """

    symbolic = False

    def __init__(self, q, cumulative=None):
        self.q, self.cumulative = _checked_columns("global_columns", q, cumulative)

    def value(self, batch, column):
        return self.q[column]


def global_columns(q, cumulative=None):
    """A batch-independent column distribution (see :class:`GlobalColumns`).

    Parameters
    ----------
    q : array_like of real numbers, shape (n,)
        Column weights, finite and ``>= 0``.
    cumulative : array_like, shape (n,), optional
        Their prefix sums (default ``numpy.cumsum(q)``): finite and non-decreasing.

    Raises
    ------
    ArgumentTypeError, ArgumentError
        Naming ``q`` or ``cumulative``: not real numbers, not 1-D, different lengths, a value
        that is not finite or (``q``) negative, or (``cumulative``) decreasing.
    """
    return GlobalColumns(q, cumulative)


#: ``(id(q), id(cumulative))`` of immutable pairs already checked, with weak references.
_CHECKED_COLUMNS = {}


def _checked_columns(where, q, cumulative):
    """``(q, cumulative)`` as float64 arrays, checked (once per pair of immutable arrays: the
    graphs' cached FastGCN weights come back every hop)."""
    import weakref

    key = (id(q), id(cumulative))
    seen = _CHECKED_COLUMNS.get(key)
    if seen is not None and seen[0]() is q and seen[1]() is cumulative:
        return q, cumulative
    q_arr = _real_vector(where, "q", q)
    if q_arr.size and (not np.isfinite(q_arr).all() or q_arr.min() < 0):
        fail(ArgumentError, where, "q", "must hold finite values >= 0", show_value=False)
    if cumulative is None:
        with np.errstate(over="ignore"):
            c_arr = np.cumsum(q_arr)
        if c_arr.size and not np.isfinite(c_arr[-1]):
            fail(ArgumentError, where, "q", "must have a finite sum", float(c_arr[-1]))
        return q_arr, c_arr
    c_arr = _real_vector(where, "cumulative", cumulative)
    if c_arr.shape != q_arr.shape:
        fail(ArgumentError, where, "cumulative", f"must have the shape of q {q_arr.shape}",
             c_arr.shape)
    if c_arr.size and (not np.isfinite(c_arr).all() or (c_arr[1:] < c_arr[:-1]).any()):
        fail(ArgumentError, where, "cumulative", "must be finite and non-decreasing (the "
             "prefix sums of q)", show_value=False)
    if _immutable(q) and _immutable(cumulative):
        forget = (lambda _ref, key=key: _CHECKED_COLUMNS.pop(key, None))
        _CHECKED_COLUMNS[key] = (weakref.ref(q, forget), weakref.ref(cumulative, forget))
    return q_arr, c_arr


def _real_vector(where, name, value):
    """``value`` as a 1-D float64 array (no copy when it already is one)."""
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        fail(ArgumentTypeError, where, name, "must hold real numbers", show_value=False)
    if arr.ndim != 1:
        fail(ArgumentError, where, name, "must be 1-dimensional", arr.shape)
    return arr.astype(np.float64, copy=False)


def _immutable(arr):
    """Whether ``arr`` is a float64 array whose values cannot change (a frozen_array)."""
    return (isinstance(arr, np.ndarray) and arr.dtype == np.float64 and arr.ndim == 1
            and not arr.flags.writeable and isinstance(arr.base, bytes))


# ------------------------------------------------------------------------------------ streams
class Streams:
    """Which RNG stream each row of a matrix draws from.

    The counter of word ``i`` of a row's stream is ``(i // 4, key word, hop_word, batch)``,
    word ``i % 4`` of its Philox block (:mod:`spsample._rng`). The key word (counter word 1)
    is, per constructor: the row's vertex (:meth:`per_vertex`, node-wise), the row's stable id
    (:meth:`per_row`, walks: a walk keeps its stream whatever the others do), or the *column*
    vertex of each entry (:meth:`per_column`: one variate per (minibatch, neighbour) shared by
    every row of the minibatch, as LABOR needs; word 0 of stream ``(u, hop_word, batch)``).

    ``Streams(vertex, batch, hop_word, key)`` with arrays gives the streams directly.

    Attributes
    ----------
    vertex : int64, shape (r,)
        Counter word 1 of each row.
    batch : int64, shape (r,)
        Counter word 3 of each row (its global minibatch id).
    hop_word : int
        Counter word 2, :func:`spsample._rng.hop_word` of (epoch, hop).
    key : (int, int)
        :func:`spsample._rng.split_seed` of the seed.
    keyed_by : str
        ``"arrays"``, ``"vertex"``, ``"row"`` or ``"column"``.
    """

    def __init__(self, vertex, batch, hop_word, key, *, keyed_by="arrays", frontier=None):
        self.keyed_by, self.frontier = keyed_by, frontier
        self.hop_word, self.key = int(hop_word), (int(key[0]), int(key[1]))
        self._vertex, self._batch, self._row_batch = vertex, batch, None

    @property
    def symbolic(self):
        return self.frontier is not None and self.frontier.symbolic

    @property
    def vertex(self):
        if self.keyed_by == "column":
            raise SamplerError("Streams.per_column keys each entry by its column: there is no "
                               "per-row vertex word")
        if self._vertex is None:
            f = self.frontier
            self._vertex = f.vertex if self.keyed_by == "vertex" else f.row_id
        return self._vertex

    @property
    def batch(self):
        """Counter word 3 of each row: its global minibatch id."""
        if self.keyed_by != "arrays" and self._row_batch is None:
            self._row_batch = self._batch[self.frontier.batch]
        return self._batch if self.keyed_by == "arrays" else self._row_batch

    @classmethod
    def per_vertex(cls, Q, ctx):
        """One stream per (minibatch, row vertex): node-wise sampling's streams."""
        return cls(None, ctx.batch_ids, ctx.hop_word, ctx.key, keyed_by="vertex", frontier=Q)

    @classmethod
    def per_row(cls, Q, ctx):
        """One stream per (minibatch, row id): e.g. one per walk, keyed by the seed it left."""
        return cls(None, ctx.batch_ids, ctx.hop_word, ctx.key, keyed_by="row", frontier=Q)

    @classmethod
    def per_column(cls, Q, ctx):
        """One variate per (minibatch, column vertex), shared by the minibatch's rows."""
        return cls(None, ctx.batch_ids, ctx.hop_word, ctx.key, keyed_by="column", frontier=Q)

    def words(self, rows, index):
        """Word ``index[i]`` of the stream of row ``rows[i]``, uint64, shape like ``rows``."""
        return _rng.stream_words(index, self.vertex[rows], self.hop_word, self.batch[rows],
                                 self.key)

    def __repr__(self):
        return f"Streams(keyed_by={self.keyed_by!r})"


# ------------------------------------------------------------------------------------ S
class RowSelection:
    """``S``: at most ``fanout`` entries of each row of a :class:`RowView` (node-wise).

    Rules (``d`` = row length, ``s`` = the row's fanout, ``-1`` = all) are those of
    :func:`spsample.engine._primitives.sample_rows`, plus ``method="rejection"`` for weighted draws
    with replacement when values are bounded by ``bound``: draw ``i``, attempt ``a`` takes
    words ``2(A i + a)`` and ``2(A i + a) + 1`` (``A`` = :data:`REJECTION_ATTEMPTS`), proposes
    position ``uniform_int(w0, d)`` and accepts it when ``open_unit(w1) * bound < value``;
    after ``A`` rejections the draw falls back to the exact key rule on words
    ``2 A s + i d + p``. The distribution is that of weighted draws with replacement; the cost
    is O(bound / mean value) per draw instead of O(d).

    ``method="alias"`` draws by the alias table of the row's values
    (:func:`spsample.graph._weights.alias_tables`, built once per graph for the graph's own
    weights): draw (or attempt) ``a`` reads words ``2a`` and ``2a + 1``, takes
    ``i = uniform_int(w_2a, d)`` and keeps it when ``w_2a+1 < threshold[i]``, else ``alias[i]``.
    A row of ``e`` eligible entries (value ``> 0``) keeps all of them when ``s = -1``, or
    without replacement when ``e <= s``. With replacement it makes ``s`` draws. Without, a row
    whose largest value is more than :data:`ALIAS_SHARE_MAX` ``/ s`` of its sum (the table's
    ``share``) takes the exact keys' sample (words ``p``, as ``method="keys"``); any other row
    makes attempts, each keeping its entry unless already kept, until ``s`` are kept or ``4s``
    attempts (:data:`ALIAS_ATTEMPTS`) were made; then the exact keys on words ``2 A s + p``
    rank the eligible entries not kept, and the smallest fill the row. Each kept entry comes up
    with probability ∝ its value among those not yet kept, so the sample has the law of the
    keys' (successive sampling), at O(1) reads per draw instead of O(d) per row.
    """

    def __init__(self, P, fanout, streams, *, replace=False, weighted=False, method="keys",
                 bound=None, fanout_vector=None):
        self.P, self.fanout, self.streams = P, fanout, streams
        self.replace, self.weighted, self.method = replace, weighted, method
        self.bound, self.fanout_vector = bound, fanout_vector


class ThresholdSelection:
    """``S`` by per-column variates (LABOR-0): entry ``u`` of a row of length ``d`` is kept iff
    ``d <= s`` or ``w_u * d < s * 2**32``, ``w_u`` = word 0 of stream ``(u, hop_word, batch)``
    (i.e. ``U_u < s / d`` for the minibatch's shared uniform ``U_u``)."""

    def __init__(self, P, fanout, streams):
        self.P, self.fanout, self.streams = P, fanout, streams


class ColumnSelection:
    """``S``: ``fanout`` distinct columns per minibatch with probability ∝ ``P`` (LADIES):
    unvalued views by draws of entries, valued ones by Efraimidis–Spirakis keys."""

    def __init__(self, P, fanout, ctx):
        self.P, self.fanout, self.ctx = P, fanout, ctx


class GlobalSelection:
    """``S``: ``fanout`` i.i.d. draws per minibatch from a :class:`GlobalColumns` (FastGCN)."""

    def __init__(self, P, fanout, ctx):
        self.P, self.fanout, self.ctx = P, fanout, ctx
