"""Tuple attributes name their element types, as in Datomic: ``:db/tupleTypes`` one per
element (so also the length), ``:db/tupleType`` one for 2 to 8 elements. Values are checked
(and coerced, a long to a double) element by element; the types are schema datoms, cannot
be altered, and survive a reopen."""

import pytest

from queries.database import Database
from queries.edn import Keyword as K
from wcoj.errors import SchemaError

SCHEMA = ('[{:db/ident :pt :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long :db.type/string]}'
          ' {:db/ident :tags :db/valueType :db.type/tuple :db/tupleType :db.type/keyword'
          '  :db/cardinality :db.cardinality/many}'
          ' {:db/ident :xy :db/valueType :db.type/tuple :db/tupleTypes [:db.type/double :db.type/ref]}]')


def _db() -> Database:
    db = Database()
    db.transact(SCHEMA)
    return db


def _state(db: Database):
    return db.q('[:find ?e ?a ?v :where [?e ?a ?v]]'), len(db.store.interner), db.n_tx


def test_values_of_their_element_types_are_kept_and_coerced():
    db = _db()
    e = db.transact('[{:db/id "a" :pt [1 "x"] :tags [[:a :b] [:c :d :e]] :xy [1 2]}'
                    ' {:db/id "b" :pt [2 nil]}]').tempids
    assert db.q('[:find ?t :in $ ?e :where [?e :pt ?t]]', e["a"]) == {((1, "x"),)}
    assert db.q('[:find ?t :in $ ?e :where [?e :pt ?t]]', e["b"]) == {((2, None),)}
    assert db.q('[:find ?t :where [_ :tags ?t]]') == {((K(":a"), K(":b")),), ((K(":c"), K(":d"), K(":e")),)}
    [(xy,)] = db.q('[:find ?t :where [_ :xy ?t]]')
    assert xy == (1.0, 2) and type(xy[0]) is float   # the long 1 is stored as the double 1.0


@pytest.mark.parametrize("tx, why", [
    ('[{:db/id "c" :pt ["x" 1]}]', 'element 0, \'x\' of type str, is not a :db.type/long'),
    ('[{:db/id "c" :pt [1 "x" 2]}]', "has 3 elements; its :db/tupleTypes name 2"),
    ('[{:db/id "c" :pt [1]}]', "2 to 8"),
    ('[{:db/id "c" :tags [[:a "b"]]}]', "element 1, 'b' of type str, is not a :db.type/keyword"),
    ('[{:db/id "c" :tags [[:a :b :c :d :e :f :g :h :i]]}]', "2 to 8"),
    ('[{:db/id "c" :xy [1.5 -3]}]', "element 1, -3 of type int, is not a :db.type/ref"),
    ('[{:db/id "c" :xy [##NaN 3]}]', "holds NaN"),
])
def test_a_value_not_of_its_element_types_is_refused_and_changes_nothing(tx, why):
    db = _db()
    db.transact('[{:db/id "a" :pt [1 "x"]}]')
    before = _state(db)
    with pytest.raises(SchemaError, match=why.replace("[", r"\[")):
        db.transact(tx)
    assert _state(db) == before


@pytest.mark.parametrize("attr, why", [
    ('{:db/ident :u :db/valueType :db.type/tuple}', "needs exactly one of :db/tupleAttrs"),
    ('{:db/ident :u :db/valueType :db.type/tuple :db/tupleType :db.type/long'
     ' :db/tupleTypes [:db.type/long :db.type/long]}', "needs exactly one of"),
    ('{:db/ident :u :db/valueType :db.type/tuple :db/tupleType :db.type/tuple}', "scalar types"),
    ('{:db/ident :u :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long :db.type/nope]}',
     "got :db.type/nope"),
    ('{:db/ident :u :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long]}', "2 to 8 types"),
    ('{:db/ident :u :db/valueType :db.type/long :db/tupleType :db.type/long}', "needs :db/valueType :db.type/tuple"),
    ('{:db/ident :pt :db/tupleTypes [:db.type/long :db.type/long]}', ":db/tupleTypes cannot be altered"),
    ('{:db/ident :tags :db/tupleType :db.type/string}', ":db/tupleType cannot be altered"),
])
def test_bad_tuple_schemas_are_refused_and_change_nothing(attr, why):
    db = _db()
    before = _state(db), dict(db.store.attributes)
    with pytest.raises(SchemaError, match=why):
        db.transact(f"[{attr}]")
    assert (_state(db), dict(db.store.attributes)) == before


def test_element_types_are_schema_datoms_and_a_restatement_changes_nothing():
    db = _db()
    assert db.q('[:find ?a ?v :where [?a :db/tupleTypes ?v]]') == {
        (K(":pt"), (K(":db.type/long"), K(":db.type/string"))),
        (K(":xy"), (K(":db.type/double"), K(":db.type/ref")))}
    assert db.q('[:find ?a ?v :where [?a :db/tupleType ?v]]') == {(K(":tags"), K(":db.type/keyword"))}
    before = dict(db.store.attributes), db.q('[:find ?e ?a ?v :where [?e ?a ?v] [(!= ?a :db/txInstant)]]')
    db.transact(SCHEMA)   # a schema file run twice: a transaction with no datoms but its instant
    assert (dict(db.store.attributes), db.q('[:find ?e ?a ?v :where [?e ?a ?v] [(!= ?a :db/txInstant)]]')) == before
    with pytest.raises(SchemaError, match="schema datoms"):
        db.transact('[[:db/add :pt :db/tupleType :db.type/long]]')


def test_element_types_survive_a_reopen(tmp_path):
    db = Database.open(tmp_path / "db")
    db.transact(SCHEMA)
    db.transact('[{:db/id "a" :pt [1 "x"]}]')
    attrs = {a: db.store.attribute(a) for a in (":pt", ":tags", ":xy")}
    db.close()
    again = Database.open(tmp_path / "db")
    assert {a: again.store.attribute(a) for a in attrs} == attrs
    with pytest.raises(SchemaError, match="is not a :db.type/long"):
        again.transact('[{:db/id "c" :pt ["x" "y"]}]')
    again.close()
