"""Counting a join's last two levels without writing them (the join program's count mode),
and listing them the same way (``list_tail``).

A count needs no result rows, so ``count_tail`` takes the frontier two levels (or one)
before the end and, per row, extends the second-to-last level one match at a time and
counts the last level under each match at once. When the last level has two atoms of
one set part each, one of them fixed per row (its part takes no part in the level
before), ``count_marked`` marks the fixed side once per row in a byte map and every
match of the level before probes the other side's values against it: O(|other|) per
match, instead of a merge that walks both lists (a hub's neighbour list would be walked
once per match). The two are separate kernels so that a job compiles only the one its
counts take (a cold triangle count compiles no merge of the last level).
When, moreover, the level before has a triangle's shape (the value one atom proposes is
read in the other's dense level 0, whose children are the probing side), the loop
prefetches the child ranges and the first children of the values ahead, so the cache
misses of a large graph overlap (``_probe_row``).

Inputs are int64 only; the program and frontier are ``program``'s.
"""

import numpy as np

from .memory import grown, kernel, load, prefetch, row_kernel
from .program import (GROW, OVERFLOW, SBASE, SCOL, SDENSE, SHI, SLAST, SLO, SN, SUNIT, SV, _candidates, _distinct,
                      _next, _weight)
from .search import gallop, narrow
from .zsets import _add_overflows, _mul_overflows

__all__ = ["count_tail", "count_marked", "list_tail"]

PROBE_AHEAD = 8  # values between the prefetch stages of _probe_row
GALLOP_RATIO = 32  # a two-part count gallops through the longer side past this size ratio


@row_kernel
def _count_two(S, sa, la, ha, sb, lb, hb):
    """Sum over the common values of two single-part ranges of the product of their leaf
    weights (the count itself when both parts are sets). Returns ``(ok, sum)``."""
    acc = np.int64(0)
    if ha <= la or hb <= lb:
        return True, acc
    if ha - la > hb - lb:  # walk the shorter side
        sa, la, ha, sb, lb, hb = sb, lb, hb, sa, la, ha
    va, vb = S[sa, SV], S[sb, SV]
    unit = S[sa, SUNIT] != 0 and S[sb, SUNIT] != 0
    fast = (hb - lb) >= GALLOP_RATIO * (ha - la)
    j = lb
    for i in range(la, ha):
        x = load(va, i)
        if fast:
            j = gallop(vb, j, hb, x)
        else:
            while j < hb and load(vb, j) < x:
                j += 1
        if j >= hb:
            break
        if load(vb, j) == x:
            if unit:
                acc += 1
            else:
                wa, wb = load(S[sa, SLO], i), load(S[sb, SLO], j)
                if _mul_overflows(wa, wb) or _add_overflows(acc, wa * wb):
                    return False, acc
                acc += wa * wb
            j += 1
    return True, acc


@row_kernel
def _match(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, bound, r, ne_off, ne_col, l, w0):
    """The next match ``x`` of level ``l`` (slots from ``s0``, cursors ``cur``) for frontier
    row ``r`` that passes the level's ``!=`` filters and whose weight ``wt`` (``w0`` times
    the atoms' weights) is not 0: ``(1, x, wt)``; ``(0, 0, 0)`` when the level has no more,
    ``(-1, 0, 0)`` when a weight product overflows. The loop every count and listing runs
    over a level's matches."""
    while True:
        ok, x = _next(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, np.int64(0))
        if not ok:
            return 0, np.int64(0), np.int64(0)
        if not _distinct(x, bound, r, ne_off, ne_col, l):
            continue
        fine, wt = _weight(w0, S, s0, atom_bounds, a0, n_atoms, hits)
        if not fine:
            return -1, np.int64(0), np.int64(0)
        if wt != 0:
            return 1, x, wt


@row_kernel
def _count_last(l, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                ne_off, ne_col, LO, HI, bound, r, lo, hi, cur, hits):
    """Sum over the last level's matches of row ``r`` of the product of atom weights.

    Returns ``(ok, sum)``; ``ok`` False on overflow.
    """
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    best, _ = _candidates(l, S, level_slots, atom_bounds, a0, n_atoms, bnd_off, bnd_col, bnd_upper, LO, HI, r,
                          bound, r, lo, hi)
    acc = np.int64(0)
    if best < 0:
        return True, acc
    if s1 - s0 == 2 and n_atoms == 2 and ne_off[l] == ne_off[l + 1] and S[s0, SDENSE] == 0 \
            and S[s0 + 1, SDENSE] == 0:  # a tight merge (the proposer's range is narrowed)
        for i in range(bnd_off[l], bnd_off[l + 1]):
            for j in range(2):
                lo[j], hi[j] = narrow(S[s0 + j, SV], lo[j], hi[j], bound[r, bnd_col[i]], bnd_upper[i] != 0)
        return _count_two(S, s0, lo[0], hi[0], s0 + 1, lo[1], hi[1])
    for j in range(s1 - s0):
        cur[j] = lo[j]
    while True:
        code, x, p = _match(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, bound, r, ne_off, ne_col, l,
                            np.int64(1))
        if code == 0:
            return True, acc
        if code < 0 or _add_overflows(acc, p):
            return False, acc
        acc += p


@row_kernel
def _probe_row(S, sp, pl, ph, sd, sg, sf, fl, fh, mark, mark_lo, mark_size, b0, b1, bnd_col, bnd_upper,
               bound, r, L):
    """One row's count over its last two levels when they have a triangle's shape: each
    value ``x`` the proposing slot ``sp`` holds in ``[pl, ph)`` is read in the dense
    level 0 of slot ``sd``, whose children (slot ``sg``, narrowed by the ``<`` bounds
    ``b0:b1``; column ``L`` is ``x``) are probed against the byte map of the fixed slot
    ``sf``'s range ``[fl, fh)``. Returns ``(ok, count)``.

    The child ranges and the first children of the values ahead are prefetched in two
    stages: on a large graph every lookup misses the cache, and this lets the misses of
    several values overlap instead of queueing one by one.
    """
    va, base, n0, los, his, ga = S[sp, SV], S[sd, SBASE], S[sd, SN], S[sd, SLO], S[sd, SHI], S[sg, SV]
    end = abs(S[sp, SN])  # prefetch past ph: a batch's next rows' ranges follow this one's
    acc = np.int64(0)
    for i in range(pl, ph):
        if i + 2 * PROBE_AHEAD < end:
            k = load(va, i + 2 * PROBE_AHEAD) - base
            if 0 <= k < n0:
                prefetch(los + 8 * k)
                prefetch(his + 8 * k)
        if i + PROBE_AHEAD < end:
            k = load(va, i + PROBE_AHEAD) - base
            if 0 <= k < n0:
                prefetch(ga + 8 * load(los, k))
        k = load(va, i) - base
        if k < 0 or k >= n0:
            continue
        gl, gh = load(los, k), load(his, k)
        if gl >= gh:
            continue
        x = k + base
        for b in range(b0, b1):
            c = bnd_col[b]
            gl, gh = narrow(ga, gl, gh, x if c == L else bound[r, c], bnd_upper[b] != 0)
        if gh - gl > 8 * (fh - fl) + 16:  # a long list against a short one
            ok, s = _count_two(S, sf, fl, fh, sg, gl, gh)
            if not ok:
                return False, acc
        else:
            s = np.int64(0)
            for j in range(gl, gh):
                v = load(ga, j) - mark_lo
                if 0 <= v < mark_size:
                    s += mark[v]
        acc += s
    return True, acc


@row_kernel
def _probe_range(S, s0, s1, g_slot, hits, LO, HI, r, bound, x, bnd_off, bnd_col, bnd_upper, l):
    """The range of the probing slot ``g_slot`` under the match ``x`` of level ``l`` (slots
    ``s0:s1``, their positions ``hits``) for frontier row ``r``: the row's range of its
    part, or the children under ``x`` of the level's slot that reads the same part,
    narrowed by the last level's ``<`` bounds (column ``L`` is ``x``)."""
    L = bound.shape[1]
    gc = S[g_slot, SCOL]
    gl, gh = LO[r, gc], HI[r, gc]
    for j in range(s1 - s0):
        if S[s0 + j, SCOL] == gc:
            h = hits[j]
            if S[s0 + j, SLAST] == 0 and h >= 0:
                gl, gh = load(S[s0 + j, SLO], h), load(S[s0 + j, SHI], h)
            else:
                gl, gh = np.int64(0), np.int64(0)
    ga = S[g_slot, SV]
    for b in range(bnd_off[l + 1], bnd_off[l + 2]):
        c = bnd_col[b]
        gl, gh = narrow(ga, gl, gh, x if c == L else bound[r, c], bnd_upper[b] != 0)
    return gl, gh


@row_kernel
def _triangle_shape(S, l, s0, s1, n_atoms, ne_off, g_slot):
    """Whether level ``l`` (slots ``s0:s1``) has a triangle's shape before a last level
    probed by ``g_slot``: two atoms of one part each, no ``!=``, one of them (``s0 + jd``)
    a dense level 0 whose part is the probing side's, the other a sparse level whose
    weights need no product. Returns ``(shape, jd)``."""
    if s1 - s0 != 2 or n_atoms != 2 or ne_off[l] != ne_off[l + 1]:
        return False, 0
    for jd in range(2):
        sd, sp = s0 + jd, s0 + 1 - jd
        if (S[sd, SDENSE] != 0 and S[sd, SLAST] == 0 and S[sd, SCOL] == S[g_slot, SCOL]
                and (S[sp, SLAST] == 0 or S[sp, SUNIT] != 0) and S[sp, SDENSE] == 0):
            return True, jd
    return False, 0


@kernel
def count_tail(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
               ne_off, ne_col, bound, w, LO, HI, r0, r1):
    """Weighted count of the completions of frontier rows ``r0:r1`` over the last one or
    two levels (the frontier's width ``L`` is the number of levels minus one or two),
    each last-level count a merge of its atoms (``count_marked`` probes a byte map
    instead, where the last level allows it; a job compiles only the kernel it uses).

    Returns ``(-1, total)`` or ``(r, 0)`` for the first row ``r`` whose count overflows.
    The kernel releases the GIL: ``wcoj.generic_join`` runs row ranges on threads.
    """
    n_levels = level_slots.shape[0] - 1
    L = bound.shape[1]
    P = LO.shape[1]
    smax = 1
    for l in range(L, n_levels):
        smax = max(smax, level_slots[l + 1] - level_slots[l])
    lo = np.empty(smax, dtype=np.int64)
    hi = np.empty(smax, dtype=np.int64)
    cur = np.empty(smax, dtype=np.int64)
    hits = np.empty(smax, dtype=np.int64)
    total = np.int64(0)
    if L == n_levels - 1:  # one level left: count it directly
        for r in range(r0, r1):
            ok, s = _count_last(L, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                                ne_off, ne_col, LO, HI, bound, r, lo, hi, cur, hits)
            if not ok or _mul_overflows(s, w[r]) or _add_overflows(total, s * w[r]):
                return r, np.int64(0)
            total += s * w[r]
        return -1, total
    # two levels left: extend level L row by row and count level L + 1 for each match,
    # without materialising level L's frontier
    l = L
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    lo2 = np.empty(smax, dtype=np.int64)
    hi2 = np.empty(smax, dtype=np.int64)
    cur2 = np.empty(smax, dtype=np.int64)
    hits2 = np.empty(smax, dtype=np.int64)
    one_b = np.empty((1, L + 1), dtype=np.int64)
    one_lo = np.empty((1, P), dtype=np.int64)
    one_hi = np.empty((1, P), dtype=np.int64)
    for r in range(r0, r1):
        best, _ = _candidates(l, S, level_slots, atom_bounds, a0, n_atoms, bnd_off, bnd_col, bnd_upper, LO, HI,
                              r, bound, r, lo, hi)
        if best < 0:
            continue
        for j in range(s1 - s0):
            cur[j] = lo[j]
        for c in range(L):
            one_b[0, c] = bound[r, c]
        for p in range(P):
            one_lo[0, p] = LO[r, p]
            one_hi[0, p] = HI[r, p]
        acc = np.int64(0)
        while True:
            code, x, wt = _match(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, bound, r, ne_off, ne_col,
                                 l, np.int64(1))
            if code == 0:
                break
            if code < 0:
                return r, np.int64(0)
            one_b[0, L] = x
            for j in range(s1 - s0):
                s = s0 + j
                c = S[s, SCOL]
                h = hits[j]
                if S[s, SLAST] == 0 and h >= 0:
                    one_lo[0, c] = load(S[s, SLO], h)
                    one_hi[0, c] = load(S[s, SHI], h)
                else:
                    one_lo[0, c] = 0
                    one_hi[0, c] = 0
            ok2, s = _count_last(l + 1, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col,
                                 bnd_upper, ne_off, ne_col, one_lo, one_hi, one_b, np.int64(0), lo2, hi2,
                                 cur2, hits2)
            if not ok2 or _mul_overflows(s, wt) or _add_overflows(acc, s * wt):
                return r, np.int64(0)
            acc += s * wt
        if _mul_overflows(acc, w[r]) or _add_overflows(total, acc * w[r]):
            return r, np.int64(0)
        total += acc * w[r]
    return -1, total


@kernel
def count_marked(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                 ne_off, ne_col, bound, w, LO, HI, mark_slot, mark_lo, mark_size, r0, r1):
    """``count_tail`` over the last two levels when one last-level slot, ``mark_slot``,
    has a range fixed per row (its part takes no part in the second-to-last level) and
    values in ``[mark_lo, mark_lo + mark_size)``, and the level's other slot is a set
    too: per row, that range is marked once in a byte map and every match of the level
    before probes the other slot's values against it (``_probe_row`` when the level
    before has a triangle's shape).

    Returns ``(-1, total)`` or ``(r, 0)`` for the first row ``r`` whose count overflows.
    The kernel releases the GIL: ``wcoj.generic_join`` runs row ranges on threads.
    """
    L = bound.shape[1]
    l = L
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    smax = max(s1 - s0, 1)
    lo = np.empty(smax, dtype=np.int64)
    hi = np.empty(smax, dtype=np.int64)
    cur = np.empty(smax, dtype=np.int64)
    hits = np.empty(smax, dtype=np.int64)
    total = np.int64(0)
    mark = np.zeros(mark_size, dtype=np.uint8)
    t0 = level_slots[l + 1]
    g_slot = t0 + 1 - (mark_slot - t0)  # the probing slot
    ga, fa = S[g_slot, SV], S[mark_slot, SV]
    # the shape of a triangle's last two levels (see _probe_row): level l has two atoms
    # of one part each, one a dense level 0 whose part is the probing side
    fast, jd = _triangle_shape(S, l, s0, s1, n_atoms, ne_off, g_slot)
    for r in range(r0, r1):
        best, _ = _candidates(l, S, level_slots, atom_bounds, a0, n_atoms, bnd_off, bnd_col, bnd_upper, LO, HI,
                              r, bound, r, lo, hi)
        if best < 0:
            continue
        fl, fh = LO[r, S[mark_slot, SCOL]], HI[r, S[mark_slot, SCOL]]
        for i in range(fl, fh):
            mark[load(fa, i) - mark_lo] = 1
        if fast and best == 1 - jd and lo[jd] == 0 and hi[jd] == S[s0 + jd, SN]:
            ok, acc = _probe_row(S, s0 + 1 - jd, lo[1 - jd], hi[1 - jd], s0 + jd, g_slot, mark_slot, fl,
                                 fh, mark, mark_lo, mark_size, bnd_off[l + 1], bnd_off[l + 2], bnd_col,
                                 bnd_upper, bound, r, L)
            if not ok:
                return r, np.int64(0)
        else:
            for j in range(s1 - s0):
                cur[j] = lo[j]
            acc = np.int64(0)
            while True:
                code, x, wt = _match(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, bound, r, ne_off,
                                     ne_col, l, np.int64(1))
                if code == 0:
                    break
                if code < 0:
                    return r, np.int64(0)
                # only the probing side is narrowed by the level's bounds: they constrain
                # the value itself, so the fixed side's membership needs no narrowing
                gl, gh = _probe_range(S, s0, s1, g_slot, hits, LO, HI, r, bound, x, bnd_off, bnd_col, bnd_upper, l)
                if gh - gl > 8 * (fh - fl) + 16:  # a long list against a short one
                    ok2, s = _count_two(S, mark_slot, fl, fh, g_slot, gl, gh)
                    if not ok2:
                        return r, np.int64(0)
                else:
                    s = np.int64(0)
                    for k in range(gl, gh):
                        v = load(ga, k) - mark_lo
                        if 0 <= v < mark_size:
                            s += mark[v]
                if _mul_overflows(s, wt) or _add_overflows(acc, s * wt):
                    return r, np.int64(0)
                acc += s * wt
        for i in range(fl, fh):
            mark[load(fa, i) - mark_lo] = 0
        if _mul_overflows(acc, w[r]) or _add_overflows(total, acc * w[r]):
            return r, np.int64(0)
        total += acc * w[r]
    return -1, total


@row_kernel
def _list_rows(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
               bound, w, LO, HI, mark, mark_slot, mark_lo, mark_size, g_slot, fast, jd, r, limit,
               out_b, out_w, lo, hi, cur, hits):
    """``list_tail``'s loop over frontier rows from ``r`` (it allocates nothing, so it
    needs none of Numba's reference counting): ``(code, r, m)``, ``code`` 0 when done or
    past ``limit`` rows, ``GROW`` when row ``r`` did not fit (its rows are dropped: the
    caller grows the output and calls again from ``r``), ``OVERFLOW`` when row ``r``'s
    weight product overflows."""
    n = bound.shape[0]
    L = bound.shape[1]
    l = L
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    cap = out_w.shape[0]
    ga, fa = S[g_slot, SV], S[mark_slot, SV]
    m = 0
    while r < n:
        best, _ = _candidates(l, S, level_slots, atom_bounds, a0, n_atoms, bnd_off, bnd_col, bnd_upper, LO, HI,
                              r, bound, r, lo, hi)
        fl, fh = LO[r, S[mark_slot, SCOL]], HI[r, S[mark_slot, SCOL]]
        if best < 0 or fh <= fl:
            r += 1
            continue
        for i in range(fl, fh):
            mark[load(fa, i) - mark_lo] = 1
        m0 = m
        code = 0
        if fast and best == 1 - jd and lo[jd] == 0 and hi[jd] == S[s0 + jd, SN]:
            # a triangle's shape (as count_tail's _probe_row): the proposer's values are
            # read in the other atom's dense level 0, whose children are the probing slot.
            # Its probe-and-write loop repeats the general one's below on purpose: shared
            # through a helper or one merged loop, listing took 1.4-2.1 ms instead of 1.2 ms
            sp, sd = s0 + 1 - jd, s0 + jd
            va, base, n0, los, his = S[sp, SV], S[sd, SBASE], S[sd, SN], S[sd, SLO], S[sd, SHI]
            for i in range(lo[1 - jd], hi[1 - jd]):
                k = load(va, i) - base
                if k < 0 or k >= n0:
                    continue
                gl, gh = load(los, k), load(his, k)
                x = k + base
                for b in range(bnd_off[l + 1], bnd_off[l + 2]):
                    c = bnd_col[b]
                    gl, gh = narrow(ga, gl, gh, x if c == L else bound[r, c], bnd_upper[b] != 0)
                for q in range(gl, gh):
                    v = load(ga, q) - mark_lo
                    if 0 <= v < mark_size and mark[v] != 0:
                        if m == cap:
                            code = GROW
                            break
                        for c in range(L):
                            out_b[m, c] = bound[r, c]
                        out_b[m, L] = x
                        out_b[m, L + 1] = v + mark_lo
                        out_w[m] = w[r]
                        m += 1
                if code != 0:
                    break
        else:
            for j in range(s1 - s0):
                cur[j] = lo[j]
            while code == 0:
                found, x, wt = _match(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, bound, r, ne_off,
                                      ne_col, l, w[r])
                if found == 0:
                    break
                if found < 0:
                    code = OVERFLOW
                    break
                gl, gh = _probe_range(S, s0, s1, g_slot, hits, LO, HI, r, bound, x, bnd_off, bnd_col, bnd_upper, l)
                for q in range(gl, gh):
                    v = load(ga, q) - mark_lo
                    if 0 <= v < mark_size and mark[v] != 0:
                        if m == cap:
                            code = GROW
                            break
                        for c in range(L):
                            out_b[m, c] = bound[r, c]
                        out_b[m, L] = x
                        out_b[m, L + 1] = v + mark_lo
                        out_w[m] = wt
                        m += 1
        for i in range(fl, fh):
            mark[load(fa, i) - mark_lo] = 0
        if code != 0:
            return code, r, m0 if code == GROW else m
        r += 1
        if m >= limit:
            break
    return 0, r, m


@kernel
def list_tail(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
              ne_off, ne_col, bound, w, LO, HI, mark_slot, mark_lo, mark_size, r0, limit):
    """The rows of the last two levels under frontier rows ``r0:``, written as
    ``count_tail`` counts them: per row, the fixed last-level slot ``mark_slot`` (a set
    whose values lie in ``[mark_lo, mark_lo + mark_size)``, its part not in the level
    before) is marked once in a byte map, then each match ``x`` of the level before
    probes the other last-level slot's values ``y`` under it against the map; every hit
    is the row ``bound[r] ++ (x, y)``. No frontier of the level before is written.

    Returns ``(r, rows, weights, m)``: the first ``m`` rows, sorted and unique (the
    frontier's rows are, and ``x`` and ``y`` come in order), and ``r`` the frontier row
    to resume from (``bound.shape[0]`` when done; it stops after the row that passes
    ``limit`` rows), or ``-1 - r`` when row ``r``'s weight product overflows.
    """
    L = bound.shape[1]
    l = L
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    smax = max(s1 - s0, 1)
    lo = np.empty(smax, dtype=np.int64)
    hi = np.empty(smax, dtype=np.int64)
    cur = np.empty(smax, dtype=np.int64)
    hits = np.empty(smax, dtype=np.int64)
    t0 = level_slots[l + 1]
    g_slot = t0 + 1 - (mark_slot - t0)
    fast, jd = _triangle_shape(S, l, s0, s1, n_atoms, ne_off, g_slot)
    mark = np.zeros(mark_size, dtype=np.uint8)
    cap = 64
    out_b = np.empty((cap, L + 2), dtype=np.int64)
    out_w = np.empty(cap, dtype=np.int64)
    m = 0
    r = r0
    while True:
        code, r, k = _list_rows(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off,
                                ne_col, bound, w, LO, HI, mark, mark_slot, mark_lo, mark_size, g_slot, fast, jd,
                                r, limit - m, out_b[m:], out_w[m:], lo, hi, cur, hits)
        m += k
        if code == OVERFLOW:
            return -1 - r, out_b, out_w, m
        if code != GROW:
            return r, out_b, out_w, m
        cap *= 2
        out_b, out_w = grown(out_b, m, cap), grown(out_w, m, cap)
