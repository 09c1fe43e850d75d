"""Datomic's database functions beside ``q``: ``index_range``, ``entid``, ``ident``,
``basis_t``, and negative numbers as tempids (DataScript's, and ``#db/id`` with a
number). Each answer is checked against ``q`` over the same database (an independent
route: the query circuit, not the index reads) or against a twin transaction."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from queries.database import Database
from queries.edn import Keyword
from wcoj.errors import QueryError, SchemaError, UnknownAttributeError

K = Keyword
SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :age :db/valueType :db.type/long}
             {:db/ident :score :db/valueType :db.type/double :db/cardinality :db.cardinality/many}
             {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :pair :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long :db.type/long]}
             {:db/ident :color/red} {:db/ident :color/blue}]'''


def people(seed: int, n: int = 30) -> Database:
    rng = random.Random(seed)
    db = Database()
    db.transact(SCHEMA)
    db.transact([{":db/id": f"p{i}", ":name": f"n{i:02d}", ":age": rng.randint(0, 9),
                  ":score": [rng.choice([0.5, 1.5, 2.5, -1.0]) for _ in range(rng.randint(0, 2))],
                  ":friend": [f"p{rng.randrange(n)}" for _ in range(rng.randint(0, 2))]}
                 for i in range(n)])
    for _ in range(5):   # later changes, so that live datoms differ from the log
        e = rng.randint(1, n)
        db.transact([[":db/add", e, ":age", rng.randint(0, 9)]])
    return db


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3), st.sampled_from([":age", ":score", ":name", ":friend"]),
       st.one_of(st.none(), st.integers(-1, 10)), st.one_of(st.none(), st.integers(-1, 10)))
def test_index_range_is_the_live_values_in_the_range_in_value_order(seed, attr, lo, hi):
    db = people(seed)
    if attr == ":name":
        lo, hi = (None if x is None else f"n{x:02d}" for x in (lo, hi))
    elif attr == ":score":
        lo, hi = (None if x is None else x / 2 for x in (lo, hi))
    elif attr == ":friend":   # bounds are entities, by id or lookup ref
        lo = None if lo is None or lo < 1 else lo
        hi = None if hi is None or hi < 1 else [":name", f"n{hi - 1:02d}"]
    got = db.index_range(attr, lo, hi)
    lo_v = lo if attr != ":friend" or not isinstance(lo, list) else db.entid(lo)
    hi_v = db.entid(hi) if attr == ":friend" and isinstance(hi, list) else hi
    live = db.q(f'[:find ?e ?v ?tx :where [?e {attr} ?v ?tx]]')
    want = sorted(((v, e, tx) for e, v, tx in live
                   if (lo_v is None or v >= lo_v) and (hi_v is None or v < hi_v)))
    assert [(d.v, d.e, d.tx) for d in got] == want
    assert all(str(d.a) == attr and d.added for d in got)


def test_index_range_refuses_what_it_cannot_order_or_read():
    db = people(0)
    with pytest.raises(QueryError, match="tuples"):
        db.index_range(":pair", None, None)
    with pytest.raises(UnknownAttributeError):
        db.index_range(":agee", 1, 2)
    with pytest.raises(SchemaError, match="age"):
        db.index_range(":age", "three", None)


def test_entid_and_ident_name_the_same_entities_as_q():
    db = people(1)
    for i in (0, 7, 29):
        e = db.q(f'[:find ?e . :where [?e :name "n{i:02d}"]]')
        assert db.entid([":name", f"n{i:02d}"]) == e == db.entid(e)
    red = db.q('[:find ?e . :where [?e :db/ident :color/red]]')
    assert db.entid(":color/red") == red and db.ident(red) == K(":color/red")
    assert db.entid([":name", "nobody"]) is None and db.entid(":color/green") is None
    assert db.ident(db.entid([":name", "n00"])) is None   # a person has no ident
    # an attribute is the entity shown as its keyword (queries.schema)
    assert db.entid(":age") == K(":age") == db.ident(":age")
    assert db.q('[:find ?a . :where [?a :db/ident :age]]') == db.entid(":age")


def test_basis_t_is_the_last_transaction_and_as_of_keeps_its_own():
    db = people(2)
    ts = [t for t, _, _ in db.transactions()]
    assert db.basis_t() == ts[-1] == len(ts)
    assert db.as_of(ts[2]).basis_t() == ts[2]
    assert db.as_of(10 ** 6).basis_t() == ts[-1]
    assert Database().basis_t() == 0
    r = db.transact('[{:name "late"}]')
    assert db.basis_t() == ts[-1] + 1 and db.as_of(r.tx).basis_t() == ts[-1] + 1


def test_negative_numbers_are_tempids_as_in_datascript():
    a, b = Database(), Database()
    for d in (a, b):
        d.transact(SCHEMA)
    ra = a.transact('[{:db/id -1 :name "Cy" :friend -2} [:db/add -2 :name "Di"] [:db/add -1 :age 3]'
                    ' [:db/add -3 :friend -1] [:db/add -3 :name "Ed"]]')
    rb = b.transact('[{:db/id "c" :name "Cy" :friend "d"} [:db/add "d" :name "Di"] [:db/add "c" :age 3]'
                    ' [:db/add "e" :friend "c"] [:db/add "e" :name "Ed"]]')
    q = '[:find ?n ?a ?m :where [?e :name ?n] [(get-else $ ?e :age -1) ?a] [?e :friend ?f] [?f :name ?m]]'
    assert a.q(q) == b.q(q) == {("Cy", 3, "Di"), ("Ed", -1, "Cy")}
    assert ra.tempids == {-1: rb.tempids["c"], -2: rb.tempids["d"], -3: rb.tempids["e"]}
    # an upsert through a negative tempid, as through a string one
    r = a.transact([{":db/id": -7, ":name": "Cy", ":age": 4}])
    assert r.tempids == {-7: ra.tempids[-1]} and a.q('[:find ?a . :where [?e :name "Cy"] [?e :age ?a]]') == 4
    n = len(a.store.datoms.contents())
    with pytest.raises(SchemaError, match="bad entity 0"):
        a.transact('[[:db/add 0 :name "z"]]')
    with pytest.raises(SchemaError, match="unknown tempid -9"):
        a.transact('[[:db/add 1 :friend -9]]')
    assert len(a.store.datoms.contents()) == n
