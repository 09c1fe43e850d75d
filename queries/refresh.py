"""When a view starts over instead of stepping: a transaction's incremental step against
its first tick run again over the new state.

A view's incremental step costs about the transaction's change times the work per changed
row (for a recursive rule, times the derivations the change walks, iteration after
iteration); its first tick, the route ``q`` takes, costs about the rows it reads. When a
transaction rewrites much of what a view reads, the first tick wins by far (the ancestors
rule of ``benchmarks/bench_datalog.py`` stepped 5x slower than ``q`` at 10,000 datoms). So
a view re-runs its first tick over the state with the transaction's changes when the
change is at least ``fraction`` of the rows it reads, and emits the difference of the two
answers: the same change, by the other route.

``fraction`` starts at ``config.REFRESH_FRACTION`` and is learned per view. Two incremental
steps in a row that each took longer than the last first tick (scaled to the rows read
now) lower it to where, at their cost per changed row, the two would cost the same (the
larger of their two estimates): an estimate never below the true crossover when a step
costs a fixed part plus a part per changed row. One slow step alone teaches nothing (the
first step after a view is registered may load its kernels, a busy machine may stall it),
and each refresh raises the fraction by ``config.REFRESH_RELAX`` (up to the start value).

Every time learned from is a ``stopwatch``'s: wall time less the time spent compiling
kernels or loading them from Numba's cache. The first view of a process loads its
kernels in its first tick (a triangle view over 40,000 rows: 57 ms, 52 of them loading),
and its first step loads others; timed whole, every later step looked cheap against
that first tick and the view never learned to refresh.

``config.VIEW_REFRESH`` forces either route (``"always"``, ``"never"``; tests run both
against the same oracles).

Relies on ``wcoj.config`` and ``wcoj.kernel_load_seconds``; used by ``queries.circuits``.

>>> r = Refresh()
>>> r.first_tick(0.010, 1000)          # a first tick: 10 ms over 1,000 rows
>>> r.wanted(10, 1000), r.wanted(1000, 1000)
(False, True)
>>> r.stepped(0.040, 100, 1000)        # 100 changed rows took 40 ms: 4x the first tick
>>> r.fraction                         # once is not enough
1.0
>>> r.stepped(0.050, 100, 1000)        # twice in a row: about where the routes cost the same
>>> round(r.fraction, 3), r.wanted(100, 1000), r.wanted(10, 1000)
(0.025, True, False)
"""

from __future__ import annotations

import time
from collections.abc import Callable

from wcoj import config, kernel_load_seconds
from wcoj.errors import InputError

__all__ = ["Refresh", "stopwatch"]


def stopwatch() -> Callable[[], float]:
    """Start timing; the function returned gives the seconds since, less those spent
    compiling or loading kernels meanwhile (a first call's, which the next run won't pay).

    >>> elapsed = stopwatch()
    >>> 0 <= elapsed() < 60
    True
    """
    t0, l0 = time.perf_counter(), kernel_load_seconds()
    return lambda: max(0.0, time.perf_counter() - t0 - (kernel_load_seconds() - l0))

_MODES = ("auto", "always", "never")


class Refresh:
    """One view's choice between stepping and starting over, and what it measured."""

    __slots__ = ("fraction", "first_seconds", "first_rows", "refreshes", "steps", "_slow")

    def __init__(self) -> None:
        self.fraction = config.REFRESH_FRACTION
        self.first_seconds: float | None = None
        self.first_rows = 0
        self.refreshes = self.steps = 0
        self._slow: float | None = None  # the crossover the last step implied, when it was slow

    def __repr__(self) -> str:
        return (f"Refresh(fraction={self.fraction:.3g}, steps={self.steps}, "
                f"refreshes={self.refreshes})")

    def wanted(self, changed: int, read: int) -> bool:
        """Whether a transaction changing ``changed`` rows of the ``read`` rows the view
        reads should re-run the first tick."""
        mode = config.VIEW_REFRESH
        if mode not in _MODES:
            raise InputError(f"config.VIEW_REFRESH is {mode!r}; expected one of {', '.join(_MODES)}")
        if mode != "auto":
            return mode == "always"
        return changed >= self.fraction * max(read, 1)

    def first_tick(self, seconds: float, rows: int) -> None:
        """A first tick over ``rows`` rows took ``seconds`` (at registration or a refresh)."""
        if self.first_seconds is not None:  # a refresh: forget part of what a slow step taught
            self.refreshes += 1
            self.fraction = min(config.REFRESH_FRACTION, self.fraction * config.REFRESH_RELAX)
        self.first_seconds, self.first_rows = seconds, rows

    def stepped(self, seconds: float, changed: int, read: int) -> None:
        """An incremental step of ``changed`` rows, with ``read`` rows read, took ``seconds``."""
        self.steps += 1
        if self.first_seconds is None or read <= 0 or changed <= 0:
            return
        first = self.first_seconds * max(1.0, read / max(self.first_rows, 1))
        if seconds <= first:
            self._slow = None
            return
        cross = changed / read * first / seconds
        if self._slow is not None:
            self.fraction = max(config.REFRESH_MIN_FRACTION, min(self.fraction, max(self._slow, cross)))
        self._slow = cross
