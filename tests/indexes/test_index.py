"""Incremental indexes and relations: the three views of a tick, commit and rollback in
place, tries that grow and compact as they change, and indexes built on demand."""

from itertools import permutations

import numpy as np
import pytest
import reference_joins as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexes import IncrementalIndex, Relation
from wcoj import config
from wcoj.errors import ArityMismatchError, InputError, WeightOverflowError
from wcoj.zset import ZSet

weights = st.integers(-2, 3).filter(bool)


def deltas(arity, domain=4, max_size=8):
    return st.dictionaries(st.tuples(*[st.integers(0, domain)] * arity), weights, max_size=max_size)


def permuted(d: dict, columns) -> dict:
    return {tuple(r[c] for c in columns): w for r, w in sorted(d.items())}


@st.composite
def streams(draw):
    arity = draw(st.integers(1, 3))
    columns = draw(st.permutations(range(arity)))
    ticks = draw(st.lists(st.tuples(deltas(arity), st.booleans()), min_size=1, max_size=10))
    return arity, tuple(columns), ticks


@pytest.fixture(params=["default", "tight", "dense", "merged", "two parts"])
def growth(request, monkeypatch):
    """Tries with room to spare (default); tries that grow by exactly what they need, so
    nearly every commit grows or compacts one (tight); tries whose level 0 is dense
    from a handful of values (dense); ``curr`` always merged into one trie, or always
    read as the trie plus the staged change."""
    if request.param == "merged":
        monkeypatch.setattr(config, "CURR_MERGE_FRACTION", 0.0)
    if request.param == "two parts":  # past the size cap (the fraction alone would merge)
        monkeypatch.setattr(config, "CURR_MERGE_FRACTION", 0.0)
        monkeypatch.setattr(config, "CURR_MERGE_MAX_ROWS", 0)
    if request.param == "tight":
        monkeypatch.setattr(config, "SLACK", 0)
        monkeypatch.setattr(config, "GROWTH", 1.0)
    if request.param == "dense":
        monkeypatch.setattr(config, "DENSE_MIN", 1)
    return request.param


# ------------------------------------------------------------------ IncrementalIndex
@settings(max_examples=30,  # the fixture only patches constants: safe to share across examples
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(streams())
def test_views_of_every_tick_equal_the_integral(growth, s):
    arity, columns, ticks = s
    idx = IncrementalIndex(arity, columns)
    integral = {}
    for delta, commit in ticks:
        idx.stage(ZSet.from_dict(delta, arity=arity))
        assert idx.view("prev").to_zset().to_dict() == permuted(integral, columns)
        assert idx.view("delta").to_zset().to_dict() == permuted(delta, columns)
        assert idx.view("curr").to_zset().to_dict() == permuted(ref.zadd(integral, delta), columns)
        if growth in ("merged", "two parts") and delta and integral:
            assert len(idx.view("curr").tries()) == (1 if growth == "merged" else 2)
        if commit:
            idx.commit()
            integral = ref.zadd(integral, delta)
        else:
            idx.rollback()
        assert idx.view("prev").to_zset().to_dict() == permuted(integral, columns)
        assert idx.view("delta").to_zset().to_dict() == {}
        assert idx.trie.n_rows == len(integral)
        keys = [tuple(r) for r in idx.trie.to_zset().keys.tolist()]
        assert keys == sorted(set(keys))               # the trie walks its rows in order


def test_many_single_row_commits_grow_the_trie_a_logarithmic_number_of_times():
    n = 2000
    rng = np.random.default_rng(0)
    idx = IncrementalIndex(2, (1, 0))
    integral = {}
    v0 = idx.trie.version
    for i in range(n):
        row = (int(rng.integers(0, 10**6)), i)
        idx.stage(ZSet.from_dict({row: 1}))
        idx.commit()
        integral[row] = 1
    # a level grows by GROWTH (1.5) times what it needs: a few growths per level, not n
    assert idx.trie.version - v0 <= 2 * (np.log(n) / np.log(config.GROWTH) + 2)
    assert idx.view("prev").to_zset().to_dict() == permuted(integral, (1, 0))


def test_deletes_that_cancel_every_row_leave_an_empty_trie(growth):
    idx = IncrementalIndex(2, (0, 1))
    for i in range(40):
        idx.stage(ZSet.from_rows([(i, i)]))
        idx.commit()
    for i in range(40):
        idx.stage(ZSet.from_dict({(i, i): -1}))
        idx.commit()
    assert idx.trie.n_rows == 0 and idx.view("prev").to_zset().to_dict() == {}
    assert idx.trie.part.level_size(0) == idx.trie.part.level_size(1) == 0
    idx.stage(ZSet.from_rows([(3, 4)]))                 # and it takes rows again
    idx.commit()
    assert idx.view("prev").to_zset().to_dict() == {(3, 4): 1}


def test_a_dense_level_0_grows_below_and_above_its_range_and_turns_sorted_when_sparse(monkeypatch):
    monkeypatch.setattr(config, "DENSE_MIN", 4)
    idx = IncrementalIndex(2, (0, 1))
    idx.load(ZSet.from_rows([(i, 1) for i in range(100, 200)]))
    assert idx.trie.part.dense is not None
    want = {(i, 1): 1 for i in range(100, 200)}
    for row in [(5000, 2), (7, 3), (99, 4)]:             # above, below, just below
        idx.stage(ZSet.from_rows([row]))
        idx.commit()
        want[row] = 1
        assert idx.view("prev").to_zset().to_dict() == want
    idx.stage(ZSet.from_rows([(2**50, 5)]))              # far away: level 0 turns sorted
    idx.commit()
    want[(2**50, 5)] = 1
    assert idx.trie.part.dense is None and idx.view("prev").to_zset().to_dict() == want


def test_a_sorted_level_0_built_commit_by_commit_turns_dense_when_it_grows(monkeypatch):
    """Transactions build a relation's tries from empty (sorted level 0); when level 0 runs
    out of room it is laid out again, dense when its values allow. A dense level 0 removes
    a value in O(1): a sorted one shifts the rest of the level, and a transaction
    retracting 10,000 entities took 84 ms in one trie."""
    monkeypatch.setattr(config, "DENSE_MIN", 4)
    idx = IncrementalIndex(2, (0, 1))
    want = {}
    for lo in range(1, 301, 10):
        rows = {(i, 7): 1 for i in range(lo, lo + 10)}
        idx.stage(ZSet.from_dict(rows))
        idx.commit()
        want.update(rows)
    assert idx.trie.part.dense is not None and idx.view("prev").to_zset().to_dict() == want
    idx.stage(ZSet.from_dict({r: -1 for r in want}))
    idx.commit()
    assert idx.trie.n_rows == 0 and idx.view("prev").to_zset().to_dict() == {}


def test_load_replaces_the_committed_state():
    idx = IncrementalIndex(2, (1, 0))
    idx.stage(ZSet.from_rows([(1, 2)]))
    idx.commit()
    idx.stage(ZSet.from_rows([(7, 7)]))
    idx.load(ZSet.from_rows([(3, 4), (5, 6)]))
    assert idx.view("prev").to_zset().to_dict() == {(4, 3): 1, (6, 5): 1}
    assert idx.view("delta").to_zset().to_dict() == {}
    assert idx.trie.n_rows == 2


def test_index_errors():
    with pytest.raises(ArityMismatchError, match="permutation"):
        IncrementalIndex(2, (0, 0))
    with pytest.raises(InputError, match="unknown view 'next'"):
        IncrementalIndex(2, (0, 1)).view("next")


# ------------------------------------------------------------------ Relation
@settings(max_examples=25,  # the fixture only patches constants: safe to share across examples
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(deltas(3, domain=3), st.booleans(), st.permutations(range(3))), min_size=1, max_size=8))
def test_relation_views_in_every_order_equal_the_integral(growth, ticks):
    rel = Relation("S", 3)
    integral = {}
    for delta, commit, ask in ticks:
        rel.stage(ZSet.from_dict(delta, arity=3))
        assert rel.delta_is_empty() == (not delta)
        # ask for an index (maybe new, built while the delta is staged) and check all views
        ask = tuple(ask)
        assert rel.view("prev", ask).to_zset().to_dict() == permuted(integral, ask)
        assert rel.view("delta", ask).to_zset().to_dict() == permuted(delta, ask)
        assert rel.view("curr", ask).to_zset().to_dict() == permuted(ref.zadd(integral, delta), ask)
        if commit:
            rel.commit()
            integral = ref.zadd(integral, delta)
        else:
            rel.rollback()
        assert rel.delta_is_empty()
        assert rel.contents().to_dict() == integral
        for cols in rel.indexes:
            assert rel.view("curr", cols).to_zset().to_dict() == permuted(integral, cols)


def test_a_weight_overflow_while_staging_every_index_changes_nothing():
    rel = Relation("E", 2)
    rel.load(ZSet.from_dict({(1, 2): 2**62, (2, 3): 1}))
    rel.ensure_index((1, 0))
    with pytest.raises(WeightOverflowError, match=r"row \(2, 1\)|row \(1, 2\)"):
        rel.stage(ZSet.from_dict({(1, 2): 2**62, (3, 1): 1}))
    assert rel.delta_is_empty()
    for cols in ((0, 1), (1, 0)):
        assert rel.view("curr", cols).to_zset().to_dict() == permuted({(1, 2): 2**62, (2, 3): 1}, cols)
        assert rel.view("delta", cols).to_zset().to_dict() == {}
    rel.stage(ZSet.from_dict({(3, 1): 1}))
    rel.commit()
    assert rel.contents().to_dict() == {(1, 2): 2**62, (2, 3): 1, (3, 1): 1}


def test_an_index_that_fails_to_stage_leaves_the_change_on_none():
    """If one index fails to stage a change (here a ``MemoryError``), the others, which
    did, forget it too."""
    rel = Relation("E", 2)
    rel.load(ZSet.from_rows([(1, 2), (2, 3)]))
    failing = rel.ensure_index((1, 0))

    def fail(delta, checked=False):
        raise MemoryError("no room for the change")

    failing.stage = fail
    with pytest.raises(MemoryError):
        rel.stage(ZSet.from_rows([(i, i + 1) for i in range(10, 5000)]))
    assert rel.delta_is_empty()
    for cols, idx in rel.indexes.items():
        assert idx.staged is None
        assert rel.view("curr", cols).to_zset().to_dict() == permuted({(1, 2): 1, (2, 3): 1}, cols)


def test_ensure_index_while_a_delta_is_staged():
    rel = Relation("E", 2)
    rel.load(ZSet.from_rows([(1, 2), (2, 3)]))
    rel.stage(ZSet.from_dict({(2, 3): -1, (3, 1): 1}))
    assert (1, 0) not in rel.indexes
    idx = rel.ensure_index((1, 0))
    assert rel.ensure_index((1, 0)) is idx
    assert idx.view("prev").to_zset().to_dict() == {(2, 1): 1, (3, 2): 1}
    assert idx.view("delta").to_zset().to_dict() == {(1, 3): 1, (3, 2): -1}
    assert idx.view("curr").to_zset().to_dict() == {(1, 3): 1, (2, 1): 1}
    rel.commit()
    assert idx.view("prev").to_zset().to_dict() == {(1, 3): 1, (2, 1): 1}
    assert idx.view("delta").to_zset().to_dict() == {}
    # and rolled back, a new index forgets the delta too
    rel.stage(ZSet.from_rows([(5, 5)]))
    idx2 = rel.ensure_index((1, 0))
    rel.rollback()
    assert idx2.view("curr").to_zset().to_dict() == {(1, 3): 1, (2, 1): 1}


def test_ensure_index_in_all_orders_of_a_ternary_relation():
    rows = {(1, 2, 3): 2, (1, 3, 2): 1, (2, 1, 1): -1}
    rel = Relation("S", 3)
    rel.load(ZSet.from_dict(rows))
    for cols in permutations(range(3)):
        assert rel.view("prev", cols).to_zset().to_dict() == permuted(rows, cols)
    assert len(rel.indexes) == 6


def test_relation_errors():
    with pytest.raises(ArityMismatchError):
        Relation("R", 0)
    rel = Relation("R", 2)
    with pytest.raises(ArityMismatchError, match="relation R has 2 columns, the change has 3"):
        rel.stage(ZSet.from_rows([(1, 2, 3)]))
    with pytest.raises(InputError, match="expected a ZSet, got dict"):
        rel.stage({(1, 2): 1})
    with pytest.raises(ArityMismatchError):
        rel.load(ZSet.from_rows([(1,)]))
    assert rel.delta_is_empty() and rel.contents().to_dict() == {}
