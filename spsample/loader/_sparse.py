"""Sparse feature rows: bag-of-words style features (e.g. 14 non-zeros in 4,714 columns) kept
in CSR form from the file to the first GNN layer.

A dense batch of such features spends its time moving zeros: gathering, casting, normalising,
dropping out and multiplying ``N x f`` values. :class:`SparseRows` holds a batch's rows as CSR
tensors instead, and its one product, ``x @ W.T``, is ``torch.nn.functional.embedding_bag``
(a weighted sum of weight columns per row: autograd-aware, deterministic on the CPU, no torch
sparse-tensor API needed). :class:`SparseFeatures` is the loader's source for a
``scipy.sparse`` matrix.
"""

import warnings
from dataclasses import dataclass

import numpy as np

from ._source import FeatureSource, checked_bulk, checked_ids

__all__ = ["SparseRows", "SparseFeatures"]

_USE = ("project it first with x.matmul_t(layer.weight) (no densifying), or call "
        "x.to_dense() (N x f values per batch); see the README, 'Sparse features stay sparse'")


@dataclass(eq=False)
class SparseRows:
    """Rows of a sparse feature matrix as CSR torch tensors (a batch's ``x``).

    Attributes
    ----------
    indptr : LongTensor, shape (N + 1,)
    indices : LongTensor, shape (nnz,)
        Column ids.
    values : Tensor, shape (nnz,)
    num_cols : int
        Feature width ``f``.
    """

    indptr: object
    indices: object
    values: object
    num_cols: int

    @property
    def shape(self):
        return (int(self.indptr.shape[0]) - 1, self.num_cols)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def device(self):
        return self.values.device

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, rows):
        """``x[:k]``: the first ``k`` rows (a prefix: views, no copy)."""
        if not (isinstance(rows, slice) and rows.start in (None, 0) and rows.step in (None, 1)):
            raise TypeError(f"SparseRows supports only prefix slices x[:k] (got {rows!r}); "
                            f"{_USE}")
        k = min(self.shape[0], self.shape[0] if rows.stop is None else int(rows.stop))
        end = int(self.indptr[k])
        return SparseRows(self.indptr[:k + 1], self.indices[:end], self.values[:end],
                          self.num_cols)

    def matmul_t(self, weight):
        """``x @ weight.T`` for ``weight`` of shape (out, f): a dense (N, out) tensor.

        Forward: ``embedding_bag`` over the contiguous (f, out) table ``weight.T`` (reading a
        strided ``weight.T`` made it 20x slower). Backward (CPU, values without gradient):
        ``d weight = (x.T @ grad).T``, one CSR product with ``x.T`` (built by a counting
        pass), instead of ``embedding_bag``'s sort-based backward (2-4x slower)."""
        if self.values.requires_grad or self.values.device.type != "cpu":
            return _embedding_matmul_t(self, weight)
        return _MatmulT.apply(weight, self)

    def transposed(self, dtype=None):
        """``x.T`` (f × N) as a torch CSR tensor of ``dtype`` (cached per dtype)."""
        import scipy.sparse as sp
        import torch

        dtype = dtype or self.values.dtype
        cache = self.__dict__.setdefault("_transposed", {})
        if dtype not in cache:
            n, f = self.shape
            csr = sp.csr_matrix((self.values.detach().numpy(), self.indices.numpy(),
                                 self.indptr.numpy()), shape=(n, f))
            t = csr.tocsc()
            with warnings.catch_warnings():          # "sparse CSR support is in beta"
                warnings.simplefilter("ignore", UserWarning)
                cache[dtype] = torch.sparse_csr_tensor(
                    torch.from_numpy(t.indptr.astype(np.int64, copy=False)),
                    torch.from_numpy(t.indices.astype(np.int64, copy=False)),
                    torch.from_numpy(t.data).to(dtype), size=(f, n), check_invariants=False)
        return cache[dtype]

    def with_values(self, values):
        return SparseRows(self.indptr, self.indices, values, self.num_cols)

    def row_normalized(self):
        """Each row divided by its sum (rows summing to 0 unchanged)."""
        import torch

        counts = self.indptr[1:] - self.indptr[:-1]
        rows = torch.repeat_interleave(torch.arange(counts.numel(), device=self.device), counts)
        total = torch.zeros(counts.numel(), dtype=self.values.dtype, device=self.device)
        total.index_add_(0, rows, self.values)
        total = torch.where(total == 0, torch.ones_like(total), total)
        return self.with_values(self.values / total.index_select(0, rows))

    def dropout(self, p, training, generator=None):
        """Dropout on the stored values (zeros stay zero, as in dense dropout).

        ``generator``: a CPU ``torch.Generator`` to draw the mask from (the same mask as
        ``torch.nn.functional.dropout`` draws from torch's default generator in that state);
        None: torch's default generator."""
        import torch.nn.functional as F

        values = self.values
        if generator is None or not training or p == 0 or values.device.type != "cpu":
            return self.with_values(F.dropout(values, p=p, training=training))
        noise = values.new_empty(values.shape).bernoulli_(1 - p, generator=generator)
        return self.with_values(values * noise.div_(1 - p))

    def to_dense(self):
        import torch

        n, f = self.shape
        counts = self.indptr[1:] - self.indptr[:-1]
        rows = torch.repeat_interleave(torch.arange(n, device=self.device), counts)
        out = torch.zeros((n, f), dtype=self.values.dtype, device=self.device)
        out.index_put_((rows, self.indices), self.values, accumulate=True)
        return out

    def is_floating_point(self):
        return self.values.is_floating_point()

    def to(self, target, non_blocking=False):
        """A copy on device ``target``, or with values cast to dtype ``target``."""
        import torch

        if isinstance(target, torch.dtype):
            return self.with_values(self.values.to(target))
        return SparseRows(*(t.to(target, non_blocking=non_blocking)
                            for t in (self.indptr, self.indices, self.values)), self.num_cols)

    def pin_memory(self):
        return SparseRows(self.indptr.pin_memory(), self.indices.pin_memory(),
                          self.values.pin_memory(), self.num_cols)

    def __getattr__(self, name):
        # only reached for names SparseRows lacks, e.g. tensor methods a dense layer calls
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"'SparseRows' object has no attribute {name!r}: batch.x holds "
                             f"CSR rows of sparse features, not a tensor; {_USE}")

    def __repr__(self):
        return f"SparseRows(shape={self.shape}, nnz={int(self.indices.shape[0])})"


def _embedding_matmul_t(rows, weight):
    import torch.nn.functional as F

    return F.embedding_bag(rows.indices, weight.t().contiguous(), rows.indptr[:-1],
                           mode="sum", per_sample_weights=rows.values.to(weight.dtype))


def _matmul_t_function():
    import torch

    class MatmulT(torch.autograd.Function):
        """``rows @ weight.T``, differentiable in ``weight`` through ``rows.T @ grad``."""

        @staticmethod
        def forward(ctx, weight, rows):
            ctx.rows = rows
            return _embedding_matmul_t(rows, weight)

        @staticmethod
        def backward(ctx, grad):
            if not ctx.needs_input_grad[0]:
                return None, None
            xt = ctx.rows.transposed(grad.dtype)
            return torch.sparse.mm(xt, grad.contiguous()).t(), None

    return MatmulT


class _Lazy:
    """``_MatmulT.apply``, the Function class built on first use (torch is optional)."""

    fn = None

    def apply(self, *args):
        if _Lazy.fn is None:
            _Lazy.fn = _matmul_t_function()
        return _Lazy.fn.apply(*args)


_MatmulT = _Lazy()


def sparse_rows(matrix, dtype=None):
    """A ``scipy.sparse`` CSR matrix's rows as :class:`SparseRows` (index arrays shared
    through DLPack; values cast to ``dtype`` when given)."""
    import torch

    indptr = torch.from_numpy(np.ascontiguousarray(matrix.indptr, dtype=np.int64))
    indices = torch.from_numpy(np.ascontiguousarray(matrix.indices, dtype=np.int64))
    values = torch.from_numpy(np.ascontiguousarray(matrix.data))
    if dtype is not None and values.dtype != dtype:
        values = values.to(dtype)
    return SparseRows(indptr, indices, values, int(matrix.shape[1]))


class SparseFeatures(FeatureSource):
    """Features in a ``scipy.sparse`` matrix of shape (n, f); batches get :class:`SparseRows`.

    Built by :func:`~spsample.loader.as_feature_source` for any ``scipy.sparse`` input, or
    from a dense array with :meth:`from_dense`.
    """

    def __init__(self, matrix):
        import scipy.sparse as sp

        matrix = sp.csr_matrix(matrix)
        # sorted_indices() copies: sort_indices() would sort the caller's arrays in place
        self.matrix = matrix if matrix.has_sorted_indices else matrix.sorted_indices()
        self.num_nodes, self.num_features = (int(s) for s in self.matrix.shape)

    @classmethod
    def from_dense(cls, array):
        """From a dense (n, f) array (e.g. a :class:`~spsample.Dataset`'s features)."""
        import scipy.sparse as sp

        return cls(sp.csr_matrix(np.asarray(array)))

    @property
    def density(self):
        return self.matrix.nnz / max(1, self.num_nodes * self.num_features)

    def fetch(self, n_id):
        return self.matrix[checked_ids("SparseFeatures.fetch", n_id, self.num_nodes)]

    def fetch_bulk(self, n_ids):
        return [self.matrix[ids] for ids in checked_bulk("SparseFeatures.fetch_bulk", n_ids,
                                                         self.num_nodes)]
