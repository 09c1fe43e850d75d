"""Composite tuples (``:db/tupleAttrs``) as Datomic keeps them: derived from their
attributes by every transaction, never asserted directly, unique when declared so. Random
transactions are checked against the tuples recomputed from the attributes' datoms."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queries.database import Database
from tests.queries.datalog_evaluator import oracle_q
from wcoj.errors import SchemaError, UnknownAttributeError

SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :course :db/valueType :db.type/string}
             {:db/ident :student :db/valueType :db.type/ref}
             {:db/ident :course+student :db/valueType :db.type/tuple
              :db/tupleAttrs [:course :student] :db/unique :db.unique/value}]'''
TUPLES = '[:find ?r ?t :where [?r :course+student ?t]]'


@pytest.fixture
def db():
    d = Database()
    d.transact(SCHEMA)
    d.transact('[{:db/id "ann" :name "ann"} {:db/id "bob" :name "bob"}]')
    return d


def eid(d, name):
    return d.q('[:find ?e . :in $ ?n :where [?e :name ?n]]', name)


def test_the_tuple_follows_its_attributes(db):
    ann, bob = eid(db, "ann"), eid(db, "bob")
    r = db.transact([{":db/id": "r", ":course": "math", ":student": ann}]).tempids["r"]
    s = db.transact([{":db/id": "s", ":course": "art"}]).tempids["s"]   # a missing part is nil
    assert db.q(TUPLES) == {(r, ("math", ann)), (s, ("art", None))} == oracle_q(db, TUPLES)
    report = db.transact([[":db/add", s, ":student", bob], [":db/retract", r, ":course", "math"]])
    assert db.q(TUPLES) == {(r, (None, ann)), (s, ("art", bob))}
    assert (s, ":course+student", ("art", None), False) in report.tx_data
    db.transact([[":db/retract", r, ":student", ann]])    # no part left: no tuple
    db.transact([[":db/retractEntity", s]])
    assert db.q(TUPLES) == set()


def test_a_composite_installed_after_data_is_kept_from_then_on():
    """A composite installed once transactions have run (the store keeps the list of
    composites between transactions: installing one must renew it), and one whose
    install failed is forgotten."""
    d = Database()
    d.transact('[{:db/ident :course :db/valueType :db.type/string}'
               ' {:db/ident :room :db/valueType :db.type/long}]')
    r = d.transact([{":db/id": "r", ":course": "math"}]).tempids["r"]
    with pytest.raises(SchemaError):
        d.transact('[{:db/ident :course+room :db/valueType :db.type/tuple'
                   ' :db/tupleAttrs [:course :room]} [:db/add "x" :course+room ["a" 1]]]')
    assert not d.store.has_attribute(":course+room")
    d.transact([[":db/add", r, ":room", 7]])
    d.transact('[{:db/ident :course+room :db/valueType :db.type/tuple :db/tupleAttrs [:course :room]}]')
    d.transact([[":db/add", r, ":room", 8]])
    assert d.q('[:find ?e ?t :where [?e :course+room ?t]]') == {(r, ("math", 8))}


def test_a_unique_composite_is_a_lookup_ref_and_refuses_a_second_owner(db):
    ann = eid(db, "ann")
    r = db.transact([{":db/id": "r", ":course": "math", ":student": ann}]).tempids["r"]
    assert db.pull("[:db/id]", [":course+student", ["math", ann]]) == {":db/id": r}
    assert db.q('[:find ?c :where [?r :course+student ?t] [(untuple ?t) [?c _]]]') == {("math",)}
    n = len(db.q(TUPLES))
    with pytest.raises(SchemaError, match="already belongs to entity"):
        db.transact([{":course": "math", ":student": ann}])
    assert len(db.q(TUPLES)) == n


@pytest.mark.parametrize("tx, error, match", [
    ('[[:db/add "x" :course+student ["a" 1]]]', SchemaError, "assert the attributes"),
    ('[{:db/ident :c+n :db/valueType :db.type/string :db/tupleAttrs [:course :name]}]',
     SchemaError, "needs :db/valueType :db.type/tuple"),
    ('[{:db/ident :c+n :db/valueType :db.type/tuple :db/tupleAttrs [:course]}]',
     SchemaError, "2 to 8"),
    ('[{:db/ident :c+x :db/valueType :db.type/tuple :db/tupleAttrs [:course :nope]}]',
     UnknownAttributeError, ":nope"),
    ('[{:db/ident :tags :db/valueType :db.type/string :db/cardinality :db.cardinality/many}'
     ' {:db/ident :c+t :db/valueType :db.type/tuple :db/tupleAttrs [:course :tags]}]',
     SchemaError, "cardinality many"),
])
def test_bad_composites_are_refused_and_change_nothing(db, tx, error, match):
    attrs = set(db.store.attributes)
    with pytest.raises(error, match=match):
        db.transact(tx)
    assert set(db.store.attributes) == attrs


def test_a_composite_survives_reopening_a_durable_database(tmp_path):
    with Database.open(tmp_path / "db") as d:
        d.transact(SCHEMA)
        d.transact('[{:course "math" :student {:name "ann"}}]')
    with Database.open(tmp_path / "db") as d:
        ann = eid(d, "ann")
        d.transact([{":course": "art", ":student": ann}])
        assert {t for _, t in d.q(TUPLES)} == {("math", ann), ("art", ann)}


ops = st.lists(st.tuples(st.sampled_from(["add-c", "add-s", "ret-c", "ret-s", "entity"]),
                         st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=6)


@settings(deadline=None, max_examples=40)
@given(st.lists(ops, min_size=1, max_size=6))
def test_random_transactions_keep_every_tuple_equal_to_its_parts(txs):
    d = Database()
    d.transact(SCHEMA.replace(" :db/unique :db.unique/value}", "}"))   # repeats allowed here
    people = list(d.transact([{":db/id": f"p{i}", ":name": f"p{i}"} for i in range(3)]).tempids.values())
    rows = list(d.transact([{":db/id": f"r{i}", ":name": f"r{i}"} for i in range(4)]).tempids.values())
    view = d.view(TUPLES)
    for tx in txs:
        forms = []
        for op, r, x in tx:
            e = rows[r]
            if op == "add-c":
                forms.append([":db/add", e, ":course", f"c{x}"])
            elif op == "add-s":
                forms.append([":db/add", e, ":student", people[x]])
            elif op == "ret-c":
                forms.append([":db/retract", e, ":course", f"c{x}"])
            elif op == "ret-s":
                forms.append([":db/retract", e, ":student", people[x]])
            else:
                forms.append([":db/retractEntity", e])
        try:
            d.transact(forms)
        except SchemaError:   # two values for one cardinality-one attribute: nothing changed
            pass
        parts = {}
        for attr, i in ((":course", 0), (":student", 1)):
            for e, v in d.q(f'[:find ?e ?v :where [?e {attr} ?v]]'):
                parts.setdefault(e, [None, None])[i] = v
        expect = {(e, tuple(p)) for e, p in parts.items() if e in rows}
        assert d.q(TUPLES) == expect == view.result()
