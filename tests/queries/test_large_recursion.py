"""Recursive rules over graphs large enough that the nested join sums its rows in a table
(``kernels.lattice.lattice_join`` past ``dense_at`` rows) instead of writing each one,
and distinct keeps its rows' integral over the first epoch in a table (``Integral``):
the closure must equal a search from each node (``datalog_oracle.reachable``), by ``q``
and by a view kept through retractions, and the table routes must have run."""

import numpy as np
import pytest

import wcoj.operators.join as join_module
import wcoj.operators.traces as traces_module
from queries.database import Database
from tests.queries.datalog_oracle import reachable
from wcoj.kernels.lattice import DENSE

SCHEMA = '[{:db/ident :edge :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]'
RULES = {
    "right": '[[(reach ?a ?b) [?a :edge ?b]] [(reach ?a ?b) [?a :edge ?x] (reach ?x ?b)]]',
    "left": '[[(reach ?a ?b) [?a :edge ?b]] [(reach ?a ?b) (reach ?a ?x) [?x :edge ?b]]]',
    "nonlinear": '[[(reach ?a ?b) [?a :edge ?b]] [(reach ?a ?b) (reach ?a ?x) (reach ?x ?b)]]',
}
QUERY = '[:find ?a ?b :in $ % :where (reach ?a ?b)]'


@pytest.fixture
def statuses(monkeypatch):
    """The statuses ``lattice_join`` returned, and "integral" for each batch distinct
    answered from its integral's table."""
    seen = []
    join, distinct = join_module.lattice_join, traces_module.integral_step

    def join_spy(*args):
        out = join(*args)
        seen.append(int(out[3]))
        return out

    def distinct_spy(*args):
        out = distinct(*args)
        if out[1] == -1:
            seen.append("integral")
        return out

    monkeypatch.setattr(join_module, "lattice_join", join_spy)
    monkeypatch.setattr(traces_module, "integral_step", distinct_spy)
    return seen


@pytest.mark.parametrize("shape", sorted(RULES))
def test_closure_through_the_table_route_is_a_search(shape, statuses):
    rng = np.random.default_rng(7)
    n = 120
    src, dst = rng.integers(0, n, 600), rng.integers(0, n, 600)
    db = Database()
    db.transact(SCHEMA)
    ids = db.transact([{":db/id": f"n{i}", ":edge": f"n{i}"} for i in range(n)]).tempids  # self loops
    eid = np.array([ids[f"n{i}"] for i in range(n)])
    db.load_datoms(eid[src], ":edge", eid[dst])
    edges = {(int(eid[a]), int(eid[b])) for a, b in zip(src, dst)} | {(int(e), int(e)) for e in eid}
    assert db.q(QUERY, RULES[shape]) == reachable(edges)
    assert DENSE in statuses and "integral" in statuses
    view = db.view(QUERY, RULES[shape])
    for a, b in list(edges)[:40:4]:  # retractions, each a transaction the view takes
        db.transact([[":db/retract", a, ":edge", b]])
        edges.discard((a, b))
    assert view.result() == reachable(edges) == db.q(QUERY, RULES[shape])
