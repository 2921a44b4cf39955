"""``assert_same_bulk``: two bulks equal bit for bit, or an ``AssertionError`` naming the first
minibatch, hop (or relation) and field that differ."""

import dataclasses

import numpy as np

__all__ = ["assert_same_bulk"]


def _host(x):
    """``x`` as a NumPy array (CuPy arrays and torch tensors copied to the host)."""
    if x is None or isinstance(x, np.ndarray):
        return x
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _difference(u, v):
    """``None`` when ``u`` and ``v`` are the same bits, else what differs first (a str)."""
    u, v = _host(u), _host(v)
    if u is None or v is None:
        return None if u is None and v is None else f"{_brief(u)} != {_brief(v)}"
    if u.dtype != v.dtype:
        return f"dtype {u.dtype} != {v.dtype}"
    if u.shape != v.shape:
        return f"shape {u.shape} != {v.shape}"
    if u.tobytes() == v.tobytes():
        return None
    flat_u, flat_v = u.reshape(-1), v.reshape(-1)
    bu = flat_u.view(np.uint8).reshape(flat_u.size, -1)
    bv = flat_v.view(np.uint8).reshape(flat_v.size, -1)
    i = int(np.flatnonzero((bu != bv).any(axis=1))[0])
    return (f"first at entry {i} of {flat_u.size}: {flat_u[i]!r} != {flat_v[i]!r} "
            f"({int((bu != bv).any(axis=1).sum())} entries differ)")


def _brief(x):
    return "None" if x is None else f"array of shape {np.shape(x)}"


def _check(where, u, v):
    problem = _difference(u, v)
    if problem is not None:
        raise AssertionError(f"{where}: {problem}")


def _check_value(where, u, v):
    if u != v:
        raise AssertionError(f"{where}: {u!r} != {v!r}")


def _minibatch(where, x, y):
    _check_value(f"{where} batch_id", x.batch_id, y.batch_id)
    _check_value(f"{where} batch_size", x.batch_size, y.batch_size)
    _check(f"{where} n_id", x.n_id, y.n_id)
    _check_value(f"{where} num_sampled_nodes", list(x.num_sampled_nodes),
                 list(y.num_sampled_nodes))
    _check(f"{where} batch (seed of each vertex)", x.batch, y.batch)
    _check_value(f"{where} number of hops", len(x.edges), len(y.edges))
    _check_value(f"{where} weight present", x.weight is not None, y.weight is not None)
    for h in range(len(x.edges)):
        at = f"{where} hop {h + 1}"
        _check(f"{at} dst", x.edges[h][0], y.edges[h][0])
        _check(f"{at} src", x.edges[h][1], y.edges[h][1])
        _check(f"{at} edge_id", x.edge_ids[h], y.edge_ids[h])
        if x.weight is not None:
            _check(f"{at} weight", x.weight[h], y.weight[h])


def _hetero_minibatch(where, x, y):
    _check_value(f"{where} batch_id", x.batch_id, y.batch_id)
    _check_value(f"{where} input_type", x.input_type, y.input_type)
    _check_value(f"{where} batch_size", x.batch_size, y.batch_size)
    _check_value(f"{where} node types", sorted(x.n_id), sorted(y.n_id))
    for t in sorted(x.n_id):
        _check(f"{where} n_id[{t!r}]", x.n_id[t], y.n_id[t])
        _check_value(f"{where} num_sampled_nodes[{t!r}]", list(x.num_sampled_nodes[t]),
                     list(y.num_sampled_nodes[t]))
    _check_value(f"{where} batch present", x.batch is None, y.batch is None)
    for t in sorted(x.batch or {}):
        _check(f"{where} batch[{t!r}]", x.batch[t], y.batch.get(t))
    _check_value(f"{where} relations", sorted(x.edges), sorted(y.edges))
    for r in sorted(x.edges):
        _check_value(f"{where} {r} number of hops", len(x.edges[r]), len(y.edges[r]))
        for h in range(len(x.edges[r])):
            at = f"{where} relation {r} hop {h + 1}"
            _check(f"{at} dst", x.edges[r][h][0], y.edges[r][h][0])
            _check(f"{at} src", x.edges[r][h][1], y.edges[r][h][1])
            _check(f"{at} edge_id", x.edge_ids[r][h], y.edge_ids[r][h])


def _batch(where, x, y):
    """A loader's :class:`~spsample.loader.Batch` (or ``LinkBatch``): every field."""
    _check_value(f"{where} type", type(x).__name__, type(y).__name__)
    for f in dataclasses.fields(x):
        if f.name.startswith("_"):
            continue
        u, v = getattr(x, f.name), getattr(y, f.name)
        at = f"{where} {f.name}"
        if f.name == "minibatch":
            if (u is None) != (v is None):
                raise AssertionError(f"{at}: {u!r} != {v!r}")
            if u is not None:
                _one(at, u, v)
        elif isinstance(u, dict) or isinstance(v, dict):
            _check_value(f"{at} keys", sorted(map(str, u or {})), sorted(map(str, v or {})))
            for key in (u or {}):
                _check(f"{at}[{key!r}]", _dense(u[key]), _dense(v[key]))
        elif isinstance(u, (int, float, str, list, tuple)) or u is None and \
                isinstance(v, (int, float, str, list, tuple)):
            _check_value(at, u, v)
        else:
            _check(at, _dense(u), _dense(v))


def _dense(x):
    """Sparse feature rows as their CSR arrays concatenated (compared bit for bit)."""
    if x is not None and hasattr(x, "indptr") and hasattr(x, "indices"):
        return np.concatenate([_host(x.indptr).view(np.uint8), _host(x.indices).view(np.uint8),
                               _host(x.data).view(np.uint8)])
    return x


def _one(where, x, y):
    if type(x).__name__ != type(y).__name__ and not (
            hasattr(x, "n_id") and hasattr(y, "n_id") and
            isinstance(x.n_id, dict) == isinstance(y.n_id, dict)):
        raise AssertionError(f"{where}: {type(x).__name__} != {type(y).__name__}")
    if dataclasses.is_dataclass(x) and hasattr(x, "minibatch"):     # a loader's batch
        return _batch(where, x, y)
    if isinstance(x.n_id, dict):
        return _hetero_minibatch(where, x, y)
    return _minibatch(where, x, y)


def _flat(a, b):
    """The flat arrays of two :class:`~spsample.Bulk` objects."""
    for name in ("batch_ids", "batch_sizes", "n_id", "node_offsets", "num_sampled_nodes",
                 "node_batch"):
        _check(f"bulk {name}", getattr(a, name), getattr(b, name))
    _check_value("bulk number of hops", len(a.hops), len(b.hops))
    for h, (x, y) in enumerate(zip(a.hops, b.hops)):
        for name in ("offsets", "dst", "src", "edge_id", "weight"):
            _check(f"bulk hop {h + 1} {name}", getattr(x, name), getattr(y, name))


def assert_same_bulk(a, b):
    """Assert that two sampling results are the same bits.

    Compares minibatch by minibatch (in order) every field: ``batch_id``, ``batch_size``,
    ``n_id``, ``num_sampled_nodes``, the disjoint ``batch``, and every hop's ``dst``, ``src``,
    ``edge_id`` and ``weight`` (float64 compared as bytes, so ``-0.0`` and ``0.0`` differ);
    per node type and relation for heterogeneous minibatches; every field of loader batches
    (link batches: ``edge_label_index``, ``edge_label``, ``edge_label_time``, the triplet
    indices, ``input_id``, ...); and, when both are :class:`~spsample.Bulk` objects, the flat
    arrays and offsets too. Arrays must also agree in dtype and shape. CuPy arrays and torch
    tensors are copied to the host first.

    Parameters
    ----------
    a, b : Bulk, HeteroBulk, or a sequence of MiniBatch / HeteroMiniBatch / loader batches
        E.g. two :func:`spsample.sample` results, or the batches of two loaders.

    Raises
    ------
    AssertionError
        Naming the first minibatch (position and ``batch_id``), hop or relation, and field
        that differ, with the first differing entry.

    Examples
    --------
    >>> import spsample
    >>> from spsample.testing import assert_same_bulk
    >>> g = spsample.rmat(8, seed=1)
    >>> kw = dict(sampler=spsample.NodeWise([5, 3]), batch_size=16, seed=2)
    >>> whole = spsample.sample(g, range(64), **kw)
    >>> parts = (spsample.sample(g, range(32), **kw)
    ...          + spsample.sample(g, range(32, 64), batch_offset=2, **kw))
    >>> assert_same_bulk(whole, parts)
    """
    xs, ys = list(a), list(b)
    if len(xs) != len(ys):
        raise AssertionError(f"number of minibatches: {len(xs)} != {len(ys)}")
    for i, (x, y) in enumerate(zip(xs, ys)):
        _one(f"minibatch {i} (batch_id {getattr(x, 'batch_id', '?')})", x, y)
    if all(hasattr(z, "hops") and hasattr(z, "node_offsets") for z in (a, b)):
        _flat(a, b)
