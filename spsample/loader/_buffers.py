"""Feature rows gathered into reused buffers, not into freshly faulted-in memory.

A bulk's feature rows are large (R-MAT 18, 4 × 1,024 seeds, fanouts 15,10,5, 128 float32
columns: 70 MB; musae-facebook's 4,714 dense columns: 1 GB) and a fresh ``np.empty`` of that
size is mapped from the OS on every bulk: each page is faulted in and zeroed before the gather
writes it, which costs as much as the gather itself. :class:`BufferPool` keeps the memory of
bulks whose batches are gone and hands it out again. A buffer returns to the pool only when
the last array or tensor viewing it is freed (a finalizer on the array that owns the views;
torch tensors made from them by DLPack keep it alive), so a batch the caller keeps is never
overwritten: the pool then allocates a new buffer.

:func:`gather_rows` copies rows ``index`` of a CPU source into such a buffer with
``torch.index_select(..., out=)`` (a parallel row copy; 15 GB/s on the 2-core machine).
"""

import threading
import weakref

import numpy as np

__all__ = ["BufferPool", "gather_rows", "DEFAULT_POOL"]

_MIN_POOLED = 1 << 16      # smaller buffers are not worth pooling
_ROUND = 1 << 21           # capacities in 2 MiB steps, with 1/8 slack for the next bulk's size


class _Held(np.ndarray):
    """Pool-owned memory. A subclass, so that NumPy's base-collapsing stops at the plain
    ``owner`` array handed out above it: every view of a buffer keeps its owner alive."""


class BufferPool:
    """Reusable byte buffers for feature rows, returned when nothing views them any more.

    Parameters
    ----------
    max_free : int
        Free buffers kept for reuse (the least recently returned are dropped first).
    """

    def __init__(self, max_free=4):
        self.max_free = int(max_free)
        self._free = []
        self._lock = threading.Lock()
        self.allocated = 0
        self.reused = 0

    def empty(self, shape, dtype):
        """An uninitialised C-contiguous array of ``shape`` and ``dtype``, from the pool."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count * dtype.itemsize
        if nbytes < _MIN_POOLED:
            return np.empty(shape, dtype=dtype)
        held = self._take(nbytes)
        owner = held[:nbytes].view(np.ndarray)
        weakref.finalize(owner, self._give_back, held)
        return owner.view(dtype).reshape(shape)

    def _take(self, nbytes):
        with self._lock:
            fits = [b for b in self._free if b.size >= nbytes]
            if fits:
                best = min(fits, key=lambda b: b.size)
                self._free = [b for b in self._free if b is not best]
                self.reused += 1
                return best
            self.allocated += 1
        capacity = -(-(nbytes + nbytes // 8) // _ROUND) * _ROUND
        return np.empty(capacity, dtype=np.uint8).view(_Held)

    def _give_back(self, held):
        with self._lock:
            self._free.append(held)
            del self._free[:-self.max_free or len(self._free)]

    def stats(self):
        """``allocated`` and ``reused`` buffer counts, ``free_bytes`` held for reuse."""
        with self._lock:
            return dict(allocated=self.allocated, reused=self.reused,
                        free_bytes=int(sum(b.size for b in self._free)))

    def clear(self):
        """Drop the free buffers (memory in use is untouched)."""
        with self._lock:
            self._free = []


#: The pool the built-in feature sources share.
DEFAULT_POOL = BufferPool()


def gather_rows(source, index, out):
    """``out[:] = source[index]`` for a CPU torch tensor ``source`` (n, f), an int64 NumPy
    ``index`` (N,) and a NumPy ``out`` (N, f) of the source's dtype; returns ``out``."""
    import torch

    torch.index_select(source, 0, torch.from_numpy(np.ascontiguousarray(index)),
                       out=torch.from_numpy(out))
    return out
