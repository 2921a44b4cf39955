"""Figures from the JSON files of ``experiments/scaling.py``.

    python experiments/plot.py runs/p4.json runs/p8.json --out figures/

writes, per sampler (``_<sampler>`` suffix), ``time_vs_c.png`` and ``bytes_vs_c.png`` (per p,
per strategy, at the largest k), ``bytes_vs_k.png`` and ``time_vs_k.png`` (per strategy, at
c = 1), ``bytes_vs_p.png`` (c = 1, largest k, with the push ideal) and ``phases_vs_p.png``
(time per phase of the slowest rank -- requester's local work, owners' sampling, exchanges,
feature fetch -- at c = 1 and the largest k, push and pull side by side).
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


def per_p(runs, out, name):
    fig, ax = plt.subplots(figsize=(6, 4))
    k = max(r["k"] for r in runs)
    for strategy in ("push", "pull"):
        line(ax, select(runs, c=1, k=k, strategy=strategy), "p",
             lambda r: r["summary"]["sampling_bytes"] / MIB, f"{strategy} (c=1, k={k})")
    ideal = [r for r in select(runs, c=1, k=k, strategy="push") if r["summary"]["push_ideal_bytes"]]
    line(ax, ideal, "p", lambda r: r["summary"]["push_ideal_bytes"] / MIB, "push ideal",
         linestyle=":")
    ax.set_xlabel("ranks p")
    ax.set_ylabel("sampling bytes, all ranks (MiB)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=120)
    plt.close(fig)


PHASES = (("local_s", "local (frontier, extraction)"), ("owner_s", "owners' sampling"),
          ("exchange_s", "sampling exchanges"), ("fetch_s", "feature fetch"))


def phases_per_p(runs, out, name):
    """Stacked bars: each phase's time on the slowest rank of the run (by total)."""
    k = max(r["k"] for r in runs)
    ps = sorted({r["p"] for r in runs})
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.38
    for shift, strategy, hatch in ((-width / 2, "push", ""), (width / 2, "pull", "//")):
        bottom = [0.0] * len(ps)
        for i, (key, label) in enumerate(PHASES):
            heights = []
            for p in ps:
                run = select(runs, p=p, c=1, k=k, strategy=strategy)
                if not run:
                    heights.append(0.0)
                    continue
                slowest = max(run[0]["per_rank"], key=lambda r: r["sample_s"] + r["fetch_s"])
                heights.append(slowest[key])
            ax.bar([j + shift for j in range(len(ps))], heights, width, bottom=bottom,
                   color=f"C{i}", hatch=hatch, label=f"{label}" if strategy == "push" else None)
            bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(ps)), [str(p) for p in ps])
    ax.set_xlabel(f"ranks p (c = 1, k = {k}; left push, right pull, hatched)")
    ax.set_ylabel("seconds, slowest rank")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=120)
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
    for sampler in sorted({r.get("sampler", "nodewise") for r in runs}):
        mine = [r for r in runs if r.get("sampler", "nodewise") == sampler]
        per_c(mine, args.out, seconds, "sampling time, slowest rank (s)",
              f"time_vs_c_{sampler}.png")
        per_c(mine, args.out, mib, "sampling bytes, all ranks (MiB)", f"bytes_vs_c_{sampler}.png")
        per_k(mine, args.out, seconds, "sampling time, slowest rank (s)",
              f"time_vs_k_{sampler}.png")
        per_k(mine, args.out, mib, "sampling bytes, all ranks (MiB)", f"bytes_vs_k_{sampler}.png")
        per_p(mine, args.out, f"bytes_vs_p_{sampler}.png")
        phases_per_p(mine, args.out, f"phases_vs_p_{sampler}.png")
    print("wrote", sorted(f for f in os.listdir(args.out) if f.endswith(".png")))


if __name__ == "__main__":
    main()
