"""Kernels of the trie store: fill a trie from sorted rows, apply rows in place, look
rows up, walk a trie back into rows.

A trie is read and written through its table (``memory``: one row of addresses and
counts per level). Level ``l``'s entries hold a value and, below the last level, the
range ``[LO, HI)`` of their children in level ``l + 1`` with its capacity ``CAP``; the
last level holds the leaf weights. Level 0 is one root segment, sorted, or *dense*: the
entry of value ``x`` is at position ``x - BASE`` and an absent value has no children
(its weight is 0 at a last level). Below level 0 every entry has children and every leaf
a non-zero weight.

``apply_rows`` changes a mutable trie (``CAP`` set) in place, a row at a time: a row's
weight is added to its leaf, a leaf whose weight reaches 0 is removed with every parent
left without children, a new row is inserted (shifting its segment, or moving the
segment to the end of the level's pool with twice the capacity when it is full). A row
that needs more room than a level has stops the call before anything of it is written:
the caller grows the arrays (``indexes.trie``) and calls again from that row. Freed and
moved segments are counted as ``DEAD`` so the owner can compact.

Inputs are int64 only; the caller allocates and keeps the arrays alive. Statuses: ``OK``,
``NEED_ROOM`` (with the level and how many entries past ``USED`` it needs; for a dense
level 0 the position it needs), ``OVERFLOW`` (a weight sum does not fit in int64).
"""

import numpy as np
from numba import njit

from .memory import (BASE, CAP, DEAD, DENSE, HI, LIVE, LO, MAXV, MINV, N, NONUNIT, ROOM, USED, V, kernel, load,
                     row_kernel, store)
from .search import bsearch
from .zsets import _add_overflows

__all__ = ["OK", "NEED_ROOM", "OVERFLOW", "MIN_CAP", "find", "fill", "apply_row", "apply_rows", "row_weights",
           "prefix_ranges", "walk"]

OK, NEED_ROOM, OVERFLOW = 0, 1, 2
MIN_CAP = 4  # capacity of a new segment; a full one moves with twice its capacity


@njit(cache=True, nogil=True, inline="always")
def find(T, l, lo, hi, x):
    """``(position, present)`` of ``x`` at level ``l`` of ``T`` in ``[lo, hi)``: the
    insertion point when absent (for a dense level 0 the position ``x - BASE``, which
    may lie outside ``[0, N)``)."""
    if l == 0 and T[0, DENSE] != 0:
        p = x - T[0, BASE]
        if p < 0 or p >= T[0, N]:
            return p, False
        if T.shape[0] == 1:
            return p, load(T[0, LO], p) != 0
        return p, load(T[0, LO], p) < load(T[0, HI], p)
    p = bsearch(T[l, V], lo, hi, x)
    return p, p < hi and load(T[l, V], p) == x


@row_kernel
def _move(T, l, a, b, to):
    """Move level ``l``'s entries ``[a, b)`` to start at ``to`` (overlaps allowed)."""
    last = l == T.shape[0] - 1
    if to > a:
        rng = range(b - a - 1, -1, -1)
    else:
        rng = range(b - a)
    for k in rng:
        store(T[l, V], to + k, load(T[l, V], a + k))
        store(T[l, LO], to + k, load(T[l, LO], a + k))
        if not last:
            store(T[l, HI], to + k, load(T[l, HI], a + k))
            store(T[l, CAP], to + k, load(T[l, CAP], a + k))


@row_kernel
def _remove(T, path):
    """Remove the leaf at ``path`` and every parent it leaves without children."""
    r = T.shape[0]
    l = r - 1
    while l > 0:
        p, q = path[l], path[l - 1]
        lo, hi = load(T[l - 1, LO], q), load(T[l - 1, HI], q)
        _move(T, l, p + 1, hi, p)
        T[l, LIVE] -= 1
        if hi - 1 > lo:
            store(T[l - 1, HI], q, hi - 1)
            return
        T[l, DEAD] += load(T[l - 1, CAP], q)  # the segment is empty: free it
        store(T[l - 1, LO], q, 0)
        store(T[l - 1, HI], q, 0)
        store(T[l - 1, CAP], q, 0)
        l -= 1
    p = path[0]
    T[0, LIVE] -= 1
    if T[0, DENSE] != 0:
        if r == 1:
            store(T[0, LO], p, 0)
        return
    _move(T, 0, p + 1, T[0, N], p)
    T[0, N] -= 1
    T[0, USED] -= 1


@row_kernel
def _room(T, path, depth, lo, hi, reserve):
    """``(NEED_ROOM, level, need)`` when inserting a row absent from level ``depth`` on
    would leave some level with less than ``reserve`` free entries, else ``(OK, 0, 0)``."""
    r = T.shape[0]
    if depth == 0:
        if T[0, DENSE] != 0:
            p = path[0]
            if p < 0 or p >= T[0, ROOM]:
                return NEED_ROOM, 0, p
        elif T[0, N] + 1 + reserve[0] > T[0, ROOM]:
            return NEED_ROOM, 0, 1 + reserve[0]
    else:
        cap = load(T[depth - 1, CAP], path[depth - 1])
        if hi - lo >= cap:
            need = max(MIN_CAP, 2 * cap) + reserve[depth]
            if T[depth, USED] + need > T[depth, ROOM]:
                return NEED_ROOM, depth, need
    for l in range(depth + 1, r):
        if T[l, USED] + MIN_CAP + reserve[l] > T[l, ROOM]:
            return NEED_ROOM, l, MIN_CAP + reserve[l]
    return OK, 0, 0


@row_kernel
def _insert(T, row, w, path, depth, lo, hi):
    """Insert ``row`` (absent from level ``depth`` on; room checked) with weight ``w``."""
    r = T.shape[0]
    x = row[depth]
    if depth == 0:
        e = path[0]
        if T[0, DENSE] != 0:
            if e >= T[0, N]:
                T[0, N] = e + 1
                T[0, USED] = e + 1
        else:
            _move(T, 0, e, T[0, N], e + 1)
            T[0, N] += 1
            T[0, USED] += 1
    else:
        q, e = path[depth - 1], path[depth]
        cap = load(T[depth - 1, CAP], q)
        if hi - lo < cap:
            _move(T, depth, e, hi, e + 1)
            store(T[depth - 1, HI], q, hi + 1)
        else:  # full: move the segment to the end of the pool, with twice the room
            new_cap = max(MIN_CAP, 2 * cap)
            s = T[depth, USED]
            _move(T, depth, lo, e, s)
            _move(T, depth, e, hi, s + (e - lo) + 1)
            e = s + (e - lo)
            store(T[depth - 1, LO], q, s)
            store(T[depth - 1, HI], q, s + (hi - lo) + 1)
            store(T[depth - 1, CAP], q, new_cap)
            T[depth, USED] += new_cap
            T[depth, DEAD] += cap
    store(T[depth, V], e, x)
    T[depth, LIVE] += 1
    T[depth, MINV] = min(T[depth, MINV], x)
    T[depth, MAXV] = max(T[depth, MAXV], x)
    for l in range(depth, r - 1):  # one new segment of one entry per level below
        s = T[l + 1, USED]
        store(T[l, LO], e, s)
        store(T[l, HI], e, s + 1)
        store(T[l, CAP], e, MIN_CAP)
        T[l + 1, USED] += MIN_CAP
        store(T[l + 1, V], s, row[l + 1])
        T[l + 1, LIVE] += 1
        T[l + 1, MINV] = min(T[l + 1, MINV], row[l + 1])
        T[l + 1, MAXV] = max(T[l + 1, MAXV], row[l + 1])
        e = s
    store(T[r - 1, LO], e, w)
    if w != 1:
        T[r - 1, NONUNIT] += 1


@row_kernel
def apply_row(T, row, w, reserve, path, dry):
    """Add the row ``row`` with weight ``w`` to the mutable trie ``T`` in place:
    ``(OK, 0, 0)``, or ``(NEED_ROOM, level, need)`` / ``(OVERFLOW, 0, 0)`` with nothing
    written. ``reserve[l]``: free entries level ``l`` must keep after an insertion (room a
    rollback may need); ``path``: scratch of ``arity`` entries; ``dry``: only check."""
    r = T.shape[0]
    lo, hi = 0, T[0, N]
    depth = r
    for l in range(r):
        p, found = find(T, l, lo, hi, row[l])
        path[l] = p
        if not found:
            depth = l
            break
        if l < r - 1:
            lo, hi = load(T[l, LO], p), load(T[l, HI], p)
    if depth == r:
        p = path[r - 1]
        old = load(T[r - 1, LO], p)
        if _add_overflows(old, w):
            return OVERFLOW, 0, 0
        if dry:
            return OK, 0, 0
        new = old + w
        if old != 1:
            T[r - 1, NONUNIT] -= 1
        if new != 1 and new != 0:
            T[r - 1, NONUNIT] += 1
        if new != 0:
            store(T[r - 1, LO], p, new)
        else:
            _remove(T, path)
        return OK, 0, 0
    if w == 0:
        return OK, 0, 0
    code, level, need = _room(T, path, depth, lo, hi, reserve)
    if code != OK or dry:
        return code, level, need
    _insert(T, row, w, path, depth, lo, hi)
    return OK, 0, 0


@kernel
def apply_rows(T, keys, weights, start, reserve):
    """``apply_row`` for rows ``start, start + 1, ...`` of ``keys``/``weights`` (in the
    trie's column order): ``(rows done, status, level, need)``; on ``NEED_ROOM`` or
    ``OVERFLOW`` the rows before it are applied and it is not."""
    path = np.empty(T.shape[0], dtype=np.int64)
    row = np.empty(keys.shape[1], dtype=np.int64)  # a writable copy, as the tick passes its rows:
    for i in range(start, keys.shape[0]):          # one compiled apply_row for both callers
        for c in range(keys.shape[1]):
            row[c] = keys[i, c]
        code, level, need = apply_row(T, row, weights[i], reserve, path, False)
        if code != OK:
            return i, code, level, need
    return keys.shape[0], OK, 0, 0


@kernel
def fill(T, keys, weights):
    """Write the sorted, unique rows ``keys`` (trie column order) with ``weights`` into
    the empty trie ``T``, whose arrays have room for them (a dense level 0 pre-filled
    with its values and empty ranges; ``MINV``/``MAXV`` at their extremes). Segments are
    exact (``CAP = HI - LO``); a compact trie (``CAP`` address 0, ``HI`` = ``LO`` + 8)
    gets CSR offsets. Sets ``USED``, ``LIVE``, ``MINV``, ``MAXV`` and ``NONUNIT``."""
    n, r = keys.shape
    cur = np.full(r, -1, dtype=np.int64)
    mutable = T[0, CAP] != 0
    for i in range(n):
        d = 0
        if i > 0:
            while d < r - 1 and keys[i, d] == keys[i - 1, d]:
                d += 1
        for l in range(d, r):
            x = keys[i, l]
            if l == 0 and T[0, DENSE] != 0:
                e = x - T[0, BASE]
            else:
                e = T[l, USED]
                T[l, USED] += 1
            store(T[l, V], e, x)
            T[l, LIVE] += 1
            T[l, MINV] = min(T[l, MINV], x)
            T[l, MAXV] = max(T[l, MAXV], x)
            if l < r - 1:
                s = T[l + 1, USED]
                store(T[l, LO], e, s)
                store(T[l, HI], e, s)
            if l > 0:
                q = cur[l - 1]
                store(T[l - 1, HI], q, e + 1)
                if mutable:
                    store(T[l - 1, CAP], q, e + 1 - load(T[l - 1, LO], q))
            cur[l] = e
        store(T[r - 1, LO], cur[r - 1], weights[i])
        if weights[i] != 1:
            T[r - 1, NONUNIT] += 1
    if T[0, DENSE] == 0:
        T[0, N] = T[0, USED]
    elif n and r > 1:
        T[0, USED] = T[0, N]


@kernel
def row_weights(T, first, rows, out):
    """``out[i]``: the weight of ``rows[i]`` summed over every part (0 where absent).

    ``T`` stacks the parts' tables; part ``q``'s level ``j`` is row ``first[q] + j``.
    Returns -1, or the first row whose summed weight overflows int64."""
    n, r = rows.shape
    for i in range(n):
        total = np.int64(0)
        for q in range(first.shape[0]):
            t = T[first[q]:first[q] + r]
            lo, hi = np.int64(0), t[0, N]
            p = np.int64(-1)
            for j in range(r):
                p, found = find(t, j, lo, hi, rows[i, j])
                if not found:
                    p = -1
                    break
                if j < r - 1:
                    lo, hi = load(t[j, LO], p), load(t[j, HI], p)
            if p >= 0:
                w = load(t[r - 1, LO], p)
                if _add_overflows(total, w):
                    return i
                total += w
        out[i] = total
    return -1


@kernel
def prefix_ranges(T, first, r, rows, lo, hi):
    """Per row ``i`` of ``rows`` (``int64[n, d]``) and part ``q``: ``[lo[i, q], hi[i, q])``,
    the range of level ``d`` under that prefix (``[p, p + 1)`` at ``d`` = arity, the leaf
    itself), or ``(0, 0)`` when the prefix is absent. At ``d`` = 0 the whole root segment
    (a dense level 0 includes absent values: the caller skips them). ``r``: the arity."""
    n, d = rows.shape
    for q in range(first.shape[0]):
        t = T[first[q]:first[q] + r]
        for i in range(n):
            a, b = np.int64(0), t[0, N]
            for j in range(d):
                p, found = find(t, j, a, b, rows[i, j])
                if not found:
                    a, b = np.int64(0), np.int64(0)
                    break
                if j < r - 1:
                    a, b = load(t[j, LO], p), load(t[j, HI], p)
                else:
                    a, b = p, p + 1
            lo[i, q], hi[i, q] = a, b


@kernel
def walk(T, keys, weights):
    """Write the trie's rows in order into ``keys``/``weights`` (room for every row);
    returns how many (leaves of weight 0 in a dense arity-1 level are skipped)."""
    r = T.shape[0]
    lo = np.zeros(r, dtype=np.int64)
    hi = np.zeros(r, dtype=np.int64)
    row = np.zeros(r, dtype=np.int64)
    hi[0] = T[0, N]
    l, m = 0, 0
    while l >= 0:
        if lo[l] >= hi[l]:
            l -= 1
            if l >= 0:
                lo[l] += 1
            continue
        p = lo[l]
        row[l] = load(T[l, V], p)
        if l == r - 1:
            w = load(T[l, LO], p)
            if w != 0:
                for c in range(r):  # not keys[m] = row: see memory.grown
                    keys[m, c] = row[c]
                weights[m] = w
                m += 1
            lo[l] += 1
        else:
            a, b = load(T[l, LO], p), load(T[l, HI], p)
            if a < b:
                l += 1
                lo[l], hi[l] = a, b
            else:
                lo[l] += 1
    return m
