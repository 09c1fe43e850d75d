"""Reading a trace's runs through a run table (``wcoj.tables.RunTable``): rows by address,
compared, found by galloping, gathered and consolidated per box of times, and packed into
a table slot. The helpers of ``wcoj.kernels.lattice``.

A run is ``int64[n, arity + d]``, rows then times, sorted, with a weight per entry; the
run table gives per run the addresses of its keys and weights, its length, and the
coordinate-wise least and greatest time it holds (``memory`` names the fields).
"""

import numpy as np

from .memory import RUN_FIELDS, RUN_KEYS, RUN_N, RUN_WEIGHTS, kernel, load, row_kernel
from .zsets import _add_overflows

@row_kernel
def _cmp_at(p, q, width):
    """-1, 0 or 1: the first ``width`` int64s at address ``p`` against those at ``q``."""
    for c in range(width):
        x, y = load(p, c), load(q, c)
        if x < y:
            return -1
        if x > y:
            return 1
    return 0


@row_kernel
def _in_box(p, col, lo, hi):
    """True when the time stored at ``p`` from column ``col`` lies in ``[lo, hi]``."""
    for j in range(lo.shape[0]):
        x = load(p, col + j)
        if x < lo[j] or x > hi[j]:
            return False
    return True


@row_kernel
def _run_meets(table, r, lo, hi):
    """True when run ``r``'s time bounds may hold a time in ``[lo, hi]``."""
    d = lo.shape[0]
    if table[r, RUN_N] == 0:
        return False
    for j in range(d):
        if table[r, RUN_FIELDS + j] > hi[j] or table[r, RUN_FIELDS + d + j] < lo[j]:
            return False
    return True


@kernel
def _sort_rows(addr, w, n, width):
    """Sort ``addr[:n]`` (row addresses, ``w`` alongside) by the rows' first ``width``
    values (``_sort_rows_within``). Returns the sorted pair, new arrays."""
    a, b = addr[:n].copy(), w[:n].copy()
    _sort_rows_within(a, b, n, width, np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
                      np.empty(n + 1, dtype=np.int64))
    return a, b


@row_kernel
def _sort_rows_within(a, b, n, width, ta, tb, starts):
    """Sort ``a[:n]`` (row addresses, ``b`` alongside) in place by the rows' first
    ``width`` values, with ``ta``, ``tb`` (``n`` entries) and ``starts`` (``n + 1``) as
    scratch: a stable natural merge sort, which merges the ascending stretches the input
    already has (entries gathered run by run come in a few sorted stretches: O(n) when
    already sorted, O(n log k) for k stretches). Allocates nothing: a kernel may call it
    per key without counting references."""
    k = 0
    for i in range(n):
        if i == 0 or _cmp_at(a[i], a[i - 1], width) < 0:
            starts[k] = i
            k += 1
    starts[k] = n
    in_a = True
    while k > 1:
        if in_a:
            k = _merge_pass(a, b, ta, tb, starts, k, n, width)
        else:
            k = _merge_pass(ta, tb, a, b, starts, k, n, width)
        in_a = not in_a
    if not in_a:  # the last pass wrote the scratch
        for i in range(n):
            a[i], b[i] = ta[i], tb[i]


@row_kernel
def _merge_pass(a, b, ta, tb, starts, k, n, width):
    """Merge the ``k`` sorted stretches of ``a`` (``starts``) pairwise into ``ta``:
    the number of stretches left, their starts written back."""
    nk = 0
    for r in range(0, k, 2):
        lo = starts[r]
        mid = starts[r + 1]
        hi = starts[r + 2] if r + 2 <= k else mid
        i, j, q = lo, mid, lo
        while i < mid and j < hi:
            if _cmp_at(a[j], a[i], width) < 0:
                ta[q], tb[q] = a[j], b[j]
                j += 1
            else:
                ta[q], tb[q] = a[i], b[i]
                i += 1
            q += 1
        while i < mid:
            ta[q], tb[q] = a[i], b[i]
            i += 1
            q += 1
        while j < hi:
            ta[q], tb[q] = a[j], b[j]
            j += 1
            q += 1
        starts[nk] = lo
        nk += 1
    starts[nk] = n
    return nk


@row_kernel
def _sum_rows_in_place(addr, w, n, width, unsorted):
    """Add the weights of equal rows of ``addr[:n]`` (row addresses, sorted, ``w``
    alongside) in order and drop zero sums, in place, allocating nothing (``_consolidate``
    after its sort, and a join's few entries per key): ``(m, bad)`` with ``bad`` the entry
    whose sum leaves int64, or -1. ``unsorted`` (a key's entries from several runs):
    insertion-sort them by row first."""
    if unsorted:
        for i in range(1, n):
            a, x = addr[i], w[i]
            j = i - 1
            while j >= 0 and _cmp_at(addr[j], a, width) > 0:
                addr[j + 1], w[j + 1] = addr[j], w[j]
                j -= 1
            addr[j + 1], w[j + 1] = a, x
    m = 0
    i = 0
    while i < n:
        acc = w[i]
        j = i + 1
        while j < n and _cmp_at(addr[j], addr[i], width) == 0:
            if _add_overflows(acc, w[j]):
                return m, j
            acc += w[j]
            j += 1
        if acc != 0:
            addr[m], w[m] = addr[i], acc
            m += 1
        i = j
    return m, -1


@kernel
def _consolidate(addr, w, n, width):
    """Sort ``n`` entries by row and add the weights of equal rows, dropping zero sums:
    ``(addrs, weights, m, bad)`` with ``bad`` the entry whose sum leaves int64, or -1."""
    a, b = _sort_rows(addr, w, n, width)
    m, bad = _sum_rows_in_place(a, b, n, width, False)
    return a, b, m, bad


@kernel
def _gather_box(table, width, lo, hi):
    """Every entry of the runs in ``table`` whose time lies in ``[lo, hi]``, consolidated
    per row: ``(row addresses, weights, m, bad)``."""
    total = 0
    for r in range(table.shape[0]):
        if _run_meets(table, r, lo, hi):
            total += table[r, RUN_N]
    addr, w = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    n = 0
    stride = 8 * (width + lo.shape[0])
    for r in range(table.shape[0]):
        if not _run_meets(table, r, lo, hi):
            continue
        base, wb = table[r, RUN_KEYS], table[r, RUN_WEIGHTS]
        for p in range(table[r, RUN_N]):
            row = base + stride * p
            if _in_box(row, width, lo, hi):
                addr[n], w[n] = row, load(wb, p)
                n += 1
    return _consolidate(addr, w, n, width)


@row_kernel
def _seek(base, stride, lo, n, key, nk):
    """The first position in ``[lo, n)`` of a run whose key (first ``nk`` values) is not
    below the key at address ``key``: galloping from ``lo``."""
    if lo >= n or _cmp_at(base + stride * lo, key, nk) >= 0:
        return lo
    step, prev, cur = 1, lo, lo + 1
    while cur < n and _cmp_at(base + stride * cur, key, nk) < 0:
        prev = cur
        step *= 2
        cur = prev + step
    a, b = prev + 1, min(cur, n)
    while a < b:
        mid = (a + b) >> 1
        if _cmp_at(base + stride * mid, key, nk) < 0:
            a = mid + 1
        else:
            b = mid
    return a


@row_kernel
def _in_corner(row, arity, corners, c):
    """True when the time stored at ``row`` from column ``arity`` is at most corner ``c``."""
    for j in range(corners.shape[1]):
        if load(row, arity + j) > corners[c, j]:
            return False
    return True


@row_kernel
def _pack_row(row, arity, lows, spans, shifts):
    """The row at address ``row`` packed (``wcoj.rows.Packing``), or -1 when a value lies
    outside its column's range."""
    q = 0
    for c in range(arity):
        v = load(row, c) - lows[c]
        if v < 0 or v > spans[c]:
            return -1
        q |= v << shifts[c]
    return q


@row_kernel
def _fields(row, cmap, lows, spans, shifts):
    """The packed fields of the output columns ``cmap[0]`` that come from columns
    ``cmap[1]`` of the row at address ``row`` (their OR with the other side's fields is
    the output row packed), or -1 when a value lies outside its column's range."""
    q = 0
    for c in range(cmap.shape[1]):
        oc = cmap[0, c]
        v = load(row, cmap[1, c]) - lows[oc]
        if v < 0 or v > spans[oc]:
            return -1
        q |= v << shifts[oc]
    return q
