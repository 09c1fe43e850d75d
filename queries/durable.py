"""Durable databases and graphs: a SQLite log of every transaction (or tick), plus
Parquet snapshots of the indexes.

``Database.open(path)`` and ``Graph.open(path)`` keep a directory::

    path/log.sqlite              the log (SQLite, WAL journal, synchronous=FULL)
    path/snap-<t>.parquet        the newest snapshot (pyarrow), recorded in the log

A transaction is acknowledged (returns) only after its SQLite transaction committed:
its datoms ``(t, e, a, v, added)``, its ``tx`` row (instant, datom count, id counter), the
values it interned and the attributes it installed, in one SQLite transaction, so a
crash leaves each transaction wholly in the log or wholly out of it. The log is written
before the in-memory commit, with Ctrl-C deferred over both (``queries.database``); a
graph's tick is applied in memory first, then logged, and undone if logging fails.

Snapshots: after a commit, once ``snapshot_every`` log rows (a transaction counts one
more) accumulated since the last snapshot, the live datoms (graph: the edges) are written
to ``.snap-<t>.parquet.tmp``, fsynced, renamed, and then recorded in the log (one SQLite
transaction that also forgets the older snapshot, whose file is deleted afterwards). A
crash at any point leaves the previous snapshot in force; stray files are removed on
open. The log is never truncated: it is the history ``as_of``/``since``/``history`` read.

Reopening: the interner's values and the schema are read from the log, the newest
readable snapshot is loaded, the log after it is replayed (one vectorised pass: last row
per datom wins), and the saved views are registered again (their first tick is a batch
run over the recovered state). SQLite drops a torn write-ahead-log tail by its frame
checksums; on top of that, a transaction whose datom count differs from its ``tx`` row,
and every one after it, is dropped before the replay.

Why SQLite and Parquet: SQLite is in the standard library, commits are atomic and
durable, and a small transaction costs one fsync; ``benchmarks/bench_durable.py``
measures it side by side with DuckDB as the log (see that file and the commit that chose
it). Parquet (pyarrow, the ``durable`` extra) writes and reads a million int64 rows in
milliseconds, which a SQLite table cannot.

Relies on ``queries.database``/``queries.graph`` (passed in, to keep imports one way),
``queries.history``, ``queries.edn`` and ``indexes``. Used by ``Database.open`` and
``Graph.open``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from indexes.eav import Attribute, tx_id
from indexes.interner import TAG_SHIFT
from queries.atomic import fsync_file, fsync_folder
from queries.edn import dumps, loads
from queries.history import live_rows
from wcoj.errors import QueryError, StorageError, WcojError
from wcoj.zset import ZSet

__all__ = ["open_database", "open_graph", "DatabaseLog", "GraphLog", "SNAPSHOT_HOOK", "FORMAT"]

I64 = npt.NDArray[np.int64]
FORMAT = 1
SNAPSHOT_HOOK = None  # tests: called with "written", "renamed", "recorded" while snapshotting
_STRING_TAG = 5
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _micros(dt: datetime) -> int:
    return (dt - _EPOCH) // timedelta(microseconds=1)


def _instant(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=int(micros))


def _hook(stage: str) -> None:
    if SNAPSHOT_HOOK is not None:
        SNAPSHOT_HOOK(stage)


def _connect(path: Any, kind: str) -> tuple[Path, sqlite3.Connection, bool]:
    """Open (creating if needed) the log of a durable ``kind`` ("database" or "graph")
    in directory ``path``: ``(dir, connection, created)``."""
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise StorageError(f"{root} is a file; a durable {kind} is a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(root / "log.sqlite", isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")  # an acknowledged commit survives power loss
        con.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    except (OSError, sqlite3.Error) as e:
        raise StorageError(f"cannot open the log of {root}: {e}") from e
    if meta and meta.get("kind") != kind:
        con.close()
        raise StorageError(f"{root} holds a durable {meta.get('kind')}, not a {kind}; open it "
                           f"with {str(meta.get('kind')).capitalize()}.open")
    if meta and int(meta.get("format", 0)) > FORMAT:
        con.close()
        raise StorageError(f"{root} has log format {meta['format']}; this version reads "
                           f"format {FORMAT} and older")
    return root, con, not meta


class _Log:
    """What the database and graph logs share: the connection, snapshots, views."""

    kind = ""
    snapshot_columns: tuple[str, ...] = ()

    def __init__(self, root: Path, con: sqlite3.Connection, every: int):
        self.root, self.con, self.every = root, con, max(1, int(every))
        self.since_snapshot = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r})"

    def close(self) -> None:
        self.con.close()

    def _write(self, statements) -> None:
        """Run ``statements(con)`` in one SQLite transaction (all of it or nothing)."""
        try:
            self.con.execute("BEGIN IMMEDIATE")
            try:
                statements(self.con)
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            self.con.execute("COMMIT")
        except sqlite3.Error as e:
            raise StorageError(f"cannot write the log of {self.root}: {e}") from e

    # ------------------------------------------------------------------ views
    def views(self) -> list[tuple[str, str, str]]:
        return self.con.execute("SELECT name, query, inputs FROM views ORDER BY rowid").fetchall()

    def remember_view(self, name: str, query: str, inputs: str = "[]") -> None:
        self._write(lambda c: c.execute("INSERT OR REPLACE INTO views VALUES (?, ?, ?)",
                                        (name, query, inputs)))

    def forget_view(self, name: str) -> None:
        self._write(lambda c: c.execute("DELETE FROM views WHERE name = ?", (name,)))

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, t: int, columns: I64) -> None:
        """Save ``columns`` (rows of ``snapshot_columns``) as the state after ``t``."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        final = self.root / f"snap-{t}.parquet"
        tmp = self.root / f".snap-{t}.parquet.tmp"
        table = pa.table({name: np.ascontiguousarray(columns[:, i])
                          for i, name in enumerate(self.snapshot_columns)})
        pq.write_table(table, tmp)
        fsync_file(tmp)
        _hook("written")
        os.replace(tmp, final)
        fsync_folder(self.root)
        _hook("renamed")
        self._write(lambda c: (c.execute("DELETE FROM snapshots"),
                               c.execute("INSERT INTO snapshots VALUES (?, ?, ?)",
                                         (t, final.name, len(columns)))))
        _hook("recorded")
        self.since_snapshot = 0
        self._sweep(final.name)

    def _sweep(self, keep: str | None) -> None:
        """Delete snapshot files other than ``keep`` (older ones, interrupted ones)."""
        for f in self.root.iterdir():
            if f.name != keep and (f.name.startswith("snap-") or f.name.startswith(".snap-")):
                f.unlink(missing_ok=True)

    def latest_snapshot(self) -> tuple[int, I64 | None]:
        """``(t, rows)`` of the recorded snapshot, or ``(0, None)`` when there is none or it
        cannot be read (then the whole log is replayed)."""
        import pyarrow.parquet as pq
        row = self.con.execute("SELECT t, file, n_rows FROM snapshots ORDER BY t DESC").fetchone()
        if row is None:
            self._sweep(None)
            return 0, None
        t, name, n = row
        self._sweep(name)
        try:
            table = pq.read_table(self.root / name)
            cols = [table.column(c).to_numpy() for c in self.snapshot_columns]
            rows = np.stack(cols, axis=1).astype(np.int64) if n else \
                np.zeros((0, len(cols)), dtype=np.int64)
            if len(rows) != n:
                raise ValueError(f"{len(rows)} rows, the log recorded {n}")
        except Exception as e:  # any unreadable snapshot: the log alone still has everything
            warnings.warn(f"snapshot {name} of {self.root} is unreadable ({e}); replaying the "
                          f"whole log", RuntimeWarning, stacklevel=3)
            return 0, None
        return int(t), np.ascontiguousarray(rows)

    def _drop_torn(self, table: str, rows_table: str, counted: str, lo: int) -> None:
        """Drop a transaction whose row count differs from its record, and all after it."""
        want = dict(self.con.execute(f"SELECT t, {counted} FROM {table} WHERE t > ?", (lo,)).fetchall())
        have = dict(self.con.execute(f"SELECT t, count(*) FROM {rows_table} WHERE t > ? GROUP BY t",
                                     (lo,)).fetchall())
        bad = [t for t in sorted(want) if have.get(t, 0) != want[t]] + \
              [t for t in have if t not in want]
        if bad:
            first = min(bad)
            warnings.warn(f"{self.root}: transaction {first} is incomplete in the log; it and "
                          f"the {sum(t > first for t in want)} after it are dropped",
                          RuntimeWarning, stacklevel=3)
            self._write(lambda c: (c.execute(f"DELETE FROM {rows_table} WHERE t >= ?", (first,)),
                                   c.execute(f"DELETE FROM {table} WHERE t >= ?", (first,))))


# ---------------------------------------------------------------------- databases
_DB_SCHEMA = """
CREATE TABLE IF NOT EXISTS tx(t INTEGER PRIMARY KEY, instant INTEGER NOT NULL,
                              n_datoms INTEGER NOT NULL, next_eid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS datoms(t INTEGER NOT NULL, e INTEGER NOT NULL, a INTEGER NOT NULL,
                                  v INTEGER NOT NULL, added INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS datoms_t ON datoms(t);
CREATE TABLE IF NOT EXISTS vals(id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attrs(ident TEXT PRIMARY KEY, def TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS views(name TEXT PRIMARY KEY, query TEXT NOT NULL, inputs TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots(t INTEGER PRIMARY KEY, file TEXT NOT NULL, n_rows INTEGER NOT NULL);
"""


def _value_text(vid: int, value: Any) -> str:
    return value if vid >> TAG_SHIFT == _STRING_TAG else dumps(value)


def _text_value(vid: int, text: str) -> Any:
    return text if vid >> TAG_SHIFT == _STRING_TAG else loads(text)


class DatabaseLog(_Log):
    """The SQLite log of a durable ``Database`` (the methods of ``history.MemoryLog``)."""

    kind = "database"
    snapshot_columns = ("e", "a", "v", "tx")

    def __init__(self, root: Path, con: sqlite3.Connection, every: int, marks: dict):
        super().__init__(root, con, every)
        self.marks = marks  # interner table sizes already in the log

    def append(self, t: int, instant: datetime, rows: I64, installs=(), store=None) -> None:
        """Log transaction ``t`` in one SQLite transaction; return once it is durable."""
        values = [(vid, _value_text(vid, v)) for vid, v in store.interner.since(self.marks)]
        attrs = [(a.ident, json.dumps([a.value_type, a.many, a.unique, a.component,
                                       list(a.tuple_attrs), a.fulltext, a.doc,
                                       list(a.tuple_types), a.tuple_type]))
                 for a in installs]
        data = np.concatenate([np.full((len(rows), 1), t, np.int64), rows[:, :3], rows[:, 4:5]], axis=1)

        def statements(c: sqlite3.Connection) -> None:
            c.execute("INSERT INTO tx VALUES (?, ?, ?, ?)", (t, _micros(instant), len(rows), store.next_eid))
            c.executemany("INSERT INTO datoms VALUES (?, ?, ?, ?, ?)", data.tolist())
            c.executemany("INSERT INTO vals VALUES (?, ?)", values)
            c.executemany("INSERT OR REPLACE INTO attrs VALUES (?, ?)", attrs)
        self._write(statements)
        self.marks = store.interner.marks()
        self.since_snapshot += len(rows) + 1

    def after_commit(self, store) -> None:
        if self.since_snapshot >= self.every:
            self.snapshot(store.next_tx - 1, store.datoms.contents().keys)

    def transactions(self) -> list[tuple[int, datetime, int]]:
        return [(t, _instant(m), n) for t, m, n in
                self.con.execute("SELECT t, instant, n_datoms FROM tx ORDER BY t")]

    def rows(self, lo: int = 0, hi: int | None = None) -> I64:
        """Log rows ``(e, a, v, tx, added)`` of transactions ``lo < t <= hi``, in log order."""
        cur = self.con.execute("SELECT e, a, v, t, added FROM datoms WHERE t > ? AND t <= ? "
                               "ORDER BY t, rowid", (lo, hi if hi is not None else 1 << 62))
        out = np.array(cur.fetchall(), dtype=np.int64).reshape(-1, 5)
        out[:, 3] = tx_id(0) + out[:, 3]
        return out


def open_database(cls: type, path: Any, every: int):
    """``Database.open``: the database in ``path`` (created empty if new)."""
    root, con, _ = _connect(path, "database")
    try:
        con.executescript(_DB_SCHEMA)
        con.execute("INSERT OR IGNORE INTO meta VALUES ('kind', 'database'), ('format', ?)", (str(FORMAT),))
        db = cls()
        store = db.store
        for vid, text in con.execute("SELECT id, text FROM vals ORDER BY id"):
            store.interner.restore(vid, _text_value(vid, text))
        for ident, spec in con.execute("SELECT ident, def FROM attrs ORDER BY rowid"):
            vt, many, unique, component, *more = json.loads(spec)  # older logs: 4 to 8 fields
            more += [None] * (5 - len(more))
            store.install(Attribute(ident, vt, many, unique, component, tuple(more[0] or ()),
                                    bool(more[1]), more[2], tuple(more[3] or ()), more[4]))
        log = DatabaseLog(root, con, every, store.interner.marks())
        snap_t, snap = log.latest_snapshot()
        log._drop_torn("tx", "datoms", "n_datoms", snap_t)
        last = con.execute("SELECT t, instant, next_eid FROM tx ORDER BY t DESC LIMIT 1").fetchone()
        if last is not None and last[0] < snap_t:
            raise StorageError(f"{root}: the snapshot is of t={snap_t} but the log ends at "
                               f"t={last[0]}")
        tail = log.rows(snap_t)
        if snap is not None:
            tail = np.concatenate([np.insert(snap, 4, 1, axis=1), tail])
        store.load(live_rows(tail))
        log.since_snapshot = len(tail) - (len(snap) if snap is not None else 0)
        if last is not None:
            store.next_tx, store.next_eid = last[0] + 1, max(store.next_eid, last[2])
            db.n_tx, db._last_instant = last[0], _instant(last[1])
        for name, query, inputs in log.views():
            try:
                db.view(query, *loads(inputs), name=name)
            except WcojError as e:
                warnings.warn(f"view {name} of {root} not rebuilt: {e}", RuntimeWarning, stacklevel=2)
        db.log = log
        _schema_datoms(db, [ident for (ident,) in con.execute("SELECT ident FROM attrs")])
        return db
    except BaseException:
        con.close()
        raise


def _schema_datoms(db: Any, idents: list[str]) -> None:
    """A log written before attributes had schema datoms (``queries.schema``): one
    transaction writes those of every installed attribute that has none."""
    store = db.store
    missing = [store.attributes[i] for i in idents if not len(store.value_ids(":db/ident", store.aid(i)))]
    if missing:
        def restate() -> tuple:
            for attr in missing:
                store.stage_install(attr)
            none = np.zeros((0, 4), dtype=np.int64)
            return none, none, store.new_tx(), {}, []
        db._tick(restate)


def view_text(query: Any, inputs: tuple) -> tuple[str, str]:
    """A view's query and inputs as EDN text, to save them (``QueryError`` if they have
    no EDN form)."""
    if isinstance(query, str):
        text = query
    elif isinstance(query, (list, tuple, dict)):
        text = dumps(query)
    else:
        raise QueryError("a view of a durable database needs its query as EDN text or data "
                         f"(to save it), got {type(query).__name__}")
    try:
        return text, dumps(list(inputs))
    except WcojError as e:
        raise QueryError(f"a view of a durable database needs EDN inputs (to save them): {e}") from e


# ---------------------------------------------------------------------- graphs
_GRAPH_SCHEMA = """
CREATE TABLE IF NOT EXISTS ticks(t INTEGER PRIMARY KEY, instant INTEGER NOT NULL, n_rows INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS edges(t INTEGER NOT NULL, u INTEGER NOT NULL, v INTEGER NOT NULL,
                                 w INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS edges_t ON edges(t);
CREATE TABLE IF NOT EXISTS views(name TEXT PRIMARY KEY, query TEXT NOT NULL, inputs TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots(t INTEGER PRIMARY KEY, file TEXT NOT NULL, n_rows INTEGER NOT NULL);
"""


class GraphLog(_Log):
    """The SQLite log of a durable ``Graph``: each tick's change of the primary relation."""

    kind = "graph"
    snapshot_columns = ("u", "v")

    def append(self, t: int, delta: ZSet) -> None:
        """Log tick ``t`` (its primary-relation change) in one SQLite transaction."""
        data = np.concatenate([np.full((len(delta), 1), t, np.int64), delta.keys,
                               delta.weights[:, None]], axis=1)

        def statements(c: sqlite3.Connection) -> None:
            c.execute("INSERT INTO ticks VALUES (?, ?, ?)",
                      (t, _micros(datetime.now(timezone.utc)), len(delta)))
            c.executemany("INSERT INTO edges VALUES (?, ?, ?, ?)", data.tolist())
        self._write(statements)
        self.since_snapshot += len(delta) + 1

    def after_commit(self, graph) -> None:
        if self.since_snapshot >= self.every:
            self.snapshot(graph.n_ticks, graph.edges())

    def ticks(self) -> list[tuple[int, datetime, int]]:
        """``(t, instant, n_rows)`` of every logged tick."""
        return [(t, _instant(m), n) for t, m, n in
                self.con.execute("SELECT t, instant, n_rows FROM ticks ORDER BY t")]


def open_graph(cls: type, path: Any, directed: bool | None, every: int):
    """``Graph.open``: the graph in ``path`` (created empty if new)."""
    root, con, created = _connect(path, "graph")
    try:
        con.executescript(_GRAPH_SCHEMA)
        if created:
            con.execute("INSERT INTO meta VALUES ('kind', 'graph'), ('format', ?), ('directed', ?)",
                        (str(FORMAT), str(int(bool(directed)))))
        stored = con.execute("SELECT value FROM meta WHERE key = 'directed'").fetchone()[0] == "1"
        if directed is not None and bool(directed) != stored:
            raise StorageError(f"{root} holds a{' directed' if stored else 'n undirected'} graph; "
                               f"open it with directed={stored} (or leave directed out)")
        log = GraphLog(root, con, every)
        snap_t, snap = log.latest_snapshot()
        log._drop_torn("ticks", "edges", "n_rows", snap_t)
        rows = np.array(con.execute("SELECT u, v, w FROM edges WHERE t > ? ORDER BY t, rowid",
                                    (snap_t,)).fetchall(), dtype=np.int64).reshape(-1, 3)
        keys, weights = rows[:, :2], rows[:, 2]
        if snap is not None:
            keys = np.concatenate([snap, keys])
            weights = np.concatenate([np.ones(len(snap), np.int64), weights])
        z = ZSet.from_arrays(keys, weights, arity=2)
        g = cls(directed=stored)
        g.load_edges(z.keys[z.weights > 0])
        log.since_snapshot = len(rows)
        last = con.execute("SELECT max(t) FROM ticks").fetchone()[0]
        g.n_ticks = int(last or 0)
        for name, pattern, _ in log.views():
            g.view(pattern, name=name)
        g._log = log
        return g
    except BaseException:
        con.close()
        raise
