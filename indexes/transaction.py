"""The tick transaction: a change staged on every index, the views computed, then all of it
committed or none of it.

A ``Store`` holds a set of relations changed together (a graph's, a database's): their
tries' tables share one block (``wcoj.tables.TableBlock``), and one lock serialises
everything that reads or writes them. ``Store.transaction()`` opens a ``Transaction``:

* ``stage(relation, delta)`` stages a relation's change on all its indexes; the join
  reads the ``prev``/``delta``/``curr`` views of every staged relation;
* ``commit(then)`` applies every staged change in place and runs ``then`` (the owner's
  bookkeeping), with Ctrl-C deferred until both are done: a ``KeyboardInterrupt``
  raised meanwhile is raised when the commit has finished, never between two indexes;
* leaving the ``with`` block on an exception, before ``commit``, rolls everything back.

A ``ChangePlan`` is the other route of a tick: the delta rules of several joins compiled
by ``wcoj.tickgen`` into kernels that apply a small tick change by change in one call
(joining and committing in place; all or nothing, see ``wcoj.kernels.tick``).
The kernel writes a tick's changes and the views' rows into buffers the plan keeps and
returns only ints (a single-edge tick boxes no array); ``ChangePlan`` calls it again
while a trie needs room or the rows' buffer is full, with Ctrl-C deferred over the loop.

Relies on ``indexes.index`` and ``wcoj`` (tables, the tick compiler and kernels). Used by
``queries.graph``, ``queries.database`` and ``wcoj.multiway``'s relations.

>>> from wcoj import ZSet
>>> store = Store()
>>> r = store.relation("edge", 2)
>>> with store.transaction() as tx:
...     tx.stage(r, ZSet.from_rows([(1, 2)]))
...     tx.commit()
>>> r.contents().to_dict()
{(1, 2): 1}
"""

from __future__ import annotations

import threading
import time

import numpy as np

from indexes.index import Relation
from wcoj.errors import WeightOverflowError, as_interrupt
from wcoj.interrupts import deferred_interrupts
from wcoj.program import pack
from wcoj.tables import TableBlock
from wcoj.tickgen import (EDGE_ROWS, FULL, NEED_ROOM, OK, AtomSpec, TermSpec, compile_plan, cycle_rate, edge_changes,
                          rows_of)
from wcoj.zset import ZSet

__all__ = ["Store", "Transaction", "ChangePlan"]


class Store:
    """Relations changed together, their tables in one block, and their lock."""

    def __init__(self):
        self.block = TableBlock()
        self.relations: dict[str, Relation] = {}
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Store({list(self.relations)})"

    def relation(self, name: str, arity: int) -> Relation:
        """The relation ``name`` (created empty with ``arity`` columns if new)."""
        rel = self.relations.get(name)
        if rel is None:
            rel = self.relations[name] = Relation(name, arity, self.block)
        return rel

    def transaction(self) -> Transaction:
        return Transaction(self)


class Transaction:
    """One tick: stage, compute, then ``commit`` (see the module docstring)."""

    def __init__(self, store: Store):
        self.store = store
        self.staged: list[Relation] = []
        self.done = False

    def __enter__(self) -> Transaction:
        self.store.lock.acquire()
        return self

    def __exit__(self, kind, exc, tb) -> None:
        try:
            if not self.done:
                self.rollback()
        finally:
            self.store.lock.release()
        if exc is not None and as_interrupt(exc) is not exc:
            raise KeyboardInterrupt from None  # Ctrl-C met inside a kernel: say so

    def stage(self, relation: Relation, delta: ZSet, bounded: bool = False) -> None:
        """Stage ``delta`` on every index of ``relation`` (a failure stages nothing);
        ``bounded`` as in ``Relation.stage``."""
        if relation not in self.staged:
            self.staged.append(relation)  # first: an interrupt inside stage is rolled back too
        relation.stage(delta, bounded)

    def commit(self, then=None) -> None:
        """Apply every staged change in place, then call ``then()``; Ctrl-C waits."""
        with deferred_interrupts():
            for rel in self.staged:
                rel.commit()
            if then is not None:
                then()
            self.done = True

    def rollback(self) -> None:
        """Forget every staged change (Ctrl-C waits)."""
        with deferred_interrupts():
            for rel in self.staged:
                rel.rollback()
            self.staged = []
            self.done = True


class ChangePlan:
    """The delta rules of several joins over a store's relations, compiled for the change
    by change route (``wcoj.tickgen``).

    Parameters
    ----------
    store : the relations' store.
    joins : ``IncrementalGenericJoin`` objects (the views), each with ``change_terms()``
        not ``None``.
    relations : the relations whose changes the plan takes (their position is their id in
        a change list); each change updates every index of its relation.
    edges : for ``run_edges``: ``(directed, primary, oriented, sym, sym2)``, the relation
        ids of a graph's primary relation, its derived oriented relation (directed
        graphs) and up to two symmetric ones (-1 when not kept; see
        ``kernels.tick.edge_changes``).
    sets : every relation is a set (a graph's): leaves of weight 1 are not read.

    ``counts`` holds each view's count then the primary relation's rows; the kernel
    updates it when a tick succeeds. The plan is valid while no index is added
    (``current``).
    """

    def __init__(self, store: Store, joins: list, relations: list[Relation], edges=(0, 0, -1, -1, -1),
                 sets: bool = False):
        self.store, self.joins, self.relations, self.sets = store, list(joins), list(relations), sets
        rel_id = {id(r): i for i, r in enumerate(self.relations)}
        terms = []
        for v, join in enumerate(self.joins):
            for src, atoms, plan, delta, out in join.change_terms():
                specs = []
                for a, (s, kind, cols) in enumerate(atoms):
                    row = -1 if a == delta else s.ensure_index(cols).trie.part.offset
                    specs.append(AtomSpec(rel_id[id(s)], kind, row, tuple(cols)))
                terms.append(TermSpec(v, rel_id[id(src)], delta, tuple(specs), tuple(plan), tuple(out)))
        max_arity = max(r.arity for r in self.relations)
        rel_idx, idx_state, idx_cols = [0], [], []
        self.tries = {}  # state row -> the trie there (to grow it)
        for r in self.relations:
            for cols, idx in r.indexes.items():
                idx_state.append(idx.trie.part.offset)
                idx_cols.append(list(cols) + [-1] * (max_arity - len(cols)))
                self.tries[idx.trie.part.offset] = idx.trie
            rel_idx.append(len(idx_state))
        self.widths = [len(j.output) for j in self.joins]
        self.layout = pack([np.array(rel_idx), np.array(idx_state), np.array(idx_cols), np.array(
            [max_arity, int(edges[0]), *edges[1:]])])
        self.kernels = compile_plan(terms, max_arity, max(self.widths, default=1))
        self.rows = np.array(rows_of(terms), dtype=np.int64)
        self.counts = np.zeros(len(self.joins) + 1, dtype=np.int64)
        self._dcounts = np.zeros(len(self.joins) + 1, dtype=np.int64)  # run_edges' scratch
        self._no_edges = np.empty((0, 2), dtype=np.int64)               # the kernel's ins, dels when not given
        self._ch = np.zeros((KEEP_ROWS, max_arity + 2), dtype=np.int64)  # an edge tick's changes
        self._work = np.zeros((5, max(max_arity, len(self.counts))), dtype=np.int64)  # (see tickgen)
        self._buffers(KEEP_ROWS)
        self._unchanged = tuple(ZSet.empty(w) for w in self.widths)      # a tick no view saw
        self.generation = store.block.generation

    def _buffers(self, rows: int, keep: int = 0) -> None:
        """The views' rows and their consolidation: room for ``rows`` rows, the first
        ``keep`` of the rows kept."""
        old = self._out if keep else None
        self._out = np.empty((rows, max(self.widths, default=1) + 2), dtype=np.int64)
        self._res = np.empty_like(self._out)
        if keep:
            self._out[:keep] = old[:keep]

    def current(self) -> bool:
        """Whether no index was added to the store since the plan was made."""
        return self.store.block.generation == self.generation

    def edge_changes(self, ins: np.ndarray, dels: np.ndarray):
        """The changes of a graph tick, for the staged route: ``(bad, changes,
        n_primary)`` as ``kernels.tick.edge_changes`` gives them (rows ``(relation,
        weight, row...)``, the primary's first, sorted)."""
        return edge_changes(self.layout, self.store.block.array, ins, dels)

    def run_edges(self, ins: np.ndarray, dels: np.ndarray):
        """A graph tick of edge inserts and deletes (``int64[n, 2]``), change by change:
        ``(bad, delta, per view its change, a ZSet)``; ``bad`` >= 0 names an id out of
        range (flat position in ``ins`` then ``dels``; nothing done). ``delta`` is the
        primary relation's change, as ``(make, *args)`` for ``queries.graph.Tick``. The
        counts are updated. Raises ``WeightOverflowError`` (nothing changed)."""
        k = EDGE_ROWS * (len(ins) + len(dels))
        if k > len(self._ch):
            self._ch = np.zeros((k, self._ch.shape[1]), dtype=np.int64)
        ch = self._ch
        try:
            bad, n_primary, n, *r, a, b, w = self.kernels.run(
                self.store.block.array, self.layout, self.rows, ch, True, ins, dels, 0, 0, self._dcounts,
                self.counts, self.sets, self._out, self._res, self._work)
            if bad >= 0:
                return bad, None, None
            if r[0] != OK:
                r[-1] = self._resume(r, ch[:n], self._dcounts)
            if n_primary == 1:
                delta = (_one_change, a, b, w)
            elif n_primary == 0:
                delta = _NO_CHANGE
            else:  # the buffer is the next tick's: keep the primary rows
                delta = (_changes, ch[:n_primary, 1:4].copy())
            if r[-1] == 0:  # most single-edge ticks change no view
                return -1, delta, self._unchanged
            return -1, delta, self._views(r[-1])
        finally:
            self._shrink()  # a large tick grew them

    def run_stream(self, edges: np.ndarray, bounds: np.ndarray, tcounts: np.ndarray, seconds: np.ndarray):
        """Ticks of edge changes, each as ``run_edges`` does it, in as few kernel calls as
        the tries' growth allows: tick ``t`` inserts ``edges[bounds[t, 0]:bounds[t, 1]]``
        and deletes ``edges[bounds[t, 1]:bounds[t, 2]]``; ``tcounts[t]`` gets the counts
        after it and its number of changes of the primary relation, ``seconds[t]`` its time (from the cycle counter read inside the kernel
        between ticks, plus any growth of a trie in Python). Returns ``(t, bad, rows)``: ``t`` the first tick not done (``len(bounds)``
        when all are), ``bad`` >= 0 an id out of range in it (its flat position in the
        tick's inserts then deletes), ``rows`` the changes ``(tick, view, weight,
        keys...)`` of the ticks done. Raises ``WeightOverflowError`` for tick ``t``
        (``.done_ticks``, ``.done_rows``: what was done before it)."""
        parts, t, n = [], 0, len(bounds)
        stamps = np.zeros((n, 2), dtype=np.int64)
        dcounts = np.zeros_like(self.counts)
        B = self.store.block.array
        while t < n:
            t, bad, n_primary, ch, *r, out, m, done = self.kernels.stream_run(
                B, self.layout, self.rows, edges, bounds, t, dcounts, self.counts, self.sets, tcounts, stamps)
            parts.append(done)
            if t == n or bad >= 0:
                break
            r0 = time.perf_counter()
            if m > len(self._out):
                self._buffers(m)
            self._out[:m] = out[:m]
            try:
                k = self._resume([*r, m], ch, dcounts)  # grow the tries, finish tick t
            except WeightOverflowError as e:
                e.done_ticks, e.done_rows = t, _cat(parts, self.widths)
                seconds[:t] = (stamps[:t, 1] - stamps[:t, 0]) / cycle_rate()
                self._shrink()
                raise
            stamps[t, 1] += int((time.perf_counter() - r0) * cycle_rate())
            tcounts[t, :-1], tcounts[t, -1] = self.counts, n_primary
            parts.append(np.concatenate([np.full((k, 1), t, dtype=np.int64), self._res[:k]], axis=1))
            self._shrink()
            t += 1
            B = self.store.block.array  # growth may have moved the block
        seconds[:t] = (stamps[:t, 1] - stamps[:t, 0]) / cycle_rate()
        return t, bad if t < n else -1, _cat(parts, self.widths)

    def run(self, ch: np.ndarray):
        """A tick of prepared changes: rows ``(relation id, weight, row...)`` (the row in
        natural order, padded to the widest arity); per view ``(keys, weights)``."""
        dcounts = np.zeros_like(self.counts)
        try:
            r = list(self._call(ch, 0, 0, dcounts)[3:9])
            if r[0] != OK:
                r[-1] = self._resume(r, ch, dcounts)
            return [(z.keys, z.weights) for z in self._views(r[-1])]
        finally:
            self._shrink()

    def _call(self, ch, start: int, m: int, dcounts):
        """The plan's ``run`` kernel on the prepared changes ``ch`` from ``start`` on, the
        first ``m`` rows of the views' buffer kept."""
        return self.kernels.run(self.store.block.array, self.layout, self.rows, ch, False, self._no_edges,
                                self._no_edges, start, m, dcounts, self.counts, self.sets, self._out, self._res,
                                self._work)

    def _resume(self, r, ch, dcounts) -> int:
        """Grow tries or the views' buffers and call again until the tick is done (Ctrl-C
        deferred: the tick is half applied between the calls); raise on an overflow
        (everything undone). ``r``: the kernel's ``(status, change, level, need, state
        row, m)``. Returns the rows of ``_res``."""
        with deferred_interrupts():
            while r[0] in (NEED_ROOM, FULL):
                status, i, level, need, off, m = r
                if status == NEED_ROOM:
                    self.tries[off].make_room(int(level), int(need))
                else:
                    self._buffers(2 * len(self._out), m)
                r = self._call(ch, i, m, dcounts)[3:9]
        if r[0] != OK:
            i = int(r[1])
            raise WeightOverflowError(f"a weight does not fit in int64 at the change of row "
                                      f"{tuple(ch[i, 2:].tolist())} (weight {int(ch[i, 1])}); the tick was undone")
        return r[-1]

    def _views(self, k: int) -> list[ZSet]:
        """Per view its change, a ``ZSet`` of its rows among the ``k`` consolidated rows
        ``(view, weight, keys...)`` of ``_res`` (copies: the buffer is the next tick's)."""
        res = self._res[:k]
        if len(self.joins) == 1:
            return [ZSet(res[:, 2:2 + self.widths[0]].copy(), res[:, 1].copy())]
        bounds = np.searchsorted(res[:, 0], np.arange(len(self.joins) + 1))
        return [ZSet(res[bounds[v]:bounds[v + 1], 2:2 + self.widths[v]].copy(),
                     res[bounds[v]:bounds[v + 1], 1].copy()) for v in range(len(self.joins))]

    def _shrink(self) -> None:
        """Give back buffers a large tick grew (the next large tick grows its own)."""
        if len(self._out) > KEEP_ROWS:
            self._buffers(KEEP_ROWS)
        if len(self._ch) > KEEP_ROWS:
            self._ch = np.zeros((KEEP_ROWS, self._ch.shape[1]), dtype=np.int64)


KEEP_ROWS = 1 << 12
"""Rows a ``ChangePlan`` keeps in its buffers between ticks (changes, and the views' rows
of a tick); a tick that needs more grows them, and they shrink back after it."""


_NO_CHANGE = (ZSet.empty, 2)


def _one_change(a: int, b: int, w: int) -> ZSet:
    """A tick's one change of the primary relation, as a Z-set."""
    return ZSet(np.array([[a, b]], dtype=np.int64), np.array([w], dtype=np.int64))


def _changes(rows: np.ndarray) -> ZSet:
    """A tick's changes of the primary relation, rows ``(weight, a, b)``, as a Z-set."""
    return ZSet(rows[:, 1:3].copy(), rows[:, 0].copy())


def _cat(parts: list, widths: list[int]) -> np.ndarray:
    """``parts`` (rows ``(tick, view, weight, keys...)``) as one array."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros((0, 3 + max(widths, default=1)), dtype=np.int64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
