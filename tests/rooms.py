"""The rooms of spsample, lowest first, declared once (importable as ``rooms`` in the tests).

A module may import from its own room and from the rooms below it, never from a room above;
no two modules import each other (directly or around a loop); a name that starts with ``_``
is not imported from another room (a room's modules are its own business, its public names
are the interface); and an import inside a function is kept for optional dependencies
(torch, mpi4py, cupy, torch_geometric, ...), not to dodge a cycle.
``tests/test_import_order.py`` parses every import of every module and checks all four.

A module belongs to the room of the longest prefix below that matches its dotted name (a
prefix ending in ``_`` matches every module name that starts with it; ``spsample`` alone
matches only the package's ``__init__``).
"""

#: ``(room, what it holds, module-name prefixes)``, lowest room first.
ROOMS = (
    ("base", "errors, argument checks, the counter-based RNG, optional dependencies",
     ("spsample._errors", "spsample._validate", "spsample._rng", "spsample._optional")),
    ("graph", "Graph, HeteroGraph, generators, entry times, whole-graph quantities",
     ("spsample.graph",)),
    ("native", "the native kernels: on/off switch, threads, the kernels' calls and codes",
     ("spsample.native", "spsample._native_kernels", "spsample._openmp")),
    ("engine", "vocabulary, sampler protocol, bulk state, results, tracing, lowering onto the "
     "native kernels, NumPy evaluation, row sources, reference",
     ("spsample.engine", "spsample.primitives")),
    ("gpu", "sampling on a GPU (CuPy) or its CPU emulation",
     ("spsample.gpu",)),
    ("samplers", "the built-in samplers and sample()", ("spsample.samplers",)),
    ("io", "files: datasets, converters, graphs read from disk, the embedded datasets",
     ("spsample.io", "spsample.data")),
    ("distributed", "communicators, the 1.5D grid, partitioning, distributed graphs, planner",
     ("spsample.distributed",)),
    ("testing", "graphs and samplers for tests, invariants", ("spsample.testing",)),
    ("loader", "torch loaders, features, caches", ("spsample.loader",)),
    ("train", "training loops and models", ("spsample.train",)),
    ("cli", "the command line", ("spsample.cli", "spsample.__main__")),
    ("spsample", "the package itself (its __init__): re-exports the public names", ("spsample",)),
)

ORDER = tuple(name for name, _, _ in ROOMS)


def room_of(module):
    """The room of the dotted module name ``module`` (``None`` outside spsample)."""
    best, room = -1, None
    for name, _, prefixes in ROOMS:
        for prefix in prefixes:
            if prefix.endswith("_"):
                hit = module.startswith(prefix)
            elif "." not in prefix:
                hit = module == prefix
            else:
                hit = module == prefix or module.startswith(prefix + ".")
            if hit and len(prefix) > best:
                best, room = len(prefix), name
    return room


def rank(room):
    """Position of ``room`` in :data:`ORDER` (0: lowest)."""
    return ORDER.index(room)
