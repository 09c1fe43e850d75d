"""Inputs as Datomic passes them: a pull pattern named by a plain symbol, scalars and
entity ids given to rules, ``get-else``/``get-some``/``missing?`` and transaction
positions, an int where any attribute's value goes. Each expected value is what Datomic
returns for the same query, written out by hand (split from ``test_datomic_semantics``)."""


import pytest

from queries.database import Database
from queries.edn import Keyword
from wcoj.errors import QueryError, UnboundVariableError


def test_a_pull_pattern_input_is_named_by_a_plain_symbol_as_in_datomic():
    """Datomic's grammar names a pull pattern given in :in with a plain symbol
    (``:in $ pattern`` ... ``(pull ?e pattern)``); it used to be read as a pattern literal
    and refused. ``?pattern`` keeps working; a plain symbol that no pull uses is an error."""
    d = Database()
    d.transact('[{:db/ident :name :db/valueType :db.type/string} {:db/ident :age :db/valueType :db.type/long}]')
    d.transact('[{:name "Ann" :age 30}]')
    want = [({Keyword(":name"): "Ann", Keyword(":age"): 30},)]
    for q in ('[:find (pull ?e pattern) :in $ pattern :where [?e :name "Ann"]]',
              '[:find (pull ?e ?pattern) :in $ ?pattern :where [?e :name "Ann"]]'):
        assert d.q(q, "[:name :age]") == want
    view = d.view('[:find (pull ?e pattern) :in $ pattern :where [?e :name _]]', "[:name]")
    d.transact('[{:name "Bob"}]')
    assert sorted(view.result(), key=str) == [({Keyword(":name"): "Ann"},), ({Keyword(":name"): "Bob"},)]
    with pytest.raises(QueryError, match="plain symbol: that names a pull pattern"):
        d.q('[:find ?e :in $ pattern :where [?e :name "Ann"]]', "[:name]")


@pytest.mark.parametrize("name", ["?x", "?p", "?y", "?b"])
def test_a_scalar_input_is_not_a_variable_of_the_rules_it_is_passed_to(name):
    """A scalar input was substituted into every clause named by its variable, the rule
    bodies' own included: with an input ?x and a rule whose body also says ?x, the body
    matched only the input's value (an empty answer here). A rule body is its own scope."""
    from tests.queries.datalog_evaluator import oracle_q
    d = Database()
    d.transact('[{:db/ident :name :db/valueType :db.type/string}'
               ' {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
    d.transact('[{:db/id "a" :name "Ann" :friend ["b" "c"]} {:db/id "b" :name "Bob" :friend ["c"]}'
               ' {:db/id "c" :name "Cy"}]')
    rules = '[[(f ?a ?b) [?x :name ?a] [?x :friend ?y] [?y :name ?b]]]'
    q = f'[:find ?n :in $ % {name} :where (f {name} ?n)]'
    assert d.q(q, rules, "Ann") == oracle_q(d, q, rules, "Ann") == {("Bob",), ("Cy",)}
    view = d.view(q, rules, "Ann")
    ann = d.q('[:find ?e . :where [?e :name "Ann"]]')
    d.transact([{":db/id": "e", ":name": "Eve"}, [":db/add", ann, ":friend", "e"]])
    assert view.result() == d.q(q, rules, "Ann") == {("Bob",), ("Cy",), ("Eve",)}


def test_a_rule_s_required_variables_must_be_bound_where_it_is_called():
    """``(f [?a] ?b)`` declares ?a required: Datomic refuses a call whose ?a nothing binds
    (insufficient binding); the rule used to run as if ?a were free."""
    d = Database()
    d.transact('[{:db/ident :name :db/valueType :db.type/string}'
               ' {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
    d.transact('[{:db/id "a" :name "Ann" :friend ["b"]} {:db/id "b" :name "Bob"}]')
    rules = '[[(f [?a] ?b) [?p :name ?a] [?p :friend ?q] [?q :name ?b]]]'
    for q, inputs in (('[:find ?n :in $ % :where (f "Ann" ?n)]', ()),
                      ('[:find ?n :in $ % ?x :where (f ?x ?n)]', ("Ann",)),
                      ('[:find ?n :in $ % :where [_ :name ?x] (f ?x ?n)]', ())):
        assert d.q(q, rules, *inputs) == {("Bob",)}
    for q in ('[:find ?n :in $ % :where (f ?x ?n)]',
              '[:find ?n :in $ % :where [_ :name ?n] (not (f ?z ?n))]',
              '[:find ?n :in $ % :where [_ :name ?n] (or-join [?n] (f ?z ?n) [(= ?n "x")])]'):
        with pytest.raises(UnboundVariableError, match="rule f requires them bound"):
            d.q(q, rules)


def test_entity_ids_given_as_inputs_reach_rules_and_transaction_positions():
    """An int bound to a variable that a rule uses as an entity (directly, or through
    another rule) is an entity id, as when the variable stands in a data pattern; so is
    one bound to a pattern's transaction. These returned nothing: the ints were read as
    longs. (The oracle shares the binder, so the answers here are written out.)"""
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
                ' {:db/ident :follows :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
    r = db.transact('[{:db/id "a" :name "a"} {:db/id "b" :name "b" :follows "a"}'
                    ' {:db/id "c" :name "c" :follows "b"}]')
    a, b, c = (r.tempids[k] for k in "abc")
    rules = ('[[(f ?x ?y) [?x :follows ?y]] [(g ?p ?q) (f ?p ?q)]'
             ' [(reach ?x ?y) (f ?x ?y)] [(reach ?x ?y) (f ?x ?z) (reach ?z ?y)]]')
    assert db.q('[:find ?y :in $ % ?e :where (f ?e ?y)]', rules, b) == {(a,)}
    assert db.q('[:find ?x :in $ % ?e :where (f ?x ?e)]', rules, a) == {(b,)}
    assert db.q('[:find ?y :in $ % ?e :where (g ?e ?y)]', rules, c) == {(b,)}
    assert db.q('[:find ?y :in $ % [?e ...] :where (reach ?e ?y)]', rules, [b, c]) == {(a,), (b,)}
    assert db.q('[:find ?n :in $ % ?e :where (reach ?e ?y) [?y :name ?n]]', rules, c) == {("a",), ("b",)}
    assert db.q('[:find ?n :in $ ?tx :where [_ :name ?n ?tx]]', r.tx) == {("a",), ("b",), ("c",)}
    # an int written in a call is an entity where the rule's parameter stands for one
    assert db.q('[:find ?y :in $ % :where (reach C ?y)]'.replace("C", str(c)), rules) == {(a,), (b,)}
    assert db.q('[:find ?x :in $ % :where (f ?x A)]'.replace("A", str(a)), rules) == {(b,)}
    # a lookup ref passed to a rule names its entity, as in the rule's patterns
    assert db.q('[:find ?y :in $ % :where (reach [:name "c"] ?y)]', rules) == {(a,), (b,)}
    view = db.view('[:find ?y :in $ % ?e :where (reach ?e ?y)]', rules, c)
    d = db.transact([{":db/id": "d", ":name": "d"}, [":db/add", a, ":follows", "d"]]).tempids["d"]
    assert view.result() == {(a,), (b,), (d,)}


def test_an_entity_id_input_reaches_get_else_get_some_and_missing():
    """The entity argument of the database functions is an entity: an int bound to it is
    an entity id (it was read as a long, so get-else gave its default for every entity)."""
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
                ' {:db/ident :age :db/valueType :db.type/long}]')
    r = db.transact('[{:db/id "a" :name "a" :age 3} {:db/id "b" :name "b"}]')
    a, b = r.tempids["a"], r.tempids["b"]
    get_else = '[:find ?v . :in $ ?e :where [(get-else $ ?e :age 0) ?v]]'
    assert (db.q(get_else, a), db.q(get_else, b)) == (3, 0)
    assert db.q('[:find [?a ...] :in $ ?e :where [(get-some $ ?e :age :name) [?a ?v]]]', a) == [":age"]
    missing = '[:find ?n :in $ ?e :where [?x :name ?n] [(missing? $ ?e :age)]]'
    assert (db.q(missing, a), db.q(missing, b)) == (set(), {("a",), ("b",)})


def test_an_int_written_where_any_attribute_s_value_goes_is_a_long_or_an_entity():
    """[?x ?a 1] finds :age 1 and a ref to entity 1, as in Datomic, where an entity id is
    a long (it found only the long). With the attribute written, its type decides."""
    db = Database()
    db.transact('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
                ' {:db/ident :age :db/valueType :db.type/long}'
                ' {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
    r = db.transact('[{:db/id "a" :name "a" :age 3} {:db/id "b" :name "b" :age 7}]')
    a, b = r.tempids["a"], r.tempids["b"]
    db.transact([[":db/add", b, ":friend", a], [":db/add", a, ":friend", b], [":db/add", a, ":age", a]])
    assert db.q(f'[:find ?x ?attr :where [?x ?attr {a}]]') == {(b, ":friend"), (a, ":age")}
    assert db.q(f'[:find ?x :where [?x :friend {a}]]') == {(b,)}
    assert db.q(f'[:find ?x :where [?x :age {a}]]') == {(a,)}
    assert db.q(f'[:find (count ?x) . :where [?x _ {a}]]') == 2
