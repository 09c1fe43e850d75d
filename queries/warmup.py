"""Getting a process ready for a long stream of ticks: ``warm_up`` runs the tick kernels
of some patterns once (compiling them, or reading Numba's disk cache) and ``settle_heap``
keeps the loaded heap out of the cyclic collector's sight.

Both are choices for a whole process, which the library never makes on its own:
``wcoj stream``, the demos and the benchmarks call them. Relies on ``queries.graph`` (the
tiny graph ``warm_up`` runs, imported when called: ``queries.graph`` re-exports both).

>>> warm_up(("triangle",), streams=False)
"""

from __future__ import annotations

import atexit
import gc

import numpy as np

from wcoj import config

__all__ = ["settle_heap", "warm_up"]


def settle_heap() -> None:
    """Move every object now alive out of the cyclic garbage collector's sight (``gc.freeze``).

    Call it once after loading a graph and registering its views, before a long stream
    of ticks. Python's full collections rescan every live container; with Numba and the
    engine loaded a full collection takes tens of milliseconds, and ticks trigger one
    every few dozen ticks. Frozen objects are never collected, so this is a process-wide
    choice: the library never makes it on its own (``wcoj stream``, the demo and the
    benchmarks do). At exit the objects are handed back to the collector
    (``gc.unfreeze``), so that the interpreter's last collection still finalises them.
    """
    global _UNFREEZE_AT_EXIT
    gc.collect()
    gc.freeze()
    if not _UNFREEZE_AT_EXIT:
        atexit.register(gc.unfreeze)
        _UNFREEZE_AT_EXIT = True


_UNFREEZE_AT_EXIT = False


def warm_up(patterns=("triangle",), directed: bool = False, staged: bool = False, streams: bool = True) -> None:
    """Run a tiny graph through a tick's kernels for ``patterns`` (their first call in a
    process compiles them or reads Numba's disk cache), touching no state of yours: the
    change-by-change route and its trie growth; ``apply_stream``'s driver unless
    ``streams=False``; the staged route (ticks above ``config.CHANGE_ROWS``) only with
    ``staged=True``. ``wcoj stream``, the demo and the benchmarks call it."""
    from queries.graph import Graph  # here: queries.graph re-exports this module's functions

    rng = np.random.default_rng(0)
    g = Graph(directed=directed)
    g.load_edges(rng.integers(0, 40, (200, 2)))
    for p in patterns:
        g.view(p)
    g.apply(inserts=np.array([[1, 2], [2, 3], [1, 3]]), deletes=np.array([[1, 2]]))
    g.apply(inserts=rng.integers(0, 300, (600, 2)), deletes=g.edges()[::3])  # tries grow: resumed calls
    if streams:
        g.apply_stream([(rng.integers(0, 300, (2, 2)), g.edges()[:1]) for _ in range(3)])
    if staged:
        saved = config.CHANGE_ROWS
        config.CHANGE_ROWS = 0
        try:
            g.apply(inserts=rng.integers(0, 300, (600, 2)), deletes=g.edges()[::3])
        finally:
            config.CHANGE_ROWS = saved
    g.check_views()
