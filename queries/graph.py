"""The graph API: load edges, register pattern views, apply ticks, read changes and counts.

A ``Graph`` keeps three relations (see ``queries.patterns``): ``D`` the directed simple
graph, ``O`` and ``S`` the undirected simple graph (oriented and symmetric). Edge updates
have set semantics: inserting an edge already there, or deleting one that is not, changes
nothing; a tick's deletes apply after its inserts; self-loops are dropped. Each
registered view is an ``IncrementalGenericJoin`` over them.

A tick takes one of two routes, both the telescoping delta rule over the same join
program, both all or nothing:

* up to ``config.CHANGE_ROWS`` edge changes, change by change in one kernel call
  (``indexes.transaction.ChangePlan``): each change's terms read the indexes as they are
  plus the one changed edge, then the change is applied in place;
* above that, one transaction (``indexes.transaction``): the tick's delta is staged on
  every index, every view's terms run over all of it (split into shares on threads), and
  the change is committed in place.

The graph is safe to share between threads: one lock serialises its reads and ticks.

>>> g = Graph()
>>> g.load_edges(np.array([[1, 2], [1, 3]]))
>>> tri = g.view("triangle")
>>> tri.count
0
>>> tick = g.apply(inserts=np.array([[3, 2]]))
>>> tri.count, tick.changes["triangle"].to_dict()
(1, {(1, 2, 3): 1})
>>> _ = g.apply(deletes=np.array([[1, 2]])); tri.count
0
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from indexes.transaction import ChangePlan, Store
from wcoj.interrupts import deferred_interrupts
from queries.graph_circuit import GraphCircuit, apply_with_circuits
from queries.patterns import Pattern, by_name
from queries.stream import StreamError, StreamResult, array_of, as_rows, run_chunk
from queries.warmup import settle_heap, warm_up  # re-exported: where users have found them
from wcoj import config
from wcoj.errors import InputError, QueryError, WeightOverflowError, as_interrupt, excerpt
from wcoj.generic_join import IncrementalGenericJoin
from wcoj.zset import ZSet

__all__ = ["Graph", "GraphView", "Tick", "StreamResult", "StreamError", "as_edge_array", "settle_heap", "warm_up", "MAX_ID"]

I64 = npt.NDArray[np.int64]
MAX_ID = (1 << 62) - 1
_OPS = {"<": np.less, "!=": np.not_equal}
# Writable, as every edge array a tick's kernel is given: Numba compiles a kernel once per
# set of argument types, and a read-only array is a type of its own (2-3 s of compiling
# the tick once more on a cold cache). It has no element to write.
_NO_EDGES = np.zeros((0, 2), dtype=np.int64)
_I64 = np.dtype(np.int64)


def _interruptible(method):
    """``method`` raising ``KeyboardInterrupt`` where Ctrl-C met a compiled kernel (which
    reports it as a ``SystemError``; see ``wcoj.errors.as_interrupt``)."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except SystemError as exc:
            if as_interrupt(exc) is exc:
                raise
            raise KeyboardInterrupt from None
    return wrapper


def _edge_input(edges, what: str) -> I64:
    """``edges`` as a writable C-contiguous ``int64[m, 2]`` array (shape and dtype
    checked; the range of the ids is checked by whoever reads them: ``as_edge_array`` or a
    tick's kernel). A read-only array is copied (see ``_NO_EDGES``)."""
    if (type(edges) is np.ndarray and edges.dtype is _I64 and edges.strides == (16, 8) and edges.shape[1] == 2
            and edges.flags.writeable):
        return edges
    arr = array_of(edges, what)
    if arr.size == 0:
        return _NO_EDGES
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(f"{what} must have shape (m, 2), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InputError(f"{what} must hold integer node ids, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and int(arr.max()) > MAX_ID:
        bad = int(np.argmax(arr.max(axis=1) > MAX_ID))
        raise InputError(f"{what}: node id {int(arr[bad].max())} in row {bad} is out of range [0, 2**62)")
    out = np.ascontiguousarray(arr, dtype=np.int64)
    return out if out.flags.writeable else out.copy()


def _bad_id(arr: I64, flat: int, what: str) -> InputError:
    r, c = divmod(int(flat), 2)
    return InputError(f"{what}: node id {int(arr[r, c])} in row {r} is out of range [0, 2**62)")


def as_edge_array(edges, what: str = "edges") -> I64:
    """Validate an edge array: integer dtype, shape (m, 2), ids in [0, 2**62)."""
    arr = _edge_input(edges, what)
    if arr.shape[0] and (arr.min() < 0 or arr.max() > MAX_ID):
        raise _bad_id(arr, np.flatnonzero((arr < 0) | (arr > MAX_ID))[0], what)
    return arr


def _named(spec: str, p: Pattern) -> bool:
    """Whether ``by_name(spec)`` is ``p`` (so saving ``spec`` saves the pattern)."""
    try:
        return by_name(spec) == p
    except QueryError:
        return False


class Tick:
    """What one tick changed: the applied edge delta and every view's change.

    ``edge_delta`` is made when first read: given as ``(make, *args)``, it is
    ``make(*args)`` (a tick's kernel hands back its change rows, and most callers read
    only ``changes``).

    >>> t = Tick(ZSet.from_rows([(1, 2)]), {"triangle": ZSet.empty(3)})
    >>> t.edge_delta.to_dict(), len(t.changes["triangle"])
    ({(1, 2): 1}, 0)
    """

    __slots__ = ("_delta", "changes", "seconds", "outputs")

    def __init__(self, edge_delta, changes: dict[str, ZSet] | None = None, seconds: float = 0.0,
                 outputs: dict[str, ZSet] | None = None):
        self._delta = edge_delta  # a ZSet, or (make, *args) for one
        self.changes = {} if changes is None else changes
        self.seconds = seconds
        self.outputs = {} if outputs is None else outputs  # sinks of the graph's circuits

    @property
    def edge_delta(self) -> ZSet:
        d = self._delta
        if type(d) is tuple:
            d = self._delta = d[0](*d[1:])
        return d

    def __repr__(self) -> str:
        return (f"Tick(edge_delta={len(self.edge_delta)} rows, changes={ {n: len(z) for n, z in self.changes.items()} }, "
                f"seconds={self.seconds:.6f})")


class GraphView:
    """A pattern kept up to date: its count, and the change of the last tick."""

    def __init__(self, graph: Graph, pattern: Pattern, orders=None, maintained: bool = True):
        self.graph = graph
        self.pattern = pattern
        self.name = pattern.name
        filters = [("<", x, y) if op == "<" else ((x, y), _OPS[op]) for op, x, y in pattern.filters]
        rels = graph.relations
        self.join = IncrementalGenericJoin([(rels[r], vs) for r, vs in pattern.atoms],
                                           pattern.output, orders=orders, filters=filters)
        self.initial = int(self.join.batch(count_only=True))
        if maintained:
            self.join.prepare()  # the delta terms' indexes now, not in the first tick
        self.last_change = ZSet.empty(len(pattern.output))
        self.slot = -1  # this view's place in the graph's counts

    def __repr__(self) -> str:
        return f"GraphView({self.name!r}, count={self.count})"

    @property
    def count(self) -> int:
        """The number of matches (weighted) now."""
        return int(self.graph._counts[self.slot]) if self.slot >= 0 else self.initial

    def result(self) -> ZSet:
        """The current rows (computed from the committed state; may be large)."""
        with self.graph.store.lock:
            return self.join.batch()

    @property
    def columns(self) -> tuple[str, ...]:
        return self.pattern.output


class Graph:
    """An incrementally maintained graph with pattern views.

    Parameters
    ----------
    directed : whether input edges are directed. Undirected input treats ``(u, v)`` and
        ``(v, u)`` as one edge; its primary relation is ``O`` and ``D`` then holds both
        directions. Directed input keeps ``D`` as given (primary) and derives the
        undirected ``O``/``S`` (an undirected edge exists while either direction does).

    Only the primary relation and the relations some view reads are maintained; the others
    are built from the primary when a view first needs them.
    """

    def __init__(self, directed: bool = False):
        self.directed = directed
        self.primary = "D" if directed else "O"
        self.store = Store()
        self.relations = {n: self.store.relation(n, 2) for n in ("D", "O", "S")}
        self.active = {self.primary}
        self.views: dict[str, GraphView] = {}
        self._count_joins: dict[Pattern, IncrementalGenericJoin] = {}  # see count()
        self._counts = np.zeros(1, dtype=np.int64)  # each view's count, then the edges
        self._plan: ChangePlan | None = None
        self.n_ticks = 0
        self.n_change_ticks = 0  # ticks that took the change-by-change route (for diagnostics)
        self._log = None  # a durable graph's log (queries.durable.GraphLog)
        self._circuits: list[GraphCircuit] = []  # see circuit()

    @classmethod
    def open(cls, path, directed: bool | None = None, snapshot_every: int = 1_000_000) -> Graph:
        """Open (or create) the durable graph in directory ``path``.

        A tick returns only once it is in the log (SQLite, synchronous commits): it is
        applied in memory, its edge change logged, then acknowledged; a tick that fails
        logs nothing. Every ``snapshot_every`` logged edge changes the edges are saved as
        a Parquet snapshot; reopening loads it, replays the ticks after it and registers
        the saved views again. ``directed`` defaults to what the graph was created with.
        See ``queries.durable``.

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     g = Graph.open(d); _ = g.view("triangle")
        ...     _ = g.apply(inserts=np.array([[1, 2], [2, 3], [1, 3]])); g.close()
        ...     again = Graph.open(d); n = again.views["triangle"].count; again.close()
        >>> n
        1
        """
        from queries.durable import open_graph
        return open_graph(cls, path, directed, snapshot_every)

    def close(self) -> None:
        """Close a durable graph's log (in memory: nothing to do)."""
        if self._log is not None:
            self._log.close()

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _logged(self, delta: ZSet) -> None:
        """Log the tick just applied (``n_ticks``); if logging fails, undo it in memory and
        raise. Then snapshot if due."""
        log = self._log
        try:
            log.append(self.n_ticks, delta)
        except BaseException:
            self._log = None
            try:
                self.apply(inserts=delta.keys[delta.weights < 0], deletes=delta.keys[delta.weights > 0])
            finally:
                self._log, self.n_ticks = log, self.n_ticks - 2
            raise
        try:
            log.after_commit(self)
        except OSError as e:  # the tick is durable already; a snapshot can wait
            warnings.warn(f"snapshot skipped: {e}", RuntimeWarning, stacklevel=3)

    def __repr__(self) -> str:
        return f"Graph(directed={self.directed}, edges={self.n_edges}, views={list(self.views)})"

    @property
    def n_edges(self) -> int:
        """Edges of the simple graph (directed: arcs; undirected: unordered pairs)."""
        return int(self._counts[-1])

    # ------------------------------------------------------------------ loading
    @_interruptible
    def load_edges(self, edges) -> None:
        """Bulk-load edges into an empty graph (or apply them as one tick if views exist)."""
        arr = as_edge_array(edges)
        with self.store.lock:
            if self.views or self.n_edges:
                self.apply(inserts=arr)
                return
            arr = arr[arr[:, 0] != arr[:, 1]]
            if not self.directed:
                arr = np.sort(arr, axis=1)
            primary = ZSet.from_arrays(arr, arity=2).distinct()
            self.relations[self.primary].load(primary)
            self._counts[-1] = len(primary)
            for name in self.active - {self.primary}:
                self.relations[name].load(self._derive(name))
            self._plan = None
            if self._log is not None:
                self.n_ticks += 1
                with deferred_interrupts():
                    self._logged(primary)

    def _derive(self, name: str) -> ZSet:
        """Relation ``name`` computed from the committed primary relation."""
        p = self.relations[self.primary].contents()
        if name == self.primary:
            return p
        if self.directed:
            k = p.keys
            o = ZSet.from_arrays(np.stack([k.min(axis=1), k.max(axis=1)], axis=1), arity=2).distinct()
        else:
            o = p
        if name == "O":
            return o
        return ZSet.from_arrays(np.concatenate([o.keys, o.keys[:, ::-1]]), arity=2)  # S (= D undirected)

    def _activate(self, names) -> None:
        for name in names:
            if name not in self.active:
                self.relations[name].load(self._derive(name))
                self.active.add(name)
                self._plan = None

    # ------------------------------------------------------------------ views
    @_interruptible
    def view(self, pattern: str | Pattern, name: str | None = None, orders=None) -> GraphView:
        """Register a view of ``pattern`` (a ``Pattern`` or a name like ``"4-cycle"``) under
        ``name`` (default: the pattern's name as given), or return the view already there when
        it holds the same pattern; another pattern under a taken name is a ``QueryError``.

        >>> g = Graph(); t = g.view("triangle", name="t")
        >>> g.view("triangle", name="t") is t
        True
        >>> g.view("4-cycle", name="t")
        Traceback (most recent call last):
        ...
        wcoj.errors.QueryError: view 't' already holds pattern triangle, not undirected-4-cycle; register it under another name
        """
        p = by_name(pattern) if isinstance(pattern, str) else pattern
        key = name or (pattern if isinstance(pattern, str) else p.name)
        with self.store.lock:
            if key in self.views:
                old = self.views[key]
                if old.pattern != p:
                    raise QueryError(f"view {excerpt(key)} already holds pattern "
                                     f"{excerpt(old.pattern.name, quote=False)}, not "
                                     f"{excerpt(p.name, quote=False)}; register it under "
                                     "another name")
                return old
            self._activate({r for r, _ in p.atoms})
            spec = pattern if isinstance(pattern, str) else p.name
            if self._log is not None and not _named(spec, p):
                raise QueryError(f"a durable graph saves its views by pattern name; pattern "
                                 f"{p.name!r} is not the built-in pattern of that name")
            v = GraphView(self, p, orders)
            counts = np.concatenate([self._counts[:-1], [v.initial], self._counts[-1:]]).astype(np.int64)
            v.slot = len(self.views)
            self.views[key] = v
            self._counts = counts
            self._plan = None
            if self._log is not None:
                self._log.remember_view(key, spec)
            return v

    @_interruptible
    def count(self, pattern: str | Pattern) -> int:
        """The pattern's count on the current graph, without registering a view.

        The join's plan is kept per pattern (it depends on the pattern only; the join
        reads the current indexes on every run), so a repeated count only runs it.
        """
        p = by_name(pattern) if isinstance(pattern, str) else pattern
        with self.store.lock:
            self._activate({r for r, _ in p.atoms})
            join = self._count_joins.get(p)
            if join is None:
                view = GraphView(self, p, maintained=False)
                self._count_joins[p] = view.join
                return view.initial
            return int(join.batch(count_only=True))

    # ------------------------------------------------------------------ ticks
    def _change_plan(self) -> ChangePlan:
        """The change-by-change program of every view (rebuilt when a view or an index
        is added); its counts are the graph's."""
        plan = self._plan
        if plan is None or not plan.current():
            rels = [self.relations[n] for n in sorted(self.active)]
            ids = {n: i for i, n in enumerate(sorted(self.active))}
            joins = [v.join for v in self.views.values()]
            fusable = all(j.change_terms() is not None for j in joins)
            sym = [ids[n] for n in ("D", "S") if n in ids and n != self.primary]
            plan = ChangePlan(self.store, joins if fusable else [], rels,
                              (self.directed, ids[self.primary], ids.get("O", -1) if self.directed else -1,
                               *(sym + [-1, -1])[:2]), sets=True)
            plan.fusable = fusable
            if fusable:
                plan.counts = self._counts
            self._plan = plan
        return plan

    @_interruptible
    def apply(self, inserts=None, deletes=None) -> Tick:
        """Apply one tick of edge inserts and deletes; return every view's change.

        ``Tick.edge_delta`` is the change of the primary relation (undirected: pairs
        ``(min, max)``). A tick that fails (bad input, weight overflow) raises and changes
        nothing.
        """
        if self._circuits:
            with self.store.lock:
                return apply_with_circuits(self, inserts, deletes)
        if self._log is not None:
            with self.store.lock, deferred_interrupts():  # applied and logged, or neither
                tick = self._apply(inserts, deletes)
                self._logged(tick.edge_delta)
                return tick
        return self._apply(inserts, deletes)

    def circuit(self) -> GraphCircuit:
        """A circuit fed by this graph's views, stepped by every ``apply`` (``graph_circuit``)."""
        c = GraphCircuit(self)
        self._circuits.append(c)
        return c

    def _apply(self, inserts, deletes) -> Tick:
        t0 = time.perf_counter()
        ins = _NO_EDGES if inserts is None else _edge_input(inserts, "inserts")
        dels = _NO_EDGES if deletes is None else _edge_input(deletes, "deletes")
        with self.store.lock:
            plan = self._plan
            if plan is None or not plan.current():
                plan = self._change_plan()
            if plan.fusable and len(ins) + len(dels) <= config.CHANGE_ROWS:
                with deferred_interrupts():  # the kernel commits in place: the tick is done then
                    bad, delta, outs = plan.run_edges(ins, dels)
                    if bad < 0:
                        changes = {}
                        for (name, v), z in zip(self.views.items(), outs):
                            v.last_change = changes[name] = z
                        self.n_change_ticks += 1
                if bad >= 0:
                    raise self._bad(ins, dels, bad)
            else:
                delta, changes = self._staged_tick(plan, ins, dels)
            self.n_ticks += 1
        return Tick(delta, changes, time.perf_counter() - t0)

    def stream(self, changes) -> Iterator[StreamResult]:
        """Apply a stream of ticks; yield one ``StreamResult`` per chunk of it (see
        ``queries.stream``). ``changes``: an int array of rows ``(tick, op, src, dst)``
        (op +1 insert, -1 delete; ticks non-decreasing, each tick's rows together), a
        list of ``(inserts, deletes)`` pairs (tick ids 0, 1, ...), or an iterator of row
        arrays. Each tick is one ``apply``: set semantics, deletes after inserts, all or
        nothing. A bad row raises ``StreamError`` (an ``InputError``) after the result
        of the ticks before it in its chunk was yielded (also the error's ``done``);
        nothing of its tick is applied.

        >>> g = Graph(); _ = g.view("triangle")
        >>> [r.counts["triangle"].tolist() for r in g.stream([([(1, 2), (2, 3)], None), ([(1, 3)], None)])]
        [[0, 1]]
        """
        if self._circuits:
            raise QueryError("this graph has circuits attached (Graph.circuit), which "
                             "step tick by tick: use apply for each tick")
        empty_ok = isinstance(changes, (list, tuple))
        carry, carry_pos, last = None, 0, None
        sizes = [] if empty_ok else None  # (inserts, deletes) pairs: name a bad row in them
        chunks = as_rows(changes, sizes)
        ahead, failed = next(chunks, None), None
        while ahead is not None:
            (pos, rows), ahead = ahead, None
            try:
                ahead = next(chunks, None)
            except Exception as e:  # noqa: BLE001 - a reader's error: apply what came before it first
                failed = e
            if carry is not None and len(carry):
                rows, pos = np.concatenate([carry, rows]), carry_pos
            carry = None
            if len(rows) and ahead is not None:  # the last tick may go on in the next chunk
                other = np.flatnonzero(rows[:, 0] != rows[-1, 0])
                start = int(other[-1]) + 1 if len(other) else 0
                carry, carry_pos, rows = rows[start:], pos + start, rows[:start]
            with self.store.lock:
                result, error = run_chunk(self, rows, pos, empty_ok, last, sizes)
            if len(result):
                last = int(result.ticks[-1])
                yield result
            if error is not None:
                raise error
        if failed is not None:
            raise failed

    def apply_stream(self, changes) -> StreamResult:
        """``stream(changes)``'s results as one ``StreamResult`` (a bad row raises
        ``StreamError`` whose ``done`` holds the results of the ticks before it).

        >>> g = Graph(); _ = g.view("triangle")
        >>> r = g.apply_stream(np.array([[5, 1, 1, 2], [5, 1, 2, 3], [6, 1, 3, 1], [7, -1, 1, 2]]))
        >>> r.ticks.tolist(), r.counts["triangle"].tolist(), r.counts["edges"].tolist()
        ([5, 6, 7], [0, 1, 0], [2, 3, 2])
        """
        parts = []
        try:
            for r in self.stream(changes):
                parts.append(r)
        except StreamError as e:
            e.done = StreamResult.concat(parts) if parts else e.done  # the failing chunk's was yielded
            raise
        if not parts:
            return run_chunk(self, np.zeros((0, 4), dtype=np.int64), 0, False, None)[0]
        return StreamResult.concat(parts)

    def _stream_ticks(self, edges: I64, bounds: I64, tcounts: I64, seconds):
        """Ticks of a stream through the change-by-change plan (``ChangePlan.run_stream``):
        ``(ticks done, bad id position or -1, rows (tick, view, weight, keys...), a
        WeightOverflowError or None)``; the counts are the graph's."""
        plan = self._change_plan()
        n = len(bounds)
        try:
            with deferred_interrupts():
                t, bad, rows = plan.run_stream(edges, bounds, tcounts, seconds)
                self.n_ticks += t
                self.n_change_ticks += t
        except WeightOverflowError as e:
            self.n_ticks += e.done_ticks
            self.n_change_ticks += e.done_ticks
            return e.done_ticks, -1, e.done_rows, e
        return t, bad if t < n else -1, rows, None

    @staticmethod
    def _bad(ins: I64, dels: I64, flat: int) -> InputError:
        """The error for the id at ``flat`` (a position in ``ins`` then ``dels``, flattened)."""
        if flat < 2 * len(ins):
            return _bad_id(ins, flat, "inserts")
        return _bad_id(dels, flat - 2 * len(ins), "deletes")

    def _staged_tick(self, plan: ChangePlan, ins: I64, dels: I64):
        """A tick through one transaction: the delta staged, every view's terms over it."""
        bad, ch, n_primary = plan.edge_changes(ins, dels)
        if bad >= 0:
            raise self._bad(ins, dels, bad)
        names = sorted(self.active)
        with self.store.transaction() as tx:
            delta = ZSet(np.ascontiguousarray(ch[:n_primary, 2:4]), np.ascontiguousarray(ch[:n_primary, 1]))
            for i, name in enumerate(names):
                sel = ch[:, 0] == i
                z = delta if name == self.primary else \
                    ZSet.from_arrays(ch[sel][:, 2:4], ch[sel][:, 1], arity=2)
                tx.stage(self.relations[name], z)
            changes = {name: v.join.delta() for name, v in self.views.items()}
            counts = self._counts.copy()
            for name, v in self.views.items():
                counts[v.slot] += changes[name].total()
            counts[-1] += delta.total()

            def bookkeeping():
                self._counts[:] = counts
                for name, v in self.views.items():
                    v.last_change = changes[name]

            tx.commit(bookkeeping)
        return delta, changes

    def edges(self) -> I64:
        """The current edges: directed arcs, or undirected pairs as ``(min, max)``."""
        with self.store.lock:
            return np.array(self.relations[self.primary].contents().keys)

    def nbytes(self) -> int:
        """Bytes held by all indexes of all relations."""
        return sum(self.relations[n].nbytes() for n in self.active)

    @_interruptible
    def check_views(self) -> None:
        """Raise ``QueryError`` unless every view's count equals a recomputation."""
        with self.store.lock:
            for name, v in self.views.items():
                fresh = v.join.batch(count_only=True)
                if fresh != v.count:
                    raise QueryError(f"view {name}: maintained count {v.count} != recomputed {fresh}")
