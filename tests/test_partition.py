"""spsample partition: METIS relabelling (pymetis) against blocks, the permutation both ways,
sampling results in the original ids whichever partition, mismatched permutation files."""

import json

import numpy as np
import pytest

import spsample
from spsample.distributed._partition import (
    cut_edges, have_metis, load_partition, partition, relabel, save_partition,
)

needs_metis = pytest.mark.skipif(not have_metis(), reason="pymetis is not installed")


def _planted(n=600, parts=4, seed=0):
    """``parts`` dense communities, ids shuffled (so id blocks cut most edges)."""
    rng = np.random.default_rng(seed)
    comm = rng.integers(0, parts, n)
    src = rng.integers(0, n, 12 * n)
    dst = np.where(rng.random(src.size) < 0.9,
                   rng.permutation(n)[np.searchsorted(np.sort(comm), comm[src]) % n], src)
    same = comm[src] == comm[dst]
    keep = same | (rng.random(src.size) < 0.05)
    g = spsample.Graph.from_edge_index(src[keep], dst[keep], num_nodes=n, symmetrize=True)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    splits = {"default": {"train": np.arange(0, n, 2), "val": np.arange(1, n, 4),
                          "test": np.arange(3, n, 4)}}
    return spsample.Dataset(g, features=x, labels=comm, splits=splits, name="planted")


def _edges(graph, old_id=None):
    row = np.repeat(np.arange(graph.num_nodes), np.diff(graph.indptr))
    col = np.asarray(graph.indices)
    if old_id is not None:
        row, col = old_id[row], old_id[col]
    return set(zip(row.tolist(), col.tolist()))


def test_relabel_maps_every_part_both_ways():
    ds = _planted()
    old_id = np.random.default_rng(1).permutation(ds.num_nodes)
    new = relabel(ds, old_id)
    assert _edges(new.graph, old_id) == _edges(ds.graph)
    np.testing.assert_array_equal(new.features, ds.features[old_id])
    np.testing.assert_array_equal(new.labels, ds.labels[old_id])
    np.testing.assert_array_equal(np.sort(old_id[new.train_idx]), ds.train_idx)
    block = partition(ds.graph, 4, method="block")
    np.testing.assert_array_equal(block, np.arange(ds.num_nodes))


@needs_metis
def test_metis_cuts_fewer_edges_than_blocks():
    ds = _planted()
    old_id = partition(ds.graph, 4, method="metis")
    new = relabel(ds, old_id)
    assert cut_edges(new.graph, 4) < 0.5 * cut_edges(ds.graph, 4)


@needs_metis
def test_full_neighbourhoods_identical_in_original_ids():
    """Fanout -1 (no random draws): the same sampled edges, in original ids, on either
    labelling. (Random draws are keyed by vertex id, so with fanouts they differ.)"""
    ds = _planted()
    old_id = partition(ds.graph, 4, method="metis")
    new_id = np.argsort(old_id)
    g2 = relabel(ds, old_id).graph
    seeds = np.arange(0, ds.num_nodes, 7)
    s = spsample.NodeWise([-1, -1])
    a = spsample.sample(ds.graph, seeds, sampler=s, batch_size=1)
    b = spsample.sample(g2, new_id[seeds], sampler=s, batch_size=1)
    for x, y in zip(a, b):
        for hop in (1, 2):
            dx, sx = x.global_edges(hop)
            dy, sy = y.global_edges(hop)
            assert set(zip(dx.tolist(), sx.tolist())) == \
                set(zip(old_id[dy].tolist(), old_id[sy].tolist()))
        assert set(x.n_id.tolist()) == set(old_id[y.n_id].tolist())


def test_cli_and_mismatched_permutation(tmp_path):
    from spsample.cli import main
    ds = _planted()
    src = tmp_path / "p.h5"
    spsample.save(ds, src)
    out = tmp_path / "p.block4.h5"
    assert main(["partition", str(src), "--parts", "4", "--method", "block"]) == 0
    new = spsample.load(out)
    old_id = load_partition(tmp_path / "p.block4.perm.npz", new.graph)
    assert _edges(new.graph, old_id) == _edges(ds.graph)
    other = spsample.rmat(9, seed=1)
    with pytest.raises(spsample.DatasetError, match="partition.*permutation"):
        load_partition(tmp_path / "p.block4.perm.npz", other)
    save_partition(tmp_path / "x.npz", ds.graph, old_id, method="block", parts=4)
    swapped = relabel(ds, np.roll(np.arange(ds.num_nodes), 1)).graph
    with pytest.raises(spsample.DatasetError, match="partition.*another dataset"):
        load_partition(tmp_path / "x.npz", swapped)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(spsample.DatasetError, match="partition"):
        load_partition(tmp_path / "bad.npz", ds.graph)


def test_bad_arguments():
    g = spsample.rmat(6, seed=0)
    with pytest.raises(spsample.ArgumentError, match="method"):
        partition(g, 2, method="spectral")
    with pytest.raises(spsample.ArgumentError, match="parts"):
        partition(g, 0)
    with pytest.raises(spsample.ArgumentError, match="old_id"):
        relabel(spsample.Dataset(g), np.zeros(g.num_nodes, dtype=np.int64))


def test_train_with_the_permutation_is_the_original_run(tmp_path, monkeypatch, capsys):
    """`spsample partition cora` (an embedded name), then `spsample train` on the relabelled
    file with its permutation: the original run's losses, bit for bit."""
    from spsample.cli import main
    monkeypatch.chdir(tmp_path)
    assert main(["partition", "cora", "--parts", "3", "--method", "block"]) == 0
    cora = spsample.io.load_cora()
    old_id = np.random.default_rng(0).permutation(cora.num_nodes)
    shuffled = relabel(cora, old_id)
    spsample.save(shuffled, "shuffled.h5")
    save_partition("shuffled.perm.npz", shuffled.graph, old_id, method="random", parts=3)
    common = ["--epochs", "2", "--hidden", "16", "--quiet"]
    assert main(["train", "cora", *common, "--metrics", "a.json"]) == 0
    assert main(["train", "shuffled.h5", "--permutation", "shuffled.perm.npz", *common,
                 "--metrics", "b.json"]) == 0
    assert main(["train", "shuffled.h5", *common, "--metrics", "c.json"]) == 0
    losses = [json.loads((tmp_path / f"{x}.json").read_text())["losses"] for x in "abc"]
    assert losses[0] == losses[1] and losses[0] != losses[2]
    capsys.readouterr()
    assert main(["train", "shuffled.h5", "--permutation", "cora.block3.perm.npz",
                 *common]) == 2
    err = capsys.readouterr().err
    assert "--permutation" in err and "another dataset" in err
