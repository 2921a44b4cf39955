"""The cells of the conformance suite: sampler × graph × mode, with their inputs and their
oracle (the ``numpy`` path, computed once per cell and cached)."""

import functools

import numpy as np

from spsample import testing

from .paths import DIST_PATHS, PATHS

GRAPHS = testing.graphs()
SAMPLERS = testing.samplers()

#: Link cells: the loader's plumbing over samplers of every kind of hop, on a few graphs.
LINK_SAMPLERS = ("nodewise", "nodewise-weighted", "disjoint", "labor", "ladies", "fastgcn",
                 "node2vec", "walk-per-row", "column-scaled", "no-dedup", "given-rows")
LINK_GRAPHS = ("random", "power-law", "weighted-zeros", "directed", "isolated")
LINK_OPTIONS = dict(neg_ratio=1.5, strict=True)
#: Heterogeneous link cells: seed edges of one relation (with times on temporal graphs).
HETERO_LINK_SAMPLERS = ("nodewise", "labor", "disjoint", "column-scaled")
HETERO_LINK_GRAPHS = ("hetero", "temporal", "temporal-nodes")
LINK_RELATION = ("paper", "cites", "paper")

CALL = dict(batch_size=8, seed=7, epoch=2, batch_offset=3)


@functools.lru_cache(maxsize=None)
def graph(name, seed=0):
    return GRAPHS[name](seed)


def mode_of(sampler_name, graph_name):
    kind = GRAPHS[graph_name].kind
    if kind == "graph":
        return "disjoint" if SAMPLERS[sampler_name].disjoint else "node"
    return kind


@functools.lru_cache(maxsize=None)
def inputs(graph_name, mode):
    """``(seeds, kw)`` of the cells of a graph in a mode."""
    g = graph(graph_name)
    kw = dict(CALL)
    if mode == "link":
        src, dst = g.edge_index()
        step = max(1, src.size // 40)
        return np.stack([src[::step], dst[::step]])[:, :40], dict(kw, link=LINK_OPTIONS)
    if mode == "hetero-link":
        indptr, src, _ = g.csr(LINK_RELATION)
        dst = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        pick = np.arange(0, src.size, max(1, src.size // 30))[:30]
        time = None
        if GRAPHS[graph_name].kind == "temporal":
            time = np.random.default_rng(3).integers(0, 100, pick.size).astype(float)
        return (LINK_RELATION, np.stack([src[pick], dst[pick]]), time), \
            dict(kw, link=LINK_OPTIONS)
    if GRAPHS[graph_name].kind != "graph":
        seeds = testing.pick_seeds(g, 30, seed=1)
        if mode == "temporal":
            kw["seed_time"] = np.random.default_rng(2).integers(0, 100, 30).astype(float)
        return seeds, kw
    seeds = testing.pick_seeds(g, 40, seed=1)
    if g.num_nodes == 1:                     # one vertex: three minibatches of it
        seeds, kw["batch_size"] = np.zeros(3, dtype=np.int64), 1
    if mode == "disjoint" and seeds.size > 1:
        seeds = seeds.copy()
        seeds[1] = seeds[0]                  # a seed repeated within a minibatch
    return seeds, kw


def sampler(sampler_name, graph_name):
    return SAMPLERS[sampler_name](graph(graph_name))


@functools.lru_cache(maxsize=None)
def oracle(sampler_name, graph_name, mode):
    """``(sampler, bulk)`` of the ``numpy`` path (one sampler object per cell: the paths
    sample with the same one)."""
    seeds, kw = inputs(graph_name, mode)
    s = sampler(sampler_name, graph_name)
    return s, PATHS["numpy"](graph(graph_name), seeds, s, **kw)


def node_cells():
    """``(sampler, graph, mode)`` of every supported sampler × graph (link cells apart)."""
    return [(s, g, mode_of(s, g)) for g, gc in GRAPHS.items()
            for s, sc in SAMPLERS.items() if sc.applies(gc)]


def link_cells():
    return [(s, g, "link") for g in LINK_GRAPHS for s in LINK_SAMPLERS
            if SAMPLERS[s].applies(GRAPHS[g])] + \
        [(s, g, "hetero-link") for g in HETERO_LINK_GRAPHS for s in HETERO_LINK_SAMPLERS]


def refused_cells():
    """Sampler × graph pairs the samplers do not support: the kind (layer-wise samplers,
    walks and per-edge arrays on heterogeneous graphs) or the weights."""
    return [(s, g) for g, gc in GRAPHS.items() for s, sc in SAMPLERS.items()
            if sc.refused(gc)]


def path_cells():
    """``(sampler, graph, mode, path)`` for every cell and path that exists for its mode."""
    out = []
    for s, g, mode in node_cells() + link_cells():
        for name, p in PATHS.items():
            if name != "numpy" and not (mode in p.refuses and p.refuses[mode] is None):
                out.append((s, g, mode, name))
    return out


#: Distributed layouts per cell: every cell runs on this many of :data:`DIST_PATHS`, in a
#: rotation that gives every layout (p, c, push / pull / replicated) the same share of
#: cells, each of the samplers and graphs several times.
DIST_PER_CELL = 3


def dist_cells():
    """``(sampler, graph, mode, path)``: each cell on :data:`DIST_PER_CELL` distributed
    layouts, rotating through :data:`~.paths.DIST_PATHS`."""
    names = list(DIST_PATHS)
    out = []
    for i, (s, g, mode) in enumerate(node_cells() + link_cells()):
        for j in range(DIST_PER_CELL):
            out.append((s, g, mode, names[(DIST_PER_CELL * i + j) % len(names)]))
    return out
