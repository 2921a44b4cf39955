"""``spsample partition DATASET --parts P [--method metis|block]``: a relabelled dataset whose
``P`` contiguous blocks of rows hold few cut edges, plus its permutation (``<out>.perm.npz``:
``old_id[new] = old``). ``DistGraph`` uses the relabelled file as is, or, given the
permutation (``DistGraph.load(..., permutation=)``, ``spsample train --permutation``), in the
original ids: the same minibatches as the original dataset."""

from pathlib import Path

from .._errors import ArgumentError
from .._validate import fail
from ..distributed._partition import cut_edges, partition, relabel, save_partition
from ..io import save
from ._common import load_dataset


def add_arguments(p):
    p.add_argument("dataset", help="an spsample HDF5 file (spsample convert writes one) or "
                                   "an embedded dataset's name")
    p.add_argument("--parts", type=int, required=True, help="blocks (process rows) P")
    p.add_argument("--method", default="metis", choices=["metis", "block"],
                   help="metis (pymetis) or block (ids kept: the baseline); default metis")
    p.add_argument("--out", default=None,
                   help="relabelled dataset (default: DATASET with .<method><P> before .h5, "
                        "in the current folder for an embedded name)")
    p.add_argument("--seed", type=int, default=0, help="METIS's seed (default 0)")


def run(args):
    if args.parts < 1:
        fail(ArgumentError, "spsample partition", "--parts", "must be >= 1", args.parts)
    typed = Path(args.dataset)
    out = Path(args.out) if args.out else typed.with_name(f"{typed.stem}.{args.method}"
                                                          f"{args.parts}.h5")
    ds = load_dataset("partition", args.dataset)
    if hasattr(ds.graph, "relations"):
        fail(ArgumentError, "spsample partition", "dataset", "is a heterogeneous dataset "
             f"({len(ds.graph.relations)} relations over the node types "
             f"{list(ds.graph.node_types)}): partition relabels homogeneous datasets (one "
             "Graph); DistHeteroGraph splits each node type into contiguous blocks as stored, "
             "so train or sample the heterogeneous file as it is", args.dataset)
    old_id = partition(ds.graph, args.parts, method=args.method, seed=args.seed)
    new = relabel(ds, old_id)
    save(new, out)
    perm = out.with_suffix(".perm.npz")
    save_partition(perm, new.graph, old_id, method=args.method, parts=args.parts)
    before, after = cut_edges(ds.graph, args.parts), cut_edges(new.graph, args.parts)
    m = max(1, ds.graph.num_edges)
    print(f"{args.method}, {args.parts} blocks: cut edges {after:,d} ({after / m:.1%}); "
          f"as given (block): {before:,d} ({before / m:.1%})")
    print(f"wrote {out} and {perm}")
    return 0
