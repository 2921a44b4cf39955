"""``spsample convert SRC DST.h5 [--format F] [--name NAME] [--features-dtype D] [-o KEY=VALUE]``.

Converts a dataset (format detected from SRC unless ``--format`` is given) into spsample's HDF5
layout and prints a one-line summary. Reader options pass through ``-o``, e.g.
``spsample convert facebook_combined.txt.gz fb.h5 -o directed=False``. An existing DST is
replaced only with ``--force``, and never when it is SRC.
"""

import ast
import inspect
import os
import sys

from .._errors import ArgumentError, DatasetError
from ..io import FORMATS, convert, detect_format
from ..io._convert import check_destination as _check_destination, single_file as _single_file
from ..io._stream import stream_edge_list


#: convert() keywords that have their own flag and so cannot pass through ``-o``.
_RESERVED = {"src": "the SRC argument", "dst": "the DST argument", "format": "--format",
             "name": "--name", "features_dtype": "--features-dtype",
             "compression": "--no-compression"}


def add_arguments(parser):
    """Add the ``convert`` arguments to ``parser`` (an ``argparse`` sub-parser)."""
    parser.add_argument("src", help="dataset file or folder to convert")
    parser.add_argument("dst", help="spsample HDF5 file to write (an existing file is "
                                    "replaced only with --force)")
    parser.add_argument("--format", choices=sorted(FORMATS), default=None,
                        type=lambda text: text.lower().replace("-", "_"),
                        help="source format (default: detected from SRC)")
    parser.add_argument("--name", default=None,
                        help="dataset name to store (for a Planetoid folder, also which one)")
    parser.add_argument("--features-dtype", default=None, metavar="DTYPE",
                        help="store features as DTYPE (e.g. uint8); refused if values change")
    parser.add_argument("--no-compression", action="store_true",
                        help="write uncompressed chunks (faster, larger)")
    parser.add_argument("--memory-budget", default=None, metavar="SIZE",
                        help="stream an edge list too large for memory (chunks, external "
                             "sort) within about SIZE (e.g. 1GB); /graph stored contiguous")
    parser.add_argument("--force", action="store_true",
                        help="replace DST if it exists (never SRC itself)")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="reader option, VALUE a Python literal (true/false/none in any "
                             "case) or a plain string (repeatable), e.g. -o directed=false")


def reader_options():
    """Every keyword a reader takes through ``-o`` (for messages that name them)."""
    names = set()
    for reader in FORMATS.values():
        names.update(list(inspect.signature(reader).parameters)[1:])
    return names - set(_RESERVED)


def run(args):
    """Run ``spsample convert``; returns the exit status (0 on success)."""
    options = dict(_parse_option(text) for text in args.option)
    for key, flag in _RESERVED.items():
        if key in options:
            raise ArgumentError(f"spsample convert: argument '--option' {key}=... is not a "
                                f"reader option; use {flag}")

    _check_destination("spsample convert", args.src, args.dst)  # never the source
    if os.path.exists(args.dst) and not args.force:
        raise DatasetError(f"spsample convert: argument 'dst' {args.dst!r} exists; pass "
                           "--force to replace it")
    if args.memory_budget is not None:
        return _run_streaming(args, options)
    ds = convert(args.src, args.dst, format=args.format, name=args.name,
                 features_dtype=args.features_dtype,
                 compression=None if args.no_compression else "gzip", **options)
    if hasattr(ds.graph, "relations"):
        print(_hetero_summary(ds, args.dst))
        if args.format is None and _format_of(args.src) == "temporal":
            print("spsample convert: note: detected a temporal edge list (times in the last "
                  "column); ids renumbered 0 .. n-1 in increasing order of the file's ids "
                  "(-o relabel=false keeps them); --format edge_list reads it as a static "
                  "graph", file=sys.stderr)
        return 0
    print(_summary(ds, args.dst))
    hint = _direction_hint(ds, args.format or _format_of(args.src), options)
    if hint:
        print(f"spsample convert: note: {hint}", file=sys.stderr)
    return 0


def _run_streaming(args, options):
    """``--memory-budget``: an edge list converted by :func:`spsample.io._stream.
    stream_edge_list` (options: directed, comment)."""
    fmt = args.format or _format_of(args.src)
    if fmt not in ("edge_list", "snap"):
        raise ArgumentError(f"spsample convert: argument '--memory-budget' streams edge lists "
                            f"only (SRC is {fmt!r})")
    unknown = set(options) - {"directed", "comment"}
    if unknown:
        raise ArgumentError(f"spsample convert: argument '--option' {sorted(unknown)} is not "
                            "supported with --memory-budget (directed, comment are)")
    src = args.src
    if os.path.isdir(src):
        from pathlib import Path
        src = _single_file("spsample convert", Path(src))
    info = stream_edge_list(src, args.dst, memory_budget=args.memory_budget,
                            name=args.name, **options)
    print(f"{info['name']}: {info['num_nodes']} nodes, "
          f"{info['num_edges']} edges, streamed in {info['runs']} sorted runs -> {args.dst}")
    return 0


def _format_of(src):
    return detect_format(src)


def _summary(ds, dst):
    """One line: sizes, directedness, feature form, classes and splits."""
    splits = ", ".join(f"{k} {'/'.join(str(len(v[p])) for p in ('train', 'val', 'test'))}"
                       for k, v in ds.splits.items()) or "none"
    if len(ds.splits) > 3:
        splits = f"{len(ds.splits)} splits"
    direction = "undirected: every edge in both rows" if _symmetric(ds.graph) else "directed"
    features = f"{ds.num_features} features"
    if ds.sparse_features:
        density = ds.features.nnz / max(1, ds.features.shape[0] * ds.features.shape[1])
        features += f" (sparse, {100 * density:.2g}% non-zero)"
    return (f"{ds.name or '(unnamed)'}: {ds.num_nodes} nodes, {ds.num_edges} edges "
            f"({direction}), {features}, {ds.num_classes} classes, splits: {splits} -> {dst}")


def _hetero_summary(ds, dst):
    """One line for a heterogeneous dataset: types, relations, edges, labels, splits."""
    g = ds.graph
    nodes = ", ".join(f"{t} {n}" for t, n in g.num_nodes.items())
    edges = sum(g.num_edges.values())
    extra = []
    if g.is_temporal:
        extra.append("temporal" + _time_range(g))
    if ds.target_type:
        extra.append(f"{ds.num_classes} classes of {ds.target_type}")
    if ds.features:
        extra.append("features of " + ", ".join(f"{t} ({f.shape[1]})"
                                                 for t, f in ds.features.items()))
    if ds.splits:
        extra.append("splits " + ", ".join(ds.splits))
    if ds.edge_splits:
        extra.append("edge splits " + ", ".join(f"{p} {sum(e.shape[1] for e in r.values())}"
                                                for p, r in ds.edge_splits.items()))
    return (f"{ds.name or '(unnamed)'}: heterogeneous, nodes: {nodes}; {len(g.relations)} "
            f"relations, {edges} edges; {'; '.join(extra) or 'graph only'} -> {dst}")


def _time_range(graph):
    """`` (int64 times 1082040961 .. 1098777142)``: the kind and span of the edge times."""
    times = [graph.edge_time(r) for r in graph.relations if graph.edge_time(r) is not None]
    times = [t for t in times if t.size]
    if not times:
        return ""
    lo, hi = min(t.min() for t in times), max(t.max() for t in times)
    return f" ({times[0].dtype} times {lo.item()} .. {hi.item()})"


def _symmetric(graph):
    a = graph.to_scipy()
    return (a != a.T).nnz == 0


def _direction_hint(ds, fmt, options):
    """A note when a directed edge list has no edge in both directions (it may be an
    undirected dataset that lists each edge once, as SNAP's ego-Facebook)."""
    if fmt not in ("edge_list", "snap") or "directed" in options or _symmetric(ds.graph):
        return None
    a = ds.graph.to_scipy()
    a.data[:] = 1
    if a.multiply(a.T).nnz - a.diagonal().astype(bool).sum() > 0:
        return None
    return ("stored directed (row v lists u for each line 'u v'), and no edge appears in both "
            "directions: if the dataset is undirected, convert it again with -o "
            "directed=false --force")


def _parse_option(text):
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise ArgumentError(f"spsample convert: argument '--option' must look like KEY=VALUE "
                            f"(got {text!r})")
    words = {"true": True, "false": False, "none": None}  # -o directed=false means False
    if value.strip().lower() in words:
        return key, words[value.strip().lower()]
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value
