"""Tries over consolidated Z-sets, and views that sum several tries.

A ``Trie`` stores a consolidated Z-set sorted in its column order level by level (CSR
style): the distinct values of each level, offsets into the next level, weights on the
leaves. A prefix lookup is a binary search per level; a proposal is a slice.

A ``TrieView`` is a sum of tries (the runs of a log-structured index, plus a tick's delta)
and implements ``wcoj``'s ``PrefixExtender`` protocol, both the batched numpy methods and
the fused ``trie_parts()`` path of the joins.

Relies on ``wcoj`` (Z-sets, the protocol, the search kernel). Used by ``indexes.index``.

>>> t = Trie.from_zset(ZSet.from_rows([(1, 2), (1, 3), (2, 3)]))
>>> [v.tolist() for v in t.values], [o.tolist() for o in t.offsets]
([[1, 2], [2, 3, 3]], [[0, 2, 3]])
>>> v = TrieView([t])
>>> v.propose(np.array([[1], [2], [5]]))[1].tolist()
[2, 3, 3]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from wcoj.errors import ArityMismatchError, WeightOverflowError
from wcoj.extenders import TrieArrays, descend
from wcoj.kernels.intersect import find_in_ranges
from wcoj.kernels.rowops import (SMALL_ROWS, merge_tries_flat, merge_tries_into, row_weights_lockstep,
                                 trie_of_rows_flat, trie_of_rows_plus)
from wcoj.rows import row_order
from wcoj.kernels.term import address_table, level0_bits, row_weights
from wcoj.zset import ZSet

__all__ = ["Trie", "TrieView", "flat_size"]

I64 = npt.NDArray[np.int64]


CACHE_ROWS = 1 << 14  # tries up to this many rows keep their Z-set (a tick's runs merge often)
LOCKSTEP_ROWS = 4096  # weight() searches up to this many rows in lockstep
_NO_DIRECTORY = np.zeros(0, dtype=np.int64)
_NO_DIRECTORY.flags.writeable = False
_NATURAL = [np.arange(r, dtype=np.int64) for r in range(8)]
PIN_ROWS = 1 << 16  # above this many rows, a trie copies its short levels out of the build buffer
DENSE_SPAN = 32  # keep a direct index of level 0 when its value span is at most 32x its size
DIRECTORY_ROWS = 1 << 14  # a trie built by a kernel with fewer rows gets none (see Trie._built)
BITS_ROWS = 1 << 12  # ... but from this many rows a bit set of level 0 (smaller runs are an
                     # index's tail, rebuilt by the next tick: indexes.index.MIN_RUN), when
BITS_SPAN = 256      # its span is at most this many times its rows (32 bytes a row at most)


def _directory(level0: I64) -> tuple[I64, int]:
    """``(dense0, base0)``: position of each level-0 value by ``value - base0`` (-1 if absent).

    Built only when the span of the values is at most ``DENSE_SPAN`` times their number
    (interned ids usually are), so a lookup of a whole frontier's values in level 0 is one
    array access each instead of a search; otherwise an empty directory.
    """
    n = level0.shape[0]
    if n < 64 or int(level0[-1]) - int(level0[0]) + 1 > DENSE_SPAN * n:
        return np.zeros(0, dtype=np.int64), 0
    base = int(level0[0])
    dense = np.full(int(level0[-1]) - base + 1, -1, dtype=np.int64)
    dense[level0 - base] = np.arange(n, dtype=np.int64)
    dense.flags.writeable = False
    return dense, base


def warm_up_merges() -> None:
    """Load the kernels that merge an index's runs: a small merge (in a commit), one that
    makes a run with a bit set, and a large one (on the merge thread). A stream of small
    ticks first needs them after thousands of ticks, and Numba reads a kernel from its
    cache on its first call in a process: that tick took ~20 ms instead of ~0.15.
    Used by ``queries.graph.warm_up``; a few milliseconds."""
    rng = np.random.default_rng(0)
    for n in (8, BITS_ROWS + 8, PIN_ROWS + 8):
        keys = np.unique(rng.integers(0, 4 * n, (n, 2)), axis=0)
        a = Trie.from_rows(keys, np.ones(len(keys), dtype=np.int64), presorted=True)
        a.plus(Trie.from_rows(keys[:3] + 1, np.ones(3, dtype=np.int64), presorted=True)).table()


def flat_size(n: int, r: int) -> int:
    """Length of the flat buffer of an ``r``-level trie with room ``n`` per level
    (``rowops.trie_of_rows_flat``): values, offsets (one dummy row when ``r = 1``), weights."""
    return r * n + max(r - 1, 1) * (n + 1) + n


def _build_args(keys, weights, presorted: bool, columns):
    """The arguments of the trie build kernels for ``Trie.from_rows``' inputs:
    ``(keys, columns, weights, order, sort)``."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    n, r = keys.shape
    if r == 0:
        raise ArityMismatchError("trie", 1, 0, "a trie needs at least one column")
    sort = not presorted and n <= SMALL_ROWS
    if columns is None:
        columns = _NATURAL[r] if r < len(_NATURAL) else np.arange(r, dtype=np.int64)
    elif not sort:  # a large input is sorted by row_order, which needs the columns in place
        keys, columns = np.ascontiguousarray(keys[:, columns]), np.arange(r, dtype=np.int64)
    order = np.arange(n, dtype=np.int64) if presorted or sort else row_order(keys)
    return keys, columns, np.ascontiguousarray(weights, dtype=np.int64), order, sort


class Trie:
    """A consolidated Z-set stored level by level.

    Build with ``Trie.from_zset(z)``: ``z``'s rows must already be in the trie's column
    order (they are sorted lexicographically, which is what the levels need).

    A small trie a build kernel wrote keeps only its buffer and ``table()`` until its
    arrays are asked for (``arrays``, ``values``, ...): the joins of a tick read the
    table alone, and a tick makes four such tries.
    """

    __slots__ = ("arity", "n_rows", "_arrays", "_table", "_buf", "_room", "_rows")

    def __init__(self, values: list[I64], offsets: list[I64], weights: I64, arity: int):
        self._wrap(TrieArrays(values, offsets, weights, *_directory(values[0])), arity)

    def _wrap(self, a: TrieArrays, arity: int) -> Trie:
        self._arrays = a
        self._table = self._buf = None
        self.arity = arity
        self.n_rows = int(a.weights.shape[0])
        self._rows = None  # the Z-set it was built from, kept for small tries
        return self

    @property
    def arrays(self) -> TrieArrays:
        """The levels as a ``TrieArrays`` (read-only)."""
        a = self._arrays
        if a is None:
            a = self._arrays = self._unpack(self._buf, self._table, self._room, self.arity)
        return a

    @property
    def values(self) -> tuple[I64, ...]:
        return self.arrays.values

    @property
    def offsets(self) -> tuple[I64, ...]:
        return self.arrays.offsets

    @property
    def weights(self) -> I64:
        return self.arrays.weights

    def table(self) -> I64:
        """``TrieArrays.table()`` of this trie (what the join kernels read)."""
        t = self._table
        return t if t is not None else self.arrays.table()

    @staticmethod
    def _unpack(buf: I64, table: I64, n: int, r: int) -> TrieArrays:
        """The arrays of a trie in ``trie_of_rows_flat``'s layout in ``buf`` (room ``n``
        per level), its table ``table``; no directory (see ``_built``)."""
        c = table[:, 1].tolist()
        at = flat_size(n, r) - n
        values = tuple([buf[j * n:j * n + c[j]] for j in range(r)])
        offsets = tuple([buf[r * n + j * (n + 1):r * n + j * (n + 1) + c[j] + 1] for j in range(r - 1)])
        return TrieArrays.trusted(values, offsets, buf[at:at + c[r - 1]], table)

    @classmethod
    def _built(cls, a: TrieArrays, table: I64, arity: int) -> Trie:
        """A trie of arrays a build kernel just wrote (read-only, ``table`` filled).

        A small trie gets no level-0 directory: its values are searched (they fit in
        cache), and a tick's merged last run would otherwise build a directory the size
        of the id span every tick (~230 us a tick on a 100k-edge graph). From
        ``BITS_ROWS`` rows it gets a bit set of level 0 instead (64x smaller), so that the
        join's searches of the values a tick looks up, mostly in no small run, stop at a
        bit test. Either is recorded in ``table``, which the build kernel made for this
        trie alone."""
        values, weights = a.values, a.weights
        n = weights.shape[0]
        bits = None
        dense, base = _directory(values[0]) if n >= DIRECTORY_ROWS else (_NO_DIRECTORY, 0)
        if dense.shape[0]:
            table[0, 3:] = address_table(values[:1], a.offsets[:1] or (weights,), dense, base)[0, 3:]
        elif n >= BITS_ROWS and int(values[0][-1]) - int(values[0][0]) < BITS_SPAN * n:
            bits = level0_bits(values[0], table)
        a = TrieArrays.trusted(values, a.offsets, weights, table, dense, base, bits)
        return cls.__new__(cls)._wrap(a, arity)

    @classmethod
    def from_zset(cls, z: ZSet) -> Trie:
        """Levels of ``z`` (consolidated, so sorted): one pass over the rows, O(n * arity)."""
        t = cls.from_rows(z.keys, z.weights, presorted=True)
        if len(z) <= CACHE_ROWS:
            t._rows = z
        return t

    @classmethod
    def from_rows(cls, keys: I64, weights: I64, presorted: bool = False, columns=None) -> Trie:
        """The trie of unique rows ``keys`` (``int64[n, arity]``, in any order unless
        ``presorted``) with ``weights`` (non-zero), their columns taken in the order
        ``columns`` (``int64[arity]``, default as they are): one kernel call.

        Complexity: O(n * arity) after the sort (insertion sort for a tick's few rows).

        >>> t = Trie.from_rows(np.array([[2, 1], [1, 5], [1, 3]]), np.array([7, 8, 9]))
        >>> t.to_zset().to_dict()
        {(1, 3): 9, (1, 5): 8, (2, 1): 7}
        """
        keys, columns, weights, order, sort = _build_args(keys, weights, presorted, columns)
        n, r = keys.shape
        buf, table = np.empty(flat_size(n, r), dtype=np.int64), np.empty((r, 6), dtype=np.int64)
        trie_of_rows_flat(keys, columns, weights, order, sort, buf, table)
        return cls.from_flat(buf, table, n, r)

    def plus_rows(self, keys: I64, weights: I64, presorted: bool = False, columns=None) -> tuple[Trie, Trie]:
        """``(t, self.plus(t))`` where ``t = Trie.from_rows(keys, weights, presorted, columns)``,
        in one kernel call while the sum stays small (``PIN_ROWS``): how an index stages
        a tick's change that its commit will merge into its last run.

        >>> run = Trie.from_rows(np.array([[1, 2], [1, 3]]), np.array([1, 1]))
        >>> t, s = run.plus_rows(np.array([[1, 3], [2, 1]]), np.array([-1, 1]))
        >>> t.to_zset().to_dict(), s.to_zset().to_dict()
        ({(1, 3): -1, (2, 1): 1}, {(1, 2): 1, (2, 1): 1})
        """
        n, r = len(keys), self.arity
        n2 = self.n_rows + n
        if n2 > PIN_ROWS or not n or not self.n_rows or np.shape(keys)[1] != r:
            t = Trie.from_rows(keys, weights, presorted, columns)
            return t, self.plus(t)
        keys, columns, weights, order, sort = _build_args(keys, weights, presorted, columns)
        buf, buf2 = np.empty(flat_size(n, r), dtype=np.int64), np.empty(flat_size(n2, r), dtype=np.int64)
        table, table2 = np.empty((r, 6), dtype=np.int64), np.empty((r, 6), dtype=np.int64)
        bad_row = np.empty(r, dtype=np.int64)
        bad = trie_of_rows_plus(keys, columns, weights, order, sort, buf, table,
                                self.table(), n2, buf2, bad_row, table2)
        t = Trie.from_flat(buf, table, n, r)
        if bad >= 0:
            self._overflow(t, bad_row)
        return t, Trie.from_flat(buf2, table2, n2, r)

    @classmethod
    def from_flat(cls, buf: I64, table: I64, n: int, r: int) -> Trie:
        """The trie a kernel wrote into ``buf`` in ``trie_of_rows_flat``'s layout (room
        ``n`` per level), its table in ``table``. Too small for a directory or a bit set
        (see ``_built``), its arrays are unpacked when first asked for."""
        buf.flags.writeable = False
        if n < BITS_ROWS and n < DIRECTORY_ROWS:  # no directory, no bit set: nothing to add to the table
            t = cls.__new__(cls)
            t._arrays, t._rows = None, None
            t._table, t._buf, t._room, t.arity = table, buf, n, r
            t.n_rows = int(table[r - 1, 1])
            return t
        a = cls._unpack(buf, table, n, r)
        if n > PIN_ROWS and 2 * int(table[:, 1].min()) <= n:  # a level is short: copy them out, not to pin buf
            return cls([v.copy() for v in a.values], [o.copy() for o in a.offsets], a.weights.copy(), r)
        return cls._built(a, table, r)

    @classmethod
    def empty(cls, arity: int) -> Trie:
        return cls.from_zset(ZSet.empty(arity))

    def plus(self, other: Trie) -> Trie:
        """The sum of two tries in the same column order, merged level by level.

        Complexity: O((len(self) + len(other)) * arity), one kernel call; rows whose
        weights cancel are dropped.

        >>> a = Trie.from_zset(ZSet.from_rows([(1, 2), (1, 3)]))
        >>> b = Trie.from_zset(ZSet.from_dict({(1, 3): -1, (2, 1): 1}))
        >>> a.plus(b).to_zset().to_dict()
        {(1, 2): 1, (2, 1): 1}
        """
        if other.arity != self.arity:
            raise ArityMismatchError("trie plus", self.arity, other.arity)
        if not other.n_rows:
            return self
        if not self.n_rows:
            return other
        r = self.arity
        n = self.n_rows + other.n_rows
        if n <= PIN_ROWS:  # room n per level: over-allocated, and few Python steps
            buf = np.empty(flat_size(n, r), dtype=np.int64)
            table, bad_row = np.empty((r, 6), dtype=np.int64), np.empty(r, dtype=np.int64)
            if merge_tries_flat(self.table(), other.table(), n, buf, bad_row, table) >= 0:
                self._overflow(other, bad_row)
            return Trie.from_flat(buf, table, n, r)
        # a large merge: exact room per level (it is kept long), separate arrays
        room = [a.shape[0] + b.shape[0] for a, b in zip(self.values, other.values)]
        vstart = np.concatenate([[0], np.cumsum(room)]).astype(np.int64)
        ostart = vstart[:r] + np.arange(r, dtype=np.int64)
        values = np.empty(int(vstart[r]), dtype=np.int64)
        offsets = np.empty(int(vstart[r - 1]) + r - 1, dtype=np.int64)
        weights = np.empty(room[r - 1], dtype=np.int64)
        counts, bad_row = np.empty(r, dtype=np.int64), np.empty(r, dtype=np.int64)
        if merge_tries_into(self.table(), other.table(), values, offsets, vstart, ostart,
                            weights, counts, bad_row, np.empty((r, 6), dtype=np.int64)) >= 0:
            self._overflow(other, bad_row)
        c = counts.tolist()
        return Trie([values[vstart[j]:vstart[j] + c[j]] for j in range(r)],
                    [offsets[ostart[j]:ostart[j] + c[j] + 1] for j in range(r - 1)], weights[:c[r - 1]], r)

    def _overflow(self, other: Trie, bad_row: I64) -> None:
        row = tuple(bad_row.tolist())
        raise WeightOverflowError(f"the weights of row {row} sum beyond int64: "
                                  f"{self.weight_of(row)} + {other.weight_of(row)} does not fit")

    def weight_of(self, row: tuple[int, ...]) -> int:
        """The weight of one row (0 when absent)."""
        return int(TrieView([self]).weight(np.array([row], dtype=np.int64))[0])

    def to_zset(self) -> ZSet:
        """The rows again (sorted in the trie's column order)."""
        if self._rows is not None:
            return self._rows
        cols = [self.values[-1]]
        idx = np.arange(self.n_rows, dtype=np.int64)
        for j in range(self.arity - 2, -1, -1):
            # parent of each child position at level j+1
            parent = np.repeat(np.arange(len(self.values[j])), np.diff(self.offsets[j]))
            idx = parent[idx]
            cols.append(self.values[j][idx])
        keys = np.stack(cols[::-1], axis=1) if cols else np.zeros((0, 0), dtype=np.int64)
        return ZSet(np.ascontiguousarray(keys, dtype=np.int64), self.weights.copy())

    def __len__(self) -> int:
        return self.n_rows

    def nbytes(self) -> int:
        """Bytes held by the arrays, the level-0 directory or bit set included."""
        return int(sum(v.nbytes for v in self.values) + sum(o.nbytes for o in self.offsets)
                   + self.weights.nbytes + self.arrays.dense0.nbytes + self.arrays.bits0.nbytes)

    def __repr__(self) -> str:
        return f"Trie(arity={self.arity}, rows={self.n_rows})"

    def descend(self, prefix: I64) -> tuple[I64, I64]:
        """Ranges ``[lo, hi)`` at level ``d`` under each row of ``prefix`` (``int64[n, d]``)."""
        return descend(self.arrays, np.ascontiguousarray(prefix, dtype=np.int64))


class TrieView:
    """A sum of tries with the same arity and column order: one view of an index.

    Implements ``wcoj.extenders.PrefixExtender``. ``count`` is an upper bound (values in
    several parts count once per part); ``propose`` merges parts and drops duplicates.
    Intermediate levels carry no weight: a prefix whose rows cancel across parts may still
    be proposed; its weight, summed at the last column, is then 0.
    """

    __slots__ = ("parts", "arity", "_table")

    def __init__(self, parts: list[Trie], arity: int | None = None):
        self.parts = [p for p in parts if p.n_rows]
        self._table = None
        self.arity = parts[0].arity if parts else int(arity or 0)
        if arity is not None and parts and parts[0].arity != arity:
            raise ArityMismatchError("trie view", arity, parts[0].arity)

    def __repr__(self) -> str:
        return f"TrieView(arity={self.arity}, parts={[p.n_rows for p in self.parts]})"

    def __len__(self) -> int:
        """Rows summed over parts (an upper bound on distinct rows)."""
        return sum(p.n_rows for p in self.parts)

    def trie_parts(self) -> list[TrieArrays]:
        """The parts as plain arrays, for the fused join kernels."""
        return [p.arrays for p in self.parts]

    def parts_table(self) -> I64:
        """The parts' ``TrieArrays.table()`` stacked (``int64[parts * arity, 6]``); cached."""
        if self._table is None:
            self._table = (np.concatenate([p.table() for p in self.parts]) if self.parts
                           else np.zeros((0, 6), dtype=np.int64))
        return self._table

    def count(self, prefix: I64) -> I64:
        prefix = np.ascontiguousarray(prefix, dtype=np.int64)
        total = np.zeros(prefix.shape[0], dtype=np.int64)
        for p in self.parts:
            lo, hi = p.descend(prefix)
            total += hi - lo
        return total

    def propose(self, prefix: I64) -> tuple[I64, I64]:
        prefix = np.ascontiguousarray(prefix, dtype=np.int64)
        d = prefix.shape[1]
        rows, vals = [], []
        for p in self.parts:
            lo, hi = p.descend(prefix)
            cnt = hi - lo
            r = np.repeat(np.arange(prefix.shape[0], dtype=np.int64), cnt)
            start = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
            rows.append(r)
            vals.append(p.values[d][start + np.arange(r.shape[0], dtype=np.int64)])
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        z = ZSet.from_arrays(np.stack([np.concatenate(rows), np.concatenate(vals)], axis=1))
        return np.ascontiguousarray(z.keys[:, 0]), np.ascontiguousarray(z.keys[:, 1])

    def intersect(self, prefix: I64, candidates: I64) -> npt.NDArray[np.bool_]:
        prefix = np.ascontiguousarray(prefix, dtype=np.int64)
        candidates = np.ascontiguousarray(candidates, dtype=np.int64)
        d = prefix.shape[1]
        mask = np.zeros(prefix.shape[0], dtype=bool)
        pos = np.empty(prefix.shape[0], dtype=np.int64)
        for p in self.parts:
            lo, hi = p.descend(prefix)
            find_in_ranges(p.values[d], lo, hi, candidates, pos)
            mask |= pos >= 0
        return mask

    def weight(self, rows: I64) -> I64:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        out = np.zeros(rows.shape[0], dtype=np.int64)
        if not self.parts or not rows.shape[0]:
            return out
        if rows.shape[1] != self.arity:
            raise ArityMismatchError("weight lookup", self.arity, rows.shape[1])
        first = np.arange(len(self.parts), dtype=np.int64) * self.arity
        # a few rows miss the cache at every level: search them side by side; many sorted
        # rows walk the levels in order, which one row at a time does best
        lookup = row_weights_lockstep if rows.shape[0] <= LOCKSTEP_ROWS else row_weights
        bad = lookup(self.parts_table(), first, rows, out)
        if bad >= 0:
            raise WeightOverflowError(f"the weights of row {tuple(rows[bad].tolist())} sum beyond int64")
        return out

    def to_zset(self) -> ZSet:
        """The consolidated sum of the parts (in this view's column order)."""
        if not self.parts:
            return ZSet.empty(self.arity)
        zs = [p.to_zset() for p in self.parts]
        return ZSet.from_arrays(np.concatenate([z.keys for z in zs]),
                                np.concatenate([z.weights for z in zs]), arity=self.arity)
