"""``spsample.Loader``: minibatches with features and labels for a torch training loop."""

import time
from functools import partial

import numpy as np

from .._errors import ArgumentError, ArgumentTypeError, SeedError
from .._optional import import_torch
from ..graph._graph import Graph
from ..engine._batches import check_seeds
from ..samplers._sample import sample
from ..native import apply_env_threads
from .._validate import as_index_array, as_int, fail
from ..distributed._strategies import check_strategy
from ..distributed._collective import agree, check_same
from ..distributed._failure import abort_if_failing_alone
from ..samplers import Sampler
from ._batch import make_batch
from ._features import FetchFeatures, as_feature_source
from ._partitions import buffer_aware_order, check_order, owner_order
from ._pipeline import Prefetcher

__all__ = ["Loader", "EpochIterator", "epoch_order", "bulk_starts", "add_bytes"]

_WHERE = "Loader"


def epoch_order(seeds, seed, epoch, shuffle=True):
    """The seeds in the order epoch ``epoch`` visits them: a permutation keyed by
    ``(seed, epoch)`` (NumPy's PCG64 seeded with ``[seed, epoch]``), or as given when not
    shuffling. The same on every rank and every run."""
    if not shuffle:
        return seeds
    return seeds[np.random.default_rng([seed, epoch]).permutation(seeds.size)]


class Loader:
    """Sampled minibatches with their feature rows and labels, one epoch per iteration.

    Each epoch shuffles the seeds with a permutation keyed by ``(seed, epoch)`` and cuts them
    into minibatches of ``batch_size`` (the last one may be smaller; none is dropped). Minibatch
    ``i`` of the epoch has the global id ``i``, so its sample depends only on ``(seed, epoch,
    i)``: not on ``bulk_size``, on the pipeline, on the number of ranks or on where an
    interrupted run resumed. Minibatches are sampled ``bulk_size`` at a time (one bulk
    :func:`spsample.sample` call), their feature rows fetched once per bulk, and yielded one by
    one as :class:`~spsample.loader.Batch` objects. NumPy arrays cross into torch by DLPack
    (zero copy).

    With ``pipeline=True`` (default) a background thread samples and fetches bulk ``i + 1``
    while the training loop consumes bulk ``i`` (a bounded queue of ``queue_size`` bulks).
    Batches are identical with the pipeline on or off. An exception in the background thread
    is re-raised by the loop's ``next()``; leaving the loop early (``break``, an exception, or
    ``close()`` on the iterator) stops the thread.

    Parameters
    ----------
    data : Graph, Dataset, DistGraph, HeteroGraph, DistHeteroGraph or HeteroDataset
        The graph to sample; a :class:`~spsample.Dataset` also supplies default ``features``,
        ``labels`` and seeds (its training split). Heterogeneous data gives
        :class:`~spsample.loader.HeteroBatch` batches (``x_dict``, ``edge_index_dict``, ...):
        ``seeds`` is then ``(node_type, ids)`` or a split of the target type, ``features`` and
        ``labels`` dicts per type, and ``seed_time`` (one time per seed) samples temporally.
    seeds : array_like of int, or {"train", "val", "test"}, optional
        The seed vertices of one epoch, distinct. A split name needs a ``Dataset``. Default:
        the dataset's training split, else every vertex.
    sampler : Sampler
        ``NodeWise``, ``LADIES``, ``FastGCN`` or any :class:`~spsample.Sampler`.
    batch_size : int
        Seeds per minibatch, ``>= 1``.
    bulk_size : int
        Minibatches sampled together (``k`` of the design notes), ``>= 1``.
    features : array, tensor, scipy.sparse matrix, HDF5 path or dataset, or ``fetch`` object
        Optional node features, ``num_nodes`` rows. A ``scipy.sparse`` matrix gives batches
        whose ``x`` is :class:`~spsample.loader.SparseRows` (CSR: bag-of-words features stay
        sparse up to the first layer). An HDF5 source reads only the rows each bulk needs; a
        ``fetch`` object (e.g. ``spsample.distributed.FeatureStore``) is called once per bulk
        with the bulk's distinct vertices.
    labels : array_like or tensor of int, shape (num_nodes,), optional
    shuffle : bool
        Permute the seeds every epoch (keyed by ``(seed, epoch)``).
    order : {"random", "buffer-aware", "owner"}
        How shuffled seeds are ordered: one random permutation (default), or grouped by the
        feature partition of :class:`~spsample.loader.PartitionedFeatures` features, the
        partitions visited in a path and each one's seeds shuffled, keyed by ``(seed, epoch)``
        (:func:`~spsample.loader.buffer_aware_order`: far fewer partition loads on graphs with
        locality), or, over a ``DistGraph``, grouped by the process row holding their rows
        (:func:`~spsample.loader.owner_order`): each rank's minibatches are seeds of its own
        process row (exactly when the process rows hold equal shares of the seeds), so on a
        locality-partitioned graph most sampled and fetched rows are local. The minibatches
        then depend on the grid's process rows (the other orders do not).
    seed : int
        Seeds the shuffle and the sampler's random streams, ``0 <= seed < 2**64``.
    device : str or torch.device
        Where the batches' tensors go (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).
    dtype : torch.dtype, str or None
        Feature dtype of the batches (default ``float32``: e.g. uint8 features are cast once,
        in the background); ``None`` keeps the stored dtype.
    pipeline : bool
        Prepare the next bulks in a background thread.
    queue_size : int
        Bulks prepared ahead by the pipeline, ``>= 1``.
    strategy : str or None
        Where a :class:`~spsample.distributed.DistGraph` (or ``DistHeteroGraph``) selects
        (see ``DistGraph.sample``): a name in ``spsample.distributed.STRATEGIES``; ``None``:
        its default (push). Ignored for a ``Graph``.
    adjacency : bool
        Also build each batch's per-layer CSR aggregation matrices and their transposes
        (:meth:`Batch.adjacency`, what the built-in layers multiply by) in the producer, off
        the training thread. ``spsample.train.Trainer`` turns it on.
    rank, world_size : int, optional
        Data-parallel training: the epoch's minibatches are split into ``world_size``
        contiguous ranges and this loader yields range ``rank``. Default: from ``comm``, else
        a single process.
    comm : mpi4py or spsample.distributed communicator, optional
        Supplies ``rank`` and ``world_size`` (e.g. a ``ThreadComm`` of
        :func:`spsample.distributed.run_threads`).
    epoch : int
        The epoch the first ``iter(loader)`` yields.

    Raises
    ------
    ArgumentTypeError, ArgumentError, SeedError
        Naming the argument: e.g. ``features`` with the wrong number of rows, ``seeds`` out of
        range or repeated, ``bulk_size <= 0``, an unknown ``device``.

    Examples
    --------
    >>> import numpy as np, spsample
    >>> g = spsample.Graph.from_edge_index([1, 2, 3, 0, 0, 2], [0, 0, 1, 2, 3, 3])
    >>> x = np.eye(4, dtype=np.float32)
    >>> loader = spsample.Loader(g, [0, 1, 2, 3], sampler=spsample.NodeWise([2]),
    ...                          batch_size=3, features=x, labels=[0, 1, 0, 1], seed=1)
    >>> [b.batch_size for b in loader]      # epoch 0; the last minibatch is kept
    [3, 1]
    >>> b = next(iter(loader))              # epoch 1
    >>> b.x.shape[1], b.edge_index.shape[0], b.epoch
    (4, 2, 1)
    """

    #: Subclasses that ``Loader(data, ...)`` becomes for the data they claim (a subclass
    #: defining ``claims(data) -> bool`` is added here when it is defined, e.g. HeteroLoader).
    _claimants = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "claims" in cls.__dict__:
            Loader._claimants.append(cls)

    def __new__(cls, data=None, *args, **kwargs):
        if cls is Loader:              # e.g. heterogeneous data: the heterogeneous loader
            for sub in Loader._claimants:
                if sub.claims(data):
                    return super().__new__(sub)
        return super().__new__(cls)

    def __init__(self, data, seeds=None, *, sampler, batch_size, bulk_size=4, features=None,
                 labels=None, shuffle=True, seed=0, device="cpu", dtype="float32",
                 pipeline=True, queue_size=2, rank=None, world_size=None, comm=None, epoch=0,
                 adjacency=False, strategy=None, order="random"):
        apply_env_threads()  # SPSAMPLE_THREADS, once per process
        setup = partial(self._setup, data, seeds, sampler=sampler, batch_size=batch_size,
                        bulk_size=bulk_size, features=features, labels=labels,
                        shuffle=shuffle, seed=seed, device=device, dtype=dtype,
                        pipeline=pipeline, queue_size=queue_size, rank=rank,
                        world_size=world_size, comm=comm, epoch=epoch, adjacency=adjacency,
                        strategy=strategy, order=order)
        grid = _dist_grid(data)
        if grid is None:
            setup()
            return
        # Over a DistGraph every rank samples collectively: a bad argument on one rank, or
        # ranks given different seeds (their minibatches would not line up), fails them all.
        with abort_if_failing_alone(grid.comm, _WHERE):
            agree(grid.comm, _WHERE, setup)
            check_same(grid.comm, _WHERE, "seeds and batching (SHA-256 of the seeds; "
                       "batch_size, bulk_size, seed, shuffle, epoch, order, world_size)",
                       self._shared_digest())

    def _shared_digest(self):
        """What every rank of a distributed loader must have alike, hashed."""
        import hashlib

        seeds = np.ascontiguousarray(self.seeds, dtype=np.int64)
        return (hashlib.sha256(seeds.view(np.uint8)).hexdigest()[:16], int(seeds.size),
                self.batch_size, self.bulk_size, self.seed, self.shuffle, self._next_epoch,
                self.seed_order, self.world_size)

    def _setup(self, data, seeds, *, sampler, batch_size, bulk_size, features, labels,
               shuffle, seed, device, dtype, pipeline, queue_size, rank, world_size, comm,
               epoch, adjacency, strategy, order):
        self.graph, dataset = _resolve_data(data)
        self.num_nodes = int(self.graph.num_nodes)
        init_common(self, _WHERE, "NodeWise, LADIES, FastGCN", sampler, batch_size, bulk_size,
                    queue_size, seed, epoch, shuffle, pipeline, device, dtype, rank, world_size,
                    comm)
        if not isinstance(adjacency, (bool, np.bool_)):
            fail(ArgumentTypeError, _WHERE, "adjacency", "must be a bool", adjacency)
        self.adjacency = bool(adjacency)
        self.seeds = _resolve_seeds(seeds, dataset, self.num_nodes)
        if features is None and dataset is not None:
            features = dataset.features
        self.features = as_feature_source(features, _WHERE, "features")
        if self.features is not None and self.features.num_nodes is not None \
                and self.features.num_nodes != self.num_nodes:
            fail(ArgumentError, _WHERE, "features",
                 f"must have one row per node ({self.num_nodes} rows)", self.features.num_nodes)
        if labels is None and dataset is not None:
            labels = dataset.labels
        self.labels = _resolve_labels(labels, self.num_nodes)
        self.seed_order = check_order(_WHERE, order, self.features, self.graph)
        self.collective = not isinstance(self.graph, Graph) or isinstance(self.features,
                                                                          FetchFeatures)
        self._sample_options = _resolve_strategy(strategy, self.graph)
        self._grids = _grids_of(self.graph, self.features)
        self.last_stats = None

    # ------------------------------------------------------------------ sizes
    @property
    def num_batches(self):
        """Minibatches in one epoch, over all ranks: ``ceil(len(seeds) / batch_size)``."""
        return -(-self.seeds.size // self.batch_size)

    @property
    def steps_per_epoch(self):
        """Minibatches of the rank with the most: ``ceil(num_batches / world_size)``.

        Data-parallel training runs this many steps on every rank (a rank that has run out
        contributes no gradient to the last steps)."""
        return -(-self.num_batches // self.world_size)

    def batch_range(self):
        """``(lo, hi)``: the global ids of this rank's minibatches, ``lo <= id < hi``."""
        q = self.steps_per_epoch
        lo = min(self.num_batches, self.rank * q)
        return lo, min(self.num_batches, lo + q)

    def __len__(self):
        lo, hi = self.batch_range()
        return hi - lo

    # ------------------------------------------------------------------ epochs
    @property
    def epoch(self):
        """The epoch the next ``iter(loader)`` yields."""
        return self._next_epoch

    def set_epoch(self, epoch):
        """Make the next ``iter(loader)`` yield epoch ``epoch``."""
        self._next_epoch = as_int("Loader.set_epoch", "epoch", epoch, minimum=0)

    def __iter__(self):
        """Iterate over one epoch (the current one), then advance the epoch counter."""
        epoch = self._next_epoch
        self._next_epoch += 1
        return self.iter_epoch(epoch)

    def iter_epoch(self, epoch, start=0):
        """An :class:`EpochIterator` over epoch ``epoch``, from this rank's ``start``-th
        minibatch on (to resume an interrupted epoch: the skipped minibatches are not sampled).
        """
        epoch = as_int("Loader.iter_epoch", "epoch", epoch, minimum=0)
        start = as_int("Loader.iter_epoch", "start", start, minimum=0)
        return EpochIterator(self, epoch, start)

    def order(self, epoch):
        """The seeds in the order epoch ``epoch`` visits them (over all ranks)."""
        if self.seed_order == "buffer-aware" and self.shuffle:
            return buffer_aware_order(self.seeds, self.features.bounds, self.seed, epoch)
        if self.seed_order == "owner" and self.shuffle:
            return owner_order(self.seeds, self.graph.owner(self.seeds), self.seed, epoch)
        return epoch_order(self.seeds, self.seed, epoch, self.shuffle)

    # ------------------------------------------------------------------ the producer
    def _produce(self, epoch, start, stats):
        """Yield the epoch's bulks, each a list of Batch (runs in the pipeline's thread)."""
        order = self.order(epoch)
        hi = self.batch_range()[1]
        b, k, m = self.batch_size, self.bulk_size, self.seeds.size
        options = self._sample_options
        for j in bulk_starts(self, start):
            t0, sent0 = time.perf_counter(), self._bytes_sent()
            if j is None:        # padding for a collective call; sampled, fetched, dropped
                # (same batch_size on every rank: a DistGraph checks that the ranks agree)
                mbs = sample(self.graph, order[:1], sampler=self.sampler, batch_size=b,
                             seed=self.seed, epoch=epoch,
                             batch_offset=self.num_batches + self.rank, **options)
            else:
                stop = min(j + k, hi)
                mbs = sample(self.graph, order[j * b: min(m, stop * b)], sampler=self.sampler,
                             batch_size=b, seed=self.seed, epoch=epoch, batch_offset=j,
                             **options)
            t1, sent1 = time.perf_counter(), self._bytes_sent()
            n_ids = [mb.n_id for mb in mbs]
            xs = self.features.fetch_bulk(n_ids) if self.features is not None \
                else [None] * len(mbs)
            t2, sent2 = time.perf_counter(), self._bytes_sent()
            add_bytes(stats["sampling_bytes"], sent0, sent1)
            add_bytes(stats["fetch_bytes"], sent1, sent2)
            if j is None:
                stats["fetch_seconds"] += t2 - t1
                continue
            batches = []
            for mb, x in zip(mbs, xs):
                y = None if self.labels is None else _take(self.labels, mb.n_id)
                bt = make_batch(mb, x, y, epoch=epoch, dtype=self.dtype)
                if self.device.type != "cpu":
                    bt = bt.pin_memory().to(self.device, non_blocking=True)
                if self.adjacency:
                    bt.prepare_adjacency()
                batches.append(bt)
            t3 = time.perf_counter()
            stats["sample_seconds"] += t1 - t0
            stats["fetch_seconds"] += t2 - t1
            stats["convert_seconds"] += t3 - t2
            stats["batches"] += len(mbs)
            stats["seeds"] += sum(mb.batch_size for mb in mbs)
            stats["sampled_nodes"] += sum(mb.num_nodes for mb in mbs)
            stats["sampled_edges"] += sum(sum(mb.num_sampled_edges) for mb in mbs)
            yield batches

    def _bytes_sent(self):
        """``{collective: bytes this rank sent}`` so far on the grids of the graph and the
        features (empty for in-memory data)."""
        total = {}
        for grid in self._grids:
            for kind, entry in grid.stats().items():
                total[kind] = total.get(kind, 0) + entry["sent"]
        return total

    def __repr__(self):
        return (f"Loader(num_nodes={self.num_nodes}, seeds={self.seeds.size}, "
                f"sampler={self.sampler!r}, batch_size={self.batch_size}, "
                f"bulk_size={self.bulk_size}, pipeline={self.pipeline}, "
                f"device={str(self.device)!r}, rank={self.rank}/{self.world_size})")


class EpochIterator:
    """The batches of one epoch; closing it (or dropping it) stops the background thread.

    Attributes
    ----------
    epoch : int
    stats : dict
        Filled as the epoch goes: ``batches``, ``seeds``, ``sampled_nodes``,
        ``sampled_edges``, and seconds spent in ``sample`` / ``fetch`` / ``convert`` (in the
        producer, overlapped with training when the pipeline is on), ``wait_seconds`` (the
        consumer waiting for the producer), and ``epoch_seconds`` (from the iterator's start
        to its end or ``close()``; :func:`~spsample.loader.balance_threads` reads the
        producer's share from them). ``sampling_bytes`` and ``fetch_bytes``: ``{collective:
        bytes}`` this rank sent while sampling and while fetching features (distributed data;
        padding bulks included, they are traffic too).
    """

    def __init__(self, loader, epoch, start=0):
        self.epoch = epoch
        self.stats = dict(batches=0, seeds=0, sampled_nodes=0, sampled_edges=0,
                          sample_seconds=0.0, fetch_seconds=0.0, convert_seconds=0.0,
                          wait_seconds=0.0, sampling_bytes={}, fetch_bytes={})
        self._t0 = time.perf_counter()
        loader.last_stats = self.stats
        lo, hi = loader.batch_range()
        self._remaining = max(0, hi - min(hi, lo + start))
        # The producer closes over the loader and the stats, never over this iterator, so an
        # abandoned iterator is collected and its __del__ stops the thread.
        produce = partial(loader._produce, epoch, start, self.stats)
        if loader.pipeline:
            self._source = Prefetcher(produce, loader.queue_size,
                                      name=f"spsample-loader-epoch{epoch}")
        else:
            self._source = produce()
        self._bulk = iter(())

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            for batch in self._bulk:
                self._remaining -= 1
                return batch
            t = time.perf_counter()
            try:
                self._bulk = iter(next(self._source))
            except BaseException:
                self.close()
                raise
            finally:
                self.stats["wait_seconds"] += time.perf_counter() - t

    def __len__(self):
        return self._remaining

    def close(self):
        """Stop producing (joins the background thread); idempotent."""
        if "epoch_seconds" not in self.stats:
            self.stats["epoch_seconds"] = time.perf_counter() - self._t0
        source, self._source = self._source, iter(())
        close = getattr(source, "close", None)
        if close is not None:
            close()
        self._bulk = iter(())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def bulk_starts(loader, start):
    """The global id of the first minibatch of each of this rank's bulks of an epoch, from its
    ``start``-th minibatch on; then, for a collective loader (a distributed graph or feature
    store), ``None`` for each padding bulk that the rank samples and drops so that every rank
    makes the same number of collective calls."""
    lo, hi = loader.batch_range()
    k = loader.bulk_size
    starts = list(range(min(hi, lo + start), hi, k))
    if loader.collective:
        n_bulks = -(-max(loader.steps_per_epoch - start, 0) // k)
        starts += [None] * (n_bulks - len(starts))
    return starts


def add_bytes(acc, before, after):
    for kind, sent in after.items():
        delta = sent - before.get(kind, 0)
        if delta:
            acc[kind] = acc.get(kind, 0) + delta


# ---------------------------------------------------------------------- argument resolution
def init_common(loader, where, kinds, sampler, batch_size, bulk_size, queue_size, seed, epoch,
                shuffle, pipeline, device, dtype, rank, world_size, comm):
    """Check the arguments every loader shares and set them on ``loader``; ``where`` names
    the loader in errors, ``kinds`` the samplers it is meant for."""
    if not isinstance(sampler, Sampler):
        fail(ArgumentTypeError, where, "sampler", f"must be a spsample Sampler ({kinds} or a "
             "subclass of spsample.Sampler)", type(sampler))
    loader.sampler = sampler
    loader.batch_size = as_int(where, "batch_size", batch_size, minimum=1)
    loader.bulk_size = as_int(where, "bulk_size", bulk_size, minimum=1)
    loader.queue_size = as_int(where, "queue_size", queue_size, minimum=1)
    loader.seed = as_int(where, "seed", seed, minimum=0)
    if loader.seed >= 2**64:
        fail(ArgumentError, where, "seed", "must be below 2**64", loader.seed)
    loader._next_epoch = as_int(where, "epoch", epoch, minimum=0)
    for name, value in (("shuffle", shuffle), ("pipeline", pipeline)):
        if not isinstance(value, (bool, np.bool_)):
            fail(ArgumentTypeError, where, name, "must be a bool", value)
    loader.shuffle, loader.pipeline = bool(shuffle), bool(pipeline)
    loader.device = resolve_device(device, where)
    loader.dtype = _resolve_dtype(dtype)
    loader.rank, loader.world_size = _resolve_world(rank, world_size, comm)


def _resolve_strategy(strategy, graph):
    """The ``strategy`` option for ``sample`` (only a DistGraph takes one)."""
    if strategy is None:
        return {}
    check_strategy(_WHERE, strategy, allow_none=True)
    return {} if isinstance(graph, Graph) else {"strategy": strategy}


def _grids_of(graph, features):
    """The distinct process grids of a DistGraph and a FeatureStore-like fetch source."""
    grids = []
    for owner in (graph, getattr(features, "store", None)):
        grid = getattr(owner, "grid", None)
        if grid is not None and callable(getattr(grid, "stats", None)) \
                and all(grid is not g for g in grids):
            grids.append(grid)
    return grids


def _dist_grid(data):
    """The process grid of a distributed graph (``DistGraph``) given as ``data``, or None."""
    if isinstance(data, Graph) or isinstance(getattr(data, "graph", None), Graph):
        return None
    grid = getattr(data, "grid", None)
    comm = getattr(grid, "comm", None)
    return grid if comm is not None and callable(getattr(comm, "allgather_object", None)) \
        else None


def _resolve_data(data):
    if isinstance(data, Graph):
        return data, None
    graph = getattr(data, "graph", None)
    if isinstance(graph, Graph) and hasattr(data, "features"):
        return graph, data                          # a Dataset
    if callable(getattr(data, "sample", None)) and hasattr(data, "num_nodes"):
        return data, None                           # a DistGraph
    fail(ArgumentTypeError, _WHERE, "data", "must be a spsample.Graph, Dataset or DistGraph",
         type(data))


def _resolve_seeds(seeds, dataset, n):
    if seeds is None:
        if dataset is not None and dataset.splits:
            return dataset.train_idx.copy()
        return np.arange(n, dtype=np.int64)
    if isinstance(seeds, str):
        parts = ("train", "val", "test")
        if seeds not in parts:
            fail(ArgumentError, _WHERE, "seeds", f"as a string must be one of {parts}", seeds)
        if dataset is None or not dataset.splits:
            fail(ArgumentError, _WHERE, "seeds", "names a split but data is not a Dataset "
                 "with splits", seeds)
        return dataset.split()[parts.index(seeds)].copy()
    seeds = check_seeds(_WHERE, seeds, n)
    srt = np.sort(seeds)
    dup = np.flatnonzero(srt[1:] == srt[:-1])
    if dup.size:
        fail(SeedError, _WHERE, "seeds", "must be distinct (each seed is visited once per "
             "epoch)", int(srt[dup[0]]))
    return seeds


def _resolve_labels(labels, n):
    if labels is None:
        return None
    if type(labels).__module__.startswith("torch"):
        if labels.dim() != 1 or labels.shape[0] != n:
            fail(ArgumentError, _WHERE, "labels", f"must have shape ({n},)", tuple(labels.shape))
        if labels.is_floating_point() or labels.is_complex():
            fail(ArgumentTypeError, _WHERE, "labels", "must hold integers", labels.dtype)
        return labels.long()
    labels = as_index_array(_WHERE, "labels", labels)
    if labels.size != n:
        fail(ArgumentError, _WHERE, "labels", f"must have one entry per node ({n})",
             labels.shape)
    return labels


def resolve_device(device, where=_WHERE):
    """``device`` as a ``torch.device`` that batches can be moved to and computed on.

    Raises
    ------
    ArgumentTypeError
        Not a ``str`` or ``torch.device``.
    ArgumentError
        A name torch does not know, a device that is not available here (``"cuda"``
        without a GPU), or ``"meta"`` (tensors without data: no batch can be copied there).
    """
    torch = import_torch(f"spsample.{where}")
    if not isinstance(device, (str, torch.device)):
        fail(ArgumentTypeError, where, "device", "must be a str or torch.device", device)
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        fail(ArgumentError, where, "device", "is not a device torch knows", device)
    if dev.type == "cpu":
        return dev
    if dev.type == "meta":
        fail(ArgumentError, where, "device", "holds no data (torch's 'meta' device): batches "
             "need a device such as 'cpu' or 'cuda'", str(device))
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError, AttributeError, ValueError) as exc:
        fail(ArgumentError, where, "device", f"is not available here ({exc})", str(device))
    return dev


def _resolve_dtype(dtype):
    import torch

    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    value = getattr(torch, dtype, None) if isinstance(dtype, str) else None
    if not isinstance(value, torch.dtype):
        fail(ArgumentError, _WHERE, "dtype", "must be a torch dtype or its name", dtype)
    return value


def _resolve_world(rank, world_size, comm):
    if comm is not None:
        # an mpi4py communicator, or a spsample one (MPIComm, ThreadComm: rank and size)
        mpi = callable(getattr(comm, "Get_rank", None))
        if not mpi and not (isinstance(getattr(comm, "rank", None), int)
                            and isinstance(getattr(comm, "size", None), int)):
            fail(ArgumentTypeError, _WHERE, "comm",
                 "must be an mpi4py or spsample.distributed communicator", type(comm))
        if rank is None:
            rank = comm.Get_rank() if mpi else comm.rank
        if world_size is None:
            world_size = comm.Get_size() if mpi else comm.size
    rank = 0 if rank is None else as_int(_WHERE, "rank", rank, minimum=0)
    world_size = 1 if world_size is None else as_int(_WHERE, "world_size", world_size,
                                                     minimum=1)
    if rank >= world_size:
        fail(ArgumentError, _WHERE, "rank", f"must be < world_size ({world_size})", rank)
    return rank, world_size


def _take(labels, n_id):
    if isinstance(labels, np.ndarray):
        return labels.take(n_id)
    import torch

    return labels.index_select(0, torch.from_dlpack(n_id).to(labels.device))
