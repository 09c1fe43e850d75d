"""Indexed Z-sets: rows grouped by a key, the bilinear join, and per-key aggregates.

An indexed Z-set holds rows ``(key..., value...)`` with weights, consolidated and sorted by
key then value, so each key's values form one contiguous run. ``ZSet.index_with(cols)``
builds one whose value is the whole original row (as in DBSP's ``index_with``).

The join is a sort-merge over the key runs of both sides, vectorised in numpy: matching
runs are crossed with ``np.repeat`` arithmetic, weights multiply with an overflow check.
Output rows come out already sorted and unique, so no second sort is needed.

Relies on ``wcoj.zset``, ``wcoj.rows`` and ``wcoj.kernels.zsets``. Used by the circuit
operators (``join_stream``, ``join_trace``, ``aggregate``) and the binary-join baseline.

>>> a = IndexedZSet.from_pairs([[0], [1], [2]], [[1], [2], [2]], [1, 2, 1])
>>> b = IndexedZSet.from_pairs([[0], [1], [1]], [[1], [3], [4]], [1, 1, -1])
>>> a.join(b).to_dict()
{(0, 1, 1): 1, (1, 2, 3): 2, (1, 2, 4): -2}
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from wcoj.errors import ArityMismatchError, InputError, WeightOverflowError
from wcoj.kernels import zsets as wk
from wcoj.rows import Columns, group_starts, packing_for, row_order
from wcoj.zset import ZSet, checked_weights, raise_overflow

__all__ = ["IndexedZSet", "AGGREGATES"]

I64 = npt.NDArray[np.int64]
AGGREGATES = ("count", "sum", "min", "max", "avg")


def _dense_key_ids(ka: I64, kb: I64) -> tuple[I64, I64]:
    """Map key rows of two matrices to int64 ids that preserve row order and equality."""
    if ka.shape[1] == 1:  # one key column is its own id
        return ka[:, 0], kb[:, 0]
    p = packing_for([ka, kb])
    if p is not None:
        return p.pack(ka), p.pack(kb)
    both = np.concatenate([ka, kb])
    order = row_order(both)
    starts = group_starts(both[order])
    rank = np.zeros(both.shape[0], dtype=np.int64)
    step = np.zeros(both.shape[0], dtype=np.int64)
    step[starts[1:]] = 1
    rank[order] = np.cumsum(step)
    return rank[: ka.shape[0]], rank[ka.shape[0]:]


def _match_sorted(ua: I64, ub: I64) -> tuple[I64, I64]:
    """Positions ``(ia, ib)`` with ``ua[ia] == ub[ib]``, for strictly increasing ``ua``, ``ub``.

    A binary search per value of ``ua``; ``np.intersect1d`` would sort both again.
    """
    if ub.shape[0] == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    pos = np.searchsorted(ub, ua)
    np.minimum(pos, ub.shape[0] - 1, out=pos)
    ia = np.flatnonzero(ub[pos] == ua)
    return ia, pos[ia]


@functools.lru_cache(maxsize=256)
def _join_maps(a_arity: int, nk: int, n_all: int, cols: tuple[int, ...] | None) -> tuple[I64, I64]:
    """``cross_rows_into``'s column maps for a join of rows of ``a_arity`` columns with
    rows of ``n_all - a_arity + nk`` on ``nk`` key columns, keeping ``cols`` of the joined
    row (all when None). Cached: a nested join makes the same few calls many times."""
    src = np.arange(n_all, dtype=np.int64) if cols is None else np.array(cols, dtype=np.int64)
    out_c = np.arange(src.shape[0], dtype=np.int64)
    from_a = src < a_arity
    return np.stack([out_c[from_a], src[from_a]]), np.stack([out_c[~from_a], src[~from_a] - a_arity + nk])


class IndexedZSet:
    """Rows ``(key..., value...)`` with weights, sorted by key then value.

    Parameters
    ----------
    zset : ZSet
        The rows, key columns first; consolidated (so already sorted by key).
    n_key : int
        How many leading columns form the key.
    """

    __slots__ = ("zset", "n_key")

    def __init__(self, zset: ZSet, n_key: int):
        if not 0 <= n_key <= zset.arity:
            raise ArityMismatchError("indexed Z-set", zset.arity, n_key,
                                     f"key of {n_key} columns in rows of {zset.arity}")
        self.zset, self.n_key = zset, n_key

    @classmethod
    def from_zset(cls, z: ZSet, key_columns: list[int]) -> IndexedZSet:
        """Index ``z`` by ``key_columns``; the value is the whole row."""
        for c in key_columns:
            if not 0 <= c < z.arity:
                raise ArityMismatchError(f"index_with({key_columns})", z.arity, c + 1,
                                         f"column {c} does not exist in rows of {z.arity}")
        keys = np.concatenate([z.keys[:, key_columns], z.keys], axis=1)
        if key_columns == list(range(len(key_columns))):  # a prefix: rows already in key order
            return cls(ZSet(keys, z.weights), len(key_columns))
        return cls(ZSet.from_arrays(keys, z.weights), len(key_columns))

    @classmethod
    def from_pairs(cls, keys: Any, values: Any, weights: Any = None) -> IndexedZSet:
        """Build from parallel key and value matrices (and weights, default 1)."""
        k = np.asarray(keys, dtype=np.int64)
        v = np.asarray(values, dtype=np.int64)
        k = k.reshape(len(k), -1) if k.ndim < 2 else k
        v = v.reshape(len(v), -1) if v.ndim < 2 else v
        if k.shape[0] != v.shape[0]:
            raise InputError(f"{k.shape[0]} keys but {v.shape[0]} values")
        w = np.ones(k.shape[0], dtype=np.int64) if weights is None else checked_weights(weights, k.shape[0])
        return cls(ZSet.from_arrays(np.concatenate([k, v], axis=1), w), k.shape[1])

    @classmethod
    def empty(cls, n_key: int, n_value: int) -> IndexedZSet:
        """The zero indexed Z-set."""
        return cls(ZSet.empty(n_key + n_value), n_key)

    @property
    def n_value(self) -> int:
        """Number of value columns."""
        return self.zset.arity - self.n_key

    def __len__(self) -> int:
        return len(self.zset)

    def is_empty(self) -> bool:
        return self.zset.is_empty()

    def to_dict(self) -> dict[tuple[int, ...], int]:
        """``{(key..., value...): weight}``."""
        return self.zset.to_dict()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexedZSet):
            return NotImplemented
        return self.n_key == other.n_key and self.zset == other.zset

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IndexedZSet(n_key={self.n_key}, {repr(self.zset)[5:-1]})"

    def _check_compatible(self, other: IndexedZSet, op: str) -> None:
        if self.n_key != other.n_key:
            raise ArityMismatchError(op, self.n_key, other.n_key,
                                     f"left key has {self.n_key} columns, right key {other.n_key}")

    def plus(self, other: IndexedZSet) -> IndexedZSet:
        """Add row by row (same key width)."""
        self._check_compatible(other, "plus")
        return IndexedZSet(self.zset.plus(other.zset), self.n_key)

    def negate(self) -> IndexedZSet:
        return IndexedZSet(self.zset.negate(), self.n_key)

    def minus(self, other: IndexedZSet) -> IndexedZSet:
        self._check_compatible(other, "minus")
        return IndexedZSet(self.zset.minus(other.zset), self.n_key)

    __add__, __sub__, __neg__ = plus, minus, negate

    # ---------------------------------------------------------------- join
    def join(self, other: IndexedZSet, fn: Callable[[I64], Any] | None = None) -> ZSet:
        """Bilinear join on equal keys: rows ``(key, left value, right value)``.

        Weights multiply: ``join(a, b)[k, u, v] = a[k, u] * b[k, v]``, so
        ``join(a1 + a2, b) = join(a1, b) + join(a2, b)`` (DBSP §3, bilinearity).
        ``fn``, if given, maps the output ``keys`` matrix to the columns to keep; a
        ``Columns`` projection is written as the rows are made.

        Complexity: O(|a| + |b| + |output|) after the key runs are found.

        >>> a = IndexedZSet.from_pairs([[1], [1]], [[5], [6]])
        >>> b = IndexedZSet.from_pairs([[1]], [[7]], [2])
        >>> a.join(b).to_dict()
        {(1, 5, 7): 2, (1, 6, 7): 2}
        >>> a.join(b, Columns([2])).to_dict()
        {(7,): 4}
        """
        cols = fn if isinstance(fn, Columns) else None
        keys, w = self.join_rows(other, cols)
        if cols is not None:
            return ZSet.from_arrays(keys, w, arity=len(cols.cols))
        out = ZSet(keys, w)  # sorted and unique by construction
        return out if fn is None else out.map(fn)

    def join_rows(self, other: IndexedZSet, cols: Columns | None = None) -> tuple[I64, I64]:
        """``join``'s rows and weights before any consolidation: sorted and unique, or,
        with ``cols``, only those columns of them (neither sorted nor unique)."""
        self._check_compatible(other, "join")
        a, b, nk = self.zset, other.zset, self.n_key
        n_all = a.arity + b.arity - nk
        n_out = n_all if cols is None else len(cols.cols)
        if a.is_empty() or b.is_empty():
            return np.zeros((0, n_out), dtype=np.int64), np.zeros(0, dtype=np.int64)
        ida, idb = _dense_key_ids(a.keys[:, :nk], b.keys[:, :nk])
        sa = np.flatnonzero(np.concatenate(([True], ida[1:] != ida[:-1])))
        sb = np.flatnonzero(np.concatenate(([True], idb[1:] != idb[:-1])))
        ca = np.diff(np.append(sa, ida.shape[0]))
        cb = np.diff(np.append(sb, idb.shape[0]))
        ia, ib = _match_sorted(ida[sa], idb[sb])
        cnt = ca[ia] * cb[ib]
        total = int(cnt.sum())
        keys = np.empty((total, n_out), dtype=np.int64)
        w = np.empty(total, dtype=np.int64)
        a_map, b_map = _join_maps(a.arity, nk, n_all, None if cols is None else cols.cols)
        bi, bj = wk.cross_rows_into(a.keys, b.keys, sa[ia], ca[ia], sb[ib], cb[ib], a.weights, b.weights,
                                    a_map, b_map, keys, w)
        if bi >= 0:
            row = tuple(a.keys[bi].tolist()) + tuple(b.keys[bj, nk:].tolist())
            raise_overflow("*", a.weights[bi], b.weights[bj], row)
        return keys, w

    # ---------------------------------------------------------------- aggregate
    def aggregate(self, kind: str, column: int = 0) -> ZSet:
        """Per key, one row ``(key..., result...)`` with weight 1.

        ``kind`` is one of ``count`` (sum of weights), ``sum`` (of value column
        ``column`` times weight), ``min`` and ``max`` (over rows of positive weight), and
        ``avg``, returned exactly as two columns ``(sum, count)`` because Z-set values are
        int64 (divide at the edge). Keys whose count is 0 produce no ``count``/``avg`` row.

        >>> iz = IndexedZSet.from_pairs([[1], [1], [2]], [[10], [20], [30]])
        >>> iz.aggregate("count").to_dict()
        {(1, 2): 1, (2, 1): 1}
        >>> iz.aggregate("avg").to_dict()
        {(1, 30, 2): 1, (2, 30, 1): 1}
        """
        if kind not in AGGREGATES:
            raise InputError(f"unknown aggregate {kind!r}; known: {', '.join(AGGREGATES)}")
        nk = self.n_key
        if kind != "count" and not 0 <= column < self.n_value:
            raise ArityMismatchError(f"aggregate {kind}", self.n_value, column + 1,
                                     f"value column {column} does not exist ({self.n_value} columns)")
        z = self.zset
        if kind in ("min", "max"):
            z = z.positive()
        width = {"avg": 2}.get(kind, 1)
        if z.is_empty():
            return ZSet.empty(nk + width)
        starts = group_starts(z.keys[:, :nk]) if nk else np.zeros(1, dtype=np.int64)
        groups = z.keys[starts, :nk]
        vals = np.ascontiguousarray(z.keys[:, nk + column]) if kind != "count" else None
        if kind in ("count", "avg"):
            counts = np.empty(starts.shape[0], dtype=np.int64)
            bad = wk.segment_sum_into(z.weights, starts, counts)
            if bad >= 0:
                raise WeightOverflowError(f"{kind}: the count of group {tuple(groups[bad].tolist())} "
                                          "does not fit in int64")
        if kind in ("sum", "avg"):
            sums = np.empty(starts.shape[0], dtype=np.int64)
            products = np.empty_like(z.weights)
            bad_row = wk.multiply_into(vals, z.weights, products)
            bad = wk.segment_sum_into(products, starts, sums) if bad_row < 0 else \
                int(np.searchsorted(starts, bad_row, side="right")) - 1
            if bad >= 0:
                raise WeightOverflowError(f"{kind}: the sum of group {tuple(groups[bad].tolist())} does not fit in int64")
        if kind == "count":
            keep = counts != 0
            res = counts[keep].reshape(-1, 1)
        elif kind == "sum":
            keep = np.ones(starts.shape[0], dtype=bool)
            res = sums.reshape(-1, 1)
        elif kind == "avg":
            keep = counts != 0
            res = np.stack([sums[keep], counts[keep]], axis=1)
        else:
            red = np.minimum if kind == "min" else np.maximum
            keep = np.ones(starts.shape[0], dtype=bool)
            res = red.reduceat(vals, starts).reshape(-1, 1)
        keys = np.concatenate([groups[keep], res], axis=1)
        return ZSet(np.ascontiguousarray(keys, dtype=np.int64), np.ones(keys.shape[0], dtype=np.int64))

    def group_keys(self) -> ZSet:
        """The distinct keys present (weight 1 each)."""
        if self.is_empty():
            return ZSet.empty(self.n_key)
        s = group_starts(self.zset.keys[:, : self.n_key]) if self.n_key else np.zeros(1, dtype=np.int64)
        return ZSet(np.ascontiguousarray(self.zset.keys[s, : self.n_key]), np.ones(s.shape[0], dtype=np.int64))

    def restrict(self, keys: Iterable[tuple[int, ...]] | ZSet) -> IndexedZSet:
        """The rows whose key is in ``keys`` (a Z-set of key rows, weights ignored)."""
        kz = keys if isinstance(keys, ZSet) else ZSet.from_rows(list(keys), arity=self.n_key)
        if kz.is_empty() or self.is_empty():
            return IndexedZSet.empty(self.n_key, self.n_value)
        ida, idk = _dense_key_ids(self.zset.keys[:, : self.n_key], kz.keys)
        mask = np.isin(ida, idk)
        return IndexedZSet(ZSet(self.zset.keys[mask], self.zset.weights[mask]), self.n_key)
