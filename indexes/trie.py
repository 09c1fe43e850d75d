"""Tries: an index's state, changed in place, and views that sum several tries.

A ``Trie`` holds one relation in one column order as a mutable trie
(``wcoj.tables.TrieTable``, changed by ``wcoj.kernels.store``): level by level, each
entry's children sorted in a segment with room to grow, so a tick of ``k`` changes is
applied in place in O(k log N) time plus the shifts inside the segments it touches, and
a lookup reads one structure, never a stack of runs. Level 0 is *dense* (position =
value - base, no search) when its values span at most ``config.DENSE_SPAN`` times their number,
as interned ids do; else sorted. When a level runs out of room the trie grows that
level's arrays; when most of a level is dead (segments freed or moved) it compacts. A
sorted level 0 that runs out of room is laid out again instead when its values now allow a
dense layout: a trie that transactions built from empty gets the O(1) removals of a dense
level 0 (a sorted one shifts the rest of the level for each value it loses), and a sparse
one keeps growing by copies.

A ``TrieView`` is a sum of tries (an index's state, plus a tick's delta as a compact
trie: ``wcoj.tables.TrieTable``) and implements ``wcoj``'s ``PrefixExtender`` protocol.

Relies on ``wcoj`` (tables, store kernels, Z-sets, errors). Used by ``indexes.index``.

>>> t = Trie.from_rows(np.array([[1, 2], [1, 3], [2, 3]]), np.array([1, 1, 1]))
>>> t.apply(np.array([[2, 3], [1, 4]]), np.array([-1, 1]))
>>> t.to_zset().to_dict()
{(1, 2): 1, (1, 3): 1, (1, 4): 1}
>>> v = TrieView([t.part])
>>> v.propose(np.array([[1], [2], [5]]))[1].tolist()
[2, 3, 4]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from wcoj import config
from wcoj.errors import ArityMismatchError, WeightOverflowError
from wcoj.rows import row_order
from wcoj.tables import (NEED_ROOM, OK, MutableTable, Stack, TableBlock, apply_rows, prefix_ranges, read_only,
                         row_weights)
from wcoj.zset import ZSet

__all__ = ["Trie", "TrieView"]

I64 = npt.NDArray[np.int64]


def _dense_range(lo: int, hi: int, n0: int) -> bool:
    """Whether level-0 values in ``[lo, hi]``, ``n0`` of them, are laid out dense
    (``config.DENSE_SPAN``, ``config.DENSE_MIN``)."""
    return n0 >= config.DENSE_MIN and hi - lo + 1 <= config.DENSE_SPAN * n0


class Trie:
    """One relation in one column order, changed in place.

    Build with ``from_rows`` or ``load``; change with ``apply``. ``part`` is the
    ``MutableTable`` the joins read: its table rows live in ``block`` (shared by the
    tries of one set of relations) and stay put when the trie grows; ``version`` counts
    growths, so a cached stack of tables knows when to re-stack.
    """

    __slots__ = ("arity", "part", "version")

    def __init__(self, arity: int, block: TableBlock | None = None):
        if arity < 1:
            raise ArityMismatchError("trie", 1, arity, "a trie needs at least one column")
        self.arity = arity
        self.part = MutableTable(block if block is not None else TableBlock(), arity, [16] * arity)
        self.version = 0

    def __repr__(self) -> str:
        return f"Trie(arity={self.arity}, rows={self.n_rows})"

    def __len__(self) -> int:
        return self.part.rows

    @property
    def n_rows(self) -> int:
        return self.part.rows

    # ------------------------------------------------------------------ building
    @classmethod
    def from_rows(cls, keys: I64, weights: I64, presorted: bool = False, columns=None,
                  block: TableBlock | None = None) -> Trie:
        """The trie of unique rows ``keys`` (``int64[n, arity]``) with non-zero
        ``weights``, columns taken in the order ``columns`` (default as they are);
        sorted first unless ``presorted``.

        >>> Trie.from_rows(np.array([[2, 1], [1, 5]]), np.array([7, 8])).to_zset().to_dict()
        {(1, 5): 8, (2, 1): 7}
        """
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        t = cls(keys.shape[1], block)
        t.load(keys, weights, presorted, columns)
        return t

    @classmethod
    def from_zset(cls, z: ZSet) -> Trie:
        """The trie of a consolidated Z-set (its rows already in the trie's order)."""
        return cls.from_rows(z.keys, z.weights, presorted=True)

    def load(self, keys: I64, weights: I64, presorted: bool = False, columns=None) -> None:
        """Replace the whole state by the rows ``keys`` with ``weights`` (see ``from_rows``)."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        weights = np.ascontiguousarray(weights, dtype=np.int64)
        if columns is not None:
            keys = np.ascontiguousarray(keys[:, list(columns)])
        if len(keys) and (not presorted or columns is not None):
            order = row_order(keys)
            keys, weights = np.ascontiguousarray(keys[order]), np.ascontiguousarray(weights[order])
        self._refill(keys, weights)

    def _layout(self, keys: I64, extra: int = 0):
        """``(rooms per level, dense)`` for the sorted rows ``keys``, with room to grow."""
        n, r = keys.shape
        counts = []
        for j in range(r):
            if j == r - 1 or not n:
                counts.append(n)
            else:
                counts.append(1 + int(np.count_nonzero(np.any(keys[1:, :j + 1] != keys[:-1, :j + 1], axis=1))))
        rooms = [int(c * config.GROWTH) + config.SLACK + extra for c in counts]
        dense = None
        if n and _dense_range(int(keys[0, 0]), int(keys[-1, 0]), counts[0]):
            span = int(keys[-1, 0]) - int(keys[0, 0]) + 1
            dense = (int(keys[0, 0]), span)
            rooms[0] = int(span * config.GROWTH) + config.SLACK
        return rooms, dense

    def _refill(self, keys: I64, weights: I64, extra: int = 0, dense=False, room0: int = 0) -> None:
        """Replace the state by the sorted rows ``keys``/``weights``, compact, with room
        (``extra`` more per level); level 0 dense as ``dense`` when given (else chosen)."""
        rooms, auto = self._layout(keys, extra)
        if dense is False:
            dense = auto
        if dense is not None:
            rooms[0] = max(rooms[0], room0, dense[1] + config.SLACK)
        self.part.refill(keys, weights, rooms, dense)
        self.version += 1

    # ------------------------------------------------------------------ changes
    def apply(self, keys: I64, weights: I64, reserve: I64 | None = None, checked: bool = False) -> None:
        """Add the rows ``keys`` (in this trie's column order) with ``weights`` in place.

        Raises ``WeightOverflowError`` before changing anything when a row's weight sum
        would not fit in int64; ``checked``: the caller ruled that out already (a
        relation checks a change once, against its natural index, for all its indexes).
        """
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        weights = np.ascontiguousarray(weights, dtype=np.int64)
        if not len(keys):
            return
        if not checked:
            self._check_sums(keys, weights)
        start = 0
        reserve = np.zeros(self.arity, dtype=np.int64) if reserve is None else reserve
        while True:
            start, code, level, need = apply_rows(self.part.table, read_only(keys), read_only(weights), start, reserve)
            if code == OK:
                return
            assert code == NEED_ROOM, code  # overflows were ruled out
            self.make_room(level, need)

    def _check_sums(self, keys: I64, weights: I64) -> None:
        now = self.weights(keys)
        total = now + weights
        bad = np.flatnonzero(((now ^ total) & (weights ^ total)) < 0)
        if len(bad):
            i = int(bad[0])
            raise WeightOverflowError(f"the weights of row {tuple(keys[i].tolist())} sum beyond int64: "
                                      f"{int(now[i])} + {int(weights[i])} does not fit")

    def make_room(self, level: int, need: int) -> None:
        """Give ``level`` room for ``need`` more entries (for a dense level 0: room for
        position ``need``), by growing its arrays or laying the trie out again (compact;
        for a sorted level 0 whose values now allow it, dense)."""
        part = self.part
        dense = part.dense
        if level == 0 and dense is not None:
            base, n0 = dense
            lo, hi = min(base, base + need), max(base + n0 - 1, base + need)
            if _dense_range(lo, hi, part.level_size(0) + 1) or hi - lo < config.SLACK:
                new_lo = base if lo == base else lo - config.SLACK
                keys, weights = part.rows_arrays()
                self._refill(keys, weights, dense=(new_lo, base + n0 - new_lo),
                             room0=int((hi - new_lo + 1) * config.GROWTH) + config.SLACK)
            else:
                self._refill(*part.rows_arrays(), dense=None)
            return
        used, dead = part.used(level), part.dead(level)
        if dead * 2 > used or level == 0 and self._may_turn_dense():
            self._refill(*part.rows_arrays(), extra=need)
        else:
            part.grow_level(level, int((used + need) * config.GROWTH) + config.SLACK)
            self.version += 1

    def _may_turn_dense(self) -> bool:
        """Whether a sorted level 0's values (by their bounds) now allow a dense layout."""
        part = self.part
        if not part.rows:
            return False
        bounds = part.stats()
        return _dense_range(int(bounds[0, 0]), int(bounds[0, 1]), part.level_size(0))

    def weights(self, keys: I64) -> I64:
        """The weight of each row of ``keys`` (0 where absent)."""
        out = np.zeros(len(keys), dtype=np.int64)
        if len(keys) and self.n_rows:
            row_weights(self.part.table, _FIRST0, read_only(np.ascontiguousarray(keys, dtype=np.int64)), out)
        return out

    def to_zset(self) -> ZSet:
        """The rows again (sorted in the trie's column order)."""
        keys, weights = self.part.rows_arrays()
        return ZSet(keys, weights)

    def nbytes(self) -> int:
        return self.part.nbytes()


_FIRST0 = np.zeros(1, dtype=np.int64)


class TrieView:
    """A sum of tries (``Trie`` objects, or the kernels' tables: ``MutableTable``,
    ``TrieTable``) with one arity and column order: one view of an index. Implements ``wcoj.extenders.PrefixExtender``: its ``tries()`` are the
    parts; ``count`` is an upper bound (a value in several parts counts once per part);
    ``propose`` merges the parts and drops duplicates. Intermediate levels carry no
    weight: a prefix whose rows cancel across parts may be proposed; its weight, summed
    at the last column, is then 0.
    """

    __slots__ = ("parts", "arity", "_stack")

    def __init__(self, parts: list, arity: int | None = None):
        parts = [p.part if isinstance(p, Trie) else p for p in parts]
        self.parts = [p for p in parts if p.rows]
        self._stack = None
        self.arity = parts[0].arity if parts else int(arity or 0)
        if arity is not None and parts and parts[0].arity != arity:
            raise ArityMismatchError("trie view", arity, parts[0].arity)

    def __repr__(self) -> str:
        return f"TrieView(arity={self.arity}, parts={[p.rows for p in self.parts]})"

    def __len__(self) -> int:
        """Rows summed over parts (an upper bound on distinct rows)."""
        return sum(p.rows for p in self.parts)

    def tries(self) -> list:
        return self.parts

    def stack(self) -> Stack:
        if self._stack is None:
            self._stack = Stack(self.parts)
        return self._stack

    def _ranges(self, prefix: I64) -> tuple[I64, I64]:
        s = self.stack()
        n = prefix.shape[0]
        lo = np.zeros((n, len(self.parts)), dtype=np.int64)
        hi = np.zeros((n, len(self.parts)), dtype=np.int64)
        if self.parts and n:
            prefix_ranges(s.table, s.first, self.arity, prefix, lo, hi)
        return lo, hi

    def count(self, prefix: I64) -> I64:
        prefix = np.ascontiguousarray(prefix, dtype=np.int64)
        lo, hi = self._ranges(prefix)
        return (hi - lo).sum(axis=1)

    def propose(self, prefix: I64) -> tuple[I64, I64]:
        prefix = np.ascontiguousarray(prefix, dtype=np.int64)
        d = prefix.shape[1]
        lo, hi = self._ranges(prefix)
        rows, vals = [], []
        for q, p in enumerate(self.parts):
            cnt = hi[:, q] - lo[:, q]
            r = np.repeat(np.arange(prefix.shape[0], dtype=np.int64), cnt)
            start = np.repeat(lo[:, q] - (np.cumsum(cnt) - cnt), cnt)
            pos = start + np.arange(r.shape[0], dtype=np.int64)
            values = p.level_values(d)[pos]
            if d == 0 and p.dense is not None:
                keep = p.present0()[pos]
                r, values = r[keep], values[keep]
            rows.append(r)
            vals.append(values)
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if len(rows) == 1:  # one trie: each prefix's values are its children, sorted and unique
            return rows[0], np.ascontiguousarray(vals[0])
        z = ZSet.from_arrays(np.stack([np.concatenate(rows), np.concatenate(vals)], axis=1))
        return np.ascontiguousarray(z.keys[:, 0]), np.ascontiguousarray(z.keys[:, 1])

    def intersect(self, prefix: I64, candidates: I64) -> npt.NDArray[np.bool_]:
        prefix = np.ascontiguousarray(prefix, dtype=np.int64)
        candidates = np.ascontiguousarray(candidates, dtype=np.int64).reshape(-1, 1)
        lo, hi = self._ranges(np.concatenate([prefix, candidates], axis=1))
        return ((hi - lo) > 0).any(axis=1) if self.parts else np.zeros(prefix.shape[0], dtype=bool)

    def weight(self, rows: I64) -> I64:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        out = np.zeros(rows.shape[0], dtype=np.int64)
        if not self.parts or not rows.shape[0]:
            return out
        if rows.shape[1] != self.arity:
            raise ArityMismatchError("weight lookup", self.arity, rows.shape[1])
        s = self.stack()
        bad = row_weights(s.table, s.first, read_only(rows), out)
        if bad >= 0:
            raise WeightOverflowError(f"the weights of row {tuple(rows[bad].tolist())} sum beyond int64")
        return out

    def to_zset(self) -> ZSet:
        """The consolidated sum of the parts (in this view's column order)."""
        if not self.parts:
            return ZSet.empty(self.arity)
        rows = [p.rows_arrays() for p in self.parts]
        if len(rows) == 1:
            return ZSet(*rows[0])
        return ZSet.from_arrays(np.concatenate([k for k, _ in rows]),
                                np.concatenate([w for _, w in rows]), arity=self.arity)
