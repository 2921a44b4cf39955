"""Bulk operations of the kernels besides sampling, parallel over minibatches: deduplicating
insertion and lookup of ``(minibatch, vertex)`` pairs (the NumPy engine's bulk state), link
minibatches' negatives and seeds, every minibatch's edges in one block (the loader), and a
heterogeneous bulk grouped by node type. Each is the same bits as its NumPy counterpart."""

import numpy as np

from .._errors import ArgumentError
from .._validate import fail
from ._buffers import as_f64, as_i64
from ._codes import LinkMode
from ._switch import kernel_threads, kernels

__all__ = ["insert_bulk", "lookup_bulk", "link_bulk", "minibatch_edges", "split_typed"]


def _relabel_args(known_offsets, known, cand_offsets, cand):
    arrays = [as_i64(np.asarray(a)) for a in (known_offsets, known, cand_offsets, cand)]
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
    return kernels.insert_bulk(*_relabel_args(known_offsets, known, cand_offsets, cand),
                                kernel_threads())


def lookup_bulk(known_offsets, known, query_offsets, query):
    """Local ids of ``(minibatch, vertex)`` queries, ``-1`` where absent; arguments as
    :func:`insert_bulk`. Returns int64, shape (len(query),)."""
    return kernels.lookup_bulk(*_relabel_args(known_offsets, known, query_offsets, query),
                                kernel_threads())


def _link_mode(mode):
    """The extension's code of a link mode (looked up per call: without the extension
    :class:`LinkMode` is empty, and importing this module must still work)."""
    return int({"binary": LinkMode.BINARY, "triplet": LinkMode.TRIPLET,
                None: LinkMode.NONE}[mode])


def link_bulk(pos_offsets, pos, src_ids, dst_ids, neg_offsets, batch_ids, *, mode, ratio,
              pickers, key, hop_word, block, max_attempts, type_offsets, dedup):
    """A bulk of link minibatches' negatives, seed endpoints and their first-occurrence
    relabelling, parallel over minibatches (``native/link.h``; the same bits as
    :func:`spsample._negatives.draw_negatives` and the loader's NumPy code).

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
        :func:`spsample._negatives.pickers` of the source and destination types.
    key : (int, int)
        :func:`spsample._negatives.negative_key`.
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
    graph = None if block is None else (as_i64(block.indptr), as_i64(block.indices), None, None)
    ends = tuple((p.n, as_f64(p.cumulative), p.last) for p in pickers)
    arrays = [as_i64(np.asarray(a)) for a in (pos_offsets, pos, src_ids, dst_ids, neg_offsets,
                                            batch_ids)]
    return kernels.link_bulk(*arrays, _link_mode(mode), int(ratio), ends, int(key[0]),
                              int(key[1]), int(hop_word), graph, int(max_attempts),
                              int(type_offsets[0]), int(type_offsets[1]), bool(dedup),
                              kernel_threads())


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
        exclude = tuple(as_i64(np.asarray(a)) for a in exclude)
    return kernels.minibatch_edges([as_i64(h.dst) for h in hops], [as_i64(h.src) for h in hops],
                                    [as_i64(h.edge_id) for h in hops],
                                    [as_i64(h.offsets) for h in hops], exclude, kernel_threads())


def split_typed(n_id, node_offsets, counts, step_hops, type_offsets, node_batch, hops,
                num_hops):
    """A heterogeneous bulk's vertices grouped by (minibatch, node type) and its edges in
    per-type local ids, parallel over minibatches (``native/typed.h``; the same bits as
    :func:`spsample._hetero_sample._group_numpy`, its oracle).

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
    batch = None if node_batch is None else as_i64(np.asarray(node_batch))
    return kernels.split_typed(
        as_i64(np.asarray(n_id)), as_i64(np.asarray(node_offsets)),
        as_i64(np.asarray(counts)).ravel(), as_i64(np.asarray(step_hops)),
        as_i64(np.asarray(type_offsets)), batch, [as_i64(h.dst) for h in hops],
        [as_i64(h.src) for h in hops], [as_i64(h.offsets) for h in hops], int(num_hops), kernel_threads())
