"""The engine: Z-sets with checked weights, the DBSP circuit runtime and the joins.

``wcoj`` knows nothing of EAV or EDN; it depends on numpy and numba only.

>>> from wcoj import ZSet
>>> (ZSet.from_rows([(1, 2)]) + ZSet.from_rows([(1, 2)])).to_dict()
{(1, 2): 2}
"""

import warnings as _warnings

from numba import config as _numba_config

from wcoj.errors import (
    ArityMismatchError,
    CircuitError,
    InputError,
    PerformanceWarning,
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
from wcoj.heap import retain_by_default as _retain_by_default
from wcoj.kernels.memory import load_seconds as kernel_load_seconds
from wcoj import interrupts as _interrupts  # noqa: F401 - kernels compile with Ctrl-C held back

_retain_by_default()  # large arrays reuse freed memory (wcoj.heap; WCOJ_RETAIN_HEAP=0: off)

if _numba_config.DISABLE_JIT:
    # for debugging and coverage only: a process that keeps it set by mistake is told once
    _warnings.warn("NUMBA_DISABLE_JIT is set: the engine's kernels run as plain Python, orders of magnitude "
                   "slower; unset it except to debug or measure coverage", PerformanceWarning, stacklevel=2)

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
    "PerformanceWarning",
    "kernel_load_seconds",
]
