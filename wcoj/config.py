"""The engine's tunables, in one place, each with what it trades.

Every value here was chosen by measurement on this project's two-core host (the
benchmark behind each is named); change one only with a benchmark run beside the old
value (``./dev bench tick_ab`` / ``kernel_ab``). They are read when used, so a test or a
benchmark may set them on this module.

Constants compiled into the kernels cannot live here (Numba freezes a kernel's globals
when it compiles): ``kernels.program.AHEAD`` (values whose lookups are prefetched),
``kernels.count.PROBE_AHEAD`` and ``GALLOP_RATIO``, ``kernels.store.MIN_CAP`` (a new
segment's room).

>>> SLICE_ROWS >= 1 << 16
True
"""

from __future__ import annotations

import os

__all__ = ["SLICE_ROWS", "THREADS", "SHARES_PER_THREAD", "DELTA_SHARE_ROWS", "COUNT_SHARE_ROWS", "MARK_SPAN",
           "CHANGE_ROWS", "DENSE_SPAN", "DENSE_MIN", "GROWTH", "SLACK", "RECURSION_LIMIT",
           "VIEW_REFRESH", "REFRESH_FRACTION", "REFRESH_MIN_FRACTION", "REFRESH_RELAX",
           "RADIX_MIN_ROWS", "RADIX_MAX_BITS", "DENSE_SUM_SLOTS", "DENSE_SUM_MAX_BITS", "TRACE_RUNS",
           "TRACE_MERGE_RATIO", "EPOCH_KERNEL_MAX_ROWS", "CURR_MERGE_FRACTION", "CURR_MERGE_MAX_ROWS"]

# --- sorting rows (wcoj.rows)
RADIX_MIN_ROWS = 512
"""Row sorts (consolidation, distinct, trace merges) of at least this many rows, keys
packed into few bits, take the radix sort kernel instead of numpy's sort (2-7x faster at
10^5-10^7 rows; below this the kernel call's fixed cost is a larger part)."""

RADIX_MAX_BITS = 44
"""Packed keys of more bits than this sort with numpy: each 11 bits is one more pass
over the rows (4 passes at 44 bits measured 1.3-1.5x numpy's sort)."""

DENSE_SUM_SLOTS = 4
"""A consolidation of at least ``RADIX_MIN_ROWS`` rows whose packed keys have at most
this many possible values per row (and at most ``DENSE_SUM_MAX_BITS`` bits) adds the
weights in a table of one slot per key instead of sorting (a perfect-hash aggregate:
the 10M join rows of a 1,000-person closure consolidated in a fraction of the radix
sort's time). Memory: 8 bytes per slot, so at most this many words per row."""

# --- traces of nested circuits (wcoj.trace)
TRACE_RUNS = 8
"""The runs a trace adds within one epoch (a query's iterations) merge only once there
are more than this many (then geometrically, ``TRACE_MERGE_RATIO``); at the end of an
epoch they become one run of the spine, whose runs merge geometrically. A lookup seeks
in every run, a table route reads them all anyway, and a merge copies both runs: the
1,000-person closure (7 iterations) merged about a million rows per iteration for
nothing (0.40-0.51 s -> 0.34-0.37 s per query without those merges)."""

TRACE_MERGE_RATIO = 2
"""A run is merged into the one before it once it is at least ``1 / TRACE_MERGE_RATIO``
of that one's size: at most about log2(rows) runs."""

EPOCH_KERNEL_MAX_ROWS = 4096
"""A child circuit's epoch whose imported changes hold at most this many rows runs as one
kernel call (``wcoj.epoch``) when the child's nodes allow it; a larger one takes the
interpreter, whose nested join sums a large output in a table (``DENSE_SUM_SLOTS``) where
the kernel call buffers every row. The call saves the interpreter's fixed cost per node
and iteration, which only small changes notice. 0 turns the kernel route off (the tests
run both routes)."""

DENSE_SUM_MAX_BITS = 28
"""The largest key space a table of one slot per packed row (a dense consolidation, the
nested join's sums, distinct's first-epoch integral) allocates: 2**28 slots, 2 GB, which
``DENSE_SUM_SLOTS`` allows only for at least 2**26 rows (1.5 GB of rows and weights
themselves). At 2**24 the closure of 6,000 people (36M pairs, 26 bits) sorted its join's
rows instead: 116 s and 21.8 GB against 31 s and 10.5 GB."""

# --- joins (wcoj.generic_join)
SLICE_ROWS = 1 << 21
"""A level's frontier holds at most this many rows; past it the join goes on over halves
of the frontier before it. Memory (each row holds its values and a range per part)
against the calls it takes."""

THREADS = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                     8))
"""Threads a large join or count uses (the caller and pinned helpers, ``wcoj.shares``)."""

SHARES_PER_THREAD = 2
"""A large delta rule is cut into this many shares per thread; each thread takes the next
one left, which evens out shares that happen to hold hubs."""

DELTA_SHARE_ROWS = 1 << 10
"""A tick's delta terms run on threads from this many delta rows (about a millisecond of
work); below it, waking helpers costs more than it saves."""

COUNT_SHARE_ROWS = 2_000
"""A count's fused last two levels run on threads from this many frontier rows (each row
does a whole neighbourhood's work)."""

MARK_SPAN = 1 << 23
"""The largest value span a count marks in a byte map (one map per share, cleared per
row); past it the fixed side is merged instead."""

# --- ticks (indexes.transaction, queries.graph)
CHANGE_ROWS = 1 << 20
"""A tick of at most this many changed rows runs change by change in one kernel call
(``kernels.tick``): each change reads one version of each list, and the tick commits in
the same call. Larger ticks stage their delta and run each term over all of it, on
threads, in slices of bounded memory. On the 1M-edge power-law graph (triangle view,
2 cores) the change-by-change route was 1.19x, 1.43x, 1.35x and 1.35x faster than the
staged one at 4,096, 16,384, 50,000 and 100,000 changes; above a million the staged
route keeps memory bounded and Ctrl-C answered within a slice."""

CURR_MERGE_FRACTION = 0.125
"""A staged change of at least this share of an index's committed rows is summed with
them into one trie for the ``curr`` view (``indexes.index``), once per tick: a copy of
the index, against joins that read two parts and cannot list or count a last level with
a byte map (the triangle view's 10,000-datom refresh: ~30 ms of level-by-level listing
over two parts)."""

CURR_MERGE_MAX_ROWS = 1 << 22
"""... unless the index and the change hold more rows than this: the merged copy costs
memory in proportion to the index (a graph tick of millions of changes takes the staged
route to keep its memory bounded), so past it ``curr`` stays two parts."""

# --- tries (indexes.trie)
DENSE_SPAN = 32
"""Level 0 of a trie is dense (position = value - base, no search) when its values span
at most this many times their number: memory (8 bytes per position in four arrays)
against a binary search per lookup."""

DENSE_MIN = 64
"""... and when it holds at least this many values (a few values are searched in cache)."""

GROWTH = 1.5
"""A trie level that runs out of room grows to this many times what it needs: memory
against how often a tick pays for copying the level."""

SLACK = 1024
"""... and by at least this many entries."""

# --- recursion (wcoj.recursion, queries)
RECURSION_LIMIT = 10_000
"""A fixed point that has not converged after this many iterations raises."""

# --- Datalog views (queries.refresh)
VIEW_REFRESH = "auto"
"""Whether a view's transaction steps its circuit or re-runs its first tick over the new
state: ``"auto"`` (by the share of the rows it reads that the transaction changes, below),
``"always"`` or ``"never"``."""

REFRESH_FRACTION = 1.0
"""A transaction changing at least this share of the rows a view reads re-runs the view's
first tick, until the view learns a lower share (``queries.refresh``)."""

REFRESH_MIN_FRACTION = 0.01
"""The lowest share a view learns: below it a step is cheap however slow one was timed."""

REFRESH_RELAX = 1.25
"""Each refresh multiplies the learned share by this (up to ``REFRESH_FRACTION``): one slow
step timed on a busy machine is forgotten after a few refreshes."""
