"""``spsample.sample``: bulk sampling of many minibatches in one pass per hop."""

import numpy as np

from . import _rng
from ._engine import run_bulk
from ._errors import ArgumentError, ArgumentTypeError, SamplerError, SeedError
from ._graph import Graph
from ._validate import as_index_array, as_int, fail
from .samplers._protocol import Sampler

__all__ = ["sample", "check_seeds", "check_sample_args", "split_batches", "run_bulk"]

_MAX_BATCHES = 2**32


def sample(graph, seeds, *, sampler, batch_size, seed=0, epoch=0, batch_offset=0, device=None,
           seed_time=None, **options):
    """Sample the L-hop neighbourhoods of many minibatches at once.

    The seeds are cut into consecutive minibatches of ``batch_size`` (the last may be
    smaller; none is dropped); minibatch ``i`` gets the global id ``batch_offset + i``, and all
    of them are sampled together, one bulk pass per hop. Results depend only on
    ``(seed, epoch, global minibatch id)`` and the seeds of that minibatch: splitting the same
    seeds into several calls with matching ``batch_offset`` gives identical minibatches.

    Parameters
    ----------
    graph : Graph, HeteroGraph, distributed.DistGraph or distributed.DistHeteroGraph
        The adjacency (row v = the vertices v aggregates from). A ``DistGraph`` or
        ``DistHeteroGraph`` runs the distributed algorithm; every rank then passes its own
        seeds and ``batch_offset``. A :class:`~spsample.HeteroGraph` samples every relation
        (one engine step per relation and hop) and returns
        :class:`~spsample.HeteroMiniBatch` objects.
    seeds : array_like of int, shape (m,)
        Seed vertices. Within one minibatch they must be distinct (a vertex appears once in
        ``n_id``) unless the sampler is disjoint; across minibatches they may repeat. On a
        ``HeteroGraph``: ``(node_type, ids)`` or ``{node_type: ids}``, ids local to the type.
    sampler : Sampler
        ``NodeWise``, ``LADIES``, ``FastGCN`` or any subclass of :class:`Sampler`.
    batch_size : int
        Seeds per minibatch, ``>= 1``.
    seed : int
        RNG seed, ``0 <= seed < 2**64``.
    epoch : int
        Epoch number, ``0 <= epoch < 2**24``; keys the RNG so each epoch differs.
    batch_offset : int
        Global id of the first minibatch of this call.
    device : {None, "cpu", "cuda", "emulated"}
        Where the kernels run. ``None`` (the default): ``"cuda"`` when ``seeds`` is a CuPy
        array or a DLPack tensor on a CUDA device (e.g. a torch CUDA tensor), else the CPU.
        ``"cuda"``: the GPU kernels through CuPy (row-wise samplers: ``NodeWise``, ``LABOR``,
        ``RandomWalk``, compositions of the same vocabulary); the result's ``n_id`` and edge
        arrays are CuPy arrays, bit-identical to the CPU's. ``"emulated"``: the same GPU
        kernels run on the host (testing). Plain ``Graph`` only.
    seed_time : array_like of int or float, shape (m,), optional
        Temporal sampling (a temporal ``HeteroGraph``): each seed's time; only entries no
        later than it are sampled (edge times, else the source type's node times), and each
        seed gets its own subgraph (disjoint, as PyG). Integer times (e.g. nanoseconds) are
        compared exactly, never rounded through float64.
    **options
        Passed to the graph's distributed implementation (e.g. ``strategy="pull"``);
        rejected for a plain ``Graph``.

    Returns
    -------
    Bulk or HeteroBulk
        A list of ``ceil(m / batch_size)`` :class:`MiniBatch` objects, which are views of the
        bulk's flat arrays (``bulk.n_id``, ``bulk.node_offsets``, ``bulk.hops``); on a
        ``HeteroGraph`` a list of :class:`HeteroMiniBatch`.

    Raises
    ------
    SeedError, ArgumentError, ArgumentTypeError, SamplerError
        Naming the offending argument.

    Examples
    --------
    >>> import spsample
    >>> g = spsample.Graph.from_edge_index([1, 2, 0, 2, 0, 1], [0, 0, 1, 1, 2, 2])
    >>> batches = spsample.sample(g, [0, 1, 2], sampler=spsample.NodeWise([1]), batch_size=2)
    >>> [mb.batch_size for mb in batches]
    [2, 1]
    """
    from ._hetero import HeteroSchema
    if isinstance(graph, HeteroSchema):          # a HeteroGraph or a DistHeteroGraph
        return _sample_hetero(graph, seeds, sampler, batch_size, seed, epoch, batch_offset,
                              device, seed_time, options)
    if seed_time is not None:
        fail(ArgumentError, "sample", "seed_time", "needs a temporal HeteroGraph",
             show_value=False)
    device, seeds = _resolve_device(device, seeds)
    if not isinstance(graph, Graph):
        if device is not None:
            fail(ArgumentError, "sample", "device", "applies to a plain spsample.Graph (a "
                 "DistGraph samples on the CPU)", device)
        impl = getattr(graph, "sample", None)
        if impl is None:
            fail(ArgumentTypeError, "sample", "graph", "must be a spsample.Graph or DistGraph", type(graph))
        return impl(seeds, sampler=sampler, batch_size=batch_size, seed=seed, epoch=epoch,
                    batch_offset=batch_offset, **options)
    if options:
        from ._validate import check_no_unknown
        check_no_unknown("sample", options, ())
    seeds, clamped, seed, epoch, batch_offset = check_sample_args(
        graph.num_nodes, seeds, sampler, batch_size, seed, epoch, batch_offset)
    sizes = split_batches(seeds.size, clamped)
    batch_ids = batch_offset + np.arange(sizes.size, dtype=np.int64)
    if getattr(sampler, "relation_fanouts", None) is not None:
        fail(SamplerError, "sample", "fanouts", "per relation need a HeteroGraph",
             show_value=False)
    if getattr(sampler, "disjoint", False):
        if device is not None:
            fail(ArgumentError, "sample", "device", "runs no disjoint sampling yet", device)
        from ._hetero_sample import run_global     # ids in minibatches of batch_size
        return run_global(graph, seeds, sizes, batch_ids, int(batch_size), sampler, seed,
                          epoch)
    sampler.check_graph(graph)
    check_unique_per_batch(seeds, sizes)
    if device is not None:
        from .gpu import sample_on_device
        return sample_on_device(graph, seeds, sizes, batch_ids, sampler, seed, epoch, device)
    return run_bulk(graph, seeds, sizes, batch_ids, sampler, seed, epoch)


def _sample_hetero(graph, seeds, sampler, batch_size, seed, epoch, batch_offset, device,
                   seed_time, options):
    if device not in (None, "cpu"):
        fail(ArgumentError, "sample", "device", "must be None or 'cpu' for a HeteroGraph",
             device)
    if callable(getattr(graph, "sample", None)):     # distributed: collective, checks its own
        return graph.sample(seeds, sampler=sampler, batch_size=batch_size, seed=seed,
                            epoch=epoch, batch_offset=batch_offset, seed_time=seed_time,
                            **options)
    if options:
        from ._validate import check_no_unknown
        check_no_unknown("sample", options, ())
    if not isinstance(sampler, Sampler):
        fail(ArgumentTypeError, "sample", "sampler", "must be a spsample Sampler (NodeWise, "
             "LABOR or a subclass)", type(sampler))
    from ._hetero_sample import sample_hetero
    return sample_hetero(graph, seeds, sampler=sampler, batch_size=batch_size, seed=seed,
                         epoch=epoch, batch_offset=batch_offset, seed_time=seed_time)


def _resolve_device(device, seeds):
    """``(device or None for the CPU, seeds as a host array)``; a device given by the seeds'
    array type when ``device`` is None."""
    from .gpu import CupyDevice, EmulatedDevice, host_seeds
    if not (isinstance(device, (EmulatedDevice, CupyDevice)) or
            (isinstance(device, str) and device in ("cpu", "cuda", "emulated")) or device is None):
        fail(ArgumentError, "sample", "device", "must be None, 'cpu', 'cuda' or 'emulated'", device)
    if isinstance(device, str) and device == "cpu":
        return None, seeds
    on_gpu, seeds = host_seeds(seeds)
    if device is None and on_gpu:
        device = "cuda"
    return device, seeds


def check_seeds(where, seeds, num_nodes):
    """``seeds`` as a new int64 array of vertex ids in ``[0, num_nodes)``, non-empty, 1-D.

    Raises
    ------
    SeedError, ArgumentTypeError
        Naming ``seeds`` and the function ``where``.
    """
    seeds = as_index_array(where, "seeds", seeds, error_cls=SeedError)
    if seeds.size == 0:
        fail(SeedError, where, "seeds", "must not be empty", seeds.shape)
    lo, hi = int(seeds.min()), int(seeds.max())
    if lo < 0:
        fail(SeedError, where, "seeds", "must be non-negative vertex ids", lo)
    if hi >= num_nodes:
        fail(SeedError, where, "seeds", f"has an id >= num_nodes ({num_nodes})", hi)
    return seeds


def check_sample_args(num_nodes, seeds, sampler, batch_size, seed, epoch, batch_offset):
    """Validate the arguments of :func:`sample` (shared by the distributed path)."""
    where = "sample"
    if not isinstance(sampler, Sampler):
        fail(ArgumentTypeError, where, "sampler", "must be a spsample Sampler (NodeWise, LADIES, "
             "FastGCN or a subclass of spsample.Sampler)", type(sampler))
    seeds = check_seeds(where, seeds, num_nodes)
    batch_size = as_int(where, "batch_size", batch_size, minimum=1)
    seed = as_int(where, "seed", seed, minimum=0)
    if seed >= 2**64:
        fail(ArgumentError, where, "seed",
             "must be below 2**64", seed)
    epoch = as_int(where, "epoch", epoch, minimum=0)
    if epoch > _rng.MAX_EPOCH:
        fail(ArgumentError, where, "epoch", f"must be at most {_rng.MAX_EPOCH}", epoch)
    batch_offset = as_int(where, "batch_offset", batch_offset, minimum=0)
    batch_size = min(batch_size, seeds.size)      # more than every seed: one minibatch
    num_batches = -(-seeds.size // batch_size)
    if batch_offset + num_batches > _MAX_BATCHES:
        fail(ArgumentError, where, "batch_offset",
             f"plus the number of minibatches must stay below 2**32", batch_offset)
    return seeds, batch_size, seed, epoch, batch_offset


def split_batches(num_seeds, batch_size):
    """Sizes of the consecutive minibatches: full ones, then the remainder (never dropped)."""
    full, rest = divmod(num_seeds, batch_size)
    sizes = np.full(full + (rest > 0), batch_size, dtype=np.int64)
    if rest:
        sizes[-1] = rest
    return sizes


def check_unique_per_batch(seeds, sizes):
    """Reject a vertex repeated within one minibatch (``n_id`` holds each vertex once)."""
    batch = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    key = np.sort(batch * (int(seeds.max()) + 1) + seeds)
    dup = np.flatnonzero(key[1:] == key[:-1])
    if dup.size:
        m = int(seeds.max()) + 1
        fail(SeedError, "sample", "seeds",
             f"repeats vertex {int(key[dup[0]] % m)} within minibatch {int(key[dup[0]] // m)}; "
             "seeds must be distinct within a minibatch", show_value=False)
