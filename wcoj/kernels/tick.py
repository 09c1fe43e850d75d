"""What a change-by-change tick does besides its delta terms: turn edge operations into
changes, apply a change to every index of its relation (or give it back), and
consolidate the rows.

The telescoping delta rule holds for any sequence of single-row changes: for change
``j`` of relation ``R``, ``prev`` is the state with changes ``0 .. j - 1`` applied,
``delta`` the one row and ``curr = prev + delta``. ``wcoj.tickgen`` compiles a plan's
delta terms into kernels that run a tick's changes one after the other, each change's
terms reading the tries as they are and the change itself, then applying the change in
place (``apply_change``); they use the helpers here. A tick is all or nothing:

* ``apply_change`` keeps ``MIN_CAP`` free entries per level for every change already
  applied (undoing them never needs more); a change that finds no room is given back on
  the indexes that took it (``NEED_ROOM``): the caller grows the trie and goes on from it;
* a weight that overflows undoes every change of the tick in reverse (``undo_changes``).

``edge_changes`` turns a graph tick's edge inserts and deletes into changes (set
semantics: deletes after inserts; self-loops dropped; undirected pairs as ``(min, max)``;
for a directed graph also the changes of its undirected relations, when kept).

The layout of the relations' indexes comes packed in one int64 array (``LAYOUT``
names its sections, ``wcoj.program.pack`` builds it). Inputs are int64 only.
"""

import time

import numpy as np
from numba import njit

from .memory import BASE, DENSE, HI, LO, N, V, cycles, kernel, load, prefetch, row_kernel
from .search import bsearch, gallop
from .store import NEED_ROOM, OK, OVERFLOW, apply_row, find
from .zsets import I64_MAX, RADIX_DIGIT, _add_overflows, _mul_overflows, _row_less, sorted_order

__all__ = ["OK", "NEED_ROOM", "OVERFLOW", "FULL", "BAD_ID", "LAYOUT", "EDGES", "EDGE_ROWS", "edge_changes",
           "edge_changes_into", "cycle_rate", "at0",
           "find_in",
           "member", "times", "plus", "fetch", "fetch0", "kids", "leaf", "apply_change", "undo_changes",
           "prefetch_edge",
           "prefetch_change", "consolidate"]

FULL = 3  # a kernel found its output buffers full: they grow and the change runs again
BAD_ID = 4  # an edge's node id lies outside [0, 2**62)
MAX_ID = (1 << 62) - 1
LAYOUT = ("rel_idx", "idx_state", "idx_cols", "scalars")
_REL_IDX, _IDX_STATE, _IDX_COLS, _SCALARS = range(len(LAYOUT))
EDGES = ("max_arity", "directed", "rel_primary", "rel_oriented", "rel_sym", "rel_sym2")
_MAX_ARITY, _DIRECTED, _REL_P, _REL_O, _REL_S, _REL_S2 = range(len(EDGES))


@njit(cache=True, nogil=True, inline="always")
def _sec(code, i):
    """Section ``i`` of a packed array (a view)."""
    return code[code[1 + 2 * i]:code[1 + 2 * i] + code[2 + 2 * i]]


@row_kernel
def at0(B, R, last, x):
    """The position of ``x`` at level 0 of the trie whose table starts at block row ``R``
    (``last``: level 0 is its last), or -1."""
    if B[R, DENSE] != 0:
        p = x - B[R, BASE]
        if p < 0 or p >= B[R, N]:
            return -1
        if last:
            return p if load(B[R, LO], p) != 0 else -1
        return p if load(B[R, LO], p) < load(B[R, HI], p) else -1
    n = B[R, N]
    p = bsearch(B[R, V], 0, n, x)
    return p if p < n and load(B[R, V], p) == x else -1


# The generated kernels call these row kernels, which LLVM inlines; Numba's own inlining
# ("inline='always'", which retypes the callee at every call site) made a plan take
# minutes to compile.
@row_kernel
def find_in(addr, lo, hi, x):
    """The position of ``x`` among the sorted values at ``addr`` in ``[lo, hi)``, or -1."""
    p = bsearch(addr, lo, hi, x)
    return p if p < hi and load(addr, p) == x else -1


@row_kernel
def member(addr, cur, hi, x):
    """``(position, cursor)``: where ``x`` is among the sorted values at ``addr`` from the
    cursor ``cur`` to ``hi`` (-1: absent), and the cursor moved to the first value at
    least ``x`` (galloping: the candidates a level tries come in order)."""
    if cur >= hi:
        return -1, cur
    cur = gallop(addr, cur, hi, x)
    return (cur if cur < hi and load(addr, cur) == x else -1), cur


@row_kernel
def times(a, b):
    """``(ok, a * b)``; ``ok`` False when the product does not fit in int64."""
    if _mul_overflows(a, b):
        return False, a
    return True, a * b


@row_kernel
def plus(a, b):
    """``(ok, a + b)``; ``ok`` False when the sum does not fit in int64."""
    if _add_overflows(a, b):
        return False, a
    return True, a + b


@row_kernel
def fetch(addr, cur, hi, ex, e):
    """The next candidate of a proposing atom: the smaller of its next state value (at
    ``cur`` below ``hi``) and the change's value ``e`` (while ``ex``). Returns ``(ok, x,
    state position or -1, cursor, took the change's value)``; ``ok`` False when both are
    used up."""
    hs = cur < hi
    if not hs and not ex:
        return False, 0, -1, cur, False
    if hs:
        sv = load(addr, cur)
        if not ex or sv <= e:
            return True, sv, cur, cur + 1, ex and sv == e
    return True, e, -1, cur, True


@row_kernel
def fetch0(B, R, last, cur, hi, ex, e):
    """``fetch`` for a whole level 0 proposing (a dense one skips its absent values)."""
    if B[R, DENSE] != 0:
        while cur < hi and not (load(B[R, LO], cur) != 0 if last else load(B[R, LO], cur) < load(B[R, HI], cur)):
            cur += 1
    return fetch(B[R, V], cur, hi, ex, e)


@row_kernel
def kids(B, row, p):
    """The children's range of position ``p`` of the level at block row ``row`` (empty
    when ``p`` is -1)."""
    if p < 0:
        return 0, 0
    return load(B[row, LO], p), load(B[row, HI], p)


@row_kernel
def leaf(B, row, p, unit, hit, w):
    """``(ok, weight)`` of an atom's row at its last column: its leaf at position ``p``
    (-1: none; ``unit``: read as 1), plus ``w`` when the change is that row (``hit``)."""
    f = 0
    if p >= 0:
        f = 1 if unit else load(B[row, LO], p)
    if hit:
        return plus(f, w)
    return True, f


@row_kernel
def apply_change(B, layout, ch, i, w, reserve, path, prow, first, last):
    """``store.apply_row`` of change ``i`` of ``ch`` (its row in natural column order,
    with weight ``w``) on the indexes ``first .. last - 1`` of its relation: ``(status,
    index, level, need)``; on a failure the indexes before ``index`` took the change and
    it did not."""
    rel_idx, idx_state, idx_cols = _sec(layout, _REL_IDX), _sec(layout, _IDX_STATE), _sec(layout, _IDX_COLS)
    mx = _sec(layout, _SCALARS)[_MAX_ARITY]
    rel = ch[i, 0]
    for x in range(rel_idx[rel] + first, rel_idx[rel] + last):
        off = idx_state[x]
        r = 0
        while r < mx and idx_cols[x * mx + r] >= 0:
            prow[r] = ch[i, 2 + idx_cols[x * mx + r]]
            r += 1
        code, level, need = apply_row(B[off:off + r], prow[:r], w, reserve, path, False)
        if code != OK:
            return code, x - rel_idx[rel], level, need
    return OK, last, 0, 0


@row_kernel
def undo_changes(B, layout, ch, n, path, prow, none):
    """Give back the changes ``n - 1 .. 0`` of ``ch`` (the room for it was kept)."""
    rel_idx = _sec(layout, _REL_IDX)
    for j in range(n - 1, -1, -1):
        rel = ch[j, 0]
        apply_change(B, layout, ch, j, -ch[j, 1], none, path, prow, 0, rel_idx[rel + 1] - rel_idx[rel])


@row_kernel
def prefetch_change(B, layout, ch, i, lists):
    """Ask the cache for what a later change will read first: in every index of its
    relation with a dense level 0, the children range of each of the row's values, and
    (``lists``, a change later, when that range is in cache) the children themselves. A
    tick's changes hit random vertices, and on a large graph each of those reads missed
    the cache; asked for ahead, the misses of consecutive changes overlap."""
    rel_idx, idx_state, idx_cols = _sec(layout, _REL_IDX), _sec(layout, _IDX_STATE), _sec(layout, _IDX_COLS)
    mx = _sec(layout, _SCALARS)[_MAX_ARITY]
    rel = ch[i, 0]
    for x in range(rel_idx[rel], rel_idx[rel + 1]):
        off = idx_state[x]
        r = 0
        while r < mx and idx_cols[x * mx + r] >= 0:
            r += 1
        if B[off, DENSE] == 0 or r < 2:
            continue
        for c in range(r):
            p = ch[i, 2 + c] - B[off, BASE]
            if 0 <= p < B[off, N]:
                if lists:
                    prefetch(B[off + 1, V] + 8 * load(B[off, LO], p))
                else:
                    prefetch(B[off, LO] + 8 * p)
                    prefetch(B[off, HI] + 8 * p)


@row_kernel
def prefetch_edge(B, layout, row, edges, j, lists):
    """``prefetch_change`` for the edge ``edges[j]`` of a later tick (as the primary
    relation's change; ``row``: a scratch ``int64[1, 2 + max_arity]``): a stream of
    single-edge ticks overlaps the cache misses of consecutive ticks this way."""
    if j >= edges.shape[0]:
        return
    sc = _sec(layout, _SCALARS)
    a, b = edges[j, 0], edges[j, 1]
    if sc[_DIRECTED] == 0 and a > b:
        a, b = b, a
    row[0, 0], row[0, 1], row[0, 2], row[0, 3] = sc[_REL_P], 1, a, b
    prefetch_change(B, layout, row, 0, lists)


RADIX_ROWS = 64  # consolidate radix sorts more rows than this (see there)


@kernel
def radix_rows(out, m, skip):
    """The order of ``out[:m]`` by its columns in turn but ``skip`` (a weight, which does
    not order; -1 for none): a stable least-significant-digit radix sort, one column at a time from
    the last, each column's values less its least one taken ``RADIX_DIGIT`` bits per pass
    (a pass whose digit is the same for every row is skipped); a merge sort of 10^4 rows
    compared them 14 times over. Returns the order, or an empty array when a column's
    span does not fit in int64. (One array: with a ``(flag, order)`` tuple,
    ``consolidate`` called from Python after a tick had compiled it failed to box its
    result, "NRT_adapt_ndarray_to_python: descr is NULL".) Its passes are written here,
    not ``radix_sort_into`` per column, which sorts a gathered copy and needs a second
    gather to compose the orders: 515-621 against 340-479 us for a triangle tick's
    10,717 rows of email-Enron (three rounds alternating)."""
    w = out.shape[1]
    order = np.empty(m, dtype=np.int64)
    lows = np.zeros(w, dtype=np.int64)
    bits = np.zeros(w, dtype=np.int64)
    for c in range(w):
        if c == skip:
            continue
        lo = hi = out[0, c]
        for i in range(1, m):
            x = out[i, c]
            if x < lo:
                lo = x
            elif x > hi:
                hi = x
        if lo < 0 <= hi and hi > I64_MAX + lo:  # the column's span does not fit in int64
            return order[:0]
        span = hi - lo
        while span > 0:
            span >>= 1
            bits[c] += 1
        lows[c] = lo
    for i in range(m):
        order[i] = i
    tmp = np.empty(m, dtype=np.int64)
    key = np.empty(m, dtype=np.int64)
    key2 = np.empty(m, dtype=np.int64)
    counts = np.empty(1 << RADIX_DIGIT, dtype=np.int64)
    for k in range(w):  # columns w - 1 .. 0
        c = w - 1 - k
        if c == skip or bits[c] == 0:
            continue
        for i in range(m):
            key[i] = out[order[i], c] - lows[c]
        passes = (bits[c] + RADIX_DIGIT - 1) // RADIX_DIGIT
        digit = (bits[c] + passes - 1) // passes
        mask = (1 << digit) - 1
        for p in range(passes):
            shift = p * digit
            for b in range(mask + 1):
                counts[b] = 0
            for i in range(m):
                counts[(key[i] >> shift) & mask] += 1
            total = 0
            same = False
            for b in range(mask + 1):
                n = counts[b]
                if n == m:
                    same = True
                    break
                counts[b] = total
                total += n
            if same:
                continue
            for i in range(m):
                x = key[i]
                b = (x >> shift) & mask
                j = counts[b]
                counts[b] = j + 1
                tmp[j] = order[i]
                key2[j] = x
            order, tmp = tmp, order
            key, key2 = key2, key
    return order


@kernel
def consolidate(out, m, res):
    """The ``m`` rows of ``out`` (``[view, weight, keys...]``) sorted by view then keys,
    equal rows summed, zeros dropped, written to ``res`` (at least ``m`` rows); returns
    how many. The tick kernel writes into its caller's buffer and returns only ints, so
    a single-edge tick boxes no array (about 1 µs a call). (A sum cannot overflow: every
    row's weight went into its view's count, which was checked.)

    More than ``RADIX_ROWS`` rows are radix sorted (``radix_rows``: a tick of 1,000
    edges of email-Enron changes ~10^4 triangles, ~7 * 10^5 4-cycles, and a merge sort of
    the rows took ~40% of the triangles' tick); fewer, or rows with a column whose span
    does not fit in int64, take a merge sort of the rows."""
    if m == 0:
        return 0
    w = out.shape[1]
    ok = False
    if m > RADIX_ROWS:
        idx = radix_rows(out, m, 1)
        ok = idx.shape[0] == m
    if not ok:
        idx = sorted_order(out, m, 2)  # column 1, the weight, does not order
    n = 0
    i = 0
    while i < m:
        a = idx[i]
        s = out[a, 1]
        j = i + 1
        while j < m and not _row_less(out, a, idx[j], 2):  # equal rows (sorted: not less)
            s += out[idx[j], 1]
            j += 1
        if s != 0:
            for c in range(w):
                res[n, c] = out[a, c]
            res[n, 1] = s
            n += 1
        i = j
    return n


EDGE_ROWS = 6
"""A graph tick of ``k`` edge operations makes at most ``EDGE_ROWS * k`` changes: one of
the primary relation per edge, and of the relations kept beside it one oriented pair
and both directions of two symmetric ones."""


@kernel
def edge_changes(layout, B, ins, dels):
    """The changes of an edge tick (``edge_changes_into``) in a new array: ``(bad, ch,
    n_primary)``."""
    k = ins.shape[0] + dels.shape[0]
    ch = np.empty((EDGE_ROWS * k, 2 + _sec(layout, _SCALARS)[_MAX_ARITY]), dtype=np.int64)
    bad, m, n_primary = edge_changes_into(layout, B, ins, dels, ch)
    return bad, ch[:m], n_primary


@kernel
def edge_changes_into(layout, B, ins, dels, ch):
    """The changes of an edge tick, written to ``ch`` (``int64[n, 2 + max_arity]``, at
    least ``EDGE_ROWS`` rows per edge operation): ``(bad, m, n_primary)``, ``m`` the
    rows written ``(relation, weight, row...)``: the primary relation's changes first
    (sorted), then those of the relations kept beside it: for a directed graph the
    oriented undirected one (pairs ``(min, max)``) and the symmetric ones (both
    directions of those pairs); for an undirected graph the symmetric ones (both
    directions of each change). ``bad``: -1, or the first id out of ``[0, 2**62)`` as its
    position in ``ins`` then ``dels`` flattened (nothing else is done then).
    ``layout``'s scalars are ``EDGES``."""
    sc = _sec(layout, _SCALARS)
    directed, rel_p, rel_o = sc[_DIRECTED] != 0, sc[_REL_P], sc[_REL_O]
    rel_s, rel_s2 = sc[_REL_S], sc[_REL_S2]
    k = ins.shape[0] + dels.shape[0]
    ops = np.empty((k, 3), dtype=np.int64)  # (u, v, delete)
    n = 0
    for i in range(k):
        a, b = (ins[i, 0], ins[i, 1]) if i < ins.shape[0] else (dels[i - ins.shape[0], 0], dels[i - ins.shape[0], 1])
        if a < 0 or a > MAX_ID:
            return 2 * i, 0, 0
        if b < 0 or b > MAX_ID:
            return 2 * i + 1, 0, 0
        if a == b:
            continue
        if not directed and a > b:
            a, b = b, a
        ops[n, 0], ops[n, 1], ops[n, 2] = a, b, i >= ins.shape[0]
        n += 1
    ok = False  # the order by (u, v, delete): an edge's rows stay together
    if n > RADIX_ROWS:  # a merge sort of 10^4 operations took 1.1 ms, a radix sort 0.15 ms
        order = radix_rows(ops, n, -1)
        ok = order.shape[0] == n
    if not ok:
        order = sorted_order(ops, n, 1)
    off = _sec(layout, _IDX_STATE)[_sec(layout, _REL_IDX)[rel_p]]  # the primary's natural index
    T = B[off:off + 2]
    for r in range(EDGE_ROWS * n):  # the columns past an edge's two (none in a graph)
        for c in range(4, ch.shape[1]):
            ch[r, c] = 0
    m = 0
    i = 0
    while i < n:
        a, b = ops[order[i], 0], ops[order[i], 1]
        deleted = False
        j = i
        while j < n and ops[order[j], 0] == a and ops[order[j], 1] == b:
            deleted = deleted or ops[order[j], 2] != 0
            j += 1
        if _arc(T, a, b) == deleted:  # present and deleted, or absent and inserted
            ch[m, 0], ch[m, 1], ch[m, 2], ch[m, 3] = rel_p, -1 if deleted else 1, a, b
            m += 1
        i = j
    n_primary = m
    if rel_o >= 0 or rel_s >= 0 or rel_s2 >= 0:
        m = _derived_changes(T, ch, n_primary, directed, rel_o, rel_s, rel_s2)
    return -1, m, n_primary


@njit(cache=True, nogil=True, inline="always")
def _arc(T, a, b):
    """Whether the binary trie ``T`` holds the row ``(a, b)``."""
    p, found = find(T, 0, 0, T[0, N], a)
    if found:
        p, found = find(T, 1, load(T[0, LO], p), load(T[0, HI], p), b)
    return found


@kernel
def _change_at(ch, n, a, b):
    """The position of ``(a, b)`` among the sorted primary changes ``0 .. n - 1``, or -1."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if ch[mid, 2] < a or (ch[mid, 2] == a and ch[mid, 3] < b):
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < n and ch[lo, 2] == a and ch[lo, 3] == b else -1


@kernel
def _derived_changes(T, ch, n, directed, rel_o, rel_s, rel_s2):
    """Append the changes the primary changes ``0 .. n - 1`` make to the kept undirected
    relations (see ``edge_changes``; ``T``: the primary's natural index before them).
    Returns the new count."""
    m = n
    for i in range(n):
        a, b = ch[i, 2], ch[i, 3]
        lo, hi = min(a, b), max(a, b)
        w = ch[i, 1]
        if directed:
            if a > b and _change_at(ch, n, b, a) >= 0:  # the pair's other direction changed too: once
                continue
            before = _arc(T, lo, hi) or _arc(T, hi, lo)
            c1, c2 = _change_at(ch, n, lo, hi), _change_at(ch, n, hi, lo)
            after = (ch[c1, 1] > 0 if c1 >= 0 else _arc(T, lo, hi)) or (ch[c2, 1] > 0 if c2 >= 0 else _arc(T, hi, lo))
            if before == after:
                continue
            w = 1 if after else -1
            if rel_o >= 0:
                ch[m, 0], ch[m, 1], ch[m, 2], ch[m, 3] = rel_o, w, lo, hi
                m += 1
        for rel in (rel_s, rel_s2):
            if rel >= 0:
                ch[m, 0], ch[m, 1], ch[m, 2], ch[m, 3] = rel, w, lo, hi
                ch[m + 1, 0], ch[m + 1, 1], ch[m + 1, 2], ch[m + 1, 3] = rel, w, hi, lo
                m += 2
    return m


@kernel
def _now():
    return cycles()


_RATE: list[float] = []


def cycle_rate() -> float:
    """Cycles of ``memory.cycles`` per second, measured once against ``time.perf_counter``
    over 20 ms."""
    if not _RATE:
        _now()
        t0, c0 = time.perf_counter(), _now()
        while time.perf_counter() - t0 < 0.02:
            pass
        t1, c1 = time.perf_counter(), _now()
        _RATE.append((c1 - c0) / (t1 - t0))
    return _RATE[0]
