"""Heterogeneous node classification on a sharded graph: ``fit_node`` on a dataset whose graph
is a ``DistHeteroGraph`` (each rank holding its block rows of every relation) trains exactly
as the whole graph on every rank does (data-parallel over the same ranks), bit for bit with
dense features; at world size 1 that is the plain one-process run.

Run by CI under ``mpiexec -n 2`` and ``-n 4`` (tests/run.sh) and collected serially at world
size 1. Assertions are reduced over the ranks so that all ranks fail together.
"""

import pytest

import spsample
from spsample import ArgumentError
from spsample.distributed import DistHeteroGraph, Grid, load_hetero_dataset

torch = pytest.importorskip("torch")

from _mpi_helpers import COMM, MPI_MARKS, RANK, SIZE, assert_all, one_torch_thread  # noqa: E402,F401,E501
from test_train_tasks import authorship  # noqa: E402  (papers labelled through their authors)

from spsample.train.hetero import fit_node  # noqa: E402

pytestmark = MPI_MARKS

REPLICATIONS = [c for c in (1, 2, 4) if SIZE % c == 0 and c <= SIZE]
SMALL = dict(split="s", fanouts=(3, 3), hidden=8, epochs=2, lr=0.02, batch_size=8,
             bulk_size=2, dropout=0.0)


@pytest.fixture(scope="module")
def dataset_file(tmp_path_factory):
    """The authorship dataset (dense features) written by rank 0, its path on every rank."""
    path = None
    if COMM is None or COMM.Get_rank() == 0:
        path = str(tmp_path_factory.mktemp("hetero") / "authorship.h5")
        spsample.save(authorship(), path)
    return path if COMM is None else COMM.bcast(path)


@pytest.fixture(scope="module")
def whole_run(dataset_file):
    """The whole graph on every rank, data-parallel over the ranks (one process at p = 1)."""
    return fit_node(spsample.load(dataset_file), comm=COMM, **SMALL)


def history(result):
    return [(e["loss"], e["val_macro_f1"]) for e in result["history"]]


@pytest.mark.parametrize("c", REPLICATIONS)
@pytest.mark.parametrize("strategy", ["push", "pull"])
def test_sharded_training_equals_the_whole_graph_bit_for_bit(whole_run, dataset_file, c,
                                                              strategy):
    ds = load_hetero_dataset(dataset_file, Grid(replication=c))
    result = fit_node(ds, strategy=strategy, **SMALL)
    assert_all(history(result) == history(whole_run), (history(result), history(whole_run)))
    same = [result[k] == whole_run[k] for k in ("test_macro_f1", "test_accuracy",
                                                "sampled_edges", "best_epoch")]
    assert_all(all(same), same)
    assert_all(result["world_size"] == SIZE and isinstance(ds.graph, DistHeteroGraph))
    sharded = ds.graph.whole is None
    assert_all(sharded == (c < SIZE))
    sent = result["history"][0]["sampling_bytes"].get("alltoallv", 0)
    assert_all(sharded == (sent > 0), result["history"][0]["sampling_bytes"])


def test_no_rank_holds_a_whole_relation_unless_c_is_p(dataset_file):
    ds = load_hetero_dataset(dataset_file, Grid(replication=1))
    graph = spsample.load(dataset_file).graph
    held = {rel: ds.graph.relation_graph(rel).indices.size for rel in graph.relations}
    whole = graph.num_edges
    assert_all(SIZE == 1 or all(held[r] < whole[r] for r in held), (held, whole))
    total = {r: n for r, n in held.items()}
    if COMM is not None and ds.graph.whole is None:
        total = {r: COMM.allreduce(n) for r, n in held.items()}
    assert_all(total == whole, (total, whole))


@pytest.mark.parametrize("c", REPLICATIONS)
def test_sharded_resume_replays_the_uninterrupted_run(dataset_file, c, tmp_path):
    """A checkpoint written by rank 0 after epoch 1 and read by every rank: the resumed
    sharded run (dropout 0.3, seeded per rank and epoch) gives the uninterrupted run's losses,
    bit for bit; a checkpoint of another world size is refused on every rank."""
    path = str(tmp_path / "node.pt") if RANK == 0 else None
    path = path if COMM is None else COMM.bcast(path)
    kw = dict(SMALL, dropout=0.3)
    whole = fit_node(load_hetero_dataset(dataset_file, Grid(replication=c)), **kw)
    fit_node(load_hetero_dataset(dataset_file, Grid(replication=c)), checkpoint=path,
             **dict(kw, epochs=1))
    resumed = fit_node(load_hetero_dataset(dataset_file, Grid(replication=c)), resume=path,
                       **kw)
    assert_all(history(resumed) == history(whole), (history(resumed), history(whole)))
    if SIZE > 1:
        try:
            fit_node(spsample.load(dataset_file), resume=path, **kw)     # one process
            error = None
        except ArgumentError as exc:
            error = str(exc)
        assert_all(error is not None and "ranks" in error, error)
