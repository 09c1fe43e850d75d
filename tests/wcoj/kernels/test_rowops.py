"""The row kernels equal plain-Python consolidation, merging and trie building.

Also run by ``./dev test`` with ``NUMBA_DISABLE_JIT=1``, so keep the inputs small.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from wcoj.kernels.rowops import merge_rows_into, sort_small_into, trie_levels_into

I64 = np.int64
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


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


@given(rows_and_weights())
def test_sort_small_equals_a_dict_sum(case):
    k, rows, ws = case
    keys = np.array(rows, I64).reshape(len(rows), k)
    out_k, out_w = np.empty_like(keys), np.empty(len(rows), I64)
    m, bad = sort_small_into(keys, np.array(ws, I64), out_k, out_w)
    assert bad == -1
    got = [tuple(r) for r in out_k[:m].tolist()]
    want = consolidated(rows, ws)
    assert got == list(want)                       # sorted, unique, no zero weights
    assert out_w[:m].tolist() == list(want.values())


def test_sort_small_names_the_row_that_overflows():
    keys = np.array([[1, 1], [0, 0], [1, 1]], I64)
    out_k, out_w = np.empty_like(keys), np.empty(3, I64)
    m, bad = sort_small_into(keys, np.array([I64_MAX, 5, 1], I64), out_k, out_w)
    assert bad == 2                                # the second (1, 1) pushes the sum past int64


@given(rows_and_weights(width=2), rows_and_weights(width=2))
def test_merge_rows_equals_the_sum_of_two_zsets(a, b):
    za = consolidated(a[1], a[2])
    zb = consolidated(b[1], b[2])
    ka, kb = (np.array(list(z), I64).reshape(len(z), 2) for z in (za, zb))
    wa, wb = (np.array(list(z.values()), I64) for z in (za, zb))
    out_k, out_w = np.empty((len(za) + len(zb), 2), I64), np.empty(len(za) + len(zb), I64)
    m, bad = merge_rows_into(ka, wa, kb, wb, out_k, out_w)
    assert bad == -1
    want = consolidated(list(za) + list(zb), list(za.values()) + list(zb.values()))
    assert [tuple(r) for r in out_k[:m].tolist()] == list(want)
    assert out_w[:m].tolist() == list(want.values())


def test_merge_rows_reports_overflow():
    k = np.array([[1, 2]], I64)
    out_k, out_w = np.empty((2, 2), I64), np.empty(2, I64)
    m, bad = merge_rows_into(k, np.array([I64_MAX], I64), k, np.array([1], I64), out_k, out_w)
    assert bad == 0


@given(rows_and_weights(max_size=25, weights=st.just(1)))
def test_trie_levels_match_a_python_trie(case):
    k, rows, _ = case
    keys = np.array(sorted(set(rows)), I64).reshape(-1, k)
    n = keys.shape[0]
    starts = np.empty((k, n), I64)
    offs = np.empty((max(k - 1, 1), n + 1), I64)
    counts = np.empty(k, I64)
    trie_levels_into(keys, starts, offs, counts)
    for j in range(k):
        prefixes = [tuple(r[: j + 1]) for r in keys.tolist()]
        firsts = [i for i in range(n) if i == 0 or prefixes[i] != prefixes[i - 1]]
        assert starts[j, :counts[j]].tolist() == firsts
        if j < k - 1:  # children of node p: next-level nodes starting inside its rows
            nxt = [i for i in range(n) if i == 0 or tuple(keys[i, : j + 2]) != tuple(keys[i - 1, : j + 2])]
            want = [sum(1 for s in nxt if s < f) for f in firsts] + [len(nxt)]
            assert offs[j, :counts[j] + 1].tolist() == want
