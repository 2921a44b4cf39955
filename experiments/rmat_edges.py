"""Write a large R-MAT graph as a SNAP-style text edge list, in chunks (never all in memory).

Graph500 parameters (a=0.57, b=0.19, c=0.19), ``edge_factor * 2**scale`` edges drawn as
``spsample.rmat`` draws them (bit by bit, vertex ids randomly permuted, self-loops dropped),
but chunk by chunk: chunk ``i`` draws from ``numpy.random.default_rng([seed, i])``, so the file
depends only on ``(scale, edge_factor, seed, chunk)``. Lines are ``"%*d %*d"`` (source, target)
with ids right-aligned in a fixed width (any whitespace separates the columns of a SNAP edge
list), formatted with NumPy byte arithmetic: about 1 minute per 100 M edges here.

    python experiments/rmat_edges.py --scale 25 --out /tmp/rmat25.txt

The edges are directed (line ``u v`` puts ``u`` in row ``v``); ``spsample convert`` merges
duplicate lines.
"""

import argparse
import os
import sys
import time

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, required=True, help="2**scale vertices")
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--chunk", type=int, default=1 << 24, help="edges drawn per chunk")
    p.add_argument("--out", required=True, help="text file to write (replaced)")
    return p.parse_args(argv)


def draw_chunk(scale, m, rng, a=0.57, b=0.19, c=0.19):
    """``m`` R-MAT edges (source, target), int64, before the id permutation."""
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    ab, abc = a + b, a + b + c
    for bit in range(scale):
        r = rng.random(m)
        src |= (r >= ab).astype(np.int64) << bit
        dst |= (((r >= a) & (r < ab)) | (r >= abc)).astype(np.int64) << bit
    return src, dst


def format_lines(src, dst, width):
    """``"%{width}d %{width}d\\n"`` for every pair, as one bytes object (vectorised)."""
    m = src.size
    line = np.full((m, 2 * width + 2), ord(" "), dtype=np.uint8)
    line[:, -1] = ord("\n")
    for col, ids in ((width - 1, src), (2 * width, dst)):
        rest = ids.copy()
        for k in range(width):
            digit = (rest % 10).astype(np.uint8) + ord("0")
            show = (rest > 0) | (k == 0)
            line[:, col - k] = np.where(show, digit, ord(" "))
            rest //= 10
    return line.tobytes()


def main(argv=None):
    args = parse_args(argv)
    n, total = 1 << args.scale, args.edge_factor << args.scale
    perm = np.random.default_rng([args.seed, 2**32]).permutation(n)
    width = len(str(n - 1))
    tmp = f"{args.out}.{os.getpid()}.tmp"
    written, t0 = 0, time.perf_counter()
    with open(tmp, "wb") as out:
        for i, start in enumerate(range(0, total, args.chunk)):
            m = min(args.chunk, total - start)
            src, dst = draw_chunk(args.scale, m, np.random.default_rng([args.seed, i]))
            src, dst = perm[src], perm[dst]
            keep = src != dst
            out.write(format_lines(src[keep], dst[keep], width))
            written += int(keep.sum())
            print(f"chunk {i}: {written:,d} edges, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    os.replace(tmp, args.out)
    print(f"{args.out}: 2**{args.scale} = {n:,d} vertices, {written:,d} edge lines "
          f"({os.path.getsize(args.out) / 2**30:.2f} GiB) in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
