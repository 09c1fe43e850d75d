"""The multi-way WCOJ join as a circuit operator.

``MultiwayJoin`` takes ``k`` delta streams, one per input relation, and outputs the change
of a conjunctive query over them, ``ΔQ``, by the telescoping rule of
``IncrementalGenericJoin``. It is linear in nothing and bilinear in nothing: it is the
n-ary generalisation of DBSP's incremental join,

    Δ(A1 ⋈ ... ⋈ An) = Σ_i A1' ⋈ ... ⋈ ΔAi ⋈ A(i+1) ⋈ ... ⋈ An,

so integrating its output equals the plain join of the integrated inputs at every tick.
Its state is the relations' incremental indexes, which are large and updated in place.
``eval`` opens one tick transaction of the store, stages each input's delta in it and
joins; ``commit`` commits that transaction after the whole step succeeded and
``rollback`` rolls it back otherwise (see the circuit's Atomicity).

``wcoj`` cannot import ``indexes``: the caller passes the store (``indexes.Store`` fits),
an object with ``relation(name, arity)`` and ``transaction()``.

Used at the root of a circuit (a child's per-iteration times would need nested traces).

>>> from indexes import Store                       # doctest only: wcoj never imports indexes
>>> from wcoj.circuit import Circuit
>>> c = Circuit()
>>> e = c.source(arity=2, name="edges")
>>> tri = MultiwayJoin([2], [(0, ("a", "b")), (0, ("a", "c")), (0, ("b", "c"))], ["a", "b", "c"],
...                    store=Store())
>>> _ = c.sink(c.add(tri, e), name="triangles")
>>> c.step({"edges": ZSet.from_rows([(1, 2), (1, 3)])})["triangles"].to_dict()
{}
>>> c.step({"edges": ZSet.from_rows([(2, 3)])})["triangles"].to_dict()
{(1, 2, 3): 1}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wcoj.errors import ArityMismatchError, CircuitError
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
    store : where the input relations live: ``relation(name, arity)`` makes one,
        ``transaction()`` opens a tick (``indexes.Store``).
    filters, orders : passed to ``IncrementalGenericJoin``.
    """

    name = "multiway_join"
    input_kinds = ("zset",)
    variadic = True

    def __init__(self, arities: Sequence[int], atoms: Sequence[tuple[int, tuple]],
                 output: Sequence[str], store: Any,
                 filters: Sequence = (), orders: Sequence[Sequence[str]] | None = None):
        self.arities = list(arities)
        for i, _ in atoms:
            if not 0 <= i < len(self.arities):
                raise CircuitError(f"atom on input {i}, but the join has {len(self.arities)} inputs")
        self.store = store
        self.sources = [store.relation(f"input{i}", a) for i, a in enumerate(self.arities)]
        self.join = IncrementalGenericJoin([(self.sources[i], tuple(t)) for i, t in atoms],
                                           output, orders=orders, filters=filters)
        self.output = list(output)
        self._tx = None  # the open tick transaction between eval and commit/rollback

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
        tx = self.store.transaction()
        tx.__enter__()
        try:
            for src, delta in zip(self.sources, values):
                tx.stage(src, delta)
            out = self.join.delta()
        except BaseException as exc:
            tx.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._tx = tx
        return out, state

    def commit(self, staged: Any) -> None:
        tx, self._tx = self._tx, None
        if tx is not None:
            try:
                tx.commit()
            finally:
                tx.__exit__(None, None, None)

    def rollback(self, staged: Any) -> None:
        tx, self._tx = self._tx, None
        if tx is not None:
            tx.__exit__(None, None, None)  # not committed: rolls back

    def result(self) -> ZSet:
        """The integrated result (``Q`` over the committed inputs), recomputed."""
        return self.join.batch()
