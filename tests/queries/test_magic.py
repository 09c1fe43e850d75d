"""Demand (magic-set) rewriting: the same answers with and without it, after every
transaction of random add/retract streams (so retractions must undo demand exactly too),
and the rules it writes for the usual shapes."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from queries import magic
from queries.database import Database
from queries.parse import parse_query, parse_rules
from tests.queries.datalog_oracle import reachable

N = 5
nodes = st.integers(0, N - 1)
graphs = st.frozensets(st.tuples(nodes, nodes), max_size=12)
snapshots = st.lists(graphs, min_size=1, max_size=6)

SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :edge :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :mark :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]'''
RIGHT = '[[(reach ?a ?b) [?a :edge ?b]] [(reach ?a ?b) [?a :edge ?x] (reach ?x ?b)]]'
LEFT = '[[(reach ?a ?b) [?a :edge ?b]] [(reach ?a ?b) (reach ?a ?x) [?x :edge ?b]]]'
NONLINEAR = '[[(reach ?a ?b) [?a :edge ?b]] [(reach ?a ?b) (reach ?a ?x) (reach ?x ?b)]]'
MUTUAL = '''[[(odd ?a ?b) [?a :edge ?b]] [(odd ?a ?b) (even ?a ?x) [?x :edge ?b]]
             [(even ?a ?b) (odd ?a ?x) [?x :edge ?b]]]'''
# a rule calling another with a bound argument, and a negation inside a rule body
TWO = '''[[(reach ?a ?b) [?a :edge ?b]] [(reach ?a ?b) [?a :edge ?x] (reach ?x ?b)]
          [(marked ?a ?m) (reach ?a ?b) [?b :mark ?m]]
          [(dead ?a ?b) (reach ?a ?b) (not [?b :edge _])]]'''
# right-linear with an exit unlike the step (factored with an exit join), and a
# two-hop closure whose step and exit name their middle variable differently
MARKED_BY = '[[(mreach ?a ?b) [?a :mark ?b]] [(mreach ?a ?b) [?a :edge ?x] (mreach ?x ?b)]]'
HOP2 = '[[(hop2 ?a ?b) [?a :edge ?t] [?t :edge ?b]] [(hop2 ?a ?b) [?a :edge ?y] [?y :edge ?x] (hop2 ?x ?b)]]'
FROM0 = '[:find ?b :in $ % :where [?a :name "n0"] ({r} ?a ?b)]'

QUERIES = {
    "right-from": (FROM0.format(r="reach"), (RIGHT,)),
    "left-from": (FROM0.format(r="reach"), (LEFT,)),
    "nonlinear-from": (FROM0.format(r="reach"), (NONLINEAR,)),
    "odd-from": (FROM0.format(r="odd"), (MUTUAL,)),
    "right-to": ('[:find ?a :in $ % :where [?b :name "n1"] (reach ?a ?b)]', (RIGHT,)),
    "right-input": ('[:find ?b :in $ % ?n :where [?a :name ?n] (reach ?a ?b)]', (RIGHT, "n2")),
    "right-count": ('[:find (count ?b) . :in $ % :where [?a :name "n0"] (reach ?a ?b)]',
                    (RIGHT,)),
    "right-both": ('[:find ?a ?b :in $ % :where [?a :name "n0"] [?b :name "n3"] '
                   '(reach ?a ?b)]', (RIGHT,)),
    "marked": ('[:find ?m :in $ % :where [?a :name "n0"] (marked ?a ?m)]', (TWO,)),
    "dead": ('[:find ?b :in $ % :where [?a :name "n0"] (dead ?a ?b)]', (TWO,)),
    "via-edge": ('[:find ?b :in $ % :where [?a :name "n0"] [?a :edge ?x] (reach ?x ?b)]',
                 (RIGHT,)),
    "marked-by-from": (FROM0.format(r="mreach"), (MARKED_BY,)),
    "hop2-from": (FROM0.format(r="hop2"), (HOP2,)),
    # bound through :in values and call arguments, not only through patterns
    "right-inputs": ('[:find ?n ?b :in $ % [?n ...] :where [?a :name ?n] (reach ?a ?b)]',
                     (RIGHT, ["n0", "n2"])),
    "right-direct": ('[:find ?b :in $ % ?a :where (reach ?a ?b)]', (RIGHT, [":name", "n1"])),
    "left-lookup": ('[:find ?b :in $ % :where (reach [:name "n3"] ?b)]', (LEFT,)),
}


def setup(rewrite: bool, monkeypatch):
    db = Database()
    db.transact(SCHEMA)
    r = db.transact([{":db/id": f"n{i}", ":name": f"n{i}"} for i in range(N)])
    eid = {i: r.tempids[f"n{i}"] for i in range(N)}
    with monkeypatch.context() as m:
        if not rewrite:
            m.setattr(magic, "demand", lambda q, rules, known=(): (q, rules, []))
        views = {name: db.view(q, *inputs, name=name) for name, (q, inputs) in QUERIES.items()}
    return db, eid, views


def test_bound_calls_compile_to_circuits(monkeypatch):
    _, _, views = setup(True, monkeypatch)
    assert {n: v.mode for n, v in views.items()} == {n: "circuit" for n in QUERIES}
    assert any("reach__bf" in note for note in views["right-from"].circuit.notes)
    _, _, plain = setup(False, monkeypatch)  # the side the oracle test compares with
    assert not any("__bf" in note for v in plain.values() for note in v.circuit.notes)


@settings(deadline=None, max_examples=25)
@given(snapshots)
@example([frozenset({(0, 1), (1, 2), (2, 0)}), frozenset({(0, 1), (2, 0)}), frozenset()])
@example([frozenset({(0, 1), (1, 2), (2, 3)}), frozenset({(0, 1), (2, 3)}),
          frozenset({(0, 1), (1, 2), (2, 3), (3, 0)})])
def test_views_equal_with_and_without_demand_after_every_transaction(stream):
    mp = pytest.MonkeyPatch()
    try:
        dbs = [setup(flag, mp) for flag in (True, False)]
    finally:
        mp.undo()
    node = {e: i for i, e in dbs[0][1].items()}
    before = frozenset()
    for snap in stream:
        for db, eid, _ in dbs:
            tx = [[":db/add", eid[a], ":edge", eid[b]] for a, b in snap - before]
            tx += [[":db/retract", eid[a], ":edge", eid[b]] for a, b in before - snap]
            tx += [[":db/add", eid[b], ":mark", eid[a]] for a, b in snap - before if a == 0]
            tx += [[":db/retract", eid[b], ":mark", eid[a]] for a, b in before - snap if a == 0]
            db.transact(tx)
        before = snap
        (db, _, with_demand), (_, _, without) = dbs
        for name, v in with_demand.items():
            assert v.result() == without[name].result(), name
            assert v.result() == db.q(QUERIES[name][0], *QUERIES[name][1]), name
        closure = reachable(set(snap))
        got = {node[b] for (b,) in with_demand["right-from"].result()}
        assert got == {b for a, b in closure if a == 0}


def test_right_linear_rules_are_factored():
    q = parse_query(FROM0.format(r="reach"))
    q2, rules = magic.demand(q, parse_rules(RIGHT))[:2]
    by = {}
    for r in rules:
        by.setdefault(r.name, []).append(r.edn())
    assert by["reach__bf__magic"] == ['[(reach__bf__magic ?a) [?a :name "n0"]]']
    # the exit is the step: `from` takes one step or more, and is the answer (no exit join)
    assert by["reach__bf__from"] == [
        '[(reach__bf__from ?a ?x) (reach__bf__magic ?a) [?a :edge ?x]]',
        '[(reach__bf__from ?__s0 ?x) (reach__bf__from ?__s0 ?a) [?a :edge ?x]]']
    assert by["reach__bf"] == ['[(reach__bf ?__s0 ?__y0) (reach__bf__from ?__s0 ?__y0)]']
    # an exit unlike the step: `from` takes zero steps or more, then the exit joins
    _, rules = magic.demand(parse_query(FROM0.format(r="mreach")), parse_rules(MARKED_BY))[:2]
    by = {}
    for r in rules:
        by.setdefault(r.name, []).append(r.edn())
    assert by["mreach__bf__from"] == [
        '[(mreach__bf__from ?__s0 ?__s0) (mreach__bf__magic ?__s0)]',
        '[(mreach__bf__from ?__s0 ?x) (mreach__bf__from ?__s0 ?a) [?a :edge ?x]]']
    assert by["mreach__bf"] == ['[(mreach__bf ?__s0 ?b) (mreach__bf__from ?__s0 ?a) [?a :mark ?b]]']
    # two hops, the middle variable named differently in the exit and the step
    _, rules = magic.demand(parse_query(FROM0.format(r="hop2")), parse_rules(HOP2))[:2]
    assert [r.edn() for r in rules if r.name == "hop2__bf"] == \
        ['[(hop2__bf ?__s0 ?__y0) (hop2__bf__from ?__s0 ?__y0)]']


def test_left_linear_rules_keep_their_demand_at_the_seed():
    q = parse_query(FROM0.format(r="reach"))
    _, rules = magic.demand(q, parse_rules(LEFT))[:2]
    magic_rules = sorted(r.edn() for r in rules if r.name == "reach__bf__magic")
    assert magic_rules == ['[(reach__bf__magic ?a) (reach__bf__magic ?a)]',
                           '[(reach__bf__magic ?a) [?a :name "n0"]]']


def test_unselective_or_unbound_calls_are_left_alone():
    rules = parse_rules(RIGHT)
    for text in ('[:find ?a ?b :in $ % :where (reach ?a ?b)]',
                 '[:find ?a ?b :in $ % :where [?a :name _] (reach ?a ?b)]',
                 '[:find ?a :in $ % :where [?a :name _] (not (reach ?a ?a))]'):
        q = parse_query(text)
        assert magic.demand(q, rules) == (q, rules, [])


def test_a_user_rule_named_like_an_adorned_one_turns_the_rewrite_off():
    rules = parse_rules(RIGHT[:-1] + ' [(reach__bf ?a ?b) [?a :edge ?b]]]')
    q = parse_query(FROM0.format(r="reach"))
    assert magic.demand(q, rules) == (q, rules, [])


def test_clause_lists_that_repeat_patterns_share_one_core_join(monkeypatch):
    """The query and the seed rule both read [?a :name "n0"]; the closure's base and step
    both read [?a :edge ?x] (named differently in RIGHT's two rules): two joins, not four."""
    from queries.circuit_ops import CoreJoin
    _, _, views = setup(True, monkeypatch)
    compiled = views["right-from"].circuit
    joins = [n for n in compiled.root.nodes if isinstance(getattr(n, "op", None), CoreJoin)]
    assert len(joins) == 2
    assert [n for n in compiled.notes if n.startswith("core join")] == [
        'core join [?a :name "n0"] (generic join, telescoping delta rule)',
        'core join [?a :edge ?x] (generic join, telescoping delta rule)']


def test_demand_seeded_by_an_input_stays_bound_to_it():
    """The seed of a demand made of the query's own clauses (``[?e :name ?name]`` with
    ``?name`` an :in scalar) reads the input's value: every other rule body is a scope of
    its own, and when the seed was compiled as one it demanded every entity. Here that
    is an unbounded count for p2 (no fixed point within the limit); demand from p1 alone
    stops after 3 steps, in q and in a view."""
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
                ' {:db/ident :start :db/valueType :db.type/long}'
                ' {:db/ident :limit :db/valueType :db.type/long}]')
    db.transact('[{:name "p1" :start 0 :limit 3} {:name "p2" :start 0 :limit 1000000000}'
                ' {:name "p3" :start 5 :limit 6}]')
    rules = ('[[(count-up ?e ?v) [?e :start ?v]]'
             ' [(count-up ?e ?w) (count-up ?e ?v) [?e :limit ?l] [(< ?v ?l)] [(inc ?v) ?w]]]')
    query = '[:find [?v ...] :in $ % ?name :where [?e :name ?name] (count-up ?e ?v)]'
    assert sorted(db.q(query, rules, "p1")) == [0, 1, 2, 3]
    view = db.view(query, rules, "p1")
    # a collection or a relation of inputs seeds the demand with each of its values
    many = '[:find ?name ?v :in $ % [?name ...] :where [?e :name ?name] (count-up ?e ?v)]'
    rel = '[:find ?name ?v :in $ % [[?name ?x]] :where [?e :name ?name] (count-up ?e ?v)]'
    want = {("p1", v) for v in range(4)} | {("p3", 5), ("p3", 6)}
    assert db.q(many, rules, ["p1", "p3"]) == db.q(rel, rules, [["p1", 0], ["p3", 9]]) == want
    views = [db.view(many, rules, ["p1", "p3"]), db.view(rel, rules, [["p1", 0], ["p3", 9]])]
    # an entity id given as an input and passed to the call binds it
    direct = '[:find [?v ...] :in $ % ?e :where (count-up ?e ?v)]'
    p1 = db.q('[:find ?e . :where [?e :name "p1"]]')
    assert sorted(db.q(direct, rules, p1)) == [0, 1, 2, 3]
    # and so does an entity id written in the call, or a lookup ref passed to it
    assert sorted(db.q('[:find [?v ...] :in $ % :where (count-up %d ?v)]'.replace("%d", str(p1)), rules)) \
        == [0, 1, 2, 3]
    assert sorted(db.q('[:find [?v ...] :in $ % :where (count-up [:name "p1"] ?v)]', rules)) == [0, 1, 2, 3]
    db.transact('[{:db/id [:name "p1"] :limit 4}]')
    assert sorted(view.result()) == sorted(db.q(query, rules, "p1")) == [0, 1, 2, 3, 4]
    assert views[0].result() == views[1].result() == want | {("p1", 4)}
