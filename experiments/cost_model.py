"""Cost model per sampled edge (issue 28): machine bounds and the per-phase cost of the row-wise
engine's node-wise and LABOR hops, per core.

(a) Machine bounds, from a small C++ microbenchmark compiled at run time with g++ into /tmp:
    ``chase``: ns per dependent random load (pointer chasing over a random cycle) for a buffer of
    the given size; ``gather``: ns per random 4-byte load with many independent loads in flight
    (a sum over random indices); ``stream``: GB/s of a sequential read and of memcpy.
    Buffers: L2-sized (1 MiB), LLC-sized and beyond (256 MiB).
(b) Per sampled edge of uniform node-wise, LABOR, weighted node-wise (``nodewise_w``: weights
    1 / (1 + deg u) of the column u), uniform walks (``walk``: length 20, one per seed) and
    node2vec walks (``node2vec``: p = 0.5, q = 2), built as experiments/bench_sampling.py builds
    them, on R-MAT (``--scale``, fanouts 15,10,5, ``--batches`` x ``--batch-size`` seeds, 1
    thread): CPU ns per edge (time.process_time) of the whole call, and split into phases by a
    profiling build of the extension (module.cpp with ``-DSPSAMPLE_NW_PROFILE``, compiled into
    /tmp, never the shipped build): row lookup (pass 1: indptr per frontier row), selection
    (pass 2 run without the gather), gather of the sampled column ids (pass 2-3 minus
    selection), relabel / dedup (pass 4), begin/end of minibatches, and output writing (the flat
    copy, ``last_timings()[1]``).

Each phase gets a bound from (a) and the fraction measured / bound:
    rows      one independent random load of indptr per frontier row (gather ns at the indptr's
              size) / edges per row
    select    uniform: none from memory (compute: Philox words), given as "-"; LABOR: one
              independent load per entry of the rows longer than the fanout, from the hop's
              table of column words (gather ns at 4 n bytes); weighted: one Philox word per
              entry of the rows longer than the fanout (the keys need every entry's word), at
              the CPU ns per word of the engine's vectorised row stream (``row_words``), or
              the 8 bytes of each such entry's weight at stream bandwidth, whichever is more;
              node2vec: the reads its definition adds to a walk's one column read per step
              (node2vec_reads: the expected column reads of its rejection attempts, the
              column of an attempt accepted without reading it, and one line of row t per
              neighbour test, minus the walk's one), each one independent load (gather ns at
              the 32-bit indices' size); the fence's probes are counted as cache hits
    gather    one independent random load per sampled edge (gather ns at the 32-bit indices'
              size): Floyd's positions in a row longer than a cache line are lines apart
    relabel   one independent random load per edge into the dense table (gather ns at its size)
    output    the flatten's copy of the bytes of an edge (dst, src, eid, half an n_id entry) at
              memcpy bandwidth; (the first writes are part of selection and relabel)

    python experiments/cost_model.py                 # the table (profiling build in /tmp)
    python experiments/cost_model.py --machine-only  # only (a)
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MICRO = r"""
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include <ctime>
static double cpu() { timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
                      return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char** argv) {
    const char* what = argv[1];
    const size_t bytes = strtoull(argv[2], nullptr, 10);
    std::mt19937_64 rng(1);
    if (!strcmp(what, "chase")) {            // one 64-byte line per node, random cycle
        const size_t n = bytes / 64;
        std::vector<uint64_t> perm(n);
        for (size_t i = 0; i < n; ++i) perm[i] = i;
        for (size_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng() % (i + 1)]);
        std::vector<uint64_t> next(n * 8);
        for (size_t i = 0; i < n; ++i) next[perm[i] * 8] = perm[(i + 1) % n] * 8;
        const size_t steps = 20000000;
        uint64_t p = 0;
        for (size_t i = 0; i < n; ++i) p = next[p];
        double t = cpu();
        for (size_t i = 0; i < steps; ++i) p = next[p];
        t = cpu() - t;
        printf("%.3f %llu\n", t / steps * 1e9, (unsigned long long)p);
    } else if (!strcmp(what, "gather")) {    // independent random 4-byte loads
        const size_t n = bytes / 4;
        std::vector<uint32_t> a(n, 1);
        const size_t m = 1 << 24;
        std::vector<uint32_t> idx(m);
        for (auto& x : idx) x = rng() % n;
        uint64_t s = 0;
        for (size_t i = 0; i < m; ++i) s += a[idx[i]];
        double best = 1e9;
        for (int rep = 0; rep < 3; ++rep) {
            double t = cpu();
            for (size_t i = 0; i < m; ++i) s += a[idx[i]];
            best = std::min(best, cpu() - t);
        }
        printf("%.3f %llu\n", best / m * 1e9, (unsigned long long)s);
    } else {                                 // stream: read GB/s, memcpy GB/s (bytes copied)
        const size_t n = bytes / 8;
        std::vector<uint64_t> a(n, 1), b(n, 0);
        double rd = 1e9, cp = 1e9;
        uint64_t s = 0;
        for (int rep = 0; rep < 4; ++rep) {
            double t = cpu();
            for (size_t i = 0; i < n; ++i) s += a[i];
            rd = std::min(rd, cpu() - t);
            a[rep] = s;
            t = cpu();
            memcpy(b.data(), a.data(), bytes);
            cp = std::min(cp, cpu() - t);
            asm volatile("" : : "r"(b.data()) : "memory");
        }
        printf("%.3f %.3f %llu\n", bytes / rd / 1e9, bytes / cp / 1e9, (unsigned long long)s);
    }
    return 0;
}
"""


def _compile_micro():
    exe = Path("/tmp") / f"spsample_costmicro_{hashlib.sha1(MICRO.encode()).hexdigest()[:10]}"
    if not exe.exists():
        src = exe.with_suffix(".cpp")
        src.write_text(MICRO)
        subprocess.run(["g++", "-O2", "-march=native", "-o", str(exe), str(src)], check=True)
    return exe


def machine_bounds(sizes_mib=(1, 8, 32, 256)):
    """(a): chase / gather ns per load per buffer size (MiB), stream read / write GB/s."""
    exe = _compile_micro()

    def run(*a):
        return subprocess.run([str(exe), *map(str, a)], capture_output=True, text=True,
                              check=True).stdout.split()

    out = {"chase_ns": {}, "gather_ns": {}}
    for mib in sizes_mib:
        out["chase_ns"][mib] = float(run("chase", mib << 20)[0])
        out["gather_ns"][mib] = min(float(run("gather", mib << 20)[0]) for _ in range(2))
    rd, wr, _ = run("stream", 256 << 20)
    out["stream_read_gbs"], out["copy_gbs"] = float(rd), float(wr)
    return out


def interp(table, mib):
    """ns per load at a buffer of ``mib`` MiB, linear in log size between measured sizes."""
    import math
    keys = sorted(table)
    if mib <= keys[0]:
        return table[keys[0]]
    for a, b in zip(keys, keys[1:]):
        if mib <= b:
            f = (math.log(mib) - math.log(a)) / (math.log(b) - math.log(a))
            return table[a] + f * (table[b] - table[a])
    return table[keys[-1]]


# ----------------------------------------------------------------------------- profiling build
def build_profile(root=ROOT):
    """A copy of ``root``'s package in /tmp with the extension built with -DSPSAMPLE_NW_PROFILE
    (cached by the native sources' hash); returns the directory to put on sys.path."""
    native = sorted(p for p in (root / "native").rglob("*") if p.is_file())
    digest = hashlib.sha1(b"".join(p.read_bytes() for p in native)).hexdigest()[:12]
    top = Path("/tmp") / f"spsample_nwprof_{digest}"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    so = top / "spsample" / f"_native_kernels{suffix}"
    if so.exists():
        return top
    shutil.rmtree(top, ignore_errors=True)
    shutil.copytree(root / "spsample", top / "spsample",
                    ignore=shutil.ignore_patterns("_native_kernels*", "__pycache__"))
    import pybind11
    cmd = ["g++", "-O3", "-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-fvisibility=hidden",
           "-fopenmp", "-shared", "-fPIC", "-DSPSAMPLE_NW_PROFILE",
           f"-I{root / 'native'}", f"-I{pybind11.get_include()}",
           f"-I{sysconfig.get_paths()['include']}", str(root / "native" / "module.cpp"),
           "-o", str(so)]
    subprocess.run(cmd, check=True)
    return top


# ----------------------------------------------------------------------------- per edge
PHASES = ("rows", "select", "gather", "relabel", "begin_end", "output")
# Samplers whose selection reads memory besides the row (weights; node2vec's neighbour tests):
# the selection's second, profiling-only run finds those lines in cache, so its cold misses
# land in "gather"; the table gives select + gather too.
READS_IN_SELECT = ("nodewise_w", "node2vec")


def word_ns(K, n=1 << 16, reps=64):
    """CPU ns per Philox word of a weighted row's stream as the engine computes it
    (``row_words``: vectorised, four words per block; rows of ``n`` words, in L2), best of 5;
    None for a tree without the hook."""
    if not hasattr(K, "row_words"):
        return None
    best = None
    for _ in range(5):
        t = time.process_time()
        for _ in range(reps):
            K.row_words(7, 1, 2, 3, 4, n)
        t = time.process_time() - t
        best = t if best is None else min(best, t)
    return best / (n * reps) * 1e9


def node2vec_reads(indptr, indices, t, v, p, q, attempts=256):
    """Expected reads per node2vec step by the definition (samplers/_walks.py: rejection with
    ``bound = max(1, 1/p, 1/q)``, ``x = open_unit(w) * bound``; value ``1/p`` for ``u == t``, else
    ``1`` when ``u`` is in row ``t``, else ``1/q``), averaged over the steps ``t -> v -> ?``:
    ``attempts`` (capped at the kernel's ``attempts``), ``reads`` (attempts whose column is read:
    ``x`` at or above the smallest value), ``accepted_unread`` (the accepted attempt's column was
    not read by the decision, so the gather reads it) and ``tests`` (attempts that search row
    ``t``: ``x`` between the two values ``u``'s membership can give). Any implementation that
    gives the definition's bits makes these reads."""
    import numpy as np
    bound = max(1.0, 1 / p, 1 / q)
    lo = min(1.0, 1 / p, 1 / q)
    span = abs(1.0 - 1 / q)          # x in [min(1, 1/q), max(1, 1/q)): the membership decides
    acc, tests = [], []
    for tt, vv in zip(t.tolist(), v.tolist()):
        nv = indices[indptr[vv]:indptr[vv + 1]]
        if nv.size == 0:
            continue
        back = nv == tt
        found = np.isin(nv, indices[indptr[tt]:indptr[tt + 1]])
        val = np.where(back, 1 / p, np.where(found, 1.0, 1 / q))
        acc.append(val.mean() / bound)
        tests.append(span * (~back).mean() / bound)
    acc, tests = np.array(acc), np.array(tests)
    n_att = (1 - (1 - acc) ** attempts) / acc
    return {"attempts": float(n_att.mean()), "reads": float((n_att * (1 - lo / bound)).mean()),
            "accepted_unread": float(np.minimum(1.0, lo / bound / acc).mean()),
            "tests": float((n_att * tests).mean())}


def walk_steps(batch, limit=4096):
    """``(t, v)`` of up to ``limit`` steps of a bulk of walks after their first hop (global ids)."""
    import numpy as np
    ts, vs, n = [], [], 0
    for mb in batch:
        for h in range(1, mb.num_hops):
            t, v = mb.global_edges(h)
            ts.append(t[:256])
            vs.append(v[:256])
            n += min(t.size, 256)
        if n >= limit:
            break
    return np.concatenate(ts)[:limit], np.concatenate(vs)[:limit]


def profile_samplers(args, samplers):
    """(b) in this process (the profiling build must be first on sys.path)."""
    import numpy as np
    import spsample
    from spsample import _native_kernels as K
    from spsample import native as _native
    from bench_sampling import make_samplers
    _native.set_num_threads(1)
    if args.graph:
        with np.load(args.graph) as z:
            g = spsample.Graph.from_csr(z["indptr"], z["indices"])
    else:
        g = spsample.rmat(args.scale, seed=1)
    rng = np.random.default_rng(0)
    seeds = rng.choice(g.num_nodes, size=args.batches * args.batch_size,
                       replace=False).astype(np.int64)
    spec = argparse.Namespace(fanouts=args.fanouts, layer_fanouts="1024", walk_length=20,
                              p=0.5, q=2.0, samplers=",".join(samplers))
    rows = {}
    for name, sampler, graph in make_samplers(spec, g):
        run = lambda: spsample.sample(graph, seeds, sampler=sampler,  # noqa: E731
                                      batch_size=args.batch_size, seed=0)
        run()
        if hasattr(K, "nw_profile"):
            K.nw_profile()
        best, prof, out_s = None, None, None
        for _ in range(args.repeat):
            t = time.process_time()
            b = run()
            t = time.process_time() - t
            p = K.nw_profile() if hasattr(K, "nw_profile") else None
            o = K.last_timings()[1]
            if best is None or t < best:
                best, prof, out_s, edges = t, p, o, b.num_edges
            del b
        r = {"edges": int(edges), "total_ns": best / edges * 1e9}
        if prof is not None:
            begin, rws, selg, sel, rel, nrows, nedges, tab, nlong = prof[:9]
            r.update(rows=rws / edges * 1e9, select=(sel + tab) / edges * 1e9,
                     word_table=tab / edges * 1e9, long_entries_per_edge=nlong / nedges,
                     gather=max(selg - sel, 0.0) / edges * 1e9, relabel=rel / edges * 1e9,
                     begin_end=begin / edges * 1e9, output=out_s / edges * 1e9,
                     edges_per_row=nedges / nrows)
            r["total_ns"] -= sel / edges * 1e9     # the profiling build's second selection
        if name == "node2vec":
            t, v = walk_steps(run())
            r["definition"] = node2vec_reads(np.asarray(g.indptr), np.asarray(g.indices), t, v,
                                             spec.p, spec.q)
        r["edges_per_cpu_s"] = 1e9 / r["total_ns"]
        rows[name] = r
    graph = {"num_nodes": g.num_nodes, "indptr_mib": g.indptr.nbytes / 2**20,
             "indices32_mib": g.num_edges * 4 / 2**20, "word_ns": word_ns(K)}
    return rows, graph


def bounds_for(name, r, graph, mach):
    """ns per edge that the memory system allows for each phase (see the module docstring)."""
    epr = r["edges_per_row"]
    table_mib = graph["num_nodes"] * 4 / 2**20
    g = mach["gather_ns"]
    out_bytes = 24 + 8 * 0.5          # dst, src, eid + about half an n_id entry per edge
    long_entries = r.get("long_entries_per_edge", 0.0)
    select = None
    if name == "labor" and long_entries:
        select = long_entries * interp(g, table_mib)
    elif name == "nodewise_w" and long_entries and graph.get("word_ns"):
        select = long_entries * max(graph["word_ns"], 8 / mach["stream_read_gbs"])
    elif name == "node2vec" and "definition" in r:
        d = r["definition"]
        extra = d["reads"] + d["accepted_unread"] + d["tests"] - 1
        select = max(extra, 0.0) * interp(g, graph["indices32_mib"])
    return {"rows": interp(g, graph["indptr_mib"]) / epr,
            "select": select,
            "gather": interp(g, graph["indices32_mib"]),
            "relabel": interp(g, table_mib),
            "begin_end": None,
            "output": out_bytes / mach["copy_gbs"]}


def table(rows, graph, mach):
    lines = ["| sampler | phase | ns/edge | bound ns/edge | fraction of bound |",
             "|---|---|---|---|---|"]
    for name, r in rows.items():
        if "rows" not in r:
            lines.append(f"| {name} | total | {r['total_ns']:.1f} | | |")
            continue
        bd = bounds_for(name, r, graph, mach)
        total_bound = sum(v for v in bd.values() if v)
        for ph in PHASES:
            b = bd[ph]
            frac = f"{b / r[ph]:.2f}" if b and r[ph] > 0 else "-"
            lines.append(f"| {name} | {ph} | {r[ph]:.1f} | {b:.1f} | {frac} |" if b else
                         f"| {name} | {ph} | {r[ph]:.1f} | - | - |")
            if ph == "select" and r.get("word_table") and name == "labor":
                lines.append(f"| {name} | (select: word tables) | {r['word_table']:.1f} | - | - |")
            if ph == "gather" and name in READS_IN_SELECT:
                both = r["select"] + r["gather"]
                lines.append(f"| {name} | (select + gather, one cold pass) | {both:.1f} | - | - |")
        lines.append(f"| {name} | total (process_time; {r['edges_per_cpu_s'] / 1e6:.1f} M edges "
                     f"per CPU-s) | {r['total_ns']:.1f} | {total_bound:.1f} | "
                     f"{total_bound / r['total_ns']:.2f} |")
        long_rows = (f"; long-row entries per edge {r['long_entries_per_edge']:.1f}"
                     if name in ("labor", "nodewise_w") else "")
        lines.append(f"| {name} | (edges per row {r['edges_per_row']:.2f}{long_rows}) | | | |")
        if "definition" in r:
            d = r["definition"]
            lines.append(f"| {name} | (per step by the definition: attempts {d['attempts']:.2f}, "
                         f"column reads {d['reads']:.2f} + {d['accepted_unread']:.2f} by the "
                         f"gather, neighbour tests {d['tests']:.2f}) | | | |")
    lines += target_lines(rows, graph, mach)
    return "\n".join(lines)


def target_lines(rows, graph, mach):
    """Issue 28's two ratio targets beside the bounds: a sampler's bound (the least time any
    implementation of its definition takes on this machine's memory system) against twice the
    measured time of its base (weighted: uniform node-wise; node2vec: the uniform walk)."""
    out = []
    for name, base in (("nodewise_w", "nodewise"), ("node2vec", "walk")):
        if name not in rows or base not in rows or "rows" not in rows[name]:
            continue
        bound = sum(v for v in bounds_for(name, rows[name], graph, mach).values() if v)
        target = 2 * rows[base]["total_ns"]
        out.append(f"| {name} | bound {bound:.1f} against 2 x measured {base} {target:.1f} "
                   f"(bound / target {bound / target:.2f}) | | | |")
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=int, default=18)
    p.add_argument("--graph", default="", help="a CSR npz (indptr, indices) instead of R-MAT")
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--samplers", default="nodewise,labor")
    p.add_argument("--machine-only", action="store_true")
    p.add_argument("--no-profile", action="store_true",
                   help="time the package on sys.path as it is (no profiling build, no split)")
    p.add_argument("--root", default=str(ROOT), help="source tree of the profiling build")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.child:
        rows, graph = profile_samplers(args, args.samplers.split(","))
        print(json.dumps({"rows": rows, "graph": graph}))
        return
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    mach = machine_bounds()
    print(json.dumps({"load": load, "machine": mach}), flush=True)
    if args.machine_only:
        return
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if not args.no_profile:
        env["PYTHONPATH"] = str(build_profile(Path(args.root)))
    child = [sys.executable, __file__, "--child", "--scale", str(args.scale), "--graph",
             args.graph, "--fanouts",
             args.fanouts, "--batches", str(args.batches), "--batch-size", str(args.batch_size),
             "--repeat", str(args.repeat), "--samplers", args.samplers]
    out = subprocess.run(child, env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(res), flush=True)
    print(table(res["rows"], res["graph"], mach))
    with open("/proc/loadavg") as f:
        print("load average", " ".join(f.read().split()[:3]))


if __name__ == "__main__":
    main()
