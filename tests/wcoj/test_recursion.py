"""Recursion: reachability and transitive closure kept right across ticks that insert and
delete edges, against networkx at every tick; batch versus one change at a time; the
deletion cases that defeat naive counting (cycles that support themselves)."""

import pytest
import reference as ref
from hypothesis import example, given
from hypothesis import strategies as st

from strategies import graph_snapshots, nodes, zdelta
from wcoj import config
from wcoj.circuit import Circuit
from wcoj.recursion import closure, reachability_circuit, transitive_closure_circuit
from wcoj.zset import ZSet


@pytest.fixture(autouse=True, scope="module", params=["kernel", "interpreter"])
def epoch_route(request):
    """Every test twice: a child's epoch as one kernel call (``wcoj.epoch``, the default
    for a kept step's small changes) and through the interpreter."""
    saved = config.EPOCH_KERNEL_MAX_ROWS
    config.EPOCH_KERNEL_MAX_ROWS = saved if request.param == "kernel" else 0
    yield request.param
    config.EPOCH_KERNEL_MAX_ROWS = saved


def _check(out: ZSet, acc: dict) -> dict:
    out.check()
    acc = ref.add(acc, out.to_dict())
    assert set(acc.values()) <= {1}
    return acc


@example(snaps=[frozenset({(0, 1), (1, 2), (2, 1)}), frozenset({(1, 2), (2, 1)})], roots=[0])
@given(graph_snapshots, st.lists(nodes, min_size=1, max_size=3, unique=True))
def test_reachability_equals_networkx_at_every_tick(snaps, roots):
    c = reachability_circuit()
    acc, before = {}, frozenset()
    for n, after in enumerate(snaps):
        inputs = {"edges": zdelta(before, after, 2)}
        if n == 0:
            inputs["roots"] = ZSet.from_rows([(r,) for r in roots], arity=1)
        acc = _check(c.step(inputs)["reach"], acc)
        assert acc == ref.reach(after, roots), n
        before = after


@example(snaps=[frozenset({(0, 1), (1, 0)}), frozenset({(0, 1)})])
@given(graph_snapshots)
def test_transitive_closure_equals_networkx_at_every_tick(snaps):
    c = transitive_closure_circuit()
    acc, before = {}, frozenset()
    for after in snaps:
        acc = _check(c.step({"edges": zdelta(before, after, 2)})["closure"], acc)
        assert acc == ref.closure(after)
        before = after


@given(graph_snapshots)
def test_roots_can_change_too(snaps):
    c = reachability_circuit()
    acc, before, roots_before = {}, frozenset(), frozenset()
    for n, after in enumerate(snaps):
        roots = frozenset({n % 3, 4}) if n % 2 else frozenset({0})
        acc = _check(c.step({"edges": zdelta(before, after, 2),
                             "roots": zdelta({(r,) for r in roots_before}, {(r,) for r in roots}, 1)})["reach"], acc)
        assert acc == ref.reach(after, roots)
        before, roots_before = after, roots


@given(graph_snapshots)
def test_one_batch_equals_one_edge_at_a_time(snaps):
    final = snaps[-1]
    batch = transitive_closure_circuit().step({"edges": ZSet.from_rows(sorted(final), arity=2)})["closure"]
    c = transitive_closure_circuit()
    acc, before = {}, frozenset()
    for after in snaps:
        for row, w in ref.delta(before, after).items():
            acc = _check(c.step({"edges": ZSet.from_dict({row: w})})["closure"], acc)
        before = after
    assert acc == batch.to_dict()


def test_deleting_the_entry_of_a_cycle_retracts_the_whole_cycle():
    # 0 -> 1 -> 2 -> 1: after deleting 0 -> 1, nodes 1 and 2 still derive each other, so a
    # derivation count alone would keep them; the nested distinct must retract them.
    c = reachability_circuit()
    out = c.step({"edges": ZSet.from_rows([(0, 1), (1, 2), (2, 1)]), "roots": ZSet.from_rows([(0,)])})
    assert out["reach"].to_dict() == {(0, 0): 1, (0, 1): 1, (0, 2): 1}
    out = c.step({"edges": ZSet.from_dict({(0, 1): -1})})
    assert out["reach"].to_dict() == {(0, 1): -1, (0, 2): -1}
    out = c.step({"edges": ZSet.from_dict({(0, 2): 1})})
    assert out["reach"].to_dict() == {(0, 1): 1, (0, 2): 1}


def test_a_tick_without_changes_outputs_nothing_and_a_long_path_iterates_deep():
    c = transitive_closure_circuit()
    path = [(i, i + 1) for i in range(30)]
    out = c.step({"edges": ZSet.from_rows(path)})["closure"]
    assert len(out) == 30 * 31 // 2
    child = next(n.child for n in c.nodes if n.kind == "child")
    assert child.iterations() >= 30
    assert c.step({})["closure"].is_empty()
    out = c.step({"edges": ZSet.from_dict({(14, 15): -1})})["closure"]
    assert out.to_dict() == {(i, j): -1 for i in range(15) for j in range(15, 31)}


@given(graph_snapshots)
def test_recursion_two_levels_down_uses_three_coordinate_times(snaps):
    # root -> child -> grandchild: the closure runs at times (tick, i, j); the nested
    # join and distinct_trace take their corners over three coordinates.
    c = Circuit()
    s = c.source(arity=2, name="e")
    child = c.child()
    grand = child.child()
    e = grand.import_(child.import_(s))
    c.sink(child.export(grand.export(closure(grand, e, e))), "tc")
    acc, before = {}, frozenset()
    for after in snaps:
        acc = _check(c.step({"e": zdelta(before, after, 2)})["tc"], acc)
        assert acc == ref.closure(after)
        before = after


def test_idle_iterations_are_skipped():
    # A path 0 -> ... -> 30 from root 0; one edge added at its far end only matters at
    # the iterations where node 30 was reached, so the child jumps straight there.
    c = reachability_circuit()
    child = next(n.child for n in c.nodes if n.kind == "child")
    c.step({"edges": ZSet.from_rows([(i, i + 1) for i in range(30)]), "roots": ZSet.from_rows([(0,)])})
    assert child.iterations(evaluated=True) == child.iterations() >= 31
    out = c.step({"edges": ZSet.from_rows([(30, 31)])})["reach"]
    assert out.to_dict() == {(0, 31): 1}
    assert child.iterations() >= 32 and child.iterations(evaluated=True) <= 4
