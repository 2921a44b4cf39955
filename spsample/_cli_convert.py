"""``spsample convert SRC DST.h5 [--format F] [--name NAME] [--features-dtype D] [-o KEY=VALUE]``.

Converts a dataset (format detected from SRC unless ``--format`` is given) into spsample's HDF5
layout and prints a one-line summary. Reader options pass through ``-o``, e.g.
``spsample convert facebook_combined.txt.gz fb.h5 -o directed=False``.
"""

import ast

from ._errors import ArgumentError


#: convert() keywords that have their own flag and so cannot pass through ``-o``.
_RESERVED = {"src": "the SRC argument", "dst": "the DST argument", "format": "--format",
             "name": "--name", "features_dtype": "--features-dtype",
             "compression": "--no-compression"}


def add_arguments(parser):
    """Add the ``convert`` arguments to ``parser`` (an ``argparse`` sub-parser)."""
    from .io import FORMATS

    parser.add_argument("src", help="dataset file or folder to convert")
    parser.add_argument("dst", help="spsample HDF5 file to write (overwritten)")
    parser.add_argument("--format", choices=sorted(FORMATS), default=None,
                        type=lambda text: text.lower().replace("-", "_"),
                        help="source format (default: detected from SRC)")
    parser.add_argument("--name", default=None,
                        help="dataset name to store (for a Planetoid folder, also which one)")
    parser.add_argument("--features-dtype", default=None, metavar="DTYPE",
                        help="store features as DTYPE (e.g. uint8); refused if values change")
    parser.add_argument("--no-compression", action="store_true",
                        help="write uncompressed chunks (faster, larger)")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="reader option, VALUE a Python literal (true/false/none in any "
                             "case) or a plain string (repeatable), e.g. -o directed=false")


def run(args):
    """Run ``spsample convert``; returns the exit status (0 on success)."""
    from .io import convert

    options = dict(_parse_option(text) for text in args.option)
    for key, flag in _RESERVED.items():
        if key in options:
            raise ArgumentError(f"spsample convert: argument '--option' {key}=... is not a "
                                f"reader option; use {flag}")
    ds = convert(args.src, args.dst, format=args.format, name=args.name,
                 features_dtype=args.features_dtype,
                 compression=None if args.no_compression else "gzip", **options)
    splits = ", ".join(f"{k} {'/'.join(str(len(v[p])) for p in ('train', 'val', 'test'))}"
                       for k, v in ds.splits.items()) or "none"
    if len(ds.splits) > 3:
        splits = f"{len(ds.splits)} splits"
    print(f"{ds.name or '(unnamed)'}: {ds.num_nodes} nodes, {ds.num_edges} edges, "
          f"{ds.num_features} features, {ds.num_classes} classes, splits: {splits} "
          f"-> {args.dst}")
    return 0


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
