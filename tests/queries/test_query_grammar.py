"""Random queries from a small grammar of Datomic's, over random small databases: ``q``
equals the oracle evaluator (``datalog_evaluator``), and a view equals ``q`` after a
transaction. The grammar mixes patterns on refs (many and one), longs and unique strings,
blanks, constants, comparisons, function bindings, ``not``/``not-join``, ``or``, a
recursive rule, ``get-else``/``missing?`` and aggregates; the query and the data come
from one ``random.Random`` that Hypothesis drives."""

import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from queries.database import Database
from tests.queries.datalog_evaluator import oracle_q

SCHEMA = ('[{:db/ident :p/name :db/valueType :db.type/string :db/unique :db.unique/identity}'
          ' {:db/ident :p/age :db/valueType :db.type/long}'
          ' {:db/ident :p/f :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}'
          ' {:db/ident :p/g :db/valueType :db.type/ref}]')
RULES = '[[(reach ?a ?b) [?a :p/f ?b]] [(reach ?a ?b) [?a :p/f ?c] (reach ?c ?b)]]'
# the same rule, its body's own variables named as the query's inputs (?x, ?n): a rule
# body is a scope of its own (an input ?x was once substituted into it)
RULES_X = ('[[(reach ?a ?b) [?a :p/f ?b]] [(reach ?a ?b) [?a :p/f ?x] [?x :p/name ?n] (reach ?x ?b)]'
           ' [(fname ?a ?b) [?a :p/f ?x] [?x :p/name ?b]]]')
ENTS = ["?a", "?b", "?c"]


def _database(rng: random.Random) -> Database:
    db = Database()
    db.transact(SCHEMA)
    n = rng.randint(2, 7)
    people = []
    for i in range(n):
        m = {":db/id": f"e{i}", ":p/name": f"N{i}"}
        if rng.random() < 0.7:
            m[":p/age"] = rng.randint(0, 6)
        follows = [f"e{rng.randrange(n)}" for _ in range(rng.randint(0, 3))]
        if follows:
            m[":p/f"] = follows
        if rng.random() < 0.4:
            m[":p/g"] = f"e{rng.randrange(n)}"
        people.append(m)
    db.transact(people)
    return db


def _pattern(rng: random.Random) -> str:
    e, r = rng.choice(ENTS), rng.random()
    if r < 0.35:
        return f"[{e} :p/f {rng.choice(ENTS + ['_'])}]"
    if r < 0.55:
        return f"[{e} :p/g {rng.choice(ENTS + ['_'])}]"
    e = rng.choice([e, "_"])  # a blank entity: with an input value, an existence check
    if r < 0.75:
        return f"[{e} :p/age {rng.choice(['?x', '?y', str(rng.randint(0, 6)), '_'])}]"
    name = rng.choice(["?n", '"N1"', '"N2"', "_"])
    return f"[{e} :p/name {name}]"


def _query(rng: random.Random) -> tuple[str, tuple]:
    clauses = [_pattern(rng) for _ in range(rng.randint(1, 3))]
    bound = set(re.findall(r"\?[a-z]+", " ".join(clauses)))
    if not bound:  # blanks and constants only: give the query something to find
        clauses.append("[?a :p/name ?n]")
        bound = {"?a", "?n"}
    nums = sorted(v for v in ("?x", "?y") if v in bound)
    ents = sorted(v for v in ENTS if v in bound)
    rules, r = False, rng.random()
    if r < 0.15 and nums:
        op = rng.choice(["<", ">", "<=", "!=", "="])
        clauses.append(f"[({op} {rng.choice(nums)} {rng.choice(nums + [str(rng.randint(0, 6))])})]")
    elif r < 0.25 and len(ents) >= 2:
        clauses.append(f"[(!= {ents[0]} {ents[1]})]")
    elif r < 0.35 and nums:
        clauses.append(f"[(+ {rng.choice(nums)} 1) ?z]")
        bound.add("?z")
    elif r < 0.5 and ents:
        e = rng.choice(ents)
        clauses.append(rng.choice([f"(not [{e} :p/f _])", f"(not [{e} :p/age {rng.randint(0, 6)}])",
                                   f"(not [_ :p/f {e}])",
                                   f"(not-join [{e}] [{e} :p/g ?q] [?q :p/age ?w] [(> ?w 2)])"]))
    elif r < 0.62 and ents:
        e = rng.choice(ents)
        clauses.append(f'(or [{e} :p/age 1] [{e} :p/age 2] [{e} :p/name "N0"])')
    elif r < 0.75 and ents:
        rules = True
        if rng.random() < 0.5:
            b = rng.choice(ENTS + ["?d"])
            clauses.append(f"(reach {rng.choice(ents)} {b})")
            bound.add(b)
        else:  # a rule that is not recursive, whose body says ?x (a scalar input's name)
            rules = "x"
            e = rng.choice(ents)
            clauses.append(f"(fname {e} ?n)")
            bound.add("?n")
            if rng.random() < 0.5:
                clauses.append(f"[{e} :p/age ?x]")
                bound.add("?x")
    elif r < 0.82 and ents:
        clauses.append(f"[(get-else $ {rng.choice(ents)} :p/age -1) ?k]")
        bound.add("?k")
    elif r < 0.88 and ents:
        clauses.append(f"[(missing? $ {rng.choice(ents)} :p/g)]")
    names = sorted(bound)
    values = [v for v in ("?x", "?y", "?z", "?k") if v in bound]
    k = rng.random()
    if k < 0.15:
        find = f"(count {rng.choice(names)})"
    elif k < 0.3 and values:
        find = f"{rng.choice(names)} ({rng.choice(['sum', 'max', 'min', 'count-distinct'])} {rng.choice(values)})"
    else:
        find = " ".join(rng.sample(names, rng.randint(1, len(names))))
    ins, inputs = ["$"] + ["%"] * bool(rules), [RULES_X if rules == "x" else rng.choice([RULES, RULES_X])] * bool(rules)
    r = rng.random()
    if rules == "x" and "?x" in bound and r < 0.6:
        ins.append("?x")
        inputs.append(rng.randint(0, 6))
    elif r < 0.15 and "?n" in bound:
        ins.append("?n")
        inputs.append(rng.choice(["N1", "N2", "Q"]))
    elif r < 0.3 and "?n" in bound:
        ins.append("[?n ...]")
        inputs.append(rng.sample(["N0", "N1", "N2", "Q"], rng.randint(0, 3)))
    elif r < 0.4 and "?x" in bound:
        ins.append("?x")
        inputs.append(rng.randint(0, 6))
    elif r < 0.5 and {"?n", "?x"} <= bound:
        ins.append("[[?n ?x]]")
        inputs.append([[f"N{rng.randint(0, 3)}", rng.randint(0, 6)] for _ in range(rng.randint(0, 3))])
    elif r < 0.58 and {"?n", "?x"} <= bound:
        ins.append("[?n ?x]")
        inputs.append([f"N{rng.randint(0, 3)}", rng.randint(0, 6)])
    elif r < 0.66:  # a predicate on an input, alone or beside a pattern variable
        ins.append("?lim")
        inputs.append(rng.randint(0, 6))
        clauses.append(f"[(< {rng.choice(nums or ['2'])} ?lim)]")
    where = " ".join(clauses)
    return f"[:find {find} {':in ' + ' '.join(ins) if len(ins) > 1 else ''} :where {where}]", tuple(inputs)


@settings(max_examples=120)
@given(st.randoms(use_true_random=False))
def test_random_queries_agree_with_the_oracle_and_views_follow_a_transaction(rng):
    db = _database(rng)
    query, inputs = _query(rng)
    assert db.q(query, *inputs) == oracle_q(db, query, *inputs), query
    view = db.view(query, *inputs)
    db.transact([{":p/name": f"M{j}", ":p/age": rng.randint(0, 6), ":p/f": [[":p/name", f"N{rng.randint(0, 1)}"]]}
                 for j in range(rng.randint(1, 3))])
    assert view.result() == db.q(query, *inputs) == oracle_q(db, query, *inputs), query
