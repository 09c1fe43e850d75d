"""Views, explain, :with, mutual recursion and pull on the movie data and small databases."""

import pytest

from queries.database import Database
from queries.edn import Keyword, Symbol
from tests.queries.datalog_oracle import MOVIES, Movies

movies_only = pytest.mark.skipif(not MOVIES.exists(), reason="../shared/data/movies is absent")


@pytest.fixture
def db():
    d = Database()
    d.transact((MOVIES / "schema.edn").read_text())
    d.ids = d.transact((MOVIES / "data.edn").read_text()).tempids
    return d


@movies_only
def test_views_follow_transactions_on_movies(db):
    cast = db.view('[:find ?n ?t :where [?m :movie/title ?t] [?m :movie/cast ?p] '
                   '[?p :person/name ?n]]')
    per_year = db.view('[:find ?y (count ?m) :where [?m :movie/year ?y]]')
    pulled = db.view('[:find (pull ?m [:movie/title :movie/year]) . '
                     ':where [?m :movie/title "Alien"]]')
    r = db.transact([{":db/id": "x", ":movie/title": "Alien", ":movie/year": 1979,
                      ":movie/cast": [db.ids[-100]]}])
    assert r.views[cast.name].added == [("James Cameron", "Alien")]
    assert (1979, 3) in per_year.result()
    db.transact([[":db/retract", r.tempids["x"], ":movie/cast", db.ids[-100]]])
    assert cast.last_change.removed == [("James Cameron", "Alien")]
    for v in (cast, per_year, pulled):
        assert v.result() == db.q(v.query)


@movies_only
def test_with_keeps_duplicates_for_aggregates(db):
    m = Movies()
    years = [y for _, y in m.pairs(":movie/year")]
    assert db.q('[:find (sum ?y) . :with ?m :where [?m :movie/year ?y]]') == sum(years)
    assert db.q('[:find (sum ?y) . :where [?m :movie/year ?y]]') == sum(set(years))


@movies_only
def test_explain_names_order_sizes_and_operators(db):
    text = db.explain('[:find ?n :in $ % :where [?p :person/name ?n] [?m :movie/cast ?p] '
                      '(not [?m :movie/year 1987]) (r ?p)]', '[[(r ?p) [_ :movie/director ?p]]]')
    assert "variable order:" in text and "~59 rows" in text and "~50 rows" in text
    assert "difference" in text and "union of its bodies" in text
    assert "one DBSP circuit" in text


def test_mutually_recursive_rules():
    d = Database()
    d.transact('[{:db/ident :next :db/valueType :db.type/ref} '
               '{:db/ident :n :db/valueType :db.type/long :db/unique :db.unique/identity}]')
    d.transact([{":db/id": f"n{i}", ":n": i, ":next": f"n{i + 1}"} for i in range(6)]
               + [{":db/id": "n6", ":n": 6}])
    rules = '''[[(even ?x) [?x :n 0]]
                [(even ?x) (odd ?y) [?y :next ?x]]
                [(odd ?x) (even ?y) [?y :next ?x]]]'''
    assert d.q('[:find [?v ...] :in $ % :where (even ?x) [?x :n ?v]]', rules) == [0, 2, 4, 6]
    assert d.q('[:find [?v ...] :in $ % :where (odd ?x) [?x :n ?v]]', rules) == [1, 3, 5]


def test_syms_and_tuple_keys():
    d = Database()
    d.transact('[{:db/ident :a :db/valueType :db.type/long}]')
    d.transact([{":a": 1}])
    rows = d.q('[:find ?x :syms x :where [_ :a ?x]]')
    assert rows == [{"x": 1}] and type(next(iter(rows[0]))) is Symbol  # Datomic: {x 1}
    one = d.q('[:find [?x] :keys x :where [_ :a ?x]]')
    assert one == {":x": 1} and type(next(iter(one))) is Keyword       # Datomic: {:x 1}


def test_q_caches_circuits_per_query_text_and_inputs():
    d = Database()
    d.transact('[{:db/ident :v :db/valueType :db.type/long :db/cardinality :db.cardinality/many}'
               ' {:db/ident :b :db/valueType :db.type/boolean}]')
    r = d.transact([[":db/add", "a", ":v", 1], [":db/add", "b", ":v", 2],
                    [":db/add", "c", ":b", True]])
    a, b, c = (r.tempids[x] for x in "abc")
    q = '[:find ?e :in $ ?x :where [?e :v ?x]]'
    assert d.q(q, 1) == {(a,)} and d.q(q, 2) == {(b,)}
    assert d.q('[:find ?e :in $ ?x :where [?e :b ?x]]', True) == {(c,)}
    assert d.q('[:find ?e :in $ ?x :where [?e :b ?x]]', 1) == set()  # 1 is not true
    e = d.transact([[":db/add", "e", ":v", 1]]).tempids["e"]  # a cached circuit sees it
    assert d.q(q, 1) == {(a,), (e,)}
    assert len(d._circuits) == 4  # (q, 1), (q, 2), (b, True), (b, 1)
