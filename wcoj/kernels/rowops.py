"""Row kernels for the small arrays of a tick: consolidate, merge, trie levels (int64 only).

A tick of a few changes moves tens of rows through ``ZSet.from_arrays``, ``ZSet.plus`` and
``Trie.from_zset``. Their vectorised paths (pack the columns into one int64, argsort,
segment sums, unpack) cost ~20 numpy calls, 60-100 us, whatever the size; these kernels
do the same work in one call each, comparing rows column by column:

* ``sort_small_into``: consolidate up to a few hundred rows (insertion sort, stable);
* ``merge_rows_into``: the plus of two consolidated Z-sets, one linear merge of their
  rows (no packing, any width);
* ``trie_of_rows_into``: the levels of a trie of unique rows, sorting small inputs first
  (``Trie.from_rows``: a tick's delta in each column order);
* ``pack_edge_ops``, ``last_edge_ops_into``: a tick's edge inserts and deletes reduced
  to the last operation on each edge (sorting one packed int64 per operation);
* ``edge_delta_into``: a tick's change of a simple edge relation (the three kernels
  above and a presence lookup, in one call); ``edge_delta_sorted`` from the sort on;
* ``first_outside``: the first value out of a range (validating a tick's ids);
* ``row_weights_lockstep``: the weights of many rows summed over several tries, searched
  level by level for all rows at once (a tick's presence lookups);
* ``merge_tries_into``: the sum of two tries, written level by level as a new trie (the
  merge of a log-structured index's runs: no rows are expanded, no Z-set rebuilt);
* ``trie_of_rows_flat``, ``merge_tries_flat``, ``trie_of_rows_plus``: the same into one
  flat buffer with room ``n`` per level (a tick's tries), and a tick's change built and
  merged into an index's last run in one call; ``stage_runs_plus`` does it for every
  index of a relation.

Weights use the checked arithmetic of ``weights``; kernels return the first offending
row (or -1) and the wrappers raise, as everywhere else.
"""

import numpy as np
from numba import njit

from .term import _bsearch, _gallop, _load, row_weights
from .weights import _add_overflows

__all__ = ["sort_small_into", "merge_rows_into", "trie_of_rows_into", "trie_of_rows_flat",
           "merge_tries_into", "merge_tries_flat", "trie_of_rows_plus", "stage_runs_plus", "flat_room", "first_outside",
           "edge_delta_into", "edge_delta_sorted", "pack_edge_ops", "last_edge_ops_into", "row_weights_lockstep",
           "SMALL_ROWS"]

SMALL_ROWS = 256  # insertion sort below this many rows; the packed argsort above
LOCKSTEP = 64  # rows searched together by row_weights_lockstep
GALLOP = 8  # after this many rows in a row from the first trie, a merge searches for the run's end


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
def _cmp_cols(a, i, j, cols):
    """-1, 0 or 1: row ``a[i]`` against row ``a[j]``, columns in the order ``cols``."""
    for c in range(cols.shape[0]):
        x, y = a[i, cols[c]], a[j, cols[c]]
        if x != y:
            return -1 if x < y else 1
    return 0


@njit(cache=True, nogil=True)
def sort_small_into(keys, weights, out_keys, out_w):
    """Consolidate ``keys``/``weights`` (sort rows, add equal rows' weights in input
    order, drop zero sums) into ``out_keys``/``out_w`` (as many rows as the input).

    Returns ``(m, bad)``: rows written, and the input row whose weight made a sum leave
    int64 (-1 when none). O(n^2) comparisons: for small inputs only.
    """
    n = keys.shape[0]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):  # stable insertion sort of row indices
        j = i
        while j > 0 and _cmp(keys, order[j - 1], keys, i) > 0:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    m = 0
    i = 0
    while i < n:
        r = order[i]
        s = weights[r]
        k = i + 1
        while k < n and _cmp(keys, order[k], keys, r) == 0:
            if _add_overflows(s, weights[order[k]]):
                return m, order[k]
            s += weights[order[k]]
            k += 1
        if s != 0:
            m = _put(keys, r, s, out_keys, out_w, m)
        i = k
    return m, -1


@njit(cache=True, nogil=True, inline="always")
def _put(keys, i, w, out_keys, out_w, m):
    """Row ``keys[i]`` with weight ``w`` as output row ``m``; returns ``m + 1``."""
    for t in range(keys.shape[1]):
        out_keys[m, t] = keys[i, t]
    out_w[m] = w
    return m + 1


@njit(cache=True, nogil=True)
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
            m = _put(ka, i, wa[i], out_keys, out_w, m)
            i += 1
        elif c > 0:
            m = _put(kb, j, wb[j], out_keys, out_w, m)
            j += 1
        else:
            if _add_overflows(wa[i], wb[j]):
                return m, i
            if wa[i] + wb[j] != 0:
                m = _put(ka, i, wa[i] + wb[j], out_keys, out_w, m)
            i += 1
            j += 1
    for i in range(i, na):
        m = _put(ka, i, wa[i], out_keys, out_w, m)
    for j in range(j, nb):
        m = _put(kb, j, wb[j], out_keys, out_w, m)
    return m, -1


@njit(cache=True, nogil=True)
def _packed_order(keys, cols, order):
    """Write into ``order`` the permutation that sorts the unique rows of ``keys`` by the
    columns ``cols``: one sort of int64 values, each a row's columns (less their minimum)
    and its index packed together. Returns False, writing nothing, when they need more
    than 63 bits."""
    n, r = keys.shape
    lows = np.empty(r, dtype=np.int64)
    bits = np.empty(r, dtype=np.int64)
    total = _bits(n - 1)
    for c in range(r):
        lo = hi = keys[0, cols[c]]
        for i in range(1, n):
            x = keys[i, cols[c]]
            lo, hi = min(lo, x), max(hi, x)
        if lo < 0 < hi and hi > lo + (1 << 62):  # (the span itself would not fit)
            return False
        lows[c], bits[c] = lo, _bits(hi - lo)
        total += bits[c]
    if total > 63:
        return False
    ib = _bits(n - 1)
    v = np.empty(n, dtype=np.int64)
    for i in range(n):
        x = np.int64(0)
        for c in range(r):
            x = (x << bits[c]) | (keys[i, cols[c]] - lows[c])
        v[i] = (x << ib) | i
    v.sort()
    mask = (np.int64(1) << ib) - 1
    for i in range(n):
        order[i] = v[i] & mask
    return True


@njit(cache=True, nogil=True)
def _column_order(keys, cols, order):
    """``_packed_order`` for rows that do not pack: stable sorts of one column each,
    from the last of ``cols`` to the first (O(r n log n), any values)."""
    n = keys.shape[0]
    col = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[i] = i
    for c in range(cols.shape[0] - 1, -1, -1):
        for i in range(n):
            col[i] = keys[order[i], cols[c]]
        order[:] = order[np.argsort(col, kind="mergesort")]


@njit(cache=True, nogil=True)
def trie_of_rows_into(keys, cols, weights, order, sort, values, offsets, out_w, table):
    """The levels of the trie of the unique rows ``keys`` (``int64[n, r]``) with
    ``weights``, their columns taken in the order ``cols`` (a permutation: a tick's delta
    goes into every index without a reordered copy) and their rows in the order ``order``
    (a permutation of ``0..n-1`` that sorts them; with ``sort``, first sorted here: by
    insertion up to ``SMALL_ROWS`` rows, above by ``_packed_order``, or column by column
    (``_column_order``) when the columns do not pack).

    Writes level ``j``'s values into ``values[j, :counts[j]]`` (``values``: ``int64[r, n]``),
    for ``j < r - 1`` the CSR offsets of its nodes' children into
    ``offsets[j, :counts[j] + 1]`` (``int64[max(r - 1, 1), n + 1]``), the weights in row
    order into ``out_w``, and the trie's ``TrieArrays.table()`` into ``table``
    (``int64[r, 6]``; ``counts[j]`` is ``table[j, 1]``): no Python lookup of addresses.
    """
    n, r = keys.shape
    counts = np.zeros(r, dtype=np.int64)
    if sort and n > SMALL_ROWS:
        if not _packed_order(keys, cols, order):
            _column_order(keys, cols, order)
    elif sort:
        for i in range(n):  # insertion sort of row indices
            x, t = order[i], i
            while t > 0 and _cmp_cols(keys, order[t - 1], x, cols) > 0:
                order[t] = order[t - 1]
                t -= 1
            order[t] = x
    prev = 0
    for i in range(n):
        k = order[i]
        d = 0  # first column that differs from the previous row (all of them for row 0)
        if i > 0:
            while d < r and keys[k, cols[d]] == keys[prev, cols[d]]:
                d += 1
        for j in range(d, r):
            if j < r - 1:  # the new node's first child is the next level's new node
                offsets[j, counts[j]] = counts[j + 1]
            values[j, counts[j]] = keys[k, cols[j]]
            counts[j] += 1
        prev = k
    for i in range(n):
        out_w[i] = weights[order[i]]
    for j in range(r - 1):
        offsets[j, counts[j]] = counts[j + 1]
    for j in range(r):
        table[j, 0] = values[j].ctypes.data
        table[j, 1] = counts[j]
        table[j, 2] = offsets[j].ctypes.data if j < r - 1 else out_w.ctypes.data
        table[j, 3] = table[j, 4] = table[j, 5] = 0


@njit(cache=True, nogil=True, inline="always")
def flat_room(n, r):
    """Length of the flat buffer of an ``r``-level trie with room ``n`` per level (the
    layout of ``trie_of_rows_flat``; ``indexes.trie.flat_size`` is its Python twin)."""
    return r * n + max(r - 1, 1) * (n + 1) + n


@njit(cache=True, nogil=True)
def trie_of_rows_flat(keys, cols, weights, order, sort, buf, table):
    """``trie_of_rows_into`` into one flat buffer (``int64[r * n + max(r - 1, 1) * (n + 1)
    + n]``): level ``j``'s values at ``j * n``, its offsets at ``r * n + j * (n + 1)``, the
    weights at ``r * n + max(r - 1, 1) * (n + 1)``."""
    n, r = keys.shape
    n_off = max(r - 1, 1) * (n + 1)
    trie_of_rows_into(keys, cols, weights, order, sort, buf[:r * n].reshape(r, n),
                      buf[r * n:r * n + n_off].reshape(max(r - 1, 1), n + 1), buf[r * n + n_off:], table)


@njit(cache=True, nogil=True, inline="always")
def _climb(T, pos, row, leaf):
    """The leaf cursor of a trie (table ``T``) moved to ``leaf``, the first child of a new
    parent: move the cursors ``pos`` of the levels above it (and their values ``row``)."""
    child = leaf
    j = pos.shape[0] - 1
    while j >= 0 and _load(T[j, 2], pos[j] + 1) <= child:
        pos[j] += 1  # every node has a child, so one step per level is enough
        row[j] = _load(T[j, 0], pos[j])
        child = pos[j]
        j -= 1


@njit(cache=True, nogil=True, inline="always")
def _prefix_cmp(ra, rb):
    """-1, 0 or 1: the prefix ``ra`` against ``rb``."""
    for j in range(ra.shape[0]):
        if ra[j] != rb[j]:
            return -1 if ra[j] < rb[j] else 1
    return 0


@njit(cache=True, nogil=True, inline="always")
def _open(row, values, offsets, vstart, ostart, counts):
    """Write the nodes of prefix ``row`` that the last output row does not share."""
    L = row.shape[0]
    d = 0
    if counts[L] > 0:
        while d < L and values[vstart[d] + counts[d] - 1] == row[d]:
            d += 1
    for j in range(d, L):  # a new node's first child is the next level's new node
        offsets[ostart[j] + counts[j]] = counts[j + 1]
        values[vstart[j] + counts[j]] = row[j]
        counts[j] += 1


@njit(cache=True, nogil=True, inline="always")
def _above(addr, lo, hi, x):
    """First position p in [lo, hi) whose value is > x (hi if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if _load(addr, mid) <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _lower_bound_row(T, lo, prefix, leaf):
    """The first leaf of the trie with table ``T`` whose row is not below
    ``(*prefix, leaf)``, searching from node ``lo`` of level 0."""
    L = prefix.shape[0]
    hi = T[0, 1]
    for j in range(L + 1):
        x = prefix[j] if j < L else leaf
        s = _bsearch(T[j, 0], lo, hi, x)
        if j == L or s == hi or _load(T[j, 0], s) != x:
            for t in range(j, L):  # the first leaf under node s (or after the range)
                s = _load(T[t, 2], s)
            return s
        lo, hi = _load(T[j, 2], s), _load(T[j, 2], s + 1)
    return hi


@njit(cache=True, nogil=True)
def _copy_block(T, pos, row, x, y, last, values, offsets, vstart, ostart, out_w, counts):
    """Append the leaves ``[x, y)`` of the trie with table ``T`` (its cursor on ``x``,
    whose row is above the output's last one) with the nodes above them, copying each
    level's values and shifting its offsets. Leaves in ``last`` the node holding leaf
    ``y - 1`` at each level, and moves the cursor to leaf ``y`` (when there is one)."""
    L = pos.shape[0]
    _open(row, values, offsets, vstart, ostart, counts)
    child = y - 1
    for j in range(L - 1, -1, -1):
        child = _above(T[j, 2], pos[j] + 1, T[j, 1] + 1, child) - 1
        last[j] = child
    for j in range(L):  # nodes after the cursor's are new: output = input + shift
        shift = counts[j + 1] - pos[j + 1] - 1 if j + 1 < L else counts[L] - x
        v_in, o_in, v_out, o_out = T[j, 0], T[j, 2], vstart[j] + counts[j], ostart[j] + counts[j]
        lo, n = pos[j] + 1, last[j] - pos[j]
        for t in range(n):
            offsets[o_out + t] = _load(o_in, lo + t) + shift
            values[v_out + t] = _load(v_in, lo + t)
        counts[j] += n
    v_in, w_in, v_out, w_out = T[L, 0], T[L, 2], vstart[L] + counts[L], counts[L]
    for t in range(y - x):
        values[v_out + t] = _load(v_in, x + t)
        out_w[w_out + t] = _load(w_in, x + t)
    counts[L] += y - x
    if y < T[L, 1]:
        child = y
        for j in range(L - 1, -1, -1):  # leaf y's node is leaf y - 1's or the next one
            p = last[j] + 1 if _load(T[j, 2], last[j] + 1) <= child else last[j]
            pos[j], row[j], child = p, _load(T[j, 0], p), p


@njit(cache=True, nogil=True, inline="always")
def _fill_table(values, offsets, vstart, ostart, out_w, counts, table):
    """The ``TrieArrays.table()`` of the trie a merge wrote (no directory)."""
    L = table.shape[0] - 1
    for t in range(L + 1):
        table[t, 0] = values[vstart[t]:].ctypes.data
        table[t, 1] = counts[t]
        table[t, 2] = offsets[ostart[t]:].ctypes.data if t < L else out_w.ctypes.data
        table[t, 3] = table[t, 4] = table[t, 5] = 0


@njit(cache=True, nogil=True, inline="always")
def _copy_leaves(T, lo, hi, values, v1, out_w, c1):
    """Append the leaves ``[lo, hi)`` of the two-level trie with table ``T`` (values and
    weights); returns the new count of leaves."""
    for t in range(hi - lo):
        values[v1 + c1 + t] = _load(T[1, 0], lo + t)
        out_w[c1 + t] = _load(T[1, 2], lo + t)
    return c1 + hi - lo


@njit(cache=True, nogil=True, inline="always")
def _copy_nodes(T, i, e, values, offsets, v0, o0, v1, out_w, c0, c1):
    """Append the level-0 nodes ``[i, e)`` of the two-level trie with table ``T`` and
    all their leaves (offsets shifted); returns the new counts of both levels."""
    lo, hi = _load(T[0, 2], i), _load(T[0, 2], e)
    shift = c1 - lo
    for t in range(e - i):
        values[v0 + c0 + t] = _load(T[0, 0], i + t)
        offsets[o0 + c0 + t] = _load(T[0, 2], i + t) + shift
    return c0 + e - i, _copy_leaves(T, lo, hi, values, v1, out_w, c1)


@njit(cache=True, nogil=True)
def _merge_two_levels(TA, TB, values, offsets, vstart, ostart, out_w, counts, bad_row):
    """``merge_tries_into`` for two-level tries (binary relations: every graph index):
    one merge of the level-0 values, where a run of one trie's values before the other's
    next is found by galloping and copied with all its leaves at once, and the leaves of
    a value both hold are merged. The general merge steps leaf by leaf through prefix
    cursors, ~29 ns a row when the two tries interleave (two runs of 25k and 6k random
    edges); this is its inner loop without them. Fills ``counts``; returns as it does."""
    na, nb = TA[0, 1], TB[0, 1]
    v0, v1, o0 = vstart[0], vstart[1], ostart[0]
    c0 = c1 = i = j = 0
    while i < na and j < nb:
        x, y = _load(TA[0, 0], i), _load(TB[0, 0], j)
        if x < y:
            e = _gallop(TA[0, 0], i, na, y)
            c0, c1 = _copy_nodes(TA, i, e, values, offsets, v0, o0, v1, out_w, c0, c1)
            i = e
        elif y < x:
            e = _gallop(TB[0, 0], j, nb, x)
            c0, c1 = _copy_nodes(TB, j, e, values, offsets, v0, o0, v1, out_w, c0, c1)
            j = e
        else:
            start = c1
            p, pe = _load(TA[0, 2], i), _load(TA[0, 2], i + 1)
            q, qe = _load(TB[0, 2], j), _load(TB[0, 2], j + 1)
            while p < pe and q < qe:
                u, v = _load(TA[1, 0], p), _load(TB[1, 0], q)
                if u < v:
                    values[v1 + c1], out_w[c1] = u, _load(TA[1, 2], p)
                    c1, p = c1 + 1, p + 1
                elif v < u:
                    values[v1 + c1], out_w[c1] = v, _load(TB[1, 2], q)
                    c1, q = c1 + 1, q + 1
                else:
                    wa, wb = _load(TA[1, 2], p), _load(TB[1, 2], q)
                    if _add_overflows(wa, wb):
                        bad_row[0], bad_row[1] = x, u
                        return 0
                    if wa + wb != 0:
                        values[v1 + c1], out_w[c1] = u, wa + wb
                        c1 += 1
                    p, q = p + 1, q + 1
            c1 = _copy_leaves(TA, p, pe, values, v1, out_w, c1)
            c1 = _copy_leaves(TB, q, qe, values, v1, out_w, c1)
            if c1 > start:  # a value whose leaves all cancelled is not written
                values[v0 + c0], offsets[o0 + c0] = x, start
                c0 += 1
            i, j = i + 1, j + 1
    if i < na:
        c0, c1 = _copy_nodes(TA, i, na, values, offsets, v0, o0, v1, out_w, c0, c1)
    if j < nb:
        c0, c1 = _copy_nodes(TB, j, nb, values, offsets, v0, o0, v1, out_w, c0, c1)
    offsets[o0 + c0] = c1
    counts[0], counts[1] = c0, c1
    return -1


@njit(cache=True, nogil=True)
def merge_tries_into(TA, TB, values, offsets, vstart, ostart, out_w, counts, bad_row, table):
    """The sum of two tries of the same arity ``r`` and column order, as a new trie:
    one linear merge of their rows, read through the levels and written level by level,
    adding the weights of equal rows and dropping zero sums (a node is written only when
    a row under it survives). O((|a| + |b|) * r); the loop per row touches the leaves
    only, the levels above are compared and written when a parent changes. After
    ``GALLOP`` rows in a row from ``a``, the end of the run is searched for and the run
    copied level by level, so a small ``b`` merges in O(|b| * r * log|a|) searches plus
    a copy of ``a``. Two-level tries (``r = 2``) take ``_merge_two_levels``, which merges
    their level-0 values instead and is about three times faster when they interleave.

    ``TA``, ``TB`` are the tries' ``TrieArrays.table()`` (``int64[r, 6]``; the arrays
    must stay alive). The caller allocates ``values`` with room for level ``j`` at
    ``vstart[j]`` (as many slots as the two levels ``j`` have together), ``offsets`` with
    that room plus one at ``ostart[j]`` for ``j < r - 1``, and ``out_w`` and ``counts``
    (``int64[r]``). On return level ``j`` holds ``counts[j]`` values and
    ``counts[j] + 1`` offsets, and ``table`` (``int64[r, 6]``) the new trie's
    ``TrieArrays.table()`` (no directory). Returns -1, or 0 when the weights of a row
    present in both do not add up in int64; that row is then in ``bad_row`` (``int64[r]``).
    """
    L = TA.shape[0] - 1  # the leaf level; levels 0..L-1 form a row's prefix
    if L == 1:
        if _merge_two_levels(TA, TB, values, offsets, vstart, ostart, out_w, counts, bad_row) >= 0:
            return 0
        _fill_table(values, offsets, vstart, ostart, out_w, counts, table)
        return -1
    na, nb = TA[L, 1], TB[L, 1]
    pa, ra = np.zeros(L, dtype=np.int64), np.zeros(L, dtype=np.int64)  # prefix cursors, values
    pb, rb = np.zeros(L, dtype=np.int64), np.zeros(L, dtype=np.int64)
    for j in range(L):
        ra[j] = _load(TA[j, 0], 0) if na else 0
        rb[j] = _load(TB[j, 0], 0) if nb else 0
    for j in range(L + 1):
        counts[j] = 0
    va, wa, vb, wb = TA[L, 0], TA[L, 2], TB[L, 0], TB[L, 2]
    vout, wpos = vstart[L], 0
    # end_*: where the current parent's leaves end; last_*: the parent whose prefix the
    # output's last row has (-1: another one). Parents are numbered, so a stale one never matches.
    end_a = _load(TA[L - 1, 2], 1) if L and na else na
    end_b = _load(TB[L - 1, 2], 1) if L and nb else nb
    last_a = last_b = -1 if L else 0
    par_a = par_b = 0  # the current parents (level L - 1)
    pc = _prefix_cmp(ra, rb)
    last = np.zeros(L, dtype=np.int64)
    i = j = run = 0
    while i < na and j < nb:
        if pc != 0:
            c = pc
        else:
            x, y = _load(va, i), _load(vb, j)
            c = -1 if x < y else (1 if x > y else 0)
        run = run + 1 if c < 0 else 0
        if run > GALLOP:  # a long run of a's rows: copy it up to b's row at once
            y = _lower_bound_row(TA, pa[0] if L else i, rb, _load(vb, j))
            counts[L] = wpos
            _copy_block(TA, pa, ra, i, y, last, values, offsets, vstart, ostart, out_w, counts)
            wpos, i, run = counts[L], y, 0
            if L:
                last_a, last_b = last[L - 1], -1
                if i < na:
                    par_a = pa[L - 1]
                    end_a = _load(TA[L - 1, 2], par_a + 1)
                    pc = _prefix_cmp(ra, rb)
            continue
        if c <= 0:
            w = _load(wa, i)
            if c == 0:
                if _add_overflows(w, _load(wb, j)):
                    for t in range(L):
                        bad_row[t] = ra[t]
                    bad_row[L] = _load(va, i)
                    return 0
                w += _load(wb, j)
            if w != 0:
                if par_a != last_a:
                    counts[L] = wpos
                    _open(ra, values, offsets, vstart, ostart, counts)
                    last_a, last_b = par_a, (par_b if pc == 0 else -1)
                values[vout + wpos] = _load(va, i)
                out_w[wpos] = w
                wpos += 1
            i += 1
            if i == end_a and i < na:
                _climb(TA, pa, ra, i)
                par_a = pa[L - 1]
                end_a = _load(TA[L - 1, 2], par_a + 1)
                pc = _prefix_cmp(ra, rb)
        if c >= 0:
            if c > 0:
                if par_b != last_b:
                    counts[L] = wpos
                    _open(rb, values, offsets, vstart, ostart, counts)
                    last_a, last_b = (par_a if pc == 0 else -1), par_b
                values[vout + wpos] = _load(vb, j)
                out_w[wpos] = _load(wb, j)
                wpos += 1
            j += 1
            if j == end_b and j < nb:
                _climb(TB, pb, rb, j)
                par_b = pb[L - 1]
                end_b = _load(TB[L - 1, 2], par_b + 1)
                pc = _prefix_cmp(ra, rb)
    counts[L] = wpos
    if i < na:  # b is exhausted: the rest of a is one block (and the other way round)
        _copy_block(TA, pa, ra, i, na, last, values, offsets, vstart, ostart, out_w, counts)
    if j < nb:
        _copy_block(TB, pb, rb, j, nb, last, values, offsets, vstart, ostart, out_w, counts)
    for t in range(L):
        offsets[ostart[t] + counts[t]] = counts[t + 1]
    _fill_table(values, offsets, vstart, ostart, out_w, counts, table)
    return -1


@njit(cache=True, nogil=True)
def first_outside(a, lo, hi):
    """The position of the first value of ``a`` (``int64[n]``) outside ``[lo, hi]``, or -1."""
    for i in range(a.shape[0]):
        if a[i] < lo or a[i] > hi:
            return i
    return -1


@njit(cache=True, nogil=True)
def merge_tries_flat(TA, TB, n, buf, bad_row, table):
    """``merge_tries_into`` into the flat layout of ``trie_of_rows_flat`` (``n`` at least
    the rows of both tries). Room for every level is ``n``, which over-allocates the
    levels above the leaves: for the small merges of a tick."""
    r = TA.shape[0]
    n_off = max(r - 1, 1) * (n + 1)
    vstart = np.arange(r + 1) * n
    ostart = np.arange(r) * (n + 1)
    counts = np.zeros(r, dtype=np.int64)
    return merge_tries_into(TA, TB, buf[:r * n], buf[r * n:r * n + n_off], vstart, ostart,
                            buf[r * n + n_off:], counts, bad_row, table)


@njit(cache=True, nogil=True)
def trie_of_rows_plus(keys, cols, weights, order, sort, buf, table, TA, n2, buf2, bad_row, table2):
    """``trie_of_rows_flat`` into ``buf``, then that trie merged into the trie with table
    ``TA`` by ``merge_tries_flat`` into ``buf2`` (``n2`` rows of room): a tick's change
    staged and merged into an index's last run in one call. Returns what
    ``merge_tries_flat`` returns."""
    trie_of_rows_flat(keys, cols, weights, order, sort, buf, table)
    return merge_tries_flat(TA, table, n2, buf2, bad_row, table2)


@njit(cache=True, nogil=True)
def stage_runs_plus(keys, weights, cols, sort, TA, n2, buf, tables, bad_row):
    """``trie_of_rows_plus`` for several indexes of one relation in one call: a tick's
    change staged in every column order and merged into each index's last run.

    ``keys``/``weights``: the change, unique rows; index ``i`` takes the columns in the
    order ``cols[i]`` (``int64[n_idx, r]``), sorting the rows first when ``sort[i]``
    (else they are already in that order); its last run has the table
    ``TA[i * r:(i + 1) * r]`` and the merge gets room ``n2[i]``. ``buf`` holds, index
    after index, the change's trie (room ``n``) then the merged trie (room ``n2[i]``) in
    ``trie_of_rows_flat``'s layout; their tables go to ``tables[i, 0]`` and
    ``tables[i, 1]`` (``int64[n_idx, 2, r, 6]``). Returns -1, or the first index whose
    merge overflows a weight (its row in ``bad_row``).
    """
    n, r = keys.shape
    s1 = flat_room(n, r)
    at = 0
    for i in range(cols.shape[0]):
        m = n2[i]
        s2 = flat_room(m, r)
        order = np.arange(n)
        if trie_of_rows_plus(keys, cols[i], weights, order, sort[i], buf[at:at + s1], tables[i, 0],
                             TA[i * r:(i + 1) * r], m, buf[at + s1:at + s1 + s2], bad_row, tables[i, 1]) >= 0:
            return i
        at += s1 + s2
    return -1


@njit(cache=True, nogil=True, inline="always")
def _bits(x):
    """Bits needed to write the non-negative ``x`` (0 for 0)."""
    n = 0
    while x > 0:
        x >>= 1
        n += 1
    return n


@njit(cache=True, nogil=True)
def pack_edge_ops(ins, dels, normalise, out):
    """Pack a tick's edge operations, one int64 each, so that sorting them sorts by
    ``(u, v, order)``: ``u << (bv + bo) | v << bo | order``, where ``order`` is the
    operation's position (inserts first, then deletes, which apply after them).

    ``ins``, ``dels``: ``int64[n, 2]`` node ids in ``[0, 2**62)``. Self-loops are dropped;
    ``normalise`` writes each pair as ``(min, max)``. ``out``: ``int64[len(ins) + len(dels)]``.
    Returns ``(m, bv, bo)``: operations written and the two shifts, or ``(-1, 0, 0)`` when
    the ids are too large to pack into 63 bits (the caller sorts another way).
    """
    n_ins, n = ins.shape[0], ins.shape[0] + dels.shape[0]
    max_u = max_v = 0
    for i in range(n):
        a = ins[i, 0] if i < n_ins else dels[i - n_ins, 0]
        b = ins[i, 1] if i < n_ins else dels[i - n_ins, 1]
        if normalise and a > b:
            a, b = b, a
        max_u, max_v = max(max_u, a), max(max_v, b)
    bv, bo = _bits(max_v), _bits(n - 1)
    if _bits(max_u) + bv + bo > 63:
        return -1, 0, 0
    m = 0
    for i in range(n):
        a = ins[i, 0] if i < n_ins else dels[i - n_ins, 0]
        b = ins[i, 1] if i < n_ins else dels[i - n_ins, 1]
        if a == b:
            continue
        if normalise and a > b:
            a, b = b, a
        out[m] = (a << (bv + bo)) | (b << bo) | i
        m += 1
    return m, bv, bo


@njit(cache=True, nogil=True)
def last_edge_ops_into(packed, n_ins, bv, bo, out_keys, out_insert):
    """The last operation on each edge, from ``pack_edge_ops``' output once sorted.

    Writes the distinct edges in order into ``out_keys`` (``int64[len(packed), 2]``) and
    into ``out_insert`` (booleans) whether the edge's last operation is an insert (its
    order is below ``n_ins``). Returns the number of edges.
    """
    m = 0
    mask_o, mask_v = (1 << bo) - 1, (1 << bv) - 1
    for i in range(packed.shape[0]):
        e = packed[i] >> bo
        if i + 1 < packed.shape[0] and packed[i + 1] >> bo == e:
            continue  # a later operation on the same edge wins
        out_keys[m, 0] = e >> bv
        out_keys[m, 1] = e & mask_v
        out_insert[m] = (packed[i] & mask_o) < n_ins
        m += 1
    return m


@njit(cache=True, nogil=True)
def row_weights_lockstep(T, first, rows, out):
    """``out[i]``: the weight of ``rows[i]`` summed over every part (0 where absent); the
    contract of ``kernels.term.row_weights``. ``T`` stacks the parts'
    ``TrieArrays.table()``; part ``q``'s level ``j`` is row ``first[q] + j``.

    Rows go in groups of ``LOCKSTEP`` through each level of each part together, one
    binary-search step per row per round, so the cache misses of different rows overlap
    instead of waiting for each other (a tick's lookups in a large index miss).
    Returns the first row whose weights do not add up in int64, or -1.
    """
    n, r = rows.shape
    lo, hi, end = (np.empty(LOCKSTEP, dtype=np.int64), np.empty(LOCKSTEP, dtype=np.int64),
                   np.empty(LOCKSTEP, dtype=np.int64))
    for i in range(n):
        out[i] = 0
    for c in range(0, n, LOCKSTEP):
        m = min(LOCKSTEP, n - c)
        for q in range(first.shape[0]):
            t = first[q]
            for i in range(m):  # the range [lo, end) to search at this level; end < 0: absent
                lo[i], end[i] = 0, T[t, 1]
            for j in range(r):
                v = T[t + j, 0]
                if j == 0 and T[t, 4] > 0:  # level 0 through the directory
                    for i in range(m):
                        k = rows[c + i, 0] - T[t, 5]
                        p = _load(T[t, 3], k) if 0 <= k < T[t, 4] else -1
                        lo[i], end[i] = (p, p + 1) if p >= 0 else (0, -1)
                else:
                    for i in range(m):
                        hi[i] = max(end[i], 0)
                    busy = True
                    while busy:  # one step of every row's search for its first value >= x
                        busy = False
                        for i in range(m):
                            if lo[i] < hi[i]:
                                mid = (lo[i] + hi[i]) >> 1
                                if _load(v, mid) < rows[c + i, j]:
                                    lo[i] = mid + 1
                                else:
                                    hi[i] = mid
                                busy = True
                    for i in range(m):
                        if end[i] >= 0 and (lo[i] >= end[i] or _load(v, lo[i]) != rows[c + i, j]):
                            lo[i], end[i] = 0, -1
                nxt = T[t + j, 2]
                for i in range(m):
                    if end[i] < 0:
                        continue
                    if j < r - 1:  # the children of the node found
                        lo[i], end[i] = _load(nxt, lo[i]), _load(nxt, lo[i] + 1)
                    else:
                        w = _load(nxt, lo[i])
                        if _add_overflows(out[c + i], w):
                            return c + i
                        out[c + i] += w
    return -1


@njit(cache=True, nogil=True)
def edge_delta_into(ins, dels, normalise, T, first, out_keys, out_w):
    """The change a tick makes to a set of edges: its inserts and deletes (``int64[n, 2]``,
    deletes applied after inserts; self-loops dropped; pairs written ``(min, max)`` when
    ``normalise``) against the edges now present, the tries whose stacked tables are
    ``T`` (part ``q``'s level 0 at row ``first[q]``, as for ``row_weights``).

    Writes the edges whose presence changes, sorted, into ``out_keys`` with weight +1
    (inserted) or -1 (deleted) in ``out_w`` (room for ``len(ins) + len(deletes)`` rows)
    and returns their number; or -1 when the ids are too large to pack into one int64,
    -2 when some present edge's weights do not add up in int64 (the caller then takes
    its general path, which sorts another way or raises).
    """
    n = ins.shape[0] + dels.shape[0]
    packed = np.empty(n, dtype=np.int64)
    m, bv, bo = pack_edge_ops(ins, dels, normalise, packed)
    if m < 0:
        return -1
    return edge_delta_sorted(np.sort(packed[:m]), ins.shape[0], bv, bo, T, first, out_keys, out_w)


@njit(cache=True, nogil=True)
def edge_delta_sorted(packed, n_ins, bv, bo, T, first, out_keys, out_w):
    """``edge_delta_into`` from ``pack_edge_ops``' output once sorted (``packed``;
    ``n_ins`` inserts; its bit widths ``bv``, ``bo``): for a large tick, whose caller
    sorts with numpy (a SIMD sort, ~5x faster than Numba's ``np.sort`` at 100,000
    rows). Returns what ``edge_delta_into`` does, never -1."""
    m = packed.shape[0]
    keys = np.empty((m, 2), dtype=np.int64)
    insert = np.empty(m, dtype=np.bool_)
    m = last_edge_ops_into(packed, n_ins, bv, bo, keys, insert)
    have = np.zeros(m, dtype=np.int64)
    if first.shape[0] and m:
        lookup = row_weights_lockstep(T, first, keys[:m], have) if m <= 4096 else row_weights(T, first, keys[:m], have)
        if lookup >= 0:
            return -2
    k = 0
    for i in range(m):
        if insert[i] != (have[i] > 0):
            out_keys[k, 0] = keys[i, 0]
            out_keys[k, 1] = keys[i, 1]
            out_w[k] = 1 if insert[i] else -1
            k += 1
    return k
