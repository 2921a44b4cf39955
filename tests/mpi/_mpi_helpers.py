"""What the tests of this folder share (imported by the test modules; a conftest.py here would
shadow ``tests/conftest.py``). The suite runs serially (world size 1, MPI not imported) and
under ``mpiexec -n 2`` / ``-n 4`` (tests/run.sh): every rank runs the same tests in the same
order and every assertion is reduced over the ranks (:func:`assert_all`), so that all ranks
fail together."""

import pytest

from spsample.distributed import launched_under_mpi


def mpi_comm():
    """``MPI.COMM_WORLD`` under mpiexec, else None (a single process, MPI not imported)."""
    if launched_under_mpi():
        from mpi4py import MPI

        return MPI.COMM_WORLD
    return None


COMM = mpi_comm()
RANK = 0 if COMM is None else COMM.Get_rank()
SIZE = 1 if COMM is None else COMM.Get_size()
# under mpiexec pytest-timeout's thread method: a rank left waiting inside MPI never runs the
# signal method's handler (the job would hang); the thread method ends the process, and the
# job with it
MPI_MARKS = [pytest.mark.mpi,
             pytest.mark.timeout(300, method="thread" if launched_under_mpi() else "signal")]


def gather(value):
    """Every rank's ``value``, on every rank."""
    return [value] if COMM is None else COMM.allgather(value)


def assert_all(ok, message=""):
    """Assert ``ok`` on every rank: fails on all ranks if it is false on any."""
    flags = gather(bool(ok))
    assert all(flags), f"failed on ranks {[r for r, f in enumerate(flags) if not f]}: {message}"


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One torch thread per rank during a test (imported by the modules that want it)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
