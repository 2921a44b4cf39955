"""Calls into the bulk kernels of the extension, with what every call needs: the arguments
checked (:func:`~._buffers.bulk_args`), the memory budget (``ResourceLimitError`` when the output
outgrows it), the thread setting, and the kernels' errors translated. Results come back as the
kernels return them (flat arrays); :mod:`spsample.engine._native_run` wraps them into the
engine's types."""

import numpy as np

from .._errors import ResourceLimitError, SamplerError
from ..graph._times import cut_times
from .._validate import memory_limit
from ._buffers import as_f64, as_i64, bulk_args
from ._switch import kernel_threads, kernels

__all__ = ["run_bulk", "select_rows", "ALIAS_OVERFLOW"]


def _budget():
    return int(min(memory_limit(), 2**63 - 1))


#: What the alias rule says of a row whose positive values sum past the largest float64 (the
#: NumPy evaluation and the kernels alike).
ALIAS_OVERFLOW = ("has a row whose positive values sum to more than the largest float64: "
                  "method='alias' cannot build its table")


def _translated(call):
    """``call()`` with the kernels' MemoryError / ArithmeticError as spsample's errors."""
    try:
        return call()
    except MemoryError as exc:
        raise ResourceLimitError(f"sample: argument 'sampler': {exc} (the memory this process may "
                                 "use); lower the fanouts, batch_size or bulk size") from None
    except OverflowError:
        raise SamplerError(f"select_rows: argument 'P' {ALIAS_OVERFLOW}") from None
    except ArithmeticError as exc:
        raise SamplerError(f"sample: select_rows: argument 'bound' is exceeded ({exc})") from None


def run_bulk(kernel, spec, graph, seeds, sizes, batch_ids, seed, epoch, *, windows=None,
             minibatch_major=False):
    """One bulk through a lowered plan's kernel (``"rowwise"`` or ``"layerwise"``).

    Returns
    -------
    tuple
        ``(batch_ids, sizes, out)`` with the checked ``batch_ids`` and ``sizes`` and the
        kernel's output: ``(n_id, node_offsets, counts, hops)`` with ``hops`` a list of
        ``(dst, src, edge_id, weight or None, offsets)``, or, row-wise with
        ``minibatch_major``, ``(n_id, node_offsets, counts, block, edge_offsets, hop_edges)``;
        ``out`` is ``None`` when a windowed run read a column id outside ``[0, n)``.

    Raises
    ------
    ArgumentError
        Inconsistent bulk arguments (:func:`~._buffers.bulk_args`).
    ResourceLimitError, SamplerError
        The output outgrew the memory available; a rejection bound was exceeded.
    """
    indptr, indices, seeds, sizes, batch_ids, k0, k1 = bulk_args(graph, seeds, sizes, batch_ids,
                                                                  seed, epoch)
    budget, threads = _budget(), kernel_threads()
    if windows is not None:
        call = lambda: kernels.run_rowwise_windowed(  # noqa: E731
            spec["graphs"], seeds, sizes, batch_ids, spec["hops"], spec["f64"], spec["i64"],
            k0, k1, int(epoch), budget, threads, *windows)
    elif kernel == "rowwise":
        call = lambda: kernels.run_rowwise(  # noqa: E731
            spec["graphs"], seeds, sizes, batch_ids, spec["hops"], spec["f64"], spec["i64"],
            k0, k1, int(epoch), budget, threads, bool(minibatch_major))
    else:
        call = lambda: _layerwise(graph, indptr, indices, seeds, sizes, batch_ids,  # noqa: E731
                                  spec, k0, k1, epoch, budget)
    return batch_ids, sizes, _translated(call)


def _layerwise(graph, indptr, indices, seeds, sizes, batch_ids, spec, k0, k1, epoch, budget):
    q = cumulative = None
    if spec["column_weights"] is not None:
        q, cumulative = (as_f64(a) for a in spec["column_weights"])
    indices32, internal_of, vertex_of = graph.internal_columns()
    weights = None if graph.weights is None else as_f64(graph.layerwise_weights())
    return kernels.layerwise_bulk(indptr, indices, indices32, internal_of, vertex_of, weights,
                                  seeds, sizes, batch_ids, spec["fanouts"], k0, k1, int(epoch), q,
                                  cumulative, budget, kernel_threads())


def _request_times(hop, times):
    """The requests' cut times in the kind of the hop's entry times (exactly converted)."""
    kind = np.int64 if hop.get("time_int") else np.float64
    return np.ascontiguousarray(cut_times("sample", "seed_time", np.asarray(times), kind))


def select_rows(lowered, vertex, row, batch, hop_word, key, *, keys=None, num_threads=None,
                windows=None, times=None):
    """A lowered hop's selection on requested rows (arguments of
    :func:`spsample.engine._native_run.select_requests`, ``vertex`` not empty).

    Returns
    -------
    indptr : int64, shape (r + 1,)
    column, edge : int64, shape (E,)
        The kept columns and their positions in ``lowered.graph``'s indices, row after row.
    """
    k0, k1 = (int(k) for k in key)
    count, edge, column = _translated(lambda: kernels.select_requests(
        lowered.graph, lowered.hop, lowered.f64, lowered.i64, lowered.n_vertices,
        as_i64(vertex), as_i64(row), None if keys is None else as_i64(keys), as_i64(batch),
        int(hop_word), k0, k1, _budget(),
        kernel_threads() if num_threads is None else int(num_threads), windows,
        None if times is None else _request_times(lowered.hop, times)))
    indptr = np.zeros(count.size + 1, dtype=np.int64)
    np.cumsum(count, out=indptr[1:])
    return indptr, column, edge
