"""Data-parallel training and the loader over MPI ranks.

Run by CI under ``mpiexec -n 2`` and ``-n 4`` (tests/run.sh) and collected serially at world
size 1. Every rank runs the same tests in the same order; assertions are reduced over the
ranks (:func:`assert_all`) so that all ranks fail together.
"""

import numpy as np
import pytest

import spsample
from spsample import io
from spsample.distributed import DistGraph, FeatureStore, Grid

torch = pytest.importorskip("torch")

from _mpi_helpers import (COMM, MPI_MARKS, RANK, SIZE, assert_all,  # noqa: E402,F401
                          one_torch_thread)

from spsample.train import (GradientAllReduce, GraphSAGE, Trainer,  # noqa: E402
                            parameter_checksums)

pytestmark = MPI_MARKS


@pytest.fixture(scope="module")
def planted():
    """600 nodes in 4 planted communities (90% of edges inside); noisy indicator features."""
    rng = np.random.default_rng(0)
    n, k = 600, 4
    labels = rng.integers(0, k, n)
    src = rng.integers(0, n, 4000)
    members = [np.flatnonzero(labels == c) for c in range(k)]
    dst = np.where(rng.random(4000) < 0.9, [rng.choice(members[labels[s]]) for s in src],
                   rng.integers(0, n, 4000))
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=n, symmetrize=True)
    x = rng.random((n, 16)).astype(np.float32)
    x[np.arange(n), labels] += 0.6
    return io.Dataset(g, features=x, labels=labels, name="planted")


SMALL = dict(hidden=16, batch_size=24, eval_batch_size=100, fanouts=(5, 5), dropout=0.2,
             lr=0.01, normalize="none")


def test_model_replicas_stay_identical(planted):
    trainer = Trainer(planted, comm=COMM, epochs=2, **SMALL)
    start = parameter_checksums(trainer.model, COMM)
    metrics = trainer.fit()
    sums = parameter_checksums(trainer.model, COMM)
    assert_all(sums.shape == (SIZE, 3))
    assert_all(np.all(sums == sums[0]), f"replicas differ: {sums}")
    assert_all(not np.array_equal(sums[0], start[0]), "training did not move the parameters")
    assert_all(metrics["world_size"] == SIZE and metrics["losses"][-1] < metrics["losses"][0])
    # every rank reports the same (all-reduced) metrics
    seen = [metrics["test_accuracy"]] if COMM is None else COMM.allgather(
        metrics["test_accuracy"])
    assert_all(len(set(seen)) == 1, f"test accuracies differ: {seen}")
    trainer.close()


def test_ranks_train_on_disjoint_shares_of_every_epoch(planted):
    trainer = Trainer(planted, comm=COMM, epochs=1, **SMALL)
    loader = trainer.train_loader
    mine = [(b.batch_id, b.n_id[:b.batch_size].numpy()) for b in loader.iter_epoch(0)]
    everyone = [mine] if COMM is None else COMM.allgather(mine)
    ids = [i for part in everyone for i, _ in part]
    seeds = np.concatenate([s for part in everyone for _, s in part])
    assert_all(ids == list(range(loader.num_batches)), f"batch ids {ids}")
    assert_all(np.array_equal(np.sort(seeds), np.sort(trainer.train_idx)))
    trainer.close()


def test_allreduce_averages_the_contributing_ranks_gradients(planted):
    """Each rank's gradient after the all-reduce equals the mean, computed here serially, of
    the gradients of every rank's first minibatch (a rank without one contributes nothing)."""
    sampler = spsample.NodeWise([4, 4])
    torch.manual_seed(0)
    model = GraphSAGE(16, 8, 4, num_layers=2, conv="torch").eval()     # no dropout

    def grads_of(batch):
        model.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(batch), batch.target).backward()
        return [p.grad.clone() for p in model.parameters()]

    seeds = np.arange(planted.num_nodes)[: 24 * (SIZE - 1) + 10]    # the last rank: fewer
    loaders = [spsample.Loader(planted, seeds, sampler=sampler, batch_size=24, rank=r,
                               world_size=SIZE, pipeline=False) for r in range(SIZE)]
    firsts = [next(iter(ld), None) for ld in loaders]
    expected = [torch.stack(g).mean(0) for g in zip(*(grads_of(b) for b in firsts if b))]
    reduce = GradientAllReduce(list(model.parameters()), COMM)
    mine = firsts[RANK]
    if mine is not None:
        grads_of(mine)
    count = reduce(mine is not None)
    got = [p.grad for p in model.parameters()]
    assert_all(count == sum(b is not None for b in firsts))
    assert_all(all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, expected)))
    reduce.close()


def test_loader_over_a_distributed_graph_and_feature_store(planted):
    """The loader with a DistGraph and a FeatureStore (collective fetches) yields, on each
    rank, exactly the serial loader's minibatches of that rank's share."""
    grid = Grid(replication=1)
    dist = DistGraph.from_graph(planted.graph, grid)
    store = FeatureStore.from_array(planted.features, grid)
    sampler = spsample.NodeWise([3, 3])
    # 2 * SIZE + 1 minibatches: shares of 3 per rank, so the last ranks have fewer or none
    # and must still join every collective fetch (the loader pads with dropped bulks)
    seeds = np.arange(planted.num_nodes)[: 24 * (2 * SIZE + 1) - 7]
    kw = dict(sampler=sampler, batch_size=24, bulk_size=2, seed=3, labels=planted.labels)
    ref = list(spsample.Loader(planted.graph, seeds, features=planted.features, **kw))
    got = list(spsample.Loader(dist, seeds, features=store, rank=RANK, world_size=SIZE, **kw))
    per = -(-len(ref) // SIZE)
    lo = min(RANK * per, len(ref))
    assert_all(len(got) == len(ref[lo:lo + per]))
    same = all(torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
               and torch.equal(a.x, b.x) and torch.equal(a.y, b.y) and a.batch_id == b.batch_id
               for a, b in zip(got, ref[lo:]))
    assert_all(same, "distributed loader batches differ from the serial ones")
