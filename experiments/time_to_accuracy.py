"""Time to accuracy: spsample's samplers against DGL's, training the same model sizes.

For one graph, every configuration trains from the same split, model sizes (layers, hidden
width), batch size, learning rate and dropout; each runs in its own process (so its peak
memory is its own), the configurations alternate when ``--repeat`` > 1 (A, B, ..., A, B, ...).
After every epoch the model is evaluated on the validation set with full neighbourhoods
(spsample ``NodeWise([-1] * L)``, DGL ``MultiLayerFullNeighborSampler``); evaluation time is
not counted. Recorded per configuration:

* the curve: validation accuracy against training wall time (seconds spent in epochs);
* per epoch: seconds, split into sample / fetch / forward / backward / optimizer (spsample:
  the producer's sample and fetch seconds run in the background thread, overlapped with
  training; ``wait_seconds`` is what training waited for them), threads;
* peak memory: the worker process's high-water RSS during training (reset after loading the
  data where Linux allows), and the process's peak.

The target is the validation accuracy DGL's ``NeighborSampler`` reaches after ``--target-epoch``
epochs (5) minus ``--tolerance`` (0.5 points); each configuration's time to target is the
training time of the first evaluation at or above it, and ``ratio`` its time over DGL
``NeighborSampler``'s (median over repeats). Writes JSON (``--out``) and a plot of accuracy
against wall time, one line per configuration (``--plot``).

Configurations: ``spsample:nodewise`` / ``spsample:labor`` (GraphSAGE, ``--fanouts``),
``spsample:ladies`` / ``spsample:fastgcn`` (the importance-weighted GCN, ``--layer-nodes``
nodes per layer), ``dgl:neighbor`` / ``dgl:labor`` (DGL 2.1 ``DataLoader`` with
``NeighborSampler`` / ``LaborSampler``, ``dgl.nn.SAGEConv`` layers, features as a dense
float32 tensor, gathered with DGL's ``gather_row``). Append ``@key=value,...`` to set a
configuration's own ``fanouts`` (``10-10-10``), ``batch``, ``nodes``, or ``dense=1`` (spsample
with sparse features densified, as DGL gets them), e.g. ``spsample:nodewise@fanouts=10-10-10``.

Graphs: ``musae-facebook``, ``gnnbench-cora``, ``gnnbench-citeseer`` (symmetrised; random
60/20/20 split, seed 0), ``minesweeper`` (its split 0), and ``rmat:S`` (R-MAT, 128 uniform
random float32 features, 16 random classes, half the nodes training seeds) with
``--throughput``: no evaluation, per-epoch seconds only, spsample as ``spsample train``'s
defaults with the given hyper-parameters (``spsample:train``).

    OMP_WAIT_POLICY=passive /tmp/peers/bin/python experiments/time_to_accuracy.py \\
        --graph musae-facebook --out experiments/results/tta_facebook.json \\
        --plot experiments/results/tta_facebook.png
    OMP_WAIT_POLICY=passive /tmp/peers/bin/python experiments/time_to_accuracy.py \\
        --graph rmat:18 --throughput --epochs 3 --configs spsample:train,dgl:neighbor
"""

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
DEFAULT_CONFIGS = ("spsample:nodewise,spsample:labor,spsample:ladies,spsample:fastgcn,"
                   "dgl:neighbor,dgl:labor")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="musae-facebook")
    p.add_argument("--configs", default=DEFAULT_CONFIGS)
    p.add_argument("--epochs", type=int, default=10, help="epochs per configuration")
    p.add_argument("--target-epoch", type=int, default=5)
    p.add_argument("--tolerance", type=float, default=0.005, help="below DGL's accuracy")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", default="15,10,5", help="node-wise fanouts, hop 1 first")
    p.add_argument("--layer-nodes", type=int, default=0,
                   help="LADIES / FastGCN nodes per layer (0: 4 x batch size)")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--eval-batch-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--input-dropout", choices=("on", "off"), default="off",
                   help="dropout on the features too (off: between layers, as DGL's example)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--throughput", action="store_true",
                   help="no evaluation: per-epoch seconds only (R-MAT)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    p.add_argument("--plot", default=None)
    p.add_argument("--resummarize", default=None, metavar="JSON",
                   help="recompute the summary (and --plot) of an earlier --out file")
    p.add_argument("--stop-at-target", action="store_true",
                   help="run DGL NeighborSampler first for --target-epoch epochs, then stop "
                        "every other configuration once it reaches the target")
    p.add_argument("--stop-at", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------- data
def load_graph(name, seed):
    """``(dataset, train, val, test)`` for a graph name (the same in every worker)."""
    import spsample
    from spsample import io
    from spsample.train import random_split

    if name.startswith("rmat:"):
        graph = spsample.rmat(int(name.split(":")[1]), seed=1)
        rng = np.random.default_rng(seed)
        x = rng.random((graph.num_nodes, 128), dtype=np.float32)
        y = rng.integers(0, 16, graph.num_nodes)
        perm = rng.permutation(graph.num_nodes)
        half, rest = graph.num_nodes // 2, graph.num_nodes * 3 // 4
        ds = io.Dataset(graph, features=x, labels=y, name=name)
        return ds, perm[:half], perm[half:rest], perm[rest:]
    if name == "musae-facebook":
        ds = io.from_musae(DATASETS / "musae-facebook")
    elif name.startswith("gnnbench-"):
        ds = io.from_npz_gnnbench(DATASETS / "gnnbench-npz" / f"{name[9:]}.npz",
                                  symmetrize=True)
    elif name == "minesweeper":
        ds = io.from_heterophilous_npz(DATASETS / "heterophilous-minesweeper" /
                                       "minesweeper.npz")
        return (ds, *ds.split("0"))
    else:
        raise SystemExit(f"unknown graph {name!r}")
    parts = random_split(ds.labels, seed=seed)
    return ds, parts["train"], parts["val"], parts["test"]


def parse_config(text, args):
    """``framework:sampler[@key=value,...]`` -> dict."""
    head, _, extra = text.partition("@")
    framework, sampler = head.split(":")
    cfg = dict(name=text, framework=framework, sampler=sampler,
               fanouts=[int(f) for f in args.fanouts.split(",")], batch=args.batch_size,
               nodes=args.layer_nodes or 4 * args.batch_size, dense=0)
    for item in filter(None, extra.split(",")):
        key, value = item.split("=")
        cfg[key] = [int(v) for v in value.split("-")] if key == "fanouts" else int(value)
    cfg["layers"] = len(cfg["fanouts"]) if sampler in ("nodewise", "labor", "train", "neighbor") \
        else args.layers
    return cfg


# ---------------------------------------------------------------------------- memory
def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _hwm_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_memory(reset_ok):
    return dict(train_peak_rss_mb=_hwm_mb() if reset_ok else None,
                process_peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


# ---------------------------------------------------------------------------- spsample
def run_spsample(args, cfg, data):
    import torch

    from spsample import io, native as _native
    from spsample.train import TrainConfig, Trainer

    ds, train, val, test = data
    split = io.Dataset(ds.graph, features=ds.features, labels=ds.labels, name=ds.name,
                       splits={"tta": {"train": train, "val": val, "test": test}})
    layerwise = cfg["sampler"] in ("ladies", "fastgcn")
    sampler = "nodewise" if cfg["sampler"] == "train" else cfg["sampler"]
    fanouts = [cfg["nodes"]] * cfg["layers"] if layerwise else cfg["fanouts"]
    common = dict(sampler=sampler, fanouts=tuple(fanouts), batch_size=cfg["batch"],
                  hidden=args.hidden, lr=args.lr, epochs=args.epochs, split="tta",
                  seed=args.seed, eval_batch_size=args.eval_batch_size)
    if cfg["sampler"] == "train":          # `spsample train`'s defaults otherwise
        config = TrainConfig(**common)
    else:
        config = TrainConfig(**common, dropout=args.dropout, weight_decay=0.0,
                             input_dropout=args.input_dropout == "on", normalize="none",
                             sparse_features="off" if cfg["dense"] else "auto")
    trainer = Trainer(split, config)
    evaluate = None if args.throughput else _spsample_evaluator(trainer, split, val, cfg, args)
    reset = _reset_peak()
    curve, epochs, clock = [], [], 0.0
    if evaluate is not None:
        curve.append(dict(epoch=0, seconds=0.0, val_accuracy=evaluate()))
    for _ in range(args.epochs):
        entry = trainer.train_epoch()
        clock += entry["seconds"]
        epochs.append({k: entry[k] for k in (
            "epoch", "seconds", "loss", "sample_seconds", "fetch_seconds", "convert_seconds",
            "wait_seconds", "forward_seconds", "backward_seconds", "optimizer_seconds",
            "threads", "sampler_threads", "producer_share", "sampled_edges")})
        if evaluate is not None:
            curve.append(dict(epoch=entry["epoch"] + 1, seconds=clock,
                              val_accuracy=evaluate()))
        print(json.dumps(dict(config=cfg["name"], **epochs[-1],
                              val=curve[-1]["val_accuracy"] if curve else None)),
              file=sys.stderr, flush=True)
        if _reached(args, curve):
            break
    model = type(trainer.model).__name__ + ("" if not trainer.model.uses_pyg else " (PyG)")
    return dict(curve=curve, epochs=epochs, model=model, torch_threads=torch.get_num_threads(),
                spsample_config={k: v for k, v in config.__dict__.items()},
                path=_native.active_path(),
                **peak_memory(reset))


def _spsample_evaluator(trainer, ds, val, cfg, args):
    """Validation accuracy with full neighbourhoods (node-wise ``-1`` per hop)."""
    import torch

    import spsample

    loader = spsample.Loader(ds, val, sampler=spsample.NodeWise([-1] * cfg["layers"]),
                             batch_size=args.eval_batch_size, shuffle=False,
                             features=trainer.train_loader.features, adjacency=True)

    @torch.no_grad()
    def evaluate():
        trainer.model.eval()
        correct = 0
        for batch in loader.iter_epoch(0):
            pred = trainer.model(batch).argmax(dim=1)
            correct += int((pred == batch.target).sum())
        return correct / len(val)

    return evaluate


# ---------------------------------------------------------------------------- DGL
def import_dgl():
    sys.modules.setdefault("dgl.graphbolt", type(sys)("dgl.graphbolt"))
    import dgl

    return dgl


def dgl_model(dgl, in_feats, hidden, classes, layers, dropout, input_dropout):
    import torch

    class SAGE(torch.nn.Module):
        """GraphSAGE as spsample's: dropout on each layer's input (the first only with
        ``input_dropout``), mean aggregation, ReLU between layers."""

        def __init__(self):
            super().__init__()
            sizes = [in_feats] + [hidden] * (layers - 1) + [classes]
            self.layers = torch.nn.ModuleList(dgl.nn.SAGEConv(a, b, "mean")
                                              for a, b in zip(sizes[:-1], sizes[1:]))

        def forward(self, blocks, h):
            for i, (layer, block) in enumerate(zip(self.layers, blocks)):
                if i > 0 or input_dropout:
                    h = torch.nn.functional.dropout(h, dropout, self.training)
                h = layer(block, h)
                if i < layers - 1:
                    h = torch.relu(h)
            return h

    return SAGE()


def run_dgl(args, cfg, data):
    import scipy.sparse as sp
    import torch

    dgl = import_dgl()
    dgl.utils.set_num_threads(args.threads)
    import warnings

    warnings.filterwarnings("ignore", message="Dataloader CPU affinity opt")
    ds, train, val, test = data
    graph = ds.graph
    g = dgl.graph(("csc", (torch.from_numpy(np.array(graph.indptr, dtype=np.int64)),
                           torch.from_numpy(np.array(graph.indices, dtype=np.int64)),
                           torch.tensor([], dtype=torch.int64))),
                  num_nodes=graph.num_nodes)
    x = ds.features.toarray() if sp.issparse(ds.features) else np.asarray(ds.features)
    feat = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    labels = torch.from_numpy(np.asarray(ds.labels, dtype=np.int64))
    fanouts = list(reversed(cfg["fanouts"]))              # DGL lists the input layer first
    if cfg["sampler"] == "labor":
        sampler = dgl.dataloading.LaborSampler(fanouts)
    else:
        sampler = dgl.dataloading.NeighborSampler(fanouts)
    loader = dgl.dataloading.DataLoader(g, torch.from_numpy(train), sampler,
                                        batch_size=cfg["batch"], shuffle=True,
                                        drop_last=False, num_workers=0)
    torch.manual_seed(args.seed)
    input_dropout = args.input_dropout == "on" or args.throughput
    model = dgl_model(dgl, feat.shape[1], args.hidden, int(labels.max()) + 1, cfg["layers"],
                      args.dropout, input_dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr,
                           weight_decay=5e-4 if args.throughput else 0.0)
    gather_row = dgl.backend.gather_row
    evaluate = None if args.throughput else _dgl_evaluator(dgl, g, feat, labels, val, model,
                                                           cfg, args)
    reset = _reset_peak()
    curve, epochs, clock = [], [], 0.0
    if evaluate is not None:
        curve.append(dict(epoch=0, seconds=0.0, val_accuracy=evaluate()))
    for epoch in range(args.epochs):
        model.train()
        ph = dict(sample_seconds=0.0, fetch_seconds=0.0, forward_seconds=0.0,
                  backward_seconds=0.0, optimizer_seconds=0.0)
        t_epoch = time.perf_counter()
        it = iter(loader)
        losses = []
        while True:
            t0 = time.perf_counter()
            try:
                input_nodes, output_nodes, blocks = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            xb = gather_row(feat, input_nodes)
            yb = gather_row(labels, output_nodes)
            t2 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(blocks, xb), yb)
            t3 = time.perf_counter()
            loss.backward()
            t4 = time.perf_counter()
            opt.step()
            t5 = time.perf_counter()
            losses.append(loss.item())
            for key, a, b in (("sample", t0, t1), ("fetch", t1, t2), ("forward", t2, t3),
                              ("backward", t3, t4), ("optimizer", t4, t5)):
                ph[f"{key}_seconds"] += b - a
        seconds = time.perf_counter() - t_epoch
        clock += seconds
        epochs.append(dict(epoch=epoch, seconds=seconds, loss=float(np.mean(losses)), **ph,
                           threads=torch.get_num_threads()))
        if evaluate is not None:
            curve.append(dict(epoch=epoch + 1, seconds=clock, val_accuracy=evaluate()))
        print(json.dumps(dict(config=cfg["name"], **epochs[-1],
                              val=curve[-1]["val_accuracy"] if curve else None)),
              file=sys.stderr, flush=True)
        if _reached(args, curve):
            break
    return dict(curve=curve, epochs=epochs, model="dgl.nn.SAGEConv",
                torch_threads=torch.get_num_threads(), **peak_memory(reset))


def _dgl_evaluator(dgl, g, feat, labels, val, model, cfg, args):
    import torch

    full = dgl.dataloading.MultiLayerFullNeighborSampler(cfg["layers"])
    loader = dgl.dataloading.DataLoader(g, torch.from_numpy(val), full,
                                        batch_size=args.eval_batch_size, shuffle=False,
                                        drop_last=False, num_workers=0)

    @torch.no_grad()
    def evaluate():
        model.eval()
        correct = 0
        for input_nodes, output_nodes, blocks in loader:
            pred = model(blocks, feat[input_nodes]).argmax(dim=1)
            correct += int((pred == labels[output_nodes]).sum())
        return correct / len(val)

    return evaluate


# ---------------------------------------------------------------------------- driver
def worker(args):
    import torch

    torch.set_num_threads(args.threads)
    cfg = parse_config(args.worker, args)
    data = load_graph(args.graph, args.seed)
    run = run_dgl if cfg["framework"] == "dgl" else run_spsample
    t = time.perf_counter()
    result = run(args, cfg, data)
    result.update(config=cfg["name"], framework=cfg["framework"], sampler=cfg["sampler"],
                  settings=cfg, graph=args.graph, wall_seconds=time.perf_counter() - t,
                  omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"))
    Path(args.worker_out).write_text(json.dumps(result))


def _reached(args, curve):
    """Whether ``--stop-at`` is set and the last evaluation reached it."""
    return args.stop_at is not None and bool(curve) and curve[-1]["val_accuracy"] >= args.stop_at


def time_to(curve, target, key="seconds"):
    """The first point's ``key`` (seconds or epoch) at or above ``target``, else None."""
    for point in curve:
        if point["val_accuracy"] >= target:
            return point[key]
    return None


def _median_reached(values):
    """Median over repeats counting a run that never reached the target (None) as infinitely
    late; None when the median itself is such a run."""
    median = statistics.median(math.inf if v is None else v for v in values)
    return None if math.isinf(median) else median


def summarize(runs, args):
    """Target, per-configuration medians and ratios to DGL NeighborSampler."""
    by = {}
    for r in runs:
        by.setdefault(r["config"], []).append(r)
    summary = dict(graph=args.graph, configs={})
    ref = next((name for name in by if name.startswith("dgl:neighbor")), None)
    target = None
    if ref and not args.throughput:
        accs = [next(p["val_accuracy"] for p in r["curve"] if p["epoch"] == args.target_epoch)
                for r in by[ref]]
        summary["dgl_accuracy_at_target_epoch"] = statistics.median(accs)
        target = statistics.median(accs) - args.tolerance
        summary["target"] = target
    for name, rs in by.items():
        s = dict(epoch_seconds=statistics.median(e["seconds"] for r in rs for e in r["epochs"]),
                 best_val=max((p["val_accuracy"] for r in rs for p in r["curve"]), default=None),
                 train_peak_rss_mb=max((r["train_peak_rss_mb"] or 0) for r in rs),
                 process_peak_rss_mb=max(r["process_peak_rss_mb"] for r in rs),
                 model=rs[0]["model"])
        for phase in ("sample", "fetch", "forward", "backward", "optimizer", "wait"):
            vals = [e.get(f"{phase}_seconds") for r in rs for e in r["epochs"]]
            if all(v is not None for v in vals):
                s[f"{phase}_seconds"] = statistics.median(vals)
        if target is not None:
            times = [time_to(r["curve"], target) for r in rs]
            s["times_to_target"] = times
            s["time_to_target"] = _median_reached(times)
            s["reached"] = f"{sum(t is not None for t in times)}/{len(times)}"
            s["epochs_to_target"] = _median_reached(
                [time_to(r["curve"], target, "epoch") for r in rs])
            # robust to a stalled epoch on a shared machine: epochs x the median epoch
            s["median_epoch_time_to_target"] = (None if s["epochs_to_target"] is None
                                                else s["epochs_to_target"] * s["epoch_seconds"])
        summary["configs"][name] = s
    if target is not None:
        for key, out in (("time_to_target", "ratio_to_dgl_neighbor"),
                         ("median_epoch_time_to_target", "median_epoch_ratio_to_dgl_neighbor")):
            base = summary["configs"][ref][key]
            for s in summary["configs"].values():
                t = s.get(key)
                s[out] = t / base if (t is not None and base) else None
    if ref:
        base = summary["configs"][ref]["epoch_seconds"]
        for s in summary["configs"].values():
            s["epoch_ratio_to_dgl_neighbor"] = s["epoch_seconds"] / base
    return summary


def plot(runs, summary, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    seen = {}
    for r in runs:
        xs = [p["seconds"] for p in r["curve"]]
        ys = [p["val_accuracy"] for p in r["curve"]]
        line, = ax.plot(xs, ys, marker="o", markersize=3, alpha=0.85,
                        color=seen.get(r["config"]), label=None if r["config"] in seen
                        else r["config"])
        seen[r["config"]] = line.get_color()
    if summary.get("target") is not None:
        ax.axhline(summary["target"], color="grey", linestyle="--", linewidth=1,
                   label=f"target {summary['target']:.4f}")
    ax.set_xscale("log")              # the epoch-0 points (0 s) fall outside: zoom on the rest
    trained = [p["val_accuracy"] for r in runs for p in r["curve"] if p["epoch"] > 0]
    if trained:
        ax.set_ylim(min(trained) - 0.01, max(trained) + 0.005)
    ax.set_xlabel("training wall time (s, log scale; evaluation not counted)")
    ax.set_ylabel("validation accuracy")
    ax.set_title(f"{summary['graph']}: accuracy vs wall time")
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def resummarize(args):
    """Recompute an earlier run's summary with its own arguments; rewrite the file."""
    path = Path(args.resummarize)
    data = json.loads(path.read_text())
    saved = argparse.Namespace(**data["args"])
    data["summary"] = summarize(data["runs"], saved)
    path.write_text(json.dumps(data, indent=1))
    print(json.dumps(data["summary"], indent=1))
    if args.plot:
        plot(data["runs"], data["summary"], args.plot)


def schedule(configs, repeat, stop_at_target):
    """``(repeat, configuration)`` in run order: A, B, ..., A, B, ...; under
    ``stop_at_target`` every repeat of the reference (DGL NeighborSampler) first, so that all
    other runs stop at the same target."""
    order = [(rep, name) for rep in range(repeat) for name in configs]
    if stop_at_target:
        order.sort(key=lambda item: not item[1].startswith("dgl:neighbor"))   # stable
    return order


def _stop_args(args, name, runs):
    """Extra worker arguments under ``--stop-at-target``: the reference runs
    ``--target-epoch`` epochs, the others stop at the target set by the reference's runs."""
    if not args.stop_at_target or args.throughput:
        return []
    if name.startswith("dgl:neighbor"):
        return ["--epochs", str(args.target_epoch)]
    ref = [r for r in runs if r["config"].startswith("dgl:neighbor")]
    if not ref:
        return []
    accs = [next(p["val_accuracy"] for p in r["curve"] if p["epoch"] == args.target_epoch)
            for r in ref]
    return ["--stop-at", repr(statistics.median(accs) - args.tolerance)]


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    if args.resummarize:
        return resummarize(args)
    configs = args.configs.split(";") if ";" in args.configs else args.configs.split(",")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep, name in schedule(configs, args.repeat, args.stop_at_target):
            out = os.path.join(tmp, f"{len(runs)}.json")
            cmd = [sys.executable, os.path.abspath(__file__), *(argv or sys.argv[1:]),
                   "--worker", name, "--worker-out", out, *_stop_args(args, name, runs)]
            env = dict(os.environ)
            env.setdefault("OMP_WAIT_POLICY", "passive")
            root = str(Path(__file__).resolve().parents[1])  # this checkout's spsample
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
            proc = subprocess.run(cmd, env=env)
            if proc.returncode != 0:
                print(json.dumps(dict(config=name, error=proc.returncode)), flush=True)
                continue
            run = json.loads(Path(out).read_text())
            run["repeat"] = rep
            runs.append(run)
            last = run["curve"][-1]["val_accuracy"] if run["curve"] else None
            print(json.dumps(dict(config=name, repeat=rep, epoch_seconds=[
                round(e["seconds"], 3) for e in run["epochs"]], final_val=last,
                train_peak_rss_mb=run["train_peak_rss_mb"])), flush=True)
    summary = summarize(runs, args)
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(dict(args=vars(args), summary=summary, runs=runs),
                                             indent=1))
    if args.plot and not args.throughput:
        plot(runs, summary, args.plot)


if __name__ == "__main__":
    main()
