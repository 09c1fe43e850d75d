"""MultiwayJoin in a circuit: integrating its output equals the join of the integrated inputs."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexes import Store
from tests import reference_joins as ref
from wcoj.circuit import Circuit
from wcoj.errors import CircuitError, WeightOverflowError
from wcoj.multiway import MultiwayJoin
from wcoj.zset import ZSet

nodes = st.integers(0, 5)
graphs = st.frozensets(st.tuples(nodes, nodes), max_size=12)
labels = st.frozensets(st.tuples(nodes, st.integers(0, 2)), max_size=6)


def zdelta(before, after, arity):
    d = {e: 1 for e in after - before}
    d.update({e: -1 for e in before - after})
    return ZSet.from_dict(d, arity=arity)


def triangle_circuit():
    c = Circuit()
    e = c.source(arity=2, name="edges")
    lab = c.source(arity=2, name="labels")
    # edges labelled 0 at their source only, composed with a filter before the join
    op = MultiwayJoin([2, 2], [(0, ("a", "b")), (0, ("b", "c")), (0, ("c", "a")), (1, ("a", 0))],
                      ["a", "b", "c"], store=Store())
    j = c.add(op, e.filter(lambda k: k[:, 0] != k[:, 1]), lab)
    c.sink(j, name="delta")
    c.sink(j.integrate(), name="total")
    return c, op


def oracle(edges, labs):
    E = {e: 1 for e in edges if e[0] != e[1]}
    L = {l: 1 for l in labs}
    return ref.join([(E, ("a", "b")), (E, ("b", "c")), (E, ("c", "a")), (L, ("a", 0))],
                           ["a", "b", "c"])


@given(st.lists(st.tuples(graphs, labels), min_size=1, max_size=5))
def test_integrated_output_equals_the_join_of_integrated_inputs(snapshots):
    c, op = triangle_circuit()
    be, bl = frozenset(), frozenset()
    for edges, labs in snapshots:
        out = c.step({"edges": zdelta(be, edges, 2), "labels": zdelta(bl, labs, 2)})
        out["delta"].check()
        assert out["total"].to_dict() == oracle(edges, labs)
        assert op.result() == out["total"]
        be, bl = edges, labs


def test_a_failed_step_leaves_the_join_as_it_was():
    c, op = triangle_circuit()
    c.step({"edges": ZSet.from_rows([(1, 2), (2, 3)]), "labels": ZSet.from_rows([(1, 0)])})
    big = ZSet.from_dict({(3, 1): 2**62}, arity=2)
    with pytest.raises(WeightOverflowError):
        c.step({"edges": big, "labels": ZSet.from_dict({(1, 0): 2**62}, arity=2)})
    assert op.result().to_dict() == {}
    out = c.step({"edges": ZSet.from_rows([(3, 1)]), "labels": ZSet.empty(2)})
    assert out["total"].to_dict() == {(1, 2, 3): 1}


def test_wiring_errors():
    c = Circuit()
    e = c.source(arity=3, name="e")
    with pytest.raises(CircuitError):
        c.add(MultiwayJoin([2, 2], [(0, ("a", "b")), (1, ("b", "c"))], ["a"], store=Store()), e)
    with pytest.raises(Exception, match="arity"):
        c.add(MultiwayJoin([2], [(0, ("a", "b"))], ["a"], store=Store()), e)
    with pytest.raises(CircuitError, match="input 3"):
        MultiwayJoin([2], [(3, ("a", "b"))], ["a"], store=Store())
