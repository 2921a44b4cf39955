"""Every cell (sampler × graph × mode) on every path equals the oracle bit for bit; the oracle
passes the invariants; unsupported cells are typed refusals."""

import warnings

import pytest

import spsample
from spsample import testing

from . import cells
from .paths import DIST_PATHS, PATHS


def _ids(cells_):
    return ["/".join(map(str, c)) for c in cells_]


@pytest.mark.parametrize("sampler_name, graph_name, mode",
                         cells.node_cells() + cells.link_cells(),
                         ids=_ids(cells.node_cells() + cells.link_cells()))
def test_oracle_passes_the_invariants(sampler_name, graph_name, mode):
    sampler, bulk = cells.oracle(sampler_name, graph_name, mode)
    seeds, kw = cells.inputs(graph_name, mode)
    g = cells.graph(graph_name)
    if mode in ("link", "hetero-link"):      # the seeds are the edges' ends and negatives
        testing.check_invariants(g, [b.minibatch for b in bulk], sampler, seed=kw["seed"],
                                 epoch=kw["epoch"])
        edges = seeds[1] if mode == "hetero-link" else seeds
        assert len(bulk) == -(-edges.shape[1] // kw["batch_size"])
        return
    testing.check_invariants(g, bulk, sampler, seeds=seeds[1] if isinstance(seeds, tuple)
                             else seeds, seed_time=kw.get("seed_time"), seed=kw["seed"],
                             epoch=kw["epoch"])
    assert len(bulk) == -(-len(seeds[1] if isinstance(seeds, tuple) else seeds)
                          // kw["batch_size"])


@pytest.mark.parametrize("sampler_name, graph_name, mode, path", cells.path_cells(),
                         ids=_ids(cells.path_cells()))
def test_cell_equals_the_oracle(sampler_name, graph_name, mode, path):
    sampler, expected = cells.oracle(sampler_name, graph_name, mode)
    seeds, kw = cells.inputs(graph_name, mode)
    refusal = PATHS[path].refuses.get(mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # a constructor that did not lower
        if refusal is not None:
            error, match = refusal
            with pytest.raises(error, match=match):
                PATHS[path](cells.graph(graph_name), seeds, sampler, **kw)
            return
        got = PATHS[path](cells.graph(graph_name), seeds, sampler, **kw)
    testing.assert_same_bulk(got, expected)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("sampler_name, graph_name, mode, path", cells.dist_cells(),
                         ids=_ids(cells.dist_cells()))
def test_distributed_cell_equals_the_oracle(sampler_name, graph_name, mode, path):
    """``DistGraph`` / ``DistHeteroGraph`` over p ranks in threads: push, pull, local
    (c = p) and replicated; every rank's share is the oracle's minibatches of its ids."""
    sampler, expected = cells.oracle(sampler_name, graph_name, mode)
    seeds, kw = cells.inputs(graph_name, mode)
    got = DIST_PATHS[path](cells.graph(graph_name), seeds, sampler, **kw)
    testing.assert_same_bulk(got, expected)


@pytest.mark.parametrize("sampler_name, graph_name", cells.refused_cells(),
                         ids=_ids(cells.refused_cells()))
def test_unsupported_sampler_and_graph_is_a_typed_refusal(sampler_name, graph_name):
    sc, gc = cells.SAMPLERS[sampler_name], cells.GRAPHS[graph_name]
    g = cells.graph(graph_name)
    mode = "node" if gc.kind == "graph" else gc.kind
    seeds, kw = cells.inputs(graph_name, mode)
    try:
        sampler = sc(g)
    except spsample.SpsampleError:
        return                                 # refused when built (e.g. arrays of one graph)
    with pytest.raises((spsample.SamplerError, spsample.ArgumentError)):
        spsample.sample(g, seeds, sampler=sampler, **kw)


def test_readme_table_is_the_registrys():
    """The README's table of paths × samplers is the registry's, line for line."""
    from pathlib import Path

    from .table import readme_table
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "\n".join(readme_table()) in readme
