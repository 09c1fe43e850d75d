"""The two operators of Datalog circuits that read the database or decode values.

``CoreJoin`` wraps a query's conjunctive core (``IncrementalGenericJoin`` over the store's
relations); ``RowMap`` applies predicates and function expressions to decoded rows.
``queries.circuits`` wires them with the runtime's own operators.

Relies on ``wcoj`` (circuit protocol, generic join, Z-sets); used by ``queries.circuits``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from wcoj.circuit import Context, Operator, Schema
from wcoj.generic_join import IncrementalGenericJoin
from wcoj.zset import ZSet

if TYPE_CHECKING:
    from queries.circuits import CompiledView

__all__ = ["CoreJoin", "RowMap"]


class CoreJoin(Operator):
    """The conjunctive core as a root operator: ``IncrementalGenericJoin`` over the store.

    Its inputs are the deltas of the relations it reads (only to skip empty ticks); the
    join itself reads the relations' staged ``delta``/``prev``/``curr`` views. At the
    view's first tick (``owner.initial``) it emits the whole batch over ``owner.over``:
    ``prev`` when a view is registered, ``curr`` when a transaction refreshes it.
    """

    name = "core_join"
    input_kinds = ("zset",)
    variadic = True

    def __init__(self, join: IncrementalGenericJoin, owner: CompiledView):
        self.join, self.owner = join, owner

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return Schema("zset", len(self.join.output))

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        if self.owner.initial:
            return self.join.batch(self.owner.over), state
        if all(v.is_empty() for v in values):
            return ZSet.empty(len(self.join.output)), state
        return self.join.delta(), state

    def next_busy(self, values: list[Any], state: Any, ctx: Context) -> int | None:
        return None


class RowMap(Operator):
    """Linear: a row ``r`` of weight ``w`` becomes the rows ``fn(ids, values)`` of weight ``w``.

    ``fn`` gets the row's ids and its decoded values and returns id tuples (none to drop
    the row), so filters and function expressions over Python values are one operator.
    ``vector(keys)``, when given, does the same for a whole batch, answering the rows kept
    (a boolean mask) or every row's new ids (a matrix), or None to leave the batch to
    ``fn`` (``queries.vectorised``).
    """

    name = "row_map"
    input_kinds = ("zset",)

    def __init__(self, fn: Callable, arity: int, decode: Callable, vector: Callable | None = None):
        self.fn, self.arity, self.decode, self.vector = fn, arity, decode, vector

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return Schema("zset", self.arity)

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        z = values[0]
        if z.is_empty():
            return ZSet.empty(self.arity), state
        done = self.vector(z.keys) if self.vector is not None else None
        if done is not None:  # the batch's columns at once (queries.vectorised)
            keys, ws = (z.keys[done], z.weights[done]) if done.dtype == bool else (done, z.weights)
            if not len(ws):
                return ZSet.empty(self.arity), state
            return ZSet.from_arrays(keys, ws, arity=self.arity), state
        rows, ws = [], []
        dec = self.decode(z.keys).tolist()
        for ids, vals, w in zip(z.keys.tolist(), dec, z.weights.tolist()):
            for out in self.fn(ids, vals):
                rows.append(out)
                ws.append(w)
        if not rows:
            return ZSet.empty(self.arity), state
        keys = np.array(rows, dtype=np.int64).reshape(len(rows), self.arity)
        return ZSet.from_arrays(keys, np.array(ws, dtype=np.int64), arity=self.arity), state

    def next_busy(self, values: list[Any], state: Any, ctx: Context) -> int | None:
        return None
