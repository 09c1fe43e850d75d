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

Every query compiles to one DBSP circuit (``queries.circuits``). ``q`` runs its first tick
over the database (the compiled circuit is cached per query text and inputs); a view
(``Database.view``) keeps the circuit and steps it with each transaction's per-attribute
deltas, so its change costs work in proportion to the change: the multi-way join by the
telescoping rule, rules as child circuits iterated to a fixed point, aggregates per touched
group. A failed transaction restores every view. ``load_datoms``/``load_edges`` take numpy
arrays as one transaction, without a Python loop per datom.

Relies on ``indexes.eav``, ``queries.circuits``, ``queries.aggregates``, ``queries.results``,
``queries.parse``; the user-facing facade.

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

import itertools
from collections import OrderedDict
import time
import warnings
from datetime import datetime, timezone
from typing import Any

import numpy as np

from indexes.eav import Attribute, EavStore, tx_t
from indexes.interner import check_depth
from wcoj.interrupts import deferred_interrupts
from queries.ast import Query
from queries.bind import Binder, Inputs, bind_inputs, input_key, plain_input
from queries.circuits import CompiledView, compile_view
from queries.view import View
from queries.datoms import Datom, datoms, entid, ident, index_range
from queries.entity import entity
from queries.results import Change, Report, answer, with_datoms
from queries.pull import pull
from queries.edn import Keyword, loads
from queries.functions import Registry
from queries.history import MemoryLog, as_of_store, detached, history_store, resolve_t, since_store
from queries.parse import parse_query
from queries.schema import SYSTEM, schema_datoms
from queries.transact import bulk, resolve
from wcoj.errors import QueryError, ReadOnlyError, SchemaError

__all__ = ["Database", "View", "Report", "Change", "TX_INSTANT", "IDENT"]

Q_CACHE = 64  # compiled circuits of q kept per database (least recently used first out)
TX_INSTANT = ":db/txInstant"  # every transaction entity has one: its wall-clock instant
IDENT = ":db/ident"  # an entity's keyword name (enumerations): unique, so [:db/ident :k] finds it

class Database:
    """A Datomic-style database of datoms with queries and incrementally maintained views.

    ``Database()`` lives in memory; ``Database.open(path)`` is durable (``queries.durable``).
    Either way every transaction is logged: ``as_of``, ``since`` and ``history`` read the
    log (``queries.history``), and each transaction entity has its ``:db/txInstant``.
    """

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = registry if registry is not None else Registry()
        self.store = EavStore(Keyword)
        self.store.install(Attribute(TX_INSTANT, "instant"))
        self.store.install(Attribute(IDENT, "keyword", unique="identity"))
        self.store.install(Attribute(":db/doc", "string"))  # any entity's doc string
        for attr in SYSTEM:  # an attribute's own datoms (queries.schema)
            self.store.install(attr)
        self.views: dict[str, View] = {}
        self._names = itertools.count()
        self.n_tx = 0
        self.log = MemoryLog()
        self._circuits: OrderedDict = OrderedDict()  # q's compiled circuits (_cached)
        self.read_only: str | None = None   # what this value is, when it is one (as_of...)
        self._basis: int | None = None   # an as_of value's t (basis_t)
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
    def _value(cls, store: EavStore, log: Any, label: str, registry: Registry | None = None) -> Database:
        """A read-only database over ``store`` (``q`` and pull work; nothing else)."""
        db = cls.__new__(cls)
        db.store, db.views, db._names, db.n_tx, db.log = store, {}, itertools.count(), 0, log
        db.read_only, db._last_instant, db._circuits = label, None, OrderedDict()
        db.registry = registry if registry is not None else Registry()
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
            value = self._value(as_of_store(self.store, self.log, t), self.log, f"as_of t={t}",
                                self.registry)
            value._basis = min(t, self.basis_t())
            return value

    def since(self, t: Any) -> Database:
        """The datoms live now that transactions after ``t`` asserted (read-only)."""
        with self.store.lock:
            t = resolve_t(self.log, t)
            return self._value(since_store(self.store, t), self.log, f"since t={t}",
                               self.registry)

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
            return self._value(history_store(self.store, self.log), self.log, "history",
                               self.registry)

    def with_(self, tx: Any) -> Report:
        """Datomic's ``with``: ``tx`` applied to a copy of this database (its datoms and
        log, no views), which stays as it was; the report's ``db_after`` is the copy.

        >>> db = Database()
        >>> _ = db.transact('[{:db/ident :n :db/valueType :db.type/long}]')
        >>> after = db.with_([{":n": 1}]).db_after
        >>> after.q('[:find ?v :where [_ :n ?v]]'), db.q('[:find ?v :where [_ :n ?v]]')
        ({(1,)}, set())
        """
        self._writable("apply with_ to it")  # a past value's log runs past it
        with self.store.lock:
            db = Database(self.registry)
            db.store, db.log, db.n_tx, db._last_instant = *detached(self.store, self.log), self.n_tx, self._last_instant
        (report := db.transact(tx)).db_after = db
        return report

    def datoms(self, index: str, *components: Any) -> list[Datom]:
        """Datomic's ``datoms``: the live datoms in ``index`` order (``:eavt``, ``:aevt``,
        ``:avet``, ``:vaet``) whose leading fields are ``components`` (``queries.datoms``)."""
        with self.store.lock:
            return datoms(self.store, index, *components)

    def index_range(self, attr: Any, start: Any = None, end: Any = None) -> list[Datom]:
        """Datomic's ``index-range``: the live datoms of ``attr`` with ``start <= value <
        end`` (``None``: open), in value order (``queries.datoms.index_range``)."""
        with self.store.lock:
            return index_range(self.store, attr, start, end)

    def entity(self, x: Any) -> Any:
        """Datomic's ``entity``: a lazy read-only map of entity ``x`` (id, ident or lookup
        ref) at this database value, walked through its refs (``queries.entity``); None
        when an ident or lookup ref names no entity."""
        return entity(self, x)

    def entid(self, x: Any) -> Any:
        """The entity ``x`` names (id, ident or lookup ref), None if none; an attribute's
        entity is its keyword (Datomic's ``entid``)."""
        with self.store.lock:
            return entid(self.store, x)

    def ident(self, x: Any) -> Any:
        """The keyword naming entity ``x`` (its ``:db/ident``), or None (Datomic's ``ident``)."""
        with self.store.lock:
            return ident(self.store, x)

    def basis_t(self) -> int:
        """The ``t`` of the last transaction in this value (0 before any; an ``as_of``
        value's own ``t``), as ``as_of`` takes it."""
        return self._basis if self._basis is not None else self.store.next_tx - 1

    def transactions(self) -> list[tuple[int, datetime, int]]:
        """``(t, instant, n_datoms)`` of every transaction in the log, in order."""
        return self.log.transactions()

    def pull(self, pattern: Any, eid: Any) -> dict | None:
        """Pull ``pattern`` (EDN text or Python data) from entity ``eid``, an entity id or
        a lookup ref ``[":attr", value]`` (``queries.pull``); None when a lookup ref names
        no entity.

        >>> db = Database()
        >>> _ = db.transact('[{:db/ident :name :db/valueType :db.type/string '
        ...                 ':db/unique :db.unique/identity}]')
        >>> _ = db.transact([{":name": "Ann"}, {":name": "Bob"}])
        >>> db.pull('[[:name :as "who"]]', [":name", "Ann"])
        {'who': 'Ann'}
        >>> db.pull_many([":name"], [[":name", "Bob"], [":name", "Zed"]])
        [{Keyword(':name'): 'Bob'}, None]
        """
        return self.pull_many(pattern, [eid])[0]

    def pull_many(self, pattern: Any, eids: Any) -> list:
        """``[db.pull(pattern, e) for e in eids]``, the pattern parsed once."""
        from queries.parse import parse_pull
        p = parse_pull(pattern)
        with self.store.lock:
            return [pull(self.store, e, p) for e in eids]

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"cannot {what}: this database value ({self.read_only}) is "
                                f"read-only; use the database it came from")

    # ------------------------------------------------------------------ queries
    def register_function(self, name: str, fn: Any) -> None:
        """Let this database's queries call the Python callable ``fn`` as ``name``
        (``[(name ?x) ?y]``, ``[(name ?x)]``); see ``queries.functions.Registry``. Query
        text only names it: nothing is ever imported or evaluated from a query.

        >>> db = Database()
        >>> db.register_function("initial", lambda s: s[:1])
        >>> db.registry.functions["initial"]("Ann")
        'A'
        """
        self.registry.register_function(name, fn)

    def register_aggregate(self, name: str, fn: Any) -> None:
        """Let ``:find`` use ``(name ?x)``, computed as ``fn(values)`` over each group's
        bag of values (``(name c ?x)`` calls ``fn(c, values)``); see ``register_function``.

        >>> db = Database()
        >>> db.register_aggregate("my/spread", lambda xs: max(xs) - min(xs))
        >>> db.registry.aggregates["my/spread"]([3, 9, 4])
        6
        """
        self.registry.register_aggregate(name, fn)

    def _parse(self, query: Any) -> Query:
        return query if isinstance(query, Query) else parse_query(query, registry=self.registry)

    def _compile(self, query: Query, inputs: tuple) -> CompiledView:
        """``query`` with ``inputs`` as a circuit over this database (not yet run)."""
        given = Inputs(query, inputs, db=self)
        binder = Binder(self.store, "prev", query, given.rules, given.sources, self.registry)
        return compile_view(binder, query, bind_inputs(binder, given), given.rules)

    def q(self, query: Any, *inputs: Any) -> Any:
        """Answer ``query`` (EDN text, Python data or a parsed ``Query``) once: the first
        tick of the circuit a view of it would keep (compiled circuits are cached per
        query text and inputs).

        Returns a set of tuples (relation find), a list (collection, or ``:keys``), a tuple,
        or a scalar; ``None`` for a tuple or scalar find that matched nothing.
        """
        with self.store.lock:
            interner = self.store.interner
            marks = interner.marks()  # what q interns (inputs, computed values) it gives back
            try:
                return answer(self._cached(query, inputs, marks)[1], inputs)
            finally:
                if interner.marks() != marks:
                    interner.truncate(marks)

    def _cached(self, query: Any, inputs: tuple, marks: dict) -> tuple[Query, CompiledView]:
        """The parsed query and its circuit, from the cache when the query text and inputs
        were seen with this schema. A circuit whose compilation interned new values (an
        input or constant no datom holds) is not kept: ``q`` gives those ids back. Inputs
        that may hold lookup refs (a list or tuple inside them) are resolved at compile
        time, so those queries compile anew each time."""
        key = None
        if isinstance(query, str) and len(query) < 10_000 and all(plain_input(x) for x in inputs):
            key = (query, len(self.store.attributes), input_key(inputs))
            hit = self._circuits.get(key)
            if hit is not None:
                self._circuits.move_to_end(key)
                return hit
        q = self._parse(query)
        compiled = self._compile(q, inputs)
        if key is not None and self.store.interner.marks() == marks:
            self._circuits[key] = (q, compiled)
            if len(self._circuits) > Q_CACHE:
                self._circuits.popitem(last=False)
        return q, compiled

    def view(self, query: Any, *inputs: Any, name: str | None = None) -> View:
        """Register a view of ``query``: maintained by every later transaction, by a step of
        its circuit, or by its first tick again when the transaction rewrites much of what
        it reads (``queries.refresh``; ``repr(view)`` counts both)."""
        self._writable("register a view")
        q = self._parse(query)
        name = name or f"view{next(self._names)}"
        if name in self.views:
            raise QueryError(f"a view named {name!r} exists already")
        if any(isinstance(x, Database) for x in inputs):
            raise QueryError("a view reads this database alone: a second database among its "
                             "inputs would not tell it of its changes (q reads one once)")
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
        if not isinstance(tx, str):  # (EDN text is read nested at most edn.MAX_DEPTH deep)
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
                given = (adds[:, 0] == tx_id) & (adds[:, 1] == store.aid(TX_INSTANT))
                if given.any():  # [:db/add "datomic.tx" :db/txInstant t]: an import's own time
                    instant = store.interner.decode_one(int(adds[given][0, 2]))
                    if instant < self._last_instant:
                        raise SchemaError(f":db/txInstant {instant.isoformat()} is before the last "
                                          f"transaction's, {self._last_instant.isoformat()}")
                else:
                    instant = max(datetime.now(timezone.utc), self._last_instant)
                    adds = np.concatenate([adds, [[tx_id, store.aid(TX_INSTANT),
                                                   store.interner.encode(instant), tx_id]]])
                    tx_data = with_datoms(tx_data, [(tx_id, Keyword(TX_INSTANT), instant, True)])
                installs = store.staged_installs()
                if installs:  # the schema as datoms of the attributes' entities
                    more, fewer, shown_ = schema_datoms(store, installs)
                    adds = np.concatenate([adds, np.insert(more, 3, tx_id, axis=1)])
                    retracts = np.concatenate([retracts, np.insert(fewer, 3, store.tx_of(fewer), axis=1)])
                    tx_data = with_datoms(tx_data, shown_)
                store.stage(tx, adds, retracts)
                changes = {name: v._stage(store.changed) for name, v in self.views.items()}
                rows = np.empty((len(adds) + len(retracts), 5), dtype=np.int64)  # (e, a, v, tx, added)
                rows[:len(adds), :3], rows[len(adds):, :3] = adds[:, :3], retracts[:, :3]
                rows[:, 3] = tx_id  # a retraction's row names the transaction that made it
                rows[:len(adds), 4], rows[len(adds):, 4] = 1, 0

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
