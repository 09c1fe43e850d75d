"""What a query returns: rows decoded, pulled, sorted and shaped by the find spec.

``shape`` turns rows into what ``q`` returns (a set, a list, a tuple, a scalar, or maps
for ``:keys``/``:strs``/``:syms``); ``pulled`` replaces entity ids by pulled maps;
``Change`` is a view's change in one transaction, decoded when read; ``answer`` is all of it
for a compiled query's first tick (what ``q`` and a nested ``q`` return); ``Report`` is
what ``transact`` returns, its datoms decoded when read.

Relies on ``queries.pull``, ``queries.aggregates`` and ``queries.functions`` (the order of
values); used by ``queries.database`` and ``queries.subquery``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from indexes.eav import EavStore
from queries.aggregates import Groups
from queries.ast import BindScalar, FindColl, FindPull, FindScalar, FindTuple, Query, Var
from queries.bind import Inputs
from queries.edn import Keyword, Symbol
from queries.functions import compare
from queries.pull import pull
from wcoj.errors import QueryError

__all__ = ["Change", "Report", "answer", "shape", "pulled", "with_datoms"]


class Change:
    """Rows a view gained and lost in one transaction.

    ``added`` and ``removed`` are lists of Python tuples, decoded from the view's interned
    ids the first time they are read (a transaction's change costs nothing to decode until
    then).
    """

    __slots__ = ("_added", "_removed", "_decode")

    def __init__(self, added: Any = None, removed: Any = None, decode: Any = None):
        self._added = [] if added is None else added
        self._removed = [] if removed is None else removed
        self._decode = decode

    def _read(self, rows: Any) -> list:
        return self._decode(rows) if isinstance(rows, np.ndarray) else rows

    @property
    def added(self) -> list:
        self._added = self._read(self._added)
        return self._added

    @property
    def removed(self) -> list:
        self._removed = self._read(self._removed)
        return self._removed

    def __bool__(self) -> bool:
        return bool(len(self._added) or len(self._removed))

    def __repr__(self) -> str:
        return f"Change(added={self.added!r}, removed={self.removed!r})"


def answer(compiled: Any, inputs: tuple, over: str = "prev") -> Any:
    """The first tick of ``compiled`` (a ``queries.circuits.CompiledView``) over the ``over``
    version of its store, decoded, aggregated, pulled and shaped as ``q`` returns it."""
    q, interner = compiled.query, compiled.store.interner
    z = compiled.first_tick(over)
    if not compiled.aggregated:
        rows = [tuple(r) for r in interner.decode(z.keys).tolist()]
    else:
        groups = Groups(q, compiled.cols, compiled.ev.registry, interner)
        groups.apply(z)
        rows = groups.rows()
    if any(isinstance(e, FindPull) for e in q.find.elements):
        rows = pulled(compiled.store, q, rows, over, inputs, compiled.ev.dbs)
    return shape(q, rows)


def pulled(store: EavStore, query: Query, rows: list, kind: str, inputs: tuple,
           dbs: dict | None = None) -> list:
    """Rows with each pull element's entity id replaced by its pulled map (a pattern
    given as an input, ``(pull ?e ?pattern)``, is read from ``inputs``; ``(pull $old ?e
    ...)`` reads the database ``dbs`` holds for ``$old``, as it is)."""
    elems = query.find.elements
    given = {d.var.name: v for d, v in Inputs(query, inputs).bindings if isinstance(d, BindScalar)}
    specs = [(given[e.pattern.name] if isinstance(e.pattern, Var) else e.pattern)
             if isinstance(e, FindPull) else None for e in elems]
    reads = [(store, kind) for _ in elems]
    for i, e in enumerate(elems):
        if isinstance(e, FindPull) and e.src.name != "$":
            if e.src.name not in (dbs or {}):
                raise QueryError(f"(pull {e.src.name} ...) reads a database; {e.src.name} is a "
                                 f"collection of tuples")
            reads[i] = (dbs[e.src.name], "prev")
    return [tuple(pull(reads[i][0], x, spec, reads[i][1]) if spec is not None else x
                  for i, (spec, x) in enumerate(zip(specs, r))) for r in rows]


def _sort(rows: list) -> list:
    def cmp(a: Any, b: Any) -> int:
        for x, y in zip(a, b):
            c = compare(x, y)
            if c:
                return c
        return 0
    try:
        return sorted(rows, key=functools.cmp_to_key(cmp))
    except TypeError:
        return rows


def shape(query: Query, rows: list) -> Any:
    f = query.find
    if query.keys is not None:
        # Datomic: :keys gives keyword keys, :strs strings, :syms symbols
        make = {"keys": lambda k: Keyword(":" + k), "syms": Symbol}.get(query.keys_kind, str)
        keys = [make(str(k).lstrip(":")) for k in query.keys]
        if isinstance(f, FindTuple):
            return dict(zip(keys, rows[0])) if rows else None
        return [dict(zip(keys, r)) for r in _sort(rows)]
    if isinstance(f, FindColl):
        return [r[0] for r in _sort(rows)]
    if isinstance(f, FindTuple):
        return _sort(rows)[0] if rows else None
    if isinstance(f, FindScalar):
        return _sort(rows)[0][0] if rows else None
    try:
        return set(rows)
    except TypeError:  # pulled maps or collection aggregates are not hashable
        return _sort(rows)


def with_datoms(tx_data, datoms: list):
    """``tx_data`` (a list, or a function giving one) with ``datoms`` last."""
    return (lambda: tx_data() + datoms) if callable(tx_data) else tx_data + datoms


class Report:
    """What a transaction did: its entity ``tx``, its datoms ``tx_data`` (``(e, attr,
    value, added)``, decoded when first read), ``tempids``, each view's change ``views``
    and the time it took.

    >>> from queries.database import Database
    >>> db = Database()
    >>> _ = db.transact('[{:db/ident :n :db/valueType :db.type/long}]')
    >>> r = db.transact([{":db/id": "x", ":n": 7}])
    >>> [(str(a), v, added) for _, a, v, added in r.tx_data][0], r.tempids["x"] == r.tx_data[0][0]
    ((':n', 7, True), True)
    """

    __slots__ = ("tx", "_tx_data", "tempids", "views", "seconds", "db_after")

    def __init__(self, tx: int, tx_data, tempids: dict, views: dict[str, Change], seconds: float = 0.0):
        self.tx, self.tempids, self.views, self.seconds = tx, tempids, views, seconds
        self._tx_data = tx_data  # a list, or a function giving it
        self.db_after = None  # Database.with_: the database the transaction was applied to

    @property
    def tx_data(self) -> list:
        d = self._tx_data
        if callable(d):
            d = self._tx_data = d()
        return d

    def __repr__(self) -> str:
        return (f"Report(tx={self.tx}, tempids={self.tempids!r}, views={sorted(self.views)}, "
                f"seconds={self.seconds:.6f})")
