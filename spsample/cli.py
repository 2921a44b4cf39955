"""The ``spsample`` command line: ``spsample {train,sample,convert} ...``.

Each sub-command lives in its own module ``spsample/_cli_<name>.py`` that defines
``add_arguments(parser)`` and ``run(args) -> int``; this file only dispatches.
"""

import argparse
import importlib
import sys

COMMANDS = {
    "train": "Train GraphSAGE with spsample minibatches (default: the embedded Cora dataset).",
    "sample": "Print sampling statistics for a dataset.",
    "convert": "Convert a graph dataset (Planetoid, npz, CSV, SNAP, OGB, ...) into spsample's HDF5.",
}


def build_parser():
    parser = argparse.ArgumentParser(prog="spsample", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        module = importlib.import_module(f"spsample._cli_{name}")
        module.add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def main(argv=None):
    from ._errors import SpsampleError

    args = build_parser().parse_args(argv)
    try:
        return int(args._module.run(args) or 0)
    except SpsampleError as exc:
        print(f"spsample {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
