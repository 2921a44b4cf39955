"""Data-parallel training over MPI: gradients all-reduced through mpi4py on CPU tensors.

Why mpi4py and not ``torch.distributed``: the processes already share an MPI communicator
(``mpiexec``), so nothing has to agree on an address and a port, and no gloo build is needed.
Every step, each rank flattens its gradients into one buffer (zeros when it had no minibatch
this step), one ``Allreduce`` sums the buffers together with the count of contributing ranks,
and every rank divides by that count and steps its optimizer: the replicas stay identical,
which :func:`parameter_checksums` lets a test check.
"""

import numpy as np

from .._errors import ArgumentTypeError
from .._optional import import_torch
from .._validate import fail

torch = import_torch("spsample.train")

__all__ = ["GradientAllReduce", "world_of", "sum_over_ranks", "parameter_checksum",
           "parameter_checksums"]


def world_of(comm):
    """``(rank, size)`` of ``comm`` (``(0, 1)`` for ``None``)."""
    if comm is None:
        return 0, 1
    if not (hasattr(comm, "Get_rank") and hasattr(comm, "Allreduce")):
        fail(ArgumentTypeError, "spsample.train", "comm", "must be an mpi4py communicator",
             type(comm))
    return int(comm.Get_rank()), int(comm.Get_size())


def sum_over_ranks(comm, values):
    """Element-wise sums of ``values`` over the ranks of ``comm`` (``None``: ``values`` as
    they are), as Python floats."""
    values = np.asarray(values, dtype=np.float64)
    if comm is not None:
        out = np.empty_like(values)
        comm.Allreduce(values, out)
        values = out
    return values.tolist()


class GradientAllReduce:
    """Averages the gradients of ``params`` over the ranks of ``comm`` that contributed.

    Parameters
    ----------
    params : list of torch.nn.Parameter
        The model's parameters, in the same order on every rank.
    comm : mpi4py communicator or None
        ``None`` (or a single rank) makes :meth:`__call__` a no-op. The communicator is
        ``Dup()``-ed so its traffic never mixes with the caller's.
    """

    def __init__(self, params, comm):
        self.params = [p for p in params if p.requires_grad]
        self.rank, self.size = world_of(comm)
        self.comm = comm.Dup() if comm is not None and self.size > 1 else None
        numel = sum(p.numel() for p in self.params)
        self._buffer = np.zeros(numel + 1, dtype=np.float64)
        #: Bytes this rank contributed to gradient all-reduces so far (the buffer of each
        #: call; an allreduce moves about twice that over the wire, whatever the algorithm).
        self.bytes_sent = 0

    def broadcast_parameters(self, root=0):
        """Copy ``root``'s parameters to every rank (replicas start identical)."""
        if self.comm is None:
            return
        with torch.no_grad():
            for p in self.params:
                arr = np.ascontiguousarray(p.detach().cpu().numpy())
                self.comm.Bcast(arr, root=root)
                p.copy_(torch.from_numpy(arr))

    def __call__(self, contributed):
        """All-reduce the gradients; ``contributed`` says whether this rank computed any.

        Returns the number of ranks that contributed (0 means: skip the optimizer step).
        """
        if self.comm is None:
            return int(bool(contributed))
        buf = self._buffer
        buf[:] = 0.0
        if contributed:
            offset = 0
            for p in self.params:
                n = p.numel()
                if p.grad is not None:
                    buf[offset:offset + n] = p.grad.detach().reshape(-1).cpu().double().numpy()
                offset += n
            buf[-1] = 1.0
        self.comm.Allreduce(_in_place(), buf)
        self.bytes_sent += buf.nbytes
        count = int(round(buf[-1]))
        if count == 0:
            return 0
        offset = 0
        for p in self.params:
            n = p.numel()
            avg = torch.from_numpy(buf[offset:offset + n] / count).reshape(p.shape)
            if p.grad is None:
                p.grad = avg.to(dtype=p.dtype, device=p.device)
            else:
                p.grad.copy_(avg)
            offset += n
        return count

    def close(self):
        if self.comm is not None:
            self.comm.Free()
            self.comm = None


def _in_place():
    from mpi4py import MPI

    return MPI.IN_PLACE


def parameter_checksum(model):
    """A float64 fingerprint of the parameters: their sum and sum of squares, in a fixed
    order (equal replicas give bit-identical checksums)."""
    parts = [p.detach().cpu().double().reshape(-1) for p in model.parameters()]
    flat = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)
    weights = torch.arange(1, flat.numel() + 1, dtype=torch.float64)
    return np.array([float(flat.sum()), float((flat * flat).sum()), float((flat * weights).sum())])


def parameter_checksums(model, comm):
    """Every rank's :func:`parameter_checksum`, gathered on every rank: shape (size, 3)."""
    mine = parameter_checksum(model)
    rank, size = world_of(comm)
    if size == 1:
        return mine[None, :]
    out = np.empty((size, mine.size), dtype=np.float64)
    comm.Allgather(mine, out)
    return out
