"""Logical times of the circuit runtime, ordered by the product order.

The root circuit counts ticks with a plain ``int``. A child circuit refines its parent's
time with one more coordinate, its iteration: ``(epoch, iteration)``, and deeper nesting
adds more (``(epoch, i, j)``). Nested times are compared with the *product order*:
``s <= t`` iff every coordinate of ``s`` is ``<=`` the same coordinate of ``t``, so
``(0, 2)`` and ``(1, 1)`` are incomparable (DBSP §6; the Dialog dataflow spec §2.5).

Times are also handled as int64 matrices (one row per time, one column per coordinate)
inside traces; ``as_row`` converts. A ``Box`` selects times coordinate by coordinate
(inclusive bounds) and is the one query shape the traces answer.

Relies on numpy only. Used by ``wcoj.trace``, ``wcoj.circuit`` and the operators.

>>> leq((0, 0), (0, 1)), leq((0, 2), (1, 1)), leq((1, 1), (2, 0))
(True, False, False)
>>> join((0, 2), (1, 1)), meet((0, 2), (1, 1))
((1, 2), (0, 1))
"""

from __future__ import annotations

from typing import Union

import numpy as np
import numpy.typing as npt

__all__ = ["Time", "leq", "lt", "join", "meet", "dims", "as_row", "extend", "zero", "Box"]

Time = Union[int, tuple[int, ...]]
I64 = npt.NDArray[np.int64]
_LO, _HI = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def as_row(t: Time) -> tuple[int, ...]:
    """The coordinates of ``t`` as a tuple (an int time is a 1-tuple).

    >>> as_row(3), as_row((1, 2))
    ((3,), (1, 2))
    """
    return (int(t),) if isinstance(t, (int, np.integer)) else tuple(int(x) for x in t)


def dims(t: Time) -> int:
    """Number of coordinates: 1 at the root, 2 in a child, ..."""
    return len(as_row(t))


def _pair(t1: Time, t2: Time) -> tuple[tuple[int, ...], tuple[int, ...]]:
    a, b = as_row(t1), as_row(t2)
    if len(a) != len(b):
        raise ValueError(f"cannot compare times of different depths: {t1!r} and {t2!r}")
    return a, b


def _like(t: Time, row: tuple[int, ...]) -> Time:
    return row[0] if isinstance(t, (int, np.integer)) else row


def leq(t1: Time, t2: Time) -> bool:
    """Product order: every coordinate of ``t1`` is ``<=`` that of ``t2``."""
    a, b = _pair(t1, t2)
    return all(x <= y for x, y in zip(a, b))


def lt(t1: Time, t2: Time) -> bool:
    """``t1 <= t2`` and ``t1 != t2``."""
    return leq(t1, t2) and as_row(t1) != as_row(t2)


def join(t1: Time, t2: Time) -> Time:
    """Least upper bound: the coordinate-wise maximum."""
    a, b = _pair(t1, t2)
    return _like(t1, tuple(max(x, y) for x, y in zip(a, b)))


def meet(t1: Time, t2: Time) -> Time:
    """Greatest lower bound: the coordinate-wise minimum."""
    a, b = _pair(t1, t2)
    return _like(t1, tuple(min(x, y) for x, y in zip(a, b)))


def extend(parent: Time, iteration: int) -> tuple[int, ...]:
    """The child time of iteration ``iteration`` within the parent time ``parent``.

    >>> extend(4, 0), extend((4, 1), 2)
    ((4, 0), (4, 1, 2))
    """
    return as_row(parent) + (int(iteration),)


def zero(n_dims: int) -> Time:
    """The least time with ``n_dims`` coordinates (``0`` at the root)."""
    return 0 if n_dims == 1 else (0,) * n_dims


class Box:
    """Times whose every coordinate ``j`` lies in ``[lows[j], highs[j]]`` (inclusive).

    ``None`` in a bound means unbounded. Traces prune whole runs with ``may_overlap`` (from
    a run's coordinate-wise min and max times) before masking rows with ``mask``.

    >>> b = Box.upto((1, 1))
    >>> b.mask(np.array([[0, 0], [0, 2], [1, 1]])).tolist()
    [True, False, True]
    >>> Box([1, None], [1, 0]).contains((1, 0)), Box([1, None], [1, 0]).contains((0, 0))
    (True, False)
    """

    __slots__ = ("lows", "highs", "_lo", "_hi", "_empty")

    def __init__(self, lows, highs):
        # Python tuples for the per-run pruning tests (tiny, called often), arrays for masks.
        self._lo = tuple(_LO if x is None else int(x) for x in lows)
        self._hi = tuple(_HI if x is None else int(x) for x in highs)
        self._empty = any(a > b for a, b in zip(self._lo, self._hi))
        self.lows = np.array(self._lo, dtype=np.int64)
        self.highs = np.array(self._hi, dtype=np.int64)

    @classmethod
    def upto(cls, t: Time) -> Box:
        """All times ``<= t``."""
        row = as_row(t)
        return cls([None] * len(row), row)

    @classmethod
    def everything(cls, n_dims: int) -> Box:
        """All times."""
        return cls([None] * n_dims, [None] * n_dims)

    def is_empty(self) -> bool:
        """True when some coordinate's range is empty."""
        return self._empty

    def mask(self, times: I64) -> npt.NDArray[np.bool_]:
        """Row mask of the times (``int64[n, d]``) inside the box."""
        m = np.ones(times.shape[0], dtype=bool)
        for j, (lo, hi) in enumerate(zip(self._lo, self._hi)):  # per column: axis-1
            col = times[:, j]                                   # reductions are slow
            if lo != _LO:
                m &= col >= lo
            if hi != _HI:
                m &= col <= hi
        return m

    def contains(self, t: Time) -> bool:
        """True when the single time ``t`` lies in the box."""
        row = as_row(t)
        return self.covers(row, row)

    def covers(self, lo: tuple[int, ...], hi: tuple[int, ...]) -> bool:
        """True when every time between the coordinate-wise bounds ``lo``/``hi`` is inside.

        >>> Box.upto((2, 3)).covers((0, 1), (2, 3)), Box.upto((2, 3)).covers((0, 1), (3, 0))
        (True, False)
        """
        return _below(self._lo, lo) and _below(hi, self._hi)

    def may_overlap(self, lo: tuple[int, ...], hi: tuple[int, ...]) -> bool:
        """False when no time between the coordinate-wise bounds ``lo``/``hi`` is inside."""
        return not self._empty and _below(self._lo, hi) and _below(lo, self._hi)

    def __repr__(self) -> str:
        fmt = lambda x: "*" if x in (_LO, _HI) else str(x)  # noqa: E731
        return "Box(" + ", ".join(f"{fmt(a)}..{fmt(b)}" for a, b in zip(self._lo, self._hi)) + ")"


def _below(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """``a <= b`` coordinate-wise (a loop, not ``all`` over a generator: boxes test the
    bounds of every run a trace lookup walks)."""
    for x, y in zip(a, b):
        if x > y:
            return False
    return True
