"""The ``spsample`` command line: ``spsample {train,sample,convert,plan,partition} ...``.

Each sub-command lives in its own module ``spsample/cli/_<name>.py`` that defines
``add_arguments(parser)`` and ``run(args) -> int``; this file only dispatches. Only the chosen
sub-command's module is imported, so a missing or broken one never breaks the others (and
``spsample --help`` lists every sub-command without importing any of them).

This module is part of the package, so ``import spsample`` has run before it: idle OpenMP
threads already sleep (``OMP_WAIT_POLICY=passive`` unless the user chose, see
:mod:`spsample._openmp`) when a sub-command imports torch or the native kernels.

Under ``mpiexec`` a sub-command whose ranks work together (``train``) never ends on one rank
alone: see :func:`main`. A sub-command module takes part by defining ``check(args)`` (this
rank's flags and files, checked before any work) and ``PER_RANK_FLAGS`` (the flags that may
differ between ranks); its ``run`` wraps the steps each rank does alone in
:func:`spsample.cli._common.agreed`.
"""

import argparse
import contextlib
import importlib
import os
import sys
import warnings

from .._errors import ArgumentError, DistributedError, SpsampleError, SpsampleWarning

COMMANDS = {
    "train": "Train a GNN (GraphSAGE, GCN) with spsample minibatches (default: the embedded Cora).",
    "sample": "Print sampling statistics for a dataset.",
    "convert": "Convert a graph dataset (Planetoid, npz, CSV, SNAP, OGB, ...) into spsample's "
               "HDF5.",
    "plan": "Recommend a replication factor, bulk size and strategy for a distributed run.",
    "partition": "Relabel a dataset so that its contiguous blocks of rows cut few edges "
                 "(METIS).",
}


def build_parser(command=None, parser_class=argparse.ArgumentParser):
    """The ``spsample`` parser, listing every sub-command.

    Only ``command``'s module is imported and its arguments added (none when ``command`` is
    None), so a missing or broken sub-command module breaks only that sub-command.
    """
    parser = parser_class(
        prog="spsample", description="Bulk matrix-algebra sampling for GNN training.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    sub.required = True
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = _import_command(parser, name)
            module.add_arguments(p)
            p.set_defaults(_module=module, _parser=p)
    return parser


def _import_command(parser, name):
    module_name = f"spsample.cli._{name}"
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


#: Sub-commands whose ranks work together under ``mpiexec`` (the others run alone on each rank).
MPI_COMMANDS = ("train",)
#: Seconds a rank whose command failed waits for the other ranks to fail too before it ends
#: the whole job (``MPI.COMM_WORLD.Abort``): long enough for ranks that fail at the same
#: point, a little apart, to report one error together.
GATHER_ERRORS_S = 10.0


def main(argv=None, *, comm=None):
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    Errors spsample raises on bad input are printed as one line naming the flag (not the
    library's argument) and give status 2; spsample's warnings are printed as
    ``spsample <command>: warning: ...`` lines. When the reader of the output goes away
    (``spsample sample ... | head -1``) the command ends quietly.

    Under ``mpiexec`` with more than one rank, a command whose ranks work together
    (:data:`MPI_COMMANDS`) never ends on one rank alone: every rank parses and checks its
    flags and files, the ranks agree on the outcome and on the flags they must share, and a
    failure on any rank ends every rank with the same typed error, printed once (by rank 0)
    naming the rank that failed, exit status 2 everywhere (:func:`_main_mpi`).

    ``comm`` (a :class:`~spsample.distributed.Communicator` or an mpi4py communicator; default:
    ``MPI.COMM_WORLD`` under an MPI launcher) is the communicator of those commands: e.g. a
    ``ThreadComm`` of :func:`~spsample.distributed.run_threads` runs ``spsample train`` on
    ranks that are threads of this process (every rank calls ``main`` with the same ``argv``).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _chosen_command(argv)
    try:
        load_plugins()
        world = _mpi_world(command) if comm is None else _given_world(command, comm)
    except SpsampleError as exc:     # e.g. a bad SPSAMPLE_THREADS, read when the kernels load
        print(f"{' '.join(['spsample'] + ([command] if command else []))}: error: {exc}",
              file=sys.stderr)
        return 2
    if world is not None:
        return _main_mpi(world, command, argv)
    args = build_parser(command).parse_args(argv)
    # argparse has exited (help, usage error) unless a known sub-command was parsed.
    return _run(args)


#: Environment variable naming modules (comma-separated) that the command line imports before
#: it parses: their ``spsample.samplers.register`` calls add samplers to ``--sampler``.
PLUGINS_VAR = "SPSAMPLE_PLUGINS"


def load_plugins():
    """Import the modules named in ``$SPSAMPLE_PLUGINS`` (comma-separated), e.g. a module
    registering a sampler or a distributed strategy, so that ``spsample sample/train/plan
    --sampler NAME`` or ``spsample train --strategy NAME`` finds it.

    Raises
    ------
    ArgumentError
        A module that cannot be imported, naming the variable and the module.
    """
    for name in filter(None, (n.strip() for n in os.environ.get(PLUGINS_VAR, "").split(","))):
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 -- any failure of the user's module
            raise ArgumentError(f"environment variable {PLUGINS_VAR}: cannot import module "
                                f"{name!r} ({type(exc).__name__}: {exc})") from exc


def _given_world(command, comm):
    """The communicator passed to :func:`main`, as a Communicator, when ``command`` works over
    several ranks and it has more than one; else None."""
    from ..distributed._comm import as_communicator

    world = as_communicator(comm, "spsample.cli.main")
    if command not in MPI_COMMANDS or world.size < 2:
        return None
    return world


def _run(args, world=None):
    """Run the parsed sub-command; its errors become one line and status 2 (under MPI: see
    :func:`_failed_under_mpi`; over ranks in one process: :func:`_failed_in_process`)."""
    args._world = world
    # failures are gathered on a communicator of their own: the command's collectives on
    # ``world`` (its agreed steps) must never meet another rank's error gathering
    mpi = getattr(world, "mpi_comm", None)
    errors = None if mpi is None else mpi.Dup()
    try:
        with _warnings_as_lines(args.command):
            from ..native import apply_env_threads

            apply_env_threads()  # SPSAMPLE_THREADS for the native kernels
            return int(args._module.run(args) or 0)
    except SpsampleError as exc:
        message = _speak_cli(args, str(exc))
        if errors is not None:
            return _failed_under_mpi(errors, args.command, message)
        if world is not None:
            return _failed_in_process(world, args.command, message, exc)
        print(f"spsample {args.command}: error: {_without_prefix(args.command, message)}",
              file=sys.stderr)
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by a closed pipe


def _mpi_world(command):
    """An ``MPIComm`` of ``MPI.COMM_WORLD`` when ``command`` works over MPI and this process
    is one of several ranks started by an MPI launcher; else None (mpi4py not imported)."""
    from ..distributed._comm import launched_under_mpi, mpi_world

    if command not in MPI_COMMANDS or not launched_under_mpi():
        return None
    world = mpi_world(optional=True)    # None without mpi4py: the command says what to install
    if world is not None and world.size < 2:
        world.free()
        return None
    return world        # more than one rank: installs the abort-on-uncaught-exception hook


class _Exit(Exception):
    """argparse wanted to exit (``--help``) with this status; raised instead."""


def _mpi_parser(command, rank):
    """The parser, raising usage errors as :class:`ArgumentError` (instead of exiting) and
    printing help on rank 0 only."""
    def error(self, message):
        raise ArgumentError(message)

    def exit_(self, status=0, message=None):
        raise _Exit(status)

    def print_message(self, message, file=None):
        if rank == 0:
            argparse.ArgumentParser._print_message(self, message, file)

    methods = dict(error=error, exit=exit_, _print_message=print_message)
    quiet = type("_MPIParser", (argparse.ArgumentParser,), methods)
    parser = build_parser(command, parser_class=quiet)
    return parser


def _main_mpi(world, command, argv):
    """``main`` on one of several MPI ranks: parse and check on every rank, agree, run."""
    from ..distributed._collective import agree

    where = f"spsample {command}"

    def parse_and_check():
        try:
            args = _mpi_parser(command, world.rank).parse_args(argv)
        except _Exit:
            return None                     # --help: printed by rank 0
        check = getattr(args._module, "check", None)
        if check is not None:
            check(args)                     # the flags and files of this rank
        return args

    try:
        args = agree(world, where, parse_and_check)
        _agree_on_flags(world, where, args)
    except SpsampleError as exc:            # raised on every rank alike
        if world.rank == 0:
            message = _speak_cli_of(command, str(exc))
            print(f"{where}: error: {_without_prefix(command, message)}", file=sys.stderr)
            sys.stderr.flush()
        return 2
    if args is None:
        return 0
    return _run(args, world if getattr(args, "mpi", "auto") != "off" else None)


def _agree_on_flags(world, where, args):
    """Every rank asked for help, or none; and ranks that train together pass the same flags
    (those a command lists in ``PER_RANK_FLAGS`` may differ: paths, output, threads)."""
    from ..distributed._collective import mark_raised_on_every_rank

    if args is None:
        mine = ("help", None)
    else:
        per_rank = set(getattr(args._module, "PER_RANK_FLAGS", ())) | {"_module", "_parser"}
        mine = ("run", {k: v for k, v in sorted(vars(args).items()) if k not in per_rank})
    everyone = world.allgather_object(mine)
    kinds = [kind for kind, _ in everyone]
    if any(kind != kinds[0] for kind in kinds):
        raise mark_raised_on_every_rank(DistributedError(
            f"{where}: ranks disagree: rank {kinds.index('help')} asked for --help and rank "
            f"{kinds.index('run')} did not; every rank must pass the same flags"))
    if kinds[0] == "help" or all(flags.get("mpi") == "off" for _, flags in everyone):
        return                               # help everywhere, or independent runs
    first = everyone[0][1]
    for rank, (_, flags) in enumerate(everyone):
        for name in sorted(set(flags) | set(first)):
            if flags.get(name) != first.get(name):
                raise mark_raised_on_every_rank(DistributedError(
                    f"{where}: ranks disagree on {_flag_name(args, name)}: rank 0 has "
                    f"{first.get(name)!r}, rank {rank} has {flags.get(name)!r}; every rank "
                    "must pass the same flags (only paths, --quiet, --threads, "
                    "--sampler-threads and --device may differ)"))


def _flag_name(args, dest):
    """The flag of parser destination ``dest`` (``--batch-size`` for ``batch_size``)."""
    parser = getattr(args, "_parser", None)
    for action in getattr(parser, "_actions", ()):
        if action.dest == dest:
            long = [o for o in action.option_strings if o.startswith("--")]
            return long[0] if long else dest
    return dest if dest.startswith("-") else f"--{dest.replace('_', '-')}"


def _failed_under_mpi(comm, command, message):
    """The run failed on this rank with ``message``: when every rank fails too (within
    :data:`GATHER_ERRORS_S` seconds), rank 0 prints the error once and every rank returns 2;
    a rank failing alone prints its error, naming itself, and ends the job (exit status 2)
    so that no rank waits forever for it. ``comm``: an mpi4py communicator used only for
    this."""
    import time

    from ..distributed._failure import FORWARD_S as _FORWARD_S

    rank = comm.Get_rank()
    request = comm.Ibarrier()
    deadline = time.monotonic() + GATHER_ERRORS_S
    while not request.Test():
        if time.monotonic() > deadline:
            print(f"spsample {command}: error: rank {rank}: "
                  f"{_without_prefix(command, message)} (the other ranks went on without "
                  "it: the MPI job is aborted)", file=sys.stderr)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            time.sleep(_FORWARD_S)          # the launcher forwards the line before it kills us
            try:
                comm.Abort(2)
            finally:
                os._exit(2)                 # in case the abort came back
        time.sleep(0.01)
    messages = comm.allgather(message)
    if rank == 0:
        print(f"spsample {command}: error: {_together(command, messages)}", file=sys.stderr)
        sys.stderr.flush()
    return 2


def _failed_in_process(world, command, message, exc):
    """The run failed on this rank of ranks that are threads of one process (a ThreadComm):
    the other ranks' collectives have raised too, so nothing waits; each rank that failed by
    itself prints its error naming its rank (the others, failed by a peer, print nothing);
    status 2."""
    from ..distributed._threadcomm import is_peer_failure

    if not is_peer_failure(exc):
        print(f"spsample {command}: error: rank {world.rank}: "
              f"{_without_prefix(command, message)}", file=sys.stderr)
    return 2


def _together(command, messages):
    """One message for the errors every rank raised: as it is when all are the same (the
    collective checks already name the rank that failed), else the first, naming its rank."""
    messages = [_without_prefix(command, m) for m in messages]
    if all(m == messages[0] for m in messages):
        return messages[0]
    return f"rank 0: {messages[0]} (other ranks failed differently, e.g. rank " \
           f"{next(r for r, m in enumerate(messages) if m != messages[0])}: " \
           f"{next(m for m in messages if m != messages[0])})"


def _without_prefix(command, message):
    """``message`` without a leading ``spsample <command>: `` (also after ``rank N: ``): the
    printed line starts with ``spsample <command>: error: `` already."""
    import re

    return re.sub(rf"^((?:rank \d+(?: \(and ranks \[[\d, ]*\]\))?: )?)spsample {command}: ",
                  r"\1", message)


def _speak_cli(args, message):
    """``message`` with the library's argument names replaced by the flags of the command."""
    from ._common import cli_message

    flags = {}
    for action in args._parser._actions:
        long = [o for o in action.option_strings if o.startswith("--")]
        if long:
            flags[action.dest] = long[0]
    flags.update(getattr(args._module, "ARGUMENT_FLAGS", {}))
    flags.update(getattr(args._module, "argument_flags", lambda args: {})(args))
    options = getattr(args._module, "reader_options", lambda: ())()
    return cli_message(message, flags, options)


def _speak_cli_of(command, message):
    """:func:`_speak_cli` without parsed arguments (the flags of ``command``'s parser)."""
    import types

    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    p = sub.choices[command]
    module = p.get_default("_module")
    return _speak_cli(types.SimpleNamespace(_parser=p, _module=module), message)


@contextlib.contextmanager
def _warnings_as_lines(command):
    """Show spsample's warnings as ``spsample <command>: warning: ...`` on stderr."""
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
