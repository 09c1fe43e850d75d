"""Row kernels for the small arrays of a tick: consolidate, merge, trie levels (int64 only).

A tick of a few changes moves tens of rows through ``ZSet.from_arrays``, ``ZSet.plus`` and
``Trie.from_zset``. Their vectorised paths (pack the columns into one int64, argsort,
segment sums, unpack) cost ~20 numpy calls, 60-100 us, whatever the size; these kernels
do the same work in one call each, comparing rows column by column:

* ``sort_small_into``: consolidate up to a few hundred rows (insertion sort, stable);
* ``merge_rows_into``: the plus of two consolidated Z-sets, one linear merge of their
  rows (no packing, any width);
* ``trie_levels_into``: the level boundaries of a sorted Z-set, for ``Trie.from_zset``.

Weights use the checked arithmetic of ``weights``; kernels return the first offending
row (or -1) and the wrappers raise, as everywhere else.
"""

import numpy as np
from numba import njit

from .weights import _add_overflows

__all__ = ["sort_small_into", "merge_rows_into", "trie_levels_into", "SMALL_ROWS"]

SMALL_ROWS = 256  # insertion sort below this many rows; the packed argsort above


@njit(cache=True, nogil=True, inline="always")
def _cmp(a, i, b, j):
    """-1, 0 or 1: row ``a[i]`` against row ``b[j]``, column by column."""
    for c in range(a.shape[1]):
        if a[i, c] < b[j, c]:
            return -1
        if a[i, c] > b[j, c]:
            return 1
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
def trie_levels_into(keys, starts, offsets, counts):
    """The nodes of each trie level of sorted, unique ``keys`` (``int64[n, r]``).

    Writes into ``starts[j, :counts[j]]`` the rows where level ``j``'s prefix (columns
    ``0..j``) changes, so node ``p`` of level ``j`` holds ``keys[starts[j, p], j]``, and
    into ``offsets[j, :counts[j] + 1]`` (``j < r - 1``) the CSR offsets of its children at
    level ``j + 1``. ``starts`` is ``int64[r, n]``, ``offsets`` ``int64[max(r - 1, 1), n + 1]``;
    the last level has one node per row.
    """
    n, r = keys.shape
    for j in range(r):
        counts[j] = 0
    for i in range(n):
        d = 0  # first column that differs from the previous row (all of them for row 0)
        if i > 0:
            while d < r and keys[i, d] == keys[i - 1, d]:
                d += 1
        for j in range(d, r):
            if j < r - 1:  # the new node's first child is the next level's new node
                offsets[j, counts[j]] = counts[j + 1]
            starts[j, counts[j]] = i
            counts[j] += 1
    for j in range(r - 1):
        offsets[j, counts[j]] = counts[j + 1]
