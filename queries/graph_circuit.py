"""A graph's pattern views as streams of one DBSP circuit, composed with further operators.

``Graph.circuit()`` gives a ``GraphCircuit``: a ``wcoj.circuit.Circuit`` whose sources are
the changes of the graph's views, one Z-set per tick, so a pattern view feeds any operator
of the runtime (``filter``, ``map``, ``distinct``, ``aggregate``, ``join`` with another
view or stream, ``integrate``) in the same circuit that Datalog queries compile to. The
pattern's own join is the multi-way join the graph runs for every tick (the change-by-change
kernel or the staged route, ``queries.graph``); the circuit receives its output.

Every ``Graph.apply`` steps each circuit with the tick's view changes;
``GraphCircuit.outputs`` holds the sinks of the last step and ``Tick.outputs`` those of the
tick. The first step (before the graph's next tick) carries each view's whole current
result, so an integrated output always equals the operators applied to the views' current
results. A step that raises (an operator's own error) undoes the graph's tick too: the tick
is all or nothing, circuits included. ``stream``/``apply_stream`` refuse to run while a
circuit is attached (their ticks run many to a kernel call; apply tick by tick instead).

>>> from queries.graph import Graph
>>> import numpy as np
>>> g = Graph()
>>> _ = g.view("triangle")
>>> c = g.circuit()
>>> with_1 = c.view("triangle").filter(lambda k: (k == 1).any(axis=1))
>>> _ = c.sink(with_1, "triangles with node 1")
>>> _ = c.sink(with_1.integrate(), "all of them")
>>> tick = g.apply(inserts=np.array([[1, 2], [2, 3], [1, 3], [3, 4], [2, 4]]))
>>> tick.outputs["triangles with node 1"].to_dict()
{(1, 2, 3): 1}
>>> tick = g.apply(inserts=np.array([[1, 4]]))
>>> tick.outputs["triangles with node 1"].to_dict(), len(c.outputs["all of them"])
({(1, 2, 4): 1, (1, 3, 4): 1}, 3)

Relies on ``wcoj.circuit``; used by ``queries.graph``.
"""

from __future__ import annotations

from typing import Any


from wcoj.interrupts import deferred_interrupts
from wcoj.circuit import Circuit
from wcoj.errors import QueryError
from wcoj.stream import Stream
from wcoj.zset import ZSet

__all__ = ["GraphCircuit", "apply_with_circuits"]


class GraphCircuit:
    """A circuit over a graph's views (see the module docstring)."""

    def __init__(self, graph: Any):
        self.graph = graph
        self.circuit = Circuit()
        self._sources: dict[str, Stream] = {}
        self.outputs: dict[str, ZSet] = {}
        self._started = False

    def __repr__(self) -> str:
        return f"GraphCircuit(views={list(self._sources)}, sinks={list(self.outputs)})"

    def view(self, name: str) -> Stream:
        """The stream of changes of the graph's view ``name`` (registered already)."""
        if name not in self.graph.views:
            raise QueryError(f"the graph has no view {name!r}; views: "
                             f"{', '.join(self.graph.views) or 'none'}")
        if self._started:
            raise QueryError("add views to a graph circuit before its first tick")
        if name not in self._sources:
            arity = len(self.graph.views[name].columns)
            self._sources[name] = self.circuit.source(arity, name=name)
        return self._sources[name]

    def sink(self, stream: Stream, name: str) -> Stream:
        """Name an output: ``Tick.outputs[name]`` and ``outputs[name]`` after each tick."""
        return self.circuit.sink(stream, name)

    def start(self) -> None:
        """The first step, if not taken yet: each view's whole result (the graph calls
        it before its next tick)."""
        if not self._started:
            self.outputs = self.circuit.step({n: self.graph.views[n].result()
                                              for n in self._sources})
            self._started = True

    def step(self, changes: dict[str, ZSet]) -> dict[str, ZSet]:
        """One step with a tick's view changes (the graph calls it); atomic."""
        self.outputs = self.circuit.step({n: changes[n] for n in self._sources
                                          if n in changes})
        return self.outputs


def apply_with_circuits(graph: Any, inserts: Any, deletes: Any) -> Any:
    """``graph.apply`` with circuits attached: a tick, then every circuit's step; if a
    step raises, the inverse tick undoes the graph's (and every circuit is left as before
    it). The caller holds the graph's lock."""
    for c in graph._circuits:
        c.start()
    last = {n: v.last_change for n, v in graph.views.items()}
    with deferred_interrupts():
        tick = graph._apply(inserts, deletes)
        if graph._log is not None:
            graph._logged(tick.edge_delta)
    saved = [(c, c.circuit._state, c.circuit.time, c.outputs) for c in graph._circuits]
    try:
        for c in graph._circuits:
            tick.outputs.update(c.step(tick.changes))
    except BaseException:
        d = tick.edge_delta
        with deferred_interrupts():
            graph._apply(d.keys[d.weights < 0], d.keys[d.weights > 0])
            if graph._log is not None:
                graph._logged(-d)
        graph.n_ticks -= 2
        for n, v in graph.views.items():
            v.last_change = last[n]
        for c, state, t, outputs in saved:
            c.circuit._state, c.circuit.time, c.outputs = state, t, outputs
        raise
    return tick
