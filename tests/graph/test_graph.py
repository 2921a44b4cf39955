import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import spsample
from spsample import ArgumentTypeError, Graph, GraphError


def test_from_csr_canonicalises_rows():
    # row 0 = [2, 1, 2] (unsorted, duplicate), weights summed on merge
    g = Graph.from_csr([0, 3, 3, 3], [2, 1, 2], weights=[1.0, 2.0, 3.0])
    assert g.indptr.tolist() == [0, 2, 2, 2]
    assert g.indices.tolist() == [1, 2]
    assert g.weights.tolist() == [2.0, 4.0]
    assert g.num_nodes == 3 and g.num_edges == 2 and g.is_weighted


def test_from_edge_index_convention_and_symmetrize(star_graph):
    assert star_graph.indices[star_graph.indptr[0]:star_graph.indptr[1]].tolist() == [1, 2, 3, 4, 5]
    assert star_graph.degree().tolist() == [5, 2, 0, 0, 0, 0, 0]
    g = Graph.from_edge_index([0], [1], num_nodes=2, symmetrize=True)
    assert g.to_scipy().toarray().tolist() == [[0, 1], [1, 0]]
    src, dst = star_graph.edge_index()
    assert Graph.from_edge_index(src, dst, num_nodes=7) == star_graph


def test_from_scipy_roundtrip():
    m = sp.random(30, 30, density=0.1, random_state=0, format="csr")
    g = Graph.from_scipy(m)
    assert (g.to_scipy() != m).nnz == 0
    ones = Graph.from_scipy((m > 0).astype(float))
    assert ones.weights is None


def test_inputs_not_modified_and_arrays_read_only():
    indptr = np.array([0, 2, 3], dtype=np.int32)
    indices = np.array([1, 0, 0], dtype=np.int32)
    before = indices.copy()
    g = Graph.from_csr(indptr, indices)
    assert np.array_equal(indices, before)
    with pytest.raises(ValueError):
        g.indices[0] = 5


@pytest.mark.parametrize("kwargs,arg", [
    (dict(indptr=[0, 2, 1], indices=[0, 1]), "indptr"),           # not monotone
    (dict(indptr=[1, 2], indices=[0, 0]), "indptr"),              # does not start at 0
    (dict(indptr=[0, 1, 3], indices=[0, 1]), "indptr"),           # wrong length / end
    (dict(indptr=[0], indices=[]), "indptr"),                     # empty graph
    (dict(indptr=[0, 1, 2], indices=[0, 2]), "indices"),          # out of range
    (dict(indptr=[0, 1, 2], indices=[0, -1]), "indices"),         # negative
    (dict(indptr=[0, 1, 2], indices=[0, 1], weights=[1.0, -1.0]), "weights"),
    (dict(indptr=[0, 1, 2], indices=[0, 1], weights=[1.0, np.nan]), "weights"),
    (dict(indptr=[0, 1, 2], indices=[0, 1], weights=[1.0, np.inf]), "weights"),
    (dict(indptr=[0, 1, 2], indices=[0, 1], weights=[1.0]), "weights"),
    (dict(indptr=[0, 1, 2], indices=[0, 1], num_nodes=1), "num_nodes"),
])
def test_from_csr_bad_input(kwargs, arg):
    with pytest.raises(GraphError, match=f"'{arg}'"):
        Graph.from_csr(**kwargs)


def test_bad_types():
    with pytest.raises(ArgumentTypeError, match="'indices'"):
        Graph.from_csr([0, 1], [0.5])
    with pytest.raises(ArgumentTypeError, match="'indptr'"):
        Graph.from_csr(np.array([0.0, 1.0]), [0])
    with pytest.raises(GraphError, match="'indptr'"):
        Graph.from_csr([[0, 1]], [0])


@pytest.mark.parametrize("kwargs,arg", [
    (dict(src=[0, 1], dst=[1]), "dst"),
    (dict(src=[0, 5], dst=[1, 1], num_nodes=3), "num_nodes"),
    (dict(src=[], dst=[]), "src"),
    (dict(src=[0, -2], dst=[1, 1], num_nodes=3), "src"),
])
def test_from_edge_index_bad_input(kwargs, arg):
    with pytest.raises(GraphError, match=f"'{arg}'"):
        Graph.from_edge_index(**kwargs)


def test_errors_are_builtin_subclasses():
    assert issubclass(GraphError, ValueError) and issubclass(GraphError, spsample.SpsampleError)
    assert issubclass(ArgumentTypeError, TypeError)


# ---------------------------------------------------------------------- frozen arrays (#17)
def _root(arr):
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


@pytest.mark.parametrize("weighted", [False, True])
def test_graph_arrays_cannot_be_made_writeable(weighted):
    """Native kernels trust a graph's arrays once checked: no one may flip them writeable,
    not through the array, its base, a copy made by pickling, or a cached derived array."""
    from graphs import random_graph

    g = random_graph(50, 300, seed=3, weighted=weighted)
    arrays = [g.indptr, g.indices] + ([g.weights] if weighted else [])
    again = pickle.loads(pickle.dumps(g))
    assert again == g
    arrays += [again.indptr, again.indices]
    arrays += [g.column_weights()[0], g.column_weights()[1], g.indices32(),
               *g.internal_columns()] + ([g.layerwise_weights()] if weighted else [])
    for arr in arrays:
        for view in (arr, _root(arr)):
            with pytest.raises(ValueError, match="WRITEABLE"):
                view.flags.writeable = True
        with pytest.raises(ValueError):
            arr[0] = 1


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("sampler, weighted", [
    (spsample.NodeWise([4, 3]), False), (spsample.NodeWise([3, 2], weighted=True), True),
    (spsample.LADIES([12, 12]), False), (spsample.FastGCN([10, 20]), False)], ids=repr)
def test_sampling_frozen_graphs_is_bit_identical_to_the_reference(sampler, weighted, native):
    from graphs import random_graph
    from spsample import native as _native
    from spsample.engine._reference import reference_sample

    if native and not _native.AVAILABLE:
        pytest.skip("native kernels not built")
    g = random_graph(120, 900, seed=8, weighted=weighted)
    seeds = np.random.default_rng(2).permutation(120)[:40]
    kw = dict(sampler=sampler, batch_size=8, seed=5, epoch=1)
    previous = _native.set_enabled(native)
    try:
        got = spsample.sample(g, seeds, **kw)
    finally:
        _native.set_enabled(previous)
    want = reference_sample(g, seeds, **kw)
    assert len(got) == len(want) == 5 and all(a.equals(b) for a, b in zip(got, want))
