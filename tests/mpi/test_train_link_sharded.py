"""Link prediction on a sharded graph: ``fit_link`` on a ``DistGraph`` (each rank holding its
block rows of the training pairs' graph), on a ``ShardedDataset`` (features fetched by
all-to-all) or on a ``DistHeteroGraph`` relation trains exactly as the whole graph on every
rank does (data-parallel over the same ranks): the same losses, AUC and MRR, bit for bit;
temporal link training (a chronological split made from the whole graph) needs the whole
graph on every rank.

Run by CI under ``mpiexec -n 2`` and ``-n 4`` (tests/run.sh) and collected serially at world
size 1. Assertions are reduced over the ranks so that all ranks fail together.
"""

import numpy as np
import pytest

import spsample
from spsample import ArgumentError
from spsample.distributed import DistGraph, DistHeteroGraph, Grid, ShardedDataset
from spsample.io import HeteroDataset

torch = pytest.importorskip("torch")

from _mpi_helpers import COMM, MPI_MARKS, RANK, SIZE, assert_all, one_torch_thread  # noqa: E402,F401,E501
from test_train_tasks import WRITES, authorship, communities, community_edges  # noqa: E402

from spsample.train.link import fit_link  # noqa: E402

pytestmark = MPI_MARKS

REPLICATIONS = [c for c in (1, 2, 4) if SIZE % c == 0 and c <= SIZE]
SMALL = dict(fanouts=(3, 3), hidden=8, out=8, epochs=2, lr=0.02, batch_size=32, bulk_size=2,
             eval_negatives=3, dropout=0.1)


def history(result):
    return [(e["loss"], e["val_auc"], e["val_mrr"], e["sampled_edges"])
            for e in result["history"]]


def same_run(result, reference):
    """Everything but times and bytes, compared exactly."""
    keys = ("test_auc", "test_mrr", "val_auc", "best_epoch", "sampled_edges", "split",
            "world_size")
    return history(result) == history(reference) and \
        all(result[k] == reference[k] for k in keys)


@pytest.fixture(scope="module")
def whole_run():
    """The whole graph (dense features) on every rank, data-parallel over the ranks."""
    return fit_link(communities(), comm=COMM, **SMALL)


@pytest.mark.parametrize("c", REPLICATIONS)
@pytest.mark.parametrize("strategy", ["push", "pull"])
def test_sharded_graph_trains_as_the_whole_graph(whole_run, c, strategy):
    ds = communities()
    dg = DistGraph.from_graph(ds.graph, Grid(replication=c))
    result = fit_link(dg, features=ds.features, strategy=strategy, **SMALL)
    assert_all(same_run(result, whole_run), (history(result), history(whole_run)))
    sent = result["bytes_per_epoch"]["sampling"]["total"]
    assert_all((dg.whole is None) == (sent > 0) and (dg.whole is None) == (c < SIZE), sent)
    grads = result["bytes_per_epoch"]["gradient_allreduce"]["total"]
    assert_all((grads > 0) == (SIZE > 1), grads)


def test_evaluation_over_all_ranks_is_the_one_process_evaluation():
    """Untrained (the model is the one process's: the same seed), the AUC and MRR over all
    ranks' scores of the sharded evaluation loaders are the one-process values, bit for
    bit (training itself differs: p ranks take 1/p of the optimizer steps)."""
    ds = communities()
    kw = dict(SMALL, epochs=0)
    one = fit_link(ds, **kw)                                   # this rank alone
    result = fit_link(DistGraph.from_graph(ds.graph, Grid()), features=ds.features, **kw)
    assert_all((result["test_auc"], result["test_mrr"]) == (one["test_auc"], one["test_mrr"]),
               (result["test_auc"], one["test_auc"]))


def test_sharded_features_train_as_the_whole_features(whole_run):
    """A ShardedDataset: graph rows and dense feature rows both sharded (the features
    normalised shard by shard, fetched by all-to-all)."""
    sharded = ShardedDataset.from_dataset(communities(), Grid())
    result = fit_link(sharded, **SMALL)
    assert_all(same_run(result, whole_run), (history(result), history(whole_run)))
    fetched = result["bytes_per_epoch"]["feature_fetch"]["total"]
    negatives = result["bytes_per_epoch"]["negatives"]["total"]
    assert_all((fetched > 0) == (SIZE > 1) and negatives == 0, result["bytes_per_epoch"])


def with_edge_splits(ds):
    """``ds`` with stored splits of its ``writes`` pairs (train 70 %, val and test 15 %)."""
    indptr, indices, _ = ds.graph.csr(WRITES)
    pairs = np.stack([indices, np.repeat(np.arange(indptr.size - 1), np.diff(indptr))])
    order = np.random.default_rng(3).permutation(pairs.shape[1])
    a, b = int(0.7 * order.size), int(0.85 * order.size)
    splits = {p: {WRITES: pairs[:, i]} for p, i in
              (("train", order[:a]), ("val", order[a:b]), ("test", order[b:]))}
    return HeteroDataset(ds.graph, features=ds.features, edge_splits=splits, name="a")


@pytest.mark.parametrize("c", REPLICATIONS)
@pytest.mark.parametrize("strategy", ["push", "pull"])
def test_heterogeneous_relation_with_stored_splits(c, strategy):
    ds = with_edge_splits(authorship())
    kw = dict(SMALL, relation=WRITES)
    whole = fit_link(ds, comm=COMM, **kw)
    dg = DistHeteroGraph.from_graph(ds.graph, Grid(replication=c))
    sharded = HeteroDataset(dg, features=ds.features, edge_splits=ds.edge_splits, name="a")
    result = fit_link(sharded, strategy=strategy, **kw)
    assert_all(same_run(result, whole), (history(result), history(whole)))
    sent = result["bytes_per_epoch"]["sampling"]["total"]      # uniform training negatives:
    negatives = result["bytes_per_epoch"]["negatives"]["total"]   # nothing to ask the owners
    assert_all((sent > 0) == (dg.whole is None) and negatives == 0, result["bytes_per_epoch"])


def temporal():
    rng = np.random.default_rng(1)
    src, dst, x = community_edges(rng, 80, 600)
    rel = ("node", "to", "node")
    g = spsample.HeteroGraph.from_edge_index({rel: (src, dst)}, num_nodes={"node": 80},
                                             edge_time={rel: rng.random(600)})
    return HeteroDataset(g, features={"node": x}, name="t")


def test_temporal_link_needs_the_whole_graph():
    """Sharded: an ArgumentError naming ``data`` on every rank, before any training; with
    replicate_graph=True every rank samples its share at the edges' times, as the in-memory
    graph does."""
    ds = temporal()
    kw = dict(SMALL, fanouts=(3,), batch_size=64)
    sharded = HeteroDataset(DistHeteroGraph.from_graph(ds.graph, Grid()),
                            features=ds.features)
    try:
        fit_link(sharded, **kw)
        error = None
    except ArgumentError as exc:
        error = str(exc)
    messages = [error] if COMM is None else COMM.allgather(error)
    expected = SIZE > 1
    assert_all((error is not None) == expected and len(set(messages)) == 1, messages)
    assert_all(not expected or ("'data'" in error and "replicate_graph" in error), error)
    whole = fit_link(ds, comm=COMM, **kw)
    replicated = HeteroDataset(DistHeteroGraph.from_graph(ds.graph, Grid(),
                                                          replicate_graph=True),
                               features=ds.features)
    result = fit_link(replicated, **kw)
    assert_all(same_run(result, whole) and result["split"]["train"] == round(
        0.70 * ds.graph.num_edges[("node", "to", "node")]), history(result))


@pytest.mark.parametrize("c", REPLICATIONS)
def test_sharded_link_resume_replays_the_uninterrupted_run(c, tmp_path):
    """Checkpoint after epoch 1 (rank 0 writes, every rank reads), resumed on the sharded
    graph: the losses, AUC and MRR of the uninterrupted run, bit for bit."""
    path = str(tmp_path / "link.pt") if RANK == 0 else None
    path = path if COMM is None else COMM.bcast(path)
    ds = communities()

    def run(**kw):
        dg = DistGraph.from_graph(ds.graph, Grid(replication=c))
        return fit_link(dg, features=ds.features, **dict(SMALL, dropout=0.3, **kw))
    whole = run(epochs=3)
    run(epochs=1, checkpoint=path)
    resumed = run(epochs=3, resume=path)
    assert_all(same_run(resumed, whole), (history(resumed), history(whole)))
