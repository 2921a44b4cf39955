"""Graphs held in memory: :class:`~spsample.Graph` (CSR), :class:`~spsample.HeteroGraph`
(typed vertices and relations, optional entry times), the generators (:func:`spsample.rmat`),
entry times, the whole-graph quantities the layer-wise samplers use (column weights) and the
checks of a graph file's rows.

Room ``graph`` (see ``tests/rooms.py``): it imports only the foundations. Its modules are
private; the public names are re-exported by :mod:`spsample`.
"""
