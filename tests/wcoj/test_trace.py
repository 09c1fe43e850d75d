"""Times and traces: product order, box queries and key lookups against a list-of-batches
oracle, compaction that no query at or past the frontier can notice, geometric runs,
persistence, and the typed errors."""

import reference as ref
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wcoj import config
from wcoj.errors import ArityMismatchError, InputError
from wcoj.indexed import IndexedZSet
from wcoj.time import Box, join, leq, lt, meet
from wcoj.trace import Trace
from wcoj.zset import ZSet

times2 = st.tuples(st.integers(0, 3), st.integers(0, 3))
batch = st.dictionaries(st.tuples(st.integers(0, 3), st.integers(0, 2)), st.integers(-2, 2), max_size=5)
timed_batches = st.lists(st.tuples(times2, batch), max_size=8)


def build(batches, n_key=None):
    tr = Trace(arity=2, n_key=n_key, n_dims=2)
    for t, b in batches:
        tr = tr.insert(ZSet.from_dict(b, arity=2), t)
    return tr


def test_product_order():
    assert leq((0, 0), (0, 1)) and leq((0, 1), (1, 1))
    assert not leq((0, 2), (1, 1)) and not leq((1, 1), (0, 2))
    assert lt(1, 2) and not lt(2, 2)
    assert join((0, 2), (1, 1)) == (1, 2) and meet((0, 2), (1, 1)) == (0, 1)
    assert join(3, 5) == 5


@given(timed_batches)
def test_upto_equals_sum_of_batches_at_earlier_times(batches):
    tr = build(batches)
    for e in range(4):
        for i in range(4):
            got = tr.upto((e, i))
            got.check()
            assert got.to_dict() == ref.trace_upto(batches, (e, i))


@given(timed_batches, st.lists(st.integers(0, 3), max_size=3))
def test_lookup_by_keys_equals_filtering(batches, keys):
    tr = build(batches, n_key=1)
    rows, times, weights = tr.lookup(np.array(keys, dtype=np.int64).reshape(-1, 1))
    got: dict = {}
    for r, t, w in zip(map(tuple, rows.tolist()), map(tuple, times.tolist()), weights.tolist()):
        got[(r, t)] = got.get((r, t), 0) + w
    want: dict = {}
    for t, b in batches:
        for r, w in b.items():
            if r[0] in keys:
                want[(r, t)] = want.get((r, t), 0) + w
    assert ref.clean(got) == ref.clean(want)


@given(timed_batches, times2)
def test_advance_keeps_every_answer_at_or_past_the_frontier(batches, frontier):
    tr = build(batches)
    adv = tr.advance(frontier).compact()
    for e in range(frontier[0], 5):
        for i in range(frontier[1], 5):
            assert adv.upto((e, i)) == tr.upto((e, i))
    # and a strict-epoch box (epoch < e) past the frontier's epoch keeps its answer too
    e = frontier[0] + 1
    assert adv.select(Box([None, None], [e - 1, 3])) == tr.select(Box([None, None], [e - 1, 3]))


def test_root_advance_collapses_earlier_ticks_into_one_time():
    tr = Trace(arity=1)
    for t in range(5):
        tr = tr.insert(ZSet.from_rows([(t % 2,)]), t)
    tr = tr.advance(4).compact()
    assert [t for t, _ in tr.batches()] == [4]
    assert tr.upto(4).to_dict() == {(0,): 3, (1,): 2}


@given(st.lists(st.integers(1, 40), min_size=1, max_size=30))
def test_runs_shrink_geometrically(sizes):
    """An epoch per insert: the spine's runs merge geometrically."""
    tr, total, start = Trace(arity=1), {}, 0
    for t, n in enumerate(sizes):
        rows = [(start + j,) for j in range(n)]  # fresh rows: nothing cancels
        start += n
        tr = tr.insert(ZSet.from_rows(rows), t).advance(t)
        total.update({r: 1 for r in rows})
        runs = tr.run_sizes()
        assert all(a > 2 * b for a, b in zip(runs, runs[1:])), runs
        assert len(runs) <= int(np.log2(max(sum(sizes), 1))) + 2
    assert tr.consolidate().to_dict() == total


@given(st.lists(st.integers(1, 40), min_size=1, max_size=30), st.sampled_from([0, 1, 8]))
def test_an_epochs_runs_merge_only_past_the_unmerged_few(sizes, unmerged):
    """Inserts within one epoch (iterations (0, i)): up to ``config.TRACE_RUNS`` runs stay
    as inserted, past them each is less than half the one before it; the epoch's end
    makes them one run of the spine."""
    saved, config.TRACE_RUNS = config.TRACE_RUNS, unmerged
    try:
        tr, total, start = Trace(arity=1, n_dims=2), {}, 0
        for i, n in enumerate(sizes):
            rows = [(start + j,) for j in range(n)]
            start += n
            tr = tr.insert(ZSet.from_rows(rows), (0, i))
            total.update({r: 1 for r in rows})
            runs = [len(r) for r in tr.recent]
            assert len(runs) == i + 1 if i < unmerged else len(runs) >= min(unmerged, i + 1)
            if len(runs) > max(unmerged, 1):
                assert runs[-2] > config.TRACE_MERGE_RATIO * runs[-1], runs
            assert len(runs) <= unmerged + int(np.log2(max(sum(sizes), 1))) + 2
        tr = tr.advance((1, 0))
        assert len(tr.run_sizes()) == 1 and not tr.recent
        assert tr.consolidate().to_dict() == total
    finally:
        config.TRACE_RUNS = saved


def test_insert_at_an_existing_time_adds_into_that_batch_and_cancels():
    tr = Trace(arity=1).insert(ZSet.from_rows([(1,)]), 0).insert(ZSet.from_dict({(1,): -1, (2,): 1}), 0)
    assert tr.batches() == [(0, ZSet.from_rows([(2,)]))]


def test_traces_are_persistent():
    t0 = Trace(arity=1)
    t1 = t0.insert(ZSet.from_rows([(1,)]), 0)
    t2 = t1.insert(ZSet.from_rows([(2,)]), 1).advance(1)
    assert t0.is_empty() and t1.consolidate().to_dict() == {(1,): 1}
    assert t2.consolidate().to_dict() == {(1,): 1, (2,): 1}


def test_untimed_append_is_visible_at_every_time():
    tr = Trace(arity=1, n_dims=2).append_untimed(ZSet.from_rows([(7,)]))
    assert tr.upto((0, 0)).to_dict() == {(7,): 1} and tr.upto((3, 5)).to_dict() == {(7,): 1}


def test_indexed_batches_keep_their_key():
    iz = IndexedZSet.from_pairs([[1], [2]], [[10], [20]])
    tr = Trace(arity=2, n_key=1).insert(iz, 0)
    assert tr.select(keys=ZSet.from_rows([(2,)])).to_dict() == {(2, 20): 1}


def test_wide_values_fall_back_from_packing():
    big = 2**62
    tr = Trace(arity=2).insert(ZSet.from_rows([(-big, big), (big, -big)]), 0)
    assert tr.upto(0, keys=np.array([[big, -big]])).to_dict() == {(big, -big): 1}


def test_errors():
    tr = Trace(arity=2, n_dims=2)
    with pytest.raises(ArityMismatchError):
        tr.insert(ZSet.from_rows([(1,)]), (0, 0))
    with pytest.raises(InputError, match="times have 2"):
        tr.insert(ZSet.from_rows([(1, 2)]), 0)
    with pytest.raises(ArityMismatchError):
        Trace(arity=2, n_key=1).insert(IndexedZSet(ZSet.from_rows([(1, 2)]), 2), 0)


def test_a_merge_of_runs_with_a_row_at_many_times_sorts_them_all():
    # the spine merges two runs of two epochs by advancing each in one pass, unless a row
    # has more entries than that pass sorts (GROUP_MAX): then it sorts every entry. Row
    # 100 is at every iteration of both epochs; the answers are those of a dict oracle.
    from wcoj.kernels.zsets import GROUP_MAX
    n = GROUP_MAX + 2
    want: dict = {}
    tr = Trace(1, n_dims=2)
    for e, w in ((0, 1), (1, -1), (2, 1)):
        for i in range(n):
            rows = {(100,): w, (i,): 1}
            tr = tr.insert(ZSet.from_dict(rows), (e, i))
            for r, x in rows.items():
                want[(r, e, i)] = want.get((r, e, i), 0) + x
        tr = tr.advance((e + 1, 0))
    assert len(tr.runs) < 3  # (the epochs' runs were merged)
    for i in (0, 3, n - 1, n + 5):
        got = {}
        for (r, _, j), x in want.items():
            if j <= i:
                got[r] = got.get(r, 0) + x
        assert tr.upto((3, i)).to_dict() == {r: x for r, x in got.items() if x}
