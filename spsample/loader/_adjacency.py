"""A GNN layer's sampled adjacency as a CSR matrix: aggregation as one sparse-dense product.

A layer of a sampled minibatch aggregates, for each of its ``num_dst`` output rows, the rows of
its ``num_src`` inputs that the sampler picked: ``out = A @ h`` with ``A`` of shape
``(num_dst, num_src)``, ``A[i, j] = 1 / deg(i)`` for a mean (node-wise samplers) or the
sampler's importance weight ``w_ij`` (LADIES, FastGCN). :class:`Adjacency` holds ``A`` in CSR
form (rows = destinations) and, for the backward product ``A.T @ grad``, its transpose. The
samplers emit every hop's edges grouped by destination in increasing local id, and a node-wise
layer's edges are a prefix of the batch's edges, so building ``A`` is a count and a prefix sum
(no sort); the transpose is one counting pass (``scipy.sparse``'s ``tocsc``, O(nnz + n)).
"""

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Adjacency", "build_adjacency"]


@dataclass(eq=False)
class Adjacency:
    """One layer's aggregation matrix ``A`` (num_dst × num_src) in CSR form, as NumPy arrays.

    Attributes
    ----------
    indptr : int64, shape (num_dst + 1,)
    indices : int64, shape (nnz,)
        Source (column) ids, local, ``< num_src``.
    values : float64, shape (nnz,)
        ``1 / deg(i)`` (``kind == "mean"``) or the edge weights (``kind == "weight"``).
    num_dst, num_src : int
    kind : {"mean", "weight"}

    Notes
    -----
    :meth:`matrix` and :meth:`matrix_t` give torch CSR tensors of ``A`` and ``A.T`` in the
    dtype asked for (built once per dtype and cached; ``A.T`` is built on first use unless
    :meth:`prepare` built it ahead, e.g. in the loader's background thread).
    """

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    num_dst: int
    num_src: int
    kind: str
    _transpose: tuple = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def nnz(self):
        return int(self.indices.size)

    def transpose_arrays(self):
        """``(indptr, indices, values)`` of ``A.T`` in CSR form (rows = sources)."""
        if self._transpose is None:
            import scipy.sparse as sp

            a = sp.csr_matrix((self.values, self.indices, self.indptr),
                              shape=(self.num_dst, self.num_src))
            c = a.tocsc()
            self._transpose = (c.indptr.astype(np.int64, copy=False),
                               c.indices.astype(np.int64, copy=False), c.data)
        return self._transpose

    def matrix(self, dtype=None, device=None):
        """``A`` as a torch CSR tensor of ``dtype`` (default float32) on ``device``."""
        return self._tensor("A", (self.indptr, self.indices, self.values),
                            (self.num_dst, self.num_src), dtype, device)

    def matrix_t(self, dtype=None, device=None):
        """``A.T`` as a torch CSR tensor of ``dtype`` (default float32) on ``device``."""
        return self._tensor("T", self.transpose_arrays(), (self.num_src, self.num_dst), dtype,
                            device)

    def row_sums(self, dtype=None, device=None):
        """``A @ 1``: per destination, the sum of its values (0 for a row without edges)."""
        import torch

        dtype = dtype or torch.float32
        key = ("rows", dtype, str(device or "cpu"))
        if key not in self._cache:
            counts = np.diff(self.indptr)
            sums = np.zeros(self.num_dst, dtype=np.float64)
            nonempty = counts > 0
            if self.values.size:
                sums[nonempty] = np.add.reduceat(self.values, self.indptr[:-1][nonempty])
            self._cache[key] = torch.from_numpy(sums).to(dtype=dtype, device=device or "cpu")
        return self._cache[key]

    def prepare(self, dtype=None, device=None):
        """Build the torch tensors of ``A`` and ``A.T`` now (returns ``self``)."""
        self.matrix(dtype, device)
        self.matrix_t(dtype, device)
        return self

    def _tensor(self, name, arrays, shape, dtype, device):
        import torch

        dtype = dtype or torch.float32
        device = torch.device(device or "cpu")
        key = (name, dtype, str(device))
        if key not in self._cache:
            indptr, indices, values = arrays
            with warnings.catch_warnings():      # "sparse CSR support is in beta"
                warnings.simplefilter("ignore", UserWarning)
                self._cache[key] = torch.sparse_csr_tensor(
                    torch.from_numpy(indptr), torch.from_numpy(indices),
                    torch.from_numpy(np.ascontiguousarray(values)).to(dtype), size=shape,
                    check_invariants=False).to(device)
        return self._cache[key]


def build_adjacency(src, dst, num_src, num_dst, weight=None):
    """The :class:`Adjacency` of edges ``src -> dst`` (local ids, NumPy int64 arrays).

    Parameters
    ----------
    src, dst : int64 arrays, shape (E,)
        ``dst < num_dst`` aggregates from ``src < num_src``.
    num_src, num_dst : int
    weight : float array of shape (E,), optional
        Aggregation weights; ``None``: the mean over each destination's edges.

    Edges already grouped by ``dst`` in increasing order (as the samplers emit them) are taken
    as they are; otherwise they are put in that order first (stable, so each row keeps the
    sampler's order of its entries).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if dst.size > 1 and not bool(np.all(dst[1:] >= dst[:-1])):
        order = np.argsort(dst, kind="stable")
        src, dst = src[order], dst[order]
        weight = None if weight is None else np.asarray(weight)[order]
    counts = np.bincount(dst, minlength=num_dst)
    indptr = np.zeros(num_dst + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    if weight is None:
        values = (1.0 / np.maximum(counts, 1))[dst]
        kind = "mean"
    else:
        values = np.asarray(weight, dtype=np.float64)
        kind = "weight"
    return Adjacency(indptr, src, values, int(num_dst), int(num_src), kind)


def prefix_adjacency(adj, num_dst, num_src):
    """The first ``num_dst`` rows of ``adj`` as an :class:`Adjacency` of ``num_src`` columns
    (views; the caller guarantees those rows' columns are ``< num_src``)."""
    end = int(adj.indptr[num_dst])
    return Adjacency(adj.indptr[:num_dst + 1], adj.indices[:end], adj.values[:end],
                     int(num_dst), int(num_src), adj.kind)
