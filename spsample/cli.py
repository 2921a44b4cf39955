"""The ``spsample`` command line: ``spsample {train,sample,convert} ...``.

Each sub-command lives in its own module ``spsample/_cli_<name>.py`` that defines
``add_arguments(parser)`` and ``run(args) -> int``; this file only dispatches. Only the chosen
sub-command's module is imported, so a missing or broken one never breaks the others (and
``spsample --help`` lists every sub-command without importing any of them).
"""

import argparse
import importlib
import sys

COMMANDS = {
    "train": "Train GraphSAGE with spsample minibatches (default: the embedded Cora dataset).",
    "sample": "Print sampling statistics for a dataset.",
    "convert": "Convert a graph dataset (Planetoid, npz, CSV, SNAP, OGB, ...) into spsample's "
               "HDF5.",
}


def build_parser(command=None):
    """The ``spsample`` parser, listing every sub-command.

    Only ``command``'s module is imported and its arguments added (none when ``command`` is
    None), so a missing or broken sub-command module breaks only that sub-command.
    """
    parser = argparse.ArgumentParser(
        prog="spsample", description="Bulk matrix-algebra sampling for GNN training.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = _import_command(parser, name)
            module.add_arguments(p)
            p.set_defaults(_module=module)
    return parser


def _import_command(parser, name):
    module_name = f"spsample._cli_{name}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise  # the module exists but lacks a dependency: show the real error
        parser.error(f"sub-command {name!r} is not available in this installation "
                     f"({module_name} is missing)")


def _chosen_command(argv):
    """The sub-command ``argv`` names (its first word not starting with ``-``), or None."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def main(argv=None):
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    Errors spsample raises on bad input are printed as one line and give status 2.
    """
    from ._errors import SpsampleError

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_chosen_command(argv)).parse_args(argv)
    # argparse has exited (help, usage error) unless a known sub-command was parsed.
    try:
        return int(args._module.run(args) or 0)
    except SpsampleError as exc:
        print(f"spsample {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
