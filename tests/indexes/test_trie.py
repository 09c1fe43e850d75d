"""Tries and trie views against a dict-of-tuples oracle: building and changing a trie in
place (sorted and dense level 0, growth), compact tries, and the ``PrefixExtender``
methods (``count``, ``propose``, ``intersect``, ``weight``) over sums of several tries."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexes.trie import Trie, TrieView
from wcoj import config
from wcoj.errors import ArityMismatchError, WeightOverflowError
from wcoj.extenders import PrefixExtender
from wcoj.tables import TrieTable
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


def _compact(d, arity):
    z = ZSet.from_dict(d, arity=arity)
    return TrieTable.compact(z.keys, z.weights)


def test_worked_example_compact_levels():
    t = _compact({(1, 2, 5): 1, (1, 2, 6): 2, (1, 4, 5): -1, (3, 0, 0): 7}, 3)
    assert [t.level_values(j)[:t.level_size(j)].tolist() for j in range(3)] == [[1, 3], [2, 4, 0], [5, 6, 5, 0]]
    assert t.rows == 4 and t.arity == 3
    keys, w = t.rows_arrays()
    assert keys.tolist() == [[1, 2, 5], [1, 2, 6], [1, 4, 5], [3, 0, 0]] and w.tolist() == [1, 2, -1, 7]


@pytest.fixture(params=["sorted", "dense"])
def level0(request, monkeypatch):
    """Level 0 sorted (the default for a few values) or dense from one value on."""
    if request.param == "dense":
        monkeypatch.setattr(config, "DENSE_MIN", 1)
    return request.param


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tries())
def test_tries_round_trip_in_order(level0, arg):
    arity, d = arg
    for t in (_trie(d, arity), _compact(d, arity)):
        z = t.to_zset() if isinstance(t, Trie) else ZSet(*t.rows_arrays())
        assert z.to_dict() == dict(sorted(d.items()))
        z.check()
    assert (_trie(d, arity).part.dense is not None) == (level0 == "dense" and bool(d) and
                                                        max(r[0] for r in d) - min(r[0] for r in d) + 1
                                                        <= config.DENSE_SPAN * len({r[0] for r in d}))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 3).flatmap(lambda k: st.tuples(st.just(k), zsets(k), st.lists(zsets(k, 6), max_size=6))))
def test_apply_in_place_equals_the_sum(level0, arg):
    """Changes applied in place (with room to grow by exactly what they need) equal the
    Z-set sum after every change."""
    arity, base, changes = arg
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(config, "SLACK", 0)
        mp.setattr(config, "GROWTH", 1.0)
        t = _trie(base, arity)
        total = ZSet.from_dict(base, arity=arity)
        for ch in changes:
            z = ZSet.from_dict(ch, arity=arity)
            t.apply(z.keys, z.weights)
            total = total + z
            assert t.to_zset() == total and t.n_rows == len(total)


def test_apply_refuses_an_overflow_and_changes_nothing():
    t = _trie({(1, 2): 2**63 - 1, (3, 4): 1}, 2)
    with pytest.raises(WeightOverflowError, match=r"row \(1, 2\).*9223372036854775807 \+ 1"):
        t.apply(np.array([[3, 4], [1, 2]]), np.array([-1, 1]))
    assert t.to_zset().to_dict() == {(1, 2): 2**63 - 1, (3, 4): 1}


def _prefixes(draw, d, rows, domain=5):
    """Prefixes of length d: some present in rows, some random."""
    present = sorted({r[:d] for r in rows})
    pool = st.sampled_from(present) if present else st.nothing()
    one = st.one_of(pool, st.tuples(*[st.integers(0, domain)] * d)) if d else st.just(())
    return draw(st.lists(one, max_size=8))


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
    v = TrieView([_trie(p, arity).part if i % 2 else _compact(p, arity) for i, p in enumerate(parts)], arity)
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
    base = _trie({(1, 2): 1, (1, 3): 1, (2, 3): 1}, 2).part
    delta = _compact({(1, 3): -1, (1, 4): 1}, 2)
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
    t = Trie(2)
    assert len(t) == 0 and t.to_zset().to_dict() == {}
    v = TrieView([t.part], 2)
    assert v.parts == [] and v.arity == 2
    P = np.array([[1]])
    assert v.count(P).tolist() == [0]
    assert [a.tolist() for a in v.propose(P)] == [[], []]
    assert v.intersect(P, np.array([1])).tolist() == [False]
    assert v.weight(np.array([[1, 2]])).tolist() == [0]
    assert TrieView([], 3).to_zset() == ZSet.empty(3)


def test_arity_errors():
    with pytest.raises(ArityMismatchError):
        Trie(0)
    with pytest.raises(ArityMismatchError):
        TrieView([Trie(2).part], 3)
