"""Node-wise sampling from a graph kept on disk (``spsample.load(path, mmap=True,
memory_budget=...)``) against the same graph in memory: seconds per bulk (warm page cache,
both in this run), peak RSS of each (separate processes), and a cold figure (the file's
pages dropped from the page cache with ``posix_fadvise(DONTNEED)`` first).

    python experiments/disk_sampling.py --scale 22 --budget 256MB --out R.json
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

OUTPUT_BYTES = 0


def _sample(graph, seeds, args):
    import spsample
    s = spsample.NodeWise([int(f) for f in args.fanouts.split(",")])
    t0 = time.perf_counter()
    out = spsample.sample(graph, seeds, sampler=s, batch_size=args.batch_size, seed=1)
    dt = time.perf_counter() - t0
    edges = sum(sum(mb.num_sampled_edges) for mb in out)
    global OUTPUT_BYTES
    OUTPUT_BYTES = sum(mb.n_id.nbytes + sum(d.nbytes + s_.nbytes for d, s_ in mb.edges) +
                       sum(e.nbytes for e in mb.edge_ids) for mb in out)
    digest = int(np.bitwise_xor.reduce(np.concatenate([mb.n_id for mb in out]) * 2654435761
                                       % (1 << 61)))
    return dt, edges, digest


def child(args):
    """One measurement in this process: prints a JSON line."""
    import spsample
    rng = np.random.default_rng(0)
    if args.mode == "cold":                   # the file's pages out of the page cache
        fd = os.open(args.path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        args.repeats = 1
    if args.mode == "memory":
        g = spsample.load(args.path).graph
    else:
        g = spsample.load(args.path, mmap=True, memory_budget=args.budget).graph
    seeds = rng.choice(g.num_nodes, args.seeds, replace=False)
    times = []
    for _ in range(args.repeats):
        dt, edges, digest = _sample(g, seeds, args)
        times.append(dt)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"mode": args.mode, "seconds": times, "sampled_edges": edges,
                      "digest": digest, "peak_rss": rss, "output_bytes": OUTPUT_BYTES}),
          flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=22)
    p.add_argument("--path", default=None)
    p.add_argument("--budget", default="256MB")
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--seeds", type=int, default=16384)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--mode", default=None, help=argparse.SUPPRESS)   # memory, disk, cold
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.mode:
        return child(args)
    import spsample
    path = args.path or f"/tmp/h19/rmat{args.scale}.h5"
    if not os.path.exists(path):
        g = spsample.rmat(args.scale, seed=1)
        spsample.save(spsample.Dataset(g), path, layout="contiguous", compression=None)
        del g
    base = [sys.executable, __file__, "--path", path, "--budget", args.budget, "--fanouts",
            args.fanouts, "--batch-size", str(args.batch_size), "--seeds", str(args.seeds),
            "--repeats", str(args.repeats)]
    rows = {}
    for mode in ("cold", "disk", "memory"):
        res = subprocess.run(base + ["--mode", mode], capture_output=True, text=True)
        if res.returncode:
            sys.stderr.write(res.stderr)
            return 1
        rows[mode] = json.loads(res.stdout.strip().splitlines()[-1])
        print(rows[mode], flush=True)
    m, d = min(rows["memory"]["seconds"]), min(rows["disk"]["seconds"])
    rows["disk_speed_vs_memory_warm"] = m / d
    rows["disk_speed_vs_memory_cold"] = m / rows["cold"]["seconds"][0]
    rows["identical"] = rows["memory"]["digest"] == rows["disk"]["digest"] == \
        rows["cold"]["digest"]
    from spsample._disk_graph import as_budget
    limit = (as_budget("disk_sampling", args.budget) + rows["disk"]["output_bytes"]) * 1.2
    rows["disk_rss_limit"] = limit
    rows["disk_rss_within"] = max(rows["disk"]["peak_rss"], rows["cold"]["peak_rss"]) <= limit
    rows["file_bytes"] = os.path.getsize(path)
    print({k: v for k, v in rows.items() if k not in ("memory", "disk")})
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
