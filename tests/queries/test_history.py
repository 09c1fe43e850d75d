"""Time travel (as_of, since, history) against an oracle: the log prefix replayed into a
fresh in-memory database."""

import random
from datetime import timedelta

import pytest

from queries.database import Database
from wcoj.errors import QueryError, ReadOnlyError, SchemaError

SCHEMA = """[{:db/ident :p/n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
             {:db/ident :p/tag :db/valueType :db.type/string :db/cardinality :db.cardinality/many}
             {:db/ident :p/ref :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}]"""
ALL = '[:find ?e ?a ?v :where [?e ?a ?v] [(not= ?a :db/txInstant)]]'


def random_txs(seed: int, n_tx: int = 25, n_ent: int = 6) -> list:
    """Transactions over entities 1..n_ent (created by the first one): adds, retracts,
    cardinality-one replacements, retractEntity."""
    rng = random.Random(seed)
    txs = [[{":db/id": f"e{i}", ":p/n": i} for i in range(n_ent)]]
    for _ in range(n_tx):
        forms, one = [], set()  # one value per cardinality-one (e, a) in a transaction
        for _ in range(rng.randint(1, 4)):
            e = rng.randint(1, n_ent)
            r = rng.random()
            if r < 0.35 and (e, "n") not in one:
                one.add((e, "n"))
                forms.append([":db/add", e, ":p/n", rng.randint(0, 3)])
            elif r < 0.6:
                forms.append([":db/add", e, ":p/tag", rng.choice("xyz")])
            elif r < 0.8:
                forms.append([":db/retract", e, ":p/tag", rng.choice("xyz")])
            elif r < 0.93 and (e, "ref") not in one:
                one.add((e, "ref"))
                forms.append([":db/add", e, ":p/ref", rng.randint(1, n_ent)])
            elif r >= 0.93:
                forms = [[":db/retractEntity", e]]
                break
        txs.append(forms)
    return txs


def replay(txs: list) -> tuple[Database, list]:
    db = Database()
    db.transact(SCHEMA)
    return db, [db.transact(t).tx for t in txs]


@pytest.fixture(params=[0, 1, 2])
def run(request):
    txs = random_txs(request.param)
    db, ids = replay(txs)
    return db, txs, ids


def test_as_of_equals_the_replayed_prefix(run):
    db, txs, ids = run
    for k in range(len(txs) + 1):
        oracle, _ = replay(txs[:k])
        t = ids[k - 1] if k else ids[0] - 1  # before the first data transaction: schema only
        assert db.as_of(t).q(ALL) == oracle.q(ALL), f"as_of after {k} transactions"


def test_since_is_what_later_transactions_asserted_and_is_still_there(run):
    db, txs, ids = run
    now = db.q('[:find ?e ?a ?v ?tx :where [?e ?a ?v ?tx] [(not= ?a :db/txInstant)]]')
    for k in (0, 5, len(ids) // 2, len(ids)):
        t = ids[k - 1] if k else 0
        want = {(e, a, v) for e, a, v, tx in now if tx > t}
        assert db.since(t).q(ALL) == want


def test_history_is_the_difference_of_consecutive_states(run):
    db, txs, ids = run
    want, before = set(), replay([])[0].q(ALL)  # the schema transaction's datoms
    for k in range(1, len(txs) + 1):
        after = replay(txs[:k])[0].q(ALL)
        want |= {(e, a, v, ids[k - 1], True) for e, a, v in after - before}
        want |= {(e, a, v, ids[k - 1], False) for e, a, v in before - after}
        before = after
    got = db.history().q('[:find ?e ?a ?v ?tx ?added :where [?e ?a ?v ?tx ?added] '
                         '[(not= ?a :db/txInstant)] [(> ?tx %d)]]' % (ids[0] - 1))
    assert got == want
    # a shorter pattern in a history database matches every value an attribute ever had
    ever = db.history().q('[:find ?e ?v :where [?e :p/tag ?v]]')
    assert ever == {(e, v) for e, a, v, _, _ in want if a == ":p/tag"}


def test_tx_instant_is_queryable_and_as_of_takes_a_datetime():
    db, ids = replay(random_txs(3, n_tx=4))
    instants = dict(db.q('[:find ?tx ?when :where [?tx :db/txInstant ?when]]'))
    assert set(ids) <= set(instants)
    assert sorted(instants.values()) == [instants[t] for t in sorted(instants)]  # never decrease
    for tx in ids:
        assert db.as_of(instants[tx]).q(ALL) == db.as_of(tx).q(ALL)
    before = min(instants.values()) - timedelta(days=1)
    assert db.as_of(before).q(ALL) == set()
    assert [t for t, _, _ in db.transactions()] == list(range(1, len(ids) + 2))


def test_database_values_are_read_only_and_added_is_true_outside_a_history():
    db, ids = replay(random_txs(4, n_tx=2))
    for value in (db.as_of(ids[0]), db.since(0), db.history()):
        with pytest.raises(ReadOnlyError, match="read-only"):
            value.transact([[":db/add", 1, ":p/n", 9]])
        with pytest.raises(ReadOnlyError):
            value.view(ALL)
    # every datom of a database that is not a history is an assertion, as in Datomic
    assert db.q('[:find ?e :where [?e :p/n _ _ true]]') == db.q('[:find ?e :where [?e :p/n]]')
    assert db.q('[:find ?e :where [?e :p/n _ _ false]]') == set()
    with pytest.raises(QueryError, match="point in time"):
        db.as_of("yesterday")


def test_pull_on_a_past_value():
    db = Database()
    db.transact(SCHEMA)
    e = db.transact([{":db/id": "a", ":p/n": 1, ":p/tag": ["x", "y"]}]).tempids["a"]
    t = db.transact([[":db/add", e, ":p/n", 2], [":db/retract", e, ":p/tag", "x"]]).tx
    past = db.as_of(t - 1)
    assert past.pull("[:p/n :p/tag]", e) == {":p/n": 1, ":p/tag": ["x", "y"]}
    assert db.pull("[:p/n :p/tag]", e) == {":p/n": 2, ":p/tag": ["y"]}
    assert past.q('[:find (pull ?e [:p/n]) . :where [?e :p/n 1]]') == {":p/n": 1}


HIST = '[:find ?e ?a ?v ?tx ?added :where [?e ?a ?v ?tx ?added] [(not= ?a :db/txInstant)]]'


def _state(db):
    return (db.q(ALL), db.transactions(), db.store.next_eid, len(db.store.interner))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_is_the_transaction_on_a_copy_and_leaves_the_database_as_it_was(seed, tmp_path):
    """db.with_(tx).db_after equals a twin that transacted tx (now, as of earlier
    transactions, in its history); the database itself, its views and its durable log
    stay as they were. A second with_ chains on the first."""
    txs = random_txs(seed)
    head, (last, extra) = txs[:-2], txs[-2:]
    with Database.open(tmp_path / "db") as db:
        db.transact(SCHEMA)
        for t in head:
            db.transact(t)
        view = db.view('[:find ?e ?t :where [?e :p/tag ?t]]')
        before, seen = _state(db), view.result()
        report = db.with_(last)
        after = report.db_after
        twin, ids = replay(head + [last])
        assert after.q(ALL) == twin.q(ALL)
        assert report.tx == ids[-1] and report.tempids == {}
        assert after.history().q(HIST) == twin.history().q(HIST)
        for tx in ids[::4]:
            assert after.as_of(tx).q(ALL) == twin.as_of(tx).q(ALL)
        assert _state(db) == before and view.result() == seen
        again = after.with_(extra).db_after            # with_ of a with_
        assert again.q(ALL) == replay(head + [last, extra])[0].q(ALL)
        assert after.q(ALL) == twin.q(ALL) and _state(db) == before
        assert db.with_([[":db/add", 1, ":p/tag", "a value new to the interner"]]).db_after.q(
            '[:find ?e :where [?e :p/tag "a value new to the interner"]]') == {(1,)}
        with pytest.raises(SchemaError, match="does not match its type"):
            db.with_([[":db/add", 1, ":p/n", "not a number"]])
        assert _state(db) == before
    with Database.open(tmp_path / "db") as db:   # nothing of with_ reached the log
        assert db.transactions() == before[1]


def test_with_on_a_past_value_is_refused_by_name():
    db, ids = replay(random_txs(0, n_tx=3))
    with pytest.raises(ReadOnlyError, match="cannot apply with_"):
        db.as_of(ids[1]).with_([[":db/add", 1, ":p/n", 2]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_datoms_of_each_index_are_the_live_datoms_in_its_order(seed):
    """db.datoms against q of [?e ?a ?v ?tx] (every live datom), on the database and on a
    past value: the same set, in each index's order, narrowed by leading components."""
    db, ids = replay(random_txs(seed))
    for value in (db, db.as_of(ids[len(ids) // 2])):
        oracle = {(e, str(a), v, tx) for e, a, v, tx in value.q('[:find ?e ?a ?v ?tx :where [?e ?a ?v ?tx]]')}
        refs = {":p/ref"}
        def ek(e):  # entity ids in order, then attributes' own entities by ident (queries.schema)
            return (0, e, "") if isinstance(e, int) else (1, 0, str(e))
        for index, key in ((":eavt", lambda d: (ek(d[0]), d[1], d[2])), (":aevt", lambda d: (d[1], ek(d[0]), d[2])),
                           (":avet", lambda d: (d[1], str(d[2]), ek(d[0]))), (":vaet", lambda d: (d[2], d[1], d[0]))):
            got = [(d.e, str(d.a), d.v, d.tx) for d in value.datoms(index)]
            want = oracle if index != ":vaet" else {d for d in oracle if d[1] in refs}
            assert set(got) == want and len(got) == len(want)
            if index != ":avet":   # :avet orders values as values (numbers, strings), compared apart below
                assert got == sorted(got, key=key)
        for e in range(1, 7):
            assert [(d.e, str(d.a), d.v) for d in value.datoms(":eavt", e)] == \
                sorted((d[0], d[1], d[2]) for d in oracle if d[0] == e)
            assert [(d.e, d.v) for d in value.datoms(":avet", ":p/n", 2)] == \
                sorted((d[0], d[2]) for d in oracle if d[1] == ":p/n" and d[2] == 2)
            assert [d.e for d in value.datoms(":vaet", e)] == \
                sorted(d[0] for d in oracle if d[1] == ":p/ref" and d[2] == e)
        tags = [d.v for d in value.datoms(":avet", ":p/tag")]
        assert tags == sorted(tags)


def test_datoms_refuses_bad_indexes_and_attributes_by_name():
    db, _ = replay(random_txs(0, n_tx=3))
    with pytest.raises(QueryError, match="unknown index :eavx"):
        db.datoms(":eavx")
    with pytest.raises(QueryError, match="unknown attribute :p/nope"):
        db.datoms(":aevt", ":p/nope")
    with pytest.raises(QueryError, match="not a history"):
        db.history().datoms(":eavt")
    assert db.datoms(":avet", ":p/n", 99) == []
