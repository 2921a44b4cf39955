"""Data-parallel training over a :class:`~spsample.distributed.Communicator`: gradients
all-reduced on CPU tensors.

Why a spsample communicator and not ``torch.distributed``: the processes already share an MPI
communicator (``mpiexec``: :class:`~spsample.distributed.MPIComm`), so nothing has to agree on
an address and a port, and no gloo build is needed; the same code trains over NCCL
(``NcclComm``) or over ranks that are threads of one process (``ThreadComm``,
:func:`~spsample.distributed.run_threads`). An mpi4py communicator is accepted too (wrapped in
an ``MPIComm``). Every step, each rank flattens its gradients into one buffer (zeros when it
had no minibatch this step), one ``allreduce`` sums the buffers together with the count of
contributing ranks, and every rank divides by that count and steps its optimizer: the replicas
stay identical, which :func:`parameter_checksums` lets a test check.
"""

from contextlib import contextmanager

import numpy as np

from .._optional import import_torch
from ..distributed._comm import Communicator, as_communicator

torch = import_torch("spsample.train")

__all__ = ["GradientAllReduce", "world_of", "sum_over_ranks", "parameter_checksum",
           "parameter_checksums"]


def world_of(comm):
    """``(rank, size)`` of ``comm`` (a Communicator, an mpi4py communicator; ``(0, 1)`` for
    ``None``)."""
    if comm is None:
        return 0, 1
    if isinstance(comm, Communicator):
        return int(comm.rank), int(comm.size)
    if hasattr(comm, "Get_rank") and hasattr(comm, "Allreduce"):     # mpi4py's, not wrapped:
        return int(comm.Get_rank()), int(comm.Get_size())            # no collective here
    as_communicator(comm, "spsample.train")                          # the typed error
    return 0, 1


@contextmanager
def communicator(comm, where="spsample.train"):
    """``comm`` as a Communicator for the block (an mpi4py one wrapped, and freed after)."""
    wrapped = as_communicator(comm, where)
    try:
        yield wrapped
    finally:
        if wrapped is not comm:
            wrapped.free()


def sum_over_ranks(comm, values):
    """Element-wise sums of ``values`` over the ranks of ``comm`` (a Communicator; ``None``:
    ``values`` as they are), as Python floats."""
    values = np.asarray(values, dtype=np.float64)
    if comm is not None:
        values = comm.allreduce(values)
    return values.tolist()


class GradientAllReduce:
    """Averages the gradients of ``params`` over the ranks of ``comm`` that contributed.

    Parameters
    ----------
    params : list of torch.nn.Parameter
        The model's parameters, in the same order on every rank.
    comm : spsample.distributed.Communicator, mpi4py communicator or None
        ``None`` (or a single rank) makes :meth:`__call__` a no-op. The communicator is
        duplicated (:meth:`~spsample.distributed.Communicator.dup`) so its traffic never
        mixes with the caller's; :attr:`comm` is the duplicate (a Communicator).
    """

    def __init__(self, params, comm):
        self.params = [p for p in params if p.requires_grad]
        self.rank, self.size = world_of(comm)
        self.comm = None
        if comm is not None and self.size > 1:
            self.comm = comm.dup() if isinstance(comm, Communicator) else \
                as_communicator(comm, "spsample.train")
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
            mine = [np.ascontiguousarray(p.detach().cpu().numpy()) for p in self.params]
            for p, arr in zip(self.params, self.comm.bcast(mine, root=root)):
                p.copy_(torch.from_numpy(np.array(arr, copy=True)))

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
        buf = self.comm.allreduce(buf)
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
            self.comm.free()
            self.comm = None


def parameter_checksum(model):
    """A float64 fingerprint of the parameters: their sum and sum of squares, in a fixed
    order (equal replicas give bit-identical checksums)."""
    parts = [p.detach().cpu().double().reshape(-1) for p in model.parameters()]
    flat = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)
    weights = torch.arange(1, flat.numel() + 1, dtype=torch.float64)
    return np.array([float(flat.sum()), float((flat * flat).sum()), float((flat * weights).sum())])


def parameter_checksums(model, comm):
    """Every rank's :func:`parameter_checksum`, gathered on every rank over ``comm`` (a
    Communicator or an mpi4py communicator): shape (size, 3)."""
    mine = parameter_checksum(model)
    rank, size = world_of(comm)
    if size == 1:
        return mine[None, :]
    with communicator(comm) as c:
        return c.allgather(mine)
