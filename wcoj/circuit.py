"""The DBSP circuit runtime: nodes, streams, clocks, nested circuits and fixed points.

A ``Circuit`` is a graph of nodes evaluated in topological order once per clock tick; a
``Stream`` is a handle on a node's output, whose value at the current tick is a ``ZSet``,
an ``IndexedZSet`` or a ``Trace`` (its ``Schema`` says which, and its arity). Node kinds
(Dialog dataflow spec §2.8): source, operator, sink, feedback (a ``z^-1`` delay, the
only way to close a loop), child (a nested circuit run to a fixed point every parent
tick), import (a parent stream inside a child) and export (a child result in the parent).

Times: the root counts ticks ``0, 1, 2, ...``; a child refines the parent's time with its
iteration, ``(epoch, iteration)`` (``wcoj.time``). Node ids: ``local_id`` is the index of a
node within its circuit, ``global_id`` the path of local ids from the root.

::

    parent tick t:   edges ──import(δ0)──▶ ┌──────── child, times (t, i) ────────┐
                                           │  seed ─▶(+)─▶ distinct_trace ─┬──▶ │──export(Σ_i)──▶
                                           │          ▲                    │    │
                                           │          └── join ◀── z^-1 ◀──┘    │
                                           └─────────────────────────────────────┘

**Fixed points.** A child with ``fixedpoint="empty"`` (the delta form of incremental
recursion) iterates while a delay carries a non-empty value. Once all are empty it may
still have work: the nested rules (``distinct_trace``, the nested join, ``aggregate``)
fire at an iteration where an earlier epoch changed a key that this epoch touched. So
the loop asks every operator for ``next_busy`` and jumps to the soonest, skipping idle
iterations, and never stops before the depth of the deepest earlier epoch unless every
operator answers ``None``. ``fixedpoint="unchanged"`` stops when no delay's value changed.

Wiring is checked when a node is added: the number and kinds of its inputs (via the
operator's ``output_schema``), that its inputs belong to the same circuit, and that no
cycle avoids a delay (``CircuitError`` names the nodes on the cycle).

**Atomicity.** Every stateful node keeps its state as an immutable value (traces are
persistent, Z-sets are read-only). ``step`` evaluates into a staged copy of the state
dictionary and replaces the committed one only when the whole step (every iteration of
every child) succeeded; when any node raises (e.g. ``WeightOverflowError``) the staged copy
is dropped, so all traces, delays and integrals are exactly as before the step. Operators
whose state is mutable (big in-place indexes) get two more hooks: ``eval`` returns a
*staged* state (e.g. the pending changes), then ``commit(staged)`` runs once after the
step succeeded and ``rollback(staged)`` if it failed.

**Adding an operator**: subclass ``Operator`` (``wcoj.protocol``, re-exported here; its
docstring says what to set), then ``circuit.add(MyOp(...), *streams)`` wires it.

**Compiled epochs.** A depth-1 child made only of nodes that ``wcoj.epoch`` knows (the
nodes a positive recursive rule compiles to) runs each epoch of a kept step as one kernel
call, through the same lattice kernels; the loop below is the route for every other child.

Relies on ``wcoj.protocol`` (schemas, the ``Operator`` base), ``wcoj.schedule`` (what each
part of a step visits), ``wcoj.zset`` and ``wcoj.time``. Used by the operators
(``wcoj.operators``), the recursion (``wcoj.recursion``) and the query compiler.

>>> from wcoj.zset import ZSet
>>> c = Circuit()
>>> edges = c.source(arity=2, name="edges")
>>> out = c.sink(edges.filter(lambda k: k[:, 0] < k[:, 1]).integrate(), name="up")
>>> c.step({"edges": ZSet.from_rows([(1, 2), (3, 1)])})["up"].to_dict()
{(1, 2): 1}
>>> c.step({"edges": ZSet.from_rows([(2, 5)])})["up"].to_dict()
{(1, 2): 1, (2, 5): 1}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from wcoj import config
from wcoj.errors import ArityMismatchError, CircuitError
from wcoj.protocol import KINDS, Context, Operator, Schema, schema_of
from wcoj.schedule import CHILD, EXPORT, FEEDBACK, FORWARD, GIVEN, OPERATOR, Schedule
from wcoj.stream import Feedback, Forward, Stream
from wcoj.time import Time, extend
from wcoj.zset import ZSet

__all__ = ["Circuit", "Stream", "Feedback", "Forward", "Schema", "Context", "Operator", "KINDS"]

DEFAULT_MAX_ITERATIONS = 10_000


class _Node:
    __slots__ = ("kind", "local_id", "inputs", "schema", "op", "name", "mode", "child")

    def __init__(self, kind: str, local_id: int, inputs: list[int], schema: Schema | None,
                 op: Operator | None = None, name: str | None = None, mode: str | None = None,
                 child: Circuit | None = None):
        self.kind, self.local_id, self.inputs, self.schema = kind, local_id, inputs, schema
        self.op, self.name, self.mode, self.child = op, name, mode, child

    def label(self, path: tuple[int, ...]) -> str:
        what = self.op.name if self.op is not None else self.kind + (f" {self.name}" if self.name and self.kind in ("source", "sink") else "")
        return f"{what} {'/'.join(map(str, path + (self.local_id,)))}"


class Circuit:
    """A circuit (root when ``parent`` is None, else a child made by ``parent.child()``).

    Parameters
    ----------
    max_iterations : int
        For a child: the iteration cap of one epoch's fixed point (``CircuitError`` past it).
    fixedpoint : {"empty", "unchanged"}
        For a child: stop when every Z-set delay's next value is empty (the delta form used
        by incremental recursion) or equal to its previous one.
    """

    def __init__(self, *, max_iterations: int = DEFAULT_MAX_ITERATIONS, fixedpoint: str = "empty",
                 _parent: Circuit | None = None, _local_id: int | None = None):
        if fixedpoint not in ("empty", "unchanged"):
            raise CircuitError(f"fixedpoint must be 'empty' or 'unchanged', got {fixedpoint!r}")
        self.nodes: list[_Node] = []
        self.parent, self.local_id = _parent, _local_id
        self._path: tuple[int, ...] | None = None
        self.max_iterations, self.fixedpoint = int(max_iterations), fixedpoint
        self.n_dims = 1 if _parent is None else _parent.n_dims + 1
        self._sources: dict[str, int] = {}
        self._sinks: dict[str, int] = {}
        self._exports: list[tuple[int, str]] = []  # (child node id, mode)
        self._order: list[int] | None = None
        self._sched: Schedule | None = None  # made from _order (wcoj.schedule)
        self._state: dict[int, Any] | None = None
        self._journal: dict[tuple[int, ...], tuple[Operator, Any]] = {}  # this step's staged states
        self._keep = True  # root: whether this step's state is kept (step's keep)
        self.closed = False
        self.time = 0  # root: the next tick

    # ---------------------------------------------------------------- ids
    def path(self) -> tuple[int, ...]:
        """Global id of this circuit (empty for the root)."""
        if self.parent is None:
            return ()
        if self._path is None:  # a circuit never moves: compute it once
            self._path = self.parent.path() + (self.local_id,)
        return self._path

    def global_id(self, local_id: int) -> tuple[int, ...]:
        """The path of local ids from the root to node ``local_id``."""
        return self.path() + (local_id,)

    def _root(self) -> Circuit:
        return self if self.parent is None else self.parent._root()

    # ---------------------------------------------------------------- building
    def _check_building(self) -> None:
        root = self._root()
        if root.closed:
            raise CircuitError("the circuit is closed; build a new one")
        if root._state is not None:
            raise CircuitError("the circuit has already run; add nodes before the first step")

    def _new(self, node: _Node) -> Stream:
        self._check_building()
        self.nodes.append(node)
        self._invalidate()
        return Stream(self, node.local_id)

    def _invalidate(self) -> None:
        c: Circuit | None = self
        while c is not None:
            c._order = c._sched = None
            c = c.parent

    def _own(self, s: Stream, what: str) -> int:
        if not isinstance(s, Stream):
            raise CircuitError(f"{what}: expected a Stream, got {type(s).__name__}")
        if s.circuit is not self:
            raise CircuitError(
                f"{what}: stream {'/'.join(map(str, s.global_id))} belongs to another circuit"
                + ("; bring a parent stream into a child with child.import_()" if self.parent is not None else ""))
        return s.node_id

    def source(self, arity: int, kind: str = "zset", n_key: int | None = None, name: str | None = None) -> Stream:
        """An input stream; ``step`` takes its value per tick (zero when not given)."""
        if self.parent is not None:
            raise CircuitError("a child circuit has no sources; use child.import_(parent_stream)")
        if kind not in ("zset", "indexed"):
            raise CircuitError(f"a source carries zset or indexed values, not {kind!r}")
        if kind == "indexed" and n_key is None:
            raise CircuitError("an indexed source needs n_key")
        name = name or f"in{len(self._sources)}"
        if name in self._sources:
            raise CircuitError(f"a source named {name!r} already exists")
        s = self._new(_Node("source", len(self.nodes), [], Schema(kind, int(arity), n_key), name=name))
        self._sources[name] = s.node_id
        return s

    def add(self, op: Operator, *inputs: Stream) -> Stream:
        """Add an operator node fed by ``inputs``; its schema is checked now."""
        ids = [self._own(s, op.name) for s in inputs]
        schemas = [self.nodes[i].schema for i in ids]
        op.check_inputs(schemas)
        try:
            out = op.output_schema(schemas)
        except ArityMismatchError as e:
            raise CircuitError(f"{op.name}: {e}") from e
        return self._new(_Node("operator", len(self.nodes), ids, out, op=op))

    def sink(self, stream: Stream, name: str | None = None) -> str:
        """Record ``stream``'s value; ``step`` returns it under ``name``."""
        if self.parent is not None:
            raise CircuitError("a child circuit has no sinks; export the stream to the parent")
        i = self._own(stream, "sink")
        name = name or f"out{len(self._sinks)}"
        if name in self._sinks:
            raise CircuitError(f"a sink named {name!r} already exists")
        self._new(_Node("sink", len(self.nodes), [i], None, name=name))
        self._sinks[name] = i
        return name

    def delay(self, arity: int, kind: str = "zset", n_key: int | None = None) -> Feedback:
        """A ``z^-1`` node to close a loop: ``fb = c.delay(2); ...; fb.connect(s)``."""
        if kind not in KINDS:
            raise CircuitError(f"unknown stream kind {kind!r}; one of {KINDS}")
        s = self._new(_Node("feedback", len(self.nodes), [], Schema(kind, int(arity), n_key)))
        return Feedback(self, s.node_id)

    def delay_trace(self, arity: int, n_key: int | None = None) -> Feedback:
        """A ``z1_trace`` node: the trace as it was at the previous tick (or iteration)."""
        return self.delay(arity, "trace", arity if n_key is None else n_key)

    def forward(self, schema: Schema) -> Forward:
        """A placeholder stream connected later with ``connect`` (no delay implied)."""
        s = self._new(_Node("forward", len(self.nodes), [], schema))
        return Forward(self, s.node_id)

    def _connect_feedback(self, node_id: int, source: Stream) -> None:
        self._check_building()
        node = self.nodes[node_id]
        i = self._own(source, "feedback")
        if node.inputs:
            raise CircuitError(f"{node.label(self.path())} is already connected")
        got = self.nodes[i].schema
        if got != node.schema:
            raise CircuitError(f"{node.label(self.path())} carries {node.schema}, cannot connect {got}")
        node.inputs = [i]
        self._invalidate()

    def _connect_forward(self, node_id: int, source: Stream) -> None:
        self._check_building()
        node = self.nodes[node_id]
        i = self._own(source, "forward")
        if node.inputs:
            raise CircuitError(f"{node.label(self.path())} is already connected")
        if self.nodes[i].schema != node.schema:
            raise CircuitError(f"{node.label(self.path())} carries {node.schema}, cannot connect {self.nodes[i].schema}")
        cycle = self._path_between(i, node_id)
        if cycle is not None:
            names = " -> ".join(self.nodes[j].label(self.path()) for j in cycle + [cycle[0]])
            raise CircuitError(f"cycle without a delay: {names}; put a c.delay() on it")
        node.inputs = [i]
        self._invalidate()

    def _deps(self, j: int) -> list[int]:
        node = self.nodes[j]
        return [] if node.kind == "feedback" else node.inputs

    def _path_between(self, start: int, target: int) -> list[int] | None:
        """A dependency path target <- ... <- start, i.e. start depends on target, or None."""
        stack, seen, parent = [start], {start}, {start: None}
        while stack:
            j = stack.pop()
            if j == target:  # the nodes from target back to start, along dependencies
                path = [j]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return path
            for k in self._deps(j):
                if k not in seen:
                    seen.add(k)
                    parent[k] = j
                    stack.append(k)
        return None

    # ---------------------------------------------------------------- nesting
    def child(self, *, max_iterations: int = DEFAULT_MAX_ITERATIONS, fixedpoint: str = "empty") -> Circuit:
        """A nested circuit, iterated to a fixed point at every tick of this one."""
        self._check_building()
        node = _Node("child", len(self.nodes), [], None)
        sub = Circuit(max_iterations=max_iterations, fixedpoint=fixedpoint, _parent=self, _local_id=node.local_id)
        node.child = sub
        self.nodes.append(node)
        self._invalidate()
        return sub

    def import_(self, stream: Stream, mode: str = "delta0") -> Stream:
        """Bring a parent stream into this child.

        ``mode="delta0"``: the parent's value at iteration 0 and zero after (how a parent
        delta enters a nested incremental computation); ``mode="const"``: the parent's value
        at every iteration.
        """
        if self.parent is None:
            raise CircuitError("import_ brings a parent stream into a child; this is the root")
        if mode not in ("delta0", "const"):
            raise CircuitError(f"import mode must be 'delta0' or 'const', got {mode!r}")
        p = self.parent
        i = p._own(stream, "import")
        me = p.nodes[self.local_id]
        if i not in me.inputs:
            cyc = p._path_between(i, self.local_id)
            if cyc is not None:
                names = " -> ".join(p.nodes[j].label(p.path()) for j in cyc + [cyc[0]])
                raise CircuitError(f"cycle without a delay: {names}")
            me.inputs.append(i)
        return self._new(_Node("import", len(self.nodes), [], p.nodes[i].schema, mode=mode, name=str(i)))

    def export(self, stream: Stream, mode: str = "sum") -> Stream:
        """A parent stream carrying this child's ``stream`` once the fixed point is reached.

        ``mode="sum"``: the sum of its values over the epoch's iterations (for delta-form
        recursion, the parent's delta); ``mode="last"``: its value at the last iteration.
        """
        if self.parent is None:
            raise CircuitError("export sends a child stream to the parent; this is the root")
        if mode not in ("sum", "last"):
            raise CircuitError(f"export mode must be 'sum' or 'last', got {mode!r}")
        i = self._own(stream, "export")
        if mode == "sum" and self.nodes[i].schema.kind == "trace":
            raise CircuitError("a trace stream can only be exported with mode='last'")
        self._exports.append((i, mode))
        p = self.parent
        return p._new(_Node("export", len(p.nodes), [self.local_id], self.nodes[i].schema,
                            mode=str(len(self._exports) - 1)))

    # ---------------------------------------------------------------- evaluation
    def _topo(self) -> list[int]:
        if self._order is not None:
            return self._order
        for j, node in enumerate(self.nodes):
            if node.kind in ("feedback", "forward") and not node.inputs:
                raise CircuitError(f"{node.label(self.path())} was never connected")
        order, state = [], [0] * len(self.nodes)  # 0 new, 1 on stack, 2 done
        for start in range(len(self.nodes)):
            if state[start]:
                continue
            stack = [(start, iter(self._deps(start)))]
            state[start] = 1
            while stack:
                j, it = stack[-1]
                k = next(it, None)
                if k is None:
                    stack.pop()
                    state[j] = 2
                    order.append(j)
                elif state[k] == 0:
                    state[k] = 1
                    stack.append((k, iter(self._deps(k))))
                elif state[k] == 1:
                    raise CircuitError(f"cycle without a delay through {self.nodes[k].label(self.path())}")
        self._order = order
        return order

    def _init_state(self) -> dict[int, Any]:
        st: dict[int, Any] = {}
        for j, node in enumerate(self.nodes):
            if node.kind == "operator":
                st[j] = node.op.init_state([self.nodes[i].schema for i in node.inputs], self.n_dims)
            elif node.kind == "feedback":
                st[j] = node.schema.empty(self.n_dims)
            elif node.kind == "child":
                st[j] = {"nodes": node.child._init_state(), "horizon": 0}
        return st

    def _schedule(self) -> Schedule:
        if self._sched is None:  # (reset with _order by _invalidate)
            self._sched = Schedule(self, self._topo())
        return self._sched

    def _eval(self, time: Time, given: Mapping[int, Any], state: dict[int, Any]) -> dict[int, Any]:
        """One evaluation at ``time``; updates the staged ``state`` dict, returns all values."""
        values: dict[int, Any] = {}
        sched = self._schedule()
        root, n_dims = sched.root, self.n_dims
        for j, code, node, inputs, op, gid, journal in sched.steps:
            if code == OPERATOR:
                ins = [values[i] for i in inputs]
                if op.linear and all(v.is_empty() for v in ins):
                    values[j] = node.schema.empty(n_dims)  # stateless: nothing to stage
                    continue
                values[j], state[j] = op.eval(ins, state[j], Context(time, n_dims, gid, root._keep))
                if journal:
                    root._journal[gid] = (op, state[j])
            elif code == GIVEN:
                v = given.get(j)
                values[j] = v if v is not None else node.schema.empty(n_dims)
            elif code == FEEDBACK:
                values[j] = state[j]
            elif code == FORWARD:
                values[j] = values[inputs[0]]
            elif code == CHILD:
                state[j], values[j] = node.child._run_epoch(time, values, state[j])
            elif code == EXPORT:
                values[j] = values[inputs[0]][int(node.mode)]
        return values

    def _latch(self, values: dict[int, Any], state: dict[int, Any]) -> bool:
        """Store every delay's next value; True when the fixed-point test holds for all."""
        done = True
        empty = self.fixedpoint == "empty"
        for j, i, is_trace, _ in self._schedule().feedback:
            new = values[i]
            if not is_trace and done:
                done = new.is_empty() if empty else new == state[j]
            state[j] = new
        return done

    def _clock_end(self, state: dict[int, Any], frontier: Time, epoch_end: bool) -> None:
        sched = self._schedule()
        for j, op, schemas in sched.clock:
            s = op.advance(state[j], frontier)
            state[j] = op.reset(s, schemas, self.n_dims) if epoch_end else s
        for j, _, is_trace, schema in sched.feedback:
            if is_trace:
                state[j] = state[j].advance(frontier)
            elif epoch_end:
                state[j] = schema.empty(self.n_dims)

    def _run_epoch(self, parent_time: Time, parent_values: dict[int, Any], cstate: dict) -> tuple[dict, dict[int, Any]]:
        """Iterate this child to a fixed point for one parent tick; returns (state, exports)."""
        sched = self._schedule()
        if sched.program is False:
            from wcoj.epoch import program_for  # (it reads the operators, which import this module)
            sched.program = program_for(self)
        if sched.program is not None and config.EPOCH_KERNEL_MAX_ROWS:
            done = sched.program.run(self, parent_time, parent_values, cstate)
            if done is not None:
                return done
        state = dict(cstate["nodes"])
        horizon = cstate["horizon"]
        imports = sched.imports
        sums: dict[int, list] = {e: [] for e in range(len(self._exports))}
        last: dict[int, Any] = {}
        i = evaluated = 0
        while True:
            given = {j: parent_values[p] for j, p, mode in imports if mode == "const" or i == 0}
            t = extend(parent_time, i)
            values = self._eval(t, given, state)
            for e, (j, mode) in enumerate(self._exports):
                if mode == "sum":
                    sums[e].append(values[j])
                else:
                    last[e] = values[j]
            done = self._latch(values, state)
            busy = any(op.pending(state[j], Context(t, self.n_dims, self.path())) for j, op in sched.pending)
            i += 1
            evaluated += 1
            if done and not busy:
                if self.fixedpoint != "empty" or i >= horizon:
                    break
                # Every delay is empty: skip the iterations at which no node can fire.
                nxt = self._next_busy(t, values, state)
                if nxt is None:
                    break
                i = max(i, nxt)
            if i >= self.max_iterations:
                raise self._no_fixed_point(i, parent_time)
        if self._root()._keep:
            self._clock_end(state, extend(parent_time, 0), epoch_end=True)
        out = {}
        for e, (j, mode) in enumerate(self._exports):
            out[e] = _sum_values(sums[e], self.nodes[j].schema) if mode == "sum" else last[e]
        return {"nodes": state, "horizon": max(horizon, i), "iterations": i, "evaluated": evaluated}, out

    def _no_fixed_point(self, i: int, parent_time: Time) -> CircuitError:
        return CircuitError(f"child circuit {'/'.join(map(str, self.path()))} reached no fixed point "
                            f"within {i} iterations at time {parent_time!r}")

    def _next_busy(self, t: Time, values: dict[int, Any], state: dict[int, Any]) -> int | None:
        """The soonest ``Operator.next_busy`` over the operators that are not ``never_busy``
        (a nested child counts as busy at the next iteration)."""
        sched = self._schedule()
        if sched.has_child:
            return t[-1] + 1
        soonest = None
        for j, op, inputs, gid in sched.busy:
            nb = op.next_busy([values[k] for k in inputs], state[j], Context(t, self.n_dims, gid))
            if nb is not None and (soonest is None or nb < soonest):
                soonest = nb
                if nb <= t[-1] + 1:
                    break
        return soonest

    def step(self, inputs: Mapping[Any, Any] | None = None, *, keep: bool = True) -> dict[str, Any]:
        """Run one tick of the root circuit; returns ``{sink name: value}``.

        ``inputs`` maps a source (its name or its ``Stream``) to a ``ZSet`` (or
        ``IndexedZSet``); absent sources carry zero. Atomic: on any error, no state changes.
        ``keep=False`` answers the tick and keeps nothing (``q``'s one tick): the circuit
        stays as it was, and the traces are not compacted at the end of the tick and of
        each child's epoch, work only later ticks would use.
        """
        if self.parent is not None:
            raise CircuitError("step the root circuit; a child runs inside its parent's step")
        if self.closed:
            raise CircuitError("the circuit is closed; no more steps can be pushed into it")
        given = self._inputs(inputs or {})
        committed = self._state if self._state is not None else self._init_state()
        state = dict(committed)
        self._journal, self._keep = {}, keep
        try:
            values = self._eval(self.time, given, state)
            self._latch(values, state)
            if keep:
                self._clock_end(state, self.time, epoch_end=False)
        except BaseException:
            for op, staged in self._journal.values():
                op.rollback(staged)
            raise
        finally:
            journal, self._journal, self._keep = self._journal, {}, True
        if not keep:
            for op, staged in journal.values():
                op.rollback(staged)
            return {name: values[j] for name, j in self._sinks.items()}
        self._state = state  # commit: everything above succeeded
        self.time += 1
        for op, staged in journal.values():
            op.commit(staged)
        return {name: values[j] for name, j in self._sinks.items()}

    def _inputs(self, inputs: Mapping[Any, Any]) -> dict[int, Any]:
        given = {}
        for key, value in inputs.items():
            if isinstance(key, Stream):
                j = self._own(key, "step input")
                if self.nodes[j].kind != "source":
                    raise CircuitError(f"{self.nodes[j].label(self.path())} is not a source")
            elif key in self._sources:
                j = self._sources[key]
            else:
                raise CircuitError(f"no source named {key!r}; sources: {', '.join(self._sources) or 'none'}")
            want, got = self.nodes[j].schema, schema_of(value)
            if got != want:
                raise ArityMismatchError(f"input {self.nodes[j].name}", want.arity, got.arity,
                                         f"source carries {want}, got {got}")
            given[j] = value
        return given

    def close(self) -> None:
        """Finish the circuit: further ``step`` calls raise ``CircuitError``."""
        self._root().closed = True

    def iterations(self, evaluated: bool = False) -> int:
        """For a child: how deep its last epoch iterated (0 before any); with
        ``evaluated=True``, at how many iterations it ran (idle ones are skipped)."""
        if self.parent is None:
            raise CircuitError("the root circuit does not iterate")
        st = self.parent._root()._state
        if st is None:
            return 0
        return self._lookup_state(st).get("evaluated" if evaluated else "iterations", 0)

    def _lookup_state(self, root_state: dict) -> dict:
        path = self.path()
        st = root_state
        for k in path[:-1]:
            st = st[k]["nodes"]
        return st[path[-1]]

    def state_snapshot(self) -> dict[tuple[int, ...], Any]:
        """``{global id: committed state}`` of every stateful node (for tests and tools)."""
        out: dict[tuple[int, ...], Any] = {}

        def walk(c: Circuit, st: dict) -> None:
            for j, v in st.items():
                if c.nodes[j].kind == "child":
                    out[c.global_id(j) + ("horizon",)] = v["horizon"]
                    walk(c.nodes[j].child, v["nodes"])
                else:
                    out[c.global_id(j)] = v
        if self._state is not None:
            walk(self, self._state)
        return out

    def __repr__(self) -> str:
        kinds = [n.kind for n in self.nodes]
        return f"Circuit(path={self.path()}, nodes={len(kinds)}, time={self.time})"


def _sum_values(vals: list[Any], schema: Schema) -> Any:
    if schema.kind == "zset":
        zs = [v for v in vals if not v.is_empty()]
        if not zs:
            return ZSet.empty(schema.arity)
        if len(zs) == 1:
            return zs[0]
        return ZSet.from_arrays(np.concatenate([z.keys for z in zs]), np.concatenate([z.weights for z in zs]),
                                arity=schema.arity)
    total = schema.empty()
    for v in vals:
        total = total.plus(v)
    return total
