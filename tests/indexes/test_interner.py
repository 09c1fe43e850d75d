"""Interner: ids keep type and value, decode is vectorised, longs and instants keep order."""

import uuid
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given
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
