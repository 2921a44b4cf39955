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
