"""A transaction whose aggregate raises (``median`` of two strings, ``sum`` of a string)
leaves an aggregate view exactly as it was: the view still equals ``q``, and later valid
transactions succeed and keep it equal (issue 21, bad input 1)."""

import pytest

from queries.database import Database
from wcoj.errors import QueryError

SCHEMA = '''[{:db/ident :g :db/valueType :db.type/long}
             {:db/ident :s :db/valueType :db.type/string :db/cardinality :db.cardinality/many}
             {:db/ident :n :db/valueType :db.type/long :db/cardinality :db.cardinality/many}]'''


def _db():
    db = Database()
    db.transact(SCHEMA)
    return db


def test_failed_median_leaves_view_equal_to_q():
    db = _db()
    db.transact('[{:db/id "a" :g 1 :s "x"} {:db/id "b" :g 2 :s "k"}]')
    q = '[:find ?g (median ?v) :where [?e :g ?g] [?e :s ?v]]'
    view = db.view(q)
    assert view.mode == "circuit"
    before = view.result()
    assert before == db.q(q) == {(1, "x"), (2, "k")}
    with pytest.raises(QueryError, match="median"):  # the mean of "x" and "y"
        db.transact('[{:db/id "c" :g 1 :s "y"}]')
    assert view.result() == before == db.q(q)
    # three strings have a median; had the view kept "y", this would be four and raise
    db.transact('[{:db/id "d" :g 1 :s "w"} {:db/id "e" :g 1 :s "v"}]')
    assert view.result() == db.q(q) == {(1, "w"), (2, "k")}


def test_failed_sum_leaves_view_equal_to_q():
    db = _db()
    db.transact('[{:db/id "a" :g 1 :n 3} {:db/id "b" :g 1 :n 5}]')
    q = '[:find ?g (sum ?x) :where [?e :g ?g] (or [?e :n ?x] [?e :s ?x])]'
    view = db.view(q)
    assert view.mode == "circuit"
    assert view.result() == db.q(q) == {(1, 8)}
    with pytest.raises(QueryError, match="sum"):
        db.transact('[{:db/id "c" :g 1 :s "heavy"}]')
    assert view.result() == db.q(q) == {(1, 8)}
    db.transact('[{:db/id "d" :g 1 :n 4}]')  # raised until the view was dropped
    assert view.result() == db.q(q) == {(1, 12)}
    db.transact('[{:db/id "e" :g 2 :n 1}]')
    assert view.result() == db.q(q) == {(1, 12), (2, 1)}
