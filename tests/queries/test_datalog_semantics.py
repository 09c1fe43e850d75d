"""Datomic semantics of q and views, each against an independent answer: comprehensions over
the movie datoms (``datalog_oracle.Movies``), the plain-Python evaluator of the tests
(``datalog_evaluator.oracle_q``), or data small enough to state by hand."""

import pytest

import queries.circuits
from queries.database import Database
from tests.queries.datalog_evaluator import oracle_q
from tests.queries.datalog_oracle import MOVIES, Movies
from wcoj.errors import ArityMismatchError, NoFixedPointError, QueryError

movies_only = pytest.mark.skipif(not MOVIES.exists(), reason="../shared/data/movies is absent")


@pytest.fixture(scope="module")
def movies():
    return Movies()


@pytest.fixture(scope="module")
def mdb():
    d = Database()
    d.transact((MOVIES / "schema.edn").read_text())
    report = d.transact((MOVIES / "data.edn").read_text())
    d.ids = {v: k for k, v in report.tempids.items()}  # entity id -> data-file tempid number
    return d


@movies_only
def test_variables_only_inside_a_not_are_local_to_it(mdb, movies):
    query = ('[:find ?t :where [?m :movie/title ?t] '
             '(not [?m :movie/director ?d] [?d :person/name "James Cameron"])]')
    cameron = movies.ents(":person/name", "James Cameron")
    expect = {(movies.get(m, ":movie/title"),) for m in movies.ents(":movie/title")
              if not movies.eav[(m, ":movie/director")] & cameron}
    assert mdb.q(query) == expect == oracle_q(mdb, query)
    assert 0 < len(expect) < len(movies.ents(":movie/title"))


@movies_only
def test_an_attribute_bound_from_an_input_collection(mdb, movies):
    query = ('[:find ?m ?x :in $ ?t [?a ...] :where [?m :movie/title ?t] [?m ?a ?x]]')
    attrs = [":movie/cast", ":movie/director"]
    got = mdb.q(query, "The Terminator", attrs)
    m = next(iter(movies.ents(":movie/title", "The Terminator")))
    expect = {(m, x) for a in attrs for x in movies.eav[(m, a)]}
    assert {(mdb.ids[e], mdb.ids[x]) for e, x in got} == expect and len(expect) > 2
    assert mdb.q(query, "The Terminator", [":no/such"]) == set()


@movies_only
def test_a_collection_of_tuples_as_a_second_source(mdb, movies):
    query = ('[:find ?t ?rating :in $ $ratings :where [?m :movie/title ?t] '
             '[$ratings ?t ?rating] [(> ?rating 7)]]')
    ratings = [("The Terminator", 8), ("Alien", 9), ("Commando", 6), ("No Such Film", 10)]
    assert mdb.q(query, ratings) == {("The Terminator", 8), ("Alien", 9)}
    assert oracle_q(mdb, query, ratings) == {("The Terminator", 8), ("Alien", 9)}
    with pytest.raises(QueryError, match="collection of tuples"):
        mdb.q(query, 42)


def test_a_collection_source_has_the_width_of_its_tuples():
    """Datomic matches a pattern over a collection of tuples position by position, so
    the pattern may be as wide as the tuples (1 or 6 here, where a database pattern has 2
    to 5 terms) or narrower; q, a view and the plain-Python evaluator agree."""
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]')
    db.transact('[{:name "a"} {:name "b"}]')
    ones = '[:find ?n ?x :in $ $xs :where [?e :name ?n] [$xs ?x]]'
    view = db.view(ones, [[1], [2]])
    expect = {(n, x) for n in "ab" for x in (1, 2)}
    assert db.q(ones, [[1], [2]]) == view.result() == oracle_q(db, ones, [[1], [2]]) == expect
    db.transact('[{:name "c"}]')
    assert view.result() == db.q(ones, [[1], [2]]) == expect | {("c", 1), ("c", 2)}
    wide = '[:find ?n ?f :in $ $t :where [?e :name ?n] [$t ?n _ _ _ _ ?f]]'
    rows = [("a", 1, 2, 3, 4, 5), ("z", 1, 2, 3, 4, 6)]
    assert db.q(wide, rows) == oracle_q(db, wide, rows) == {("a", 5)}
    prefix = '[:find ?n :in $ $t :where [$t ?n]]'  # narrower: the other positions are blank
    assert db.q(prefix, rows) == {("a",), ("z",)}
    with pytest.raises(ArityMismatchError, match=r"\[\$t\] has no terms"):
        db.q('[:find ?x :in $ $t :where [$t]]', rows)
    with pytest.raises(QueryError, match="has 7 terms but the tuples of \\$t have 6"):
        db.q('[:find ?x :in $ $t :where [$t ?x _ _ _ _ _ _]]', rows)


def test_pull_reads_a_reverse_reference_with_or_without_a_namespace():
    """``:person/_friend`` (Datomic) and ``:_friend`` (DataScript, for an attribute without
    a namespace) both give the entities whose attribute points here."""
    db = Database()
    db.transact('[{:db/ident :person/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}'
                ' {:db/ident :person/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}'
                ' {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
    db.transact('[{:db/id "a" :person/name "a"} {:db/id "b" :person/name "b" :person/friend "a" :friend "a"}'
                ' {:db/id "c" :person/name "c" :person/friend ["a" "b"] :friend ["a" "b"]}]')
    query = '[:find (pull ?e [:person/name {%s [:person/name]}]) . :where [?e :person/name "a"]]'
    both = [{":person/name": "b"}, {":person/name": "c"}]
    assert db.q(query % ":person/_friend")[":person/_friend"] == both
    assert db.q(query % ":_friend")[":_friend"] == both
    assert db.q(query % ":_friend") == oracle_q(db, query % ":_friend")


def test_pull_returns_components_whole():
    """A component (``:db/isComponent``) is part of its entity: pulled without a
    sub-pattern, by name or by ``*``, it comes back whole, its own components too, as in
    Datomic; other references stay ``{:db/id n}``, and a sub-pattern still chooses."""
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}'
                ' {:db/ident :addr :db/valueType :db.type/ref :db/cardinality :db.cardinality/one'
                '  :db/isComponent true}'
                ' {:db/ident :geo :db/valueType :db.type/ref :db/cardinality :db.cardinality/many'
                '  :db/isComponent true}'
                ' {:db/ident :city :db/valueType :db.type/string :db/cardinality :db.cardinality/one}'
                ' {:db/ident :lat :db/valueType :db.type/long :db/cardinality :db.cardinality/one}'
                ' {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}]')
    r = db.transact('[{:db/id "b" :name "b"}'
                    ' {:db/id "a" :name "a" :friend "b" :addr {:db/id "x" :city "x" :geo [{:db/id "g" :lat 5}]}}]')
    a, b, x, g = (r.tempids[k] for k in "abxg")

    def pulled(pattern):
        return db.q(f'[:find (pull ?e {pattern}) . :where [?e :name "a"]]')

    whole_addr = {":db/id": x, ":city": "x", ":geo": [{":db/id": g, ":lat": 5}]}
    assert pulled("[*]") == {":db/id": a, ":name": "a", ":friend": {":db/id": b}, ":addr": whole_addr}
    assert pulled("[:addr :friend]") == {":addr": whole_addr, ":friend": {":db/id": b}}
    assert pulled("[{:addr [:city]}]") == {":addr": {":city": "x"}}
    assert db.q('[:find (pull ?e [:_addr]) . :where [?e :city "x"]]') == {":_addr": {":db/id": a}}
    view = db.view('[:find (pull ?e [:addr]) :where [?e :name "a"]]')
    db.transact([[":db/add", x, ":city", "y"]])
    assert view.result() == db.q('[:find (pull ?e [:addr]) :where [?e :name "a"]]')
    assert view.result()[0][0][":addr"][":city"] == "y"


def test_keyword_makes_keywords_that_match_keyword_values():
    """``(keyword "a")`` is ``:a`` and ``(keyword "ns" "a")`` is ``:ns/a``, as in Clojure,
    so a keyword made in a query joins with stored keyword values."""
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}'
                ' {:db/ident :tag :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}]')
    db.transact('[{:name "a" :tag [:a :t/b]} {:name "b" :tag [:a]}]')
    query = '[:find ?n :where [?e :name ?n] [(keyword ?n) ?k] [?e :tag ?k]]'
    assert db.q(query) == oracle_q(db, query) == {("a",)}
    assert db.q('[:find ?k . :where [?e :name "a"] [(keyword "t" "b") ?k] [?e :tag ?k]]') == ":t/b"
    with pytest.raises(QueryError, match="keyword takes a name"):
        db.q('[:find ?k :where [?e :name ?n] [(keyword 1) ?k]]')


def test_a_ground_not_join_beside_a_recursive_rule():
    db = Database()
    db.transact('[{:db/ident :x/a :db/valueType :db.type/string :db/cardinality :db.cardinality/one}'
                ' {:db/ident :x/b :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]')
    rules = ('[[(y ?a ?c) [?f :x/a ?a] [?f :x/b ?c]] [(y ?a ?c) [?f :x/a ?a] [?f :x/b ?b] (y ?b ?c)]'
             ' [(z ?a ?b) (not-join [] [?g :x/a "a"] [?g :x/b "b"]) (y ?a ?b)]]')
    query = '[:find ?a ?b :in $ % :where (z ?a ?b)]'
    assert db.q(query, rules) == set()
    view = db.view(query, rules)
    db.transact([{":x/a": "p", ":x/b": "q"}, {":x/a": "q", ":x/b": "r"}])
    assert view.result() == db.q(query, rules) == oracle_q(db, query, rules) == \
        {("p", "q"), ("q", "r"), ("p", "r")}
    db.transact([{":x/a": "a", ":x/b": "b"}])  # the not-join now matches: nothing is left
    assert view.result() == db.q(query, rules) == set()


def test_rules_that_never_converge_raise_the_same_typed_error_in_q_and_views(monkeypatch):
    monkeypatch.setattr(queries.circuits, "RECURSION_LIMIT", 50)
    db = Database()
    db.transact('[{:db/ident :n :db/valueType :db.type/long :db/cardinality :db.cardinality/many}]')
    rules = '[[(up ?x) [_ :n ?x]] [(up ?y) (up ?x) [(inc ?x) ?y]]]'
    query = '[:find (count ?x) . :in $ % :where (up ?x)]'
    assert db.q(query, rules) is None
    view = db.view(query, rules)
    with pytest.raises(NoFixedPointError, match="up kept deriving new facts for 50 iterations"):
        db.transact([[":db/add", "e", ":n", 0]])
    assert db.q('[:find ?x :where [_ :n ?x]]') == set() and view.result() is None
    db.drop_view(view.name)
    db.transact([[":db/add", "e", ":n", 0]])
    with pytest.raises(NoFixedPointError, match="up kept deriving"):
        db.q(query, rules)
    # bounded by the data, the same rules converge
    bounded = '[[(up ?x) [_ :n ?x]] [(up ?y) (up ?x) [(inc ?x) ?y] [(< ?y 10)]]]'
    assert db.q(query, bounded) == 10 == oracle_q(db, query, bounded)


def test_q_gives_back_what_it_interned_and_pull_patterns_come_as_inputs():
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string}'
                ' {:db/ident :age :db/valueType :db.type/long}]')
    e = db.transact([{":db/id": "a", ":name": "Ann", ":age": 30}]).tempids["a"]
    size = len(db.store.interner)
    assert db.q('[:find ?e :where [?e :name "Nobody"]]') == set()
    assert db.q('[:find ?s :where [_ :name ?n] [(str ?n "!") ?s]]') == {("Ann!",)}
    assert db.q('[:find ?e :in $ ?n :where [?e :name ?n]]', "Zed") == set()
    assert len(db.store.interner) == size
    view = db.view('[:find ?e :where [?e :name "Zed"]]')  # a view keeps its constants
    z = db.transact([{":db/id": "z", ":name": "Zed"}]).tempids["z"]
    assert view.result() == {(z,)}
    pattern = '[:name (:age :default 0)]'
    query = '[:find (pull ?e ?p) . :in $ ?p ?n :where [?e :name ?n]]'
    assert db.q(query, pattern, "Ann") == {":name": "Ann", ":age": 30}
    assert db.q(query, pattern, "Zed") == {":name": "Zed", ":age": 0}
    assert db.q(query, "[:name]", "Ann") == {":name": "Ann"} and e


def test_more_of_clojure_core_as_datascript_has_it():
    db = Database()
    db.transact('[{:db/ident :s :db/valueType :db.type/string}]')
    db.transact([{":s": "a1 b22"}])
    assert db.q('[:find ?x :where [(range 1 4) [?x ...]]]') == {(1,), (2,), (3,)}
    assert db.q('[:find ?m :where [_ :s ?s] [(re-seq "[0-9]+" ?s) [?m ...]]]') == {("1",), ("22",)}
    assert db.q('[:find ?v . :where [(ground [10 20]) ?m] [(get ?m 1) ?v]]') == 20
    assert db.q('[:find ?s :where [_ :s ?s] [(contains? #{"a1 b22"} ?s)]]') == {("a1 b22",)}
    assert db.q('[:find ?s :where [_ :s ?s] [(empty? ?s)]]') == set()
    assert db.q('[:find ?s :where [_ :s ?s] [(= ?s "x") ?b] [(not ?b)]]') == {("a1 b22",)}
    with pytest.raises(QueryError, match="at most"):
        db.q('[:find ?x :where [(range 100000000) [?x ...]]]')


def _people():
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
                ' {:db/ident :age :db/valueType :db.type/long}]')
    ids = db.transact([{":db/id": "a", ":name": "Ann", ":age": 30}, {":db/id": "b", ":name": "Bob", ":age": 25}])
    return db, ids.tempids["a"]


def test_patterns_whose_variables_are_all_inputs_or_blanks_check_existence():
    # [_ :name ?x] with ?x an input binds nothing the join keeps; a pattern of inputs
    # only ([?e :name ?x]) holds nothing but a datom's presence. Views follow the datoms.
    db, ann = _people()
    cases = [('[:find ?x :in $ ?x :where [_ :name ?x]]', ("Zed",)),
             ('[:find ?x :in $ [?x _] :where [_ :name ?x]]', (["Zed", 1],)),
             ('[:find (count ?x) . :in $ [?x ...] :where [_ :name ?x]]', (["Ann", "Zed", "Bob"],)),
             ('[:find ?y :in $ ?e ?x :where [?e :name ?x] [(ground 1) ?y]]', (ann, "Ann"))]
    views = [db.view(q, *inputs) for q, inputs in cases]
    expected = [[set(), set(), {("Zed",)}, {("Zed",)}],
                [set(), set(), {("Zed",)}, {("Zed",)}],
                [2, 2, 3, 2],
                [{(1,)}, {(1,)}, {(1,)}, set()]]
    steps = [[], [{":name": "Cid"}], [{":name": "Zed"}], [[":db/retract", ann, ":name", "Ann"]]]
    for t, tx in enumerate(steps):
        if tx:
            db.transact(tx)
        for (q, inputs), view, want in zip(cases, views, expected):
            assert view.result() == db.q(q, *inputs) == oracle_q(db, q, *inputs) == want[t], (q, t)


@pytest.mark.parametrize("query, inputs, want", [
    ('[:find ?n :where [_ :name ?n] [(< 2 1)]]', (), set()),
    ('[:find ?n :where [_ :name ?n] [(< 1 2)]]', (), {("Ann",), ("Bob",)}),
    ('[:find ?n :in $ ?m :where [_ :name ?n] [(< ?m 40)]]', (35,), {("Ann",), ("Bob",)}),
    ('[:find ?n :in $ ?m :where [_ :name ?n] [(< ?m 20)]]', (35,), set()),
    ('[:find ?n :in $ ?s :where [_ :name ?n] [(= ?s "zz")]]', ("zz",), {("Ann",), ("Bob",)}),   # not in the db
    ('[:find ?n :in $ ?s :where [_ :name ?n] [(= ?s "zz")]]', ("yy",), set()),
])
def test_a_predicate_on_constants_and_inputs_only_holds_for_every_row_or_none(query, inputs, want):
    db, _ = _people()
    view = db.view(query, *inputs)
    assert view.result() == db.q(query, *inputs) == oracle_q(db, query, *inputs) == want
    db.transact([{":name": "Cid"}])
    assert view.result() == db.q(query, *inputs) == oracle_q(db, query, *inputs)
