"""The cost model of ``spsample.distributed._plan``: calibrate it on this machine, validate it
against the scaling runs, project it to a 128-GPU cluster.

    # kernel rates (one thread) and the MPI network (alltoallv under mpiexec -n 2..16)
    python experiments/model.py calibrate --out experiments/machines/local.json
    # predicted vs measured time per phase and bytes, for every run of experiments/scaling.py
    python experiments/model.py validate runs/p*.json --machine experiments/machines/local.json
    # epoch time for p = 4..128 on ogbn-products- and ogbn-papers100M-sized graphs
    python experiments/model.py project --machine spsample/data/machines/perlmutter.json \\
        --out runs/projection.json --plot figures/

The projection is a model: its bytes are what spsample sends for such a workload (the byte
formulas are within 5 % of the counted bytes), its times follow the machine file's rates,
which for the GPU cluster are assumptions until ``experiments/gpu/run.py`` measures them.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

# (vertices, entries of the symmetric A, feature width, training seeds) of the OGB graphs
GRAPHS = {
    "ogbn-products": (2_449_029, 123_718_280, 100, 196_615),
    "ogbn-papers100M": (111_059_956, 3_231_371_744, 128, 1_207_179),
}
SAMPLERS = {"nodewise": (15, 10, 5), "labor": (15, 10, 5), "ladies": (512, 512, 512)}


# ----------------------------------------------------------------------------- calibrate
def calibrate(args):
    os.environ["SPSAMPLE_THREADS"] = "1"
    import spsample
    from spsample.distributed._plan import Machine

    graph = spsample.rmat(args.scale, 16, seed=1)
    rates = {name: kernel_rate(graph, name, args.batch_size) for name in SAMPLERS}
    gather = gather_rate(graph.num_nodes)
    net = [network_probe(p) for p in args.ranks]
    alpha, alpha_peer, beta = fit_network(net)
    machine = Machine(
        name=f"{os.uname().nodename} ({os.cpu_count()} cores, MPICH over shared memory)",
        cores_per_node=os.cpu_count(), ranks_per_node=max(args.ranks), alpha_s=alpha,
        alpha_peer_s=alpha_peer, beta_intra=beta, beta_inter=beta, sample_rate=rates,
        gather_rate=gather, memory_per_rank=16e9, measured=True,
        notes=f"calibrated by experiments/model.py on R-MAT {args.scale}, one thread per rank; "
              f"network probe (seconds per alltoallv by ranks and bytes per peer): {net}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(machine.__dict__, indent=1))
    print(json.dumps(machine.__dict__, indent=1))


def kernel_rate(graph, name, batch_size, minibatches=16, repeat=3):
    """Sampled edges per second of one process, one thread (best of ``repeat``); for
    layer-wise samplers, entries of the frontier rows per second (what their selection
    reads, the unit of ``Machine.sample_rate`` for them)."""
    import spsample
    from spsample.distributed._plan import LAYERWISE, Workload
    make = {"nodewise": spsample.NodeWise, "labor": spsample.LABOR, "ladies": spsample.LADIES}
    fanouts = SAMPLERS[name][:2] if name == "ladies" else SAMPLERS[name]
    seeds = np.random.default_rng(0).choice(graph.num_nodes, batch_size * minibatches,
                                            replace=False)
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        bulk = spsample.sample(graph, seeds, sampler=make[name](list(fanouts)),
                               batch_size=batch_size)
        best = min(best, time.perf_counter() - t0)
    if name in LAYERWISE:
        w = Workload.from_bulk(graph, make[name](list(fanouts)), bulk, name=name,
                               batch_size=batch_size)
        return len(bulk) * w.rows * w.row_degree / best
    return bulk.num_edges / best


def gather_rate(n, width=64, rows=200_000, repeat=5):
    """Bytes per second of ``x[ids]`` for random ids (float32 rows of ``width``)."""
    x = np.random.default_rng(0).random((n, width), dtype=np.float32)
    ids = np.random.default_rng(1).integers(0, n, rows)
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        x[ids]
        best = min(best, time.perf_counter() - t0)
    return rows * width * 4 / best


def network_probe(p):
    """Run ``model.py _probe`` under ``mpiexec -n p``: seconds per alltoallv by bytes per peer."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probe.json"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "SPSAMPLE_THREADS": "1"}
        subprocess.run(["mpiexec", "-n", str(p), sys.executable, __file__, "_probe",
                        "--out", str(out)], check=True, env=env, timeout=600)
        return {"p": p, "seconds": json.loads(out.read_text())}


def probe(args):
    from spsample.distributed import world
    comm = world()
    result = {}
    for per_peer in (1, 1024, 16384, 131072):          # int64 words per peer
        counts = np.full(comm.size, per_peer, dtype=np.int64)
        buf = np.zeros(per_peer * comm.size, dtype=np.int64)
        times = []
        for _ in range(20):
            comm.barrier()
            t0 = time.perf_counter()
            comm.alltoallv(buf, counts, recvcounts=counts)
            times.append(time.perf_counter() - t0)
        slowest = comm.allgather_object(float(np.median(times)))
        result[8 * per_peer] = max(slowest)
    if comm.rank == 0:
        Path(args.out).write_text(json.dumps(result))


# Machine.load wants every latency > 0: a probe at one p, or latencies that do not grow with
# p, leave α_peer at this floor (1 ns per peer, nothing next to α's microseconds).
MIN_ALPHA_PEER_S = 1e-9


def fit_network(net):
    """α + (p − 1) α_peer from the smallest messages, β from the largest (bytes a rank sends
    to its p − 1 peers over the time beyond α)."""
    ps = np.array([n["p"] for n in net], dtype=float)
    small = np.array([min(n["seconds"].items(), key=lambda kv: int(kv[0]))[1] for n in net])
    slope, intercept = np.polyfit(ps - 1, small, 1) if len(ps) > 1 else (0.0, small[0])
    betas = []
    for n, a in zip(net, small):
        size, t = max(n["seconds"].items(), key=lambda kv: int(kv[0]))
        betas.append((n["p"] - 1) * int(size) / max(t - a, 1e-9))
    return max(float(intercept), 1e-6), max(float(slope), MIN_ALPHA_PEER_S), float(betas[0])


# ------------------------------------------------------------------------------ validate
def validate(args):
    """Predicted against measured bytes and phase times of every run; with ``--fit-below P``
    the machine's overheads are first fitted to the runs with fewer than P ranks, so the runs
    with P or more ranks test an extrapolation in p."""
    from spsample.distributed._plan import Machine, feature_bytes, predict, sampling_bytes

    machine = Machine.load(args.machine)
    runs = list(runs_of(args.runs))
    if args.fit_below:
        machine = fit_overheads(machine, [r for r in runs if r[2]["p"] < args.fit_below])
        print(f"fitted on the runs with p < {args.fit_below}: distributed_factor "
              f"{machine.distributed_factor:.2f}, hop_overhead_s {machine.hop_overhead_s:.4f}, "
              f"fetch_overhead_s {machine.fetch_overhead_s:.4f}")
        if args.fitted_out:
            Path(args.fitted_out).write_text(json.dumps(machine.__dict__, indent=1))
    rows = []
    for w, cfg, run in runs:
        p, c, k, strategy = run["p"], run["c"], run["k"], run["strategy"]
        pred = predict(w, machine, p, c, k, strategy)
        s = run["summary"]
        rows.append({
            "p": p, "c": c, "k": k, "sampler": run["sampler"], "strategy": strategy,
            "fitted": bool(args.fit_below) and p < args.fit_below,
            "bytes_pred": p * sampling_bytes(w, p, c, k, strategy),
            "bytes_meas": s["sampling_bytes"],
            "feature_bytes_pred": p * feature_bytes(w, p, c, k),
            "feature_bytes_meas": s["feature_bytes"],
            "sample_s_pred": pred["sample_s"], "sample_s_meas": s["sample_s_max"],
            "fetch_s_pred": pred["fetch_s"], "fetch_s_meas": s["fetch_s_max"]})
    print_validation(rows)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


def runs_of(paths):
    """``(workload, config, run)`` for every run of the scaling JSON files."""
    workloads = {}
    for path in paths:
        doc = json.loads(Path(path).read_text())
        cfg = doc["config"]
        for run in doc["runs"]:
            key = (cfg["data"] or cfg.get("scale"), run["sampler"], cfg["batch_size"])
            if key not in workloads:
                workloads[key] = workload_of_run(cfg, run["sampler"])
            yield workloads[key], cfg, run


def fit_overheads(machine, runs):
    """The machine with ``distributed_factor`` and ``hop_overhead_s`` (sampling) and its
    factor and ``fetch_overhead_s`` (fetch) fitted by least squares on relative errors to
    the runs with c < p: measured = factor * work + overhead + latency."""
    from dataclasses import replace

    from spsample.distributed._plan import cost_terms

    a_s, b_s, a_f, b_f = [], [], [], []
    for w, _, run in runs:
        p, c, k = run["p"], run["c"], run["k"]
        if c >= p:
            continue
        t = cost_terms(w, machine, p, c, k, run["strategy"])
        ms, mf = run["summary"]["sample_s_max"], run["summary"]["fetch_s_max"]
        if ms > 0:
            a_s.append([t["sample_work_s"] / ms, w.hops / ms])
            b_s.append(1.0 - t["sample_latency_s"] / ms)
        if mf > 0:
            a_f.append([t["fetch_work_s"] / mf, 1.0 / mf])
            b_f.append(1.0 - t["fetch_latency_s"] / mf)
    (factor, hop), _ = _nonnegative_lstsq(np.array(a_s), np.array(b_s))
    (factor_f, fetch), _ = _nonnegative_lstsq(np.array(a_f), np.array(b_f))
    # one factor for both phases: the sampling one (the kernels dominate there)
    return replace(machine, distributed_factor=max(factor, 1e-3), hop_overhead_s=hop,
                   fetch_overhead_s=fetch,
                   notes=machine.notes + f"; overheads fitted to {len(b_s)} scaling runs "
                   f"(fetch factor alone would be {factor_f:.2f})")


def _nonnegative_lstsq(a, b):
    """argmin |a x - b| with x >= 0 for two unknowns (tries the boundary when needed)."""
    best = None
    candidates = [np.linalg.lstsq(a, b, rcond=None)[0]]
    for j in range(a.shape[1]):
        x = np.zeros(a.shape[1])
        x[j] = max(0.0, float(np.linalg.lstsq(a[:, [j]], b, rcond=None)[0][0]))
        candidates.append(x)
    for x in candidates:
        if np.all(x >= 0):
            err = float(np.sum((a @ x - b) ** 2))
            if best is None or err < best[1]:
                best = (x, err)
    return best


def workload_of_run(cfg, sampler):
    """The single-process workload of a scaling run's graph, sampler and batch size."""
    import spsample
    from spsample.distributed._plan import Workload
    graph = spsample.load(cfg["data"]).graph if cfg.get("data") and os.path.exists(cfg["data"]) \
        else spsample.rmat(cfg["scale"], cfg["edge_factor"], seed=1)
    fanouts = cfg["layer_fanouts"] if sampler == "ladies" else cfg["fanouts"]
    make = {"nodewise": spsample.NodeWise, "labor": spsample.LABOR, "ladies": spsample.LADIES}
    return Workload.measure(graph, make[sampler]([int(f) for f in fanouts.split(",")]),
                            name=sampler, batch_size=cfg["batch_size"], minibatches=16,
                            feature_dim=cfg["features"])


def error(pred, meas):
    return (pred - meas) / meas if meas else float("nan")


def print_validation(rows):
    print(f"{'p':>3} {'c':>3} {'k':>3} {'sampler':8} {'strat':5} | bytes err | feat err | "
          f"sample s pred/meas (err) | fetch s pred/meas (err)")
    for r in rows:
        if r["c"] == r["p"]:
            continue
        print(f"{r['p']:3d} {r['c']:3d} {r['k']:3d} {r['sampler']:8} {r['strategy']:5} | "
              f"{100 * error(r['bytes_pred'], r['bytes_meas']):+8.1f}% | "
              f"{100 * error(r['feature_bytes_pred'], r['feature_bytes_meas']):+7.1f}% | "
              f"{r['sample_s_pred']:.3f}/{r['sample_s_meas']:.3f} "
              f"({100 * error(r['sample_s_pred'], r['sample_s_meas']):+.0f}%) | "
              f"{r['fetch_s_pred']:.3f}/{r['fetch_s_meas']:.3f} "
              f"({100 * error(r['fetch_s_pred'], r['fetch_s_meas']):+.0f}%)")
    print("\nmedian |error| by p (runs with c < p; * = runs the overheads were fitted to):")
    for p in sorted({r["p"] for r in rows}):
        sel = [r for r in rows if r["p"] == p and r["c"] < p]
        if not sel:
            continue
        med = {name: 100 * np.median([abs(error(r[f"{name}_pred"], r[f"{name}_meas"]))
                                      for r in sel])
               for name in ("bytes", "feature_bytes", "sample_s", "fetch_s")}
        mark = "*" if any(r.get("fitted") for r in sel) else " "
        print(f" {mark}p = {p:2d}: bytes {med['bytes']:.1f} %, feature bytes "
              f"{med['feature_bytes']:.1f} %, sampling time {med['sample_s']:.0f} %, "
              f"fetch time {med['fetch_s']:.0f} %  ({len(sel)} runs)")


# ------------------------------------------------------------------------------- project
def project(args):
    from spsample.distributed._plan import Machine, Workload, plan

    machine = Machine.load(args.machine)
    memory = args.memory_per_rank * 1e9 if args.memory_per_rank else None
    out = []
    for graph, (n, nnz, f, train) in GRAPHS.items():
        for sampler, fanouts in SAMPLERS.items():
            w = Workload.like(n, nnz, sampler=sampler, fanouts=fanouts, batch_size=args.batch_size,
                              feature_dim=f)
            minibatches = -(-train // args.batch_size)
            for p in args.ranks:
                best = plan(w, machine, p, epochs_minibatches=minibatches, memory=memory)["best"]
                steps = -(-minibatches // p)
                bulks = -(-steps // best["k"])
                out.append({"graph": graph, "sampler": sampler, "p": p, "c": best["c"],
                            "k": best["k"], "strategy": best["strategy"],
                            "epoch_s": best["epoch_s"], "sample_s": best["sample_s"] * bulks,
                            "fetch_s": best["fetch_s"] * bulks,
                            "sampling_bytes": best["sampling_bytes"] * bulks * p,
                            "feature_bytes": best["feature_bytes"] * bulks * p,
                            "memory_gb": best["memory_bytes"] / 1e9})
    print_projection(out, machine)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"machine": machine.__dict__, "rows": out},
                                             indent=1))
    if args.plot:
        plot_projection(out, args.plot, machine)


def print_projection(rows, machine):
    print(f"machine: {machine.name}" + ("" if machine.measured else " -- assumed numbers"))
    print("graph             sampler    p   c   k strat | epoch s (sample + fetch) | "
          "sampling GB  feature GB | GB/rank | speed-up vs p=4")
    base = {}
    for r in rows:
        key = (r["graph"], r["sampler"])
        base.setdefault(key, r["epoch_s"])
        print(f"{r['graph']:17} {r['sampler']:8} {r['p']:4d} {r['c']:3d} {r['k']:3d} "
              f"{r['strategy']:5} | {r['epoch_s']:7.3f} ({r['sample_s']:.3f} + "
              f"{r['fetch_s']:.3f}) | {r['sampling_bytes'] / 1e9:10.2f} "
              f"{r['feature_bytes'] / 1e9:11.2f} | {r['memory_gb']:7.1f} | "
              f"{base[key] / r['epoch_s']:5.1f}x")


def plot_projection(rows, outdir, machine):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    fig, axes = plt.subplots(1, len(GRAPHS), figsize=(6 * len(GRAPHS), 4))
    for ax, graph in zip(np.atleast_1d(axes), GRAPHS):
        for sampler in SAMPLERS:
            sel = [r for r in rows if r["graph"] == graph and r["sampler"] == sampler]
            ax.plot([r["p"] for r in sel], [r["epoch_s"] for r in sel], marker="o",
                    label=sampler)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("GPUs (p)")
        ax.set_ylabel("predicted sampling + fetch s / epoch")
        ax.set_title(f"{graph} (model)")
        ax.legend()
    fig.suptitle(f"{machine.name}" + ("" if machine.measured else " -- assumed rates"))
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "projection.png"), dpi=120)


# ---------------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("calibrate")
    c.add_argument("--out", default=str(HERE / "machines" / "local.json"))
    c.add_argument("--scale", type=int, default=18)
    c.add_argument("--batch-size", type=int, default=256)
    c.add_argument("--ranks", type=lambda s: [int(x) for x in s.split(",")],
                   default=[2, 4, 8, 16])
    v = sub.add_parser("validate")
    v.add_argument("runs", nargs="+")
    v.add_argument("--machine", default=str(HERE / "machines" / "local.json"))
    v.add_argument("--out", default=None)
    v.add_argument("--fit-below", type=int, default=0, metavar="P",
                   help="fit the distributed overheads to the runs with fewer than P ranks")
    v.add_argument("--fitted-out", default=None, help="write the fitted machine file here")
    pr = sub.add_parser("project")
    pr.add_argument("--machine", default="spsample/data/machines/perlmutter.json")
    pr.add_argument("--ranks", type=lambda s: [int(x) for x in s.split(",")],
                    default=[4, 8, 16, 32, 64, 128])
    pr.add_argument("--batch-size", type=int, default=1024)
    pr.add_argument("--memory-per-rank", type=float, default=None, help="GB")
    pr.add_argument("--out", default=None)
    pr.add_argument("--plot", default=None)
    pb = sub.add_parser("_probe")
    pb.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    {"calibrate": calibrate, "validate": validate, "project": project,
     "_probe": probe}[args.command](args)


if __name__ == "__main__":
    main()
