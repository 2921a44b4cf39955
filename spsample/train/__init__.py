"""Reference GraphSAGE training with spsample batches (one process, or data-parallel MPI).

* :class:`GraphSAGE` -- mean-aggregation GraphSAGE over :class:`spsample.loader.Batch`;
* :class:`Trainer` / :class:`TrainConfig` -- the training loop: loaders, Adam, gradient
  all-reduce over an mpi4py communicator, best-validation model, checkpoint and resume;
* :func:`random_split`, :func:`parameter_checksums` (replica checks under ``mpiexec``).

Needs torch; PyG is used for the layers when installed.
"""

from ._ddp import GradientAllReduce, parameter_checksum, parameter_checksums
from ._model import GraphSAGE, SAGELayer
from ._split import random_split
from ._trainer import SAMPLERS, TrainConfig, Trainer, make_sampler

__all__ = ["GraphSAGE", "SAGELayer", "Trainer", "TrainConfig", "make_sampler", "SAMPLERS",
           "random_split", "GradientAllReduce", "parameter_checksum", "parameter_checksums"]
