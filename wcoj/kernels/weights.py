"""Checked int64 weight arithmetic kernels (nopython, int64 only).

Z-set weights are int64 and must never wrap around silently (Budiu, "Implementing
Z-sets": checked integer weights). Each kernel writes into a caller-allocated ``out`` and
returns the first offending row, or -1 when everything fitted; the Python wrappers in
``wcoj.zset`` raise ``WeightOverflowError`` from that row, before any state is touched.

Inputs: 1-d int64 arrays. ``starts`` arrays are strictly increasing segment
starts beginning at 0 (a segment runs to the next start, the last one to the end).
The two consolidation kernels (``run_sums_into``, ``merge_add_into``) take rows as
order-preserving int64 codes (``wcoj.rows.Packing``) and return ``(n_written, bad)``.
"""

import numpy as np
from numba import njit

__all__ = [
    "I64_MAX",
    "I64_MIN",
    "add_into",
    "multiply_into",
    "negate_into",
    "scale_into",
    "segment_sum_into",
    "segment_dot_into",
    "run_sums_into",
    "merge_add_into",
    "cross_multiply_into",
]

I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min


@njit(cache=True, nogil=True)
def _add_overflows(a, b):
    # Two's-complement rule: the sum overflows iff both operands share a sign that the
    # wrapped result does not.
    if b > 0:
        return a > I64_MAX - b
    return a < I64_MIN - b


@njit(cache=True, nogil=True)
def _div_trunc(x, y):
    # C division (rounds toward zero). Floor division is off by one for the bounds below
    # whenever the quotient is negative and inexact (e.g. -2**62 * -2 slipped through).
    q = x // y
    if x % y != 0 and (x < 0) != (y < 0):
        q += 1
    return q


@njit(cache=True, nogil=True)
def _mul_overflows(a, b):
    # CERT INT32-C: compare against the truncated quotient of the bound that applies.
    if a > 0:
        if b > 0:
            return a > I64_MAX // b
        return b < _div_trunc(I64_MIN, a)
    if b > 0:
        return a < _div_trunc(I64_MIN, b)
    return a != 0 and b < _div_trunc(I64_MAX, a)


@njit(cache=True, nogil=True)
def add_into(a, b, out):
    """out[i] = a[i] + b[i]; return the first overflowing row, or -1."""
    for i in range(out.shape[0]):
        if _add_overflows(a[i], b[i]):
            return i
        out[i] = a[i] + b[i]
    return -1


@njit(cache=True, nogil=True)
def multiply_into(a, b, out):
    """out[i] = a[i] * b[i]; return the first overflowing row, or -1."""
    for i in range(out.shape[0]):
        if _mul_overflows(a[i], b[i]):
            return i
        out[i] = a[i] * b[i]
    return -1


@njit(cache=True, nogil=True)
def negate_into(a, out):
    """out[i] = -a[i]; return the first row holding INT64_MIN (no negation), or -1."""
    for i in range(out.shape[0]):
        if a[i] == I64_MIN:
            return i
        out[i] = -a[i]
    return -1


@njit(cache=True, nogil=True)
def scale_into(a, c, out):
    """out[i] = c * a[i] for a scalar int64 ``c``; return the first overflowing row, or -1."""
    for i in range(out.shape[0]):
        if _mul_overflows(a[i], c):
            return i
        out[i] = a[i] * c
    return -1


@njit(cache=True, nogil=True)
def segment_sum_into(w, starts, out):
    """out[s] = sum of w over segment s; return the first overflowing segment, or -1.

    ``out`` has ``starts.shape[0]`` slots. Partial sums are checked, so a segment whose
    exact total fits but whose running sum does not is reported too (int64 order matters
    only at the extremes; we refuse rather than guess).
    """
    n_seg = starts.shape[0]
    n = w.shape[0]
    for s in range(n_seg):
        lo = starts[s]
        hi = starts[s + 1] if s + 1 < n_seg else n
        acc = np.int64(0)
        for i in range(lo, hi):
            if _add_overflows(acc, w[i]):
                return s
            acc += w[i]
        out[s] = acc
    return -1


@njit(cache=True, nogil=True)
def segment_dot_into(v, w, starts, out):
    """out[s] = sum of v[i] * w[i] over segment s; return the first overflowing segment, or -1."""
    n_seg = starts.shape[0]
    n = w.shape[0]
    for s in range(n_seg):
        lo = starts[s]
        hi = starts[s + 1] if s + 1 < n_seg else n
        acc = np.int64(0)
        for i in range(lo, hi):
            if _mul_overflows(v[i], w[i]):
                return s
            p = v[i] * w[i]
            if _add_overflows(acc, p):
                return s
            acc += p
        out[s] = acc
    return -1


@njit(cache=True, nogil=True)
def run_sums_into(keys, w, out_pos, out_sums):
    """Sum ``w`` over each run of equal ``keys`` (sorted), keeping the non-zero sums.

    For the m-th kept run, ``out_pos[m]`` is its first position and ``out_sums[m]`` its
    sum (both allocated by the caller, as long as ``keys``). Returns ``(m, bad)``: how
    many runs were kept and the first position of the first run whose running sum leaves
    int64, or -1. (Gather ``w`` into key order before the call: a gather fused into this
    loop measured 5x slower than numpy's.)
    """
    n = keys.shape[0]
    m = 0
    i = 0
    while i < n:
        acc = np.int64(0)
        j = i
        while j < n and keys[j] == keys[i]:
            if _add_overflows(acc, w[j]):
                return m, i
            acc += w[j]
            j += 1
        if acc != 0:
            out_pos[m] = i
            out_sums[m] = acc
            m += 1
        i = j
    return m, -1


@njit(cache=True, nogil=True)
def merge_add_into(ka, wa, kb, wb, out_keys, out_w):
    """Merge two strictly increasing key arrays with non-zero weights, adding the weights
    of equal keys and dropping zero sums (the plus of two consolidated Z-sets), in
    O(|a| + |b|).

    The caller allocates ``out_keys`` and ``out_w`` with ``|a| + |b|`` slots. Returns
    ``(n, bad)``: how many slots were written, and the position in ``ka`` of the first
    key whose two weights do not add up in int64, or -1.
    """
    i = j = n = 0
    na, nb = ka.shape[0], kb.shape[0]
    while i < na and j < nb:
        if ka[i] < kb[j]:
            out_keys[n] = ka[i]
            out_w[n] = wa[i]
            n += 1
            i += 1
        elif kb[j] < ka[i]:
            out_keys[n] = kb[j]
            out_w[n] = wb[j]
            n += 1
            j += 1
        else:
            if _add_overflows(wa[i], wb[j]):
                return n, i
            s = wa[i] + wb[j]
            if s != 0:
                out_keys[n] = ka[i]
                out_w[n] = s
                n += 1
            i += 1
            j += 1
    while i < na:
        out_keys[n] = ka[i]
        out_w[n] = wa[i]
        n += 1
        i += 1
    while j < nb:
        out_keys[n] = kb[j]
        out_w[n] = wb[j]
        n += 1
        j += 1
    return n, -1


@njit(cache=True, nogil=True)
def cross_multiply_into(a_lo, a_n, b_lo, b_n, wa, wb, out_i, out_j, out_w):
    """The weight products of a join: for each matched run pair ``r``, every ``(i, j)`` of
    ``[a_lo[r], a_lo[r] + a_n[r]) x [b_lo[r], b_lo[r] + b_n[r])`` in row-major order gets
    ``out_w = wa[i] * wb[j]`` (checked). The caller allocates the three outputs with
    ``sum(a_n * b_n)`` slots. Returns the first output position whose product overflows
    (its ``out_i`` and ``out_j`` are written, to name the row), or -1.
    """
    t = 0
    for r in range(a_lo.shape[0]):
        for i in range(a_lo[r], a_lo[r] + a_n[r]):
            x = wa[i]
            for j in range(b_lo[r], b_lo[r] + b_n[r]):
                out_i[t] = i
                out_j[t] = j
                if _mul_overflows(x, wb[j]):
                    return t
                out_w[t] = x * wb[j]
                t += 1
    return -1
