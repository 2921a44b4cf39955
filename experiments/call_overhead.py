"""The fixed cost of one ``spsample.sample`` call on the native path: wall and CPU ms per call
and the share spent inside the row-wise kernel (issue 28, "per call").

For every graph (R-MAT ``--scale``, the npz ``--dataset``), sampler (NodeWise([15, 10, 5]),
LABOR([15, 10, 5]), RandomWalk(20)) and seed count (``--seeds``: 64, 1024, 16384 by default;
minibatches of ``min(m, --batch-size)`` seeds, so 64 and 1024 seeds are one minibatch and
16384 are 16), it calls ``spsample.sample`` on the same distinct random seeds ``--repeat``
times (at least, and for at least ``--min-seconds``) on 1 thread, and prints one JSON line:
the best wall and CPU ms per call, the kernel's wall ms in that best call (time inside
``spsample._native_kernels.run_rowwise``, wrapped), the rest (Python before and after the
kernel: argument checks, tracing, lowering, building the ``Bulk``), and the medians.

    python experiments/call_overhead.py                       # R-MAT 16 and law-cnr-2000
    python experiments/call_overhead.py --profile nodewise:64 # cProfile of that case's calls
"""

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_DATASET = (Path(__file__).resolve().parents[2] / "shared" / "datasets" / "law-cnr-2000"
                   / "cnr-2000.npz")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", default="16", help="R-MAT scale(s), comma-separated; '' for none")
    p.add_argument("--dataset", default=str(DEFAULT_DATASET), help="CSR npz, or 'none'")
    p.add_argument("--samplers", default="nodewise,labor,walk")
    p.add_argument("--seeds", default="64,1024,16384", help="seeds per call, comma-separated")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=50, help="calls per case, at least")
    p.add_argument("--min-seconds", type=float, default=1.0, help="time per case, at least")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", default="",
                   help="sampler:seeds, e.g. nodewise:64: print a cProfile of that case only")
    p.add_argument("--out", help="also write the measurements to this JSON file")
    return p.parse_args(argv)


def graphs(args):
    import spsample

    for scale in [s for s in args.scale.split(",") if s.strip()]:
        yield f"rmat{int(scale)}", spsample.rmat(int(scale), seed=1)
    if args.dataset.lower() != "none":
        path = Path(args.dataset)
        if not path.is_file():
            print(json.dumps({"skip": str(path), "reason": "dataset file not found"}), flush=True)
            return
        with np.load(path) as z:
            yield path.stem, spsample.Graph.from_csr(z["indptr"], z["indices"])


def samplers(names):
    import spsample

    table = {"nodewise": lambda: spsample.NodeWise([15, 10, 5]),
             "labor": lambda: spsample.LABOR([15, 10, 5]),
             "walk": lambda: spsample.RandomWalk(20)}
    return [(name, table[name]()) for name in names.split(",") if name]


class KernelClock:
    """Wraps ``spsample._native_kernels.run_rowwise`` and sums the wall time spent in it."""

    def __init__(self):
        from spsample import _native_kernels as kernels

        self.kernels, self.inner, self.seconds = kernels, kernels.run_rowwise, 0.0

        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return self.inner(*a, **kw)
            finally:
                self.seconds += time.perf_counter() - t
        kernels.run_rowwise = timed

    def close(self):
        self.kernels.run_rowwise = self.inner


def measure(g, sampler, seeds, batch_size, args, clock):
    import spsample

    call = lambda: spsample.sample(g, seeds, sampler=sampler, batch_size=batch_size)  # noqa: E731
    bulk = call()                                            # warm-up (graph memos, pool)
    if bulk.path != "native":
        raise RuntimeError(f"spsample ran {bulk.path!r}, not the native kernels")
    runs, start = [], time.perf_counter()
    while len(runs) < args.repeat or time.perf_counter() - start < args.min_seconds:
        clock.seconds = 0.0
        w, c = time.perf_counter(), time.process_time()
        call()
        runs.append((time.perf_counter() - w, time.process_time() - c, clock.seconds))
    best = min(runs)
    ms = lambda x: round(1e3 * x, 4)                         # noqa: E731
    return {"calls": len(runs), "edges": bulk.num_edges, "minibatches": len(bulk),
            "wall_ms": ms(best[0]), "cpu_ms": ms(min(r[1] for r in runs)),
            "kernel_ms": ms(best[2]), "rest_ms": ms(best[0] - best[2]),
            "rest_ms_min": ms(min(r[0] - r[2] for r in runs)),
            "wall_ms_median": ms(statistics.median(r[0] for r in runs)),
            "kernel_ms_median": ms(statistics.median(r[2] for r in runs)),
            "rest_share": round((best[0] - best[2]) / best[0], 3)}


def profile(g, sampler, seeds, batch_size, args):
    import spsample

    spsample.sample(g, seeds, sampler=sampler, batch_size=batch_size)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.repeat):
        spsample.sample(g, seeds, sampler=sampler, batch_size=batch_size)
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main(argv=None):
    args = parse_args(argv)
    import spsample
    from spsample import native

    native.set_num_threads(args.threads)
    print(json.dumps({"load_average": [round(x, 2) for x in os.getloadavg()],
                      "threads": args.threads, "spsample": spsample.__file__}), flush=True)
    want = args.profile.split(":") if args.profile else None
    out, clock = [], KernelClock()
    try:
        for gname, g in graphs(args):
            rng = np.random.default_rng(0)
            for sname, sampler in samplers(args.samplers):
                for m in [int(s) for s in args.seeds.split(",") if s]:
                    seeds = rng.choice(g.num_nodes, size=min(m, g.num_nodes), replace=False)
                    b = min(m, args.batch_size)
                    if want:
                        if [sname, str(m)] == want:
                            print(f"== {gname} {sname} {m} seeds", flush=True)
                            profile(g, sampler, seeds, b, args)
                        continue
                    row = {"graph": gname, "sampler": sname, "seeds": int(seeds.size),
                           "batch_size": b, **measure(g, sampler, seeds, b, args, clock)}
                    print(json.dumps(row), flush=True)
                    out.append(row)
    finally:
        clock.close()
    print(json.dumps({"load_average": [round(x, 2) for x in os.getloadavg()]}), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
