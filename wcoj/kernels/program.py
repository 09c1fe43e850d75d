"""The join program: Generic Join over tries, every level in one compiled call.

A join is described by *slots*: one per (level, participating part), rows of the table
``S`` (``int64[n_slots, SLOT_FIELDS]``). A slot's first six fields copy the part's table
row for the atom's column at that level (``memory``: the addresses of its values and of
its children's starts and ends, or of the leaf weights; level 0's size, base and dense
flag), then ``LAST`` (the column is the atom's last), ``COL`` (the part's column in the
frontier's range arrays) and ``UNIT`` (every leaf weight of the part is 1). Level ``l``
owns slots ``level_slots[l]:level_slots[l + 1]``, grouped by atom:
``atom_bounds[level_atoms[l]:level_atoms[l + 1]]`` are the atoms' first slots followed by
the level's end. ``<`` filters narrow ranges: ``bnd_col[i]``, ``bnd_upper[i]`` for ``i``
in ``bnd_off[l]:bnd_off[l + 1]`` (upper 0: the value must exceed the bound column, 1:
stay below it). ``!=`` filters skip candidates: the value must differ from column
``ne_col[i]`` for ``i`` in ``ne_off[l]:ne_off[l + 1]``. Together these arrays are the
*program* (``wcoj.generic_join`` builds it from a plan, once per plan and parts).

Per row and level, the atom with the fewest candidates proposes and the others are
searched (galloping with a cursor that only moves forward; a dense level 0 is read at
``value - base``, one access); an atom's weight multiplies in at its last column.

* ``run_levels`` / ``levels_from``: breadth first, the frontier after each level written
  in full (a batch join; its last two levels may be counted instead, ``count``);
* ``run_terms``: the terms of a delta rule one after the other, each a whole join whose
  first levels walk its delta atom's tuples (``_seed``);
* ``wcoj.kernels.tick``: the same program depth first, one change at a time.

Inputs are int64 only; the caller keeps the tries alive. Numba's cache does not see
edits to the helpers imported from ``memory``, ``search`` and ``zsets``: clear
``__pycache__`` after editing those.
"""

import numpy as np

from .memory import ROOM, grown, kernel, load, prefetch, row_kernel
from .search import bsearch, gallop, narrow
from .zsets import _add_overflows, _mul_overflows

__all__ = ["SLOT_FIELDS", "SV", "SN", "SLO", "SHI", "SBASE", "SDENSE", "SLAST", "SCOL", "SUNIT", "TOO_BIG",
           "slot_table", "run_levels", "levels_from", "run_terms", "seed_value"]

SLOT_FIELDS = 9
SV, SN, SLO, SHI, SBASE, SDENSE, SLAST, SCOL, SUNIT = range(SLOT_FIELDS)  # SV..SDENSE: the table's V..DENSE
TOO_BIG = -(1 << 62)  # status: a level's frontier would exceed the row limit
AHEAD = 8  # values of a proposer whose lookups in other atoms are prefetched ahead
GROW, OVERFLOW = 1, 2  # _extend_rows stopped: the next frontier must grow, or a weight overflowed


@row_kernel
def _present(S, s, p):
    """Whether position ``p`` of a dense level-0 slot holds a value."""
    if S[s, SLAST] != 0:
        return load(S[s, SLO], p) != 0
    return load(S[s, SLO], p) < load(S[s, SHI], p)


@row_kernel
def _find(S, s, lo, hi, cur, x):
    """Position of ``x`` in slot ``s``'s range ``[lo, hi)``, or -1: one access in a dense
    level 0; else a search from the cursor ``cur`` (a binary search over a fresh whole
    level 0, galloping otherwise). Returns ``(position, new cursor)``."""
    if S[s, SDENSE] != 0:
        p = x - S[s, SBASE]
        if lo <= p < hi and _present(S, s, p):
            return p, cur
        return -1, cur
    if S[s, SN] <= 0 or cur > lo or hi < S[s, SN]:
        p = gallop(S[s, SV], cur, hi, x)
    else:
        p = bsearch(S[s, SV], lo, hi, x)
    if p < hi and load(S[s, SV], p) == x:
        return p, p
    return -1, p


@row_kernel
def _descend(S, s, h, NLO, NHI, m):
    """Row ``m``'s range for slot ``s``'s part below its position ``h`` (empty at its last
    column or when absent)."""
    c = S[s, SCOL]
    if S[s, SLAST] == 0 and h >= 0:
        NLO[m, c] = load(S[s, SLO], h)
        NHI[m, c] = load(S[s, SHI], h)
    else:
        NLO[m, c] = 0
        NHI[m, c] = 0


@row_kernel
def _candidates(l, S, level_slots, ab, a0, n_atoms, bnd_off, bnd_col, bnd_upper, LO, HI, r, bound, br, lo, hi):
    """Frontier row ``r``'s ranges for level ``l`` into ``lo``/``hi`` and its proposer:
    ``(atom, candidates)``, or ``(-1, 0)`` when an atom has none. ``bound[br]`` holds the
    values bound so far.

    The proposer is the atom with the fewest values before the level's ``<`` filters, and
    only its ranges are narrowed by them: every value the level accepts is one it proposes,
    so narrowing the others changes no result, and it would cost a search per part and
    row; worse, a narrowed dense range would still be read at ``value - base``, but a
    narrowed sorted one loses its binary search over the whole level.
    """
    s0 = level_slots[l]
    for j in range(level_slots[l + 1] - s0):
        c = S[s0 + j, SCOL]
        lo[j] = LO[r, c]
        hi[j] = HI[r, c]
    best, size = -1, 0
    for a in range(n_atoms):
        n = 0
        for j in range(ab[a0 + a] - s0, ab[a0 + a + 1] - s0):
            n += hi[j] - lo[j]
        if n == 0:
            return -1, 0
        if best < 0 or n < size:
            best, size = a, n
    if bnd_off[l] == bnd_off[l + 1]:
        return best, size
    size = 0
    for j in range(ab[a0 + best] - s0, ab[a0 + best + 1] - s0):
        for i in range(bnd_off[l], bnd_off[l + 1]):
            lo[j], hi[j] = narrow(S[s0 + j, SV], lo[j], hi[j], bound[br, bnd_col[i]], bnd_upper[i] != 0)
        size += hi[j] - lo[j]
    return (best, size) if size > 0 else (-1, 0)


@row_kernel
def _prefetch_lookups(S, s0, ab, a0, n_atoms, best, i, ahead):
    """For ``_next``: prefetch, in every other atom's dense parts, the child range of the
    proposer's (one part, slot ``ab[a0 + best]``) value at ``i + 2 * ahead`` and the
    first children of its value at ``i + ahead``: on a large graph each of those misses
    the cache, and a tick's values come in order from its delta."""
    sp = ab[a0 + best]
    va, n = S[sp, SV], abs(S[sp, SN])  # past the row's range, but inside the level's arrays
    for a in range(n_atoms):
        if a == best:
            continue
        for s in range(ab[a0 + a], ab[a0 + a + 1]):
            if S[s, SDENSE] == 0 or S[s, SLAST] != 0:
                continue
            if i + 2 * ahead < n:
                k = load(va, i + 2 * ahead) - S[s, SBASE]
                if 0 <= k < S[s, SN]:
                    prefetch(S[s, SLO] + 8 * k)
                    prefetch(S[s, SHI] + 8 * k)
            if i + ahead < n:
                k = load(va, i + ahead) - S[s, SBASE]
                if 0 <= k < S[s, SN]:
                    prefetch(S[s, SV] + 8 * load(S[s, SLO], k))


@row_kernel
def _next(S, s0, ab, a0, n_atoms, best, lo, hi, cur, hits, ahead):
    """The next value every atom holds, each slot's position in ``hits`` (-1 absent).

    The proposer's parts are merged in order (a dense part's absent positions skipped);
    every other part is looked up (``_find``). With ``ahead`` > 0 and a proposer of one
    sorted part, the lookups of the values ahead are prefetched (``_prefetch_lookups``).
    """
    p0, p1 = ab[a0 + best] - s0, ab[a0 + best + 1] - s0
    if p1 - p0 != 1 or hi[p0] - lo[p0] <= ahead or S[s0 + p0, SDENSE] != 0:
        ahead = 0  # a dense proposer's values are its positions: the lookups run in order
    while True:
        have = False
        x = 0
        for j in range(p0, p1):
            s = s0 + j
            if S[s, SDENSE] != 0:
                while cur[j] < hi[j] and not _present(S, s, cur[j]):
                    cur[j] += 1
            if cur[j] < hi[j]:
                v = load(S[s, SV], cur[j])
                if not have or v < x:
                    x, have = v, True
        if not have:
            return False, x
        if ahead > 0:
            _prefetch_lookups(S, s0, ab, a0, n_atoms, best, cur[p0], ahead)
        for j in range(p0, p1):
            if cur[j] < hi[j] and load(S[s0 + j, SV], cur[j]) == x:
                hits[j] = cur[j]
                cur[j] += 1
            else:
                hits[j] = -1
        ok = True
        for a in range(n_atoms):
            if a == best:
                continue
            found = False
            for j in range(ab[a0 + a] - s0, ab[a0 + a + 1] - s0):
                p, cur[j] = _find(S, s0 + j, lo[j], hi[j], cur[j], x)
                hits[j] = p
                found = found or p >= 0
            if not found:
                ok = False
                break
        if ok:
            return True, x


@row_kernel
def _distinct(x, bound, r, ne_off, ne_col, l):
    """Whether ``x`` differs from every column level ``l``'s ``!=`` filters name."""
    for i in range(ne_off[l], ne_off[l + 1]):
        if bound[r, ne_col[i]] == x:
            return False
    return True


@row_kernel
def _weight(wt, S, s0, ab, a0, n_atoms, hits):
    """``wt`` times each ending atom's summed leaf weight; ``(False, _)`` on overflow."""
    for a in range(n_atoms):
        q0 = ab[a0 + a]
        if S[q0, SLAST] == 0:
            continue
        if ab[a0 + a + 1] - q0 == 1 and S[q0, SUNIT] != 0:  # one part, a set: weight 1
            continue
        s = np.int64(0)
        for q in range(q0, ab[a0 + a + 1]):
            h = hits[q - s0]
            if h >= 0:
                lw = load(S[q, SLO], h)
                if _add_overflows(s, lw):
                    return False, wt
                s += lw
        if _mul_overflows(wt, s):
            return False, wt
        wt *= s
        if wt == 0:
            return True, wt
    return True, wt


@row_kernel
def _extend_rows(l, r, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                 bound, w, LO, HI, nb, nw, NLO, NHI, m, limit, lo, hi, cur, hits):
    """Extend the frontier's rows from ``r`` on at level ``l`` into ``nb``/``nw``/``NLO``/``NHI``
    from row ``m`` on, until a row might not fit: ``(code, r, m, need)``, ``code`` 0 when
    every row is done, ``GROW`` when row ``r`` needs room for ``need`` rows, ``OVERFLOW``
    when row ``r``'s weight product overflows, ``TOO_BIG`` at the row limit.

    The loop of ``levels_from`` over a level's rows, kept apart because ``levels_from``
    allocates (it needs Numba's reference counting) and this loop does not.
    """
    n = bound.shape[0]
    P = LO.shape[1]
    cap = nb.shape[0]
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    ahead = np.int64(0)
    for s in range(s0, s1):
        if S[s, SDENSE] != 0:
            ahead = np.int64(AHEAD)
    while r < n:
        best, size = _candidates(l, S, level_slots, atom_bounds, a0, n_atoms, bnd_off, bnd_col, bnd_upper, LO, HI,
                                 r, bound, r, lo, hi)
        if best < 0:
            r += 1
            continue
        need = min(m + size, limit)  # this row emits at most `size` rows
        if need > cap:
            return GROW, r, m, need
        for j in range(s1 - s0):
            cur[j] = lo[j]
        while True:
            ok, x = _next(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, ahead)
            if not ok:
                break
            if not _distinct(x, bound, r, ne_off, ne_col, l):
                continue
            fine, wt = _weight(w[r], S, s0, atom_bounds, a0, n_atoms, hits)
            if not fine:
                return OVERFLOW, r, m, 0
            if wt == 0:
                continue
            if m == limit:
                return TOO_BIG, r, m, 0
            for c in range(l):
                nb[m, c] = bound[r, c]
            nb[m, l] = x
            for p in range(P):
                NLO[m, p] = LO[r, p]
                NHI[m, p] = HI[r, p]
            for j in range(s1 - s0):
                _descend(S, s0 + j, hits[j], NLO, NHI, m)
            nw[m] = wt
            m += 1
        r += 1
    return 0, r, m, 0


@kernel
def levels_from(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                bound, w, LO, HI, stop_level, limit):
    """Extend the frontier ``bound``/``w``/``LO``/``HI`` (the values of the levels before
    ``bound.shape[1]``, the rows' weights and per part their ranges) through the levels
    before ``stop_level``, breadth first.

    Returns ``(status, bound, w, LO, HI)``: ``status`` is the number of rows, ``-1 - r``
    when a weight product of row ``r`` of some level overflows int64 (``bound`` is then
    that level's input), or ``TOO_BIG`` when a level's frontier would exceed ``limit``
    rows (``bound`` is then that level's input: the caller goes on depth first). The
    frontier grows as rows are found, so the limit bounds memory, not the work.
    """
    P = LO.shape[1]
    smax = 1
    for l in range(stop_level):
        smax = max(smax, level_slots[l + 1] - level_slots[l])
    lo = np.empty(smax, dtype=np.int64)
    hi = np.empty(smax, dtype=np.int64)
    cur = np.empty(smax, dtype=np.int64)
    hits = np.empty(smax, dtype=np.int64)
    for l in range(bound.shape[1], stop_level):
        n = bound.shape[0]
        if n == 0:
            break
        # one pass: the next frontier grows by doubling, up to the limit (a counting pass
        # first would repeat every row's searches, and at large frontiers their misses)
        cap = min(max(2 * n, 64), limit)
        nb = np.empty((cap, l + 1), dtype=np.int64)
        nw = np.empty(cap, dtype=np.int64)
        NLO = np.empty((cap, P), dtype=np.int64)
        NHI = np.empty((cap, P), dtype=np.int64)
        m = r = np.int64(0)
        while True:
            code, r, m, need = _extend_rows(l, r, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col,
                                            bnd_upper, ne_off, ne_col, bound, w, LO, HI, nb, nw, NLO, NHI, m,
                                            limit, lo, hi, cur, hits)
            if code == GROW:
                cap = min(max(2 * cap, need), limit)
                nb, nw, NLO, NHI = grown(nb, m, cap), grown(nw, m, cap), grown(NLO, m, cap), grown(NHI, m, cap)
            elif code == OVERFLOW:
                return -1 - r, bound, w, LO, HI
            elif code == TOO_BIG:
                return TOO_BIG, bound, w, LO, HI
            else:
                break
        bound, w, LO, HI = nb[:m], nw[:m], NLO[:m], NHI[:m]
    if bound.shape[1] < stop_level:  # the frontier emptied early: no rows, full width
        bound = np.zeros((0, stop_level), dtype=np.int64)
    return bound.shape[0], bound, w, LO, HI


@kernel
def run_levels(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
               LO0, HI0, stop_level, limit):
    """``levels_from`` from one empty prefix whose part ranges are ``LO0``/``HI0``."""
    P = LO0.shape[0]
    return levels_from(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                       np.zeros((1, 0), dtype=np.int64), np.ones(1, dtype=np.int64),
                       LO0.copy().reshape(1, P), HI0.copy().reshape(1, P), stop_level, limit)


@row_kernel
def seed_value(a, l, x, dpos, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off,
               ne_col, dcol, vals, wts, RLO, RHI, hits, cur):
    """One seeded level: whether the delta part's value ``x`` (at its position ``dpos``)
    at level ``l`` (the program's level ``a + l``) passes the level's filters against
    ``vals[0, :l]`` and every other atom holds it in the ranges ``RLO[l]``/``RHI[l]``
    (searched from the cursors ``cur[l]``, which only move forward); then the ranges
    under ``x`` into ``RLO[l + 1]``/``RHI[l + 1]`` and the weight so far into
    ``wts[l + 1]``. Returns ``(ok, overflowed)``. ``dcol``: the delta part's column in
    the ranges."""
    g = a + l
    s0, s1 = level_slots[g], level_slots[g + 1]
    for i in range(bnd_off[g], bnd_off[g + 1]):
        b = vals[0, bnd_col[i]]
        if (x >= b) if bnd_upper[i] != 0 else (x <= b):
            return False, False
    if not _distinct(x, vals, 0, ne_off, ne_col, g):
        return False, False
    a0 = level_atoms[g]
    n_atoms = level_atoms[g + 1] - a0 - 1
    for a in range(n_atoms):
        found = False
        for s in range(atom_bounds[a0 + a], atom_bounds[a0 + a + 1]):
            j = s - s0
            c = S[s, SCOL]
            if c == dcol:
                p = dpos
            else:
                p, cur[l, j] = _find(S, s, RLO[l, c], RHI[l, c], cur[l, j], x)
            hits[j] = p
            found = found or p >= 0
        if not found:
            return False, False
    fine, wt = _weight(wts[l], S, s0, atom_bounds, a0, n_atoms, hits)
    if not fine:
        return False, True
    if wt == 0:
        return False, False
    wts[l + 1] = wt
    for p in range(RLO.shape[1]):
        RLO[l + 1, p] = RLO[l, p]
        RHI[l + 1, p] = RHI[l, p]
    for j in range(s1 - s0):
        _descend(S, s0 + j, hits[j], RLO, RHI, l + 1)
    return True, False


@row_kernel
def _seed_walk(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col, seed, dcol,
               ds, pos, end, cur, vals, wts, RLO, RHI, hits, nb, nw, NLO, NHI):
    """``_seed``'s walk (which allocates, so needs Numba's reference counting; this loop
    does not): ``(rows written, -1)``, or ``(-1, level)`` when a weight product
    overflows at that level."""
    P = RLO.shape[1]
    m = 0
    l = 0
    while l >= 0:
        q = pos[l]
        if q >= end[l]:
            l -= 1
            if l >= 0:
                pos[l] += 1
            continue
        x = load(S[ds[l], SV], q)
        ok, bad = seed_value(0, l, x, q, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                             ne_off, ne_col, dcol, vals, wts, RLO, RHI, hits, cur)
        if bad:
            return -1, l
        if ok:
            vals[0, l] = x
            if l < seed - 1:
                l += 1
                pos[l], end[l] = RLO[l, dcol], RHI[l, dcol]
                for j in range(level_slots[l + 1] - level_slots[l]):
                    cur[l, j] = RLO[l, S[level_slots[l] + j, SCOL]]
                continue
            for c in range(seed):
                nb[m, c] = vals[0, c]
            nw[m] = wts[seed]
            for p in range(P):
                NLO[m, p] = RLO[seed, p]
                NHI[m, p] = RHI[seed, p]
            m += 1
        pos[l] += 1
    return m, -1


@kernel
def _seed(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col, LO0, HI0,
          seed, dcol, limit):
    """``run_levels(..., seed, limit)`` when levels ``0 .. seed - 1`` bind the columns of
    one atom of one part, column ``dcol`` (a delta term's delta atom; ``seed`` is its
    arity): the frontier is that part's tuples under its range ``LO0[dcol]:HI0[dcol]``
    which pass the levels' filters and which every other atom of those levels holds.

    The generic levels would find the same rows in the same order, but per row they
    pick a proposer, merge its parts with cursors and search every other part, where a
    delta's value only needs one lookup per other part. The part's trie is walked depth
    first, the other atoms' ranges kept per level.
    """
    P = LO0.shape[0]
    ds = np.zeros(seed, dtype=np.int64)   # per level: the delta part's slot
    smax = 1
    for l in range(seed):
        smax = max(smax, level_slots[l + 1] - level_slots[l])
        for s in range(level_slots[l], level_slots[l + 1]):
            if S[s, SCOL] == dcol:
                ds[l] = s
    a, b = LO0[dcol], HI0[dcol]
    for l in range(seed - 1):  # the tuples under the range: at most this many rows
        if b > a:
            a, b = load(S[ds[l], SLO], a), load(S[ds[l], SHI], b - 1)
    n = max(b - a, 0)
    vals = np.zeros((1, seed), dtype=np.int64)
    if n > limit:
        return TOO_BIG, vals, np.ones(1, dtype=np.int64), LO0.reshape(1, P), HI0.reshape(1, P)
    nb = np.empty((n, seed), dtype=np.int64)
    nw = np.empty(n, dtype=np.int64)
    NLO = np.empty((n, P), dtype=np.int64)
    NHI = np.empty((n, P), dtype=np.int64)
    RLO = np.empty((seed + 1, P), dtype=np.int64)
    RHI = np.empty((seed + 1, P), dtype=np.int64)
    for p in range(P):
        RLO[0, p] = LO0[p]
        RHI[0, p] = HI0[p]
    wts = np.ones(seed + 1, dtype=np.int64)
    hits = np.empty(smax, dtype=np.int64)
    pos = np.zeros(seed, dtype=np.int64)
    end = np.zeros(seed, dtype=np.int64)
    pos[0], end[0] = LO0[dcol], HI0[dcol]
    cur = np.empty((seed, smax), dtype=np.int64)
    for j in range(level_slots[1] - level_slots[0]):
        cur[0, j] = LO0[S[level_slots[0] + j, SCOL]]
    m, l = _seed_walk(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                      seed, dcol, ds, pos, end, cur, vals, wts, RLO, RHI, hits, nb, nw, NLO, NHI)
    if m < 0:  # a weight product overflowed at level l: its prefix
        return np.int64(-1), vals[:, :l].copy(), wts[l:l + 1].copy(), RLO[l:l + 1].copy(), RHI[l:l + 1].copy()
    return np.int64(m), nb[:m], nw[:m], NLO[:m], NHI[:m]


@kernel
def slot_table(T, at, deep, fixed, part_rows):
    """The slot table of a join program from its parts' stacked table rows ``T``: slot
    ``s`` copies the first six fields of row ``at[s]`` (level-0 fields zeroed when
    ``deep[s]``: its column is not the part's level 0) and ``fixed[s]`` into ``LAST,
    COL, UNIT``; a deep slot's ``N`` is minus its level's room. Also returns the parts' whole level-0 ranges ``(lo, hi)``."""
    n = at.shape[0]
    S = np.empty((n, SLOT_FIELDS), dtype=np.int64)
    for s in range(n):
        for f in range(SDENSE + 1):
            S[s, f] = T[at[s], f]
        if deep[s]:
            S[s, SN] = -T[at[s], ROOM]  # (negative: not a level 0; the room bounds prefetches)
            S[s, SBASE] = 0
            S[s, SDENSE] = 0
        S[s, SLAST] = fixed[s, 0]
        S[s, SCOL] = fixed[s, 1]
        S[s, SUNIT] = fixed[s, 2]
    hi = np.empty(part_rows.shape[0], dtype=np.int64)
    for q in range(part_rows.shape[0]):
        hi[q] = T[part_rows[q], SN]
    return S, np.zeros_like(hi), hi


@kernel
def run_terms(T, at, deep, fixed, part_rows, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
              ne_off, ne_col, term_levels, term_parts, out_cols, limit, first_part, term_seed, share, shares):
    """Every term of a delta rule, each a whole join, in one call, over the slot table
    ``slot_table(T, at, deep, fixed, part_rows)``.

    The terms' slot programs are concatenated: term ``t`` owns entries
    ``term_levels[t]:term_levels[t + 1]`` of ``level_slots``, ``level_atoms``, ``bnd_off``
    and ``ne_off`` (their values index the shared ``S``, ``atom_bounds``, ``bnd_col`` and
    ``ne_col`` directly), and parts ``term_parts[t]:term_parts[t + 1]`` of the ranges
    (``S[s, COL]`` counts from the term's first part). Row ``i`` of term ``t``'s result is
    written as ``bound[i, out_cols[t, c]]`` for each output column ``c``. When
    ``term_seed[t]`` > 0, the term's first ``term_seed[t]`` levels bind the columns of its
    delta atom, of one part, ``first_part[t]``: they are found by ``_seed``.

    With ``shares > 1``, only share ``share`` of each term's rows: the level-0 range of
    part ``first_part[t]`` (its delta atom's) is cut into ``shares`` equal slices and
    slice ``share`` kept, so the shares of a large tick partition its rows and can run
    on several threads.

    Returns ``(status, term, keys, w)``: the rows of every term one after the other
    (unconsolidated; several terms may emit the same row), or ``status < 0`` and the
    term it concerns (``TOO_BIG`` or an overflow, as from ``levels_from``).
    """
    S, LO0, HI0 = slot_table(T, at, deep, fixed, part_rows)
    if shares > 1:
        for t in range(first_part.shape[0]):
            p = first_part[t]
            n0 = HI0[p]
            LO0[p], HI0[p] = n0 * share // shares, n0 * (share + 1) // shares
    n_terms = term_levels.shape[0] - 1
    n_out = out_cols.shape[1]
    outs = []
    weights = []
    total = 0
    for t in range(n_terms):
        a, b = term_levels[t], term_levels[t + 1]
        p0, p1 = term_parts[t], term_parts[t + 1]
        if term_seed[t] > 0:
            status, bound, w, LO, HI = _seed(S, level_slots[a:b], level_atoms[a:b], atom_bounds, bnd_off[a:b],
                                             bnd_col, bnd_upper, ne_off[a:b], ne_col, LO0[p0:p1], HI0[p0:p1],
                                             term_seed[t], first_part[t] - p0, limit)
            if status >= 0:
                status, bound, w, _, _ = levels_from(S, level_slots[a:b], level_atoms[a:b], atom_bounds,
                                                     bnd_off[a:b], bnd_col, bnd_upper, ne_off[a:b], ne_col,
                                                     bound, w, LO, HI, b - a - 1, limit)
        else:
            status, bound, w, _, _ = run_levels(S, level_slots[a:b], level_atoms[a:b], atom_bounds,
                                                bnd_off[a:b], bnd_col, bnd_upper, ne_off[a:b], ne_col,
                                                LO0[p0:p1], HI0[p0:p1], b - a - 1, limit)
        if status < 0:
            return status, t, np.zeros((0, n_out), dtype=np.int64), np.zeros(0, dtype=np.int64)
        outs.append(bound)
        weights.append(w)
        total += bound.shape[0]
    keys = np.empty((total, n_out), dtype=np.int64)
    wt = np.empty(total, dtype=np.int64)
    m = 0
    for t in range(n_terms):
        bound = outs[t]
        for i in range(bound.shape[0]):
            for c in range(n_out):
                keys[m, c] = bound[i, out_cols[t, c]]
            wt[m] = weights[t][i]
            m += 1
    return np.int64(total), np.int64(-1), keys, wt
