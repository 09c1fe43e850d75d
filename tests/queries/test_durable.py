"""Durable databases and graphs: reopening, snapshots, a torn log tail, failed
transactions, bad paths; time travel on a reopened database against an in-memory twin."""

import shutil
import sqlite3

import numpy as np
import pytest

from queries import durable
from queries.database import Database
from queries.graph import Graph
from tests.queries.test_history import ALL, SCHEMA, random_txs
from wcoj.errors import QueryError, SchemaError, StorageError

HIST = '[:find ?e ?a ?v ?tx ?added :where [?e ?a ?v ?tx ?added] [(not= ?a :db/txInstant)]]'


def fill(db, txs):
    db.transact(SCHEMA)
    return [db.transact(t).tx for t in txs]


@pytest.mark.parametrize("every", [1, 7, 10_000])  # a snapshot per tx, some, none
def test_reopened_database_equals_its_in_memory_twin(tmp_path, every):
    txs = random_txs(5, n_tx=30)
    twin = Database()
    ids = fill(twin, txs)
    with Database.open(tmp_path / "db", snapshot_every=every) as db:
        assert fill(db, txs) == ids
        db.view('[:find ?e ?t :where [?e :p/tag ?t] [?e :p/n ?n] [(> ?n 1)]]', name="big")
    with Database.open(tmp_path / "db") as db:
        assert db.q(ALL) == twin.q(ALL)
        assert db.views["big"].result() == twin.q(db.views["big"].query)
        for tx in ids[::5]:
            assert db.as_of(tx).q(ALL) == twin.as_of(tx).q(ALL)
            assert db.since(tx).q(ALL) == twin.since(tx).q(ALL)
        assert db.history().q(HIST) == twin.history().q(HIST)
        assert [n for _, _, n in db.transactions()] == [n for _, _, n in twin.transactions()]
        # it goes on where it stopped: ids, tempids, views
        r = db.transact([{":db/id": "new", ":p/n": 3, ":p/tag": "q"}])
        assert r.tx == twin.transact([{":db/id": "new", ":p/n": 3, ":p/tag": "q"}]).tx
        assert r.tempids == {"new": twin.store.next_eid - 1}
        assert db.views["big"].result() == db.q(db.views["big"].query)
    if every == 1:
        assert len(list((tmp_path / "db").glob("snap-*.parquet"))) == 1  # older ones deleted


def test_a_failed_transaction_leaves_state_and_log_as_they_were(tmp_path):
    with Database.open(tmp_path / "db") as db:
        fill(db, random_txs(6, n_tx=3))
        before = (db.q(ALL), db.transactions(), db.store.next_eid)
        with pytest.raises(SchemaError, match="does not match its type"):
            db.transact([{":db/id": "x", ":p/n": "not a number"}])
        with pytest.raises(QueryError, match="unknown attribute"):
            db.transact([[":db/add", 1, ":p/nope", 1]])
        assert (db.q(ALL), db.transactions(), db.store.next_eid) == before
    with Database.open(tmp_path / "db") as db:
        assert (db.q(ALL), db.transactions(), db.store.next_eid) == before


def test_values_of_every_type_survive_a_reopen(tmp_path):
    import uuid
    from datetime import datetime, timezone
    from decimal import Decimal
    u = uuid.UUID(int=5)
    at = datetime(1999, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc)
    schema = "[" + " ".join(f"{{:db/ident :t/{t} :db/valueType :db.type/{t}}}" for t in
                            ("string", "double", "keyword", "uuid", "bigint", "bigdec", "instant",
                             "boolean", "long")) + "]"
    row = {":t/string": 'a "quoted"\nline', ":t/double": 0.1, ":t/keyword": ":x/y", ":t/uuid": u,
           ":t/bigint": 1 << 70, ":t/bigdec": Decimal("1.50"), ":t/instant": at,
           ":t/boolean": True, ":t/long": -7}
    with Database.open(tmp_path / "db") as db:
        db.transact(schema)
        db.transact([row])
    with Database.open(tmp_path / "db") as db:
        got = db.q('[:find (pull ?e [*]) . :where [?e :t/long]]')
        assert {k: v for k, v in got.items() if k != ":db/id"} == row


def test_a_torn_log_tail_is_dropped_never_half_applied(tmp_path):
    """Cut the write-ahead log of a crashed writer at many byte offsets: every reopened
    state is a prefix of the transactions, each one whole."""
    src = tmp_path / "src"
    txs = random_txs(7, n_tx=12)
    db = Database.open(src, snapshot_every=10 ** 9)
    db.log.con.execute("PRAGMA wal_autocheckpoint=0")  # keep every commit in the WAL
    fill(db, txs)
    wal = (src / "log.sqlite-wal").read_bytes()
    states = []
    twin = Database()
    states.append(twin.q(ALL))
    twin.transact(SCHEMA)
    states.append(twin.q(ALL))
    for t in txs:
        twin.transact(t)
        states.append(twin.q(ALL))
    seen = set()
    for cut in sorted({len(wal)} | set(np.linspace(0, len(wal), 25).astype(int).tolist())):
        dst = tmp_path / f"cut{cut}"
        dst.mkdir()
        shutil.copy(src / "log.sqlite", dst / "log.sqlite")
        (dst / "log.sqlite-wal").write_bytes(wal[:cut])
        with Database.open(dst) as again:
            n = len(again.transactions())
            assert again.q(ALL) == states[n], f"cut at {cut}: not the state after {n} transactions"
            seen.add(n)
    db.close()
    assert max(seen) == len(txs) + 1 and len(seen) > 5


def test_an_unreadable_snapshot_falls_back_to_the_whole_log(tmp_path):
    txs = random_txs(8, n_tx=10)
    with Database.open(tmp_path / "db", snapshot_every=5) as db:
        fill(db, txs)
        want = db.q(ALL)
    (snap,) = (tmp_path / "db").glob("snap-*.parquet")
    snap.write_bytes(b"garbage")
    with pytest.warns(RuntimeWarning, match="unreadable"):
        with Database.open(tmp_path / "db") as db:
            assert db.q(ALL) == want


def test_kill_inside_a_snapshot_leaves_the_previous_one(tmp_path, monkeypatch):
    with Database.open(tmp_path / "db", snapshot_every=5) as db:
        fill(db, random_txs(9, n_tx=4))

        def boom(stage):
            if stage == "renamed":
                raise OSError("disk full (simulated)")
        monkeypatch.setattr(durable, "SNAPSHOT_HOOK", boom)
        with pytest.warns(RuntimeWarning, match="snapshot skipped"):
            db.transact([[":db/add", 1, ":p/n", 3]] * 1 + [[":db/add", 2, ":p/tag", "w"]])
        want = db.q(ALL)
    monkeypatch.setattr(durable, "SNAPSHOT_HOOK", None)
    with Database.open(tmp_path / "db") as db:
        assert db.q(ALL) == want
    assert len(list((tmp_path / "db").glob("*snap-*"))) == 1  # the stray one swept away


def test_bad_paths_and_kinds(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(StorageError, match="is a file"):
        Database.open(tmp_path / "file")
    Graph.open(tmp_path / "g").close()
    with pytest.raises(StorageError, match="holds a durable graph, not a database"):
        Database.open(tmp_path / "g")
    with pytest.raises(StorageError, match="undirected graph"):
        Graph.open(tmp_path / "g", directed=True)
    with Database.open(tmp_path / "d") as db:
        from queries.parse import parse_query
        with pytest.raises(QueryError, match="EDN text or data"):
            db.view(parse_query('[:find ?e :where [?e :db/txInstant]]'))


@pytest.mark.parametrize("directed", [False, True])
def test_reopened_graph_equals_its_in_memory_twin(tmp_path, directed):
    rng = np.random.default_rng(1)
    twin = Graph(directed=directed)
    with Graph.open(tmp_path / "g", directed=directed, snapshot_every=40) as g:
        for x in (g, twin):
            x.load_edges(rng.integers(0, 30, (60, 2)) if x is g else g.edges())
            x.view("3-cycle" if directed else "triangle")
            x.view("4-cycle")
        for t in range(15):
            ins, dels = rng.integers(0, 30, (5, 2)), rng.integers(0, 30, (4, 2))
            for x in (g, twin):
                x.apply(inserts=ins, deletes=dels)
        with pytest.raises(Exception):
            g.apply(inserts=np.array([[1, -5]]))  # a failing tick logs nothing
        n = g.n_ticks
    with Graph.open(tmp_path / "g") as g:
        assert g.directed == directed and g.n_ticks == n
        assert np.array_equal(g.edges(), twin.edges())
        assert {k: v.count for k, v in g.views.items()} == {k: v.count for k, v in twin.views.items()}
        g.check_views()
        assert [t for t, _, _ in g._log.ticks()] == list(range(1, n + 1))


def test_durable_log_rows_are_one_sqlite_transaction_each(tmp_path):
    """The log is plain SQLite: each transaction's datoms carry its t, and its tx row
    counts them."""
    with Database.open(tmp_path / "db") as db:
        fill(db, random_txs(10, n_tx=3))
    con = sqlite3.connect(tmp_path / "db" / "log.sqlite")
    rows = con.execute("SELECT tx.t, tx.n_datoms, count(*) FROM tx JOIN datoms ON datoms.t = tx.t "
                       "GROUP BY tx.t").fetchall()
    con.close()
    assert [t for t, _, _ in rows] == [1, 2, 3, 4, 5] and all(n == c for _, n, c in rows)


def test_a_schema_alteration_survives_a_reopen(tmp_path):
    with Database.open(tmp_path / "db") as db:
        db.transact('[{:db/ident :tag :db/valueType :db.type/string}]')
        e = db.transact([{":db/id": "a", ":tag": "x"}]).tempids["a"]
        db.transact('[[:db/add :tag :db/cardinality :db.cardinality/many]'
                    ' [:db/add :tag :db/unique :db.unique/value]]')
    with Database.open(tmp_path / "db") as db:
        assert (db.store.attribute(":tag").many, db.store.attribute(":tag").unique) == (True, "value")
        db.transact([[":db/add", e, ":tag", "y"]])
        assert db.q('[:find ?t :where [_ :tag ?t]]') == {("x",), ("y",)}
