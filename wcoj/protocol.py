"""The operator protocol: stream schemas, the evaluation context and the ``Operator`` base.

Every node of a circuit carries a value of one ``Schema`` per tick: a ``ZSet``, an
``IndexedZSet`` or a ``Trace``. An ``Operator`` declares the kinds of its inputs, computes
its output schema when it is wired, and evaluates purely: ``eval(values, state, ctx)``
returns the output and the *new* state, so the runtime can stage every state change of a
step and commit it only when the whole step succeeded.

**Adding an operator** (e.g. a ``MultiwayJoin`` over k delta streams). Subclass
``Operator`` and set:

- ``name`` and ``input_kinds`` (a tuple of ``"zset"``, ``"indexed"``, ``"trace"``; set
  ``variadic = True`` to accept any number >= 1 of the first kind);
- ``output_schema(inputs)``: return the output ``Schema`` from the input schemas, or raise
  ``CircuitError`` (wrong arity, key width ...); it runs when the node is wired;
- ``init_state(inputs, n_dims)``: the state before the first tick (default ``None``);
- ``eval(values, state, ctx) -> (output, new_state)``: pure: never mutate ``state`` in
  place; return a new value (copy-on-write, or persistent structures such as ``Trace``).
  ``ctx.time`` is the current time, ``ctx.n_dims`` its depth;
- optional clock hooks: ``advance(state, frontier)`` after every tick (root) or epoch
  (child), to compact traces; ``reset(state)`` at the end of each epoch inside a child, for
  state that lives for one epoch (``z1``, ``integrate``); ``next_busy(values, state,
  ctx)``: the next iteration at which the operator may fire although every delta input
  stays empty (``None`` for never; the default, "the next one", is always safe);
  ``pending(state, ctx)``: True to keep the loop going;
- optional ``commit(staged)`` / ``rollback(staged)`` for mutable state (the Atomicity
  paragraph of ``wcoj.circuit``).

Then ``circuit.add(MyOp(...), *streams)`` wires it. A ``MultiwayJoin`` would declare
``input_kinds=("zset",)``, ``variadic=True``, keep its incremental indexes in its state and
return them, updated, from ``eval``.

Relies on ``wcoj.zset``, ``wcoj.indexed`` and ``wcoj.trace``. Used by ``wcoj.circuit``,
``wcoj.schedule`` and every operator (``wcoj.operators``, ``wcoj.multiway``).

>>> Schema("indexed", 3, 1).empty()
IndexedZSet(n_key=1, arity=3, {})
>>> schema_of(ZSet.from_rows([(1, 2)]))
Schema(kind='zset', arity=2, n_key=None)
"""

from __future__ import annotations

from typing import Any, NamedTuple

from wcoj.errors import CircuitError, InputError
from wcoj.indexed import IndexedZSet
from wcoj.time import Time, as_row
from wcoj.trace import Trace
from wcoj.zset import ZSet

__all__ = ["KINDS", "Schema", "schema_of", "Context", "Operator", "never_busy"]

KINDS = ("zset", "indexed", "trace")


class Schema(NamedTuple):
    """The type of a stream: ``kind`` (zset, indexed, trace), ``arity`` and ``n_key``.

    ``n_key`` is None for a plain Z-set; for an indexed Z-set or a trace it is the number
    of leading key columns (a trace of plain Z-sets is keyed by the whole row).
    """

    kind: str
    arity: int
    n_key: int | None = None

    def empty(self, n_dims: int = 1) -> Any:
        """The zero value of this type."""
        if self.kind == "zset":
            return ZSet.empty(self.arity)
        if self.kind == "indexed":
            return IndexedZSet.empty(self.n_key, self.arity - self.n_key)
        return Trace(self.arity, self.n_key, n_dims)

    def __str__(self) -> str:
        key = "" if self.n_key is None else f", key {self.n_key}"
        return f"{self.kind}(arity {self.arity}{key})"


def schema_of(value: Any) -> Schema:
    """The schema of a runtime value."""
    if isinstance(value, IndexedZSet):
        return Schema("indexed", value.zset.arity, value.n_key)
    if isinstance(value, ZSet):
        return Schema("zset", value.arity)
    if isinstance(value, Trace):
        return Schema("trace", value.arity, value.n_key)
    raise InputError(f"streams carry ZSet, IndexedZSet or Trace values, got {type(value).__name__}")


class Context(NamedTuple):
    """What an operator may know about the current evaluation (a named tuple: the runtime
    makes one per operator call, which costs half of a frozen dataclass's)."""

    time: Time
    n_dims: int
    node: tuple[int, ...]
    # False in a tick that keeps no state (``Circuit.step(keep=False)``, ``q``'s one tick):
    # what only later ticks or epochs would read need not be kept
    keep: bool = True


def never_busy(self: Operator, values: list[Any], state: Any, ctx: Context) -> int | None:
    """``next_busy`` of an operator that outputs nothing and keeps no state while its delta
    inputs are empty (stateless maps, trace appends, ...): the fixed-point loop need not
    ask it (``wcoj.schedule``)."""
    return None


class Operator:
    """Base class of every operator node: n inputs of declared kinds, one output.

    See the module docstring for how to add one.
    """

    name = "operator"
    input_kinds: tuple[str, ...] = ()
    variadic = False
    # Stateless and zero in, zero out (``map``, ``plus``, ...): the runtime skips the call
    # when every input is empty, which most inputs of a small change are.
    linear = False

    def output_schema(self, inputs: list[Schema]) -> Schema:
        raise NotImplementedError

    def init_state(self, inputs: list[Schema], n_dims: int) -> Any:
        return None

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        raise NotImplementedError

    def advance(self, state: Any, frontier: Time) -> Any:
        return state

    def reset(self, state: Any, inputs: list[Schema], n_dims: int) -> Any:
        return state

    def pending(self, state: Any, ctx: Context) -> bool:
        return False

    def next_busy(self, values: list[Any], state: Any, ctx: Context) -> int | None:
        """In a child, after the iteration at ``ctx.time``: the earliest later iteration at
        which this node may output something or change its state if every delta input
        stays empty from now on; ``None`` for never. The fixed-point loop skips the idle
        iterations in between. Default: the next one (nothing is skipped)."""
        return as_row(ctx.time)[-1] + 1

    def commit(self, staged: Any) -> None:
        """The step that produced ``staged`` (this node's last state) succeeded."""

    def rollback(self, staged: Any) -> None:
        """The step that produced ``staged`` failed; its state is not committed."""

    def check_inputs(self, inputs: list[Schema]) -> None:
        """Raise ``CircuitError`` unless ``inputs`` match ``input_kinds``."""
        kinds = [s.kind for s in inputs]
        if self.variadic:
            ok = len(kinds) >= 1 and all(k == self.input_kinds[0] for k in kinds)
            want = f"one or more {self.input_kinds[0]} streams"
        else:
            ok = tuple(kinds) == self.input_kinds
            want = f"{len(self.input_kinds)} input{'s' if len(self.input_kinds) != 1 else ''} ({', '.join(self.input_kinds)})"
        if not ok:
            got = ", ".join(map(str, inputs)) or "none"
            raise CircuitError(f"{self.name} expects {want}, got {len(inputs)}: {got}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
