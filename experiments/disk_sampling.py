"""Node-wise sampling from a graph kept on disk (``spsample.load(path, mmap=True,
memory_budget=...)``) against the same graph in memory, in one run: seconds per bulk (each mode
in its own process, the modes alternated over ``--rounds``), peak RSS against the issue-19
limit (budget + the bulk's output, + 20 %), the share of the file in the page cache before each
mode is timed (``mincore``), and a cold figure (the file's pages dropped with
``posix_fadvise(DONTNEED)`` first). Warm modes drop the file too, then read it whole (as
``cat file > /dev/null`` does on a file not in the cache: the page cache then holds it in large
folios). Every mode must give the same minibatches (a digest of every ``n_id``).

    python experiments/disk_sampling.py --path /tmp/h19/rmat25.h5 --budget 1GB --out R.json
    python experiments/disk_sampling.py --scale 22 --budget 256MB
"""

import argparse
import ctypes
import json
import mmap
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


def resident_share(path):
    """Share of ``path``'s pages in the page cache (``mincore`` on a map of it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        pages = -(-size // mmap.PAGESIZE)
        vec = (ctypes.c_ubyte * pages)()
        addr = np.frombuffer(mm, dtype=np.uint8).ctypes.data
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) != 0:
            return None
        share = float(np.frombuffer(vec, dtype=np.uint8).astype(bool).mean())
        del vec
        return share
    finally:
        os.close(fd)


def warm(path):
    """Read the whole file through the page cache, 16 MiB at a time (``cat path``)."""
    buf = bytearray(16 << 20)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def drop(path):
    """Drop the file's pages from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def _peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _file_huge_pages():
    """The page cache's bytes in 2 MiB folios (/proc/meminfo FileHugePages), or None."""
    try:
        with open("/proc/meminfo") as f:
            line = next(x for x in f if x.startswith("FileHugePages:"))
        return int(line.split()[1]) * 1024
    except (OSError, StopIteration):
        return None


def _sample(graph, seeds, args):
    """One bulk: (seconds, sampled edges, output bytes, digest of every n_id, user and system
    CPU seconds of this process)."""
    import spsample
    s = spsample.NodeWise([int(f) for f in args.fanouts.split(",")])
    before = os.times()
    t0 = time.perf_counter()
    out = spsample.sample(graph, seeds, sampler=s, batch_size=args.batch_size, seed=1)
    dt = time.perf_counter() - t0
    after = os.times()
    edges = sum(sum(mb.num_sampled_edges) for mb in out)
    nbytes = sum(mb.n_id.nbytes + sum(d.nbytes + s_.nbytes for d, s_ in mb.edges) +
                 sum(e.nbytes for e in mb.edge_ids) for mb in out)
    digest = int(np.bitwise_xor.reduce(np.concatenate([mb.n_id for mb in out]) * 2654435761
                                       % (1 << 61)))
    return dt, edges, nbytes, digest, (after.user - before.user, after.system - before.system)


def child(args):
    """One mode measured in this process: prints a JSON line."""
    import spsample
    drop(args.path)
    if args.mode == "cold":
        args.repeats = 1
    else:
        warm(args.path)
    resident = resident_share(args.path)
    t0 = time.perf_counter()
    if args.mode == "memory":
        g = spsample.load(args.path).graph
    else:
        g = spsample.load(args.path, mmap=True, memory_budget=args.budget).graph
    load_s, load_rss = time.perf_counter() - t0, _peak_rss()
    seeds = np.random.default_rng(0).choice(g.num_nodes, args.seeds, replace=False)
    runs = [_sample(g, seeds, args) for _ in range(args.repeats)]
    row = {"mode": args.mode, "resident_before": resident, "file_huge_pages": _file_huge_pages(),
           "load_s": load_s, "cpu_user_system": [r[4] for r in runs],
           "load_peak_rss": load_rss, "seconds": [r[0] for r in runs],
           "sampled_edges": runs[0][1], "output_bytes": runs[0][2],
           "digests": sorted({r[3] for r in runs}), "peak_rss": _peak_rss(),
           "loadavg": os.getloadavg()}
    if args.mode != "memory":
        row["stats"] = {k: v for k, v in g.last_stats.items() if not isinstance(v, float)}
        row["regions_checked"] = g.map.stats["regions_checked"] if g.map else None
    print(json.dumps(row), flush=True)


def _run(base, mode):
    res = subprocess.run(base + ["--mode", mode], capture_output=True, text=True)
    if res.returncode:
        sys.stderr.write(res.stderr)
        raise SystemExit(1)
    row = json.loads(res.stdout.strip().splitlines()[-1])
    print(json.dumps(row), flush=True)
    return row


def summary(rows, budget):
    """Best and median seconds per mode (each process's first bulk apart: it includes the
    one-time work, the in-memory engine's graph caches and the map's region checks), ratios,
    RSS against the limit, whether every bulk had the same bits."""
    from spsample.io._disk_graph import as_budget
    out = {}
    for mode in ("memory", "disk"):
        later = [s for r in rows[mode] for s in r["seconds"][1:]]
        out[mode] = {"first": [r["seconds"][0] for r in rows[mode]], "best": min(later),
                     "median": statistics.median(later), "runs": len(later),
                     "peak_rss": max(r["peak_rss"] for r in rows[mode]),
                     "resident_before": [r["resident_before"] for r in rows[mode]]}
    cold = rows["cold"][0]
    out["cold"] = {"seconds": cold["seconds"][0], "peak_rss": cold["peak_rss"],
                   "resident_before": cold["resident_before"]}
    out["ratio_best"] = out["memory"]["best"] / out["disk"]["best"]
    out["ratio_median"] = out["memory"]["median"] / out["disk"]["median"]
    out["ratio_cold"] = out["memory"]["best"] / out["cold"]["seconds"]
    limit = (as_budget("disk_sampling", budget) + rows["disk"][0]["output_bytes"]) * 1.2
    out["rss_limit"] = limit
    out["rss_within"] = max(out["disk"]["peak_rss"], out["cold"]["peak_rss"]) <= limit
    digests = {d for mode in rows for r in rows[mode] for d in r["digests"]}
    out["identical"] = len(digests) == 1
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=22)
    p.add_argument("--path", default=None)
    p.add_argument("--budget", default="256MB")
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--seeds", type=int, default=16384)
    p.add_argument("--repeats", type=int, default=4, help="bulks per process")
    p.add_argument("--rounds", type=int, default=2, help="memory and disk processes each")
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
    started = os.getloadavg()
    rows = {"memory": [], "disk": [], "cold": []}
    for _ in range(args.rounds):
        for mode in ("memory", "disk"):
            rows[mode].append(_run(base, mode))
    rows["cold"].append(_run(base, "cold"))
    result = summary(rows, args.budget)
    result.update(file_bytes=os.path.getsize(path), loadavg_start=started,
                  loadavg_end=os.getloadavg(), budget=args.budget)
    print(json.dumps(result, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"summary": result, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
