"""``spsample sample [DATASET] [options]``: sampling statistics for a dataset.

Samples one epoch's minibatches (the dataset's training seeds, or every node) in bulks and
prints, per hop, the nodes and edges sampled, then the throughput in sampled edges per second
and the path that ran (the native kernels or NumPy). DATASET is an spsample HDF5 file, an
embedded dataset name (default: cora), or ``rmat:SCALE`` for a synthetic R-MAT graph.
"""

import json
import time

import numpy as np


def add_arguments(parser):
    """Add the ``sample`` arguments to ``parser`` (an ``argparse`` sub-parser)."""
    from ._cli_train import _int_list
    from .train import SAMPLERS

    parser.add_argument("dataset", nargs="?", default="cora",
                        help="spsample HDF5 file, embedded dataset name or rmat:SCALE "
                             "(default: cora)")
    parser.add_argument("--sampler", choices=SAMPLERS, default="nodewise")
    parser.add_argument("--fanouts", type=_int_list, default=(15, 10, 5), metavar="F1,F2,...",
                        help="per-hop fanouts, hop 1 first (default: 15,10,5)")
    parser.add_argument("--batch-size", type=int, default=1024,
                        help="seeds per minibatch (default: 1024)")
    parser.add_argument("--bulk-size", type=int, default=16,
                        help="minibatches per bulk sample() call (default: 16)")
    parser.add_argument("--seeds", choices=("train", "all"), default="train",
                        help="the training split (when the dataset has one) or every node")
    parser.add_argument("--max-batches", type=int, default=None,
                        help="stop after this many minibatches")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--native", choices=("auto", "on", "off"), default="auto",
                        help="use the native kernels (auto: when built)")
    parser.add_argument("--json", default=None, metavar="PATH",
                        help="also write the statistics as JSON to PATH")


def run(args):
    """Run ``spsample sample``; returns the exit status (0 on success)."""
    from . import _native
    from ._errors import ArgumentError
    from ._sample import sample
    from .train import make_sampler

    for name in ("batch_size", "bulk_size"):
        if getattr(args, name) < 1:
            raise ArgumentError(f"spsample sample: argument '--{name.replace('_', '-')}' "
                                f"must be >= 1 (got {getattr(args, name)})")
    graph, seeds, label = _graph_and_seeds(args.dataset, args.seeds)
    sampler = make_sampler(args.sampler, args.fanouts)
    previous = _native.enabled()
    if args.native != "auto":
        _native.set_enabled(args.native == "on")
    try:
        order = np.random.default_rng([args.seed, 0]).permutation(seeds)
        num_batches = -(-order.size // args.batch_size)
        if args.max_batches is not None:
            num_batches = min(num_batches, max(1, args.max_batches))
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
        path = _native.active_path()
    finally:
        _native.set_enabled(previous)
    total_edges = int(edges.sum())
    stats = dict(dataset=label, num_nodes=int(graph.num_nodes), num_edges=int(graph.num_edges),
                 sampler=args.sampler, fanouts=list(sampler.fanouts),
                 batch_size=args.batch_size, bulk_size=args.bulk_size, batches=num_batches,
                 seeds=int(order.size), sampled_nodes_per_hop=nodes.tolist(),
                 sampled_edges_per_hop=edges.tolist(), sampled_nodes=int(nodes.sum()),
                 sampled_edges=total_edges, seconds=seconds,
                 sampled_edges_per_s=total_edges / seconds if seconds > 0 else 0.0,
                 path=path, threads=_native.get_num_threads() if path == "native" else 1)
    print(f"{label}: {graph.num_nodes} nodes, {graph.num_edges} edges; {args.sampler} "
          f"{','.join(map(str, sampler.fanouts))}, {num_batches} minibatches of "
          f"{args.batch_size} ({order.size} seeds), bulks of {args.bulk_size}")
    print(f"{'hop':>5} {'nodes':>14} {'per batch':>12} {'edges':>14} {'per batch':>12}")
    for h in range(hops + 1):
        e = f"{edges[h - 1]:>14,d} {edges[h - 1] / num_batches:>12,.1f}" if h else \
            f"{'-':>14} {'-':>12}"
        print(f"{h:>5} {nodes[h]:>14,d} {nodes[h] / num_batches:>12,.1f} {e}")
    print(f"total {stats['sampled_nodes']:,d} nodes, {total_edges:,d} edges in "
          f"{seconds:.3f}s: {stats['sampled_edges_per_s']:,.0f} sampled edges/s "
          f"({path} path, {stats['threads']} thread(s))")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(stats, fh, indent=2)
    return 0


def _graph_and_seeds(name, which):
    from ._cli_train import _load_dataset
    from ._errors import ArgumentError

    if name.startswith("rmat:"):
        from ._generate import rmat

        try:
            scale = int(name[5:])
        except ValueError:
            raise ArgumentError(f"spsample sample: argument 'dataset' rmat:SCALE needs an "
                                f"integer scale (got {name!r})") from None
        graph = rmat(scale, seed=0)
        return graph, np.arange(graph.num_nodes, dtype=np.int64), name
    dataset = _load_dataset(name)
    if which == "train" and dataset.splits:
        seeds = dataset.train_idx
    else:
        seeds = np.arange(dataset.num_nodes, dtype=np.int64)
    return dataset.graph, seeds, dataset.name or name
