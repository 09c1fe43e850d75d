"""wcoj.rows: packing, row ordering and run detection against sorted() on Python tuples,
on all three sort paths (packed value sort, packed argsort, lexsort)."""

import numpy as np
import reference_zset as ref
from hypothesis import given
from hypothesis import strategies as st

from wcoj.rows import group_starts, is_sorted_unique, packing_for, row_order, sorted_runs

I64_MIN, I64_MAX = ref.I64_MIN, ref.I64_MAX
# small: value sort; tight: 62 bits, so rows and index share 64 bits only for n <= 4
# (then packed argsort); wide: more than 63 bits together (lexsort).
DOMAINS = [
    st.integers(-3, 3),
    st.sampled_from([0, 1, 2**31 - 1]),
    st.sampled_from([I64_MIN, -(2**62), -1, 0, 2**62, I64_MAX]),
]


@st.composite
def key_matrices(draw):
    values = draw(st.sampled_from(DOMAINS))
    k = draw(st.integers(0, 3))
    rows = draw(st.lists(st.tuples(*[values] * k), max_size=40))
    return np.array(rows, dtype=np.int64).reshape(len(rows), k)


def test_packing_round_trips_and_keeps_order():
    keys = np.array([[3, 7], [1, 9], [1, 7], [-5, 0]])
    p = packing_for([keys])
    assert p.n_bits == 4 + 4  # spans 8 and 9 need 4 bits each
    assert p.unpack(p.pack(keys)).tolist() == keys.tolist()
    assert np.argsort(p.pack(keys)).tolist() == [3, 2, 1, 0]
    assert p.covers(keys) and not p.covers(np.array([[4, 7]]))


def test_packing_is_refused_beyond_63_bits():
    assert packing_for([np.array([[I64_MIN], [I64_MAX]])]) is None
    assert packing_for([np.array([[0, 0], [2**32, 2**31]])]) is None
    assert packing_for([np.array([[0, 0], [2**31 - 1, 2**31 - 1]])]).n_bits == 62


def test_sorted_runs_on_literals():
    order, starts, run_keys = sorted_runs(np.array([[2, 1], [1, 5], [2, 1], [0, 0]]))
    assert order.tolist() == [3, 1, 0, 2]
    assert starts.tolist() == [0, 1, 2]
    assert run_keys.tolist() == [[0, 0], [1, 5], [2, 1]]


@given(key_matrices(), st.booleans())
def test_sorted_runs_equal_sorting_python_tuples(keys, merge):
    rows = [tuple(r) for r in keys.tolist()]
    order, starts, run_keys = sorted_runs(keys, merge=merge)
    # stable: equal rows keep their input order
    assert order.tolist() == sorted(range(len(rows)), key=lambda i: rows[i])
    assert run_keys.tolist() == [list(r) for r in sorted(set(rows))]
    assert keys[order][starts].tolist() == run_keys.tolist()
    assert row_order(keys).tolist() == order.tolist()
    assert group_starts(keys[order]).tolist() == starts.tolist()
    assert run_keys.dtype == order.dtype == starts.dtype == np.int64


@given(key_matrices())
def test_packing_preserves_order_and_round_trips(keys):
    p = packing_for([keys])
    if p is None:
        return
    packed = p.pack(keys)
    assert p.n_bits <= 63 and packed.min(initial=0) >= 0
    assert p.unpack(packed).tolist() == keys.tolist()
    rows = [tuple(r) for r in keys.tolist()]
    for i in range(len(rows) - 1):
        assert (rows[i] < rows[i + 1]) == (packed[i] < packed[i + 1])


@given(key_matrices())
def test_is_sorted_unique_equals_python(keys):
    rows = [tuple(r) for r in keys.tolist()]
    assert is_sorted_unique(keys) == all(a < b for a, b in zip(rows, rows[1:]))
    order, starts, run_keys = sorted_runs(keys)
    assert is_sorted_unique(run_keys)
