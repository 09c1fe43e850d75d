"""The PrefixExtender protocol: what Generic Join needs from an atom's storage.

An extender stores the rows of one atom in the order its variables are bound. The joins
call it over whole frontiers: ``prefix`` is ``int64[n, d]``, the values of the atom's first
``d`` columns for ``n`` frontier rows, and the methods answer for all rows at once.

Two ways to be an extender:

* implement ``count`` / ``propose`` / ``intersect`` / ``weight`` (any storage, evaluated
  with numpy between levels), or
* also expose ``trie_parts()``: the view as a sum of tries (``TrieArrays``: per level a
  sorted ``values`` array and CSR ``offsets`` into the next level, leaf ``weights``). The
  joins then fuse every atom of a level into one jitted call (``wcoj.kernels.frontier.extend_frontier``).
  A view may also cache its parts' tables stacked as ``parts_table()``; the delta rule
  then reads it instead of stacking them per tick.

``wcoj`` never imports ``indexes``; ``indexes.trie.TrieView`` implements this protocol.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["PrefixExtender", "TrieArrays", "IncrementalSource", "descend"]

I64 = npt.NDArray[np.int64]


def _frozen(a) -> I64:
    """``a`` as a read-only C-contiguous int64 array (a view when it already is one): one
    array type for every level, so Numba sees homogeneous tuples of them."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


_EMPTY = _frozen(np.zeros(0, dtype=np.int64))


class TrieArrays:
    """One trie as plain arrays.

    ``values[j]`` holds level ``j``'s values, sorted within each parent's range;
    ``offsets[j]`` (for ``j < arity - 1``) has ``len(values[j]) + 1`` entries, and the
    children of node ``p`` at level ``j`` are ``values[j + 1][offsets[j][p]:offsets[j][p + 1]]``;
    ``weights`` is aligned with ``values[-1]``. ``dense0`` is an optional direct index of
    level 0: ``dense0[x - base0]`` is the position of value ``x`` in ``values[0]`` or -1
    (CSR row pointers, when level 0 is dense enough).

    Every array is kept as read-only C-contiguous int64, so ``table()`` can hand the whole-join
    kernel (``kernels.term``) their addresses: the kernel reads them without a tuple of
    arrays, whose per-access cost in Numba grows with its length.
    """

    __slots__ = ("values", "offsets", "weights", "dense0", "base0", "bits0", "_table", "_stats")

    def __init__(self, values, offsets, weights, dense0=None, base0: int = 0):
        self.values = tuple(_frozen(v) for v in values)
        self.offsets = tuple(_frozen(o) for o in offsets)
        self.weights = _frozen(weights)
        self.dense0 = _frozen(dense0 if dense0 is not None else np.zeros(0, dtype=np.int64))
        self.base0 = int(base0)
        self.bits0 = _EMPTY
        self._table = None
        self._stats = None

    @classmethod
    def trusted(cls, values: tuple, offsets: tuple, weights: I64, table: I64,
                dense0: I64 | None = None, base0: int = 0, bits0: I64 | None = None) -> TrieArrays:
        """Wrap arrays a kernel just wrote, skipping the checks of the constructor: every
        array must already be read-only C-contiguous int64, ``values``/``offsets`` tuples,
        and ``table`` their ``table()`` (the build kernels fill it). A tick makes four
        tries; the checks and the address lookups were most of their cost. ``bits0``: the
        words of a level-0 bit set ``table`` points at (``kernels.term.level0_bits``)."""
        a = cls.__new__(cls)
        a.values, a.offsets, a.weights = values, offsets, weights
        a.dense0 = _EMPTY if dense0 is None else dense0
        a.base0, a._table, a._stats = base0, table, None
        a.bits0 = _EMPTY if bits0 is None else bits0
        return a

    def __repr__(self) -> str:
        return f"TrieArrays(arity={len(self.values)}, rows={self.weights.shape[0]})"

    def table(self) -> I64:
        """``int64[arity, 6]``: per level ``j`` the address and length of ``values[j]``, the
        address of ``offsets[j]`` (of ``weights`` at the last level), and for level 0 the
        address, length and base of ``dense0`` (zeros elsewhere; for a kernel-built trie
        with ``bits0``, its address, minus its number of bits, and the base). Valid while
        ``self`` lives."""
        if self._table is None:
            from wcoj.kernels.term import address_table
            self._table = address_table(self.values, self.offsets + (self.weights,), self.dense0, self.base0)
        return self._table

    def stats(self) -> I64:
        """``int64[arity, 3]``: per level the smallest and largest value, and (last level
        only) 1 when every weight is 1 (a set: counts need no products). Cached; O(n) once."""
        if self._stats is None:
            t = np.zeros((len(self.values), 3), dtype=np.int64)
            for j, v in enumerate(self.values):
                if v.shape[0]:
                    t[j, :2] = (v.min(), v.max())
            t[-1, 2] = int(bool(np.all(self.weights == 1)))
            self._stats = t
        return self._stats


@runtime_checkable
class PrefixExtender(Protocol):
    """One atom's rows, in binding order, answering batched prefix questions."""

    @property
    def arity(self) -> int:
        """Number of columns."""
        ...

    def count(self, prefix: I64) -> I64:
        """Per row of ``prefix`` (``int64[n, d]``), an upper bound on the candidates for column ``d``."""
        ...

    def propose(self, prefix: I64) -> tuple[I64, I64]:
        """All candidates for column ``d``: ``(row, value)`` pairs, by row then value, unique."""
        ...

    def intersect(self, prefix: I64, candidates: I64) -> npt.NDArray[np.bool_]:
        """Mask: is ``candidates[i]`` a value of column ``d`` under ``prefix[i]``?"""
        ...

    def weight(self, rows: I64) -> I64:
        """Weights of complete rows (``int64[n, arity]``), 0 where absent."""
        ...


@runtime_checkable
class IncrementalSource(Protocol):
    """A relation that serves the three views of a tick in any column order.

    ``view(kind, columns)`` returns a ``PrefixExtender`` over the relation's columns taken
    in the order ``columns`` (a permutation), where ``kind`` is ``"prev"`` (z^-1 of the
    integral: the state before this tick), ``"delta"`` (this tick's change) or ``"curr"``
    (``prev + delta``). In the delta rule, atom *i*'s term sees ``curr`` for atoms before
    it and ``prev`` for atoms after it.

    A source may also offer ``view_table(kind, columns)``: ``(stacked part tables,
    number of parts)`` of that view, what its ``parts_table()`` would hold, without
    making the view; the fused delta rule then reads it, once per view and tick.
    """

    @property
    def arity(self) -> int:
        ...

    def view(self, kind: str, columns: tuple[int, ...]) -> PrefixExtender:
        ...

    def delta_is_empty(self) -> bool:
        ...


def descend(trie: TrieArrays, prefix: I64) -> tuple[I64, I64]:
    """Ranges ``[lo, hi)`` of level ``d`` under each row of ``prefix`` (``int64[n, d]``).

    An absent prefix gets an empty range; ``d`` may equal the arity, then the range is
    the leaf itself (length 1) or empty.

    >>> t = TrieArrays((np.array([1, 2]), np.array([2, 3, 3])), (np.array([0, 2, 3]),), np.ones(3, np.int64))
    >>> [a.tolist() for a in descend(t, np.array([[1], [2], [7]]))]
    [[0, 2, 0], [2, 3, 0]]
    """
    from wcoj.kernels.intersect import find_in_ranges

    n, d = prefix.shape
    arity = len(trie.values)
    if trie.weights.shape[0] == 0:  # an empty trie: every range is empty
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    lo = np.zeros(n, dtype=np.int64)
    hi = np.full(n, len(trie.values[0]), dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for j in range(d):
        find_in_ranges(trie.values[j], lo, hi, np.ascontiguousarray(prefix[:, j], dtype=np.int64), pos)
        found = pos >= 0
        p = np.where(found, pos, 0)
        if j < arity - 1:
            lo = np.where(found, trie.offsets[j][p], 0)
            hi = np.where(found, trie.offsets[j][p + 1], 0)
        else:
            lo, hi = p, np.where(found, p + 1, 0)
    return lo, hi
