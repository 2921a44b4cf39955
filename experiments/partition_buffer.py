"""Partition loads per epoch of ``loader.PartitionedFeatures`` (P partitions, B resident) with
``Loader(order="random")`` against ``order="buffer-aware"`` and the lower bound (every touched
partition loaded once), on a real graph in its natural (locality-rich) order or relabelled by
``spsample partition``.

    python experiments/partition_buffer.py [--graph PATH.h5] --out experiments/results/buffer
"""

import argparse
import json
import sys

import numpy as np

import spsample
from spsample.loader import Loader, PartitionedFeatures

CNR = "/work/shared/datasets/law-cnr-2000/cnr-2000.npz"


def loads(g, x, seeds, P, B, order, batch_size, bulk_size, fanouts):
    parts = PartitionedFeatures(x, P, B)
    loader = Loader(g, seeds, features=parts, order=order, batch_size=batch_size,
                    bulk_size=bulk_size, sampler=spsample.NodeWise(fanouts), pipeline=False)
    touched = set()
    for b in loader.iter_epoch(1):
        touched.update(np.unique(np.searchsorted(parts.bounds, b.n_id.numpy(),
                                                 side="right") - 1).tolist())
    return parts.loads, len(touched)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default=None, help="an spsample .h5 (default: cnr-2000)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    g = (spsample.load(args.graph).graph if args.graph else
         spsample.io.from_csr_npz(CNR).graph)
    x = np.zeros((g.num_nodes, 4), dtype=np.float32)
    seeds = np.random.default_rng(1).permutation(g.num_nodes)[:g.num_nodes // 20]
    rows = []
    for P, B, bs, bulk, fan in ((16, 4, 64, 1, [5, 5]), (16, 4, 128, 1, [10, 5]),
                                (32, 8, 64, 1, [10, 5]), (16, 4, 512, 4, [10, 5])):
        r = dict(P=P, B=B, batch_size=bs, bulk_size=bulk, fanouts=fan)
        r["random"], _ = loads(g, x, seeds, P, B, "random", bs, bulk, fan)
        r["buffer_aware"], r["lower_bound"] = loads(g, x, seeds, P, B, "buffer-aware", bs,
                                                    bulk, fan)
        r["ratio"] = r["buffer_aware"] / r["random"]
        rows.append(r)
        print(r, flush=True)
    with open(args.out + ".json", "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
