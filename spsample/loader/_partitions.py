"""Features out of core in partitions, a bounded buffer of them, and an epoch order that keeps
the buffer useful (Marius-style).

The ``n`` feature rows are cut into ``P`` partitions of consecutive rows (``ceil(n / P)`` rows
each, the last one shorter). :class:`PartitionedFeatures` keeps at most ``B`` of them in memory
(least recently used out) and serves a bulk's rows partition by partition, loading the ones it
lacks: memory stays within ``B`` partitions plus the bulk's rows, whatever the bulk touches.

Which partitions a bulk touches follows from its seeds (and their sampled neighbours, which on
a graph with locality -- a web graph's natural order, a METIS-relabelled graph -- lie mostly in
the seeds' partitions). :func:`buffer_aware_order` visits the seeds partition after partition,
the partitions in a path keyed by ``(seed, epoch)`` (a random start and direction around the
ring of partitions) and each partition's seeds in a random order keyed the same way, so
consecutive bulks share their partitions; ``Loader(order="buffer-aware")`` uses it.

:func:`owner_order` groups the seeds the same way by the process row that holds their rows
of a sharded graph (and feature rows): ``Loader(order="owner")`` over a ``DistGraph`` deals
each rank minibatches of seeds its own process row holds (DistDGL's trainers take their seeds
from their own partition), so on a locality-partitioned graph (``spsample partition``) most
sampled rows and feature rows are local.
"""

import collections

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, DatasetError
from .._validate import as_int, fail
from ._features import HDF5Features, as_feature_source
from ._source import FeatureSource, _as_numpy, _spread, checked_bulk, checked_ids

__all__ = ["PartitionedFeatures", "buffer_aware_order", "owner_order", "partition_bounds",
           "ORDERS"]

#: ``Loader(order=...)``: the seeds shuffled as a whole, grouped by feature partition, or
#: grouped by the process row holding their rows.
ORDERS = ("random", "buffer-aware", "owner")


def partition_bounds(num_nodes, num_partitions):
    """Row bounds of the partitions, int64, shape (P + 1,): partition ``p`` holds rows
    ``[bounds[p], bounds[p + 1])``."""
    size = -(-num_nodes // num_partitions) if num_partitions else 0
    return np.minimum(np.arange(num_partitions + 1, dtype=np.int64) * size, num_nodes)


def buffer_aware_order(seeds, bounds, seed, epoch):
    """The seeds grouped by the partition that holds their feature row (see the module).

    Parameters
    ----------
    seeds : int64, shape (m,)
    bounds : int64, shape (P + 1,)
        :func:`partition_bounds`.
    seed, epoch : int
        The key; the same ``(seed, epoch)`` gives the same order on every run and rank.

    Returns
    -------
    int64, shape (m,): a permutation of ``seeds``.
    """
    rng = np.random.default_rng([seed, epoch, 0xB0FF])
    parts = bounds.size - 1
    start, step = int(rng.integers(max(parts, 1))), int(rng.choice([-1, 1]))
    rank = np.empty(max(parts, 0), dtype=np.int64)
    rank[(start + step * np.arange(parts)) % max(parts, 1)] = np.arange(parts)
    part = np.searchsorted(bounds, seeds, side="right") - 1
    return _grouped(seeds, rank[part], rng)


def owner_order(seeds, owner, seed, epoch):
    """The seeds grouped by ``owner`` (ascending: process row 0's first), each group in a
    random order keyed by ``(seed, epoch)``.

    Parameters
    ----------
    seeds : int64, shape (m,)
    owner : int64, shape (m,)
        The process row holding each seed's row (``DistGraph.owner``).
    seed, epoch : int

    Returns
    -------
    int64, shape (m,): a permutation of ``seeds``.
    """
    return _grouped(seeds, owner, np.random.default_rng([seed, epoch, 0x0E4E]))


def _grouped(seeds, group, rng):
    """``seeds`` shuffled by ``rng``, then stably sorted by ``group``."""
    shuffle = rng.permutation(seeds.size)
    return seeds[shuffle[np.argsort(group[shuffle], kind="stable")]]


class PartitionedFeatures(FeatureSource):
    """Feature rows of ``source`` in ``num_partitions`` partitions, at most
    ``buffer_partitions`` of them in memory (see the module docstring).

    Parameters
    ----------
    source : str, os.PathLike, h5py.Dataset, ndarray or FeatureSource
        An HDF5 file (``/features``) or dataset read a partition at a time, or rows in memory
        (for tests: a load is then a copy).
    num_partitions : int
        ``P >= 1``.
    buffer_partitions : int
        ``1 <= B <= P`` partitions resident at once.

    Attributes
    ----------
    bounds : int64, shape (P + 1,)
    loads : int
        Partitions read so far (:meth:`reset_stats` zeroes it).
    resident : list of int
        Partitions in memory, least recently used first.

    Raises
    ------
    ArgumentError, ArgumentTypeError
        Bad counts, naming the argument; :class:`~spsample.DatasetError` from a load of a
        truncated or corrupt file (the partition is then not kept).
    """

    def __init__(self, source, num_partitions, buffer_partitions):
        where = "PartitionedFeatures"
        if not isinstance(source, FeatureSource) and type(source).__module__ != "numpy":
            source = HDF5Features(source, cache=False) if _is_h5(source) else source
        self.source = as_feature_source(source, where, "source")
        if self.source is None or self.source.num_nodes is None:
            fail(ArgumentTypeError, where, "source", "must be an HDF5 file or dataset, or rows "
                 "in memory", type(source))
        self.num_nodes, self.num_features = self.source.num_nodes, self.source.num_features
        P = as_int(where, "num_partitions", num_partitions, minimum=1)
        if P > max(1, self.num_nodes):
            fail(ArgumentError, where, "num_partitions", f"must be at most the number of rows "
                 f"({self.num_nodes})", P)
        B = as_int(where, "buffer_partitions", buffer_partitions, minimum=1)
        if B > P:
            fail(ArgumentError, where, "buffer_partitions", f"must be at most num_partitions "
                 f"({P})", B)
        self.num_partitions, self.buffer_partitions = P, B
        self.bounds = partition_bounds(self.num_nodes, P)
        self._buffer = collections.OrderedDict()
        self.loads = 0

    @property
    def resident(self):
        return list(self._buffer)

    def reset_stats(self):
        self.loads = 0

    def fetch(self, n_id):
        return self._fetch_bulk([checked_ids("PartitionedFeatures.fetch", n_id,
                                             self.num_nodes)])[0]

    def fetch_bulk(self, n_ids):
        return self._fetch_bulk(checked_bulk("PartitionedFeatures.fetch_bulk", n_ids,
                                             self.num_nodes))

    def _fetch_bulk(self, n_ids):
        allv = np.concatenate(n_ids)
        uniq, inverse = np.unique(allv, return_inverse=True)
        part = np.searchsorted(self.bounds, uniq, side="right") - 1
        touched = np.unique(part)
        first = [p for p in touched.tolist() if p in self._buffer]
        rest = [p for p in touched.tolist() if p not in self._buffer]
        out = None
        for p in first + rest:
            rows = self._partition(p)
            if out is None:
                out = np.empty((uniq.size, self.num_features), dtype=rows.dtype)
            sel = np.flatnonzero(part == p)
            out[sel] = rows[uniq[sel] - self.bounds[p]]
        if out is None:
            out = _as_numpy(self.source.fetch(uniq))
        return _spread(out, inverse, n_ids)

    def _partition(self, p):
        """Partition ``p``'s rows, loaded (LRU out) if not resident."""
        if p in self._buffer:
            self._buffer.move_to_end(p)
            return self._buffer[p]
        lo, hi = int(self.bounds[p]), int(self.bounds[p + 1])
        rows = self._read(lo, hi)                      # raises before anything is evicted
        while len(self._buffer) >= self.buffer_partitions:
            self._buffer.popitem(last=False)
        self._buffer[p] = rows
        self.loads += 1
        return rows

    def _read(self, lo, hi):
        src = self.source
        if isinstance(src, HDF5Features):
            _check_extent(src.dataset, lo, hi)
            rows = np.empty((hi - lo, self.num_features), dtype=src.dtype)
            src._read_into(rows, lo, hi)
            return rows
        return np.array(_as_numpy(src.fetch(np.arange(lo, hi, dtype=np.int64))))

    def close(self):
        self._buffer.clear()
        self.source.close()


def _check_extent(dset, lo, hi):
    """Rows ``[lo, hi)`` of ``dset`` lie inside its file as it is now (HDF5 reads bytes past
    the end of a truncated file as zeros); :class:`~spsample.DatasetError` otherwise."""
    import os

    path = dset.file.filename
    size = os.stat(path).st_size
    row_bytes = int(np.prod(dset.shape[1:])) * dset.dtype.itemsize
    if dset.chunks is None:
        offset = dset.id.get_offset()
        ends = [None if offset is None else offset + hi * row_bytes]
    else:
        step = dset.chunks[0]
        ends = []
        for c in range(lo // step, -(-hi // step)):
            info = dset.id.get_chunk_info_by_coord((c * step,) + (0,) * (dset.ndim - 1))
            ends.append(None if info.byte_offset is None else info.byte_offset + info.size)
    if any(e is None or e > size for e in ends):
        raise DatasetError(f"PartitionedFeatures.fetch: rows [{lo}, {hi}) of {dset.name} lie "
                           f"beyond the end of {path!r} ({size} bytes): truncated file?")


def _is_h5(source):
    import os
    return isinstance(source, (str, os.PathLike)) or type(source).__module__.startswith("h5py")


def check_order(where, order, features, graph=None):
    """``order`` is one of :data:`ORDERS`; ``"buffer-aware"`` needs :class:`PartitionedFeatures`,
    ``"owner"`` a sharded graph (one with a ``placement``: ``DistGraph``)."""
    if not isinstance(order, str) or order not in ORDERS:
        fail(ArgumentError, where, "order", f"must be one of {ORDERS}", order)
    if order == "buffer-aware" and not isinstance(features, PartitionedFeatures):
        fail(ArgumentError, where, "order", "'buffer-aware' needs features given as "
             "loader.PartitionedFeatures (the partitions it orders by)", order)
    if order == "owner" and getattr(graph, "placement", None) is None:
        fail(ArgumentError, where, "order", "'owner' needs a sharded graph "
             "(spsample.distributed.DistGraph: the process rows it groups the seeds by)", order)
    return order
