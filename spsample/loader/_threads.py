"""Threads where the time is: the cores split between the model (torch) and the sampler.

A training step's time is the model's (forward, backward, optimizer) plus whatever part of the
producer's work (sampling, feature fetch) the pipeline cannot hide. On a small machine the
model is usually ≥ 90 % of the epoch, so a fixed split that keeps a core for the sampler
wastes most of it. :func:`plan_threads` turns the producer's measured share of the last epoch
into a split of this process's cores; :func:`balance_threads` measures it from a
:class:`~spsample.Loader`'s last epoch and applies the plan, once per epoch:

    for epoch in range(epochs):
        spsample.loader.balance_threads(loader)     # torch and sampler threads from the last epoch
        for batch in loader:
            ...

Rules (the model first, the sampler gets the rest, and together never more than the cores):

* the process's cores: its CPU affinity (and cgroup CPU quota), divided by the ranks of an MPI
  job that share the node (``MPI_LOCALNRANKS``, ``OMPI_COMM_WORLD_LOCAL_SIZE``, or a shared-
  memory split of the communicator), and capped by ``OMP_NUM_THREADS`` when the user set it;
* with the pipeline on and at least 2 cores, model threads = ``round(cores × (1 − share))``
  kept within ``[1, cores − 1]``, with ``share`` the producer's busy seconds over the epoch's
  seconds (no measurement yet: share 0), and sampler threads = the cores left: the model's
  and the sampler's threads together are the process's cores, so ranks × threads never
  exceed the cores of a node (when there are at least as many cores as ranks);
* on one core (or with the pipeline off) nothing can overlap: the producer runs in the
  training thread (:attr:`ThreadPlan.pipeline` is False; :func:`balance_threads` turns the
  loader's background thread off) and model and sampler each get every core, one after the
  other;
* an explicit setting wins: ``model_threads`` / ``sampler_threads`` arguments (``Trainer``'s
  ``threads`` and ``sampler_threads``, ``spsample train --threads``), and ``SPSAMPLE_THREADS``
  for the sampler; the other count then takes the cores left (at least 1).

The threads of an OpenMP runtime that wait for work sleep (``OMP_WAIT_POLICY=passive``, set by
``import spsample``; see :mod:`spsample._threads`): an idle producer costs no core.
"""

import math
import os
from dataclasses import dataclass

from .. import native as _native
from .._errors import ArgumentError
from .._validate import as_int, fail
from ..native import check_threads, threads_from_env, warn_if_spinning
from ..distributed._comm import Communicator, as_communicator

__all__ = ["ThreadPlan", "plan_threads", "balance_threads", "process_cores", "local_ranks"]

#: Environment variables MPI launchers set to the number of ranks on this node.
LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE",
                   "SLURM_NTASKS_PER_NODE")


@dataclass(frozen=True)
class ThreadPlan:
    """How many threads the model and the sampler get.

    Attributes
    ----------
    model : int
        torch's intra-op threads (``torch.set_num_threads``).
    sampler : int
        The native sampling kernels' threads (``spsample.native.set_num_threads``).
    cores : int
        Cores of this process (the node's, divided among its ranks).
    share : float or None
        The producer's share of the epoch the plan was made from (None: not measured).
    pipeline : bool
        Whether the producer runs in its own thread beside the model (``model + sampler <=
        cores``), or in the training thread, one after the other (one core, or the pipeline
        off).
    """

    model: int
    sampler: int
    cores: int
    share: float = None
    pipeline: bool = True


def local_ranks(comm=None, environ=None):
    """Ranks of this job on this node: from ``comm`` (a spsample Communicator's
    ``local_size()``, for MPI a shared-memory split; collective; an mpi4py communicator is
    wrapped) when given, else from the launcher's environment (1 outside MPI)."""
    if comm is not None:
        wrapped = as_communicator(comm, "local_ranks")
        try:
            return int(wrapped.local_size())
        finally:
            if not isinstance(comm, Communicator):
                wrapped.free()
    environ = os.environ if environ is None else environ
    for name in LOCAL_SIZE_VARS:
        text = environ.get(name, "").split("(")[0].strip()
        if text.isdigit() and int(text) > 0:
            return int(text)
    return 1


def process_cores(ranks=1, environ=None):
    """Cores this process may use: its CPU affinity and cgroup quota, divided by ``ranks``
    (at least 1), capped by ``OMP_NUM_THREADS`` when that is set."""
    environ = os.environ if environ is None else environ
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    cores = min(cores, _cgroup_cores() or cores)
    cores = max(1, cores // max(1, int(ranks)))
    omp = environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if omp.isdigit() and int(omp) > 0:
        cores = min(cores, int(omp))
    return cores


def _cgroup_cores():
    """``ceil(quota / period)`` of a cgroup-v2 CPU limit, or None without one."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as fh:
            quota, period = fh.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return max(1, math.ceil(int(quota) / int(period)))


def plan_threads(share=None, *, cores, model_threads=None, sampler_threads=None,
                 pipeline=True):
    """The split of ``cores`` for a producer busy ``share`` of the epoch (a pure function).

    Parameters
    ----------
    share : float or None
        Producer seconds / epoch seconds (clipped to [0, 1]); None: not measured yet (0).
    cores : int
        This process's cores (:func:`process_cores`).
    model_threads, sampler_threads : int, optional
        Explicit settings; they are kept as they are (the other count takes the cores left).
    pipeline : bool
        Whether the producer may overlap the model in a background thread.

    Returns
    -------
    ThreadPlan
        ``model + sampler <= cores`` when ``pipeline`` (``cores >= 2``, no explicit counts);
        else the producer runs in the training thread and both get every core.

    Examples
    --------
    >>> plan_threads(0.05, cores=2)
    ThreadPlan(model=1, sampler=1, cores=2, share=0.05, pipeline=True)
    >>> plan_threads(0.3, cores=8)
    ThreadPlan(model=6, sampler=2, cores=8, share=0.3, pipeline=True)
    >>> plan_threads(None, cores=1)
    ThreadPlan(model=1, sampler=1, cores=1, share=None, pipeline=False)
    """
    where = "plan_threads"
    cores = as_int(where, "cores", cores, minimum=1)
    if share is not None and not (isinstance(share, (int, float)) and math.isfinite(share)):
        fail(ArgumentError, where, "share", "must be a finite number or None", share)
    if model_threads is not None:
        model_threads = check_threads(where, "model_threads", model_threads)
    if sampler_threads is not None:
        sampler_threads = check_threads(where, "sampler_threads", sampler_threads)
    s = 0.0 if share is None else min(1.0, max(0.0, float(share)))
    background = bool(pipeline) and cores >= 2
    if background:
        model = min(cores - 1, max(1, int(round(cores * (1.0 - s)))))
        if sampler_threads is not None:
            model = max(1, min(model, cores - sampler_threads))
        model = model if model_threads is None else model_threads
        sampler = max(1, cores - model) if sampler_threads is None else sampler_threads
    else:
        model = cores if model_threads is None else model_threads
        sampler = cores if sampler_threads is None else sampler_threads
    return ThreadPlan(model, sampler, cores, None if share is None else float(share),
                      background)


def producer_share(stats):
    """The producer's busy seconds over the epoch's seconds, from an epoch's ``stats`` (None
    when the epoch has not finished or took no time)."""
    if not stats:
        return None
    total = stats.get("epoch_seconds") or 0.0
    if total <= 0:
        return None
    busy = stats["sample_seconds"] + stats["fetch_seconds"] + stats["convert_seconds"]
    return busy / total


def balance_threads(loader, *, model_threads=None, sampler_threads=None, ranks=None,
                    apply=True):
    """Split this process's cores between the model and ``loader``'s sampler, from the
    producer's share of the loader's last finished epoch, and apply it.

    Parameters
    ----------
    loader : spsample.Loader or None
        ``None``: no epoch measured yet (the model gets the cores but one, the sampler one).
    model_threads, sampler_threads : int, optional
        Explicit settings (kept as they are). ``SPSAMPLE_THREADS``, when set, fixes the
        sampler's.
    ranks : int, optional
        Ranks sharing the node (default: from the MPI launcher's environment).
    apply : bool
        Set ``torch.set_num_threads`` and the native kernels' threads (else only return).

    Returns
    -------
    ThreadPlan
        With ``apply``, its counts are set, and when its ``pipeline`` is False while the
        loader's is on (a single core: the producer's thread could only take turns with the
        model's), the loader's background thread is turned off (``loader.pipeline = False``).
    """
    if sampler_threads is None:
        sampler_threads = threads_from_env() or None
    cores = process_cores(local_ranks() if ranks is None else ranks)
    plan = plan_threads(producer_share(getattr(loader, "last_stats", None)), cores=cores,
                        model_threads=model_threads, sampler_threads=sampler_threads,
                        pipeline=getattr(loader, "pipeline", True))
    if apply:
        if plan.model > 1 or plan.sampler > 1:
            warn_if_spinning()          # torch imported before spsample: its threads spin
        apply_plan(plan)
        if not plan.pipeline and getattr(loader, "pipeline", False):
            loader.pipeline = False
    return plan


def apply_plan(plan):
    """Set torch's and the native kernels' thread counts to ``plan``'s."""
    import torch

    if torch.get_num_threads() != plan.model:
        torch.set_num_threads(plan.model)
    if _native.AVAILABLE:
        _native.set_num_threads(plan.sampler)
