"""IndexedZSet: index_with, the bilinear join and per-key aggregates against the dict
oracle, with ``check()`` on every result and the overflow errors."""

import re

import pytest
import reference_zset as ref
from hypothesis import given
from hypothesis import strategies as st

from wcoj import ArityMismatchError, IndexedZSet, InputError, WeightOverflowError, ZSet
from wcoj.rows import Columns

I64_MIN, I64_MAX = ref.I64_MIN, ref.I64_MAX
DOMAINS = {
    "small": st.integers(-2, 2),
    "wide": st.sampled_from([I64_MIN, -(2**62), 0, 2**62, I64_MAX]),  # lexsort / rank path
}
weights = st.integers(-3, 3).filter(bool)


@st.composite
def relations(draw, n, arity=None, weights=weights):
    """``n`` pairs ``(ZSet, oracle dict)`` of one arity (2 or 3) and one value domain."""
    arity = arity or draw(st.integers(2, 3))
    values = DOMAINS[draw(st.sampled_from(sorted(DOMAINS)))]
    out = []
    for _ in range(n):
        d = draw(st.dictionaries(st.tuples(*[values] * arity), weights, max_size=12))
        out.append((ZSet.from_dict(d, arity=arity), d))
    return out


def checked(z: ZSet) -> dict:
    z.check()
    return z.to_dict()


# ---------------------------------------------------------------- worked examples
def test_index_with_puts_the_key_first():
    z = ZSet.from_dict({(1, 10): 1, (2, 10): 2, (1, 20): -1})
    iz = z.index_with([1])
    assert (iz.n_key, iz.n_value) == (1, 2)
    assert checked(iz.zset) == {(10, 1, 10): 1, (10, 2, 10): 2, (20, 1, 20): -1}
    assert checked(iz.group_keys()) == {(10,): 1, (20,): 1}


@given(relations(1), st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True))
def test_index_with_any_columns_is_the_key_then_the_row(rel, cols):
    """Every key order, the prefixes (rows already in key order, not sorted again) too."""
    [(z, d)] = rel
    cols = [c for c in cols if c < z.arity] or [0]
    iz = z.index_with(cols)
    assert checked(iz.zset) == {tuple(r[c] for c in cols) + r: w for r, w in d.items() if w}


def test_join_on_literals():
    edges = ZSet.from_rows([(1, 2), (2, 3), (2, 4)])
    by_dst, by_src = edges.index_with([1]), edges.index_with([0])
    # paths of length 2: (mid, src, mid, mid, dst)
    assert checked(by_dst.join(by_src)) == {(2, 1, 2, 2, 3): 1, (2, 1, 2, 2, 4): 1}
    paths = by_dst.join(by_src, fn=lambda k: k[:, [1, 4]])
    assert checked(paths) == {(1, 3): 1, (1, 4): 1}


def test_join_multiplies_weights():
    a = IndexedZSet.from_pairs([[0], [1], [2]], [[1], [2], [2]], [1, 2, 1])
    b = IndexedZSet.from_pairs([[0], [1], [1]], [[1], [3], [4]], [1, 1, -1])
    assert checked(a.join(b)) == {(0, 1, 1): 1, (1, 2, 3): 2, (1, 2, 4): -2}
    assert checked(a.join(IndexedZSet.empty(1, 1))) == {}
    assert a.join(IndexedZSet.empty(1, 1)).arity == 3


def test_aggregates_on_literals():
    iz = IndexedZSet.from_pairs([[1], [1], [1], [2], [3]], [[10], [20], [30], [5], [7]],
                                [1, 2, -1, 3, -2])
    assert checked(iz.aggregate("count")) == {(1, 2): 1, (2, 3): 1, (3, -2): 1}
    assert checked(iz.aggregate("sum")) == {(1, 20): 1, (2, 15): 1, (3, -14): 1}
    assert checked(iz.aggregate("min")) == {(1, 10): 1, (2, 5): 1}
    assert checked(iz.aggregate("max")) == {(1, 20): 1, (2, 5): 1}
    assert checked(iz.aggregate("avg")) == {(1, 20, 2): 1, (2, 15, 3): 1, (3, -14, -2): 1}


def test_count_drops_keys_whose_weights_cancel():
    iz = IndexedZSet.from_pairs([[1], [1]], [[10], [20]], [1, -1])
    assert checked(iz.aggregate("count")) == {} and checked(iz.aggregate("avg")) == {}
    assert checked(iz.aggregate("sum")) == {(1, -10): 1}


def test_aggregate_with_empty_key_is_global():
    iz = ZSet.from_dict({(4,): 2, (6,): 1}).index_with([])
    assert checked(iz.aggregate("sum", column=0)) == {(14,): 1}
    assert checked(iz.aggregate("count")) == {(3,): 1}


def test_restrict_keeps_the_given_keys():
    iz = ZSet.from_rows([(1, 2), (2, 3), (3, 4)]).index_with([0])
    assert checked(iz.restrict([(1,), (3,)]).zset) == {(1, 1, 2): 1, (3, 3, 4): 1}


# ---------------------------------------------------------------- properties
@given(relations(1), st.data())
def test_index_with_equals_oracle(rel, data):
    (a, da), = rel
    cols = data.draw(st.lists(st.integers(0, a.arity - 1), max_size=3))
    iz = a.index_with(cols)
    assert iz.n_key == len(cols)
    assert checked(iz.zset) == ref.index_with(da, cols)


@given(relations(2), st.integers(1, 2))
def test_join_equals_nested_loop_oracle(rel, n_key):
    (a, da), (b, db) = rel
    cols = list(range(n_key))
    ia, ib = a.index_with(cols), b.index_with(cols)
    expected = ref.join(ref.index_with(da, cols), ref.index_with(db, cols), n_key)
    assert checked(ia.join(ib)) == expected


@given(relations(2), st.integers(1, 2), st.data())
def test_a_projected_join_equals_the_oracle_projected(rel, n_key, data):
    """A ``Columns`` projection is written by the join kernel itself (only the kept
    columns, any order, repeats allowed); weights of rows that collide add up."""
    (a, da), (b, db) = rel
    cols = list(range(n_key))
    ia, ib = a.index_with(cols), b.index_with(cols)
    width = ia.zset.arity + ib.zset.arity - n_key
    keep = data.draw(st.lists(st.integers(0, width - 1), min_size=1, max_size=width + 1))
    joined = ref.join(ref.index_with(da, cols), ref.index_with(db, cols), n_key)
    expected = {}
    for row, w in joined.items():
        k = tuple(row[c] for c in keep)
        expected[k] = expected.get(k, 0) + w
    expected = {k: w for k, w in expected.items() if w}
    assert checked(ia.join(ib, Columns(keep))) == expected


@given(relations(3))
def test_join_is_bilinear(rel):
    (a1, _), (a2, _), (b, _) = rel
    idx = [1]

    def j(x, y):
        return x.index_with(idx).join(y.index_with(idx))

    assert j(a1 + a2, b) == j(a1, b) + j(a2, b)
    assert j(b, a1 + a2) == j(b, a1) + j(b, a2)
    assert j(-a1, b) == -j(a1, b)
    checked(j(a1 + a2, b))


@given(relations(1), st.sampled_from(["count", "sum", "min", "max", "avg"]), st.integers(0, 1))
def test_aggregate_equals_oracle(rel, kind, n_key):
    (a, da), = rel
    cols = list(range(n_key))
    iz = a.index_with(cols)
    column = a.arity - 1  # value columns are the whole row; aggregate its last column
    try:
        expected = ref.aggregate(ref.index_with(da, cols), n_key, kind, column)
    except ref.Overflow as e:
        with pytest.raises(WeightOverflowError, match=re.escape(str(e.row))):
            iz.aggregate(kind, column)
    else:
        assert checked(iz.aggregate(kind, column)) == expected


@given(relations(2, weights=st.sampled_from([I64_MIN, -(2**62), -3, 2, 2**62, I64_MAX])))
def test_join_overflow_equals_oracle_and_leaves_operands(rel):
    (a, da), (b, db) = rel
    ia, ib = a.index_with([0]), b.index_with([0])
    try:
        expected = ref.join(ref.index_with(da, [0]), ref.index_with(db, [0]), 1)
    except ref.Overflow as e:
        with pytest.raises(WeightOverflowError, match=re.escape(str(e.row))):
            ia.join(ib)
        assert a.to_dict() == da and b.to_dict() == db
        ia.zset.check(), ib.zset.check()
    else:
        assert checked(ia.join(ib)) == expected


# ---------------------------------------------------------------- errors
def test_join_overflow_names_row_and_values():
    a = IndexedZSet.from_pairs([[1]], [[2]], [2**62])
    b = IndexedZSet.from_pairs([[1]], [[3]], [4])
    with pytest.raises(WeightOverflowError,
                       match=r"weight 4611686018427387904 \* 4 does not fit in int64 \(row \(1, 2, 3\)\)"):
        a.join(b)
    assert a.to_dict() == {(1, 2): 2**62} and b.to_dict() == {(1, 3): 4}


def test_sum_and_count_overflow_name_the_group():
    iz = IndexedZSet.from_pairs([[7], [7]], [[2**62], [1]], [2, 1])
    with pytest.raises(WeightOverflowError, match=r"sum of group \(7,\)"):
        iz.aggregate("sum")
    big = IndexedZSet.from_pairs([[7], [7]], [[1], [2]], [I64_MAX, 1])
    with pytest.raises(WeightOverflowError, match=r"count of group \(7,\)"):
        big.aggregate("count")
    assert big.to_dict() == {(7, 1): I64_MAX, (7, 2): 1}


def test_key_width_mismatch_is_refused():
    a = ZSet.from_rows([(1, 2)]).index_with([0])
    b = ZSet.from_rows([(1, 2)]).index_with([0, 1])
    for op in (a.join, a.plus, a.minus):
        with pytest.raises(ArityMismatchError, match="left key has 1 columns, right key 2"):
            op(b)
    with pytest.raises(ArityMismatchError, match="column 2 does not exist"):
        ZSet.from_rows([(1, 2)]).index_with([2])


def test_bad_aggregates_are_refused():
    iz = ZSet.from_rows([(1, 2)]).index_with([0])
    with pytest.raises(InputError, match="unknown aggregate 'median'"):
        iz.aggregate("median")
    with pytest.raises(ArityMismatchError, match="value column 5"):
        iz.aggregate("sum", column=5)
    with pytest.raises(InputError, match="2 keys but 1 values"):
        IndexedZSet.from_pairs([[1], [2]], [[1]])
