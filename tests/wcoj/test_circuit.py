"""The circuit runtime: evaluation order, ids, feedback, children and imports, fixed points,
wiring errors, closing, and atomic steps (an overflowing tick changes no state)."""

import networkx as nx
import reference as ref
import pytest
from hypothesis import given

from strategies import graph_snapshots, zdelta
from wcoj.circuit import Circuit, Schema
from wcoj.errors import ArityMismatchError, CircuitError, WeightOverflowError
from wcoj.operators import Distinct, IndexWith, JoinStream, Plus, distinct_nested, incremental_join, integrate_trace
from wcoj.recursion import reachability_circuit
from wcoj.zset import ZSet

BIG = 2**62


def z(rows, w=None):
    return ZSet.from_rows(rows, w)


# ---------------------------------------------------------------- evaluation and ids
def test_feedback_loop_counts_ticks():
    # x[t] = in[t] + z^-1(x)[t]: an integrator built from a delay node.
    c = Circuit()
    s = c.source(arity=1, name="s")
    fb = c.delay(1)
    x = s.plus(fb)
    fb.connect(x)
    c.sink(x, "x")
    assert c.step({"s": z([(1,)])})["x"].to_dict() == {(1,): 1}
    assert c.step({"s": z([(1,)])})["x"].to_dict() == {(1,): 2}
    assert c.step()["x"].to_dict() == {(1,): 2}


def test_local_and_global_ids():
    c = Circuit()
    s = c.source(arity=2)
    child = c.child()
    e = child.import_(s)
    m = e.map(lambda k: k[:, ::-1])
    out = child.export(m)
    assert s.global_id == (0,) and child.path() == (1,)
    assert e.global_id == (1, 0) and m.global_id == (1, 1)
    assert out.global_id == (2,)


def test_import_delta0_and_const():
    c = Circuit()
    s = c.source(arity=1, name="s")
    child = c.child(fixedpoint="unchanged", max_iterations=5)
    d0 = child.import_(s, mode="delta0")
    k = child.import_(s, mode="const")
    # sum over iterations: delta0 contributes once, const at every iteration (3 here:
    # iteration 0, then the loop stops once the delay's value repeats)
    fb = child.delay(1)
    fb.connect(k)
    c.sink(child.export(d0), "d0")
    c.sink(child.export(k, mode="last"), "k")
    out = c.step({"s": z([(4,)])})
    assert out["d0"].to_dict() == {(4,): 1} and out["k"].to_dict() == {(4,): 1}


def test_child_with_const_imports_computes_a_plain_fixed_point():
    # Non-incremental transitive closure: R_i = distinct(E + R_{i-1} ⋈ E), E imported as a
    # constant; the fixed point is reached when the delay's value stops changing.
    edges = [(1, 2), (2, 3), (3, 1), (4, 5)]
    c = Circuit()
    s = c.source(arity=2, name="e")
    child = c.child(fixedpoint="unchanged")
    e = child.import_(s, mode="const")
    fb = child.delay(2)
    step = child.add(JoinStream(lambda k: k[:, [1, 4]], 2), fb.index_with([1]), e.index_with([0]))
    r = child.add(Distinct(), e.plus(step))
    fb.connect(r)
    c.sink(child.export(r, mode="last"), "tc")
    assert c.step({"e": z(edges)})["tc"].to_dict() == ref.closure(edges)


def test_fixed_point_cap_raises_with_the_count():
    c = Circuit()
    s = c.source(arity=1, name="s")
    child = c.child(max_iterations=25)
    fb = child.delay(1)
    nxt = child.import_(s).plus(fb.map(lambda k: k + 1))  # n, n+1, n+2, ... never empty
    fb.connect(nxt)
    c.sink(child.export(nxt), "o")
    with pytest.raises(CircuitError, match="within 25 iterations"):
        c.step({"s": z([(0,)])})


# ---------------------------------------------------------------- wiring errors
def test_cycle_without_delay_is_refused_and_names_the_nodes():
    c = Circuit()
    s = c.source(arity=1, name="s")
    fwd = c.forward(Schema("zset", 1))
    x = s.plus(fwd)
    y = x.map(lambda k: k, arity=1)
    with pytest.raises(CircuitError, match=r"cycle without a delay: forward 1 -> plus 2 -> map 3 -> forward 1"):
        fwd.connect(y)


def test_cycle_through_a_child_import_is_refused():
    c = Circuit()
    s = c.source(arity=1)
    child = c.child()
    out = child.export(child.import_(s))
    later = c.add(Plus(), s, out)
    with pytest.raises(CircuitError, match="cycle without a delay"):
        child.import_(later)


def test_wrong_number_and_kind_of_inputs():
    c = Circuit()
    a = c.source(arity=2)
    b = c.source(arity=3)
    with pytest.raises(CircuitError, match=r"join_stream expects 2 inputs \(indexed, indexed\), got 1"):
        c.add(JoinStream(), a.index_with([0]))
    with pytest.raises(CircuitError, match="join_stream expects .* got 2: zset"):
        c.add(JoinStream(), a, a)
    with pytest.raises(CircuitError, match="plus needs inputs of one type"):
        c.add(Plus(), a, b)
    with pytest.raises(CircuitError, match="column 5 does not exist"):
        c.add(IndexWith([5]), a)
    with pytest.raises(CircuitError, match="key widths differ"):
        c.add(JoinStream(), a.index_with([0]), a.index_with([0, 1]))
    tr, _ = integrate_trace(a)
    with pytest.raises(CircuitError, match="distinct expects 1 input \\(zset\\)"):
        c.add(Distinct(), tr)


def test_streams_of_another_circuit_and_unconnected_delays():
    c1, c2 = Circuit(), Circuit()
    a = c1.source(arity=1)
    with pytest.raises(CircuitError, match="belongs to another circuit"):
        c2.add(Distinct(), a)
    child = c1.child()
    with pytest.raises(CircuitError, match="child.import_"):
        child.add(Distinct(), a)
    fb = c2.delay(1)
    with pytest.raises(CircuitError, match="never connected"):
        c2.step()
    with pytest.raises(CircuitError, match="carries zset\\(arity 1\\), cannot connect zset\\(arity 2\\)"):
        fb.connect(c2.source(arity=2))


def test_child_and_root_restrictions():
    c = Circuit()
    child = c.child()
    with pytest.raises(CircuitError, match="no sources"):
        child.source(arity=1)
    with pytest.raises(CircuitError, match="no sinks"):
        child.sink(child.delay(1))
    with pytest.raises(CircuitError, match="this is the root"):
        c.import_(c.source(arity=1))
    with pytest.raises(CircuitError, match="step the root"):
        child.step()


def test_inputs_are_checked():
    c = Circuit()
    c.sink(c.source(arity=2, name="e"))
    with pytest.raises(CircuitError, match="no source named 'x'"):
        c.step({"x": z([(1, 2)])})
    with pytest.raises(ArityMismatchError):
        c.step({"e": z([(1,)])})


def test_closed_circuit_refuses_steps_and_nodes():
    c = Circuit()
    s = c.source(arity=1, name="s")
    c.sink(s)
    c.step({"s": z([(1,)])})
    with pytest.raises(CircuitError, match="already run"):
        c.source(arity=1, name="t")
    c.close()
    with pytest.raises(CircuitError, match="closed"):
        c.step({"s": z([(1,)])})


# ---------------------------------------------------------------- atomicity
def _pipeline():
    c = Circuit()
    s = c.source(arity=1, name="s")
    c.sink(s.integrate(), "I")
    c.sink(s.z1(), "z1")
    c.sink(distinct_nested(s), "d")
    c.sink(s.index_with([0]).aggregate("sum", 0), "agg")
    t = c.source(arity=1, name="t")
    c.sink(incremental_join(s.index_with([0]), t.index_with([0])), "j")
    return c


def _same_state(before, after):
    assert before.keys() == after.keys()
    for k in before:
        assert before[k] is after[k] or before[k] == after[k], k


def test_overflowing_tick_leaves_all_state_as_it_was():
    c = _pipeline()
    c.step({"s": z([(1,), (2,)], [BIG, 1]), "t": z([(2,), (3,)])})
    before = c.state_snapshot()
    with pytest.raises(WeightOverflowError):
        c.step({"s": z([(1,)], [BIG])})  # integrate: 2^62 + 2^62 overflows
    _same_state(before, c.state_snapshot())
    assert c.time == 1
    got = c.step({"s": z([(2,), (3,)]), "t": z([(1,)])})
    fresh = _pipeline()
    fresh.step({"s": z([(1,), (2,)], [BIG, 1]), "t": z([(2,), (3,)])})
    want = fresh.step({"s": z([(2,), (3,)]), "t": z([(1,)])})
    assert got.keys() == want.keys()
    for k in got:
        got[k].check()
        assert got[k] == want[k], k


def test_overflow_inside_a_child_iteration_rolls_back_the_whole_epoch():
    c = reachability_circuit()
    c.step({"edges": z([(1, 2), (7, 8)]), "roots": z([(1,)])})
    before = c.state_snapshot()
    # Iterations 0 and 1 succeed (the latter derives (1, 3) with weight 2^62 through the
    # edge (1, 3)); iteration 2 derives (1, 3) again through (2, 3), and its weight
    # 2^62 + 2^62 overflows in distinct_trace's sums.
    bad = ZSet.from_dict({(2, 3): BIG, (1, 3): BIG, (2, 4): 1})
    with pytest.raises(WeightOverflowError):
        c.step({"edges": bad, "roots": z([(1,), (3,)], [BIG, 1])})
    _same_state(before, c.state_snapshot())
    good = {"edges": z([(2, 3), (8, 1)]), "roots": z([(7,)])}
    fresh = reachability_circuit()
    fresh.step({"edges": z([(1, 2), (7, 8)]), "roots": z([(1,)])})
    assert c.step(good)["reach"] == fresh.step(good)["reach"]


@given(graph_snapshots)
def test_a_failed_tick_in_the_middle_changes_nothing(snaps):
    c, fresh = reachability_circuit(), reachability_circuit()
    before = frozenset()
    for n, after in enumerate(snaps):
        d = zdelta(before, after, 2)
        roots = z([(0,)]) if n == 0 else ZSet.empty(1)
        with pytest.raises(WeightOverflowError):
            c.step({"edges": d + ZSet.from_dict({(0, 9): BIG, (9, 0): BIG}), "roots": roots + z([(0,)], [BIG])})
        got = c.step({"edges": d, "roots": roots})["reach"]
        want = fresh.step({"edges": d, "roots": roots})["reach"]
        got.check()
        assert got == want
        before = after


def test_commit_and_rollback_hooks_see_the_staged_state():
    from wcoj.circuit import Operator

    class Counting(Operator):
        """Counts rows seen; ``commit``/``rollback`` log what happened to each staged count."""

        name = "counting"
        input_kinds = ("zset",)

        def __init__(self):
            self.log = []

        def output_schema(self, inputs):
            return inputs[0]

        def init_state(self, inputs, n_dims):
            return 0

        def eval(self, values, state, ctx):
            return values[0], state + len(values[0])

        def commit(self, staged):
            self.log.append(("commit", staged))

        def rollback(self, staged):
            self.log.append(("rollback", staged))

    c = Circuit()
    s = c.source(arity=1, name="s")
    op = Counting()
    c.sink(c.add(op, s).integrate(), "I")
    c.step({"s": z([(1,), (2,)], [BIG, 1])})
    with pytest.raises(WeightOverflowError):
        c.step({"s": z([(1,)], [BIG])})
    c.step({"s": z([(3,)])})
    assert op.log == [("commit", 2), ("rollback", 3), ("commit", 3)]


@given(graph_snapshots)
def test_a_step_that_keeps_nothing_answers_as_a_kept_step_and_changes_nothing(snaps):
    """``step(keep=False)`` (``q``'s one tick): the same output as a kept step, against
    networkx's closure, at any tick; the state, time and mutable hooks as before."""
    from wcoj.recursion import transitive_closure_circuit
    c, kept = transitive_closure_circuit(), transitive_closure_circuit()
    before = frozenset()
    for after in snaps:
        d = zdelta(before, after, 2)
        state, t = c.state_snapshot(), c.time
        peek = c.step({"edges": d}, keep=False)["closure"]
        _same_state(state, c.state_snapshot())
        assert c.time == t
        out = c.step({"edges": d})["closure"]
        assert out == peek == kept.step({"edges": d})["closure"]
        now, was = _paths(nx.DiGraph(list(after))), _paths(nx.DiGraph(list(before)))
        assert out.to_dict() == {**{p: 1 for p in now - was}, **{p: -1 for p in was - now}}
        before = after


def _paths(g) -> set:
    """Pairs joined by a non-empty path (a node on a cycle reaches itself)."""
    return {(a, b) for a in g for s in g.successors(a) for b in {s} | nx.descendants(g, s)}


def test_one_index_and_one_trace_per_stream_whoever_reads_them():
    """Two rules joining one relation on one column read one index node and one trace:
    at 40,000 people, reachability indexed and traced its 400,000 edges twice."""
    c = Circuit()
    a = c.source(2)
    ia, ib = a.index_with([0]), a.index_with([0])
    assert ia.node_id == ib.node_id
    assert a.index_with([1]).node_id != ia.node_id
    t1, p1 = integrate_trace(ia, first_epoch_unread=True)
    t2, p2 = integrate_trace(ia)
    assert (t1.node_id, p1.node_id) == (t2.node_id, p2.node_id)
    assert not c.nodes[t1.node_id].op.first_epoch_unread  # read by one reader: kept for it
    out = incremental_join(ia, ib)
    c.sink(out)
    got = c.step({"in0": ZSet.from_rows([(1, 2), (1, 3)])})["out0"]
    assert got.to_dict() == {(1, 1, 2, 1, 2): 1, (1, 1, 2, 1, 3): 1, (1, 1, 3, 1, 2): 1, (1, 1, 3, 1, 3): 1}
    with pytest.raises(CircuitError, match="already run"):
        a.index_with([0])  # found, but a circuit that ran takes no new reader
