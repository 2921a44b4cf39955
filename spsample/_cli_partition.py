"""``spsample partition DATASET --parts P [--method metis|block]``: a relabelled dataset whose
``P`` contiguous blocks of rows hold few cut edges, plus its permutation (``<out>.perm.npz``:
``old_id[new] = old``). ``DistGraph`` uses the relabelled file as is."""

from pathlib import Path

from ._errors import ArgumentError
from ._validate import fail


def add_arguments(p):
    p.add_argument("dataset", help="an spsample HDF5 file (spsample convert writes one)")
    p.add_argument("--parts", type=int, required=True, help="blocks (process rows) P")
    p.add_argument("--method", default="metis", choices=["metis", "block"],
                   help="metis (pymetis) or block (ids kept: the baseline); default metis")
    p.add_argument("--out", default=None,
                   help="relabelled dataset (default: DATASET with .<method><P> before .h5)")
    p.add_argument("--seed", type=int, default=0, help="METIS's seed (default 0)")


def run(args):
    import spsample
    from ._partition import cut_edges, partition, relabel, save_partition

    if args.parts < 1:
        fail(ArgumentError, "spsample partition", "--parts", "must be >= 1", args.parts)
    src = Path(args.dataset)
    out = Path(args.out) if args.out else src.with_name(f"{src.stem}.{args.method}"
                                                        f"{args.parts}.h5")
    ds = spsample.load(src)
    old_id = partition(ds.graph, args.parts, method=args.method, seed=args.seed)
    new = relabel(ds, old_id)
    spsample.save(new, out)
    perm = out.with_suffix(".perm.npz")
    save_partition(perm, new.graph, old_id, method=args.method, parts=args.parts)
    before, after = cut_edges(ds.graph, args.parts), cut_edges(new.graph, args.parts)
    m = max(1, ds.graph.num_edges)
    print(f"{args.method}, {args.parts} blocks: cut edges {after:,d} ({after / m:.1%}); "
          f"as given (block): {before:,d} ({before / m:.1%})")
    print(f"wrote {out} and {perm}")
    return 0
