"""Operators: integrating the incremental outputs equals the plain operator on the
integrated inputs at every tick (at the root and inside a child), one big batch equals
the same changes pushed one at a time, the nested rules equal their grid oracles, and
``check()`` holds for every Z-set produced."""

import reference as ref
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from strategies import snapshots, values, weighted_snapshots, zdelta
from wcoj.circuit import Circuit
from wcoj.indexed import IndexedZSet
from wcoj.operators import (
    Aggregate,
    Consolidate,
    DistinctIncremental,
    distinct_nested,
    distinct_trace,
    incremental_join,
    integrate_trace,
    join_lattice,
)
from wcoj.errors import WeightOverflowError
from wcoj.trace import Trace
from wcoj.zset import ZSet


def index(z: dict, cols: list[int]) -> dict:
    return ref.add(*[{tuple(r[c] for c in cols) + r: w} for r, w in z.items()]) if z else {}


def run(build, streams: dict[str, list], arities: dict[str, int], nested: bool = False):
    """Feed the snapshot deltas of each named stream; yield (tick, integrated output)."""
    c = Circuit()
    srcs = {n: c.source(arity=a, name=n) for n, a in arities.items()}
    if nested:  # the same operators inside a child, fed through delta0 imports
        child = c.child()
        out = child.export(build(*[child.import_(s) for s in srcs.values()]))
    else:
        out = build(*srcs.values())
    c.sink(out, "out")
    n_ticks = max(len(v) for v in streams.values())
    before = {n: {} for n in streams}
    acc: dict = {}
    for t in range(n_ticks):
        inputs = {}
        for n, snaps in streams.items():
            after = snaps[min(t, len(snaps) - 1)]
            inputs[n] = zdelta(before[n], after, arities[n])
            before[n] = after
        got = c.step(inputs)["out"]
        z = got.zset if isinstance(got, IndexedZSet) else got
        z.check()
        acc = ref.add(acc, z.to_dict())
        yield t, {n: (before[n] if isinstance(before[n], dict) else {r: 1 for r in before[n]}) for n in streams}, acc


nested_flags = pytest.mark.parametrize("nested", [False, True], ids=["root", "child"])


@nested_flags
@given(weighted_snapshots(2))
def test_linear_operators_are_their_own_incremental_form(nested, snaps):
    def build(s):
        m = s.map(lambda k: k[:, :1] * 2, arity=1)  # collisions add up
        f = s.filter(lambda k: k[:, 0] <= k[:, 1]).map(lambda k: k[:, 1:], arity=1)
        return m.plus(f.negate()).minus(f)
    for _, snap, acc in run(build, {"s": snaps}, {"s": 2}, nested):
        rows = snap["s"].items()
        m = ref.add(*[{(r[0] * 2,): w} for r, w in rows])
        f = ref.add(*[{(r[1],): w} for r, w in rows if r[0] <= r[1]])
        assert acc == ref.sub(m, ref.add(f, f))


@given(weighted_snapshots(2))
def test_index_with_integrates_to_the_indexed_snapshot(snaps):
    for _, snap, acc in run(lambda s: s.index_with([1]), {"s": snaps}, {"s": 2}):
        assert acc == index(snap["s"], [1])


@given(weighted_snapshots(1))
def test_integrate_differentiate_z1(snaps):
    c = Circuit()
    s = c.source(arity=1, name="s")
    c.sink(s.integrate(), "I")
    c.sink(s.integrate().differentiate(), "DI")
    c.sink(s.z1(), "z1")
    before, last = {}, ZSet.empty(1)
    for after in snaps:
        d = zdelta(before, after, 1)
        out = c.step({"s": d})
        assert out["I"].to_dict() == after and out["DI"] == d and out["z1"] == last
        before, last = after, d


@nested_flags
@given(st.lists(st.dictionaries(st.tuples(values), st.integers(-2, 3), max_size=5), min_size=1, max_size=6))
def test_distinct_trace_integrates_to_distinct(nested, snaps):
    for _, snap, acc in run(distinct_nested, {"s": snaps}, {"s": 1}, nested):
        assert acc == ref.distinct(snap["s"])


@given(st.lists(st.dictionaries(st.tuples(values), st.integers(-2, 3), max_size=5), min_size=1, max_size=6))
def test_distinct_incremental_integrates_to_distinct(snaps):
    def build(s):
        _, prior = integrate_trace(s)
        return s.circuit.add(DistinctIncremental(), s, prior)
    for _, snap, acc in run(build, {"s": snaps}, {"s": 1}):
        assert acc == ref.distinct(snap["s"])


@given(st.lists(st.dictionaries(st.tuples(values), st.integers(-2, 2), max_size=4), min_size=1, max_size=6))
def test_consolidate_of_the_trace_is_the_integral(snaps):
    build = lambda s: s.circuit.add(Consolidate(), integrate_trace(s)[0])  # noqa: E731
    # consolidate is applied to the whole trace each tick: its last value is the snapshot
    c = Circuit()
    s = c.source(arity=1, name="s")
    c.sink(build(s), "o")
    before = {}
    for after in snaps:
        assert c.step({"s": zdelta(before, after, 1)})["o"].to_dict() == ref.clean(after)
        before = after


@nested_flags
@given(snapshots(2), snapshots(2))
def test_incremental_join_integrates_to_the_join(nested, a, b):
    build = lambda x, y: incremental_join(x.index_with([0]), y.index_with([1]))  # noqa: E731
    for _, snap, acc in run(build, {"a": a, "b": b}, {"a": 2, "b": 2}, nested):
        assert acc == ref.join(index(snap["a"], [0]), index(snap["b"], [1]), 1)


@nested_flags
@pytest.mark.parametrize("kind", ["count", "sum", "min", "max", "avg"])
@given(weighted_snapshots(2))
def test_aggregate_integrates_to_the_aggregate(nested, kind, snaps):
    build = lambda s: s.index_with([0]).aggregate(kind, 1)  # noqa: E731
    for _, snap, acc in run(build, {"s": snaps}, {"s": 2}, nested):
        assert acc == ref.aggregate(index(snap["s"], [0]), 1, kind, 1)


@given(snapshots(2, max_ticks=6), snapshots(2, max_ticks=6))
def test_one_big_batch_equals_the_changes_one_at_a_time(a, b):
    def composite(x, y):
        j = incremental_join(x.index_with([1]), y.index_with([0]), lambda k: k[:, [1, 4]], 2)
        return distinct_nested(j.plus(x)).index_with([0]).aggregate("count")

    def total(feeds):
        c = Circuit()
        x, y = c.source(arity=2, name="a"), c.source(arity=2, name="b")
        c.sink(composite(x, y), "o")
        acc = {}
        for inp in feeds:
            acc = ref.add(acc, c.step(inp)["o"].to_dict())
        return acc

    one_at_a_time, before = [], {"a": frozenset(), "b": frozenset()}
    for sa, sb in zip(a, b):
        for name, after in (("a", sa), ("b", sb)):
            for row, w in ref.delta(before[name], after).items():
                one_at_a_time.append({name: ZSet.from_dict({row: w})})
            before[name] = after
    n = min(len(a), len(b))
    big = [{"a": ZSet.from_rows(sorted(a[n - 1]), arity=2), "b": ZSet.from_rows(sorted(b[n - 1]), arity=2)}]
    assert total(one_at_a_time) == total(big)


# ---------------------------------------------------------------- nested rules vs grid oracles
grid_input = st.dictionaries(st.tuples(st.integers(0, 2), st.integers(0, 2)),
                             st.dictionaries(st.tuples(values), st.integers(-2, 2), max_size=3), max_size=6)


@settings(max_examples=60)
@given(grid_input)
def test_distinct_trace_equals_the_grid_oracle(x):
    want = ref.nested_grid_delta(x, ref.distinct, 3, 3)
    tr = Trace(arity=1, n_dims=2)
    for e in range(3):
        for i in range(3):
            b = ZSet.from_dict(x.get((e, i), {}), arity=1)
            got = distinct_trace(b, tr, (e, i))
            got.check()
            assert got.to_dict() == want[(e, i)], (e, i)
            tr = tr.insert(b, (e, i))
        tr = tr.advance((e, 0))  # what the child does at the end of each epoch


first_epoch = st.lists(st.dictionaries(st.tuples(st.integers(0, 40)), st.integers(-2, 2), max_size=5),
                       min_size=2, max_size=4)
later_epochs = st.dictionaries(st.tuples(st.integers(1, 2), st.integers(0, 3)),
                               st.dictionaries(st.tuples(st.integers(0, 40)), st.integers(-2, 2), max_size=4),
                               max_size=6)


@pytest.mark.parametrize("max_bits", [2, 4, 24])
@settings(max_examples=100, deadline=None)
@given(first_epoch, later_epochs)
@example([{(3,): 1}, {(30,): 1, (3,): 1}, {(3,): -2}], {})  # a wider table at iteration 1
def test_the_node_with_its_first_epoch_integral_equals_the_grid_oracle(max_bits, first, later):
    """``DistinctTrace`` as a child runs it: the state threaded through an epoch's
    iterations and dropped at the epoch's end. At the first epoch it is the running
    integral: a table from the first batch here, rebuilt wider when a row falls outside
    it, or rows when that needs more than ``max_bits`` bits."""
    from wcoj import config
    from wcoj.circuit import Context
    from wcoj.operators import DistinctTrace

    x = {(0, i): z for i, z in enumerate(first)} | later
    old = config.DENSE_SUM_SLOTS, config.DENSE_SUM_MAX_BITS
    config.DENSE_SUM_SLOTS, config.DENSE_SUM_MAX_BITS = 1 << 20, max_bits
    try:
        want = ref.nested_grid_delta(x, ref.distinct, 3, 4)
        op, tr = DistinctTrace(), Trace(arity=1, n_dims=2)
        for e in range(3):
            state = None
            for i in range(4):
                b = ZSet.from_dict(x.get((e, i), {}), arity=1)
                got, state = op.eval([b, tr], state, Context((e, i), 2, ()))
                got.check()
                assert got.to_dict() == want[(e, i)], (e, i)
                tr = tr.insert(b, (e, i))
            tr = tr.advance((e, 0))
    finally:
        config.DENSE_SUM_SLOTS, config.DENSE_SUM_MAX_BITS = old


@settings(max_examples=80, deadline=None)
@given(st.lists(st.dictionaries(st.tuples(st.integers(0, 30), st.integers(0, 3)), st.integers(-2, 2),
                                max_size=8), min_size=1, max_size=40))
def test_the_integral_as_runs_equals_a_running_sum(batches):
    """``Integral`` held as runs of rows (a table would need more bits than allowed):
    over many iterations each batch's change is ``H(V + w) - H(V)`` of the running sum,
    while its runs merge as they grow."""
    from wcoj import config
    from wcoj.operators.traces import Integral

    old = config.DENSE_SUM_MAX_BITS
    config.DENSE_SUM_MAX_BITS = 2
    try:
        acc, sums = Integral(2), {}
        for b in batches:
            z = ZSet.from_dict(b, arity=2)
            want = {}
            for row, w in z.to_dict().items():
                before = sums.get(row, 0)
                sums[row] = before + w
                d = (sums[row] > 0) - (before > 0)
                if d:
                    want[row] = d
            got = acc.step(z)
            got.check()
            assert got.to_dict() == want
        if acc.sums is None:  # rows (a table when every row packs into 2 bits)
            sizes = [len(r.z) for r in acc.runs]
            assert all(a > 2 * b for a, b in zip(sizes, sizes[1:])), sizes  # O(log n) runs
    finally:
        config.DENSE_SUM_MAX_BITS = old


def test_an_integral_whose_sum_leaves_int64_raises():
    from wcoj.operators.traces import Integral

    acc = Integral(1)
    acc.step(ZSet.from_dict({(1,): 2 ** 62, (5 * 10 ** 17,): 1}))  # too wide for a table: runs
    acc.step(ZSet.from_dict({(2,): 1}))
    with pytest.raises(WeightOverflowError, match="accumulated weight of row .1,."):
        acc.step(ZSet.from_dict({(1,): 2 ** 62}))


def test_a_tick_that_keeps_nothing_skips_only_the_traces_its_first_epoch_does_not_read():
    """At a depth-1 child's first epoch, ``q``'s tick (keep=False) does not grow a trace
    nothing reads there: distinct's input (distinct answers from its integral) and a
    join side whose other side is zero past iteration 0. Every other trace, and the
    same traces at a later epoch, deeper or in a kept tick, grow."""
    from wcoj.circuit import Context
    from wcoj.operators.traces import TraceAppend, zero_past_iteration_zero

    z = ZSet.from_rows([(1,)])
    for op, ctx, grows in [(TraceAppend(first_epoch_unread=True), Context((0, 3), 2, (), keep=False), False),
                           (TraceAppend(first_epoch_unread=True), Context((0, 3), 2, (), keep=True), True),
                           (TraceAppend(first_epoch_unread=True), Context((1, 3), 2, (), keep=False), True),
                           (TraceAppend(first_epoch_unread=True), Context((0, 1, 3), 3, (), keep=False), True),
                           (TraceAppend(), Context((0, 3), 2, (), keep=False), True)]:
        tr = Trace(1, n_dims=ctx.n_dims)
        assert (len(op.eval([z, tr], None, ctx)[0]) == 1) == grows, ctx
    c = Circuit()
    src = c.source(arity=2)
    child = c.child()
    base = child.import_(src)
    fb = child.delay(2)
    assert zero_past_iteration_zero(base) and zero_past_iteration_zero(base.map(lambda k: k, arity=2).plus(base))
    assert not zero_past_iteration_zero(child.import_(src, mode="const"))
    assert not zero_past_iteration_zero(fb) and not zero_past_iteration_zero(base.plus(fb))


@settings(max_examples=60)
@given(grid_input, grid_input)
def test_join_lattice_equals_the_grid_oracle(xa, xb):
    def grid(x):
        return {(e, i): ref.add(*[z for (a, b), z in x.items() if a <= e and b <= i]) for e in range(3) for i in range(3)}
    va, vb = grid(xa), grid(xb)
    J = {t: ref.join(index(va[t], [0]), index(vb[t], [0]), 1) for t in va}
    get = lambda e, i: J[(e, i)] if e >= 0 and i >= 0 else {}  # noqa: E731
    ta, tb = Trace(2, 1, n_dims=2), Trace(2, 1, n_dims=2)
    for e in range(3):
        for i in range(3):
            a = ZSet.from_dict(xa.get((e, i), {}), arity=1).index_with([0])
            b = ZSet.from_dict(xb.get((e, i), {}), arity=1).index_with([0])
            got = join_lattice(a, b, ta, tb, (e, i))
            got.check()
            want = ref.add(get(e, i), ref.neg(get(e - 1, i)), ref.neg(get(e, i - 1)), get(e - 1, i - 1))
            assert got.to_dict() == want, (e, i)
            ta, tb = ta.insert(a, (e, i)), tb.insert(b, (e, i))
        ta, tb = ta.advance((e, 0)), tb.advance((e, 0))


def test_aggregate_rejects_unknown_kinds_and_columns():
    from wcoj.errors import CircuitError
    with pytest.raises(CircuitError, match="unknown aggregate 'median'"):
        Aggregate("median")
    c = Circuit()
    with pytest.raises(CircuitError, match="value column 5"):
        c.source(arity=2).index_with([0]).aggregate("sum", 5)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3),
                          st.dictionaries(st.tuples(st.integers(0, 3)), st.integers(-2, 2),
                                          max_size=4)), max_size=8),
       st.dictionaries(st.tuples(st.integers(0, 3)), st.integers(-2, 2), max_size=4),
       st.integers(0, 3))
def test_distinct_corner_sums_equal_the_per_corner_distinct(history, batch, it):
    """The kernel path of ``lattice_delta`` for ``distinct`` (one pass of corner sums)
    equals distinct applied to each corner's consolidated integral."""
    from wcoj.operators.traces import lattice_delta

    t = (max([e for e, _, _ in history], default=0) + 1, it)
    prior = Trace(1, n_dims=2)
    for e, i, d in sorted(history, key=lambda x: x[:2]):
        d = {k: w for k, w in d.items() if w}
        if d:
            prior = prior.insert(ZSet.from_dict(d, arity=1), (e, i))
    b = ZSet.from_dict({k: w for k, w in batch.items() if w}, arity=1)
    fast = lattice_delta(ZSet.distinct, b, prior, t, 1)
    slow = lattice_delta(lambda z: z.distinct(), b, prior, t, 1)
    fast.check()
    assert fast == slow


@pytest.mark.parametrize("kind", ["max", "min", "count"])
@given(snapshots(3, max_ticks=6))
def test_a_nested_aggregate_fires_at_the_iterations_earlier_epochs_used(kind, snaps):
    """Rows ``(key, value, delay)`` reach an aggregate inside a child ``delay`` iterations
    after they enter. When a later tick changes a key only at iteration 0, the aggregate
    must still correct the iterations at which earlier ticks fed that key, with every delta
    input empty there: only its ``next_busy`` keeps the child going."""
    def build(s):
        fb = s.circuit.delay(3)
        cur = s.plus(fb)
        fb.connect(cur.filter(lambda k: k[:, 2] > 0).map(lambda k: k - np.array([0, 0, 1]), arity=3))
        now = cur.filter(lambda k: k[:, 2] == 0).map(lambda k: k[:, :2], arity=2)
        return now.index_with([0]).aggregate(kind, 1)
    for _, snap, acc in run(build, {"s": snaps}, {"s": 3}, nested=True):
        rows = {}
        for k, v, _ in snap["s"]:
            rows.setdefault(k, []).append(v)
        agg = {"max": max, "min": min, "count": len}[kind]
        assert acc == {(k, agg(vs)): 1 for k, vs in rows.items()}
