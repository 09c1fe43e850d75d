"""Searches in sorted int64 ranges read through an address (row kernels: LLVM inlines them
where they are called).

``bsearch`` and ``gallop`` return the first position in ``[lo, hi)`` whose value is at
least ``x`` (``hi`` if none); ``gallop`` suits a cursor that only moves forward (its cost
is the log of the distance moved, not of the range). ``narrow`` cuts a range to the
values above or below a bound (the ``<`` filters of a join). The arrays are read with
``memory.load``; the caller keeps them alive.

Numba's cache does not see edits to these helpers from the kernels that call them (their
code is linked into each caller's cached object): clear ``__pycache__`` after editing this
file.

>>> import numpy as np
>>> a = np.array([1, 3, 5, 7], dtype=np.int64)
>>> int(bsearch(a.ctypes.data, 0, 4, 4)), int(gallop(a.ctypes.data, 1, 4, 7))
(2, 3)
>>> [int(x) for x in narrow(a.ctypes.data, 0, 4, 3, False)]
[2, 4]
"""


from .memory import load, row_kernel

__all__ = ["bsearch", "gallop", "narrow"]


@row_kernel
def bsearch(addr, lo, hi, x):
    """First position p in [lo, hi) with value >= x (hi if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if load(addr, mid) < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@row_kernel
def gallop(addr, lo, hi, x):
    """``bsearch`` by exponential steps from ``lo`` first: O(log distance moved)."""
    if lo >= hi or load(addr, lo) >= x:
        return lo
    step = 1
    prev = lo
    cur = lo + 1
    while cur < hi and load(addr, cur) < x:
        prev = cur
        step *= 2
        cur = prev + step
    return bsearch(addr, prev + 1, min(cur, hi), x)  # values[prev] < x <= values[cur]


@row_kernel
def narrow(addr, lo, hi, x, upper):
    """``[lo, hi)`` cut to the values ``> x`` (``upper`` False) or ``< x`` (True)."""
    if lo >= hi:
        return lo, hi
    if not upper and load(addr, lo) > x:   # common: the whole range already qualifies
        return lo, hi
    if upper and load(addr, hi - 1) < x:
        return lo, hi
    left, right = lo, hi
    while left < right:
        mid = (left + right) >> 1
        v = load(addr, mid)
        if (v <= x) if not upper else (v < x):
            left = mid + 1
        else:
            right = mid
    return (lo, left) if upper else (left, hi)
