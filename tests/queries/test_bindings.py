"""Binding forms over the values a function returns or an input holds, as in Datomic and
DataScript: a map is a collection of its ``[key value]`` entries; a string (or keyword)
is one value, never a collection of characters; a tuple binding takes a sequence. And
the inputs of ``q``: ``$`` is the database ``q`` is called on."""

import pytest

from queries.database import Database
from queries.edn import Keyword
from wcoj.errors import QueryError


@pytest.fixture
def db():
    d = Database()
    d.transact('[{:db/ident :name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]')
    d.transact('[{:name "ann"} {:name "bob"}]')
    return d


def test_a_map_binds_its_entries_to_a_relation_or_collection_binding(db):
    """It bound the keys, and then a keyword's characters: ``(":", "a")``."""
    a, b = Keyword(":a"), Keyword(":b")
    assert db.q('[:find ?k ?v :where [(ground {:a 1 :b 2}) [[?k ?v]]]]') == {(a, 1), (b, 2)}
    assert db.q('[:find ?e :where [(ground {:a 1}) [?e ...]]]') == {((a, 1),)}
    assert db.q('[:find ?k ?v :in [[?k ?v]]]', {"x": 1, "y": 2}) == {("x", 1), ("y", 2)}
    view = db.view('[:find ?k ?v :where [(ground {:a 1 :b 2}) [[?k ?v]]]]')
    assert view.result() == {(a, 1), (b, 2)}


@pytest.mark.parametrize("query, inputs, message", [
    ('[:find ?c :where [(ground "ab") [?c ...]]]', (), r"\[\?c \.\.\.\] takes a collection, got the string 'ab'"),
    ('[:find ?k ?v :where [(ground "ab") [[?k ?v]]]]', (), r"takes a collection, got the string 'ab'"),
    ('[:find ?a ?b :where [(ground "ab") [?a ?b]]]', (), r"\[\?a \?b\] takes a sequence .* got 'ab'"),
    ('[:find ?a ?b :where [(ground :ab) [?a ?b]]]', (), r"takes a sequence"),
    ('[:find ?n :in $ [?n ...] :where [_ :name ?n]]', ("ann",), r"takes a collection, got the string 'ann'"),
    ('[:find ?a ?b :in [?a ?b]]', ({1, 2},), r"takes a sequence .* got \{1, 2\}"),
    ('[:find ?a ?b :in [?a ?b]]', ({"a": 1, "b": 2},), r"takes a sequence"),
])
def test_a_string_set_or_map_where_a_sequence_goes_is_an_error(db, query, inputs, message):
    """A name given where a collection of names goes matched its letters (``"ann"`` bound
    ``?n`` to ``"a"`` and ``"n"``) and silently found nothing; DataScript refuses it."""
    with pytest.raises(QueryError, match=message):
        db.q(query, *inputs)


def test_sequences_still_bind(db):
    assert db.q('[:find ?n :in $ [?n ...] :where [_ :name ?n]]', ["ann", "cy"]) == {("ann",)}
    assert db.q('[:find ?a ?b :in [?a ?b]]', (1, 2)) == {(1, 2)}
    assert db.q('[:find ?a ?b :where [(ground [1 2]) [?a ?b]]]') == {(1, 2)}
    assert db.q('[:find ?a ?b :where [(ground [[1 2] [3 4]]) [[?a ?b]]]]') == {(1, 2), (3, 4)}
    assert db.q('[:find ?x :where [(ground #{1 2}) [?x ...]]]') == {(1,), (2,)}


def test_a_value_given_for_the_database_is_this_database_or_an_error(db):
    """``db.q(query, db.as_of(t))``, as a Datomic user writes ``(d/q query (d/as-of db t))``,
    ignored the database given and answered from ``db`` as it is now; any other value for
    ``$`` was ignored as well."""
    t = db.basis_t()
    db.transact('[{:name "cy"}]')
    old = db.as_of(t)
    query = '[:find ?n :where [_ :name ?n]]'
    assert old.q(query) == {("ann",), ("bob",)}
    with pytest.raises(QueryError, match=r"\$ is the database q is called on, and another database was given"):
        db.q(query, old)
    with pytest.raises(QueryError, match=r"\$ is the database q is called on"):
        db.q('[:find ?n :in $ :where [_ :name ?n]]', old)
    with pytest.raises(QueryError, match=r"got 1 for it: a collection of tuples is a data source"):
        db.q(query, 1)
    assert db.q(query, db) == db.q(query) == {("ann",), ("bob",), ("cy",)}
    assert db.q('[:find ?n :in $ ?n :where [_ :name ?n]]', db, "cy") == {("cy",)}
    assert db.q('[:find ?n :in $ $2 :where [$2 _ :name ?n]]', old) == {("ann",), ("bob",)}
