"""The row kernels equal plain-Python consolidation, merging and trie building.

Also run by ``./dev test`` with ``NUMBA_DISABLE_JIT=1``, so keep the inputs small.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wcoj.extenders import TrieArrays
from wcoj.kernels.rowops import (SMALL_ROWS, _packed_order, edge_delta_into, first_outside, last_edge_ops_into,
                                  merge_rows_into, merge_tries_flat, merge_tries_into, stage_runs_plus,
                                  trie_of_rows_plus, pack_edge_ops, row_weights_lockstep, sort_small_into,
                                  trie_of_rows_into)

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


@given(st.lists(st.integers(I64_MIN, I64_MAX), max_size=12), st.integers(-5, 5), st.integers(-5, 5))
def test_first_outside_finds_the_first_value_out_of_range(xs, lo, hi):
    want = next((i for i, x in enumerate(xs) if not lo <= x <= hi), -1)
    assert first_outside(np.array(xs, I64), lo, hi) == want


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


@given(rows_and_weights(max_size=25, weights=st.just(1)), st.booleans(), st.randoms(use_true_random=False))
def test_trie_of_rows_matches_a_python_trie(case, sort, rnd):
    k, rows, _ = case
    unique = sorted(set(rows))
    keys = np.array(unique, I64).reshape(-1, k)
    n = keys.shape[0]
    order = list(range(n))
    if sort:  # the kernel sorts any order
        rnd.shuffle(order)
    order = np.array(order, I64)
    weights = 3 * np.arange(1, n + 1, dtype=I64)  # aligned with keys (sorted: the trie's order)
    values, offs = np.empty((k, n), I64), np.empty((max(k - 1, 1), n + 1), I64)
    out_w, table = np.empty(n, I64), np.full((k, 6), -7, I64)
    trie_of_rows_into(keys, np.arange(k, dtype=I64), weights, order, sort, values, offs, out_w, table)
    assert order.tolist() == list(range(n))
    counts = table[:, 1]
    want = _levels(dict.fromkeys(unique, 1), k)
    assert [values[j, :counts[j]].tolist() for j in range(k)] == [v.tolist() for v in want.values]
    assert [offs[j, :counts[j] + 1].tolist() for j in range(k - 1)] == [o.tolist() for o in want.offsets]
    assert out_w.tolist() == weights.tolist()
    got = TrieArrays([values[j, :counts[j]] for j in range(k)], [offs[j, :counts[j] + 1] for j in range(k - 1)], out_w)
    assert table.tolist() == got.table().tolist()  # the addresses a Python lookup finds


@given(st.integers(1, 3).flatmap(lambda k: st.tuples(rows_and_weights(width=k, weights=st.integers(1, 3)),
                                                    st.permutations(range(k)))))
def test_trie_of_rows_takes_columns_in_any_order(case):
    (k, rows, ws), cols = case
    z = {r: w for r, w in zip(rows, ws)}  # unique rows, the last weight wins
    keys = np.array(list(z), I64).reshape(-1, k)
    n = keys.shape[0]
    values, offs = np.empty((k, n), I64), np.empty((max(k - 1, 1), n + 1), I64)
    out_w, table = np.empty(n, I64), np.empty((k, 6), I64)
    trie_of_rows_into(keys, np.array(cols, I64), np.array(list(z.values()), I64), np.arange(n, dtype=I64), True,
                      values, offs, out_w, table)
    got = TrieArrays([values[j, :table[j, 1]] for j in range(k)],
                     [offs[j, :table[j, 1] + 1] for j in range(k - 1)], out_w)
    assert_same_levels(got, _levels(dict(sorted((tuple(r[c] for c in cols), w) for r, w in z.items())), k))


@given(st.integers(1, 3).flatmap(lambda k: st.tuples(
    st.sets(st.tuples(*[st.one_of(st.integers(-9, 9), st.integers(I64_MIN, I64_MAX))] * k), min_size=1, max_size=20),
    st.permutations(range(k)))))
def test_packed_order_sorts_by_the_columns_or_says_they_do_not_pack(case):
    rows, cols = case
    keys = np.array(sorted(rows, key=hash), I64).reshape(len(rows), -1)  # unique rows, in no order
    n = len(rows)
    order = np.full(n, -1, I64)
    bits = sum((int(keys[:, c].max()) - int(keys[:, c].min())).bit_length() for c in cols) + (n - 1).bit_length()
    if _packed_order(keys, np.array(cols, I64), order):
        assert bits <= 63
        assert [tuple(keys[i, cols]) for i in order] == sorted(tuple(r[c] for c in cols) for r in keys.tolist())
    else:
        assert bits > 63 and (order == -1).all()


@pytest.mark.parametrize("shift", [0, 2**62], ids=["packs", "does not pack"])
def test_trie_of_rows_sorts_more_than_small_rows(shift):
    rng = np.random.default_rng(5)
    keys = np.unique(rng.integers(0, 40, (2 * SMALL_ROWS, 2)), axis=0)[::-1].copy()  # > SMALL_ROWS, descending
    keys[::7, 0] += shift  # with 2**62 the columns need more than 63 bits: sorted column by column
    n = len(keys)
    assert n > SMALL_ROWS
    w = np.arange(1, n + 1, dtype=I64)
    cols = np.array([1, 0], I64)
    values, offs = np.empty((2, n), I64), np.empty((1, n + 1), I64)
    out_w, table = np.empty(n, I64), np.empty((2, 6), I64)
    trie_of_rows_into(keys, cols, w, np.arange(n, dtype=I64), True, values, offs, out_w, table)
    got = TrieArrays([values[j, :table[j, 1]] for j in range(2)], [offs[0, :table[0, 1] + 1]], out_w)
    want = dict(sorted(((int(b), int(a)), int(x)) for (a, b), x in zip(keys, w)))
    assert_same_levels(got, _levels(want, 2))


def _levels(z: dict, k: int) -> TrieArrays:
    """A trie of the consolidated dict ``z`` built in plain Python: values and CSR offsets."""
    rows = list(z)
    values, offsets = [], []
    for j in range(k):
        firsts = [i for i in range(len(rows)) if i == 0 or rows[i][: j + 1] != rows[i - 1][: j + 1]]
        values.append([rows[i][j] for i in firsts])
        if j:
            offsets.append([sum(1 for f in firsts if f < g) for g in prev] + [len(firsts)])
        prev = firsts
    arr = lambda x: np.array(x, I64)  # noqa: E731
    return TrieArrays([arr(v) for v in values], [arr(o) for o in offsets], arr(list(z.values())))


def _merge_tries(za: dict, zb: dict, k: int):
    ta, tb = _levels(za, k), _levels(zb, k)
    room = [len(a) + len(b) for a, b in zip(ta.values, tb.values)]
    vstart = np.cumsum([0] + room).astype(I64)
    ostart = vstart[:k] + np.arange(k)
    values, offsets = np.full(vstart[-1], -7, I64), np.full(vstart[-2] + k, -7, I64)
    out_w, counts, bad_row = np.full(room[-1], -7, I64), np.zeros(k, I64), np.zeros(k, I64)
    table = np.full((k, 6), -7, I64)
    bad = merge_tries_into(ta.table(), tb.table(), values, offsets, vstart, ostart, out_w, counts, bad_row, table)
    got = TrieArrays([values[vstart[j]:vstart[j] + counts[j]] for j in range(k)],
                     [offsets[ostart[j]:ostart[j] + counts[j] + 1] for j in range(k - 1)],
                     out_w[:counts[k - 1]])
    if bad == -1 and counts[k - 1]:
        assert table.tolist() == got.table().tolist()  # the addresses a Python lookup finds
    return bad, got, bad_row


@given(st.integers(1, 3).flatmap(lambda k: st.tuples(rows_and_weights(width=k), rows_and_weights(width=k))))
def test_merge_tries_equals_the_trie_of_the_sum(case):
    (k, ra, wa), (_, rb, wb) = case
    za, zb = consolidated(ra, wa), consolidated(rb, wb)
    bad, got, _ = _merge_tries(za, zb, k)
    assert bad == -1
    assert_same_levels(got, _levels(consolidated(list(za) + list(zb), list(za.values()) + list(zb.values())), k))


def assert_same_levels(got, want):
    assert [v.tolist() for v in got.values] == [v.tolist() for v in want.values]
    assert [o.tolist() for o in got.offsets] == [o.tolist() for o in want.offsets]
    assert got.weights.tolist() == want.weights.tolist()


@given(st.integers(1, 3).flatmap(lambda k: st.tuples(rows_and_weights(width=k), rows_and_weights(width=k))))
def test_merge_tries_flat_lays_out_levels_like_trie_of_rows(case):
    (k, ra, wa), (_, rb, wb) = case
    za, zb = consolidated(ra, wa), consolidated(rb, wb)
    want = consolidated(list(za) + list(zb), list(za.values()) + list(zb.values()))
    if not (za and zb and want):
        return
    ta, tb = _levels(za, k), _levels(zb, k)
    n = len(za) + len(zb)
    buf, table, bad_row = np.full(k * n + max(k - 1, 1) * (n + 1) + n, -7, I64), np.empty((k, 6), I64), np.empty(k, I64)
    assert merge_tries_flat(ta.table(), tb.table(), n, buf, bad_row, table) == -1
    at = k * n + max(k - 1, 1) * (n + 1)
    c = table[:, 1]
    got = TrieArrays([buf[j * n:j * n + c[j]] for j in range(k)],
                     [buf[k * n + j * (n + 1):k * n + j * (n + 1) + c[j] + 1] for j in range(k - 1)], buf[at:at + c[-1]])
    assert_same_levels(got, _levels(want, k))
    assert table.tolist() == got.table().tolist()


@given(st.integers(1, 3).flatmap(lambda k: st.tuples(rows_and_weights(width=k), rows_and_weights(width=k),
                                                    st.permutations(range(k)))))
def test_trie_of_rows_plus_builds_then_merges(case):
    (k, ra, wa), (_, rb, wb), cols = case
    za, zb = consolidated(ra, wa), consolidated(rb, wb)
    if not (za and zb):
        return
    ta = _levels(za, k)
    keys = np.array(list(zb), I64)[:, np.argsort(cols)]  # columns taken in the order cols give zb's rows
    n, n2 = len(zb), len(za) + len(zb)
    size = lambda m: k * m + max(k - 1, 1) * (m + 1) + m  # noqa: E731
    buf, buf2 = np.empty(size(n), I64), np.empty(size(n2), I64)
    table, table2, bad_row = np.empty((k, 6), I64), np.empty((k, 6), I64), np.empty(k, I64)
    order = np.arange(n, dtype=I64)
    bad = trie_of_rows_plus(keys, np.array(cols, I64), np.array(list(zb.values()), I64), order, True,
                            buf, table, ta.table(), n2, buf2, bad_row, table2)
    assert bad == -1
    at = k * n2 + max(k - 1, 1) * (n2 + 1)
    c = table2[:, 1]
    got = TrieArrays([buf2[j * n2:j * n2 + c[j]] for j in range(k)],
                     [buf2[k * n2 + j * (n2 + 1):k * n2 + j * (n2 + 1) + c[j] + 1] for j in range(k - 1)],
                     buf2[at:at + c[-1]])
    want = consolidated(list(za) + list(zb), list(za.values()) + list(zb.values()))
    if want:
        assert_same_levels(got, _levels(want, k))
    else:
        assert c[-1] == 0


@given(st.integers(1, 3).flatmap(lambda k: st.tuples(rows_and_weights(width=k), rows_and_weights(width=k),
                                                    st.lists(st.permutations(range(k)), min_size=1, max_size=3))))
def test_stage_runs_plus_equals_trie_of_rows_plus_per_index(case):
    (k, ra, wa), (_, rb, wb), orders = case
    za, zb = consolidated(ra, wa), consolidated(rb, wb)
    if not (za and zb):
        return
    keys, w = np.array(list(zb), I64), np.array(list(zb.values()), I64)  # sorted: the natural order
    size = lambda m: k * m + max(k - 1, 1) * (m + 1) + m  # noqa: E731

    def flat(buf, table, m):  # the trie trie_of_rows_flat's layout holds in buf (room m)
        c = table[:, 1]
        return TrieArrays([buf[j * m:j * m + c[j]] for j in range(k)],
                          [buf[k * m + j * (m + 1):k * m + j * (m + 1) + c[j] + 1] for j in range(k - 1)],
                          buf[size(m) - m:size(m) - m + c[-1]])

    n, n2 = len(zb), len(za) + len(zb)
    lasts = [_levels({tuple(r[c] for c in cols): x for r, x in za.items()}, k) for cols in orders]
    cols = np.array(orders, I64).reshape(len(orders), k)
    sort = np.array([list(c) != list(range(k)) for c in orders])
    buf = np.full(len(orders) * (size(n) + size(n2)), -7, I64)
    tables, bad_row = np.empty((len(orders), 2, k, 6), I64), np.empty(k, I64)
    assert stage_runs_plus(keys, w, cols, sort, np.concatenate([t.table() for t in lasts]),
                           np.full(len(orders), n2, I64), buf, tables, bad_row) == -1
    for i in range(len(orders)):
        b1, b2 = np.empty(size(n), I64), np.empty(size(n2), I64)
        t1, t2 = np.empty((k, 6), I64), np.empty((k, 6), I64)
        assert trie_of_rows_plus(keys, cols[i], w, np.arange(n, dtype=I64), True, b1, t1, lasts[i].table(),
                                 n2, b2, np.empty(k, I64), t2) == -1
        at = i * (size(n) + size(n2))
        assert_same_levels(flat(buf[at:at + size(n)], tables[i, 0], n), flat(b1, t1, n))
        assert_same_levels(flat(buf[at + size(n):at + size(n) + size(n2)], tables[i, 1], n2), flat(b2, t2, n2))


@given(st.integers(1, 3).flatmap(lambda k: st.tuples(
    rows_and_weights(width=k, max_size=80), rows_and_weights(width=k, max_size=4))))
def test_merge_tries_copies_long_runs_of_the_first_trie(case):
    """A large first trie and a small second one: most rows are copied a run at a time."""
    (k, ra, wa), (_, rb, wb) = case
    za = consolidated(ra, wa)
    for zb in [consolidated(rb, wb), consolidated(ra[:3], [-w for w in wa[:3]])]:
        bad, got, _ = _merge_tries(za, zb, k)
        want = _levels(consolidated(list(za) + list(zb), list(za.values()) + list(zb.values())), k)
        assert bad == -1
        assert_same_levels(got, want)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_merge_tries_copies_runs_between_a_few_rows(k):
    za = {r: 1 + sum(r) % 3 for r in itertools.product(range(5), repeat=k)}
    rows = list(za)
    zb = {rows[3]: -za[rows[3]], rows[-2]: 2, (9,) * k: 1, (-1,) * k: 4}
    zb = consolidated(list(zb), list(zb.values()))
    bad, got, _ = _merge_tries(za, zb, k)
    want = _levels(consolidated(list(za) + list(zb), list(za.values()) + list(zb.values())), k)
    assert bad == -1
    assert_same_levels(got, want)


def test_merge_tries_drops_the_nodes_of_cancelled_rows():
    za = {(1, 2): 1, (1, 3): 1, (2, 5): 1}
    bad, got, _ = _merge_tries(za, {(1, 2): -1, (1, 3): -1, (4, 0): 2}, 2)
    assert bad == -1
    assert [v.tolist() for v in got.values] == [[2, 4], [5, 0]]
    assert [o.tolist() for o in got.offsets] == [[0, 1, 2]]
    assert got.weights.tolist() == [1, 2]
    bad, got, _ = _merge_tries(za, {r: -1 for r in za}, 2)
    assert bad == -1 and [v.tolist() for v in got.values] == [[], []] and got.offsets[0].tolist() == [0]


def test_merge_tries_reports_the_row_that_overflows():
    bad, _, bad_row = _merge_tries({(0, 1): 1, (3, 4): I64_MAX}, {(3, 4): 1}, 2)
    assert bad == 0 and bad_row.tolist() == [3, 4]


def _last_ops_oracle(ins, dels, normalise):
    last = {}
    for (a, b), op in [(r, True) for r in ins] + [(r, False) for r in dels]:
        if a != b:
            last[(min(a, b), max(a, b)) if normalise else (a, b)] = op
    return sorted(last.items())


edges = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=12)


@given(edges, edges, st.booleans())
def test_last_edge_ops_keep_the_last_operation_on_each_edge(ins, dels, normalise):
    a, b = (np.array(x, I64).reshape(-1, 2) for x in (ins, dels))
    packed = np.empty(len(ins) + len(dels), I64)
    m, bv, bo = pack_edge_ops(a, b, normalise, packed)
    assert m >= 0
    packed = np.sort(packed[:m])
    keys, insert = np.empty((m, 2), I64), np.empty(m, np.bool_)
    n = last_edge_ops_into(packed, len(ins), bv, bo, keys, insert)
    got = [(tuple(k), bool(i)) for k, i in zip(keys[:n].tolist(), insert[:n].tolist())]
    assert got == _last_ops_oracle(ins, dels, normalise)


@given(edges, edges, st.booleans(), st.lists(edges, max_size=3))
def test_edge_delta_is_the_change_of_the_edge_set(ins, dels, normalise, runs):
    present: dict = {}  # the edges now present, split over up to three disjoint runs
    zs = []
    for run in runs:
        z = {e: 1 for e in sorted(set(run)) if e not in present}
        present.update(z)
        if z:
            zs.append(z)
    arrays = [_levels(z, 2) for z in zs]  # alive while the kernel reads their tables
    T = np.concatenate([a.table() for a in arrays]) if arrays else np.zeros((0, 6), I64)
    a, b = (np.array(x, I64).reshape(-1, 2) for x in (ins, dels))
    keys, w = np.empty((len(ins) + len(dels), 2), I64), np.empty(len(ins) + len(dels), I64)
    m = edge_delta_into(a, b, normalise, T, np.arange(0, 2 * len(arrays), 2, dtype=I64), keys, w)
    want = [(e, 1 if op else -1) for e, op in _last_ops_oracle(ins, dels, normalise) if op != (e in present)]
    assert list(zip(map(tuple, keys[:m].tolist()), w[:m].tolist())) == want


def test_pack_edge_ops_refuses_ids_that_do_not_fit():
    big = np.array([[2**61, 2**61 + 1]], I64)
    assert pack_edge_ops(big, big, True, np.empty(2, I64))[0] == -1
    m, bv, bo = pack_edge_ops(np.array([[2**40, 5], [3, 3]], I64), np.zeros((0, 2), I64), True, np.empty(2, I64))
    assert (m, bv, bo) == (1, 41, 1)  # the self-loop is dropped; max(v) = 2**40 needs 41 bits


@given(st.integers(1, 3).flatmap(lambda k: st.tuples(
    st.just(k), st.lists(rows_and_weights(width=k, max_size=20), min_size=1, max_size=3),
    rows_and_weights(width=k, max_size=70))))
def test_row_weights_lockstep_sums_every_part(case):
    k, parts, (_, queries, _) = case
    zs = [consolidated(rows, ws) for _, rows, ws in parts]
    zs = [z for z in zs if z]
    if not zs:
        return
    arrays = [_levels(z, k) for z in zs]  # keep the arrays alive while the tables are read
    tables = [a.table() for a in arrays]
    first = np.arange(len(tables), dtype=I64) * k
    rows = np.array(queries + [next(iter(zs[0]))], I64).reshape(-1, k)
    out = np.full(rows.shape[0], 99, I64)
    assert row_weights_lockstep(np.concatenate(tables), first, rows, out) == -1
    assert out.tolist() == [sum(z.get(tuple(r), 0) for z in zs) for r in rows.tolist()]


def test_row_weights_lockstep_reads_a_level_0_directory_and_reports_overflow():
    z = {(x, x + 1): 1 for x in range(100)}
    ta = _levels(z, 2)
    dense = np.full(100, -1, I64)
    dense[np.arange(100)] = np.arange(100)
    ta = TrieArrays(ta.values, ta.offsets, ta.weights, dense, 0)
    tb = _levels({(5, 6): I64_MAX}, 2)
    rows = np.array([[3, 4], [3, 5], [150, 1], [-4, 0], [5, 6]], I64)
    out = np.zeros(5, I64)
    assert row_weights_lockstep(ta.table(), np.zeros(1, I64), rows, out) == -1
    assert out.tolist() == [1, 0, 0, 0, 1]
    both = np.concatenate([ta.table(), tb.table()])
    assert row_weights_lockstep(both, np.array([0, 2], I64), rows, out) == 4
