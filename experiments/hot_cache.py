"""Hot-feature cache: hit rate against cache size (share of the rows), by in-degree and by the
counts of a sampling pass (epoch 0), measured on the fetches of epoch 1 (each minibatch's
``n_id``: what a loader without a cache would fetch), on power-law graphs.

    python experiments/hot_cache.py --out experiments/results/hot_cache

Writes ``<out>.json`` and ``<out>.png``.
"""

import argparse
import json
import sys

import numpy as np

import spsample
from spsample.loader import hit_rate_curve, in_degree_scores, sampled_counts

FRACTIONS = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0]


def graphs():
    yield "rmat16", spsample.rmat(16, seed=3)
    yield "cnr-2000", spsample.io.from_csr_npz(
        "/work/shared/datasets/law-cnr-2000/cnr-2000.npz").graph


def measure(name, g, fanouts, batch_size):
    seeds = np.random.default_rng(2).permutation(g.num_nodes)[:g.num_nodes // 10]
    kw = dict(sampler=spsample.NodeWise(fanouts), batch_size=batch_size)
    counts = sampled_counts(g, seeds, epochs=(1,), **kw)
    out = {"graph": name, "nodes": g.num_nodes, "edges": g.num_edges, "fanouts": fanouts,
           "batch_size": batch_size, "seeds": int(seeds.size), "fractions": FRACTIONS}
    out["in_degree"] = hit_rate_curve(in_degree_scores(g), counts, FRACTIONS).tolist()
    warm = sampled_counts(g, seeds, epochs=(0,), **kw)
    out["sampled_counts"] = hit_rate_curve(warm, counts, FRACTIONS).tolist()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    rows = []
    for name, g in graphs():
        for fanouts in ([10, 5], [15, 10]):
            rows.append(measure(name, g, fanouts, 512))
            r = rows[-1]
            print(name, fanouts, "hit@10%: degree", round(r["in_degree"][4], 3),
                  "counts", round(r["sampled_counts"][4], 3), flush=True)
    with open(args.out + ".json", "w") as f:
        json.dump(rows, f, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        label = f"{r['graph']} {r['fanouts']}"
        ax.plot(FRACTIONS, r["in_degree"], "-o", ms=3, label=label + " in-degree")
        ax.plot(FRACTIONS, r["sampled_counts"], "--", label=label + " counts")
    ax.axvline(0.1, color="grey", lw=0.5)
    ax.set_xlabel("cache size (share of rows)")
    ax.set_ylabel("hit rate (share of fetches)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=120)


if __name__ == "__main__":
    sys.exit(main())
