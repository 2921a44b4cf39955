"""The conformance suite: every sampler of ``spsample.testing``'s zoo, on every graph of its
zoo, through every execution path (``paths.PATHS``), equals the single-process NumPy
evaluation of its constructors bit for bit, and its results pass the invariants
(``spsample.testing.check_invariants``).

* ``paths.py``: the registry of paths, ``path(graph, seeds, sampler, **kw) -> bulk``, and the
  typed refusals of the cells a path does not support;
* ``cells.py``: the cells (sampler × graph × mode) and their cached oracle;
* ``test_cells.py``: every cell on every path, the invariants, the refusals;
* ``test_properties.py``: the same cells under ``hypothesis`` (random graphs, seeds, batch
  sizes, fanouts, offsets); profile ``ci`` by default, ``soak`` with
  ``SPSAMPLE_HYPOTHESIS_PROFILE=soak``;
* ``test_regressions.py``: the defects the suite found, one case each;
* ``test_world.py``: the distributed cells on the MPI world (``tests/run.sh`` runs it under
  ``mpiexec -n 2`` and ``-n 4``; at world size 1 in the serial suite).
"""
