"""Stream handles: a node's output within one circuit, and the operator-method API.

``Stream`` is what the builder returns for every node; ``s.map(fn)``, ``s.join(t)`` ... add
an operator node to ``s.circuit`` and return its stream. ``Feedback`` (a ``z^-1`` delay)
and ``Forward`` (a placeholder) are streams whose input is connected later, which is how
loops are closed; ``Circuit`` checks every connection.

Relies on nothing at import time (operators are imported when a method is called, to
keep ``wcoj.operators`` above ``wcoj.circuit``). Used by ``wcoj.circuit`` and its users.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wcoj.circuit import Circuit
    from wcoj.protocol import Operator, Schema

__all__ = ["Stream", "Feedback", "Forward"]


class Stream:
    """A handle on one node's output within one circuit; carries the operator-method API.

    ``s.map(fn)``, ``s.filter(pred)``, ``s.index_with(cols)``, ``s.join(t)`` ... each adds an
    operator node and returns its stream (see ``wcoj.operators`` for the full list).
    """

    __slots__ = ("circuit", "node_id")

    def __init__(self, circuit: Circuit, node_id: int):
        self.circuit, self.node_id = circuit, node_id

    @property
    def schema(self) -> Schema:
        return self.circuit.nodes[self.node_id].schema

    @property
    def global_id(self) -> tuple[int, ...]:
        return self.circuit.global_id(self.node_id)

    def __repr__(self) -> str:
        return f"Stream({'/'.join(map(str, self.global_id))}, {self.schema})"

    def _add(self, op: Operator, *others: Stream) -> Stream:
        return self.circuit.add(op, self, *others)

    # The operator-method API, one line each; the operators live in wcoj.operators.
    def map(self, fn: Callable, arity: int | None = None, rowwise: bool = False) -> Stream:
        from wcoj.operators import Map
        return self._add(Map(fn, arity, rowwise))

    def filter(self, predicate: Callable, rowwise: bool = False) -> Stream:
        from wcoj.operators import Filter
        return self._add(Filter(predicate, rowwise))

    def index_with(self, key_columns: list[int]) -> Stream:
        """This stream indexed by ``key_columns``: the node that already does it when there
        is one (two rules joining one relation on one column read one index, and
        ``integrate_trace`` keeps one trace of it)."""
        from wcoj.operators import IndexWith
        cols = list(key_columns)
        for n in self.circuit.nodes:
            if isinstance(n.op, IndexWith) and n.inputs == [self.node_id] and n.op.key_columns == cols:
                self.circuit._check_building()
                return Stream(self.circuit, n.local_id)
        return self._add(IndexWith(cols))

    def inspect(self, callback: Callable[[Any], Any]) -> Stream:
        from wcoj.operators import Inspect
        return self._add(Inspect(callback))

    def negate(self) -> Stream:
        from wcoj.operators import Negate
        return self._add(Negate())

    def plus(self, other: Stream) -> Stream:
        from wcoj.operators import Plus
        return self._add(Plus(), other)

    def minus(self, other: Stream) -> Stream:
        from wcoj.operators import Minus
        return self._add(Minus(), other)

    def distinct(self) -> Stream:
        from wcoj.operators import Distinct
        return self._add(Distinct())

    def integrate(self) -> Stream:
        from wcoj.operators import Integrate
        return self._add(Integrate())

    def differentiate(self) -> Stream:
        from wcoj.operators import Differentiate
        return self._add(Differentiate())

    def z1(self) -> Stream:
        from wcoj.operators import Z1
        return self._add(Z1())

    def join(self, other: Stream, fn: Callable | None = None, arity: int | None = None) -> Stream:
        """Incremental join of two indexed delta streams (``wcoj.operators.incremental_join``)."""
        from wcoj.operators import incremental_join
        return incremental_join(self, other, fn, arity)

    def aggregate(self, kind: str, column: int = 0) -> Stream:
        from wcoj.operators import Aggregate
        return self._add(Aggregate(kind, column))

    __add__, __sub__, __neg__ = plus, minus, negate


class Feedback(Stream):
    """The output of a ``z^-1`` node whose input is connected later (closing a loop).

    At tick t it emits what its input carried at tick t-1 (the zero value at the first
    tick; inside a child, at the first iteration of every epoch for Z-set delays, while a
    trace delay keeps its trace across epochs as ``z1_trace`` does).
    """

    __slots__ = ()

    def connect(self, source: Stream) -> None:
        """Make ``source`` this delay's input (once)."""
        self.circuit._connect_feedback(self.node_id, source)


class Forward(Stream):
    """A stream whose producer is wired later; a cycle through it needs a delay."""

    __slots__ = ()

    def connect(self, source: Stream) -> None:
        self.circuit._connect_forward(self.node_id, source)
