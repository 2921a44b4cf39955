"""The GPU kernels' typed arguments, filled by name: the host half of ``native/device/args.cuh``.

Each kernel takes one struct (``FrontierArgs``, ``SelectArgs``, ...) whose fields are declared
here again, in the header's order, as ``(name, kind)`` with ``kind`` one of

* ``"i64"`` -- an integer (``int64_t``),
* ``"f64"`` -- a double,
* ``"ptr"`` -- an array's address (``nullptr`` for ``None``).

:func:`arg_dtype` turns a kernel's list into a NumPy structured dtype with the C struct's layout
(every field 8 bytes, no padding), and :func:`pack_args` fills one from keyword arguments -- every
field exactly once -- and returns its bytes as int64 words, which a launch copies to the device
(or hands to the emulator, which checks their size against the struct's). The layout is checked
against the extension's own ``offsetof``/``sizeof`` of the structs (``kernel_arg_layouts()``,
tests/test_gpu_args.py), so this table cannot drift from the header.

Examples
--------
>>> import numpy as np
>>> from spsample.gpu._args import arg_dtype, pack_args
>>> arg_dtype("gather").names
('E', 'eid', 'indices', 'indices32', 'nbr')
>>> words = pack_args("lw_normalise", lambda a: 0 if a is None else 4096,
...                   E=3, vrow=np.zeros(3), total=None, value=np.zeros(3))
>>> words.tolist()
[3, 4096, 0, 4096]
"""

import numpy as np

__all__ = ["KERNEL_ARGS", "arg_dtype", "pack_args"]

_I, _F, _P = "i64", "f64", "ptr"
_FORMATS = {_I: "<i8", _F: "<f8", _P: "<u8"}


def _fields(spec):
    """``"a b:ptr c:f64"`` -> ``(("a", "i64"), ("b", "ptr"), ("c", "f64"))``."""
    out = []
    for item in spec.split():
        name, _, kind = item.partition(":")
        out.append((name, kind or _I))
    return tuple(out)


_RULE = "rule fanout fanout_vec:ptr hw k0 k1 batch_ids:ptr"
_VALUE = ("code:ptr code_size vectors:ptr aux_indptr:ptr aux_indices:ptr aux_weights:ptr aux_n "
          "uses_lookup only_weight")
_ITEM = "I k items:ptr item_off:ptr tab_off:ptr slots:ptr"

#: Every kernel's fields, in the order of its struct in native/device/args.cuh.
KERNEL_ARGS = {name: _fields(spec) for name, spec in {
    # the row-wise kernels (native/device/rowwise.cuh)
    "frontier": "m k kind row_off:ptr lo:ptr nid:ptr nid_off:ptr ends:ptr erow:ptr given:ptr "
                "fv:ptr fl:ptr fr:ptr fb:ptr",
    "extents": f"m {_RULE} indptr:ptr indices:ptr fv:ptr fb:ptr start:ptr deg:ptr fan:ptr "
               "bound:ptr set:ptr keys:ptr long_row chunks:ptr",
    "select": f"m {_RULE} key_kind fv:ptr fl:ptr fr:ptr fb:ptr fa:ptr start:ptr deg:ptr fan:ptr "
              "out_off:ptr set_off:ptr key_off:ptr set:ptr keys:ptr indptr:ptr indices:ptr "
              f"weights:ptr {_VALUE} bound:f64 dst:ptr eid:ptr erow:ptr count:ptr err:ptr "
              "long_row alias:ptr alias_share:ptr row_stats:ptr",
    "chunk_counts": f"C m chunk_off:ptr {_RULE} start:ptr deg:ptr fan:ptr fb:ptr indices:ptr "
                    "ccount:ptr",
    "select_chunks": f"C m chunk_off:ptr {_RULE} start:ptr deg:ptr fan:ptr fb:ptr indices:ptr "
                     "fl:ptr fr:ptr ccum:ptr out_off:ptr dst:ptr eid:ptr erow:ptr",
    "compact": "m out_off:ptr count:ptr new_off:ptr dst:ptr eid:ptr erow:ptr dst2:ptr eid2:ptr "
               "erow2:ptr",
    "gather": "E eid:ptr indices:ptr indices32:ptr nbr:ptr",
    "table_nodes": "N k nid:ptr nid_off:ptr tab_off:ptr slots:ptr",
    "table_items": _ITEM,
    "first_flags": f"{_ITEM} flags:ptr",
    "assign": f"{_ITEM} rank:ptr base:ptr local:ptr newv:ptr",
    "merge_nodes": "N2 k out_off:ptr nid:ptr nid_off:ptr add:ptr add_off:ptr out:ptr",
    # the layer-wise kernels (native/device/layerwise.cuh)
    "lw_rows": "N k nid:ptr nid_off:ptr indptr:ptr first:ptr deg:ptr rbatch:ptr",
    "lw_entries": "D N ent_off:ptr first:ptr rbatch:ptr indices:ptr n key:ptr eid:ptr erow:ptr",
    "lw_colsum": "S seg_off:ptr order:ptr eid:ptr weights:ptr psum:ptr seg_of:ptr",
    "lw_draw_entries": "nd which:ptr s hw k0 k1 batch_ids:ptr nid_off:ptr ent_off:ptr first:ptr "
                       "indices:ptr n set:ptr cap chosen:ptr",
    "lw_keys": "M cand:ptr seg_key:ptr psum:ptr n hw k0 k1 batch_ids:ptr bits:ptr",
    "lw_fastgcn": "M s hw k0 k1 batch_ids:ptr cumulative:ptr n last_positive total:f64 keys:ptr",
    "lw_hits": "D key:ptr eid:ptr n weights:ptr tab_off:ptr slots:ptr hit:ptr lu:ptr",
    "lw_edges": "D hit_off:ptr erow:ptr eid:ptr key:ptr lu:ptr rbatch:ptr nid_off:ptr n "
                "weights:ptr fastgcn q:ptr psum:ptr seg_of:ptr dst:ptr src:ptr edge:ptr value:ptr "
                "vrow:ptr",
    "lw_row_sums": "N row_edges:ptr value:ptr total:ptr",
    "lw_normalise": "E vrow:ptr total:ptr value:ptr",
}.items()}

_DTYPES = {}


def arg_dtype(kernel):
    """The NumPy structured dtype of ``kernel``'s argument struct (its C layout).

    Raises
    ------
    KeyError
        ``kernel`` is not a kernel of ``native/device``.
    """
    dt = _DTYPES.get(kernel)
    if dt is None:
        fields = KERNEL_ARGS[kernel]
        dt = _DTYPES[kernel] = np.dtype({"names": [n for n, _ in fields],
                                         "formats": [_FORMATS[k] for _, k in fields],
                                         "offsets": [8 * i for i in range(len(fields))],
                                         "itemsize": 8 * len(fields)})
    return dt


def pack_args(kernel, address, /, **fields):
    """``kernel``'s argument struct filled by name, as int64 words.

    Parameters
    ----------
    kernel : str
        A kernel of :data:`KERNEL_ARGS` (without the ``spsample_k_`` prefix).
    address : callable
        ``address(array_or_None) -> int``: a pointer field's address (the device's; the driver
        also keeps the array alive until the launch is issued).
    **fields
        Every field of the struct: integers, floats (``f64``), arrays or ``None`` (``ptr``).

    Returns
    -------
    int64 ndarray of shape (fields,)
        The struct's bytes.

    Raises
    ------
    TypeError
        A field missing, unknown, or an array / number where the other is expected.
    """
    spec = KERNEL_ARGS[kernel]
    names = {n for n, _ in spec}
    missing, unknown = names - fields.keys(), fields.keys() - names
    if missing or unknown:
        raise TypeError(f"kernel {kernel}: missing fields {sorted(missing)}, "
                        f"unknown fields {sorted(unknown)}")
    out = np.zeros((), dtype=arg_dtype(kernel))
    for name, kind in spec:
        value = fields[name]
        if kind == _P:
            if value is not None and getattr(value, "ndim", 0) < 1:
                raise TypeError(f"kernel {kernel}: field {name!r} takes an array or None, "
                                f"not {type(value).__name__}")
            out[name] = address(value)
        else:
            if hasattr(value, "shape") and getattr(value, "ndim", 0) != 0:
                raise TypeError(f"kernel {kernel}: field {name!r} takes a number")
            out[name] = float(value) if kind == _F else int(value)
    return out.reshape(1).view(np.int64)
