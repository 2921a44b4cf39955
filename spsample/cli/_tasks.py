"""``spsample train --task link`` and heterogeneous node classification (one process, or
data-parallel under ``mpiexec``).

:func:`run_task` maps the ``train`` flags onto :func:`spsample.train.link.fit_link` (a
GraphSAGE encoder + dot-product decoder; test AUC and MRR) or
:func:`spsample.train.hetero.fit_node` (a heterogeneous GraphSAGE on the target type of a
:class:`~spsample.io.HeteroDataset`; accuracy, macro- and micro-F1), prints one line per epoch
and the result, writes the metrics JSON (every epoch's seconds per phase in ``history``) and
saves / resumes checkpoints (``--checkpoint``, ``--resume``).
"""

import json
import sys

from .._errors import ArgumentError, DatasetError
from ..io import HeteroDataset
from ..loader._threads import balance_threads, local_ranks

__all__ = ["run_task", "refuse_unlabelled", "check_link_numbers"]

#: Default fanouts and edges per minibatch of the two tasks.
DEFAULT_FANOUTS = (10, 10)
LINK_BATCH_SIZE = 512


def run_task(args, dataset, comm):
    """Train ``args.task`` on ``dataset`` (heterogeneous node classification data-parallel
    over ``comm``'s ranks when given); returns the exit status (0 on success)."""
    hetero = isinstance(dataset, HeteroDataset)
    _check(args, dataset, hetero)
    _apply_threads(args, comm)
    rank = 0 if comm is None else comm.rank
    say = _say if rank == 0 else (lambda text: None)
    progress = not args.quiet and sys.stderr.isatty() and rank == 0
    common = dict(hidden=args.hidden, epochs=args.epochs, lr=args.lr,
                  weight_decay=args.weight_decay, dropout=args.dropout,
                  bulk_size=args.bulk_size, seed=args.seed, progress=progress,
                  checkpoint=args.checkpoint, resume=args.resume)
    if args.task == "link":
        metrics = _link(args, dataset, common, say, comm)
    else:
        metrics = _node(args, dataset, dict(common, fanouts=args.fanouts or DEFAULT_FANOUTS),
                        say, comm)
    metrics = dict(metrics, task=args.task, dataset=args.dataset)
    if args.metrics and rank == 0:
        with open(args.metrics, "w") as fh:
            json.dump(metrics, fh, indent=2)
    return 0


def _apply_threads(args, comm):
    """torch's and the sampler's threads from ``--threads`` / ``--sampler-threads`` (else
    ``SPSAMPLE_THREADS``): ``auto`` gives the model this process's cores (divided among the
    MPI ranks of the node, so ranks never oversubscribe it) and the sampler one thread --
    :func:`~spsample.loader.balance_threads` before any epoch was measured; the tasks' loops
    do not rebalance per epoch as ``Trainer`` does."""
    explicit = lambda value: None if value == "auto" else value  # noqa: E731
    balance_threads(None, model_threads=explicit(args.threads),
                    sampler_threads=explicit(args.sampler_threads),
                    ranks=local_ranks(comm))          # collective with a communicator


def _check(args, dataset, hetero):
    """The task's flags (and, once ``dataset`` is read, its labels; None before that)."""
    where = "spsample train"
    if str(args.device).split(":")[0] != "cpu":
        raise ArgumentError(f"{where}: argument '--device' must be cpu with --task link and "
                            f"on heterogeneous files (they train on the CPU; got "
                            f"{args.device!r})")
    if args.task == "node" and dataset is not None and not getattr(dataset, "target_type", None):
        refuse_unlabelled(dataset, args.dataset)
    if args.task == "node" and args.sampler != "nodewise":
        raise ArgumentError(f"{where}: argument '--sampler' must be nodewise on a "
                            f"heterogeneous file (got {args.sampler!r})")
    if args.task == "link" and args.relation is not None and not hetero:
        raise ArgumentError(f"{where}: argument '--relation' names a relation of a "
                            f"heterogeneous file; {args.dataset!r} is homogeneous (one kind "
                            f"of edge): leave it out (got {','.join(args.relation)!r})")
    if args.task == "link" and args.split not in (None, "auto", "random", "time", "stored"):
        raise ArgumentError(f"{where}: argument '--split' must be auto, random, time or "
                            f"stored with --task link (got {args.split!r})")
    if args.task == "link" and getattr(args, "order", "random") != "random":
        raise ArgumentError(f"{where}: argument '--order' must be random with --task link "
                            f"(got {args.order!r}): link minibatches are seeded by edges")
    check_link_numbers(args)


def check_link_numbers(args):
    """``--neg-ratio`` (> 0), ``--eval-negatives`` and ``--eval-batch-size`` (>= 1), whatever
    the task (given with node classification they were once accepted unchecked): the one
    check of :func:`_check` and of ``spsample train``'s flags."""
    if not args.neg_ratio > 0:
        raise ArgumentError(f"spsample train: argument '--neg-ratio' must be > 0 "
                            f"(got {args.neg_ratio})")
    for flag in ("--eval-negatives", "--eval-batch-size"):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and value < 1:
            raise ArgumentError(f"spsample train: argument '{flag}' must be >= 1 "
                                f"(got {value})")


def refuse_unlabelled(dataset, name):
    """Raise the error of node classification on a file without node labels."""
    edges = getattr(dataset, "edge_splits", None)
    stored = (f"; it stores train/val/test edges of {len(edges.get('train', {}))} "
              f"relation(s)") if edges else ""
    raise DatasetError(f"spsample train: argument 'dataset' {name!r} has no node labels to "
                       f"classify{stored}: use --task link to train link prediction on it")


def _say(text):
    print(text, flush=True)


def _link(args, dataset, common, say, comm):
    from ..train.link import fit_link

    _check_temporal_link(args, dataset, comm)
    fanouts = _show(args.fanouts) if args.fanouts else "auto"
    say(f"link prediction on {getattr(dataset, 'name', None) or args.dataset}: GraphSAGE "
        f"encoder + dot-product decoder, nodewise {fanouts}, {args.neg_ratio:g} negatives per "
        f"edge{_link_layout(dataset.graph, comm, args)}")
    metrics = fit_link(dataset, relation=args.relation, split=args.split or "auto",
                       fanouts=args.fanouts, batch_size=args.batch_size or LINK_BATCH_SIZE,
                       out=args.hidden, neg_ratio=args.neg_ratio,
                       eval_negatives=args.eval_negatives,
                       eval_batch_size=args.eval_batch_size, comm=comm,
                       strategy=args.strategy,
                       log=lambda e: say(_epoch_line(e, args.epochs, "auc")), **common)
    say(f"test AUC {metrics['test_auc']:.4f}, MRR {metrics['test_mrr']:.4f} "
        f"({metrics['eval_negatives']} negatives per edge; fanouts "
        f"{_show(metrics['fanouts'])}, evaluation batch {metrics['eval_batch_size']}; best "
        f"validation AUC {metrics['val_auc']:.4f} at epoch {metrics['best_epoch'] + 1}); "
        f"{metrics['seconds']:.1f}s")
    return metrics


def _node(args, dataset, common, say, comm):
    from ..train.hetero import fit_node

    say(f"heterogeneous GraphSAGE on {dataset.name or args.dataset}: target "
        f"{dataset.target_type!r}, {len(dataset.graph.relations)} relations, "
        f"{dataset.num_classes} classes; nodewise {_show(common['fanouts'])} per relation"
        f"{_layout(dataset.graph, comm, args.strategy)}")
    metrics = fit_node(dataset, split=None if args.split in (None, "default") else args.split,
                       eval_fanouts=args.eval_fanouts, batch_size=args.batch_size or 32,
                       comm=comm, strategy=args.strategy,
                       log=lambda e: say(_epoch_line(e, args.epochs, "macro_f1")), **common)
    say(f"test accuracy {metrics['test_accuracy']:.4f}, macro-F1 "
        f"{metrics['test_macro_f1']:.4f} (best validation macro-F1 "
        f"{metrics['val_macro_f1']:.4f} at epoch {metrics['best_epoch'] + 1}); "
        f"{metrics['seconds']:.1f}s")
    return metrics


def _check_temporal_link(args, dataset, comm):
    """Temporal link training splits the edges by time and adds the reverse relation, both
    built from the whole graph, which a sharded graph does not hold: refused on every rank
    (the same file everywhere)."""
    graph = dataset.graph
    sharded = getattr(graph, "grid", None) is not None and graph.whole is None
    stored = bool(getattr(dataset, "edge_splits", None)) and args.split in (None, "auto")
    if comm is not None and sharded and getattr(graph, "is_temporal", False) \
            and args.split != "stored" and not stored:
        raise ArgumentError("spsample train: argument '--replicate-graph' is needed for "
                            "--task link on a temporal graph under mpiexec: the chronological "
                            "split and the reverse relation are built from the whole graph")


def _link_layout(graph, comm, args):
    """Where the graph lives, for the first line of a link run: nothing on one process."""
    if comm is None:
        return ""
    grid = getattr(graph, "grid", None)
    if grid is None or graph.whole is not None:
        return f"; {comm.size} ranks, the whole graph on each"
    return (f"; {comm.size} ranks, replication {grid.replication}: graph rows split, "
            f"{args.strategy} sampling; features whole on each rank")


def _layout(graph, comm, strategy):
    """Where the graph lives, for the first line: nothing on one process."""
    if comm is None:
        return ""
    ranks = comm.size
    grid = getattr(graph, "grid", None)
    if grid is None or getattr(graph, "whole", None) is not None:
        return f"; {ranks} ranks, the whole graph on each"
    return (f"; {ranks} ranks, replication {grid.replication}: relations split by "
            f"destination rows, {strategy} sampling; features whole on each rank")


def _epoch_line(entry, epochs, key):
    extra = f"  val mrr {entry['val_mrr']:.4f}" if "val_mrr" in entry else ""
    return (f"epoch {entry['epoch'] + 1:3d}/{epochs}  loss {entry['loss']:.4f}  "
            f"val {key} {entry['val_' + key]:.4f}{extra}  {entry['seconds']:.2f}s + "
            f"{entry['eval_seconds']:.2f}s validation")


def _show(values):
    return ",".join(str(v) for v in values)
