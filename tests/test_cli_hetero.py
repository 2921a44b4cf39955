"""The command line on heterogeneous and temporal files (issue 27, item 6): ``spsample sample``
samples them node-wise per relation and reports per type and per relation; ``spsample
partition`` refuses them with a typed error saying what it supports; ``spsample convert
--memory-budget`` names the dataset after its source."""

import json

import numpy as np
import pytest

import spsample
from spsample.distributed._partition import partition, relabel
from spsample.cli import main

import crafted


@pytest.fixture
def hetero_file(tmp_path):
    return crafted.write_hetero_hdf5(tmp_path / "hetero.h5")


def test_sample_a_heterogeneous_file_reports_types_and_relations(hetero_file, tmp_path,
                                                                  capsys):
    out = tmp_path / "s.json"
    assert main(["sample", str(hetero_file), "--fanouts", "3,2", "--batch-size", "4",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "seeds of type 'paper'" in text and "paper:cites:paper" in text
    stats = json.loads(out.read_text())
    assert stats["heterogeneous"] and stats["node_type"] == "paper"
    assert stats["seeds"] == 6 and stats["batches"] == 2              # split "a": 6 train ids
    assert set(stats["sampled_edges_per_relation"]) == {"author:writes:paper",
                                                         "paper:cites:paper"}
    assert stats["relation_fanouts"] == {"author:writes:paper": [3, 2],
                                         "paper:cites:paper": [3, 2]}
    # the per-relation counts are those of spsample.sample on the same seeds
    ds = spsample.load(hetero_file)
    order = np.random.default_rng([0, 0]).permutation(ds.split()[0])
    mbs = spsample.sample(ds.graph, ("paper", order), sampler=spsample.NodeWise([3, 2]),
                          batch_size=4, seed=0)
    for rel in ds.graph.relations:
        want = np.sum([mb.num_sampled_edges[rel] for mb in mbs], axis=0).tolist()
        assert stats["sampled_edges_per_relation"][":".join(rel)] == want
    assert stats["sampled_edges"] == sum(sum(v) for v in
                                         stats["sampled_edges_per_relation"].values())


def test_sample_per_relation_fanouts_and_node_type(hetero_file, tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["sample", str(hetero_file), "--fanouts", "2,2", "--relation-fanouts",
                 "cites=0,1", "--node-type", "author", "--json", str(out)]) == 0
    stats = json.loads(out.read_text())
    assert stats["node_type"] == "author" and stats["seeds"] == 8
    assert stats["relation_fanouts"]["paper:cites:paper"] == [0, 1]
    assert stats["sampled_edges_per_relation"]["paper:cites:paper"][0] == 0
    capsys.readouterr()
    for bad, flag in ((["--relation-fanouts", "nope=1,1"], "--relation-fanouts"),
                      (["--relation-fanouts", "cites=1"], "--relation-fanouts"),
                      (["--relation-fanouts", "cites"], "--relation-fanouts"),
                      (["--node-type", "venue"], "--node-type"),
                      (["--sampler", "ladies"], "--sampler")):
        assert main(["sample", str(hetero_file), "--fanouts", "2,2", *bad]) == 2
        err = capsys.readouterr().err
        assert flag in err and "Traceback" not in err, err


def test_sample_a_temporal_file(tmp_path, capsys):
    src = crafted.write_temporal(tmp_path / "msg.txt")
    assert main(["convert", str(src), str(tmp_path / "msg.h5")]) == 0
    assert main(["sample", str(tmp_path / "msg.h5"), "--fanouts", "4,4"]) == 0
    assert "node:to:node" in capsys.readouterr().out


def test_homogeneous_files_refuse_the_heterogeneous_flags(capsys):
    assert main(["sample", "cora", "--node-type", "paper", "--max-batches", "1"]) == 2
    assert "--node-type" in capsys.readouterr().err


def test_partition_refuses_a_heterogeneous_file(hetero_file, capsys):
    assert main(["partition", str(hetero_file), "--parts", "2", "--method", "block"]) == 2
    err = capsys.readouterr().err
    assert "heterogeneous" in err and "homogeneous" in err and "Traceback" not in err
    g = spsample.load(hetero_file).graph
    with pytest.raises(spsample.ArgumentTypeError, match="homogeneous"):
        partition(g, 2, method="block")
    with pytest.raises(spsample.ArgumentTypeError, match="homogeneous"):
        relabel(spsample.load(hetero_file), np.arange(3))


def test_streamed_convert_is_named_after_its_source(tmp_path, capsys):
    (tmp_path / "friends.txt").write_text("0 1\n1 2\n2 0\n")
    assert main(["convert", str(tmp_path / "friends.txt"), str(tmp_path / "out.h5"),
                 "--memory-budget", "16MB"]) == 0
    assert capsys.readouterr().out.startswith("friends:")
    assert spsample.load(tmp_path / "out.h5").name == "friends"
