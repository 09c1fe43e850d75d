"""Views equal q after every transaction, for random streams of adds, retracts and
cardinality-one replacements (hypothesis), and equal a plain-Python oracle of the snapshot;
each transaction by the route hypothesis draws (a step, a refresh, the view's choice; a
recursive rule's epoch as one kernel call or through the interpreter, ``wcoj.epoch``)."""

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from queries.database import Database
from wcoj import config
from tests.queries.datalog_oracle import reachable
from tests.queries.test_view_refresh import route

N = 5
nodes = st.integers(0, N - 1)
graphs = st.frozensets(st.tuples(nodes, nodes), max_size=10)
colors = st.dictionaries(nodes, st.integers(0, 2), max_size=N)
snapshots = st.lists(st.tuples(graphs, colors), min_size=1, max_size=5)

SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :edge :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :color :db/valueType :db.type/long}]'''
RULES = '[[(reach ?a ?b) [?a :edge ?b]] [(reach ?a ?b) (reach ?a ?x) [?x :edge ?b]]]'
# non-linear (the recursive relation joined with itself), and mutual (paths of even and
# odd length): both compile to one child whose epochs the kernel runs
TWICE = '[[(tc ?a ?b) [?a :edge ?b]] [(tc ?a ?b) (tc ?a ?x) (tc ?x ?b)]]'
PARITY = ('[[(odd ?a ?b) [?a :edge ?b]] [(odd ?a ?b) (even ?a ?x) [?x :edge ?b]]'
          ' [(even ?a ?b) (odd ?a ?x) [?x :edge ?b]]]')

QUERIES = {
    "triangle": ('[:find ?a ?b ?c :where [?a :edge ?b] [?b :edge ?c] [?c :edge ?a]]', ()),
    "colored": ('[:find ?a ?c :where [?a :color ?c] [(> ?c 0)]]', ()),
    "one-way": ('[:find ?a ?b :where [?a :edge ?b] (not [?b :edge ?a])]', ()),
    "either": ('[:find ?a :where [?a :name _] (or [?a :color 1] [?a :edge ?a])]', ()),
    "reach": ('[:find ?a ?b :in $ % :where (reach ?a ?b)]', (RULES,)),
    "twice": ('[:find ?a ?b :in $ % :where (tc ?a ?b)]', (TWICE,)),
    "even": ('[:find ?a ?b :in $ % :where (even ?a ?b)]', (PARITY,)),
    "per-color": ('[:find ?c (count ?a) :where [?a :color ?c]]', ()),
}


def oracle(name, edges, color):
    if name == "triangle":
        return {(a, b, c) for a, b in edges for b2, c in edges if b2 == b and (c, a) in edges}
    if name == "colored":
        return {(a, c) for a, c in color.items() if c > 0}
    if name == "one-way":
        return {(a, b) for a, b in edges if (b, a) not in edges}
    if name == "either":
        return {(a,) for a in range(N) if color.get(a) == 1 or (a, a) in edges}
    if name in ("reach", "twice"):
        return reachable(set(edges))
    if name == "even":  # walks of even length >= 2, by squaring the edge relation's steps
        odd, even = set(edges), set()
        while True:
            new_even = {(a, c) for a, b in odd for b2, c in edges if b2 == b}
            new_odd = set(edges) | {(a, c) for a, b in even for b2, c in edges if b2 == b}
            if new_even == even and new_odd == odd:
                return even
            odd, even = new_odd, new_even
    if name == "per-color":
        out = {}
        for c in color.values():
            out[c] = out.get(c, 0) + 1
        return set(out.items())


def setup():
    db = Database()
    db.transact(SCHEMA)
    r = db.transact([{":db/id": f"n{i}", ":name": f"n{i}"} for i in range(N)])
    eid = {i: r.tempids[f"n{i}"] for i in range(N)}
    views = {name: db.view(q, *inputs, name=name) for name, (q, inputs) in QUERIES.items()}
    return db, eid, views


def to_nodes(name, rows, node):
    if name in ("colored", "per-color"):
        return {(node[r[0]], r[1]) if name == "colored" else r for r in rows}
    return {tuple(node[x] for x in r) for r in rows}


@contextlib.contextmanager
def epoch_route(kernel: bool):
    """Run a recursive view's epochs as one kernel call (the default for small changes)
    or, with ``config.EPOCH_KERNEL_MAX_ROWS`` 0, through the interpreter."""
    saved = config.EPOCH_KERNEL_MAX_ROWS
    config.EPOCH_KERNEL_MAX_ROWS = saved if kernel else 0
    try:
        yield
    finally:
        config.EPOCH_KERNEL_MAX_ROWS = saved


@settings(deadline=None)
@given(snapshots, st.lists(st.tuples(st.sampled_from(["never", "always", "auto"]), st.sampled_from([None, True, False]),
                                     st.booleans()), min_size=5, max_size=5))
def test_views_equal_q_and_oracle_after_every_transaction(stream, routes):
    db, eid, views = setup()
    node = {e: i for i, e in eid.items()}
    edges, color = frozenset(), {}
    for (new_edges, new_color), (how, merged, kernel) in zip(stream, routes):
        tx = [[":db/add", eid[a], ":edge", eid[b]] for a, b in new_edges - edges]
        tx += [[":db/retract", eid[a], ":edge", eid[b]] for a, b in edges - new_edges]
        tx += [[":db/add", eid[a], ":color", c] for a, c in new_color.items()
               if color.get(a) != c]
        tx += [[":db/retract", eid[a], ":color", c] for a, c in color.items()
               if a not in new_color]
        before = {n: v.result() for n, v in views.items()}
        with route(how, merged), epoch_route(kernel):
            report = db.transact(tx)
        edges, color = new_edges, dict(new_color)
        for name, v in views.items():
            got = v.result()
            assert got == db.q(QUERIES[name][0], *QUERIES[name][1]), name
            assert to_nodes(name, got, node) == oracle(name, edges, color), name
            ch = report.views[name]
            assert set(ch.added) == got - before[name], name
            assert set(ch.removed) == before[name] - got, name
        db.store.datoms.contents().check()


def test_conjunctive_views_are_one_core_join():
    db, _, views = setup()
    for name in ("triangle", "colored"):
        notes = views[name].circuit.notes
        assert len(notes) == 1 and notes[0].startswith("core join"), (name, notes)
    assert any("child circuit" in n for n in views["reach"].circuit.notes)
    assert views["per-color"].circuit.aggregated
