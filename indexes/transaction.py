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

A ``ChangePlan`` is the other route of a tick: the delta rules of several joins packed for
``kernels.tick``, which applies a small tick change by change in one call (staging,
joining and committing in place; all or nothing, see there). ``ChangePlan.run`` loops on
that call while a trie needs room, and defers Ctrl-C over the loop.

Relies on ``indexes.index`` and ``wcoj`` (tables, program packing, tick kernels). Used by
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

import signal
import threading
from contextlib import contextmanager

import numpy as np

from indexes.index import Relation
from wcoj.errors import WeightOverflowError
from wcoj.kernels.tick import NEED_ROOM, OK, change_tick, edge_changes, edge_tick
from wcoj.program import TermsProgram, pack
from wcoj.tables import TableBlock
from wcoj.zset import ZSet

__all__ = ["Store", "Transaction", "ChangePlan", "deferred_interrupts"]


@contextmanager
def deferred_interrupts():
    """Hold back Ctrl-C (SIGINT) inside the block; raise its ``KeyboardInterrupt`` when
    the block is done. Only the main thread receives signals, so elsewhere (and where a
    program installed its own handler) this does nothing."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    caught = []
    old = signal.signal(signal.SIGINT, lambda *a: caught.append(a))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if caught:
            raise KeyboardInterrupt


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

    def stage(self, relation: Relation, delta: ZSet) -> None:
        """Stage ``delta`` on every index of ``relation`` (a failure stages nothing)."""
        relation.stage(delta)
        if relation not in self.staged:
            self.staged.append(relation)

    def commit(self, then=None) -> None:
        """Apply every staged change in place, then call ``then()``; Ctrl-C waits."""
        with deferred_interrupts():
            for rel in self.staged:
                rel.commit()
            if then is not None:
                then()
            self.done = True

    def rollback(self) -> None:
        for rel in self.staged:
            rel.rollback()
        self.staged = []
        self.done = True


class ChangePlan:
    """The delta rules of several joins over a store's relations, packed for the change
    by change route (``kernels.tick``).

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

    ``counts`` holds each view's count then the primary relation's rows; the kernel
    updates it when a tick succeeds. The plan is valid while no index is added
    (``current``).
    """

    def __init__(self, store: Store, joins: list, relations: list[Relation], edges=(0, 0, -1, -1, -1)):
        self.store, self.joins, self.relations = store, list(joins), list(relations)
        rel_id = {id(r): i for i, r in enumerate(self.relations)}
        specs, outputs, term_rel, term_view, gather = [], [], [], [], []
        n_levels = n_slots = n_parts = 0
        for v, join in enumerate(self.joins):
            for src, spec, parts in join.change_terms():
                specs.append(spec)
                outputs.append(list(join.output))
                term_rel.append(rel_id[id(src)])
                term_view.append(v)
                for what, s, cols in parts:
                    idx = s.ensure_index(cols)
                    table = idx.trie.part if what == "state" else idx.change_table()
                    gather.extend(range(table.offset, table.offset + len(cols)))
                plan = spec[0]
                n_levels = max(n_levels, len(plan))
                n_parts = max(n_parts, len(parts))
                n_slots = max(n_slots, max((len(lv.atoms) * 2 for lv in plan), default=1))
        self.program = TermsProgram(specs, outputs)
        max_arity = max(r.arity for r in self.relations)
        rel_idx, idx_state, idx_change, idx_cols = [0], [], [], []
        self.tries = {}  # state row -> the trie there (to grow it)
        for r in self.relations:
            for cols, idx in r.indexes.items():
                idx_state.append(idx.trie.part.offset)
                idx_change.append(idx.change_table().offset)
                idx_cols.append(list(cols) + [-1] * (max_arity - len(cols)))
                self.tries[idx.trie.part.offset] = idx.trie
            rel_idx.append(len(idx_state))
        self.widths = [len(j.output) for j in self.joins]
        directed, primary, o, s, s2 = edges
        scalars = [max(self.widths, default=1), max_arity, len(self.joins), n_levels, n_slots, n_parts,
                   int(directed), primary, o, s, s2]
        p = self.program
        self.code = pack([p.at, p.deep, p.fixed, p.part_rows, *p.shape, p.term_levels, p.term_parts, p.out_cols,
                          p.first_part, p.term_seed, np.array(term_rel), np.array(term_view), np.array(gather),
                          np.array(rel_idx), np.array(idx_state), np.array(idx_change), np.array(idx_cols),
                          np.array(scalars)])
        self.counts = np.zeros(len(self.joins) + 1, dtype=np.int64)
        self.generation = store.block.generation

    def current(self) -> bool:
        """Whether no index was added to the store since the plan was made."""
        return self.store.block.generation == self.generation

    def run_edges(self, ins: np.ndarray, dels: np.ndarray):
        """A graph tick of edge inserts and deletes (``int64[n, 2]``), change by change:
        ``(primary changes as (rows, weights), per view (keys, weights))``; the counts
        are updated. Raises ``WeightOverflowError`` (nothing changed)."""
        dcounts = np.zeros_like(self.counts)
        ch_rel, ch_rows, ch_w, n_primary, out = edge_tick(self.store.block.array, self.code, ins, dels, dcounts,
                                                          self.counts)
        if out[0] != OK:
            out = self._resume(out, ch_rel, ch_rows, ch_w, dcounts)
        return (ch_rows[:n_primary, :2], ch_w[:n_primary]), self._split(out[5], out[6], out[7])

    def edge_changes(self, ins: np.ndarray, dels: np.ndarray):
        """The changes of a graph tick, for the staged route: ``(relation ids, rows,
        weights, how many are the primary relation's)``, the primary's first, sorted."""
        return edge_changes(self.code, self.store.block.array, ins, dels)

    def run(self, ch_rel: np.ndarray, ch_rows: np.ndarray, ch_w: np.ndarray):
        """A tick of prepared changes (``ch_rel[i]``: the relation's id, ``ch_rows[i]``:
        the row, natural order, padded to the widest arity; ``ch_w[i]``: its weight):
        per view ``(keys, weights)``."""
        dcounts = np.zeros_like(self.counts)
        out = change_tick(self.store.block.array, self.code, ch_rel, ch_rows, ch_w, 0, dcounts, self.counts)
        if out[0] != OK:
            out = self._resume(out, ch_rel, ch_rows, ch_w, dcounts)
        return self._split(out[5], out[6], out[7])

    def _resume(self, out, ch_rel, ch_rows, ch_w, dcounts):
        """Grow tries and call again until the tick is done (Ctrl-C deferred: the tick is
        half applied between the calls); raise on an overflow (everything undone)."""
        parts = []
        with deferred_interrupts():
            while out[0] == NEED_ROOM:
                _, i, level, need, off = out[:5]
                parts.append((out[5], out[6], out[7]))
                self.tries[off].make_room(int(level), int(need))
                out = change_tick(self.store.block.array, self.code, ch_rel, ch_rows, ch_w, i, dcounts,
                                  self.counts)
        if out[0] != OK:
            i = int(out[1])
            raise WeightOverflowError(f"a weight does not fit in int64 at the change of row "
                                      f"{tuple(ch_rows[i].tolist())} (weight {int(ch_w[i])}); the tick was undone")
        if not parts:
            return out
        parts.append((out[5], out[6], out[7]))
        keys = np.concatenate([p[0] for p in parts])
        weights = np.concatenate([p[1] for p in parts])
        views = np.concatenate([p[2] for p in parts])
        return (OK, 0, 0, 0, 0) + _consolidated(keys, weights, views)

    def _split(self, keys, weights, views):
        """Per view ``(keys, weights)`` of the consolidated rows (sorted by view)."""
        if len(self.joins) == 1:
            return [(keys[:, :self.widths[0]], weights)]
        bounds = np.searchsorted(views, np.arange(len(self.joins) + 1))
        return [(keys[bounds[v]:bounds[v + 1], :self.widths[v]], weights[bounds[v]:bounds[v + 1]])
                for v in range(len(self.joins))]


def _consolidated(keys, weights, views):
    """Rows summed per (view, row), zeros dropped, sorted by view then row."""
    z = ZSet.from_arrays(np.concatenate([views[:, None], keys], axis=1), weights)
    return np.ascontiguousarray(z.keys[:, 1:]), z.weights, np.ascontiguousarray(z.keys[:, 0])
