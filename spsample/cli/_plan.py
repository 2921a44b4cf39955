"""``spsample plan``: a replication factor, bulk size and strategy for ``mpiexec -n P``.

The workload (sampled edges, frontier rows and vertices per minibatch) is measured on an
R-MAT graph with the target's mean degree; the machine comes from a JSON file
(``--machine``: a path, or the name of one shipped in ``spsample/data/machines``). The cost
model (:mod:`spsample.distributed._plan`) then predicts each configuration; the fastest that fits
the memory per rank is printed with the reasons.
"""

import json
import math
from pathlib import Path

from ..distributed import _plan
from .._errors import ArgumentError
from ..distributed._plan import MAX_RANKS
from .._validate import fail
from ..samplers._registry import names
from ._common import check_output

MACHINES = Path(__file__).resolve().parent.parent / "data" / "machines"
#: Arguments of :func:`spsample.distributed._plan.plan` named by the flags that set them.
ARGUMENT_FLAGS = {"memory": "--memory-per-rank", "ranks": "--ranks"}


def add_arguments(p):
    p.add_argument("--nodes", type=int, required=True, help="vertices of the graph")
    p.add_argument("--edges", type=int, required=True, help="edges (entries of A)")
    p.add_argument("--features", type=int, default=128, help="feature width (default 128)")
    p.add_argument("--ranks", type=int, required=True, help="MPI ranks (GPUs)")
    p.add_argument("--memory-per-rank", type=float, default=None,
                   help="GB per rank (default: the machine file's)")
    p.add_argument("--machine", default="perlmutter",
                   help="machine file: a path or a name in spsample/data/machines "
                        "(default perlmutter: 4 x A100 per node, assumed numbers)")

    p.add_argument("--sampler", default="nodewise", choices=names(walk=False),
                   help="sampler (default nodewise; any registered one but walks)")
    p.add_argument("--fanouts", default="15,10,5",
                   help="fanouts, hop 1 first (default 15,10,5; LADIES: vertices per layer)")
    p.add_argument("--batch-size", type=int, default=1024, help="seeds per minibatch (1024)")
    p.add_argument("--train-fraction", type=float, default=1.0,
                   help="share of the vertices that are training seeds (default 1)")
    p.add_argument("--json", default=None, help="also write the candidates to this file")


def run(args):
    _check(args)
    machine = _plan.Machine.load(_machine_path(args.machine))
    workload = measure_workload(args)
    seeds = max(1, int(args.nodes * args.train_fraction))
    minibatches = math.ceil(seeds / args.batch_size)
    memory = None if args.memory_per_rank is None else args.memory_per_rank * 1e9
    result = _plan.plan(workload, machine, args.ranks, epochs_minibatches=minibatches,
                        memory=memory)
    best = result["best"]
    print(f"machine: {machine.name}" + ("" if machine.measured else " (assumed numbers)"))
    standin = workload.extra["standin_degree"]
    print(f"workload: {workload.edges:,.0f} sampled edges, {workload.rows:,.0f} rows, "
          f"{workload.unique:,.0f} vertices per minibatch of {args.batch_size} "
          f"({args.sampler}, measured on an R-MAT graph of mean degree {standin:.1f}"
          + ("" if workload.extra["row_degree_scale"] == 1.0 else
             f", row degrees scaled to the target's {args.edges / args.nodes:,.1f}") + ")")
    print(f"recommended: --replication {best['c']} --bulk-size {best['k']} "
          f"--strategy {best['strategy']}")
    print(f"predicted: {best['epoch_s']:.3g} s per epoch of {minibatches} minibatches "
          f"(sampling {best['sample_s']:.3g} s, fetch {best['fetch_s']:.3g} s per bulk), "
          f"{best['memory_bytes'] / 1e9:.2f} GB per rank")
    for line in result["why"]:
        print(f"  - {line}")
    print("(a model: bytes are what spsample sends; times follow the machine file's rates)")
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(result, indent=1, default=float))
        except OSError as exc:
            fail(ArgumentError, "spsample plan", "--json", f"cannot be written ({exc})",
                 args.json)
    return 0


def measure_workload(args):
    """The per-minibatch counts of ``args``'s graph and sampler (see :meth:`Workload.like`)."""
    fanouts = [int(f) for f in args.fanouts.split(",")]
    return _plan.Workload.like(args.nodes, args.edges, sampler=args.sampler, fanouts=fanouts,
                               batch_size=args.batch_size, feature_dim=args.features)


def _machine_path(name):
    path = Path(name)
    if path.is_file():
        return path
    shipped = MACHINES / f"{name}.json"
    if shipped.is_file():
        return shipped
    known = ", ".join(sorted(p.stem for p in MACHINES.glob("*.json")))
    fail(ArgumentError, "spsample plan", "--machine", f"is neither a file nor one of {known}",
         name)


def _check(args):
    for flag, value in (("--nodes", args.nodes), ("--edges", args.edges),
                        ("--features", args.features), ("--ranks", args.ranks),
                        ("--batch-size", args.batch_size)):
        if value < 1:
            fail(ArgumentError, "spsample plan", flag, "must be >= 1", value)
    if args.ranks > MAX_RANKS:
        fail(ArgumentError, "spsample plan", "--ranks", f"must be at most 2**24 = "
             f"{MAX_RANKS:,d}", args.ranks)
    if args.memory_per_rank is not None and not 0 < args.memory_per_rank < math.inf:
        fail(ArgumentError, "spsample plan", "--memory-per-rank", "must be a finite number "
             "> 0 (GB)", args.memory_per_rank)
    if not 0 < args.train_fraction <= 1:
        fail(ArgumentError, "spsample plan", "--train-fraction", "must be in (0, 1]",
             args.train_fraction)
    try:
        fanouts = [int(f) for f in args.fanouts.split(",")]
    except ValueError:
        fanouts = []
    if not fanouts or min(fanouts) < 1:
        fail(ArgumentError, "spsample plan", "--fanouts",
             "must be positive integers separated by commas", args.fanouts)
    check_output("plan", "--json", args.json)
