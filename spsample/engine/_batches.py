"""The prologue every graph's bulk sampling shares: check the arguments of
:func:`spsample.sample` once into one :class:`SampleRequest` (:func:`sample_request`: the
seeds cut into minibatches, their ids, the seed and epoch), and reject a vertex repeated in a
minibatch (:meth:`SampleRequest.check_unique`). The in-memory, heterogeneous, disk and
distributed graphs all build their request here (see :mod:`spsample.graph._source`)."""

import dataclasses

import numpy as np

from .. import _rng
from .._errors import ArgumentError, ArgumentTypeError, SeedError
from .._validate import as_index_array, as_int, fail
from ._protocol import Sampler

__all__ = ["SampleRequest", "sample_request", "check_seeds", "check_sample_args",
           "split_batches", "check_unique_per_batch"]

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
    """Reject a vertex repeated within one minibatch (``n_id`` holds each vertex once).

    ``seeds`` are vertex ids (``>= 0``) cut into minibatches of ``sizes``. The error names the
    first repeat in (minibatch, vertex) order. Seeds shown distinct by a count over their id
    range (when that range is at most :data:`_COUNT_SPAN` times their number) are not sorted;
    otherwise each minibatch is sorted on its own.

    Raises
    ------
    SeedError
        Naming ``seeds``, the vertex and the minibatch.
    """
    if seeds.size < 2:
        return
    if seeds.size >= _COUNT_MIN and int(seeds.max()) < _COUNT_SPAN * seeds.size and \
            int(seeds.min()) >= 0 and int(np.bincount(seeds, minlength=1).max()) < 2:
        return                                     # distinct overall, so in every minibatch
    found = _first_repeat(seeds, sizes)
    if found is not None:
        fail(SeedError, "sample", "seeds",
             f"repeats vertex {found[1]} within minibatch {found[0]}; "
             "seeds must be distinct within a minibatch", show_value=False)


#: The distinct-seed check counts ids instead of sorting while their range is at most this many
#: times the number of seeds (beyond, the count's passes over the range cost more than the
#: sort), and there are at least :data:`_COUNT_MIN` seeds (fewer sort in microseconds).
_COUNT_SPAN = 8
_COUNT_MIN = 1024


def _first_repeat(seeds, sizes):
    """``(minibatch, vertex)`` of the first repeat within a minibatch in (minibatch, vertex)
    order, or ``None``: the minibatches of equal size sorted row by row (every one but the last
    for :func:`split_batches`), any other layout by one sort of (minibatch, vertex) keys."""
    sizes = np.asarray(sizes, dtype=np.int64)
    b = int(sizes[0])
    full = sizes.size - 1 if sizes.size > 1 and int(sizes[-1]) != b else sizes.size
    if b < 1 or (full > 1 and (sizes[:full] != b).any()):
        return _first_repeat_keyed(seeds, sizes)
    rows = np.sort(seeds[:full * b].reshape(full, b), axis=1)
    same = rows[:, 1:] == rows[:, :-1]
    if same.any():
        j, i = divmod(int(same.argmax()), b - 1)     # the first True, row by row
        return j, int(rows[j, i])
    if full < sizes.size:
        last = np.sort(seeds[full * b:])
        same = last[1:] == last[:-1]
        if same.any():
            return full, int(last[int(same.argmax())])
    return None


def _first_repeat_keyed(seeds, sizes):
    batch = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    m = int(seeds.max()) + 1
    key = np.sort(batch * m + seeds)
    dup = np.flatnonzero(key[1:] == key[:-1])
    if dup.size:
        return int(key[dup[0]] // m), int(key[dup[0]] % m)
    return None


@dataclasses.dataclass(frozen=True)
class SampleRequest:
    """The checked arguments of one :func:`spsample.sample` call on a graph.

    Attributes
    ----------
    seeds : int64, shape (m,)
        Vertex ids (global ids on a heterogeneous graph), a new array; empty only where the
        request allowed it (a rank without seeds in a collective call).
    sizes : int64, shape (k,)
        The minibatches' sizes: ``batch_size`` each, the last the remainder.
    batch_ids : int64, shape (k,)
        Their global ids, ``batch_offset, batch_offset + 1, ...``.
    batch_size : int
        As asked (``>= 1``; may exceed ``m``): disjoint samplers number positions in
        minibatches of it.
    seed, epoch, batch_offset : int
    """

    seeds: np.ndarray
    sizes: np.ndarray
    batch_ids: np.ndarray
    batch_size: int
    seed: int
    epoch: int
    batch_offset: int

    def check_unique(self):
        """Reject a vertex repeated within one minibatch (not asked of disjoint sampling,
        whose seeds may repeat).

        Raises
        ------
        SeedError
            Naming ``seeds``, the vertex and the minibatch.
        """
        if self.seeds.size:
            check_unique_per_batch(self.seeds, self.sizes)


def sample_request(num_nodes, seeds, sampler, batch_size, seed, epoch, batch_offset, *,
                   allow_empty=False):
    """The arguments of :func:`spsample.sample` checked once, as a :class:`SampleRequest`.

    Parameters
    ----------
    num_nodes : int
        Vertices of the graph the ids index (a heterogeneous graph's total).
    seeds : array_like of int, shape (m,)
    sampler, batch_size, seed, epoch, batch_offset
        As :func:`spsample.sample`'s.
    allow_empty : bool
        Whether ``seeds`` may be empty (a rank without seeds in a distributed call: the other
        arguments are checked all the same, and the request has no minibatch).

    Returns
    -------
    SampleRequest

    Raises
    ------
    SeedError, ArgumentError, ArgumentTypeError
        Naming the offending argument.
    """
    empty = False
    if allow_empty:
        seeds = as_index_array("sample", "seeds", seeds, error_cls=SeedError)
        empty = seeds.size == 0            # checked with a probe: the other arguments count
    checked, clamped, seed, epoch, batch_offset = check_sample_args(
        num_nodes, [0] if empty else seeds, sampler, batch_size, seed, epoch, batch_offset)
    if empty:
        checked = checked[:0]
    sizes = split_batches(checked.size, clamped)
    batch_ids = batch_offset + np.arange(sizes.size, dtype=np.int64)
    return SampleRequest(checked, sizes, batch_ids, as_int("sample", "batch_size", batch_size,
                                                           minimum=1),
                         seed, epoch, batch_offset)
