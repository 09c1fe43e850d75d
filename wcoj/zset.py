"""Columnar Z-sets with checked int64 weights.

A Z-set maps rows (tuples of ``k`` int64 values) to non-zero integer weights. It is stored
as ``keys: int64[n, k]`` plus ``weights: int64[n]``, *consolidated*: rows sorted
lexicographically, unique, no zero weight. Arrays are read-only; every operation returns a
new Z-set. Z-sets form an abelian group under ``+`` (DBSP §2), and weight arithmetic is
checked: an overflow raises ``WeightOverflowError`` before anything is built.

Relies on ``wcoj.rows`` (ordering, packing) and ``wcoj.kernels.zsets`` (checked
arithmetic). Used by every operator of the circuit runtime, by the joins and by the indexes.

>>> a = ZSet.from_rows([(1, 2), (2, 3)])
>>> b = ZSet.from_dict({(2, 3): -1, (3, 1): 2})
>>> (a + b).to_dict()
{(1, 2): 1, (3, 1): 2}
>>> (a - a).is_empty()
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from wcoj.errors import ArityMismatchError, InputError, WeightOverflowError
from wcoj.kernels import zsets as wk
from wcoj.kernels.memory import read_only
from wcoj.kernels.zsets import SMALL_ROWS, merge_rows_into, sort_small_into
from wcoj import config
from wcoj.rows import is_sorted_unique, packed_sort, packing_for, sorted_runs, table_fits

__all__ = ["ZSet", "consolidate", "consolidate_sorted_parts", "checked_weights", "raise_overflow", "SMALL_ROWS"]

I64 = npt.NDArray[np.int64]
_I64_MIN, _I64_MAX = int(wk.I64_MIN), int(wk.I64_MAX)
SMALL_TOTAL = 64  # total() adds up to this many weights in Python (no allocation, no kernel call)


def raise_overflow(op: str, left: Any, right: Any, row: int | tuple) -> None:
    """Raise the ``WeightOverflowError`` for ``left op right`` at ``row`` (index or tuple)."""
    raise WeightOverflowError(
        f"weight {int(left)} {op} {int(right)} does not fit in int64 (row {row})"
    )


def checked_weights(weights: Any, n: int | None = None) -> I64:
    """Validate user weights: integers only, finite, within int64; return an int64 array.

    >>> checked_weights([1, -2]).tolist()
    [1, -2]
    >>> checked_weights(np.array([1.0, 2.5]))
    Traceback (most recent call last):
    ...
    wcoj.errors.InputError: weights must be integers; row 1 holds np.float64(2.5) (float64)
    """
    if isinstance(weights, np.ndarray):
        arr = weights
    else:
        lst = list(weights)
        for i, w in enumerate(lst):
            if isinstance(w, bool) or not isinstance(w, (int, np.integer)):
                raise InputError(f"weights must be integers; row {i} holds {w!r}")
            if not _I64_MIN <= int(w) <= _I64_MAX:
                raise WeightOverflowError(f"weight {int(w)} does not fit in int64 (row {i})")
        arr = np.array(lst, dtype=np.int64) if lst else np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        bad = 0
        if arr.dtype.kind == "f":
            flat = arr.reshape(-1)
            nonint = ~np.isfinite(flat) | (flat != np.round(flat))
            bad = int(np.argmax(nonint)) if nonint.any() else 0
        raise InputError(
            f"weights must be integers; row {bad} holds {arr.reshape(-1)[bad]!r} ({arr.dtype})"
            if arr.size else f"weights must be integers, got dtype {arr.dtype}"
        )
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > _I64_MAX:
        row = int(np.argmax(arr > _I64_MAX))
        raise WeightOverflowError(f"weight {int(arr[row])} does not fit in int64 (row {row})")
    arr = np.ascontiguousarray(arr, dtype=np.int64).reshape(-1)
    if n is not None and arr.shape[0] != n:
        raise InputError(f"expected {n} weights (one per row), got {arr.shape[0]}")
    return arr


def _as_keys(keys: Any, arity: int | None = None) -> I64:
    arr = np.asarray(keys)
    if arr.dtype.kind not in "iub" and arr.size:
        raise InputError(f"keys must be int64 ids, got dtype {arr.dtype}; intern values first")
    if arr.ndim == 1 and arity is not None and arity != 1 and arr.size == 0:
        arr = arr.reshape(0, arity)
    elif arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise InputError(f"keys must be a 2-d array (rows x columns), got shape {arr.shape}")
    if arity is not None and arr.shape[1] != arity:
        raise ArityMismatchError("keys", arity, arr.shape[1])
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > _I64_MAX:
        raise InputError("key values must fit in int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def consolidate(keys: Any, weights: Any) -> tuple[I64, I64]:
    """Sort rows, add the weights of equal rows, drop rows whose weight is 0.

    Complexity: O(n log n) for the sort (one int64 argsort when the columns pack into
    63 bits), O(n) when the input is already sorted and unique.

    >>> k, w = consolidate(np.array([[2, 1], [1, 5], [2, 1]]), np.array([1, 4, -1]))
    >>> k.tolist(), w.tolist()
    ([[1, 5]], [4])
    """
    keys = _as_keys(keys)
    return _consolidated(keys, checked_weights(weights, keys.shape[0]))


def _consolidated(keys: I64, weights: I64) -> tuple[I64, I64]:
    """``consolidate`` of arrays already checked (``_as_keys``, ``checked_weights``)."""
    n = keys.shape[0]
    if n <= 1:  # sorted and unique already (a kernel call would cost more than the rest);
        # copies, as the small sort gives: the Z-set freezes its arrays, not the caller's
        keep = n if n == 0 or weights[0] != 0 else 0
        return keys[:keep].copy(), weights[:keep].copy()
    if n <= SMALL_ROWS and keys.shape[1]:  # a tick's few rows: one kernel call
        out_k, out_w = np.empty_like(keys), np.empty(n, dtype=np.int64)
        m, bad = sort_small_into(read_only(keys), read_only(weights), out_k, out_w)
        if bad >= 0:
            row = keys[bad]
            _raise_sum_overflow(row, weights[(keys == row).all(axis=1)])
        return out_k[:m], out_w[:m]
    if is_sorted_unique(keys):
        keep = weights != 0
        if keep.all():
            return keys, weights
        return keys[keep], weights[keep]
    return _sum_runs(keys, weights, merge=False)


def _sum_runs(keys: I64, weights: I64, merge: bool) -> tuple[I64, I64]:
    """Consolidate validated arrays: sort, add the weights of equal rows, drop zeros.

    Weights are added in input order within a run (the sort is stable), and every partial
    sum is checked, so whether an extreme run overflows does not depend on the sort.
    Many rows whose packed keys have few possible values (``config.DENSE_SUM_SLOTS``) are
    summed in a table of one slot per key instead of sorted (``dense_sums_into``).
    """
    n = keys.shape[0]
    p = packing_for([keys]) if keys.shape[1] else None
    if not merge and n >= config.RADIX_MIN_ROWS and table_fits(p, n):
        packed = p.pack(keys)
        size = p.slots
        out_keys, sums = np.empty(min(n, size), dtype=np.int64), np.empty(min(n, size), dtype=np.int64)
        m, bad = wk.dense_sums_into(packed, weights, np.zeros(size, dtype=np.int64), out_keys, sums)
        if bad < 0:
            return p.unpack(out_keys[:m]), sums[:m].copy()
        # an overflow: the sort below names the first offending row in row order
    ps = packed_sort(keys, merge, p) if p is not None else None
    if ps is None:
        order, starts, run_keys = sorted_runs(keys, merge=merge)
        w = weights[order]
        sums = np.empty(starts.shape[0], dtype=np.int64)
        bad = wk.segment_sum_into(w, starts, sums)
        if bad >= 0:
            hi = starts[bad + 1] if bad + 1 < starts.shape[0] else w.shape[0]
            _raise_sum_overflow(run_keys[bad], w[starts[bad]:hi])
        keep = sums != 0
        if keep.all():
            return run_keys, sums
        return run_keys[keep], sums[keep]
    p, order, packed = ps
    pos, sums = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    w = weights[order]
    m, bad = wk.run_sums_into(packed, w, pos, sums)
    if bad >= 0:
        hi = bad + int(np.searchsorted(packed[bad:], packed[bad], side="right"))
        _raise_sum_overflow(keys[order[bad]], w[bad:hi])
    return p.unpack(packed[pos[:m]]), sums[:m].copy()


def _raise_sum_overflow(row: I64, w: I64) -> None:
    acc = x = 0
    for x in w.tolist():
        if not _I64_MIN <= acc + x <= _I64_MAX:
            break
        acc += x
    raise WeightOverflowError(
        f"weights of row {tuple(row.tolist())} sum beyond int64: {acc} + {x} does not fit"
    )


def _merge_plus(a_keys: I64, a_weights: I64, b_keys: I64, b_weights: I64) -> tuple[I64, I64]:
    """The plus of two consolidated Z-sets as one linear merge of their rows."""
    n = a_keys.shape[0] + b_keys.shape[0]
    out_keys = np.empty((n, a_keys.shape[1]), dtype=np.int64)
    out_w = np.empty(n, dtype=np.int64)
    m, bad = merge_rows_into(read_only(a_keys), read_only(a_weights), read_only(b_keys), read_only(b_weights),
                             out_keys, out_w)
    if bad >= 0:
        row = a_keys[bad]
        at = int(np.flatnonzero((b_keys == row).all(axis=1))[0])
        _raise_sum_overflow(row, np.array([a_weights[bad], b_weights[at]]))
    return out_keys[:m], out_w[:m]


def _sum_adjacent(keys: I64, weights: I64) -> tuple[I64, I64]:
    """Consolidate rows sorted with equal rows adjacent: one linear pass, no sort."""
    n = keys.shape[0]
    if n == 0:
        return keys, weights
    out_k, out_w = np.empty_like(keys), np.empty(n, dtype=np.int64)
    m, bad = wk.sum_adjacent_into(keys, weights, out_k, out_w)
    if bad >= 0:
        row = keys[bad]
        _raise_sum_overflow(row, weights[(keys == row).all(axis=1)])
    return out_k[:m], out_w[:m]


def consolidate_sorted_parts(parts: list[tuple[I64, I64]], arity: int) -> ZSet:
    """The consolidated sum of parts whose rows are each already sorted (equal rows
    adjacent, maybe repeated): a linear pass per part and pairwise linear merges (the
    smallest first), instead of sorting their concatenation.

    >>> a = (np.array([[1, 2], [1, 2], [3, 0]]), np.array([1, 1, 1]))
    >>> b = (np.array([[0, 5], [3, 0]]), np.array([2, -1]))
    >>> consolidate_sorted_parts([a, b], 2).to_dict()
    {(0, 5): 2, (1, 2): 2}
    """
    parts = [(k, w) for k, w in parts if len(w)]
    if not parts:
        return ZSet.empty(arity)
    if arity == 0:  # rows without columns (a cross product's key): all rows are equal
        return ZSet.from_arrays(np.zeros((sum(len(w) for _, w in parts), 0), dtype=np.int64),
                                np.concatenate([w for _, w in parts]), arity=0)
    zs = [ZSet(*_sum_adjacent(np.ascontiguousarray(k, dtype=np.int64).reshape(len(w), arity),
                              np.ascontiguousarray(w, dtype=np.int64)))
          for k, w in parts]
    zs.sort(key=len, reverse=True)
    while len(zs) > 1:
        b, a = zs.pop(), zs.pop()
        zs.append(a.plus(b))
        zs.sort(key=len, reverse=True)
    return zs[0]


_EMPTIES: dict = {}  # ZSet.empty per arity


class ZSet:
    """A consolidated Z-set of int64 rows with int64 weights.

    Build one with ``ZSet.from_rows``, ``ZSet.from_dict``, ``ZSet.from_arrays`` or
    ``ZSet.empty``; the plain constructor trusts its (already consolidated) arguments.

    >>> z = ZSet.from_rows([(2, 1), (1, 5), (2, 1)], [1, 4, 1])
    >>> z
    ZSet(arity=2, {(1, 5): 4, (2, 1): 2})
    >>> z.distinct().to_dict()
    {(1, 5): 1, (2, 1): 1}
    """

    __slots__ = ("keys", "weights")

    def __init__(self, keys: I64, weights: I64):
        keys.setflags(write=False)  # inline: every tick makes a few
        weights.setflags(write=False)
        self.keys: I64 = keys
        self.weights: I64 = weights

    # ---------------------------------------------------------------- construction
    @classmethod
    def empty(cls, arity: int) -> ZSet:
        """The zero of the group, for rows of ``arity`` columns (one shared instance per
        arity: its arrays are read-only, and every tick asks for a few)."""
        z = _EMPTIES.get(arity)
        if z is None:
            z = _EMPTIES[arity] = cls(np.zeros((0, arity), dtype=np.int64), np.zeros(0, dtype=np.int64))
        return z

    @classmethod
    def from_arrays(cls, keys: Any, weights: Any = None, arity: int | None = None) -> ZSet:
        """Consolidate ``keys`` (n x k ints) with ``weights`` (default: all 1). Large
        int64 arrays already consolidated are kept as they are, not copied, and made
        read-only."""
        keys = _as_keys(keys, arity)
        if weights is None:
            weights = np.ones(keys.shape[0], dtype=np.int64)
        return cls(*_consolidated(keys, checked_weights(weights, keys.shape[0])))

    @classmethod
    def from_checked(cls, keys: I64, weights: I64) -> ZSet:
        """``from_arrays`` of arrays the engine made itself (``int64[n, k]`` keys, C order,
        ``int64[n]`` weights): consolidated without checking them again (a one-datom
        transaction builds three Z-sets, and the checks cost as much as the rest)."""
        return cls(*_consolidated(keys, weights))

    @classmethod
    def from_rows(cls, rows: Iterable[Iterable[int]], weights: Iterable[int] | None = None,
                  arity: int | None = None) -> ZSet:
        """Build from Python tuples of ints; every row must have the same arity."""
        rows = [tuple(r) for r in rows]
        if arity is None:
            if not rows:
                raise InputError("cannot infer the arity of an empty Z-set; pass arity=")
            arity = len(rows[0])
        for i, r in enumerate(rows):
            if len(r) != arity:
                raise ArityMismatchError(f"row {i} {r}", arity, len(r))
            for v in r:
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise InputError(f"row {i} {r} holds {v!r}; Z-set values are int64 ids")
                if not _I64_MIN <= int(v) <= _I64_MAX:
                    raise InputError(f"row {i} {r}: {int(v)} does not fit in int64")
        keys = np.array(rows, dtype=np.int64).reshape(len(rows), arity)
        w = np.ones(len(rows), dtype=np.int64) if weights is None else checked_weights(weights, len(rows))
        return cls(*consolidate(keys, w))

    @classmethod
    def from_dict(cls, d: Mapping[tuple, int], arity: int | None = None) -> ZSet:
        """Build from ``{row: weight}``."""
        return cls.from_rows(list(d.keys()), list(d.values()), arity=arity)

    # ---------------------------------------------------------------- views
    @property
    def arity(self) -> int:
        """Number of columns of every row."""
        return int(self.keys.shape[1])

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def is_empty(self) -> bool:
        """True for the zero Z-set."""
        return self.keys.shape[0] == 0

    def to_dict(self) -> dict[tuple[int, ...], int]:
        """``{row: weight}`` with Python ints."""
        return dict(zip(map(tuple, self.keys.tolist()), self.weights.tolist()))

    def to_rows(self) -> list[tuple[tuple[int, ...], int]]:
        """``[(row, weight), ...]`` in row order, Python ints."""
        return list(zip(map(tuple, self.keys.tolist()), self.weights.tolist()))

    def total(self) -> int:
        """Sum of all weights (the size of a multiset), checked: raises
        ``WeightOverflowError`` when it does not fit in int64 (above ``SMALL_TOTAL`` rows,
        also when a partial sum does not). A tick's few rows are added as Python ints."""
        if self.weights.shape[0] <= SMALL_TOTAL:
            t = sum(self.weights.tolist())
            if not _I64_MIN <= t <= _I64_MAX:
                raise WeightOverflowError(f"sum of all weights {t} does not fit in int64")
            return t
        out = np.empty(1, dtype=np.int64)
        if wk.segment_sum_into(self.weights, np.zeros(1, dtype=np.int64), out) >= 0:
            raise WeightOverflowError("sum of all weights does not fit in int64")
        return int(out[0]) if len(self) else 0

    def check(self) -> None:
        """Assert the invariants (sorted unique rows, non-zero int64 weights, read-only)."""
        assert self.keys.dtype == np.int64 and self.weights.dtype == np.int64
        assert self.keys.ndim == 2 and self.weights.shape == (self.keys.shape[0],)
        assert is_sorted_unique(self.keys), "rows not sorted and unique"
        assert np.all(self.weights != 0), "zero weight present"
        assert not self.keys.flags.writeable and not self.weights.flags.writeable

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ZSet):
            return NotImplemented
        return (self.keys.shape == other.keys.shape and np.array_equal(self.keys, other.keys)
                and np.array_equal(self.weights, other.weights))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        items = self.to_rows()
        body = ", ".join(f"{k}: {w}" for k, w in items[:8])
        more = f", ... {len(items) - 8} more" if len(items) > 8 else ""
        return f"ZSet(arity={self.arity}, {{{body}{more}}})"

    # ---------------------------------------------------------------- the group
    def _same_arity(self, other: ZSet, op: str) -> None:
        if not isinstance(other, ZSet):
            raise TypeError(f"cannot {op} ZSet and {type(other).__name__}")
        if other.arity != self.arity:
            raise ArityMismatchError(f"{op} of Z-sets", self.arity, other.arity,
                                     f"left has {self.arity} columns, right has {other.arity}")

    def plus(self, other: ZSet) -> ZSet:
        """``a + b``: add weights row by row (checked), dropping zeros."""
        self._same_arity(other, "plus")
        if other.is_empty():
            return self
        if self.is_empty():
            return other
        return ZSet(*_merge_plus(self.keys, self.weights, other.keys, other.weights))

    def negate(self) -> ZSet:
        """``-a``: every weight negated (checked: -INT64_MIN does not fit)."""
        bad = int(np.argmax(self.weights == _I64_MIN)) if len(self.weights) else 0
        if len(self.weights) and self.weights[bad] == _I64_MIN:
            raise WeightOverflowError(f"weight {int(self.weights[bad])} cannot be negated in int64 "
                                      f"(row {tuple(self.keys[bad].tolist())})")
        return ZSet(self.keys, -self.weights)

    def minus(self, other: ZSet) -> ZSet:
        """``a - b = a + (-b)``."""
        self._same_arity(other, "minus")
        return self.plus(other.negate())

    def scale(self, c: int) -> ZSet:
        """``c * a``: every weight times the integer ``c`` (checked)."""
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise InputError(f"scale factor must be an integer, got {c!r}")
        if c == 0:
            return ZSet.empty(self.arity)
        if not _I64_MIN <= int(c) <= _I64_MAX:
            raise WeightOverflowError(f"scale factor {int(c)} does not fit in int64")
        out = np.empty_like(self.weights)
        bad = wk.multiply_into(self.weights, np.full(len(self.weights), c, dtype=np.int64), out)
        if bad >= 0:
            raise_overflow("*", self.weights[bad], c, tuple(self.keys[bad].tolist()))
        return ZSet(self.keys, out)

    __add__ = plus
    __sub__ = minus
    __neg__ = negate

    def __mul__(self, c: int) -> ZSet:
        return self.scale(c)

    __rmul__ = __mul__

    # ---------------------------------------------------------------- relational
    def filter(self, predicate: Callable, rowwise: bool = False) -> ZSet:
        """Keep the rows where ``predicate`` holds. Linear: ``filter(a + b) = filter(a) + filter(b)``.

        ``predicate`` gets the whole read-only ``keys`` matrix and returns a boolean mask;
        with ``rowwise=True`` it gets one row tuple of Python ints and returns a bool.

        >>> z = ZSet.from_dict({(0, 0): 1, (1, 0): 2, (2, 1): -3})
        >>> z.filter(lambda k: k[:, 0] >= 1).to_dict()
        {(1, 0): 2, (2, 1): -3}
        """
        if rowwise:
            mask = np.fromiter((bool(predicate(r)) for r in map(tuple, self.keys.tolist())),
                               dtype=bool, count=len(self))
        else:
            mask = np.asarray(predicate(self.keys), dtype=bool).reshape(-1)
            if mask.shape[0] != len(self):
                raise InputError(f"filter predicate returned {mask.shape[0]} flags for {len(self)} rows")
        return ZSet(self.keys[mask], self.weights[mask])

    def map(self, fn: Callable, rowwise: bool = False, arity: int | None = None) -> ZSet:
        """Transform every row; weights of rows that collide add up. Linear.

        ``fn`` gets the ``keys`` matrix and returns a new ``(n, k')`` integer matrix (a 1-d
        result is one column); with ``rowwise=True`` it maps one row tuple to another.

        >>> ZSet.from_rows([(1, 2), (1, 3)]).map(lambda k: k[:, :1]).to_dict()
        {(1,): 2}
        """
        if rowwise:
            rows = [tuple(fn(r)) for r in map(tuple, self.keys.tolist())]
            if not rows:
                return ZSet.empty(self.arity if arity is None else arity)
            return ZSet.from_rows(rows, self.weights, arity=arity)
        new = np.asarray(fn(self.keys))
        if new.ndim == 1:
            new = new.reshape(-1, 1)
        if new.shape[0] != len(self):
            raise InputError(f"map function returned {new.shape[0]} rows for {len(self)} input rows")
        return ZSet.from_arrays(new, self.weights, arity=arity)

    def select(self, columns: Iterable[int]) -> ZSet:
        """Project onto ``columns`` (in that order), adding the weights of collisions."""
        cols = list(columns)
        return ZSet.from_arrays(self.keys[:, cols], self.weights, arity=len(cols))

    def distinct(self) -> ZSet:
        """Rows with positive weight, each with weight 1 (DBSP's ``distinct``).

        >>> ZSet.from_dict({(0,): 1, (1,): 2, (2,): -1}).distinct().to_dict()
        {(0,): 1, (1,): 1}
        """
        keep = self.weights > 0
        return ZSet(self.keys[keep], np.ones(int(keep.sum()), dtype=np.int64))

    def positive(self) -> ZSet:
        """Rows with positive weight, weights kept."""
        keep = self.weights > 0
        return ZSet(self.keys[keep], self.weights[keep])

    def index_with(self, key_columns: Iterable[int]):
        """Group by ``key_columns``: an ``IndexedZSet`` whose rows are (key, whole row)."""
        from wcoj.indexed import IndexedZSet

        return IndexedZSet.from_zset(self, list(key_columns))

    def weight_of(self, row: Iterable[int]) -> int:
        """The weight of one row (0 when absent). O(log n) per call."""
        row = tuple(row)
        if len(row) != self.arity:
            raise ArityMismatchError(f"row {row}", self.arity, len(row))
        if not len(self):
            return 0
        lo, hi = 0, len(self)
        for j, v in enumerate(row):
            col = self.keys[lo:hi, j]
            lo, hi = lo + int(np.searchsorted(col, v, "left")), lo + int(np.searchsorted(col, v, "right"))
            if lo >= hi:
                return 0
        return int(self.weights[lo])
