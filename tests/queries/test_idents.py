"""Entities named by ``:db/ident`` (Datomic's enumerations): transacted, referred to by
their keyword in transactions, queries, inputs and pull, as Datomic's schema-modeling guide
uses them. Each answer is stated by hand and, for queries, checked against the plain-Python
evaluator of the tests (``datalog_evaluator``)."""

import pytest

from queries.database import Database
from queries.edn import Keyword
from tests.queries.datalog_evaluator import oracle_q
from wcoj.errors import SchemaError

SCHEMA = '''[{:db/ident :title :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :genre :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :label :db/valueType :db.type/string}]'''
GENRES = '[{:db/ident :genre/drama :label "Drama"} {:db/ident :genre/comedy} {:db/ident :genre/noir}]'
MOVIES = '''[{:title "Alien" :genre :genre/noir}
             {:title "Heat" :genre [:genre/drama :genre/noir]}
             [:db/add "m" :title "Up"] [:db/add "m" :genre :genre/comedy]]'''
K = Keyword


def load(db):
    db.transact(SCHEMA)
    db.transact(GENRES)
    db.transact(MOVIES)
    return db


@pytest.fixture
def db():
    return load(Database())


@pytest.mark.parametrize("query, inputs, expect", [
    ('[:find ?t ?g :where [?m :title ?t] [?m :genre ?e] [?e :db/ident ?g]]', (),
     {("Alien", K(":genre/noir")), ("Heat", K(":genre/drama")), ("Heat", K(":genre/noir")),
      ("Up", K(":genre/comedy"))}),
    ('[:find ?t :where [?m :genre :genre/noir] [?m :title ?t]]', (), {("Alien",), ("Heat",)}),
    ('[:find ?l :where [:genre/drama :label ?l]]', (), {("Drama",)}),
    ('[:find ?t :in $ ?g :where [?m :genre ?g] [?m :title ?t]]', (":genre/comedy",), {("Up",)}),
    ('[:find ?t :in $ [?g ...] :where [?m :genre ?g] [?m :title ?t]]',
     ([":genre/comedy", ":genre/drama"],), {("Up",), ("Heat",)}),
    # as in Datomic, attributes are entities named by :db/ident too (queries.schema), and
    # the partition that lists them
    ('[:find ?k :where [_ :db/ident ?k]]', (),
     {(K(":genre/drama"),), (K(":genre/comedy"),), (K(":genre/noir"),), (K(":title"),), (K(":genre"),),
      (K(":label"),), (K(":db.part/db"),)}),
])
def test_an_ident_names_its_entity_in_queries(db, query, inputs, expect):
    assert db.q(query, *inputs) == expect == oracle_q(db, query, *inputs)


def test_a_two_keyword_vector_on_a_many_ref_is_two_idents_not_a_lookup_ref(db):
    heat = db.q('[:find ?m . :where [?m :title "Heat"]]')
    assert len(db.q('[:find ?g :in $ ?m :where [?m :genre ?g]]', heat)) == 2


def test_pull_by_ident_and_through_a_reference(db):
    drama = db.pull("[*]", ":genre/drama")
    assert drama[K(":db/ident")] == K(":genre/drama") and drama[K(":label")] == "Drama"
    assert db.pull('[:title {:genre [:db/ident]}]', [":title", "Up"]) == \
        {K(":title"): "Up", K(":genre"): [{K(":db/ident"): K(":genre/comedy")}]}
    # as Datomic's pull: a reference without a sub-pattern is the entity id
    assert db.pull("[:genre]", [":title", "Up"]) == {K(":genre"): [{K(":db/id"): drama[K(":db/id")] + 1}]}


def test_transacting_an_ident_again_upserts_the_same_entity(db):
    before = db.pull("[:db/id]", ":genre/drama")
    report = db.transact('[{:db/ident :genre/drama :label "Drama!"}]')
    assert db.pull("[:db/id :label]", ":genre/drama") == {**before, K(":label"): "Drama!"}
    assert len(db.q('[:find ?e :where [?e :db/ident :genre/drama]]')) == 1
    assert not report.tempids


def test_an_ident_no_entity_has_is_an_error_and_changes_nothing(db):
    n = db.q('[:find (count ?m) . :where [?m :title]]')
    with pytest.raises(SchemaError, match=":genre/horror names no entity"):
        db.transact('[{:title "It" :genre :genre/horror}]')
    assert db.q('[:find (count ?m) . :where [?m :title]]') == n
    assert db.q('[:find ?m :where [?m :genre :genre/horror]]') == set()  # a query just finds none


def test_schema_keys_without_a_value_type_are_an_error():
    d = load(Database())
    with pytest.raises(SchemaError, match="no :db/valueType"):
        d.transact('[{:db/ident :rating :db/cardinality :db.cardinality/one}]')
    assert d.q('[:find ?e :where [?e :db/ident :rating]]') == set()


def test_retract_entity_by_ident_and_views_follow_idents(db):
    v = db.view('[:find ?t :where [?m :genre :genre/noir] [?m :title ?t]]')
    w = db.view('[:find ?k :where [_ :db/ident ?k]]')
    db.transact('[{:title "Se7en" :genre :genre/noir}]')
    assert v.result() == {("Alien",), ("Heat",), ("Se7en",)}
    db.transact('[[:db/retractEntity :genre/noir]]')
    assert v.result() == set() == db.q('[:find ?t :where [?m :genre ?g] [?g :db/ident :genre/noir] '
                                       '[?m :title ?t]]')
    assert w.result() == {(K(":genre/drama"),), (K(":genre/comedy"),), (K(":title"),), (K(":genre"),),
                          (K(":label"),), (K(":db.part/db"),)}


def test_idents_survive_reopening_a_durable_database(tmp_path):
    with Database.open(tmp_path / "db") as d:
        load(d)
    with Database.open(tmp_path / "db") as d:
        assert d.q('[:find ?t :where [?m :genre :genre/comedy] [?m :title ?t]]') == {("Up",)}
        d.transact('[{:title "Big" :genre :genre/comedy}]')
        assert len(d.q('[:find ?t :where [?m :genre :genre/comedy] [?m :title ?t]]')) == 2


def test_a_view_finds_an_ident_transacted_after_it_was_registered(db):
    v = db.view('[:find ?t :where [?m :genre :genre/western] [?m :title ?t]]')
    assert v.result() == set()
    db.transact('[{:db/ident :genre/western}]')  # (as in Datomic: named in a later transaction)
    db.transact('[{:title "Rio Bravo" :genre :genre/western}]')
    assert v.result() == {("Rio Bravo",)} == db.q(v.query)

