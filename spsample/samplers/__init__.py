"""Samplers: matrix constructors over the sampler protocol (see ``_protocol``)."""

from ._layerwise import LADIES, FastGCN, column_weights
from ._nodewise import NodeWise
from ..engine._protocol import BulkState, Frontier, HopContext, Sampler, check_fanouts
from ._walks import LABOR, RandomWalk

__all__ = ["Sampler", "BulkState", "Frontier", "HopContext", "NodeWise", "LADIES", "FastGCN",
           "LABOR", "RandomWalk", "check_fanouts", "column_weights"]
