"""Public sparse primitives for writing new samplers (see :mod:`spsample.samplers`).

Re-exports the building blocks of :mod:`spsample._primitives`: ``RowMatrix`` (a CSR matrix whose
rows carry sampling metadata), ``Streams`` (the RNG stream of each row), ``row_select`` (Q·A as a
gather), ``sample_rows``, ``column_accumulate``, ``sample_columns``,
``sample_columns_by_entries``, ``sample_global``, ``normalize_rows``, ``segmented_sum``,
``segment_arange`` and ``spgemm``.
"""

from ._primitives import (RowMatrix, Streams, column_accumulate, normalize_rows, row_select,
                          sample_columns, sample_columns_by_entries, sample_global, sample_rows,
                          segment_arange, segmented_sum, spgemm)

__all__ = ["RowMatrix", "Streams", "row_select", "spgemm", "normalize_rows", "segmented_sum",
           "segment_arange", "sample_rows", "column_accumulate", "sample_columns",
           "sample_columns_by_entries", "sample_global"]
