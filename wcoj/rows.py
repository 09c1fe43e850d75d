"""Row-wise helpers over int64 key matrices: ordering, packing, grouping, searching.

A key matrix is ``int64[n, k]``; rows compare lexicographically. When the columns' value
ranges fit together in 63 bits (the usual case for interned ids), rows are *packed* into
one int64 each, which preserves the lexicographic order, so one ``argsort`` or
``searchsorted`` over a 1-d array replaces a ``lexsort`` over k columns. Otherwise the
helpers fall back to ``np.lexsort`` and structured comparisons.

Relies on numpy only. Used by ``wcoj.zset`` (consolidation, joins) and by the trie
indexes in ``indexes``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["Packing", "packing_for", "row_order", "group_starts", "is_sorted_unique"]

I64 = npt.NDArray[np.int64]


class Packing:
    """An order-preserving map from rows of ``k`` int64 columns to one int64.

    Column ``j`` is stored as ``(x - lows[j]) << shifts[j]``; the first column gets the
    highest bits, so packed values compare like the rows they come from.

    >>> p = packing_for([np.array([[3, 7], [1, 9]])])
    >>> p.pack(np.array([[3, 7], [1, 9], [1, 7]])).argsort().tolist()
    [2, 1, 0]
    """

    __slots__ = ("lows", "highs", "shifts")

    def __init__(self, lows: I64, highs: I64, shifts: I64):
        self.lows, self.highs, self.shifts = lows, highs, shifts

    def pack(self, keys: I64) -> I64:
        """Pack the rows of ``keys`` (which must lie within the packing's ranges)."""
        n, k = keys.shape
        if k == 0:
            return np.zeros(n, dtype=np.int64)
        out = (keys[:, 0] - self.lows[0]) << self.shifts[0]
        for j in range(1, k):
            out |= (keys[:, j] - self.lows[j]) << self.shifts[j]
        return out

    def covers(self, keys: I64) -> bool:
        """True when every value of ``keys`` lies within the packing's per-column ranges."""
        if keys.shape[0] == 0 or keys.shape[1] == 0:
            return True
        return bool(np.all(keys.min(axis=0) >= self.lows) and np.all(keys.max(axis=0) <= self.highs))


def packing_for(arrays: list[I64]) -> Packing | None:
    """A packing that covers every row of every array in ``arrays`` (same width), or None.

    None means the value ranges need more than 63 bits together.
    """
    k = arrays[0].shape[1]
    nonempty = [a for a in arrays if a.shape[0]]
    if not nonempty:
        z = np.zeros(k, dtype=np.int64)
        return Packing(z, z, z)
    lows = np.min([a.min(axis=0) for a in nonempty], axis=0).astype(np.int64)
    highs = np.max([a.max(axis=0) for a in nonempty], axis=0).astype(np.int64)
    bits = []
    for lo, hi in zip(lows.tolist(), highs.tolist()):
        span = hi - lo  # Python ints: no wrap-around for extreme ranges
        bits.append(span.bit_length())
    if sum(bits) > 63:
        return None
    shifts = np.zeros(k, dtype=np.int64)
    acc = 0
    for j in range(k - 1, -1, -1):
        shifts[j] = acc
        acc += bits[j]
    return Packing(lows, highs, shifts)


def row_order(keys: I64) -> I64:
    """A permutation that sorts the rows of ``keys`` lexicographically (stable).

    >>> row_order(np.array([[2, 1], [1, 5], [2, 0]])).tolist()
    [1, 2, 0]
    """
    n, k = keys.shape
    if k == 0 or n <= 1:
        return np.arange(n, dtype=np.int64)
    if k == 1:
        return np.argsort(keys[:, 0], kind="stable").astype(np.int64, copy=False)
    p = packing_for([keys])
    if p is not None:
        return np.argsort(p.pack(keys), kind="stable").astype(np.int64, copy=False)
    return np.lexsort(keys.T[::-1]).astype(np.int64, copy=False)


def _row_diff(sorted_keys: I64) -> npt.NDArray[np.bool_]:
    """Boolean ``d[i]``: row i+1 differs from row i."""
    n, k = sorted_keys.shape
    if k == 0:
        return np.zeros(max(n - 1, 0), dtype=bool)
    d = sorted_keys[1:, 0] != sorted_keys[:-1, 0]
    for j in range(1, k):
        d |= sorted_keys[1:, j] != sorted_keys[:-1, j]
    return d


def group_starts(sorted_keys: I64) -> I64:
    """Start positions of the runs of equal rows in a sorted key matrix.

    >>> group_starts(np.array([[1, 1], [1, 1], [1, 2], [3, 0]])).tolist()
    [0, 2, 3]
    """
    n = sorted_keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate(([True], _row_diff(sorted_keys)))).astype(np.int64)


def is_sorted_unique(keys: I64) -> bool:
    """True when the rows are strictly increasing (sorted, no duplicates)."""
    n, k = keys.shape
    if n <= 1:
        return True
    if k == 0:
        return False
    # Strictly increasing iff for every adjacent pair the first differing column increases.
    gt = np.zeros(n - 1, dtype=bool)
    undecided = np.ones(n - 1, dtype=bool)
    for j in range(k):
        a, b = keys[:-1, j], keys[1:, j]
        gt |= undecided & (b > a)
        if np.any(undecided & (b < a)):
            return False
        undecided &= b == a
    return bool(np.all(gt))
