"""The search kernels against linear scans. Also run with ``NUMBA_DISABLE_JIT=1``."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from wcoj.kernels.search import bsearch, gallop, narrow


@st.composite
def ranges(draw):
    vals = sorted(draw(st.sets(st.integers(-50, 50), max_size=20)))
    lo = draw(st.integers(0, len(vals)))
    hi = draw(st.integers(lo, len(vals)))
    return np.array(vals, dtype=np.int64), lo, hi, draw(st.integers(-55, 55))


def first_geq(vals, lo, hi, x):
    return next((p for p in range(lo, hi) if vals[p] >= x), hi)


@given(ranges())
def test_bsearch_and_gallop_find_the_first_value_at_least_x(arg):
    vals, lo, hi, x = arg
    want = first_geq(vals.tolist(), lo, hi, x)
    assert bsearch(vals.ctypes.data, lo, hi, x) == want
    assert gallop(vals.ctypes.data, lo, hi, x) == want


@given(ranges(), st.booleans())
def test_narrow_keeps_the_values_beyond_the_bound(arg, upper):
    vals, lo, hi, x = arg
    a, b = narrow(vals.ctypes.data, lo, hi, x, upper)
    kept = vals[a:b].tolist()
    want = [v for v in vals[lo:hi].tolist() if (v < x if upper else v > x)]
    assert kept == want


def test_worked_examples():
    a = np.array([1, 3, 5, 7, 9], dtype=np.int64)
    assert bsearch(a.ctypes.data, 0, 5, 6) == 3 and gallop(a.ctypes.data, 1, 5, 9) == 4
    assert gallop(a.ctypes.data, 0, 5, 100) == 5
    assert tuple(narrow(a.ctypes.data, 0, 5, 5, True)) == (0, 2)
    assert tuple(narrow(a.ctypes.data, 0, 5, 5, False)) == (3, 5)
