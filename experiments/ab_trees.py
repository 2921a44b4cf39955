"""A/B of two source trees: one tree's node-wise, LABOR and LADIES bulks and a LinkLoader epoch.

Run once per tree with ``PYTHONPATH=<tree>`` (each tree with its own built extension), in
alternation, and compare the minima: R-MAT 18, 64 x 1024 seeds (fanouts 15,10,5; LADIES 1024
per layer), and a LinkLoader epoch over 16,384 of its edges (NodeWise([10, 5]), batches of
256, one negative each). Prints one JSON line per sampler: the units of one run (sampled edges,
or labelled pairs for the link epoch), and the best wall and CPU seconds of ``repeat`` runs
after a warm-up.

    for i in 1 2 3; do for t in /path/old /path/new; do
        PYTHONPATH=$t python experiments/ab_trees.py 2 3 > out/$(basename $t)_$i.json
    done; done
"""
import json
import sys
import time

import numpy as np

import spsample

try:                                   # the public switch; older trees had a private module
    from spsample import native
except ImportError:                    # pragma: no cover - trees before the native room
    from spsample import _native as native


def bulk(g, seeds, sampler):
    def run():
        b = spsample.sample(g, seeds, sampler=sampler, batch_size=1024, seed=0)
        if b.path != "native":
            raise RuntimeError(f"ran {b.path!r}, not the native kernels")
        return b.num_edges
    return run


def link(g, edges):
    def run():
        n = 0
        for batch in spsample.LinkLoader(g, edges, sampler=spsample.NodeWise([10, 5]),
                                         batch_size=256, neg_ratio=1.0, shuffle=False,
                                         pipeline=False):
            n += int(batch.edge_label_index.shape[1])
        return n
    return run


def main(argv):
    threads, repeat = int(argv[1]), int(argv[2])
    native.set_num_threads(threads)
    g = spsample.rmat(18, seed=1)
    rng = np.random.default_rng(0)
    seeds = rng.choice(g.num_nodes, size=64 * 1024, replace=False).astype(np.int64)
    src = np.repeat(np.arange(g.num_nodes), np.diff(g.indptr))
    pick = rng.choice(g.num_edges, size=64 * 256, replace=False)
    edges = np.stack([src[pick], g.indices[pick]]).astype(np.int64)
    runs = {"nodewise": bulk(g, seeds, spsample.NodeWise([15, 10, 5])),
            "labor": bulk(g, seeds, spsample.LABOR([15, 10, 5])),
            "ladies": bulk(g, seeds, spsample.LADIES([1024, 1024, 1024])),
            "link": link(g, edges)}
    for name, run in runs.items():
        units = run()
        walls, cpus = [], []
        for _ in range(repeat):
            w, c = time.perf_counter(), time.process_time()
            run()
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        print(json.dumps({"sampler": name, "threads": threads, "units": units,
                          "wall": min(walls), "cpu": min(cpus)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
