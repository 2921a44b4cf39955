"""The codes of a lowered plan, taken from the extension.

``native/device/codes.cuh`` defines them once, for the CPU engine and the GPU kernels alike;
the extension exports them (``spsample._native_kernels.codes()``) and this module turns each
list into an :class:`enum.IntEnum`, so the Python lowering writes exactly what the kernels read.
Without the extension the enums are empty (nothing is lowered then).

Attributes
----------
Frontier : IntEnum
    Which rows a hop reads: ``NEW_NODES``, ``ALL_NODES``, ``EDGE_SOURCES``,
    ``EDGE_DESTINATIONS``, ``ROWS``.
SelectRule : IntEnum
    How a row's entries are chosen: ``UNIFORM``, ``UNIFORM_REP``, ``WEIGHTED``,
    ``WEIGHTED_REP``, ``REJECTION``, ``THRESHOLD``, ``LAST``.
StreamKey : IntEnum
    What keys a row's stream: ``VERTEX``, ``ROW``.
ValueOp : IntEnum
    The instructions of a value program: ``CONST``, ``WEIGHT``, ``COLUMN``, ``ROW``, ``EDGE``,
    ``INDICATOR``, ``FOUND``, ``MUL``, ``ADD``, ``SQUARE``.
LinkMode : IntEnum
    How link minibatches draw negatives: ``BINARY``, ``TRIPLET``, ``NONE``.
VALUE_STACK : int
    The deepest value program the kernels evaluate.
"""

import enum

from ._switch import AVAILABLE, kernels

__all__ = ["Frontier", "SelectRule", "StreamKey", "ValueOp", "LinkMode", "VALUE_STACK"]

_CODES = kernels.codes() if AVAILABLE else {}


def _enum(name, key):
    return enum.IntEnum(name, _CODES.get(key, {}), module=__name__)


Frontier = _enum("Frontier", "frontier")
SelectRule = _enum("SelectRule", "select")
StreamKey = _enum("StreamKey", "key")
ValueOp = _enum("ValueOp", "value")
LinkMode = _enum("LinkMode", "link")
VALUE_STACK = int(_CODES.get("value_stack", 0))
