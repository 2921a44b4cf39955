"""The graph-source protocol: what a graph must provide for :func:`spsample.sample` and the
engine, and what a row source provides. Written here, in the lowest room that holds a graph,
so that every implementer (rooms ``graph``, ``engine``, ``io``, ``distributed``) can name it.

How ``sample()`` reaches a graph
--------------------------------
Every graph's sampling checks the arguments once, through the one prologue of
:mod:`spsample.engine._batches` (``sample_request``: the seeds checked and cut into
minibatches, the minibatch ids, the seed and epoch, as one ``SampleRequest``).
:func:`spsample.sample` builds the request itself for a :class:`~spsample.Graph` or a
:class:`~spsample.HeteroGraph` (whose relation graphs are ``Graph`` objects) and hands it to
the in-memory engine; any other graph provides ``sample(seeds, *, sampler, batch_size, seed,
epoch, batch_offset, **options)``, which :func:`spsample.sample` calls with the arguments as
given and which builds its request through the same prologue (a distributed graph inside its
collective, so that every rank ends with the same error). While the engine traces or runs
the sampler, the sampler and the engine reach the graph only through :class:`GraphSource`
(the whole-graph quantities) and the rows of :class:`RowSource` objects.

The kinds, and where each lives
-------------------------------
=====================================  ==========================================  =========
graph kind                             module                                      protocols
=====================================  ==========================================  =========
``Graph`` (and ``TimeSortedGraph``,    ``spsample/graph/_graph.py``,               both
the relation graphs of a HeteroGraph)  ``spsample/graph/_hetero.py``
``DiskGraph``                          ``spsample/io/_disk_graph.py``              GraphSource
``DistGraph``                          ``spsample/distributed/_graph.py``          both
``TimeSortedBlock`` (a temporal        ``spsample/distributed/_timesorted.py``     both
relation's block of a DistHeteroGraph)
``FetchedRows`` (the rows one hop      ``spsample/engine/_rows.py``                both
fetched or read, as the whole graph)
``Block`` (a rank's rows, selected     ``spsample/engine/_rows.py``                RowSource
at their owner)
``_Window`` (rows read from disk,      ``spsample/io/_disk_sampling.py``           RowSource
selected as they are read)
``_FetchHop`` (rows fetched from       ``spsample/distributed/_sampling.py``       RowFetcher
their owners), ``_ReadHop`` (rows      ``spsample/io/_disk_sampling.py``
read from disk)
=====================================  ==========================================  =========

Whole-graph quantities are methods (never string keys), computed once and memoised by the
graph that computes them; on every kind they are the in-memory graph's values for the same
``A``, bit for bit (the disk graph sums its rows in CSR order as it streams them; the
distributed graph sums each column at its owner, source block by source block, which is CSR
order, and gathers the pieces). ``tests/graph/test_graph_source.py`` checks every kind
against the protocol and the quantities against the in-memory graph's
(``tests/distributed/test_dist_graph_source.py`` over several process rows).
"""

from typing import Protocol, runtime_checkable

__all__ = ["GraphSource", "RowSource", "RowFetcher"]


@runtime_checkable
class GraphSource(Protocol):
    """What a graph provides to the samplers and the engine, whatever holds its rows.

    Attributes
    ----------
    num_nodes : int
        ``n``: vertices (``A`` is ``n × n``).
    weights : array of shape (nnz,), or None
        The weights of the entries this object holds (``None``: unweighted); a disk graph's
        reads ranges from the file.
    max_degree : int
        The longest row of the whole graph (entries of one vertex).
    """

    num_nodes: int
    weights: object
    max_degree: int

    def layerwise_scale(self):
        """The power of two layer-wise samplers scale the weights by: ``2**-e`` so that the
        whole graph's largest weight lands in ``[0.5, 1)``
        (:func:`~spsample.graph._weights.layerwise_scale`); 1.0 when unweighted.

        Returns
        -------
        float
        """

    def layerwise_weights(self):
        """The weights of the entries held here times :meth:`layerwise_scale` (exact), the
        values LADIES and FastGCN square and sum; the same array on every call.

        Returns
        -------
        float64, shape (entries held,); ``None`` when unweighted.

        Raises
        ------
        NotLowerable
            When no entries are held in memory (a disk graph): the sampler then runs hop by
            hop on rows read from disk, whose ``layerwise_weights()`` hold these values.
        """

    def column_weights(self):
        """FastGCN's column weights of the whole graph, ``q[u] = Σ_v A[v,u]²`` over the scaled
        weights (1 per entry when unweighted), summed in CSR order, with their serial prefix
        sums.

        Returns
        -------
        (q, cumulative) : float64 arrays of shape (num_nodes,), read-only
        """

    def sorted_entry_time(self, time, check):
        """``check()``: the check that ``time`` holds one sortable time per entry held here,
        non-decreasing within rows (temporal hops cut rows at a time), memoised where the
        graph can (an in-memory graph, per array).

        Returns
        -------
        ndarray, shape (entries held,)

        Raises
        ------
        NotLowerable
            When the graph's entries are not held as one array (a disk graph, a distributed
            block): a temporal hop then fetches its rows, whose view runs the check.
        """


@runtime_checkable
class RowSource(Protocol):
    """Rows of ``A`` held in memory, which views and selections read (the sampler's own
    constructors, :func:`~spsample.engine._rows.owner_select`, the native request kernels).

    Row ``v``'s entries are ``indices[indptr[r]:indptr[r + 1]]`` (and ``weights``) at
    ``r = local_rows(v)`` when the object is a block of a larger graph (a rank's rows, a window
    read from disk), else at ``r = v``; entry ``p``'s global edge id is ``global_edges(p)``
    (else ``p``), as :func:`~spsample.engine._lazy.block_rows` and
    :func:`~spsample.engine._lazy.block_edges` read them.

    Attributes
    ----------
    num_nodes : int
        ``n`` of the whole graph (column ids are global).
    indptr : int64, shape (rows held + 1,)
    indices : int64, shape (entries held,)
        Global column ids.
    weights : float64, shape (entries held,), or None
    """

    num_nodes: int
    indptr: object
    indices: object
    weights: object


@runtime_checkable
class RowFetcher(Protocol):
    """Where the rows a hop needs come from when they are not all in memory: fetched from
    their owners (a distributed graph) or read from disk.
    :class:`~spsample.engine._rows.FetchHop` calls :meth:`fetch_rows` with the rows it does
    not hold yet and lays what comes back out as a :class:`RowSource` over the whole graph
    (:class:`~spsample.engine._rows.FetchedRows`), on which any sampler runs unchanged.
    """

    def fetch_rows(self, need):
        """The rows ``need`` of the whole graph.

        Parameters
        ----------
        need : int64, shape (r,)
            Vertex ids, ascending, distinct.

        Returns
        -------
        degree : int64, shape (r,)
        start : int64, shape (r,)
            The global edge id of each row's first entry.
        indices : int64, shape (sum(degree),)
            The rows' column ids, row after row in the order of ``need``.
        weights : float64, shape (sum(degree),), or None
        time : shape (sum(degree),), or None
            The entries' times (rows of a time-sorted block), else ``None``.
        """
