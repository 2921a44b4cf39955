"""The ``spsample`` command line: ``spsample {train,sample,convert,plan,partition} ...``.

Each sub-command lives in its own module ``spsample/_cli_<name>.py`` that defines
``add_arguments(parser)`` and ``run(args) -> int``; this file only dispatches. Only the chosen
sub-command's module is imported, so a missing or broken one never breaks the others (and
``spsample --help`` lists every sub-command without importing any of them).
"""

import argparse
import contextlib
import importlib
import os
import sys
import warnings

COMMANDS = {
    "train": "Train a GNN (GraphSAGE, GCN) with spsample minibatches (default: the embedded Cora).",
    "sample": "Print sampling statistics for a dataset.",
    "convert": "Convert a graph dataset (Planetoid, npz, CSV, SNAP, OGB, ...) into spsample's "
               "HDF5.",
    "plan": "Recommend a replication factor, bulk size and strategy for a distributed run.",
    "partition": "Relabel a dataset so that its contiguous blocks of rows cut few edges "
                 "(METIS).",
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
            p.set_defaults(_module=module, _parser=p)
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

    Errors spsample raises on bad input are printed as one line naming the flag (not the
    library's argument) and give status 2; spsample's warnings are printed as
    ``spsample <command>: warning: ...`` lines. When the reader of the output goes away
    (``spsample sample ... | head -1``) the command ends quietly.
    """
    from ._errors import SpsampleError

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_chosen_command(argv)).parse_args(argv)
    # argparse has exited (help, usage error) unless a known sub-command was parsed.
    try:
        with _warnings_as_lines(args.command):
            from ._threads import apply_env_threads

            apply_env_threads()  # SPSAMPLE_THREADS for the native kernels
            return int(args._module.run(args) or 0)
    except SpsampleError as exc:
        print(f"spsample {args.command}: error: {_speak_cli(args, str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by a closed pipe


def _speak_cli(args, message):
    """``message`` with the library's argument names replaced by the flags of the command."""
    from ._cli_common import cli_message

    flags = {}
    for action in args._parser._actions:
        long = [o for o in action.option_strings if o.startswith("--")]
        if long:
            flags[action.dest] = long[0]
    flags.update(getattr(args._module, "ARGUMENT_FLAGS", {}))
    options = getattr(args._module, "reader_options", lambda: ())()
    return cli_message(message, flags, options)


@contextlib.contextmanager
def _warnings_as_lines(command):
    """Show spsample's warnings as ``spsample <command>: warning: ...`` on stderr."""
    from ._errors import SpsampleWarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, SpsampleWarning):
            print(f"spsample {command}: warning: {message}", file=sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)

    previous = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always", SpsampleWarning)
        warnings.showwarning = show
        yield


def _silence_stdout():
    """Point stdout at /dev/null so Python's final flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
