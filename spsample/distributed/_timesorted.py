"""``TimeSortedBlock``: a rank's rows of a temporal relation sorted by entry time, the sharded
form of :class:`~spsample.graph._hetero.TimeSortedGraph`.

A temporal bulk cuts every row at its minibatch's time: the entries no later than the time
are a prefix of a row sorted by ``(entry time, column)``. One process sorts the whole
relation (``HeteroGraph.time_sorted``); a :class:`~spsample.distributed.DistHeteroGraph`
sorts each rank's rows the same way, so a row held here is, entry for entry, the row of the
one-process ``TimeSortedGraph``, and the owners (push) or the ranks that fetch the row (pull)
cut and select it with the same bits.

Edge ids. A time-sorted row is a permutation of the canonical row (the same ``indptr``).
Positions count as in the whole ``TimeSortedGraph``: :meth:`global_edges`,
:meth:`block_edges`, :meth:`first_edges` and :meth:`local_edges` are the block's, so
per-edge vectors read what one process reads. Samples report the canonical CSR's edge ids
(``canonical_edge``), as a one-process minibatch does.
"""

import numpy as np

from ..graph._graph import Graph, frozen_array
from ..graph._hetero import time_order
from ._graph import DistGraph

__all__ = ["TimeSortedBlock"]


class TimeSortedBlock(DistGraph):
    """The rows of a relation block (a :class:`DistGraph`) with each row's entries sorted by
    ``(entry time, column)``. Implements :class:`~spsample.graph._source.GraphSource` and
    :class:`~spsample.graph._source.RowSource` as :class:`DistGraph` does, its quantities those
    of the one-process ``TimeSortedGraph`` (entries in time order).

    Parameters
    ----------
    block : DistGraph
        This rank's rows of the relation, canonical (columns ascending in rows, no repeats).
    entry_time : int64 or float64, shape (len(block.indices),)
        The time of each entry of ``block`` (checked by the caller; integer times stay
        int64, exact).

    Attributes
    ----------
    entry_time : int64 or float64, shape (nnz,)
        Non-decreasing within every row.
    canonical_edge : int64, shape (nnz,)
        The canonical CSR's global edge id of each entry (what samples report).

    Everything else (rows, placement, sizes, edge offset) is the block's: building one is
    local (no collective).
    """

    def __init__(self, block, entry_time):            # pylint: disable=super-init-not-called
        vars(self).update(vars(block))     # the block's rows, sizes and placement, as they are
        order = time_order(block.indptr, block.indices, entry_time)
        self.indices = frozen_array(block.indices[order])
        self.weights = None if block.weights is None else frozen_array(block.weights[order])
        self.entry_time = frozen_array(np.asarray(entry_time)[order])
        self.canonical_edge = frozen_array(block.global_edges(order))
        if block._full is not None:        # every row held here (one process row)
            self._full = Graph(self.indptr, self.indices, self.weights)
        # of the block's entry order
        self._column_weights = self._layerwise_scale = self._layerwise_weights = None
        self.last_stats = {}

    def sorted_entry_time(self, time, check):
        """The check ``RowView.until`` asks for: the entry times held here were checked and
        sorted when the block was built (a block's entries are not the whole graph's, which
        that check counts); other arrays as :meth:`DistGraph.sorted_entry_time`.

        Returns
        -------
        ndarray, shape (len(indices),): ``entry_time``
        """
        if time is self.entry_time:
            return self.entry_time
        return super().sorted_entry_time(time, check)

    def __repr__(self):
        return "TimeSorted" + super().__repr__()
