"""Transactions on small hand-made databases: set semantics, cardinality, tempids, errors."""

import uuid
from datetime import datetime, timezone

import numpy as np
import pytest

from queries.database import Database
from wcoj.errors import (
    ArityMismatchError, CasError, EdnSyntaxError, QueryError, SchemaError, UnboundVariableError,
    UnknownAttributeError,
)

SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/cardinality :db.cardinality/one
              :db/unique :db.unique/identity}
             {:db/ident :email :db/valueType :db.type/string :db/cardinality :db.cardinality/one
              :db/unique :db.unique/value}
             {:db/ident :age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
             {:db/ident :tag :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
             {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :score :db/valueType :db.type/double}
             {:db/ident :ok :db/valueType :db.type/boolean}
             {:db/ident :at :db/valueType :db.type/instant}
             {:db/ident :id :db/valueType :db.type/uuid}]'''


@pytest.fixture
def db():
    d = Database()
    d.transact(SCHEMA)
    return d


def people(db):
    return db.q('[:find ?n ?a :where [?e :name ?n] [?e :age ?a]]')


def test_tempids_and_report(db):
    r = db.transact([{":db/id": "ann", ":name": "Ann", ":age": 30, ":friend": "bob"},
                     {":db/id": "bob", ":name": "Bob"}])
    assert set(r.tempids) == {"ann", "bob"} and r.tempids["ann"] != r.tempids["bob"]
    assert (r.tempids["ann"], ":friend", r.tempids["bob"], True) in r.tx_data
    assert len(r.tx_data) == 5 and r.tx_data[-1][:2] == (r.tx, ":db/txInstant")  # as in Datomic
    assert db.q('[:find ?n . :in $ ?e :where [?e :friend ?f] [?f :name ?n]]',
                r.tempids["ann"]) == "Bob"


def test_tx_data_read_after_later_transactions_is_what_the_transaction_did(db):
    """A report decodes its datoms when first read: later transactions, a failed one that
    gives back the values it interned, and a retraction of the value change nothing."""
    r = db.transact([{":db/id": "a", ":name": "Ann", ":tag": ":fresh"}])
    ann = r.tempids["a"]
    with pytest.raises(SchemaError):
        db.transact([[":db/add", ann, ":tag", ":never"], [":db/add", ann, ":age", "old"]])
    db.transact([[":db/retract", ann, ":tag", ":fresh"], [":db/add", ann, ":tag", ":other"]])
    assert sorted(d[1:] for d in r.tx_data if d[1] != ":db/txInstant") == \
        [(":name", "Ann", True), (":tag", ":fresh", True)]
    assert r.tx_data[-1][:2] == (r.tx, ":db/txInstant")


def test_set_semantics(db):
    r = db.transact([[":db/add", "a", ":name", "Ann"], [":db/add", "a", ":tag", ":x"]])
    ann = r.tempids["a"]
    again = db.transact([[":db/add", ann, ":tag", ":x"]])
    assert [d for d in again.tx_data if d[1] != ":db/txInstant"] == []  # only the tx's instant
    gone = db.transact([[":db/retract", ann, ":tag", ":y"]])
    assert [d for d in gone.tx_data if d[1] != ":db/txInstant"] == []
    assert db.q('[:find [?t ...] :where [_ :tag ?t]]') == [":x"]


def test_cardinality_one_replaces_and_many_accumulates(db):
    ann = db.transact([{":db/id": "a", ":name": "Ann", ":age": 30}]).tempids["a"]
    r = db.transact([[":db/add", ann, ":age", 31], [":db/add", ann, ":tag", ":p"],
                     [":db/add", ann, ":tag", ":q"]])
    assert (ann, ":age", 30, False) in r.tx_data and (ann, ":age", 31, True) in r.tx_data
    assert people(db) == {("Ann", 31)}
    assert sorted(db.q('[:find [?t ...] :where [_ :tag ?t]]')) == [":p", ":q"]


def test_upsert_through_unique_identity(db):
    ann = db.transact([{":db/id": "a", ":name": "Ann", ":age": 30}]).tempids["a"]
    r = db.transact([{":db/id": "x", ":name": "Ann", ":age": 40}])
    assert r.tempids["x"] == ann
    assert people(db) == {("Ann", 40)}


def test_lookup_refs_and_retract_entity(db):
    db.transact([{":db/id": "a", ":name": "Ann", ":age": 30}, {":db/id": "b", ":name": "Bob"}])
    db.transact([[":db/add", [":name", "Ann"], ":friend", [":name", "Bob"]]])
    assert db.q('[:find ?n . :where [?a :name "Ann"] [?a :friend ?b] [?b :name ?n]]') == "Bob"
    db.transact([[":db/retractEntity", [":name", "Ann"]]])
    assert people(db) == set()
    assert db.q('[:find ?n :where [_ :name ?n]]') == {("Bob",)}


def test_value_types_round_trip(db):
    at = datetime(2020, 5, 1, 12, 30, tzinfo=timezone.utc)
    u = uuid.uuid4()
    db.transact([{":name": "X", ":score": 2.5, ":ok": False, ":at": at, ":id": u}])
    assert db.q('[:find [?s ?o ?t ?u] :where [?e :name "X"] [?e :score ?s] [?e :ok ?o] '
                '[?e :at ?t] [?e :id ?u]]') == (2.5, False, at, u)


def test_edn_text_transaction_with_db_id_tags(db):
    r = db.transact('[{:db/id #db/id [:db.part/user -1] :name "A"} '
                    '{:db/id #db/id [:db.part/user -2] :name "B" '
                    ' :friend #db/id [:db.part/user -1]}]')
    assert db.q('[:find ?n . :where [?b :name "B"] [?b :friend ?a] [?a :name ?n]]') == "A"
    assert set(r.tempids) == {-1, -2}


def test_nested_and_reverse_maps(db):
    db.transact([{":name": "A", ":friend": [{":name": "B"}]},
                 {":name": "C", ":_friend": [{":name": "D"}]}])
    assert db.q('[:find ?x ?y :where [?a :friend ?b] [?a :name ?x] [?b :name ?y]]') == {
        ("A", "B"), ("D", "C")}


def snapshot(db):
    return (db.store.datoms.contents(), {n: v.result() for n, v in db.views.items()},
            db.store.next_eid, dict(db.store.attributes), db.store.interner.marks())


BAD = [
    ([[":db/add", "a", ":age", "thirty"]], SchemaError, "'thirty'.*:age.*:db.type/long"),
    ([[":db/add", "a", ":nmae", "Ann"]], UnknownAttributeError, "did you mean :name"),
    ([{":db/id": "a", ":name": "Z", ":friend": "nobody"}], SchemaError, "unknown tempid"),
    ([[":db/add", "a", ":email", "a@x"], [":db/add", "b", ":email", "a@x"]], SchemaError,
     "unique value"),
    ([[":db/add", "a", ":age", 1], [":db/add", "a", ":age", 2]], SchemaError,
     "cardinality-one"),
    ([[":db/add", [":name", "Nobody"], ":age", 1]], SchemaError, "matches no entity"),
    ([[":db/frob", 1, ":age", 1]], SchemaError, "bad transaction form"),
    ([[":db/add", 10 ** 6, ":age", 1]], SchemaError, "does not exist"),
    ('[{:db/ident :bad :db/valueType :db.type/nope}]', SchemaError, "unknown value type"),
    ('[[:db/add "a" :name "x"]', EdnSyntaxError, "line 1"),
    # rules that moved to the vectorised pass (queries.txrules) refuse the same way
    ([[":db/add", [":age", 30], ":name", "x"]], SchemaError, "not a unique attribute"),
    ([[":db/retractEntity", [":name", "Nobody"]]], SchemaError, "matches no entity"),
    ([{":db/id": "b", ":name": "Bob", ":email": "ann@x"}], SchemaError, "already belongs to"),
    ([[":db/add", "b", ":name", "New"], [":db/add", "b", ":score", float("nan")]], SchemaError,
     "NaN"),
    ([[":db/add", True, ":age", 1]], SchemaError, "bad entity"),
    ([[":db/add", "b", ":name", "Zed"], [":db/add", "b", ":friend", [":name", "Zed"]]],
     SchemaError, "matches no entity"),   # lookup refs read the database before the transaction
]


@pytest.mark.parametrize("tx, error, match", BAD)
def test_bad_transactions_change_nothing(db, tx, error, match):
    db.transact([{":db/id": "a", ":name": "Ann", ":age": 30, ":email": "ann@x"}])
    v1 = db.view('[:find ?n ?a :where [?e :name ?n] [?e :age ?a]]')
    v2 = db.view('[:find (count ?e) . :where [?e :name]]')
    before = snapshot(db)
    with pytest.raises(error, match=match):
        db.transact(tx)
    after = snapshot(db)
    assert after[0] == before[0] and after[1] == before[1] and after[2:] == before[2:]
    assert v1.result() == db.q(v1.query) and v2.result() == 1


def test_unique_value_conflict_with_existing_entity(db):
    db.transact([{":name": "Ann", ":email": "a@x"}])
    with pytest.raises(SchemaError, match="already belongs"):
        db.transact([{":name": "Bob", ":email": "a@x"}])
    assert db.q('[:find ?n :where [_ :name ?n]]') == {("Ann",)}


def test_bad_queries(db):
    db.transact([{":name": "Ann", ":age": 3}])
    with pytest.raises(EdnSyntaxError, match="line 2, column"):
        db.q('[:find ?x\n :where [?x :name]]]')
    with pytest.raises(UnknownAttributeError, match="did you mean :name"):
        db.q('[:find ?x :where [?x :nmae _]]')
    with pytest.raises(UnboundVariableError, match=r"\?y"):
        db.q('[:find ?y :where [?x :name _]]')
    with pytest.raises(UnboundVariableError, match="unsafe negation"):
        db.q('[:find ?x :where [?x :name _] (not [?z :age ?w])]')
    with pytest.raises(UnboundVariableError, match=r"\?q"):
        db.q('[:find ?x :where [?x :name _] [(> ?q 1)]]')
    with pytest.raises(ArityMismatchError, match="defined with 2 arguments, called with 3"):
        db.q('[:find ?x :in $ % :where (r ?x ?y ?z)]', '[[(r ?a ?b) [?a :age ?b]]]')
    with pytest.raises(QueryError, match="cannot be stratified"):
        db.q('[:find ?x :in $ % :where (p ?x)]',
             '[[(p ?x) [?x :age _] (not (q ?x))] [(q ?x) [?x :name _] (p ?x)]]')


def test_retract_entity_cascades_through_components_and_drops_references():
    d = Database()
    d.transact('''[{:db/ident :order/id :db/valueType :db.type/long :db/unique :db.unique/identity}
                  {:db/ident :order/line :db/valueType :db.type/ref
                   :db/cardinality :db.cardinality/many :db/isComponent true}
                  {:db/ident :line/note :db/valueType :db.type/ref :db/isComponent true}
                  {:db/ident :line/sku :db/valueType :db.type/string}
                  {:db/ident :note/text :db/valueType :db.type/string}
                  {:db/ident :shop/last :db/valueType :db.type/ref}]''')
    r = d.transact([{":db/id": "o", ":order/id": 1,
                     ":order/line": [{":line/sku": "a", ":line/note": {":note/text": "n"}},
                                     {":line/sku": "b"}]},
                    {":db/id": "keep", ":order/id": 2, ":order/line": [{":line/sku": "c"}]},
                    {":db/id": "shop", ":shop/last": "o"}])
    d.transact([[":db/retractEntity", [":order/id", 1]]])
    assert d.q('[:find ?s :where [_ :line/sku ?s]]') == {("c",)}   # its lines went with it
    assert d.q('[:find ?t :where [_ :note/text ?t]]') == set()     # and their components
    assert d.q('[:find ?x :where [_ :shop/last ?x]]') == set()      # references to it too
    assert d.q('[:find ?i :where [_ :order/id ?i]]') == {(2,)}
    assert r.tempids["keep"] in d.q('[:find [?o ...] :where [?o :order/id]]')


def test_cas_swaps_only_the_expected_value(db):
    ann = db.transact([{":db/id": "a", ":name": "Ann", ":age": 30}]).tempids["a"]
    db.transact([[":db/cas", ann, ":age", 30, 31]])
    assert people(db) == {("Ann", 31)}
    before = (db.store.datoms.contents().to_dict(), db.log.transactions())
    with pytest.raises(CasError, match="expected 30, found 31") as info:
        db.transact([[":db/add", ann, ":name", "Anna"], [":db/cas", ann, ":age", 30, 40]])
    assert (info.value.entity, info.value.expected, info.value.found) == (ann, 30, 31)
    assert (db.store.datoms.contents().to_dict(), db.log.transactions()) == before  # nothing
    bob = db.transact([{":db/id": "b", ":name": "Bob"}]).tempids["b"]
    db.transact([[":db/cas", bob, ":age", None, 20]])  # nil: the attribute had no value
    assert people(db) == {("Ann", 31), ("Bob", 20)}
    with pytest.raises(SchemaError, match="cardinality-one"):
        db.transact([[":db/cas", bob, ":friend", None, ann]])


def test_columns_of_mixed_kinds_take_the_per_value_route(db):
    """Entity and value columns are coded with numpy when every item is a plain int, one
    by one otherwise: ints beside tempids, numpy ints, ints past int64 and bools."""
    db.transact('[{:db/ident :big :db/valueType :db.type/bigint :db/cardinality :db.cardinality/many}]')
    ann = db.transact([{":db/id": "a", ":name": "Ann"}]).tempids["a"]
    r = db.transact([[":db/add", ann, ":age", 40], [":db/add", "b", ":name", "Bob"],
                     [":db/add", np.int64(ann), ":big", 2 ** 70], [":db/add", ann, ":big", 5],
                     [":db/add", "b", ":friend", ann], [":db/add", ann, ":friend", "b"]])
    bob = r.tempids["b"]
    assert db.q('[:find ?b :in $ ?e :where [?e :big ?b]]', ann) == {(2 ** 70,), (5,)}
    db.transact([[":db/add", bob, ":age", 2 ** 60], [":db/add", ann, ":age", 3]])  # past the table-free longs
    assert db.q('[:find ?e ?a :where [?e :age ?a]]') == {(bob, 2 ** 60), (ann, 3)}
    assert db.q('[:find ?x ?y :where [?x :friend ?y]]') == {(bob, ann), (ann, bob)}
    before = db.q('[:find ?e ?a ?v :where [?e ?a ?v]]')
    for bad, match in (([[":db/add", 2 ** 70, ":age", 1]], "does not exist"),
                       ([[":db/add", ann, ":age", 1], [":db/add", 0, ":age", 1]], "bad entity 0"),
                       ([[":db/add", ann, ":friend", 2 ** 40]], "does not exist"),
                       ([[":db/add", ann, ":age", 1], [":db/add", bob, ":age", True]], "does not match"),
                       ([[":db/add", True, ":age", 1]], "bad entity")):
        with pytest.raises(SchemaError, match=match):
            db.transact(bad)
    assert db.q('[:find ?e ?a ?v :where [?e ?a ?v]]') == before
