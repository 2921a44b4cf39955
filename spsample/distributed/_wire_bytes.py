"""The planner's bytes models of the built-in strategies (registered in
``spsample/distributed/__init__.py``): the expected bytes one rank's bulk of ``k`` minibatches
moves for sampling, from the wire formats of ``_sampling.py`` (row push, pull) and
``_layerpush.py`` (layer push), with the remote share ``1 − c/p`` of an evenly spread frontier
(see :mod:`spsample.distributed._plan` for the symbols). ``w`` is a
:class:`~spsample.distributed._plan.Workload`."""

__all__ = ["push_bytes", "pull_bytes"]


def push_bytes(w, p, c, k):
    """The ``"push"`` strategy's bytes: row push, or layer push for a layer-wise sampler
    (``w.layerwise``)."""
    remote = 1.0 - c / p
    if w.layerwise:
        # the minibatch's new vertices (membership) go to every owner, remote or not
        members = 8.0 * w.unique * (p // c)
        return remote * (16.0 * w.rows + 16.0 * w.draws + members + 8.0 * w.edges
                         + _distinct_report_bytes(w, p // c)) * k
    return 8.0 * remote * (w.rows + w.edges) * k


def pull_bytes(w, p, c, k):
    """The ``"pull"`` strategy's bytes: the rows a bulk fetches (once per bulk)."""
    rows, entries, _ = w.per_bulk(k)
    return (1.0 - c / p) * (24.0 * rows + 8.0 * entries) * k


def _distinct_report_bytes(w, owners):
    """Layer-wise push: per minibatch and layer, each owner reports the distinct columns of
    its share of the layer's rows when there are at most ``s`` of them (else a flag). Their
    number is taken as the share's entries (an upper bound: rows share columns)."""
    layers = max(w.hops, 1)
    s = w.draws / layers
    entries = w.rows / layers * w.row_degree / owners
    return layers * owners * 8.0 * (entries if entries <= s else 1.0)
