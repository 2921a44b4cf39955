"""Small file helpers shared by the converters: path checks, text tables, npz archives."""

import contextlib
import gzip
import io
import os
import re
import signal
import threading
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .._errors import (
    ArgumentError, ArgumentTypeError, DatasetError, DatasetNotFoundError, ResourceLimitError,
)
from .._validate import check_memory, fail, format_bytes, memory_limit
from ._untrusted import DEFLATE_MAX_RATIO

__all__ = ["as_bool", "as_dir", "as_file", "fail_path", "read_table", "read_npz",
           "read_integer_columns", "read_time_column", "data_lines", "check_writable",
           "temporary_beside"]


def fail_path(error_cls, where, name, problem, path):
    """Like :func:`spsample._validate.fail`, but shows the whole path (never shortened)."""
    fail(error_cls, where, name, f"{problem} (got {str(path)!r})", show_value=False)


def as_bool(where, name, value):
    """``value`` if it is a bool (or NumPy bool), else :class:`ArgumentTypeError` naming ``name``.

    Strings such as ``"false"`` are refused: they are truthy, so accepting them would silently
    flip the meaning of an option.
    """
    if not isinstance(value, (bool, np.bool_)):
        fail(ArgumentTypeError, where, name, "must be True or False", value)
    return bool(value)


def as_path(where, name, path):
    if not isinstance(path, (str, os.PathLike)):
        fail(ArgumentTypeError, where, name, "must be a str or os.PathLike", type(path))
    return Path(path)


def as_dir(where, path, name="directory"):
    """``path`` as a Path to an existing directory, else a typed error naming ``name``."""
    path = as_path(where, name, path)
    if not path.exists():
        fail_path(DatasetNotFoundError, where, name, "does not exist", path)
    if not path.is_dir():
        fail_path(DatasetError, where, name, "must be a directory", path)
    return path


def as_file(where, path, name="path"):
    """``path`` as a Path to an existing regular file, else a typed error naming ``name``."""
    path = as_path(where, name, path)
    if not path.exists():
        fail_path(DatasetNotFoundError, where, name, "does not exist", path)
    if not path.is_file():
        fail_path(DatasetError, where, name, "must be a file, not a directory", path)
    return path


#: Peak bytes ``numpy.loadtxt`` takes per byte of text it parses (measured: 4.7 for ``0 1``
#: lines, the densest table; 1.2 to 1.7 for wider numbers).
TEXT_TABLE_RATIO = 6


class _Metered(io.RawIOBase):
    """A binary stream (a decompressing reader) that counts the bytes read through it and
    raises :class:`ResourceLimitError` as soon as ``ratio`` times their count exceeds the
    memory limit: a small compressed file is checked as it streams, before its text grows
    into more memory than this process may use."""

    def __init__(self, raw, ratio, where, name, what):
        super().__init__()
        self._raw, self._ratio, self._limit = raw, ratio, memory_limit()
        self._where, self._name, self._what = where, name, what
        self.count = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self._raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.count += n
        if self.count * self._ratio > self._limit:
            raise ResourceLimitError(
                f"{self._where}: argument '{self._name}' {self._what} decompresses to more "
                f"than {format_bytes(self.count)}, which would need more than "
                f"{format_bytes(self.count * self._ratio)}: more than the "
                f"{format_bytes(self._limit)} this process may use")
        return n

    def close(self):
        try:
            self._raw.close()
        finally:
            super().close()


def metered(where, raw, ratio, name, what):
    """``raw`` (a binary stream) read through :class:`_Metered`, buffered."""
    return io.BufferedReader(_Metered(raw, ratio, where, name, what))


def open_text(where, path, ratio, *, name="path"):
    """A UTF-8 text stream of ``path`` (plain or ``.gz``) that will take about ``ratio`` bytes
    of memory per byte of text: a plain file's size is checked against the memory limit
    before it is opened, a gzip file's decompressed bytes as they stream.

    Raises
    ------
    ResourceLimitError
        Naming ``name`` and the file.
    """
    what = f"{str(path)!r}"
    if not path.name.endswith(".gz"):
        check_memory(where, name, path.stat().st_size * ratio, f"the text of {what}",
                     "convert a smaller file, or stream an edge list (spsample convert "
                     "--memory-budget)")
        return open(path, "rt", encoding="utf-8", newline=None)
    stream = metered(where, gzip.open(path, "rb"), ratio, name, what)
    return io.TextIOWrapper(stream, encoding="utf-8", newline=None)


def read_table(where, path, *, dtype, delimiter=None, comment="#", skiprows=0, usecols=None):
    """Read a numeric text table (plain or ``.gz``) into a 2-D array, shape (rows, columns).

    ``delimiter=None`` splits on any whitespace (spaces or tabs); ``comment`` lines (and
    trailing comments) are skipped; an empty table gives shape (0, len(usecols) or 0). The
    text (a ``.gz`` file's as it decompresses) is checked against the memory limit
    (:data:`TEXT_TABLE_RATIO` bytes per byte of text).

    Raises
    ------
    DatasetError
        Not a numeric table (naming the file and the row).
    ResourceLimitError
        The text would take more memory than this process may use.
    """
    try:
        with open_text(where, path, TEXT_TABLE_RATIO) as f, \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            table = np.loadtxt(f, dtype=dtype, delimiter=delimiter, comments=comment,
                               skiprows=skiprows, usecols=usecols, ndmin=2)
    except (ValueError, OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise DatasetError(f"{where}: cannot parse {str(path)!r} as a numeric table: "
                           f"{exc}") from exc
    if table.size == 0:
        table = table.reshape(0, len(usecols) if usecols is not None else 0)
    return table


def read_integer_columns(where, path, usecols, *, what="node ids", **options):
    """Integer columns of a text table as int64, shape (rows, len(usecols)), exact at any size.

    Ids are parsed as integers, never through float64 (which merges ``2**53`` and
    ``2**53 + 1``). Integral decimals (``7.0``) are accepted where float64 holds them exactly
    (magnitude up to ``2**53``); anything else is refused. ``options``: those of
    :func:`read_table`.

    Raises
    ------
    DatasetError
        Naming the file: not numbers, not integers, or decimals too large to be exact.
    """
    try:
        return read_table(where, path, dtype=np.int64, usecols=usecols, **options)
    except DatasetError:
        pass          # not plain integers: decimals, numbers beyond int64, or no numbers at all
    table = read_table(where, path, dtype=np.float64, usecols=usecols, **options)
    bad = ~(np.isfinite(table) & (table == np.round(table)))
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise DatasetError(f"{where}: cannot parse {str(path)!r} as a numeric table of "
                           f"integers: {what} must be integers (got {table[bad][0]!r} in data "
                           f"row {row})")
    if table.size and np.abs(table).max() > 2**53:
        raise DatasetError(f"{where}: cannot parse {str(path)!r} as a numeric table of "
                           f"integers: {what} are beyond 2**53 or the int64 range, or written "
                           "as decimals (e.g. 1e16), which cannot be read exactly; write them "
                           "as plain integers within the int64 range")
    return table.astype(np.int64)


def read_time_column(where, path, column, **options):
    """One column of times: int64 when every value is an integer (exact at any size, e.g.
    nanoseconds), else float64 (decimals such as ``1289241911.72836``), shape (rows,).

    Raises
    ------
    DatasetError
        Not numbers, non-finite values, or integers beyond the int64 range.
    """
    try:
        return read_table(where, path, dtype=np.int64, usecols=(column,), **options)[:, 0]
    except DatasetError:
        pass
    times = read_table(where, path, dtype=np.float64, usecols=(column,), **options)[:, 0]
    if times.size and not np.isfinite(times).all():
        raise DatasetError(f"{where}: the times (column {column}) of {str(path)!r} must be "
                           "finite")
    if times.size and np.array_equal(times, np.round(times)) and np.abs(times).max() > 2**53:
        raise DatasetError(f"{where}: the times (column {column}) of {str(path)!r} are "
                           "integers beyond the int64 range or written as decimals beyond "
                           "2**53, which cannot be read exactly")
    return times


#: What :func:`data_lines` reads at most: characters per line, characters in all.
_LINE_CHARS, _SNIFF_CHARS = 1 << 16, 1 << 24


def data_lines(path, comment="#", limit=1000):
    """Up to ``limit`` lines of a text file (plain or ``.gz``) that are neither blank nor
    comments, stripped (undecodable bytes replaced); ``[]`` when unreadable. Reads at most
    64 KiB per line and 16 MiB in all (a file of one endless line, or a gzip bomb, is only
    sniffed), so a line longer than that comes back cut."""
    opener = gzip.open if path.name.endswith(".gz") else open
    out, seen = [], 0
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            while len(out) < limit and seen < _SNIFF_CHARS:
                line = f.readline(_LINE_CHARS)
                if not line:
                    break
                seen += len(line)
                if line.strip() and not (comment and line.lstrip().startswith(comment)):
                    out.append(line.strip())
    except (OSError, EOFError, ValueError, zlib.error):
        pass  # the reader reports it
    return out


#: Exceptions a damaged zip or npy member raises while it is read.
_NPZ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, NotImplementedError,
               KeyError, RuntimeError, OverflowError, TypeError, MemoryError)


def read_npz(where, path, keys, optional=()):
    """``{key: array}`` for ``keys`` (required) and ``optional`` keys of an ``.npz`` archive.

    Object arrays are refused (``allow_pickle=False``): an npz never runs code here. Each
    member's declared shape is checked against the bytes the archive holds for it, and all
    of them against the memory limit, before any is read.
    """
    try:
        with open(path, "rb") as handle:  # closed even when np.load fails half-way
            try:
                archive = np.load(handle, allow_pickle=False)
            except _NPZ_ERRORS as exc:
                raise DatasetError(f"{where}: cannot read {str(path)!r} as an npz archive: "
                                   f"{exc}") from exc
            if not hasattr(archive, "files"):  # a plain .npy file
                raise DatasetError(f"{where}: {str(path)!r} is a single .npy array, not an "
                                   "npz archive")
            with archive:
                missing = [k for k in keys if k not in archive.files]
                if missing:
                    raise DatasetError(f"{where}: {str(path)!r} lacks the array(s) {missing} "
                                       f"(it holds {sorted(archive.files)})")
                wanted = [k for k in (*keys, *optional) if k in archive.files]
                _check_npz_sizes(where, path, archive, wanted)
                return {k: archive[k] for k in wanted}
    except _NPZ_ERRORS as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"{where}: cannot read {str(path)!r}: {type(exc).__name__}: "
                           f"{exc}") from exc


def _check_npz_sizes(where, path, archive, keys):
    """Each member's declared array size against its stored bytes, then the total against
    memory (``np.load`` allocates the declared size before it reads a byte)."""

    total = 0
    for key in keys:
        info = archive.zip.getinfo(f"{key}.npy")
        with archive.zip.open(info) as member:
            fmt = np.lib.format
            read_header = fmt.read_array_header_1_0 if fmt.read_magic(member) == (1, 0) \
                else fmt.read_array_header_2_0
            shape, _, dtype = read_header(member)
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        stored = info.file_size if info.compress_type == zipfile.ZIP_STORED \
            else min(info.file_size, DEFLATE_MAX_RATIO * info.compress_size)
        if declared > stored:
            raise DatasetError(f"{where}: {key!r} in {str(path)!r} declares shape {shape} "
                               f"({declared:,d} bytes) but the archive holds {stored:,d}")
        total += declared
    check_memory(where, "path", total, f"the arrays of {str(path)!r}",
                 "the archive declares more than fits in memory")


# ---------------------------------------------------------------------- writing files
def check_writable(where, name, path, *, error_cls=None):
    """Check, before any work, that a file can be written at ``path``: its directory exists
    and is writable, and ``path`` is not a directory. Returns ``path`` as a Path."""

    error_cls = ArgumentError if error_cls is None else error_cls
    missing_cls = DatasetNotFoundError if issubclass(error_cls, DatasetError) else error_cls
    path = as_path(where, name, path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        fail_path(missing_cls, where, name, "is in a directory that does not exist", path)
    if path.is_dir():
        fail_path(error_cls, where, name, "is a directory, not a file name", path)
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists()
                                                   and not os.access(path, os.W_OK)):
        fail_path(error_cls, where, name, "cannot be written (permission denied)", path)
    return path


_TMP_PATTERN = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$")
_CLEANUP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT")
                         if hasattr(signal, name))


@contextlib.contextmanager
def temporary_beside(path):
    """A temporary file name beside ``path`` (``.<name>.<pid>.tmp``), removed on exit.

    Write there, then ``os.replace`` it onto ``path``: an interrupted write never leaves a
    truncated ``path``. The temporary file is also removed when SIGTERM, SIGHUP or SIGINT
    arrives meanwhile (the signal is then re-raised with the handler that was in place, so
    the process still ends as it would have). Stale temporary files of ``path`` left by
    processes that no longer run (killed with SIGKILL) are removed first.
    """
    path = Path(path)
    _remove_stale(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with _removed_on_signal(tmp):
        try:
            yield tmp
        finally:
            _unlink(tmp)


@contextlib.contextmanager
def _removed_on_signal(tmp):
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return
    previous = {sig: signal.getsignal(sig) for sig in _CLEANUP_SIGNALS}

    def restore():
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    def on_signal(signum, frame):
        _unlink(tmp)
        restore()
        signal.raise_signal(signum)

    for sig in previous:
        signal.signal(sig, on_signal)
    try:
        yield
    finally:
        restore()


def _remove_stale(path):
    """Remove ``.<name>.<pid>.tmp`` siblings of ``path`` whose process no longer runs."""
    try:
        siblings = list(path.parent.iterdir()) if path.parent.is_dir() else []
    except OSError:
        return
    for sibling in siblings:
        match = _TMP_PATTERN.match(sibling.name)
        if match and match["name"] == path.name and not _pid_alive(int(match["pid"])):
            _unlink(sibling)


def _pid_alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or cannot tell: leave its file alone
    return True


def _unlink(path):
    try:
        Path(path).unlink()
    except FileNotFoundError:
        pass
