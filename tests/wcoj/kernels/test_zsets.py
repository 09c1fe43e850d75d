"""Each checked weight kernel equals its Python twin (``tests/reference_zset.py``), which
decides overflow with Python ints. Also run with ``NUMBA_DISABLE_JIT=1`` by ``./dev test``."""

import itertools

import numpy as np
import pytest
import reference_zset as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from wcoj.kernels import zsets as wk

I64_MIN, I64_MAX = ref.I64_MIN, ref.I64_MAX
SENTINEL = 12345
# Values at and just past the bounds of every check (sums, products, negation).
EDGES = [I64_MIN, I64_MIN + 1, -(2**62) - 1, -(2**62), -(2**62) + 1, -3074457345618258603,
         -3074457345618258602, -3037000500, -3037000499, -3, -2, -1, 0, 1, 2, 3,
         3037000499, 3037000500, 3074457345618258602, 3074457345618258603, 2**62 - 1, 2**62,
         2**62 + 1, I64_MAX - 1, I64_MAX]
int64s = st.one_of(st.sampled_from(EDGES), st.integers(I64_MIN, I64_MAX), st.integers(-5, 5))


def arr(xs) -> np.ndarray:
    return np.array(xs, dtype=np.int64)


def run(kernel, *args, n):
    out = np.full(n, SENTINEL, dtype=np.int64)
    status = kernel(*args, out)
    return out.tolist(), int(status)


def assert_matches(got, want):
    (out, status), (twin_out, twin_status) = got, want
    assert status == twin_status
    assert out[:len(twin_out)] == twin_out  # the rows before the failing one were written


@st.composite
def pairs(draw):
    a = draw(st.lists(int64s, max_size=30))
    return a, draw(st.lists(int64s, min_size=len(a), max_size=len(a)))


@st.composite
def segmented(draw):
    v, w = draw(pairs())
    cuts = draw(st.sets(st.integers(1, max(len(w) - 1, 1)), max_size=6)) if len(w) > 1 else set()
    return v, w, [0] + sorted(cuts) if w else []


# ---------------------------------------------------------------- worked examples
def test_kernels_on_literals():
    assert run(wk.multiply_into, arr([3, 2**62]), arr([-4, 2]), n=2) == ([-12, SENTINEL], 1)
    assert run(wk.segment_sum_into, arr([1, 2, 3, 4]), arr([0, 2]), n=2) == ([3, 7], -1)
    # a running sum that leaves int64 is refused even when the total would fit again
    assert run(wk.segment_sum_into, arr([I64_MAX, 1, -2]), arr([0]), n=1)[1] == 0


def test_multiply_equals_twin_on_every_pair_of_edges():
    a, b = zip(*itertools.product(EDGES, EDGES))
    for i, (x, y) in enumerate(zip(a, b)):  # one row each, so every pair is decided
        got = run(wk.multiply_into, arr([x]), arr([y]), n=1)
        assert_matches(got, ref.multiply_into([x], [y])), (i, x, y)


@given(pairs())
def test_multiply_into_equals_twin(ab):
    a, b = ab
    assert_matches(run(wk.multiply_into, arr(a), arr(b), n=len(a)), ref.multiply_into(a, b))


@given(segmented())
def test_segment_sum_into_equals_twin(vws):
    _, w, starts = vws
    got = run(wk.segment_sum_into, arr(w), arr(starts), n=len(starts))
    assert_matches(got, ref.segment_sum_into(w, starts))


@pytest.mark.parametrize("kernel", [wk.segment_sum_into])
def test_single_segment_covers_everything(kernel):
    w = arr(range(100))
    assert run(kernel, w, arr([0]), n=1) == ([4950], -1)


@st.composite
def sorted_keys_with_weights(draw, unique):
    """Sorted keys; unique ones come from a consolidated Z-set, so their weights are not 0."""
    keys = sorted(draw(st.lists(st.integers(-4, 4), max_size=30, unique=unique)))
    ws = int64s.filter(bool) if unique else int64s
    return keys, draw(st.lists(ws, min_size=len(keys), max_size=len(keys)))


@given(sorted_keys_with_weights(unique=False))
def test_run_sums_into_equals_twin(kw):
    keys, w = kw
    pos, sums = np.full(len(keys), SENTINEL, dtype=np.int64), np.full(len(keys), SENTINEL, dtype=np.int64)
    m, bad = wk.run_sums_into(arr(keys), arr(w), pos, sums)
    twin, twin_bad = ref.run_sums_into(keys, w)
    assert int(bad) == twin_bad
    assert list(zip(pos[:m].tolist(), sums[:m].tolist())) == twin


def test_run_sums_into_on_literals():
    pos, sums = np.zeros(5, dtype=np.int64), np.zeros(5, dtype=np.int64)
    m, bad = wk.run_sums_into(arr([1, 1, 2, 3, 3]), arr([2, -2, 5, 1, 1]), pos, sums)
    assert (int(m), int(bad)) == (2, -1)
    assert pos[:2].tolist() == [2, 3] and sums[:2].tolist() == [5, 2]


@st.composite
def matched_runs(draw):
    """Disjoint runs of two weight arrays, paired up as a join matches key runs."""
    sizes = draw(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), max_size=5))
    a_n, b_n = [x for x, _ in sizes], [y for _, y in sizes]
    a_lo = [sum(a_n[:r]) for r in range(len(sizes))]
    b_lo = [sum(b_n[:r]) for r in range(len(sizes))]
    wa = draw(st.lists(int64s.filter(bool), min_size=sum(a_n), max_size=sum(a_n)))
    wb = draw(st.lists(int64s.filter(bool), min_size=sum(b_n), max_size=sum(b_n)))
    return a_lo, a_n, b_lo, b_n, wa, wb


# ---------------------------------------------------------------- rows
@st.composite
def rows_and_weights(draw, width=None, max_size=30, weights=st.integers(-3, 3)):
    k = width if width is not None else draw(st.integers(1, 3))
    rows = draw(st.lists(st.tuples(*[st.integers(-4, 4)] * k), max_size=max_size))
    ws = draw(st.lists(weights, min_size=len(rows), max_size=len(rows)))
    return k, rows, ws


def consolidated(rows, ws) -> dict:
    out: dict = {}
    for r, w in zip(rows, ws):
        out[r] = out.get(r, 0) + w
    return {r: w for r, w in sorted(out.items()) if w}


def _sort_small_equals_a_dict_sum(case):
    k, rows, ws = case
    keys = np.array(rows, np.int64).reshape(len(rows), k)
    out_k, out_w = np.empty_like(keys), np.empty(len(rows), np.int64)
    m, bad = wk.sort_small_into(keys, np.array(ws, np.int64), out_k, out_w)
    assert bad == -1
    got = [tuple(r) for r in out_k[:m].tolist()]
    want = consolidated(rows, ws)
    assert got == list(want)                       # sorted, unique, no zero weights
    assert out_w[:m].tolist() == list(want.values())


@given(rows_and_weights())
def test_sort_small_equals_a_dict_sum(case):
    _sort_small_equals_a_dict_sum(case)


@settings(max_examples=40)
@given(rows_and_weights(max_size=wk.SMALL_ROWS))
def test_sort_small_merges_its_sorted_runs_into_a_dict_sum(case):
    # up to SMALL_ROWS rows: the merge sort's widths past one or two passes
    _sort_small_equals_a_dict_sum(case)


def test_sort_small_keeps_input_order_across_runs():
    # 40 rows of one key, interleaved with others: the sum is added in input order, so the
    # row that overflows is the 31st of that key, whichever runs the sort merged
    n = 80
    keys = np.array([[1, 1] if i % 2 else [i, 0] for i in range(n)], np.int64)
    ws = np.array([I64_MAX // 30 if i % 2 else 1 for i in range(n)], np.int64)
    out_k, out_w = np.empty_like(keys), np.empty(n, np.int64)
    m, bad = wk.sort_small_into(keys, ws, out_k, out_w)
    assert bad == 2 * 30 + 1


def test_sort_small_names_the_row_that_overflows():
    keys = np.array([[1, 1], [0, 0], [1, 1]], np.int64)
    out_k, out_w = np.empty_like(keys), np.empty(3, np.int64)
    m, bad = wk.sort_small_into(keys, np.array([I64_MAX, 5, 1], np.int64), out_k, out_w)
    assert bad == 2                                # the second (1, 1) pushes the sum past int64


@given(rows_and_weights(width=2), rows_and_weights(width=2))
def test_merge_rows_equals_the_sum_of_two_zsets(a, b):
    za = consolidated(a[1], a[2])
    zb = consolidated(b[1], b[2])
    ka, kb = (np.array(list(z), np.int64).reshape(len(z), 2) for z in (za, zb))
    wa, wb = (np.array(list(z.values()), np.int64) for z in (za, zb))
    out_k, out_w = np.empty((len(za) + len(zb), 2), np.int64), np.empty(len(za) + len(zb), np.int64)
    m, bad = wk.merge_rows_into(ka, wa, kb, wb, out_k, out_w)
    assert bad == -1
    want = consolidated(list(za) + list(zb), list(za.values()) + list(zb.values()))
    assert [tuple(r) for r in out_k[:m].tolist()] == list(want)
    assert out_w[:m].tolist() == list(want.values())


def test_merge_rows_reports_overflow():
    k = np.array([[1, 2]], np.int64)
    out_k, out_w = np.empty((2, 2), np.int64), np.empty(2, np.int64)
    m, bad = wk.merge_rows_into(k, np.array([I64_MAX], np.int64), k, np.array([1], np.int64), out_k, out_w)
    assert bad == 0


@given(rows_and_weights(width=2))
def test_sum_adjacent_equals_a_dict_sum_of_sorted_rows(case):
    _, rows, ws = case
    order = sorted(range(len(rows)), key=lambda i: rows[i])  # stable: input order within a row
    keys = np.array([rows[i] for i in order], np.int64).reshape(len(rows), 2)
    w = np.array([ws[i] for i in order], np.int64)
    out_k, out_w = np.empty_like(keys), np.empty(len(rows), np.int64)
    m, bad = wk.sum_adjacent_into(keys, w, out_k, out_w)
    want = consolidated(rows, ws)
    assert bad == -1
    assert [tuple(r) for r in out_k[:m].tolist()] == list(want)
    assert out_w[:m].tolist() == list(want.values())


def test_sum_adjacent_reports_overflow():
    k = np.array([[1, 2], [1, 2]], np.int64)
    out_k, out_w = np.empty((2, 2), np.int64), np.empty(2, np.int64)
    assert wk.sum_adjacent_into(k, np.array([I64_MAX, 1], np.int64), out_k, out_w)[1] == 1


@given(matched_runs())
def test_cross_rows_into_equals_the_products_and_gathers_of_the_twin(runs):
    """Rows ``ka[i] ++ kb[j, 1:]`` and weights ``wa[i] * wb[j]`` in the twin's order; the
    first overflowing product is named by its ``(i, j)``."""
    a_lo, a_n, b_lo, b_n, wa, wb = runs
    ka = np.array([[i // 2, 10 + i] for i in range(len(wa))], np.int64).reshape(-1, 2)
    kb = np.array([[j // 2, 100 + j, 200 + j] for j in range(len(wb))], np.int64).reshape(-1, 3)
    total = sum(x * y for x, y in zip(a_n, b_n))
    out_k = np.full((total, 4), SENTINEL, np.int64)
    out_w = np.full(total, SENTINEL, np.int64)
    a_map = np.array([[0, 1], [0, 1]], np.int64)   # output column <- ka column
    b_map = np.array([[2, 3], [1, 2]], np.int64)   # output column <- kb column
    bi, bj = wk.cross_rows_into(ka, kb, arr(a_lo), arr(a_n), arr(b_lo), arr(b_n), arr(wa), arr(wb),
                                a_map, b_map, out_k, out_w)
    twin, twin_bad = ref.cross_products(a_lo, a_n, b_lo, b_n, wa, wb)
    if twin_bad >= 0:
        assert bi >= 0 and not ref.fits(int(wa[bi]) * int(wb[bj]))
    else:
        assert (int(bi), int(bj)) == (-1, -1)
    assert out_w[:len(twin)].tolist() == [w for _, _, w in twin]
    assert out_k[:len(twin)].tolist() == [ka[i].tolist() + kb[j, 1:].tolist() for i, j, _ in twin]


@given(st.integers(0, 40).flatmap(lambda bits: st.tuples(
    st.just(bits), st.lists(st.integers(0, (1 << bits) - 1), max_size=300))),
    st.integers(0, 2))
def test_radix_sort_is_numpys_stable_argsort(case, spread):
    bits, values = case
    packed = arr(values)
    if spread == 1 and len(values):  # one digit varies, the others are equal: skipped passes
        packed = (packed & 0x7FF) << min(22, max(bits - 11, 0))
    elif spread == 2:  # many repeats: stability decides the order
        packed = packed % 3
    order, out = np.full(len(packed), SENTINEL), np.full(len(packed), SENTINEL)
    passes = wk.radix_sort_into(packed, max(bits, 24 if spread == 1 else 0), order, out)
    want = np.argsort(packed, kind="stable")
    assert order.tolist() == want.tolist()
    assert out.tolist() == packed[want].tolist()
    assert passes <= max(1, -(-max(bits, 24) // wk.RADIX_DIGIT))
    if spread == 2:  # only the lowest digit varies, if anything does: the others are skipped
        assert passes == (len(set(packed.tolist())) > 1)


@given(st.lists(st.tuples(int64s, int64s, int64s), min_size=1, max_size=30), st.booleans())
def test_column_bounds_are_numpys_min_and_max(rows, strided):
    keys = np.array(rows, np.int64)
    if strided:  # a column slice of a wider matrix, as traces pass their time columns
        keys = keys[:, 1:]
    lows, highs = np.full(keys.shape[1], SENTINEL), np.full(keys.shape[1], SENTINEL)
    wk.column_bounds_into(keys, lows, highs)
    assert lows.tolist() == keys.min(axis=0).tolist()
    assert highs.tolist() == keys.max(axis=0).tolist()


@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 7)), max_size=30))
def test_pack_rows_is_the_shifted_or_of_columns(rows):
    keys = np.array(rows, np.int64).reshape(len(rows), 2)
    lows, shifts = arr([-50, 0]), arr([3, 0])
    out = np.full(len(rows), SENTINEL)
    wk.pack_rows_into(keys, lows, shifts, out)
    assert out.tolist() == [((a + 50) << 3) | b for a, b in rows]


@given(st.lists(st.integers(-20, 20), max_size=60), st.lists(st.integers(-25, 25), max_size=30))
def test_match_ranges_are_numpys_searchsorted(a, q):
    a, q = np.sort(arr(a)), np.unique(arr(q))
    lo, hi = np.full(len(q), SENTINEL), np.full(len(q), SENTINEL)
    wk.match_ranges_into(a, q, lo, hi)
    assert lo.tolist() == np.searchsorted(a, q, "left").tolist()
    assert hi.tolist() == np.searchsorted(a, q, "right").tolist()


@given(st.lists(st.tuples(st.integers(0, 15), int64s), max_size=40))
def test_dense_sums_are_a_dict_sum_in_key_order_and_find_the_first_overflow(pairs):
    packed, w = arr([k for k, _ in pairs]), arr([x for _, x in pairs])
    out_k, out_s = np.empty(16, np.int64), np.empty(16, np.int64)
    m, bad = wk.dense_sums_into(packed, w, np.zeros(16, np.int64), out_k, out_s)
    acc: dict = {}
    for i, (k, x) in enumerate(pairs):   # input order, every partial sum checked
        if not ref.fits(acc.get(k, 0) + x):
            assert bad == i
            return
        acc[k] = acc.get(k, 0) + x
    assert bad == -1
    want = sorted((k, s) for k, s in acc.items() if s)
    assert list(zip(out_k[:m].tolist(), out_s[:m].tolist())) == want


@given(st.lists(st.tuples(st.integers(-3, 3), st.sampled_from([I64_MIN, -1, 0, 1, I64_MAX])), max_size=12),
       st.booleans())
def test_strictly_increasing_is_pythons_comparison_of_adjacent_tuples(rows, strided):
    keys = np.array(rows, np.int64).reshape(len(rows), 2)
    if strided:  # a column slice, as a trace's key columns are
        keys = np.ascontiguousarray(keys[:, ::-1])
        rows = [tuple(r) for r in keys.tolist()]
    want = all(tuple(rows[i - 1]) < tuple(rows[i]) for i in range(1, len(rows)))
    assert bool(wk.strictly_increasing(keys)) == want
    assert bool(wk.strictly_increasing(np.array(sorted(set(map(tuple, rows))), np.int64).reshape(-1, 2)))


@given(st.lists(st.tuples(int64s, int64s), max_size=20), st.lists(int64s, min_size=1, max_size=3), st.booleans())
def test_timed_into_appends_the_time_to_every_row_and_bounds_the_columns(rows, time, bounds):
    keys = np.array(rows, np.int64).reshape(len(rows), 2)
    out = np.full((len(rows), 2 + len(time)), SENTINEL, dtype=np.int64)
    lows, highs = np.full(2 if bounds else 0, SENTINEL), np.full(2 if bounds else 0, SENTINEL)
    wk.timed_into(keys, arr(time), out, lows, highs)
    assert out.tolist() == [list(r) + list(time) for r in rows]
    if bounds and rows:
        assert lows.tolist() == keys.min(axis=0).tolist() and highs.tolist() == keys.max(axis=0).tolist()


@st.composite
def timed_run(draw):
    """A trace run as the spine holds one: rows of 1-2 columns then an (epoch, iteration)
    time, sorted by both, each (row, time) once with a non-zero weight; and a frontier."""
    arity = draw(st.integers(1, 2))
    entries = draw(st.dictionaries(st.tuples(*[st.integers(0, 3)] * (arity + 2)),
                                   st.integers(-3, 3).filter(bool), max_size=30))
    frontier = draw(st.tuples(st.integers(0, 3), st.integers(0, 3)))
    rows = sorted(entries)
    keys = np.array(rows, np.int64).reshape(len(rows), arity + 2)
    return arity, keys, np.array([entries[r] for r in rows], np.int64), np.array(frontier, np.int64)


@given(timed_run())
def test_advanced_into_equals_a_dict_sum_of_the_advanced_entries(case):
    arity, keys, ws, frontier = case
    out_k, out_w = np.empty_like(keys), np.empty(len(ws), np.int64)
    m, bad = wk.advanced_into(keys, ws, arity, frontier, out_k, out_w)
    assert bad == -1
    want = {}
    for r, w in zip(keys.tolist(), ws.tolist()):
        t = tuple(max(x, f) for x, f in zip(r[arity:], frontier.tolist()))
        want[tuple(r[:arity]) + t] = want.get(tuple(r[:arity]) + t, 0) + w
    want = {r: w for r, w in sorted(want.items()) if w}
    assert [tuple(r) for r in out_k[:m].tolist()] == list(want)     # sorted by row then time
    assert out_w[:m].tolist() == list(want.values())


def test_advanced_into_leaves_a_row_of_many_times_to_the_caller_and_names_an_overflow():
    n = wk.GROUP_MAX + 1  # one row at n iterations: more than the insertion sort takes
    keys = np.array([[7, 0, i] for i in range(n)], np.int64)
    out_k, out_w = np.empty_like(keys), np.empty(n, np.int64)
    assert wk.advanced_into(keys, np.ones(n, np.int64), 1, np.zeros(2, np.int64), out_k, out_w)[1] == -2
    keys = np.array([[7, 0, 1], [7, 1, 0]], np.int64)  # both become (7, 1, 1)
    m, bad = wk.advanced_into(keys, np.array([I64_MAX, 1], np.int64), 1, np.array([1, 1], np.int64),
                              out_k, out_w)
    assert bad == 1
