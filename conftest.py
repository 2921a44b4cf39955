"""Doctests of spsample's own modules (``pytest --doctest-modules spsample``, see tests/run.sh).

The examples of the torch loader and the training loop need torch: where it is not installed,
their modules are not collected (the same features skip their tests in ``tests/``)."""

import importlib.util

collect_ignore_glob = []
if importlib.util.find_spec("torch") is None:
    collect_ignore_glob += ["spsample/loader/*", "spsample/train/*"]
