"""One Generic Join level, extended and carried forward in a single jitted pass.

``extend_frontier`` does for a whole frontier what the level loop of ``generic_join``
needs: it intersects the candidates of the atoms containing the level's variable (see
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

from .intersect import _next_match, _pick_proposer
from .weights import _add_overflows, _mul_overflows

__all__ = ["extend_frontier"]


@njit(cache=True, nogil=True)
def extend_frontier(vals, offs, leafw, is_last, part_col, atom_start, LO, HI, lo, hi,
                    bound, w, out_bound, out_LO, out_HI, out_w):
    """Extend every frontier row by one variable; return the number of new rows.

    Parameters (``Q`` participating parts, ``P`` parts in all, ``L`` bound variables):
    ``vals``, ``offs``, ``leafw``: tuples of ``Q`` arrays, part ``q``'s level values, its
    offsets into the next level (any array when the level is the part's last) and its
    leaf weights (any array otherwise); ``is_last[q]`` 1 when this is the part's last
    column; ``part_col[q]`` its column in ``LO``/``HI`` (``int64[n, P]``, every part's
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
