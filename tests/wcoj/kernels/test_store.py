"""The trie store kernels against a dict of rows: in-place changes, their room and overflow
statuses (nothing written when a change cannot be made), lookups and walks, on mutable
tries with a sorted or dense level 0 and on compact tries. Also run with
``NUMBA_DISABLE_JIT=1``."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wcoj.kernels.store import MIN_CAP, NEED_ROOM, OK, OVERFLOW, apply_row, apply_rows, prefix_ranges, row_weights
from wcoj.tables import MutableTable, TableBlock, TrieTable

I64 = np.int64
I64_MAX = 2**63 - 1


def rows_of(t) -> dict:
    keys, w = t.rows_arrays()
    got = {tuple(k): x for k, x in zip(keys.tolist(), w.tolist())}
    assert list(got) == sorted(got)            # the walk yields rows in order
    return got


def grown(t: MutableTable, level: int, need: int) -> None:
    """What ``indexes.trie.Trie.make_room`` does, plainly: refill with room for ``need``."""
    keys, w = t.rows_arrays()
    rooms = [t.used(j) + need + MIN_CAP * 4 for j in range(t.arity)]
    dense = t.dense
    if dense is not None:
        lo = min(dense[0], dense[0] + need)
        hi = max(dense[0] + dense[1], dense[0] + need + 1)
        dense, rooms[0] = (lo, hi - lo), 2 * (hi - lo)
    t.refill(keys, w, rooms, dense)


@st.composite
def streams(draw):
    arity = draw(st.integers(1, 3))
    rows = st.tuples(*[st.integers(0, 6)] * arity)
    changes = draw(st.lists(st.tuples(rows, st.sampled_from([1, -1, 2, -2])), max_size=25))
    return arity, draw(st.booleans()), changes


@given(streams())
def test_applied_rows_equal_the_sum_and_room_is_found_when_asked(arg):
    arity, dense, changes = arg
    t = MutableTable(TableBlock(), arity, [2] * arity, (0, 0) if dense else None)
    want: dict = {}
    reserve = np.zeros(arity, dtype=I64)
    for row, w in changes:
        keys, ws = np.array([row], dtype=I64), np.array([w], dtype=I64)
        while True:
            before = rows_of(t)
            done, code, level, need = apply_rows(t.table, keys, ws, 0, reserve)
            if code == OK:
                break
            assert code == NEED_ROOM and done == 0
            assert rows_of(t) == before             # nothing of the row was written
            grown(t, int(level), int(need))
        want[row] = want.get(row, 0) + w
        if not want[row]:
            del want[row]
        assert rows_of(t) == want and t.rows == len(want)
        stats = t.stats()
        assert stats[-1, 2] == int(all(v == 1 for v in want.values()))
        for j in range(arity):
            assert all(stats[j, 0] <= r[j] <= stats[j, 1] for r in want)


def test_a_dry_run_and_an_overflow_write_nothing():
    t = MutableTable(TableBlock(), 2, [16, 16])
    path, res = np.zeros(2, dtype=I64), np.zeros(2, dtype=I64)
    assert apply_row(t.table, np.array([1, 2]), I64_MAX, res, path, False)[0] == OK
    assert apply_row(t.table, np.array([3, 4]), 1, res, path, True)[0] == OK     # dry: only a check
    assert rows_of(t) == {(1, 2): I64_MAX}
    assert apply_row(t.table, np.array([1, 2]), 1, res, path, False)[0] == OVERFLOW
    assert rows_of(t) == {(1, 2): I64_MAX}
    assert apply_row(t.table, np.array([5, 6]), 1, np.array([100, 100]), path, False)[0] == NEED_ROOM
    assert rows_of(t) == {(1, 2): I64_MAX}


@pytest.mark.parametrize("kind", ["mutable sorted", "mutable dense", "compact"])
def test_lookups_across_parts(kind):
    a = {(1, 2): 2, (1, 5): 1, (4, 4): -1}
    b = {(1, 2): -2, (3, 3): 7}
    tables = []
    for d in (a, b):
        keys = np.array(sorted(d), dtype=I64)
        w = np.array([d[tuple(k)] for k in keys.tolist()], dtype=I64)
        if kind == "compact":
            tables.append(TrieTable.compact(keys, w))
        else:
            t = MutableTable(TableBlock(), 2, [8, 8], (0, 8) if kind == "mutable dense" else None)
            t.refill(keys, w, [16, 16], (0, 8) if kind == "mutable dense" else None)
            tables.append(t)
    T = np.concatenate([t.table for t in tables])
    first = np.array([0, 2], dtype=I64)
    rows = np.array([[1, 2], [1, 5], [3, 3], [4, 4], [2, 2]], dtype=I64)
    out = np.zeros(5, dtype=I64)
    assert row_weights(T, first, rows, out) == -1 and out.tolist() == [0, 1, 7, -1, 0]
    lo, hi = np.zeros((3, 2), dtype=I64), np.zeros((3, 2), dtype=I64)
    prefix_ranges(T, first, 2, np.array([[1], [3], [6]]), lo, hi)
    assert (hi - lo).tolist() == [[2, 1], [0, 1], [0, 0]]
