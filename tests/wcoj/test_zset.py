"""ZSet and consolidate: worked examples, properties against the dict-of-tuples oracle
(``tests/reference_zset.py``), ``check()`` after every operation, and the typed errors."""

import math
import re

import numpy as np
import pytest
import reference_zset as ref
from hypothesis import example, given
from hypothesis import strategies as st

from wcoj import ArityMismatchError, InputError, WeightOverflowError, ZSet, consolidate
from wcoj.zset import checked_weights

I64_MIN, I64_MAX = ref.I64_MIN, ref.I64_MAX

# Small domains force collisions and cancellations. "tight" packs two columns into 62
# bits, so the row index fits beside them only for tiny inputs (both sort paths of
# wcoj.rows); "wide" spans more than 63 bits together, which forces the lexsort fallback.
DOMAINS = {
    "small": st.integers(-3, 3),
    "tight": st.sampled_from([0, 1, 2**31 - 1]),
    "wide": st.sampled_from([I64_MIN, -(2**62), -1, 0, 2**62, I64_MAX]),
}
small_weights = st.integers(-3, 3)
extreme_weights = st.sampled_from([I64_MIN, I64_MIN + 1, -(2**62), -1, 1, 2**62, I64_MAX - 1, I64_MAX])


@st.composite
def raw(draw, arity, values, weights=small_weights, max_size=25):
    """Unconsolidated ``(rows, weights)``: duplicates, zeros and cancellations welcome."""
    rows = draw(st.lists(st.tuples(*[values] * arity), max_size=max_size))
    return rows, draw(st.lists(weights, min_size=len(rows), max_size=len(rows)))


@st.composite
def families(draw, n, weights=small_weights):
    """``n`` pairs ``(ZSet, oracle dict)`` sharing one arity and one value domain."""
    arity = draw(st.integers(1, 3))
    values = DOMAINS[draw(st.sampled_from(sorted(DOMAINS)))]
    out = []
    for _ in range(n):
        rows, ws = draw(raw(arity, values, weights))
        # extreme weights would overflow while building; keep one weight per row then
        d = ref.consolidate(rows, ws) if weights is small_weights else \
            {r: w for r, w in sorted(dict(zip(rows, ws)).items()) if w}
        z = ZSet.from_dict(d, arity=arity)
        z.check()
        out.append((z, d))
    return out


def checked(z: ZSet) -> dict:
    z.check()
    return z.to_dict()


# ---------------------------------------------------------------- worked examples
def test_consolidate_sorts_adds_and_drops_zeros():
    k, w = consolidate(np.array([[2, 1], [1, 5], [2, 1], [0, 9], [0, 0]]),
                       np.array([1, 4, -1, 3, 0]))
    assert k.tolist() == [[0, 9], [1, 5]] and w.tolist() == [3, 4]
    assert k.dtype == np.int64 and w.dtype == np.int64


def test_consolidate_of_sorted_input_only_drops_zeros():
    k, w = consolidate(np.array([[0, 1], [0, 2], [3, 0]]), np.array([5, 0, -2]))
    assert k.tolist() == [[0, 1], [3, 0]] and w.tolist() == [5, -2]


def test_from_rows_repr_and_conversions():
    z = ZSet.from_rows([(2, 1), (1, 5), (2, 1)], [1, 4, 1])
    assert repr(z) == "ZSet(arity=2, {(1, 5): 4, (2, 1): 2})"
    assert z.to_rows() == [((1, 5), 4), ((2, 1), 2)]
    assert z.to_dict() == {(1, 5): 4, (2, 1): 2}
    assert (len(z), z.arity, z.total(), z.weight_of((2, 1)), z.weight_of((9, 9))) == (2, 2, 6, 2, 0)
    assert all(type(x) is int for row, w in z.to_rows() for x in (*row, w))
    z.check()


def test_repr_of_large_zset_is_short():
    z = ZSet.from_rows([(i,) for i in range(20)])
    assert repr(z).endswith("(7,): 1, ... 12 more})")


def test_group_operations_on_literals():
    a = ZSet.from_dict({(1, 2): 1, (2, 3): 2})
    b = ZSet.from_dict({(2, 3): -2, (3, 1): 5})
    assert checked(a + b) == {(1, 2): 1, (3, 1): 5}
    assert checked(a - b) == {(1, 2): 1, (2, 3): 4, (3, 1): -5}
    assert checked(-a) == {(1, 2): -1, (2, 3): -2}
    assert checked(3 * a) == checked(a * 3) == {(1, 2): 3, (2, 3): 6}
    assert checked(a.scale(0)) == {} and (a - a).is_empty()


def test_distinct_positive_filter_map_select_on_literals():
    z = ZSet.from_dict({(0, 0): 1, (1, 0): 2, (2, 1): -3})
    assert checked(z.distinct()) == {(0, 0): 1, (1, 0): 1}
    assert checked(z.positive()) == {(0, 0): 1, (1, 0): 2}
    assert checked(z.filter(lambda k: k[:, 0] >= 1)) == {(1, 0): 2, (2, 1): -3}
    assert checked(z.filter(lambda r: r[1] == 0, rowwise=True)) == {(0, 0): 1, (1, 0): 2}
    assert checked(z.map(lambda k: k[:, 1])) == {(0,): 3, (1,): -3}
    assert checked(z.map(lambda r: (r[1], r[0]), rowwise=True)) == {(0, 0): 1, (0, 1): 2, (1, 2): -3}
    assert checked(z.select([1])) == {(0,): 3, (1,): -3}
    assert checked(z.select([1, 0, 1])) == {(0, 0, 0): 1, (0, 1, 0): 2, (1, 2, 1): -3}


def test_arity_zero_zset_has_at_most_one_row():
    z = ZSet.from_rows([(), ()], arity=0)
    assert checked(z) == {(): 2}
    assert checked(z - z) == {} and checked(ZSet.empty(0)) == {}


def test_arrays_are_read_only():
    z = ZSet.from_rows([(1, 2)])
    with pytest.raises(ValueError):
        z.keys[0, 0] = 5
    with pytest.raises(ValueError):
        z.weights[0] = 5


# ---------------------------------------------------------------- properties
@given(st.sampled_from(sorted(DOMAINS)), st.integers(0, 3), st.data())
def test_consolidate_equals_oracle(domain, arity, data):
    rows, ws = data.draw(raw(arity, DOMAINS[domain]))
    keys = np.array(rows, dtype=np.int64).reshape(len(rows), arity)
    k, w = consolidate(keys, np.array(ws, dtype=np.int64))
    z = ZSet(k, w)
    assert checked(z) == ref.consolidate(rows, ws)
    assert ZSet.from_arrays(keys, ws, arity=arity) == z


@given(st.sampled_from(sorted(DOMAINS)), st.integers(1, 3), st.data())
def test_consolidate_overflow_equals_oracle_at_int64_extremes(domain, arity, data):
    rows, ws = data.draw(raw(arity, DOMAINS[domain], extreme_weights))
    try:
        expected = ref.consolidate(rows, ws)
    except ref.Overflow as e:
        with pytest.raises(WeightOverflowError, match=f"row {re.escape(str(e.row))}"):
            ZSet.from_rows(rows, ws, arity=arity)
    else:
        assert checked(ZSet.from_rows(rows, ws, arity=arity)) == expected


@given(families(3))
def test_plus_is_associative(f):
    (a, _), (b, _), (c, _) = f
    assert (a + b) + c == a + (b + c)
    checked((a + b) + c)


@given(families(2))
def test_plus_is_commutative_and_equals_oracle(f):
    (a, da), (b, db) = f
    assert checked(a + b) == ref.plus(da, db)
    assert a + b == b + a


@given(families(1))
def test_zero_and_inverse(f):
    (a, da), = f
    zero = ZSet.empty(a.arity)
    assert a + zero == a and zero + a == a
    assert checked(a + (-a)) == {} and checked(a - a) == {}
    assert checked(-a) == ref.negate(da)
    assert -(-a) == a


@given(families(2))
def test_minus_is_plus_of_negation(f):
    (a, da), (b, db) = f
    assert checked(a - b) == ref.minus(da, db)
    assert a - b == a + (-b)


@given(families(2, extreme_weights))
def test_plus_overflow_equals_oracle_and_leaves_operands(f):
    (a, da), (b, db) = f
    try:
        expected = ref.plus(da, db)
    except ref.Overflow as e:
        with pytest.raises(WeightOverflowError, match=re.escape(str(e.row))):
            a + b
        assert a.to_dict() == da and b.to_dict() == db
        a.check(), b.check()
    else:
        assert checked(a + b) == expected


@given(families(2), st.integers(-4, 4))
def test_scale_equals_oracle_and_distributes(f, c):
    (a, da), (b, db) = f
    assert checked(a.scale(c)) == ref.scale(da, c)
    assert (a + b).scale(c) == a.scale(c) + b.scale(c)


@given(families(1, extreme_weights), st.sampled_from([-2, -1, 2, 3, I64_MAX, I64_MIN]))
def test_scale_and_negate_overflow_equal_oracle(f, c):
    (a, da), = f
    for op, oracle in [(lambda: a.scale(c), lambda: ref.scale(da, c)),
                       (lambda: -a, lambda: ref.negate(da))]:
        try:
            expected = oracle()
        except ref.Overflow as e:
            with pytest.raises(WeightOverflowError, match=re.escape(str(e.row))):
                op()
            assert a.to_dict() == da
        else:
            assert checked(op()) == expected


@given(families(1))
def test_unary_operators_equal_oracle(f):
    (a, da), = f
    assert checked(a.distinct()) == ref.distinct(da)
    assert checked(a.positive()) == ref.positive(da)
    assert checked(a.filter(lambda k: k[:, 0] > 0)) == ref.filter_rows(da, lambda r: r[0] > 0)
    assert checked(a.filter(lambda r: sum(r) % 2 == 0, rowwise=True)) == \
        ref.filter_rows(da, lambda r: sum(r) % 2 == 0)
    rev = list(range(a.arity))[::-1]
    assert checked(a.select(rev)) == ref.select(da, rev)
    assert checked(a.select([0])) == ref.select(da, [0])
    assert checked(a.map(lambda k: k[:, 0] // 2)) == ref.map_rows(da, lambda r: (r[0] // 2,))
    assert checked(a.map(lambda r: (r[-1], 7), rowwise=True, arity=2)) == \
        ref.map_rows(da, lambda r: (r[-1], 7))


@given(families(2))
def test_linear_operators_commute_with_plus(f):
    (a, _), (b, _) = f
    for op in (ZSet.negate, lambda z: z.select([0]), lambda z: z.filter(lambda k: k[:, -1] >= 0)):
        assert op(a + b) == op(a) + op(b)


@given(families(1))
def test_from_dict_round_trips(f):
    (a, da), = f
    assert ZSet.from_dict(a.to_dict(), arity=a.arity) == a
    assert all(a.weight_of(r) == w for r, w in da.items())


# ---------------------------------------------------------------- errors
def test_plus_of_arity_2_and_3_is_refused():
    a, b = ZSet.from_rows([(1, 2)]), ZSet.from_rows([(1, 2, 3)])
    with pytest.raises(ArityMismatchError, match="left has 2 columns, right has 3") as e:
        a + b
    assert (e.value.expected, e.value.got) == (2, 3)
    with pytest.raises(ArityMismatchError):
        a - b
    with pytest.raises(ArityMismatchError):
        ZSet.from_rows([(1, 2), (1, 2, 3)])
    with pytest.raises(ArityMismatchError):
        ZSet.from_arrays(np.zeros((2, 3), dtype=np.int64), arity=2)
    with pytest.raises(ArityMismatchError):
        a.weight_of((1, 2, 3))


@pytest.mark.parametrize("weights", [
    [1.5], [1.0], ["1"], [math.nan], [math.inf], [-math.inf], [True], [None],
    np.array([1.0, 2.5]), np.array([np.nan]), np.array([np.inf]), np.array(["1"]),
])
def test_non_integer_weights_are_refused(weights):
    with pytest.raises(InputError, match="weights must be integers"):
        ZSet.from_rows([(1,)] * len(weights), weights)
    with pytest.raises(InputError):
        checked_weights(weights)


@pytest.mark.parametrize("w", [2**63, -(2**63) - 1, 2**100, np.uint64(2**63)])
def test_weights_outside_int64_are_refused(w):
    with pytest.raises(WeightOverflowError, match=f"weight {int(w)} does not fit in int64"):
        ZSet.from_rows([(1,), (2,)], [1, w])
    with pytest.raises(WeightOverflowError):
        checked_weights(np.array([1, w], dtype=np.uint64) if w == 2**63 else [w])


def test_bad_keys_are_refused():
    with pytest.raises(InputError, match="int64"):
        ZSet.from_rows([(2**63,)])
    with pytest.raises(InputError, match="int64 ids"):
        ZSet.from_rows([("a",)])
    with pytest.raises(InputError, match="intern values first"):
        ZSet.from_arrays(np.array([[0.5]]))
    with pytest.raises(InputError, match="2-d"):
        ZSet.from_arrays(np.zeros((2, 2, 2), dtype=np.int64))
    with pytest.raises(InputError, match="arity"):
        ZSet.from_rows([])
    with pytest.raises(InputError, match="expected 2 weights"):
        ZSet.from_rows([(1,), (2,)], [1])


def test_scale_factor_must_be_an_int64():
    a = ZSet.from_rows([(1,)])
    with pytest.raises(InputError, match="integer"):
        a.scale(1.5)
    with pytest.raises(WeightOverflowError, match="scale factor"):
        a.scale(2**63)


def test_bad_predicates_and_maps_are_refused():
    z = ZSet.from_rows([(1,), (2,)])
    with pytest.raises(InputError, match="1 flags for 2 rows"):
        z.filter(lambda k: np.array([True]))
    with pytest.raises(InputError, match="3 rows for 2 input rows"):
        z.map(lambda k: np.zeros((3, 1), dtype=np.int64))


def test_plus_overflow_names_row_and_values_and_changes_nothing():
    a = ZSet.from_dict({(1, 2): I64_MAX, (3, 4): 1})
    b = ZSet.from_dict({(1, 2): 1})
    with pytest.raises(WeightOverflowError,
                       match=r"row \(1, 2\) sum beyond int64: 9223372036854775807 \+ 1"):
        a + b
    assert a.to_dict() == {(1, 2): I64_MAX, (3, 4): 1} and b.to_dict() == {(1, 2): 1}
    a.check(), b.check()
    with pytest.raises(OverflowError):  # generic handlers still work
        b - (-a)


def test_scale_overflow_names_row_and_values_and_changes_nothing():
    a = ZSet.from_dict({(0, 0): 1, (1, 2): 2**62})
    with pytest.raises(WeightOverflowError,
                       match=r"weight 4611686018427387904 \* 2 does not fit in int64 \(row \(1, 2\)\)"):
        a * 2
    assert a.to_dict() == {(0, 0): 1, (1, 2): 2**62}
    a.check()


def test_negate_overflow_names_row_and_value_and_changes_nothing():
    a = ZSet.from_dict({(3,): I64_MIN})
    with pytest.raises(WeightOverflowError, match=r"-9223372036854775808 .*\(row \(3,\)\)"):
        -a
    with pytest.raises(WeightOverflowError):
        ZSet.from_dict({(3,): 1}) - a
    assert a.to_dict() == {(3,): I64_MIN}


def test_consolidate_overflow_names_row_and_values_and_leaves_inputs():
    keys = np.array([[5, 6], [1, 2], [1, 2]])
    weights = np.array([1, I64_MAX, 1])
    with pytest.raises(WeightOverflowError,
                       match=r"row \(1, 2\) sum beyond int64: 9223372036854775807 \+ 1"):
        consolidate(keys, weights)
    assert keys.tolist() == [[5, 6], [1, 2], [1, 2]] and weights.tolist() == [1, I64_MAX, 1]
    with pytest.raises(WeightOverflowError, match=r"-9223372036854775808 \+ -1"):
        consolidate(np.array([[0], [0]]), np.array([I64_MIN, -1]))


@pytest.mark.parametrize("pad", [0, 100], ids=["small", "large"])  # Python ints / the kernel
def test_total_overflow_is_refused(pad):
    filler = {(i,): (-1) ** (i + 1) for i in range(10, 10 + pad)}  # -1, +1, ...: sums to 0
    assert ZSet.from_dict({(1,): I64_MAX - 1, (2,): 1, **filler}).total() == I64_MAX
    with pytest.raises(WeightOverflowError):
        ZSet.from_dict({(1,): I64_MAX, (2,): 1, **filler}).total()
    with pytest.raises(WeightOverflowError):
        ZSet.from_dict({(1,): I64_MIN, (2,): -1, **filler}).total()


@example(0)
@given(st.integers(0, 5))
def test_overflow_inside_wide_keys_is_found_on_the_lexsort_path(i):
    rows = [(I64_MIN, I64_MAX), (I64_MAX, I64_MIN), (0, i)] * 2
    ws = [I64_MAX, 1, 1, 1, 1, 1]
    with pytest.raises(WeightOverflowError, match=re.escape(str((I64_MIN, I64_MAX)))):
        ZSet.from_rows(rows, ws)


@pytest.mark.parametrize("w, c", [(-(2**62), -2), (3, -3074457345618258603), (-3, 3074457345618258603),
                                  (-3, -3074457345618258603)])
def test_scale_overflow_just_past_the_bound_is_found(w, c):
    # Floor division once let these through (the product is one past an int64 bound).
    assert not ref.fits(w * c)
    with pytest.raises(WeightOverflowError, match=f"weight {w} \\* {c}"):
        ZSet.from_dict({(0,): w}).scale(c)


def test_consolidate_sorted_parts_of_rows_without_columns():
    """A cross product's key has no columns: every row is the same empty row."""
    from wcoj.zset import consolidate_sorted_parts

    parts = [(np.zeros((2, 0), np.int64), np.array([1, 2])), (np.zeros((1, 0), np.int64), np.array([-3]))]
    assert consolidate_sorted_parts(parts, 0).is_empty()
    z = consolidate_sorted_parts(parts[:1], 0)
    assert z.to_dict() == {(): 3}


@given(st.sampled_from(["small", "small", "tight"]), st.integers(1, 3), st.data(), st.booleans())
def test_a_dense_consolidation_equals_the_oracle(domain, arity, data, extreme):
    """Many rows of few distinct keys are summed in a table, not sorted (``_sum_runs``
    with ``config.RADIX_MIN_ROWS`` lowered so these small inputs take that route)."""
    from wcoj import config
    from wcoj.zset import _sum_runs
    rows, ws = data.draw(raw(arity, DOMAINS[domain], extreme_weights if extreme else small_weights))
    keys = np.array(rows, dtype=np.int64).reshape(len(rows), arity)
    old = config.RADIX_MIN_ROWS, config.DENSE_SUM_SLOTS
    config.RADIX_MIN_ROWS, config.DENSE_SUM_SLOTS = 0, 1 << 30   # every key space of up to 24 bits
    try:
        try:
            expected = ref.consolidate(rows, ws)
        except ref.Overflow as e:
            with pytest.raises(WeightOverflowError, match=f"row {re.escape(str(e.row))}"):
                _sum_runs(keys, np.array(ws, dtype=np.int64), merge=False)
            return
        k, w = _sum_runs(keys, np.array(ws, dtype=np.int64), merge=False)
        assert checked(ZSet(k, w)) == expected
    finally:
        config.RADIX_MIN_ROWS, config.DENSE_SUM_SLOTS = old
