"""The cost model and planner (spsample.distributed._plan, ``spsample plan``): what it recommends
where the answer is known, the memory it counts, its reasons, and typed errors naming the flag. The
byte formulas are checked against the counted bytes under MPI
(tests/distributed/test_plan_bytes.py)."""

import json
import os
from pathlib import Path

import pytest

import spsample
from spsample._errors import ArgumentError
from spsample.distributed._plan import (Machine, Workload, feature_bytes, memory_per_rank, plan,
                                        predict, sampling_bytes)
from spsample.cli import main

MACHINE = {"name": "test", "cores_per_node": 4, "ranks_per_node": 4, "alpha_s": 1e-5,
           "alpha_peer_s": 2e-6, "beta_intra": 1e11, "beta_inter": 2.5e10,
           "sample_rate": {"nodewise": 2e8}, "gather_rate": 1e12, "memory_per_rank": 40e9}


@pytest.fixture(scope="module")
def workload():
    graph = spsample.rmat(12, seed=3)
    w = Workload.measure(graph, spsample.NodeWise([10, 5]), name="nodewise", batch_size=64,
                         minibatches=8, feature_dim=64)
    return w


def machine(**changes):
    return Machine(**{**MACHINE, **changes})


def test_workload_counts_are_consistent(workload):
    assert workload.edges <= 64 * 10 + 64 * 10 * 5
    assert 64 <= workload.rows <= workload.unique
    rows, entries, unique = workload.per_bulk(1)
    assert rows == pytest.approx(workload.rows) and unique == pytest.approx(workload.unique)
    for k in (2, 4, 8):                      # a bulk fetches a repeated row or vertex once
        assert workload.per_bulk(k)[0] <= workload.per_bulk(k // 2)[0] + 1e-9
        assert workload.per_bulk(k)[2] <= workload.per_bulk(k // 2)[2] + 1e-9
    assert workload.per_bulk(64) == workload.per_bulk(8)


def test_bytes_vanish_at_full_replication_and_fall_with_c(workload):
    p = 16
    for strategy in ("push", "pull"):
        sent = [sampling_bytes(workload, p, c, 4, strategy) for c in (1, 2, 4, 8, 16)]
        assert sent[-1] == 0 and all(a > b for a, b in zip(sent, sent[1:]))
    assert feature_bytes(workload, p, p, 4) == 0
    assert sampling_bytes(workload, p, 1, 4, "push") < sampling_bytes(workload, p, 1, 4, "pull")


def test_memory_counts_block_shard_and_bulk(workload):
    n, nnz, f = workload.num_nodes, workload.num_edges, workload.feature_dim
    whole = 8.0 * (n + 1) + 8.0 * nnz + 4.0 * n * f
    assert memory_per_rank(workload, 8, 8, 1) > whole
    replicated = memory_per_rank(workload, 8, 8, 1)
    assert memory_per_rank(workload, 8, 1, 1) < whole / 8 + replicated - whole + 1


def test_plan_replicates_everything_when_it_fits(workload):
    result = plan(workload, machine(), 8)
    best = result["best"]
    assert best["c"] == 8 and best["sampling_bytes"] == best["feature_bytes"] == 0
    assert "fit on every rank" in result["why"][0]


def large(workload):
    """The measured minibatch on a graph whose block and shard dominate the memory."""
    return workload.scaled(1.0, num_nodes=10**8, num_edges=2 * 10**9)


def test_plan_takes_the_largest_replication_that_fits(workload):
    p, w = 8, large(workload)
    need = {c: memory_per_rank(w, p, c, 1) for c in (1, 2, 4, 8)}
    result = plan(w, machine(), p, memory=(need[2] + need[4]) / 2)
    assert result["best"]["c"] == 2
    assert all(r["memory_bytes"] <= (need[2] + need[4]) / 2 for r in result["candidates"])
    assert result["best"]["strategy"] == "push"
    assert any("does not fit" in line for line in result["why"])
    times = [r["epoch_s"] for r in result["candidates"]]
    assert times == sorted(times)


def test_plan_prefers_larger_bulks_when_latency_dominates(workload):
    w = large(workload)
    fits = memory_per_rank(w, 8, 4, 32)
    fast, slow = (plan(w, machine(alpha_s=a), 8, memory=fits) for a in (1e-9, 1e-1))
    assert slow["best"]["c"] == 4 and slow["best"]["k"] == 32
    assert slow["best"]["k"] >= fast["best"]["k"]


def test_plan_refuses_memory_that_holds_nothing(workload):
    with pytest.raises(ArgumentError, match="'memory'"):
        plan(workload, machine(), 8, memory=1e3)


def test_predict_checks_the_grid(workload):
    with pytest.raises(ArgumentError, match="'replication'"):
        predict(workload, machine(), 8, 3, 1)
    with pytest.raises(ArgumentError, match="'ranks'"):
        plan(workload, machine(), 0)


def test_shipped_machine_file_loads():
    from spsample.cli._plan import MACHINES
    m = Machine.load(MACHINES / "perlmutter.json")
    assert m.ranks_per_node == 4 and not m.measured and m.sample_rate["nodewise"] > 0


@pytest.mark.parametrize("name, evidence", [
    ("h200-host-16core.json", "machine.json"),
    ("h200-host-16core-fitted.json", "machine_fitted.json")])
def test_committed_measured_machine_files_load(name, evidence):
    """experiments/machines holds the 16-core calibration of the device run of 2026-11-27:
    it loads, says measured, and is the run's own file but for its name (the docs quote it)."""
    root = Path(__file__).resolve().parents[1] / "experiments"
    m = Machine.load(root / "machines" / name)
    assert m.measured and m.cores_per_node == 16 and m.ranks_per_node == 16
    ours = json.loads((root / "machines" / name).read_text())
    run = json.loads((root / "device_runs" / "2026-11-27-h200" / "run1_full" / "scaling"
                      / evidence).read_text())
    assert {k: v for k, v in ours.items() if k != "name"} == \
        {k: v for k, v in run.items() if k != "name"}


@pytest.mark.parametrize("change, field", [({"alpha_s": -1}, "alpha_s"),
                                           ({"beta_inter": "fast"}, "beta_inter"),
                                           ({"sample_rate": {"labor": 1e8}}, "sample_rate"),
                                           ({"memory_per_rank": float("nan")}, "memory_per_rank"),
                                           ({"hop_overhead_s": -0.1}, "hop_overhead_s"),
                                           ({"distributed_factor": 0}, "distributed_factor")])
def test_bad_machine_files_name_the_field(tmp_path, change, field):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**MACHINE, **change}).replace("NaN", "NaN"))
    with pytest.raises(ArgumentError, match=f"'{field}"):
        Machine.load(path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ArgumentError, match="not a readable JSON"):
        Machine.load(tmp_path / "bad.json")


def test_cli_recommends_and_writes_json(tmp_path, capsys):
    out = tmp_path / "plan.json"
    code = main(["plan", "--nodes", "100000", "--edges", "2000000", "--features", "64",
                 "--ranks", "8", "--memory-per-rank", "0.05", "--fanouts", "10,5",
                 "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    best = json.loads(out.read_text())["best"]
    flags = f"--replication {best['c']} --bulk-size {best['k']} --strategy {best['strategy']}"
    assert flags in text
    assert best["memory_bytes"] <= 0.05e9 and "assumed numbers" in text
    assert "a model" in text


@pytest.mark.parametrize("argv, flag", [
    (["--ranks", "0"], "--ranks"),
    (["--memory-per-rank", "-1"], "--memory-per-rank"),
    (["--machine", "nowhere"], "--machine"),
    (["--fanouts", "10,x"], "--fanouts"),
    (["--train-fraction", "2"], "--train-fraction"),
    (["--json", "/no/such/dir/p.json"], "--json"),
])
def test_cli_errors_name_the_flag(capsys, argv, flag):
    base = {"--nodes": "1000", "--edges": "10000", "--ranks": "4"}
    for key, value in zip(argv[::2], argv[1::2]):
        base[key] = value
    code = main(["plan"] + [x for kv in base.items() for x in kv])
    err = capsys.readouterr().err
    assert code == 2 and f"'{flag}'" in err and len(err.splitlines()) == 1, err


def test_cli_refuses_memory_that_holds_nothing(capsys):
    code = main(["plan", "--nodes", "100000", "--edges", "2000000", "--ranks", "4",
                 "--memory-per-rank", "0.000001"])
    err = capsys.readouterr().err
    assert code == 2 and "'--memory-per-rank'" in err


# ---- bulk size by the last-level cache (issue 28) ------------------------------------------
def test_plan_shrinks_the_bulk_to_the_cache_only_when_beyond_it_is_slower(workload):
    """Injected caches: a machine whose fetch runs 4x slower beyond a cache that holds a bulk of
    4 takes a smaller bulk than the same machine without the cache term (F = 1, or no LLC
    known, or an LLC that holds every bulk), and says why."""
    from spsample.distributed._plan import bulk_working_set, cache_factor
    w = large(workload)
    fits = memory_per_rank(w, 8, 4, 32)
    base = dict(alpha_s=1e-4, gather_rate=1e9)
    llc = bulk_working_set(w, 4) * 1.01
    plain = plan(w, machine(**base), 8, memory=fits)["best"]["k"]
    assert plain == 32
    for same in (dict(llc_bytes=llc, beyond_cache_factor=1.0), dict(llc_bytes=0.0,
                 beyond_cache_factor=4.0), dict(llc_bytes=1e15, beyond_cache_factor=4.0)):
        assert plan(w, machine(**base, **same), 8, memory=fits)["best"]["k"] == plain, same
    cached = plan(w, machine(**base, llc_bytes=llc, beyond_cache_factor=4.0), 8, memory=fits)
    assert cached["best"]["k"] < plain
    assert any("last-level cache" in line for line in cached["why"])
    m = machine(llc_bytes=llc, beyond_cache_factor=4.0)
    assert cache_factor(m, llc) == 1.0 and cache_factor(m, 2 * llc) == pytest.approx(2.5)
    assert cache_factor(m, 1e30) == pytest.approx(4.0)


def _cache_dir(root, levels):
    for i, (level, kind, size) in enumerate(levels):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return root


def test_host_llc_bytes_reads_sysfs_and_falls_back(tmp_path, monkeypatch):
    from spsample.distributed import _plan
    sysfs = _cache_dir(tmp_path / "a", [(1, "Data", "48K"), (1, "Instruction", "32K"),
                                        (2, "Unified", "1024K"), (3, "Unified", "32768K")])
    assert _plan.host_llc_bytes(sysfs) == 32 << 20
    two = _cache_dir(tmp_path / "b", [(1, "Data", "32K"), (2, "Unified", "2M"),
                                      (3, "Instruction", "64M")])       # not a data cache
    assert _plan.host_llc_bytes(two) == 2 << 20
    broken = _cache_dir(tmp_path / "c", [(3, "Unified", "lots")])
    monkeypatch.setattr(os, "sysconf",
                        lambda name: 8 << 20 if name == "SC_LEVEL3_CACHE_SIZE" else 0)
    assert _plan.host_llc_bytes(broken) == 8 << 20
    assert _plan.host_llc_bytes(tmp_path / "missing") == 8 << 20

    def nothing(name):
        raise ValueError(name)
    monkeypatch.setattr(os, "sysconf", nothing)
    assert _plan.host_llc_bytes(tmp_path / "missing") is None


def test_machine_file_cache_fields(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**MACHINE, "llc_bytes": "host", "beyond_cache_factor": 2.0}))
    from spsample.distributed._plan import host_llc_bytes
    assert Machine.load(path).llc_bytes == (host_llc_bytes() or 0.0)
    for bad in ({"beyond_cache_factor": 0.5}, {"llc_bytes": -1}, {"llc_bytes": "lots"}):
        path.write_text(json.dumps({**MACHINE, **bad}))
        with pytest.raises(ArgumentError, match=repr(next(iter(bad)))):
            Machine.load(path)
