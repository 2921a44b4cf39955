"""Helpers shared by the ``spsample`` sub-commands: checks of flags before any work, loading
a dataset by name, and errors that speak the command line's language.

Library functions name their *arguments* (``argument 'batch_size'``); on the command line the
user typed *flags* (``--batch-size``) or reader options (``-o prefix=...``).
:func:`cli_message` rewrites a library message into the command line's words, so
``spsample train --batch-size 0`` answers ``argument '--batch-size' must be >= 1``.
"""

import math
import os
import re

from ._errors import ArgumentError, DatasetError, DatasetNotFoundError

__all__ = ["check_output", "check_int", "check_finite", "cli_message", "load_dataset",
           "DATASET_HINT"]

#: What to tell a user who passed a raw dataset where an spsample HDF5 file is needed.
DATASET_HINT = ("run `spsample convert SRC DST.h5` first to make an spsample HDF5 file "
                "from a dataset in another format")


def check_output(command, flag, path):
    """Check, before any work, that ``path`` (given to ``flag``) can be written."""
    from .io._files import check_writable

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


def check_finite(command, flag, value):
    """``value`` of ``flag`` must be a finite number (argparse accepts ``nan``, ``inf``)."""
    if value is not None and not math.isfinite(value):
        raise ArgumentError(f"spsample {command}: argument '{flag}' must be a finite number "
                            f"(got {value})")


def dataset_path(command, name):
    """The path of dataset ``name``: an existing file, or an embedded dataset's file.

    Raises
    ------
    DatasetError, DatasetNotFoundError
        A folder, or neither a file nor an embedded name (the message says what to do).
    """
    from .io import embedded_names, embedded_path

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
    from .io import load

    path = dataset_path(command, name)
    try:
        return load(path, features=features)
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


def cli_message(message, flags, options=()):
    """``message`` with argument names turned into the flags a user typed.

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

    return _PASS.sub(pass_option, _ARGUMENT.sub(argument, message))
