"""PyG interoperability: probing PyG once, and a ``BaseSampler`` that runs spsample's samplers.

PyG (``torch_geometric``) is optional. :func:`import_pyg` imports it once (silencing the
``DeprecationWarning`` that PyG's own import triggers in torch's JIT on recent torch releases,
so that a strict ``-W error`` test run does not mistake it for a missing install).
"""

import numpy as np

from .._errors import ArgumentTypeError, SamplerError
from .._optional import have_pyg, import_pyg
from ..graph._graph import Graph
from ..samplers._sample import sample
from .._validate import as_int, fail
from ..samplers import Sampler
from ..samplers._registry import entry_of

__all__ = ["import_pyg", "have_pyg", "PyGSampler"]

_CLASS = {}


def _sampler_class():
    """The ``BaseSampler`` subclass, defined on first use (PyG is imported only then)."""
    if "cls" in _CLASS:
        return _CLASS["cls"]
    pyg = import_pyg("spsample.loader.PyGSampler")
    import torch

    class SpsampleSampler(pyg.sampler.BaseSampler):
        """A PyG ``BaseSampler`` running an spsample node-wise sampler (see :func:`PyGSampler`)."""

        def __init__(self, graph, sampler, seed, epoch, perm):
            super().__init__()
            self.graph, self.sampler, self.seed, self.epoch = graph, sampler, seed, epoch
            self._perm = perm

        def set_epoch(self, epoch):
            """Key the following samples by ``epoch`` (call once per epoch)."""
            self.epoch = as_int("PyGSampler.set_epoch", "epoch", epoch, minimum=0)

        @property
        def edge_permutation(self):
            return self._perm

        def sample_from_nodes(self, index, **kwargs):
            seeds = index.node.detach().cpu().numpy()
            if index.input_id is not None and index.input_id.numel():
                batch_id = int(index.input_id.min())
            else:
                batch_id = 0
            mb, = sample(self.graph, seeds, sampler=self.sampler, batch_size=max(1, seeds.size),
                         seed=self.seed, epoch=self.epoch, batch_offset=batch_id)
            ei = mb.edge_index()
            edge = np.concatenate(mb.edge_ids) if mb.edge_ids else np.zeros(0, np.int64)
            return pyg.sampler.SamplerOutput(
                node=torch.from_dlpack(mb.n_id), row=torch.from_dlpack(ei[0].copy()),
                col=torch.from_dlpack(ei[1].copy()), edge=torch.from_dlpack(edge),
                batch=None, num_sampled_nodes=list(mb.num_sampled_nodes),
                num_sampled_edges=mb.num_sampled_edges, metadata=(index.input_id, index.time))

        def sample_from_edges(self, index, neg_sampling=None):
            raise NotImplementedError("spsample's PyG sampler samples from nodes only")

        def __repr__(self):
            return f"PyGSampler({self.sampler!r}, seed={self.seed}, epoch={self.epoch})"

    _CLASS["cls"] = SpsampleSampler
    return SpsampleSampler


def PyGSampler(data, sampler, *, seed=0, epoch=0):
    """A ``torch_geometric.sampler.BaseSampler`` that samples with spsample.

    Pass it to ``torch_geometric.loader.NodeLoader(data, node_sampler=..., input_nodes=...,
    batch_size=...)``; the batches are PyG's usual ``Data`` objects (``x``, ``y``,
    ``edge_index`` in local ids, ``n_id``, ``e_id``, ``batch_size``, per-hop counts). Neither
    pyg-lib nor torch-sparse is needed.

    Minibatch random streams are keyed by ``(seed, epoch, first input id of the batch)``, the
    input id being the seed's position in ``input_nodes``: deterministic whatever the number
    of DataLoader workers. Call ``set_epoch(e)`` on the sampler at the start of each epoch to
    draw fresh samples.

    Parameters
    ----------
    data : torch_geometric.data.Data or spsample.Graph
        A ``Data`` object's ``edge_index`` (messages flow ``edge_index[0] -> edge_index[1]``)
        is converted once into spsample's CSR; edge ids are mapped back to ``edge_index``'s
        columns (``edge_permutation``), so ``e_id`` and edge attributes stay PyG's.
    sampler : NodeWise or another node-wise Sampler
        Layer-wise samplers (LADIES, FastGCN, any registered ``layerwise=True``) are rejected:
        their per-layer weighted edges do not fit PyG's ``SamplerOutput``; use
        :class:`spsample.Loader` for them.
    seed, epoch : int

    Raises
    ------
    MissingDependencyError
        PyG is not installed.
    ArgumentTypeError, SamplerError
        Naming the argument.
    """
    cls = _sampler_class()
    import torch

    where = "PyGSampler"
    if not isinstance(sampler, Sampler):
        fail(ArgumentTypeError, where, "sampler", "must be a spsample Sampler", type(sampler))
    entry = entry_of(sampler)
    if entry is not None and entry.layerwise:
        fail(SamplerError, where, "sampler", "must be node-wise: PyG's SamplerOutput has no "
             "per-layer edge weights (use spsample.Loader for layer-wise samplers)", sampler)
    seed = as_int(where, "seed", seed, minimum=0)
    epoch = as_int(where, "epoch", epoch, minimum=0)
    if isinstance(data, Graph):
        return cls(data, sampler, seed, epoch, None)
    ei = getattr(data, "edge_index", None)
    if ei is None or not hasattr(ei, "dim"):
        fail(ArgumentTypeError, where, "data", "must be a spsample.Graph or a PyG Data with "
             "edge_index", type(data))
    src, dst = ei[0].cpu().numpy(), ei[1].cpu().numpy()
    graph = Graph.from_edge_index(src, dst, num_nodes=int(data.num_nodes))
    # CSR position -> column of edge_index: CSR rows are dst, sorted by src within a row;
    # a duplicated (src, dst) pair is merged, and maps to its first column.
    key = dst.astype(np.int64) * graph.num_nodes + src.astype(np.int64)
    _, first = np.unique(key, return_index=True)
    return cls(graph, sampler, seed, epoch, torch.from_numpy(first.astype(np.int64)))
