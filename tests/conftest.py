"""Shared fixtures. Graphs are drawn in ASCII so a reader sees them."""

import hashlib
import os
import tempfile
from pathlib import Path

import pytest

import spsample
from graphs import random_graph  # noqa: F401  (re-exported for fixtures)

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _hypothesis_profiles():
    """``ci`` (the default): a bounded number of examples per property test, derandomized (the
    same examples on every run, so CI is reproducible), no example database; ``soak``: many
    random examples (``SPSAMPLE_HYPOTHESIS_EXAMPLES`` per test, default 100000), kept in the
    database (``.hypothesis/``) so a failure replays. Select with
    ``SPSAMPLE_HYPOTHESIS_PROFILE=soak`` (e.g. ``SPSAMPLE_HYPOTHESIS_PROFILE=soak
    SPSAMPLE_HYPOTHESIS_EXAMPLES=500 nice python3 -m pytest tests/conformance/test_properties.py
    --hypothesis-show-statistics``)."""
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:                      # the property tests skip themselves
        return
    slow = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                              database=None, suppress_health_check=slow, print_blob=True)
    soak = int(os.environ.get("SPSAMPLE_HYPOTHESIS_EXAMPLES", "100000"))
    settings.register_profile("soak", max_examples=soak, deadline=None,
                              suppress_health_check=slow, print_blob=True)
    settings.load_profile(os.environ.get("SPSAMPLE_HYPOTHESIS_PROFILE", "ci"))


_hypothesis_profiles()


def pytest_configure(config):
    """Under ``mpiexec`` each rank gets its own temporary-directory root (cleared by pytest at
    start). Ranks sharing the default root race in pytest's cleanup of old numbered
    directories: one removes a directory another is listing, and the unclosed listing is
    reported as an error when pytest exits, failing a run whose tests all passed."""
    rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK"))
    if rank is not None and config.option.basetemp is None:
        # keyed by checkout and world size too: runs from two checkouts (or -n 2 beside -n 4)
        # on one machine must not clear each other's directories
        size = os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0"))
        checkout = hashlib.sha1(str(config.rootpath).encode()).hexdigest()[:8]
        config.option.basetemp = os.path.join(
            tempfile.gettempdir(), f"spsample-pytest-{os.getuid()}-{checkout}-n{size}-rank{rank}")


@pytest.fixture(autouse=True)
def keep_thread_counts():
    """torch's and the native kernels' thread counts as each test found them: ``spsample
    train`` (called in-process by the CLI tests) sets both, and tests that count windows or
    partition work by thread count must not depend on which test ran before."""
    import sys

    from spsample import native as _native

    torch = sys.modules.get("torch")
    torch_threads = torch.get_num_threads() if torch is not None else None
    native = _native.get_num_threads() if _native.AVAILABLE else None
    yield
    torch = sys.modules.get("torch")
    if torch is not None and torch_threads is not None and \
            torch.get_num_threads() != torch_threads:
        torch.set_num_threads(torch_threads)
    if native is not None and _native.get_num_threads() != native:
        _native.set_num_threads(native)


@pytest.fixture
def shared_datasets():
    """``../shared/datasets`` beside the checkout; skips where it is absent (a user's clone)."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip("../shared/datasets is not beside this checkout")
    return SHARED_DATASETS


@pytest.fixture
def star_graph():
    r"""Vertex 0 aggregates from 1..5; 1 aggregates from 0 and 2; 6 is isolated.

          2   3
           \ /
      1 --- 0 --- 4        row 0 = [1, 2, 3, 4, 5]
            |              row 1 = [0, 2]
            5     6        rows 2..6 = []
    """
    src = [1, 2, 3, 4, 5, 0, 2]
    dst = [0, 0, 0, 0, 0, 1, 1]
    return spsample.Graph.from_edge_index(src, dst, num_nodes=7)


