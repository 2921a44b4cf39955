"""``spsample.sample``: bulk sampling of many minibatches in one pass per hop."""


from ..engine._plan_memo import memoise_plans
from ..engine._run import run_bulk
from .._errors import ArgumentError, ArgumentTypeError, SamplerError
from ..graph._graph import Graph
from .._validate import check_no_unknown, fail
from ..engine._batches import check_sample_args, check_seeds, sample_request, split_batches
from ..engine._protocol import Sampler
from ..graph._hetero import HeteroSchema
from ..engine._hetero_sample import run_global, sample_hetero
from ..gpu import CupyDevice, EmulatedDevice, host_seeds, sample_on_device
from ._layerwise import LADIES, FastGCN
from ._nodewise import NodeWise
from ._walks import LABOR, RandomWalk

__all__ = ["sample", "check_seeds", "check_sample_args", "split_batches", "run_bulk"]

# The built-ins' plans are kept by the graph between calls (spsample.engine._plan_memo).
memoise_plans(NodeWise([1]), LABOR([1]), RandomWalk(1), LADIES([1]), FastGCN([1]))


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
            fail(ArgumentTypeError, "sample", "graph", "must be a spsample.Graph or DistGraph",
                 type(graph))
        return impl(seeds, sampler=sampler, batch_size=batch_size, seed=seed, epoch=epoch,
                    batch_offset=batch_offset, **options)
    if options:
        check_no_unknown("sample", options, ())
    r = sample_request(graph.num_nodes, seeds, sampler, batch_size, seed, epoch, batch_offset)
    if getattr(sampler, "relation_fanouts", None) is not None:
        fail(SamplerError, "sample", "fanouts", "per relation need a HeteroGraph",
             show_value=False)
    if getattr(sampler, "disjoint", False):
        if device is not None:
            fail(ArgumentError, "sample", "device", "runs no disjoint sampling yet", device)
        return run_global(graph, r.seeds, r.sizes, r.batch_ids, r.batch_size, sampler, r.seed,
                          r.epoch)
    sampler.check_graph(graph)
    r.check_unique()
    if device is not None:
        return sample_on_device(graph, r.seeds, r.sizes, r.batch_ids, sampler, r.seed, r.epoch,
                                device)
    return run_bulk(graph, r.seeds, r.sizes, r.batch_ids, sampler, r.seed, r.epoch)


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
        check_no_unknown("sample", options, ())
    if not isinstance(sampler, Sampler):
        fail(ArgumentTypeError, "sample", "sampler", "must be a spsample Sampler (NodeWise, "
             "LABOR or a subclass)", type(sampler))
    return sample_hetero(graph, seeds, sampler=sampler, batch_size=batch_size, seed=seed,
                         epoch=epoch, batch_offset=batch_offset, seed_time=seed_time)


def _resolve_device(device, seeds):
    """``(device or None for the CPU, seeds as a host array)``; a device given by the seeds'
    array type when ``device`` is None."""
    if not (isinstance(device, (EmulatedDevice, CupyDevice)) or
            (isinstance(device, str) and device in ("cpu", "cuda", "emulated")) or device is None):
        fail(ArgumentError, "sample", "device", "must be None, 'cpu', 'cuda' or 'emulated'", device)
    if isinstance(device, str) and device == "cpu":
        return None, seeds
    on_gpu, seeds = host_seeds(seeds)
    if device is None and on_gpu:
        device = "cuda"
    return device, seeds
