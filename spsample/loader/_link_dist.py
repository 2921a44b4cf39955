"""The distributed part of :class:`~spsample.LinkLoader`: link minibatches on a sharded graph
(a :class:`~spsample.distributed.DistGraph`, or a relation of a
:class:`~spsample.distributed.DistHeteroGraph`) under ``mpiexec``.

Every rank yields its share of each epoch's minibatches (global ids, as ``Loader`` over a
``DistGraph``), and each batch is bit for bit the one a single process gives for the same id:
the per-rank work is the one-process code, only the graph queries go to the rows' owners.
What each rank holds and what moves (every byte counted by the grid's communicators):

* **Seed edges**: every rank holds the whole list (16 bytes per seed edge, plus the epoch's
  permutation, 8 per edge), as every rank of ``Loader`` holds every seed; it must be the same
  on every rank (a SHA-256 compared once). ``edges=None`` gathers the relation's entries once
  (one ``allgatherv`` in the grid's column: 24 bytes per entry to every rank).
* **Negatives** are drawn by each rank for its own minibatches from the same keyed streams as
  one process (:mod:`spsample.engine._negatives`). ``neg_distribution="degree"`` needs the whole
  relation's degrees: gathered once (column counts summed by an ``allreduce``, row lengths by
  an ``allgatherv``). ``strict=True`` asks, at every attempt, the owner of row ``v`` whether
  candidate ``(u, v)`` is an entry (16 bytes out, 1 byte back per remote candidate, within the
  grid's column); the ranks make as many attempts as the rank that needs the most (one
  8-byte ``allreduce`` per attempt), so the collectives match.
* **Sampling** runs on the distributed engine (:func:`spsample.distributed._sampling.
  run_distributed`: push by default, or pull), as ``spsample.sample`` on the graph does,
  temporal link minibatches (``edge_time``) included.
* **Features**: the loader's feature source, as ``Loader`` uses it (a ``FeatureStore``: one
  all-to-all per bulk; an array held by every rank: a local gather).

A rank with fewer bulks than another draws, samples and fetches padding bulks (one seed edge
under the id ``num_batches + rank``, dropped), so every rank makes the same collective calls.
"""

import contextlib
import hashlib

import numpy as np

from ..distributed._collective import agree
from ..distributed._placement import by_owner
from ..distributed._sampling import run_distributed
from ..engine._lazy import lookup
from ..engine._negatives import strict_failure, weights_of

__all__ = ["ShardedLinks", "checked_on_every_rank", "grid_of", "fingerprint_arrays",
           "gathered_edge_index"]


def grid_of(graph):
    """The :class:`~spsample.distributed.Grid` of a distributed graph, else ``None``."""
    return getattr(graph, "grid", None)


@contextlib.contextmanager
def checked_on_every_rank(grid, where):
    """Run the block's (local) checks; on a grid, any rank's error is raised on every rank
    (:func:`~spsample.distributed._collective.agree`), never on one rank alone."""
    if grid is None:
        yield
        return
    failure = []
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - every failure must reach the other ranks
        failure.append(exc)

    def check():
        if failure:
            raise failure[0]
    agree(grid.comm, where, check)


def gathered_edge_index(block):
    """Every entry of a sharded graph (or relation block) as ``(src, dst)`` global ids, in
    its CSR's order: one process's ``Graph.edge_index()`` on every rank (collective: one
    ``allgatherv`` in the grid's column, 24 bytes per entry to every rank).

    Parameters
    ----------
    block : DistGraph

    Returns
    -------
    src, dst : int64, shape (num_edges,)
    """
    dst = np.repeat(block.placement.vertices(), np.diff(block.indptr))
    eid = block.global_edges(np.arange(block.indices.size, dtype=np.int64))
    every = block.grid.col_comm.allgatherv(np.stack([eid, block.indices, dst], axis=1))
    every = every[np.argsort(every[:, 0], kind="stable")]
    return every[:, 1].copy(), every[:, 2].copy()


def fingerprint_arrays(*arrays):
    """A SHA-256 (16 hex digits) of the arrays' bytes, ``None`` entries included."""
    h = hashlib.sha256()
    for arr in arrays:
        h.update(b"-" if arr is None else memoryview(np.ascontiguousarray(arr)).cast("B"))
    return h.hexdigest()[:16]


class _Rows:
    """A block's rows as :func:`~spsample.engine._lazy.lookup` reads them (local row ids)."""

    def __init__(self, block):
        self.indptr, self.indices = block.indptr, block.indices


class ShardedLinks:
    """A sharded relation's answers to what a link loader asks of its graph (collective).

    Parameters
    ----------
    graph : DistGraph or DistHeteroGraph
        The graph sampled (it gives the grid).
    block : DistGraph
        The seed edges' relation: this rank's rows of it (row = destination).
    strategy : str
        A name in ``spsample.distributed.STRATEGIES``.

    Attributes
    ----------
    last_stats : dict
        Of the latest bulk's sampling: the distributed engine's counters, ``modes`` per hop.
    """

    def __init__(self, graph, block, strategy):
        self.graph, self.block, self.strategy = graph, block, strategy
        self.grid = graph.grid
        self.last_stats = {}
        self._weights = None

    # ------------------------------------------------------------------ seed edges
    def edge_index(self, offsets):
        """Every entry of the relation as ``(src, dst)``, local ids of their types (minus
        ``offsets``): :func:`gathered_edge_index`."""
        src, dst = gathered_edge_index(self.block)
        return src - offsets[0], dst - offsets[1]

    # ------------------------------------------------------------------ negatives
    def degree_weights(self, offsets, sizes):
        """:func:`~spsample.engine._negatives.degree_weights` of the whole relation, the same bits:
        its column counts summed over the process rows, its row lengths gathered (once)."""
        if self._weights is None:
            block, col = self.block, self.grid.col_comm
            counts = np.bincount(block.indices - offsets[0], minlength=sizes[0])
            column = col.allreduce(counts.astype(np.int64))
            rows = block.placement.by_vertex(col.allgatherv(np.diff(block.indptr)))
            self._weights = weights_of(column, rows)
        return self._weights

    def is_edge(self, rows, columns):
        """Whether each ``(rows[i], columns[i])`` (global ids) is an entry of the relation,
        answered by the owners of the rows (collective within the grid's column)."""
        block, col = self.block, self.grid.col_comm
        order, counts = by_owner(block.placement.owner(rows), col.size)
        asked, asked_counts = col.alltoallv(np.stack([rows[order], columns[order]], axis=1),
                                            counts)
        found = lookup(_Rows(block), block.local_rows(asked[:, 0]), asked[:, 1])[0]
        answer, _ = col.alltoallv(found.view(np.uint8), asked_counts, recvcounts=counts)
        out = np.empty(rows.size, dtype=bool)
        out[order] = answer.view(bool)
        return out

    def more(self, pending):
        """Whether any rank has strict slots left (collective)."""
        top = self.grid.comm.allreduce(np.array([pending], dtype=np.int64), op="max")
        return int(top[0]) > 0

    def give_up(self, pending):
        """Raise, on every rank, the strict failure of the first rank with slots left."""
        agree(self.grid.comm, "LinkLoader", lambda: strict_failure(pending) if pending else None)

    # ------------------------------------------------------------------ sampling
    def engine(self, graph, schedule, seeds, sizes, batch_ids, sampler, seed, epoch, seed_time):
        """The engine of :func:`~spsample.engine._hetero_sample.run_global`: the distributed hops
        (each relation step on its block of rows when ``schedule`` is given, cut at
        ``seed_time`` in a temporal bulk)."""
        stats = {"strategy": self.strategy}
        out = run_distributed(self.graph, seeds, sizes, batch_ids, sampler, seed, epoch,
                              self.strategy, stats, schedule=schedule, seed_time=seed_time)
        self.last_stats = stats
        return out
