"""Datomic's ``fulltext``: words searched in the values of a ``:db/fulltext`` attribute.

``[(fulltext $ :movie/title "alien*") [[?e ?title ?tx ?score]]]`` binds each entity whose
value matches, with the value, the transaction that asserted it and a score (higher
matches better). The search runs on SQLite's FTS5 full-text engine (Python's own
``sqlite3``): words, ``AND``/``OR``/``NOT``, ``"phrases"`` and ``prefix*``, as in Datomic's
Lucene syntax for the common cases. The index is built from the attribute's values of the
version the query reads, once per attribute and tick of the circuit; a malformed search is
a ``QueryError``. A view holding ``fulltext`` re-runs its first tick on every transaction
(``CompiledView.volatile``).

Relies on ``sqlite3`` and ``indexes.eav``; used by ``queries.circuits``.

>>> from queries.database import Database
>>> db = Database()
>>> _ = db.transact('[{:db/ident :title :db/valueType :db.type/string :db/fulltext true}]')
>>> _ = db.transact('[{:title "Alien"} {:title "Aliens"} {:title "Heat"}]')
>>> sorted(db.q('[:find ?t :where [(fulltext $ :title "alien*") [[_ ?t]]]]'))
[('Alien',), ('Aliens',)]
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from queries.ast import Const, FnCall, SrcVar
from queries.clauses import arg_getter
from wcoj.errors import QueryError

__all__ = ["FullText"]


class FullText:
    """The value of one ``fulltext`` call for the decoded values of an outer row."""

    def __init__(self, outer: Any, call: FnCall, vars_: tuple):
        args = list(call.args)
        if args and isinstance(args[0], SrcVar):
            args = args[1:]
        if len(args) != 2 or not isinstance(args[0], Const):
            raise QueryError(f"fulltext takes $, an attribute and a search: {call}")
        self.outer, self.call, self.attr = outer, call, str(args[0].value)
        schema = outer.store.attribute(self.attr)   # UnknownAttributeError names it
        if not schema.fulltext:
            raise QueryError(f"fulltext needs an attribute with :db/fulltext true; {self.attr} "
                             "has none")
        self._search = arg_getter(args[1], vars_)
        self._index: sqlite3.Connection | None = None

    def clear(self) -> None:
        """Forget the index of the last tick (the values may have changed since)."""
        self._index = None

    def __call__(self, vals: list) -> list:
        search = self._search(vals)
        if not isinstance(search, str):
            raise QueryError(f"fulltext search must be a string, got {search!r} in {self.call}")
        con = self._index if self._index is not None else self._build()
        try:
            found = con.execute("SELECT rowid, v, tx, rank FROM t WHERE t MATCH ?", (search,)).fetchall()
        except sqlite3.Error as e:
            raise QueryError(f"bad fulltext search {search!r} in {self.call}: {e}") from None
        return [(e, v, tx, -rank) for e, v, tx, rank in found]

    def _build(self) -> sqlite3.Connection:
        store, kind = self.outer.store, self.outer.over
        rel = store.relations.get(self.attr)
        con = sqlite3.connect(":memory:")
        con.execute("CREATE VIRTUAL TABLE t USING fts5(v, tx UNINDEXED)")
        if rel is not None:
            z = rel.view(kind, (0, 1)).to_zset()
            ev = z.keys[z.weights > 0]
            if len(ev):
                rows = np.stack([ev[:, 0], np.full(len(ev), store.aid(self.attr)), ev[:, 1]], axis=1)
                txs = store.tx_of(rows, kind)
                values = store.interner.decode(ev[:, 1]).tolist()
                con.executemany("INSERT INTO t(rowid, v, tx) VALUES (?, ?, ?)",
                                zip(ev[:, 0].tolist(), values, txs.tolist()))
        self._index = con
        return con
