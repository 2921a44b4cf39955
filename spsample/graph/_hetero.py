"""Heterogeneous graphs: several node types, one CSR block per relation.

A :class:`HeteroGraph` numbers every vertex in one global id space: node types sorted by name,
type ``t`` holding ids ``offsets[t] .. offsets[t] + num_nodes[t] - 1``. A relation
``(src_type, name, dst_type)`` is a canonical CSR block with the conventions of
:class:`~spsample.Graph` (row = destination, listing the sources it aggregates from; columns
sorted, duplicates merged). Each block is stored as a square :class:`~spsample.Graph` over the
global ids whose only non-empty rows are those of the destination type, so every kernel and
every lazy view of the engine works on a relation unchanged, and the per-type (bipartite) form
is a slice of it (:meth:`HeteroGraph.csr`).

Optional per-relation edge times and per-type node times make the graph temporal (see
:func:`spsample.sample`'s ``seed_time``). Integer times are kept as int64 and real times as
float64 (:mod:`spsample.graph._times`), so integer timestamps of any size (nanoseconds included)
stay exact through storage, sorting and every comparison; repeated ``(src, dst)`` pairs of a
relation are merged into one edge that keeps the *earliest* time (the edge exists from its first
event on) and the sum of the weights.
"""

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, GraphError
from ._graph import MAX_NODES, Graph, frozen_array
from .._validate import as_float_array, as_index_array, as_int, check_memory, fail
from ._times import as_times
from .._optional import import_pyg

__all__ = ["HeteroGraph", "HeteroSchema", "TimeSortedGraph", "merge_entries",
           "time_order", "entry_times", "check_time", "RELATION_BLOCK_BYTES",
           "RELATION_FIXED_BYTES"]

#: Bytes per vertex each relation's block takes whatever its edges (its int64 row pointers
#: over all the graph's vertices, and their transient copy while the block is built), and
#: bytes per relation besides (its Graph and arrays as Python objects: measured 1.4 KiB).
RELATION_BLOCK_BYTES = 16
RELATION_FIXED_BYTES = 2048


class TimeSortedGraph(Graph):
    """A relation block whose rows are sorted by entry time (internal, for temporal sampling).

    Same rows and entries as its canonical graph, each row's entries reordered by
    ``(time, column)``, so the entries with time ``<= T`` are a prefix of the row.

    Attributes
    ----------
    entry_time : int64 or float64, shape (nnz,)
        Non-decreasing within every row (the kind of the relation's times).
    canonical_edge : int64, shape (nnz,)
        The position of each entry in the canonical graph's ``indices`` (its edge id).
    """

    __slots__ = ("entry_time", "canonical_edge")

    def __init__(self, graph, entry_time):
        order = time_order(graph.indptr, graph.indices, entry_time)
        weights = None if graph.weights is None else graph.weights[order]
        super().__init__(graph.indptr, graph.indices[order], weights)
        self.entry_time = frozen_array(np.asarray(entry_time)[order])
        self.canonical_edge = frozen_array(order.astype(np.int64))

    def __reduce__(self):
        raise TypeError("TimeSortedGraph is internal; pickle its HeteroGraph instead")


def time_order(indptr, indices, entry_time):
    """The order that sorts each row of a CSR by ``(entry time, column)``: int64, shape
    (nnz,), a permutation of the entries that keeps every row in place (what
    :class:`TimeSortedGraph` and the sharded graph's time-sorted blocks apply)."""
    row = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    return np.lexsort((indices, entry_time, row))


def entry_times(edge_time, source_time, sources):
    """The time of each entry of a relation's rows: its edge times when the relation has them,
    else the times of its sources (node times of the source type), else ``None``.

    Parameters
    ----------
    edge_time : int64 or float64, shape (nnz,), or None
    source_time : int64 or float64, shape (num_nodes[src],), or None
    sources : int64, shape (nnz,)
        The entries' source ids, local to the source type.

    Returns
    -------
    int64 or float64, shape (nnz,), or None
    """
    if edge_time is not None or source_time is None:
        return edge_time
    return source_time[sources]


def merge_entries(row, column, weights, time):
    """A relation's entries sorted by ``(row, column)``, each repeated pair merged into one:
    the sum of its weights (in time order) and its earliest time.

    Parameters
    ----------
    row, column : int64, shape (E,)
    weights : float64, shape (E,), or None
    time : int64 or float64, shape (E,), or None

    Returns
    -------
    (row, column, weights, time) : the merged entries (weights and time ``None`` when given
    so).
    """
    if _merged_already(row, column):      # as bincount sums them below: -0.0 becomes 0.0
        return row, column, None if weights is None else weights + 0.0, time
    order = np.lexsort((column, row) if time is None else (time, column, row))
    row, column = row[order], column[order]
    keep = np.ones(row.size, dtype=bool)
    keep[1:] = (column[1:] != column[:-1]) | (row[1:] != row[:-1])
    w = None
    if weights is not None:
        group = np.cumsum(keep) - 1
        w = np.bincount(group, weights=weights[order], minlength=int(keep.sum()))
    t = None if time is None else time[order][keep]      # the earliest of each pair
    return row[keep], column[keep], w, t


def _merged_already(row, column):
    """Whether entries are sorted by ``(row, column)`` without a repeated pair."""
    if row.size < 2:
        return True
    same_row = row[1:] == row[:-1]
    return bool(np.all(row[1:] >= row[:-1]) and not np.any(same_row & (column[1:] <= column[:-1])))


class HeteroSchema:
    """The node types and relations of a heterogeneous graph, and its global id layout: node
    types sorted by name, type ``t`` holding the ids ``offsets[t] .. offsets[t] +
    num_nodes[t] - 1``. What :class:`HeteroGraph` and the distributed
    :class:`~spsample.distributed.DistHeteroGraph` share (the relations' blocks are theirs).

    Parameters
    ----------
    num_nodes : dict of str to int
    relations : iterable of (str, str, str)
    """

    __slots__ = ("_types", "_counts", "_offsets", "_relations")

    def __init__(self, num_nodes, relations):
        self._types = tuple(sorted(num_nodes))
        self._counts = {t: int(num_nodes[t]) for t in self._types}
        offsets, total = {}, 0
        for t in self._types:
            offsets[t] = total
            total += self._counts[t]
        self._offsets = offsets
        self._relations = tuple(sorted(relations))

    @property
    def node_types(self):
        return self._types

    @property
    def relations(self):
        return self._relations

    edge_types = relations

    @property
    def num_nodes(self):
        return dict(self._counts)

    @property
    def offsets(self):
        return dict(self._offsets)

    @property
    def total_nodes(self):
        return sum(self._counts.values())

    # ------------------------------------------------------------------ lookups
    def node_type(self, name, *, where="HeteroGraph", argname="node_type"):
        """``name`` if it is a node type, else an :class:`ArgumentError` naming it."""
        if not isinstance(name, str) or name not in self._counts:
            fail(ArgumentError, where, argname, f"is not a node type of the graph "
                 f"(types: {list(self._types)})", name)
        return name

    def relation(self, key, *, where="HeteroGraph", argname="relation"):
        """The canonical ``(src, name, dst)`` for ``key``: a triple of the graph, or a relation
        name that is unique among the relations.

        Raises
        ------
        ArgumentError
            ``key`` names no relation (or an ambiguous name), naming ``argname``.
        """
        if isinstance(key, list):
            key = tuple(key)
        if isinstance(key, tuple) and key in self._relations:
            return key
        if isinstance(key, str):
            found = [r for r in self._relations if r[1] == key]
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                fail(ArgumentError, where, argname, f"is the name of {len(found)} relations "
                     f"({found}); give the (src, name, dst) triple", key)
        fail(ArgumentError, where, argname, "is not a relation of the graph (relations: "
             f"{list(self._relations)})", key)

    def type_of(self, global_ids):
        """Index into :attr:`node_types` of each global id (int64 array)."""
        ids = np.asarray(global_ids, dtype=np.int64)
        out = np.zeros(ids.shape, dtype=np.int64)
        for t in self._types[1:]:                 # few types: one comparison pass each
            out += ids >= self._offsets[t]
        return out


class HeteroGraph(HeteroSchema):
    """A graph with several node types and relations, each relation a canonical CSR block.

    Build it with :meth:`from_edge_index` (or :meth:`from_pyg`); the constructor is internal.

    Attributes
    ----------
    node_types : tuple of str
        Sorted by name; this order lays out the global ids.
    relations : tuple of (str, str, str)
        ``(src_type, name, dst_type)``, sorted; messages flow ``src -> dst``.
    num_nodes : dict of str to int
    offsets : dict of str to int
        Global id of each type's vertex 0.
    total_nodes : int
        Vertices of all types.

    Examples
    --------
    Papers cite papers, authors write papers::

        >>> import spsample
        >>> g = spsample.HeteroGraph.from_edge_index({
        ...     ("paper", "cites", "paper"): ([0, 1], [1, 2]),
        ...     ("author", "writes", "paper"): ([0, 0, 1], [0, 1, 2])},
        ...     num_nodes={"paper": 3, "author": 2})
        >>> g.node_types, g.offsets
        (('author', 'paper'), {'author': 0, 'paper': 2})
        >>> indptr, indices, _ = g.csr(("author", "writes", "paper"))
        >>> indptr.tolist(), indices.tolist()     # paper 2 is written by author 1
        ([0, 1, 2, 3], [0, 0, 1])
    """

    __slots__ = ("_blocks", "_edge_time", "_node_time", "_cache")

    def __init__(self, num_nodes, blocks, edge_time=None, node_time=None):
        super().__init__(num_nodes, blocks)
        self._blocks = {r: blocks[r] for r in self._relations}
        self._edge_time = {r: frozen_array(t) for r, t in (edge_time or {}).items()
                           if t is not None}
        self._node_time = {t: frozen_array(v) for t, v in (node_time or {}).items()
                           if v is not None}
        self._cache = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edge_index(cls, edge_index, *, num_nodes=None, weights=None, edge_time=None,
                        node_time=None):
        """Build a heterogeneous graph from per-relation edge lists (PyG's convention).

        Parameters
        ----------
        edge_index : dict of (str, str, str) to (src, dst) or array of shape (2, E)
            Per relation ``(src_type, name, dst_type)``: ids local to each type; edge
            ``(src[e], dst[e])`` puts ``src[e]`` into row ``dst[e]`` of the relation.
        num_nodes : dict of str to int, optional
            Vertices per type; defaults to the largest id + 1 seen for the type. Types listed
            here but in no relation are kept (isolated vertices).
        weights : dict of relation to array of shape (E,), optional
            Non-negative finite edge weights (summed over repeated pairs).
        edge_time : dict of relation to array of shape (E,), optional
            Edge timestamps; a repeated pair keeps the earliest. Integers (any width) are
            kept exactly as int64, real numbers (finite) as float64.
        node_time : dict of str to array of shape (num_nodes[type],), optional
            Node timestamps, integers or finite real numbers as ``edge_time``.

        Raises
        ------
        GraphError
            Naming the argument: a relation key that is not a triple of non-empty strings,
            ids out of range, arrays of mismatched lengths, non-finite times, negative weights.
        ArgumentTypeError
            ``edge_index`` is not a dict.
        """
        where = "HeteroGraph.from_edge_index"
        if not isinstance(edge_index, dict) or not edge_index:
            fail(ArgumentTypeError, where, "edge_index", "must be a non-empty dict "
                 "{(src_type, name, dst_type): (src, dst)}", type(edge_index))
        pairs = {_check_relation_key(where, "edge_index", r): _pair(where, r, v)
                 for r, v in edge_index.items()}
        counts = _node_counts(where, pairs, num_nodes)
        _check_block_memory(where, pairs, counts)
        weights = _per_relation(where, "weights", weights, pairs)
        edge_time = _per_relation(where, "edge_time", edge_time, pairs)
        blocks, times = {}, {}
        for rel, (src, dst) in pairs.items():
            w = None if weights.get(rel) is None else _check_weights(where, rel, weights[rel],
                                                                      src.size)
            t = None if edge_time.get(rel) is None else check_time(
                where, f"edge_time[{rel!r}]", edge_time[rel], src.size)
            blocks[rel], times[rel] = _block(counts, rel, src, dst, w, t)
        node_time = _check_node_time(where, node_time, counts)
        return cls(counts, blocks, times, node_time)

    @classmethod
    def from_pyg(cls, data):
        """Build from a ``torch_geometric.data.HeteroData`` (needs PyG).

        Reads every node type's ``num_nodes`` and optional ``time``, and every edge type's
        ``edge_index`` (messages ``src -> dst``) with optional ``edge_weight`` and ``time``.

        Raises
        ------
        MissingDependencyError
            PyG is not installed.
        ArgumentTypeError
            ``data`` is not a ``HeteroData``.
        """

        pyg = import_pyg("HeteroGraph.from_pyg")
        where = "HeteroGraph.from_pyg"
        if not isinstance(data, pyg.data.HeteroData):
            fail(ArgumentTypeError, where, "data", "must be a torch_geometric HeteroData",
                 type(data))
        num_nodes = {t: int(data[t].num_nodes) for t in data.node_types}
        edges, weights, times = {}, {}, {}
        for rel in data.edge_types:
            store = data[rel]
            ei = store.edge_index.detach().cpu().numpy()
            edges[rel] = (ei[0], ei[1])
            if getattr(store, "edge_weight", None) is not None:
                weights[rel] = store.edge_weight.detach().cpu().numpy()
            if getattr(store, "time", None) is not None:
                times[rel] = store.time.detach().cpu().numpy()
        node_time = {t: data[t].time.detach().cpu().numpy() for t in data.node_types
                     if getattr(data[t], "time", None) is not None}
        return cls.from_edge_index(edges, num_nodes=num_nodes, weights=weights or None,
                                   edge_time=times or None, node_time=node_time or None)

    @property
    def num_edges(self):
        """Stored entries per relation (dict)."""
        return {r: self._blocks[r].num_edges for r in self._relations}

    @property
    def is_temporal(self):
        """Whether any relation has edge times or any type has node times."""
        return bool(self._edge_time or self._node_time)

    def edge_time(self, relation):
        """The relation's edge times (int64 or float64 as given, aligned with its CSR entries)
        or ``None``."""
        return self._edge_time.get(self.relation(relation))

    def node_time(self, node_type):
        """The type's node times (int64 or float64 as given) or ``None``."""
        return self._node_time.get(self.node_type(node_type))

    # ------------------------------------------------------------------ lookups
    def csr(self, relation):
        """The relation as a bipartite CSR: ``(indptr, indices, weights)``.

        Returns
        -------
        indptr : int64, shape (num_nodes[dst] + 1,)
        indices : int64, shape (nnz,)
            Source ids local to the source type, sorted within rows.
        weights : float64, shape (nnz,), or None
        """
        rel = self.relation(relation, where="HeteroGraph.csr")
        g = self._blocks[rel]
        lo = self._offsets[rel[2]]
        indptr = g.indptr[lo:lo + self._counts[rel[2]] + 1]
        return indptr, g.indices - self._offsets[rel[0]], g.weights

    def relation_graph(self, relation):
        """The relation as a square :class:`~spsample.Graph` over the global ids (rows of other
        types empty): what the sampling engine runs on."""
        return self._blocks[self.relation(relation, where="HeteroGraph.relation_graph")]

    def time_sorted(self, relation):
        """The relation's :class:`TimeSortedGraph` (rows by entry time) or ``None`` when the
        relation has no time: its edge times, else its source type's node times."""
        rel = self.relation(relation, where="HeteroGraph.time_sorted")

        def build():
            g = self._blocks[rel]
            t = entry_times(self._edge_time.get(rel), self._node_time.get(rel[0]),
                            g.indices - self._offsets[rel[0]])
            return None if t is None else TimeSortedGraph(g, t)
        key = ("time_sorted", rel)
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def to_homogeneous(self):
        """Every relation in one :class:`~spsample.Graph` over the global ids (weights summed
        where relations share a pair)."""
        src, dst, w = [], [], []
        weighted = any(self._blocks[r].weights is not None for r in self._relations)
        for r in self._relations:
            s, d = self._blocks[r].edge_index()
            src.append(s)
            dst.append(d)
            if weighted:
                g = self._blocks[r]
                w.append(np.ones(g.num_edges) if g.weights is None else g.weights)
        return Graph.from_edge_index(np.concatenate(src), np.concatenate(dst),
                                     num_nodes=self.total_nodes,
                                     weights=np.concatenate(w) if weighted else None)

    def degree_stats(self):
        """``(total entries, largest row)`` over every relation (for output estimates)."""
        def compute():
            nnz = sum(g.num_edges for g in self._blocks.values())
            top = max(int(np.diff(g.indptr).max(initial=0)) for g in self._blocks.values())
            return nnz, top
        if "degree_stats" not in self._cache:
            self._cache["degree_stats"] = compute()
        return self._cache["degree_stats"]

    def __eq__(self, other):
        if not isinstance(other, HeteroGraph):
            return NotImplemented
        if self._counts != other._counts or self._relations != other._relations:
            return False
        same = all(self._blocks[r] == other._blocks[r] for r in self._relations)
        times = set(self._edge_time) == set(other._edge_time) and all(
            np.array_equal(self._edge_time[r], other._edge_time[r]) for r in self._edge_time)
        nodes = set(self._node_time) == set(other._node_time) and all(
            np.array_equal(self._node_time[t], other._node_time[t]) for t in self._node_time)
        return same and times and nodes

    __hash__ = None

    def __reduce__(self):
        return (HeteroGraph, (self._counts, self._blocks, self._edge_time, self._node_time))

    def __repr__(self):
        edges = sum(g.num_edges for g in self._blocks.values())
        return (f"HeteroGraph(node_types={list(self._types)}, relations={len(self._relations)}, "
                f"total_nodes={self.total_nodes}, num_edges={edges}"
                f"{', temporal' if self.is_temporal else ''})")


# ---------------------------------------------------------------------- construction helpers
def _check_relation_key(where, argname, rel):
    if isinstance(rel, list):
        rel = tuple(rel)
    if not (isinstance(rel, tuple) and len(rel) == 3
            and all(isinstance(x, str) and x for x in rel)):
        fail(GraphError, where, argname, "keys must be (src_type, name, dst_type) triples of "
             "non-empty strings", rel)
    for x in rel:
        check_name(where, argname, x)
    return rel


def check_name(where, argname, name):
    """A type or relation name must be valid Unicode (UTF-8 encodable: no lone surrogate such
    as ``"\\udc80"``), as files store it: refused here, not only when the graph is saved."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        fail(GraphError, where, argname, "holds a name that is not valid Unicode text (a lone "
             "surrogate): names must be encodable as UTF-8", name)


def _check_block_memory(where, pairs, counts):
    """Each relation's block has row pointers over all the vertices: refuse, before any is
    built, relations x vertices that cannot fit (thousands of relations over millions of
    vertices need gigabytes whatever their edges)."""
    n = sum(counts.values())
    edges = sum(src.size for src, _ in pairs.values())
    check_memory(where, "edge_index", len(pairs) * ((n + 1) * RELATION_BLOCK_BYTES
                                                    + RELATION_FIXED_BYTES) + 32 * edges,
                 f"{len(pairs):,d} relation blocks over {n:,d} vertices (row pointers over "
                 "every vertex per relation)", "use fewer relations or node types")


def _pair(where, rel, value):
    """``(src, dst)`` int64 arrays from a pair or a (2, E) array."""
    name = f"edge_index[{rel!r}]"
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray) and value.ndim == 2:
        if value.shape[0] != 2:
            fail(GraphError, where, name, "must have shape (2, E)", value.shape)
        value = (value[0], value[1])
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        fail(GraphError, where, name, "must be (src, dst) or an array of shape (2, E)",
             type(value))
    src = as_index_array(where, f"{name}[0]", value[0], error_cls=GraphError)
    dst = as_index_array(where, f"{name}[1]", value[1], error_cls=GraphError)
    if src.size != dst.size:
        fail(GraphError, where, f"{name}[1]", f"must have the length of src ({src.size})",
             dst.size)
    for arr, part in ((src, 0), (dst, 1)):
        if arr.size and arr.min() < 0:
            fail(GraphError, where, f"{name}[{part}]", "must hold non-negative ids",
                 int(arr.min()))
    return src, dst


def _node_counts(where, pairs, num_nodes):
    seen = {}
    for (s, _, d), (src, dst) in pairs.items():
        seen[s] = max(seen.get(s, 0), int(src.max(initial=-1)) + 1)
        seen[d] = max(seen.get(d, 0), int(dst.max(initial=-1)) + 1)
    if num_nodes is None:
        num_nodes = {}
    if not isinstance(num_nodes, dict):
        fail(ArgumentTypeError, where, "num_nodes", "must be a dict {node_type: count}",
             type(num_nodes))
    counts = {}
    for t in set(seen) | set(num_nodes):
        if not isinstance(t, str) or not t:
            fail(GraphError, where, "num_nodes", "keys must be non-empty strings", t)
        check_name(where, "num_nodes", t)
        if t in num_nodes:
            n = as_int(where, f"num_nodes[{t!r}]", num_nodes[t], minimum=0,
                       error_cls=GraphError)
            if n < seen.get(t, 0):
                fail(GraphError, where, f"num_nodes[{t!r}]", "is smaller than the largest id "
                     f"+ 1 of the type in edge_index ({seen[t]})", n)
        else:
            n = seen[t]
        counts[t] = n
    if sum(counts.values()) == 0:
        fail(GraphError, where, "num_nodes", "gives no vertex at all", num_nodes)
    if sum(counts.values()) > MAX_NODES:
        fail(GraphError, where, "num_nodes", f"sum to more than {MAX_NODES}", counts)
    return counts


def _per_relation(where, name, value, pairs):
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail(ArgumentTypeError, where, name, "must be a dict {relation: array}", type(value))
    out = {}
    for rel, arr in value.items():
        key = _check_relation_key(where, name, rel)
        if key not in pairs:
            fail(ArgumentError, where, name, "names a relation that edge_index does not have",
                 rel)
        out[key] = arr.detach().cpu().numpy() if hasattr(arr, "detach") else arr
    return out


def _check_weights(where, rel, weights, size):
    w = as_float_array(where, f"weights[{rel!r}]", weights, error_cls=GraphError)
    if w.size != size:
        fail(GraphError, where, f"weights[{rel!r}]", f"must have one value per edge ({size})",
             w.size)
    if w.size and (not np.isfinite(w).all() or w.min() < 0):
        fail(GraphError, where, f"weights[{rel!r}]", "must be finite and non-negative",
             show_value=False)
    return w


def check_time(where, name, time, size):
    """Times as a new array of ``size`` values: int64 for integers (exact), float64 for finite
    real numbers (:func:`spsample.graph._times.as_times`)."""
    t = as_times(where, name, time, error_cls=GraphError)
    if t.size != size:
        fail(GraphError, where, name, f"must have one timestamp per entry ({size})", t.size)
    return t


def _check_node_time(where, node_time, counts):
    if node_time is None:
        return {}
    if not isinstance(node_time, dict):
        fail(ArgumentTypeError, where, "node_time", "must be a dict {node_type: array}",
             type(node_time))
    out = {}
    for t, arr in node_time.items():
        if t not in counts:
            fail(ArgumentError, where, "node_time", "names a node type that is not in the "
                 "graph", t)
        arr = arr.detach().cpu().numpy() if hasattr(arr, "detach") else arr
        out[t] = check_time(where, f"node_time[{t!r}]", arr, counts[t])
    return out


def _block(counts, rel, src, dst, weights, time):
    """The relation's square global-id Graph and its entries' times (or None)."""
    s, _, d = rel
    names = sorted(counts)
    offsets = dict(zip(names, np.cumsum([0] + [counts[t] for t in names[:-1]]).tolist()))
    n = sum(counts.values())
    for ids, t, part in ((src, s, 0), (dst, d, 1)):
        if ids.size and int(ids.max()) >= counts[t]:
            fail(GraphError, "HeteroGraph.from_edge_index", f"edge_index[{rel!r}][{part}]",
                 f"has an id >= num_nodes[{t!r}] ({counts[t]})", int(ids.max()))
    gdst, gsrc, w, t = merge_entries(dst + offsets[d], src + offsets[s], weights, time)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(gdst, minlength=n), out=indptr[1:])
    return Graph(indptr, np.ascontiguousarray(gsrc), w), t
