"""A second database as a data source (``:in $ $old``), as in Datomic: a query joins the
database with one of its own past values (``as_of``, ``since``) or its history. Checked
against each database queried alone, joined in Python (the oracle does not join two
databases: it would read the second through the same binder code as the engine)."""

import pytest

from queries.database import Database
from tests.queries.test_history import ALL, random_txs, replay
from wcoj.errors import QueryError

CHANGED = ('[:find ?e ?was ?now :in $ $old :where [?e :p/n ?now] [$old ?e :p/n ?was] '
           '[(not= ?was ?now)]]')
LOST_TAGS = '[:find ?e ?t :in $ $old :where [$old ?e :p/tag ?t] (not [?e :p/tag ?t])]'
OLD_FRIENDS = '[:find ?e ?n :in $ $old :where [$old ?e :p/ref ?f] [?f :p/n ?n]]'


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_past_value_joined_with_the_database_equals_the_join_of_each_alone(seed):
    db, ids = replay(random_txs(seed))
    for t in (ids[0], ids[len(ids) // 3], ids[-2]):
        old = db.as_of(t)
        n_now = dict(db.q('[:find ?e ?n :where [?e :p/n ?n]]'))
        n_old = dict(old.q('[:find ?e ?n :where [?e :p/n ?n]]'))
        assert db.q(CHANGED, old) == {(e, n_old[e], n) for e, n in n_now.items()
                                      if e in n_old and n_old[e] != n}
        tags_now = db.q('[:find ?e ?t :where [?e :p/tag ?t]]')
        assert db.q(LOST_TAGS, old) == old.q('[:find ?e ?t :where [?e :p/tag ?t]]') - tags_now
        refs_old = old.q('[:find ?e ?f :where [?e :p/ref ?f]]')
        assert db.q(OLD_FRIENDS, old) == {(e, n_now[f]) for e, f in refs_old if f in n_now}
        # every pattern over $old reads $old alone: its datoms are the past value's
        assert db.q('[:find ?e ?a ?v :in $ $old :where [$old ?e ?a ?v] '
                    '[(not= ?a :db/txInstant)]]', old) == old.q(ALL)


@pytest.mark.parametrize("seed", [0, 1])
def test_history_and_since_as_second_sources(seed):
    db, ids = replay(random_txs(seed))
    hist = db.history()
    retracted = {(e, v) for e, v, added in hist.q('[:find ?e ?v ?added :where [?e :p/tag ?v _ ?added]]')
                 if not added}
    got = db.q('[:find ?e ?v :in $ $h :where [?e :p/n _] [$h ?e :p/tag ?v _ false]]', hist)
    assert got == {(e, v) for e, v in retracted if db.q('[:find ?e . :in $ ?e :where [?e :p/n]]', e)}
    t = ids[len(ids) // 2]
    since = db.since(t)
    assert db.q('[:find ?e ?a ?v :in $ $new :where [$new ?e ?a ?v] [?e ?a ?v] '
                '[(not= ?a :db/txInstant)]]', since) == since.q(ALL)


def test_lookup_refs_idents_and_get_else_resolve_in_the_source_they_read():
    """A lookup ref in a pattern over $old names the entity $old has by that value; the
    database functions read the database they name."""
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/cardinality :db.cardinality/one'
                ' :db/unique :db.unique/identity}'
                ' {:db/ident :age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}'
                ' {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
    a = db.transact('[{:db/id "a" :name "ann" :age 30}]').tempids["a"]
    b = db.transact([{":db/id": "b", ":name": "bob", ":friend": a}]).tempids["b"]
    then = db.as_of(db.basis_t())
    db.transact([[":db/add", a, ":name", "anna"], [":db/retract", a, ":age", 30],
                 [":db/add", b, ":age", 40]])
    assert db.q('[:find ?v . :in $ $old :where [$old [:name "ann"] :age ?v]]', then) == 30
    assert db.q('[:find ?v . :where [[:name "ann"] :age ?v]]') is None  # renamed since
    assert db.q('[:find ?n ?now ?was :in $ $old :where [?e :name ?n] [(get-else $ ?e :age 0) ?now]'
                ' [(get-else $old ?e :age 0) ?was]]', then) == {("anna", 0, 30), ("bob", 40, 0)}
    assert db.q('[:find ?n :in $ $old :where [?e :name ?n] [(missing? $old ?e :age)]]', then) == {("bob",)}
    assert db.q('[:find ?e :in $ $old :where [$old ?e :friend ?f] [?f :name "anna"]]', then) == {(b,)}


def test_what_cannot_be_joined_is_refused_by_name():
    db, ids = replay(random_txs(0, n_tx=4))
    copy = db.with_([[":db/add", 1, ":p/tag", "new"]]).db_after
    with pytest.raises(QueryError, match=r"data source \$old is a database that does not share"):
        db.q(CHANGED, copy)
    with pytest.raises(QueryError, match="a view reads this database alone"):
        db.view(CHANGED, db.as_of(ids[1]))
    assert db.views == {}
    with pytest.raises(QueryError, match=r"get-else reads a database; \$2 .* is a collection of tuples"):
        db.q('[:find ?v :in $ $2 :where [$2 ?e] [(get-else $2 ?e :p/n 0) ?v]]', [(1,)])
    with pytest.raises(QueryError, match="must be a database or a collection of tuples"):
        db.q('[:find ?x :in $ $2 :where [$2 ?x]]', 5)
    # a collection of tuples is still a source of plain values
    assert db.q('[:find ?x :in $ $2 :where [$2 ?x]]', [(1,), (2,)]) == {(1,), (2,)}


def test_pull_reads_the_database_it_names():
    db = Database()
    db.transact('[{:db/ident :n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]')
    e = db.transact([{":db/id": "x", ":n": 1}]).tempids["x"]
    then = db.as_of(db.basis_t())
    db.transact([[":db/add", e, ":n", 2]])
    got = db.q('[:find (pull $old ?e [:n]) (pull ?e [:n]) :in $ $old :where [?e :n]]', then)
    assert got == [({":n": 1}, {":n": 2})]   # rows with pulls come as a list (maps do not hash)


def test_rule_calls_and_wide_patterns_over_another_source_are_refused():
    db, ids = replay(random_txs(1, n_tx=4))
    old = db.as_of(ids[1])
    rules = '[[(r ?e ?v) [?e :p/n ?v]]]'
    with pytest.raises(QueryError, match=r"rule call \(\$old r \?e \?v\) names \$old: rules read"):
        db.q('[:find ?e :in $ $old % :where ($old r ?e ?v)]', old, rules)
    with pytest.raises(QueryError, match="has 6 terms; a database's patterns have 2 to 5"):
        db.q('[:find ?e :in $ $old :where [$old ?e :p/n _ _ true _]]', old)
    with pytest.raises(QueryError, match=r"\(pull \$2 ...\) reads a database"):
        db.q('[:find (pull $2 ?x [:p/n]) :in $ $2 :where [$2 ?x]]', [(1,)])
    with pytest.raises(QueryError, match=r"\(pull \$2 ...\) reads a database; a view's pulls"):
        db.view('[:find (pull $2 ?x [:p/n]) :in $ $2 :where [$2 ?x]]', [(1,)])
    assert db.views == {}
