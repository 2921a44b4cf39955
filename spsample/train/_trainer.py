"""Training GraphSAGE with spsample batches: one process or data-parallel under ``mpiexec``.

:class:`Trainer` owns the loaders, the model, the optimizer and the gradient all-reduce.
Determinism: the sample stream of epoch ``e`` depends only on ``(seed, e)`` (the loader), the
model is initialised from ``seed``, and dropout draws from torch's generator re-seeded at the
start of every epoch from ``(seed, epoch, rank)`` (inside ``torch.random.fork_rng``, so the
caller's global generator is untouched). A checkpoint therefore holds the model, the
optimizer, the next epoch, the best-validation state and the history; resuming from epoch
``e`` replays exactly the losses of an uninterrupted run (CPU ops here are deterministic:
``index_add_``/``index_select`` run in a fixed order).
"""

import math
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np

from .. import native as _native
from .._errors import ArgumentError, ArgumentTypeError, DatasetError
from .._optional import import_torch
from ..native import check_threads
from .._validate import as_int, check_memory, fail
from ..distributed import STRATEGIES, FeatureStore, ShardedDataset
from ..io import Dataset
from ..io._dataset import SPARSE_DENSITY
from ..io._files import check_writable, temporary_beside
from ..loader import Loader, SparseFeatures, balance_threads
from ..loader._loader import resolve_device
from ..loader._sparse import SparseRows
from ..loader._threads import local_ranks
from ..samplers._registry import NameView, registered
from ._aggregate import AGGREGATIONS
from ._ddp import GradientAllReduce, sum_over_ranks, world_of
from ._model import GCN, GraphSAGE
from ._split import random_split
from ._steps import seeded_init, train_steps

torch = import_torch("spsample.train")

__all__ = ["TrainConfig", "Trainer", "make_sampler", "SAMPLERS"]

#: The samplers a Trainer takes: every registered one with training fanouts
#: (``spsample.samplers.register``), a live view of the registry.
SAMPLERS = NameView(trainable=True)
#: Samplers whose hops are layers of nodes with importance-weighted edges.
LAYERWISE = NameView(trainable=True, layerwise=True)
#: Default fanouts of the built-ins: neighbours per vertex (node-wise, LABOR), nodes per layer
#: (layer-wise); a registered sampler's come from its registration (``train_fanouts``).
DEFAULT_FANOUTS = {False: (10, 10), True: (256, 256)}
MODELS = ("auto", "sage", "gcn")
_CHECKPOINT_FORMAT = "spsample-train-1"
# Config fields that must match between a checkpoint and the run resuming it (the others,
# e.g. epochs or the progress bar, may change).
_RESUME_KEYS = ("sampler", "fanouts", "batch_size", "hidden", "dropout", "input_dropout",
                "model", "conv", "sparse_features", "lr", "weight_decay", "seed", "normalize",
                "split", "split_seed", "scale_lr")


#: ``TrainConfig.order``: the training seeds' order (``Loader(order=)``).
TRAIN_ORDERS = ("random", "owner")


@dataclass
class TrainConfig:
    """Hyper-parameters of a run (the defaults are the demo's, on the embedded Cora).

    Attributes
    ----------
    sampler : {"nodewise", "labor", "ladies", "fastgcn"} or a registered name
        Any sampler registered with training fanouts (``spsample.samplers.register``).
    fanouts : tuple of int or None
        Hop 1 first; one GNN layer per hop. For layer-wise samplers: nodes per layer.
        ``None``: the registration's ``train_fanouts`` (10, 10 node-wise and LABOR; 256, 256
        layer-wise).
    eval_fanouts : tuple of int or None
        Sampling for validation and test; ``None``: every neighbour (``-1``) per hop for
        node-wise, the training fanouts for layer-wise samplers.
    batch_size, bulk_size : int
        Training seeds per minibatch; minibatches sampled per bulk.
    eval_batch_size : int
        Seeds per minibatch for validation and test.
    epochs : int
    lr, weight_decay : float
        Adam's learning rate and L2 penalty.
    scale_lr : bool
        Multiply ``lr`` by the number of ranks (the linear scaling rule for data parallelism).
    hidden : int
    dropout : float
    input_dropout : bool
        Drop out the features too (else between layers only).
    model : {"auto", "sage", "gcn"}
        :class:`GraphSAGE` or :class:`GCN`; ``"auto"``: GraphSAGE for node-wise and LABOR
        batches, the GCN with importance-weighted aggregation for LADIES and FastGCN.
    conv : {"auto", "pyg", "torch"}
        GraphSAGE layer implementation (see :class:`GraphSAGE`): the built-in layers
        (``"auto"``, ``"torch"``) or PyG's ``SAGEConv`` (``"pyg"``).
    aggregation : {"spmm", "scatter"}
        How the built-in layers aggregate: CSR products (the loader builds each layer's
        matrices in its background thread) or scatter-add.
    threads, sampler_threads : int or "auto"
        torch's threads and the native sampler's. ``"auto"`` (default): before each epoch,
        :func:`~spsample.loader.balance_threads` splits this process's cores (divided among
        the MPI ranks of the node, capped by ``OMP_NUM_THREADS``) from the producer's
        measured share of the previous epoch; the model gets the cores it can use, the
        sampler the rest. A number is kept as it is (``SPSAMPLE_THREADS`` fixes the
        sampler's too). :meth:`Trainer.fit` restores the caller's counts when it returns.
    sparse_features : {"auto", "on", "off"}
        Keep the features in CSR form (:class:`~spsample.loader.SparseFeatures`) and project
        them without densifying: ``"auto"`` does so for ``scipy.sparse`` dataset features and
        for dense ones with at most 5 % non-zero entries (bag-of-words features); ``"off"``
        densifies (after checking the memory that takes). Both layer kinds (``conv``) take
        sparse rows: each projects them before aggregating.
    normalize : {"row", "none"}
        ``"row"`` divides each feature row by its sum (bag-of-words features), per batch.
    seed : int
        Seeds sampling, shuffling, initialisation and dropout.
    split : str or None
        Which of the dataset's splits to use; ``"random"``: a random 60/20/20 split of the
        labelled nodes keyed by ``split_seed`` (the default for a dataset without splits).
    split_seed : int or None
        Default: ``seed``.
    device : str
    pipeline : bool
    strategy : str
        Where a sharded dataset's graph is sampled (see ``DistGraph.sample``): a name in
        ``spsample.distributed.STRATEGIES`` (the registered strategies): push sends the
        frontier to the rows' owners, pull fetches the rows. Same minibatches either way.
    order : {"random", "owner"}
        The training seeds' order (``Loader(order=)``): ``"owner"`` on a sharded dataset
        gives each rank minibatches of its own process row's seeds (fewer bytes on a
        locality-partitioned graph; the minibatches then depend on the process rows).
    """

    sampler: str = "nodewise"
    fanouts: tuple = None
    eval_fanouts: tuple = None
    batch_size: int = 32
    eval_batch_size: int = 512
    bulk_size: int = 4
    epochs: int = 20
    lr: float = 0.005
    weight_decay: float = 5e-4
    scale_lr: bool = False
    hidden: int = 128
    dropout: float = 0.5
    input_dropout: bool = True
    model: str = "auto"
    conv: str = "auto"
    aggregation: str = "spmm"
    sparse_features: str = "auto"
    normalize: str = "row"
    seed: int = 0
    split: str = None
    split_seed: int = None
    device: str = "cpu"
    pipeline: bool = True
    threads: object = "auto"
    sampler_threads: object = "auto"
    strategy: str = "push"
    order: str = "random"

    def __post_init__(self):
        where = "TrainConfig"
        entry = registered(self.sampler, where=where, argname="sampler", trainable=True)
        if self.fanouts is None:
            self.fanouts = entry.train_fanouts
        if isinstance(self.fanouts, (str, bytes)) or not hasattr(self.fanouts, "__len__"):
            fail(ArgumentTypeError, where, "fanouts", "must be a sequence of int", self.fanouts)
        self.fanouts = tuple(int(f) for f in self.fanouts)
        if self.eval_fanouts is not None:
            self.eval_fanouts = tuple(int(f) for f in self.eval_fanouts)
            if len(self.eval_fanouts) != len(self.fanouts):
                fail(ArgumentError, where, "eval_fanouts", f"must have {len(self.fanouts)} "
                     "entries (one per layer)", self.eval_fanouts)
        for name in ("batch_size", "eval_batch_size", "bulk_size", "hidden"):
            setattr(self, name, as_int(where, name, getattr(self, name), minimum=1))
        self.epochs = as_int(where, "epochs", self.epochs, minimum=0)
        self.seed = as_int(where, "seed", self.seed, minimum=0)
        if self.split_seed is not None:
            self.split_seed = as_int(where, "split_seed", self.split_seed, minimum=0)
        for name in ("lr", "weight_decay", "dropout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                fail(ArgumentError, where, name, "must be a finite non-negative number", value)
            setattr(self, name, float(value))
        if self.lr <= 0:
            fail(ArgumentError, where, "lr", "must be > 0", self.lr)
        if self.dropout >= 1:
            fail(ArgumentError, where, "dropout", "must be < 1", self.dropout)
        if self.sparse_features not in ("auto", "on", "off"):
            fail(ArgumentError, where, "sparse_features", "must be 'auto', 'on' or 'off'",
                 self.sparse_features)
        if self.normalize not in ("row", "none"):
            fail(ArgumentError, where, "normalize", "must be 'row' or 'none'", self.normalize)
        for name, choices in (("model", MODELS), ("aggregation", AGGREGATIONS),
                              ("strategy", STRATEGIES), ("order", TRAIN_ORDERS)):
            if getattr(self, name) not in choices:
                fail(ArgumentError, where, name, f"must be one of {choices}",
                     getattr(self, name))
        for name in ("threads", "sampler_threads"):
            if getattr(self, name) != "auto":
                setattr(self, name, check_threads(where, name, getattr(self, name)))

        resolve_device(self.device, where)     # a device batches can be moved to, here

    @property
    def layerwise(self):
        """Whether the sampler is layer-wise (LADIES, FastGCN: weighted layers of nodes)."""
        return registered(self.sampler, where="TrainConfig", argname="sampler",
                          trainable=True).layerwise

    @property
    def model_class(self):
        """``"sage"`` or ``"gcn"``: what ``model="auto"`` means for this sampler."""
        if self.model != "auto":
            return self.model
        return "gcn" if self.layerwise else "sage"


def make_sampler(name, fanouts):
    """The spsample sampler registered as ``name`` (``nodewise``, ``labor``, ``ladies``,
    ``fastgcn`` or one registered with ``spsample.samplers.register``) with ``fanouts``."""
    return registered(name, where="make_sampler", argname="name", trainable=True).make(fanouts)


class Trainer:
    """GraphSAGE node classification with spsample minibatches.

    Parameters
    ----------
    dataset : spsample.Dataset or spsample.distributed.ShardedDataset
        With features and labels; its splits, or a random one (``config.split``). A
        ``ShardedDataset`` keeps the graph as a ``DistGraph`` (sampled with
        ``config.strategy``) and the features in a ``FeatureStore`` (fetched by all-to-all):
        no rank holds all rows; the minibatches, and so the training, are the same as with
        the whole dataset on every rank.
    config : TrainConfig, optional
        Defaults: the demo's settings.
    comm : spsample.distributed.Communicator or mpi4py communicator, optional
        Data-parallel training over its ranks (``MPIComm``, ``NcclComm``, or a ``ThreadComm``
        of :func:`~spsample.distributed.run_threads`; an mpi4py communicator is wrapped in an
        ``MPIComm``): each trains on a disjoint, contiguous share of every epoch's
        minibatches (global ids), and gradients are averaged by one ``allreduce`` per step.
        Every rank must build the Trainer with the same arguments. Default for a
        ``ShardedDataset``: its grid's communicator.
    **overrides
        Fields of :class:`TrainConfig`, e.g. ``epochs=5``.

    Attributes
    ----------
    model : GraphSAGE or GCN
    optimizer : torch.optim.Adam
    history : list of dict
        One entry per epoch run so far: ``epoch``, ``loss`` (mean over the epoch's seeds, all
        ranks), ``losses`` (this rank's per-step losses), ``val_accuracy``, ``seconds``,
        ``sampled_edges`` (all ranks), ``sampling_edges_per_s`` (sampled edges per second
        spent sampling, the mean rank's time: the pipeline overlaps it with training);
        where the epoch's seconds went on this rank: ``sample_seconds``, ``fetch_seconds``,
        ``convert_seconds`` (the producer, overlapped with training when the pipeline is
        on), ``wait_seconds`` (training waiting for batches), ``forward_seconds``,
        ``backward_seconds``, ``optimizer_seconds`` (with the gradient all-reduce);
        ``threads`` and ``sampler_threads`` (the epoch's split), ``cores`` (this rank's),
        ``pipeline`` (whether the producer ran beside the model, in its own thread) and
        ``producer_share``;
        ``bytes``: what the ranks sent together during the epoch's training,
        ``{"sampling": {collective: bytes}, "feature_fetch": {...}, "gradient_allreduce":
        {"allreduce": bytes}}`` (the all-reduce counts each rank's buffer once).
    thread_plan : spsample.loader.ThreadPlan
        The split of the last epoch.
    epoch : int
        The next epoch to train.
    sparse_features : bool
        Whether the batches carry CSR :class:`~spsample.loader.SparseRows` features.

    Examples
    --------
    >>> import spsample
    >>> from spsample.train import Trainer
    >>> t = Trainer(spsample.io.load_cora(), epochs=1, hidden=16, pipeline=False)
    >>> result = t.fit()
    >>> 0.0 <= result["test_accuracy"] <= 1.0
    True
    """

    def __init__(self, dataset, config=None, *, comm=None, **overrides):
        if config is None:
            config = TrainConfig(**overrides)
        elif overrides:
            config = TrainConfig(**{**asdict(config), **overrides})
        if not isinstance(config, TrainConfig):
            fail(ArgumentTypeError, "Trainer", "config", "must be a TrainConfig", type(config))
        sharded = isinstance(dataset, ShardedDataset)
        if not isinstance(dataset, Dataset) and not sharded:
            fail(ArgumentTypeError, "Trainer", "dataset", "must be a spsample.Dataset or a "
                 "spsample.distributed.ShardedDataset", type(dataset))
        if dataset.features is None or dataset.labels is None:
            fail(DatasetError, "Trainer", "dataset", "needs features and labels", dataset.name)
        if sharded:
            comm = _grid_comm(dataset, comm)
        self.config, self.dataset = config, dataset
        self.rank, self.world_size = world_of(comm)
        self.comm = comm
        self.train_idx, self.val_idx, self.test_idx = self._split(dataset, config)

        sampler = make_sampler(config.sampler, config.fanouts)
        eval_fanouts = config.eval_fanouts or ((-1,) * len(config.fanouts)
                                               if not config.layerwise else config.fanouts)
        eval_sampler = make_sampler(config.sampler, eval_fanouts)
        features, sparse = self._feature_source(dataset.features, config)
        self.sparse_features = sparse
        common = dict(bulk_size=config.bulk_size, features=features,
                      labels=dataset.labels, seed=config.seed, device=config.device,
                      pipeline=config.pipeline, rank=self.rank, world_size=self.world_size,
                      adjacency=_uses_adjacency(config),
                      strategy=config.strategy if sharded else None)
        self.train_loader = Loader(dataset.graph, self.train_idx, sampler=sampler,
                                   batch_size=config.batch_size, shuffle=True,
                                   order=config.order, **common)
        self.eval_loaders = {
            part: Loader(dataset.graph, idx, sampler=eval_sampler, shuffle=False,
                         batch_size=config.eval_batch_size, **common)
            for part, idx in (("val", self.val_idx), ("test", self.test_idx))}

        with seeded_init(config.seed):
            self.model = _build_model(dataset, config).to(config.device)
        self._local_ranks = local_ranks(comm)
        self.thread_plan = None
        lr = config.lr * (self.world_size if config.scale_lr else 1)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr,
                                          weight_decay=config.weight_decay)
        self.reduce = GradientAllReduce(list(self.model.parameters()), comm)
        self.reduce.broadcast_parameters()
        self.epoch = 0
        self.history = []
        self.best = dict(val_accuracy=-1.0, epoch=-1, model=None)

    # ------------------------------------------------------------------ data
    @staticmethod
    def _split(dataset, config):
        name = config.split
        if name == "random" or (name is None and not dataset.splits):
            parts = random_split(dataset.labels, seed=config.seed if config.split_seed is None
                                 else config.split_seed)
            return parts["train"], parts["val"], parts["test"]
        return dataset.split(name)

    @staticmethod
    def _feature_source(features, config):
        """``(features for the loaders, whether they are sparse)``.

        Sparse (``scipy.sparse``) dataset features stay sparse unless ``sparse_features`` is
        ``"off"``; dense ones become CSR when ``"on"``, or ``"auto"`` and at most 5 % of the
        entries are non-zero. Densifying sparse features checks the memory it needs first.
        A ``FeatureStore`` (a ``ShardedDataset``) follows the same rules shard by shard (the
        non-zeros counted over the whole matrix: collective)."""
        mode = config.sparse_features
        if isinstance(features, FeatureStore):      # shards, fetched by all-to-all
            return _store_source(features, mode)
        if type(features).__module__.startswith("scipy.sparse"):
            if mode != "off":
                return SparseFeatures(features), True
            return _densified(features), False
        if mode == "off":
            return features, False
        if mode == "auto":
            nonzero = np.count_nonzero(features) / max(1, features.size)
            if nonzero > SPARSE_DENSITY:
                return features, False
        return SparseFeatures.from_dense(features), True

    def _features(self, batch):
        x = batch.x
        if isinstance(x, SparseRows):
            return x.row_normalized() if self.config.normalize == "row" else x
        if self.config.normalize == "row":
            total = x.sum(dim=1, keepdim=True)
            x = x / torch.where(total == 0, torch.ones_like(total), total)
        return x

    # ------------------------------------------------------------------ steps
    def balance_threads(self):
        """Split this process's cores between the model and the sampler for the next epoch
        (``config.threads`` / ``sampler_threads``; see
        :func:`~spsample.loader.balance_threads`) and apply it; returns the plan."""
        config = self.config
        self.thread_plan = balance_threads(
            self.train_loader, ranks=self._local_ranks,
            model_threads=None if config.threads == "auto" else config.threads,
            sampler_threads=None if config.sampler_threads == "auto" else config.sampler_threads)
        return self.thread_plan

    def train_epoch(self, progress=None, step_hook=None):
        """Train one epoch (``self.epoch``) and return its history entry.

        ``step_hook(trainer, step)``, when given, is called after each optimizer step (e.g.
        to evaluate mid-epoch; its time counts in the epoch's ``seconds``)."""
        loader, epoch = self.train_loader, self.epoch
        plan = self.balance_threads()
        t0 = time.perf_counter()
        gradient_bytes = self.reduce.bytes_sent

        def after_step(steps):
            if step_hook is not None:
                step_hook(self, len(steps.losses))
            if progress is not None:
                progress.update(1)
                if steps.losses:
                    rate = steps.edges / max(time.perf_counter() - t0, 1e-9)
                    progress.set_postfix(loss=f"{steps.losses[-1]:.4f}",
                                         edges_per_s=f"{rate:.3g}", refresh=False)

        done = train_steps(self.model, self.optimizer, loader, self._loss, epoch=epoch,
                           seed=self.config.seed, reduce=self.reduce, rank=self.rank,
                           after_step=after_step)
        stats, losses, phases = done.stats, done.losses, done.phases
        loss_sum, seen = done.weighted_loss, done.seen
        seconds = time.perf_counter() - t0
        traffic = self._traffic(stats, self.reduce.bytes_sent - gradient_bytes)
        totals = self._sum([loss_sum, seen, stats["sampled_edges"], stats["sample_seconds"]])
        mean_sample_seconds = totals[3] / self.world_size
        entry = dict(epoch=epoch, loss=totals[0] / max(totals[1], 1), losses=losses,
                     seconds=seconds, sampled_edges=int(totals[2]),
                     sample_seconds=float(stats["sample_seconds"]),
                     fetch_seconds=float(stats["fetch_seconds"]),
                     convert_seconds=float(stats["convert_seconds"]),
                     wait_seconds=float(stats["wait_seconds"]), **phases,
                     threads=plan.model, sampler_threads=plan.sampler, cores=plan.cores,
                     pipeline=plan.pipeline, producer_share=plan.share,
                     sampling_edges_per_s=totals[2] / mean_sample_seconds
                     if mean_sample_seconds > 0 else 0.0, bytes=traffic)
        self.epoch = epoch + 1
        return entry

    def _loss(self, model, batch):
        """The cross-entropy of ``batch``'s seeds (its features normalised as configured)."""
        out = model(batch, x=self._features(batch))
        return torch.nn.functional.cross_entropy(out, batch.target)

    def _traffic(self, stats, gradient_bytes):
        """The epoch's bytes per phase and collective, summed over the ranks."""
        return epoch_traffic(self.reduce.comm, stats, gradient_bytes)

    @torch.no_grad()
    def evaluate(self, part="val"):
        """Accuracy on ``part`` (``"val"`` or ``"test"``), over all ranks."""
        if part not in self.eval_loaders:
            fail(ArgumentError, "Trainer.evaluate", "part", "must be 'val' or 'test'", part)
        loader = self.eval_loaders[part]
        self.model.eval()
        correct = total = 0
        with loader.iter_epoch(0) as batches:
            for batch in batches:
                pred = self.model(batch, x=self._features(batch)).argmax(dim=1)
                correct += int((pred == batch.target).sum())
                total += batch.batch_size
        correct, total = self._sum([correct, total])
        return correct / max(total, 1)

    def _sum(self, values):
        """Element-wise sums over the ranks, as Python floats."""
        return sum_over_ranks(self.reduce.comm, values)

    # ------------------------------------------------------------------ the run
    def fit(self, epochs=None, *, checkpoint=None, progress=False, log=None):
        """Train from ``self.epoch`` up to ``epochs`` (default ``config.epochs``), keeping the
        model of the best validation accuracy; return the run's metrics.

        Parameters
        ----------
        epochs : int, optional
            Total epochs of the run (a resumed run continues up to it).
        checkpoint : str or os.PathLike, optional
            Written (by rank 0) after every epoch.
        progress : bool
            tqdm progress bars (rank 0 only) with loss and throughput.
        log : callable, optional
            Called with each epoch's history entry.

        Returns
        -------
        dict
            ``test_accuracy`` (of the best-validation model), ``val_accuracy``,
            ``best_epoch``, ``epochs``, ``seconds`` (this call), ``train_seconds``,
            ``sampled_edges``, ``sampled_edges_per_s`` (sampled edges per second of training,
            end to end), ``sampling_edges_per_s`` (per second spent sampling), ``loss``
            (last epoch), ``losses`` (per epoch), ``history`` (:attr:`history`: every epoch's
            entry, with its seconds per phase and thread split), ``world_size``, ``path``
            (native or numpy), ``bytes_per_epoch`` (the mean of the epochs' ``bytes`` over
            this call's epochs, with a ``total`` per phase), ``data`` (:meth:`data_layout`),
            ``config``.

        The thread counts of torch and of the native sampler are balanced before each epoch
        (``config.threads``) and restored to the caller's when ``fit`` returns.
        """
        epochs = self.config.epochs if epochs is None else as_int("Trainer.fit", "epochs",
                                                                     epochs, minimum=0)
        if checkpoint is not None:
            self.check_checkpoint_path(checkpoint)
        with _threads_restored():
            return self._fit(epochs, checkpoint, progress, log)

    def _fit(self, epochs, checkpoint, progress, log):
        t0 = time.perf_counter()
        show = progress and self.rank == 0
        run = []
        while self.epoch < epochs:
            bar = _progress_bar(show, self.train_loader.steps_per_epoch,
                                f"epoch {self.epoch + 1}/{epochs}")
            entry = self.train_epoch(bar)
            entry["val_accuracy"] = self.evaluate("val")
            if entry["val_accuracy"] > self.best["val_accuracy"]:
                self.best = dict(val_accuracy=entry["val_accuracy"], epoch=entry["epoch"],
                                 model=_copy_state(self.model))
            if bar is not None:
                bar.set_postfix(loss=f"{entry['loss']:.4f}", val=f"{entry['val_accuracy']:.3f}",
                                edges_per_s=f"{entry['sampled_edges'] / entry['seconds']:.3g}")
                bar.close()
            self.history.append(entry)
            run.append(entry)
            if log is not None:
                log(entry)
            if checkpoint is not None:
                self.save_checkpoint(checkpoint)
        if self.best["model"] is not None:
            current = _copy_state(self.model)
            self.model.load_state_dict(self.best["model"])
            test_accuracy = self.evaluate("test")
            self.model.load_state_dict(current)
        else:
            test_accuracy = self.evaluate("test")
        train_seconds = sum(e["seconds"] for e in self.history)
        edges = sum(e["sampled_edges"] for e in self.history)
        sample_seconds = self._sum([sum(e["sample_seconds"] for e in self.history)])[0]
        return dict(
            test_accuracy=test_accuracy, val_accuracy=max(self.best["val_accuracy"], 0.0),
            best_epoch=self.best["epoch"], epochs=self.epoch,
            seconds=time.perf_counter() - t0, train_seconds=train_seconds,
            sampled_edges=edges, sampled_edges_per_s=edges / train_seconds if train_seconds
            else 0.0, sampling_edges_per_s=edges / sample_seconds if sample_seconds else 0.0,
            loss=self.history[-1]["loss"] if self.history else None,
            losses=[e["loss"] for e in self.history], history=list(self.history),
            world_size=self.world_size,
            path=_native.active_path(), dataset=self.dataset.name,
            bytes_per_epoch=_mean_bytes(run), data=self.data_layout(),
            config=_plain(self.config))

    def data_layout(self):
        """Where the data lives: ``layout`` ("replicated": every rank holds the whole
        dataset; "sharded": a ShardedDataset), ``replication`` (c; the world size when
        replicated), ``graph_rows_held`` and ``feature_rows_held`` (the most any rank holds),
        ``num_nodes``."""
        n = self.dataset.num_nodes
        if not isinstance(self.dataset, ShardedDataset):
            return dict(layout="replicated", replication=self.world_size, num_nodes=n,
                        graph_rows_held=n, feature_rows_held=n)
        held = np.array(self.dataset.held_rows(), dtype=np.float64)
        if self.reduce.comm is not None:
            held = self.reduce.comm.allreduce(held, op="max")
        return dict(layout="sharded", replication=self.dataset.grid.replication,
                    graph_replicated=bool(self.dataset.graph.replicated), num_nodes=n,
                    graph_rows_held=int(held[0]), feature_rows_held=int(held[1]))

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self):
        """Everything a resumed run needs (plain types and tensors)."""
        return dict(format=_CHECKPOINT_FORMAT, epoch=self.epoch,
                    config=_plain(self.config),
                    model=self.model.state_dict(), optimizer=self.optimizer.state_dict(),
                    history=[{k: v for k, v in e.items()} for e in self.history],
                    best=dict(self.best), world_size=self.world_size)

    def load_state_dict(self, state):
        """Resume from :meth:`state_dict` (checks the run's settings match).

        Raises
        ------
        ArgumentError
            Naming ``state``: not a checkpoint of this format, a missing or malformed entry,
            other settings, another world size, or a model/optimizer that does not fit."""
        where = "Trainer.load_state_dict"
        _check_checkpoint(where, state)
        mine = asdict(self.config)
        for key in _RESUME_KEYS:
            theirs = state["config"].get(key)
            ours = mine[key]
            if (list(ours) if isinstance(ours, tuple) else ours) != theirs:
                fail(ArgumentError, where, "state", f"was saved with {key}={theirs!r}, this run "
                     f"has {key}={ours!r}", key)
        if state["world_size"] != self.world_size:
            fail(ArgumentError, where, "state", f"was saved by {state['world_size']} ranks, "
                 f"this run has {self.world_size} (the sample stream would differ)",
                 state["world_size"])
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, KeyError, ValueError, TypeError, IndexError) as exc:
            fail(ArgumentError, where, "state", f"holds a model or optimizer that does not fit "
                 f"this run ({type(exc).__name__}: {str(exc)[:200]})", show_value=False)
        self.epoch = int(state["epoch"])
        self.history = list(state["history"])
        self.best = dict(state["best"])

    def save_checkpoint(self, path):
        """Write :meth:`state_dict` to ``path`` (rank 0; atomically, via a temporary file
        beside it that is removed on SIGTERM too)."""
        if self.rank != 0:
            return
        with temporary_beside(path) as tmp:
            torch.save(self.state_dict(), tmp)
            os.replace(tmp, path)

    def load_checkpoint(self, path):
        """Resume from a file written by :meth:`save_checkpoint` (every rank reads it).

        Raises
        ------
        ArgumentError
            Naming ``path``: missing, empty, truncated, not a torch file, or not a checkpoint
            of a run with these settings."""
        where = "Trainer.load_checkpoint"
        if not os.path.isfile(path):
            fail(ArgumentError, where, "path", "does not exist or is not a file",
                 os.fspath(path))
        try:
            state = torch.load(path, map_location=self.config.device, weights_only=True)
        except Exception as exc:  # noqa: BLE001 -- any failure to deserialize: not a checkpoint
            fail(ArgumentError, where, "path", f"is not a readable spsample checkpoint "
                 f"(empty, truncated or another kind of file: {type(exc).__name__}: "
                 f"{str(exc)[:200]})", os.fspath(path))
        try:
            self.load_state_dict(state)
        except ArgumentError as exc:
            raise ArgumentError(f"{where}: argument 'path' {os.fspath(path)!r}: "
                                f"{exc}") from exc

    def check_checkpoint_path(self, path):
        """Check before training that a checkpoint can be written at ``path`` (rank 0)."""
        if self.rank == 0:
            check_writable("Trainer.fit", "checkpoint", path)

    def close(self):
        """Release the communicator duplicate."""
        self.reduce.close()


#: Entry -> type of a checkpoint written by :meth:`Trainer.state_dict`.
_CHECKPOINT_ENTRIES = {"format": str, "epoch": int, "config": dict, "model": dict,
                       "optimizer": dict, "history": list, "best": dict, "world_size": int}


def _check_checkpoint(where, state):
    """Raise :class:`ArgumentError` naming ``state`` unless it has every entry, typed."""
    if not isinstance(state, dict) or state.get("format") != _CHECKPOINT_FORMAT:
        fail(ArgumentError, where, "state", f"is not an spsample training checkpoint "
             f"(format {_CHECKPOINT_FORMAT!r})", type(state).__name__)
    for key, kind in _CHECKPOINT_ENTRIES.items():
        if key not in state:
            fail(ArgumentError, where, "state", f"lacks the entry {key!r}", sorted(state))
        if not isinstance(state[key], kind) or isinstance(state[key], bool):
            fail(ArgumentError, where, "state", f"has a {key!r} of type "
                 f"{type(state[key]).__name__}, not {kind.__name__}", key)
    for key in ("val_accuracy", "epoch", "model"):
        if key not in state["best"]:
            fail(ArgumentError, where, "state", f"lacks the entry best[{key!r}]", key)


def _grid_comm(dataset, comm):
    """The communicator of a ShardedDataset's grid (None on one process); a ``comm`` given as
    well must have the grid's size."""
    grid = dataset.grid
    if comm is not None:
        _, size = world_of(comm)
        if size != grid.size:
            fail(ArgumentError, "Trainer", "comm", f"must have the {grid.size} ranks of the "
                 "dataset's grid", size)
        return comm
    return grid.comm if grid.size > 1 else None


def epoch_traffic(comm, stats, gradient_bytes, phases=(("sampling", "sampling_bytes"),
                                                         ("feature_fetch", "fetch_bytes"))):
    """An epoch's bytes per phase and collective, summed over the ranks of ``comm`` (a
    Communicator, or ``None``): ``phases`` of a loader's epoch ``stats`` (phase, stats key),
    and ``gradient_allreduce`` (``gradient_bytes`` this rank contributed)."""
    mine = {phase: dict(stats.get(key, {})) for phase, key in phases}
    mine["gradient_allreduce"] = {"allreduce": int(gradient_bytes)} if gradient_bytes else {}
    everyone = [mine] if comm is None else comm.allgather_object(mine)
    total = {phase: {} for phase in mine}
    for entry in everyone:
        for phase, kinds in entry.items():
            for kind, sent in kinds.items():
                total[phase][kind] = total[phase].get(kind, 0) + int(sent)
    return total


def _mean_bytes(entries):
    """Mean bytes per epoch of ``entries``' ``bytes``, per phase and collective, plus a
    ``total`` per phase."""
    out = {}
    for entry in entries:
        for phase, kinds in entry.get("bytes", {}).items():
            acc = out.setdefault(phase, {})
            for kind, sent in kinds.items():
                acc[kind] = acc.get(kind, 0) + sent / len(entries)
    for kinds in out.values():
        kinds["total"] = sum(kinds.values())
    return out


def _uses_adjacency(config):
    """Whether the model multiplies by the batches' CSR matrices (the loader builds them)."""
    pyg = config.model_class == "sage" and config.conv == "pyg"
    return config.aggregation == "spmm" and not pyg


def _build_model(dataset, config):
    """The :class:`GraphSAGE` or :class:`GCN` of ``config`` for ``dataset``."""
    common = dict(num_layers=len(config.fanouts), dropout=config.dropout,
                  input_dropout=config.input_dropout, aggregation=config.aggregation)
    if config.model_class == "gcn":
        if config.conv == "pyg":
            fail(ArgumentError, "TrainConfig", "conv", "'pyg' is a GraphSAGE layer; the GCN "
                 "has built-in layers only (use conv='auto' or model='sage')", config.conv)
        return GCN(dataset.num_features, config.hidden, dataset.num_classes, **common)
    return GraphSAGE(dataset.num_features, config.hidden, dataset.num_classes,
                     conv=config.conv, layerwise=config.layerwise, **common)


@contextmanager
def _threads_restored():
    """Restore torch's and the native sampler's thread counts on exit."""
    model = torch.get_num_threads()
    sampler = _native.set_num_threads(0)        # the setting as it is (0: OpenMP's default)
    _native.set_num_threads(sampler)
    try:
        yield
    finally:
        if torch.get_num_threads() != model:
            torch.set_num_threads(model)
        _native.set_num_threads(sampler)


def _store_source(store, mode):
    """``(store, sparse)`` for a FeatureStore under ``sparse_features=mode``: its shards
    converted to CSR or dense rows where the mode asks (the same decision as for the whole
    matrix; collective over the store's grid for ``"auto"`` on dense shards)."""
    import scipy.sparse as sp

    if store.sparse:
        if mode != "off":
            return store, True
        return store._with_shard(_densified(store.shard)), False
    if mode == "off" or len(store.shape) != 2:
        return store, False
    if mode == "auto":
        # every block once: the ranks of one replica index hold the whole matrix
        nonzero = store.grid.col_comm.allreduce(
            np.array([np.count_nonzero(store.shard)], dtype=np.int64))[0]
        if int(nonzero) / max(1, math.prod(store.shape)) > SPARSE_DENSITY:
            return store, False
    return store._with_shard(sp.csr_matrix(store.shard)), True


def _densified(matrix):
    """A sparse feature matrix as a dense array, after checking it fits in memory."""
    rows, cols = matrix.shape
    check_memory("TrainConfig", "sparse_features", rows * cols * matrix.dtype.itemsize,
                 f"the features as a dense {rows:,d} x {cols:,d} {matrix.dtype} array",
                 "use sparse_features='auto' (CLI: --sparse-features auto) to keep them sparse")
    return matrix.toarray()


def _plain(config):
    """The config as a dict of plain Python values (tuples as lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()}


def _copy_state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _progress_bar(show, total, desc):
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="batch", leave=False, dynamic_ncols=True)


def run_epoch(model, optimizer, loader, loss_of, *, epoch, seed, progress, desc, reduce,
              rank=0):
    """One training epoch of :func:`fit_node` / :func:`fit_link` (epoch ``epoch`` of
    ``loader``'s sample stream) through the one step loop, :func:`~spsample.train._steps.
    train_steps` (which :meth:`Trainer.train_epoch` runs too): ``loss_of(model, batch)`` per
    batch, a backward pass, the gradients averaged over the ranks of ``reduce`` (a
    :class:`GradientAllReduce`) that had a batch, an optimizer step; a progress bar when
    ``progress``. Dropout is seeded from ``(seed, epoch, rank)``, so an epoch's losses depend
    on nothing run before it: a resumed run replays them exactly.

    Returns
    -------
    dict
        ``loss`` (mean of this rank's batches), ``batches``, ``sampled_edges`` (this rank),
        the epoch's seconds on this rank per phase: ``sample_seconds``, ``fetch_seconds``,
        ``convert_seconds`` (the producer, overlapped with training when the pipeline is on),
        ``wait_seconds`` (training waiting for batches), ``forward_seconds`` (the model and
        the loss), ``backward_seconds``, ``optimizer_seconds`` (with the gradient
        all-reduce); ``threads`` and ``sampler_threads`` (torch's and the native sampler's),
        and ``stats`` (the loader's epoch stats).
    """
    bar = _progress_bar(progress, loader.steps_per_epoch, desc)

    def after_step(steps):
        if bar is not None:
            bar.update(1)
            if steps.losses:
                bar.set_postfix(loss=f"{steps.losses[-1]:.4f}", refresh=False)

    done = train_steps(model, optimizer, loader, loss_of, epoch=epoch, seed=seed,
                       reduce=reduce, rank=rank, after_step=after_step)
    if bar is not None:
        bar.close()
    stats, losses = done.stats, done.losses
    return dict(loss=float(np.mean(losses)) if losses else 0.0, batches=stats["batches"],
                sampled_edges=stats["sampled_edges"], **{
                    key: float(stats[key]) for key in ("sample_seconds", "fetch_seconds",
                                                       "convert_seconds", "wait_seconds")},
                **done.phases, threads=torch.get_num_threads(),
                sampler_threads=_native.get_num_threads(), stats=stats)


def evaluation_batches(loader, progress, desc):
    """The batches of ``loader``'s epoch 0 (the same minibatches at every evaluation), with a
    progress bar over them when ``progress``."""
    bar = _progress_bar(progress, loader.steps_per_epoch, desc)
    with loader.iter_epoch(0) as batches:
        for batch in batches:
            yield batch
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
