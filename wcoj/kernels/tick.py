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

from .memory import BASE, DENSE, HI, LO, N, V, inlined, load, prefetch, row_kernel, store
from .program import SCOL, SHI, SLAST, SLO, SN, SV, _candidates, _distinct, _next, _weight, seed_value, slot_table
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


_seed_value, _candidates_in, _next_in, _weight_in = inlined(seed_value), inlined(_candidates), inlined(_next), \
    inlined(_weight)
FULL = 3  # a term found the output buffers full (they grow and the term runs again)


@row_kernel
def _apply(B, rel, row, w, reserve, path, prow, rel_idx, idx_state, idx_cols, mx, first, last):
    """``store.apply_row`` of one change on the indexes ``first .. last - 1`` of relation
    ``rel`` (the row permuted into each index's column order): ``(status, index, level,
    need)``; on a failure, the indexes before ``index`` took the change and it did not."""
    for x in range(rel_idx[rel] + first, rel_idx[rel] + last):
        off = idx_state[x]
        r = 0
        while r < mx and idx_cols[x * mx + r] >= 0:
            prow[r] = row[idx_cols[x * mx + r]]
            r += 1
        code_, level, need = apply_row(B[off:off + r], prow[:r], w, reserve, path, False)
        if code_ != OK:
            return code_, x - rel_idx[rel], level, need
    return OK, last, 0, 0


@row_kernel
def _set_size(row, n, S, HI0, keys, order, n_slots):
    """Level 0's size ``n`` for the trie whose level 0 is block row ``row``: in the slots
    and part ranges that read it (``keys``: their block rows, sorted by ``order``; an
    entry ``>= n_slots`` is part ``entry - n_slots``)."""
    lo, hi = 0, keys.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[order[mid]] < row:
            lo = mid + 1
        else:
            hi = mid
    while lo < keys.shape[0] and keys[order[lo]] == row:
        e = order[lo]
        if e < n_slots:
            S[e, SN] = n
        else:
            HI0[e - n_slots] = n
        lo += 1


@row_kernel
def _write_change(B, rel, row, w, on, rel_idx, idx_change, idx_cols, mx):
    """Put the change ``row``/``w`` into the one-row tries of every index of ``rel``
    (``on``), or empty them again: every other relation's delta is empty meanwhile."""
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


@row_kernel
def _prefetch_change(B, rel, row, rel_idx, idx_state, idx_cols, mx, lists):
    """Ask the cache for what a later change will read first: in every index of its
    relation with a dense level 0, the children range of each of the row's values, and
    (``lists``, a change later, when that range is in cache) the children themselves.
    A tick's changes hit random vertices, and each of those reads missed the cache;
    asked for ahead, the misses of consecutive changes overlap."""
    for x in range(rel_idx[rel], rel_idx[rel + 1]):
        off = idx_state[x]
        r = 0
        while r < mx and idx_cols[x * mx + r] >= 0:
            r += 1
        if B[off, DENSE] == 0 or r < 2:
            continue
        for c in range(r):
            p = row[c] - B[off, BASE]
            if 0 <= p < B[off, N]:
                if lists:
                    prefetch(B[off + 1, V] + 8 * load(B[off, LO], p))
                else:
                    prefetch(B[off, LO] + 8 * p)
                    prefetch(B[off, HI] + 8 * p)


@njit(cache=True, nogil=True)
def _grow(out_k, out_w, out_v, m):
    cap = 2 * out_w.shape[0] + 16
    k2 = np.zeros((cap, out_k.shape[1]), dtype=np.int64)
    w2 = np.empty(cap, dtype=np.int64)
    v2 = np.empty(cap, dtype=np.int64)
    k2[:m] = out_k[:m]
    w2[:m] = out_w[:m]
    v2[:m] = out_v[:m]
    return k2, w2, v2


@row_kernel
def _change_loop(B, ch_rel, ch_rows, ch_w, i, m, dcounts, S, LO0, HI0, keys, order, sizes, n_slots, level_slots,
                 level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col, term_levels, term_parts,
                 term_seed, first_part, term_rel, term_view, out_cols, rel_idx, idx_state, idx_change, idx_cols, mx,
                 vals, wts, RLO, RHI, lo, hi, cur, hits, best, path, prow, reserve, none, saved, out_k, out_w, out_v):
    """The loop of ``_run_changes`` over the changes from ``i`` on (it allocates nothing,
    so it runs without Numba's reference counting: in the caller, every row of a 2-d
    work array handed to a helper counted references twice). Returns ``(status, change,
    level, need, state row, m)``; ``FULL``: the output buffers could not hold change
    ``i``'s rows (nothing of it is kept)."""
    n_terms = term_rel.shape[0]
    n = ch_w.shape[0]
    while i < n:
        if i + 2 < n:
            _prefetch_change(B, ch_rel[i + 2], ch_rows[i + 2], rel_idx, idx_state, idx_cols, mx, False)
        if i + 1 < n:
            _prefetch_change(B, ch_rel[i + 1], ch_rows[i + 1], rel_idx, idx_state, idx_cols, mx, True)
        rel, row, w = ch_rel[i], ch_rows[i], ch_w[i]
        n_idx = rel_idx[rel + 1] - rel_idx[rel]
        m_before = m
        for v in range(dcounts.shape[0]):
            saved[v] = dcounts[v]
        # the terms: each reads the indexes as they are (prev) and the change (delta)
        _write_change(B, rel, row, w, True, rel_idx, idx_change, idx_cols, mx)
        for x in range(rel_idx[rel], rel_idx[rel + 1]):
            _set_size(idx_change[x], 1, S, HI0, keys, order, n_slots)
        ok = True
        status = OK
        for t in range(n_terms):
            if term_rel[t] != rel:
                continue
            # term t, depth first: the seeded levels bind the change's values, the later
            # ones are searched (inlined here: a call passing this many
            # arrays cost as much as the term)
            a, L = term_levels[t], term_levels[t + 1] - term_levels[t] - 1
            p0, P = term_parts[t], term_parts[t + 1] - term_parts[t]
            seed, dcol, view, cols = term_seed[t], first_part[t] - p0, term_view[t], out_cols[t]
            status = OK
            while True:  # runs again from the start when the output buffers were full
                for p in range(P):
                    RLO[0, p] = LO0[p0 + p]
                    RHI[0, p] = HI0[p0 + p]
                wts[0] = 1
                l = 0
                while l < seed:
                    g = a + l
                    x = 0
                    for s in range(level_slots[g], level_slots[g + 1]):
                        if S[s, SCOL] == dcol:
                            x = load(S[s, SV], 0)
                        cur[l, s - level_slots[g]] = RLO[l, S[s, SCOL]]
                    found, bad = _seed_value(a, l, x, 0, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col,
                                             bnd_upper, ne_off, ne_col, dcol, vals, wts, RLO, RHI, hits[l], cur)
                    if bad:
                        status = OVERFLOW
                    if not found:
                        break
                    vals[0, l] = x
                    l += 1
                if l < seed:  # the change closes nothing here, or a weight overflowed
                    break
                if l < L:
                    g = a + l
                    best[l], _ = _candidates_in(g, S, level_slots, atom_bounds, level_atoms[g],
                                                level_atoms[g + 1] - level_atoms[g] - 1, bnd_off, bnd_col, bnd_upper,
                                                RLO, RHI, l, vals, 0, lo[l], hi[l])
                    if best[l] < 0:
                        break
                    for j in range(level_slots[g + 1] - level_slots[g]):
                        cur[l, j] = lo[l, j]
                while True:
                    if l == L:  # a row: the seeded levels bound every variable, or the last level did
                        if m == out_w.shape[0]:
                            status = FULL
                            break
                        for c in range(cols.shape[0]):
                            out_k[m, c] = vals[0, cols[c]]
                        wt = wts[L]
                        out_w[m] = wt
                        out_v[m] = view
                        d = dcounts[view] + wt
                        if (wt > 0 and d < dcounts[view]) or (wt < 0 and d > dcounts[view]):
                            status = OVERFLOW
                            break
                        dcounts[view] = d
                        m += 1
                        l -= 1
                        if l < seed:
                            break
                        continue
                    g = a + l
                    s0, a0 = level_slots[g], level_atoms[g]
                    n_atoms = level_atoms[g + 1] - a0 - 1
                    found, x = _next_in(S, s0, atom_bounds, a0, n_atoms, best[l], lo[l], hi[l], cur[l], hits[l], 0)
                    if not found:
                        l -= 1
                        if l < seed:
                            break
                        continue
                    if not _distinct(x, vals, 0, ne_off, ne_col, g):
                        continue
                    fine, wt = _weight_in(wts[l], S, s0, atom_bounds, a0, n_atoms, hits[l])
                    if not fine:
                        status = OVERFLOW
                        break
                    if wt == 0:
                        continue
                    vals[0, l] = x
                    wts[l + 1] = wt
                    if l == L - 1:
                        l = L
                        continue
                    for p in range(P):
                        RLO[l + 1, p] = RLO[l, p]
                        RHI[l + 1, p] = RHI[l, p]
                    for j in range(level_slots[g + 1] - s0):
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
                    g = a + l
                    a0 = level_atoms[g]
                    best[l], _ = _candidates_in(g, S, level_slots, atom_bounds, a0, level_atoms[g + 1] - a0 - 1,
                                                bnd_off, bnd_col, bnd_upper, RLO, RHI, l, vals, 0, lo[l], hi[l])
                    if best[l] < 0:
                        l -= 1
                        continue
                    for j in range(level_slots[g + 1] - level_slots[g]):
                        cur[l, j] = lo[l, j]
                break
            if status != OK:
                ok = False
                break
        _write_change(B, rel, row, w, False, rel_idx, idx_change, idx_cols, mx)
        for x in range(rel_idx[rel], rel_idx[rel + 1]):
            _set_size(idx_change[x], 0, S, HI0, keys, order, n_slots)
        if status == FULL:  # nothing of this change is kept: the caller grows the buffers, calls again
            for v in range(dcounts.shape[0]):
                dcounts[v] = saved[v]
            return FULL, i, 0, 0, 0, m_before
        # then the change, on every index of its relation (room kept for undoing the tick)
        level = need = off = 0
        if ok:
            for r in range(reserve.shape[0]):
                reserve[r] = MIN_CAP * (i + 1)
            status, done, level, need = _apply(B, rel, row, w, reserve, path, prow, rel_idx, idx_state, idx_cols,
                                               mx, 0, n_idx)
            if status != OK:  # the indexes before `done` took it: give it back
                off = idx_state[rel_idx[rel] + done]
                _apply(B, rel, row, -w, none, path, prow, rel_idx, idx_state, idx_cols, mx, 0, done)
                if status == NEED_ROOM:
                    for v in range(dcounts.shape[0]):
                        dcounts[v] = saved[v]
                    return NEED_ROOM, i, level, need, off, m_before
                ok = False
        if not ok:
            for j in range(i - 1, -1, -1):  # undo the tick: nothing of it stays
                _apply(B, ch_rel[j], ch_rows[j], -ch_w[j], none, path, prow, rel_idx, idx_state, idx_cols, mx, 0,
                       rel_idx[ch_rel[j] + 1] - rel_idx[ch_rel[j]])
            for v in range(dcounts.shape[0]):
                dcounts[v] = 0
            return OVERFLOW, i, 0, 0, 0, 0
        for x in range(rel_idx[rel], rel_idx[rel + 1]):  # a root that grew: its new size
            row0 = idx_state[x]
            if B[row0, N] != sizes[x]:
                sizes[x] = B[row0, N]
                _set_size(row0, sizes[x], S, HI0, keys, order, n_slots)
        i += 1
    return OK, n, 0, 0, 0, m


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
    at, deep, part_rows = _sec(code, _AT), _sec(code, _DEEP), _sec(code, _PART_ROWS)
    fixed = _sec(code, _FIXED).reshape(-1, 3)
    level_slots, level_atoms, atom_bounds = _sec(code, _LEVEL_SLOTS), _sec(code, _LEVEL_ATOMS), _sec(code, _ATOM_BOUNDS)
    bnd_off, bnd_col, bnd_upper = _sec(code, _BND_OFF), _sec(code, _BND_COL), _sec(code, _BND_UPPER)
    ne_off, ne_col = _sec(code, _NE_OFF), _sec(code, _NE_COL)
    term_levels, term_parts, term_seed = _sec(code, _TERM_LEVELS), _sec(code, _TERM_PARTS), _sec(code, _TERM_SEED)
    first_part, term_rel, term_view = _sec(code, _FIRST_PART), _sec(code, _TERM_REL), _sec(code, _TERM_VIEW)
    out_cols = _sec(code, _OUT_COLS).reshape(-1, max(n_out, 1))
    gather = _sec(code, _GATHER)
    rel_idx, idx_state, idx_change, idx_cols = (_sec(code, _REL_IDX), _sec(code, _IDX_STATE),
                                                _sec(code, _IDX_CHANGE), _sec(code, _IDX_COLS))
    n_terms = term_rel.shape[0]
    T = np.empty((gather.shape[0], B.shape[1]), dtype=np.int64)
    for j in range(gather.shape[0]):
        T[j] = B[gather[j]]
    S, LO0, HI0 = slot_table(T, at, deep, fixed, part_rows)
    n_slots = S.shape[0]
    keys = np.empty(n_slots + part_rows.shape[0], dtype=np.int64)  # the block row each slot's level 0 and
    for s in range(n_slots):                                       # each part's is (-1: a deep slot)
        keys[s] = -1 if deep[s] else gather[at[s]]
    for q in range(part_rows.shape[0]):
        keys[n_slots + q] = gather[part_rows[q]]
    order = np.argsort(keys)
    sizes = np.empty(idx_state.shape[0], dtype=np.int64)  # each index's level-0 size as the slots have it
    for x in range(idx_state.shape[0]):
        sizes[x] = B[idx_state[x], N]
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
    saved = np.zeros(n_views + 1, dtype=np.int64)
    out_k = np.zeros((64, max(n_out, 1)), dtype=np.int64)
    out_w = np.empty(64, dtype=np.int64)
    out_v = np.empty(64, dtype=np.int64)
    m = 0
    i = start
    while True:
        status, i, level, need, off, m = _change_loop(
            B, ch_rel, ch_rows, ch_w, i, m, dcounts, S, LO0, HI0, keys, order, sizes, n_slots, level_slots,
            level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col, term_levels, term_parts, term_seed,
            first_part, term_rel, term_view, out_cols, rel_idx, idx_state, idx_change, idx_cols, mx, vals, wts, RLO,
            RHI, lo, hi, cur, hits, best, path, prow, reserve, none, saved, out_k, out_w, out_v)
        if status != FULL:
            break
        out_k, out_w, out_v = _grow(out_k, out_w, out_v, m)
    if status == NEED_ROOM:
        return NEED_ROOM, i, level, need, off, out_k[:m], out_w[:m], out_v[:m]
    if status == OVERFLOW:
        return OVERFLOW, i, 0, 0, 0, out_k[:0], out_w[:0], out_v[:0]
    for v in range(n_views + 1):
        counts[v] += dcounts[v]
    keys, weights, views = _consolidate(out_k, out_w, out_v, m)
    return OK, ch_w.shape[0], 0, 0, 0, keys, weights, views


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
