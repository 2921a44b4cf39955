"""The prologue every graph's bulk sampling shares: check the arguments of
:func:`spsample.sample`, cut the seeds into minibatches, reject a vertex repeated in one."""

import numpy as np

from .. import _rng
from .._errors import ArgumentError, ArgumentTypeError, SeedError
from .._validate import as_index_array, as_int, fail
from ._protocol import Sampler

__all__ = ["check_seeds", "check_sample_args", "split_batches", "check_unique_per_batch"]

_MAX_BATCHES = 2**32


def check_seeds(where, seeds, num_nodes):
    """``seeds`` as a new int64 array of vertex ids in ``[0, num_nodes)``, non-empty, 1-D.

    Raises
    ------
    SeedError, ArgumentTypeError
        Naming ``seeds`` and the function ``where``.
    """
    seeds = as_index_array(where, "seeds", seeds, error_cls=SeedError)
    if seeds.size == 0:
        fail(SeedError, where, "seeds", "must not be empty", seeds.shape)
    lo, hi = int(seeds.min()), int(seeds.max())
    if lo < 0:
        fail(SeedError, where, "seeds", "must be non-negative vertex ids", lo)
    if hi >= num_nodes:
        fail(SeedError, where, "seeds", f"has an id >= num_nodes ({num_nodes})", hi)
    return seeds


def check_sample_args(num_nodes, seeds, sampler, batch_size, seed, epoch, batch_offset):
    """Validate the arguments of :func:`sample` (shared by the distributed path)."""
    where = "sample"
    if not isinstance(sampler, Sampler):
        fail(ArgumentTypeError, where, "sampler", "must be a spsample Sampler (NodeWise, LADIES, "
             "FastGCN or a subclass of spsample.Sampler)", type(sampler))
    seeds = check_seeds(where, seeds, num_nodes)
    batch_size = as_int(where, "batch_size", batch_size, minimum=1)
    seed = as_int(where, "seed", seed, minimum=0)
    if seed >= 2**64:
        fail(ArgumentError, where, "seed",
             "must be below 2**64", seed)
    epoch = as_int(where, "epoch", epoch, minimum=0)
    if epoch > _rng.MAX_EPOCH:
        fail(ArgumentError, where, "epoch", f"must be at most {_rng.MAX_EPOCH}", epoch)
    batch_offset = as_int(where, "batch_offset", batch_offset, minimum=0)
    batch_size = min(batch_size, seeds.size)      # more than every seed: one minibatch
    num_batches = -(-seeds.size // batch_size)
    if batch_offset + num_batches > _MAX_BATCHES:
        fail(ArgumentError, where, "batch_offset",
             "plus the number of minibatches must stay below 2**32", batch_offset)
    return seeds, batch_size, seed, epoch, batch_offset


def split_batches(num_seeds, batch_size):
    """Sizes of the consecutive minibatches: full ones, then the remainder (never dropped)."""
    full, rest = divmod(num_seeds, batch_size)
    sizes = np.full(full + (rest > 0), batch_size, dtype=np.int64)
    if rest:
        sizes[-1] = rest
    return sizes


def check_unique_per_batch(seeds, sizes):
    """Reject a vertex repeated within one minibatch (``n_id`` holds each vertex once)."""
    batch = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    key = np.sort(batch * (int(seeds.max()) + 1) + seeds)
    dup = np.flatnonzero(key[1:] == key[:-1])
    if dup.size:
        m = int(seeds.max()) + 1
        fail(SeedError, "sample", "seeds",
             f"repeats vertex {int(key[dup[0]] % m)} within minibatch {int(key[dup[0]] // m)}; "
             "seeds must be distinct within a minibatch", show_value=False)
