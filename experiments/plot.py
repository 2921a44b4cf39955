"""Figures from the JSON files of ``experiments/scaling.py``.

    python experiments/plot.py runs/p4.json runs/p8.json --out figures/

writes ``time_vs_c.png`` and ``bytes_vs_c.png`` (per p, per strategy, at the largest k),
``bytes_vs_k.png`` and ``time_vs_k.png`` (per strategy, at c = 1) and ``bytes_vs_p.png`` (c = 1,
largest k, with the push ideal).
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MIB = 2**20


def load(paths):
    runs = []
    for path in paths:
        with open(path) as f:
            runs.extend(json.load(f)["runs"])
    return runs


def select(runs, **fixed):
    return [r for r in runs if all(r[k] == v for k, v in fixed.items())]


def line(ax, runs, x, y, label, **style):
    runs = sorted(runs, key=lambda r: r[x])
    if runs:
        ax.plot([r[x] for r in runs], [y(r) for r in runs], marker="o", label=label, **style)


def per_c(runs, out, metric, ylabel, name):
    fig, ax = plt.subplots(figsize=(6, 4))
    for p in sorted({r["p"] for r in runs}):
        k = max(r["k"] for r in select(runs, p=p))
        for strategy in ("push", "pull"):
            line(ax, select(runs, p=p, k=k, strategy=strategy), "c", metric,
                 f"p={p} {strategy} (k={k})", linestyle="-" if strategy == "push" else "--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("replication c")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=120)
    plt.close(fig)


def per_k(runs, out, metric, ylabel, name):
    fig, ax = plt.subplots(figsize=(6, 4))
    for p in sorted({r["p"] for r in runs}):
        for strategy in ("push", "pull"):
            line(ax, select(runs, p=p, c=1, strategy=strategy), "k", metric,
                 f"p={p} {strategy} (c=1)", linestyle="-" if strategy == "push" else "--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("minibatches per rank per call (k)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=120)
    plt.close(fig)


def per_p(runs, out):
    fig, ax = plt.subplots(figsize=(6, 4))
    k = max(r["k"] for r in runs)
    for strategy in ("push", "pull"):
        line(ax, select(runs, c=1, k=k, strategy=strategy), "p",
             lambda r: r["summary"]["sampling_bytes"] / MIB, f"{strategy} (c=1, k={k})")
    line(ax, select(runs, c=1, k=k, strategy="push"), "p",
         lambda r: r["summary"]["push_ideal_bytes"] / MIB, "push ideal", linestyle=":")
    ax.set_xlabel("ranks p")
    ax.set_ylabel("sampling bytes, all ranks (MiB)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bytes_vs_p.png"), dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    runs = load(args.json)

    def seconds(r):
        return r["summary"]["sample_s_max"]

    def mib(r):
        return r["summary"]["sampling_bytes"] / MIB
    per_c(runs, args.out, seconds, "sampling time, slowest rank (s)", "time_vs_c.png")
    per_c(runs, args.out, mib, "sampling bytes, all ranks (MiB)", "bytes_vs_c.png")
    per_k(runs, args.out, seconds, "sampling time, slowest rank (s)", "time_vs_k.png")
    per_k(runs, args.out, mib, "sampling bytes, all ranks (MiB)", "bytes_vs_k.png")
    per_p(runs, args.out)
    print("wrote", sorted(f for f in os.listdir(args.out) if f.endswith(".png")))


if __name__ == "__main__":
    main()
