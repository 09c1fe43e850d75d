"""The change-by-change tick (``wcoj.tickgen``'s kernels through ``indexes.transaction.ChangePlan``)
against the staged delta rule and against recomputation: random Z-set changes with
multiplicities and deletes over several relations of different arities, tries that run
out of room in the middle of a tick, and an overflow that undoes the whole tick.
Also run with ``NUMBA_DISABLE_JIT=1``."""

import numpy as np
import pytest
import reference_joins as ref
from hypothesis import example, given, settings
from hypothesis import strategies as st

from indexes.transaction import ChangePlan, Store
from wcoj.kernels.tick import RADIX_ROWS, consolidate, radix_rows
from wcoj import config
from wcoj.errors import WeightOverflowError
from wcoj.generic_join import IncrementalGenericJoin
from wcoj.zset import ZSet

QUERIES = {  # atoms over R (arity 2) and S (arity 3), with filters
    "triangle": ([("R", ("a", "b")), ("R", ("a", "c")), ("R", ("b", "c"))], [("<", "a", "b")]),
    "path through S": ([("R", ("a", "b")), ("S", ("b", "c", "d")), ("R", ("d", "a"))], []),
    "two S": ([("S", ("x", "y", "z")), ("S", ("z", "y", "x"))], [(("x", "z"), np.not_equal)]),
}
ARITY = {"R": 2, "S": 3}
nodes = st.integers(0, 4)
weights = st.sampled_from([1, -1, 2])


def changes_of(arity):
    return st.dictionaries(st.tuples(*[nodes] * arity), weights, max_size=6)


@st.composite
def streams(draw):
    name = draw(st.sampled_from(sorted(QUERIES)))
    ticks = draw(st.lists(st.tuples(changes_of(2), changes_of(3)), min_size=1, max_size=5))
    return name, ticks


def build(name):
    store = Store()
    rels = {n: store.relation(n, a) for n, a in ARITY.items()}
    atoms, filters = QUERIES[name]
    out = sorted({v for _, vs in atoms for v in vs})
    join = IncrementalGenericJoin([(rels[r], vs) for r, vs in atoms], out, filters=filters)
    join.prepare()
    return store, rels, join


def change_list(dR, dS):
    """The changes as ``ChangePlan.run`` takes them: rows ``(relation, weight, row...)``."""
    rows = [[i, x] + list(r) + [0] * (3 - len(r)) for i, d in enumerate((dR, dS)) for r, x in sorted(d.items())]
    return np.array(rows, dtype=np.int64).reshape(-1, 5)


@pytest.mark.parametrize("growth", ["as usual", "tight"])
@settings(max_examples=20)
@given(streams())
def test_change_by_change_equals_the_staged_delta_and_recomputation(growth, arg):
    name, ticks = arg
    with pytest.MonkeyPatch.context() as mp:
        if growth == "tight":
            mp.setattr(config, "SLACK", 0)
            mp.setattr(config, "GROWTH", 1.0)
        a_store, a_rels, a_join = build(name)   # change by change
        b_store, b_rels, b_join = build(name)   # staged
        plan = ChangePlan(a_store, [a_join], [a_rels["R"], a_rels["S"]])
        data = {"R": {}, "S": {}}
        for dR, dS in ticks:
            (keys, w), = plan.run(change_list(dR, dS))
            got = ZSet(keys, w)
            with b_store.transaction() as tx:
                tx.stage(b_rels["R"], ZSet.from_dict(dR, arity=2))
                tx.stage(b_rels["S"], ZSet.from_dict(dS, arity=3))
                want = b_join.delta()
                tx.commit()
            assert got == want
            data = {"R": ref.zadd(data["R"], dR), "S": ref.zadd(data["S"], dS)}
            for rels in (a_rels, b_rels):
                assert {n: r.contents().to_dict() for n, r in rels.items()} == data
            assert a_join.batch().to_dict() == b_join.batch().to_dict()
            assert int(plan.counts[0]) == a_join.batch(count_only=True)


def test_an_overflow_undoes_the_whole_tick():
    store, rels, join = build("triangle")
    rels["R"].load(ZSet.from_dict({(1, 2): 2**62, (1, 3): 2**62, (5, 6): 1}))
    plan = ChangePlan(store, [join], [rels["R"], rels["S"]])
    before = {cols: idx.trie.to_zset() for cols, idx in rels["R"].indexes.items()}
    with pytest.raises(WeightOverflowError, match="undone"):
        plan.run(change_list({(5, 7): 1, (2, 3): 1, (6, 7): 1}, {}))   # (2, 3) closes 1-2-3: 2**62 * 2**62
    assert {cols: idx.trie.to_zset() for cols, idx in rels["R"].indexes.items()} == before
    assert plan.counts.tolist() == [0, 0]
    (keys, weights), = plan.run(change_list({(5, 7): 1, (6, 7): 1}, {}))
    assert ZSet(keys, weights).to_dict() == {(5, 6, 7): 1}


def _summed(rows):
    """The oracle of ``consolidate``: rows ``(view, weight, keys...)`` summed per
    ``(view, keys)``, zeros dropped, sorted."""
    sums = {}
    for r in rows:
        key = (r[0], *r[2:])
        sums[key] = sums.get(key, 0) + r[1]
    return [(k[0], w, *k[1:]) for k, w in sorted(sums.items()) if w]


@st.composite
def tick_rows(draw):
    """Rows ``(view, weight, keys...)``: keys of 1 to 4 columns from a range of 4, 2**20
    or 2**64 values (whose span does not fit in int64), some rows repeated with the
    opposite weight."""
    width = draw(st.integers(1, 4))
    low = draw(st.sampled_from([0, -2**63, 2**40]))
    span = draw(st.sampled_from([4, 2**20, 2**64]))
    value = st.integers(low, min(low + span, 2**63) - 1)
    n = draw(st.sampled_from([0, 1, 5, RADIX_ROWS, RADIX_ROWS + 1, 300]))
    rows = draw(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([1, -1, 2]), *[value] * width),
                         min_size=n, max_size=n))
    copies = draw(st.integers(0, 3))
    return width, rows + [(v, -w, *k) for v, w, *k in rows[: len(rows) * copies // 4]]


def _edge_rows(width, values):
    """``RADIX_ROWS + 1`` rows of views 0 to 2 whose key columns take ``values`` in
    turn, some repeated (weights -1 and 2)."""
    rows = [(i % 3, 1, *[values[(i // 3 + j) % len(values)] for j in range(width)]) for i in range(RADIX_ROWS + 1)]
    return width, rows + [(v, -1, *k) for v, _, *k in rows[::5]] + [(v, 2, *k) for v, _, *k in rows[1::5]]


@settings(max_examples=60)
@example(_edge_rows(1, [-2**63, 2**63 - 1, 0]))  # a column's span does not fit in int64
@example(_edge_rows(1, [-2**63, 0]))              # nor here, by one
@example(_edge_rows(2, [0, 2**30, 2**31 - 1]))    # 31 bits a column: 3 radix passes each
@example(_edge_rows(1, [0, 2**60, 2**62]))        # 63 bits: 6 passes
@given(tick_rows())
def test_consolidate_sorts_and_sums_rows_by_radix_or_merge(arg):
    """Up to ``RADIX_ROWS`` rows, and rows with a column whose span does not fit in
    int64, take the merge sort; others the radix sort of rows: both must give the
    oracle's rows."""
    width, rows = arg
    out = np.array(rows, dtype=np.int64).reshape(len(rows), 2 + width)
    res = np.full_like(out, -7)
    n = consolidate(out.copy(), len(rows), res)
    assert [tuple(r) for r in res[:n].tolist()] == _summed(rows)


@settings(max_examples=40)
@given(st.lists(st.tuples(st.sampled_from([0, 1, 7, 2**62 - 1]), st.integers(0, 40), st.integers(0, 1)),
                min_size=1, max_size=200))
def test_radix_rows_orders_every_column_when_none_is_skipped(rows):
    """``radix_rows`` with no column skipped (``edge_changes`` sorts a tick's edge
    operations so) gives the stable order of the rows by all their columns."""
    a = np.array(rows, dtype=np.int64).reshape(len(rows), 3)
    got = radix_rows(a, len(rows), -1)
    assert got.tolist() == sorted(range(len(rows)), key=lambda i: (rows[i], i))


@settings(max_examples=15)
@given(st.dictionaries(st.tuples(st.integers(0, 11), st.integers(0, 11)), weights, min_size=80, max_size=120))
def test_a_tick_changing_many_rows_equals_the_staged_delta(dR):
    """A tick whose change has more rows than ``RADIX_ROWS`` (its rows are radix sorted)."""
    a_store, a_rels, a_join = build("triangle")
    b_store, b_rels, b_join = build("triangle")
    plan = ChangePlan(a_store, [a_join], [a_rels["R"], a_rels["S"]])
    for tick in (dR, {r: -w for r, w in list(dR.items())[::2]}):
        (keys, w), = plan.run(change_list(tick, {}))
        assert len(keys) > RADIX_ROWS or tick is not dR  # the first tick's rows are radix sorted
        with b_store.transaction() as tx:
            tx.stage(b_rels["R"], ZSet.from_dict(tick, arity=2))
            want = b_join.delta()
            tx.commit()
        assert ZSet(keys, w) == want
