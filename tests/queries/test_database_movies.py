"""Database.q on the movie data of "Learn Datalog Today", against the plain-Python oracle."""

import math
import statistics
from datetime import datetime, timezone

import pytest

from queries.database import Database
from queries.edn import Keyword, loads
from wcoj.errors import QueryError
from tests.queries.datalog_oracle import MOVIES, Movies, reachable

pytestmark = pytest.mark.skipif(not MOVIES.exists(), reason="../shared/data/movies is absent")


@pytest.fixture(scope="module")
def movies():
    return Movies()


@pytest.fixture(scope="module")
def db():
    d = Database()
    d.transact((MOVIES / "schema.edn").read_text())
    report = d.transact((MOVIES / "data.edn").read_text())
    d.ids = report.tempids  # data-file tempid number -> entity id
    return d


def title_of(m, e):
    return m.get(e, ":movie/title")


def name_of(m, e):
    return m.get(e, ":person/name")


def test_load_gives_every_datom_once(db, movies):
    n_tx = db.q('[:find (count ?tx) . :where [?tx :db/txInstant]]')  # one datom per transaction
    # per attribute of the schema file: the keys it states (Datomic's schema datoms, a
    # cardinality one when not stated) and its :db.install/attribute; the partition's ident
    schema = loads((MOVIES / "schema.edn").read_text())
    n_schema = sum(len(set(map(str, m)) - {":db/id", ":db.install/_attribute"} | {":db/cardinality"}) + 1
                   for m in schema) + 1
    assert len(db.store.datoms.contents()) == len(movies.datoms) + n_tx + n_schema
    assert set(db.ids) == {e for e, _, _ in movies.datoms}


def test_pattern_with_blank_and_constant(db, movies):
    assert db.q('[:find ?title :where [_ :movie/title ?title]]') == {
        (v,) for _, v in movies.pairs(":movie/title")}
    e = db.q('[:find ?e . :where [?e :person/name "Ridley Scott"]]')
    assert e == db.ids[next(iter(movies.ents(":person/name", "Ridley Scott")))]


def test_three_way_join(db, movies):
    lw = movies.ents(":movie/title", "Lethal Weapon")
    want = {(name_of(movies, p),) for m in lw for p in movies.eav[(m, ":movie/cast")]}
    got = db.q('[:find ?name :where [?m :movie/title "Lethal Weapon"] [?m :movie/cast ?p] '
               '[?p :person/name ?name]]')
    assert got == want and len(want) == 3


def test_two_element_pattern_and_entity_constant(db, movies):
    assert db.q('[:find (count ?p) . :where [?p :person/born]]') == len(
        movies.ents(":person/born"))
    mel = db.ids[next(iter(movies.ents(":person/name", "Mel Gibson")))]
    assert db.q(f'[:find ?n . :where [{mel} :person/name ?n]]') == "Mel Gibson"


def test_scalar_tuple_collection_relation_inputs(db, movies):
    def titles_with(name):
        p = movies.ents(":person/name", name)
        return {title_of(movies, m) for m, c in movies.pairs(":movie/cast") if c in p}
    q1 = ('[:find [?title ...] :in $ ?name :where [?p :person/name ?name] '
          '[?m :movie/cast ?p] [?m :movie/title ?title]]')
    assert sorted(db.q(q1, "Mel Gibson")) == sorted(titles_with("Mel Gibson"))
    q2 = ('[:find ?title :in $ [?director ?actor] :where [?d :person/name ?director] '
          '[?a :person/name ?actor] [?m :movie/director ?d] [?m :movie/cast ?a] '
          '[?m :movie/title ?title]]')
    assert db.q(q2, ["James Cameron", "Arnold Schwarzenegger"]) == {
        ("The Terminator",), ("Terminator 2: Judgment Day",)}
    q3 = ('[:find ?title :in $ [?name ...] :where [?p :person/name ?name] '
          '[?m :movie/cast ?p] [?m :movie/title ?title]]')
    names = ["Mel Gibson", "Danny Glover"]
    assert db.q(q3, names) == {(t,) for n in names for t in titles_with(n)}
    q4 = ('[:find ?title ?rating :in $ [[?title ?rating]] :where [?m :movie/title ?title]]')
    assert db.q(q4, [["Die Hard", 8.3], ["Nope", 1.0]]) == {("Die Hard", 8.3)}


def test_find_specs(db, movies):
    years = {v for _, v in movies.pairs(":movie/year")}
    assert sorted(db.q('[:find [?y ...] :where [_ :movie/year ?y]]')) == sorted(years)
    t = db.q('[:find [?t ?y] :where [?m :movie/title ?t] [?m :movie/year ?y] '
             '[(= ?t "Alien")]]')
    assert t == ("Alien", 1979)
    assert db.q('[:find ?y . :where [?m :movie/title "Nope"] [?m :movie/year ?y]]') is None
    assert db.q('[:find [?y] :where [?m :movie/title "Nope"] [?m :movie/year ?y]]') is None
    rows = db.q('[:find ?t ?y :keys title year :where [?m :movie/title ?t] '
                '[?m :movie/year ?y] [(< ?y 1980)]]')
    assert sorted(r[":title"] for r in rows) == sorted(
        title_of(movies, m) for m, y in movies.pairs(":movie/year") if y < 1980)
    assert db.q('[:find ?t :strs t :where [_ :movie/title ?t] [(= ?t "Alien")]]') == [
        {"t": "Alien"}]


def test_predicates(db, movies):
    born = movies.pairs(":person/born")
    cutoff = datetime(1950, 1, 1, tzinfo=timezone.utc)
    assert db.q('[:find ?n :in $ ?c :where [?p :person/born ?b] [(< ?b ?c)] '
                '[?p :person/name ?n]]', cutoff) == {
        (name_of(movies, p),) for p, b in born if b < cutoff}
    for op, fn in [("<", lambda a, b: a < b), (">=", lambda a, b: a >= b),
                   ("not=", lambda a, b: a != b), ("=", lambda a, b: a == b)]:
        got = db.q(f'[:find ?t :where [?m :movie/year ?y] [({op} ?y 1985)] '
                   '[?m :movie/title ?t]]')
        assert got == {(title_of(movies, m),) for m, y in movies.pairs(":movie/year")
                       if fn(y, 1985)}, op


def test_functions_bind(db, movies):
    with pytest.raises(QueryError, match="failed"):  # an int minus an instant
        db.q('[:find ?n ?d :in $ ?today :where [?p :person/name ?n] '
             '[?p :person/born ?b] [(- ?today ?b) ?d]]', 10)
    y = db.q('[:find ?t ?y2 :where [?m :movie/title ?t] [?m :movie/year ?y] '
             '[(inc ?y) ?y2] [(= ?t "Alien")]]')
    assert y == {("Alien", 1980)}
    s = db.q('[:find ?s . :where [?m :movie/title "Alien"] [?m :movie/title ?t] '
             '[(str ?t "!" 1) ?s]]')
    assert s == "Alien!1"
    first = db.q('[:find ?t :where [_ :movie/title ?t] [(re-find "^Mad Max \\\\d" ?t)]]')
    assert first == {("Mad Max 2",)}
    assert db.q('[:find ?n . :where [(ground 5) ?x] [(* ?x 2) ?y] [(mod ?y 3) ?n]]') == 1
    assert db.q('[:find ?c . :where [?m :movie/title "Alien"] [?m :movie/title ?t] '
                '[(count ?t) ?c]]') == 5
    assert db.q('[:find ?s . :where [(subs "Braveheart" 5) ?s]]') == "heart"
    assert db.q('[:find ?a ?b :where [(tuple 1 2) ?t] [(untuple ?t) [?a ?b]]]') == {(1, 2)}


def test_function_collection_and_relation_bindings(db):
    assert db.q('[:find ?x :where [(vector 1 2 3) [?x ...]]]') == {(1,), (2,), (3,)}
    assert db.q('[:find ?a ?b :in $ ?r :where [(identity ?r) [[?a ?b]]]]',
                [[1, "x"], [2, "y"]]) == {(1, "x"), (2, "y")}


def test_database_functions(db, movies):
    deaths = movies.pairs(":person/death")
    got = db.q('[:find ?n ?d :where [?p :person/name ?n] '
               '[(get-else $ ?p :person/death "alive") ?d]]')
    assert len(got) == len(movies.ents(":person/name"))
    assert sum(d != "alive" for _, d in got) == len(deaths)
    missing = db.q('[:find ?n :where [?p :person/name ?n] [(missing? $ ?p :person/born)]]')
    assert missing == {(name_of(movies, p),) for p in movies.ents(":person/name")
                       if not movies.eav.get((p, ":person/born"))}
    assert len(missing) == 4


def test_not_and_not_join(db, movies):
    got = db.q('[:find ?n :where [?p :person/name ?n] (not [?p :person/born])]')
    assert len(got) == 4
    directors = {v for _, v in movies.pairs(":movie/director")}
    actors = {v for _, v in movies.pairs(":movie/cast")}
    got = db.q('[:find ?n :where [?p :person/name ?n] [_ :movie/cast ?p] '
               '(not-join [?p] [?m :movie/director ?p])]')
    assert got == {(name_of(movies, p),) for p in actors - directors}


def test_or_or_join_and(db, movies):
    got = db.q('[:find ?t :where [?m :movie/title ?t] (or [?m :movie/year 1979] '
               '[?m :movie/year 1981])]')
    assert got == {(title_of(movies, m),) for m, y in movies.pairs(":movie/year")
                   if y in (1979, 1981)}
    got = db.q('[:find ?n :where [?p :person/name ?n] (or-join [?p] [_ :movie/director ?p] '
               '(and [?m :movie/cast ?p] [?m :movie/year ?y] [(< ?y 1980)]))]')
    directors = {v for _, v in movies.pairs(":movie/director")}
    early = {p for m, p in movies.pairs(":movie/cast") if movies.get(m, ":movie/year") < 1980}
    assert got == {(name_of(movies, p),) for p in directors | early}


def test_recursive_rule_matches_closure(db, movies):
    rules = ('[[(follows ?a ?b) [?a :movie/sequel ?b]] '
             '[(follows ?a ?b) (follows ?a ?x) (follows ?x ?b)]]')  # non-linear, left-recursive
    got = db.q('[:find ?t1 ?t2 :in $ % :where (follows ?a ?b) [?a :movie/title ?t1] '
               '[?b :movie/title ?t2]]', rules)
    closure = reachable(movies.pairs(":movie/sequel"))
    assert got == {(title_of(movies, a), title_of(movies, b)) for a, b in closure}
    assert len(got) > len(movies.pairs(":movie/sequel"))


def test_rule_with_constant_argument_and_two_rules(db, movies):
    rules = '''[[(actor-movie ?p ?m) [?m :movie/cast ?p]]
                [(worked-with ?a ?b) (actor-movie ?a ?m) (actor-movie ?b ?m) [(not= ?a ?b)]]]'''
    got = db.q('[:find ?n :in $ % ?who :where [?a :person/name ?who] (worked-with ?a ?b) '
               '[?b :person/name ?n]]', rules, "Mel Gibson")
    mel = movies.ents(":person/name", "Mel Gibson")
    ms = {m for m, p in movies.pairs(":movie/cast") if p in mel}
    assert got == {(name_of(movies, p),) for m, p in movies.pairs(":movie/cast")
                   if m in ms and p not in mel}


def test_aggregates(db, movies):
    years = [y for _, y in movies.pairs(":movie/year")]
    q = '[:find ({} ?y) . :with ?m :where [?m :movie/year ?y]]'
    assert db.q(q.format("count")) == len(years)
    assert db.q(q.format("count-distinct")) == len(set(years))
    assert db.q(q.format("sum")) == sum(years)
    assert db.q(q.format("avg")) == pytest.approx(sum(years) / len(years))
    assert db.q(q.format("min")) == min(years) and db.q(q.format("max")) == max(years)
    assert db.q(q.format("median")) == statistics.median(years)
    assert db.q(q.format("variance")) == pytest.approx(statistics.pvariance(years))
    assert db.q(q.format("stddev")) == pytest.approx(math.sqrt(statistics.pvariance(years)))
    assert db.q(q.format("distinct")) == set(years)
    assert db.q('[:find (min 3 ?y) . :where [_ :movie/year ?y]]') == sorted(set(years))[:3]
    # ascending, as DataScript returns it (aggregate-max keeps a sorted window)
    assert db.q('[:find (max 2 ?y) . :where [_ :movie/year ?y]]') == sorted(set(years))[-2:]
    sample = db.q('[:find (sample 4 ?y) . :where [_ :movie/year ?y]]')
    assert len(sample) == 4 and set(sample) <= set(years)
    # without :with, equal years collapse (Datomic's set semantics)
    assert db.q('[:find (count ?y) . :where [?m :movie/year ?y]]') == len(set(years))


def test_grouped_aggregate(db, movies):
    got = db.q('[:find ?t (count ?p) :where [?m :movie/title ?t] [?m :movie/cast ?p]]')
    want = {}
    for m, p in movies.pairs(":movie/cast"):
        want[title_of(movies, m)] = want.get(title_of(movies, m), 0) + 1
    assert got == set(want.items())


def test_attribute_variable_and_four_element_pattern(db, movies):
    mel = db.ids[next(iter(movies.ents(":person/name", "Mel Gibson")))]
    got = db.q(f'[:find ?a :where [{mel} ?a _]]')
    assert got == {(Keyword(a),) for e, a, _ in movies.datoms if e == next(iter(
        movies.ents(":person/name", "Mel Gibson")))}
    assert all(isinstance(a, Keyword) for (a,) in got)
    tx = db.q('[:find [?tx ...] :where [_ :movie/title _ ?tx]]')
    assert len(tx) == 1


def test_pull(db, movies):
    rows = db.q('[:find [(pull ?e [:person/name {:movie/_cast [:movie/title]}]) ...] '
                ':where [?e :person/name "Danny Glover"]]')
    assert len(rows) == 1
    glover = next(iter(movies.ents(":person/name", "Danny Glover")))
    assert sorted(x[":movie/title"] for x in rows[0][":movie/_cast"]) == sorted(
        title_of(movies, m) for m, p in movies.pairs(":movie/cast") if p == glover)
    alien = db.q('[:find (pull ?m [*]) . :where [?m :movie/title "Alien"]]')
    assert alien[":movie/title"] == "Alien" and alien[":movie/year"] == 1979
    assert isinstance(alien[":movie/director"], list) and ":db/id" in alien
    seq = db.q('[:find (pull ?m [:movie/title {:movie/sequel ...}]) . '
               ':where [?m :movie/title "Mad Max"]]')
    assert seq[":movie/sequel"][":movie/title"] == "Mad Max 2"
    assert seq[":movie/sequel"][":movie/sequel"][":movie/title"] == "Mad Max Beyond Thunderdome"


def test_results_are_python_values(db):
    b = db.q('[:find ?b . :where [?p :person/name "Mel Gibson"] [?p :person/born ?b]]')
    assert b == datetime(1956, 1, 3, tzinfo=timezone.utc)
    assert db.q([":find", "?t", ":where", ["?m", ":movie/year", 1979],
                 ["?m", ":movie/title", "?t"]]) == {("Alien",), ("Mad Max",)}
