"""Log-structured indexes and relations: the three views of a tick, commit and rollback,
geometric merging (few runs, O(N log N) rows rewritten) and indexes built on demand."""

import math
import threading
from itertools import permutations

import numpy as np
import pytest
import reference_joins as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import indexes.index as index_mod
from indexes import IncrementalIndex, Relation
from indexes.trie import Trie
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


@pytest.fixture(params=["default", "min_run=1", "background"])
def min_run(request, monkeypatch):
    """Run each test with the eager small-run merging on (default) and off (min_run=1),
    so that several runs exist even for small inputs, and off with every merge of 4 rows
    or more on the background thread (background)."""
    if request.param != "default":
        monkeypatch.setattr(index_mod, "MIN_RUN", 1)
    if request.param == "background":
        monkeypatch.setattr(index_mod, "BACKGROUND_ROWS", 4)
        monkeypatch.setattr(index_mod, "BACKGROUND_RATIO", 0)
    return index_mod.MIN_RUN


# ------------------------------------------------------------------ IncrementalIndex
@settings(max_examples=30,  # the fixture only patches a constant: safe to share across examples
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(streams())
def test_views_of_every_tick_equal_the_integral(min_run, s):
    arity, columns, ticks = s
    idx = IncrementalIndex(arity, columns)
    integral = {}
    for delta, commit in ticks:
        idx.stage(ZSet.from_dict(delta, arity=arity))
        assert idx.view("prev").to_zset().to_dict() == permuted(integral, columns)
        assert idx.view("delta").to_zset().to_dict() == permuted(delta, columns)
        assert idx.view("curr").to_zset().to_dict() == permuted(ref.zadd(integral, delta), columns)
        if commit:
            idx.commit()
            integral = ref.zadd(integral, delta)
        else:
            idx.rollback()
        assert idx.view("prev").to_zset().to_dict() == permuted(integral, columns)
        assert idx.view("delta").to_zset().to_dict() == {}
        idx.settle()  # a background merge under way may hold the policy off for a while
        assert idx.view("prev").to_zset().to_dict() == permuted(integral, columns)
        assert all(len(r) for r in idx.runs)           # no empty runs are kept
        for a, b in zip(idx.runs, idx.runs[1:]):       # the geometric invariant
            assert len(a) > index_mod.MERGE_RATIO * len(b) or len(a) < min_run


def test_many_single_row_commits_keep_few_runs(min_run):
    n = 2000
    rng = np.random.default_rng(0)
    idx = IncrementalIndex(2, (1, 0))
    integral = {}
    for i in range(n):
        row = (int(rng.integers(0, 10**6)), i)
        idx.stage(ZSet.from_dict({row: 1}))
        idx.commit()
        integral[row] = 1
    idx.settle()
    assert len(idx.runs) <= 10
    if min_run == 1:
        # rows rewritten by merges: a rebuild per commit would be ~n^2/2 = 2,000,000;
        # geometric merging grows a row's run by >= 5/4 each time it is rewritten
        assert len(idx.runs) <= math.log(n, index_mod.MERGE_RATIO) + 2
        assert idx.n_merged_rows <= n * (math.log(n, 1.25) + 1)
    assert idx.view("prev").to_zset().to_dict() == permuted(integral, (1, 0))


def test_deletes_that_cancel_a_whole_run_drop_it(min_run):
    idx = IncrementalIndex(2, (0, 1))
    for i in range(40):
        idx.stage(ZSet.from_rows([(i, i)]))
        idx.commit()
    for i in range(40):
        idx.stage(ZSet.from_dict({(i, i): -1}))
        idx.commit()
    idx.settle()
    assert idx.runs == [] and idx.view("prev").to_zset().to_dict() == {}


@pytest.fixture
def held_merges(monkeypatch):
    """Background merges wait for ``release`` (set it); ``started`` is set when one does."""
    monkeypatch.setattr(index_mod, "MIN_RUN", 1)
    monkeypatch.setattr(index_mod, "BACKGROUND_RATIO", 0)
    release, started = threading.Event(), threading.Event()
    real_plus = Trie.plus

    def plus(a, b):
        if threading.current_thread() is not threading.main_thread():
            started.set()
            assert release.wait(10)
        return real_plus(a, b)

    monkeypatch.setattr(Trie, "plus", plus)
    yield release, started
    release.set()


def test_a_large_merge_runs_in_the_background_and_no_commit_waits_for_it(monkeypatch, held_merges):
    release, started = held_merges
    monkeypatch.setattr(index_mod, "BACKGROUND_ROWS", 8)
    idx = IncrementalIndex(2, (1, 0))
    integral = {}
    for i in range(12):  # runs of 8 and 4 rows, then commits while their merge waits
        delta = {(i, j): 1 for j in range(8 if i == 0 else 4 if i == 1 else 1)}
        idx.stage(ZSet.from_dict(delta))
        idx.commit()
        integral.update(delta)
        assert idx.view("prev").to_zset().to_dict() == permuted(integral, (1, 0))
    assert started.wait(10) and idx._pending is not None  # under way, not waited for
    assert sum(len(r) for r in idx.runs) == len(integral)
    release.set()
    idx.settle()
    assert idx._pending is None and idx.view("prev").to_zset().to_dict() == permuted(integral, (1, 0))
    for a, b in zip(idx.runs, idx.runs[1:]):
        assert len(a) > index_mod.MERGE_RATIO * len(b)


def test_a_merge_small_next_to_the_tick_that_asks_for_it_runs_in_the_commit(monkeypatch):
    monkeypatch.setattr(index_mod, "MIN_RUN", 1)
    monkeypatch.setattr(index_mod, "BACKGROUND_ROWS", 8)
    idx = IncrementalIndex(2, (0, 1))
    idx.load(ZSet.from_rows([(i, i) for i in range(40)]))
    idx.stage(ZSet.from_rows([(100, 0), (101, 1)]))
    idx.commit()
    assert [len(r) for r in idx.runs] == [40, 2]
    idx.stage(ZSet.from_rows([(102 + i, i) for i in range(8)]))  # the last run grows to 10: 40 + 10 merge
    idx.commit()
    assert idx._pending is None and [len(r) for r in idx.runs] == [50]  # 50 rows < 32 x 8: here


def test_load_while_a_merge_is_under_way_drops_its_result(monkeypatch, held_merges):
    release, started = held_merges
    monkeypatch.setattr(index_mod, "BACKGROUND_ROWS", 2)
    idx = IncrementalIndex(2, (0, 1))
    idx.load(ZSet.from_rows([(i, i) for i in range(12)]))
    for i in range(3):  # a new run grows to 3 rows, a quarter of the base: they merge
        idx.stage(ZSet.from_rows([(100 + i, i)]))
        idx.commit()
    assert started.wait(10) and idx._pending is not None
    future = idx._pending[0]
    idx.load(ZSet.from_rows([(9, 9)]))
    release.set()
    future.result(10)
    idx.stage(ZSet.from_rows([(8, 8)]))
    idx.commit()
    idx.settle()
    assert idx.view("prev").to_zset().to_dict() == {(8, 8): 1, (9, 9): 1}


def test_load_replaces_the_committed_state():
    idx = IncrementalIndex(2, (1, 0))
    idx.stage(ZSet.from_rows([(1, 2)]))
    idx.commit()
    idx.stage(ZSet.from_rows([(7, 7)]))
    idx.load(ZSet.from_rows([(3, 4), (5, 6)]))
    assert idx.view("prev").to_zset().to_dict() == {(4, 3): 1, (6, 5): 1}
    assert idx.view("delta").to_zset().to_dict() == {}
    assert len(idx.runs) == 1


def test_index_errors():
    with pytest.raises(ArityMismatchError, match="permutation"):
        IncrementalIndex(2, (0, 0))
    with pytest.raises(InputError, match="unknown view 'next'"):
        IncrementalIndex(2, (0, 1)).view("next")


# ------------------------------------------------------------------ Relation
@pytest.fixture(params=["one thread", "parallel stage"])
def parallel_stage(request, monkeypatch):
    """Stage every change on one index after the other, or on all at once on threads
    (as a change of ``PARALLEL_STAGE_ROWS`` rows is)."""
    if request.param == "parallel stage":
        monkeypatch.setattr(index_mod, "PARALLEL_STAGE_ROWS", 1)


@settings(max_examples=25,  # the fixture only patches a constant: safe to share across examples
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(deltas(3, domain=3), st.booleans(), st.permutations(range(3))), min_size=1, max_size=8))
def test_relation_views_in_every_order_equal_the_integral(parallel_stage, ticks):
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


@settings(max_examples=25,  # the spy only counts calls: safe to share across examples
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.tuples(*[st.integers(0, 3)] * 3), weights, min_size=1, max_size=20),
       st.lists(st.tuples(deltas(3, domain=3), st.booleans()), min_size=1, max_size=8))
def test_relation_stages_small_changes_on_every_index_in_one_call(monkeypatch, base, ticks):
    """With a run in every index, a tick's change is staged on all of them by one kernel
    call; its views, and the tables the delta rule reads, are those of staging each."""
    calls = []
    real = index_mod.stage_runs_plus
    monkeypatch.setattr(index_mod, "stage_runs_plus", lambda *a: calls.append(1) or real(*a))
    rel = Relation("S", 3)
    rel.load(ZSet.from_dict(base))
    orders = list(permutations(range(3)))
    for cols in orders:
        rel.ensure_index(cols)
    integral = dict(base)
    for delta, commit in ticks:
        before = len(calls)
        rel.stage(ZSet.from_dict(delta, arity=3))
        assert len(calls) - before == (1 if delta and all(i.runs for i in rel.indexes.values()) else 0)
        for cols in orders:
            for kind, want in (("prev", integral), ("delta", delta), ("curr", ref.zadd(integral, delta))):
                view = rel.view(kind, cols)
                assert view.to_zset().to_dict() == permuted(want, cols)
                for part in view.parts:  # each a well-formed trie: rows strictly increasing
                    rows = [tuple(r) for r in part.to_zset().keys.tolist()]
                    assert rows == sorted(set(rows))
                table, parts = rel.view_table(kind, cols)
                assert parts == len(view.parts) and table.tolist() == view.parts_table().tolist()
        if commit:
            rel.commit()
            integral = ref.zadd(integral, delta)
        else:
            rel.rollback()


@pytest.mark.parametrize("span", [50, 2**40], ids=["packs", "does not pack"])
def test_relation_stages_a_change_of_a_thousand_rows_in_one_call(monkeypatch, span):
    """Above ``SMALL_ROWS`` rows the kernel sorts by packing the columns into one int64
    when they fit in 63 bits, else column by column."""
    calls = []
    real = index_mod.stage_runs_plus
    monkeypatch.setattr(index_mod, "stage_runs_plus", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(3)
    rel = Relation("S", 3)
    base = {tuple(r): 1 for r in rng.integers(0, 50, (300, 3)).tolist()}
    rel.load(ZSet.from_dict(base))
    orders = list(permutations(range(3)))
    for cols in orders:
        rel.ensure_index(cols)
    delta = {tuple(r): int(w) for r, w in zip(rng.integers(0, span, (1000, 3)).tolist(), rng.integers(1, 3, 1000))}
    delta.update({r: -1 for r in list(base)[:50]})
    rel.stage(ZSet.from_dict(delta))
    assert len(calls) == 1
    for cols in orders:
        for kind, want in (("prev", base), ("delta", delta), ("curr", ref.zadd(base, delta))):
            assert rel.view(kind, cols).to_zset().to_dict() == permuted(want, cols)
    rel.commit()
    assert rel.contents().to_dict() == ref.zadd(base, delta)


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


def test_an_index_that_fails_to_stage_leaves_the_change_on_none(parallel_stage):
    """A change too large for ``_stage_together``: if one index fails to stage it (here
    a ``MemoryError``), the others, which did, forget it too."""
    rel = Relation("E", 2)
    rel.load(ZSet.from_rows([(1, 2), (2, 3)]))
    failing = rel.ensure_index((1, 0))

    def fail(delta):
        raise MemoryError("no room for the change")

    failing.stage = fail
    with pytest.raises(MemoryError):
        rel.stage(ZSet.from_rows([(i, i + 1) for i in range(10, 20 + index_mod.TOGETHER_ROWS)]))
    assert rel.delta_is_empty()
    for cols, idx in rel.indexes.items():
        assert idx.staged is None and idx.tail is None
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
