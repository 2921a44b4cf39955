"""spsample's optional native engine: the switch, its threads, and the kernels' Python side.

``spsample._native_kernels`` is a C++17 extension (pybind11 over NumPy buffers, OpenMP across
minibatches; sources in ``native/``) built by ``pip install``; without it spsample runs its
NumPy path, with the same results.

Which path runs (what users and the experiments use):

* :data:`AVAILABLE` -- the extension imported (:data:`IMPORT_ERROR` says why not).
* :func:`enabled` -- the native path is active: available, and neither switched off by the
  environment variable ``SPSAMPLE_NATIVE=0`` (read once, at import) nor by
  :func:`set_enabled` / :func:`disabled` at run time; :func:`active_path` says
  ``"native"`` or ``"numpy"``.
* :func:`set_num_threads` / :func:`get_num_threads` -- the kernels' threads (default: OpenMP's,
  i.e. ``OMP_NUM_THREADS`` or all cores; ``SPSAMPLE_THREADS`` applies at import,
  :func:`apply_env_threads`). Results never depend on them: each minibatch is sampled by one
  thread from its own keyed streams. :func:`max_threads` is the ceiling of every thread count
  (:func:`check_threads`, :func:`threads_from_env`).
* :func:`set_passive_wait`, :data:`WAIT_POLICY`, :func:`warn_if_spinning` -- how idle OpenMP
  threads wait, set by ``import spsample`` before any runtime loads (:mod:`spsample._openmp`).
* :func:`set_pool_limit` / :func:`pool_stats` -- the pool of recycled output blocks.

The rest serves spsample's other rooms, one private module per job:

* ``_codes`` -- the plan codes, taken from the extension (:class:`Frontier`,
  :class:`SelectRule`, :class:`StreamKey`, :class:`ValueOp`, :class:`LinkMode`);
* ``_kernel_calls`` -- the bulk kernels called with checked arguments, the memory budget and the
  thread setting (flat results: :func:`run_bulk`, :func:`select_rows`);
* ``_bulk_ops`` -- relabelling, link minibatches, minibatch edges, typed grouping;
* ``_io`` -- edge-list parsing, entry checks, file ranges;
* ``_buffers`` -- the arrays handed to the kernels; ``graph._weights`` -- the values layer-wise
  sampling squares and sums.

The lowering of traced constructors onto these kernels and the kernels' results in the engine's
types live in the engine room, which this room lies below (``spsample.engine._lowering``,
``spsample.engine._native_run``).

Examples
--------
>>> from spsample import native
>>> native.active_path() in ("native", "numpy")
True
>>> with native.disabled():
...     native.active_path()
'numpy'
"""

from .._openmp import WAIT_POLICY, set_passive_wait, warn_if_spinning
from ._buffers import (alias_table, alias_tables, as_f64, as_i64, bulk_args, column_fence,
                       indices32, internal_columns)
from ._bulk_ops import insert_bulk, link_bulk, lookup_bulk, minibatch_edges, split_typed
from ._codes import VALUE_STACK, Frontier, LinkMode, SelectRule, StreamKey, ValueOp
from ._io import check_entries, gather_ranges, parse_edges
from ..graph._weights import layerwise_scale, layerwise_weights
from ._kernel_calls import ALIAS_OVERFLOW, run_bulk, select_rows
from ._switch import (AVAILABLE, IMPORT_ERROR, active_path, apply_env_threads, disabled, enabled,
                      get_num_threads, kernel_threads, kernels, pool_stats, set_enabled,
                      set_num_threads, set_pool_limit)
from ._threads import check_threads, max_threads, threads_from_env

__all__ = [
    # the switch, threads and pool
    "AVAILABLE", "IMPORT_ERROR", "enabled", "set_enabled", "disabled", "active_path",
    "set_num_threads", "get_num_threads", "set_pool_limit", "pool_stats",
    "max_threads", "check_threads", "threads_from_env", "apply_env_threads",
    "set_passive_wait", "warn_if_spinning", "WAIT_POLICY",
    # for spsample's rooms
    "kernels", "kernel_threads", "Frontier", "SelectRule", "StreamKey", "ValueOp", "LinkMode",
    "VALUE_STACK", "ALIAS_OVERFLOW", "run_bulk", "select_rows", "insert_bulk", "lookup_bulk", "link_bulk",
    "minibatch_edges", "split_typed", "parse_edges", "check_entries", "gather_ranges",
    "as_i64", "as_f64", "bulk_args", "column_fence", "indices32", "internal_columns",
    "layerwise_weights",
    "layerwise_scale", "alias_tables", "alias_table",
]

# SPSAMPLE_THREADS (._threads) applies from the first use of the native kernels on,
# before any explicit set_num_threads call (which then wins).
apply_env_threads()
