"""The engine: Z-sets with checked weights, the DBSP circuit runtime and the joins.

``wcoj`` knows nothing of EAV or EDN; it depends on numpy and numba only.

>>> from wcoj import ZSet
>>> (ZSet.from_rows([(1, 2)]) + ZSet.from_rows([(1, 2)])).to_dict()
{(1, 2): 2}
"""

from wcoj.errors import (
    ArityMismatchError,
    CircuitError,
    InputError,
    QueryError,
    WcojError,
    WeightOverflowError,
)
from wcoj.indexed import IndexedZSet
from wcoj.zset import ZSet, consolidate
from wcoj.trace import Trace
from wcoj.circuit import Circuit, Operator, Schema, Stream
from wcoj.generic_join import Atom, IncrementalGenericJoin
from wcoj.multiway import MultiwayJoin

__all__ = [
    "ZSet",
    "IndexedZSet",
    "consolidate",
    "Trace",
    "Circuit",
    "Stream",
    "Schema",
    "Operator",
    "Atom",
    "IncrementalGenericJoin",
    "MultiwayJoin",
    "WcojError",
    "QueryError",
    "InputError",
    "CircuitError",
    "ArityMismatchError",
    "WeightOverflowError",
]
