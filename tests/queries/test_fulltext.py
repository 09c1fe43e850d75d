"""``fulltext`` over ``:db/fulltext`` attributes, against a plain-Python word match: a value
matches a search of words when it contains every word (case-insensitive, split at
non-alphanumerics, as FTS5's default tokenizer does)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queries.database import Database
from wcoj.errors import QueryError, SchemaError

SCHEMA = '[{:db/ident :title :db/valueType :db.type/string :db/fulltext true}' \
         ' {:db/ident :plain :db/valueType :db.type/string}]'
WORDS = ["alien", "heat", "the", "return", "blue", "Moon"]


def words(text):
    return set(re.findall(r"[0-9a-z]+", text.lower()))


def load(titles):
    d = Database()
    d.transact(SCHEMA)
    ids = d.transact([{":db/id": f"m{i}", ":title": t} for i, t in enumerate(titles)]).tempids
    return d, {ids[f"m{i}"]: t for i, t in enumerate(titles)}


@settings(deadline=None, max_examples=60)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
                min_size=1, max_size=8),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))
def test_a_search_of_words_finds_the_values_holding_every_word(titles, search):
    d, by_id = load(titles)
    got = d.q('[:find ?e ?t :in $ ?s :where [(fulltext $ :title ?s) [[?e ?t]]]]', " ".join(search))
    assert got == {(e, t) for e, t in by_id.items() if words(" ".join(search)) <= words(t)}


def test_prefix_phrase_or_and_the_tx_and_score():
    d, by_id = load(["The Alien", "Aliens", "Heat", "Blue Moon Return"])
    q = '[:find ?t :in $ ?s :where [(fulltext $ :title ?s) [[_ ?t]]]]'
    assert d.q(q, "alien*") == {("The Alien",), ("Aliens",)}
    assert d.q(q, '"moon return"') == {("Blue Moon Return",)}
    assert d.q(q, "heat OR aliens") == {("Heat",), ("Aliens",)}
    r = d.transact('[{:title "Heat wave"}]')
    got = d.q('[:find ?t ?tx ?score :where [(fulltext $ :title "wave") [[_ ?t ?tx ?score]]]]')
    assert [(t, tx) for t, tx, _ in got] == [("Heat wave", r.tx)] and next(iter(got))[2] > 0


def test_a_view_follows_values_that_change():
    d, _ = load(["The Alien"])
    v = d.view('[:find ?t :where [(fulltext $ :title "alien") [[_ ?t]]]]')
    d.transact('[{:title "Alien Resurrection"} {:plain "alien"}]')
    assert v.result() == {("The Alien",), ("Alien Resurrection",)}
    e = d.q('[:find ?e . :where [?e :title "The Alien"]]')
    d.transact([[":db/add", e, ":title", "Heat"]])
    assert v.result() == {("Alien Resurrection",)} == d.q(v.query)


@pytest.mark.parametrize("query, error, match", [
    ('[:find ?t :where [(fulltext $ :plain "alien") [[_ ?t]]]]', QueryError, "needs an attribute with"),
    ('[:find ?t :where [(fulltext $ :title "AND") [[_ ?t]]]]', QueryError, "bad fulltext search"),
    ('[:find ?t :where [(fulltext $ :title) [[_ ?t]]]]', QueryError, "takes \\$, an attribute"),
])
def test_misuse_is_a_typed_error(query, error, match):
    d, _ = load(["The Alien"])
    with pytest.raises(error, match=match):
        d.q(query)


def test_fulltext_needs_a_string_attribute_and_survives_reopening(tmp_path):
    with pytest.raises(SchemaError, match="needs :db/valueType :db.type/string"):
        Database().transact('[{:db/ident :n :db/valueType :db.type/long :db/fulltext true}]')
    with Database.open(tmp_path / "db") as d:
        d.transact(SCHEMA)
        d.transact('[{:title "Blue Moon"}]')
    with Database.open(tmp_path / "db") as d:
        assert d.q('[:find ?t :where [(fulltext $ :title "moon") [[_ ?t]]]]') == {("Blue Moon",)}
