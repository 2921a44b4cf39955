"""Hot-feature cache: the top rows by in-degree or sampled counts in front of an HDF5 source;
batches bit for bit those of the uncached source, hit rates on a power-law graph."""

import numpy as np
import pytest

import spsample

torch = pytest.importorskip("torch")
from spsample.loader import (CachedFeatures, HDF5Features, Loader, hit_rate_curve,  # noqa: E402
                             in_degree_scores, sampled_counts)


@pytest.fixture(scope="module")
def power_law(tmp_path_factory):
    g = spsample.rmat(12, seed=3)
    x = np.random.default_rng(0).standard_normal((g.num_nodes, 8)).astype(np.float32)
    y = np.arange(g.num_nodes) % 3
    path = tmp_path_factory.mktemp("cache") / "g.h5"
    spsample.save(spsample.Dataset(g, features=x, labels=y), path)
    return g, x, y, path


def test_in_degree_scores_on_disk_and_in_memory(power_law):
    g, _, _, path = power_law
    expect = np.bincount(g.indices, minlength=g.num_nodes)
    np.testing.assert_array_equal(in_degree_scores(g), expect)
    with spsample.DiskGraph.open(path, "1MB") as dg:
        np.testing.assert_array_equal(in_degree_scores(dg), expect)


def test_batches_identical_and_counters(power_law):
    g, x, y, path = power_law
    row = x.shape[1] * 4
    cached = CachedFeatures(HDF5Features(path, cache=False), 300 * row, in_degree_scores(g))
    assert cached.cached_ids.size == 300
    deg = in_degree_scores(g)
    assert deg[cached.cached_ids].min() >= np.sort(deg)[-300]
    seeds = np.arange(0, g.num_nodes, 5)
    kw = dict(sampler=spsample.NodeWise([5, 5]), batch_size=64, seed=1)
    a = list(Loader(g, seeds, features=cached, labels=y, **kw).iter_epoch(0))
    b = list(Loader(g, seeds, features=x, labels=y, **kw).iter_epoch(0))
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert torch.equal(p.x, q.x) and torch.equal(p.n_id, q.n_id)
    assert cached.hits > 0 and cached.misses > 0
    assert cached.bytes_saved == cached.hits * row
    assert cached.bytes_fetched == cached.misses * row


def test_ten_percent_of_rows_serve_half_the_fetches():
    g = spsample.rmat(14, seed=3)
    seeds = np.random.default_rng(2).permutation(g.num_nodes)[:g.num_nodes // 4]
    kw = dict(sampler=spsample.NodeWise([10, 5]), batch_size=100)
    counts = sampled_counts(g, seeds, epochs=(1,), **kw)      # the epoch measured
    by_degree = hit_rate_curve(in_degree_scores(g), counts, [0.0, 0.1, 1.0])
    by_counts = hit_rate_curve(sampled_counts(g, seeds, epochs=(0,), **kw), counts, [0.1])
    assert by_degree[0] == 0.0 and by_degree[2] == 1.0
    assert by_degree[1] >= 0.5 and by_counts[0] >= 0.5


def test_bad_arguments(power_law):
    g, x, _, _ = power_law
    with pytest.raises(spsample.ArgumentTypeError, match="budget"):
        CachedFeatures(x, 1.5, in_degree_scores(g))
    with pytest.raises(spsample.ArgumentError, match="budget"):
        CachedFeatures(x, -1, in_degree_scores(g))
    with pytest.raises(spsample.ArgumentError, match="scores"):
        CachedFeatures(x, 100, np.ones(3))
    with pytest.raises(spsample.ArgumentError, match="scores"):
        CachedFeatures(x, 100, np.full(g.num_nodes, np.nan))
    empty = CachedFeatures(x, 0, in_degree_scores(g))
    np.testing.assert_array_equal(empty.fetch(np.array([3, 1, 3])), x[[3, 1, 3]])
    assert empty.hits == 0 and empty.misses == 2
