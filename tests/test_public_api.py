"""The public API is what it was before the rooms (issue 26): the names of ``spsample`` and of
its public sub-packages, recorded from main (cbab0f0) in a fresh interpreter, are still there,
and every name in ``__all__`` resolves. New public names may only be the rooms themselves."""

import importlib
import json
import subprocess
import sys

import pytest

import rooms as _rooms

RECORDED = {
    'spsample': {
        'all': [
            'ArgumentError', 'ArgumentTypeError', 'Bulk', 'BulkState', 'Dataset',
            'DatasetError', 'DatasetNotFoundError', 'DiskGraph', 'DistributedError',
            'FastGCN', 'Graph', 'GraphError', 'HeteroBulk', 'HeteroDataset',
            'HeteroGraph', 'HeteroMiniBatch', 'HopContext', 'LABOR', 'LADIES',
            'LinkLoader', 'Loader', 'MiniBatch', 'MissingDependencyError', 'NodeWise',
            'NotLoweredWarning', 'RandomWalk', 'ResourceLimitError', 'Sampler',
            'SamplerError', 'SeedError', 'SpsampleError', 'SpsampleWarning', 'convert',
            'distributed', 'io', 'load', 'primitives', 'rmat', 'rng', 'sample',
            'samplers', 'save', 'testing'
        ],
        'dir': [
            'ArgumentError', 'ArgumentTypeError', 'Bulk', 'BulkState', 'Dataset',
            'DatasetError', 'DatasetNotFoundError', 'DiskGraph', 'DistributedError',
            'FastGCN', 'Graph', 'GraphError', 'HeteroBulk', 'HeteroDataset',
            'HeteroGraph', 'HeteroMiniBatch', 'HopContext', 'LABOR', 'LADIES',
            'LinkLoader', 'Loader', 'MiniBatch', 'MissingDependencyError', 'NodeWise',
            'NotLoweredWarning', 'RandomWalk', 'ResourceLimitError', 'Sampler',
            'SamplerError', 'SeedError', 'SpsampleError', 'SpsampleWarning', 'convert',
            'distributed', 'importlib', 'io', 'load', 'primitives', 'rmat', 'rng',
            'sample', 'samplers', 'save', 'set_passive_wait', 'testing'
        ],
    },
    'spsample.distributed': {
        'all': [
            'CachedFeatureStore', 'Communicator', 'DistGraph', 'DistHeteroGraph',
            'FeatureStore', 'Grid', 'MPIComm', 'NcclComm', 'STRATEGIES', 'SelfComm',
            'ShardedDataset', 'ThreadComm', 'abort_on_failure', 'block_bounds',
            'block_range', 'check_grid', 'column_ranks', 'launched_under_mpi',
            'load_hetero_dataset', 'num_process_rows', 'owner_of', 'process_row',
            'rank_of', 'replica_index', 'row_ranks', 'rows_of_rank', 'run_threads',
            'set_abort_on_failure', 'world'
        ],
        'dir': [
            'CachedFeatureStore', 'Communicator', 'DistGraph', 'DistHeteroGraph',
            'FeatureStore', 'Grid', 'MPIComm', 'NcclComm', 'STRATEGIES', 'SelfComm',
            'ShardedDataset', 'ThreadComm', 'abort_on_failure', 'block_bounds',
            'block_range', 'check_grid', 'column_ranks', 'launched_under_mpi',
            'load_hetero_dataset', 'num_process_rows', 'owner_of', 'process_row',
            'rank_of', 'replica_index', 'row_ranks', 'rows_of_rank', 'run_threads',
            'set_abort_on_failure', 'world'
        ],
    },
    'spsample.io': {
        'all': [
            'Dataset', 'FORMATS', 'HeteroDataset', 'RowReader', 'convert',
            'detect_format', 'embedded_names', 'embedded_path', 'from_csr_npz',
            'from_edge_list', 'from_heco', 'from_heterophilous_npz', 'from_kg',
            'from_musae', 'from_npz_gnnbench', 'from_ogb', 'from_planetoid', 'from_scipy',
            'from_temporal_edges', 'load', 'load_cora', 'open_rows', 'read_feature_rows',
            'read_node_targets', 'read_rows', 'save'
        ],
        'dir': [
            'Dataset', 'FORMATS', 'HeteroDataset', 'RowReader', 'convert',
            'detect_format', 'embedded_names', 'embedded_path', 'from_csr_npz',
            'from_edge_list', 'from_heco', 'from_heterophilous_npz', 'from_kg',
            'from_musae', 'from_npz_gnnbench', 'from_ogb', 'from_planetoid', 'from_scipy',
            'from_temporal_edges', 'load', 'load_cora', 'open_rows', 'read_feature_rows',
            'read_node_targets', 'read_rows', 'save'
        ],
    },
    'spsample.samplers': {
        'all': [
            'BulkState', 'FastGCN', 'Frontier', 'HopContext', 'LABOR', 'LADIES',
            'NodeWise', 'RandomWalk', 'Sampler', 'check_fanouts', 'column_weights'
        ],
        'dir': [
            'BulkState', 'FastGCN', 'Frontier', 'HopContext', 'LABOR', 'LADIES',
            'NodeWise', 'RandomWalk', 'Sampler', 'check_fanouts', 'column_weights'
        ],
    },
    'spsample.primitives': {
        'all': [
            'ColumnSums', 'Expr', 'Frontier', 'GlobalColumns', 'RowMatrix', 'RowView',
            'Streams', 'column_accumulate', 'column_sums', 'gather', 'global_columns',
            'normalize_rows', 'probabilities_of', 'row_select', 'sample_columns',
            'sample_columns_by_entries', 'sample_global', 'sample_rows', 'segment_arange',
            'segmented_sum', 'select_columns', 'select_global', 'select_rows',
            'select_threshold', 'spgemm'
        ],
        'dir': [
            'ColumnSums', 'Expr', 'Frontier', 'GlobalColumns', 'RowMatrix', 'RowView',
            'Streams', 'column_accumulate', 'column_sums', 'gather', 'global_columns',
            'normalize_rows', 'probabilities_of', 'row_select', 'sample_columns',
            'sample_columns_by_entries', 'sample_global', 'sample_rows', 'segment_arange',
            'segmented_sum', 'select_columns', 'select_global', 'select_rows',
            'select_threshold', 'spgemm'
        ],
    },
    'spsample.testing': {
        'all': [
            'BranchingWalk', 'ColumnScaled', 'EdgeValued', 'GivenRows', 'GraphCase',
            'HETERO_RELATIONS', 'NoDedup', 'PerVertexFanout', 'RejectionNodeWise', 'RowScaled',
            'SamplerCase', 'Subclass',
            'SubclassLADIES', 'SumOfSquares', 'WalkPerRow', 'WeightedWalk',
            'assert_same_bulk', 'check_invariants', 'directed', 'empty_rows', 'graphs',
            'heterogeneous', 'isolated_vertices', 'one_vertex', 'pick_seeds', 'power_law',
            'random_graph', 'samplers', 'self_loops', 'temporal', 'temporal_node_times',
            'weighted_zeros'
        ],
        'dir': [
            'BranchingWalk', 'ColumnScaled', 'EdgeValued', 'GivenRows', 'GraphCase',
            'HETERO_RELATIONS', 'NoDedup', 'PerVertexFanout', 'RejectionNodeWise', 'RowScaled',
            'SamplerCase', 'Subclass',
            'SubclassLADIES', 'SumOfSquares', 'WalkPerRow', 'WeightedWalk',
            'assert_same_bulk', 'check_invariants', 'directed', 'empty_rows', 'graphs',
            'heterogeneous', 'isolated_vertices', 'np', 'one_vertex', 'pick_seeds',
            'power_law', 'random_graph', 'samplers', 'self_loops', 'temporal',
            'temporal_node_times', 'weighted_zeros'
        ],
    },
    'spsample.loader': {
        'all': [
            'Adjacency', 'ArrayFeatures', 'Batch', 'Block', 'CachedFeatures',
            'EpochIterator', 'FeatureSource', 'FetchFeatures', 'HDF5Features',
            'HeteroBatch', 'HeteroLoader', 'LayerEdges', 'LinkBatch', 'LinkLoader',
            'Loader', 'PartitionedFeatures', 'Prefetcher', 'PyGSampler', 'SparseFeatures',
            'SparseRows', 'ThreadPlan', 'as_feature_source', 'balance_threads',
            'buffer_aware_order', 'build_adjacency', 'epoch_order', 'have_pyg',
            'hit_rate_curve', 'in_degree_scores', 'make_batch', 'make_hetero_batch',
            'owner_order', 'partition_bounds', 'plan_threads', 'sampled_counts'
        ],
        'dir': [
            'Adjacency', 'ArrayFeatures', 'Batch', 'Block', 'CachedFeatures',
            'EpochIterator', 'FeatureSource', 'FetchFeatures', 'HDF5Features',
            'HeteroBatch', 'HeteroLoader', 'LayerEdges', 'LinkBatch', 'LinkLoader',
            'Loader', 'PartitionedFeatures', 'Prefetcher', 'PyGSampler', 'SparseFeatures',
            'SparseRows', 'ThreadPlan', 'as_feature_source', 'balance_threads',
            'buffer_aware_order', 'build_adjacency', 'epoch_order', 'have_pyg',
            'hit_rate_curve', 'in_degree_scores', 'make_batch', 'make_hetero_batch',
            'owner_order', 'partition_bounds', 'plan_threads', 'sampled_counts'
        ],
    },
    'spsample.train': {
        'all': [
            'GCN', 'GCNLayer', 'GradientAllReduce', 'GraphSAGE', 'SAGELayer', 'SAMPLERS',
            'TrainConfig', 'Trainer', 'aggregate', 'dropout', 'make_sampler',
            'parameter_checksum', 'parameter_checksums', 'random_split',
            'scatter_aggregate'
        ],
        'dir': [
            'GCN', 'GCNLayer', 'GradientAllReduce', 'GraphSAGE', 'SAGELayer', 'SAMPLERS',
            'TrainConfig', 'Trainer', 'aggregate', 'dropout', 'make_sampler',
            'parameter_checksum', 'parameter_checksums', 'random_split',
            'scatter_aggregate'
        ],
    },
    'spsample.train.hetero': {
        'all': [
            'HeteroSAGE', 'fit_node', 'macro_f1', 'normalized_features'
        ],
    },
    'spsample.train.link': {
        'all': [
            'auc', 'fit_link', 'mrr', 'split_edges'
        ],
    },
}

# Sub-packages that are rooms may appear as attributes of spsample (importing a room's module
# binds it on the package).
ROOM_PACKAGES = {prefix.split(".")[1] for _, _, prefixes in _rooms.ROOMS for prefix in prefixes
                 if prefix.count(".") == 1 and not prefix.split(".")[1].startswith("_")}

_PROBE = """
import importlib, json, sys
m = importlib.import_module(sys.argv[1])
print(json.dumps({"dir": sorted(n for n in dir(m) if not n.startswith("_")),
                  "all": sorted(getattr(m, "__all__", []))}))
"""


def _fresh(package):
    """``dir()`` and ``__all__`` of ``package`` imported alone in a new interpreter."""
    out = subprocess.run([sys.executable, "-c", _PROBE, package], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


#: Public names added since the record, per package (a name added must be listed here).
ADDED = {
    "spsample.samplers": {"SamplerEntry", "entry_of", "names", "register", "registered",
                          "unregister"},          # the one sampler registry (issue 26)
    "spsample.distributed": {"StrategyEntry", "register_strategy", "registered_strategy",
                             "unregister_strategy"},  # the one strategy registry (issue 26)
}


@pytest.mark.parametrize("package", sorted(RECORDED))
def test_public_names_unchanged(package):
    now, before = _fresh(package), RECORDED[package]
    added = ADDED.get(package, set())
    assert sorted(set(now["all"]) - added) == sorted(before["all"])
    if "dir" in before:
        assert sorted(set(now["dir"]) - ROOM_PACKAGES - added) == \
            sorted(set(before["dir"]) - ROOM_PACKAGES)


@pytest.mark.parametrize("package", sorted(RECORDED))
def test_every_exported_name_resolves(package):
    module = importlib.import_module(package)
    missing = [name for name in RECORDED[package]["all"] if getattr(module, name, None) is None
               and name != "__version__"]
    assert missing == []


def test_the_check_sees_a_missing_name():
    """A name dropped from ``__all__`` would differ from the record (the test can fail)."""
    before = RECORDED["spsample.samplers"]["all"]
    assert sorted(set(before) - {"LABOR"}) != before
