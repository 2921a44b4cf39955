"""``spsample sample [DATASET] [options]``: sampling statistics for a dataset.

Samples one epoch's minibatches (the dataset's training seeds, or every node) in bulks and
prints, per hop, the nodes and edges sampled, then the throughput in sampled edges per second
and the path that ran (the native kernels or NumPy). DATASET is an spsample HDF5 file, an
embedded dataset name (default: cora), or ``rmat:SCALE`` for a synthetic R-MAT graph.
Needs neither torch nor MPI.
"""

import json
import time

import numpy as np

from ._cli_common import check_int, check_output, load_dataset

#: The samplers this command runs, and their default fanouts (hop 1 first): neighbours per
#: vertex for node-wise sampling, nodes per layer for the layer-wise samplers.
SAMPLERS = ("nodewise", "ladies", "fastgcn")
DEFAULT_FANOUTS = {"nodewise": (15, 10, 5), "ladies": (1024, 1024, 1024),
                   "fastgcn": (1024, 1024, 1024)}
#: R-MAT scales this command generates: 2**scale nodes, 16 * 2**scale drawn edges.
_RMAT_SCALES = (1, 31)
_RMAT_BYTES_PER_EDGE = 100   # the generator's arrays per drawn edge, roughly


def add_arguments(parser):
    """Add the ``sample`` arguments to ``parser`` (an ``argparse`` sub-parser)."""
    from ._cli_train import _int_list

    parser.add_argument("dataset", nargs="?", default="cora",
                        help="spsample HDF5 file, embedded dataset name or rmat:SCALE "
                             "(default: cora)")
    parser.add_argument("--sampler", choices=SAMPLERS, default="nodewise",
                        help="sampling algorithm: node-wise (GraphSAGE) or layer-wise "
                             "(LADIES, FastGCN) (default: nodewise)")
    parser.add_argument("--fanouts", type=_int_list, default=None, metavar="F1,F2,...",
                        help="per-hop fanouts, hop 1 first: neighbours per vertex for "
                             "nodewise, nodes per layer for ladies and fastgcn (default: "
                             f"{_show(DEFAULT_FANOUTS['nodewise'])} for nodewise, "
                             f"{_show(DEFAULT_FANOUTS['ladies'])} for the others)")
    parser.add_argument("--batch-size", type=int, default=1024,
                        help="seeds per minibatch (default: 1024)")
    parser.add_argument("--bulk-size", type=int, default=16,
                        help="minibatches per bulk sample() call (default: 16)")
    parser.add_argument("--seeds", choices=("train", "all"), default="train",
                        help="the training split (when the dataset has one) or every node "
                             "(default: train; every node for a dataset without splits)")
    parser.add_argument("--max-batches", type=int, default=None,
                        help="stop after this many minibatches (default: the whole epoch)")
    parser.add_argument("--seed", type=int, default=0,
                        help="random seed of the shuffle and the samples, 0 <= SEED < 2**64 "
                             "(default: 0)")
    parser.add_argument("--native", choices=("auto", "on", "off"), default="auto",
                        help="use the native kernels (auto: when built)")
    parser.add_argument("--json", default=None, metavar="PATH",
                        help="also write the statistics as JSON to PATH")


def run(args):
    """Run ``spsample sample``; returns the exit status (0 on success)."""
    from . import _native

    _check_flags(args)
    graph, seeds, label = _graph_and_seeds(args.dataset, args.seeds)
    sampler = _make_sampler(args.sampler, args.fanouts)
    previous = _native.enabled()
    if args.native != "auto":
        _native.set_enabled(args.native == "on")
    try:
        stats = _sample_epoch(args, graph, seeds, sampler)
        path = _native.active_path()
    finally:
        _native.set_enabled(previous)
    stats.update(dataset=label, num_nodes=int(graph.num_nodes),
                 num_edges=int(graph.num_edges), sampler=args.sampler,
                 fanouts=list(sampler.fanouts), batch_size=args.batch_size,
                 bulk_size=args.bulk_size, path=path,
                 threads=_native.get_num_threads() if path == "native" else 1)
    _print_stats(stats)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(stats, fh, indent=2)
    return 0


def _check_flags(args):
    """Every flag checked before any work (an unwritable --json would lose the run)."""
    check_int("sample", "--batch-size", args.batch_size, minimum=1)
    check_int("sample", "--bulk-size", args.bulk_size, minimum=1)
    check_int("sample", "--max-batches", args.max_batches, minimum=1)
    check_int("sample", "--seed", args.seed, minimum=0, below=2**64)
    check_output("sample", "--json", args.json)


def _make_sampler(name, fanouts):
    from .samplers import LADIES, FastGCN, NodeWise

    classes = dict(nodewise=NodeWise, ladies=LADIES, fastgcn=FastGCN)
    return classes[name](list(DEFAULT_FANOUTS[name] if fanouts is None else fanouts))


def _sample_epoch(args, graph, seeds, sampler):
    """Sample the epoch's minibatches in bulks; the per-hop counts and the time taken."""
    from ._sample import sample

    order = np.random.default_rng([args.seed, 0]).permutation(seeds)
    num_batches = -(-order.size // args.batch_size)
    if args.max_batches is not None:
        num_batches = min(num_batches, args.max_batches)
        order = order[: num_batches * args.batch_size]
    hops = len(sampler.fanouts)
    nodes = np.zeros(hops + 1, dtype=np.int64)
    edges = np.zeros(hops, dtype=np.int64)
    step = args.batch_size * args.bulk_size
    t0 = time.perf_counter()
    for j, lo in enumerate(range(0, order.size, step)):
        batches = sample(graph, order[lo: lo + step], sampler=sampler,
                         batch_size=args.batch_size, seed=args.seed, epoch=0,
                         batch_offset=j * args.bulk_size)
        for mb in batches:
            nodes += mb.num_sampled_nodes
            edges += mb.num_sampled_edges
    seconds = time.perf_counter() - t0
    total_edges = int(edges.sum())
    return dict(batches=num_batches, seeds=int(order.size),
                sampled_nodes_per_hop=nodes.tolist(), sampled_edges_per_hop=edges.tolist(),
                sampled_nodes=int(nodes.sum()), sampled_edges=total_edges, seconds=seconds,
                sampled_edges_per_s=total_edges / seconds if seconds > 0 else 0.0)


def _print_stats(stats):
    batches = stats["batches"]
    nodes, edges = stats["sampled_nodes_per_hop"], stats["sampled_edges_per_hop"]
    print(f"{stats['dataset']}: {stats['num_nodes']} nodes, {stats['num_edges']} edges; "
          f"{stats['sampler']} {_show(stats['fanouts'])}, {_plural(batches, 'minibatch')} "
          f"of {stats['batch_size']} ({stats['seeds']} seeds), bulks of {stats['bulk_size']}")
    print(f"{'hop':>5} {'nodes':>14} {'per batch':>12} {'edges':>14} {'per batch':>12}")
    for h in range(len(nodes)):
        e = f"{edges[h - 1]:>14,d} {edges[h - 1] / batches:>12,.1f}" if h else \
            f"{'-':>14} {'-':>12}"
        print(f"{h:>5} {nodes[h]:>14,d} {nodes[h] / batches:>12,.1f} {e}")
    print(f"total {stats['sampled_nodes']:,d} nodes, {stats['sampled_edges']:,d} edges in "
          f"{stats['seconds']:.3f}s: {stats['sampled_edges_per_s']:,.0f} sampled edges/s "
          f"({stats['path']} path, {_plural(stats['threads'], 'thread')})")


def _graph_and_seeds(name, which):
    if name.startswith("rmat:"):
        graph = _rmat(name)
        return graph, np.arange(graph.num_nodes, dtype=np.int64), name
    dataset = load_dataset("sample", name, features=False)
    if which == "train" and dataset.splits:
        seeds = dataset.train_idx
    else:
        seeds = np.arange(dataset.num_nodes, dtype=np.int64)
    return dataset.graph, seeds, dataset.name or name


def _rmat(name):
    """The R-MAT graph ``rmat:SCALE``, its scale checked against the memory it would take."""
    from ._errors import ArgumentError
    from ._generate import rmat
    from ._validate import check_memory

    lo, hi = _RMAT_SCALES
    try:
        scale = int(name[5:])
    except ValueError:
        raise ArgumentError(f"spsample sample: argument 'dataset' rmat:SCALE needs an "
                            f"integer scale (got {name!r})") from None
    if not lo <= scale <= hi:
        raise ArgumentError(f"spsample sample: argument 'dataset' rmat:SCALE needs "
                            f"{lo} <= SCALE <= {hi} (got {name!r})")
    check_memory("spsample sample", "dataset", _RMAT_BYTES_PER_EDGE * (16 << scale),
                 f"an R-MAT graph of 2**{scale} nodes and {16 << scale:,d} edges",
                 "choose a smaller rmat:SCALE")
    return rmat(scale, seed=0)


def _plural(count, word):
    return f"{count} {word}" + ("" if count == 1 else ("es" if word.endswith("ch") else "s"))


def _show(values):
    return ",".join(str(v) for v in values)
