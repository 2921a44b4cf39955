"""Datasets on disk: the :class:`Dataset` container, spsample's HDF5 layout, converters.

* :class:`Dataset` -- a :class:`~spsample.Graph` plus optional features, labels and splits;
  :class:`HeteroDataset` -- a :class:`~spsample.HeteroGraph` plus per-type features and labels,
  node splits of a target type and edge splits (HeCo, temporal SNAP lists, knowledge graphs).
* :func:`save` / :func:`load` -- one HDF5 layout (documented in ``spsample/io/_hdf5.py``);
  :func:`open_rows`, :func:`read_rows` and :func:`read_feature_rows` read row ranges and
  feature rows without loading the whole file (for distributed loaders).
* ``from_<format>`` -- readers for public formats: Planetoid pickles, gnn-benchmark npz,
  heterophilous-graphs npz, MUSAE CSV+JSON, SNAP edge lists, CSR npz, OGB raw folders and
  in-memory ``scipy.sparse`` matrices; :func:`convert` detects the format and saves.
* :func:`load_cora` / :func:`embedded_path` -- the Cora dataset shipped with the package.

Graph convention: row ``v`` of the CSR lists the vertices ``v`` aggregates from; an edge
``u -> v`` of a source file puts ``u`` in row ``v``; undirected sources are symmetrised.
"""

from ._convert import FORMATS, convert, detect_format
from ._converters import (
    from_csr_npz,
    from_edge_list,
    from_heterophilous_npz,
    from_musae,
    from_npz_gnnbench,
    from_ogb,
    from_scipy,
)
from ._dataset import Dataset
from ._embedded import embedded_names, embedded_path, load_cora
from ._hdf5 import (
    RowReader,
    load,
    open_rows,
    read_feature_rows,
    read_node_targets,
    read_rows,
    save,
)
from ._hetero_converters import from_heco, from_kg, from_temporal_edges
from ._hetero_dataset import HeteroDataset
from ._planetoid import from_planetoid

__all__ = [
    "Dataset",
    "HeteroDataset",
    "from_heco",
    "from_temporal_edges",
    "from_kg",
    "save",
    "load",
    "open_rows",
    "read_rows",
    "read_feature_rows",
    "read_node_targets",
    "RowReader",
    "convert",
    "detect_format",
    "FORMATS",
    "from_planetoid",
    "from_npz_gnnbench",
    "from_heterophilous_npz",
    "from_musae",
    "from_edge_list",
    "from_csr_npz",
    "from_scipy",
    "from_ogb",
    "load_cora",
    "embedded_path",
    "embedded_names",
]
