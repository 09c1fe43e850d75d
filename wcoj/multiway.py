"""The multi-way WCOJ join as a circuit operator.

``MultiwayJoin`` takes ``k`` delta streams, one per input relation, and outputs the change
of a conjunctive query over them, ``ΔQ``, by the telescoping rule of
``IncrementalGenericJoin``. It is linear in nothing and bilinear in nothing: it is the
n-ary generalisation of DBSP's incremental join,

    Δ(A1 ⋈ ... ⋈ An) = Σ_i A1' ⋈ ... ⋈ ΔAi ⋈ A(i+1) ⋈ ... ⋈ An,

so integrating its output equals the plain join of the integrated inputs at every tick.
Its state is the relations' incremental indexes, which are large and updated in place;
``eval`` stages each input's delta, ``commit`` appends the staged runs after the whole
step succeeded and ``rollback`` forgets them otherwise (see the circuit's Atomicity).

``wcoj`` cannot import ``indexes``: the relations are built by the ``make_source``
callable the caller passes (``indexes.Relation`` fits: ``make_source=Relation``).

Used at the root of a circuit (a child's per-iteration times would need nested traces).

>>> from indexes import Relation                    # doctest only: wcoj never imports indexes
>>> from wcoj.circuit import Circuit
>>> c = Circuit()
>>> e = c.source(arity=2, name="edges")
>>> tri = MultiwayJoin([2], [(0, ("a", "b")), (0, ("a", "c")), (0, ("b", "c"))], ["a", "b", "c"],
...                    make_source=Relation)
>>> _ = c.sink(c.add(tri, e), name="triangles")
>>> c.step({"edges": ZSet.from_rows([(1, 2), (1, 3)])})["triangles"].to_dict()
{}
>>> c.step({"edges": ZSet.from_rows([(2, 3)])})["triangles"].to_dict()
{(1, 2, 3): 1}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wcoj.errors import ArityMismatchError, CircuitError
from wcoj.extenders import IncrementalSource
from wcoj.generic_join import IncrementalGenericJoin
from wcoj.protocol import Context, Operator, Schema
from wcoj.zset import ZSet

__all__ = ["MultiwayJoin"]


class MultiwayJoin(Operator):
    """ΔQ of a conjunctive query over ``len(arities)`` input delta streams.

    Parameters
    ----------
    arities : the arity of each input relation, in input order.
    atoms : ``(input index, terms)`` pairs; terms are variable names or int constants.
    output : the result's variables.
    make_source : ``(name, arity) -> IncrementalSource`` with ``stage``, ``commit`` and
        ``rollback`` (``indexes.Relation``).
    filters, orders : passed to ``IncrementalGenericJoin``.
    """

    name = "multiway_join"
    input_kinds = ("zset",)
    variadic = True

    def __init__(self, arities: Sequence[int], atoms: Sequence[tuple[int, tuple]],
                 output: Sequence[str], make_source: Callable[[str, int], IncrementalSource],
                 filters: Sequence = (), orders: Sequence[Sequence[str]] | None = None):
        self.arities = list(arities)
        for i, _ in atoms:
            if not 0 <= i < len(self.arities):
                raise CircuitError(f"atom on input {i}, but the join has {len(self.arities)} inputs")
        self.sources = [make_source(f"input{i}", a) for i, a in enumerate(self.arities)]
        self.join = IncrementalGenericJoin([(self.sources[i], tuple(t)) for i, t in atoms],
                                           output, orders=orders, filters=filters)
        self.output = list(output)

    def __repr__(self) -> str:
        return f"MultiwayJoin(inputs={self.arities}, output={self.output})"

    def output_schema(self, inputs: list[Schema]) -> Schema:
        if len(inputs) != len(self.arities):
            raise CircuitError(f"{self.name} expects {len(self.arities)} input streams, got {len(inputs)}")
        for i, (s, a) in enumerate(zip(inputs, self.arities)):
            if s.arity != a:
                raise ArityMismatchError(f"{self.name} input {i}", a, s.arity)
        return Schema("zset", len(self.output))

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[ZSet, Any]:
        if isinstance(ctx.time, tuple):
            raise CircuitError(f"{self.name} runs at the root of a circuit, not inside a child")
        try:
            for src, delta in zip(self.sources, values):
                src.stage(delta)
            out = self.join.delta()
        except BaseException:
            self.rollback(state)
            raise
        return out, state

    def commit(self, staged: Any) -> None:
        for src in self.sources:
            src.commit()

    def rollback(self, staged: Any) -> None:
        for src in self.sources:
            src.rollback()

    def result(self) -> ZSet:
        """The integrated result (``Q`` over the committed inputs), recomputed."""
        return self.join.batch()
