"""The heterogeneous layout of spsample's HDF5 file (format version 3; the homogeneous layout
of ``_hdf5.py`` is unchanged). Groups are numbered, names are attributes::

    /                              attrs: format="spsample", version=3, name, kind="hetero"
    /hetero                        attrs: target_type (str, "" if none)
    /hetero/node_types/<i>         attrs: name (str), num_nodes (int)
    /hetero/node_types/<i>/features      dense (n_t, f) or a CSR group as /features
    /hetero/node_types/<i>/labels        int64 (n_t,)
    /hetero/node_types/<i>/time          int64 or float64 (n_t,)  integer times stay int64
    /hetero/relations/<i>          attrs: src, name, dst (str)
    /hetero/relations/<i>/indptr   int64 (n_dst + 1,)   rows = destination (local ids)
    /hetero/relations/<i>/indices  int64 (nnz,)         source ids local to src, sorted in rows
    /hetero/relations/<i>/weights  float64 (nnz,)       optional
    /hetero/relations/<i>/time     int64 or float64 (nnz,)  optional edge times
    /hetero/splits/<name>/{train,val,test}              int64 ids of target_type
    /hetero/edge_splits/<part>/<i> attrs: src, name, dst; dataset edge_index int64 (2, E)

Every array is checked before use, as for the homogeneous layout: declared sizes against the
stored bytes and the memory limit, CSR structure, id ranges (through
:meth:`HeteroGraph.from_edge_index`), times finite (integers within int64), and no node type,
relation or edge split stored twice (one would silently replace the other).
"""

import numpy as np

from .._errors import DatasetError, SpsampleError
from ..graph._hetero import check_time, HeteroGraph
from ._dataset import SPLIT_PARTS
from ._hetero_dataset import HeteroDataset
from ._h5 import (
    _as_name, _check_sizes, _csr_features, _CSR_PARTS, _dataset, is_csr_group, _read_all,
    _write, _write_csr, FORMAT,
)
from ._untrusted import check_stored

__all__ = ["write_hetero", "read_hetero", "read_hetero_parts", "HETERO_VERSION",
           "is_hetero_file"]

HETERO_VERSION = 3


def is_hetero_file(f):
    """Whether the open file holds the heterogeneous layout."""
    return "hetero" in f


def write_hetero(f, ds, compression):
    """Write ``ds`` (a :class:`HeteroDataset`) into the open file ``f``."""
    g = ds.graph
    f.attrs.update(format=FORMAT, version=HETERO_VERSION, name=ds.name, kind="hetero")
    root = f.create_group("hetero")
    root.attrs["target_type"] = ds.target_type
    nodes = root.create_group("node_types", track_order=True)
    for i, t in enumerate(g.node_types):
        grp = nodes.create_group(str(i))
        grp.attrs.update(name=t, num_nodes=g.num_nodes[t])
        feats = ds.features.get(t)
        if feats is not None:
            (_write_csr if hasattr(feats, "tocsr") else _write)(grp, "features", feats,
                                                                 compression)
        if t in ds.labels:
            _write(grp, "labels", ds.labels[t], compression)
        if g.node_time(t) is not None:
            _write(grp, "time", g.node_time(t), compression)
    rels = root.create_group("relations", track_order=True)
    for i, rel in enumerate(g.relations):
        grp = rels.create_group(str(i))
        grp.attrs.update(src=rel[0], name=rel[1], dst=rel[2])
        indptr, indices, weights = g.csr(rel)
        _write(grp, "indptr", np.asarray(indptr, dtype=np.int64), compression)
        _write(grp, "indices", np.asarray(indices, dtype=np.int64), compression)
        if weights is not None:
            _write(grp, "weights", weights, compression)
        if g.edge_time(rel) is not None:
            _write(grp, "time", g.edge_time(rel), compression)
    splits = root.create_group("splits", track_order=True)
    for name, part in ds.splits.items():
        sg = splits.create_group(name)
        for key in SPLIT_PARTS:
            _write(sg, key, part[key], compression)
    esplits = root.create_group("edge_splits", track_order=True)
    for part, per_rel in ds.edge_splits.items():
        pg = esplits.create_group(part)
        for i, (rel, ei) in enumerate(per_rel.items()):
            grp = pg.create_group(str(i))
            grp.attrs.update(src=rel[0], name=rel[1], dst=rel[2])
            grp.create_dataset("edge_index", data=np.asarray(ei, dtype=np.int64))


def read_hetero(where, path, f, features=True):
    """The :class:`HeteroDataset` of the open file ``f``.

    Raises
    ------
    DatasetError
        Naming the file and the array at fault.
    """
    types, rels, splits, edge_splits, target, name = _read_parts(
        where, path, f, lambda root, types: _read_relations(where, path, root, types), features)
    try:
        graph = HeteroGraph.from_edge_index(
            {r: v["edge_index"] for r, v in rels.items()},
            num_nodes={t: v["num_nodes"] for t, v in types.items()},
            weights={r: v["weights"] for r, v in rels.items() if "weights" in v} or None,
            edge_time={r: v["time"] for r, v in rels.items() if "time" in v} or None,
            node_time={t: v["time"] for t, v in types.items() if "time" in v} or None)
        return HeteroDataset(
            graph, features={t: v["features"] for t, v in types.items() if "features" in v},
            labels={t: v["labels"] for t, v in types.items() if "labels" in v},
            splits=splits, target_type=target, edge_splits=edge_splits, name=name)
    except SpsampleError as exc:
        raise DatasetError(f"{where}: argument 'path' {str(path)!r} holds an invalid "
                           f"heterogeneous dataset: {exc}") from exc


def read_hetero_parts(where, path, f, features=True):
    """Everything of the heterogeneous file ``f`` but its relations' arrays, checked as
    :func:`read_hetero` checks it: what every rank of a distributed run reads whole (each
    rank reads only its block of rows of each relation).

    Returns
    -------
    dict
        ``num_nodes`` (``{type: int}``), ``relations`` (``{relation: group path}``, e.g.
        ``"hetero/relations/0"``), ``temporal`` (edge or node times stored), ``node_time``
        (``{type: int64 or float64 array}``, one time per vertex), ``features`` and ``labels``
        (``{type: array}``; no features when ``features=False``), ``splits``,
        ``edge_splits``, ``target_type``, ``name``.

    Raises
    ------
    DatasetError
        Naming the file and the array at fault.
    """
    def groups(root, types):
        found = _relation_groups(where, path, root, types)
        return ({rel: grp.name.lstrip("/") for rel, grp in found.items()},
                any("time" in grp for grp in found.values()))
    types, (rels, edge_time), splits, edge_splits, target, name = _read_parts(
        where, path, f, groups, features)
    return dict(num_nodes={t: v["num_nodes"] for t, v in types.items()}, relations=rels,
                temporal=edge_time or any("time" in v for v in types.values()),
                node_time=_node_times(where, path, types),
                features={t: v["features"] for t, v in types.items() if "features" in v},
                labels={t: v["labels"] for t, v in types.items() if "labels" in v},
                splits=splits, edge_splits=edge_splits, target_type=target, name=name)


def _node_times(where, path, types):
    """``{type: times}`` of the types that store node times, checked as ``HeteroGraph``
    checks them (one finite time per vertex)."""
    out = {}
    for t, v in types.items():
        if "time" not in v:
            continue
        try:
            out[t] = check_time(where, f"node_time[{t!r}]", v["time"], v["num_nodes"])
        except SpsampleError as exc:
            raise DatasetError(f"{where}: argument 'path' {str(path)!r} holds an invalid "
                               f"heterogeneous dataset: {exc}") from exc
    return out


def _read_parts(where, path, f, relations, features):
    """``(types, relations(root, types), splits, edge_splits, target type, name)`` of ``f``,
    read errors turned into a :class:`DatasetError`."""
    root = f["hetero"]
    try:
        types = _read_types(where, path, root, features)
        rels = relations(root, types)
        splits = _read_splits(where, path, root)
        edge_splits = _read_edge_splits(where, path, root)
        target = _as_name(root.attrs.get("target_type", ""))
        name = _as_name(f.attrs.get("name", ""))
    except SpsampleError:
        raise
    except (OSError, KeyError, RuntimeError, ValueError, TypeError, AttributeError) as exc:
        raise DatasetError(f"{where}: cannot read the heterogeneous groups of {str(path)!r} "
                           f"(truncated or corrupt?): {type(exc).__name__}: {exc}") from exc
    return types, rels, splits, edge_splits, target, name


def _groups(where, path, parent, name):
    """The numbered subgroups ``parent[name]/0, 1, ...`` in order."""
    if name not in parent:
        return []
    grp = parent[name]
    if not hasattr(grp, "keys"):
        raise DatasetError(f"{where}: {grp.name} of {str(path)!r} must be a group")
    keys = sorted(grp.keys(), key=lambda k: int(k) if k.isdigit() else -1)
    if keys != [str(i) for i in range(len(keys))]:
        raise DatasetError(f"{where}: {grp.name} of {str(path)!r} must hold groups 0 .. n-1")
    return [grp[k] for k in keys]


def _arrays(where, path, grp, names):
    """``{name: array}`` of the datasets ``names`` present in ``grp`` (sizes checked first)."""
    rel = grp.name.lstrip("/")
    dsets = {n: _dataset(where, path, grp.file, f"{rel}/{n}") for n in names if n in grp}
    _check_sizes(where, path, dsets)
    return {n: _read_all(where, path, d) for n, d in dsets.items()}


def _read_types(where, path, root, features):
    out = {}
    for grp in _groups(where, path, root, "node_types"):
        t = _as_name(grp.attrs["name"])
        if t in out:
            raise DatasetError(f"{where}: {str(path)!r} has two node types named {t!r} "
                               f"({grp.name} repeats an earlier group): their features, labels "
                               "and times would overwrite each other")
        entry = _arrays(where, path, grp, ("labels", "time"))
        entry["num_nodes"] = _count(where, path, grp.attrs.get("num_nodes"))
        if features and "features" in grp:
            if is_csr_group(grp["features"]):
                arrays = _arrays(where, path, grp["features"], _CSR_PARTS)
                parts = {f"features/{p}": arrays[p] for p in _CSR_PARTS}
                entry["features"] = _csr_features(where, path, grp["features"], parts)
            else:
                entry["features"] = _arrays(where, path, grp, ("features",))["features"]
        out[t] = entry
    if not out:
        raise DatasetError(f"{where}: {str(path)!r} has no node types under /hetero")
    return out


def _count(where, path, value):
    number = np.asarray(value)
    if number.shape != () or number.dtype.kind not in "iu" or int(number) < 0:
        raise DatasetError(f"{where}: a num_nodes attribute of {str(path)!r} must be a "
                           f"non-negative integer, not {value!r:.40}")
    return int(number)


def _relation_groups(where, path, root, types):
    """``{relation: its h5py group}`` in file order, the node types checked."""
    out = {}
    for grp in _groups(where, path, root, "relations"):
        rel = tuple(_as_name(grp.attrs[k]) for k in ("src", "name", "dst"))
        if rel[0] not in types or rel[2] not in types:
            raise DatasetError(f"{where}: relation {rel} of {str(path)!r} names a node type "
                               "the file does not have")
        if rel in out:
            raise DatasetError(f"{where}: {str(path)!r} has two relation groups of {rel} "
                               f"({out[rel].name} and {grp.name}): one would be dropped")
        out[rel] = grp
    return out


def _read_relations(where, path, root, types):
    out = {}
    for rel, grp in _relation_groups(where, path, root, types).items():
        arrays = _arrays(where, path, grp, ("indptr", "indices", "weights", "time"))
        if "indptr" not in arrays or "indices" not in arrays:
            raise DatasetError(f"{where}: relation {rel} of {str(path)!r} lacks indptr/indices")
        entry = {"edge_index": _csr_edges(where, path, rel, arrays, types[rel[2]]["num_nodes"])}
        entry.update({k: arrays[k] for k in ("weights", "time") if k in arrays})
        out[rel] = entry
    return out


def _csr_edges(where, path, rel, arrays, n_dst):
    """``(src, dst)`` of a stored bipartite CSR, its structure checked."""
    indptr = np.asarray(arrays["indptr"])
    indices = np.asarray(arrays["indices"])
    bad = (indptr.ndim != 1 or indices.ndim != 1 or indptr.dtype.kind not in "iu"
           or indices.dtype.kind not in "iu" or indptr.size != n_dst + 1)
    if not bad:
        indptr = indptr.astype(np.int64)
        bad = indptr[0] != 0 or indptr[-1] != indices.size or np.any(np.diff(indptr) < 0)
    if bad:
        raise DatasetError(f"{where}: relation {rel} of {str(path)!r} has an invalid CSR "
                           f"(indptr must run from 0 to len(indices) over {n_dst + 1} entries)")
    dst = np.repeat(np.arange(n_dst, dtype=np.int64), np.diff(indptr))
    return indices.astype(np.int64), dst


def _read_splits(where, path, root):
    if "splits" not in root:
        return {}
    out = {}
    for name in root["splits"]:
        out[name] = {}
        for key in SPLIT_PARTS:
            dset = _dataset(where, path, root.file, f"hetero/splits/{name}/{key}")
            check_stored(where, path, dset)
            out[name][key] = _read_all(where, path, dset)
    return out


def _read_edge_splits(where, path, root):
    if "edge_splits" not in root:
        return {}
    out = {}
    for part in root["edge_splits"]:
        out[part] = {}
        for grp in _groups(where, path, root["edge_splits"], part):
            rel = tuple(_as_name(grp.attrs[k]) for k in ("src", "name", "dst"))
            if rel in out[part]:
                raise DatasetError(f"{where}: {str(path)!r} has two {part!r} edge splits of "
                                   f"{rel} (under /hetero/edge_splits/{part}): one would be "
                                   "dropped")
            out[part][rel] = _arrays(where, path, grp, ("edge_index",))["edge_index"]
    return out
