"""Helpers shared by the ``spsample`` sub-commands: checks of flags before any work, loading
a dataset by name, and errors that speak the command line's language.

Library functions name their *arguments* (``argument 'batch_size'``); on the command line the
user typed *flags* (``--batch-size``) or reader options (``-o prefix=...``).
:func:`cli_message` rewrites a library message into the command line's words, so
``spsample train --batch-size 0`` answers ``argument '--batch-size' must be >= 1``.
"""

import contextlib
import math
import os
import re

from .._errors import ArgumentError, DatasetError, DatasetNotFoundError, DistributedError
from ..distributed._collective import agree, mark_raised_on_every_rank
from ..io import embedded_names, embedded_path, load
from ..io._files import check_writable
from ..io._hdf5 import open_layout

__all__ = ["check_output", "check_int", "check_finite", "cli_message", "load_dataset",
           "agreed", "DATASET_HINT"]

#: What to tell a user who passed a raw dataset where an spsample HDF5 file is needed.
DATASET_HINT = ("run `spsample convert SRC DST.h5` first to make an spsample HDF5 file "
                "from a dataset in another format")


def check_output(command, flag, path):
    """Check, before any work, that ``path`` (given to ``flag``) can be written."""
    if path is not None:
        check_writable(f"spsample {command}", flag, path)


def check_int(command, flag, value, *, minimum=None, below=None):
    """``value`` of ``flag`` must be ``>= minimum`` and ``< below`` (when given)."""
    if value is None:
        return
    if minimum is not None and value < minimum:
        raise ArgumentError(f"spsample {command}: argument '{flag}' must be >= {minimum} "
                            f"(got {value})")
    if below is not None and value >= below:
        raise ArgumentError(f"spsample {command}: argument '{flag}' must be < {below} "
                            f"(got {value})")


def int_list(text):
    """``F1,F2,...`` -> a tuple of ints (argparse type)."""
    import argparse

    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return values


def check_finite(command, flag, value):
    """``value`` of ``flag`` must be a finite number (argparse accepts ``nan``, ``inf``)."""
    if value is not None and not math.isfinite(value):
        raise ArgumentError(f"spsample {command}: argument '{flag}' must be a finite number "
                            f"(got {value})")


def agreed(args, where, work):
    """``work()``, whose failure on any one rank fails every rank together when the command
    runs over MPI (``args._world``, set by :func:`spsample.cli.main` under ``mpiexec``): for
    the steps each rank does on its own (reading its copy of a file) before collective work.
    """
    world = getattr(args, "_world", None)
    if world is None:
        return work()

    return agree(world, where, work)


def same_everywhere(args, where, what, value):
    """Under MPI (``args._world``), every rank fails with the same
    :class:`~spsample.DistributedError` unless ``content_digest(value)`` is equal on every
    rank (``what`` names the value in the message); nothing otherwise."""
    world = getattr(args, "_world", None)
    if world is None:
        return

    digests = world.allgather_object(content_digest(value))
    other = next((r for r, d in enumerate(digests) if d != digests[0]), None)
    if other is not None:
        raise mark_raised_on_every_rank(DistributedError(
            f"{where}: ranks disagree: {what} differs between rank 0 and rank {other} "
            f"(CRC-32 of their arrays {digests[0][1]:08x} and {digests[other][1]:08x}); every "
            "rank must read the same dataset"))


def content_digest(value):
    """``(bytes, CRC-32)`` of ``value``'s pickled content: arrays are hashed where they lie
    (pickle protocol 5's out-of-band buffers), without a copy."""
    import pickle
    import zlib

    state = [0, 0]

    def update(data):
        view = memoryview(data).cast("B")
        state[0] += view.nbytes
        state[1] = zlib.crc32(view, state[1])

    class Sink:
        write = staticmethod(update)

    def buffer(pickled):
        update(pickled.raw())
        return None                         # out of band: hashed, not copied into the stream

    pickle.Pickler(Sink(), protocol=5, buffer_callback=buffer).dump(value)
    return state[0], state[1]


def dataset_path(command, name):
    """The path of dataset ``name``: an existing file, or an embedded dataset's file.

    Raises
    ------
    DatasetError, DatasetNotFoundError
        A folder, or neither a file nor an embedded name (the message says what to do).
    """
    where = f"spsample {command}"
    if os.path.isdir(name):
        raise DatasetError(f"{where}: argument 'dataset' is a folder, not an spsample HDF5 "
                           f"file (got {name!r}); {DATASET_HINT}")
    if os.path.exists(name):
        return name
    if name in embedded_names():
        return str(embedded_path(name))
    raise DatasetNotFoundError(f"{where}: argument 'dataset' is neither a file nor an "
                               f"embedded dataset ({', '.join(embedded_names())}) "
                               f"(got {name!r})")


def load_dataset(command, name, *, features=True):
    """The dataset ``name`` (:func:`dataset_path`), loaded.

    Directories and files in other formats get a message that says to convert them first.
    """
    path = dataset_path(command, name)
    with _convert_hint(command, name):
        return load(path, features=features)


def dataset_layout(command, name):
    """``"hetero"`` or ``"homogeneous"``: the layout of dataset ``name``
    (:func:`dataset_path`), read from the file's header only."""
    path = dataset_path(command, name)
    with _convert_hint(command, name):
        return open_layout(path)


@contextlib.contextmanager
def _convert_hint(command, name):
    """A file in another format gets a message that says to convert it first."""
    try:
        yield
    except DatasetError as exc:
        text = str(exc)
        foreign = "not a readable HDF5 file" in text or (
            "is not an spsample dataset" in text and "format='spsample'" not in text)
        if foreign:
            raise DatasetError(f"spsample {command}: argument 'dataset' is not an spsample "
                               f"HDF5 file (got {name!r}); {DATASET_HINT}") from exc
        raise


_ARGUMENT = re.compile(r"argument '([A-Za-z_][A-Za-z0-9_]*)'")
_PASS = re.compile(r"\bpass ([A-Za-z_][A-Za-z0-9_]*)= ?")
_SMALLER = re.compile(r"\buse a smaller ([A-Za-z_][A-Za-z0-9_]*)\b")


def cli_message(message, flags, options=()):
    """``message`` with argument names turned into the flags a user typed (``argument 'x'``,
    ``pass x=``, ``use a smaller x``).

    Parameters
    ----------
    message : str
        A library error message.
    flags : dict of str to str
        Library argument name -> flag, e.g. ``{"batch_size": "--batch-size"}``.
    options : iterable of str
        Names passed through ``-o NAME=VALUE`` (a converter's keyword arguments).
    """
    options = set(options)

    def flag_for(name):
        if name in flags:
            return flags[name]
        if name in options:
            return f"-o {name}=..."
        return None

    def argument(match):
        flag = flag_for(match[1])
        return f"argument '{flag}'" if flag else match[0]

    def pass_option(match):
        flag = flag_for(match[1])
        if flag is None:
            return match[0]
        return f"pass {flag[:-3]}" if flag.startswith("-o ") else f"pass {flag} "

    def smaller(match):
        flag = flag_for(match[1])
        return f"use a smaller {flag}" if flag else match[0]

    return _SMALLER.sub(smaller, _PASS.sub(pass_option, _ARGUMENT.sub(argument, message)))
