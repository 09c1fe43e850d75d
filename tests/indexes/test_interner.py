"""Interner: ids keep type and value, decode is vectorised, longs and instants keep order."""

import uuid
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from indexes.interner import MAX_VALUE_DEPTH, Interner, check_depth, tag_of
from queries.edn import Keyword
from wcoj.errors import InputError

values = st.one_of(st.integers(-2**55, 2**55 - 1), st.integers(2**60, 2**62), st.floats(
    allow_nan=False), st.text(max_size=5), st.booleans(), st.uuids(),
    st.builds(Keyword, st.from_regex(r":[a-z]{1,3}/[a-z]{1,3}", fullmatch=True)),
    st.datetimes(timezones=st.just(timezone.utc)))


@given(st.lists(values, max_size=30))
def test_decode_inverts_encode_with_type(xs):
    it = Interner()
    ids = it.encode_many(xs)
    back = it.decode(ids).tolist()
    assert back == xs
    assert [type(b) for b in back] == [type(x) for x in xs]
    assert it.encode_many(xs).tolist() == ids.tolist()  # stable


@given(st.lists(st.integers(-2**55, 2**55 - 1), min_size=2, max_size=20))
def test_long_ids_sort_like_the_numbers(xs):
    it = Interner()
    ids = it.encode_many(np.array(xs, dtype=np.int64))
    assert np.argsort(ids, kind="stable").tolist() == np.argsort(xs, kind="stable").tolist()


def test_instant_ids_sort_like_the_times():
    it = Interner()
    t0 = datetime(1931, 4, 7, tzinfo=timezone.utc)
    ts = [t0 + timedelta(days=d, microseconds=m) for d, m in [(3, 0), (0, 5), (0, 1), (-400, 0)]]
    ids = [it.encode(t) for t in ts]
    assert sorted(range(4), key=ids.__getitem__) == sorted(range(4), key=ts.__getitem__)


def test_types_do_not_collide():
    it = Interner()
    ids = {it.encode(x) for x in (1, 1.0, True, "1", Keyword(":1"), Decimal(1))}
    assert len(ids) == 6
    assert len(set(tag_of(list(ids)).tolist())) == 6
    assert it.decode_one(it.ref(7)) == 7
    assert it.lookup("never seen") is None and it.lookup(uuid.UUID(int=1)) is None


def _nested(depth, leaf=()):
    value = leaf
    for _ in range(depth - 1):
        value = (value,) if isinstance(leaf, tuple) else [value]
    return value


def test_values_nested_past_the_limit_are_refused_and_not_interned():
    it = Interner()
    ok = it.encode(_nested(MAX_VALUE_DEPTH))
    n = len(it)
    for leaf in ((), []):
        deep = _nested(MAX_VALUE_DEPTH + 1, leaf)
        with pytest.raises(InputError, match=f"more than {MAX_VALUE_DEPTH} levels deep "
                           r"at value\[0\]\[0\]") as info:
            it.encode(deep)
        assert len(str(info.value)) < 200
        with pytest.raises(InputError):
            it.lookup(deep)
    assert len(it) == n and it.encode(_nested(MAX_VALUE_DEPTH)) == ok


def test_check_depth_names_the_path_through_maps_and_sets():
    check_depth({"a": [frozenset({(1,)})]}, limit=4)
    with pytest.raises(InputError, match=r"at tx\['a'\]\[0\]\[#\{\}\]"):
        check_depth({"a": [frozenset({(1,)})]}, limit=3, what="tx")


def _depth(x):
    """The nesting depth of ``x``, recursively (the oracle of ``check_depth``)."""
    if isinstance(x, dict):
        return 1 + max([_depth(v) for v in x.values()] + [_depth(k) for k in x], default=0)
    if isinstance(x, (list, tuple, set, frozenset)):
        return 1 + max((_depth(v) for v in x), default=0)
    return 0


_scalars = st.one_of(st.integers(-5, 5), st.text(max_size=2), st.builds(Keyword, st.just(":a/b")))
_hashables = st.recursive(_scalars, lambda inner: st.one_of(
    st.tuples(inner, inner), st.frozensets(inner, max_size=3)), max_leaves=6)
_trees = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner), st.sets(_hashables, max_size=3),
    st.dictionaries(_hashables, inner, max_size=3)), max_leaves=25)


@given(st.lists(_trees, max_size=6), st.integers(1, 7))
@example([{((1,),): 1}], 3)  # only a map key nests past the limit
def test_check_depth_refuses_exactly_what_nests_past_the_limit(tx, limit):
    """The level-by-level fast pass and the path-keeping pass agree with a plain recursive
    depth on mixed lists, tuples, sets and maps (collections as map keys too)."""
    if _depth(tx) > limit:
        with pytest.raises(InputError, match="nests more than"):
            check_depth(tx, limit=limit, what="tx")
    else:
        check_depth(tx, limit=limit, what="tx")
