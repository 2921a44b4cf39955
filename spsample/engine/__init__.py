"""The sampling engine: the vocabulary samplers are written in (lazy frontiers, row views,
selections), the sampler protocol (:class:`~spsample.Sampler`, :class:`~spsample.HopContext`),
bulk state and results (:class:`~spsample.Bulk`, :class:`~spsample.MiniBatch`), tracing, the
lowering of traced hops onto the native kernels (``_lowering``) and their results in the
engine's types (``_native_run``), the NumPy evaluation (the oracle), the row sources shared by
the disk and distributed graphs, and the per-minibatch reference sampler.

Room ``engine`` (see ``tests/rooms.py``): it imports the foundations, ``graph`` and
``native``; the samplers, devices, files, distribution, loaders and the CLI import it. Its
modules are private; the public names are re-exported by :mod:`spsample`,
:mod:`spsample.samplers` and :mod:`spsample.primitives`.
"""
