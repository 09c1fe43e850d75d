"""A tick change by change, in one call: every view's delta terms, then the change applied.

The telescoping delta rule holds for any sequence of single-row changes: for change
``j`` of relation ``R``, ``prev`` is the state with changes ``0 .. j - 1`` applied,
``delta`` the one row and ``curr = prev + delta``. So a small tick runs its changes one
after the other: each change's terms read the tries as they are (``prev``) plus a
one-row trie holding the change (``delta``; ``curr`` reads both), depth first (one
change's frontier is small), and the change is then applied to every index of its
relation in place (``store.apply_row``). Nothing is staged, nothing is copied in
proportion to the state, and the tick commits in the same call.

The call is all or nothing:

* before a change's terms run, every index of its relation is checked for room, keeping
  ``MIN_CAP`` free entries per level for each change already applied (undoing them never
  needs more); without room the call returns ``NEED_ROOM`` before that change (none of
  its rows emitted): the caller grows the trie and calls again from that change;
* a weight that overflows (a product in a term, a sum in an index) undoes every change
  of the tick in reverse and returns ``OVERFLOW`` with the change's index.

On success the per-view count changes (``dcounts``, kept across the calls of one tick)
are added to ``counts`` in the same call, and the rows are consolidated (sorted by view,
then row; equal rows summed; zeros dropped).

``edge_tick`` first turns a graph tick's edge inserts and deletes into those changes (set
semantics: deletes after inserts; self-loops dropped; undirected pairs as ``(min, max)``;
for a directed graph also the changes of its undirected relations, when kept).

The program, the tries' layout and the views come packed in one int64 array (``code``;
``SECTIONS`` names its parts, built by ``wcoj.generic_join.ChangeProgram``): a kernel's
dispatch costs about 0.1 us per argument, and a one-edge tick takes a few microseconds.
"""

import numpy as np
from numba import njit

from .memory import HI, LO, N, V, load, store
from .program import SCOL, SHI, SLAST, SLO, SV, _candidates, _distinct, _next, _weight, seed_value, slot_table
from .store import MIN_CAP, NEED_ROOM, OK, OVERFLOW, apply_row, find

__all__ = ["edge_tick", "edge_changes", "change_tick", "OK", "NEED_ROOM", "OVERFLOW", "SECTIONS", "SCALARS"]

SECTIONS = ("at", "deep", "fixed", "part_rows", "level_slots", "level_atoms", "atom_bounds", "bnd_off", "bnd_col",
            "bnd_upper", "ne_off", "ne_col", "term_levels", "term_parts", "out_cols", "first_part", "term_seed",
            "term_rel", "term_view", "gather", "rel_idx", "idx_state", "idx_change", "idx_cols", "scalars")
(_AT, _DEEP, _FIXED, _PART_ROWS, _LEVEL_SLOTS, _LEVEL_ATOMS, _ATOM_BOUNDS, _BND_OFF, _BND_COL, _BND_UPPER, _NE_OFF,
 _NE_COL, _TERM_LEVELS, _TERM_PARTS, _OUT_COLS, _FIRST_PART, _TERM_SEED, _TERM_REL, _TERM_VIEW, _GATHER, _REL_IDX,
 _IDX_STATE, _IDX_CHANGE, _IDX_COLS, _SCALARS) = range(len(SECTIONS))
SCALARS = ("n_out", "max_arity", "n_views", "max_levels", "max_slots", "max_parts", "directed", "rel_primary",
           "rel_oriented", "rel_sym", "rel_sym2")
_N_OUT, _MAX_ARITY, _N_VIEWS, _MAX_LEVELS, _MAX_SLOTS, _MAX_PARTS, _DIRECTED, _REL_P, _REL_O, _REL_S, _REL_S2 = \
    range(len(SCALARS))


@njit(cache=True, nogil=True, inline="always")
def _sec(code, i):
    """Section ``i`` of the packed program (a view)."""
    return code[code[1 + 2 * i]:code[1 + 2 * i] + code[2 + 2 * i]]


@njit(cache=True, nogil=True)
def _emit(vals, wt, cols, view, out_k, out_w, out_v, m, dcounts):
    """Append one result row (``vals[0, cols[c]]`` for each output column), growing the
    buffers; add its weight to its view's count change. Returns ``(m, ok, bufs...)``."""
    if m == out_w.shape[0]:
        cap = 2 * m + 16
        k2 = np.zeros((cap, out_k.shape[1]), dtype=np.int64)
        w2 = np.empty(cap, dtype=np.int64)
        v2 = np.empty(cap, dtype=np.int64)
        k2[:m] = out_k[:m]
        w2[:m] = out_w[:m]
        v2[:m] = out_v[:m]
        out_k, out_w, out_v = k2, w2, v2
    for c in range(cols.shape[0]):
        out_k[m, c] = vals[0, cols[c]]
    out_w[m] = wt
    out_v[m] = view
    s = dcounts[view] + wt
    if (wt > 0 and s < dcounts[view]) or (wt < 0 and s > dcounts[view]):
        return m, False, out_k, out_w, out_v
    dcounts[view] = s
    return m + 1, True, out_k, out_w, out_v


@njit(cache=True, nogil=True)
def _run_term(t, S, LO0, HI0, code, vals, wts, RLO, RHI, lo, hi, cur, hits, best, out_k, out_w, out_v, m,
              dcounts):
    """Term ``t`` for the change held in its one-row delta part, depth first: the seeded
    levels bind the change's values (``program.seed_value``), the later ones are searched
    (``_candidates``/``_next``). Returns ``(m, ok, out_k, out_w, out_v)``; ``ok`` False
    when a weight overflowed."""
    term_levels, term_parts = _sec(code, _TERM_LEVELS), _sec(code, _TERM_PARTS)
    a, b = term_levels[t], term_levels[t + 1]
    p0, P = term_parts[t], term_parts[t + 1] - term_parts[t]
    level_slots = _sec(code, _LEVEL_SLOTS)[a:b]
    level_atoms = _sec(code, _LEVEL_ATOMS)[a:b]
    atom_bounds = _sec(code, _ATOM_BOUNDS)
    bnd_off, bnd_col, bnd_upper = _sec(code, _BND_OFF)[a:b], _sec(code, _BND_COL), _sec(code, _BND_UPPER)
    ne_off, ne_col = _sec(code, _NE_OFF)[a:b], _sec(code, _NE_COL)
    n_out = _sec(code, _SCALARS)[_N_OUT]
    cols = _sec(code, _OUT_COLS)[t * n_out:(t + 1) * n_out]
    view = _sec(code, _TERM_VIEW)[t]
    seed = _sec(code, _TERM_SEED)[t]
    dcol = _sec(code, _FIRST_PART)[t] - p0
    L = b - a - 1
    for p in range(P):
        RLO[0, p] = LO0[p0 + p]
        RHI[0, p] = HI0[p0 + p]
    wts[0] = 1
    for l in range(seed):  # the change's values, level by level
        x = 0
        for s in range(level_slots[l], level_slots[l + 1]):
            if S[s, SCOL] == dcol:
                x = load(S[s, SV], 0)
        for j in range(level_slots[l + 1] - level_slots[l]):
            cur[l, j] = RLO[l, S[level_slots[l] + j, SCOL]]
        ok, bad = seed_value(l, x, 0, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                             ne_off, ne_col, dcol, vals, wts, RLO, RHI, hits[l], cur)
        if bad:
            return m, False, out_k, out_w, out_v
        if not ok:
            return m, True, out_k, out_w, out_v
        vals[0, l] = x
    if seed == L:
        return _emit(vals, wts[L], cols, view, out_k, out_w, out_v, m, dcounts)
    l = seed
    a0 = level_atoms[l]
    best[l], _ = _candidates(l, S, level_slots, atom_bounds, a0, level_atoms[l + 1] - a0 - 1, bnd_off, bnd_col,
                             bnd_upper, RLO, RHI, l, vals, 0, lo[l], hi[l])
    if best[l] < 0:
        return m, True, out_k, out_w, out_v
    for j in range(level_slots[l + 1] - level_slots[l]):
        cur[l, j] = lo[l, j]
    while l >= seed:
        s0 = level_slots[l]
        a0 = level_atoms[l]
        n_atoms = level_atoms[l + 1] - a0 - 1
        ok, x = _next(S, s0, atom_bounds, a0, n_atoms, best[l], lo[l], hi[l], cur[l], hits[l], 0)
        if not ok:
            l -= 1
            continue
        if not _distinct(x, vals, 0, ne_off, ne_col, l):
            continue
        fine, wt = _weight(wts[l], S, s0, atom_bounds, a0, n_atoms, hits[l])
        if not fine:
            return m, False, out_k, out_w, out_v
        if wt == 0:
            continue
        vals[0, l] = x
        if l == L - 1:
            m, ok, out_k, out_w, out_v = _emit(vals, wt, cols, view, out_k, out_w, out_v, m, dcounts)
            if not ok:
                return m, False, out_k, out_w, out_v
            continue
        wts[l + 1] = wt
        for p in range(P):
            RLO[l + 1, p] = RLO[l, p]
            RHI[l + 1, p] = RHI[l, p]
        for j in range(level_slots[l + 1] - s0):
            s = s0 + j
            c = S[s, SCOL]
            h = hits[l, j]
            if S[s, SLAST] == 0 and h >= 0:
                RLO[l + 1, c] = load(S[s, SLO], h)
                RHI[l + 1, c] = load(S[s, SHI], h)
            else:
                RLO[l + 1, c] = 0
                RHI[l + 1, c] = 0
        l += 1
        a0 = level_atoms[l]
        best[l], _ = _candidates(l, S, level_slots, atom_bounds, a0, level_atoms[l + 1] - a0 - 1, bnd_off,
                                 bnd_col, bnd_upper, RLO, RHI, l, vals, 0, lo[l], hi[l])
        if best[l] < 0:
            l -= 1
            continue
        for j in range(level_slots[l + 1] - level_slots[l]):
            cur[l, j] = lo[l, j]
    return m, True, out_k, out_w, out_v


@njit(cache=True, nogil=True)
def _apply(B, code, rel, row, w, reserve, path, prow, dry):
    """``store.apply_row`` of one change on every index of relation ``rel`` (the row
    permuted into each index's column order): ``(status, level, need, state row)``. A dry
    run only checks; a real one must follow a dry run that said ``OK``."""
    rel_idx, idx_state, idx_cols = _sec(code, _REL_IDX), _sec(code, _IDX_STATE), _sec(code, _IDX_COLS)
    mx = _sec(code, _SCALARS)[_MAX_ARITY]
    for x in range(rel_idx[rel], rel_idx[rel + 1]):
        off = idx_state[x]
        r = 0
        while r < mx and idx_cols[x * mx + r] >= 0:
            prow[r] = row[idx_cols[x * mx + r]]
            r += 1
        code_, level, need = apply_row(B[off:off + r], prow[:r], w, reserve, path, dry)
        if code_ != OK:
            return code_, level, need, off
    return OK, 0, 0, 0


@njit(cache=True, nogil=True)
def _write_change(B, code, rel, row, w, on):
    """Put the change ``row``/``w`` into the one-row tries of every index of ``rel``
    (``on``), or empty them again: every other relation's delta is empty meanwhile."""
    rel_idx, idx_change, idx_cols = _sec(code, _REL_IDX), _sec(code, _IDX_CHANGE), _sec(code, _IDX_COLS)
    mx = _sec(code, _SCALARS)[_MAX_ARITY]
    for x in range(rel_idx[rel], rel_idx[rel + 1]):
        off = idx_change[x]
        B[off, N] = 1 if on else 0
        r = 0
        while on and r < mx and idx_cols[x * mx + r] >= 0:
            store(B[off + r, V], 0, row[idx_cols[x * mx + r]])
            r += 1
        if on:
            store(B[off + r - 1, LO], 0, w)


@njit(cache=True, nogil=True)
def _less(out_k, out_v, i, j):
    if out_v[i] != out_v[j]:
        return out_v[i] < out_v[j]
    for c in range(out_k.shape[1]):
        if out_k[i, c] != out_k[j, c]:
            return out_k[i, c] < out_k[j, c]
    return False


@njit(cache=True, nogil=True)
def _consolidate(out_k, out_w, out_v, m):
    """Sort the ``m`` rows by view then row (a stable merge sort), sum equal rows, drop
    zeros: ``(keys, weights, views)``, new arrays."""
    idx = np.arange(m)
    tmp = np.empty(m, dtype=np.int64)
    width = 1
    while width < m:
        for lo in range(0, m, 2 * width):
            mid, hi = min(lo + width, m), min(lo + 2 * width, m)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _less(out_k, out_v, idx[j], idx[i]):
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
        idx, tmp = tmp, idx
        width *= 2
    keys = np.empty((m, out_k.shape[1]), dtype=np.int64)
    weights = np.empty(m, dtype=np.int64)
    views = np.empty(m, dtype=np.int64)
    n = 0
    i = 0
    while i < m:
        a = idx[i]
        s = out_w[a]
        j = i + 1
        while j < m and not _less(out_k, out_v, a, idx[j]):  # equal rows (sorted: not less)
            s += out_w[idx[j]]  # (a row's weight sum overflowing was caught by dcounts' check)
            j += 1
        if s != 0:
            keys[n] = out_k[a]
            weights[n] = s
            views[n] = out_v[a]
            n += 1
        i = j
    return keys[:n], weights[:n], views[:n]


@njit(cache=True, nogil=True)
def _run_changes(B, code, ch_rel, ch_rows, ch_w, start, dcounts, counts):
    """The changes ``start ..`` of ``ch_rel``/``ch_rows``/``ch_w`` (see the module's
    docstring). Returns ``(status, change, level, need, state row, keys, weights,
    views)``: ``OK`` with the consolidated rows of this call; ``NEED_ROOM`` before
    ``change`` (its index's trie at ``state row`` needs ``need`` at ``level``; the rows
    of the changes before it returned unconsolidated); ``OVERFLOW`` at ``change``,
    everything undone."""
    sc = _sec(code, _SCALARS)
    n_out, mx, n_views = sc[_N_OUT], sc[_MAX_ARITY], sc[_N_VIEWS]
    L, smax, pmax = sc[_MAX_LEVELS], sc[_MAX_SLOTS], sc[_MAX_PARTS]
    term_rel = _sec(code, _TERM_REL)
    gather = _sec(code, _GATHER)
    n_terms = term_rel.shape[0]
    fixed = _sec(code, _FIXED).reshape(-1, 3)
    at, deep, part_rows = _sec(code, _AT), _sec(code, _DEEP), _sec(code, _PART_ROWS)
    vals = np.zeros((1, max(L, 1)), dtype=np.int64)
    wts = np.ones(L + 1, dtype=np.int64)
    RLO = np.zeros((L + 1, pmax), dtype=np.int64)
    RHI = np.zeros((L + 1, pmax), dtype=np.int64)
    lo = np.zeros((L, smax), dtype=np.int64)
    hi = np.zeros((L, smax), dtype=np.int64)
    cur = np.zeros((L, smax), dtype=np.int64)
    hits = np.zeros((L, smax), dtype=np.int64)
    best = np.zeros(L, dtype=np.int64)
    path = np.zeros(mx, dtype=np.int64)
    prow = np.zeros(mx, dtype=np.int64)
    reserve = np.zeros(mx, dtype=np.int64)
    none = np.zeros(mx, dtype=np.int64)
    T = np.empty((gather.shape[0], B.shape[1]), dtype=np.int64)
    out_k = np.zeros((16, max(n_out, 1)), dtype=np.int64)
    out_w = np.empty(16, dtype=np.int64)
    out_v = np.empty(16, dtype=np.int64)
    m = 0
    n = ch_w.shape[0]
    i = start
    while i < n:
        rel, row, w = ch_rel[i], ch_rows[i], ch_w[i]
        reserve[:] = MIN_CAP * (i + 1)
        status, level, need, off = _apply(B, code, rel, row, w, reserve, path, prow, True)
        if status == NEED_ROOM:
            return NEED_ROOM, i, level, need, off, out_k[:m], out_w[:m], out_v[:m]
        ok = status == OK
        if ok:
            _write_change(B, code, rel, row, w, True)
            for j in range(gather.shape[0]):
                T[j] = B[gather[j]]
            S, LO0, HI0 = slot_table(T, at, deep, fixed, part_rows)
            for t in range(n_terms):
                if term_rel[t] == rel:
                    m, ok, out_k, out_w, out_v = _run_term(t, S, LO0, HI0, code, vals, wts, RLO, RHI, lo, hi, cur,
                                                           hits, best, out_k, out_w, out_v, m, dcounts)
                    if not ok:
                        break
            _write_change(B, code, rel, row, w, False)
        if not ok:
            for j in range(i - 1, -1, -1):  # undo the tick: nothing of it stays
                status, level, need, off = _apply(B, code, ch_rel[j], ch_rows[j], -ch_w[j], none, path, prow,
                                                  False)
            dcounts[:] = 0
            return OVERFLOW, i, 0, 0, 0, out_k[:0], out_w[:0], out_v[:0]
        _apply(B, code, rel, row, w, none, path, prow, False)
        i += 1
    for v in range(n_views + 1):
        counts[v] += dcounts[v]
    keys, weights, views = _consolidate(out_k, out_w, out_v, m)
    return OK, n, 0, 0, 0, keys, weights, views


@njit(cache=True, nogil=True)
def change_tick(B, code, ch_rel, ch_rows, ch_w, start, dcounts, counts):
    """A tick of prepared changes (``ch_rel[i]`` names the relation, ``ch_rows[i]`` the
    row in natural column order, ``ch_w[i]`` the weight) from change ``start`` on:
    ``_run_changes``' result. ``dcounts``: the count changes of this tick so far (one
    per view, then the primary relation's rows), zero at its first call."""
    return _run_changes(B, code, ch_rel, ch_rows, ch_w, start, dcounts, counts)


@njit(cache=True, nogil=True)
def edge_changes(code, B, ins, dels):
    """The changes of an edge tick: ``(rel, rows, weights, n_primary)``; the primary
    relation's changes first (sorted), then those of the relations kept beside it: for a
    directed graph the oriented undirected one (pairs ``(min, max)``) and the symmetric
    ones (both directions of those pairs); for an undirected graph the symmetric ones
    (both directions of each change)."""
    sc = _sec(code, _SCALARS)
    directed, rel_p, rel_o, mx = sc[_DIRECTED] != 0, sc[_REL_P], sc[_REL_O], sc[_MAX_ARITY]
    rel_s, rel_s2 = sc[_REL_S], sc[_REL_S2]
    k = ins.shape[0] + dels.shape[0]
    u = np.empty(k, dtype=np.int64)
    v = np.empty(k, dtype=np.int64)
    dl = np.empty(k, dtype=np.bool_)
    n = 0
    for i in range(k):
        a, b = (ins[i, 0], ins[i, 1]) if i < ins.shape[0] else (dels[i - ins.shape[0], 0], dels[i - ins.shape[0], 1])
        if a == b:
            continue
        if not directed and a > b:
            a, b = b, a
        u[n], v[n], dl[n] = a, b, i >= ins.shape[0]
        n += 1
    order = np.argsort(v[:n], kind="mergesort")
    order = order[np.argsort(u[:n][order], kind="mergesort")]
    off = _sec(code, _IDX_STATE)[_sec(code, _REL_IDX)[rel_p]]  # the primary's natural index
    T = B[off:off + 2]
    extra = 5 * n if rel_o >= 0 or rel_s >= 0 or rel_s2 >= 0 else 0
    ch_rel = np.empty(n + extra, dtype=np.int64)
    ch_rows = np.zeros((n + extra, mx), dtype=np.int64)
    ch_w = np.empty(n + extra, dtype=np.int64)
    m = 0
    i = 0
    while i < n:
        a, b = u[order[i]], v[order[i]]
        deleted = False
        j = i
        while j < n and u[order[j]] == a and v[order[j]] == b:
            deleted = deleted or dl[order[j]]
            j += 1
        if _arc(T, a, b) == deleted:  # present and deleted, or absent and inserted
            ch_rel[m], ch_rows[m, 0], ch_rows[m, 1], ch_w[m] = rel_p, a, b, -1 if deleted else 1
            m += 1
        i = j
    n_primary = m
    if extra:
        m = _derived_changes(T, ch_rel, ch_rows, ch_w, n_primary, directed, rel_o, rel_s, rel_s2)
    return ch_rel[:m], ch_rows[:m], ch_w[:m], n_primary


@njit(cache=True, nogil=True, inline="always")
def _arc(T, a, b):
    """Whether the binary trie ``T`` holds the row ``(a, b)``."""
    p, found = find(T, 0, 0, T[0, N], a)
    if found:
        p, found = find(T, 1, load(T[0, LO], p), load(T[0, HI], p), b)
    return found


@njit(cache=True, nogil=True)
def _change_at(ch_rows, n, a, b):
    """The position of ``(a, b)`` among the sorted primary changes ``0 .. n - 1``, or -1."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if ch_rows[mid, 0] < a or (ch_rows[mid, 0] == a and ch_rows[mid, 1] < b):
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < n and ch_rows[lo, 0] == a and ch_rows[lo, 1] == b else -1


@njit(cache=True, nogil=True, inline="always")
def _arc_after(T, a, b, ch_rows, ch_w, n):
    """Whether the arc ``(a, b)`` exists after the primary changes ``0 .. n - 1``."""
    i = _change_at(ch_rows, n, a, b)
    return ch_w[i] > 0 if i >= 0 else _arc(T, a, b)


@njit(cache=True, nogil=True)
def _derived_changes(T, ch_rel, ch_rows, ch_w, n, directed, rel_o, rel_s, rel_s2):
    """Append the changes the primary changes ``0 .. n - 1`` make to the kept undirected
    relations (see ``edge_changes``; ``T``: the primary's natural index before them).
    Returns the new count."""
    m = n
    for i in range(n):
        a, b = ch_rows[i, 0], ch_rows[i, 1]
        lo, hi = min(a, b), max(a, b)
        w = ch_w[i]
        if directed:
            if a > b and _change_at(ch_rows, n, b, a) >= 0:  # the pair's other direction changed too: once
                continue
            before = _arc(T, lo, hi) or _arc(T, hi, lo)
            after = _arc_after(T, lo, hi, ch_rows, ch_w, n) or _arc_after(T, hi, lo, ch_rows, ch_w, n)
            if before == after:
                continue
            w = 1 if after else -1
            if rel_o >= 0:
                ch_rel[m], ch_rows[m, 0], ch_rows[m, 1], ch_w[m] = rel_o, lo, hi, w
                m += 1
        for rel in (rel_s, rel_s2):
            if rel >= 0:
                ch_rel[m], ch_rows[m, 0], ch_rows[m, 1], ch_w[m] = rel, lo, hi, w
                ch_rel[m + 1], ch_rows[m + 1, 0], ch_rows[m + 1, 1], ch_w[m + 1] = rel, hi, lo, w
                m += 2
    return m


@njit(cache=True, nogil=True)
def edge_tick(B, code, ins, dels, dcounts, counts):
    """A graph tick of edge inserts ``ins`` and deletes ``dels`` (``int64[n, 2]``):
    ``(changes..., n_primary, then _run_changes' result)``. The primary relation's
    row count change is added to ``counts[n_views]``."""
    ch_rel, ch_rows, ch_w, n_primary = edge_changes(code, B, ins, dels)
    total = 0
    for i in range(n_primary):
        total += ch_w[i]
    n_views = _sec(code, _SCALARS)[_N_VIEWS]
    dcounts[n_views] = total
    out = _run_changes(B, code, ch_rel, ch_rows, ch_w, 0, dcounts, counts)
    return ch_rel, ch_rows, ch_w, n_primary, out
