"""The circuit operators, each an ``Operator`` subclass (see ``wcoj.circuit`` for the
protocol) plus, where useful, a plain function over Z-sets and traces.

=====================  ========================  =====================================
operator               inputs -> output          module
=====================  ========================  =====================================
map, filter, negate    zset -> zset              ``linear``
plus, minus            zset, zset -> zset        ``linear``
index_with             zset -> indexed           ``linear``
inspect                any -> same               ``linear``
z1, integrate, D       zset -> zset              ``linear``
consolidate            trace -> zset             ``linear``
trace_append           zset, trace -> trace      ``traces``
untimed_trace_append   zset, trace -> trace      ``traces``
z1_trace               trace -> trace            ``traces``
distinct               zset -> zset              ``distinct``
distinct_incremental   zset, trace -> zset       ``distinct``
distinct_trace         zset, trace -> zset       ``distinct``
join_stream            indexed, indexed -> zset  ``join``
join_trace             indexed, trace -> zset    ``join``
join_lattice           2 indexed, 2 traces       ``join``
aggregate              indexed -> zset           ``aggregate``
=====================  ========================  =====================================

Composites that wire several nodes: ``integrate_trace``, ``distinct_nested`` and
``incremental_join``.
"""

from wcoj.operators.aggregate import Aggregate, aggregate_incremental
from wcoj.operators.distinct import (
    Distinct,
    DistinctIncremental,
    DistinctTrace,
    distinct_incremental,
    distinct_nested,
    distinct_trace,
)
from wcoj.operators.join import (
    JoinLattice,
    JoinStream,
    JoinTrace,
    fold_map,
    incremental_join,
    join_lattice,
    join_stream,
    join_trace,
)
from wcoj.operators.linear import (
    Consolidate,
    Differentiate,
    Filter,
    IndexWith,
    Inspect,
    Integrate,
    Map,
    Minus,
    Negate,
    Plus,
    Z1,
)
from wcoj.operators.traces import (
    TraceAppend,
    UntimedTraceAppend,
    Z1Trace,
    integrate_trace,
    lattice_delta,
)

__all__ = [
    "Aggregate", "aggregate_incremental", "Distinct", "DistinctIncremental", "DistinctTrace",
    "distinct_incremental", "distinct_nested", "distinct_trace", "JoinLattice", "JoinStream",
    "JoinTrace", "fold_map", "incremental_join", "join_lattice", "join_stream", "join_trace", "Consolidate",
    "Differentiate", "Filter", "IndexWith", "Inspect", "Integrate", "Map", "Minus", "Negate",
    "Plus", "Z1", "TraceAppend", "UntimedTraceAppend", "Z1Trace", "integrate_trace",
    "lattice_delta",
]
