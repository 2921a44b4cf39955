"""Training on sharded data: a ShardedDataset (DistGraph + FeatureStore on a grid) trains
exactly as the whole dataset on every rank does, while no rank holds all rows.

Run by CI under ``mpiexec -n 2`` and ``-n 4`` (tests/run.sh) and collected serially at world
size 1. Assertions are reduced over the ranks so that all ranks fail together.
"""

import numpy as np
import pytest

import spsample
from spsample import io
from spsample.distributed import Grid, ShardedDataset

torch = pytest.importorskip("torch")

from _mpi_helpers import COMM, MPI_MARKS, SIZE, assert_all, one_torch_thread  # noqa: E402,F401
from spsample.train import Trainer  # noqa: E402

pytestmark = MPI_MARKS


REPLICATIONS = [c for c in (1, 2, 4) if SIZE % c == 0 and c <= SIZE]
CORA = io.embedded_path("cora")
# dense features on both sides: the sharded store holds dense rows
SMALL = dict(hidden=16, batch_size=16, eval_batch_size=256, fanouts=(5, 5), epochs=2,
             sparse_features="off")


@pytest.fixture(scope="module")
def replicated_run():
    """Losses, accuracies and bytes of training with the whole Cora on every rank."""
    trainer = Trainer(io.load_cora(), comm=COMM, **SMALL)
    metrics = trainer.fit()
    trainer.close()
    return metrics


@pytest.mark.parametrize("c", REPLICATIONS)
@pytest.mark.parametrize("strategy", ["push", "pull"])
def test_sharded_training_equals_replicated_bit_for_bit(replicated_run, c, strategy):
    sharded = ShardedDataset.load(CORA, Grid(replication=c))
    trainer = Trainer(sharded, strategy=strategy, **SMALL)
    metrics = trainer.fit()
    trainer.close()
    assert_all(metrics["losses"] == replicated_run["losses"],
               (metrics["losses"], replicated_run["losses"]))
    assert_all(metrics["test_accuracy"] == replicated_run["test_accuracy"])
    assert_all(metrics["data"]["layout"] == "sharded" and metrics["data"]["replication"] == c)


@pytest.mark.parametrize("c", REPLICATIONS)
def test_no_rank_holds_all_rows_unless_c_is_p(c):
    sharded = ShardedDataset.load(CORA, Grid(replication=c))
    graph_rows, feature_rows = sharded.held_rows()
    n = sharded.num_nodes
    rows = -(-n // (SIZE // c))                       # the largest block
    assert_all(graph_rows <= rows and feature_rows <= rows, (graph_rows, feature_rows, rows))
    assert_all(c == SIZE or (graph_rows < n and feature_rows < n))
    lo, hi = sharded.grid.block(n)
    assert_all(sharded.graph.lo == lo and sharded.features.lo == lo and sharded.graph.hi == hi)


def test_bytes_per_phase_add_up_to_the_grids_traffic():
    """The epoch's bytes per phase are what the grid's collectives sent (sampling and fetch),
    plus one gradient buffer per rank and step."""
    grid = Grid(replication=1)
    sharded = ShardedDataset.load(CORA, grid)
    trainer = Trainer(sharded, **SMALL)
    grid.reset_stats()
    entry = trainer.train_epoch()
    mine = sum(e["sent"] for e in grid.stats().values())
    total = mine if COMM is None else COMM.allreduce(mine)
    phases = entry["bytes"]
    counted = sum(phases["sampling"].values()) + sum(phases["feature_fetch"].values())
    assert_all(counted == total, (counted, total))
    steps = trainer.train_loader.steps_per_epoch
    numel = sum(p.numel() for p in trainer.model.parameters())
    expected = 0 if SIZE == 1 else SIZE * steps * 8 * (numel + 1)
    assert_all(phases["gradient_allreduce"].get("allreduce", 0) == expected,
               (phases["gradient_allreduce"], expected))
    remote = SIZE > 1
    assert_all(remote == (phases["sampling"].get("alltoallv", 0) > 0), phases)
    assert_all(remote == (phases["feature_fetch"].get("alltoallv", 0) > 0), phases)
    trainer.close()


def test_sharded_from_an_in_memory_dataset_equals_loading_the_file():
    grid = Grid(replication=1)
    loaded = ShardedDataset.load(CORA, grid)
    built = ShardedDataset.from_dataset(io.load_cora(), grid)
    same = (np.array_equal(loaded.graph.indices, built.graph.indices)
            and np.array_equal(loaded.features.shard, built.features.shard)
            and np.array_equal(loaded.labels, built.labels)
            and all(np.array_equal(a, b) for a, b in zip(loaded.split(), built.split())))
    assert_all(same)


def test_a_graph_with_fewer_rows_than_process_rows_is_refused_on_every_rank(tmp_path):
    if SIZE == 1:
        pytest.skip("one process row always holds every row")
    g = spsample.Graph.from_edge_index([0], [0], num_nodes=1)
    tiny = io.Dataset(g, features=np.ones((1, 2), np.float32), labels=[0],
                      splits={"default": {"train": [0], "val": [0], "test": [0]}})
    with pytest.raises(spsample.DistributedError, match="fewer than the"):
        ShardedDataset.from_dataset(tiny, Grid(replication=1))


def test_ranks_with_different_datasets_fail_together(tmp_path):
    if SIZE == 1:
        pytest.skip("needs two ranks")
    cora = io.load_cora()
    labels = cora.labels.copy()
    if COMM.Get_rank() == 1:
        labels[0] = (labels[0] + 1) % cora.num_classes       # one label differs
    other = io.Dataset(cora.graph, features=cora.features, labels=labels, splits=cora.splits,
                       name="cora")
    with pytest.raises(spsample.DistributedError, match="dataset"):
        ShardedDataset.from_dataset(other, Grid(replication=1))


def test_dataset_without_labels_is_refused_on_every_rank():
    cora = io.load_cora()
    bare = io.Dataset(cora.graph, features=cora.features)
    with pytest.raises(spsample.DatasetError, match="no labels"):
        ShardedDataset.from_dataset(bare, Grid(replication=1))
    with pytest.raises(spsample.ArgumentTypeError, match="grid"):
        ShardedDataset.load(CORA, "grid")
