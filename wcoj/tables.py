"""The tables the join and store kernels read: the one module that lays them out.

A trie is handed to a kernel as a table, ``int64[arity, TABLE_FIELDS]``, one row per
level: where its arrays are and how full they are (``wcoj.kernels.memory`` names the
fields). Kernels read the arrays through those addresses, so whatever holds a table
keeps the arrays it points at alive while kernels run; nothing outside this module reads
or writes a table's fields.

Two kinds of trie exist:

* ``TrieTable``: a *compact* trie (a tick's delta), one flat buffer with CSR offsets,
  never changed;
* ``MutableTable``: an index's state, per level a values array and, above the last
  level, arrays of the children's starts, ends and capacities, each with room to grow;
  ``wcoj.kernels.store`` changes it in place. Its table rows live in a ``TableBlock``
  shared by the tries of one set of relations (a graph, a database), so one kernel call
  can read and change all of them through one array, and growing a trie rewrites its
  rows where they are.

``Stack`` stacks the tables of the parts one join reads (copies of their rows; valid
until one of them grows).

``RunTable`` is the other kind of table: a trace's runs (``wcoj.trace``), one row per run,
for the nested-time kernels of ``wcoj.kernels.lattice``.

Used by ``indexes.trie`` (which decides when tries grow) and ``wcoj.generic_join``.

>>> t = TrieTable.compact(np.array([[1, 2], [1, 3], [2, 3]]), np.array([1, 1, 1]))
>>> t.arity, t.rows, t.level_size(0), t.level_size(1)
(2, 3, 2, 3)
>>> m = MutableTable(TableBlock(), 2, [4, 4])
>>> m.refill(np.array([[1, 2], [1, 3]]), np.array([1, 1]), [8, 8]); m.rows_arrays()[0].tolist()
[[1, 2], [1, 3]]
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from wcoj.kernels import memory as m
from wcoj.kernels.store import NEED_ROOM, OK, OVERFLOW, apply_rows, fill, prefix_ranges, row_weights, walk

__all__ = ["TrieTable", "MutableTable", "TableBlock", "Stack", "RunTable", "compact_size", "TABLE_FIELDS",
           # the kernels that read and change tables, for indexes/ (which reaches kernels only here)
           "apply_rows", "prefix_ranges", "row_weights", "read_only", "NEED_ROOM", "OK", "OVERFLOW"]

read_only = m.read_only  # for the arrays a kernel only reads (one compiled version for frozen and fresh)

I64 = npt.NDArray[np.int64]
TABLE_FIELDS = m.TABLE_FIELDS


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def compact_size(n: int, r: int) -> int:
    """Length of the flat buffer of a compact trie of ``n`` rows and ``r`` levels, each
    level with room for ``n`` entries: values, offsets (``n + 1`` per level above the
    last) and weights."""
    return r * n + (r - 1) * (n + 1) + n


_I64_MAX, _I64_MIN = int(np.iinfo(np.int64).max), int(np.iinfo(np.int64).min)
_EMPTY_TABLES: dict[int, I64] = {}


def _empty_table(arity: int) -> I64:
    """A fresh table of an empty trie (a copy of one kept per arity: every tick's
    change makes a few)."""
    T = _EMPTY_TABLES.get(arity)
    if T is None:
        T = _EMPTY_TABLES[arity] = np.zeros((arity, TABLE_FIELDS), dtype=np.int64)
        T[:, m.MINV], T[:, m.MAXV] = _I64_MAX, _I64_MIN
    return T.copy()


class _Table:
    """What every trie table answers (``table`` is its ``int64[arity, TABLE_FIELDS]``)."""

    __slots__ = ()

    @property
    def arity(self) -> int:
        return self.table.shape[0]

    @property
    def rows(self) -> int:
        """Rows (leaves with a weight)."""
        return int(self.table[-1, m.LIVE])

    @property
    def dense(self) -> tuple[int, int] | None:
        """``(base, positions)`` of a dense level 0, else ``None``."""
        T = self.table
        return (int(T[0, m.BASE]), int(T[0, m.N])) if T[0, m.DENSE] else None

    def level_size(self, level: int) -> int:
        """Live entries of a level (for a dense level 0: its present values)."""
        return int(self.table[level, m.LIVE])

    def used(self, level: int) -> int:
        return int(self.table[level, m.USED])

    def dead(self, level: int) -> int:
        return int(self.table[level, m.DEAD])

    def room(self, level: int) -> int:
        return int(self.table[level, m.ROOM])

    def n0(self) -> int:
        """Positions of level 0's root segment."""
        return int(self.table[0, m.N])

    def rows_arrays(self) -> tuple[I64, I64]:
        """``(keys, weights)``: every row, sorted in the trie's column order."""
        n = self.rows
        keys = np.empty((n, self.arity), dtype=np.int64)
        weights = np.empty(n, dtype=np.int64)
        if n:
            got = walk(self.table, keys, weights)
            assert got == n, (got, n)
        return keys, weights

    def stats(self) -> I64:
        """``int64[arity, 3]``: per level bounds on its values (no value is outside; a
        delete does not narrow them) and, at the last level, 1 when every weight is 1 (a
        set: counts need no products). O(arity)."""
        T = self.table
        t = np.zeros((self.arity, 3), dtype=np.int64)
        if self.rows:
            t[:, 0], t[:, 1] = T[:, m.MINV], T[:, m.MAXV]
        t[-1, 2] = int(T[-1, m.NONUNIT] == 0)
        return t


class TrieTable(_Table):
    """A compact trie: the sorted unique rows ``keys`` (``int64[n, r]``, in the trie's
    column order) with non-zero ``weights``, in one flat buffer; never changed."""

    __slots__ = ("table", "buf")

    def __init__(self, table: I64, buf: I64):
        self.table, self.buf = table, buf

    @classmethod
    def compact(cls, keys: I64, weights: I64) -> TrieTable:
        n, r = keys.shape
        buf = np.empty(compact_size(n, r), dtype=np.int64)
        base = _addr(buf)
        T = _empty_table(r)
        for j in range(r):
            T[j, m.V] = base + 8 * j * n
            T[j, m.ROOM] = n
            if j < r - 1:
                T[j, m.LO] = base + 8 * (r * n + j * (n + 1))
                T[j, m.HI] = T[j, m.LO] + 8
            else:
                T[j, m.LO] = base + 8 * (r * n + (r - 1) * (n + 1))
        t = cls(T, buf)
        if n:
            fill(T, m.read_only(keys), m.read_only(weights))
        return t

    def level_values(self, level: int) -> I64:
        n = int(self.table[0, m.ROOM])
        return self.buf[level * n:(level + 1) * n]

    def present0(self) -> npt.NDArray[np.bool_]:
        return np.ones(self.n0(), dtype=bool)

    def nbytes(self) -> int:
        return int(self.buf.nbytes)


class TableBlock:
    """The table rows of a set of mutable tries, in one array (``array``), and the
    arrays they point at (kept alive here). Rows are handed out by ``alloc``; the array
    grows (rows keep their offsets) when a trie is added to a full block."""

    __slots__ = ("array", "n", "keep", "_freed", "generation")

    def __init__(self, rows: int = 16):
        self.array = np.zeros((rows, TABLE_FIELDS), dtype=np.int64)
        self.n = 0
        self.keep: dict[int, tuple] = {}
        self._freed: dict[int, list[int]] = {}
        self.generation = 0  # counts the tries added (a plan laid out over the block checks it)

    def __repr__(self) -> str:
        return f"TableBlock(rows={self.n}, tries={len(self.keep)})"

    def alloc(self, arity: int) -> int:
        """The offset of ``arity`` fresh rows."""
        self.generation += 1
        free = self._freed.get(arity)
        if free:
            return free.pop()
        if self.n + arity > self.array.shape[0]:
            grown = np.zeros((2 * (self.n + arity), TABLE_FIELDS), dtype=np.int64)
            grown[:self.n] = self.array[:self.n]
            self.array = grown
        self.n += arity
        return self.n - arity

    def release(self, offset: int, arity: int) -> None:
        """Give rows back (their trie is gone)."""
        self.keep.pop(offset, None)
        self.array[offset:offset + arity] = 0
        self._freed.setdefault(arity, []).append(offset)


class MutableTable(_Table):
    """A mutable trie whose table rows live in ``block`` at ``offset``.

    ``refill`` replaces its contents (compact, with room to grow); ``grow_level`` gives
    one level more room; ``wcoj.kernels.store.apply_rows`` changes it in place.
    """

    __slots__ = ("block", "offset", "_arity")

    def __init__(self, block: TableBlock, arity: int, rooms: list[int], dense: tuple[int, int] | None = None):
        self.block, self._arity = block, arity
        self.offset = block.alloc(arity)
        self._allocate(rooms, dense)

    @property
    def table(self) -> I64:
        return self.block.array[self.offset:self.offset + self._arity]

    @property
    def arity(self) -> int:
        return self._arity

    @property
    def arrays(self) -> tuple:
        return self.block.keep[self.offset]

    def release(self) -> None:
        self.block.release(self.offset, self._arity)

    def _allocate(self, rooms: list[int], dense: tuple[int, int] | None) -> None:
        """Fresh, empty arrays with room ``rooms[l]`` per level; ``dense = (base,
        positions)`` makes level 0 dense over ``positions`` values from ``base``."""
        arity = self._arity
        T = _empty_table(arity)
        arrays = []
        for j in range(arity):
            room = max(int(rooms[j]), 1)
            level = self._level_arrays(j, room, dense if j == 0 else None)
            self._point(T[j], level)
            T[j, m.ROOM] = room
            arrays.append(level)
        if dense is not None:
            T[0, m.DENSE], T[0, m.BASE], T[0, m.N], T[0, m.USED] = 1, dense[0], dense[1], dense[1]
        self.block.keep[self.offset] = tuple(arrays)
        self.table[:] = T

    def _level_arrays(self, j: int, room: int, dense) -> tuple:
        vals = np.empty(room, dtype=np.int64) if dense is None else \
            np.arange(dense[0], dense[0] + room, dtype=np.int64)
        if j < self._arity - 1:
            return (vals, np.zeros(room, dtype=np.int64), np.zeros(room, dtype=np.int64),
                    np.zeros(room, dtype=np.int64))
        return vals, np.zeros(room, dtype=np.int64)

    @staticmethod
    def _point(row: I64, level: tuple) -> None:
        for f, a in zip((m.V, m.LO, m.HI, m.CAP), level):
            row[f] = _addr(a)

    def refill(self, keys: I64, weights: I64, rooms: list[int], dense: tuple[int, int] | None = None) -> None:
        """Replace the contents by the sorted unique rows ``keys`` with ``weights``."""
        self._allocate(rooms, dense)
        if len(keys):
            fill(self.table, m.read_only(keys), m.read_only(weights))

    def grow_level(self, level: int, room: int) -> None:
        """Copy level ``level``'s arrays into ``room`` entries each. Positions stay, so
        nothing that points into the level changes."""
        T = self.table
        arrays = list(self.arrays)
        used = int(T[level, m.USED])
        new = self._level_arrays(level, room, self.dense if level == 0 else None)
        start = 1 if level == 0 and T[0, m.DENSE] else 0  # a dense level 0's values are filled
        for a, b in list(zip(arrays[level], new))[start:]:
            b[:used] = a[:used]
        self._point(T[level], new)
        T[level, m.ROOM] = room
        arrays[level] = new
        self.block.keep[self.offset] = tuple(arrays)

    def level_values(self, level: int) -> I64:
        return self.arrays[level][0]

    def present0(self) -> npt.NDArray[np.bool_]:
        """For a dense level 0: which of its positions hold a value."""
        n = self.n0()
        level = self.arrays[0]
        if self._arity == 1:
            return level[1][:n] != 0
        return level[1][:n] < level[2][:n]

    def nbytes(self) -> int:
        return int(sum(a.nbytes for level in self.arrays for a in level))


class Stack:
    """The tables of several tries stacked for one kernel call, with the tries kept
    alive: ``table`` is ``int64[sum of arities, TABLE_FIELDS]``, ``first[q]`` part
    ``q``'s level-0 row."""

    __slots__ = ("table", "first", "keep")

    def __init__(self, parts: list):
        self.keep = parts
        if parts:
            self.table = np.concatenate([p.table for p in parts]) if len(parts) > 1 else parts[0].table
        else:
            self.table = np.zeros((0, TABLE_FIELDS), dtype=np.int64)
        # level-0 rows as a running sum; np.cumsum of a short list costs ~15 us, this ~1 us
        self.first = np.fromiter(itertools.accumulate([p.arity for p in parts[:-1]], initial=0),
                                 dtype=np.int64, count=len(parts)) if parts else \
            np.zeros(0, dtype=np.int64)


class RunTable:
    """The runs of a trace, and a batch at one time, as the lattice kernels read them:
    ``table`` is ``int64[runs, RUN_FIELDS + 2 d]`` (``wcoj.kernels.memory`` names the
    fields), and ``keep`` holds what its addresses point at.

    ``RunTable.row`` lays out one run's row; ``RunTable(rows, keep)`` stacks rows.

    >>> keys = np.array([[1, 0, 2], [4, 1, 0]]); w = np.array([1, -1])
    >>> rt = RunTable([RunTable.row(keys, w, (0, 0), (1, 2))], [keys, w])
    >>> rt.table[0, m.RUN_N], rt.table[0, m.RUN_FIELDS:].tolist()
    (np.int64(2), [0, 0, 1, 2])
    """

    __slots__ = ("table", "keep")

    def __init__(self, rows: list[I64], keep: list):
        d2 = rows[0].shape[0] if rows else m.RUN_FIELDS
        self.table = np.stack(rows) if rows else np.zeros((0, d2), dtype=np.int64)
        self.keep = keep

    @staticmethod
    def row(keys: I64, weights: I64, lo: tuple[int, ...], hi: tuple[int, ...]) -> I64:
        """One run's row: ``keys`` ``int64[n, arity + d]`` (rows then times) and ``weights``
        must be C-contiguous int64 and stay alive while a kernel reads the row."""
        if not (keys.flags.c_contiguous and weights.flags.c_contiguous):
            raise ValueError("a run table points at C-contiguous arrays only")
        return np.array((_addr(keys), _addr(weights), weights.shape[0]) + tuple(lo) + tuple(hi),
                        dtype=np.int64)

    def plus_row(self, row: I64, keep: list) -> RunTable:
        """This table with one more run (``keep``: the arrays that row points at)."""
        out = RunTable.__new__(RunTable)
        out.table = np.concatenate([self.table, row[None, :]]) if len(self.table) else row[None, :]
        out.keep = [self.keep, keep]
        return out
