"""The one step loop of every training task: node classification (:class:`Trainer`),
heterogeneous node classification (:func:`~spsample.train.hetero.fit_node`) and link
prediction (:func:`~spsample.train.link.fit_link`).

An epoch runs ``loader.steps_per_epoch`` steps on every rank of the gradient all-reduce (a
rank that has run out of minibatches contributes zeros and still joins the all-reduce): zero
the gradients, the task's loss of the batch, backward, all-reduce, optimizer step when any
rank contributed. Dropout draws from a generator seeded from ``(seed, epoch, rank)`` -- torch's
default one inside ``torch.random.fork_rng`` (the caller's generator is untouched) and this
thread's own (:func:`~spsample.train._dropout.seeded`, for ranks that are threads) -- so an
epoch's losses depend on nothing run before it: a resumed run replays them exactly.
"""

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .._optional import import_torch
from ._dropout import seeded

torch = import_torch("spsample.train")

__all__ = ["EpochSteps", "train_steps", "epoch_seed", "seeded_init"]

#: Held while a model is initialised from a seed: torch's default generator is one per
#: process, and ranks that are threads must not interleave their draws.
_INIT_LOCK = threading.Lock()


def epoch_seed(seed, epoch, rank):
    """A torch seed for the dropout masks of ``(seed, epoch, rank)``."""
    return int(np.random.SeedSequence([seed, epoch, rank, 0x5A6E]).generate_state(1,
                                                                               np.uint64)[0])


@contextmanager
def seeded_init(seed):
    """Within the block torch's default generator is seeded with ``seed`` (restored after),
    and no other thread draws from it: a model built inside gets the parameters of a process
    alone."""
    with _INIT_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@dataclass
class EpochSteps:
    """What one epoch's steps did on this rank.

    Attributes
    ----------
    losses : list of float
        The loss of each step that had a batch.
    seen : int
        Seeds of those batches (``batch.batch_size`` summed).
    weighted_loss : float
        Sum over the batches of loss times ``batch.batch_size``.
    edges : int
        ``batch.num_edges`` summed (0 for batches without it: heterogeneous ones).
    phases : dict
        ``forward_seconds`` (the model and the loss), ``backward_seconds``,
        ``optimizer_seconds`` (with the gradient all-reduce).
    stats : dict
        The loader's epoch stats (``sample_seconds``, ``sampled_edges``, bytes, ...).
    started : float
        ``time.perf_counter()`` when the epoch began.
    """

    losses: list = field(default_factory=list)
    seen: int = 0
    weighted_loss: float = 0.0
    edges: int = 0
    phases: dict = field(default_factory=lambda: dict(
        forward_seconds=0.0, backward_seconds=0.0, optimizer_seconds=0.0))
    stats: dict = None
    started: float = 0.0


def train_steps(model, optimizer, loader, loss_of, *, epoch, seed, reduce, rank=0,
                after_step=None):
    """Train ``model`` on epoch ``epoch`` of ``loader`` (its ``steps_per_epoch`` steps).

    Parameters
    ----------
    model : torch.nn.Module
        Put in training mode.
    optimizer : torch.optim.Optimizer
    loader : spsample.Loader or LinkLoader
    loss_of : callable
        ``loss_of(model, batch)``: the scalar loss tensor of a batch.
    epoch, seed, rank : int
        The sample stream's epoch; dropout is seeded from ``(seed, epoch, rank)``.
    reduce : GradientAllReduce
        Averages the gradients over the ranks that had a batch; returns how many did.
    after_step : callable, optional
        ``after_step(steps)`` after every optimizer step (``steps`` the running
        :class:`EpochSteps`); its time counts in no phase.

    Returns
    -------
    EpochSteps
    """
    model.train()
    out = EpochSteps(started=time.perf_counter())
    phases = out.phases
    seed_of_epoch = epoch_seed(seed, epoch, rank)
    with torch.random.fork_rng(devices=[]), seeded(seed_of_epoch):
        torch.manual_seed(seed_of_epoch)
        with loader.iter_epoch(epoch) as batches:
            for _ in range(loader.steps_per_epoch):
                batch = next(batches, None)
                t1 = time.perf_counter()
                optimizer.zero_grad(set_to_none=True)
                if batch is not None:
                    loss = loss_of(model, batch)
                    t2 = time.perf_counter()
                    loss.backward()
                    t3 = time.perf_counter()
                    phases["forward_seconds"] += t2 - t1
                    phases["backward_seconds"] += t3 - t2
                    t1 = t3
                    value = float(loss.detach())
                    out.losses.append(value)
                    out.seen += batch.batch_size
                    out.weighted_loss += value * batch.batch_size
                    out.edges += getattr(batch, "num_edges", 0)    # none on hetero batches
                if reduce(batch is not None):
                    optimizer.step()
                phases["optimizer_seconds"] += time.perf_counter() - t1
                if after_step is not None:
                    after_step(out)
            out.stats = dict(batches.stats)
    return out
