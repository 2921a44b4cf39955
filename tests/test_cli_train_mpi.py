"""``spsample train`` under ``mpiexec`` on sharded data, as a user runs it: accuracy, the
metrics' bytes per phase, and bad input ending every rank with the same error.

Each test starts its own ``mpiexec`` job (skipped without mpiexec or mpi4py); the serial
suite runs them (under ``mpiexec`` itself they are skipped).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spsample import io
from spsample.distributed import launched_under_mpi

pytestmark = pytest.mark.skipif(launched_under_mpi(),
                                reason="starts its own mpiexec: runs in the serial suite")


def errors_of(proc):
    """The ``spsample train: error: ...`` messages of every rank (ranks write concurrently,
    so the messages are split on their prefix, not on lines)."""
    prefix = "spsample train: error: "
    parts = proc.stderr.split(prefix)[1:]
    return [part.splitlines()[0].strip() if part.strip() else "" for part in parts]


#: Seconds an ``mpiexec`` job of these tests may run; longer is a hang (the job is killed and
#: the test fails).
LIMIT_S = 300


def spsample_job(tmp_path, ranks, *argv, mpmd=None, limit=LIMIT_S, program=None, **env_extra):
    """Run ``mpiexec -n RANKS python -m spsample train ARGV`` (or, with ``mpmd``, one
    argument list per rank; ``program`` replaces ``-m spsample``) and return the completed
    process; fails the test if the job still runs after ``limit`` seconds (a hang)."""
    if shutil.which("mpiexec") is None:
        pytest.skip("mpiexec is not installed")
    pytest.importorskip("mpi4py")
    pytest.importorskip("torch")
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, OMP_NUM_THREADS="1", SPSAMPLE_THREADS="1", **env_extra,
               PYTHONPATH=os.pathsep.join([root] + [
                   p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    for name in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        env.pop(name, None)
    train = [sys.executable, *(program or ["-m", "spsample"]), "train"]
    if mpmd is None:
        cmd = ["mpiexec", "-n", str(ranks), *train, *argv]
    else:
        cmd = ["mpiexec"]
        for i, args in enumerate(mpmd):
            cmd += ([":"] if i else []) + ["-n", "1", *train, *args]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(cmd[:8])}... still ran after {limit} s: a hang\n{err[-3000:]}")
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    done.seconds = time.monotonic() - start
    return done


def test_cora_on_four_ranks_with_replication_two(tmp_path):
    """The acceptance run: Cora's accuracy as on one process (0.80-0.82 there), no rank
    holding all rows, and the bytes of every phase in the metrics."""
    proc = spsample_job(tmp_path, 4, "cora", "--replication", "2", "--quiet",
                        "--metrics", "m.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["test_accuracy"] >= 0.79, metrics["test_accuracy"]
    data = metrics["data"]
    assert data == dict(layout="sharded", replication=2, graph_replicated=False,
                        num_nodes=2708, graph_rows_held=1354, feature_rows_held=1354)
    bytes_ = metrics["bytes_per_epoch"]
    assert bytes_["sampling"]["alltoallv"] > 0 and bytes_["feature_fetch"]["alltoallv"] > 0
    assert bytes_["gradient_allreduce"]["allreduce"] > 0
    assert "replication 2: graph 1354 and features 1354 of 2708 rows per rank" in proc.stdout


def test_replication_that_does_not_divide_the_ranks(tmp_path):
    proc = spsample_job(tmp_path, 2, "cora", "--replication", "3", "--epochs", "1")
    assert proc.returncode != 0
    lines = errors_of(proc)
    assert len(lines) == 1, proc.stderr[-2000:]              # printed once, by rank 0
    assert "--replication" in lines[0] and "must divide the number of ranks (2)" in lines[0]


def test_ranks_given_different_datasets(tmp_path):
    cora = io.load_cora()
    labels = cora.labels.copy()
    labels[0] = (labels[0] + 1) % cora.num_classes
    io.save(io.Dataset(cora.graph, features=cora.features, labels=labels,
                       splits=cora.splits, name="cora"), tmp_path / "other.h5")
    proc = spsample_job(tmp_path, 2, mpmd=[["cora", "--epochs", "1"],
                                           ["other.h5", "--epochs", "1"]])
    assert proc.returncode != 0
    lines = errors_of(proc)
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "dataset" in lines[0] and "disagree" in lines[0], lines[0]


def test_a_missing_file_on_every_rank(tmp_path):
    proc = spsample_job(tmp_path, 2, "missing.h5", "--epochs", "1")
    lines = errors_of(proc)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert "neither a file nor an embedded dataset" in lines[0]


def test_a_heterogeneous_file_trains_sharded_and_link_needs_stored_splits(tmp_path):
    """A heterogeneous file trains data-parallel with its relations' rows split over the
    ranks; --task link on it (no stored edge splits, no times) is refused by every rank
    alike, as on one process."""
    import numpy as np

    import spsample

    rel = ("author", "writes", "paper")
    back = ("paper", "written_by", "author")
    src, dst = np.arange(40) % 8, np.arange(40) % 20
    g = spsample.HeteroGraph.from_edge_index({rel: (src, dst), back: (dst, src)},
                                             num_nodes={"author": 8, "paper": 20})
    ds = io.HeteroDataset(g, features={"author": np.eye(8, dtype=np.float32),
                                       "paper": np.ones((20, 2), np.float32)},
                          labels={"paper": np.arange(20) % 2}, target_type="paper",
                          splits={"s": {"train": np.arange(12), "val": np.arange(12, 16),
                                        "test": np.arange(16, 20)}})
    io.save(ds, tmp_path / "hetero.h5")
    with pytest.raises(spsample.DatasetError, match="heterogeneous"):
        io.read_node_targets(tmp_path / "hetero.h5")      # no single node set to shard
    proc = spsample_job(tmp_path, 2, "hetero.h5", "--epochs", "1", "--batch-size", "4",
                        "--quiet", "--metrics", "m.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 ranks, replication 1: relations split by destination rows" in proc.stdout
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["world_size"] == 2 and metrics["task"] == "node"
    assert metrics["history"][0]["sampling_bytes"]["alltoallv"] > 0
    proc = spsample_job(tmp_path, 2, "hetero.h5", "--task", "link", "--epochs", "1")
    lines = errors_of(proc)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert "no edge times" in lines[0] and "stored edge_splits" in lines[0], lines[0]
    assert "got 'auto'" not in lines[0], lines[0]


def test_relabelled_dataset_with_its_permutation_trains_as_the_original(tmp_path):
    """A dataset relabelled by a random permutation, trained on 2 ranks with that permutation:
    each rank reads a block of the relabelled file, and the losses are the original's."""
    import numpy as np

    import spsample
    from spsample.distributed._partition import relabel, save_partition

    cora = io.load_cora()
    old_id = np.random.default_rng(1).permutation(cora.num_nodes)
    shuffled = relabel(cora, old_id)
    spsample.save(shuffled, tmp_path / "s.h5")
    save_partition(tmp_path / "s.perm.npz", shuffled.graph, old_id, method="random", parts=2)
    common = ["--epochs", "2", "--hidden", "16", "--quiet"]
    runs = [spsample_job(tmp_path, 2, "cora", *common, "--metrics", "a.json"),
            spsample_job(tmp_path, 2, "s.h5", "--permutation", "s.perm.npz", *common,
                         "--metrics", "b.json")]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = (json.loads((tmp_path / f"{x}.json").read_text()) for x in "ab")
    assert a["losses"] == b["losses"] and a["test_accuracy"] == b["test_accuracy"]
    assert b["data"]["graph_rows_held"] == 1354
    owner = spsample_job(tmp_path, 2, "s.h5", "--permutation", "s.perm.npz", "--order",
                         "owner", *common, "--metrics", "c.json")
    assert owner.returncode == 0, owner.stderr[-3000:]
    c = json.loads((tmp_path / "c.json").read_text())
    assert c["config"]["order"] == "owner" and c["losses"] != a["losses"]


def test_sparse_features_stay_sparse_under_mpiexec(tmp_path):
    """A file with CSR features trains sharded on CSR shards (no rank densifies its block),
    with the losses of the whole sparse dataset on every rank (--replicate-graph)."""
    import scipy.sparse as sp

    cora = io.load_cora()
    io.save(io.Dataset(cora.graph, features=sp.csr_matrix(cora.features), labels=cora.labels,
                       splits=cora.splits, name="cora"), tmp_path / "s.h5")
    argv = ["s.h5", "--epochs", "1", "--hidden", "16", "--fanouts", "5,5", "--quiet"]
    runs = [spsample_job(tmp_path, 2, *argv, "--metrics", "sharded.json"),
            spsample_job(tmp_path, 2, *argv, "--replicate-graph", "--metrics", "whole.json")]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "1433 sparse features" in proc.stdout, proc.stdout
    a, b = (json.loads((tmp_path / f"{x}.json").read_text()) for x in ("sharded", "whole"))
    assert a["data"]["feature_rows_held"] == 1354 and b["data"]["layout"] == "replicated"
    assert a["losses"] == b["losses"]
    assert a["bytes_per_epoch"]["feature_fetch"]["alltoallv"] > 0


LINK = ["--task", "link", "--epochs", "2", "--hidden", "8", "--fanouts", "3,3",
        "--batch-size", "64", "--eval-negatives", "3", "--quiet"]


def test_link_prediction_trains_sharded_as_with_the_whole_graph(tmp_path):
    """--task link under mpiexec: the graph's rows split over the ranks (push sampling, the
    features whole on each rank) or the whole graph on each rank give the same losses, AUC
    and MRR; the sharded run's metrics count its sampling bytes."""
    from test_train_tasks import communities

    io.save(communities(), tmp_path / "c.h5")
    runs = [spsample_job(tmp_path, 2, "c.h5", *LINK, "--metrics", "sharded.json"),
            spsample_job(tmp_path, 2, "c.h5", *LINK, "--replicate-graph", "--metrics",
                         "whole.json")]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 ranks, replication 1: graph rows split, push sampling" in runs[0].stdout
    a, b = (json.loads((tmp_path / f"{x}.json").read_text()) for x in ("sharded", "whole"))
    assert [e["loss"] for e in a["history"]] == [e["loss"] for e in b["history"]]
    assert (a["test_auc"], a["test_mrr"]) == (b["test_auc"], b["test_mrr"])
    assert a["world_size"] == 2 and a["task"] == "link"
    assert a["bytes_per_epoch"]["sampling"]["alltoallv"] > 0
    assert b["bytes_per_epoch"]["sampling"]["total"] == 0


def test_temporal_link_prediction_needs_the_whole_graph(tmp_path):
    """A temporal graph sharded: every rank refuses, naming --replicate-graph; with it, the
    ranks train on the whole graph (each seed edge sampled at its time)."""
    import numpy as np

    import spsample
    from test_train_tasks import community_edges

    rng = np.random.default_rng(1)
    src, dst, x = community_edges(rng, 80, 600)
    rel = ("node", "to", "node")
    g = spsample.HeteroGraph.from_edge_index({rel: (src, dst)}, num_nodes={"node": 80},
                                             edge_time={rel: rng.random(600)})
    io.save(io.HeteroDataset(g, features={"node": x}, name="t"), tmp_path / "t.h5")
    proc = spsample_job(tmp_path, 2, "t.h5", *LINK)
    lines = errors_of(proc)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert "--replicate-graph" in lines[0] and "temporal" in lines[0], lines[0]
    proc = spsample_job(tmp_path, 2, "t.h5", *LINK, "--replicate-graph", "--metrics", "m.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["world_size"] == 2 and 0 <= metrics["test_auc"] <= 1
    assert metrics["split"]["train"] == round(0.70 * g.num_edges[rel])


# ---------------------------------------------------------------- one rank differs (issue 27)
# Before: the rank that failed printed its error and returned 2, the others waited forever.
COMMON = ["cora", "--epochs", "1", "--hidden", "8", "--quiet"]
ONE_RANK_DIFFERS = {
    "batch-size": (["--batch-size", "0"], "rank 1: ", "'--batch-size' must be >= 1"),
    "hidden": (["--hidden", "0"], "rank 1: ", "'--hidden' must be >= 1"),
    "lr": (["--lr", "nan"], "rank 1: ", "'--lr' must be a finite number"),
    "resume": (["--resume", "missing.pt"], "rank 1: ", "'--resume' is not a file"),
    "metrics": (["--metrics", "nodir/m.json"], "rank 1: ",
                "'--metrics' is in a directory that does not exist"),
    "unknown": (["--bogus"], "rank 1: ", "unrecognized arguments: --bogus"),
    "replicate": (["--replicate-graph"], "ranks disagree on --replicate-graph",
                  "rank 1 has True"),
    "task": (["--task", "link"], "ranks disagree on --task", "rank 1 has 'link'"),
}


def assert_one_error(proc, first, text):
    """Every rank ended with status 2 and the error was printed once (by rank 0)."""
    lines = errors_of(proc)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith(first) and text in lines[0], lines[0]
    assert "spsample train:" not in lines[0], lines[0]             # the prefix once
    assert "Traceback" not in proc.stderr and "aborted" not in proc.stderr, proc.stderr[-3000:]


@pytest.mark.parametrize("case", sorted(ONE_RANK_DIFFERS))
def test_one_rank_with_a_bad_flag_ends_every_rank(tmp_path, case):
    extra, first, text = ONE_RANK_DIFFERS[case]
    proc = spsample_job(tmp_path, 2, mpmd=[COMMON, COMMON + extra], limit=120)
    assert_one_error(proc, first, text)
    assert "epoch" not in proc.stdout                    # checked before any work


def test_the_failing_rank_is_named_among_three(tmp_path):
    proc = spsample_job(tmp_path, 3, mpmd=[COMMON, COMMON, COMMON + ["--batch-size", "-4"]],
                        limit=120)
    assert_one_error(proc, "rank 2: ", "'--batch-size' must be >= 1 (got -4)")


def test_help_on_every_rank_prints_once(tmp_path):
    proc = spsample_job(tmp_path, 2, "--help", limit=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("usage: spsample train") == 1, proc.stdout[-3000:]


def damaged_copy(src, dst, array, position=-2):
    """``dst``: a copy of the spsample file ``src`` with entry ``position`` of ``array``
    broken (an id out of range, a NaN time) or, for labels, changed to another valid class (a
    copy that loads but differs)."""
    import h5py
    import numpy as np

    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        values = f[array][...]
        if array.endswith("labels"):
            values[position] = (values[position] + 1) % (values.max() + 1)
        else:
            values[position] = np.nan if values.dtype.kind == "f" else 10**7
        f[array][...] = values


def small_hetero():
    import numpy as np

    import spsample

    rel, back = ("author", "writes", "paper"), ("paper", "written_by", "author")
    src, dst = np.arange(40) % 8, np.arange(40) % 20
    g = spsample.HeteroGraph.from_edge_index({rel: (src, dst), back: (dst, src)},
                                             num_nodes={"author": 8, "paper": 20})
    return io.HeteroDataset(g, features={"author": np.eye(8, dtype=np.float32),
                                         "paper": np.ones((20, 2), np.float32)},
                            labels={"paper": np.arange(20) % 2}, target_type="paper",
                            splits={"s": {"train": np.arange(12), "val": np.arange(12, 16),
                                          "test": np.arange(16, 20)}})


def small_temporal():
    import numpy as np

    import spsample
    from test_train_tasks import community_edges

    rng = np.random.default_rng(1)
    src, dst, x = community_edges(rng, 80, 600)
    rel = ("node", "to", "node")
    g = spsample.HeteroGraph.from_edge_index({rel: (src, dst)}, num_nodes={"node": 80},
                                             edge_time={rel: rng.random(600)})
    return io.HeteroDataset(g, features={"node": x}, name="t")


DAMAGED = {   # layout: (dataset, array broken in rank 1's copy, flags, what the error says)
    "homogeneous": ("cora", "graph/indices", [], "rank 1: DistGraph.load"),
    "homogeneous-whole": ("cora", "graph/indices", ["--replicate-graph"],
                          "rank 1: spsample.load"),
    "homogeneous-labels-whole": ("cora", "labels", ["--replicate-graph"],
                                 "ranks disagree: the dataset differs between rank 0 and "
                                 "rank 1"),
    "heterogeneous": ("hetero", "hetero/relations/1/indices", ["--batch-size", "4"],
                      "rank 1: load_hetero_dataset"),
    "temporal-whole": ("temporal", "hetero/relations/0/time", LINK + ["--replicate-graph"],
                       "rank 1: spsample.load"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_one_ranks_damaged_copy_ends_every_rank(tmp_path, case):
    name, array, flags, text = DAMAGED[case]
    data = {"cora": io.load_cora, "hetero": small_hetero, "temporal": small_temporal}[name]()
    io.save(data, tmp_path / "good.h5")
    damaged_copy(tmp_path / "good.h5", tmp_path / "bad.h5", array)
    common = ["--epochs", "1", "--hidden", "8", "--quiet", *flags]
    proc = spsample_job(tmp_path, 2, mpmd=[["good.h5", *common], ["bad.h5", *common]],
                        limit=180)
    assert_one_error(proc, text.split(":")[0], text)
    if text.startswith("rank 1"):
        assert "'bad.h5'" in errors_of(proc)[0]


# A wrapper that makes one rank (or every rank) fail in the middle of `spsample train`, where
# no check agreed beforehand can see it coming.
INJECT = """
import os, sys
import spsample
from spsample.train import _trainer
rank, victim, where = int(os.environ["PMI_RANK"]), os.environ["VICTIM"], os.environ["WHERE"]
if victim == "every" or int(victim) == rank:
    original = getattr(_trainer.Trainer, where)
    def failing(self, *args, **kwargs):
        if os.environ["KIND"] == "typed":
            raise spsample.ArgumentError(f"injected failure in {where} on rank {rank}")
        raise RuntimeError(f"injected bug in {where} on rank {rank}")
    setattr(_trainer.Trainer, where, failing)
from spsample.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("ranks, victim, where, kind", [
    (2, "1", "train_epoch", "typed"), (3, "0", "evaluate", "typed"),
    (2, "0", "train_epoch", "bug")])
def test_a_rank_failing_alone_mid_run_ends_the_job(tmp_path, ranks, victim, where, kind):
    """The others are inside a collective already: the failing rank prints its error, naming
    itself, and aborts the job (within the CLI's wait for the others, 10 s)."""
    proc = spsample_job(tmp_path, ranks, *COMMON[:-1], program=["-c", INJECT], limit=120,
                        VICTIM=victim, WHERE=where, KIND=kind)
    assert proc.returncode != 0, proc.stderr[-3000:]
    assert f"injected {'failure' if kind == 'typed' else 'bug'} in {where} on rank {victim}" \
        in proc.stderr, proc.stderr[-3000:]
    if kind == "typed":
        lines = errors_of(proc)
        assert len(lines) == 1 and lines[0].startswith(f"rank {victim}: "), proc.stderr[-3000:]
        assert "aborted" in lines[0]
    else:
        assert f"spsample: rank {victim} of {ranks} raised an uncaught exception" in proc.stderr


def test_every_rank_failing_alike_mid_run_prints_once(tmp_path):
    proc = spsample_job(tmp_path, 2, *COMMON[:-1], program=["-c", INJECT], limit=120,
                        VICTIM="every", WHERE="train_epoch", KIND="typed")
    assert_one_error(proc, "rank 0: injected failure in train_epoch on rank 0",
                     "other ranks failed differently, e.g. rank 1: injected failure")
