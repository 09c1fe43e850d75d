"""Nested ``q`` (``[(q query arg ...) binding]``), as Datomic runs it: each answer against
data small enough to state by hand or against the plain-Python evaluator of the tests
(``datalog_evaluator``, which answers a nested ``q`` by evaluating itself). Random streams
of transactions over views holding a nested ``q`` are in ``test_database_incremental``."""

import pytest

from queries.database import Database
from tests.queries.datalog_evaluator import oracle_q
from wcoj.errors import EdnSyntaxError, QueryError

SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :follows :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :age :db/valueType :db.type/long}]'''
PEOPLE = '''[{:db/id "a" :name "ann" :age 30 :follows ["b" "c"]}
             {:db/id "b" :name "bob" :age 40 :follows ["c"]}
             {:db/id "c" :name "cy" :age 50}]'''
FOLLOWERS = ('[:find ?name ?n :where [?p :name ?name] '
             '[(q [:find (count ?f) . :in $ ?p :where [?p :follows ?f]] $ ?p) ?n]]')
REACH = '[[(r ?a ?b) [?a :follows ?b]] [(r ?a ?b) [?a :follows ?c] (r ?c ?b)]]'


@pytest.fixture
def db():
    d = Database()
    d.transact(SCHEMA)
    d.transact(PEOPLE)
    return d


def test_a_nested_q_runs_per_row_and_binds_its_answer(db):
    # cy follows nobody: the scalar find answers nil, which binds nothing (as in Datomic)
    assert db.q(FOLLOWERS) == {("ann", 2), ("bob", 1)} == oracle_q(db, FOLLOWERS)


@pytest.mark.parametrize("query", [
    "[:find ?n :where [(q '[:find (max ?a) . :where [_ :age ?a]] $) ?m] [?p :age ?m] [?p :name ?n]]",
    "[:find ?n :where [(q [:find (max ?a) . :where [_ :age ?a]] $) ?m] [?p :age ?m] [?p :name ?n]]",
    '[:find ?n :where [(q "[:find (max ?a) . :where [_ :age ?a]]" $) ?m] [?p :age ?m] [?p :name ?n]]',
])
def test_the_query_is_a_quoted_form_a_form_or_text(db, query):
    assert db.q(query) == {("cy",)} == oracle_q(db, query)


def test_the_query_may_come_from_an_input(db):
    query = '[:find ?n :in $ ?q :where [(q ?q $) [[?n]]]]'
    assert db.q(query, '[:find ?n :where [_ :name ?n]]') == {("ann",), ("bob",), ("cy",)}


def test_rules_and_collection_sources_pass_on(db):
    query = '[:find ?x ?y :in $ % :where [(q [:find ?a ?b :in $ % :where (r ?a ?b)] $ %) [[?x ?y]]]]'
    a, b, c = (db.q('[:find ?p . :in $ ?n :where [?p :name ?n]]', n) for n in ("ann", "bob", "cy"))
    assert db.q(query, REACH) == {(a, b), (a, c), (b, c)} == oracle_q(db, query, REACH)
    pairs = [["ann", 1], ["cy", 2]]
    query = ('[:find ?n ?k :in $ $2 :where [?p :name ?n] '
             '[(q [:find ?k . :in $2 ?n :where [$2 ?n ?k]] $2 ?n) ?k]]')
    assert db.q(query, pairs) == {("ann", 1), ("cy", 2)} == oracle_q(db, query, pairs)


def test_a_view_holding_a_nested_q_follows_what_only_the_nested_query_reads(db):
    v = db.view(FOLLOWERS)
    before = v.result()
    report = db.transact('[[:db/add [:name "cy"] :follows [:name "ann"]]]')  # :name untouched
    assert v.result() == {("ann", 2), ("bob", 1), ("cy", 1)} == db.q(FOLLOWERS)
    assert set(report.views[v.name].added) == v.result() - before
    assert "nested q" in db.explain(FOLLOWERS)


def test_a_failed_transaction_leaves_a_nested_view_as_it_was(db):
    v = db.view(FOLLOWERS)
    before = v.result()
    with pytest.raises(Exception):
        db.transact('[[:db/add [:name "cy"] :follows [:name "ann"]] [:db/add "x" :age "old"]]')
    assert v.result() == before == db.q(FOLLOWERS)


def test_q_gives_back_what_a_nested_q_interned(db):
    n = len(db.store.interner)
    query = '[:find ?n :where [(q [:find ?x :where [?x :name "nobody-has-this"]] $) [[?n]]]]'
    assert db.q(query) == set()
    assert len(db.store.interner) == n


@pytest.mark.parametrize("query, error, match", [
    ("[:find ?n :where [(q) ?n]]", QueryError, "q needs a query"),
    ("[:find ?n :where [(q 5 $) ?n]]", QueryError, "a query is a vector"),
    ("[:find ?n :where [(q [:find ?x :where [?x]] $) ?n]]", QueryError, "data pattern"),
    ("[:find ?n :where [(q [:find ?x :in $ ?y :where [?x :name ?y]] $) ?n]]", QueryError,
     "declares 2 inputs"),
    ("[:find ?n :where [(q [:find ?x :in $2 :where [$2 ?x]] $2) ?n]]", QueryError,
     "was not given"),
    ("[:find ?n :where [(q '[:find ?x :where [?x :name _]) $) ?n]]", EdnSyntaxError, "mismatched"),
])
def test_bad_nested_queries_are_typed_errors(db, query, error, match):
    with pytest.raises(error, match=match):
        db.q(query)


def test_a_query_that_runs_itself_stops_with_a_typed_error(db):
    query = '[:find ?r :in $ ?q :where [(q ?q $ ?q) ?r]]'
    with pytest.raises(QueryError, match="nested more than 16 deep"):
        db.q(query, query)
    assert db.q(FOLLOWERS) == {("ann", 2), ("bob", 1)}   # and the database answers as before
