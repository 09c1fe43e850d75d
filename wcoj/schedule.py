"""A circuit's schedule: which nodes each part of a tick visits, worked out once per wiring.

Every evaluation (a root tick, or one iteration of a child) walks the nodes in topological
order; the fixed-point loop then latches the delays, asks the operators whether they are
pending and when they are next busy, and at the end of an epoch advances and resets their
state. Most operators take no part in most of these: a map keeps no state, a trace
append is never busy on its own, and only operators with mutable state need their staged
state journalled for ``commit``/``rollback``. An iteration of a small recursive update
does little work per operator, so the interpreter's own cost per node counted (about a
third of a one-datom update of a recursive view, before this). ``Schedule`` lists, per
part, the nodes it must visit, with what each needs (its global id, its inputs as a
tuple), so that the loops of ``wcoj.circuit`` test no node kinds and call no operator
that would answer the default.

Relies on ``wcoj.protocol`` (the ``Operator`` defaults it compares against). Used by
``wcoj.circuit``.
"""

from __future__ import annotations

from typing import Any

from wcoj.protocol import Operator, never_busy

__all__ = ["Schedule", "GIVEN", "OPERATOR", "FEEDBACK", "FORWARD", "CHILD", "EXPORT"]

GIVEN, OPERATOR, FEEDBACK, FORWARD, CHILD, EXPORT = range(6)
_KINDS = {"source": GIVEN, "import": GIVEN, "operator": OPERATOR, "feedback": FEEDBACK,
          "forward": FORWARD, "child": CHILD, "export": EXPORT}


def _overrides(op: Operator, name: str) -> bool:
    return getattr(type(op), name) is not getattr(Operator, name)


class Schedule:
    """The parts of one circuit's evaluation, as lists of what each visits.

    - ``steps``: per node in topological order (sinks left out), ``(id, kind code,
      node, inputs, operator, global id, journal)``; ``journal`` is True for operators
      whose ``commit`` or ``rollback`` does something;
    - ``feedback``: ``(id, input, is a trace, schema)`` per delay;
    - ``pending``: ``(id, operator)`` for operators that override ``pending``;
    - ``busy``: ``(id, operator, inputs, global id)`` for operators whose ``next_busy``
      is not ``never_busy``; ``has_child``: a nested child counts as busy next iteration;
    - ``clock``: ``(id, operator, input schemas)`` for operators that override ``advance``
      or ``reset``;
    - ``imports``: ``(id, parent node, mode)`` per import of a child;
    - ``program``: a child's compiled epoch (``wcoj.epoch``), None when it has none, made
      on first use (False until then).
    """

    __slots__ = ("steps", "feedback", "pending", "busy", "has_child", "clock", "imports", "root", "program")

    def __init__(self, circuit: Any, order: list[int]):
        nodes, path = circuit.nodes, circuit.path()
        self.root = circuit._root()
        self.steps: list[tuple] = []
        for j in order:
            n = nodes[j]
            code = _KINDS.get(n.kind)
            if code is None:  # a sink: read from its input's value after the step
                continue
            op = n.op
            journal = op is not None and (_overrides(op, "commit") or _overrides(op, "rollback"))
            self.steps.append((j, code, n, tuple(n.inputs), op, path + (j,), journal))
        ops = [(j, n) for j, n in enumerate(nodes) if n.kind == "operator"]
        self.feedback = [(j, n.inputs[0], n.schema.kind == "trace", n.schema)
                         for j, n in enumerate(nodes) if n.kind == "feedback"]
        self.pending = [(j, n.op) for j, n in ops if _overrides(n.op, "pending")]
        self.busy = [(j, n.op, tuple(n.inputs), path + (j,)) for j, n in ops
                     if getattr(type(n.op), "next_busy") is not never_busy]
        self.has_child = any(n.kind == "child" for n in nodes)
        self.clock = [(j, n.op, [nodes[i].schema for i in n.inputs]) for j, n in ops
                      if _overrides(n.op, "advance") or _overrides(n.op, "reset")]
        self.imports = [(j, int(n.name), n.mode) for j, n in enumerate(nodes) if n.kind == "import"]
        self.program: Any = False
