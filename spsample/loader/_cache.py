"""A hot-feature cache: the most-accessed feature rows held in memory in front of a slower
source (an HDF5 file, a remote store), DSP/PaGraph-style.

Which rows are hot is decided once, from a score per vertex: its in-degree
(:func:`in_degree_scores`: how many rows of ``A`` list it, so how often node-wise sampling can
reach it) or its access counts in a sampling pass (:func:`sampled_counts`). The top rows by
score (ties to the smaller id) that fit ``budget`` bytes are read from the source once; a bulk
then asks the source only for its rows outside the cache. Rows are the source's rows, so
batches are bit for bit those of the uncached source.
"""

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError
from .._validate import as_float_array, as_index_array, fail
from ..samplers._sample import sample
from ._features import as_feature_source
from ._source import FeatureSource, _as_numpy, _spread, checked_bulk, checked_ids

__all__ = ["CachedFeatures", "in_degree_scores", "sampled_counts", "hit_rate_curve"]


def in_degree_scores(graph):
    """How many rows of ``A`` list each vertex, int64, shape (n,) (a :class:`~spsample.Graph`,
    or a :class:`~spsample.DiskGraph`, read block by block)."""
    n = graph.num_nodes
    if hasattr(graph, "cache") and hasattr(graph.cache, "stream"):       # DiskGraph
        counts = np.zeros(n, dtype=np.int64)
        for _, idx, _ in graph.cache.stream(range(graph.cache.num_blocks)):
            counts += np.bincount(idx, minlength=n)
        return counts
    return np.bincount(np.asarray(graph.indices), minlength=n).astype(np.int64)


def sampled_counts(graph, seeds, *, sampler, batch_size, seed=0, epochs=(0,)):
    """Per vertex, in how many minibatches' ``n_id`` it appears over ``epochs`` of sampling
    ``seeds`` (the fetches a loader without a cache would make), int64, shape (n,)."""
    counts = np.zeros(graph.num_nodes, dtype=np.int64)
    for epoch in epochs:
        for mb in sample(graph, seeds, sampler=sampler, batch_size=batch_size,
                          seed=seed, epoch=epoch):
            counts += np.bincount(mb.n_id, minlength=graph.num_nodes)
    return counts


def hit_rate_curve(scores, accesses, fractions):
    """Hit rate of a cache holding the top ``fraction`` of rows by ``scores`` when the rows are
    accessed ``accesses[v]`` times; float64, shape (len(fractions),).

    Raises
    ------
    ArgumentTypeError, ArgumentError
        ``scores`` not finite numbers, ``accesses`` not integers ``>= 0`` of the same length,
        or ``fractions`` not numbers in ``[0, 1]``.
    """
    where = "hit_rate_curve"
    scores = as_float_array(where, "scores", scores)
    if not np.isfinite(scores).all():
        fail(ArgumentError, where, "scores", "must be finite", show_value=False)
    accesses = as_index_array(where, "accesses", accesses)
    if accesses.shape != scores.shape:
        fail(ArgumentError, where, "accesses", f"must have one count per score ({scores.size})",
             accesses.shape)
    if accesses.size and accesses.min() < 0:
        fail(ArgumentError, where, "accesses", "must be >= 0", int(accesses.min()))
    fractions = as_float_array(where, "fractions", fractions)
    if not ((fractions >= 0) & (fractions <= 1)).all():
        fail(ArgumentError, where, "fractions", "must be numbers in [0, 1]", show_value=False)
    ranked = accesses[_ranking(scores)]
    served = np.concatenate([[0], np.cumsum(ranked)])
    total = max(1, int(served[-1]))
    k = [int(round(f * scores.size)) for f in fractions]
    return np.array([served[min(max(i, 0), scores.size)] / total for i in k])


def _ranking(scores):
    """Vertices by descending score, ties to the smaller id."""
    return np.lexsort((np.arange(scores.size), -np.asarray(scores, dtype=np.float64)))


class CachedFeatures(FeatureSource):
    """Feature rows of ``source`` with the hottest ones held in memory.

    Parameters
    ----------
    source : FeatureSource or anything :func:`~spsample.loader.as_feature_source` accepts
        Where the rows come from (an HDF5 path, an h5py dataset, an array, a store).
    budget : int
        Bytes the cached rows may take; ``budget // row_bytes`` rows are cached (0 is allowed).
    scores : array_like, shape (n,)
        Hotness of each vertex (:func:`in_degree_scores`, :func:`sampled_counts`).

    Attributes
    ----------
    cached_ids : int64, shape (k,)
        The cached vertices, ascending.
    hits, misses : int
        Distinct rows per bulk served by the cache / fetched from the source.
    bytes_fetched, bytes_saved : int
        Bytes of rows asked from the source / served by the cache instead.

    Raises
    ------
    ArgumentTypeError, ArgumentError
        ``budget`` not a non-negative int, ``scores`` not one finite number per row, a source
        that does not tell its shape.
    """

    def __init__(self, source, budget, scores):
        where = "CachedFeatures"
        self.source = as_feature_source(source, where, "source")
        if self.source is None or self.source.num_nodes is None or \
                self.source.num_features is None:
            fail(ArgumentError, where, "source", "must tell its num_nodes and num_features",
                 type(source))
        if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, np.integer)):
            fail(ArgumentTypeError, where, "budget", "must be an int (bytes)", budget)
        if budget < 0:
            fail(ArgumentError, where, "budget", "must be >= 0", budget)
        self.num_nodes, self.num_features = self.source.num_nodes, self.source.num_features
        scores = np.asarray(scores)
        if scores.shape != (self.num_nodes,) or scores.dtype.kind not in "biuf" or \
                not np.all(np.isfinite(scores)):
            fail(ArgumentError, where, "scores", f"must be {self.num_nodes} finite numbers "
                 "(one per row)", getattr(scores, "shape", None))
        first = _as_numpy(self.source.fetch(np.zeros(min(1, self.num_nodes), dtype=np.int64)))
        self.dtype = first.dtype
        self.row_bytes = max(1, self.num_features * self.dtype.itemsize)
        k = min(self.num_nodes, int(budget) // self.row_bytes)
        self.cached_ids = np.sort(_ranking(scores)[:k])
        self._slot = np.full(self.num_nodes, -1, dtype=np.int64)
        self._slot[self.cached_ids] = np.arange(k)
        self.rows = np.ascontiguousarray(_as_numpy(self.source.fetch(self.cached_ids)))
        self.hits = self.misses = self.bytes_fetched = self.bytes_saved = 0

    @property
    def hit_rate(self):
        """``hits / (hits + misses)`` so far (0 before any fetch)."""
        return self.hits / max(1, self.hits + self.misses)

    def fetch(self, n_id):
        """Rows ``n_id`` (ids in ``[0, num_nodes)``, shape (N,)) as an array of shape (N, f).

        Raises
        ------
        ArgumentTypeError, ArgumentError
            ``n_id`` does not hold integers, is not 1-D, or has an id outside
            ``[0, num_nodes)`` (``-1`` is not the last row).
        """
        return self._fetch_bulk([checked_ids("CachedFeatures.fetch", n_id, self.num_nodes)])[0]

    def fetch_bulk(self, n_ids):
        """Rows of several minibatches (a list of id arrays), each vertex fetched once."""
        return self._fetch_bulk(checked_bulk("CachedFeatures.fetch_bulk", n_ids,
                                             self.num_nodes))

    def _fetch_bulk(self, n_ids):
        allv = np.concatenate(n_ids)
        uniq, inverse = np.unique(allv, return_inverse=True)
        slot = self._slot[uniq]
        hit = slot >= 0
        out = np.empty((uniq.size, self.num_features), dtype=self.dtype)
        out[hit] = self.rows[slot[hit]]
        miss = uniq[~hit]
        if miss.size:
            out[~hit] = _as_numpy(self.source.fetch(miss))
        self.hits += int(hit.sum())
        self.misses += int(miss.size)
        self.bytes_fetched += int(miss.size) * self.row_bytes
        self.bytes_saved += int(hit.sum()) * self.row_bytes
        return _spread(out, inverse, n_ids)

    def close(self):
        self.source.close()
