"""Hostile arguments at the API and engine surfaces (issue 27): thread counts, memory sizes,
value transforms, feature ids, on-disk graphs without edges, the planner, ``--device`` and the
samplers ``spsample sample`` reaches. Each gives a typed error naming the argument, or the
right answer, never a crash, a hang or a silently wrong sample.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import spsample
from spsample.io import _disk_sampling
from spsample import native as _native, _validate
from spsample import primitives as prim
from spsample._errors import ArgumentError, ArgumentTypeError, SamplerError
from spsample.engine._native_run import sample_rows as native_sample_rows
from spsample.native import max_threads, threads_from_env
from spsample.cli import main

import crafted

needs_native = pytest.mark.skipif(not _native.AVAILABLE,
                                  reason=f"native kernels not built: {_native.IMPORT_ERROR}")


def run(argv, timeout=300, **env):
    """``python -m spsample ARGV`` in a child (a crash there fails the test, not the run)."""
    return subprocess.run([sys.executable, "-m", "spsample", *argv], capture_output=True,
                          text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(crafted.REPO), **env))


def one_error_line(proc, *names):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for name in names:
        assert name in lines[0], lines[0]


# ------------------------------------------------------------------ 1. thread counts
@pytest.mark.parametrize("text", ["100000", "32768", "99999999999999999999"])
def test_spsample_threads_beyond_the_ceiling_is_a_typed_error(text):
    with pytest.raises(ArgumentError, match="SPSAMPLE_THREADS must be at most"):
        threads_from_env({"SPSAMPLE_THREADS": text})


def test_the_ceiling_itself_is_accepted():
    top = max_threads()
    assert top >= 256 and top >= os.cpu_count()
    assert threads_from_env({"SPSAMPLE_THREADS": str(top)}) == top
    with pytest.raises(ArgumentError, match="SPSAMPLE_THREADS"):
        threads_from_env({"SPSAMPLE_THREADS": str(top + 1)})


@pytest.mark.parametrize("text", ["100000", "99999999999999999999"])
def test_the_command_line_refuses_huge_spsample_threads(text):
    # before: 100000 ended the process with a segmentation fault, 32768 with libgomp's abort,
    # 99999999999999999999 with a TypeError traceback from the kernels
    proc = run(["sample", "rmat:6", "--batch-size", "16"], SPSAMPLE_THREADS=text)
    one_error_line(proc, "SPSAMPLE_THREADS")


def test_set_num_threads_is_bounded_and_typed():
    with pytest.raises(ArgumentError, match="'n' must be at most"):
        _native.set_num_threads(100000)
    with pytest.raises(ArgumentError, match="'n'"):
        _native.set_num_threads(2**40)
    with pytest.raises(ArgumentTypeError, match="'n'"):
        _native.set_num_threads(2.5)
    previous = _native.set_num_threads(max_threads())
    assert _native.set_num_threads(previous) == max_threads()


@pytest.mark.parametrize("flag", ["--sampler-threads", "--threads"])
def test_thread_flags_are_bounded(flag):
    proc = run(["train", flag, "100000", "--epochs", "1"])      # an argparse usage error
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    last = proc.stderr.strip().splitlines()[-1]
    assert f"argument {flag}: expected 'auto' or an integer in [1, {max_threads()}]" in last


def test_trainer_and_thread_plans_bound_thread_counts():
    pytest.importorskip("torch")
    from spsample.loader import plan_threads
    from spsample.train import TrainConfig

    for name in ("threads", "sampler_threads"):
        with pytest.raises(ArgumentError, match=f"'{name}' must be at most"):
            TrainConfig(**{name: 10**6})
    with pytest.raises(ArgumentError, match="'sampler_threads'"):
        plan_threads(cores=2, sampler_threads=10**6)
    with pytest.raises(ArgumentError, match="'model_threads'"):
        plan_threads(cores=2, model_threads=10**6)


def test_pool_limit_takes_integers_only():
    with pytest.raises(ArgumentTypeError, match="'nbytes'"):
        _native.set_pool_limit(float("inf"))
    previous = _native.set_pool_limit(2**80)            # beyond int64: the largest limit
    _native.set_pool_limit(previous)


# ------------------------------------------------------------------ 2. memory sizes
BAD_SIZES = ["infGB", "inf", "nan", "-1G", "-5", "0", "5X", "GB", "1e30GB", "", " "]


@pytest.mark.parametrize("budget", BAD_SIZES + [2**63, 2**100])
def test_bad_memory_budgets_are_typed_errors(budget):
    with pytest.raises(ArgumentError, match="'memory_budget'"):
        spsample.load(spsample.io.embedded_path("cora"), mmap=True, memory_budget=budget)


@pytest.mark.parametrize("text", [t for t in BAD_SIZES if t.strip()])
def test_bad_memory_limit_variable_is_a_typed_error(monkeypatch, text):
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", text)
    with pytest.raises(ArgumentError, match="SPSAMPLE_MEMORY_LIMIT must be a size"):
        _validate.memory_limit()


@pytest.mark.parametrize("text, nbytes", [("2G", 2 << 30), ("512MiB", 512 << 20),
                                          ("1048576", 1 << 20), ("1.5K", 1536), ("3 GB", 3 << 30),
                                          ("7t", 7 << 40)])
def test_sizes_parse(monkeypatch, text, nbytes):
    assert _validate.parse_size("f", "size", text) == nbytes
    monkeypatch.setenv("SPSAMPLE_MEMORY_LIMIT", text)
    assert _validate.memory_limit() <= nbytes


def test_the_command_line_refuses_a_bad_memory_limit():
    proc = run(["sample", "cora", "--batch-size", "64"], SPSAMPLE_MEMORY_LIMIT="infGB")
    one_error_line(proc, "SPSAMPLE_MEMORY_LIMIT")


@pytest.mark.parametrize("budget", ["infGB", "1e30G", "nan"])
def test_convert_memory_budget_is_checked(budget, tmp_path, capsys):
    src = tmp_path / "e.txt"
    src.write_text("0 1\n1 2\n")
    code = main(["convert", str(src), str(tmp_path / "g.h5"), "--memory-budget", budget])
    err = capsys.readouterr().err
    assert code == 2 and "'--memory-budget' must be a size" in err, err


def test_a_huge_budget_samples_as_the_default_does():
    path = spsample.io.embedded_path("cora")
    seeds = np.arange(64)
    a = spsample.sample(spsample.load(path, mmap=True, memory_budget=2**63 - 1).graph, seeds,
                        sampler=spsample.NodeWise([5, 5]), batch_size=16)
    b = spsample.sample(spsample.load(path).graph, seeds, sampler=spsample.NodeWise([5, 5]),
                        batch_size=16)
    assert all(x.equals(y) for x, y in zip(a, b))


# ------------------------------------------------------------------ 3. value transforms
def _weighted(scale=1.0):
    g = spsample.rmat(7, seed=3)
    w = np.random.default_rng(0).integers(1, 50, g.num_edges).astype(np.float64) * scale
    return spsample.Graph.from_csr(g.indptr, g.indices, weights=w)


class Scaled(spsample.NodeWise):
    """Node-wise, weighted by ``values(P)`` (a user's composition)."""

    def __init__(self, fanouts, values):
        super().__init__(fanouts, weighted=True)
        self.values = values

    def probabilities(self, graph, Q, ctx):
        return self.values(prim.gather(graph, Q).with_weights())


class ScaledLADIES(spsample.LADIES):
    def __init__(self, fanouts, values):
        super().__init__(fanouts)
        self.values = values

    def probabilities(self, graph, Q, ctx):
        return prim.column_sums(self.values(prim.gather(graph, Q).with_weights()), ctx)


NEGATIVE = {"times -2": lambda P: P * -2.0, "-2 times": lambda P: -2.0 * P,
            "negated": lambda P: -P, "times a negative sum": lambda P: P * (1 - 3.0),
            "negative, squared times -1": lambda P: P.square() * -1}


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("values", list(NEGATIVE), ids=list(NEGATIVE))
def test_values_that_are_all_negative_are_refused(values, native):
    # before: accepted, and the weighted selection sampled nothing
    g = _weighted()
    previous = _native.enabled()
    _native.set_enabled(native and _native.AVAILABLE)
    try:
        for sampler, name in ((Scaled([3], NEGATIVE[values]), "'P'"),
                              (ScaledLADIES([8], NEGATIVE[values]), "'view'")):
            with pytest.raises(SamplerError, match=f"{name} has values <= 0 on every entry"):
                spsample.sample(g, np.arange(16), sampler=sampler, batch_size=8)
    finally:
        _native.set_enabled(previous)


def test_values_of_either_sign_and_node2vec_still_sample():
    g = _weighted()
    seeds = np.arange(16)
    fine = {"2 - weight": lambda P: P * (2 - P), "squared": lambda P: (-P).square(),
            "(-1)(-1)": lambda P: (P * -1.0) * -1.0}
    for values in fine.values():
        assert len(spsample.sample(g, seeds, sampler=Scaled([3], values), batch_size=8)) == 2
    walks = spsample.sample(g, seeds, sampler=spsample.RandomWalk(3, p=0.5, q=0.25),
                            batch_size=8)
    assert all(sum(mb.num_sampled_edges) > 0 for mb in walks)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_scalars_are_refused(bad):
    g = _weighted()
    for values in (lambda P: P * bad, lambda P: P + bad, lambda P: P * (P + bad)):
        with pytest.raises(ArgumentError, match="'value' must be finite"):
            spsample.sample(g, np.arange(8), sampler=Scaled([3], values), batch_size=8)


@pytest.mark.parametrize("transform", ["scale_columns", "scale_rows", "scale_edges"])
@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_vectors_are_refused(transform, bad):
    g = _weighted()
    size = g.num_edges if transform == "scale_edges" else g.num_nodes
    vec = np.ones(size)
    vec[size // 2] = bad
    values = (lambda P: getattr(P, transform)(vec))
    with pytest.raises(ArgumentError, match="finite values >= 0"):
        spsample.sample(g, np.arange(8), sampler=Scaled([3], values), batch_size=8)


class Global(spsample.FastGCN):
    def __init__(self, fanouts, q, cumulative=None):
        super().__init__(fanouts)
        self.q, self.cumulative = q, cumulative

    def probabilities(self, graph, Q, ctx):
        return prim.global_columns(self.q, self.cumulative)


def test_global_column_weights_are_checked():
    g = _weighted()
    n = g.num_nodes
    bad = {"negative": (np.r_[-1.0, np.ones(n - 1)], None, "'q' must hold finite"),
           "nan": (np.r_[np.nan, np.ones(n - 1)], None, "'q' must hold finite"),
           "overflowing sum": (np.full(n, 1e308), None, "'q' must have a finite sum"),
           "short": (np.ones(n - 1), None, "'P' must weigh the graph's"),
           "2-D": (np.ones((n, 1)), None, "'q' must be 1-dimensional"),
           "decreasing": (np.ones(n), np.arange(n, 0, -1.0), "'cumulative' must be finite")}
    for q, cumulative, message in bad.values():
        with pytest.raises(ArgumentError, match=message):
            spsample.sample(g, np.arange(8), sampler=Global([4], q, cumulative), batch_size=8)
    q = np.arange(n, dtype=np.float64)
    a = spsample.sample(g, np.arange(8), sampler=Global([4], q), batch_size=8)
    b = spsample.sample(g, np.arange(8), sampler=Global([4], q, np.cumsum(q)), batch_size=8)
    assert all(x.equals(y) for x, y in zip(a, b))


def _all_ways(g, tmp_path, sampler, seeds, batch_size, monkeypatch):
    """The bulks of ``g`` in memory (native and NumPy) and on disk (every layout and access)."""
    previous = _native.enabled()
    out = {}
    try:
        for native in ([True, False] if _native.AVAILABLE else [False]):
            _native.set_enabled(native)
            out[f"memory native={native}"] = spsample.sample(g, seeds, sampler=sampler,
                                                            batch_size=batch_size)
            for layout in ("chunked", "contiguous"):
                path = tmp_path / f"{layout}.h5"
                if not path.exists():
                    spsample.save(spsample.Dataset(g), path, layout=layout)
                for mapped in (True, False):
                    monkeypatch.setattr(_disk_sampling, "_MAP", mapped)
                    with spsample.load(path, mmap=True, memory_budget="1MB").graph as dg:
                        out[f"{layout} mapped={mapped} native={native}"] = spsample.sample(
                            dg, seeds, sampler=sampler, batch_size=batch_size)
    finally:
        _native.set_enabled(previous)
    return out


def _same(a, b):
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


@pytest.mark.parametrize("sampler", [spsample.FastGCN([16, 16]), spsample.LADIES([16, 16])],
                         ids=["fastgcn", "ladies"])
def test_subnormal_weights_sample_as_their_integer_multiples(sampler, tmp_path, monkeypatch):
    # before: FastGCN drew 0-1 vertices per layer from weights k * 2**-1074 (the scale 2**1073
    # overflowed), and the graph on disk gave other vertices than the graph in memory
    seeds = np.arange(64)
    integers = _weighted()
    subnormal = spsample.Graph.from_csr(integers.indptr, integers.indices,
                                        weights=integers.weights * 5e-324)
    assert np.all(subnormal.weights < 2.0**-1022) and np.all(subnormal.weights > 0)
    expected = spsample.sample(integers, seeds, sampler=sampler, batch_size=16)
    assert all(min(mb.num_sampled_nodes[1:]) > 4 for mb in expected)   # not 0 or 1
    for way, bulk in _all_ways(subnormal, tmp_path, sampler, seeds, 16, monkeypatch).items():
        assert _same(bulk, expected), way


# ------------------------------------------------------------------ 4. feature ids
def _sources(tmp_path):
    import h5py
    import scipy.sparse as sp

    from spsample.loader import CachedFeatures, PartitionedFeatures
    from spsample.loader._features import ArrayFeatures, HDF5Features
    from spsample.loader._sparse import SparseFeatures

    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as fh:
        fh["features"] = x
    return x, {"CachedFeatures": CachedFeatures(x, 16, np.arange(10)),
               "CachedFeatures over a file": CachedFeatures(str(path), 16, np.arange(10)),
               "ArrayFeatures": ArrayFeatures(x), "HDF5Features": HDF5Features(str(path)),
               "HDF5Features uncached": HDF5Features(str(path), cache=False),
               "SparseFeatures": SparseFeatures(sp.csr_matrix(x)),
               "PartitionedFeatures": PartitionedFeatures(str(path), 3, 1)}


def _dense(rows):
    return np.asarray(rows.todense() if hasattr(rows, "todense") else rows)


def test_feature_sources_refuse_ids_out_of_range_and_non_integers(tmp_path):
    pytest.importorskip("torch")
    x, sources = _sources(tmp_path)
    for name, source in sources.items():
        # before: CachedFeatures.fetch([-1]) and HDF5Features.fetch([-1]) gave the last row
        for bad in ([-1], [10], [3, -2], [2**40]):
            with pytest.raises(ArgumentError, match="'n_id' has a value"):
                source.fetch(bad)
        for bad in ([0.5], np.array([1.0]), ["1"], [True]):
            with pytest.raises(ArgumentTypeError, match="'n_id' must hold integers"):
                source.fetch(bad)
        with pytest.raises(ArgumentError, match="'n_id' must be 1-dimensional"):
            source.fetch([[1]])
        with pytest.raises(ArgumentError, match="'n_ids' has a value"):
            source.fetch_bulk([np.array([1]), np.array([-1])])
        assert np.array_equal(_dense(source.fetch(np.array([3, 1, 3], dtype=np.int32))),
                              x[[3, 1, 3]]), name
        got = source.fetch_bulk([np.array([9, 0]), np.array([0])])
        assert np.array_equal(_dense(got[0]), x[[9, 0]]) and np.array_equal(_dense(got[1]),
                                                                            x[[0]]), name
        source.close()


# ------------------------------------------------------------------ 5. graphs on disk
SAMPLERS = {"nodewise": lambda: spsample.NodeWise([2, 2]),
            "weighted": lambda: spsample.NodeWise([2, 2], weighted=True),
            "labor": lambda: spsample.LABOR([2, 2]), "ladies": lambda: spsample.LADIES([3, 3]),
            "fastgcn": lambda: spsample.FastGCN([3]), "walk": lambda: spsample.RandomWalk(3),
            "node2vec": lambda: spsample.RandomWalk(3, p=0.5, q=2.0)}


@pytest.mark.parametrize("edges", ["no edges", "isolated seeds"])
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_disk_graphs_without_edges_sample_as_in_memory(name, edges, tmp_path, monkeypatch):
    # before: IndexError on the default (chunked) file, and on any file with no edges
    src, dst = ([], []) if edges == "no edges" else ([1, 2, 0], [0, 0, 1])
    g = spsample.Graph.from_edge_index(src, dst, num_nodes=12)
    g = spsample.Graph.from_csr(g.indptr, g.indices, weights=np.ones(g.num_edges))
    seeds = np.arange(3, 12)                       # no edge reaches them: every hop is empty
    expected = spsample.sample(g, seeds, sampler=SAMPLERS[name](), batch_size=4)
    for way, bulk in _all_ways(g, tmp_path, SAMPLERS[name](), seeds, 4, monkeypatch).items():
        assert _same(bulk, expected), way


# ------------------------------------------------------------------ 6. the planner
def test_plan_json_into_a_directory_is_a_typed_error(tmp_path, capsys):
    code = main(["plan", "--nodes", "1000", "--edges", "10000", "--ranks", "4",
                 "--json", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "'--json'" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("ranks", [10**10, 2**24 + 1])
def test_plan_bounds_the_ranks(ranks, capsys):
    code = main(["plan", "--nodes", "1000", "--edges", "10000", "--ranks", str(ranks)])
    err = capsys.readouterr().err
    assert code == 2 and "'--ranks' must be at most" in err, err
    from spsample.cli._plan import _machine_path
    from spsample.distributed._plan import Machine, plan

    m = Machine.load(_machine_path("perlmutter"))
    with pytest.raises(ArgumentError, match="'ranks' must be at most"):
        plan(None, m, ranks)


def test_plan_enumerates_divisors_quickly():
    from spsample.distributed._plan import divisors

    for p in (1, 2, 12, 97, 360, 1024, 9973 * 2):
        assert divisors(p) == [d for d in range(1, p + 1) if p % d == 0]
    assert len(divisors(2**24)) == 25 and divisors(2**24)[-1] == 2**24


def test_plan_never_builds_the_graph_it_plans_for(monkeypatch):
    # before: --edges 10**13 made the R-MAT stand-in draw 6.5e11 edges (a 4.8 TiB array)
    from spsample.graph import _generate
    from spsample.distributed._plan import STANDIN_EDGES, Workload

    built = []
    real = _generate.rmat

    def rmat(scale, edge_factor=16, **kw):
        built.append(edge_factor << scale)
        assert edge_factor << scale <= STANDIN_EDGES, "the stand-in is the target's size"
        return real(scale, edge_factor, **kw)

    monkeypatch.setattr(_generate, "rmat", rmat)
    w = Workload.like(10**9, 10**13, sampler="ladies", fanouts=(64,), batch_size=256)
    assert built and w.num_edges == 10**13
    assert w.extra["standin_degree"] < 100
    assert w.row_degree > 10 * w.extra["standin_degree"]     # scaled to the target's rows
    light = Workload.like(2**12, 2**12 * 8, fanouts=(5,), batch_size=64)
    assert light.extra["standin_degree"] > 4 and light.extra["row_degree_scale"] == 1.0


# ------------------------------------------------------------------ model widths
@pytest.mark.parametrize("hidden", [10**20, 10**9])
def test_model_widths_beyond_memory_are_typed_errors(hidden, capsys):
    """``--hidden 99999999999999999999`` ended in torch's untyped TypeError (an overflow while
    allocating the weights), a large width in its allocator's RuntimeError."""
    pytest.importorskip("torch")
    from spsample._errors import ResourceLimitError
    from spsample.train import GCN, GraphSAGE
    from spsample.train.hetero import HeteroSAGE
    from spsample.testing import heterogeneous
    for make in (lambda: GraphSAGE(1433, hidden, 7), lambda: GCN(16, hidden, 3),
                 lambda: HeteroSAGE(heterogeneous(0), {}, hidden, 3)):
        with pytest.raises(ResourceLimitError, match="'hidden_channels' would need"):
            make()
    with pytest.raises(ResourceLimitError, match="'in_channels' would need"):
        GraphSAGE(hidden, 8, 7, num_layers=1)
    assert main(["train", "--epochs", "1", "--hidden", str(hidden)]) == 2
    err = capsys.readouterr().err
    # the command line names its flag (test_cli_errors: the too-wide model names --hidden)
    assert len(err.splitlines()) == 1 and "'--hidden' would need" in err, err


# ------------------------------------------------------------------ 7. --device
def test_meta_device_is_refused():
    pytest.importorskip("torch")
    from spsample.train import TrainConfig

    with pytest.raises(ArgumentError, match="Loader: argument 'device' holds no data"):
        spsample.Loader(spsample.rmat(6), sampler=spsample.NodeWise([2]), batch_size=8,
                        device="meta")
    with pytest.raises(ArgumentError, match="LinkLoader: argument 'device'"):
        spsample.LinkLoader(spsample.rmat(6), sampler=spsample.NodeWise([2]), batch_size=8,
                            features=np.zeros((64, 2), dtype=np.float32), device="meta")
    with pytest.raises(ArgumentError, match="TrainConfig: argument 'device' holds no data"):
        TrainConfig(device="meta")


def test_train_names_the_device_flag(capsys):
    pytest.importorskip("torch")
    # before: a RuntimeError traceback from pin_memory in the loader's background thread
    code = main(["train", "--device", "meta", "--epochs", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "'--device'" in err and len(err.splitlines()) == 1, err


def test_cpu_only_tasks_refuse_another_device(capsys, monkeypatch):
    pytest.importorskip("torch")
    from spsample.loader import _loader
    from spsample.train import _trainer

    # every device "exists" (TrainConfig checks it with the loader's resolve_device)
    for module in (_loader, _trainer):
        monkeypatch.setattr(module, "resolve_device", lambda device, where="": device)
    code = main(["train", "--task", "link", "--device", "cuda:0", "--epochs", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "'--device' must be cpu with --task link" in err, err


# ------------------------------------------------------------------ 8. spsample sample
def test_every_built_in_sampler_is_reachable_from_spsample_sample(tmp_path):
    from spsample.cli import _sample as _cli_sample
    from spsample.samplers import Sampler

    built_in = {name for name in spsample.samplers.__all__
                if isinstance(getattr(spsample.samplers, name), type)
                and issubclass(getattr(spsample.samplers, name), Sampler)
                and getattr(spsample.samplers, name) is not Sampler}
    reached = set()
    for name in _cli_sample.SAMPLERS:
        args = type("Args", (), dict(sampler=name, fanouts=None, walk_length=None, p=None,
                                     q=None))
        reached.add(type(_cli_sample._make_sampler(args)).__name__)
    assert reached == built_in
    for argv, fanouts in ((["--sampler", "labor"], [15, 10, 5]),
                          (["--sampler", "randomwalk", "--walk-length", "3", "--p", "0.5",
                            "--q", "2"], [1, 1, 1])):
        out = tmp_path / "s.json"
        assert main(["sample", "cora", "--batch-size", "64", "--max-batches", "2",
                     "--json", str(out), *argv]) == 0
        stats = json.loads(out.read_text())
        assert stats["sampler"] == argv[1] and stats["fanouts"] == fanouts
        assert stats["sampled_edges"] > 0


@pytest.mark.parametrize("argv, flag", [
    (["--sampler", "randomwalk", "--walk-length", "0"], "--walk-length"),
    (["--sampler", "randomwalk", "--q", "nan"], "--q"),
    (["--sampler", "randomwalk", "--p", "-1"], "--p"),
    (["--sampler", "randomwalk", "--fanouts", "3"], "--fanouts"),
    (["--walk-length", "3"], "--walk-length"),
])
def test_walk_flags_are_checked(argv, flag, capsys):
    code = main(["sample", "cora", *argv])
    err = capsys.readouterr().err
    assert code == 2 and f"'{flag}'" in err and len(err.splitlines()) == 1, err


# ------------------------------------------------------------------ 9. the same elsewhere
def test_frontiers_from_arrays_are_checked():
    g = spsample.rmat(5, seed=1)
    with pytest.raises(ArgumentError, match="'vertex' must be vertex ids >= 0"):
        prim.Frontier([0], [-1])
    with pytest.raises(ArgumentTypeError, match="'batch' must hold integers"):
        prim.Frontier([0.5], [1])
    with pytest.raises(ArgumentError, match="'vertex' must have one entry per row"):
        prim.Frontier([0, 0], [1])
    with pytest.raises(ArgumentError, match="'batch' must be non-decreasing"):
        prim.Frontier([1, 0], [1, 2])
    with pytest.raises(ArgumentError, match="'Q' selects a vertex >= num_nodes"):
        prim.gather(g, prim.Frontier([0], [g.num_nodes]))
    P = prim.gather(g, prim.Frontier([0, 1], [3, 4]))
    assert np.array_equal(P.indices, np.r_[g.indices[g.indptr[3]:g.indptr[4]],
                                           g.indices[g.indptr[4]:g.indptr[5]]])


def test_disk_graph_reads_are_checked(tmp_path):
    g = spsample.rmat(6, seed=1)
    path = tmp_path / "g.h5"
    spsample.save(spsample.Dataset(g), path, layout="contiguous")
    with spsample.load(path, mmap=True).graph as dg:
        for bad, error in (([-1], ArgumentError), ([g.num_nodes], ArgumentError),
                           ([3, 1], ArgumentError), ([1.5], ArgumentTypeError)):
            with pytest.raises(error, match="DiskGraph.read_rows: argument 'rows'"):
                dg.read_rows(bad)
        for start, stop in ((-5, 3), (10, 3), (0, g.num_edges + 1)):
            with pytest.raises(ArgumentError, match="DiskGraph.read_entries"):
                dg.read_entries(start, stop)
        assert np.array_equal(dg.read_entries(2, 9)["indices"], g.indices[2:9])
        if dg.direct:
            indptr, idx, _ = dg.read_rows([1, 4])
            assert np.array_equal(idx, np.r_[g.indices[g.indptr[1]:g.indptr[2]],
                                             g.indices[g.indptr[4]:g.indptr[5]]])


def test_row_gathers_refuse_negative_ids():
    g = spsample.rmat(4, seed=1)
    with pytest.raises(ArgumentError, match="row_select: argument 'rows' has a value below 0"):
        prim.row_select(g.indptr, g.indices, None, [-1])       # before: the last row
    with pytest.raises(ArgumentError, match="'rows' has a value >= 16"):
        prim.row_select(g.indptr, g.indices, None, [20], row_offset=4)
    with pytest.raises(ArgumentTypeError, match="'rows' must hold integers"):
        prim.row_select(g.indptr, g.indices, None, [0.5])
    m = prim.row_select(g.indptr, g.indices, None, [7], row_offset=4)
    assert np.array_equal(m.indices, g.indices[g.indptr[3]:g.indptr[4]])
    with pytest.raises(ArgumentError, match="segment_arange: argument 'counts' must be >= 0"):
        prim.segment_arange([2, -1])


@needs_native
def test_native_row_sampler_checks_what_the_kernels_would_trust():
    base = dict(indptr=[0, 1, 2], indices=[1, 2], weights=None, vertex=[0, 1], batch=[0, 0],
                fanout=1, hop_word=1, key=(1, 2))
    bad = {"indptr": dict(indptr=[0, 5, 2]),
           "weights": dict(weights=[-1.0, np.nan], weighted=True),
           "fanout": dict(fanout=2**40)}
    for name, change in bad.items():
        with pytest.raises(ArgumentError, match=f"argument '{name}'"):
            native_sample_rows(**{**base, **change})
    with pytest.raises(ArgumentTypeError, match="'fanout' must be an integer"):
        native_sample_rows(**{**base, "fanout": 2.5})


def test_hit_rate_curve_checks_its_arrays():
    from spsample.loader import hit_rate_curve

    with pytest.raises(ArgumentError, match="'fractions' must be numbers in"):
        hit_rate_curve([1, 2, 3], [1, 1, 1], [np.nan])
    with pytest.raises(ArgumentError, match="'accesses' must have one count per score"):
        hit_rate_curve([1, 2, 3], [1, 1], [0.5])
    with pytest.raises(ArgumentError, match="'scores' must be finite"):
        hit_rate_curve([1, 2, np.nan], [1, 1, 1], [0.5])
    with pytest.raises(ArgumentError, match="'accesses' must be >= 0"):
        hit_rate_curve([1, 2, 3], [-1, 1, 1], [0.5])
    assert np.allclose(hit_rate_curve([3, 2, 1], [2, 1, 1], [0, 0.34, 1]), [0, 0.5, 1])
