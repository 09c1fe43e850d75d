"""One Generic Join level, extended and carried forward in a single jitted pass.

The sliced path of ``generic_join``: a join whose frontier fits ``SLICE_ROWS`` runs all
its levels in one call (``kernels.term``); a bigger one is extended level by level over
slices of the frontier, one call of these kernels per slice. ``extend_frontier`` does for
one slice what the level loop needs: it intersects the candidates of the atoms containing the level's variable (see
``intersect.extend_level`` for the parts/ranges contract), multiplies in the weights of
the atoms whose last column this is, and writes the next frontier directly: the bound
values, every part's candidate range for the next level (CSR offsets at the hit), and the
row weights. No per-part numpy pass is left between levels, which is what a tick's small
frontiers pay for.

Inputs are int64 only. Numba's cache does not see edits to the helpers imported from
``intersect`` and ``weights``: clear ``__pycache__`` after editing those.
"""

import numpy as np
from numba import njit

from .intersect import GALLOP_RATIO, _next_match, _pick_proposer, gallop_geq
from .weights import _add_overflows, _mul_overflows

__all__ = ["extend_frontier", "extend_frontier_pair"]


@njit(cache=True, nogil=True)
def extend_frontier(vals, offs, leafw, is_last, part_col, atom_start, LO, HI, lo, hi,
                    bound, w, out_bound, out_LO, out_HI, out_w):
    """Extend every frontier row by one variable; return the number of new rows.

    Parameters (``Q`` participating parts, ``P`` parts in all, ``L`` bound variables):
    ``vals``, ``offs``, ``leafw``: tuples of ``Q`` arrays, part ``q``'s level values, its
    offsets into the next level (any array when the level is the part's last) and its
    leaf weights (any array otherwise); ``is_last[q]`` 1 when this is the part's last
    column; ``part_col[q]`` its column in ``LO``/``HI`` (-1: a padding part, written
    nowhere) (``int64[n, P]``, every part's
    range for the current rows); ``lo``/``hi`` (``int64[n, Q]``) the participating
    parts' ranges after any narrowing; ``bound`` ``int64[n, L]``; ``w`` ``int64[n]``.
    The caller allocates ``out_bound`` (``[cap, L + 1]``), ``out_LO``/``out_HI``
    (``[cap, P]``) and ``out_w`` with ``cap`` at least the sum over rows of the smallest
    atom's candidate count. A row whose atom weights sum to 0 is dropped. Returns
    ``-1 - r`` when a weight product of row ``r`` overflows int64.
    """
    n_parts = lo.shape[1]
    n_atoms = atom_start.shape[0] - 1
    L = bound.shape[1]
    P = LO.shape[1]
    cur = np.empty(n_parts, dtype=np.int64)
    hits = np.empty(n_parts, dtype=np.int64)
    m = 0
    for r in range(lo.shape[0]):
        best = _pick_proposer(r, lo, hi, atom_start)
        if best < 0:
            continue
        for q in range(n_parts):
            cur[q] = lo[r, q]
        while True:
            ok, x = _next_match(r, vals, hi, atom_start, best, cur, hits)
            if not ok:
                break
            wt = w[r]
            for a in range(n_atoms):
                q0 = atom_start[a]
                if is_last[q0] == 0:
                    continue
                s = np.int64(0)
                for q in range(q0, atom_start[a + 1]):
                    if hits[q] >= 0:
                        lw = leafw[q][hits[q]]
                        if _add_overflows(s, lw):
                            return -1 - r
                        s += lw
                if _mul_overflows(wt, s):
                    return -1 - r
                wt *= s
                if wt == 0:
                    break
            if wt == 0:
                continue
            for j in range(L):
                out_bound[m, j] = bound[r, j]
            out_bound[m, L] = x
            for p in range(P):
                out_LO[m, p] = LO[r, p]
                out_HI[m, p] = HI[r, p]
            for q in range(n_parts):
                c = part_col[q]
                if c < 0:  # a padding part: no column of its own
                    continue
                h = hits[q]
                if is_last[q] == 0 and h >= 0:
                    out_LO[m, c] = offs[q][h]
                    out_HI[m, c] = offs[q][h + 1]
                else:
                    out_LO[m, c] = 0
                    out_HI[m, c] = 0
            out_w[m] = wt
            m += 1
    return m


@njit(cache=True, nogil=True)
def _emit(m, r, x, wt, bound, LO, HI, out_bound, out_LO, out_HI, out_w):
    L = bound.shape[1]
    for j in range(L):
        out_bound[m, j] = bound[r, j]
    out_bound[m, L] = x
    for p in range(LO.shape[1]):
        out_LO[m, p] = LO[r, p]
        out_HI[m, p] = HI[r, p]
    out_w[m] = wt


@njit(cache=True, nogil=True)
def extend_frontier_pair(va, offa, lwa, last_a, col_a, vb, offb, lwb, last_b, col_b,
                         LO, HI, lo, hi, bound, w, out_bound, out_LO, out_HI, out_w,
                         dense_a, base_a, dense_b, base_b):
    """``extend_frontier`` for a level where exactly two atoms of one part each take part.

    The two parts are passed directly (no tuple of arrays to index per candidate) and each
    row walks the smaller range, merging when the sizes are close and galloping past
    ``GALLOP_RATIO``. ``lo``/``hi`` are ``int64[n, 2]``; ``offX`` is part X's offsets (or
    any array when ``last_X``), ``lwX`` its leaf weights (or any array otherwise).
    ``dense_X``/``base_X``: a direct index of the values when part X's array is its trie's
    level 0 (``TrieArrays.dense0``), else empty; a row whose range on that side is the whole
    level looks each value of the other side up directly. Same outputs and return value
    as ``extend_frontier``.
    """
    m = 0
    for r in range(lo.shape[0]):
        la, ha, lb, hb = lo[r, 0], hi[r, 0], lo[r, 1], hi[r, 1]
        if ha == la or hb == lb:
            continue
        use_b = dense_b.shape[0] > 0 and lb == 0 and hb == vb.shape[0] and ha - la < hb
        use_a = (not use_b) and dense_a.shape[0] > 0 and la == 0 and ha == va.shape[0] and hb - lb < ha
        if use_a or use_b:  # walk one side, look values up in the other's directory
            walk_lo, walk_hi = (la, ha) if use_b else (lb, hb)
            for k in range(walk_lo, walk_hi):
                if use_b:
                    i = k
                    x = va[i]
                    d = x - base_b
                    j = dense_b[d] if 0 <= d < dense_b.shape[0] else -1
                    if j < 0:
                        continue
                else:
                    j = k
                    x = vb[j]
                    d = x - base_a
                    i = dense_a[d] if 0 <= d < dense_a.shape[0] else -1
                    if i < 0:
                        continue
                m_or_err = _pair_emit(m, r, x, i, j, va, offa, lwa, last_a, col_a, offb, lwb,
                                      last_b, col_b, LO, HI, bound, w, out_bound, out_LO,
                                      out_HI, out_w)
                if m_or_err < -1:
                    return -1 - r
                m = m_or_err if m_or_err >= 0 else m
            continue
        small_is_a = (ha - la) <= (hb - lb)
        gallop = (hb - lb) >= GALLOP_RATIO * (ha - la) if small_is_a else (ha - la) >= GALLOP_RATIO * (hb - lb)
        i, j = la, lb
        while i < ha and j < hb:
            xa, xb = va[i], vb[j]
            if xa < xb:
                i = gallop_geq(va, i, ha, xb) if (gallop and not small_is_a) else i + 1
                continue
            if xb < xa:
                j = gallop_geq(vb, j, hb, xa) if (gallop and small_is_a) else j + 1
                continue
            m_or_err = _pair_emit(m, r, xa, i, j, va, offa, lwa, last_a, col_a, offb, lwb,
                                  last_b, col_b, LO, HI, bound, w, out_bound, out_LO, out_HI,
                                  out_w)
            if m_or_err < -1:
                return -1 - r
            m = m_or_err if m_or_err >= 0 else m
            i += 1
            j += 1
    return m


@njit(cache=True, nogil=True)
def _pair_emit(m, r, x, i, j, va, offa, lwa, last_a, col_a, offb, lwb, last_b, col_b,
               LO, HI, bound, w, out_bound, out_LO, out_HI, out_w):
    """Write the match ``x`` (at ``i`` in part a, ``j`` in part b) of row ``r`` as new row ``m``.

    Returns ``m + 1``, or -1 when the weight is 0 (nothing written), or -2 on overflow.
    """
    wt = w[r]
    if last_a:
        if _mul_overflows(wt, lwa[i]):
            return -2
        wt *= lwa[i]
    if last_b:
        if _mul_overflows(wt, lwb[j]):
            return -2
        wt *= lwb[j]
    if wt == 0:
        return -1
    _emit(m, r, x, wt, bound, LO, HI, out_bound, out_LO, out_HI, out_w)
    if last_a:
        out_LO[m, col_a] = 0
        out_HI[m, col_a] = 0
    else:
        out_LO[m, col_a] = offa[i]
        out_HI[m, col_a] = offa[i + 1]
    if last_b:
        out_LO[m, col_b] = 0
        out_HI[m, col_b] = 0
    else:
        out_LO[m, col_b] = offb[j]
        out_HI[m, col_b] = offb[j + 1]
    return m + 1
