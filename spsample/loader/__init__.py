"""The torch side of spsample: a minibatch loader with a background pipeline, PyG/DGL contracts.

* :class:`Loader` -- sampled minibatches with feature rows and labels as torch tensors, one
  epoch per iteration, bulk-sampled and prepared ahead in a background thread;
* :class:`Batch` -- one training step's data in PyG's layout (``x``, ``edge_index`` in local
  ids, ``n_id``, ``batch_size``, ``y``, per-hop counts); :meth:`Batch.blocks` exports DGL-style
  per-layer :class:`Block` arrays;
* feature sources (:class:`ArrayFeatures`, :class:`HDF5Features`, :class:`SparseFeatures`
  for ``scipy.sparse`` bag-of-words features, anything with ``fetch``);
* :class:`CachedFeatures` -- the hottest feature rows (by in-degree or sampled counts) in
  memory in front of a slower source;
* :class:`PartitionedFeatures` -- features on disk in partitions, a bounded buffer of them
  (``Loader(order="buffer-aware")`` orders each epoch to load few);
* :func:`PyGSampler` -- a ``torch_geometric`` ``BaseSampler`` running spsample's samplers;
* :func:`balance_threads` -- the cores split between the model and the sampler, from the
  producer's measured share of the last epoch.

Needs torch; PyG and DGL are optional.
"""

from ._adjacency import Adjacency, build_adjacency
from ._batch import Batch, Block, LayerEdges, make_batch
from ._hetero import HeteroBatch, HeteroLoader, make_hetero_batch
from ._link import LinkBatch, LinkLoader
from ._cache import CachedFeatures, hit_rate_curve, in_degree_scores, sampled_counts
from ._features import ArrayFeatures, FeatureSource, FetchFeatures, HDF5Features, as_feature_source
from ._loader import EpochIterator, Loader, epoch_order
from ._partitions import PartitionedFeatures, buffer_aware_order, owner_order, partition_bounds
from ._pipeline import Prefetcher
from ._pyg import PyGSampler, have_pyg
from ._sparse import SparseFeatures, SparseRows
from ._threads import ThreadPlan, balance_threads, plan_threads

__all__ = ["Loader", "EpochIterator", "epoch_order", "Batch", "Block", "LayerEdges", "Adjacency",
           "build_adjacency",
           "make_batch", "FeatureSource", "ArrayFeatures", "HDF5Features", "FetchFeatures",
           "as_feature_source", "SparseFeatures", "SparseRows", "Prefetcher", "PyGSampler",
           "have_pyg", "ThreadPlan", "balance_threads", "plan_threads", "HeteroBatch",
           "HeteroLoader", "make_hetero_batch", "LinkLoader", "LinkBatch", "CachedFeatures",
           "in_degree_scores", "sampled_counts", "hit_rate_curve", "PartitionedFeatures",
           "buffer_aware_order", "owner_order", "partition_bounds"]
