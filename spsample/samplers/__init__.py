"""Samplers: matrix constructors over the sampler protocol (see ``_protocol``), and the
registry (``_registry``) through which the CLI, the Trainer, the planner and the PyG adapter
find them by name: the built-ins are registered here, once."""

from ._layerwise import LADIES, FastGCN, column_weights
from ._nodewise import NodeWise
from ..engine._protocol import BulkState, Frontier, HopContext, Sampler, check_fanouts
from ._registry import SamplerEntry, entry_of, names, register, registered, unregister
from ._walks import LABOR, RandomWalk

__all__ = ["Sampler", "BulkState", "Frontier", "HopContext", "NodeWise", "LADIES", "FastGCN",
           "LABOR", "RandomWalk", "check_fanouts", "column_weights", "register", "unregister",
           "registered", "names", "entry_of", "SamplerEntry"]

# The built-ins, in the order the command line lists them. Fanouts: neighbours per vertex
# (node-wise, LABOR), nodes per layer (layer-wise); ``spsample sample``'s defaults, then the
# Trainer's.
register("nodewise", NodeWise, fanouts=(15, 10, 5), train_fanouts=(10, 10),
         heterogeneous=True, description="node-wise (GraphSAGE)")
register("labor", LABOR, fanouts=(15, 10, 5), train_fanouts=(10, 10),
         description="LABOR-0 (layer-neighbour sampling)")
register("ladies", LADIES, fanouts=(1024, 1024, 1024), train_fanouts=(256, 256),
         layerwise=True, description="LADIES (layer-wise, layer-dependent importance)")
register("fastgcn", FastGCN, fanouts=(1024, 1024, 1024), train_fanouts=(256, 256),
         layerwise=True, description="FastGCN (layer-wise, global importance)")
register("randomwalk", RandomWalk, walk=True,
         description="random walks (node2vec's when p or q is not 1)")
