"""The incremental aggregate: per-key count, sum, min, max and avg kept up to date.

``aggregate(k)(a) = {(key, k(a restricted to key)): 1}`` over an indexed Z-set. Its
incremental form keeps a trace of the input deltas; at each tick it recomputes only the
keys the delta touches and outputs ``new rows - old rows`` for them::

    Δout = aggregate(I(a) at the touched keys) - aggregate(z^-1(I a) at the touched keys)

Inside a child circuit the same rule runs over nested times (``lattice_delta``).

Relies on ``wcoj.indexed`` (``IndexedZSet.aggregate``) and ``wcoj.operators.traces``.
"""

from __future__ import annotations

from typing import Any

from wcoj.circuit import Context, Operator, Schema
from wcoj.errors import CircuitError
from wcoj.indexed import AGGREGATES, IndexedZSet
from wcoj.operators.traces import lattice_delta, next_busy_iteration
from wcoj.time import Time
from wcoj.trace import Trace
from wcoj.zset import ZSet

__all__ = ["Aggregate", "aggregate_incremental"]


def aggregate_incremental(batch: IndexedZSet, prior: Trace, time: Time, kind: str, column: int = 0) -> ZSet:
    """The change of ``aggregate(kind)`` at ``time`` given the prior deltas of its input.

    >>> prior = Trace(2, 1).insert(IndexedZSet.from_pairs([[1], [2]], [[10], [30]]), 0)
    >>> aggregate_incremental(IndexedZSet.from_pairs([[1]], [[20]]), prior, 1, "sum").to_dict()
    {(1, 10): -1, (1, 30): 1}
    """
    nk = batch.n_key
    width = nk + (2 if kind == "avg" else 1)
    return lattice_delta(lambda z: IndexedZSet(z, nk).aggregate(kind, column), batch, prior, time, width)


class Aggregate(Operator):
    """Per-key aggregate of an indexed stream, incremental by default.

    Dialog spec §2.9.1: ``aggregate(count, {(1, foo), (1, bar), (2, baz)}) = {(1, 2), (2, 1)}``
    (strings interned to ints).

    >>> IndexedZSet.from_pairs([[1], [1], [2]], [[100], [101], [102]]).aggregate("count").to_dict()
    {(1, 2): 1, (2, 1): 1}

    Parameters
    ----------
    kind : {"count", "sum", "min", "max", "avg"}
        ``avg`` yields two exact columns (sum, count).
    column : int
        The value column aggregated (not used by count).
    incremental : bool
        True (default): the input is a delta stream and so is the output. False: apply the
        aggregate to each tick's value as it is.
    """

    name = "aggregate"
    input_kinds = ("indexed",)

    def __init__(self, kind: str, column: int = 0, incremental: bool = True):
        if kind not in AGGREGATES:
            raise CircuitError(f"unknown aggregate {kind!r}; known: {', '.join(AGGREGATES)}")
        self.kind, self.column, self.incremental = kind, column, incremental

    def output_schema(self, inputs: list[Schema]) -> Schema:
        s = inputs[0]
        if self.kind != "count" and not 0 <= self.column < s.arity - s.n_key:
            raise CircuitError(f"aggregate {self.kind}: value column {self.column} does not exist in {s}")
        return Schema("zset", s.n_key + (2 if self.kind == "avg" else 1))

    def init_state(self, inputs: list[Schema], n_dims: int) -> Any:
        s = inputs[0]
        return Trace(s.arity, s.n_key, n_dims) if self.incremental else None

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        batch = values[0]
        if not self.incremental:
            return batch.aggregate(self.kind, self.column), state
        out = aggregate_incremental(batch, state, ctx.time, self.kind, self.column)
        return out, state.insert(batch, ctx.time)

    def next_busy(self, values: list[Any], state: Any, ctx: Context) -> int | None:
        if not self.incremental:
            return None
        return next_busy_iteration(None, state, state, ctx.time)

    def advance(self, state: Any, frontier: Time) -> Any:
        return state.advance(frontier) if state is not None else None
