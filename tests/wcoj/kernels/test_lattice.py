"""The lattice kernels against brute force over every entry of the runs they read: the
change of ``distinct`` at a nested time (by lookups, and from a running integral) and the
lattice join. Also run with
``NUMBA_DISABLE_JIT=1`` by ``./dev test`` (the kernels then read the runs through ctypes)."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wcoj.kernels.lattice import (DENSE, OK, PRODUCT_OVERFLOW, RETRY, SUM_OVERFLOW, integral_step,
                                  lattice_distinct, lattice_join, lattice_next)
from wcoj.rows import packing_within
from wcoj.tables import RunTable

I64_MAX = np.iinfo(np.int64).max
D = 2  # (epoch, iteration) times
NO_TABLE = (np.zeros(0, dtype=np.int64),) * 3 + (0,)  # lattice_join without its dense table


def arr(xs):
    return np.array(xs, dtype=np.int64)


def table(runs, width):
    """A run table of ``runs``, each a list of ``(row, time, weight)`` entries (rows of
    ``width`` columns); equal (row, time) entries of a run add up, as in a consolidated run."""
    rows, keep = [], []
    for entries in runs:
        acc = {}
        for row, time, w in entries:
            acc[tuple(row) + tuple(time)] = acc.get(tuple(row) + tuple(time), 0) + w
        items = sorted((k, w) for k, w in acc.items() if w)
        if not items:
            continue
        keys = np.array([k for k, _ in items], dtype=np.int64).reshape(len(items), width + D)
        w = np.array([w for _, w in items], dtype=np.int64)
        times = keys[:, width:]
        rows.append(RunTable.row(keys, w, tuple(times.min(axis=0).tolist()), tuple(times.max(axis=0).tolist())))
        keep += [keys, w]
    return RunTable(rows, keep), len(rows)


def below(s, t):
    return all(a <= b for a, b in zip(s, t))


def corners(t):
    for S in itertools.product((0, 1), repeat=len(t)):
        c = tuple(x - b for x, b in zip(t, S))
        if min(c) >= 0:
            yield c, (-1) ** sum(S)


times = st.tuples(st.integers(0, 2), st.integers(0, 3))
entry = st.tuples(st.tuples(st.integers(0, 3)), times, st.integers(-2, 2))


@settings(max_examples=300)
@given(st.lists(st.lists(entry, max_size=8), max_size=4), st.lists(st.tuples(st.integers(0, 3)), unique=True, max_size=3),
       st.lists(st.sampled_from([-1, 1, 2]), min_size=3, max_size=3), times)
def test_lattice_distinct_is_the_inclusion_exclusion_over_every_row(prior, batch_rows, bw, t):
    batch = sorted(batch_rows)
    rt, _ = table(prior + [[(r, t, w) for r, w in zip(batch, bw)]], 1)
    n_prior = table(prior, 1)[1]  # the batch's run comes last
    k, w, m, bad, _, _, _ = lattice_distinct(rt.table, n_prior, 1, np.array(t, dtype=np.int64),
                                             np.zeros((0, 1), dtype=np.int64), False)
    assert bad == -1
    entries = [e for run in prior for e in run] + [(r, t, w) for r, w in zip(batch, bw)]
    want = {}
    for row in sorted({e[0] for e in entries}):
        d = sum(sign * (sum(w for r, s, w in entries if r == row and below(s, c)) > 0)
                for c, sign in corners(t))
        if d:
            want[row] = d
    got = {tuple(k[i].tolist()): int(w[i]) for i in range(m)}
    assert got == want
    assert [tuple(k[i].tolist()) for i in range(m)] == sorted(got)  # sorted rows


def test_lattice_distinct_reports_the_row_whose_sum_overflows():
    rt, n = table([[((4,), (0, 0), I64_MAX)], [((4,), (0, 1), 1)]], 1)
    k, _, m, bad, _, _, _ = lattice_distinct(rt.table, n, 1, np.array([0, 1], dtype=np.int64),
                                             np.zeros((0, 1), dtype=np.int64), False)
    assert bad >= 0 and k[m].tolist() == [4]


@settings(max_examples=300)
@given(st.dictionaries(st.tuples(st.integers(0, 3), st.integers(0, 2)), st.integers(-3, 3), max_size=8),
       st.dictionaries(st.tuples(st.integers(0, 3), st.integers(0, 2)), st.sampled_from([-2, -1, 1, 2]), max_size=6))
def test_the_integral_answers_a_batch_as_h_of_the_sums_before_and_after(held, batch):
    """``integral_step`` gives ``H(V + w) - H(V)`` per batch row, in batch order, and adds
    the batch into the sums."""
    p = packing_within(arr([0, 0]), arr([3, 2]))
    sums = np.zeros(1 << p.n_bits, dtype=np.int64)
    total = dict(held)
    for r, v in held.items():
        sums[p.pack(arr([r]))[0]] = v
    rows = sorted(batch)
    keys, w = arr(rows).reshape(len(rows), 2), arr([batch[r] for r in rows])
    out_k, out_w = np.empty((len(rows), 2), dtype=np.int64), np.empty(len(rows), dtype=np.int64)
    m, bad = integral_step(keys, w, *p.kernel_args(), sums, out_k, out_w)
    assert bad == -1
    want = [(r, (total.get(r, 0) + batch[r] > 0) - (total.get(r, 0) > 0)) for r in rows]
    assert [(tuple(out_k[i].tolist()), int(out_w[i])) for i in range(m)] == [(r, d) for r, d in want if d]
    for r in rows:
        total[r] = total.get(r, 0) + batch[r]
    assert all(int(sums[p.pack(arr([r]))[0]]) == v for r, v in total.items())


def test_the_integral_refuses_a_row_outside_its_packing_and_names_an_overflow():
    p = packing_within(arr([0]), arr([3]))
    sums = np.zeros(4, dtype=np.int64)
    out_k, out_w = np.empty((2, 1), dtype=np.int64), np.empty(2, dtype=np.int64)
    # a row outside the packing: nothing added, not even the rows before it
    assert integral_step(arr([[1], [9]]), arr([1, 1]), *p.kernel_args(), sums, out_k, out_w) == (0, -2)
    assert not sums.any()
    sums[2] = I64_MAX
    assert integral_step(arr([[1], [2]]), arr([1, 1]), *p.kernel_args(), sums, out_k, out_w)[1] == 1


def stored(runs):
    """The ``(row, time)`` entries a run table of ``runs`` holds (each run's non-zero sums)."""
    out = []
    for run in runs:
        acc = {}
        for row, s, w in run:
            acc[(row, s)] = acc.get((row, s), 0) + w
        out += [(row, s) for (row, s), w in acc.items() if w]
    return out


@settings(max_examples=300)
@given(st.lists(st.lists(entry, max_size=8), max_size=4), st.lists(st.tuples(st.integers(0, 3)), unique=True, max_size=3),
       st.lists(st.sampled_from([-1, 1, 2]), min_size=3, max_size=3), times)
def test_lattice_distinct_with_a_plan_equals_the_scan_and_plans_every_later_iteration(prior, batch_rows, bw, t):
    check_plan(prior, batch_rows, bw, t)


# iterations up to 12 and long runs: a batch's rows have more later iterations of earlier
# epochs than the plan's first room (16), spread over several runs
deep_times = st.tuples(st.integers(0, 2), st.integers(0, 12))
deep_entry = st.tuples(st.tuples(st.integers(0, 1)), deep_times, st.sampled_from([-1, 1, 2]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(deep_entry, min_size=20, max_size=40), min_size=2, max_size=4),
       st.lists(st.tuples(st.integers(0, 1)), unique=True, min_size=1, max_size=2),
       st.lists(st.sampled_from([-1, 1, 2]), min_size=3, max_size=3), deep_times)
def test_lattice_distinct_plans_many_later_iterations(prior, batch_rows, bw, t):
    check_plan(prior, batch_rows, bw, t)


def check_plan(prior, batch_rows, bw, t):
    """Given the planned rows for t (this epoch's rows that an earlier epoch holds at t's
    iteration), the change is the one the scan finds; the plan it returns for the batch's
    rows is every (later iteration, row) an earlier epoch holds. The prior holds what a
    child circuit's trace holds before t: earlier epochs, and earlier iterations of t's."""
    prior = [[e for e in run if e[1][0] < t[0] or (e[1][0] == t[0] and e[1][1] < t[1])] for run in prior]
    batch = sorted(batch_rows)
    rt, _ = table(prior + [[(r, t, w) for r, w in zip(batch, bw)]], 1)
    n_prior = table(prior, 1)[1]  # the batch's run comes last
    held = stored(prior)
    planned = sorted({row for row, s in held if s[0] == t[0] and below(s, t)}
                     & {row for row, s in held if s[0] < t[0] and s[1] == t[1]})
    extra = np.array(planned, dtype=np.int64).reshape(len(planned), 1)
    got = lattice_distinct(rt.table, n_prior, 1, np.array(t, dtype=np.int64), extra, True)
    want = lattice_distinct(rt.table, n_prior, 1, np.array(t, dtype=np.int64), np.zeros((0, 1), dtype=np.int64), False)
    assert got[3] == want[3] == -1
    assert got[0][:got[2]].tolist() == want[0][:want[2]].tolist()
    assert got[1][:got[2]].tolist() == want[1][:want[2]].tolist()
    plan = sorted(zip(got[5][:got[6]].tolist(), got[4][:got[6], 0].tolist()))
    assert plan == sorted((s[1], row[0]) for row, s in held if row in batch and s[0] < t[0] and s[1] > t[1])


pair = st.tuples(st.tuples(st.integers(0, 2), st.integers(0, 2)), times, st.integers(-2, 2))


@settings(max_examples=300)
@given(st.lists(st.lists(pair, max_size=6), max_size=3), st.lists(st.lists(pair, max_size=6), max_size=3),
       times, st.booleans(), st.sampled_from([0, 1, 3]))
def test_lattice_join_is_the_sum_over_time_pairs_that_meet_at_t(a_runs, b_runs, t, project, dense_at):
    check_join(a_runs, b_runs, t, project, dense_at, 2)


# two keys, values up to 40: a key's entries come from several runs, more than the kernel's
# first scratch holds (16) and more than it sorts by insertion (32), and a key pairs with
# more than 16 rows of the other side (the room the kernel asks its caller for)
wide_pair = st.tuples(st.tuples(st.integers(0, 1), st.integers(0, 40)), times, st.sampled_from([-1, 1, 2]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(wide_pair, min_size=30, max_size=60), min_size=1, max_size=3),
       st.lists(st.lists(wide_pair, min_size=30, max_size=60), min_size=1, max_size=3),
       times, st.booleans(), st.sampled_from([0, 1, 40]))
def test_lattice_join_of_keys_with_many_entries_in_several_runs(a_runs, b_runs, t, project, dense_at):
    check_join(a_runs, b_runs, t, project, dense_at, 40)


def check_join(a_runs, b_runs, t, project, dense_at, high):
    """``lattice_join`` of two traces' runs (rows ``(key, value)``, values in ``[0, high]``)
    against the sum over every pair of entries whose times meet at ``t``."""
    ta, _ = table(a_runs, 2)
    tb, _ = table(b_runs, 2)
    cols = (2, 0) if project else (0, 1, 2)  # (b value, key) or the whole joined row
    src = np.array(cols, dtype=np.int64)
    out = np.arange(len(cols), dtype=np.int64)
    a_map = np.stack([out[src < 2], src[src < 2]])
    b_map = np.stack([out[src >= 2], src[src >= 2] - 2 + 1])
    # dense_at > 0: past that many rows out, the rest are summed in a table over [0, high]^width
    p = packing_within(np.zeros(len(cols), dtype=np.int64), np.full(len(cols), high, dtype=np.int64))
    dense = (p.lows, p.highs - p.lows, p.shifts, dense_at) if dense_at else NO_TABLE
    k, w, m, status, _, _ = lattice_join(ta.table, tb.table, 1, 2, 2, np.array(t, dtype=np.int64), a_map, b_map,
                                         *dense)
    assert status in ((OK, DENSE) if dense_at else (OK,))
    got = {}
    if status == DENSE:  # consolidated already: sorted rows, none of weight 0
        rows = p.unpack(k[:m, 0]).tolist()
        assert rows == sorted(rows) and len(set(map(tuple, rows))) == m and all(w[:m])
        k = np.array(rows, dtype=np.int64).reshape(m, len(cols))
    for i in range(m):
        row = tuple(k[i].tolist())
        got[row] = got.get(row, 0) + int(w[i])
    want = {}
    for ra, sa, wa in (e for run in a_runs for e in run):
        for rb, sb, wb in (e for run in b_runs for e in run):
            if ra[0] == rb[0] and tuple(max(x, y) for x, y in zip(sa, sb)) == t:
                joined = (ra[0], ra[1], rb[1])
                row = tuple(joined[c] for c in cols)
                want[row] = want.get(row, 0) + wa * wb
    assert {r: x for r, x in got.items() if x} == {r: x for r, x in want.items() if x}


def test_lattice_join_reports_overflow():
    a = [[((1, 5), (0, 1), I64_MAX)]]
    b = [[((1, 7), (0, 0), 2)]]
    ta, _ = table(a, 2)
    tb, _ = table(b, 2)
    maps = (np.array([[0, 1], [0, 1]], dtype=np.int64), np.array([[2], [1]], dtype=np.int64))
    k, _, m, status, x, y = lattice_join(ta.table, tb.table, 1, 2, 2, np.array([0, 1], dtype=np.int64), *maps, *NO_TABLE)
    assert status == PRODUCT_OVERFLOW and {int(x), int(y)} == {I64_MAX, 2}
    assert k[m].tolist() == [1, 5, 7]
    two = [[((1, 5), (0, 0), I64_MAX)], [((1, 5), (0, 1), 1)]]  # one row, two times: the sum overflows
    ta, _ = table(two, 2)
    tb, _ = table([[((1, 7), (0, 2), 1)]], 2)
    status = lattice_join(ta.table, tb.table, 1, 2, 2, np.array([0, 2], dtype=np.int64), *maps, *NO_TABLE)[3]
    assert status == SUM_OVERFLOW
    # summed in the table, a product or a sum that leaves int64 asks for the row route
    t01 = np.array([0, 1], dtype=np.int64)
    maps2 = (np.array([[0], [1]], dtype=np.int64), np.array([[1], [1]], dtype=np.int64))  # (a value, b value)
    p2 = packing_within(np.zeros(2, dtype=np.int64), np.full(2, 7, dtype=np.int64))
    dense2 = (p2.lows, p2.highs - p2.lows, p2.shifts, 1)  # the table from the second row out on
    ta, _ = table([[((1, 5), (0, 1), 1)], [((2, 5), (0, 1), I64_MAX)]], 2)
    tb, _ = table([[((1, 7), (0, 0), 1), ((2, 7), (0, 0), 2)]], 2)
    assert lattice_join(ta.table, tb.table, 1, 2, 2, t01, *maps2, *dense2)[3] == RETRY  # I64_MAX * 2
    assert lattice_join(ta.table, tb.table, 1, 2, 2, t01, *maps2, *NO_TABLE)[3] == PRODUCT_OVERFLOW
    ta, _ = table([[((1, 5), (0, 1), I64_MAX)], [((2, 5), (0, 1), 1)]], 2)  # two keys, one output row (5, 7)
    tb, _ = table([[((1, 7), (0, 0), 1), ((2, 7), (0, 0), 1)]], 2)
    assert lattice_join(ta.table, tb.table, 1, 2, 2, t01, *maps2, *dense2)[3] == RETRY
    assert lattice_join(ta.table, tb.table, 1, 2, 2, t01, *maps2, *NO_TABLE)[3] == OK
    # a value outside the table's ranges: the row route too
    ta, _ = table([[((1, 5), (0, 1), 1)], [((2, 5), (0, 1), 1)]], 2)
    p3 = packing_within(np.zeros(2, dtype=np.int64), np.full(2, 6, dtype=np.int64))
    assert lattice_join(ta.table, tb.table, 1, 2, 2, t01, *maps2, p3.lows, p3.highs - p3.lows, p3.shifts, 1)[3] == RETRY
    ok = lattice_join(ta.table, tb.table, 1, 2, 2, t01, *maps2, *dense2)
    assert ok[3] == DENSE and p2.unpack(ok[0][:ok[2], 0]).tolist() == [[5, 7]] and ok[1][:ok[2]].tolist() == [2]


@settings(max_examples=300)
@given(st.lists(st.lists(pair, max_size=6), max_size=3), st.lists(st.lists(pair, max_size=6), max_size=3),
       times)
def test_lattice_next_is_the_least_later_iteration_of_an_earlier_epoch_for_an_epoch_key(src, dst, t):
    ts, _ = table(src, 2)
    td, _ = table(dst, 2)
    got = int(lattice_next(ts.table, 1, 2, np.array(t, dtype=np.int64), td.table, 2))
    keys = {row[0] for row, s in stored(src) if s[0] == t[0] and below(s, t)}
    its = [s[1] for row, s in stored(dst) if row[0] in keys and s[0] < t[0] and s[1] > t[1]]
    assert got == (min(its) if its else -1)


def test_lattice_join_moves_the_rows_it_wrote_into_the_table_when_it_switches():
    """Three keys, one output row each; the table from the third row on: the two rows
    written before it go into the table too, each as itself."""
    ta, _ = table([[((k, 10 + k), (0, 1), k) for k in (1, 2, 3)]], 2)
    tb, _ = table([[((k, 20 + k), (0, 0), 1) for k in (1, 2, 3)]], 2)
    maps = (np.array([[0], [1]], dtype=np.int64), np.array([[1], [1]], dtype=np.int64))  # (a value, b value)
    p = packing_within(arr([10, 20]), arr([13, 23]))
    k, w, m, status, _, _ = lattice_join(ta.table, tb.table, 1, 2, 2, np.array([0, 1], dtype=np.int64), *maps,
                                         p.lows, p.highs - p.lows, p.shifts, 2)
    assert status == DENSE
    assert p.unpack(k[:m, 0]).tolist() == [[11, 21], [12, 22], [13, 23]] and w[:m].tolist() == [1, 2, 3]


def test_lattice_join_of_one_key_held_by_three_runs():
    """A key with 60 entries from three runs, against one entry: the kernel sorts them
    (more than 32, from several runs) and, summing into the table, asks its caller for
    room for their fields (more than 16)."""
    a_runs = [[((0, v), (0, 0), 1) for v in range(r, 60, 3)] for r in range(3)]
    for dense_at in (0, 1):
        check_join(a_runs, [[((0, 5), (0, 1), 2)]], (0, 1), False, dense_at, 60)
    # the same rows in each run: a row's entries are summed across runs, and a sum that
    # leaves int64 is reported (the entries must be sorted to meet)
    same = [[((0, v), (0, 0), I64_MAX if (r, v) == (0, 7) else 1) for v in range(20)] for r in range(2)]
    ta, _ = table(same, 2)
    tb, _ = table([[((0, 5), (0, 1), 1)]], 2)
    maps = (np.array([[0, 1], [0, 1]], dtype=np.int64), np.array([[2], [1]], dtype=np.int64))
    status = lattice_join(ta.table, tb.table, 1, 2, 2, np.array([0, 1], dtype=np.int64), *maps, *NO_TABLE)[3]
    assert status == SUM_OVERFLOW
