"""Row-wise helpers over int64 key matrices: ordering, packing, grouping, searching.

A key matrix is ``int64[n, k]``; rows compare lexicographically. When the columns' value
ranges fit together in 63 bits (the usual case for interned ids), rows are *packed* into
one int64 each, which preserves the lexicographic order, so one ``argsort`` or
``searchsorted`` over a 1-d array replaces a ``lexsort`` over k columns. Otherwise the
helpers fall back to ``np.lexsort`` and structured comparisons.

Relies on numpy, ``wcoj.config`` and the radix sort of ``wcoj.kernels.zsets``. Used by ``wcoj.zset`` (consolidation, joins) and by the trie
indexes in ``indexes``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from wcoj import config
from wcoj.kernels.memory import read_only
from wcoj.kernels.zsets import (SMALL_ROWS, column_bounds_into, pack_rows_into, radix_sort_into, sorted_order,
                                strictly_increasing)

__all__ = ["Columns", "Packing", "packing_for", "packing_within", "union_bounds", "table_fits", "NO_PACKING", "row_order",
           "packed_sort", "sorted_runs", "column_bounds", "group_starts", "is_sorted_unique"]

I64 = npt.NDArray[np.int64]


class Columns:
    """A projection of key matrices onto some of their columns, usable wherever a map
    function is: ``Columns([2, 0])(k)`` is ``k[:, [2, 0]]``. A join given one writes only
    those columns (``IndexedZSet.join``) instead of every column and then a copy, and two
    projections in a row compose into one (``then``).

    >>> Columns([2, 0])(np.array([[1, 2, 3]])).tolist()
    [[3, 1]]
    >>> Columns([2, 0]).then(Columns([1])).cols
    (0,)
    """

    __slots__ = ("cols",)

    def __init__(self, cols):
        self.cols = tuple(int(c) for c in cols)

    def __call__(self, keys: I64) -> I64:
        return keys[:, list(self.cols)]

    def then(self, other: Columns) -> Columns:
        """This projection followed by ``other``."""
        return Columns(self.cols[c] for c in other.cols)

    def __repr__(self) -> str:
        return f"Columns({list(self.cols)})"


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

    @property
    def n_bits(self) -> int:
        """How many low bits the packed values use (at most 63)."""
        if self.lows.shape[0] == 0:
            return 0
        return int(self.shifts[0]) + (int(self.highs[0]) - int(self.lows[0])).bit_length()

    @property
    def slots(self) -> int:
        """One more than the greatest packed row: the size of a table of one slot per row."""
        return 1 + int(np.sum((self.highs - self.lows) << self.shifts)) if self.lows.shape[0] else 1

    def kernel_args(self) -> tuple[I64, I64, I64]:
        """``(lows, spans, shifts)`` (read-only; ``spans`` = ``highs - lows``), as the
        table routes of ``kernels.lattice`` take a packing; ``NO_PACKING`` for none."""
        return read_only(self.lows), read_only(self.highs - self.lows), read_only(self.shifts)

    def pack(self, keys: I64) -> I64:
        """Pack the rows of ``keys`` (which must lie within the packing's ranges)."""
        out = np.empty(keys.shape[0], dtype=np.int64)
        pack_rows_into(read_only(keys), read_only(self.lows), read_only(self.shifts), out)
        return out

    def unpack(self, packed: I64) -> I64:
        """The rows that ``pack`` mapped to ``packed`` (its inverse).

        >>> p = packing_for([np.array([[3, 7], [1, 9]])])
        >>> p.unpack(p.pack(np.array([[3, 7], [1, 9]]))).tolist()
        [[3, 7], [1, 9]]
        """
        k = self.lows.shape[0]
        out = np.empty((packed.shape[0], k), dtype=np.int64)
        tmp = np.empty(packed.shape[0], dtype=np.int64)
        for j in range(k):
            np.right_shift(packed, self.shifts[j], out=tmp)
            if j:  # the first column owns every bit above its shift
                np.bitwise_and(tmp, (1 << (int(self.highs[j]) - int(self.lows[j])).bit_length()) - 1, out=tmp)
            np.add(tmp, self.lows[j], out=out[:, j])
        return out

    def covers(self, keys: I64) -> bool:
        """True when every value of ``keys`` lies within the packing's per-column ranges."""
        if keys.shape[0] == 0 or keys.shape[1] == 0:
            return True
        lows, highs = column_bounds(keys)
        return bool(np.all(lows >= self.lows) and np.all(highs <= self.highs))


def column_bounds(a: I64) -> tuple[I64, I64]:
    """Per column of ``a`` (at least one row): its least and its greatest value, in one
    pass over the rows (numpy's axis-0 reductions over a narrow matrix are ~10x slower).

    >>> [b.tolist() for b in column_bounds(np.array([[3, 7], [1, 9]]))]
    [[1, 7], [3, 9]]
    """
    lows, highs = np.empty(a.shape[1], dtype=np.int64), np.empty(a.shape[1], dtype=np.int64)
    column_bounds_into(read_only(a), lows, highs)
    return lows, highs


def packing_for(arrays: list[I64]) -> Packing | None:
    """A packing that covers every row of every array in ``arrays`` (same width), or None.

    None means the value ranges need more than 63 bits together.
    """
    k = arrays[0].shape[1]
    nonempty = [a for a in arrays if a.shape[0]]
    if not nonempty:
        z = np.zeros(k, dtype=np.int64)
        return Packing(z, z, z)
    if len(nonempty) == 1:  # the common case: no union (two numpy reductions, ~10 us)
        return packing_within(*column_bounds(nonempty[0]))
    return packing_within(*union_bounds([column_bounds(a) for a in nonempty]))


def union_bounds(parts: list[tuple[I64, I64]]) -> tuple[I64, I64]:
    """Per column, the least low and the greatest high of ``(lows, highs)`` pairs (at
    least one).

    >>> [b.tolist() for b in union_bounds([(np.array([1, 5]), np.array([2, 9])), (np.array([0, 6]), np.array([3, 7]))])]
    [[0, 5], [3, 9]]
    """
    return (np.min([p[0] for p in parts], axis=0).astype(np.int64),
            np.max([p[1] for p in parts], axis=0).astype(np.int64))


def table_fits(p: Packing | None, rows: int | None = None) -> bool:
    """Whether a table of one slot per row packed by ``p`` may be allocated: at most
    ``config.DENSE_SUM_MAX_BITS`` bits, and, given the ``rows`` it serves, at most
    ``config.DENSE_SUM_SLOTS`` slots per row (the rule of every table route).

    >>> table_fits(packing_within(np.array([0]), np.array([1000])), 100), table_fits(None)
    (False, False)
    """
    return p is not None and p.n_bits <= config.DENSE_SUM_MAX_BITS and \
        (rows is None or (1 << p.n_bits) <= config.DENSE_SUM_SLOTS * rows)


NO_PACKING = (read_only(np.zeros(0, dtype=np.int64)),) * 3
"""``Packing.kernel_args`` of no packing: the lattice kernels' row and lookup routes."""


def packing_within(lows: I64, highs: I64) -> Packing | None:
    """The packing of rows whose column ``j`` lies in ``[lows[j], highs[j]]``, or None
    when those ranges need more than 63 bits together.

    >>> packing_within(np.array([0, 10]), np.array([3, 11])).shifts.tolist()
    [1, 0]
    """
    k = lows.shape[0]
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


def _sort_packed(packed: I64, n_bits: int, merge: bool) -> tuple[I64, I64]:
    """Stable sort of packed rows: ``(order, packed[order])``.

    Many rows of few bits (``config.RADIX_MIN_ROWS``, ``RADIX_MAX_BITS``) take the radix
    sort kernel. Otherwise, when the packed values leave room for the row index in 64 bits, sort
    ``packed << idx_bits | index`` as uint64 *values* (a SIMD sort, several times faster
    than ``argsort``); the index in the low bits makes it stable and gives the permutation.
    ``merge`` picks the run-adaptive sort (timsort), linear for two sorted runs.
    """
    n = packed.shape[0]
    if not merge and n >= config.RADIX_MIN_ROWS and n_bits <= config.RADIX_MAX_BITS:
        order, out = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        radix_sort_into(np.ascontiguousarray(packed), n_bits, order, out)
        return order, out
    idx_bits = max((n - 1).bit_length(), 1)
    kind = "stable" if merge else None
    if n_bits + idx_bits > 64:
        order = np.argsort(packed, kind="stable").astype(np.int64, copy=False)
        return order, packed[order]
    shift = np.uint64(idx_bits)
    v = packed.view(np.uint64) << shift
    v |= np.arange(n, dtype=np.uint64)
    v.sort(kind=kind)
    order = (v & np.uint64((1 << idx_bits) - 1)).view(np.int64)
    v >>= shift
    return order, v.view(np.int64)


def sorted_runs(keys: I64, merge: bool = False) -> tuple[I64, I64, I64]:
    """The stable row-sorting permutation, where runs of equal rows start, and their rows.

    Returns ``(order, starts, run_keys)``: ``keys[order]`` is sorted lexicographically, its
    runs of equal rows begin at ``starts`` (increasing, ``starts[0] == 0`` when non-empty)
    and ``run_keys == keys[order[starts]]`` (unpacked from the sorted values when the
    columns pack, which avoids a random gather of the rows). ``merge=True`` says the rows
    are a few sorted runs laid end to end (the concatenation of two consolidated Z-sets),
    which a run-adaptive sort merges in linear time.

    Complexity: O(n log n); one uint64 sort when columns and row index pack in 64 bits.

    >>> order, starts, run_keys = sorted_runs(np.array([[2, 1], [1, 5], [2, 1]]))
    >>> order.tolist(), starts.tolist(), run_keys.tolist()
    ([1, 0, 2], [0, 1], [[1, 5], [2, 1]])
    """
    n, k = keys.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), keys[:0]
    if k == 0:
        return np.arange(n, dtype=np.int64), np.zeros(1, dtype=np.int64), keys[:1]
    ps = packed_sort(keys, merge)
    if ps is None:
        order = np.lexsort(keys.T[::-1]).astype(np.int64, copy=False)
        starts = group_starts(keys[order])
        return order, starts, keys[order[starts]]
    p, order, packed = ps
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(packed[1:], packed[:-1], out=change[1:])
    starts = np.flatnonzero(change).astype(np.int64, copy=False)
    return order, starts, p.unpack(packed[starts])


def packed_sort(keys: I64, merge: bool = False, p: Packing | None = None) -> tuple[Packing, I64, I64] | None:
    """Stable row sort through a packing: ``(packing, order, packing.pack(keys)[order])``.

    None when the columns need more than 63 bits together (use ``np.lexsort`` then).
    ``merge`` as in ``sorted_runs``; ``p`` a packing of ``keys`` already made.

    >>> p, order, packed = packed_sort(np.array([[2, 1], [1, 5], [2, 1]]))
    >>> order.tolist(), p.unpack(packed).tolist()
    ([1, 0, 2], [[1, 5], [2, 1], [2, 1]])
    """
    p = p or packing_for([keys])
    if p is None:
        return None
    order, packed = _sort_packed(p.pack(keys), p.n_bits, merge)
    return p, order, packed


def row_order(keys: I64) -> I64:
    """A permutation that sorts the rows of ``keys`` lexicographically (stable).

    >>> row_order(np.array([[2, 1], [1, 5], [2, 0]])).tolist()
    [1, 2, 0]
    """
    n, k = keys.shape
    if k == 0 or n <= 1:
        return np.arange(n, dtype=np.int64)
    if n <= SMALL_ROWS:  # a tick's few rows: one merge sort call (1.3 us for 2 rows, 12 at 512)
        return sorted_order(read_only(np.ascontiguousarray(keys, dtype=np.int64)), n, 1)
    p = packing_for([keys])
    if p is not None:
        return _sort_packed(p.pack(keys), p.n_bits, merge=False)[0]
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
    """True when the rows are strictly increasing (sorted, no duplicates).

    >>> is_sorted_unique(np.array([[1, 2], [1, 3], [2, 0]])), is_sorted_unique(np.array([[1, 2], [1, 2]]))
    (True, False)
    """
    n, k = keys.shape
    if n <= 1:
        return True
    if k == 0:
        return False
    return bool(strictly_increasing(read_only(keys)))
