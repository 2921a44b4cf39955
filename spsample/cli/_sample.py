"""``spsample sample [DATASET] [options]``: sampling statistics for a dataset.

Samples one epoch's minibatches (the dataset's training seeds, or every node) in bulks and
prints, per hop, the nodes and edges sampled, then the throughput in sampled edges per second
and the path that ran (the native kernels or NumPy). DATASET is an spsample HDF5 file, an
embedded dataset name (default: cora), or ``rmat:SCALE`` for a synthetic R-MAT graph.
Needs neither torch nor MPI.

A heterogeneous file (HeCo, a temporal SNAP list, a knowledge graph, ``convert``'s output) is
sampled node-wise per relation: ``--fanouts`` for every relation, ``--relation-fanouts
REL=F1,F2,...`` for some (``REL`` a relation name or ``SRC:NAME:DST``), seeds of
``--node-type`` (default the labelled target type); the report adds nodes per type and edges
per relation (a temporal graph is sampled without seed times: every entry).
"""

import argparse
import json
import math
import time

import numpy as np

from .. import native as _native
from .._errors import ArgumentError
from .._validate import check_memory
from ..graph._generate import rmat
from ..samplers._registry import NameView, names, registered
from ..samplers._sample import sample
from ._common import check_int, check_output, int_list, load_dataset

#: The samplers this command runs: every registered one (``spsample.samplers.register``), a
#: live view of the registry; their default fanouts (hop 1 first) are the registry's:
#: neighbours per vertex for node-wise sampling and LABOR, nodes per layer for the layer-wise
#: samplers; a random walk takes ``--walk-length`` steps instead.
SAMPLERS = NameView()
#: Steps of ``--sampler randomwalk`` unless ``--walk-length`` says otherwise.
DEFAULT_WALK_LENGTH = 5
#: R-MAT scales this command generates: 2**scale nodes, 16 * 2**scale drawn edges.
_RMAT_SCALES = (1, 31)
_RMAT_BYTES_PER_EDGE = 100   # the generator's arrays per drawn edge, roughly


def add_arguments(parser):
    """Add the ``sample`` arguments to ``parser`` (an ``argparse`` sub-parser)."""
    parser.add_argument("dataset", nargs="?", default="cora",
                        help="spsample HDF5 file, embedded dataset name or rmat:SCALE "
                             "(default: cora)")
    parser.add_argument("--sampler", choices=names(), default="nodewise",
                        help="sampling algorithm: node-wise (GraphSAGE), LABOR, layer-wise "
                             "(LADIES, FastGCN) or random walks (node2vec's when p or q is "
                             "not 1) (default: nodewise)")
    parser.add_argument("--fanouts", type=int_list, default=None, metavar="F1,F2,...",
                        help="per-hop fanouts, hop 1 first: neighbours per vertex for "
                             "nodewise and labor, nodes per layer for ladies and fastgcn "
                             f"(default: {_show(registered('nodewise').fanouts)} for nodewise "
                             f"and labor, {_show(registered('ladies').fanouts)} for the others"
                             f"{_others_defaults()}); not for randomwalk")
    parser.add_argument("--walk-length", type=int, default=None, metavar="L",
                        help=f"randomwalk: steps per walk (default: {DEFAULT_WALK_LENGTH})")
    parser.add_argument("--p", type=float, default=None, metavar="P",
                        help="randomwalk: node2vec's return parameter, > 0 (default: 1)")
    parser.add_argument("--q", type=float, default=None, metavar="Q",
                        help="randomwalk: node2vec's in-out parameter, > 0 (default: 1)")
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
    parser.add_argument("--node-type", default=None, metavar="TYPE",
                        help="heterogeneous datasets: the seeds' node type (default: the "
                             "labelled target type, else the type with the most vertices)")
    parser.add_argument("--relation-fanouts", action="append", default=[],
                        metavar="REL=F1,F2,...",
                        help="heterogeneous datasets: fanouts of one relation, REL its name "
                             "or SRC:NAME:DST (repeatable; 0 skips it at a hop; the others "
                             "take --fanouts)")


def run(args):
    """Run ``spsample sample``; returns the exit status (0 on success)."""
    _check_flags(args)
    graph, seeds, label = _graph_and_seeds(args.dataset, args.seeds, args.node_type)
    if hasattr(graph, "relations"):
        return _run_hetero(args, graph, seeds, label)
    if args.node_type is not None or args.relation_fanouts:
        flag = "--node-type" if args.node_type is not None else "--relation-fanouts"
        raise ArgumentError(f"spsample sample: argument '{flag}' applies to heterogeneous "
                            f"datasets only; {label!r} is homogeneous")
    sampler = _make_sampler(args)
    stats, path = _with_native_flag(args, _sample_epoch, graph, seeds, sampler)
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
    walk = registered(args.sampler, where="spsample sample", argname="--sampler").walk
    for flag, value in (("--walk-length", args.walk_length), ("--p", args.p), ("--q", args.q)):
        if value is not None and not walk:
            raise ArgumentError(f"spsample sample: argument '{flag}' applies to --sampler "
                                f"randomwalk (got {value} with --sampler {args.sampler})")
    if walk and args.fanouts is not None:
        raise ArgumentError("spsample sample: argument '--fanouts' does not apply to --sampler "
                            "randomwalk (one neighbour per step: use --walk-length)")
    check_int("sample", "--walk-length", args.walk_length, minimum=1, below=2**31)
    for flag, value in (("--p", args.p), ("--q", args.q)):
        if value is not None and not 0 < value < math.inf:
            raise ArgumentError(f"spsample sample: argument '{flag}' must be a finite number "
                                f"> 0 (got {value})")


def _make_sampler(args):
    """The registered sampler ``--sampler`` names, with its fanouts (or walk's options)."""
    entry = registered(args.sampler, where="spsample sample", argname="--sampler")
    if entry.walk:
        length = DEFAULT_WALK_LENGTH if args.walk_length is None else args.walk_length
        return entry.factory(length, p=1.0 if args.p is None else args.p,
                             q=1.0 if args.q is None else args.q)
    return entry.make(entry.fanouts if args.fanouts is None else args.fanouts)


def _others_defaults():
    """``; F for NAME`` for each registered sampler beyond the built-ins (for ``--help``)."""
    built_in = ("nodewise", "labor", "ladies", "fastgcn", "randomwalk")
    return "".join(f"; {_show(registered(n).fanouts)} for {n}" for n in names(walk=False)
                   if n not in built_in)


def _sample_epoch(args, graph, seeds, sampler):
    """Sample the epoch's minibatches in bulks; the per-hop counts and the time taken."""
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


def _graph_and_seeds(name, which, node_type=None):
    """``(graph, seeds, label)``; on a heterogeneous dataset ``seeds`` is ``(type, ids)``."""
    if name.startswith("rmat:"):
        graph = _rmat(name)
        return graph, np.arange(graph.num_nodes, dtype=np.int64), name
    dataset = load_dataset("sample", name, features=False)
    if hasattr(dataset.graph, "relations"):
        return dataset.graph, _hetero_seeds(dataset, which, node_type), dataset.name or name
    if which == "train" and dataset.splits:
        seeds = dataset.train_idx
    else:
        seeds = np.arange(dataset.num_nodes, dtype=np.int64)
    return dataset.graph, seeds, dataset.name or name


# ---------------------------------------------------------------------- heterogeneous datasets
def _hetero_seeds(dataset, which, node_type):
    """``(type, ids)``: the target type's training split (``--seeds train`` and the dataset
    has splits of the chosen type), else every vertex of the type."""
    g = dataset.graph
    if node_type is None:
        node_type = dataset.target_type or max(g.node_types, key=lambda t: g.num_nodes[t])
    elif node_type not in g.node_types:
        raise ArgumentError(f"spsample sample: argument '--node-type' must be one of "
                            f"{list(g.node_types)} (got {node_type!r})")
    if which == "train" and dataset.splits and node_type == dataset.target_type:
        return node_type, np.asarray(dataset.split()[0], dtype=np.int64)
    return node_type, np.arange(g.num_nodes[node_type], dtype=np.int64)


def _hetero_sampler(args, graph):
    """NodeWise with per-relation fanouts: ``--relation-fanouts`` for the relations it names,
    ``--fanouts`` (default 15,10,5) for every other."""
    entry = registered(args.sampler, where="spsample sample", argname="--sampler")
    if not entry.heterogeneous:
        raise ArgumentError(f"spsample sample: argument '--sampler' {args.sampler} samples "
                            "homogeneous graphs; heterogeneous datasets are sampled node-wise "
                            "per relation (--sampler nodewise)")
    default = tuple(entry.fanouts if args.fanouts is None else args.fanouts)
    fanouts = {rel: default for rel in graph.relations}
    for text in args.relation_fanouts:
        key, sep, values = text.partition("=")
        try:
            hops = int_list(values)
        except argparse.ArgumentTypeError:
            hops = None
        if not sep or hops is None or min(hops) < -1:
            raise ArgumentError(f"spsample sample: argument '--relation-fanouts' must look "
                                f"like REL=F1,F2,... with fanouts >= -1 (got {text!r})")
        parts = tuple(key.split(":"))
        rel = graph.relation(parts if len(parts) == 3 else key, where="spsample sample",
                             argname="--relation-fanouts")
        fanouts[rel] = hops
    if len({len(f) for f in fanouts.values()}) != 1:
        raise ArgumentError("spsample sample: argument '--relation-fanouts' must give as many "
                            f"hops as --fanouts ({len(default)})")
    return entry.make(fanouts)


def _with_native_flag(args, epoch, graph, seeds, sampler):
    """``(epoch(args, graph, seeds, sampler), path that ran)`` with the native kernels switched
    as ``--native`` says (``auto``: as they are), restored afterwards."""
    previous = _native.enabled()
    if args.native != "auto":
        _native.set_enabled(args.native == "on")
    try:
        stats = epoch(args, graph, seeds, sampler)
        return stats, _native.active_path()
    finally:
        _native.set_enabled(previous)


def _run_hetero(args, graph, seeds, label):
    """``spsample sample`` on a heterogeneous dataset: node-wise per relation, statistics per
    node type and per relation."""
    sampler = _hetero_sampler(args, graph)
    stats, path = _with_native_flag(args, _sample_epoch_hetero, graph, seeds, sampler)
    rels = sampler.fanouts_for(graph)
    stats.update(dataset=label, heterogeneous=True, node_type=seeds[0],
                 num_nodes=int(sum(graph.num_nodes.values())),
                 num_edges=int(sum(graph.num_edges.values())),
                 num_nodes_per_type=dict(graph.num_nodes),
                 num_edges_per_relation={_rel_key(r): int(e) for r, e in
                                         graph.num_edges.items()},
                 sampler=args.sampler, fanouts=list(sampler.fanouts),
                 relation_fanouts={_rel_key(r): list(f) for r, f in rels.items()},
                 temporal=bool(graph.is_temporal), batch_size=args.batch_size,
                 bulk_size=args.bulk_size, path=path,
                 threads=_native.get_num_threads() if path == "native" else 1)
    _print_stats(stats)
    _print_hetero(stats)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(stats, fh, indent=2)
    return 0


def _rel_key(rel):
    return ":".join(rel)


def _sample_epoch_hetero(args, graph, seeds, sampler):
    """The epoch's minibatches of ``seeds`` (``(type, ids)``) in bulks; counts per type and
    relation, and their sums per hop (the homogeneous fields)."""
    node_type, ids = seeds
    order = np.random.default_rng([args.seed, 0]).permutation(ids)
    num_batches = -(-order.size // args.batch_size)
    if args.max_batches is not None:
        num_batches = min(num_batches, args.max_batches)
        order = order[: num_batches * args.batch_size]
    hops = len(sampler.fanouts)
    nodes = {t: np.zeros(hops + 1, dtype=np.int64) for t in graph.node_types}
    edges = {r: np.zeros(hops, dtype=np.int64) for r in graph.relations}
    step = args.batch_size * args.bulk_size
    t0 = time.perf_counter()
    for j, lo in enumerate(range(0, order.size, step)):
        batches = sample(graph, (node_type, order[lo: lo + step]), sampler=sampler,
                         batch_size=args.batch_size, seed=args.seed, epoch=0,
                         batch_offset=j * args.bulk_size)
        for mb in batches:
            for t, counts in mb.num_sampled_nodes.items():
                nodes[t] += np.asarray(counts, dtype=np.int64)
            for r, counts in mb.num_sampled_edges.items():
                edges[r] += np.asarray(counts, dtype=np.int64)
    seconds = time.perf_counter() - t0
    per_hop_nodes = sum(nodes.values())
    per_hop_edges = sum(edges.values())
    total_edges = int(per_hop_edges.sum())
    return dict(batches=num_batches, seeds=int(order.size),
                sampled_nodes_per_hop=per_hop_nodes.tolist(),
                sampled_edges_per_hop=per_hop_edges.tolist(),
                sampled_nodes_per_type={t: v.tolist() for t, v in nodes.items()},
                sampled_edges_per_relation={_rel_key(r): v.tolist() for r, v in edges.items()},
                sampled_nodes=int(per_hop_nodes.sum()), sampled_edges=total_edges,
                seconds=seconds,
                sampled_edges_per_s=total_edges / seconds if seconds > 0 else 0.0)


def _print_hetero(stats):
    """Per node type and per relation: the counts of every hop, per minibatch."""
    batches = max(1, stats["batches"])
    note = " (temporal graph sampled without seed times: every entry)" \
        if stats["temporal"] else ""
    print(f"seeds of type {stats['node_type']!r}{note}")
    hops = len(stats["sampled_edges_per_hop"])
    heads = "".join(f"{'hop ' + str(h):>12}" for h in range(hops + 1))
    width = max([24] + [len(t) for t in stats["sampled_nodes_per_type"]]
                + [len(r) for r in stats["sampled_edges_per_relation"]])
    print(f"{'nodes per batch, type':<{width}}{heads}")
    for t, counts in stats["sampled_nodes_per_type"].items():
        print(f"{t:<{width}}" + "".join(f"{c / batches:>12,.1f}" for c in counts))
    heads = "".join(f"{'hop ' + str(h):>12}" for h in range(1, hops + 1))
    print(f"{'edges per batch, relation':<{width}}{heads}{'fanouts':>14}")
    for r, counts in stats["sampled_edges_per_relation"].items():
        print(f"{r:<{width}}" + "".join(f"{c / batches:>12,.1f}" for c in counts)
              + f"{_show(stats['relation_fanouts'][r]):>14}")


def _rmat(name):
    """The R-MAT graph ``rmat:SCALE``, its scale checked against the memory it would take."""
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
