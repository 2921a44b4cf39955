"""Negative edges for link minibatches, from the counter-based RNG.

Negatives of minibatch ``j`` (global id) are drawn slot by slot; slot ``i``'s attempt ``a``
reads the Philox block ``(a, i, hop_word(epoch, 0), j)`` under a key derived from the seed and
the relation (:func:`negative_key`): words 0-1 pick the source, words 2-3 the destination.

* ``"uniform"``: ``uniform_int(word 0, n_src)`` and ``uniform_int(word 2, n_dst)``;
* ``"degree"``: vertex ``u`` with probability ``∝ deg(u) ** 0.75`` (its entries in the
  relation at that end: column count for sources, row length for destinations), as word2vec's
  and PinSAGE's negatives: ``u53 = unit53(w0, w1)`` (or ``w2, w3``) and the first vertex whose
  serial cumulative weight exceeds ``u53 * total``.

Binary negatives draw both ends; triplet negatives keep the positive's source and draw the
destination. With ``strict=True`` a candidate that is an edge of the relation is drawn again
(next attempt), up to :data:`MAX_ATTEMPTS` times. Nothing depends on how minibatches are
grouped into bulks or ranks: a slot's draws are a function of (seed, epoch, minibatch id,
slot, attempt).
"""

import zlib

import numpy as np

from .. import _rng
from .._errors import SamplerError
from ._lazy import lookup
from .._validate import fail

__all__ = ["negative_key", "draw_negatives", "degree_weights", "pickers", "strict_failure",
           "LocalEdges", "weights_of", "MAX_ATTEMPTS"]

#: Draws per slot before strict sampling gives up (a vertex adjacent to almost everything).
MAX_ATTEMPTS = 128
_NEG_TAG = 0x4E454741    # "NEGA"


def negative_key(seed, relation):
    """The Philox key of a relation's negatives (derived like the relation's sampling key)."""
    name = zlib.crc32("\x1f".join(relation).encode("utf-8"))
    w = _rng.philox4x32_scalar(name, _NEG_TAG, 0, 0, *_rng.split_seed(seed))
    return int(w[0]), int(w[1])


def degree_weights(block, offset_src, n_src, offset_dst, n_dst):
    """``(src weights, dst weights)``: ``deg ** 0.75`` at each end of a relation's block."""
    return weights_of(np.bincount(block.indices - offset_src, minlength=n_src),
                      np.diff(block.indptr[offset_dst:offset_dst + n_dst + 1]))


def weights_of(column_counts, row_lengths):
    """``(src weights, dst weights)`` from a relation's integer column counts (sources) and
    row lengths (destinations): ``deg ** 0.75`` in float64."""
    return (np.asarray(column_counts).astype(np.float64) ** 0.75,
            np.asarray(row_lengths).astype(np.float64) ** 0.75)


class _Picker:
    """Draws local vertex ids from two 32-bit words: uniform, or by cumulative weights."""

    def __init__(self, n, weights=None):
        self.n = int(n)
        self.cumulative, self.last = None, 0
        if weights is not None:
            self.cumulative = np.cumsum(np.asarray(weights, dtype=np.float64))
            if self.cumulative.size == 0 or not self.cumulative[-1] > 0:
                fail(SamplerError, "LinkLoader", "neg_distribution", "has no vertex of "
                     "positive degree to draw from", "degree")
            self.last = int(np.searchsorted(self.cumulative, self.cumulative[-1]))

    def __call__(self, w0, w1):
        if self.cumulative is None:
            return _rng.uniform_int(w0, self.n)
        u = _rng.unit53(w0, w1) * self.cumulative[-1]
        return np.minimum(np.searchsorted(self.cumulative, u, side="right"), self.last)


def pickers(sizes, weights=None):
    """The source and destination pickers of a relation (``sizes`` of the two types,
    ``weights`` from :func:`degree_weights` or ``None`` for uniform).

    Raises
    ------
    SamplerError
        Degree-weighted, and an end has no vertex of positive degree.
    """
    return (_Picker(sizes[0], None if weights is None else weights[0]),
            _Picker(sizes[1], None if weights is None else weights[1]))


def strict_failure(pending):
    """Raise the :class:`SamplerError` of ``pending`` strict slots left without a non-edge."""
    fail(SamplerError, "LinkLoader", "strict", f"found no non-edge for {pending} negative "
         f"slot(s) in {MAX_ATTEMPTS} draws (a source adjacent to nearly every destination?); "
         "pass strict=False", show_value=False)


class LocalEdges:
    """``strict`` negatives' edge test on a block held whole (the one-process case); a
    sharded block answers the same three calls collectively
    (:class:`spsample.loader._link_dist.ShardedLinks`)."""

    def __init__(self, block):
        self.block = block

    def is_edge(self, rows, columns):
        """Whether each ``(rows[i], columns[i])`` (global ids) is an entry of the block."""
        return lookup(self.block, rows, columns)[0]

    def more(self, pending):
        """Whether another attempt is needed (``pending`` slots left here)."""
        return pending > 0

    def give_up(self, pending):
        """Raise the error of ``pending`` slots left after the last attempt."""
        strict_failure(pending)


def draw_negatives(block, batch_ids, counts, *, seed, epoch, relation, offsets, sizes,
                   fixed_src=None, weights=None, strict=False, edges=None):
    """Negative ``(src, dst)`` pairs (local ids) for every minibatch of a bulk.

    Parameters
    ----------
    block : Graph
        The relation's square block over the global ids (row = destination).
    batch_ids : int64, shape (k,)
        Global minibatch ids.
    counts : int64, shape (k,)
        Negatives per minibatch.
    seed, epoch : int
    relation : (str, str, str)
    offsets, sizes : (int, int)
        Global offsets and counts of the source and destination types.
    fixed_src : int64, shape (counts.sum(),), optional
        Triplet negatives: each slot's source (local id), only the destination is drawn.
    weights : (array, array) or None
        ``degree_weights`` of the relation (``"degree"`` distribution) or ``None`` (uniform).
    strict : bool
        Redraw candidates that are edges of the relation.
    edges : LocalEdges or ShardedLinks, optional
        Answers ``strict``'s edge tests (default: :class:`LocalEdges` of ``block``); a
        sharded graph's asks the rows' owners, and every rank makes the same number of
        attempts (collective).

    Returns
    -------
    src, dst : int64, shape (counts.sum(),)
        Minibatch after minibatch, slot after slot.

    Raises
    ------
    SamplerError
        ``strict`` and some slot found no non-edge in :data:`MAX_ATTEMPTS` draws.
    """
    total = int(np.sum(counts))
    mb = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    slot = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    bid = np.asarray(batch_ids, dtype=np.int64)[mb]
    pick_src, pick_dst = pickers(sizes, weights)
    key, hw = negative_key(seed, relation), _rng.hop_word(epoch, 0)
    src = np.zeros(total, dtype=np.int64) if fixed_src is None else \
        np.asarray(fixed_src, dtype=np.int64).copy()
    dst = np.zeros(total, dtype=np.int64)
    pending = np.arange(total, dtype=np.int64)
    edges = LocalEdges(block) if edges is None else edges
    for attempt in range(MAX_ATTEMPTS if strict else 1):
        w = _rng.philox4x32(attempt, slot[pending], hw, bid[pending], key[0], key[1])
        if fixed_src is None:
            src[pending] = pick_src(w[0], w[1])
        dst[pending] = pick_dst(w[2], w[3])
        if not strict:
            break
        pending = pending[edges.is_edge(dst[pending] + offsets[1], src[pending] + offsets[0])]
        if not edges.more(pending.size):
            break
    else:                           # strict, and the last attempt left slots somewhere
        edges.give_up(pending.size)
    return src, dst
