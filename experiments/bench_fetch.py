"""Feature fetch of an epoch's bulks: spsample's sources against DGL's gather of the same rows.

One epoch of node-wise minibatches (``--batch-size`` seeds, ``--fanouts``, ``--bulk-size``
minibatches per bulk) is sampled once; then the feature rows of every bulk are fetched, the
result dropped before the next bulk (as a training loop does), by:

* ``spsample:<source>`` -- the loader's feature source (``FeatureSource.fetch_bulk`` on the
  bulk's minibatches) for ``numpy`` (a float32 array), ``torch`` (a CPU tensor),
  ``scipy`` (a CSR matrix of the same values; batches then carry sparse rows) and ``hdf5``
  (the array written to an HDF5 file, chunks of 256 rows, read per bulk);
* ``numpy-take`` -- the loader's fetch before issue 20 (``array.take`` per minibatch, into
  fresh memory);
* ``dgl`` -- DGL 2.1's gather (``dgl.backend.gather_row``: ``torch.index_select`` into a fresh
  tensor), per minibatch, from the features as a torch tensor (what its ``DataLoader`` does
  for ``prefetch_node_feats``).

Rounds alternate the methods (A, B, A, B, ...); the JSON has each method's per-epoch seconds,
the median, GB/s of output, and the ratio to DGL's median measured in the same run.

    OMP_WAIT_POLICY=passive /tmp/peers/bin/python experiments/bench_fetch.py --graph musae-facebook
    OMP_WAIT_POLICY=passive /tmp/peers/bin/python experiments/bench_fetch.py --graph rmat:18
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="musae-facebook",
                   help="musae-facebook (dense float32 copy of its 4,714 columns) or rmat:S "
                        "(128 random float32 columns)")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--bulk-size", type=int, default=4)
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--seeds", type=int, default=0, help="seeds per epoch (0: half the nodes)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--methods", default="spsample:numpy,spsample:torch,spsample:scipy,"
                                        "spsample:hdf5,numpy-take,dgl")
    p.add_argument("--out", default=None)
    return p.parse_args(argv)


def load(name):
    import spsample

    if name.startswith("rmat:"):
        graph = spsample.rmat(int(name.split(":")[1]), seed=1)
        x = np.random.default_rng(0).random((graph.num_nodes, 128), dtype=np.float32)
        return graph, x
    ds = spsample.io.from_musae(DATASETS / name)
    feats = ds.features
    x = feats.toarray() if hasattr(feats, "toarray") else np.asarray(feats)
    return ds.graph, x.astype(np.float32)


def import_dgl():
    sys.modules.setdefault("dgl.graphbolt", type(sys)("dgl.graphbolt"))
    import dgl

    return dgl


def methods(x, names, tmpdir):
    """name -> fetch(n_ids) callable."""
    import scipy.sparse as sp
    import torch

    from spsample.loader import as_feature_source

    out = {}
    for name in names:
        if name == "spsample:numpy":
            out[name] = as_feature_source(x).fetch_bulk
        elif name == "spsample:torch":
            out[name] = as_feature_source(torch.from_numpy(x)).fetch_bulk
        elif name == "spsample:scipy":
            out[name] = as_feature_source(sp.csr_matrix(x)).fetch_bulk
        elif name == "spsample:hdf5":
            import h5py

            path = os.path.join(tmpdir, "features.h5")
            with h5py.File(path, "w") as f:
                f.create_dataset("features", data=x, chunks=(256, x.shape[1]))
            out[name] = as_feature_source(path).fetch_bulk
        elif name == "numpy-take":
            out[name] = lambda n_ids: [x.take(i, axis=0) for i in n_ids]
        elif name == "dgl":
            gather_row = import_dgl().backend.gather_row
            xt = torch.from_numpy(x)
            out[name] = lambda n_ids: [gather_row(xt, torch.from_numpy(i)) for i in n_ids]
        else:
            raise SystemExit(f"unknown method {name!r}")
    return out


def epoch_seconds(fetch, bulks):
    t = time.perf_counter()
    for n_ids in bulks:
        rows = fetch(n_ids)
        del rows
    return time.perf_counter() - t


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import torch

    import spsample
    from spsample import native as _native

    torch.set_num_threads(args.threads)
    _native.set_num_threads(args.threads)
    graph, x = load(args.graph)
    rng = np.random.default_rng(0)
    m = args.seeds or graph.num_nodes // 2
    seeds = rng.permutation(graph.num_nodes)[:m]
    sampler = spsample.NodeWise([int(f) for f in args.fanouts.split(",")])
    k = args.batch_size * args.bulk_size
    bulks = [[mb.n_id for mb in spsample.sample(graph, seeds[i:i + k], sampler=sampler,
                                                 batch_size=args.batch_size, batch_offset=j)]
             for j, i in enumerate(range(0, m, k))]
    rows = sum(a.size for b in bulks for a in b)
    gbytes = rows * x.shape[1] * x.itemsize / 1e9
    names = args.methods.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        fns = methods(x, names, tmp)
        times = {name: [] for name in names}
        for name in names:                               # warm-up (pools, page cache)
            epoch_seconds(fns[name], bulks[:2])
        for _ in range(args.rounds):
            for name in names:
                times[name].append(epoch_seconds(fns[name], bulks))
    med = {name: statistics.median(t) for name, t in times.items()}
    base = med.get("dgl")
    results = [dict(graph=args.graph, method=name, seconds=times[name], median=med[name],
                    gb_per_s=gbytes / med[name], rows=rows, gbytes=gbytes,
                    vs_dgl=(base / med[name]) if base else None, threads=args.threads,
                    bulks=len(bulks), batch_size=args.batch_size, bulk_size=args.bulk_size)
               for name in names]
    for r in results:
        print(json.dumps(r))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
