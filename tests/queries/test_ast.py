"""Tests of the Datomic query parser (queries/ast.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queries.ast import (
    And, BindColl, BindRel, BindScalar, BindTuple, Blank, Const, FindAggregate, FindColl,
    FindPull, FindRel, FindScalar, FindTuple, FindVar, FnCall, Not, NotJoin, Or, OrJoin,
    Pattern, Predicate, PullAttr, PullJoin, PullPattern, PullRecursion, PullWildcard, Query,
    Rule, RuleCall, RulesVar, SrcVar, Var, bound_vars, check_rules, free_vars, parse_pull,
    parse_query, parse_rules, required_vars,
)
from queries.edn import EdnList, Keyword, Symbol, loads
from wcoj.errors import ArityMismatchError, EdnSyntaxError, QueryError, UnboundVariableError

SRC = SrcVar("$")


def V(name):
    return Var(name)


def K(text):
    return Const(Keyword(text))


def names(variables):
    return sorted(v.name for v in variables)


# Queries from "Learn Datalog Today" (the tutorial behind ../shared/data/movies), chapters 1-8.
TUTORIAL = [
    '[:find ?title :where [_ :movie/title ?title]]',
    '[:find ?e :where [?e :person/name "Ridley Scott"]]',
    '[:find ?name :where [?m :movie/title "Lethal Weapon"] [?m :movie/cast ?p] '
    '[?p :person/name ?name]]',
    '[:find ?title :in $ ?name :where [?p :person/name ?name] [?m :movie/cast ?p] '
    '[?m :movie/title ?title]]',
    '[:find ?title :in $ [?director ?actor] :where [?d :person/name ?director] '
    '[?a :person/name ?actor] [?m :movie/director ?d] [?m :movie/cast ?a] '
    '[?m :movie/title ?title]]',
    '[:find ?title :in $ [?director ...] :where [?p :person/name ?director] '
    '[?m :movie/director ?p] [?m :movie/title ?title]]',
    '[:find ?title ?rating :in $ ?actor [[?title ?rating]] :where [?a :person/name ?actor] '
    '[?m :movie/cast ?a] [?m :movie/title ?title]]',
    '[:find ?attr :in $ ?title :where [?m :movie/title ?title] [?m ?a] [?a :db/ident ?attr]]',
    '[:find ?title :where [?m :movie/title ?title] [?m :movie/year ?year] [(< ?year 1984)]]',
    '[:find ?name :where [?p :person/name ?name] [(.startsWith ?name "M")]]',
    '[:find ?name ?age :in $ ?today :where [?p :person/name ?name] [?p :person/born ?born] '
    '[(tutorial.fns/age ?born ?today) ?age]]',
    '[:find ?name ?age :in $ ?age :where [?p :person/name ?name] [?p :person/born ?born] '
    '[(tutorial.fns/age ?born #inst "2013-08-02") ?age]]',
    '[:find (count ?m) . :where [?m :movie/title]]',
    '[:find (max ?date) :where [_ :person/born ?date]]',
    '[:find ?name (count ?movie) :where [?p :person/name ?name] [?m :movie/cast ?p] '
    '[?m :movie/title ?movie]]',
    '[:find ?d (avg ?rating) :in $ [[?title ?rating]] :where [?m :movie/title ?title] '
    '[?m :movie/director ?di] [?di :person/name ?d]]',
    '[:find ?name :in $ % :where [?m :movie/title "The Terminator"] [?m :movie/cast ?p] '
    '[?p :person/name ?name] (friends ?p ?f)]',
    '[:find [?title ...] :where [_ :movie/title ?title]]',
    '[:find [?year ?title] :where [?m :movie/title ?title] [?m :movie/year ?year]]',
    '[:find ?year . :in $ ?title :where [?m :movie/title ?title] [?m :movie/year ?year]]',
    '[:find ?title :where [?m :movie/title ?title] (not [?m :movie/year 1985])]',
    '[:find ?name :where [?p :person/name ?name] '
    '(not-join [?p] [?m :movie/cast ?p] [?m :movie/year ?y] [(< ?y 1985)])]',
    '[:find ?title :where [?m :movie/title ?title] '
    '(or [?m :movie/year 1984] [?m :movie/year 1985])]',
    '[:find ?title :where [?m :movie/title ?title] '
    '(or (and [?m :movie/year ?y] [(< ?y 1980)]) (and [?m :movie/year ?y] [(> ?y 1990)]))]',
    '[:find ?name :where [?p :person/name ?name] '
    '(or-join [?p] [?m :movie/cast ?p] [?m :movie/director ?p])]',
    '[:find ?name :in $ ?m :where [?p :person/name ?name] '
    '(or-join [[?m] ?p] [?m :movie/cast ?p] [?m :movie/director ?p])]',
    '[:find (pull ?e [:person/name {:movie/_cast [:movie/title]}]) :where [?e :person/name]]',
    '[:find ?year (count ?m) :with ?t :where [?m :movie/year ?year] [?m :movie/title ?t]]',
    '[:find ?title ?year :keys title year :where [?m :movie/title ?title] '
    '[?m :movie/year ?year]]',
    '[:find (min 3 ?y) (max 2 ?y) (sample 2 ?y) (count-distinct ?y) :where [_ :movie/year ?y]]',
    '[:find ?e ?a ?v ?tx :where [?e ?a ?v ?tx]]',
    '[:find ?e :in $db $other :where [$db ?e :movie/title ?t] [$other ?e :movie/year 1987]]',
    '[:find ?t :where [?m :movie/title ?t] [(missing? $ ?m :movie/sequel)]]',
    '[:find ?n ?s :where [?p :person/name ?n] [(get-else $ ?p :person/born "?") ?s]]',
    '[:find ?x ?y :where [(ground [[1 2] [3 4]]) [[?x ?y]]]]',
    '[:find ?x :where [(ground [1 2 3]) [?x ...]] [(str ?x "!") ?s] [(re-find #"x" ?s)]]',
]


@pytest.mark.parametrize("text", TUTORIAL)
def test_tutorial_queries_parse_and_print_back(text):
    if "#\"" in text:  # regexes are not EDN; the test checks the error instead
        with pytest.raises(EdnSyntaxError, match="invalid dispatch"):
            parse_query(text)
        return
    q = parse_query(text)
    assert isinstance(q, Query)
    assert parse_query(str(q)) == q
    assert parse_query(loads(str(q))) == q


def test_relation_find_with_patterns_and_constants():
    q = parse_query('[:find ?name :where [?m :movie/title "Lethal Weapon"] '
                    '[?m :movie/cast ?p] [?p :person/name ?name]]')
    assert q.find == FindRel((FindVar(V("?name")),))
    assert q.inputs == (SRC,)
    assert q.where == (
        Pattern((V("?m"), K(":movie/title"), Const("Lethal Weapon"))),
        Pattern((V("?m"), K(":movie/cast"), V("?p"))),
        Pattern((V("?p"), K(":person/name"), V("?name"))),
    )
    assert str(q.where[0]) == '[?m :movie/title "Lethal Weapon"]'


def test_find_specs_of_all_four_kinds():
    where = ' :where [?m :movie/title ?t] [?m :movie/year ?y]]'
    assert parse_query("[:find ?t ?y" + where).find == FindRel(
        (FindVar(V("?t")), FindVar(V("?y"))))
    assert parse_query("[:find [?t ...]" + where).find == FindColl(FindVar(V("?t")))
    assert parse_query("[:find [?t ?y]" + where).find == FindTuple(
        (FindVar(V("?t")), FindVar(V("?y"))))
    assert parse_query("[:find ?t ." + where).find == FindScalar(FindVar(V("?t")))
    assert str(parse_query("[:find ?t ." + where).find) == "?t ."


def test_in_bindings():
    q = parse_query('[:find ?t :in $ % ?a [?b ?c] [?d ...] [[?e _ ?f]] [[?g ?h] ...] '
                    ':where [?m :movie/title ?t]]')
    assert q.inputs == (
        SRC, RulesVar(), BindScalar(V("?a")),
        BindTuple((BindScalar(V("?b")), BindScalar(V("?c")))),
        BindColl(BindScalar(V("?d"))),
        BindRel((BindScalar(V("?e")), Blank(), BindScalar(V("?f")))),
        BindColl(BindTuple((BindScalar(V("?g")), BindScalar(V("?h"))))),
    )
    assert names(bound_vars(q.inputs)) == ["?a", "?b", "?c", "?d", "?e", "?f", "?g", "?h"]


def test_predicates_and_function_bindings():
    q = parse_query('[:find ?n ?x :where [?p :person/name ?n] [(< ?n "M")] '
                    '[(str ?n "!") ?s] [(tuple ?n ?s) [?x ?y]] [(vector ?n) [?x ...]] '
                    '[(f ?n) [[?x _]]]]')
    pred, scalar, tup, coll, rel = q.where[1:]
    assert pred == Predicate("<", (V("?n"), Const("M")))
    assert scalar == FnCall("str", (V("?n"), Const("!")), BindScalar(V("?s")))
    assert isinstance(tup.binding, BindTuple) and isinstance(coll.binding, BindColl)
    assert rel.binding == BindRel((BindScalar(V("?x")), Blank()))
    assert str(scalar) == '[(str ?n "!") ?s]'
    assert names(bound_vars(tup)) == ["?x", "?y"]
    assert names(required_vars(tup)) == ["?n", "?s"]


def test_patterns_of_two_to_four_terms_with_blank_and_source():
    q = parse_query('[:find ?e :in $ $h :where [?e :a] [$h ?e _ 5 ?tx] [?e :b "x"]]')
    two, four, three = q.where
    assert two == Pattern((V("?e"), K(":a")))
    assert four == Pattern((V("?e"), Blank(), Const(5), V("?tx")), SrcVar("$h"))
    assert str(four) == "[$h ?e _ 5 ?tx]"
    assert names(bound_vars(four)) == ["?e", "?tx"]


def test_lookup_ref_constant_is_hashable():
    q = parse_query('[:find ?t :where [[:person/name "Mel Gibson"] :person/born ?t]]')
    assert q.where[0].terms[0] == Const((Keyword(":person/name"), "Mel Gibson"))
    hash(q)


def test_negation_and_disjunction_nodes():
    q = parse_query(TUTORIAL[20])
    assert q.where[1] == Not((Pattern((V("?m"), K(":movie/year"), Const(1985))),))
    q = parse_query(TUTORIAL[21])
    nj = q.where[1]
    assert isinstance(nj, NotJoin) and nj.vars == (V("?p"),) and len(nj.clauses) == 3
    assert names(free_vars(nj)) == ["?p"] and bound_vars(nj) == frozenset()
    q = parse_query(TUTORIAL[23])
    orr = q.where[1]
    assert isinstance(orr, Or) and all(isinstance(b, And) for b in orr.clauses)
    assert names(bound_vars(orr)) == ["?m", "?y"]
    q = parse_query(TUTORIAL[25])
    oj = q.where[1]
    assert oj == OrJoin((V("?m"),), (V("?p"),), (
        Pattern((V("?m"), K(":movie/cast"), V("?p"))),
        Pattern((V("?m"), K(":movie/director"), V("?p"))),
    ))
    assert str(oj) == "(or-join [[?m] ?p] [?m :movie/cast ?p] [?m :movie/director ?p])"
    assert names(required_vars(oj)) == ["?m"]
    assert names(bound_vars(oj)) == ["?m", "?p"]


def test_source_prefixed_list_clauses():
    q = parse_query('[:find ?e :in $a $b % :where [$a ?e :x 1] ($b not [?e :y 2]) '
                    '($b or [?e :z 1] [?e :z 2]) ($b edge ?e ?f)]')
    b = SrcVar("$b")  # the clauses inside ($b not ...) read $b too
    assert q.where[1] == Not((Pattern((V("?e"), K(":y"), Const(2)), b),), b)
    assert q.where[2].src == SrcVar("$b")
    assert q.where[3] == RuleCall("edge", (V("?e"), V("?f")), SrcVar("$b"))
    assert str(q.where[3]) == "($b edge ?e ?f)"


def test_aggregates_with_and_keys():
    q = parse_query(TUTORIAL[27])
    assert q.find.elements[1] == FindAggregate("count", (V("?m"),))
    assert q.with_vars == (V("?t"),)
    q = parse_query(TUTORIAL[29])
    assert q.find.elements[0] == FindAggregate("min", (Const(3), V("?y")))
    assert q.find.elements[0].var == V("?y")
    assert str(q.find.elements[2]) == "(sample 2 ?y)"
    q = parse_query(TUTORIAL[28])
    assert (q.keys, q.keys_kind) == (("title", "year"), "keys")
    q = parse_query('[:find ?t :strs title :where [_ :movie/title ?t]]')
    assert (q.keys, q.keys_kind) == (("title",), "strs")


def test_pull_in_find():
    q = parse_query(TUTORIAL[26])
    pull = q.find.elements[0]
    assert pull == FindPull(V("?e"), PullPattern((
        PullAttr(":person/name"),
        PullJoin(PullAttr(":movie/cast", reverse=True),
                 PullPattern((PullAttr(":movie/title"),))),
    )))
    q = parse_query('[:find (pull ?e ?pat) :in $ ?pat :where [?e :person/name]]')
    assert q.find.elements[0].pattern == V("?pat")


def test_parse_pull_patterns():
    p = parse_pull('[* :person/name (:movie/_cast :limit 2) (:person/born :default "?" '
                   ':as "born") {:movie/sequel ...} {:movie/sequel 3} (limit :trivia 1) '
                   '{(:movie/cast :limit 5) [:person/name]}]')
    assert p.items[0] == PullWildcard()
    assert p.items[2] == PullAttr(":movie/cast", True, 2)
    assert p.items[2].key == ":movie/_cast"
    assert p.items[3] == PullAttr(":person/born", default=Const("?"), alias="born")
    assert type(p.items[3].default.value) is str
    assert p.items[4] == PullJoin(PullAttr(":movie/sequel"), PullRecursion())
    assert p.items[5].pattern == PullRecursion(3)
    assert p.items[6] == PullAttr(":trivia", limit=1)
    assert p.items[7].attr.limit == 5
    assert parse_pull(str(p)) == p
    assert parse_pull([":person/name", {":movie/_cast": ["*"]}]) == parse_pull(
        "[:person/name {:movie/_cast [*]}]")


@pytest.mark.parametrize("bad", ['{:a 1}', '[5]', '[{:a :b}]', '[(:a :limit -1)]',
                                 '[(:a :color 1)]'])
def test_bad_pull_patterns(bad):
    with pytest.raises(QueryError, match="pull"):
        parse_pull(bad)


def test_python_data_form_equals_edn_text():
    py = [":find", "?t", ("count", "?a"), ":in", "$", "?y", ["?n", "..."], ":where",
          ["?m", ":movie/year", "?y"], ["?m", ":movie/title", "?t"], [("<", "?y", 1990)],
          ["?m", ":movie/cast", "?a"], ["?a", ":person/name", "?n"],
          ("not", ["?m", ":movie/title", "Alien"]),
          ["or", ["?m", ":trivia", "_"], ["?m", ":movie/sequel", "_"]]]
    text = ('[:find ?t (count ?a) :in $ ?y [?n ...] :where [?m :movie/year ?y] '
            '[?m :movie/title ?t] [(< ?y 1990)] [?m :movie/cast ?a] [?a :person/name ?n] '
            '(not [?m :movie/title "Alien"]) (or [?m :trivia _] [?m :movie/sequel _])]')
    assert parse_query(py) == parse_query(text)


def test_python_form_may_use_keyword_objects():
    q = parse_query([Keyword(":find"), "?t", Keyword(":where"), ["?m", ":movie/title", "?t"]])
    assert q == parse_query("[:find ?t :where [?m :movie/title ?t]]")


def test_map_form_equals_vector_form():
    text = '{:find [?t] :in [$ ?y] :where [[?m :movie/year ?y] [?m :movie/title ?t]]}'
    vector = '[:find ?t :in $ ?y :where [?m :movie/year ?y] [?m :movie/title ?t]]'
    assert parse_query(text) == parse_query(vector)
    py = {":find": ["?t"], ":in": ["$", "?y"],
          ":where": [["?m", ":movie/year", "?y"], ["?m", ":movie/title", "?t"]]}
    assert parse_query(py) == parse_query(vector)


def test_python_form_strings_that_are_not_keywords_are_constants():
    q = parse_query([":find", "?e", ":where", ["?e", ":person/name", "Mel Gibson"]])
    assert q.where[0].terms[2] == Const("Mel Gibson")
    q = parse_query('[:find ?e :where [?e :person/name "?x"]]')
    assert q.where[0].terms[2] == Const("?x")


# ------------------------------------------------------------------ rules

FRIENDS = '''[[(friends ?p1 ?p2) [?m :movie/cast ?p1] [?m :movie/cast ?p2] [(not= ?p1 ?p2)]]
              [(friends ?p1 ?p2) [?m :movie/cast ?p1] [?m :movie/director ?p2]]
              [(friends ?p1 ?p2) [?m :movie/director ?p1] [?m :movie/cast ?p2]]]'''
SEQUELS = '''[[(sequels ?m1 ?m2) [?m1 :movie/sequel ?m2]]
              [(sequels ?m1 ?m2) [?m :movie/sequel ?m2] (sequels ?m1 ?m)]]'''


def test_rules_parse_with_recursion():
    rules = parse_rules(SEQUELS)
    assert rules[0] == Rule("sequels", (), (V("?m1"), V("?m2")),
                            (Pattern((V("?m1"), K(":movie/sequel"), V("?m2"))),))
    assert rules[1].body[1] == RuleCall("sequels", (V("?m1"), V("?m")))
    assert str(rules[1]) == "[(sequels ?m1 ?m2) [?m :movie/sequel ?m2] (sequels ?m1 ?m)]"
    assert parse_rules(str(list(map(str, rules))).replace("'", "")) == rules
    assert len(parse_rules(FRIENDS)) == 3


def test_mutually_recursive_rules_and_required_vars():
    rules = parse_rules('''[[(even ?a ?b) [?a :next ?b]]
                            [(even ?a ?b) [?a :next ?c] (odd ?c ?b)]
                            [(odd ?a ?b) [?a :next ?c] (even ?c ?b)]
                            [(above [?a] ?b) [?a :parent ?b]]]''')
    assert rules[3].required == (V("?a"),) and rules[3].vars == (V("?b"),)
    assert str(rules[3]) == "[(above [?a] ?b) [?a :parent ?b]]"


def test_rules_in_python_form():
    py = [[("sequels", "?m1", "?m2"), ["?m1", ":movie/sequel", "?m2"]],
          [("sequels", "?m1", "?m2"), ["?m", ":movie/sequel", "?m2"], ("sequels", "?m1", "?m")]]
    assert parse_rules(py) == parse_rules(SEQUELS)


def test_query_checked_against_rules():
    rules = parse_rules(FRIENDS)
    q = parse_query(TUTORIAL[16], rules=rules)
    assert q.where[-1] == RuleCall("friends", (V("?p"), V("?f")))
    with pytest.raises(ArityMismatchError) as info:
        parse_query("[:find ?x :in $ % :where [?x :a ?y] (friends ?x ?y ?z)]", rules=rules)
    assert str(info.value) == ("rule friends defined with 2 arguments, called with 3 in "
                               "(friends ?x ?y ?z)")
    assert (info.value.expected, info.value.got) == (2, 3)
    with pytest.raises(QueryError, match="unknown rule enemies called in "
                                         r"\(enemies \?x\); rules defined: friends"):
        check_rules(parse_query("[:find ?x :in $ % :where (enemies ?x)]"), rules)


def test_rule_arity_errors_inside_the_rule_set():
    with pytest.raises(ArityMismatchError, match=r"rule edge defined with 2 arguments, "
                                                 r"called with 3 in \(edge \?x \?y \?z\)"):
        parse_rules("[[(edge ?a ?b) [?a :e ?b]] [(path ?x ?y) (edge ?x ?y ?z)]]")
    with pytest.raises(ArityMismatchError, match="defined with 2 arguments in .* and with 1"):
        parse_rules("[[(edge ?a ?b) [?a :e ?b]] [(edge ?a) [?a :e _]]]")
    with pytest.raises(QueryError, match="unknown rule nope"):
        parse_rules("[[(edge ?a ?b) [?a :e ?b] (nope ?a)]]")


def test_rule_head_variables_must_be_bound_by_the_body():
    with pytest.raises(UnboundVariableError, match=r"unbound variable \?c in \[\(r \?a \?c\)"
                                                   r".*declared required: \(r \[\?c\] \.\.\.\)"):
        parse_rules("[[(r ?a ?c) [?a :e ?b]]]")
    parse_rules("[[(r [?c] ?a) [?a :e ?b] [(< ?b ?c)]]]")  # a required var comes from the call


@pytest.mark.parametrize("bad", ["[(r ?a) [?a :e ?b]]", "[[r [?a :e ?b]]]", "[[(r ?a)]]",
                                 "{:r 1}", "[[(r 5) [?a :e 1]]]"])
def test_malformed_rules(bad):
    with pytest.raises(QueryError):
        parse_rules(bad)


# ------------------------------------------------------------------ validation errors

def test_unbound_find_variable():
    with pytest.raises(UnboundVariableError, match=r"unbound variable \?x in :find \?x \?t: "
                                                   "it appears nowhere in :where or :in"):
        parse_query("[:find ?x ?t :where [?m :movie/title ?t]]")
    with pytest.raises(UnboundVariableError) as info:
        parse_query("[:find (count ?x) (pull ?y [*]) :where [?m :movie/title ?t]]")
    assert info.value.variables == ("?x", "?y")


def test_find_variable_only_in_a_predicate_is_unbound():
    with pytest.raises(UnboundVariableError, match=r"\?y"):
        parse_query("[:find ?y :where [?m :movie/year ?x] [(< ?x ?y)]]")


def test_unbound_with_variable():
    with pytest.raises(UnboundVariableError, match=r"unbound variable \?z in :with \?z"):
        parse_query("[:find (count ?t) :with ?z :where [?m :movie/title ?t]]")


def test_pull_pattern_variable_must_be_an_input():
    with pytest.raises(UnboundVariableError, match=r"\?pat"):
        parse_query("[:find (pull ?e ?pat) :where [?e :person/name]]")


def test_negation_variables_bound_only_inside_are_local():
    # as in Datomic and DataScript: ?p occurs only inside the not, so it is local to it
    parse_query("[:find ?m :where [?m :movie/title ?t] (not [?m :movie/cast ?p])]")
    # a not none of whose variables is bound outside cannot join: that is the error
    with pytest.raises(UnboundVariableError) as info:
        parse_query("[:find ?m :where [?m :movie/title ?t] (not [?x :movie/cast ?p])]")
    assert info.value.variables == ("?p", "?x")
    assert "none of the variables of a not" in str(info.value) and "not-join" in str(info.value)
    assert str(info.value.form) == "(not [?x :movie/cast ?p])"
    # not-join's own variables must be bound
    parse_query("[:find ?m :where [?m :movie/title ?t] (not-join [?m] [?m :movie/cast ?p])]")
    with pytest.raises(UnboundVariableError, match=r"\?q in \(not-join"):
        parse_query("[:find ?m :where [?m :movie/title ?t] (not-join [?q] [?q :a ?m])]")


def test_negation_inside_an_or_branch_sees_the_branch_bindings():
    parse_query("[:find ?m :where [?m :movie/title ?t] "
                "(or-join [?m] (and [?m :movie/cast ?p] (not [?p :person/death _])) "
                "[?m :trivia _])]")
    with pytest.raises(UnboundVariableError, match=r"\?q"):
        parse_query("[:find ?m :where [?m :movie/title ?t] "
                    "(or-join [?m] (and [?m :movie/cast ?p] (not [?q :person/death ?r])) "
                    "[?m :trivia _])]")


def test_not_join_body_cannot_see_outer_variables_it_does_not_name():
    with pytest.raises(UnboundVariableError, match=r"\?t"):
        parse_query("[:find ?m :where [?m :movie/title ?t] "
                    "(not-join [?m] [?m :movie/cast ?p] [(= ?p ?t)])]")


def test_or_branches_must_use_the_same_variables():
    with pytest.raises(UnboundVariableError, match="every branch of an or must use the same "
                                                   "variables") as info:
        parse_query("[:find ?m :where [?m :movie/title ?t] "
                    "(or [?m :movie/year 1984] [?m :movie/cast ?p])]")
    assert info.value.variables == ("?p",)


def test_or_join_required_variables_must_be_bound():
    with pytest.raises(UnboundVariableError, match=r"required variables of an or-join"):
        parse_query("[:find ?p :where [?p :person/name ?n] "
                    "(or-join [[?m] ?p] [?m :movie/cast ?p] [?m :movie/director ?p])]")


def test_predicate_variables_bound_nowhere():
    with pytest.raises(UnboundVariableError, match=r"\?z in \[\(< \?y \?z\)\]"):
        parse_query("[:find ?y :where [?m :movie/year ?y] [(< ?y ?z)]]")
    with pytest.raises(UnboundVariableError, match=r"\?w in \[\(inc \?w\) \?v\]"):
        parse_query("[:find ?v :where [?m :movie/year ?y] [(inc ?w) ?v]]")


@pytest.mark.parametrize(("pattern", "n"), [("[?e]", 1), ("[?e :a ?v ?tx ?x ?y]", 6),
                                            ("[$ ?e :a ?v ?tx ?x ?y]", 6)])
def test_pattern_length(pattern, n):
    with pytest.raises(ArityMismatchError, match=f"has {n} elements?; expected 2 to 5") as info:
        parse_query(f"[:find ?e :where {pattern}]")
    assert info.value.got == n


def test_unknown_aggregate_lists_the_known_ones():
    with pytest.raises(QueryError, match=r"unknown aggregate mean in \(mean \?y\); known: "
                                         "avg, count, count-distinct, distinct, max, median"):
        parse_query("[:find (mean ?y) :where [_ :movie/year ?y]]")


@pytest.mark.parametrize("agg", ["(count ?y ?y)", "(count 2 ?y)", "(min 1 2 ?y)", "(sum)"])
def test_aggregate_arity(agg):
    with pytest.raises(ArityMismatchError, match="aggregate"):
        parse_query(f"[:find {agg} :where [_ :movie/year ?y]]")


def test_aggregate_count_must_be_positive():
    with pytest.raises(QueryError, match="positive integer"):
        parse_query("[:find (max 0 ?y) :where [_ :movie/year ?y]]")


def test_keys_count_must_match_find():
    with pytest.raises(ArityMismatchError, match=":keys names 1 key but :find has 2 elements"):
        parse_query("[:find ?t ?y :keys title :where [?m :movie/title ?t] [?m :movie/year ?y]]")
    with pytest.raises(QueryError, match="relation or tuple"):
        parse_query("[:find [?t ...] :keys t :where [?m :movie/title ?t]]")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[:find ?e :where 5]", "unknown clause shape 5"),
        ("[:find ?e :where [?e :a ?v] ((f) ?e)]", "must start with not, not-join"),
        ("[:find ?e :where (and [?e :a 1])]", "only allowed as a branch of or"),
        ("[:find ?e :where [?e :a ?v] [(< ?v 1) ?x ?y]]", "has 3 elements"),
        ("[:find ?e :where [?e foo 1]]", "unexpected symbol foo"),
        ("[:find ?e :where [?e :a (inc 1)]]", "nested expression"),
        ("[:find ?e :where [?e :a ?v] [(?f ?v)]]", "must start with a function name"),
        ("[:find ?e :where (not)]", "not needs at least one clause"),
        ("[:find ?e :where [?e :a 1] (or)]", "or needs at least one branch"),
        ("[:find ?e :where (not-join ?e [?e :a 1])]", "needs a vector of variables"),
        ("[:find ?e :where [?e :a ?v] [(f ?v) 5]]", "bad binding 5"),
        ("[:find :where [?e :a 1]]", ":find needs at least one element"),
        ("[:find ?e . ?f :where [?e :a ?f]]", "bad find spec"),
        ("[:find ?e :where [?e :a 1] :where [?e :b 1]]", "appears twice"),
        ("[:find ?e :select [?e :a 1]]", "unknown query section :select"),
        ("[:where [?e :a 1]]", "the query has no :find"),
        ("[?e :find ?e]", "a query starts with :find"),
        ("5", "a query is a vector"),
        ("{:find ?e}", "must be a vector in the map form"),
        ("[:find ?e :in :where [?e :a 1]]", ":in needs at least one input"),
        ("[:find ?e :in $ ?x ?x :where [?e :a ?x]]", r"declares \?x twice"),
        ("[:find ?e :where [?e :a 1] (edge ?e ?f)]", "add % to :in"),
        ("[:find ?e :in $a :where [?e :a 1]]", r"reads \$, but :in declares \$a"),
        ("[:find ?e :in ?e :where [$x ?e :a 1]]", "declares no data source"),
        ("[:find 5 :where [?e :a 1]]", "bad :find element 5"),
        ("[:find (pull ?e) :where [?e :a 1]]", "pull takes a variable and a pattern"),
        ("[:find ?e :keys a :strs b :where [?e :a 1]]", "only one of :keys"),
        ("[:find ?e :where [?e :a 1]", "is not closed"),
    ],
)
def test_malformed_queries(text, message):
    with pytest.raises(QueryError, match=message):
        parse_query(text)


# ------------------------------------------------------------------ helpers and properties

def test_free_bound_and_required_vars():
    q = parse_query('[:find ?a :in $ % :where [?a :r ?b] [(> ?b 1)] [(inc ?b) ?c] '
                    '(not [?a :s ?c]) (or [?a :t ?d] [?a :u ?d]) (rule ?a ?e)]')
    pattern, pred, fn, neg, orr, call = q.where
    assert [names(free_vars(c)) for c in q.where] == [
        ["?a", "?b"], ["?b"], ["?b", "?c"], ["?a", "?c"], ["?a", "?d"], ["?a", "?e"]]
    assert [names(bound_vars(c)) for c in q.where] == [
        ["?a", "?b"], [], ["?c"], [], ["?a", "?d"], ["?a", "?e"]]
    assert [names(required_vars(c)) for c in q.where] == [
        [], ["?b"], ["?b"], ["?a", "?c"], [], []]
    assert names(required_vars(q.where)) == []
    assert names(bound_vars(q.where)) == ["?a", "?b", "?c", "?d", "?e"]


def test_nodes_are_hashable_and_print_as_edn():
    q = parse_query(TUTORIAL[24])
    assert len({q, parse_query(TUTORIAL[24])}) == 1
    assert repr(q) == str(q) == ("[:find ?name :where [?p :person/name ?name] "
                                 "(or-join [?p] [?m :movie/cast ?p] [?m :movie/director ?p])]")


_vars = st.sampled_from(["?a", "?b", "?c"]).map(Symbol)
_consts = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y"]),
                    st.sampled_from([":k/a", ":k/b"]).map(Keyword))
_terms = st.one_of(_vars, _consts, st.just(Symbol("_")))
_patterns = st.lists(_terms, min_size=2, max_size=4).map(
    lambda ts: [Symbol("?a")] + ts[1:])
_preds = st.tuples(st.sampled_from(["<", ">", "not="]), _vars, _consts).map(
    lambda t: [EdnList([Symbol(t[0]), t[1], t[2]])])


@given(st.lists(_patterns, min_size=1, max_size=4), st.lists(_preds, max_size=2))
def test_printed_queries_parse_back_to_the_same_tree(patterns, preds):
    data = [Keyword(":find"), Symbol("?a"), Keyword(":where")] + patterns + preds
    try:
        q = parse_query(data)
    except UnboundVariableError as e:  # a predicate over a variable no pattern binds
        assert set(e.variables) <= {"?b", "?c"}
        return
    assert parse_query(str(q)) == q
    assert bound_vars(q.where) >= {Var("?a")}
