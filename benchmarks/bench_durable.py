"""Durability: what a durable database costs, and which store keeps its log.

Three tables, each measured side by side in one run:

1. The log alone, SQLite against DuckDB (both embedded, both committing durably): the
   same two tables (a ``tx`` row and ``(t, e, a, v, added)`` datom rows), one database
   transaction per logged transaction; acknowledged transactions per second for 1 and
   1,000 datoms, and the time to read every logged row back as numpy (a replay).
2. ``Database.open`` (SQLite log) against ``Database()`` in memory: acknowledged
   transactions per second for 1-datom ``transact`` and 1,000-datom ``load_datoms``.
3. Reopening a database of ``--datoms`` datoms (Parquet snapshot plus a log tail of
   ``--tail`` small transactions) against building it from its EDN text.

Run (the default size is 1e5 datoms; ``--datoms 1e6`` for a million)::

    python -m benchmarks.bench_durable --datoms 1e5 --seed 0
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import header, parse_size
from queries.database import Database
from queries.edn import dumps

SCHEMA = '''[{:db/ident :p/n :db/valueType :db.type/long}
             {:db/ident :p/name :db/valueType :db.type/string}]'''


# ---------------------------------------------------------------------- 1. log stores
def _sqlite_log(path: Path):
    con = sqlite3.connect(path / "log.sqlite", isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=FULL")
    con.execute("CREATE TABLE tx(t INTEGER PRIMARY KEY, instant INTEGER, n INTEGER)")
    con.execute("CREATE TABLE datoms(t INTEGER, e INTEGER, a INTEGER, v INTEGER, added INTEGER)")
    con.execute("CREATE INDEX datoms_t ON datoms(t)")

    def append(t: int, rows: np.ndarray) -> None:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO tx VALUES (?, ?, ?)", (t, time.time_ns() // 1000, len(rows)))
        con.executemany("INSERT INTO datoms VALUES (?, ?, ?, ?, ?)", rows.tolist())
        con.execute("COMMIT")

    def read() -> np.ndarray:
        return np.array(con.execute("SELECT t, e, a, v, added FROM datoms ORDER BY t, rowid").fetchall(),
                        dtype=np.int64)
    return append, read, con.close


def _duckdb_log(path: Path):
    import duckdb
    import pyarrow as pa
    con = duckdb.connect(str(path / "log.duckdb"))
    con.execute("CREATE TABLE tx(t BIGINT PRIMARY KEY, instant BIGINT, n BIGINT)")
    con.execute("CREATE TABLE datoms(t BIGINT, e BIGINT, a BIGINT, v BIGINT, added BIGINT)")

    def append(t: int, rows: np.ndarray) -> None:
        batch = pa.table({c: rows[:, i] for i, c in enumerate(("t", "e", "a", "v", "added"))})  # noqa: F841
        con.execute("BEGIN TRANSACTION")
        con.execute("INSERT INTO tx VALUES (?, ?, ?)", (t, time.time_ns() // 1000, len(rows)))
        con.execute("INSERT INTO datoms SELECT * FROM batch")  # the arrow table, no Python loop
        con.execute("COMMIT")

    def read() -> np.ndarray:
        cols = con.execute("SELECT t, e, a, v, added FROM datoms ORDER BY t").fetchnumpy()
        return np.stack([np.asarray(cols[c]) for c in ("t", "e", "a", "v", "added")], axis=1)
    return append, read, con.close


def _rows(rng: np.random.Generator, t: int, n: int) -> np.ndarray:
    rows = rng.integers(0, 1 << 40, (n, 5))
    rows[:, 0], rows[:, 4] = t, 1
    return rows


def bench_log_stores(rng: np.random.Generator, n_small: int, n_big: int) -> None:
    print("\n1. the log alone: acknowledged transactions per second, and reading it back")
    print(f"{'store':8} {'tx/s 1 datom':>14} {'tx/s 1000 datoms':>17} {'read ms':>9} {'rows':>8}")
    results = {}
    for name, make in (("sqlite", _sqlite_log), ("duckdb", _duckdb_log)):
        d = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
        try:
            append, read, close = make(d)
            append(0, _rows(rng, 0, 1))  # warm up
            t0 = time.perf_counter()
            for t in range(1, n_small + 1):
                append(t, _rows(rng, t, 1))
            small = n_small / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            for t in range(n_small + 1, n_small + n_big + 1):
                append(t, _rows(rng, t, 1000))
            big = n_big / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            n = len(read())
            read_ms = (time.perf_counter() - t0) * 1e3
            close()
        finally:
            shutil.rmtree(d, ignore_errors=True)
        results[name] = (small, big, read_ms)
        print(f"{name:8} {small:14.1f} {big:17.1f} {read_ms:9.1f} {n:8d}")
    s, k = results["sqlite"], results["duckdb"]
    print(f"{'sqlite/duckdb':14} {s[0] / k[0]:8.2f}x {s[1] / k[1]:16.2f}x {k[2] / s[2]:8.2f}x faster read"
          if s[2] < k[2] else
          f"{'sqlite/duckdb':14} {s[0] / k[0]:8.2f}x {s[1] / k[1]:16.2f}x {s[2] / k[2]:8.2f}x slower read")


# ---------------------------------------------------------------------- 2. the database
def bench_database(n_small: int, n_big: int) -> None:
    print("\n2. Database.open (SQLite log, Parquet snapshots) vs Database() in memory: "
          "acknowledged transactions per second")
    print(f"{'database':10} {'tx/s 1 datom':>14} {'tx/s 1000 datoms':>17}")
    rates = {}
    for name in ("memory", "durable"):
        d = Path(tempfile.mkdtemp(prefix="bench-db-"))
        try:
            db = Database() if name == "memory" else Database.open(d / "db")
            db.transact(SCHEMA)
            db.transact([{":db/id": "x", ":p/n": 0}])
            t0 = time.perf_counter()
            for i in range(n_small):
                db.transact([[":db/add", 1, ":p/n", i + 1]])
            small = n_small / (time.perf_counter() - t0)
            e = np.arange(10, 1010)
            t0 = time.perf_counter()
            for i in range(n_big):
                db.load_datoms(e + 1000 * i, ":p/n", e)
            big = n_big / (time.perf_counter() - t0)
            db.close()
        finally:
            shutil.rmtree(d, ignore_errors=True)
        rates[name] = (small, big)
        print(f"{name:10} {small:14.1f} {big:17.1f}")
    m, dd = rates["memory"], rates["durable"]
    print(f"{'durable/memory':14} {dd[0] / m[0]:9.3f}x {dd[1] / m[1]:16.3f}x")


# ---------------------------------------------------------------------- 3. reopening
def bench_reopen(n_datoms: int, tail: int, repeat: int) -> None:
    print(f"\n3. reopening {n_datoms} datoms (snapshot + {tail} logged transactions) vs "
          f"loading them from EDN")
    n_ent = n_datoms // 2
    e = np.arange(1, n_ent + 1)
    d = Path(tempfile.mkdtemp(prefix="bench-reopen-"))
    try:
        t0 = time.perf_counter()
        with Database.open(d / "db", snapshot_every=n_datoms // 2) as db:
            db.transact(SCHEMA)
            db.load_datoms(np.concatenate([e, e]), np.array([":p/n"] * n_ent + [":p/name"] * n_ent),
                           np.array(list(range(n_ent)) + [f"name{i}" for i in range(n_ent)], dtype=object))
            for i in range(tail):
                db.transact([[":db/add", int(i + 1), ":p/n", -i]])
            want = len(db.store.datoms.contents())
        build_s = time.perf_counter() - t0
        edn = dumps([{":db/id": f"e{i}", ":p/n": int(i - 1), ":p/name": f"name{i - 1}"} for i in e])
        times_open, times_edn = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            with Database.open(d / "db") as db:
                assert len(db.store.datoms.contents()) == want
            times_open.append(time.perf_counter() - t0)
        for _ in range(min(repeat, 2)):
            t0 = time.perf_counter()
            fresh = Database()
            fresh.transact(SCHEMA)
            fresh.transact(edn)
            times_edn.append(time.perf_counter() - t0)
        snap = sum(f.stat().st_size for f in (d / "db").glob("snap-*.parquet"))
        log = (d / "db" / "log.sqlite").stat().st_size
    finally:
        shutil.rmtree(d, ignore_errors=True)
    o, x = statistics.median(times_open), statistics.median(times_edn)
    print(f"{'datoms':>9} {'build s':>8} {'reopen s':>9} {'from EDN s':>11} {'EDN/reopen':>11} "
          f"{'snapshot MB':>12} {'log MB':>7}")
    print(f"{n_datoms:9d} {build_s:8.2f} {o:9.2f} {x:11.2f} {x / o:10.1f}x {snap / 2**20:12.1f} "
          f"{log / 2**20:7.1f}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datoms", type=parse_size, default=parse_size("1e5"),
                   help="size of the reopened database (default 1e5; 1e6 takes minutes)")
    p.add_argument("--small", type=int, default=300, help="1-datom transactions timed")
    p.add_argument("--big", type=int, default=40, help="1000-datom transactions timed")
    p.add_argument("--tail", type=int, default=100, help="logged transactions after the snapshot")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import duckdb
    import pyarrow
    print(header("bench_durable", args.seed, sqlite=sqlite3.sqlite_version, duckdb=duckdb.__version__,
                 pyarrow=pyarrow.__version__))
    rng = np.random.default_rng(args.seed)
    bench_log_stores(rng, args.small, args.big)
    bench_database(args.small, args.big)
    bench_reopen(args.datoms, args.tail, args.repeat)


if __name__ == "__main__":
    main()
