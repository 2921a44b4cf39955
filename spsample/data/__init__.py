"""Datasets shipped with spsample; see :func:`spsample.io.embedded_path` and ``README.md``."""
