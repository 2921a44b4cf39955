"""Streaming conversion of an edge list too large for memory (``spsample convert SRC DST
--memory-budget 1GB``): the text is parsed in chunks, each chunk's entries sorted and
deduplicated into a run file (external sort), the runs merged window by window into the CSR
column ids (a raw temporary file) while the row lengths are counted, and the HDF5 file written
with ``/graph/*`` contiguous and uncompressed (``spsample.load(dst, mmap=True)`` reads it by
``pread``). Memory: the ``8 (n + 1)``-byte row lengths plus about ``memory_budget`` of buffers.

The result equals :func:`~spsample.io.from_edge_list` with ``relabel=False`` (``n = max id +
1``; line ``u v`` puts ``u`` in row ``v``; duplicate lines merged), unweighted.
"""

import gzip
import io
import os
import shutil
import tempfile

import numpy as np

from .._errors import DatasetError
from .._validate import fail
from .. import native as _native
from ._disk_graph import as_budget
from ._files import temporary_beside
from ._h5 import _DENSE_VERSION, FORMAT

__all__ = ["stream_edge_list"]

_MIN_CHUNK = 1 << 16


def _open_text(path):
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


def _chunks(path, chunk_bytes):
    """Whole lines of ``path``, about ``chunk_bytes`` at a time, and their byte offsets."""
    with _open_text(path) as f:
        rest, offset = b"", 0
        while True:
            block = f.read(chunk_bytes)
            if not block:
                if rest.strip():
                    yield offset, rest + b"\n"
                return
            data = rest + block
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            yield offset, data[:cut]
            offset += cut
            rest = data[cut:]


def _parse(where, path, offset, text, comment):
    """``(E, 2)`` int64 ``(u, v)`` of one chunk of lines (native parser, NumPy fallback)."""

    edges = None
    if _native.enabled():
        edges = _native.parse_edges(text, comment or "", "")
    if edges is None:
        try:
            edges = np.loadtxt(io.BytesIO(text), dtype=np.int64, comments=comment,
                               usecols=(0, 1), ndmin=2)
        except ValueError as exc:
            fail(DatasetError, where, "src", f"has a line that is not 'u v' with integer ids "
                 f"in the chunk at byte {offset} ({exc})", str(path))
    if edges.size and edges.min() < 0:
        fail(DatasetError, where, "src", f"has a negative node id in the chunk at byte "
             f"{offset}", str(path))
    return edges.reshape(-1, 2)


#: Streamed ids must be below this (an entry is one int64 key ``row << 32 | col``).
MAX_ID = 2**31


def _keys(rows, cols):
    """Sorted distinct keys ``row << 32 | col`` (int64)."""
    k = np.sort((rows << 32) | cols)
    if k.size > 1:
        k = k[np.r_[True, k[1:] != k[:-1]]]
    return k


def _write_runs(where, path, tmp, chunk_bytes, directed, comment):
    """Pass 1: sorted runs of keys on disk; returns (run paths, max id)."""
    runs, top = [], -1
    for i, (offset, text) in enumerate(_chunks(path, chunk_bytes)):
        uv = _parse(where, path, offset, text, comment)
        if uv.shape[0] == 0:
            continue
        top = max(top, int(uv.max()))
        if top >= MAX_ID:
            fail(DatasetError, where, "src", f"has a node id >= 2**31 in the chunk at byte "
                 f"{offset} (streaming supports smaller ids)", str(path))
        rows, cols = uv[:, 1], uv[:, 0]              # line "u v": u in row v
        if not directed:
            rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
        run = os.path.join(tmp, f"run{i}.npy")
        np.save(run, _keys(rows, cols))
        runs.append(run)
    return runs, top


class _Run:
    """A run file (``.npy`` of int64 keys) read a window at a time with plain reads (no
    mmap: its pages would count in the process's RSS)."""

    def __init__(self, path):
        self.f = open(path, "rb")
        version = np.lib.format.read_magic(self.f)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, _, _ = read_header(self.f)
        self.size, self.start = int(shape[0]), self.f.tell()

    def read(self, pos, count):
        self.f.seek(self.start + 8 * pos)
        return np.fromfile(self.f, dtype=np.int64, count=min(count, self.size - pos))

    def close(self):
        self.f.close()


def _merge(runs, window, degree, out):
    """Pass 2: k-way merge of the runs, ``window`` keys of each at a time; column ids appended
    to the open binary file ``out``, row lengths counted in ``degree``."""
    arrays = [_Run(r) for r in runs]
    pos = [0] * len(arrays)
    last = -1
    while True:
        live = [i for i, a in enumerate(arrays) if pos[i] < a.size]
        if not live:
            for a in arrays:
                a.close()
            return
        wins = {i: arrays[i].read(pos[i], window) for i in live}
        ends = [int(wins[i][-1]) for i in live if pos[i] + window < arrays[i].size]
        bound = min(ends) if ends else None
        parts = []
        for i in live:
            w = wins[i]
            take = w.shape[0] if bound is None else int(np.searchsorted(w, bound, "right"))
            parts.append(np.asarray(w[:take]))
            pos[i] += take
        k = np.sort(np.concatenate(parts))
        k = k[np.r_[True, k[1:] != k[:-1]]] if k.size else k
        k = k[k > last]
        if k.size:
            last = int(k[-1])
            rows = k >> 32
            cut = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            degree[rows[cut]] += np.diff(np.r_[cut, rows.size])
            out.write((k & 0xFFFFFFFF).tobytes())


def stream_edge_list(path, dst, *, memory_budget="1GB", directed=True, comment="#",
                     name=None):
    """Convert a large text edge list to spsample's HDF5 without holding it in memory.

    Parameters
    ----------
    path : str or os.PathLike
        ``u v`` per line (whitespace-separated; plain or ``.gz``), ``comment`` lines skipped.
    dst : str or os.PathLike
        The HDF5 file to write (replaced atomically; nothing is left half-written).
    memory_budget : int or str
        Bytes for the chunk, run and merge buffers (besides the row lengths).
    directed : bool
        ``False``: every line also puts ``v`` in row ``u``.
    comment : str or None
    name : str, optional
        Dataset name (default: the file name without extensions).

    Returns
    -------
    dict with ``num_nodes``, ``num_edges``, ``runs`` and ``name`` (the name stored).

    Raises
    ------
    DatasetError
        A line that is not two non-negative integer ids, naming the chunk's byte offset.
    ArgumentError, ArgumentTypeError
        ``memory_budget`` not a size.
    """
    import h5py


    where = "spsample.io.stream_edge_list"
    budget = as_budget(where, memory_budget)
    chunk = max(_MIN_CHUNK, budget // 8)            # text + parsed + sorted copies
    path, dst = str(path), str(dst)
    if not os.path.isfile(path):
        fail(DatasetError, where, "src", "does not exist", path)
    tmp = tempfile.mkdtemp(prefix=".spsample-runs-", dir=os.path.dirname(os.path.abspath(dst)))
    try:
        runs, top = _write_runs(where, path, tmp, chunk, directed, comment)
        n = top + 1
        degree = np.zeros(max(n, 0), dtype=np.int64)
        cols = os.path.join(tmp, "indices.bin")
        window = max(1024, budget // (64 * max(1, len(runs))))
        with open(cols, "wb") as out:
            _merge(runs, window, degree, out)
        num_edges = int(degree.sum())
        name = name or os.path.basename(path).removesuffix(".gz").rsplit(".", 1)[0]
        with temporary_beside(dst) as part:
            with h5py.File(part, "w", track_order=True) as f:
                f.attrs.update(format=FORMAT, version=_DENSE_VERSION, name=name, num_nodes=n)
                grp = f.create_group("graph")
                indptr = np.zeros(n + 1, dtype=np.int64)
                np.cumsum(degree, out=indptr[1:])
                grp.create_dataset("indptr", data=indptr)
                dset = grp.create_dataset("indices", shape=(num_edges,), dtype=np.int64)
                _copy_raw(cols, dset, chunk // 8)
            os.replace(part, dst)
        return {"num_nodes": n, "num_edges": num_edges, "runs": len(runs), "name": name}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _copy_raw(raw, dset, entries):
    """``dset[:] =`` the int64 values of the raw file ``raw``, ``entries`` at a time."""
    with open(raw, "rb") as f:
        start = 0
        while True:
            buf = f.read(8 * entries)
            if not buf:
                return
            a = np.frombuffer(buf, dtype=np.int64)
            dset[start:start + a.size] = a
            start += a.size
