"""Helpers and fixtures of the distributed suite (imported by the test modules; a second
conftest.py here would shadow ``tests/conftest.py``, which the serial suite imports as
``conftest``). The suite runs serially and under ``mpiexec -n 2`` / ``-n 4`` (tests/run.sh):
every rank collects the same tests in the same order, and every assertion is reduced over the
ranks (:func:`assert_all`), so all ranks fail together and the next test's collectives never
meet a rank that has gone on.

Serially, the job's world has one rank, which holds the whole graph and samples it with the
single-process engine; so the tests marked :func:`threaded` also run on worlds of ``p``
threads (:func:`spsample.distributed.run_threads`, ``p`` in {2, 3, 4, 8}, every ``c``
dividing it: :data:`THREAD_LAYOUTS`), where push, pull and layer-wise push really run. Such a
test takes parameters ``p`` (``None``: the job's own world) and ``c``; inside it,
:func:`world_comm` and :func:`grid_for` are those of the rank the thread runs."""

import functools
import threading

import numpy as np
import pytest

import spsample
from spsample.distributed import Grid, launched_under_mpi, run_threads, world

_WORLD = None
_GRIDS = {}
_RANK = threading.local()        # .comm, .grids: the thread world's rank running this thread

#: (p, c) of the thread worlds: every p of {2, 3, 4, 8} with every c dividing it.
THREAD_LAYOUTS = [(p, c) for p in (2, 3, 4, 8) for c in range(1, p + 1) if p % c == 0]
#: ... those with more than one process row (where rows are really exchanged).
SHARDED_LAYOUTS = [(p, c) for p, c in THREAD_LAYOUTS if c < p]


def job_layouts():
    """``(None, c)`` for every ``c`` of the job's own world (serial: c = 1)."""
    return [(None, c) for c in valid_replications()]


def layouts(thread_layouts=None):
    """The job's layouts, and serially the thread layouts (default: all of them)."""
    if launched_under_mpi():
        return job_layouts()
    return job_layouts() + list(THREAD_LAYOUTS if thread_layouts is None else thread_layouts)


def spread(cases, per_case=2, pool=None):
    """``[(*case, p, c)]``: every case on the job's layouts and, serially, on ``per_case``
    thread layouts of ``pool`` (default :data:`THREAD_LAYOUTS`), rotating over the cases so
    that together they cover the whole pool at a fraction of the cost."""
    pool = THREAD_LAYOUTS if pool is None else pool
    out = []
    for i, case in enumerate(cases):
        case = case if isinstance(case, tuple) else (case,)
        out += [(*case, p, c) for p, c in job_layouts()]
        if not launched_under_mpi():
            out += [(*case, *pool[(i * per_case + k) % len(pool)]) for k in range(per_case)]
    return out


def on_ranks(ranks, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on the job's world (``ranks=None``: a list of one result) or on
    ``ranks`` thread ranks (their results, rank order), each seeing its own
    :func:`world_comm`."""
    if ranks is None:
        return [fn(*args, **kwargs)]

    def rank(comm):
        _RANK.comm, _RANK.grids = comm, {}
        try:
            return fn(*args, **kwargs)
        finally:
            for grid in _RANK.grids.values():
                grid.free()
            _RANK.comm = _RANK.grids = None
    return run_threads(ranks, rank, timeout=60)


def threaded(test):
    """Run ``test`` on ``p`` thread ranks when its parameter ``p`` is not None (see the
    module's docstring); it must take parameters ``p`` and ``c``."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        on_ranks(kwargs.get("p"), test, *args, **kwargs)
    return wrapper

# the relations of the heterogeneous tests' bibliography graphs
WRITES, WRITTEN_BY = ("author", "writes", "paper"), ("paper", "written_by", "author")
CITES, HAS, IN = ("paper", "cites", "paper"), ("paper", "has", "term"), ("term", "in", "paper")


def mpi_timeout(seconds):
    """pytest-timeout's mark for these tests. Under ``mpiexec`` its ``thread`` method: a rank
    left waiting inside MPI (e.g. after an assertion failed on another rank only) never runs
    the ``signal`` method's handler, so the job would hang; the thread method ends the
    process instead, and ``mpiexec`` then ends the job. Serially the ``signal`` method, which
    fails only the test."""
    return pytest.mark.timeout(seconds, method="thread" if launched_under_mpi() else "signal")


def world_comm():
    """The communicator of this rank: a thread world's (inside :func:`on_ranks`), else the
    job's (MPI's world, or a size-1 SelfComm)."""
    global _WORLD
    threaded_comm = getattr(_RANK, "comm", None)
    if threaded_comm is not None:
        return threaded_comm
    if _WORLD is None:
        _WORLD = world()
    return _WORLD


def grid_for(c):
    """One cached Grid per replication factor (communicators are a finite resource), per
    world."""
    grids = _GRIDS if getattr(_RANK, "comm", None) is None else _RANK.grids
    if c not in grids:
        grids[c] = Grid(world_comm(), replication=c)
    return grids[c]


def distributed_modes(dg, expected):
    """Whether ``dg``'s latest sample ran ``expected`` per hop (``"push"``/``"pull"``) where
    the grid has more than one process row, and ``"local"`` (the one-process engine on the
    whole graph) where it has one."""
    modes = dg.last_stats["modes"]
    if dg.grid.num_rows == 1 or getattr(dg, "replicated", False):
        return modes == ["local"] * len(modes)
    return modes == list(expected)


def valid_replications():
    p = world_comm().size
    return [c for c in range(1, p + 1) if p % c == 0]


def assert_all(ok, message=""):
    """Assert ``ok`` on every rank: fails on all ranks if it is false on any."""
    flags = world_comm().allgather_object(bool(ok))
    assert all(flags), f"failed on ranks {[r for r, f in enumerate(flags) if not f]}: {message}"


def raised(fn):
    """The exception ``fn()`` raised, or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the tests inspect it
        return exc
    return None


def matches(out, ref, b0, b1):
    """Whether ``out`` is exactly the single-process minibatches ``ref[b0:b1]``."""
    return len(out) == b1 - b0 and all(a.equals(b) for a, b in zip(out, ref[b0:b1]))


def my_batches(num_batches):
    """This rank's contiguous range of global minibatch ids ``[b0, b1)``."""
    comm = world_comm()
    per = -(-num_batches // comm.size)
    b0 = min(comm.rank * per, num_batches)
    return b0, min(b0 + per, num_batches)


def sample_share(dg, seeds, batch_size, make_sampler, strategy, *, node_type=None, bulk=None,
                 seed_time=None, **options):
    """This rank's share of the minibatches of ``seeds`` (:func:`my_batches`), ``bulk`` at a
    time (default: all at once), as ``(minibatches, b0, b1)``. Every rank makes the same
    number of calls: a rank out of minibatches passes no seeds (and no times).
    ``node_type``: the seeds' type on a heterogeneous graph; ``seed_time``: one time per
    seed of ``seeds``; ``options``: more arguments of ``spsample.sample``."""
    num_batches = -(-len(seeds) // batch_size)
    b0, b1 = my_batches(num_batches)
    per_rank = -(-num_batches // world_comm().size)
    bulk = bulk or per_rank
    out = []
    for i in range(-(-per_rank // bulk)):
        lo, hi = min(b0 + i * bulk, b1), min(b0 + (i + 1) * bulk, b1)
        part = slice(lo * batch_size, hi * batch_size)
        mine = seeds[part] if node_type is None else (node_type, seeds[part])
        if seed_time is not None:
            options["seed_time"] = seed_time[part]
        out += spsample.sample(dg, mine, sampler=make_sampler(), batch_size=batch_size,
                               batch_offset=lo, strategy=strategy, **options)
    return out, b0, b1


def write_shared(tmp_path, name, make_dataset, mutate=None):
    """Rank 0 saves ``make_dataset()`` (uncompressed, so that ``mutate(h5py_file)`` can rewrite
    single entries in place); every rank gets its path."""
    path = None
    if world_comm().rank == 0:
        import h5py
        path = str(tmp_path / name)
        spsample.save(make_dataset(), path, compression=None)
        if mutate is not None:
            with h5py.File(path, "r+") as f:
                mutate(f)
    return world_comm().bcast(path)


def replace_dataset(f, name, data, **options):
    """Replace the dataset ``name`` of the open h5py file (or group) ``f`` by ``data``."""
    del f[name]
    f.create_dataset(name, data=data, **options)


@pytest.fixture(scope="session")
def comm():
    return world_comm()


@pytest.fixture(scope="session")
def rmat10():
    """R-MAT scale 10 (1024 vertices, directed: rows are not symmetric), the same on every rank."""
    return spsample.rmat(10, seed=11, symmetrize=False)


@pytest.fixture(scope="session")
def rmat10_weighted(rmat10):
    w = np.random.default_rng(5).random(rmat10.num_edges) + 0.05
    w[::17] = 0.0   # zero-weight entries are never drawn
    return spsample.Graph.from_csr(rmat10.indptr, rmat10.indices, weights=w)
