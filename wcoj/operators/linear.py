"""Linear operators and the stream calculus: map, filter, index_with, inspect, negate,
plus, minus, consolidate, z1, integrate (I) and differentiate (D).

A linear operator ``Q`` satisfies ``Q(a + b) = Q(a) + Q(b)``, so its incremental form is
itself: applied to a stream of deltas it yields the deltas of its output (DBSP §3).
``z1``, ``integrate`` and ``differentiate`` are the three stateful ones; inside a child
circuit their state lives for one epoch (they integrate over iterations).

Relies on ``wcoj.circuit`` (``Operator``, ``Schema``) and ``wcoj.zset``. Used through
``Circuit.add`` or the ``Stream`` methods.

>>> from wcoj.circuit import Circuit
>>> c = Circuit(); s = c.source(arity=1, name="s")
>>> _ = c.sink(s.integrate(), "I"); _ = c.sink(s.differentiate(), "D")
>>> c.step({"s": ZSet.from_rows([(1,)])})["I"].to_dict()
{(1,): 1}
>>> c.step({"s": ZSet.from_rows([(2,)])})["D"].to_dict()
{(1,): -1, (2,): 1}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from wcoj.circuit import Context, Operator, Schema
from wcoj.protocol import never_busy
from wcoj.errors import CircuitError
from wcoj.time import as_row
from wcoj.zset import ZSet  # noqa: F401  (the doctests use it)

__all__ = ["Map", "Filter", "IndexWith", "Inspect", "Negate", "Plus", "Minus", "Consolidate",
           "Z1", "Integrate", "Differentiate", "infer_arity"]


def infer_arity(fn: Callable, arity: int) -> int:
    """The number of columns ``fn`` returns for a key matrix of ``arity`` columns (probed on
    an empty matrix); raise ``CircuitError`` when that fails, asking for ``arity=``."""
    try:
        out = np.asarray(fn(np.zeros((0, arity), dtype=np.int64)))
    except Exception as e:  # noqa: BLE001 - any failure means "cannot infer"
        raise CircuitError(f"cannot infer the output arity of {fn!r}; pass arity= ({e})") from e
    return 1 if out.ndim == 1 else int(out.shape[1])


def _busy_while_state(self: Operator, values: list[Any], state: Any, ctx: Context) -> int | None:
    """``next_busy`` of an operator that keeps emitting while its state is non-zero."""
    return None if state.is_empty() else as_row(ctx.time)[-1] + 1


class _Unary(Operator):
    input_kinds = ("zset",)
    next_busy = never_busy

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return inputs[0]


class Map(_Unary):
    """``map(f)(a)[f(r)] = Σ_{r'} a[r'] [f(r') = f(r)]``: transform rows; weights of collisions add.

    ``fn`` maps the whole key matrix to a new one (vectorised); ``rowwise=True`` maps one
    row tuple at a time (the documented slow fallback).

    >>> ZSet.from_rows([(1, 2), (3, 2)]).map(lambda k: k[:, 1:]).to_dict()
    {(2,): 2}
    """

    name = "map"
    linear = True

    def __init__(self, fn: Callable, arity: int | None = None, rowwise: bool = False):
        self.fn, self.arity, self.rowwise = fn, arity, rowwise

    def output_schema(self, inputs: list[Schema]) -> Schema:
        if self.arity is None:
            if self.rowwise:
                raise CircuitError("map(rowwise=True) needs arity=")
            self.arity = infer_arity(self.fn, inputs[0].arity)
        return Schema("zset", self.arity)

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].map(self.fn, rowwise=self.rowwise, arity=self.arity), state


class Filter(_Unary):
    """``filter(p)(a)[r] = a[r]`` if ``p(r)`` else 0.

    Dialog spec §2.9.4: ``filter(x >= 1, {0: 1, 1: 2, 2: -3}) = {1: 2, 2: -3}``.

    >>> ZSet.from_dict({(0,): 1, (1,): 2, (2,): -3}).filter(lambda k: k[:, 0] >= 1).to_dict()
    {(1,): 2, (2,): -3}
    """

    name = "filter"
    linear = True

    def __init__(self, predicate: Callable, rowwise: bool = False):
        self.predicate, self.rowwise = predicate, rowwise

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].filter(self.predicate, rowwise=self.rowwise), state


class IndexWith(Operator):
    """``index_with(cols)(a)[(r[cols], r)] = a[r]``: group rows by key columns (value = whole row).

    >>> ZSet.from_rows([(0, 1, 1), (1, 2, 1)]).index_with([0]).to_dict()
    {(0, 0, 1, 1): 1, (1, 1, 2, 1): 1}
    """

    name = "index_with"
    linear = True
    next_busy = never_busy
    input_kinds = ("zset",)

    def __init__(self, key_columns: list[int]):
        self.key_columns = list(key_columns)

    def output_schema(self, inputs: list[Schema]) -> Schema:
        a = inputs[0].arity
        bad = [c for c in self.key_columns if not 0 <= c < a]
        if bad:
            raise CircuitError(f"index_with{self.key_columns}: column {bad[0]} does not exist in rows of {a}")
        return Schema("indexed", a + len(self.key_columns), len(self.key_columns))

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].index_with(self.key_columns), state


class Inspect(Operator):
    """``inspect(f)(a) = a``, calling ``f(a)`` on the way (debugging; runs even if the step
    later fails, since a side effect cannot be rolled back).

    >>> seen = []
    >>> Inspect(seen.append).eval([ZSet.from_rows([(0, 1)])], None, None)[0].to_dict()
    {(0, 1): 1}
    >>> seen
    [ZSet(arity=2, {(0, 1): 1})]
    """

    name = "inspect"
    next_busy = never_busy

    def __init__(self, callback: Callable[[Any], Any]):
        self.callback = callback

    def check_inputs(self, inputs: list[Schema]) -> None:
        if len(inputs) != 1:
            raise CircuitError(f"inspect expects 1 input, got {len(inputs)}")

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return inputs[0]

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        self.callback(values[0])
        return values[0], state


class _ZOrIndexed(Operator):
    """Accepts Z-sets or indexed Z-sets (all inputs of the same kind and width)."""

    n_inputs = 1
    next_busy = never_busy

    def check_inputs(self, inputs: list[Schema]) -> None:
        if len(inputs) != self.n_inputs or any(s.kind == "trace" for s in inputs):
            raise CircuitError(f"{self.name} expects {self.n_inputs} zset or indexed input(s), got "
                               f"{len(inputs)}: {', '.join(map(str, inputs)) or 'none'}")
        if len(set(inputs)) != 1:
            raise CircuitError(f"{self.name} needs inputs of one type, got {', '.join(map(str, inputs))}")

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return inputs[0]


class Negate(_ZOrIndexed):
    """``negate(a)[r] = -a[r]``.

    >>> (-ZSet.from_dict({(0,): 1, (1,): -1, (2,): -2})).to_dict()
    {(0,): -1, (1,): 1, (2,): 2}
    """

    name = "negate"
    linear = True

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].negate(), state


class Plus(_ZOrIndexed):
    """``plus(a, b)[r] = a[r] + b[r]`` (rows whose weights cancel disappear).

    >>> a = ZSet.from_dict({(0,): 1, (1,): 1, (2,): 2, (3,): 1})
    >>> (a + ZSet.from_dict({(0,): 1, (1,): -1, (2,): 1})).to_dict()
    {(0,): 2, (2,): 3, (3,): 1}
    """

    name = "plus"
    linear = True
    n_inputs = 2

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].plus(values[1]), state


class Minus(_ZOrIndexed):
    """``minus(a, b)[r] = a[r] - b[r]``.

    >>> a = ZSet.from_dict({(0,): 1, (1,): 1, (2,): 2, (3,): 1})
    >>> (a - ZSet.from_dict({(0,): 1, (1,): -1, (2,): 1})).to_dict()
    {(1,): 2, (2,): 1, (3,): 1}
    """

    name = "minus"
    linear = True
    n_inputs = 2

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].minus(values[1]), state


class Consolidate(Operator):
    """``consolidate(trace) = Σ_t trace[t]``: all deltas of a trace as one Z-set.

    >>> from wcoj.trace import Trace
    >>> tr = Trace.from_batches([(0, ZSet.from_dict({(0, 1): 2, (1, 3): 1})), (1, ZSet.from_dict({(1, 3): -1}))])
    >>> Consolidate().eval([tr], None, None)[0].to_dict()
    {(0, 1): 2}
    """

    name = "consolidate"
    input_kinds = ("trace",)

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return Schema("zset", inputs[0].arity)

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].consolidate(), state


class _PerEpoch(_ZOrIndexed):
    """A stateful linear operator whose state is one value of the input's type."""

    next_busy = _busy_while_state

    def init_state(self, inputs: list[Schema], n_dims: int) -> Any:
        return inputs[0].empty(n_dims)

    def reset(self, state: Any, inputs: list[Schema], n_dims: int) -> Any:
        return inputs[0].empty(n_dims)


class Z1(_PerEpoch):
    """``z1(a)[t] = a[t-1]``, ``z1(a)[0] = 0``: the delay (it cannot close a loop; use
    ``Circuit.delay`` for that).

    >>> from wcoj.circuit import Circuit
    >>> c = Circuit(); s = c.source(arity=1, name="s"); _ = c.sink(s.z1(), "z")
    >>> c.step({"s": ZSet.from_rows([(7,)])})["z"].to_dict(), c.step()["z"].to_dict()
    ({}, {(7,): 1})
    """

    name = "z1"

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return state, values[0]


class Integrate(_PerEpoch):
    """``I(a)[t] = Σ_{s<=t} a[s]``, i.e. ``I(a) = a + z1(I(a))``.

    ::

        a ──▶(+)──┬──▶ I(a)
              ▲   │
              └─z1┘

    >>> op, st = Integrate(), ZSet.empty(1)
    >>> out, st = op.eval([ZSet.from_rows([(1,)])], st, None)
    >>> op.eval([ZSet.from_dict({(1,): -1, (2,): 1})], st, None)[0].to_dict()
    {(2,): 1}
    """

    name = "integrate"

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        out = state.plus(values[0])
        return out, out


class Differentiate(_PerEpoch):
    """``D(a)[t] = a[t] - a[t-1]``, i.e. ``D(a) = a - z1(a)``; ``D(I(a)) = a``.

    >>> op, st = Differentiate(), ZSet.empty(1)
    >>> out, st = op.eval([ZSet.from_rows([(1,)])], st, None)
    >>> op.eval([ZSet.from_rows([(1,), (2,)])], st, None)[0].to_dict()
    {(2,): 1}
    """

    name = "differentiate"

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].minus(state), values[0]

