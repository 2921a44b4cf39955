"""Write ``spsample.rmat(scale, edge_factor, seed=seed)`` to an HDF5 file, once.

The file is what ``experiments/scaling.py --data`` and ``experiments/gpu/run.py --graph-dir``
read (``spsample.save`` of a ``Dataset`` named ``rmat<scale>``, uncompressed, as
``scaling.py`` writes it itself), so one generation serves both:

    python3 experiments/rmat_h5.py --scale 20 --out /tmp/graphs/rmat20.h5

An existing file is kept (nothing is generated); the file appears atomically (written to a
temporary name, then renamed), so a reader never sees half of it.
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, required=True, help="2**scale vertices")
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--seed", type=int, default=1, help="scaling.py and gpu/run.py use 1")
    p.add_argument("--out", required=True, help="HDF5 file to write (kept when it exists)")
    return p.parse_args(argv)


def write_rmat(scale, edge_factor, seed, out):
    """Generate the graph and write it to ``out`` unless ``out`` exists; seconds taken."""
    import spsample
    t0 = time.perf_counter()
    if os.path.exists(out):
        return 0.0
    graph = spsample.rmat(scale, edge_factor, seed=seed)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = f"{out}.tmp{os.getpid()}"
    spsample.save(spsample.Dataset(graph, name=f"rmat{scale}"), tmp, compression=None)
    os.replace(tmp, out)
    print(f"rmat{scale}: {graph.num_nodes} nodes, {graph.num_edges} edges -> {out} "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
    return time.perf_counter() - t0


def main(argv=None):
    args = parse_args(argv)
    write_rmat(args.scale, args.edge_factor, args.seed, args.out)


if __name__ == "__main__":
    main()
