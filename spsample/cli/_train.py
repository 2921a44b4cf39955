"""``spsample train [DATASET] [options]``: GNN node classification with spsample batches.

With no arguments it trains on the Cora dataset embedded in the package and prints the test
accuracy of the best-validation model. DATASET is an spsample HDF5 file (``spsample convert``
makes one) or the name of an embedded dataset. Under ``mpiexec -n P`` the ranks train
data-parallel (each a disjoint share of every epoch's minibatches, gradients all-reduced) on
sharded data: ``--replication c`` arranges the ranks as ``P / c`` process rows of ``c``
replicas; each rank reads only its process row's block of graph rows and feature rows
(``DistGraph.load``, ``FeatureStore.load``: CSR shards for sparse features), samples by
pushing frontiers to the rows' owners and fetches feature rows by all-to-all. A heterogeneous
file trains the same way with its
relations' rows split per node type (``DistHeteroGraph``), its features held whole by every
rank. ``--replicate-graph`` keeps the whole dataset on
every rank instead (with ``--replication``: the whole graph, features sharded). The
minibatches, and so the losses, are the same whichever layout is chosen. ``--permutation``
trains a dataset relabelled by ``spsample partition`` in its original ids: the sharded ranks
read the relabelled file's blocks (its locality), and the run is the original dataset's.
"""

import json
import os
import sys

import numpy as np

from .._errors import ArgumentError
from ..native import max_threads
from ..distributed import (STRATEGIES, DistGraph, Grid, ShardedDataset, launched_under_mpi,
                           load_hetero_dataset, registered_strategy)
from ..distributed._collective import agree
from ..distributed._comm import mpi_world
from ..distributed._partition import load_partition, relabel
from ..io import Dataset, HeteroDataset, read_feature_rows, read_node_targets
from ..io._h5 import as_path, is_csr_group, open_file
from ..io._hdf5 import open_layout, read_sparse_features
from ..samplers._registry import names, registered
from ._common import (agreed, check_finite, check_output, dataset_layout, dataset_path,
                      int_list, load_dataset, same_everywhere)
from ._tasks import _check, check_link_numbers, refuse_unlabelled, run_task

#: Flags (parser destinations) that may differ between the ranks of an ``mpiexec`` job: paths
#: to each rank's copy of a file, what each rank prints, its threads and device. Every other
#: flag must be the same on every rank (checked before any work).
PER_RANK_FLAGS = ("dataset", "metrics", "checkpoint", "resume", "permutation", "quiet",
                  "threads", "sampler_threads", "device")

#: Library argument names the task functions and models report, as the user typed them (the
#: models' width ``hidden_channels`` is ``--hidden``).
ARGUMENT_FLAGS = {"data": "dataset", "hidden_channels": "--hidden"}


def argument_flags(args):
    """More of :data:`ARGUMENT_FLAGS` for the run ``args``: ``--task link``'s encoder is
    ``--hidden`` wide at its output too (``out_channels``)."""
    return {"out_channels": "--hidden"} if getattr(args, "task", None) == "link" else {}


def add_arguments(parser):
    """Add the ``train`` arguments to ``parser`` (an ``argparse`` sub-parser)."""
    from ..train import TrainConfig
    from ..train._trainer import MODELS

    d = TrainConfig()
    parser.add_argument("dataset", nargs="?", default="cora",
                        help="spsample HDF5 file or embedded dataset name (default: cora)")
    parser.add_argument("--sampler", choices=names(trainable=True), default=d.sampler,
                        help=f"sampling algorithm (default: {d.sampler}); nodewise and labor "
                             "train GraphSAGE, ladies and fastgcn a GCN aggregating with their "
                             "importance weights (see --model)")
    parser.add_argument("--fanouts", type=int_list, default=None, metavar="F1,F2,...",
                        help="per-hop fanouts, hop 1 first (nodes per layer for ladies and "
                             "fastgcn); one GNN layer per hop (default: "
                             f"{_show(registered('nodewise').train_fanouts)} for nodewise "
                             f"and labor, {_show(registered('ladies').train_fanouts)} for "
                             "ladies and fastgcn, the registration's for another sampler; "
                             "--task link on a temporal graph, where every seed is its own "
                             "subgraph: the first of 10,10, 10,5 and 5,5 whose subgraphs "
                             "hold at most 32 vertices per seed, measured on one training "
                             "minibatch)")
    parser.add_argument("--eval-fanouts", type=int_list, default=None, metavar="F1,F2,...",
                        help="fanouts for validation/test (default: all neighbours for "
                             "nodewise and labor, the training fanouts for layer-wise samplers)")
    parser.add_argument("--task", choices=("node", "link"), default="node",
                        help="node classification (default; a heterogeneous file trains a "
                             "heterogeneous GraphSAGE on its target type) or link "
                             "prediction (GraphSAGE encoder + dot-product decoder; test AUC "
                             "and MRR)")
    parser.add_argument("--relation", type=_relation, default=None, metavar="SRC,NAME,DST",
                        help="--task link on a heterogeneous file: the relation to predict "
                             "(default: the first; refused elsewhere)")
    parser.add_argument("--neg-ratio", type=float, default=1.0,
                        help="--task link: negatives per training edge (default: 1)")
    parser.add_argument("--eval-negatives", type=int, default=None,
                        help="--task link: strict negatives per validation/test edge for AUC "
                             "and MRR (default: the first of 20, 10, 5, 2, 1 with which "
                             "validation samples at most half the seeds of a training "
                             "epoch: 20 on a random 85/5/10 split, 5 on a temporal 70/15/15 "
                             "one)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"seeds per minibatch (default: {d.batch_size}; 512 edges for "
                             "--task link)")
    parser.add_argument("--eval-batch-size", type=int, default=None,
                        help=f"seeds per evaluation minibatch (default: {d.eval_batch_size}; "
                             "--task link: seed edges, the most, up to --batch-size, whose "
                             "minibatch samples no more vertices than a training one, "
                             "estimated from the mean degree)")
    parser.add_argument("--bulk-size", type=int, default=d.bulk_size,
                        help=f"minibatches sampled together (default: {d.bulk_size})")
    parser.add_argument("--epochs", type=int, default=d.epochs,
                        help=f"training epochs (default: {d.epochs})")
    parser.add_argument("--lr", type=float, default=d.lr,
                        help=f"Adam learning rate (default: {d.lr})")
    parser.add_argument("--scale-lr", action="store_true",
                        help="multiply the learning rate by the number of MPI ranks")
    parser.add_argument("--weight-decay", type=float, default=d.weight_decay,
                        help=f"L2 penalty (default: {d.weight_decay})")
    parser.add_argument("--hidden", type=int, default=d.hidden,
                        help=f"hidden channels (default: {d.hidden})")
    parser.add_argument("--dropout", type=float, default=d.dropout,
                        help=f"dropout probability (default: {d.dropout})")
    parser.add_argument("--no-input-dropout", action="store_true",
                        help="dropout between layers only, not on the features")
    parser.add_argument("--model", choices=MODELS, default=d.model,
                        help="sage (GraphSAGE) or gcn (importance-weighted GCN); auto: sage "
                             "for nodewise and labor, gcn for ladies and fastgcn")
    parser.add_argument("--conv", choices=("auto", "pyg", "torch"), default=d.conv,
                        help="GraphSAGE layers: the built-in ones (auto, torch: faster on "
                             "CPU) or PyG's SAGEConv (pyg); both take sparse features without "
                             "densifying them")
    parser.add_argument("--aggregation", choices=("spmm", "scatter"), default=d.aggregation,
                        help="built-in layers: aggregate by CSR sparse-dense products "
                             "(default) or by scatter-add")
    parser.add_argument("--sparse-features", choices=("auto", "on", "off"),
                        default=d.sparse_features,
                        help="keep features in CSR form and project them without densifying "
                             "(auto: features stored sparse, or at most 5%% non-zero; off "
                             "densifies them, which can take a lot of memory and time)")
    parser.add_argument("--normalize", choices=("row", "none"), default=d.normalize,
                        help="feature normalisation (default: row sums to 1)")
    parser.add_argument("--split", default=None,
                        help="dataset split name, or 'random' for a random 60/20/20 split "
                             "(default: the dataset's default split, random if it has none); "
                             "--task link: auto (default: the file's stored edge splits, else "
                             "chronological 70/15/15 on a temporal graph, else random "
                             "85/5/10 on a homogeneous one), random, time or stored")
    parser.add_argument("--split-seed", type=int, default=None,
                        help="seed of the random split (default: --seed)")
    parser.add_argument("--seed", type=int, default=d.seed, help="random seed (default: 0)")
    parser.add_argument("--device", default=d.device, help="torch device (default: cpu)")
    parser.add_argument("--threads", type=_threads_arg, default="auto", metavar="N|auto",
                        help="torch threads per process (default: auto: before each epoch the "
                             "cores of the process, divided among the MPI ranks of the node, "
                             "are split between the model and the sampler from the sampler's "
                             "measured share of the last epoch)")
    parser.add_argument("--sampler-threads", type=_threads_arg, default="auto",
                        metavar="N|auto",
                        help="native sampler threads (default: auto, or SPSAMPLE_THREADS)")
    parser.add_argument("--no-pipeline", action="store_true",
                        help="sample in the training thread (no background prefetch)")
    parser.add_argument("--metrics", default=None, metavar="PATH",
                        help="write the run's metrics as JSON to PATH")
    parser.add_argument("--checkpoint", default=None, metavar="PATH",
                        help="save a checkpoint to PATH after every epoch (every task: node, "
                             "heterogeneous, link)")
    parser.add_argument("--resume", default=None, metavar="PATH",
                        help="resume from a checkpoint (same settings; continues to --epochs "
                             "with the losses of an uninterrupted run)")
    parser.add_argument("--replication", type=int, default=None, metavar="C",
                        help="under mpiexec: the ranks as P/C process rows of C replicas, each "
                             "rank holding its process row's block of graph and feature rows "
                             "(C divides P; default 1: every rank a distinct block; C = P "
                             "holds everything everywhere). `spsample plan` recommends one")
    parser.add_argument("--replicate-graph", action="store_true",
                        help="under mpiexec: every rank holds the whole graph (sampling needs "
                             "no communication); alone it keeps the whole dataset on every "
                             "rank, with --replication C the features stay sharded")
    parser.add_argument("--permutation", default=None, metavar="PERM",
                        help="DATASET was relabelled by `spsample partition` and PERM is its "
                             "permutation (<out>.perm.npz): train in the original ids (ranks "
                             "still read the relabelled blocks), so the minibatches and losses "
                             "are those of the original dataset")
    parser.add_argument("--order", choices=("random", "owner"), default=d.order,
                        help="training seeds' order: one random permutation per epoch "
                             "(default), or, on sharded data, each rank's minibatches from "
                             "the seeds its process row holds (fewer bytes on a graph "
                             "partitioned by `spsample partition`; minibatches then depend "
                             "on --replication and the rank count)")
    parser.add_argument("--strategy", choices=STRATEGIES, default=d.strategy,
                        help="sharded graph: where each hop selects (same minibatches "
                             f"either way; default {d.strategy}): {_strategy_help()}")
    parser.add_argument("--mpi", choices=("auto", "on", "off"), default="auto",
                        help="data-parallel over MPI ranks: auto = when launched by mpiexec "
                             "with more than one rank")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bars (drawn only when stderr is a terminal); the "
                             "per-epoch lines are still printed")


def run(args):
    """Run ``spsample train``; returns the exit status (0 on success)."""
    _check_flags(args)
    from ..train import Trainer

    comm = args._world if getattr(args, "_world", None) is not None else \
        _communicator(args.mpi)
    rank = 0 if comm is None else comm.rank
    config = _config(args)
    if _sharded(args, comm):
        dataset = _load_sharded(args, comm)
    else:       # each rank reads its own copy: a damaged one fails every rank together
        dataset = agreed(args, "spsample train", lambda: _in_original_ids(
            load_dataset("train", args.dataset), args.permutation))
        same_everywhere(args, "spsample train", "the dataset", dataset)

    if args.task == "link" or isinstance(dataset, HeteroDataset):
        return run_task(args, dataset, comm)
    if getattr(dataset, "labels", None) is None:
        refuse_unlabelled(dataset, args.dataset)
    trainer = Trainer(dataset, config, comm=comm)
    if args.resume:
        agreed(args, "spsample train", lambda: _resume(trainer, args.resume))
    say = (lambda text: print(text, flush=True)) if rank == 0 else (lambda text: None)
    say(_summary(args, dataset, trainer, comm))
    progress = not args.quiet and sys.stderr.isatty()
    metrics = trainer.fit(checkpoint=args.checkpoint, progress=progress,
                          log=lambda entry: say(_epoch_line(entry, config.epochs)))
    trainer.close()
    say(_result_line(metrics))
    if args.metrics and rank == 0:
        with open(args.metrics, "w") as fh:
            json.dump(metrics, fh, indent=2)
    return 0


def check(args):
    """This rank's flags and files, checked before any work (under ``mpiexec`` the command
    line agrees on the outcome across the ranks, so that one rank's bad flag or missing file
    ends every rank with the same error): outputs writable, numbers in range (every
    :class:`~spsample.train.TrainConfig` field), the dataset present and readable, and the
    task's flags."""
    _check_flags(args)
    _config(args)
    hetero = dataset_layout("train", args.dataset) == "hetero"
    if args.task == "link" or hetero:
        _check(args, None, hetero)


def _strategy_help():
    """The registered strategies (``spsample.distributed.STRATEGIES``), one clause each."""
    return "; ".join(f"{name}: {registered_strategy(name).description or name}"
                     for name in STRATEGIES)


def _check_flags(args):
    """Every flag checked before any work: outputs writable, numbers in range."""
    for flag in ("--lr", "--weight-decay", "--dropout", "--neg-ratio"):
        check_finite("train", flag, getattr(args, flag[2:].replace("-", "_")))
    check_link_numbers(args)
    check_output("train", "--metrics", args.metrics)
    check_output("train", "--checkpoint", args.checkpoint)
    if args.relation is not None and args.task != "link":
        raise ArgumentError("spsample train: argument '--relation' applies to --task link on "
                            "a heterogeneous file (the relation to predict); node "
                            f"classification has none (got {','.join(args.relation)!r})")
    for flag in ("--resume", "--permutation"):
        path = getattr(args, flag[2:])
        if path and not os.path.isfile(path):
            raise ArgumentError(f"spsample train: argument '{flag}' is not a file "
                                f"(got {path!r})")


def _sharded(args, comm):
    """Whether the run shards its data: under MPI unless ``--replicate-graph`` alone; on one
    process only with an explicit ``--replication`` (which must then be 1)."""
    if comm is None:
        return args.replication is not None and args.replication != 1
    return not args.replicate_graph or args.replication is not None


def _load_sharded(args, comm):
    """A ShardedDataset of ``args.dataset`` on a grid of ``--replication`` (a heterogeneous
    file: a HeteroDataset whose graph is a DistHeteroGraph); every rank resolves the name, and
    any failure ends every rank with the same error."""
    grid = Grid(comm, replication=1 if args.replication is None else args.replication)

    def resolve():
        path = dataset_path("train", args.dataset)
        hetero = open_layout(path) == "hetero"
        if hetero and args.permutation is not None:
            _permutation_needs_homogeneous()
        if args.task == "link" and args.permutation is not None:
            raise ArgumentError("spsample train: argument '--permutation' is not supported "
                                "with --task link on a sharded graph (use --replicate-graph)")
        return path, hetero
    path, hetero = agree(grid.comm, "spsample train", resolve)
    if hetero:
        return load_hetero_dataset(path, grid, replicate_graph=args.replicate_graph)
    if args.task == "link":
        return _link_shards(path, grid, args.replicate_graph)
    return ShardedDataset.load(path, grid, replicate_graph=args.replicate_graph,
                               permutation=args.permutation)


def _link_shards(path, grid, replicate_graph):
    """``--task link`` on a homogeneous file, sharded: the graph a DistGraph (each rank reads
    its block rows), the features whole on every rank (sparse ones stay sparse)."""
    from types import SimpleNamespace

    graph = DistGraph.load(path, grid, replicate_graph=replicate_graph)
    name, features = agree(grid.comm, "spsample train", lambda: _whole_features(path))
    return SimpleNamespace(graph=graph, features=features, name=name)


def _whole_features(path):
    """``(name, features)`` of a homogeneous file: ``/features`` whole (a CSR matrix when
    stored sparse, else dense), ``None`` without features."""
    meta = read_node_targets(path)
    if meta["num_features"] == 0:
        return meta["name"], None
    with open_file("spsample train", as_path("spsample train", path)) as f:
        sparse = is_csr_group(f["features"])
    if sparse:
        return meta["name"], read_sparse_features(path)
    return meta["name"], read_feature_rows(path, np.arange(meta["num_nodes"]))


def _in_original_ids(dataset, permutation):
    """``dataset`` (relabelled by ``spsample partition``) back in its original ids, given its
    permutation file; ``dataset`` itself without one."""
    if permutation is None:
        return dataset

    if not isinstance(dataset, Dataset):
        _permutation_needs_homogeneous()
    old_id = load_partition(permutation, dataset.graph, where="spsample train",
                            argname="--permutation")
    new_id = np.empty_like(old_id)
    new_id[old_id] = np.arange(old_id.size)
    return relabel(dataset, new_id)


def _permutation_needs_homogeneous():
    raise ArgumentError("spsample train: argument '--permutation' applies to homogeneous "
                        "datasets (spsample partition relabels those only)")


def _resume(trainer, path):
    try:
        trainer.load_checkpoint(path)
    except ArgumentError as exc:
        detail = str(exc).split(": ", 1)[-1].replace("argument 'path' ", "")
        raise ArgumentError(f"spsample train: argument '--resume' {detail}") from exc


def _config(args):
    from ..train import TrainConfig

    return TrainConfig(
        sampler=args.sampler, fanouts=args.fanouts, eval_fanouts=args.eval_fanouts,
        batch_size=TrainConfig.batch_size if args.batch_size is None else args.batch_size,
        eval_batch_size=TrainConfig.eval_batch_size if args.eval_batch_size is None
        else args.eval_batch_size,
        bulk_size=args.bulk_size, epochs=args.epochs, lr=args.lr, scale_lr=args.scale_lr,
        weight_decay=args.weight_decay, hidden=args.hidden, dropout=args.dropout,
        input_dropout=not args.no_input_dropout,
        model=args.model, conv=args.conv, aggregation=args.aggregation,
        sparse_features=args.sparse_features, normalize=args.normalize,
        seed=args.seed, split=args.split, split_seed=args.split_seed, device=args.device,
        pipeline=not args.no_pipeline, threads=args.threads,
        sampler_threads=args.sampler_threads, strategy=args.strategy, order=args.order)


def _summary(args, dataset, trainer, comm):
    """The run's first line: dataset, split, sampler, layers and feature form."""
    config = trainer.config
    world = "" if comm is None else f", {comm.size} ranks"
    layout = trainer.data_layout()
    if layout["layout"] == "sharded":
        graph = "whole graph" if layout["graph_replicated"] else \
            f"graph {layout['graph_rows_held']}"
        world += (f" (replication {layout['replication']}: {graph} and features "
                  f"{layout['feature_rows_held']} of {layout['num_nodes']} rows per rank, "
                  f"{config.strategy} sampling)")
    model = "GCN" if config.model_class == "gcn" else "GraphSAGE"
    if trainer.model.uses_pyg:
        layers = "PyG SAGEConv"
    else:
        layers = f"built-in {model} ({config.aggregation})"
    features = "sparse" if trainer.sparse_features else "dense"
    return (f"{model} on {dataset.name or args.dataset}: {dataset.num_nodes} nodes, "
            f"{dataset.num_edges} edges, {dataset.num_features} {features} features, "
            f"{dataset.num_classes} classes; train/val/test {trainer.train_idx.size}/"
            f"{trainer.val_idx.size}/{trainer.test_idx.size}; {config.sampler} "
            f"{_show(config.fanouts)}, batch {config.batch_size}, bulk {config.bulk_size}, "
            f"{layers} layers{world}")


def _epoch_line(entry, epochs):
    rate = entry.get("sampling_edges_per_s", 0.0)
    return (f"epoch {entry['epoch'] + 1:3d}/{epochs}  loss {entry['loss']:.4f}  "
            f"val {entry['val_accuracy']:.4f}  {entry['seconds']:.2f}s  "
            f"{rate:,.0f} sampled edges/s while sampling  "
            f"{_threads_text(entry)}")


def _threads_text(entry):
    """``threads M+S of C cores`` (model and sampler side by side), or, when the producer runs
    in the training thread, ``threads M, then S sampling, of C cores``."""
    cores = entry.get("cores")
    of = "" if cores is None else f" of {cores} core{'s' if cores != 1 else ''}"
    if entry.get("pipeline", True):
        return f"threads {entry['threads']}+{entry['sampler_threads']}{of}"
    return f"threads {entry['threads']}, then {entry['sampler_threads']} sampling{of}"


def _result_line(metrics):
    if metrics["best_epoch"] < 0:
        return (f"no epoch trained (--epochs {metrics['epochs']}): test accuracy "
                f"{metrics['test_accuracy']:.4f} of the untrained model")
    return (f"test accuracy {metrics['test_accuracy']:.4f} (best validation "
            f"{metrics['val_accuracy']:.4f} at epoch {metrics['best_epoch'] + 1}); "
            f"{metrics['seconds']:.1f}s, {metrics['sampled_edges_per_s']:,.0f} sampled edges/s "
            f"end to end ({metrics['path']} sampling)")


def _communicator(mode):
    """An ``MPIComm`` of ``MPI.COMM_WORLD`` when training data-parallel, else None."""
    if mode == "off":
        return None

    if mode == "auto" and not launched_under_mpi():
        return None

    comm = mpi_world(feature="spsample train --mpi")
    if mode == "auto" and comm.size == 1:
        comm.free()
        return None
    return comm


def _threads_arg(text):
    """``auto`` or an integer in ``[1, max_threads()]`` (argparse type)."""
    import argparse

    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= max_threads():
        raise argparse.ArgumentTypeError(f"expected 'auto' or an integer in [1, "
                                         f"{max_threads()}] (8 threads per CPU, at least 256), "
                                         f"got {text[:40]!r}")
    return value


def _relation(text):
    """``SRC,NAME,DST`` -> a relation triple (argparse type)."""
    import argparse

    parts = tuple(part.strip() for part in text.split(","))
    if len(parts) != 3 or not all(parts):
        raise argparse.ArgumentTypeError(f"expected SRC,NAME,DST, got {text!r}")
    return parts


def _show(values):
    return ",".join(str(v) for v in values)


if __name__ == "__main__":          # pragma: no cover
    from . import main

    sys.exit(main(["train", *sys.argv[1:]]))
