"""Z-set rows: checked int64 weight arithmetic, and sorting and merging rows (nopython).

Z-set weights are int64 and must never wrap around silently (Budiu, "Implementing
Z-sets": checked integer weights). Each kernel writes into caller-allocated outputs and
returns the first offending position, or -1 when everything fitted; the Python wrappers
in ``wcoj.zset`` and ``wcoj.indexed`` raise ``WeightOverflowError`` from it, before any
state is touched.

Inputs: int64 arrays. ``starts`` arrays are strictly increasing segment starts beginning
at 0 (a segment runs to the next start, the last one to the end). Rows are
``int64[n, k]`` compared lexicographically.
"""

import numpy as np
from numba import njit

from .memory import kernel, row_kernel

__all__ = ["I64_MAX", "I64_MIN", "multiply_into", "segment_sum_into", "run_sums_into",
           "sort_small_into", "radix_sort_into", "dense_sums_into", "column_bounds_into", "pack_rows_into", "match_ranges_into", "merge_rows_into", "sum_adjacent_into", "cross_rows_into", "advanced_into",
           "SMALL_ROWS", "GROUP_MAX"]

I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min
GROUP_MAX = 64  # advanced_into sorts a row's entries by insertion up to this many
SMALL_ROWS = 512  # wcoj.zset consolidates up to this many rows in one kernel call (sort_small_into:
# 20 us for 512 rows in random order, where the general route's numpy calls cost 44 us), and
# wcoj.rows.row_order sorts them with sorted_order (12 us at 512 rows, against 14-17)


@njit(cache=True, nogil=True, inline="always")
def _add_overflows(a, b):
    # Two's-complement rule: the sum overflows iff both operands share a sign that the
    # wrapped result does not.
    if b > 0:
        return a > I64_MAX - b
    return a < I64_MIN - b


@njit(cache=True, nogil=True, inline="always")
def _mul_overflows(a, b):
    # CERT INT32-C: compare against the truncated quotient of the bound that applies. The
    # quotients round toward zero (C division): floor division is off by one whenever the
    # quotient is negative and inexact (-2**62 * -2 slipped through).
    if a == 0 or b == 0:
        return False
    if a > 0:
        if b > 0:
            return a > I64_MAX // b
        q = I64_MIN // a
        if I64_MIN % a != 0:
            q += 1
        return b < q
    if b > 0:
        q = I64_MIN // b
        if I64_MIN % b != 0:
            q += 1
        return a < q
    q = I64_MAX // a
    if I64_MAX % a != 0:
        q += 1
    return b < q


@kernel
def multiply_into(a, b, out):
    """out[i] = a[i] * b[i]; return the first overflowing row, or -1."""
    for i in range(out.shape[0]):
        if _mul_overflows(a[i], b[i]):
            return i
        out[i] = a[i] * b[i]
    return -1


@kernel
def segment_sum_into(w, starts, out):
    """out[s] = sum of w over segment s; return the first overflowing segment, or -1.

    ``out`` has ``starts.shape[0]`` slots. Partial sums are checked, so a segment whose
    exact total fits but whose running sum does not is reported too (int64 order matters
    only at the extremes; we refuse rather than guess).
    """
    n_seg = starts.shape[0]
    n = w.shape[0]
    for s in range(n_seg):
        lo = starts[s]
        hi = starts[s + 1] if s + 1 < n_seg else n
        acc = np.int64(0)
        for i in range(lo, hi):
            if _add_overflows(acc, w[i]):
                return s
            acc += w[i]
        out[s] = acc
    return -1


@kernel
def run_sums_into(keys, w, out_pos, out_sums):
    """Sum ``w`` over each run of equal ``keys`` (sorted), keeping the non-zero sums.

    For the m-th kept run, ``out_pos[m]`` is its first position and ``out_sums[m]`` its
    sum (both allocated by the caller, as long as ``keys``). Returns ``(m, bad)``: how
    many runs were kept and the first position of the first run whose running sum leaves
    int64, or -1. (Gather ``w`` into key order before the call: a gather fused into this
    loop measured 5x slower than numpy's.)
    """
    n = keys.shape[0]
    m = 0
    i = 0
    while i < n:
        acc = np.int64(0)
        j = i
        while j < n and keys[j] == keys[i]:
            if _add_overflows(acc, w[j]):
                return m, i
            acc += w[j]
            j += 1
        if acc != 0:
            out_pos[m] = i
            out_sums[m] = acc
            m += 1
        i = j
    return m, -1


@kernel
def dense_sums_into(packed, w, table, out_keys, out_sums):
    """Sum ``w`` per packed key by direct addressing (a perfect hash: ``table`` is a
    caller-zeroed array of one slot per possible key, ``packed`` in ``[0, len(table))``),
    then keep the non-zero sums in key order: ``out_keys[m]``, ``out_sums[m]``. Returns
    ``(m, bad)``: how many were kept and the first input position whose running sum (in
    input order, as a stable sort then ``run_sums_into`` adds them) leaves int64, or -1.
    Linear in the rows plus the slots: no sort.
    """
    for i in range(packed.shape[0]):
        s = packed[i]
        if _add_overflows(table[s], w[i]):
            return 0, i
        table[s] += w[i]
    m = 0
    for s in range(table.shape[0]):
        if table[s] != 0:
            out_keys[m] = s
            out_sums[m] = table[s]
            m += 1
    return m, -1


@kernel
def cross_rows_into(ka, kb, a_lo, a_n, b_lo, b_n, wa, wb, a_map, b_map, out_keys, out_w):
    """The rows of a join, written in place: for each matched run pair ``r``, every
    ``(i, j)`` of ``[a_lo[r], a_lo[r] + a_n[r]) x [b_lo[r], b_lo[r] + b_n[r])`` in
    row-major order gets an output row and the weight ``wa[i] * wb[j]`` (checked). Output
    column ``a_map[0, c]`` gets ``ka[i, a_map[1, c]]`` and ``b_map[0, c]`` gets ``kb[j,
    b_map[1, c]]``: for a join on ``n`` key columns, the row ``ka[i] ++ kb[j, n:]``, or
    only the columns a projection after the join keeps; no index arrays are built. The
    caller allocates
    ``sum(a_n * b_n)`` output rows.

    Returns ``(i, j)`` of the first product that leaves int64, or ``(-1, -1)``.
    """
    t = 0
    na = a_map.shape[1]
    nb = b_map.shape[1]
    for r in range(a_lo.shape[0]):
        for i in range(a_lo[r], a_lo[r] + a_n[r]):
            x = wa[i]
            for j in range(b_lo[r], b_lo[r] + b_n[r]):
                if _mul_overflows(x, wb[j]):
                    return i, j
                for c in range(na):
                    out_keys[t, a_map[0, c]] = ka[i, a_map[1, c]]
                for c in range(nb):
                    out_keys[t, b_map[0, c]] = kb[j, b_map[1, c]]
                out_w[t] = x * wb[j]
                t += 1
    return -1, -1


@row_kernel
def _put(out_keys, out_w, m, keys, i, w):
    """Output row ``m`` := row ``i`` of ``keys`` with weight ``w``, column by column: a
    row assignment (``out_keys[m] = keys[i]``) compiles Numba's shape-mismatch message,
    seconds of a cold start for a check that cannot fail here."""
    for c in range(keys.shape[1]):
        out_keys[m, c] = keys[i, c]
    out_w[m] = w


@njit(cache=True, nogil=True, inline="always")
def _cmp(a, i, b, j):
    """-1, 0 or 1: row ``a[i]`` against row ``b[j]``, column by column."""
    for c in range(a.shape[1]):
        if a[i, c] < b[j, c]:
            return -1
        if a[i, c] > b[j, c]:
            return 1
    return 0


@njit(cache=True, nogil=True, inline="always")
def _row_less(a, x, y, rest):
    """Whether row ``x`` of ``a`` sorts before row ``y``: by column 0, then by columns
    ``rest`` on (the columns between do not order, such as a weight)."""
    if a[x, 0] != a[y, 0]:
        return a[x, 0] < a[y, 0]
    for c in range(rest, a.shape[1]):
        if a[x, c] != a[y, c]:
            return a[x, c] < a[y, c]
    return False


@kernel
def sorted_order(a, n, rest):
    """The order of the first ``n`` rows of ``a`` by ``_row_less`` (a stable merge sort:
    plain loops compile in a fraction of the time Numba's ``argsort`` takes)."""
    idx = np.arange(n)
    tmp = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, t = lo, mid, lo
            while i < mid or j < hi:
                if j >= hi or (i < mid and not _row_less(a, idx[j], idx[i], rest)):
                    tmp[t] = idx[i]
                    i += 1
                else:
                    tmp[t] = idx[j]
                    j += 1
                t += 1
        idx, tmp = tmp, idx
        width *= 2
    return idx


@kernel
def sort_small_into(keys, weights, out_keys, out_w):
    """Consolidate ``keys``/``weights`` (sort rows, add equal rows' weights in input
    order, drop zero sums) into ``out_keys``/``out_w`` (as many rows as the input).

    Returns ``(m, bad)``: rows written, and the input row whose weight made a sum leave
    int64 (-1 when none). A stable merge sort of row indices (``sorted_order``: an
    insertion sort took 122 us for 256 rows in random order, more than the general
    route's 37 us).
    """
    order = sorted_order(keys, keys.shape[0], 1)
    m, bad = sum_adjacent_into(keys[order], weights[order], out_keys, out_w)
    return m, (order[bad] if bad >= 0 else -1)


RADIX_DIGIT = 11  # bits per pass: 2,048 counters per digit, 16 KB, stay in L1


@kernel
def radix_sort_into(packed, n_bits, order, out):
    """Stable sort of ``packed`` (values in ``[0, 2**n_bits)``): ``out`` the sorted values,
    ``order`` the permutation (``out == packed[order]``); returns the passes made.

    Least significant digit first, one histogram read for every digit, then a scatter per
    digit whose values are not all equal; the passes alternate between the outputs and a
    scratch pair so that the last one lands in ``out``/``order``. O(n) per pass: 2-7x
    numpy's sort of the packed values with their index (measured at 10^5-10^7 rows of
    16-44 bits).
    """
    n = packed.shape[0]
    passes = max(1, (n_bits + RADIX_DIGIT - 1) // RADIX_DIGIT)
    digit = max(1, (n_bits + passes - 1) // passes)
    mask = (1 << digit) - 1
    counts = np.zeros((passes, mask + 1), dtype=np.int64)
    for i in range(n):
        x = packed[i]
        for p in range(passes):
            counts[p, (x >> (p * digit)) & mask] += 1
    active = np.zeros(passes, dtype=np.bool_)
    n_active = 0
    for p in range(passes):
        total = 0
        for b in range(mask + 1):
            c = counts[p, b]
            if c == n:  # every value has this digit: the pass would move nothing
                break
            counts[p, b] = total
            total += c
        else:
            active[p] = True
            n_active += 1
    if n_active == 0:
        for i in range(n):
            out[i] = packed[i]
            order[i] = i
        return 0
    tmp_v = np.empty(n, dtype=np.int64)
    tmp_i = np.empty(n, dtype=np.int64)
    left = n_active  # passes still to make; the last writes into out/order
    first = True
    for p in range(passes):
        if not active[p]:
            continue
        src_v, src_i = (tmp_v, tmp_i) if left % 2 == 1 else (out, order)
        dst_v, dst_i = (out, order) if left % 2 == 1 else (tmp_v, tmp_i)
        if first:
            src_v = packed
        shift = p * digit
        for i in range(n):
            x = src_v[i]
            b = (x >> shift) & mask
            j = counts[p, b]
            counts[p, b] = j + 1
            dst_v[j] = x
            dst_i[j] = i if first else src_i[i]
        first = False
        left -= 1
    return n_active


@kernel
def column_bounds_into(keys, lows, highs):
    """``lows[j]``, ``highs[j]``: the least and greatest value of column j of ``keys``
    (at least one row), in one pass over the rows."""
    k = keys.shape[1]
    for j in range(k):
        lows[j] = highs[j] = keys[0, j]
    for i in range(1, keys.shape[0]):
        for j in range(k):
            x = keys[i, j]
            if x < lows[j]:
                lows[j] = x
            elif x > highs[j]:
                highs[j] = x


@kernel
def strictly_increasing(keys):
    """Whether the rows of ``keys`` (at least one column) are sorted and unique, in one
    pass that stops at the first row out of order."""
    for i in range(1, keys.shape[0]):
        if _cmp(keys, i - 1, keys, i) >= 0:
            return False
    return True


@kernel
def timed_into(keys, time, out, lows, highs):
    """``out[i]``: row ``keys[i]`` followed by the columns of ``time`` (a trace's run of
    rows that share one time); and, when ``lows`` has a slot per column (and there is a
    row), each column's least and greatest value, in the same pass."""
    k, d = keys.shape[1], time.shape[0]
    bounds = lows.shape[0] == k and keys.shape[0] > 0
    if bounds:
        for j in range(k):
            lows[j] = highs[j] = keys[0, j]
    for i in range(keys.shape[0]):
        for j in range(k):
            x = keys[i, j]
            out[i, j] = x
            if bounds:
                if x < lows[j]:
                    lows[j] = x
                elif x > highs[j]:
                    highs[j] = x
        for j in range(d):
            out[i, k + j] = time[j]


@kernel
def pack_rows_into(keys, lows, shifts, out):
    """``out[i]``: row i packed, the OR over columns j of ``(keys[i, j] - lows[j]) <<
    shifts[j]`` (``wcoj.rows.Packing``; every value within its column's range)."""
    k = keys.shape[1]
    for i in range(keys.shape[0]):
        v = 0
        for j in range(k):
            v |= (keys[i, j] - lows[j]) << shifts[j]
        out[i] = v


@kernel
def match_ranges_into(a, q, lo, hi):
    """For sorted ``a`` and sorted ``q``: ``lo[i]``/``hi[i]`` the first position in ``a``
    of a value ``>= q[i]``/``> q[i]`` (numpy's ``searchsorted`` left and right). One
    forward cursor, moved by exponential then binary steps: O(|q| log(|a| / |q|))."""
    n = a.shape[0]
    p = 0
    for i in range(q.shape[0]):
        x = q[i]
        for side in range(2):  # 0: first value >= x, 1: first value > x
            if p < n and (a[p] < x or (side == 1 and a[p] == x)):
                step, prev, cur = 1, p, p + 1
                while cur < n and (a[cur] < x or (side == 1 and a[cur] == x)):
                    prev, step = cur, step * 2
                    cur = prev + step
                lo_, hi_ = prev + 1, min(cur, n)  # a[prev] is before, a[hi_] (if any) not
                while lo_ < hi_:
                    mid = (lo_ + hi_) >> 1
                    if a[mid] < x or (side == 1 and a[mid] == x):
                        lo_ = mid + 1
                    else:
                        hi_ = mid
                p = lo_
            if side == 0:
                lo[i] = p
            else:
                hi[i] = p


@kernel
def merge_rows_into(ka, wa, kb, wb, out_keys, out_w):
    """Merge two consolidated row sets (sorted, unique), adding the weights of equal rows
    and dropping zero sums, in O((|a| + |b|) * width).

    The caller allocates ``|a| + |b|`` output rows. Returns ``(m, bad)``: rows written,
    and the row of ``ka`` whose two weights do not add up in int64 (-1 when none).
    """
    i = j = m = 0
    na, nb = ka.shape[0], kb.shape[0]
    while i < na and j < nb:
        c = _cmp(ka, i, kb, j)
        if c < 0:
            _put(out_keys, out_w, m, ka, i, wa[i])
            m += 1
            i += 1
        elif c > 0:
            _put(out_keys, out_w, m, kb, j, wb[j])
            m += 1
            j += 1
        else:
            if _add_overflows(wa[i], wb[j]):
                return m, i
            if wa[i] + wb[j] != 0:
                _put(out_keys, out_w, m, ka, i, wa[i] + wb[j])
                m += 1
            i += 1
            j += 1
    for i in range(i, na):
        _put(out_keys, out_w, m, ka, i, wa[i])
        m += 1
    for j in range(j, nb):
        _put(out_keys, out_w, m, kb, j, wb[j])
        m += 1
    return m, -1


@kernel
def sum_adjacent_into(keys, w, out_keys, out_w):
    """Consolidate rows that are already sorted (equal rows adjacent, not yet unique):
    add the weights of each run of equal rows in order, drop zero sums, in O(n * width).

    The caller allocates as many output rows as input rows. Returns ``(m, bad)``: rows
    written, and the input row whose weight made a running sum leave int64 (-1 if none).
    """
    n = keys.shape[0]
    m = 0
    i = 0
    while i < n:
        acc = w[i]
        j = i + 1
        while j < n and _cmp(keys, j, keys, i) == 0:
            if _add_overflows(acc, w[j]):
                return m, j
            acc += w[j]
            j += 1
        if acc != 0:
            _put(out_keys, out_w, m, keys, i, acc)
            m += 1
        i = j
    return m, -1


@kernel
def advanced_into(keys, w, arity, frontier, out_keys, out_w):
    """A trace run's entries with every time advanced to ``t ⊔ frontier`` (the
    coordinate-wise max), consolidated: ``keys`` rows then times, sorted by both, so the
    entries of a row are adjacent and only their times need sorting again (by insertion,
    a row's few times). Writes into ``out_keys``/``out_w`` (as many rows as the input);
    returns ``(m, bad)``: rows written, and -1, the input row whose weight made a sum leave
    int64, or -2 when a row has more than ``GROUP_MAX`` entries (nothing is then valid)."""
    n, width = keys.shape
    m = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and _same_row(keys, i, j, arity):
            j += 1
        if j - i > GROUP_MAX:
            return 0, -2
        g = m  # the row's entries go to out[g:m], sorted by time
        for p in range(i, j):
            q = g  # first slot whose time is >= p's advanced time
            c = 0
            while q < m:
                c = 0
                for x in range(arity, width):
                    tx = max(keys[p, x], frontier[x - arity])
                    if out_keys[q, x] != tx:
                        c = -1 if out_keys[q, x] < tx else 1
                        break
                if c >= 0:
                    break
                q += 1
            if q < m and c == 0:
                if _add_overflows(out_w[q], w[p]):
                    return m, p
                out_w[q] += w[p]
                continue
            for r in range(m, q, -1):  # make room at q
                for x in range(width):
                    out_keys[r, x] = out_keys[r - 1, x]
                out_w[r] = out_w[r - 1]
            for x in range(arity):
                out_keys[q, x] = keys[p, x]
            for x in range(arity, width):
                out_keys[q, x] = max(keys[p, x], frontier[x - arity])
            out_w[q] = w[p]
            m += 1
        k = g
        for q in range(g, m):  # drop the times whose weights cancelled
            if out_w[q] != 0:
                if k != q:
                    for x in range(width):
                        out_keys[k, x] = out_keys[q, x]
                    out_w[k] = out_w[q]
                k += 1
        m = k
        i = j
    return m, -1


@njit(cache=True, nogil=True, inline="always")
def _same_row(a, i, j, arity):
    for c in range(arity):
        if a[i, c] != a[j, c]:
            return False
    return True
