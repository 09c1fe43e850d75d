"""The graph API: load edges, register pattern views, apply ticks, read changes and counts.

A ``Graph`` keeps three relations (see ``queries.patterns``): ``D`` the directed simple
graph, ``O`` and ``S`` the undirected simple graph (oriented and symmetric). Edge updates
have set semantics: inserting an edge already there, or deleting one that is not, changes
nothing; self-loops are dropped. Each registered view is an ``IncrementalGenericJoin``;
a tick stages the relations' deltas, asks every view for its change, and commits only
when all of them succeeded, so a failed tick leaves every index and view as it was.

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

import atexit
import gc
import time
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from indexes.index import Relation
from indexes.trie import warm_up_merges
from queries.patterns import Pattern, by_name
from wcoj.errors import InputError, QueryError, WcojError
from wcoj.generic_join import IncrementalGenericJoin
from wcoj.kernels.rowops import (SMALL_ROWS, edge_delta_into, edge_delta_sorted, first_outside, last_edge_ops_into,
                                 pack_edge_ops)
from wcoj.kernels.tick import JOINED, NO_CHANGE, UNFUSED, edge_tick
from wcoj.zset import ZSet

__all__ = ["Graph", "GraphView", "Tick", "as_edge_array", "settle_heap", "warm_up"]

I64 = npt.NDArray[np.int64]
MAX_ID = (1 << 62) - 1
_PART_ROWS = np.arange(0, 2 * 64, 2, dtype=np.int64)  # the level-0 row of each part of a binary view
_OPS = {"<": np.less, "!=": np.not_equal}
NUMPY_SORT_ROWS = 4096  # a tick of more edge changes sorts them with numpy, not inside the kernel


def as_edge_array(edges, what: str = "edges") -> I64:
    """Validate an edge array: integer dtype, shape (m, 2), ids in [0, 2**62)."""
    arr = np.asarray(edges)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(f"{what} must have shape (m, 2), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InputError(f"{what} must hold integer node ids, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and int(arr.max()) > MAX_ID:
        bad = int(np.argmax(arr.max(axis=1) > MAX_ID))
        raise InputError(f"{what}: node id {int(arr[bad].max())} in row {bad} is out of range [0, 2**62)")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    bad = first_outside(arr.reshape(-1), 0, MAX_ID)
    if bad >= 0:
        r, c = divmod(bad, 2)
        raise InputError(f"{what}: node id {int(arr[r, c])} in row {r} is out of range [0, 2**62)")
    return arr


def _last_ops(inserts: I64, deletes: I64, normalise: bool) -> tuple[I64, npt.NDArray[np.bool_]]:
    """The edges a tick touches (sorted, unique; self-loops dropped; pairs as ``(min, max)``
    when ``normalise``) and whether the last operation on each is an insert (deletes apply
    after inserts). One sort of a packed int64 per operation, or a lexsort for huge ids."""
    n = len(inserts) + len(deletes)
    packed = np.empty(n, dtype=np.int64)
    m, bv, bo = pack_edge_ops(inserts, deletes, normalise, packed)
    if m >= 0:
        packed = np.sort(packed[:m])
        rows, insert = np.empty((m, 2), dtype=np.int64), np.empty(m, dtype=np.bool_)
        m = last_edge_ops_into(packed, len(inserts), bv, bo, rows, insert)
        return rows[:m], insert[:m]
    rows = np.concatenate([inserts, deletes])
    insert = np.arange(n) < len(inserts)
    keep = rows[:, 0] != rows[:, 1]
    rows, insert = rows[keep], insert[keep]
    if normalise:
        rows = np.sort(rows, axis=1)
    order = np.lexsort((np.arange(len(rows)), rows[:, 1], rows[:, 0]))
    rows, insert = rows[order], insert[order]
    last = np.ones(len(rows), dtype=bool)
    last[:-1] = np.any(rows[1:] != rows[:-1], axis=1)
    return np.ascontiguousarray(rows[last]), insert[last]


def _nothing() -> None:
    """The commit of a tick that changed nothing."""


def settle_heap() -> None:
    """Move every object now alive out of the cyclic garbage collector's sight (``gc.freeze``).

    Call it once after loading a graph and registering its views, before a long stream
    of ticks. Python's full collections rescan every live container; with Numba and the
    engine loaded a full collection takes ~45 ms on this machine, and ticks trigger one
    every few dozen ticks, which added ~0.4 ms to a tick of 10 changes on average and put
    50 ms spikes in its latency. Frozen objects are never collected, so this is a
    process-wide choice: the library never makes it on its own (``wcoj stream``, the demo
    and the benchmarks do). At exit the objects are handed back to the collector
    (``gc.unfreeze``), so that the interpreter's last collection still finalises them:
    extension modules such as DuckDB's otherwise report them as leaks.
    """
    global _UNFREEZE_AT_EXIT
    gc.collect()
    gc.freeze()
    if not _UNFREEZE_AT_EXIT:
        atexit.register(gc.unfreeze)
        _UNFREEZE_AT_EXIT = True


_UNFREEZE_AT_EXIT = False


def warm_up(patterns=("triangle",), directed: bool = False) -> None:
    """Run a tiny graph through every kernel a stream of ticks uses, so the first real
    ticks do not pay for loading them.

    Numba compiles a kernel, or reads it from its on-disk cache, on its first call in a
    process: a few milliseconds each, and a tick that first needs one (its first result
    row, its first frontier that outgrows its buffer, its first lookup of more than a
    few thousand rows) was up to 14x slower than its neighbours. Call it before timing or
    serving ticks, with the patterns your views use; it touches no state of yours.
    ``wcoj stream``, the demo and the benchmarks do.
    """
    rng = np.random.default_rng(0)
    g = Graph(directed=directed)
    g.load_edges(rng.integers(0, 40, (200, 2)))
    for p in patterns:
        g.view(p)
    g.apply(inserts=np.array([[1, 2], [2, 3], [1, 3]]), deletes=np.array([[1, 2]]))
    g.apply(inserts=rng.integers(0, 40, (300, 2)), deletes=g.edges()[:50])
    g.apply(inserts=rng.integers(0, 300, (6000, 2)), deletes=g.edges()[::3])
    g.check_views()
    warm_up_merges()
    for p in patterns:  # a graph with one view takes the one-kernel path of small ticks (Graph._fused)
        one = Graph(directed=directed)
        one.load_edges(rng.integers(0, 40, (200, 2)))
        one.view(p)
        one.apply(inserts=np.array([[1, 2], [2, 3], [1, 3]]), deletes=np.array([[1, 4]]))
        one.check_views()


@dataclass
class Tick:
    """What one tick changed: the applied edge delta and every view's change."""

    edge_delta: ZSet
    changes: dict[str, ZSet] = field(default_factory=dict)
    seconds: float = 0.0


class GraphView:
    """A pattern kept up to date: its count, and the change of the last tick."""

    def __init__(self, graph: Graph, pattern: Pattern, orders=None, maintained: bool = True):
        self.pattern = pattern
        self.name = pattern.name
        filters = [("<", x, y) if op == "<" else ((x, y), _OPS[op]) for op, x, y in pattern.filters]
        rels = {n: graph.relations[n] for n in ("D", "O", "S")}
        self.join = IncrementalGenericJoin([(rels[r], vs) for r, vs in pattern.atoms],
                                           pattern.output, orders=orders, filters=filters)
        self.count = int(self.join.batch(count_only=True))
        if maintained:
            self.join.prepare()  # the delta terms' indexes now, not in the first tick
        self.last_change = ZSet.empty(len(pattern.output))
        self.fused = None  # Graph._fused's (indexes' layout, gather map, program) for this view

    def __repr__(self) -> str:
        return f"GraphView({self.name!r}, count={self.count})"

    def result(self) -> ZSet:
        """The current rows (computed from the committed state; may be large)."""
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
        self.relations = {n: Relation(n, 2) for n in ("D", "O", "S")}
        self.active = {self.primary}
        self.views: dict[str, GraphView] = {}
        self._count_joins: dict[Pattern, IncrementalGenericJoin] = {}  # see count()
        self.n_ticks = 0
        self.n_fused = 0  # ticks staged and joined in one kernel call (Graph._fused), for diagnostics
        self._n_edges = 0  # maintained per tick, so n_edges is O(1)

    def __repr__(self) -> str:
        return f"Graph(directed={self.directed}, edges={self.n_edges}, views={list(self.views)})"

    @property
    def n_edges(self) -> int:
        """Edges of the simple graph (directed: arcs; undirected: unordered pairs)."""
        return self._n_edges

    # ------------------------------------------------------------------ loading
    def load_edges(self, edges) -> None:
        """Bulk-load edges into an empty graph (or apply them as one tick if views exist)."""
        arr = as_edge_array(edges)
        if self.views or self.n_edges:
            self.apply(inserts=arr)
            return
        arr = arr[arr[:, 0] != arr[:, 1]]
        if not self.directed:
            arr = np.sort(arr, axis=1)
        primary = ZSet.from_arrays(arr, arity=2).distinct()
        self.relations[self.primary].load(primary)
        self._n_edges = len(primary)
        for name in self.active - {self.primary}:
            self.relations[name].load(self._derive(name))

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

    # ------------------------------------------------------------------ views
    def view(self, pattern: str | Pattern, name: str | None = None, orders=None) -> GraphView:
        """Register (or return) a view of ``pattern`` (a ``Pattern`` or a name like ``"4-cycle"``)."""
        p = by_name(pattern) if isinstance(pattern, str) else pattern
        key = name or (pattern if isinstance(pattern, str) else p.name)
        if key in self.views:
            return self.views[key]
        self._activate({r for r, _ in p.atoms})
        v = GraphView(self, p, orders)
        self.views[key] = v
        return v

    def count(self, pattern: str | Pattern) -> int:
        """The pattern's count on the current graph, without registering a view.

        The join's plan is kept per pattern (it depends on the pattern only; the join
        reads the current indexes on every run), so a repeated count only runs it.
        """
        p = by_name(pattern) if isinstance(pattern, str) else pattern
        self._activate({r for r, _ in p.atoms})
        join = self._count_joins.get(p)
        if join is None:
            view = GraphView(self, p, maintained=False)
            self._count_joins[p] = view.join
            return view.count
        return int(join.batch(count_only=True))

    # ------------------------------------------------------------------ ticks
    def _primary_delta(self, inserts: I64, deletes: I64) -> ZSet:
        """The primary relation's delta with set semantics: a tick's deletes apply after its inserts."""
        n = len(inserts) + len(deletes)
        if not n:
            return ZSet.empty(2)
        rel = self.relations[self.primary]
        table, parts = rel.view_table("prev", (0, 1))
        keys, w = np.empty((n, 2), dtype=np.int64), np.empty(n, dtype=np.int64)
        first = _PART_ROWS[:parts] if parts <= len(_PART_ROWS) else np.arange(0, 2 * parts, 2, dtype=np.int64)
        if n <= NUMPY_SORT_ROWS:
            m = edge_delta_into(inserts, deletes, not self.directed, table, first, keys, w)
        else:  # the same, sorting with numpy's (SIMD) sort between its two kernels
            packed = np.empty(n, dtype=np.int64)
            m, bv, bo = pack_edge_ops(inserts, deletes, not self.directed, packed)
            if m >= 0:
                m = edge_delta_sorted(np.sort(packed[:m]), len(inserts), bv, bo, table, first, keys, w)
        if m >= 0:  # else ids too large to pack, or an overflow to report
            return ZSet(keys[:m], w[:m])
        rows, insert = _last_ops(inserts, deletes, normalise=not self.directed)
        if not len(rows):
            return ZSet.empty(2)
        have = rel.view("prev", (0, 1)).weight(rows) > 0
        change = insert != have
        return ZSet(np.ascontiguousarray(rows[change]), np.where(insert[change], 1, -1).astype(np.int64))

    def _oriented_delta(self, dd: ZSet) -> ZSet:
        """Directed graphs: the change of ``O`` implied by the (staged) change ``dd`` of ``D``."""
        if not len(dd):
            return ZSet.empty(2)
        k = dd.keys
        pairs = np.array(ZSet.from_arrays(np.stack([k.min(axis=1), k.max(axis=1)], axis=1), arity=2).keys)
        D = self.relations["D"]
        prev, curr = D.view("prev", (0, 1)), D.view("curr", (0, 1))
        rev = np.ascontiguousarray(pairs[:, ::-1])
        before = (prev.weight(pairs) + prev.weight(rev)) > 0
        after = (curr.weight(pairs) + curr.weight(rev)) > 0
        ch = before != after
        return ZSet(np.ascontiguousarray(pairs[ch]), np.where(after[ch], 1, -1).astype(np.int64))

    def _stage(self, ins: I64, dels: I64) -> ZSet:
        rels, active = self.relations, self.active
        delta = self._primary_delta(ins, dels)
        rels[self.primary].stage(delta)
        if self.directed:
            do = self._oriented_delta(delta) if active & {"O", "S"} else None
        else:
            do = delta
        if do is not None and "O" in active and self.directed:
            rels["O"].stage(do)
        sym = None
        if active & ({"S", "D"} - {self.primary}):
            sym = ZSet.from_arrays(np.concatenate([do.keys, do.keys[:, ::-1]]),
                                   np.concatenate([do.weights, do.weights]), arity=2)
        for name in active - {self.primary, "O"}:
            rels[name].stage(sym)
        return delta

    def _fused(self, ins: I64, dels: I64):
        """A small tick of an undirected graph with one view, staged and joined by one
        kernel call (``kernels.tick.edge_tick``): ``(edge delta, changes, commit)``, or
        ``None`` (nothing staged) when the tick takes the general path. ``commit`` is
        what ``apply`` calls instead of the relations' ``commit`` once every count is
        taken: usually ``Relation.commit_fused``, which commits what the kernel wrote
        without staging tries for it; ``None`` when the change is staged as usual (an
        emptied last run, a delta rule that needs the general path). The Python between
        the kernels of the general path cost twice those kernels at 10 changes a tick."""
        n = len(ins) + len(dels)
        if self.directed or not n or n > SMALL_ROWS or len(self.views) != 1 or len(self.active) != 1:
            return None
        rel = self.relations[self.primary]
        f = rel.fused_tick()
        if f is None:
            return None
        (name, v), = self.views.items()
        plan = v.fused
        if plan is None or plan[0] is not f:
            fp = v.join.fused_program(lambda src, kind, cols: f.parts(kind, cols) if src is rel else 0)
            if fp is None:
                return None
            prog, views = fp
            plan = v.fused = (f, np.concatenate([f.gather(kind, cols) for _, kind, cols in views]),
                              prog.program_args())
        code, keys, w, buf, tables, NP, okeys, ow = edge_tick(ins, dels, True, f.P, f.first, f.cols, f.sort,
                                                              f.last_rows, plan[1], *plan[2])
        if code == UNFUSED:
            return None
        if code == NO_CHANGE:
            return ZSet.empty(2), {name: ZSet.empty(len(v.columns))}, _nothing
        if code == JOINED:
            return ZSet(keys, w), {name: v.join.fused_rows(okeys, ow)}, lambda: rel.commit_fused(f, len(keys), buf, NP)
        rel.stage_fused(f, keys, w, buf, tables, NP)
        return rel.delta, {name: v.join.delta()}, None

    def apply(self, inserts=None, deletes=None) -> Tick:
        """Apply one tick of edge inserts and deletes; return every view's change.

        ``Tick.edge_delta`` is the change of the primary relation (undirected: pairs
        ``(min, max)``). A tick that fails (bad input, weight overflow) raises and changes
        nothing.
        """
        t0 = time.perf_counter()
        ins = as_edge_array(inserts if inserts is not None else np.zeros((0, 2), np.int64), "inserts")
        dels = as_edge_array(deletes if deletes is not None else np.zeros((0, 2), np.int64), "deletes")
        rels = [self.relations[n] for n in sorted(self.active)]
        try:
            fused = self._fused(ins, dels)
            if fused is not None:
                delta, changes, commit = fused
            else:
                delta = self._stage(ins, dels)
                changes = {name: v.join.delta() for name, v in self.views.items()}
                commit = None
            counts = {name: ch.total() for name, ch in changes.items()}
        except (WcojError, MemoryError, KeyboardInterrupt):
            for r in rels:
                r.rollback()
            raise
        if commit is not None:
            commit()
        else:
            for r in rels:
                r.commit()
        self.n_fused += fused is not None
        for name, v in self.views.items():
            v.count += counts[name]
            v.last_change = changes[name]
        self.n_ticks += 1
        self._n_edges += delta.total()
        return Tick(delta, changes, time.perf_counter() - t0)

    def edges(self) -> I64:
        """The current edges: directed arcs, or undirected pairs as ``(min, max)``."""
        return np.array(self.relations[self.primary].contents().keys)

    def nbytes(self) -> int:
        """Bytes held by all indexes of all relations."""
        return sum(self.relations[n].nbytes() for n in self.active)

    def check_views(self) -> None:
        """Raise ``QueryError`` unless every view's count equals a recomputation."""
        for name, v in self.views.items():
            fresh = v.join.batch(count_only=True)
            if fresh != v.count:
                raise QueryError(f"view {name}: maintained count {v.count} != recomputed {fresh}")
