"""Sorted-set intersection and frontier-extension kernels (nopython, int64 only).

Pairwise kernels take 1-d, C-contiguous, strictly increasing int64 arrays; the caller
allocates ``out`` (as long as the shorter input) and the kernel returns how many slots it
wrote.

The frontier kernels extend every prefix of one Generic Join level at once (Ngo et al.,
"Worst-case optimal join algorithms", Alg. 2; Veldhuizen, "Leapfrog Triejoin"). Each atom
that contains the level's variable is given as one or more *parts* (the runs of a
log-structured index: a view is the sum of its parts). All parts' level arrays are
passed as a tuple ``vals`` (``vals[q]`` is part ``q``'s array of values at the level);
``lo[r, q]``/``hi[r, q]`` is the half-open range of part ``q``'s candidates for frontier row
``r`` (positions in ``vals[q]``; an empty range means the part holds nothing under that
prefix). Parts of one atom are contiguous:
``atom_start[a]:atom_start[a+1]``. Per row, the atom with the fewest candidates proposes
(the union of its parts, merged in order), every other atom is searched with galloping
cursors that only move forward, and each surviving value records where it was found in
every part (``-1`` where absent).
"""

import numpy as np
from numba import njit, prange

# Checked arithmetic lives with the other weight kernels. Numba's cache does not notice
# edits to jitted helpers imported from another file: clear __pycache__ after editing them.
from .weights import _add_overflows, _mul_overflows

__all__ = [
    "GALLOP_RATIO",
    "intersect_merge",
    "intersect_gallop",
    "gallop_geq",
    "extend_level",
    "count_last_level",
    "find_in_ranges",
    "count_last_level_parallel",
    "spread_chunks",
    "count_pair",
    "count_pair_parallel",
    "narrow_ranges",
]

GALLOP_RATIO = 32  # gallop when one side is this many times longer


@njit(cache=True, nogil=True)
def intersect_merge(a, b, out):
    """Linear merge, O(|a| + |b|); best when the sizes are close."""
    i = j = n = 0
    while i < a.shape[0] and j < b.shape[0]:
        if a[i] < b[j]:
            i += 1
        elif b[j] < a[i]:
            j += 1
        else:
            out[n] = a[i]
            n, i, j = n + 1, i + 1, j + 1
    return n


@njit(cache=True, nogil=True)
def gallop_geq(vals, lo, hi, x):
    """First position p in [lo, hi) with vals[p] >= x (hi if none): exponential then binary search.

    O(log d) where d is the distance moved, so a cursor that only moves forward pays
    for the distance it covers, not for the length of the array.
    """
    if lo >= hi or vals[lo] >= x:
        return lo
    step = 1
    prev = lo
    cur = lo + 1
    while cur < hi and vals[cur] < x:
        prev = cur
        step *= 2
        cur = prev + step
    if cur > hi:
        cur = hi
    # vals[prev] < x, answer in (prev, cur]
    left, right = prev + 1, cur
    while left < right:
        mid = (left + right) >> 1
        if vals[mid] < x:
            left = mid + 1
        else:
            right = mid
    return left


@njit(cache=True, nogil=True)
def intersect_gallop(small, large, out):
    """Gallop through ``large`` for each element of ``small``: O(|small| log(|large|/|small|))."""
    n = 0
    j = 0
    m = large.shape[0]
    for i in range(small.shape[0]):
        x = small[i]
        j = gallop_geq(large, j, m, x)
        if j >= m:
            break
        if large[j] == x:
            out[n] = x
            n += 1
            j += 1
    return n



@njit(cache=True, nogil=True)
def _pick_proposer(r, lo, hi, atom_start):
    """The atom with the fewest candidates for row ``r`` (sum over its parts), or -1 if one has none."""
    best = -1
    best_size = 0
    for a in range(atom_start.shape[0] - 1):
        size = 0
        for q in range(atom_start[a], atom_start[a + 1]):
            size += hi[r, q] - lo[r, q]
        if size == 0:
            return -1
        if best < 0 or size < best_size:
            best, best_size = a, size
    return best


@njit(cache=True, nogil=True)
def _next_match(r, vals, hi, atom_start, best, cur, hits):
    """Advance row ``r``'s cursors to the next value every atom holds.

    Returns ``(True, x)`` with ``hits[q]`` set to the position of ``x`` in each part (-1
    where absent), or ``(False, 0)`` when the proposer is exhausted.
    """
    p0, p1 = atom_start[best], atom_start[best + 1]
    while True:
        have = False
        x = 0
        for q in range(p0, p1):
            if cur[q] < hi[r, q]:
                v = vals[q][cur[q]]
                if not have or v < x:
                    x, have = v, True
        if not have:
            return False, x
        for q in range(p0, p1):
            if cur[q] < hi[r, q] and vals[q][cur[q]] == x:
                hits[q] = cur[q]
                cur[q] += 1
            else:
                hits[q] = -1
        ok = True
        for a in range(atom_start.shape[0] - 1):
            if a == best:
                continue
            found = False
            for q in range(atom_start[a], atom_start[a + 1]):
                p = gallop_geq(vals[q], cur[q], hi[r, q], x)
                cur[q] = p
                if p < hi[r, q] and vals[q][p] == x:
                    hits[q] = p
                    found = True
                else:
                    hits[q] = -1
            if not found:
                ok = False
                break
        if ok:
            return True, x


@njit(cache=True, nogil=True)
def extend_level(vals, lo, hi, atom_start, out_parent, out_val, out_hit):
    """Extend every frontier row by one variable; return the number of outputs.

    The bare intersection of a level (positions only); the joins use
    ``frontier.extend_frontier``, which also carries weights and next ranges. Kept as the
    smallest twin-tested statement of the parts/ranges contract.

    Inputs: ``vals`` a tuple of int64 arrays (one per part); ``lo``, ``hi``
    int64[n_rows, n_parts]; ``atom_start`` int64[n_atoms + 1]. The caller allocates
    ``out_parent``/``out_val`` (int64[cap]) and ``out_hit`` (int64[cap, n_parts]) with
    ``cap`` at least the sum over rows of the smallest atom's candidate count, an upper
    bound on the output. Outputs come in (row, value) order; ``out_hit[i, q]`` is the
    position of the value in ``vals[q]``, or -1.
    """
    n_parts = lo.shape[1]
    cur = np.empty(n_parts, dtype=np.int64)
    hits = np.empty(n_parts, dtype=np.int64)
    n_out = 0
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
            out_parent[n_out] = r
            out_val[n_out] = x
            for q in range(n_parts):
                out_hit[n_out, q] = hits[q]
            n_out += 1
    return n_out


@njit(cache=True, nogil=True)
def count_last_level(vals, lo, hi, atom_start, part_weights, row_weights, out_sums):
    """Per row, the weighted number of completions at the last level, without emitting them.

    ``part_weights[q]`` is aligned with ``vals[q]`` (each part's leaf weights);
    ``out_sums[r] = row_weights[r] * sum over values x of prod over atoms of (the sum of the
    atom's part weights at x)``. Returns the first row whose sum overflows int64, or -1.
    """
    n_parts = lo.shape[1]
    n_atoms = atom_start.shape[0] - 1
    cur = np.empty(n_parts, dtype=np.int64)
    hits = np.empty(n_parts, dtype=np.int64)
    for r in range(lo.shape[0]):
        out_sums[r] = 0
        best = _pick_proposer(r, lo, hi, atom_start)
        if best < 0:
            continue
        for q in range(n_parts):
            cur[q] = lo[r, q]
        acc = np.int64(0)
        while True:
            ok, x = _next_match(r, vals, hi, atom_start, best, cur, hits)
            if not ok:
                break
            prod = np.int64(1)
            for a in range(n_atoms):
                s = np.int64(0)
                for q in range(atom_start[a], atom_start[a + 1]):
                    if hits[q] >= 0:
                        w = part_weights[q][hits[q]]
                        if _add_overflows(s, w):
                            return r
                        s += w
                if _mul_overflows(prod, s):
                    return r
                prod *= s
            if _add_overflows(acc, prod):
                return r
            acc += prod
        if _mul_overflows(acc, row_weights[r]):
            return r
        out_sums[r] = acc * row_weights[r]
    return -1


@njit(cache=True, nogil=True)
def find_in_ranges(vals, lo, hi, x, out):
    """out[i] = position of x[i] in the sorted slice vals[lo[i]:hi[i]], or -1; returns nothing."""
    for i in range(x.shape[0]):
        left, right = lo[i], hi[i]
        while left < right:
            mid = (left + right) >> 1
            if vals[mid] < x[i]:
                left = mid + 1
            else:
                right = mid
        out[i] = left if left < hi[i] and vals[left] == x[i] else -1


@njit(cache=True, nogil=True)
def spread_chunks(n):
    """The order in which a ``prange`` loop over ``n`` chunks of rows takes them: chunk
    ``spread_chunks(n)[i]`` at iteration ``i``. ``prange`` gives each thread one
    contiguous block of iterations; when ``n`` is a power of two (at least 8), a
    multiplication by an odd number modulo ``n`` spreads each block over all the rows.
    Rows follow id order, and real graphs often number their hubs first: with contiguous
    blocks one thread did most of a count (Slashdot, Twitter: 2 threads no faster than 1).

    >>> spread_chunks(8).tolist()
    [0, 3, 6, 1, 4, 7, 2, 5]
    """
    order = np.arange(n)
    if n >= 8 and n & (n - 1) == 0:
        order = (order * ((n * 27 // 64) | 1)) % n
    return order


@njit(cache=True, nogil=True, parallel=True)
def count_last_level_parallel(vals, lo, hi, atom_start, part_weights, row_weights, out_sums):
    """``count_last_level`` with the rows split into chunks counted on all cores.

    Same contract and result; worth it for a whole batch count (hundreds of thousands of
    rows), not for a tick's small frontier (thread start-up costs more than it saves).
    """
    n_rows = lo.shape[0]
    n_chunks = min(n_rows, 256)
    bad = np.full(n_chunks, -1, dtype=np.int64)
    chunk = spread_chunks(n_chunks)
    for i in prange(n_chunks):
        c = chunk[i]
        r0 = c * n_rows // n_chunks
        r1 = (c + 1) * n_rows // n_chunks
        b = count_last_level(vals, lo[r0:r1], hi[r0:r1], atom_start, part_weights,
                             row_weights[r0:r1], out_sums[r0:r1])
        if b >= 0:
            bad[c] = r0 + b
    for c in range(n_chunks):
        if bad[c] >= 0:
            return bad[c]
    return -1


# ---------------------------------------------------------------------------------------
# Two-part fast path. When exactly two parts take part in a level (two atoms of one run
# each, the common case of a batch join), passing both arrays directly avoids indexing a
# tuple of arrays per candidate, and each row picks a merge or a gallop by size ratio.


@njit(cache=True, nogil=True)
def _count_pair_rows(va, lo_a, hi_a, wa, vb, lo_b, hi_b, wb, row_weights, out_sums, r0, r1):
    for r in range(r0, r1):
        la, ha, lb, hb = lo_a[r], hi_a[r], lo_b[r], hi_b[r]
        out_sums[r] = 0
        if ha == la or hb == lb:
            continue
        x_v, x_w, xl, xh = va, wa, la, ha
        y_v, y_w, yl, yh = vb, wb, lb, hb
        if ha - la > hb - lb:
            x_v, x_w, xl, xh, y_v, y_w, yl, yh = vb, wb, lb, hb, va, wa, la, ha
        gallop = (yh - yl) >= GALLOP_RATIO * (xh - xl)
        acc = np.int64(0)
        j = yl
        for i in range(xl, xh):
            x = x_v[i]
            if gallop:
                j = gallop_geq(y_v, j, yh, x)
            else:
                while j < yh and y_v[j] < x:
                    j += 1
            if j >= yh:
                break
            if y_v[j] == x:
                if _mul_overflows(x_w[i], y_w[j]):
                    return r
                p = x_w[i] * y_w[j]
                if _add_overflows(acc, p):
                    return r
                acc += p
                j += 1
        if _mul_overflows(acc, row_weights[r]):
            return r
        out_sums[r] = acc * row_weights[r]
    return -1


@njit(cache=True, nogil=True)
def count_pair(va, lo_a, hi_a, wa, vb, lo_b, hi_b, wb, row_weights, out_sums):
    """``count_last_level`` for two single-part atoms (leaf weights ``wa``, ``wb``)."""
    return _count_pair_rows(va, lo_a, hi_a, wa, vb, lo_b, hi_b, wb, row_weights, out_sums,
                            0, lo_a.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def count_pair_parallel(va, lo_a, hi_a, wa, vb, lo_b, hi_b, wb, row_weights, out_sums):
    """``count_pair`` over chunks of rows on all cores."""
    n_rows = lo_a.shape[0]
    n_chunks = min(n_rows, 256)
    bad = np.full(n_chunks, -1, dtype=np.int64)
    chunk = spread_chunks(n_chunks)
    for i in prange(n_chunks):
        c = chunk[i]
        r0 = c * n_rows // n_chunks
        r1 = (c + 1) * n_rows // n_chunks
        bad[c] = _count_pair_rows(va, lo_a, hi_a, wa, vb, lo_b, hi_b, wb, row_weights,
                                  out_sums, r0, r1)
    for c in range(n_chunks):
        if bad[c] >= 0:
            return bad[c]
    return -1


@njit(cache=True, nogil=True)
def narrow_ranges(vals, lo, hi, bound, upper):
    """Shrink each range ``[lo[i], hi[i])`` of the sorted slices of ``vals`` in place.

    ``upper`` False: keep values ``> bound[i]`` (raise ``lo``); True: keep values
    ``< bound[i]`` (lower ``hi``). Binary search, O(log range) per row.
    """
    for i in range(lo.shape[0]):
        left, right = lo[i], hi[i]
        x = bound[i]
        while left < right:
            mid = (left + right) >> 1
            if (vals[mid] <= x) if not upper else (vals[mid] < x):
                left = mid + 1
            else:
                right = mid
        if upper:
            hi[i] = left
        else:
            lo[i] = left
