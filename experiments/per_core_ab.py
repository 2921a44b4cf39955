"""A/B of two spsample trees per core (issue 28): CPU ns per sampled edge (time.process_time) and
sampled edges per CPU-second of one epoch, and wall seconds per epoch, alternated round by round
so both see the same load.

One epoch = ``--batches`` x ``--batch-size`` distinct random seeds on R-MAT ``--scale`` sampled
in one call per sampler (node-wise and LABOR, fanouts 15,10,5), at ``--threads``; ``--busy``
runs one busy process (``while True: pass``) beside the measurements (a core held by someone
else). Each round runs every tree in its own process (``PYTHONPATH=<tree>``); the minimum of
``--repeat`` epochs per round and of all rounds is reported, with the load average.

    python experiments/per_core_ab.py --trees /work/main,. --threads 1
    python experiments/per_core_ab.py --trees /work/main,. --threads 2 --busy
"""

import argparse
import json
import os
import subprocess
import sys
import time


def child(args):
    import numpy as np
    import spsample
    from spsample import native as _native

    _native.set_num_threads(args.threads)
    g = spsample.rmat(args.scale, seed=1)
    seeds = np.random.default_rng(0).choice(g.num_nodes, size=args.batches * args.batch_size,
                                            replace=False).astype(np.int64)
    fan = [int(f) for f in args.fanouts.split(",")]
    out = {}
    for name in args.samplers.split(","):
        sampler = spsample.LABOR(fan) if name == "labor" else spsample.NodeWise(fan)
        run = lambda: spsample.sample(g, seeds, sampler=sampler,  # noqa: E731
                                      batch_size=args.batch_size, seed=0)
        b = run()
        edges = b.num_edges
        del b
        cpu, wall = [], []
        for _ in range(args.repeat):
            t, w = time.process_time(), time.perf_counter()
            b = run()
            cpu.append(time.process_time() - t)
            wall.append(time.perf_counter() - w)
            del b
        out[name] = {"edges": edges, "cpu_s": min(cpu), "wall_s": min(wall)}
    print(json.dumps(out))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trees", default="/work/main,.", help="two (or more) source trees, A first")
    p.add_argument("--scale", type=int, default=18)
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--samplers", default="nodewise,labor")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--busy", action="store_true", help="one busy process beside the runs")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child(args)
    trees = [os.path.abspath(t) for t in args.trees.split(",")]
    flags = ["--scale", str(args.scale), "--fanouts", args.fanouts, "--batches",
             str(args.batches), "--batch-size", str(args.batch_size), "--threads",
             str(args.threads), "--samplers", args.samplers, "--repeat", str(args.repeat)]
    best = {t: {} for t in trees}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    load_before = loadavg()
    try:
        for _ in range(args.rounds):
            for t in trees:
                env = dict(os.environ, PYTHONPATH=t, OMP_NUM_THREADS=str(args.threads))
                r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *flags],
                                   env=env, capture_output=True, text=True, cwd=t)
                if r.returncode:
                    sys.exit(r.stderr[-3000:])
                for name, m in json.loads(r.stdout.strip().splitlines()[-1]).items():
                    cur = best[t].setdefault(name, dict(m))
                    cur["cpu_s"] = min(cur["cpu_s"], m["cpu_s"])
                    cur["wall_s"] = min(cur["wall_s"], m["wall_s"])
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    print(f"load average before {load_before}, after {loadavg()}; threads {args.threads}, "
          f"busy process: {args.busy}")
    a = trees[0]
    print("| sampler | tree | edges | CPU ns/edge | M edges per CPU-s | wall s/epoch | "
          "CPU ratio A/B | wall ratio A/B |")
    print("|---|---|---|---|---|---|---|---|")
    for name in best[a]:
        for t in trees:
            m = best[t][name]
            ns = m["cpu_s"] / m["edges"] * 1e9
            ra = best[a][name]["cpu_s"] / m["cpu_s"]
            rw = best[a][name]["wall_s"] / m["wall_s"]
            print(f"| {name} | {t} | {m['edges']} | {ns:.1f} | {m['edges'] / m['cpu_s'] / 1e6:.1f} "
                  f"| {m['wall_s']:.3f} | {ra:.2f} | {rw:.2f} |")


if __name__ == "__main__":
    main()
