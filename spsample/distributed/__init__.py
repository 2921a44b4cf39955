"""Distributed bulk sampling over MPI: 1.5D-partitioned adjacency, push and pull, replicated
feature shards (README: "Many processes: `mpiexec`").

Where each hop runs is a registered *strategy* (:data:`STRATEGIES`: ``"push"``, ``"pull"``,
any added with :func:`register_strategy`), read by every consumer: ``sample(strategy=...)``,
the loaders and the Trainer, ``spsample train --strategy`` and the planner.

``p`` ranks form a :class:`Grid` of ``p / c`` process rows × ``c`` replicas. A
:class:`DistGraph` holds one block of rows of ``A`` per process row; ``spsample.sample`` given a
``DistGraph`` samples each rank's minibatches with the same counter-based RNG streams as one
process, so the minibatches are bit-identical to the single-process ones for every ``p`` and
``c``. A :class:`FeatureStore` holds the feature rows in the same blocks and fetches any rows
with one all-to-all among the ranks of a replica index. A :class:`DistHeteroGraph` is a
heterogeneous graph as one such block per relation (the rows of every node type split over
the process rows); :func:`load_hetero_dataset` gives it with its dataset for training.

Run under ``mpiexec -n P python script.py``; in a plain ``python`` process everything works
with a size-1 communicator (no MPI imported), or at any ``p`` with ranks that are threads of
the process: :func:`run_threads` (each rank gets a :class:`ThreadComm`).

Failures: a bad argument on any rank raises the same typed error on every rank. A rank that
fails alone inside a distributed operation (an exception, ``sys.exit``, ``MemoryError``), or
raises an uncaught exception anywhere, ends the whole job: its error is printed to
``stderr`` and ``MPI.COMM_WORLD.Abort`` is called, so that the other ranks do not wait for
it forever. Opt out with ``SPSAMPLE_ABORT_ON_FAILURE=0`` or
``set_abort_on_failure(False)``.

Examples
--------
>>> import spsample
>>> from spsample.distributed import Grid, DistGraph
>>> grid = Grid(replication=1)
>>> graph = spsample.rmat(8, seed=1)
>>> dg = DistGraph.from_graph(graph, grid)
>>> mine = spsample.sample(dg, [1, 2, 3], sampler=spsample.NodeWise([3, 2]), batch_size=2)
>>> ref = spsample.sample(graph, [1, 2, 3], sampler=spsample.NodeWise([3, 2]), batch_size=2)
>>> all(a.equals(b) for a, b in zip(mine, ref))
True

The same at ``p = 4`` (two process rows of two replicas), ranks as threads:

>>> from spsample.distributed import run_threads
>>> def rank(comm):
...     dg = DistGraph.from_graph(graph, Grid(comm, replication=2))
...     seeds = [1, 2, 3, 4, 5, 6, 7, 8][2 * comm.rank:2 * comm.rank + 2]
...     return spsample.sample(dg, seeds, sampler=spsample.NodeWise([3, 2]), batch_size=2,
...                            batch_offset=comm.rank)[0]
>>> mine = run_threads(4, rank)
>>> ref = spsample.sample(graph, [1, 2, 3, 4, 5, 6, 7, 8], sampler=spsample.NodeWise([3, 2]),
...                       batch_size=2)
>>> all(a.equals(b) for a, b in zip(mine, ref))
True
"""

from ._comm import Communicator, MPIComm, NcclComm, SelfComm, launched_under_mpi, world
from ._dataset import ShardedDataset
from ._failure import abort_on_failure, set_abort_on_failure
from ._features import CachedFeatureStore, FeatureStore
from ._graph import DistGraph
from ._hetero import DistHeteroGraph, load_hetero_dataset
from ._grid import Grid
from ._threadcomm import ThreadComm, run_threads
from . import _sampling, _wire_bytes
from ._strategies import (STRATEGIES, StrategyEntry, register_strategy, registered_strategy,
                          unregister_strategy)
from ._layout import (
    block_bounds,
    block_range,
    check_grid,
    column_ranks,
    num_process_rows,
    owner_of,
    process_row,
    rank_of,
    replica_index,
    row_ranks,
    rows_of_rank,
)

__all__ = [
    "Communicator", "SelfComm", "MPIComm", "NcclComm", "ThreadComm", "run_threads", "world",
    "launched_under_mpi",
    "Grid", "DistGraph", "DistHeteroGraph", "FeatureStore", "CachedFeatureStore",
    "ShardedDataset", "load_hetero_dataset",
    "STRATEGIES", "register_strategy", "unregister_strategy", "registered_strategy",
    "StrategyEntry",
    "set_abort_on_failure", "abort_on_failure",
    "block_bounds", "block_range", "owner_of", "rows_of_rank", "check_grid",
    "num_process_rows", "process_row", "replica_index", "rank_of", "row_ranks", "column_ranks",
]

# The built-in strategies (:mod:`._strategies`), in the order ``--strategy`` lists them: how
# each places the hops, and the planner's bytes model of each.
register_strategy("push", _sampling.push_modes, sampling_bytes=_wire_bytes.push_bytes,
                  description="send the frontier rows to their owners, which select there "
                              "(hops that cannot be pushed fetch their rows)")
register_strategy("pull", _sampling.pull_modes, sampling_bytes=_wire_bytes.pull_bytes,
                  description="fetch the frontier's rows and select on the requester")
