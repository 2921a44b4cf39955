"""Sampled edges per second of heterogeneous node-wise and link (with negatives) minibatches,
spsample against DGL 2.1 in the same process.

* ``hetero``: ``--batches`` minibatches of ``--batch-size`` distinct random seeds of the target
  type of a HeCo graph (DBLP: authors, ACM: papers), fanouts ``--fanouts`` per relation and
  hop. spsample: ``spsample.sample`` on the :class:`~spsample.HeteroGraph`, one bulk call;
  DGL: ``dgl.dataloading.NeighborSampler(...).sample_blocks`` per minibatch on the same
  heterograph (``sample_neighbors`` + ``to_block``, CSC created up front).
* ``link``: ``--batches`` minibatches of ``--batch-size`` random seed edges of musae-facebook
  (both directions stored) with ``--neg-ratio`` uniform negatives per edge. spsample:
  :class:`~spsample.LinkLoader` (binary negatives, ``pipeline=False`` so the time is the
  loader's own work: negatives, sampling of both endpoints' neighbourhoods, local ids, torch
  batches); DGL: ``as_edge_prediction_sampler(NeighborSampler, negative_sampler=Uniform)``
  ``.sample(g, eids)`` per minibatch (pair graphs, negatives, blocks). Neither excludes the
  seed edges. The same seed edges go to both.

Sampled edges = edges of the returned blocks / minibatches. Each JSON line also carries the
1-minute load average of the machine before and after its interleaved rounds
(``load_avg``: the shared machine's other work; compare runs of similar load only). The
LinkLoader's per-bulk work (negatives, seed relabelling, edge layout, seed-edge exclusion)
runs as native passes since issue 16's "after" table; what is timed is the same loop over the
same batches (bit for bit). DGL re-expands every vertex of a layer (the seeds again at hop
2), so it samples more edges per minibatch: compare edges/s and the time per epoch (both
printed); on a shared, loaded machine the CPU seconds of the process (``cpu_seconds``, least
of the rounds) are the steadier measure. Best of ``--repeat`` rounds, the two interleaved.
Prints one JSON line per measurement and writes them all to ``--out``.
``--contend CORE`` holds a core with a busy process pinned to it during the measurements (the
contended runs of experiments/README.md, issue 16): both processes' threads then share the
other core, so the ratios are those of CPU efficiency, against DGL's fused sampler (which DGL
runs only with more than one thread).

    /tmp/peers/bin/python experiments/bench_hetero.py --threads 2 --repeat 5 [--contend 1]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", default="hetero,link")
    p.add_argument("--hetero-graphs", default="dblp,acm")
    p.add_argument("--fanouts", default="10,10", help="per hop, hop 1 first")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--batches", type=int, default=32)
    p.add_argument("--neg-ratio", type=float, default=1.0)
    p.add_argument("--bulk-size", type=int, default=4,
                   help="LinkLoader minibatches per bulk (default 4, the loader's default; "
                        "one bulk for the whole epoch measured no faster)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-peer", action="store_true", help="spsample only")
    p.add_argument("--contend", type=int, default=None, metavar="CORE",
                   help="run a CPU-bound process pinned to CORE during the measurements (a "
                        "core held by another process, reproducibly); its share of the core is "
                        "in each JSON line's hog_share")
    p.add_argument("--out", default=None)
    return p.parse_args(argv)


def import_dgl():
    """DGL 2.1 with its graphbolt loader made optional (see experiments/README.md)."""
    import types
    try:
        import dgl
        return dgl
    except (ImportError, OSError, FileNotFoundError) as exc:
        if "graphbolt" not in repr(exc) and "torchdata" not in repr(exc):
            raise
    for name in [m for m in sys.modules if m == "dgl" or m.startswith("dgl.")]:
        del sys.modules[name]
    sys.modules["dgl.graphbolt"] = types.ModuleType("dgl.graphbolt")
    import dgl
    return dgl


def best_of(runs, repeat):
    """Time ``runs`` (``{path: run}``) in turn, ``repeat`` rounds (interleaved, so the load of
    the shared machine hits all alike): ``{path: (units, best s, median s)}``."""
    times = {p: [] for p in runs}
    cpu = {p: [] for p in runs}
    units = {}
    for _ in range(repeat):
        for path, run in runs.items():
            c, t = time.process_time(), time.perf_counter()
            units[path] = run()
            times[path].append(time.perf_counter() - t)
            cpu[path].append(time.process_time() - c)
    out = {}
    for path, ts in times.items():
        ts.sort()
        out[path] = (units[path], ts[0], ts[len(ts) // 2], min(cpu[path]))
    return out


# ---------------------------------------------------------------------- heterogeneous
def hetero_seeds(num, batches, batch_size, rng):
    import numpy as np
    size = min(batch_size, num)
    return [np.sort(rng.choice(num, size, replace=False)).astype(np.int64)
            for _ in range(batches)]


def spsample_hetero(g, target, seeds, fanouts):
    import numpy as np
    import spsample
    all_seeds = np.concatenate(seeds)
    sampler = spsample.NodeWise(list(fanouts))

    def run():
        mbs = spsample.sample(g, (target, all_seeds), sampler=sampler,
                              batch_size=seeds[0].size)
        return sum(sum(sum(h) for h in mb.num_sampled_edges.values()) for mb in mbs)
    return run


def dgl_heterograph(g, dgl, torch):
    import numpy as np
    data = {}
    for rel in g.relations:
        indptr, indices, _ = g.csr(rel)
        dst = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        data[rel] = (torch.from_numpy(indices.astype(np.int64)), torch.from_numpy(dst))
    dg = dgl.heterograph(data, num_nodes_dict=dict(g.num_nodes))
    dg.create_formats_()
    return dg


def dgl_hetero(dg, target, seeds, fanouts, dgl, torch):
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))
    batches = [{target: torch.from_numpy(s)} for s in seeds]

    def run():
        edges = 0
        for s in batches:
            _, _, blocks = sampler.sample_blocks(dg, s)
            edges += sum(int(b.num_edges()) for b in blocks)
        return edges
    return run


# ---------------------------------------------------------------------- link
def spsample_link(graph, edge_ids, batch_size, fanouts, neg_ratio, bulk_size):
    import numpy as np
    import spsample
    src, dst = graph.edge_index()
    edges = np.stack([src[edge_ids], dst[edge_ids]])
    loader = spsample.LinkLoader(graph, edges, sampler=spsample.NodeWise(list(fanouts)),
                                 batch_size=batch_size, neg_ratio=neg_ratio, shuffle=False,
                                 pipeline=False, bulk_size=bulk_size)

    def run():
        for _ in loader:
            pass
        return loader.last_stats["sampled_edges"]
    return run


def dgl_link(graph, edge_ids, batch_size, fanouts, neg_ratio, dgl, torch):
    import numpy as np
    src, dst = graph.edge_index()
    dg = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=graph.num_nodes)
    dg.create_formats_()
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler(list(reversed(fanouts))),
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(int(neg_ratio)))
    batches = [torch.from_numpy(np.ascontiguousarray(edge_ids[i:i + batch_size]))
               for i in range(0, edge_ids.size, batch_size)]

    def run():
        edges = 0
        for eids in batches:
            _, _, _, blocks = sampler.sample(dg, eids)
            edges += sum(int(b.num_edges()) for b in blocks)
        return edges
    return run


# ---------------------------------------------------------------------- driver
class Hog:
    """``--contend CORE``: a busy loop in a child process pinned to ``CORE`` while it is open;
    :meth:`share` is the fraction of that core it got since the last call (1.0: nothing else
    ran there)."""

    def __init__(self, core):
        import subprocess
        code = f"import os\nos.sched_setaffinity(0, {{{int(core)}}})\nwhile True: pass"
        self.proc = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(0.3)
        self.mark = self._cpu(), time.perf_counter()

    def _cpu(self):
        with open(f"/proc/{self.proc.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def share(self):
        cpu, t = self._cpu(), time.perf_counter()
        out = (cpu - self.mark[0]) / max(t - self.mark[1], 1e-9)
        self.mark = cpu, t
        return round(out, 2)

    def close(self):
        self.proc.kill()
        self.proc.wait()


def measure(rows, base, runs, repeat, hog=None):
    """Interleaved best-of-``repeat`` of every run; a JSON line each, then the ratio."""
    got = {}
    before = os.getloadavg()[0]
    if hog is not None:
        hog.share()
    timed = best_of(runs, repeat)
    load = [round(before, 2), round(os.getloadavg()[0], 2)]
    if hog is not None:
        base = dict(base, contend=True, hog_share=hog.share())
    for path, (edges, best, median, cpu) in timed.items():
        row = dict(base, path=path, load_avg=load, sampled_edges=int(edges),
                   seconds=round(best, 4),
                   seconds_median=round(median, 4), cpu_seconds=round(cpu, 4),
                   edges_per_s_M=round(edges / best / 1e6, 3))
        rows.append(row)
        got[path] = row
        print(json.dumps(row), flush=True)
    a, b = got.get("spsample"), got.get("dgl")
    if a and b:
        r = dict(task=a["task"], graph=a["graph"], threads=a["threads"], load_avg=load,
                 hog_share=base.get("hog_share"),
                 ratio_edges_per_s=round(a["edges_per_s_M"] / b["edges_per_s_M"], 2),
                 ratio_epoch_time=round(b["seconds"] / a["seconds"], 2),
                 ratio_edges_per_cpu_s=round((a["sampled_edges"] / a["cpu_seconds"])
                                             / (b["sampled_edges"] / b["cpu_seconds"]), 2),
                 ratio_edges_per_s_median=round(
                     (a["sampled_edges"] / a["seconds_median"])
                     / (b["sampled_edges"] / b["seconds_median"]), 2))
        rows.append(r)
        print(json.dumps(r), flush=True)


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import numpy as np
    from spsample import native as _native
    _native.set_num_threads(args.threads)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    dgl = torch = None
    if not args.no_peer:
        import torch
        dgl = import_dgl()
        dgl.utils.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    rows, rng = [], np.random.default_rng(0)
    base0 = dict(threads=args.threads, batch_size=args.batch_size, batches=args.batches,
                 fanouts=fanouts, omp_wait_policy=os.environ["OMP_WAIT_POLICY"],
                 dgl=None if dgl is None else dgl.__version__)
    tasks = args.tasks.split(",")
    hog = None if args.contend is None else Hog(args.contend)
    try:
        run_tasks(args, tasks, rows, rng, base0, fanouts, dgl, torch, hog)
    finally:
        if hog is not None:
            hog.close()
    if args.out:
        with open(args.out, "w") as fh:
            json.dump([r for r in rows if r], fh, indent=1)


def run_tasks(args, tasks, rows, rng, base0, fanouts, dgl, torch, hog):
    import spsample
    if "hetero" in tasks:
        for name in args.hetero_graphs.split(","):
            ds = spsample.io.from_heco(DATA / "heco-hetero" / name)
            g, target = ds.graph, ds.target_type
            seeds = hetero_seeds(g.num_nodes[target], args.batches, args.batch_size, rng)
            base = dict(base0, task="hetero_nodewise", graph=name, target=target,
                        relations=len(g.relations), edges=int(sum(g.num_edges.values())))
            runs = {"spsample": spsample_hetero(g, target, seeds, fanouts)}
            if dgl is not None:
                runs["dgl"] = dgl_hetero(dgl_heterograph(g, dgl, torch), target, seeds,
                                         fanouts, dgl, torch)
            measure(rows, base, runs, args.repeat, hog)
    if "link" in tasks:
        graph = spsample.io.from_musae(DATA / "musae-facebook").graph
        m = args.batches * args.batch_size
        edge_ids = rng.choice(graph.num_edges, min(m, graph.num_edges), replace=False)
        base = dict(base0, task="link_negatives", graph="musae-facebook",
                    neg_ratio=args.neg_ratio, edges=int(graph.num_edges))
        bulk = args.bulk_size
        base["bulk_size"] = bulk
        runs = {"spsample": spsample_link(graph, edge_ids, args.batch_size, fanouts,
                                          args.neg_ratio, bulk)}
        if dgl is not None:
            runs["dgl"] = dgl_link(graph, edge_ids, args.batch_size, fanouts, args.neg_ratio,
                                   dgl, torch)
        measure(rows, base, runs, args.repeat, hog)


if __name__ == "__main__":
    main()
