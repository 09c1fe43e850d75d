"""The Datalog database: transactions, one-off queries, and views kept up to date.

``Database.transact`` takes Datomic transaction data (EDN text or Python data with keywords
written as ``":ns/name"`` strings): list forms ``[":db/add", e, a, v]``,
``[":db/retract", e, a, v]``, ``[":db/retractEntity", e]``, map forms with ``:db/id``,
attribute installs (``:db/ident``/``:db/valueType``/``:db/cardinality``/``:db/unique``,
``:db.install/_attribute`` style too), string tempids and ``#db/id [:db.part/user -100]``
tempids, lookup refs ``[attr value]``, reverse attributes in maps, nested maps for refs, and
upserts through ``:db.unique/identity``. A transaction is a set of datoms: re-adding a datom
or retracting a missing one changes nothing, and cardinality-one replaces the old value.

A transaction is atomic, like a ``Graph`` tick (``queries.graph``): it is validated and
resolved, staged on every relation, every view computes its change, and only then is
everything committed; any error rolls all of it back and leaves the database and every view
as they were.

Views (``Database.view``) of conjunctive queries are ``IncrementalGenericJoin`` deltas (work
proportional to the change). Views with ``not``, ``or``, rules (recursive too), aggregates,
functions or collection inputs are DBSP circuits compiled by ``queries.circuits`` and
stepped with each transaction's per-attribute deltas; a failed transaction restores their
state. Only pull in ``:find`` and the database functions (``get-else``, ``missing?``,
``get-some``) still make a view recompute on the staged state when a transaction touches an
attribute it reads (``View.fallback`` says why). ``load_datoms``/``load_edges`` take numpy
arrays as one transaction, without a Python loop per datom.

Relies on ``indexes.eav``, ``queries.compile``, ``queries.parse``; the user-facing facade.

>>> db = Database()
>>> _ = db.transact('''[{:db/ident :person/name :db/valueType :db.type/string
...                      :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
...                     {:db/ident :person/friend :db/valueType :db.type/ref
...                      :db/cardinality :db.cardinality/many}]''')
>>> r = db.transact([{":db/id": "a", ":person/name": "Ann"},
...                  {":db/id": "b", ":person/name": "Bob", ":person/friend": "a"}])
>>> friends = db.view('[:find ?n ?f :where [?x :person/name ?n] [?x :person/friend ?y] '
...                   '[?y :person/name ?f]]')
>>> friends.result()
{('Bob', 'Ann')}
>>> r = db.transact([[":db/add", r.tempids["a"], ":person/friend", r.tempids["b"]]])
>>> sorted(r.views[friends.name].added)
[('Ann', 'Bob')]
"""

from __future__ import annotations

import functools
import itertools
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from indexes.eav import Attribute, EavStore, tx_t
from indexes.interner import check_depth
from indexes.transaction import deferred_interrupts
from queries.ast import (
    And, Const, FindColl, FindPull, FindScalar, FindTuple, FnCall, Not, NotJoin, Or, OrJoin,
    Pattern, Predicate, Query,
)
from queries.circuits import CompiledView, Groups, Unsupported, compile_view
from queries.compile import Evaluator, JoinPlan, _ref_vars, bind_inputs, find_rows
from queries.edn import Keyword, loads
from queries.functions import compare
from queries.history import MemoryLog, as_of_store, history_store, resolve_t, since_store
from queries.parse import check_rules, parse_query
from queries.transact import bulk, resolve
from wcoj.errors import PerformanceWarning, QueryError, ReadOnlyError, SchemaError

__all__ = ["Database", "View", "Report", "Change", "TX_INSTANT"]

TX_INSTANT = ":db/txInstant"  # every transaction entity has one: its wall-clock instant

@dataclass
class Change:
    """Rows a view gained and lost in one transaction (decoded Python tuples)."""

    added: list = field(default_factory=list)
    removed: list = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


@dataclass
class Report:
    """What a transaction did: datoms ``(e, attr, value, added)``, tempids, view changes."""

    tx: int
    tx_data: list
    tempids: dict
    views: dict[str, Change]
    seconds: float = 0.0


class View:
    """A query kept up to date: ``result()`` always equals ``db.q`` of the same query.

    ``mode`` is ``"join"`` (a conjunctive query: ``IncrementalGenericJoin`` deltas),
    ``"circuit"`` (compiled by ``queries.circuits``: not, or, rules, aggregates, functions)
    or ``"recompute"`` (``fallback`` says why: the query is re-run on the staged state when
    a transaction touches an attribute it reads).
    """

    def __init__(self, db: Database, name: str, query: Query, inputs: tuple):
        self.db, self.name, self.query, self.inputs = db, name, query, inputs
        ev = db._evaluator("prev", query, inputs)
        table, rules = bind_inputs(ev, query, inputs)
        self.plan: JoinPlan | None = None
        self.circuit: CompiledView | None = None
        self.groups: Groups | None = None
        self.fallback: str | None = None
        self._counts: dict = {}
        if JoinPlan.eligible(query, table):
            consts = dict(zip(table.vars, next(iter(table.rows))))
            self.plan = JoinPlan(ev, query, consts)
            self._count_change(self.plan.join.batch("prev"), commit=True)
        else:
            try:
                self.circuit = compile_view(ev, query, table, rules)
            except Unsupported as e:
                self.fallback = e.reason
            except QueryError as e:  # q raises it too, below, if it is the user's error
                self.fallback = str(e)
            if self.circuit is not None:
                z = self.circuit.start()
                if self.circuit.aggregated:
                    self.groups = Groups(query, self.circuit.cols)
                    self._group_change(z)
                else:
                    self._count_change(z, commit=True)
            else:
                self._rows = {_key(r): r for r in db._rows(query, inputs, "prev")}
        self.mode = "join" if self.plan else "circuit" if self.circuit else "recompute"
        if self.mode == "recompute":
            warnings.warn(PerformanceWarning(
                f"view {name}: {self.fallback}; it re-runs the whole query on every transaction "
                "that touches an attribute it reads (db.q of it answers the same once)"), stacklevel=3)
        self.attrs = _attributes_read(query, rules)
        self.last_change = Change()
        self._staged: tuple | None = None

    def __repr__(self) -> str:
        mode = {"join": "incremental join", "circuit": "incremental circuit"}.get(
            self.mode, f"recompute on change ({self.fallback})")
        return f"View({self.name!r}, {mode}, rows={len(self._current())})"

    def _current(self) -> list:
        if self.groups is not None:
            return self.groups.rows()
        if self.mode == "recompute":
            return list(self._rows.values())
        ids = [k for k, c in self._counts.items() if c > 0]
        if not ids:
            return []
        dec = self.db.store.interner.decode(np.array(ids, dtype=np.int64)).tolist()
        return [tuple(r) for r in dec]

    def result(self) -> Any:
        """The current answer, shaped by the find spec like ``Database.q``."""
        return _shape(self.query, self._current())

    def _count_change(self, z: Any, commit: bool = False) -> tuple[Change, dict]:
        """The change of the set of rows from a delta ``z`` of per-row counts."""
        counts, added, removed = {}, [], []
        for key, w in zip(map(tuple, z.keys.tolist()), z.weights.tolist()):
            old = self._counts.get(key, 0)
            new = old + w
            counts[key] = new
            if old <= 0 < new:
                added.append(key)
            elif new <= 0 < old:
                removed.append(key)
        dec = self.db.store.interner.decode
        ch = Change([tuple(r) for r in dec(np.array(added, dtype=np.int64)).tolist()]
                    if added else [],
                    [tuple(r) for r in dec(np.array(removed, dtype=np.int64)).tolist()]
                    if removed else [])
        if commit:
            self._apply_counts(counts)
        return ch, counts

    def _apply_counts(self, counts: dict) -> None:
        for k, c in counts.items():
            if c:
                self._counts[k] = c
            else:
                self._counts.pop(k, None)

    def _group_change(self, z: Any) -> tuple[Change, Any]:
        ids = list(map(tuple, z.keys.tolist()))
        vals = [tuple(r) for r in self.db.store.interner.decode(z.keys).tolist()] if ids else []
        removed, added, undo = self.groups.apply(ids, vals, z.weights.tolist())
        return Change(added, removed), undo

    def _stage(self, changed: set[str]) -> Change:
        self._staged = None
        if self.plan is not None:
            ch, counts = self._count_change(self.plan.join.delta())
            self._staged = ("counts", counts, None)
            return ch
        if self.circuit is not None:
            stepped = self.circuit.step()
            if stepped is None:
                return Change()
            z, undo = stepped
            if self.groups is not None:
                self._staged = ("groups", None, undo)  # circuit undo first: groups may raise
                ch, gundo = self._group_change(z)
                self._staged = ("groups", gundo, undo)
                return ch
            ch, counts = self._count_change(z)
            self._staged = ("counts", counts, undo)
            return ch
        if self.attrs is not None and not (self.attrs & changed):
            return Change()
        rows = {_key(r): r for r in self.db._rows(self.query, self.inputs, "curr")}
        ch = Change([rows[k] for k in rows.keys() - self._rows.keys()],
                    [self._rows[k] for k in self._rows.keys() - rows.keys()])
        self._staged = ("rows", rows, None)
        return ch

    def _commit(self, change: Change) -> None:
        if self._staged is not None:
            kind, state, _ = self._staged
            if kind == "counts":
                self._apply_counts(state)
            elif kind == "rows":
                self._rows = state
        self._staged = None
        self.last_change = change

    def _rollback(self) -> None:
        """The transaction failed: forget the staged change (and undo a stepped circuit)."""
        if self._staged is not None:
            kind, state, undo = self._staged
            if kind == "groups" and state is not None:
                self.groups.undo(state)
            if undo is not None:
                self.circuit.undo(undo)
        self._staged = None


def _key(x: Any) -> Any:
    """A hashable stand-in for a result row (pulled maps and collection aggregates)."""
    if isinstance(x, (list, tuple)):
        return tuple(_key(v) for v in x)
    if isinstance(x, dict):
        return frozenset((_key(k), _key(v)) for k, v in x.items())
    if isinstance(x, (set, frozenset)):
        return frozenset(_key(v) for v in x)
    return x


def _attributes_read(query: Query, rules: list) -> set[str] | None:
    """Attributes a query reads, or ``None`` when it may read any (attribute variables,
    pull, database functions)."""
    if any(isinstance(e, FindPull) for e in query.find.elements):
        return None
    out: set[str] = set()
    todo = list(query.where) + [c for r in rules for c in r.body]
    while todo:
        c = todo.pop()
        if isinstance(c, Pattern):
            if len(c.terms) < 2 or not isinstance(c.terms[1], Const):
                return None
            out.add(str(c.terms[1].value))
        elif isinstance(c, (FnCall, Predicate)) and c.fn in ("get-else", "get-some", "missing?"):
            return None
        elif isinstance(c, (Not, NotJoin, Or, OrJoin, And)):
            todo.extend(c.clauses)
    return out


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


def _shape(query: Query, rows: list) -> Any:
    f = query.find
    if query.keys is not None:
        keys = [str(k).lstrip(":") for k in query.keys]
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


class Database:
    """A Datomic-style database of datoms with queries and incrementally maintained views.

    ``Database()`` lives in memory; ``Database.open(path)`` is durable (``queries.durable``).
    Either way every transaction is logged: ``as_of``, ``since`` and ``history`` read the
    log (``queries.history``), and each transaction entity has its ``:db/txInstant``.
    """

    def __init__(self) -> None:
        self.store = EavStore(Keyword)
        self.store.install(Attribute(TX_INSTANT, "instant"))
        self.views: dict[str, View] = {}
        self._names = itertools.count()
        self.n_tx = 0
        self.log = MemoryLog()
        self.read_only: str | None = None   # what this value is, when it is one (as_of...)
        self._last_instant = datetime.fromtimestamp(0, timezone.utc)

    @classmethod
    def open(cls, path: Any, snapshot_every: int = 100_000) -> Database:
        """Open (or create) the durable database in directory ``path``.

        A transaction returns only once it is in the log (SQLite, synchronous commits);
        every ``snapshot_every`` logged datoms the indexes are saved as a Parquet
        snapshot, so reopening loads the last snapshot and replays the log after it.
        Registered views are saved and rebuilt on open. See ``queries.durable``.
        """
        from queries.durable import open_database
        return open_database(cls, path, snapshot_every)

    def close(self) -> None:
        """Close the log of a durable database (in memory: nothing to do)."""
        close = getattr(self.log, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        what = f"{self.read_only}, " if self.read_only else ""
        return (f"Database({what}attributes={len(self.store.attributes)}, "
                f"datoms={len(self.store.datoms.contents())}, views={list(self.views)})")

    # ------------------------------------------------------------------ time travel
    @classmethod
    def _value(cls, store: EavStore, log: Any, label: str) -> Database:
        """A read-only database over ``store`` (``q`` and pull work; nothing else)."""
        db = cls.__new__(cls)
        db.store, db.views, db._names, db.n_tx, db.log = store, {}, itertools.count(), 0, log
        db.read_only, db._last_instant = label, None
        return db

    def as_of(self, t: Any) -> Database:
        """The database as it was right after transaction ``t`` (a transaction id, a ``t``
        or a ``datetime``): a read-only value.

        >>> db = Database()
        >>> _ = db.transact('[{:db/ident :n :db/valueType :db.type/long}]')
        >>> r1 = db.transact([{":db/id": "x", ":n": 1}])
        >>> r2 = db.transact([[":db/add", r1.tempids["x"], ":n", 2]])
        >>> db.as_of(r1.tx).q('[:find ?v . :where [_ :n ?v]]'), db.q('[:find ?v . :where [_ :n ?v]]')
        (1, 2)
        """
        with self.store.lock:
            t = resolve_t(self.log, t)
            return self._value(as_of_store(self.store, self.log, t), self.log, f"as_of t={t}")

    def since(self, t: Any) -> Database:
        """The datoms live now that transactions after ``t`` asserted (read-only)."""
        with self.store.lock:
            t = resolve_t(self.log, t)
            return self._value(since_store(self.store, t), self.log, f"since t={t}")

    def history(self) -> Database:
        """Every assertion and retraction (read-only). Patterns of five terms
        ``[?e ?a ?v ?tx ?added]`` bind the transaction and whether the datom was added.

        >>> db = Database()
        >>> _ = db.transact('[{:db/ident :n :db/valueType :db.type/long}]')
        >>> r1 = db.transact([{":db/id": "x", ":n": 1}])
        >>> r2 = db.transact([[":db/add", r1.tempids["x"], ":n", 2]])
        >>> sorted(db.history().q('[:find ?v ?added :where [_ :n ?v _ ?added]]'))
        [(1, False), (1, True), (2, True)]
        """
        with self.store.lock:
            return self._value(history_store(self.store, self.log), self.log, "history")

    def transactions(self) -> list[tuple[int, datetime, int]]:
        """``(t, instant, n_datoms)`` of every transaction in the log, in order."""
        return self.log.transactions()

    def pull(self, pattern: Any, eid: int) -> dict:
        """Pull ``pattern`` (EDN text or data) from entity ``eid`` (``queries.pull``)."""
        from queries.parse import parse_pull
        from queries.pull import pull
        with self.store.lock:
            return pull(self.store, int(eid), parse_pull(loads(pattern) if isinstance(pattern, str)
                                                         else pattern))

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"cannot {what}: this database value ({self.read_only}) is "
                                f"read-only; use the database it came from")

    # ------------------------------------------------------------------ queries
    def _parse(self, query: Any) -> Query:
        return query if isinstance(query, Query) else parse_query(query)

    def _evaluator(self, kind: str, query: Query, inputs: tuple) -> Evaluator:
        ev = Evaluator(self.store, kind, (), _ref_vars(query.where, self.store))
        _, rules = bind_inputs(ev, query, inputs)
        if rules:
            check_rules(query, rules)
        return Evaluator(self.store, kind, rules, _ref_vars(query.where, self.store))

    def _rows(self, query: Query, inputs: tuple, kind: str) -> list:
        ev = self._evaluator(kind, query, inputs)
        table, _ = bind_inputs(ev, query, inputs)
        return find_rows(ev, query, ev.run(query.where, table))

    def q(self, query: Any, *inputs: Any) -> Any:
        """Answer ``query`` (EDN text, Python data or a parsed ``Query``) once.

        Returns a set of tuples (relation find), a list (collection, or ``:keys``), a tuple,
        or a scalar; ``None`` for a tuple or scalar find that matched nothing.
        """
        q = self._parse(query)
        with self.store.lock:
            return _shape(q, self._rows(q, inputs, "prev"))

    def view(self, query: Any, *inputs: Any, name: str | None = None) -> View:
        """Register a view of ``query``: maintained by every later transaction."""
        self._writable("register a view")
        q = self._parse(query)
        name = name or f"view{next(self._names)}"
        if name in self.views:
            raise QueryError(f"a view named {name!r} exists already")
        remember = getattr(self.log, "remember_view", None)  # a durable database saves it
        if remember is not None:
            from queries.durable import view_text
            saved = view_text(query, inputs)
        v = View(self, name, q, inputs)
        self.views[name] = v
        if remember is not None:
            remember(name, *saved)
        return v

    def drop_view(self, name: str) -> None:
        self.views.pop(name, None)
        forget = getattr(self.log, "forget_view", None)
        if forget is not None:
            forget(name)

    def explain(self, query: Any, *inputs: Any, format: str = "text") -> str:
        """The plan: how the query runs, the variable order and estimated sizes; with
        ``format="dot"``, the circuit the query compiles to as a Graphviz DOT graph."""
        from queries.plan import explain
        return explain(self, self._parse(query), inputs, format=format)

    # ------------------------------------------------------------------ bulk loading
    def load_datoms(self, e: Any, attr: Any, v: Any) -> Report:
        """Add many datoms given as arrays, as one atomic transaction, without a Python loop
        per datom.

        Parameters
        ----------
        e : int array of entity ids, taken as given (bulk data brings its own ids; later
            tempids are allocated past the largest).
        attr : one attribute ident for every datom, or an array of idents (one per datom).
        v : the values: int arrays for ``ref`` (entity ids) and ``long`` attributes and bool
            arrays for ``boolean`` are interned with numpy alone; other types are interned
            once per distinct value (``np.unique``) and type-checked like ``transact``.

        Set semantics, cardinality-one replacement, uniqueness and views are as in
        ``transact``; the report's ``tx_data`` is left empty (the arrays are the data).

        Complexity: O(n log n) numpy work plus one Python step per distinct non-int value.
        """
        return self._load_datoms(e, attr, v)

    def _load_datoms(self, e: Any, attr: Any, v: Any, install: Attribute | None = None) -> Report:
        """``load_datoms``, staging ``install`` in the same transaction (when given)."""
        t0 = time.perf_counter()
        store = self.store
        e = np.asarray(e)
        if e.ndim != 1 or (e.size and e.dtype.kind not in "iu"):
            raise SchemaError(f"entity ids must be a 1-d int array, got {e.dtype} {e.shape}")
        e = e.astype(np.int64)
        if e.size and e.min() < 0:
            raise SchemaError(f"entity id {int(e.min())} is negative")
        n = len(e)
        attrs = np.full(n, attr, dtype=object) if isinstance(attr, str) else np.asarray(attr)
        values = np.asarray(v) if not isinstance(v, np.ndarray) else v
        if len(attrs) != n or len(values) != n:
            raise SchemaError(f"load_datoms needs arrays of one length: e has {n}, attr "
                              f"{len(attrs)}, v {len(values)}")

        def datoms() -> tuple:
            if install is not None:
                store.stage_install(install)  # forgotten if the load fails
            return bulk(store, e, attrs, values) + ({}, [])

        report = self._tick(datoms)
        report.seconds = time.perf_counter() - t0
        return report

    def load_edges(self, edges: Any, attr: str = ":edge/to") -> Report:
        """Load an ``(m, 2)`` int array of ``(source, target)`` node ids as ``[source attr
        target]`` datoms (entity ids = node ids); installs ``attr`` as a cardinality-many
        ref attribute when it is new, in the same transaction: if the load fails, the
        attribute is not installed either.

        >>> db = Database()
        >>> _ = db.load_edges(np.array([[1, 2], [2, 3], [1, 2]]))
        >>> sorted(db.q('[:find ?a ?c :where [?a :edge/to ?b] [?b :edge/to ?c]]'))
        [(1, 3)]
        """
        edges = np.asarray(edges)
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise SchemaError(f"edges must be an (m, 2) int array, got shape {edges.shape}")
        install = None
        if not self.store.has_attribute(attr):
            install = Attribute(str(attr), "ref", many=True)
        return self._load_datoms(edges[:, 0], attr, edges[:, 1], install)

    # ------------------------------------------------------------------ transactions
    def transact(self, tx: Any) -> Report:
        """Apply one transaction atomically and return its report.

        Raises
        ------
        SchemaError : a value of the wrong type, an unknown tempid, a uniqueness conflict,
            two values for one cardinality-one attribute, a missing lookup ref.
        UnknownAttributeError : an attribute that is not installed (with the closest name).
        EdnSyntaxError : malformed EDN text.
        InputError : data nested more than ``indexes.interner.MAX_VALUE_DEPTH`` deep.
        """
        t0 = time.perf_counter()
        data = loads(tx) if isinstance(tx, str) else tx
        if not isinstance(data, (list, tuple)):
            raise SchemaError(f"a transaction is a vector of forms, found {type(data).__name__}")
        check_depth(data, what="transaction")  # resolving it recurses into nested maps
        report = self._tick(lambda: resolve(self.store, data))
        report.seconds = time.perf_counter() - t0
        return report

    def _tick(self, resolve_datoms) -> Report:
        """One transaction: resolve the datoms (``resolve_datoms()`` gives ``(adds,
        retracts, tx, tempids, tx_data)``), stage them, compute every view's change, then
        commit all of it in one ``indexes.transaction.Transaction`` (Ctrl-C deferred), or,
        on any error, none of it. Writers are serialised by the store's lock."""
        self._writable("transact")
        store = self.store
        with store.transaction() as tx:
            try:
                adds, retracts, tx_id, tempids, tx_data = resolve_datoms()
                instant = max(datetime.now(timezone.utc), self._last_instant)
                adds = np.concatenate([adds, [[tx_id, store.aid(TX_INSTANT),
                                               store.interner.encode(instant), tx_id]]])
                tx_data.append((tx_id, Keyword(TX_INSTANT), instant, True))
                installs = store.staged_installs()
                store.stage(tx, adds, retracts)
                changes = {name: v._stage(store.changed) for name, v in self.views.items()}
                rows = np.concatenate([np.insert(adds, 4, 1, axis=1), np.insert(retracts, 4, 0, axis=1)])
                rows[:, 3] = tx_id  # a retraction's row names the transaction that made it

                def then() -> None:
                    store.committed()
                    for name, v in self.views.items():
                        v._commit(changes[name])
                    self.n_tx += 1
                    self._last_instant = instant

                with deferred_interrupts():  # logged means committed: nothing in between
                    self.log.append(tx_t(tx_id), instant, rows, installs=installs, store=store)
                    tx.commit(then)
            except BaseException:  # roll the views back too, whatever failed, then re-raise
                if not tx.done:
                    for v in self.views.values():
                        v._rollback()
                raise
            try:
                self.log.after_commit(store)
            except OSError as e:  # the transaction is durable already; a snapshot can wait
                warnings.warn(f"snapshot skipped: {e}", RuntimeWarning, stacklevel=3)
        return Report(tx_id, tx_data, tempids, changes)
