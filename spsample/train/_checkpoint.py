"""Checkpoints of the task loops: :func:`~spsample.train.link.fit_link` and
:func:`~spsample.train.hetero.fit_node` (``spsample train --task link`` and heterogeneous node
classification).

A :class:`TaskRun` is what a checkpoint holds: the next epoch, the history, the
best-validation model, the model and the optimizer, the settings that fix the sample stream
and the model (checked against the resuming run's) and the world size. The loops draw each
epoch's minibatches from ``(seed, epoch)`` and its dropout masks from ``(seed, epoch, rank)``
(:func:`~spsample.train._trainer.run_epoch`), so a run resumed at epoch ``e`` replays the
losses of an uninterrupted run bit for bit.
"""

import os

from .._errors import ArgumentError
from .._optional import import_torch
from .._validate import fail
from ..distributed._collective import agree
from ..io._files import check_writable, temporary_beside

torch = import_torch("spsample.train")

__all__ = ["TaskRun", "TASK_FORMAT", "read_checkpoint", "start_run"]

#: ``format`` of a task checkpoint (:class:`Trainer`'s are ``spsample-train-1``).
TASK_FORMAT = "spsample-task-1"
_ENTRIES = {"format": str, "task": str, "settings": dict, "epoch": int, "model": dict,
            "optimizer": dict, "history": list, "best": dict, "world_size": int}
_NAMES = {"link": "link prediction (fit_link, spsample train --task link)",
          "node": "heterogeneous node classification (fit_node)",
          "spsample-train-1": "node classification (Trainer, spsample train)"}


def read_checkpoint(where, argname, path, device="cpu"):
    """The object saved in ``path`` by ``torch.save``.

    Raises
    ------
    ArgumentError
        Naming ``argname``: ``path`` is missing, empty, truncated or not a torch file."""
    if not os.path.isfile(path):
        fail(ArgumentError, where, argname, "does not exist or is not a file", os.fspath(path))
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # noqa: BLE001 -- any failure to deserialize: not a checkpoint
        fail(ArgumentError, where, argname, f"is not a readable spsample checkpoint (empty, "
             f"truncated or another kind of file: {type(exc).__name__}: {str(exc)[:200]})",
             os.fspath(path))


def _plain(value):
    """``value`` with tuples as lists, recursively (as a checkpoint stores settings)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class TaskRun:
    """The resumable state of a task loop.

    Parameters
    ----------
    where : str
        The public function (messages name it).
    task : {"link", "node"}
    settings : dict
        The arguments a resumed run must share (plain values).
    model, optimizer : torch.nn.Module, torch.optim.Optimizer
    metric : str
        The history key the best model maximises (``val_auc``, ``val_macro_f1``).
    rank, world_size : int

    Attributes
    ----------
    epoch : int
        The next epoch to train.
    history : list of dict
    best : dict
        ``epoch`` (-1 before any), ``state`` (the model's, or None) and the best entry's
        validation values.
    """

    def __init__(self, where, task, settings, model, optimizer, metric, rank, world_size):
        self.where, self.task, self.settings = where, task, _plain(settings)
        self.model, self.optimizer, self.metric = model, optimizer, metric
        self.rank, self.world_size = rank, world_size
        self.epoch, self.history = 0, []
        self.best = {"epoch": -1, "state": None, metric: -1.0}

    def record(self, entry, values):
        """Append ``entry`` (epoch ``self.epoch``) to the history; keep the model when its
        ``values[metric]`` is the best so far; advance the epoch."""
        self.history.append(entry)
        if values[self.metric] > self.best[self.metric]:
            state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            self.best = dict(values, epoch=self.epoch, state=state)
        self.epoch += 1

    def restore_best(self):
        """Load the best-validation model, if any epoch ran."""
        if self.best["state"] is not None:
            self.model.load_state_dict(self.best["state"])

    # ------------------------------------------------------------------ files
    def state_dict(self):
        return dict(format=TASK_FORMAT, task=self.task, settings=self.settings,
                    epoch=self.epoch, model=self.model.state_dict(),
                    optimizer=self.optimizer.state_dict(), history=list(self.history),
                    best=dict(self.best), world_size=self.world_size)

    def save(self, path):
        """Write :meth:`state_dict` to ``path`` (rank 0; atomically, through a temporary file
        beside it)."""
        if self.rank != 0:
            return
        with temporary_beside(path) as tmp:
            torch.save(self.state_dict(), tmp)
            os.replace(tmp, path)

    def resume(self, path, argname="resume"):
        """Continue the run saved in ``path``.

        Raises
        ------
        ArgumentError
            Naming ``argname``: not a readable checkpoint, one of another task or format, one
            saved with other settings or another world size, or a model that does not fit."""
        state = read_checkpoint(self.where, argname, path)
        self._check(state, argname, os.fspath(path))
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, KeyError, ValueError, TypeError, IndexError) as exc:
            self._refuse(argname, path, f"holds a model or optimizer that does not fit this "
                         f"run ({type(exc).__name__}: {str(exc)[:200]})")
        self.epoch, self.history, self.best = state["epoch"], list(state["history"]), \
            dict(state["best"])

    def _check(self, state, argname, path):
        fmt = state.get("format") if isinstance(state, dict) else None
        if fmt != TASK_FORMAT:
            kind = _NAMES.get(fmt, "not an spsample training checkpoint")
            self._refuse(argname, path, f"is a checkpoint of {kind}, not of "
                         f"{_NAMES[self.task]}" if fmt in _NAMES else f"is {kind}")
        for key, kind in _ENTRIES.items():
            if not isinstance(state.get(key), kind) or isinstance(state.get(key), bool):
                self._refuse(argname, path, f"lacks the entry {key!r} ({kind.__name__})")
        if state["task"] != self.task:
            self._refuse(argname, path, f"is a checkpoint of {_NAMES.get(state['task'])}, "
                         f"not of {_NAMES[self.task]}")
        for key, ours in self.settings.items():
            theirs = state["settings"].get(key)
            if theirs != ours:
                self._refuse(argname, path, f"was saved with {key}={theirs!r}, this run has "
                             f"{key}={ours!r}")
        if state["world_size"] != self.world_size:
            self._refuse(argname, path, f"was saved by {state['world_size']} ranks, this run "
                         f"has {self.world_size} (the sample stream would differ)")
        if not {"epoch", "state", self.metric} <= set(state["best"]):
            self._refuse(argname, path, f"lacks the entries of best ('epoch', 'state', "
                         f"{self.metric!r})")

    def _refuse(self, argname, path, problem):
        fail(ArgumentError, self.where, argname, f"{os.fspath(path)!r} {problem}",
             show_value=False)


def start_run(run, comm, checkpoint, resume):
    """Before the first epoch: the checkpoint's folder checked (rank 0) and the run resumed
    from ``resume``, any rank's failure raised on every rank of ``comm`` (a Communicator)."""
    def check():
        if checkpoint is not None and run.rank == 0:
            check_writable(run.where, "checkpoint", checkpoint)
        if resume is not None:
            run.resume(resume)
    if comm is None:
        check()
        return
    agree(comm, run.where, check)
