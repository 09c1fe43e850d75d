"""A registered view: a query whose answer each transaction keeps up to date.

``Database.view`` makes one; the circuit it steps is ``queries.circuits.CompiledView``.

Relies on ``queries.circuits`` (through the database), ``queries.aggregates``,
``queries.results`` and ``indexes.index``; used by ``queries.database``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from indexes.index import Relation
from queries.aggregates import Groups
from queries.ast import FindPull, Query
from queries.results import Change, pulled, shape
from wcoj.errors import QueryError
from wcoj.zset import ZSet

if TYPE_CHECKING:
    from queries.database import Database

__all__ = ["View"]


class View:
    """A query kept up to date: ``result()`` always equals ``db.q`` of the same query.

    The query is compiled once to a DBSP circuit (``queries.circuits``) whose sources are
    the attribute deltas of each transaction; its first tick ran over the database when the
    view was registered, each transaction steps it. The answer is kept as interned ids in a
    relation (no Python copy of it), aggregates as per-group state (``Groups``); rows are
    decoded to Python values when read. Pulled maps are read from the current database
    when the rows are read; a transaction's change lists the rows whose entity it touched.
    """

    def __init__(self, db: Database, name: str, query: Query, inputs: tuple):
        self.db, self.name, self.query, self.inputs = db, name, query, inputs
        self.circuit = db._compile(query, inputs)
        if self.circuit.reads_log:
            raise QueryError("tx-ids and tx-data read the log, which a transaction joins only "
                             "after its views are updated: use q for them, not a view")
        self.groups: Groups | None = None
        self._answer: Relation | None = None
        self._pulls = [i for i, e in enumerate(query.find.elements) if isinstance(e, FindPull)]
        for i in self._pulls:  # a view reads this database alone (Database.view)
            src = query.find.elements[i].src.name
            if src != "$":
                raise QueryError(f"(pull {src} ...) reads a database; a view's pulls read $ only")
        z = self.circuit.start()
        if self.circuit.aggregated:
            self.groups = Groups(query, self.circuit.cols, db.registry, db.store.interner)
            self._group_change(z)
        else:
            self._answer = Relation(f"view {name}", z.arity)
            self._answer.load(z)
        self.mode = "circuit"
        self.last_change = Change()
        self._staged: tuple | None = None

    def __repr__(self) -> str:
        return f"View({self.name!r}, incremental circuit, rows={len(self._current())}, {self.circuit.refresh})"

    def _decode(self, ids: np.ndarray, kind: str = "prev") -> list:
        rows = [tuple(r) for r in self.db.store.interner.decode(ids).tolist()] if len(ids) else []
        if self._pulls:
            rows = pulled(self.db.store, self.query, rows, kind, self.inputs)
        return rows

    def _current(self) -> list:
        if self.groups is not None:
            return self.groups.rows()
        return self._decode(self._answer.contents().keys)

    def result(self) -> Any:
        """The current answer, shaped by the find spec like ``Database.q``."""
        return shape(self.query, self._current())

    def _group_change(self, z: Any) -> tuple[Change, Any]:
        removed, added, undo = self.groups.apply(z)
        return Change(added, removed), undo

    def _stage(self, changed: set[str]) -> Change:
        self._staged = None
        stepped = self.circuit.step()
        if stepped is None:
            z, undo = None, None
        else:
            z, undo, whole = stepped
            if whole:  # the new answer (queries.refresh): the change is new - old
                z = z.minus(self._rows())
        if self.groups is not None:
            if z is None:
                return Change()
            self._staged = ("groups", None, undo)  # circuit undo first: groups may raise
            ch, gundo = self._group_change(z)
            self._staged = ("groups", gundo, undo)
            return ch
        self._staged = ("answer", None, undo)
        if z is not None and len(z):
            self._answer.stage(z)
        if self._pulls:
            return self._pull_change(z)
        if z is None:
            return Change()
        return Change(z.keys[z.weights > 0], z.keys[z.weights < 0], self._decode)

    def _rows(self) -> ZSet:
        """The committed answer as ``:find`` (+ ``:with``) id rows."""
        if self.groups is None:
            return self._answer.contents()
        return self.groups.id_rows()

    def _pull_change(self, z: Any) -> Change:
        """The rows gained and lost, and the rows whose pulled entity the transaction
        touched (old maps out, new maps in); decoded now, while both states exist."""
        touched = self.db.store.datoms.delta.keys[:, 0]  # entities with a datom changed
        before = self._answer.contents().keys
        hit = np.zeros(len(before), dtype=bool)
        for i in self._pulls:
            hit |= np.isin(before[:, i], touched)
        added = z.keys[z.weights > 0] if z is not None else before[:0]
        removed = z.keys[z.weights < 0] if z is not None else before[:0]
        gone = {tuple(r) for r in removed.tolist()}
        still = np.array([r for r in before[hit].tolist() if tuple(r) not in gone],
                         dtype=np.int64).reshape(-1, before.shape[1])
        return Change(self._decode(np.concatenate([added, still]), "curr"),
                      self._decode(np.concatenate([removed, still]), "prev"))

    def _commit(self, change: Change) -> None:
        if self._staged is not None and self._staged[0] == "answer":
            self._answer.commit()
        self._staged = None
        self.last_change = change

    def _rollback(self) -> None:
        """The transaction failed: forget the staged change (and undo a stepped circuit)."""
        if self._staged is not None:
            kind, state, undo = self._staged
            if kind == "groups" and state is not None:
                self.groups.undo(state)
            if kind == "answer":
                self._answer.rollback()
            if undo is not None:
                self.circuit.undo(undo)
        self._staged = None
