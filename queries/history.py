"""The history of a database: its transaction log, and the read-only database values
(as of, since, history) that time-travel queries read.

Every transaction appends to a log: its ``t`` (1, 2, ...), its wall-clock instant and its
datoms as rows ``(e, a, v, tx, added)`` (interned ids; ``tx`` the transaction's entity
id, ``indexes.eav.tx_id(t)``; ``added`` 1 for an assertion, 0 for a retraction). An
in-memory database keeps a ``MemoryLog``; a durable one the SQLite log of
``queries.durable``, which has the same methods.

Database values, as in Datomic:

* ``as_of(t)``: the datoms live after transaction ``t``: for each ``(e, a, v)``, its last
  log row up to ``t``, when that row is an assertion;
* ``since(t)``: the datoms live now that were asserted after ``t``;
* ``history()``: every assertion and retraction ever made; a pattern of five terms
  ``[?e ?a ?v ?tx ?added]`` binds the transaction and the operation, and a shorter pattern
  matches every ``(e, v)`` the attribute ever had.

Each is a fresh ``EavStore`` (sharing the interner and schema of the database), built
from the log in O(n log n) numpy work for n log rows; the read-only ``Database`` over it
answers ``q`` and pull like any database.

Relies on ``indexes.eav`` and ``wcoj``; used by ``queries.database`` and
``queries.durable``.

>>> rows = np.array([[1, 7, 100, tx_id(1), 1], [1, 7, 100, tx_id(2), 0],
...                  [1, 7, 101, tx_id(2), 1]])
>>> live_rows(rows).tolist() == [[1, 7, 101, tx_id(2)]]
True
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from indexes.eav import EavStore, TX_BASE, tx_id, tx_t
from indexes.interner import BOOLEAN, TAG_SHIFT
from wcoj.errors import QueryError
from wcoj.zset import ZSet

__all__ = ["MemoryLog", "HistoryStore", "live_rows", "as_of_store", "since_store",
           "history_store", "resolve_t"]

I64 = npt.NDArray[np.int64]
_NO_ROWS = np.zeros((0, 5), dtype=np.int64)


class MemoryLog:
    """The log of an in-memory database: per transaction ``(t, instant, rows)``."""

    def __init__(self) -> None:
        self.txs: list[tuple[int, datetime, int]] = []   # (t, instant, n_datoms)
        self._chunks: list[I64] = []

    def __repr__(self) -> str:
        return f"MemoryLog(transactions={len(self.txs)})"

    def append(self, t: int, instant: datetime, rows: I64, **_: Any) -> None:
        """Log transaction ``t``: its instant and its ``(e, a, v, tx, added)`` rows."""
        self.txs.append((t, instant, len(rows)))
        self._chunks.append(np.asarray(rows, dtype=np.int64).reshape(-1, 5))

    def transactions(self) -> list[tuple[int, datetime, int]]:
        """``(t, instant, n_datoms)`` of every transaction, in order."""
        return list(self.txs)

    def rows(self, lo: int = 0, hi: int | None = None) -> I64:
        """Log rows of the transactions ``lo < t <= hi`` (all by default), in log order."""
        chunks = [c for (t, _, _), c in zip(self.txs, self._chunks) if lo < t and (hi is None or t <= hi)]
        return np.concatenate(chunks) if chunks else _NO_ROWS

    def after_commit(self, store: EavStore) -> None:
        """Nothing to do in memory (a durable log may snapshot here)."""


def live_rows(rows: I64) -> I64:
    """The live ``(e, a, v, tx)`` datoms of log rows ``(e, a, v, tx, added)`` in log
    order: each ``(e, a, v)``'s last row, when it is an assertion."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1, 5)
    if not len(rows):
        return np.zeros((0, 4), dtype=np.int64)
    order = np.lexsort((np.arange(len(rows)), rows[:, 2], rows[:, 1], rows[:, 0]))
    r = rows[order]
    last = np.ones(len(r), dtype=bool)
    last[:-1] = np.any(r[1:, :3] != r[:-1, :3], axis=1)
    r = r[last]
    return np.ascontiguousarray(r[r[:, 4] == 1][:, :4])


class HistoryStore(EavStore):
    """A read-only store of every assertion and retraction: ``datoms`` has five columns
    ``(e, a, v, tx, added)`` (``added`` the interned boolean) and each attribute's
    relation every ``(e, v)`` it ever had."""

    history = True

    def __init__(self, keyword: type = str) -> None:
        super().__init__(keyword)
        self.datoms = self.tables.relation("history", 5)

    def load(self, rows: I64) -> None:
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, 5).copy()
        rows[:, 4] = (np.int64(BOOLEAN) << TAG_SHIFT) | rows[:, 4]
        self.datoms.load(ZSet.from_arrays(rows, arity=5).distinct())
        by_aid = {self.aid(a): a for a in self.attributes}
        for aid in np.unique(rows[:, 1]).tolist():
            m = rows[:, 1] == aid
            self.relation(by_aid[aid]).load(ZSet.from_arrays(rows[m][:, [0, 2]], arity=2).distinct())


def _like(store: EavStore, cls: type = EavStore) -> EavStore:
    """An empty store of class ``cls`` with ``store``'s interner, schema and counters."""
    out = cls(store.keyword)
    out.interner = store.interner
    out.tables.lock = store.tables.lock  # one lock for every store of one interner
    for attr in store.attributes.values():
        out.install(attr)
    out.next_eid, out.next_tx = store.next_eid, store.next_tx
    return out


def detached(store: EavStore, log: Any) -> tuple[EavStore, MemoryLog]:
    """A copy of ``store`` and ``log`` that shares nothing mutable with them (its own
    interner, indexes and in-memory log), for ``Database.with_``."""
    out = _like(store)
    out.interner = store.interner.copy()
    out.load(store.datoms.contents().keys)
    copy = MemoryLog()
    rows = log.rows()
    ts = rows[:, 3] - TX_BASE  # each row's t, in log order
    for t, instant, n in log.transactions():
        copy.append(t, instant, rows[np.searchsorted(ts, t):np.searchsorted(ts, t, side="right")])
    return out, copy


def resolve_t(log: Any, t: Any) -> int:
    """The ``t`` named by ``t``: a transaction entity id, a ``t`` (1, 2, ...) or a
    ``datetime`` (the last transaction at or before it; 0 when none is)."""
    if isinstance(t, datetime):
        when = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
        return max((x for x, instant, _ in log.transactions() if instant <= when), default=0)
    if type(t) is not int and not isinstance(t, np.integer):
        raise QueryError(f"a point in time is a transaction id, a t or a datetime, got "
                         f"{type(t).__name__} {t!r}")
    t = int(t)
    t = tx_t(t) if t >= TX_BASE else t
    if t < 0:
        raise QueryError(f"transaction t must be >= 0, got {t}")
    return t


def as_of_store(store: EavStore, log: Any, t: int) -> EavStore:
    """The datoms live after transaction ``t``."""
    out = _like(store)
    out.load(live_rows(log.rows(0, t)))
    return out


def since_store(store: EavStore, t: int) -> EavStore:
    """The datoms live now that transactions after ``t`` asserted."""
    out = _like(store)
    keys = store.datoms.contents().keys
    out.load(keys[keys[:, 3] > tx_id(t)])
    return out


def history_store(store: EavStore, log: Any) -> HistoryStore:
    """Every assertion and retraction in the log."""
    out = _like(store, HistoryStore)
    out.load(log.rows())
    return out
