"""Reference GNN training with spsample batches (one process, or data-parallel over a
:class:`spsample.distributed.Communicator`: MPI, NCCL or thread ranks).

* :class:`GraphSAGE` -- mean-aggregation GraphSAGE over :class:`spsample.loader.Batch`;
* :class:`GCN` -- a GCN aggregating with LADIES / FastGCN importance weights;
* :func:`aggregate` / :func:`scatter_aggregate` -- a layer's aggregation as a CSR product (and
  its scatter-add oracle); :func:`dropout` -- dropout with 16-bit masks;
* :class:`Trainer` / :class:`TrainConfig` -- node classification: loaders, Adam, gradient
  all-reduce over a communicator, best-validation model, checkpoint and resume; its epochs,
  :func:`~spsample.train.hetero.fit_node`'s and :func:`~spsample.train.link.fit_link`'s run
  the one step loop of ``_steps.train_steps``;
* :func:`random_split`, :func:`parameter_checksums` (replica checks under ``mpiexec``).

Needs torch; PyG is used for the layers when installed.
"""

from ._ddp import GradientAllReduce, parameter_checksum, parameter_checksums
from ._aggregate import aggregate, scatter_aggregate
from ._dropout import dropout
from ._model import GCN, GCNLayer, GraphSAGE, SAGELayer
from ._split import random_split
from ._trainer import SAMPLERS, TrainConfig, Trainer, make_sampler

__all__ = ["GraphSAGE", "SAGELayer", "GCN", "GCNLayer", "aggregate", "scatter_aggregate",
           "dropout", "Trainer", "TrainConfig", "make_sampler", "SAMPLERS",
           "random_split", "GradientAllReduce", "parameter_checksum", "parameter_checksums"]
