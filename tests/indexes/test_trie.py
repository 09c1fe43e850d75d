"""Tries and trie views against a dict-of-tuples oracle: the level layout, round trips,
``descend``, and the ``PrefixExtender`` methods (``count``, ``propose``, ``intersect``,
``weight``) over sums of several tries."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import indexes.trie as trie_mod
from indexes.trie import Trie, TrieView
from wcoj.errors import ArityMismatchError, WeightOverflowError
from wcoj.extenders import PrefixExtender
from wcoj.zset import ZSet

I64 = np.int64
weights = st.integers(-3, 3).filter(bool)


def zsets(arity, max_size=15, domain=4):
    return st.dictionaries(st.tuples(*[st.integers(0, domain)] * arity), weights, max_size=max_size)


@st.composite
def tries(draw, max_size=15):
    arity = draw(st.integers(1, 3))
    return arity, draw(zsets(arity, max_size))


def _trie(d, arity):
    return Trie.from_zset(ZSet.from_dict(d, arity=arity))


def test_worked_example_levels():
    t = _trie({(1, 2, 5): 1, (1, 2, 6): 2, (1, 4, 5): -1, (3, 0, 0): 7}, 3)
    assert [v.tolist() for v in t.values] == [[1, 3], [2, 4, 0], [5, 6, 5, 0]]
    assert [o.tolist() for o in t.offsets] == [[0, 2, 3], [0, 2, 3, 4]]
    assert t.weights.tolist() == [1, 2, -1, 7]
    assert len(t) == 4 and t.arity == 3
    lo, hi = t.descend(np.array([[1, 2], [1, 3], [3, 0]]))
    assert (lo.tolist(), hi.tolist()) == ([0, 0, 3], [2, 0, 4])


@given(tries())
def test_levels_are_csr_and_round_trip(arg):
    arity, d = arg
    t = _trie(d, arity)
    assert t.to_zset().to_dict() == dict(sorted(d.items()))
    t.to_zset().check()
    assert len(t.values[-1]) == len(t.weights) == len(d)
    for j in range(arity - 1):
        off = t.offsets[j]
        assert len(off) == len(t.values[j]) + 1 and off[0] == 0 and off[-1] == len(t.values[j + 1])
        assert np.all(np.diff(off) > 0)            # every inner node has a child
        for p in range(len(t.values[j])):           # children sorted and unique
            assert np.all(np.diff(t.values[j + 1][off[p]:off[p + 1]]) > 0)
    assert np.all(np.diff(t.values[0]) > 0)
    for a in (*t.values, *t.offsets, t.weights):
        assert not a.flags.writeable


def _prefixes(draw, d, rows, domain=5):
    """Prefixes of length d: some present in rows, some random."""
    present = sorted({r[:d] for r in rows})
    pool = st.sampled_from(present) if present else st.nothing()
    one = st.one_of(pool, st.tuples(*[st.integers(0, domain)] * d)) if d else st.just(())
    return draw(st.lists(one, max_size=8))


@given(tries(), st.data())
def test_descend_finds_the_children_of_each_prefix(arg, data):
    arity, d = arg
    t = _trie(d, arity)
    depth = data.draw(st.integers(0, arity))
    prefixes = _prefixes(data.draw, depth, d)
    lo, hi = t.descend(np.array(prefixes, dtype=I64).reshape(len(prefixes), depth))
    for p, l, h in zip(prefixes, lo.tolist(), hi.tolist()):
        under = sorted({r[depth] for r in d if r[:depth] == p}) if depth < arity else None
        if depth < arity:
            assert t.values[depth][l:h].tolist() == under
        else:
            assert (h - l, t.weights[l] if h > l else 0) == ((1, d[p]) if p in d else (0, 0))


def test_descend_on_an_empty_trie():
    lo, hi = Trie.empty(2).descend(np.array([[1]]))
    assert (lo.tolist(), hi.tolist()) == ([0], [0])


# ------------------------------------------------------------------ views over several tries
@st.composite
def views(draw):
    arity = draw(st.integers(1, 3))
    parts = draw(st.lists(zsets(arity, max_size=10), max_size=4))
    return arity, parts


def _children(part, prefix):
    d = len(prefix)
    return {r[d] for r in part if r[:d] == prefix}


@given(views(), st.data())
def test_trie_view_methods_equal_a_dict_oracle(arg, data):
    arity, parts = arg
    v = TrieView([_trie(p, arity) for p in parts], arity)
    assert isinstance(v, PrefixExtender)
    all_rows = {r for p in parts for r in p}
    depth = data.draw(st.integers(0, arity - 1))
    prefixes = _prefixes(data.draw, depth, all_rows)
    P = np.array(prefixes, dtype=I64).reshape(len(prefixes), depth)

    # count: an upper bound, exactly the per-part child counts added up
    assert v.count(P).tolist() == [sum(len(_children(p, x)) for p in parts) for x in prefixes]

    # propose: the union of the parts' children, by row then value
    rows, vals = v.propose(P)
    want = [(i, c) for i, x in enumerate(prefixes) for c in sorted(set().union(*(_children(p, x) for p in parts)))]
    assert list(zip(rows.tolist(), vals.tolist())) == want

    # intersect: membership in that union
    cands = data.draw(st.lists(st.integers(0, 5), min_size=len(prefixes), max_size=len(prefixes)))
    mask = v.intersect(P, np.array(cands, dtype=I64))
    assert mask.tolist() == [c in set().union(*(_children(p, x) for p in parts)) for x, c in zip(prefixes, cands)]

    # weight: the sum over parts (0 where absent or cancelled)
    full = sorted(all_rows) + [tuple(data.draw(st.integers(0, 5)) for _ in range(arity))]
    got = v.weight(np.array(full, dtype=I64).reshape(len(full), arity)).tolist()
    assert got == [sum(p.get(r, 0) for p in parts) for r in full]

    # to_zset: the consolidated sum
    total = {}
    for p in parts:
        for r, w in p.items():
            total[r] = total.get(r, 0) + w
    assert v.to_zset().to_dict() == {r: w for r, w in sorted(total.items()) if w}


def test_trie_view_worked_example_with_cancellation():
    base = _trie({(1, 2): 1, (1, 3): 1, (2, 3): 1}, 2)
    delta = _trie({(1, 3): -1, (1, 4): 1}, 2)
    v = TrieView([base, delta])
    P = np.array([[1], [2], [9]])
    assert v.count(P).tolist() == [4, 1, 0]
    rows, vals = v.propose(P)
    assert (rows.tolist(), vals.tolist()) == ([0, 0, 0, 1], [2, 3, 4, 3])   # 3 proposed; weight decides
    assert v.intersect(P, np.array([3, 2, 3])).tolist() == [True, False, False]
    assert v.weight(np.array([[1, 3], [1, 4], [2, 3], [5, 5]])).tolist() == [0, 1, 1, 0]
    assert v.to_zset().to_dict() == {(1, 2): 1, (1, 4): 1, (2, 3): 1}
    assert len(v) == 5


def test_empty_tries_and_views():
    t = Trie.empty(2)
    assert len(t) == 0 and t.to_zset().to_dict() == {}
    v = TrieView([t], 2)
    assert v.parts == [] and v.arity == 2
    P = np.array([[1]])
    assert v.count(P).tolist() == [0]
    assert [a.tolist() for a in v.propose(P)] == [[], []]
    assert v.intersect(P, np.array([1])).tolist() == [False]
    assert v.weight(np.array([[1, 2]])).tolist() == [0]
    assert TrieView([], 3).to_zset() == ZSet.empty(3)


def test_arity_errors():
    with pytest.raises(ArityMismatchError):
        Trie.from_zset(ZSet.empty(0))
    with pytest.raises(ArityMismatchError):
        TrieView([Trie.empty(2)], 3)


@pytest.fixture(params=["flat", "exact"])
def merge_layout(request, monkeypatch):
    """Trie.plus writes small sums into a flat buffer and large ones (over PIN_ROWS rows)
    with exact room per level: PIN_ROWS = 0 sends every merge down the second path."""
    if request.param == "exact":
        monkeypatch.setattr(trie_mod, "PIN_ROWS", 0)
    return request.param


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the fixture only patches a constant
@given(st.integers(1, 3).flatmap(lambda k: st.tuples(st.just(k), zsets(k), zsets(k))))
def test_plus_of_two_tries_is_the_trie_of_the_sum(merge_layout, arg):
    arity, a, b = arg
    got = _trie(a, arity).plus(_trie(b, arity))
    want = _trie((ZSet.from_dict(a, arity=arity) + ZSet.from_dict(b, arity=arity)).to_dict(), arity)
    assert [v.tolist() for v in got.values] == [v.tolist() for v in want.values]
    assert [o.tolist() for o in got.offsets] == [o.tolist() for o in want.offsets]
    assert got.weights.tolist() == want.weights.tolist()
    assert got.to_zset().to_dict() == want.to_zset().to_dict()


def test_plus_errors(merge_layout):
    big = _trie({(1, 2): 2**63 - 1}, 2)
    with pytest.raises(WeightOverflowError, match=r"row \(1, 2\).*9223372036854775807 \+ 1"):
        big.plus(_trie({(1, 2): 1}, 2))
    with pytest.raises(ArityMismatchError):
        big.plus(_trie({(1,): 1}, 1))
