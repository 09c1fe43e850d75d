"""A transaction whose aggregate raises (``median`` or ``sum`` of a string)
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
    db.transact('[{:db/id "a" :g 1 :n 3} {:db/id "b" :g 2 :n 5}]')
    q = '[:find ?g (median ?x) :where [?e :g ?g] (or [?e :n ?x] [?e :s ?x])]'
    view = db.view(q)
    assert view.mode == "circuit"
    before = view.result()
    assert before == db.q(q) == {(1, 3), (2, 5)}
    with pytest.raises(QueryError, match="median needs numbers"):  # one string among numbers
        db.transact('[{:db/id "c" :g 1 :s "y"}]')
    assert view.result() == before == db.q(q)
    # had the view kept "y", this would raise again
    db.transact('[{:db/id "d" :g 1 :n 9} {:db/id "e" :g 1 :n 4}]')
    assert view.result() == db.q(q) == {(1, 4), (2, 5)}


def test_median_of_an_odd_count_with_a_string_raises_like_sum():
    """Sorting by value orders strings after numbers, so an odd count once had a middle
    value (``(median ?x)`` of 3, 5 and "boom" gave 5) where ``sum`` raised."""
    db = _db()
    db.transact('[{:db/id "a" :g 1 :n 3} {:db/id "b" :g 1 :n 5} {:db/id "c" :g 1 :s "boom"}]')
    with pytest.raises(QueryError, match="median needs numbers: 'boom' is a str"):
        db.q('[:find (median ?x) . :where [?e :g 1] (or [?e :n ?x] [?e :s ?x])]')
    assert db.q('[:find (median ?x) . :where [?e :n ?x]]') == 4.0


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
