"""Predicates and functions on whole columns of longs (``queries.vectorised``: a row map's,
and the join's own filters) give the rows, and the errors, that the row route gives (the same query with the column forms
turned off), for random longs: small, negative, zero, and past the longs kept inline."""

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from queries import vectorised
from queries.database import Database
from wcoj.errors import QueryError

SCHEMA = '''[{:db/ident :a :db/valueType :db.type/long}
             {:db/ident :b :db/valueType :db.type/long}
             {:db/ident :c :db/valueType :db.type/long}]'''
longs = st.one_of(st.sampled_from([-3, -1, 0, 1, 2, 7, 2 ** 55 - 1, -2 ** 55, 2 ** 56]),
                  st.integers(-2 ** 56, 2 ** 56))  # often equal, zero, or at the inline range's ends
rows = st.lists(st.tuples(longs, longs, longs), min_size=1, max_size=12)

PREDICATES = ["<", ">", "<=", ">=", "=", "==", "not=", "!="]
FUNCTIONS = ["+", "-", "*", "quot", "rem", "mod", "inc", "dec"]


@contextlib.contextmanager
def row_route():
    saved = vectorised.predicate, vectorised.function
    vectorised.predicate = vectorised.function = lambda *a: None
    try:
        yield
    finally:
        vectorised.predicate, vectorised.function = saved


def answer(db, query):
    try:
        return db.q(query)
    except QueryError as e:
        return ("error", type(e))


def queries(op_f, k):
    args = {1: "?x", 2: "?x ?y", 3: "?x ?y ?z"}[k]
    head = "[:find ?e ?r :where [?e :a ?x] [?e :b ?y] [?e :c ?z]"
    out = [f"{head} [({op_f} {args}) ?r]]",
           f"[:find ?e :where [?e :a ?x] [?e :b ?y] [?e :c ?z] [({op_f} {args}) ?z]]"]  # bound already
    if k > 1:
        out.append(f"{head} [({op_f} ?x 3) ?r] [(< ?r ?y)]]")
    # a predicate over a function's value runs after it, as a row map (one over pattern
    # variables alone is a filter inside the join); ?w is ?x, so ties are common
    for p in PREDICATES:
        out.append(f"[:find ?e :where [?e :a ?x] [?e :b ?y] [?e :c ?z] [(+ ?x 0) ?w] [({p} ?w ?y)]]")
        out.append(f"[:find ?e :where [?e :a ?x] [?e :b ?y] [?e :c ?z] [(+ ?x 0) ?w] [({p} ?w ?y ?z)]]")
        # and the join's own filters, over pattern variables and constants
        out.append(f"[:find ?e :where [?e :a ?x] [?e :b ?y] [({p} ?x ?y)]]")
        out.append(f"[:find ?e :where [?e :a ?x] [?e :b ?y] [?e :c ?z] [({p} 0 ?x ?z)]]")
        out.append(f"[:find ?e :where [?e :a ?x] [({p} ?e ?x)]]")  # an entity: the row route
    return out


@settings(deadline=None, max_examples=60)
@given(rows, st.sampled_from(FUNCTIONS), st.integers(1, 3))
def test_column_forms_equal_the_row_route(data, op_f, k):
    if op_f in ("quot", "rem", "mod"):
        k = 2
    if op_f in ("inc", "dec"):
        k = 1
    dbs = []
    for _ in range(2):  # one per route: each database caches its compiled queries
        db = Database()
        db.transact(SCHEMA)
        db.transact([{":a": a, ":b": b, ":c": c} for a, b, c in data])
        dbs.append(db)
    for query in queries(op_f, k):
        got = answer(dbs[0], query)
        with row_route():
            want = answer(dbs[1], query)
        assert got == want, query


def test_the_column_forms_are_taken():
    db = Database()
    db.transact(SCHEMA)
    db.transact([{":a": i, ":b": 2 * i, ":c": 0} for i in range(50)])
    calls = []
    real = vectorised.function, vectorised.predicate

    def spy(make):
        def made(*a):
            f = make(*a)
            return None if f is None else (lambda keys: calls.append((a[0], len(keys))) or f(keys))
        return made
    vectorised.function, vectorised.predicate = map(spy, real)
    try:
        assert db.q("[:find (count ?e) . :where [?e :a ?x] [?e :b ?y] [(+ ?x ?y) ?s] [(> ?s 60)]]") == 29
    finally:
        vectorised.function, vectorised.predicate = real
    assert calls == [("+", 50), (">", 50)]
    calls.clear()
    vectorised.predicate = spy(real[1])
    try:
        assert db.q("[:find (count ?e) . :where [?e :a ?x] [?e :b ?y] [(< ?x 10)]]") == 10
    finally:
        vectorised.predicate = real[1]
    assert calls and all(name == "<" for name, _ in calls)  # inside the join
