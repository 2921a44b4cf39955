"""Aggregation as algebra (issue 20): a layer's CSR product equals the scatter version in the
forward and the backward pass; the GCN and the 16-bit dropout.

Tolerance: everything here runs in float64, and the two aggregations differ only in the order
of their sums (a CSR row sums its entries in order; ``index_add_`` adds them one by one in
edge order, the same order here), so they agree to ``rtol = 1e-12, atol = 1e-12``.
"""

import numpy as np
import pytest

import spsample
from spsample import io
from spsample._errors import ArgumentError

torch = pytest.importorskip("torch")

from spsample.loader import build_adjacency  # noqa: E402
from spsample.train import (GCN, GCNLayer, GraphSAGE, aggregate, dropout,  # noqa: E402
                            scatter_aggregate)

TOL = dict(rtol=1e-12, atol=1e-12)
SAMPLERS = {
    "nodewise": lambda: spsample.NodeWise([5, 4, 3]),
    "labor": lambda: spsample.LABOR([5, 4, 3]),
    "ladies": lambda: spsample.LADIES([40, 40, 40]),
    "fastgcn": lambda: spsample.FastGCN([40, 40, 40]),
}


@pytest.fixture(scope="module")
def cora():
    return io.load_cora()


def first_batch(cora, name, batch_size=24, dtype="float64"):
    loader = spsample.Loader(cora, sampler=SAMPLERS[name](), batch_size=batch_size,
                             dtype=dtype, pipeline=False, seed=3)
    return next(iter(loader))


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_spmm_equals_scatter_forward_and_backward(cora, name):
    bt = first_batch(cora, name)
    gen = torch.Generator().manual_seed(0)
    for layer in range(bt.num_layers):
        le, adj = bt.layer(layer), bt.adjacency(layer)
        assert (adj.num_src, adj.num_dst, adj.nnz) == (le.num_src, le.num_dst,
                                                       le.edge_index.shape[1])
        h = torch.randn(le.num_src, 6, dtype=torch.float64, generator=gen)
        g = torch.randn(le.num_dst, 6, dtype=torch.float64, generator=gen)
        h1, h2 = h.clone().requires_grad_(), h.clone().requires_grad_()
        out1 = aggregate(h1, adj)
        out2 = scatter_aggregate(h2, le.edge_index, le.num_dst, le.edge_weight)
        torch.testing.assert_close(out1, out2, **TOL)
        out1.backward(g)
        out2.backward(g)
        torch.testing.assert_close(h1.grad, h2.grad, **TOL)
        assert h1.grad.abs().sum() > 0


@pytest.mark.parametrize("model_cls,name", [(GraphSAGE, "nodewise"), (GraphSAGE, "labor"),
                                            (GraphSAGE, "ladies"), (GCN, "ladies"),
                                            (GCN, "fastgcn"), (GCN, "nodewise")])
def test_models_have_the_same_gradients_with_either_aggregation(cora, model_cls, name):
    bt = first_batch(cora, name)
    grads, outs = [], []
    for aggregation in ("spmm", "scatter"):
        torch.manual_seed(0)
        kw = dict(layerwise=True) if model_cls is GraphSAGE and bt.layerwise else {}
        model = model_cls(cora.num_features, 16, cora.num_classes, num_layers=3, dropout=0.0,
                          aggregation=aggregation, **kw).double()
        out = model(bt)
        torch.nn.functional.cross_entropy(out, bt.target).backward()
        outs.append(out.detach())
        grads.append([p.grad.clone() for p in model.parameters()])
    torch.testing.assert_close(outs[0], outs[1], **TOL)
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, **TOL)


def test_narrowing_layers_project_before_aggregating(cora):
    """``W (A h) = A (h W)``: the project-first path is the same function as the plain one."""
    bt = first_batch(cora, "ladies")
    torch.manual_seed(1)
    layer = GCNLayer(cora.num_features, 5).double()       # 1433 -> 5 narrows: projects first
    le, adj = bt.layer(0), bt.adjacency(0)
    x = bt.x[:le.num_src]
    a = torch.zeros(le.num_dst, le.num_src, dtype=torch.float64)
    a.index_put_((le.edge_index[1], le.edge_index[0]), le.edge_weight, accumulate=True)
    norm = 1.0 / (1.0 + a.sum(dim=1, keepdim=True))
    expected = layer.lin((a @ x + x[:le.num_dst]) * norm)
    torch.testing.assert_close(layer(x, adj), expected, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(layer(x, le.edge_index, le.num_dst, le.edge_weight), expected,
                               rtol=1e-10, atol=1e-10)
    with pytest.raises(ArgumentError, match="'num_dst'"):
        layer(x, le.edge_index)


def test_adjacency_sorts_edges_that_are_not_grouped_by_destination():
    src = np.array([0, 1, 2, 0, 3])
    dst = np.array([1, 0, 1, 2, 0])
    adj = build_adjacency(src, dst, num_src=4, num_dst=3)
    assert adj.indptr.tolist() == [0, 2, 4, 5]
    assert adj.indices.tolist() == [1, 3, 0, 2, 0]
    assert adj.values.tolist() == [0.5, 0.5, 0.5, 0.5, 1.0]
    dense = adj.matrix(torch.float64).to_dense()
    assert torch.equal(adj.matrix_t(torch.float64).to_dense(), dense.t())
    w = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    weighted = build_adjacency(src, dst, 4, 3, w)
    assert weighted.values.tolist() == [0.2, 0.5, 0.1, 0.3, 0.4]
    assert weighted.row_sums(torch.float64).tolist() == pytest.approx([0.7, 0.4, 0.4])


def test_node_wise_layers_share_one_csr(cora):
    bt = first_batch(cora, "nodewise")
    full = bt.adjacency(0)
    for layer in range(1, bt.num_layers):
        adj = bt.adjacency(layer)
        assert np.shares_memory(adj.indices, full.indices)
        assert adj.indptr.tolist() == full.indptr[:adj.num_dst + 1].tolist()


# ---------------------------------------------------------------------- dropout
def test_dropout_keeps_one_minus_p_and_rescales():
    x = torch.ones(1000, 1000)
    torch.manual_seed(0)
    for p in (0.5, 0.2, 0.9):
        y = dropout(x, p)
        kept = (y != 0).double().mean().item()
        assert abs(kept - (1 - p)) < 0.003                # 6 standard deviations at 10**6
        assert torch.allclose(y[y != 0], torch.full_like(y[y != 0], 1 / (1 - p)), rtol=1e-4)
    assert dropout(x, 0.5, training=False) is x and dropout(x, 0.0) is x


def test_dropout_is_reproducible_through_torch_seed_and_masks_gradients():
    x = torch.randn(300, 7, requires_grad=True)
    torch.manual_seed(5)
    a = dropout(x, 0.5)
    torch.manual_seed(5)
    b = dropout(x, 0.5)
    assert torch.equal(a, b)
    a.sum().backward()
    assert torch.equal(x.grad != 0, a != 0)
    lanes = torch.stack([dropout(torch.ones(4096), 0.5) != 0 for _ in range(64)]).double()
    # the four 16-bit lanes of a word are independent, each kept with probability 1/2
    assert lanes.view(64, -1, 4).mean(dim=(0, 1)).sub(0.5).abs().max() < 0.02


def test_sparse_rows_projection_gradient_equals_the_dense_one():
    import scipy.sparse as sp

    from spsample.loader._sparse import sparse_rows

    m = sp.random(30, 50, density=0.1, format="csr", random_state=1)
    rows = sparse_rows(m, torch.float64)
    w = torch.randn(7, 50, dtype=torch.float64, requires_grad=True)
    g = torch.randn(30, 7, dtype=torch.float64)
    rows.matmul_t(w).backward(g)
    dense = torch.from_numpy(m.toarray())
    w2 = w.detach().clone().requires_grad_()
    (dense @ w2.t()).backward(g)
    torch.testing.assert_close(w.grad, w2.grad, **TOL)
    assert torch.autograd.gradcheck(lambda v: rows[:12].matmul_t(v),
                                    (torch.randn(3, 50, dtype=torch.float64,
                                                 requires_grad=True),))
