"""Aggregation and whole training steps: spsample's layers against scatter, PyG and DGL.

Two measurements on the same sampled batches (``--graph``, node-wise ``--fanouts``,
``--batch-size`` seeds, ``--batches`` of them), the methods alternating round by round:

* ``aggregate``: one layer's neighbour mean, forward and forward + backward (gradient with
  respect to the input rows), for every layer of the batches: ``spmm`` (torch CSR products,
  ``spsample.train.aggregate``), ``scatter`` (``index_select`` + ``index_add_``), ``dgl``
  (DGL 2.1's ``GSpMM``, ``dgl.ops.copy_u_mean`` on the layer's block);
* ``step``: one training step (forward, loss, backward, Adam) of a ``--layers``-layer
  GraphSAGE, hidden ``--hidden``: spsample's built-in layers with ``spmm`` and ``scatter``
  aggregation, PyG's ``SAGEConv`` (``conv="pyg"``, spsample's dropout), and DGL's
  ``SAGEConv`` on the batch as DGL blocks (torch dropout); each with its median step time and
  the peak RSS growth of its steps (``/proc/self/clear_refs`` reset before each method).

    OMP_WAIT_POLICY=passive /tmp/peers/bin/python experiments/bench_aggregation.py --graph rmat:18
    OMP_WAIT_POLICY=passive /tmp/peers/bin/python experiments/bench_aggregation.py \\
        --graph musae-facebook --dense --fanouts 10,10 --layers 2 --batch-size 512

``--dense`` turns sparse features (musae-facebook's 4,714 columns) into a dense float32 array,
the case where PyG's ``SAGEConv`` aggregates whole input rows before projecting.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="rmat:18")
    p.add_argument("--dense", action="store_true", help="densify sparse features")
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--parts", default="aggregate,step")
    p.add_argument("--steps", default="spmm,scatter,pyg,dgl")
    p.add_argument("--out", default=None)
    return p.parse_args(argv)


def load(name, dense):
    import scipy.sparse as sp

    import spsample

    if name.startswith("rmat:"):
        g = spsample.rmat(int(name.split(":")[1]), seed=1)
        rng = np.random.default_rng(0)
        return g, rng.random((g.num_nodes, 128), dtype=np.float32), rng.integers(0, 16,
                                                                                 g.num_nodes)
    ds = spsample.io.from_musae(DATASETS / name)
    x = ds.features
    if dense:
        x = (x.toarray() if sp.issparse(x) else np.asarray(x)).astype(np.float32)
    elif sp.issparse(x):
        x = x.astype(np.float32)
    return ds.graph, x, ds.labels


def import_dgl():
    sys.modules.setdefault("dgl.graphbolt", type(sys)("dgl.graphbolt"))
    import dgl

    return dgl


def _median_ms(fn, rounds):
    fn()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def bench_aggregate(batches, args, have_dgl):
    import torch

    from spsample.train import aggregate, scatter_aggregate

    dgl = import_dgl() if have_dgl else None
    rows = []
    for layer in range(batches[0].num_layers):
        width = 128
        cases = []
        for bt in batches:
            le, adj = bt.layer(layer), bt.adjacency(layer)
            h = torch.rand(le.num_src, width, requires_grad=True)
            g = torch.rand(le.num_dst, width)
            blk = bt.blocks()[layer].to_dgl() if dgl else None
            cases.append((le, adj, h, g, blk))
        fns = {
            "spmm": lambda c: aggregate(c[2], c[1]),
            "scatter": lambda c: scatter_aggregate(c[2], c[0].edge_index, c[0].num_dst),
        }
        if dgl:
            fns["dgl"] = lambda c: dgl.ops.copy_u_mean(c[4], c[2])
        result = {name: {"forward_ms": [], "forward_backward_ms": []} for name in fns}
        for _ in range(args.rounds):
            for name, fn in fns.items():
                with torch.no_grad():
                    result[name]["forward_ms"].append(
                        _median_ms(lambda: [fn(c) for c in cases], 1))

                def both():
                    for c in cases:
                        c[2].grad = None
                        fn(c).backward(c[3])
                result[name]["forward_backward_ms"].append(_median_ms(both, 1))
        for name, r in result.items():
            rows.append(dict(part="aggregate", layer=layer, method=name, width=width,
                             edges=sum(c[0].edge_index.shape[1] for c in cases),
                             forward_ms=statistics.median(r["forward_ms"]),
                             forward_backward_ms=statistics.median(r["forward_backward_ms"])))
    return rows


def _rss_hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def _rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def step_runners(batches, num_features, classes, args, names):
    import torch

    from spsample.train import GraphSAGE

    runners = {}
    for name in names:
        torch.manual_seed(0)
        if name in ("spmm", "scatter"):
            model = GraphSAGE(num_features, args.hidden, classes, num_layers=args.layers,
                              aggregation=name)
            run = (lambda m: lambda bt: m(bt))(model)
        elif name == "pyg":
            model = GraphSAGE(num_features, args.hidden, classes, num_layers=args.layers,
                              conv="pyg")
            run = (lambda m: lambda bt: m(bt))(model)
        elif name == "dgl":
            dgl = import_dgl()
            model = _dgl_sage(dgl, num_features, args.hidden, classes, args.layers)
            blocks = {id(bt): [b.to_dgl() for b in bt.blocks()] for bt in batches}
            run = (lambda m, blocks: lambda bt: m(blocks[id(bt)], bt.x))(model, blocks)
        else:
            raise SystemExit(f"unknown step method {name!r}")
        runners[name] = (model, run, torch.optim.Adam(model.parameters(), lr=0.003))
    return runners


def _dgl_sage(dgl, f, hidden, classes, layers):
    import torch

    class SAGE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            sizes = [f] + [hidden] * (layers - 1) + [classes]
            self.layers = torch.nn.ModuleList(dgl.nn.SAGEConv(a, b, "mean")
                                              for a, b in zip(sizes[:-1], sizes[1:]))

        def forward(self, blocks, h):
            for i, (layer, block) in enumerate(zip(self.layers, blocks)):
                h = torch.nn.functional.dropout(h, 0.5, self.training)
                h = layer(block, h)
                if i < layers - 1:
                    h = torch.relu(h)
            return h

    return SAGE()


def bench_step(batches, num_features, classes, args):
    import torch

    names = args.steps.split(",")
    runners = step_runners(batches, num_features, classes, args, names)
    times = {name: [] for name in names}
    peaks = {name: 0.0 for name in names}

    def one_step(name, bt):
        model, run, opt = runners[name]
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(run(bt), bt.target).backward()
        opt.step()

    for name in names:                                  # warm-up
        one_step(name, batches[0])
    for _ in range(args.rounds):
        for name in names:
            base = _rss_mb()
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
            for bt in batches:
                t = time.perf_counter()
                one_step(name, bt)
                times[name].append(time.perf_counter() - t)
            peaks[name] = max(peaks[name], (_rss_hwm_mb() or 0) - (base or 0))
    return [dict(part="step", method=name, step_ms=1e3 * statistics.median(times[name]),
                 peak_growth_mb=peaks[name]) for name in names]


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import torch

    import spsample

    torch.set_num_threads(args.threads)
    graph, x, y = load(args.graph, args.dense)
    seeds = np.random.default_rng(1).permutation(graph.num_nodes)[:args.batch_size *
                                                                   args.batches]
    fanouts = [int(f) for f in args.fanouts.split(",")]
    loader = spsample.Loader(graph, seeds, sampler=spsample.NodeWise(fanouts),
                             batch_size=args.batch_size, features=x, labels=y, pipeline=False,
                             adjacency=True, bulk_size=args.batches)
    batches = list(loader)
    try:
        import_dgl()
        have_dgl = True
    except ImportError:
        have_dgl = False
    rows = []
    parts = args.parts.split(",")
    if "aggregate" in parts:
        rows += bench_aggregate(batches, args, have_dgl)
    if "step" in parts:
        if not have_dgl:
            args.steps = ",".join(s for s in args.steps.split(",") if s != "dgl")
        rows += bench_step(batches, x.shape[1], int(np.max(y)) + 1, args)
    meta = dict(graph=args.graph, dense=args.dense, fanouts=fanouts,
                batch_size=args.batch_size, threads=args.threads,
                nodes=[bt.num_nodes for bt in batches], edges=[bt.num_edges for bt in batches])
    for r in rows:
        print(json.dumps(r))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))


if __name__ == "__main__":
    main()
