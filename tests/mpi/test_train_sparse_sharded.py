"""Training on sharded sparse features: a ShardedDataset of a file with CSR ``/features`` (or
of an in-memory dataset with ``scipy.sparse`` features) keeps CSR shards, its batches carry
``SparseRows``, and node classification and link prediction train exactly as the whole
dataset on every rank does (the same losses and accuracies, bit for bit), for every ``c``,
push and pull; ``sparse_features`` applies the one-process rules shard by shard.

Run by CI under ``mpiexec -n 2`` and ``-n 4`` (tests/run.sh) and collected serially at world
size 1. Assertions are reduced over the ranks so that all ranks fail together.
"""

import pytest
import scipy.sparse as sp

import spsample
from spsample import io
from spsample.distributed import Grid, ShardedDataset

torch = pytest.importorskip("torch")

from _mpi_helpers import COMM, MPI_MARKS, RANK, SIZE, assert_all, one_torch_thread  # noqa: E402,F401
from test_train_link_sharded import SMALL as LINK, history, same_run  # noqa: E402
from test_train_tasks import communities  # noqa: E402

from spsample.loader import SparseRows  # noqa: E402
from spsample.train import Trainer  # noqa: E402
from spsample.train.link import fit_link  # noqa: E402

pytestmark = MPI_MARKS

REPLICATIONS = [c for c in (1, 2, 4) if SIZE % c == 0 and c <= SIZE]
SMALL = dict(hidden=16, batch_size=16, eval_batch_size=256, fanouts=(5, 5), epochs=2)


def sparse_cora():
    cora = io.load_cora()
    return io.Dataset(cora.graph, features=sp.csr_matrix(cora.features), labels=cora.labels,
                      splits=cora.splits, name="cora")


@pytest.fixture(scope="module")
def sparse_file(tmp_path_factory):
    """Cora with CSR ``/features``, written by rank 0 (every rank gets its path)."""
    path = None
    if RANK == 0:
        path = str(tmp_path_factory.mktemp("sparse") / "cora.h5")
        spsample.save(sparse_cora(), path)
    return path if COMM is None else COMM.bcast(path)


@pytest.fixture(scope="module")
def replicated_run():
    """The whole sparse Cora on every rank (SparseFeatures), data-parallel over the ranks."""
    trainer = Trainer(sparse_cora(), comm=COMM, **SMALL)
    assert trainer.sparse_features
    metrics = trainer.fit()
    trainer.close()
    return metrics


def sharded_run(dataset, **options):
    """``(trainer, whether every batch of an epoch carried SparseRows, fit()'s metrics)``
    (the epoch iterated whole on every rank: its fetches are collective)."""
    trainer = Trainer(dataset, **SMALL, **options)
    with trainer.train_loader.iter_epoch(0) as batches:
        kinds = {isinstance(b.x, SparseRows) for b in batches}
    metrics = trainer.fit()
    trainer.close()
    return trainer, kinds == {True} or (not kinds and trainer.sparse_features), metrics


@pytest.mark.parametrize("c", REPLICATIONS)
@pytest.mark.parametrize("strategy", ["push", "pull"])
def test_sparse_sharded_training_equals_replicated_bit_for_bit(sparse_file, replicated_run,
                                                               c, strategy):
    sharded = ShardedDataset.load(sparse_file, Grid(replication=c))
    trainer, sparse_rows, metrics = sharded_run(sharded, strategy=strategy)
    ok = sharded.sparse_features and trainer.sparse_features
    ok &= sparse_rows
    ok &= metrics["losses"] == replicated_run["losses"]
    ok &= metrics["test_accuracy"] == replicated_run["test_accuracy"]
    assert_all(ok, (metrics["losses"], replicated_run["losses"]))
    fetched = metrics["bytes_per_epoch"]["feature_fetch"].get("alltoallv", 0)
    assert_all((fetched > 0) == (c < SIZE), metrics["bytes_per_epoch"])


def test_in_memory_sparse_dataset_and_dense_file_train_as_one_process(replicated_run):
    """``from_dataset`` of a sparse dataset keeps CSR shards; the embedded Cora (stored dense,
    1.3 % non-zero) goes sparse under ``"auto"`` shard by shard, as one process makes it."""
    grid = Grid(replication=1)
    built = ShardedDataset.from_dataset(sparse_cora(), grid)
    dense = ShardedDataset.load(io.embedded_path("cora"), grid)
    for dataset in (built, dense):
        trainer, sparse_rows, metrics = sharded_run(dataset)
        assert_all(trainer.sparse_features and sparse_rows
                   and metrics["losses"] == replicated_run["losses"],
                   (metrics["losses"], replicated_run["losses"]))
    assert_all(built.features.sparse and not dense.features.sparse)


def test_off_densifies_and_on_sparsifies_as_one_process(sparse_file):
    grid = Grid(replication=1)
    for mode, whole in (("off", sparse_cora()), ("on", io.load_cora())):
        reference = Trainer(whole, comm=COMM, sparse_features=mode, **SMALL)
        expected = reference.fit()
        reference.close()
        path = sparse_file if mode == "off" else io.embedded_path("cora")
        trainer, sparse_rows, metrics = sharded_run(ShardedDataset.load(path, grid),
                                              sparse_features=mode)
        assert_all(trainer.sparse_features == (mode == "on")
                   and sparse_rows == (mode == "on")
                   and metrics["losses"] == expected["losses"],
                   (mode, metrics["losses"], expected["losses"]))


def sparse_communities():
    ds = communities()
    x = ds.features.copy()
    x[x < 0.2] = 0                                  # about half the noise gone
    return io.Dataset(ds.graph, features=sp.csr_matrix(x), labels=ds.labels, name=ds.name)


@pytest.mark.parametrize("c", REPLICATIONS)
def test_link_prediction_on_sparse_shards_equals_the_whole_features(c):
    ds = sparse_communities()
    whole = fit_link(ds, comm=COMM, **LINK)
    sharded = ShardedDataset.from_dataset(ds, Grid(replication=c))
    result = fit_link(sharded, **LINK)
    assert_all(sharded.features.sparse and same_run(result, whole),
               (history(result), history(whole)))
