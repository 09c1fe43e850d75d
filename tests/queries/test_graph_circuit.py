"""Graph views composed with further operators in one circuit (``Graph.circuit``): the
integrated outputs equal the same operators applied to brute-force answers after every tick,
and a failing operator undoes the whole tick."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queries.graph import Graph
from tests.reference_joins import simple_undirected, triangles
from wcoj.errors import QueryError

edges = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=12)
ticks = st.lists(st.tuples(edges, edges), min_size=1, max_size=6)


def arr(pairs):
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


@settings(deadline=None, max_examples=40)
@given(edges, ticks)
def test_integrated_outputs_equal_the_operators_over_brute_force(first, stream):
    g = Graph()
    g.load_edges(arr(first))
    g.view("triangle")
    c = g.circuit()
    tri = c.view("triangle")
    with_0 = tri.filter(lambda k: (k == 0).any(axis=1))
    c.sink(with_0.integrate(), "with 0")
    c.sink(tri.map(lambda k: k[:, :1], arity=1).integrate().distinct(), "first nodes")
    current = simple_undirected(first)
    for ins, dels in stream:
        tick = g.apply(inserts=arr(ins), deletes=arr(dels))
        current = (current | simple_undirected(ins)) - simple_undirected(dels)
        expect = triangles(current)
        assert tick.outputs["with 0"] is c.outputs["with 0"]
        assert c.outputs["with 0"].to_dict() == {t: 1 for t in expect if 0 in t}
        assert c.outputs["first nodes"].to_dict() == {(t[0],): 1 for t in expect}


def test_a_failing_operator_undoes_the_tick():
    g = Graph()
    g.load_edges(arr([(1, 2), (2, 3)]))
    tri = g.view("triangle")
    c = g.circuit()

    def picky(k):
        if (k == 9).any():
            raise ValueError("no node 9 here")
        return np.ones(len(k), dtype=bool)
    c.sink(c.view("triangle").filter(picky).integrate(), "all")
    g.apply(inserts=arr([(1, 3)]))
    before = (g.edges().tolist(), tri.count, c.outputs["all"].to_dict(), tri.last_change.to_dict())
    with pytest.raises(ValueError, match="node 9"):
        g.apply(inserts=arr([(9, 1), (9, 2)]), deletes=arr([(2, 3)]))
    assert (g.edges().tolist(), tri.count, c.outputs["all"].to_dict(),
            tri.last_change.to_dict()) == before
    g.check_views()
    g.apply(deletes=arr([(1, 3)]))
    assert tri.count == 0 and c.outputs["all"].to_dict() == {}


def test_views_must_exist_and_streams_are_refused():
    g = Graph()
    c = g.circuit()
    with pytest.raises(QueryError, match="no view 'triangle'"):
        c.view("triangle")
    g.view("triangle")
    c.sink(c.view("triangle"), "t")
    with pytest.raises(QueryError, match="apply for each tick"):
        g.apply_stream(np.array([[0, 1, 1, 2]]))
