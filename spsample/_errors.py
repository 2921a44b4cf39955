"""The exception hierarchy of spsample.

Every error the library raises on bad input derives from :class:`SpsampleError` and from the
matching built-in exception, so ``except ValueError`` keeps working for callers that do not
know spsample. Messages name the argument and the offending value.
"""

__all__ = [
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
    "SpsampleWarning",
    "NotLoweredWarning",
]


class SpsampleError(Exception):
    """Base class of every error spsample raises deliberately."""


class ArgumentError(SpsampleError, ValueError):
    """An argument has a value outside its documented domain (e.g. ``batch_size=0``)."""


class ArgumentTypeError(SpsampleError, TypeError):
    """An argument has the wrong type (e.g. float seeds, a list where an array is needed)."""


class GraphError(ArgumentError):
    """A graph's arrays are inconsistent: non-monotone ``indptr``, out-of-range ``indices``,
    negative or non-finite ``weights``, an empty graph, ..."""


class SeedError(ArgumentError):
    """Seed vertices are empty, out of range, or duplicated within one minibatch."""


class SamplerError(ArgumentError):
    """A sampler was configured with invalid fanouts or unknown options."""


class DatasetError(SpsampleError, ValueError):
    """A dataset file is truncated, malformed, or lacks a required array."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A dataset path does not exist."""


class DistributedError(SpsampleError, RuntimeError):
    """Ranks disagree (different sampler, seed, world size) or a distributed layout is invalid.

    Raised on every rank of the communicator, with the same message, never only on one."""


class MissingDependencyError(SpsampleError, ImportError):
    """An optional dependency (torch, mpi4py, cupy, torch_geometric, ...) is needed but absent.

    The message says what to install."""


class ResourceLimitError(SpsampleError, MemoryError):
    """An input asks for more memory than this process may use (checked before allocating).

    Raised, e.g., for an edge list whose largest id implies billions of nodes, a file that
    declares arrays far larger than memory, or fanouts and batch sizes whose sampled output
    cannot fit. The message says how much would be needed, the limit, and which argument
    (CLI: which flag) to change."""


class SpsampleWarning(UserWarning):
    """Something a user should know about their data, e.g. that most nodes have no features.

    The command line prints these as ``spsample <command>: warning: ...`` lines."""


class NotLoweredWarning(SpsampleWarning):
    """A sampler's constructors could not be lowered to the native engine (a constructor reads
    sampled data, or builds something no kernel implements): it runs on the NumPy path. Issued
    once per constructor; the message names it."""
