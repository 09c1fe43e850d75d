"""The intersection and frontier kernels equal their Python twins (``tests/reference_joins.py``).

Also run by ``./dev test`` with ``NUMBA_DISABLE_JIT=1``, so keep the inputs small.
"""

import numpy as np
import pytest
import reference_joins as ref
from hypothesis import example, given, settings
from hypothesis import strategies as st

from wcoj.kernels.intersect import (
    count_last_level,
    extend_level,
    find_in_ranges,
    gallop_geq,
    intersect_gallop,
    intersect_merge,
)

I64 = np.int64
values = st.integers(-20, 60)
sorted_sets = st.sets(values, max_size=40).map(lambda s: np.array(sorted(s), dtype=I64))


def _run(kernel, a, b):
    out = np.full(min(len(a), len(b)), -999, dtype=I64)
    n = kernel(a, b, out)
    return out[:n].tolist()


# ------------------------------------------------------------------ pairwise intersection
@given(sorted_sets, sorted_sets)
@example(np.array([], I64), np.array([1, 2], I64))
@example(np.array([5], I64), np.arange(100, dtype=I64))
def test_merge_and_gallop_equal_set_intersection(a, b):
    want = ref.intersect_twin(a, b)
    assert _run(intersect_merge, a, b) == want
    assert _run(intersect_gallop, a, b) == want   # small side first
    assert _run(intersect_gallop, b, a) == want   # and reversed: still correct, just slower


@given(st.sets(st.integers(0, 5000), max_size=8), st.integers(1, 4))
def test_gallop_on_skewed_sizes(small, step):
    large = np.arange(0, 5000, step, dtype=I64)
    small = np.array(sorted(small), dtype=I64)
    assert _run(intersect_gallop, small, large) == ref.intersect_twin(small, large)


def test_intersection_worked_example():
    a = np.array([1, 3, 5, 7, 9], I64)
    b = np.array([0, 3, 4, 9, 10, 11], I64)
    assert _run(intersect_merge, a, b) == [3, 9]
    assert _run(intersect_gallop, a, b) == [3, 9]


# ------------------------------------------------------------------ searches
@st.composite
def array_range_x(draw):
    vals = draw(sorted_sets)
    n = len(vals)
    lo = draw(st.integers(0, n))
    hi = draw(st.integers(lo, n))
    return vals, lo, hi, draw(values)


@given(array_range_x())
@example((np.array([1, 2, 3], I64), 3, 3, 0))
@example((np.array([1, 2, 3], I64), 0, 3, 99))
def test_gallop_geq_equals_linear_scan(arg):
    vals, lo, hi, x = arg
    assert gallop_geq(vals, lo, hi, x) == ref.gallop_geq_twin(vals.tolist(), lo, hi, x)


def test_gallop_geq_worked_example():
    vals = np.array([1, 4, 4, 9, 16, 25], I64)  # duplicates allowed: first position wins
    assert gallop_geq(vals, 0, 6, 4) == 1
    assert gallop_geq(vals, 2, 6, 5) == 3
    assert gallop_geq(vals, 0, 6, 26) == 6
    assert gallop_geq(vals, 0, 3, 10) == 3  # stops at hi


@given(sorted_sets, st.data())
def test_find_in_ranges_equals_twin(vals, data):
    n = len(vals)
    k = data.draw(st.integers(0, 12))
    lo = np.array(data.draw(st.lists(st.integers(0, n), min_size=k, max_size=k)), I64)
    hi = np.array([data.draw(st.integers(int(l), n)) for l in lo], I64)
    x = np.array(data.draw(st.lists(values, min_size=k, max_size=k)), I64)
    out = np.full(k, -999, I64)
    find_in_ranges(vals, lo, hi, x, out)
    assert out.tolist() == ref.find_in_ranges_twin(vals.tolist(), lo, hi, x)


# ------------------------------------------------------------------ frontier kernels
@st.composite
def frontiers(draw, max_rows=6, weights=st.integers(-3, 3)):
    """Random atoms of random parts: per part a sorted unique value array and per row a
    sub-range of it (empty ranges included), plus leaf weights and row weights."""
    n_atoms = draw(st.integers(1, 4))
    parts_per_atom = draw(st.lists(st.integers(1, 3), min_size=n_atoms, max_size=n_atoms))
    n_parts = sum(parts_per_atom)
    atom_start = np.cumsum([0] + parts_per_atom).astype(I64)
    dom = st.integers(0, draw(st.sampled_from([6, 15, 40])))
    vals = tuple(np.array(sorted(draw(st.sets(dom, max_size=20))), I64) for _ in range(n_parts))
    n_rows = draw(st.integers(0, max_rows))
    lo = np.zeros((n_rows, n_parts), I64)
    hi = np.zeros((n_rows, n_parts), I64)
    for r in range(n_rows):
        for q in range(n_parts):
            n = len(vals[q])
            lo[r, q] = draw(st.integers(0, n))
            hi[r, q] = draw(st.integers(int(lo[r, q]), n))
    pw = tuple(np.array(draw(st.lists(weights, min_size=len(v), max_size=len(v))), I64) for v in vals)
    rw = np.array(draw(st.lists(weights, min_size=n_rows, max_size=n_rows)), I64)
    return vals, lo, hi, atom_start, pw, rw


def _extend(vals, lo, hi, atom_start):
    # capacity: per row, the smallest atom's candidate count (the kernel's documented bound)
    sizes = hi - lo
    per_atom = np.add.reduceat(sizes, atom_start[:-1], axis=1) if lo.shape[0] else np.zeros((0, 1), I64)
    cap = int(per_atom.min(axis=1).sum()) if lo.shape[0] else 0
    parent = np.full(cap, -7, I64)
    val = np.full(cap, -7, I64)
    hit = np.full((cap, lo.shape[1]), -7, I64)
    n = extend_level(vals, lo, hi, atom_start, parent, val, hit)
    return [(int(parent[i]), int(val[i]), tuple(hit[i].tolist())) for i in range(n)]


@given(frontiers())
def test_extend_level_equals_twin(f):
    vals, lo, hi, atom_start, _, _ = f
    assert _extend(vals, lo, hi, atom_start) == ref.extend_level_twin(vals, lo.tolist(), hi.tolist(),
                                                                       atom_start.tolist())


def test_extend_level_worked_example():
    # atom 0 = parts 0 and 1 (a run and a delta), atom 1 = part 2
    vals = (np.array([1, 3, 5, 7], I64), np.array([2, 3, 8], I64), np.array([3, 5, 8, 9], I64))
    atom_start = np.array([0, 2, 3], I64)
    lo = np.array([[0, 0, 0], [0, 0, 0], [2, 0, 0]], I64)
    hi = np.array([[4, 3, 4], [4, 3, 0], [4, 1, 4]], I64)   # row 1: atom 1 empty; row 2: restricted
    assert _extend(vals, lo, hi, atom_start) == [
        (0, 3, (1, 1, 0)), (0, 5, (2, -1, 1)), (0, 8, (-1, 2, 2)),
        (2, 5, (2, -1, 1)),
    ]


@given(frontiers())
def test_count_last_level_equals_twin(f):
    vals, lo, hi, atom_start, pw, rw = f
    sums = np.full(lo.shape[0], -7, I64)
    bad = count_last_level(vals, lo, hi, atom_start, pw, rw, sums)
    want, want_bad = ref.count_last_level_twin(vals, lo.tolist(), hi.tolist(), atom_start.tolist(), pw, rw)
    assert (bad, sums.tolist()) == (want_bad, want)


BIG = st.sampled_from([2**62, -(2**62), 2**31, 3, -1, 2**63 - 1, -(2**63)])


@settings(max_examples=60)
@given(frontiers(max_rows=4, weights=BIG))
def test_count_last_level_reports_the_first_overflowing_row(f):
    vals, lo, hi, atom_start, pw, rw = f
    sums = np.full(lo.shape[0], -7, I64)
    bad = count_last_level(vals, lo, hi, atom_start, pw, rw, sums)
    want, want_bad = ref.count_last_level_twin(vals, lo.tolist(), hi.tolist(), atom_start.tolist(), pw, rw)
    assert bad == want_bad
    assert sums[:len(want)].tolist() == want


@pytest.mark.parametrize("case, bad", [
    ("product", 1),    # row 1: 2**62 * 2 in the product over atoms
    ("sum", 1),        # row 1: two values of 2**62 each add up past int64
    ("row", 1),        # row 1: fits, but times its row weight 4 does not
    ("parts", 1),      # row 1: one atom's two parts hold 2**62 + 2**62 at the same value
])
def test_count_last_level_overflow_worked_examples(case, bad):
    big = 2**62
    a = np.array([1, 2], I64)
    if case == "parts":
        vals = (a, a, a)
        atom_start = np.array([0, 2, 3], I64)
        pw = (np.array([1, big], I64), np.array([1, big], I64), np.array([1, 1], I64))
        lo = np.array([[0, 0, 0], [1, 1, 1]], I64)
        hi = np.array([[1, 1, 1], [2, 2, 2]], I64)
        rw = np.array([1, 1], I64)
    else:
        vals = (a, a)
        atom_start = np.array([0, 1, 2], I64)
        w0 = {"product": [1, big], "sum": [big, big], "row": [1, 2]}[case]
        w1 = {"product": [1, 2], "sum": [1, 1], "row": [big, 1]}[case]
        pw = (np.array(w0, I64), np.array(w1, I64))
        lo = np.array([[0, 0], [0, 0] if case != "product" else [1, 1]], I64)
        hi = np.array([[1, 1], [2, 2]], I64)
        rw = np.array([1, 4 if case == "row" else 1], I64)
    sums = np.zeros(2, I64)
    assert count_last_level(vals, lo, hi, atom_start, pw, rw, sums) == bad
    assert sums[0] == ref.count_last_level_twin(vals, lo.tolist(), hi.tolist(), atom_start.tolist(), pw, rw)[0][0]
    assert ref.count_last_level_twin(vals, lo.tolist(), hi.tolist(), atom_start.tolist(), pw, rw)[1] == bad
