"""spsample: matrix-algebra bulk sampling for graph neural network training.

Sampling is written as sparse linear algebra over the adjacency ``A`` (see the design notes):
a frontier/selection matrix ``Q``, a probability matrix ``P = normalise_rows(Q·A)`` (node-wise)
or ``normalise_rows(Q_b·(A∘A))`` (LADIES), a selection rule, and an extraction that renumbers
vertices per minibatch. Many minibatches are sampled in one bulk pass per hop, and a
counter-based RNG makes every minibatch independent of how it was batched, distributed or
which device ran it.

The whole public API is listed in ``__all__``; implementation modules are private. Optional
parts (torch loader, MPI, GPU) are imported lazily, so ``import spsample`` needs only NumPy,
SciPy and h5py.
"""

import importlib

from ._openmp import set_passive_wait

# First of all, before anything loads an OpenMP runtime (torch, the native kernels): idle
# OpenMP threads sleep instead of spinning, unless the user chose (see spsample._openmp).
set_passive_wait()

from ._errors import (  # noqa: E402
    ArgumentError,
    ArgumentTypeError,
    DatasetError,
    DatasetNotFoundError,
    DistributedError,
    GraphError,
    MissingDependencyError,
    ResourceLimitError,
    NotLoweredWarning,
    SpsampleWarning,
    SamplerError,
    SeedError,
    SpsampleError,
)
from .graph._graph import Graph  # noqa: E402
from .graph._hetero import HeteroGraph  # noqa: E402

__version__ = "0.1.0"

# name -> module that defines it; imported on first access (PEP 562) so that optional
# dependencies (torch, mpi4py, cupy) are only needed by the features that use them.
_LAZY = {
    # sampling core
    "MiniBatch": ".engine._minibatch",
    "sample": ".samplers._sample",
    "Sampler": ".samplers",
    "NodeWise": ".samplers",
    "LADIES": ".samplers",
    "FastGCN": ".samplers",
    "LABOR": ".samplers",
    "RandomWalk": ".samplers",
    "Bulk": ".engine._minibatch",
    "HeteroMiniBatch": ".engine._hetero_sample",
    "HeteroBulk": ".engine._hetero_sample",
    "BulkState": ".samplers",
    "HopContext": ".samplers",
    # datasets on disk
    "Dataset": ".io",
    "HeteroDataset": ".io",
    "save": ".io",
    "load": ".io",
    "DiskGraph": ".io._disk_graph",
    "convert": ".io",
    # torch training loop
    "Loader": ".loader",
    "LinkLoader": ".loader",
    # sub-packages
    "distributed": ".distributed",
    "io": ".io",
    "samplers": ".samplers",
    "primitives": ".primitives",
    "testing": ".testing",
    "rng": "._rng",
    "rmat": ".graph._generate",
}

# the names above that are modules (``spsample.rng`` is the module ``spsample._rng``)
_MODULES = {"distributed", "io", "samplers", "primitives", "testing", "rng"}

__all__ = [
    "Graph",
    "HeteroGraph",
    "SpsampleError",
    "ArgumentError",
    "ArgumentTypeError",
    "GraphError",
    "SeedError",
    "SamplerError",
    "DatasetError",
    "DatasetNotFoundError",
    "DistributedError",
    "MissingDependencyError",
    "ResourceLimitError",
    "NotLoweredWarning",
    "SpsampleWarning",
    *_LAZY,
]


def __getattr__(name):
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'spsample' has no attribute {name!r}") from None
    mod = importlib.import_module(module, __name__)
    value = mod if name in _MODULES else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
