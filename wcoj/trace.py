"""Traces: Z-set deltas stamped with logical times, log-structured and persistent.

A trace holds entries ``(row, time, weight)``: the history of a stream of Z-sets (or of
indexed Z-sets, whose first ``n_key`` columns are the key). It answers two queries, both
vectorised and both restricted to a set of key rows when given one:

- ``select(box, keys)``: the consolidated Z-set of every entry whose time lies in a
  ``Box`` (``upto(t)`` is the box of all times ``<= t``);
- ``lookup(keys)``: every ``(row, time, weight)`` of the given keys.

Layout (differential dataflow's spine, Budiu's "Implementing Z-sets" for the runs):

- ``recent``: the batches inserted since the last ``advance``, as runs that also merge
  geometrically (batches at equal times add up when their runs merge). In a child circuit
  these are the batches of the current epoch; at the root, of the current tick.
- ``runs``: the spine, a few consolidated runs whose sizes shrink geometrically (each at
  most half of the one before), so an insert of k rows costs O(k log N) amortised.
  Every run is one Z-set over ``row columns + time columns``, sorted by key, with its key
  columns packed into one int64 per row so that many keys are found with one
  ``searchsorted``; runs whose time bounds miss a query box are skipped without a look.

``advance(frontier)`` declares that no query will distinguish times below the frontier:
every time ``t`` may be replaced by ``t ⊔ frontier`` (the coordinate-wise max). The root
circuit advances to ``t`` after tick ``t`` (all earlier ticks collapse); a child circuit
advances to ``(e, 0)`` after epoch ``e``, which collapses the epochs but keeps the
iterations apart, because ``distinct_trace`` and the nested join need the per-iteration
sums of earlier epochs (DBSP §6). The times are rewritten lazily, when runs merge.

Traces are immutable: ``insert`` and ``advance`` return a new trace that shares the old
runs, which is how circuit steps stay atomic (a failed step keeps the old trace object).

Relies on ``wcoj.zset``, ``wcoj.rows`` and ``wcoj.time``. Used by the trace operators
(``trace_append``, ``z1_trace``, ``join_trace``, ``distinct_trace``) and by the recursion.

>>> tr = Trace(arity=1, n_dims=2)
>>> tr = tr.insert(ZSet.from_rows([(0,), (2,)]), (0, 0)).insert(ZSet.from_rows([(5,)]), (0, 1))
>>> tr = tr.insert(ZSet.from_rows([(5,)]), (1, 0))
>>> tr.upto((1, 0)).to_dict()
{(0,): 1, (2,): 1, (5,): 1}
>>> tr.upto((0, 1)).to_dict()
{(0,): 1, (2,): 1, (5,): 1}
>>> tr.select(Box([None, 1], [None, 1])).to_dict()   # iteration 1 of any epoch
{(5,): 1}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from wcoj import config
from wcoj.errors import ArityMismatchError, InputError, WeightOverflowError
from wcoj.indexed import IndexedZSet
from wcoj.kernels.memory import read_only
from wcoj.kernels.zsets import advanced_into, match_ranges_into, merge_rows_into, timed_into
from wcoj.rows import Packing, column_bounds, group_starts, packing_for, row_order, union_bounds
from wcoj.tables import RunTable
from wcoj.time import Box, Time, as_row
from wcoj.zset import ZSet, consolidate_sorted_parts

__all__ = ["Trace", "row_ids", "ranges_to_indices"]

I64 = npt.NDArray[np.int64]


def ranges_to_indices(lo: I64, hi: I64) -> I64:
    """Concatenate ``arange(lo[i], hi[i])`` for every i, without a Python loop.

    >>> ranges_to_indices(np.array([0, 5, 9]), np.array([2, 5, 11])).tolist()
    [0, 1, 9, 10]
    """
    cnt = hi - lo
    total = int(cnt.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    keep = cnt > 0
    lo, cnt = lo[keep], cnt[keep]
    starts = np.cumsum(cnt) - cnt
    return (np.repeat(lo - starts, cnt) + np.arange(total, dtype=np.int64)).astype(np.int64)


def row_ids(*mats: I64) -> list[I64]:
    """Order-preserving int64 ids for the rows of matrices of the same width.

    Equal rows get equal ids across all matrices, and ids compare like the rows.

    >>> a, b = row_ids(np.array([[1, 2], [3, 4]]), np.array([[3, 4], [0, 9]]))
    >>> bool(a[1] == b[0]), bool(b[1] < a[0] < a[1])
    (True, True)
    """
    p = packing_for(list(mats))
    if p is not None:
        return [p.pack(m) for m in mats]
    both = np.concatenate(mats)
    order = row_order(both)
    starts = group_starts(both[order])
    step = np.zeros(both.shape[0], dtype=np.int64)
    step[starts[1:]] = 1
    rank = np.empty(both.shape[0], dtype=np.int64)
    rank[order] = np.cumsum(step)
    out, pos = [], 0
    for m in mats:
        out.append(rank[pos: pos + m.shape[0]])
        pos += m.shape[0]
    return out


_NO_ROWS = np.zeros(0, dtype=np.int64)


class _Run:
    """One consolidated block: ``keys`` = row columns then time columns, with weights."""

    __slots__ = ("z", "n", "n_key", "arity", "_packing", "packed", "tlo", "thi", "_row", "_bounds")

    def __init__(self, z: ZSet, n_key: int, arity: int,
                 bounds: tuple[tuple[int, ...], tuple[int, ...]] | None = None):
        self.z, self.n, self.n_key, self.arity = z, len(z), n_key, arity
        self._packing: Packing | None | bool = False  # packed on the first lookup
        self.packed = None
        if bounds is not None or not len(z):  # known bounds of the times (or no entry)
            self.tlo, self.thi = bounds if len(z) else (None, None)
        else:
            lows, highs = column_bounds(z.keys[:, arity:])
            self.tlo, self.thi = tuple(lows.tolist()), tuple(highs.tolist())
        self._row = None
        self._bounds = None

    def bounds(self) -> tuple[I64, I64]:
        """Per row column (times left out), the least and greatest value, or bounds around
        them (one pass, made on first use; a merged run takes its runs' bounds, which its
        cancellations may leave wider than its values); the run must not be empty."""
        if self._bounds is None:
            lows, highs = column_bounds(self.z.keys)
            self._bounds = lows[: self.arity], highs[: self.arity]
        return self._bounds

    def table_row(self) -> npt.NDArray[np.int64]:
        """This run's row of a ``RunTable`` (made once; the run keeps its arrays alive)."""
        if self._row is None:
            k, w = self.z.keys, self.z.weights
            if not (k.flags.c_contiguous and w.flags.c_contiguous):
                self.z = ZSet(np.ascontiguousarray(k), np.ascontiguousarray(w))
            self._row = RunTable.row(self.z.keys, self.z.weights, self.tlo, self.thi)
        return self._row

    def __len__(self) -> int:
        return self.n

    @property
    def packing(self) -> Packing | None:
        """The key columns' packing (None when they need more than 63 bits), made on first
        use: many runs are merged away before anyone looks a key up in them."""
        if self._packing is False:
            keys = self.z.keys[:, : self.n_key]
            self._packing = packing_for([keys]) if len(self.z) else None
            self.packed = self._packing.pack(keys) if self._packing is not None else None
        return self._packing

    def match(self, keys: I64) -> I64:
        """Positions of the rows whose key is one of ``keys`` (sorted, unique rows)."""
        if self.packing is not None and keys.shape[0] == 1:  # most lookups of a small
            p, q = self.packing, 0                            # change: in Python, no temporaries
            for x, lo, hi, sh in zip(keys[0].tolist(), p.lows.tolist(), p.highs.tolist(), p.shifts.tolist()):
                if not lo <= x <= hi:
                    return _NO_ROWS
                q |= (x - lo) << sh
            lo = int(self.packed.searchsorted(q, "left"))
            return np.arange(lo, int(self.packed.searchsorted(q, "right")), dtype=np.int64)
        if self.packing is not None:
            ok = np.all((keys >= self.packing.lows) & (keys <= self.packing.highs), axis=1)
            q = self.packing.pack(keys[ok])
            lo, hi = np.empty(len(q), dtype=np.int64), np.empty(len(q), dtype=np.int64)
            match_ranges_into(read_only(self.packed), read_only(q), lo, hi)
            return ranges_to_indices(lo, hi)
        mine, theirs = row_ids(np.ascontiguousarray(self.z.keys[:, : self.n_key]), keys)
        return np.flatnonzero(np.isin(mine, theirs)).astype(np.int64)

    def entries(self, box: Box | None, keys: I64 | None) -> tuple[I64, I64]:
        """(keys incl. time columns, weights) of the matching entries."""
        k, w = self.z.keys, self.z.weights
        if keys is not None:
            idx = self.match(keys)
            k, w = k[idx], w[idx]
        if box is not None and not box.covers(self.tlo, self.thi):  # (else every row is in it)
            m = box.mask(k[:, self.arity:])
            k, w = k[m], w[m]
        return k, w


def _at_or_after(run: _Run, f: tuple[int, ...] | None) -> bool:
    """True when advancing ``run``'s times to ``f`` would change none of them."""
    return f is None or not len(run) or all(a >= b for a, b in zip(run.tlo, f))


def _at_time(keys: I64, arity: int, time: tuple[int, ...]) -> I64:
    """A copy of ``keys`` with every time set to ``time``."""
    keys = keys.copy()
    keys[:, arity:] = time
    return keys


def _advanced_merge(runs: list[_Run], arity: int, f: tuple[int, ...]) -> ZSet | None:
    """Two runs' entries with their times advanced to ``f``, summed: each run is advanced
    in one pass (its entries stay sorted by row, and a row's few times are sorted again
    in place: ``advanced_into``), then the two are merged. None when a row has more
    entries than that pass sorts (``GROUP_MAX``): the caller sorts them all. (It had
    sorted every merge's rows, ~200 us of a 100-datom update of a recursive view.)"""
    frontier = read_only(np.array(f, dtype=np.int64))
    parts = []
    for r in runs:
        k, w = r.z.keys, r.z.weights
        out_k, out_w = np.empty(k.shape, dtype=np.int64), np.empty(len(w), dtype=np.int64)
        m, bad = advanced_into(read_only(k), read_only(w), arity, frontier, out_k, out_w)
        if bad == -2:
            return None
        if bad >= 0:
            raise WeightOverflowError(f"trace: the weight of row {tuple(k[bad, :arity].tolist())} summed "
                                      f"over its times does not fit in int64")
        parts.append((out_k[:m], out_w[:m]))
    (ka, wa), (kb, wb) = parts
    out_k = np.empty((len(wa) + len(wb), ka.shape[1]), dtype=np.int64)
    out_w = np.empty(len(wa) + len(wb), dtype=np.int64)
    m, bad = merge_rows_into(ka, wa, kb, wb, out_k, out_w)
    if bad >= 0:
        raise WeightOverflowError(f"trace: the weight of row {tuple(ka[bad, :arity].tolist())} summed "
                                  f"over its times does not fit in int64")
    return ZSet(out_k[:m], out_w[:m])


def _advance_times(keys: I64, arity: int, frontier: tuple[int, ...] | None) -> I64:
    if frontier is None:
        return keys
    keys = keys.copy()
    keys[:, arity:] = np.maximum(keys[:, arity:], np.array(frontier, dtype=np.int64))
    return keys


class Trace:
    """An immutable, log-structured collection of timed Z-set deltas.

    Parameters
    ----------
    arity : int
        Columns of every row.
    n_key : int, optional
        Leading columns that form the lookup key (default: the whole row, as for a
        trace of plain Z-sets; an indexed Z-set's ``n_key`` for a trace of those).
    n_dims : int
        Coordinates of a time: 1 at the root, 2 in a child circuit, ...
    """

    __slots__ = ("arity", "n_key", "n_dims", "runs", "recent", "frontier", "_all", "_table", "_last_timed")

    def __init__(self, arity: int, n_key: int | None = None, n_dims: int = 1,
                 runs: tuple[_Run, ...] = (), recent: tuple[_Run, ...] = (),
                 frontier: tuple[int, ...] | None = None):
        self.arity, self.n_dims = int(arity), int(n_dims)
        self.n_key = self.arity if n_key is None else int(n_key)
        if not 0 <= self.n_key <= self.arity:
            raise ArityMismatchError("trace", self.arity, self.n_key,
                                     f"key of {self.n_key} columns in rows of {self.arity}")
        self.runs, self.recent, self.frontier = runs, recent, frontier
        self._all = tuple(r for r in runs + recent if r.n)  # what every query walks (immutable)
        self._table: RunTable | None = None  # the runs as the lattice kernels read them
        self._last_timed: tuple | None = None  # (z, time row, timed z, bounds): see _timed

    @classmethod
    def from_batches(cls, batches: Iterable[tuple[Time, ZSet | IndexedZSet]], arity: int | None = None,
                     n_key: int | None = None, n_dims: int | None = None) -> Trace:
        """Build a trace by inserting ``(time, batch)`` pairs in order."""
        batches = list(batches)
        if arity is None or n_dims is None:
            if not batches:
                raise InputError("cannot infer arity and time depth of an empty trace")
            t0, b0 = batches[0]
            arity = _as_zset(b0).arity if arity is None else arity
            n_dims = len(as_row(t0)) if n_dims is None else n_dims
            if n_key is None and isinstance(b0, IndexedZSet):
                n_key = b0.n_key
        tr = cls(arity, n_key, n_dims)
        for t, b in batches:
            tr = tr.insert(b, t)
        return tr

    def _replace(self, **kw: Any) -> Trace:
        d = dict(runs=self.runs, recent=self.recent, frontier=self.frontier)
        d.update(kw)
        return Trace(self.arity, self.n_key, self.n_dims, **d)

    # ---------------------------------------------------------------- size and repr
    def __len__(self) -> int:
        """Number of stored entries (row, time) over all runs; not consolidated across runs."""
        return sum(len(r) for r in self.runs) + sum(len(r) for r in self.recent)

    def is_empty(self) -> bool:
        return len(self) == 0

    def run_sizes(self) -> list[int]:
        """Sizes of the spine's runs, oldest first (geometrically shrinking)."""
        return [len(r) for r in self.runs]

    def __repr__(self) -> str:
        return (f"Trace(arity={self.arity}, n_key={self.n_key}, n_dims={self.n_dims}, "
                f"runs={self.run_sizes()}, recent={len(self.recent)})")

    # ---------------------------------------------------------------- updates
    def _time_row(self, time: Time) -> tuple[int, ...]:
        row = as_row(time)
        if len(row) != self.n_dims:
            raise InputError(f"time {time!r} has {len(row)} coordinates; this trace's times have {self.n_dims}")
        return row

    def _timed(self, z: ZSet, row: tuple[int, ...]) -> tuple[ZSet, tuple[I64, I64] | None]:
        """``z`` with the time ``row`` appended to each row, and the bounds of its columns
        when it is large enough that a join may pack them (``Trace.column_bounds``).

        The last large result is kept on this trace: a nested join reads a batch as one
        more run (``run_table``) and packs its output by the batch's bounds
        (``column_bounds``) right before the trace appends it (``insert``), and all three
        need it timed or bounded. (The trace object goes when the append replaces it.)"""
        last = self._last_timed
        if last is not None and last[0] is z and last[1] == row:
            return last[2], last[3]
        # Rows are sorted and unique and all share one time, so appending it keeps that.
        keys = np.empty((len(z), self.arity + self.n_dims), dtype=np.int64)
        n = self.arity if len(z) >= config.RADIX_MIN_ROWS else 0
        lows, highs = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        timed_into(read_only(z.keys), np.array(row, dtype=np.int64), keys, lows, highs)
        out = ZSet(keys, np.ascontiguousarray(z.weights)), (lows, highs) if n else None
        if n:
            self._last_timed = (z, row, *out)
        return out

    def insert(self, batch: ZSet | IndexedZSet, time: Time) -> Trace:
        """A new trace with ``batch`` added at ``time`` (``trace_append``).

        Complexity: O(k log k) amortised for a batch of k rows (the recent runs merge
        geometrically).
        """
        z = _as_zset(batch)
        if z.arity != self.arity:
            raise ArityMismatchError("trace insert", self.arity, z.arity)
        if isinstance(batch, IndexedZSet) and batch.n_key != self.n_key:
            raise ArityMismatchError("trace insert", self.n_key, batch.n_key,
                                     f"indexed batch keyed by {batch.n_key} columns, trace by {self.n_key}")
        row = self._time_row(time)
        if z.is_empty():
            return self
        recent = list(self.recent)
        timed, bounds = self._timed(z, row)
        run = _Run(timed, self.n_key, self.arity, (row, row))
        run._bounds = bounds
        recent.append(run)
        self._merge_tail(recent, None, config.TRACE_RUNS)  # an epoch's few iterations: no merges
        return self._replace(recent=tuple(r for r in recent if len(r)))

    def with_run(self, z: ZSet, lo: tuple[int, ...], hi: tuple[int, ...]) -> Trace:
        """A new trace with ``z`` added as one run: its rows already end in their times'
        columns, sorted and consolidated, the times between ``lo`` and ``hi`` coordinate by
        coordinate (an epoch's appends, merged by the compiled epoch: ``wcoj.epoch``). The
        same entries as ``insert`` of each time's rows at that time."""
        if not len(z):
            return self
        recent = list(self.recent) + [_Run(z, self.n_key, self.arity, (lo, hi))]
        self._merge_tail(recent, None, config.TRACE_RUNS)
        return self._replace(recent=tuple(recent))

    def append_untimed(self, batch: ZSet | IndexedZSet) -> Trace:
        """Add ``batch`` at the least time (``untimed_trace_append``): visible to every query
        ``upto(t)``, as if it had always been there."""
        return self.insert(batch, (0,) * self.n_dims if self.n_dims > 1 else 0)

    def advance(self, frontier: Time) -> Trace:
        """Declare the times below ``frontier`` indistinguishable; moves ``recent`` into the spine.

        Afterwards every query whose box does not separate times below ``frontier`` (e.g.
        ``upto(t)`` for ``t >= frontier``) answers as before. Merges runs geometrically.
        """
        f = self._time_row(frontier)
        if self.frontier is not None:
            f = tuple(max(a, b) for a, b in zip(f, self.frontier))
        runs = list(self.runs)
        if len(self.recent) == 1 and _at_or_after(self.recent[0], f):
            runs.append(self.recent[0])  # its times stay as they are: nothing to rewrite
        elif self.recent:
            run = self._merge(list(self.recent), f)
            if len(run):
                runs.append(run)
        self._merge_tail(runs, f)
        return Trace(self.arity, self.n_key, self.n_dims, tuple(r for r in runs if len(r)), (), f)

    def _merge_tail(self, runs: list[_Run], f: tuple[int, ...] | None, unmerged: int = 0) -> None:
        """Past ``unmerged`` runs, merge the last runs while one is at least ``1 /
        config.TRACE_MERGE_RATIO`` of the size of the one before it."""
        while len(runs) >= 2 and len(runs) > unmerged and len(runs[-2]) <= config.TRACE_MERGE_RATIO * len(runs[-1]):
            b = runs.pop()
            a = runs.pop()
            runs.append(self._merge([a, b], f))

    def _merge(self, runs: list[_Run], f: tuple[int, ...] | None) -> _Run:
        out = self._merged(runs, f)
        known = [r._bounds for r in runs if r.n]
        if out.n and known and all(b is not None for b in known):  # a merge adds no value
            out._bounds = union_bounds(known)
        return out

    def _merged(self, runs: list[_Run], f: tuple[int, ...] | None) -> _Run:
        if all(_at_or_after(r, f) for r in runs):  # no time to rewrite: linear merges of
            zs = sorted((r.z for r in runs), key=len, reverse=True)  # consolidated runs
            while len(zs) > 1:
                b, a = zs.pop(), zs.pop()
                zs.append(a.plus(b))
                zs.sort(key=len, reverse=True)
            live = [r for r in runs if r.n]
            bounds = (tuple(map(min, *(r.tlo for r in live))), tuple(map(max, *(r.thi for r in live)))) \
                if len(live) > 1 else (live[0].tlo, live[0].thi) if live else None
            return _Run(zs[0], self.n_key, self.arity, bounds)
        if all(not r.n or all(h <= x for h, x in zip(r.thi, f)) for r in runs):
            # Every time becomes f: each run stays sorted, a row's entries adjacent.
            parts = [(r.z.keys if r.tlo == r.thi == f else _at_time(r.z.keys, self.arity, f), r.z.weights)
                     for r in runs if r.n]
            z = consolidate_sorted_parts(parts, self.arity + self.n_dims)
            return _Run(z, self.n_key, self.arity, (f, f))
        if len(runs) == 2:  # the spine's merges: two linear passes, no sort
            z = _advanced_merge(runs, self.arity, f)
            if z is not None:
                return _Run(z, self.n_key, self.arity)
        keys = np.concatenate([r.z.keys for r in runs])
        weights = np.concatenate([r.z.weights for r in runs])
        return _Run(ZSet.from_arrays(_advance_times(keys, self.arity, f), weights), self.n_key, self.arity)

    def compact(self) -> Trace:
        """Merge everything into one run, rewriting every time to ``t ⊔ frontier``."""
        tr = self.advance(self.frontier if self.frontier is not None else (0,) * self.n_dims)
        if len(tr.runs) <= 1:
            return tr
        return tr._replace(runs=(self._merge(list(tr.runs), tr.frontier),))

    # ---------------------------------------------------------------- queries
    def _all_runs(self) -> tuple[_Run, ...]:
        """The non-empty runs, spine then recent."""
        return self._all

    def _key_matrix(self, keys: ZSet | IndexedZSet | Any) -> I64:
        if isinstance(keys, IndexedZSet):
            keys = keys.group_keys()
        if isinstance(keys, ZSet):
            if keys.arity != self.n_key:
                raise ArityMismatchError("trace lookup", self.n_key, keys.arity)
            return keys.keys
        arr = np.asarray(keys, dtype=np.int64).reshape(-1, self.n_key)
        return ZSet.from_arrays(arr, arity=self.n_key).keys  # sorted, unique

    def run_table(self, batch: ZSet | IndexedZSet | None = None, time: Time | None = None) -> RunTable:
        """The runs, and ``batch`` at ``time`` as one more run, as the lattice kernels read
        them (``wcoj.kernels.lattice``); the runs' part is made once per trace."""
        if self._table is None:
            self._table = RunTable([r.table_row() for r in self._all], self._all)
        z = None if batch is None else _as_zset(batch)
        if z is None or z.is_empty():
            return self._table
        row = self._time_row(time)
        timed = self._timed(z, row)[0]
        return self._table.plus_row(RunTable.row(timed.keys, timed.weights, row, row), [timed])

    def column_bounds(self, batch: ZSet | IndexedZSet | None = None) -> tuple[I64, I64] | None:
        """Per row column, the least and greatest value over every run and ``batch``
        (None when all are empty): what a join that reads them can write."""
        parts = [r.bounds() for r in self._all]
        z = None if batch is None else _as_zset(batch)
        if z is not None and len(z):
            last = self._last_timed  # run_table has just timed this batch, and bounded it
            parts.append(last[3] if last is not None and last[0] is z else column_bounds(z.keys))
        if not parts:
            return None
        return union_bounds(parts)

    def may_have(self, box: Box) -> bool:
        """False when no run can hold a time in ``box`` (a cheap test on time bounds)."""
        for r in self._all:
            if box.may_overlap(r.tlo, r.thi):
                return True
        return False

    def entries(self, box: Box | None = None, keys: Any = None) -> tuple[I64, I64, I64]:
        """``(rows, times, weights)`` of every stored entry in ``box`` with a key in ``keys``.

        Not consolidated across runs; times are as stored (possibly advanced).
        """
        parts_k, parts_w = [], []
        for k, w in self._run_entries(box, keys):
            parts_k.append(k)
            parts_w.append(w)
        if not parts_k:
            return (np.zeros((0, self.arity), dtype=np.int64),
                    np.zeros((0, self.n_dims), dtype=np.int64), np.zeros(0, dtype=np.int64))
        k = np.concatenate(parts_k)
        return (np.ascontiguousarray(k[:, : self.arity]), np.ascontiguousarray(k[:, self.arity:]),
                np.concatenate(parts_w))

    def keys_in(self, box: Box | None = None, keys: Any = None) -> I64:
        """The distinct keys (sorted rows of ``n_key`` columns) of the entries in ``box``
        (with a key in ``keys``): each run's entries are sorted by key already, so they
        are deduplicated and merged in linear passes, without a sort."""
        nk = self.n_key
        parts = [(k[:, :nk], np.ones(len(w), dtype=np.int64))
                 for k, w in self._run_entries(box, keys)]
        return consolidate_sorted_parts(parts, nk).keys

    def _run_entries(self, box: Box | None, keys: Any):
        """Each run's non-empty ``(rows + times, weights)`` in ``box`` with a key in ``keys``."""
        km = None if keys is None else self._key_matrix(keys)
        if km is not None and not len(km):
            return
        for r in self._all:
            if box is not None and not box.may_overlap(r.tlo, r.thi):
                continue
            k, w = r.entries(box, km)
            if len(w):
                yield k, w

    def lookup(self, keys: Any) -> tuple[I64, I64, I64]:
        """All ``(rows, times, weights)`` whose key is one of ``keys`` (a Z-set of key rows,
        an indexed Z-set, or an ``(m, n_key)`` array), for many keys at once.

        Complexity: O(m log N) per run, with N the run's size.
        """
        return self.entries(None, keys)

    def select(self, box: Box | None = None, keys: Any = None) -> ZSet:
        """The consolidated Z-set of the entries in ``box`` (and with a key in ``keys``).

        Each run's entries come out sorted by row (a run is sorted by row, then time), so
        they are summed and merged in linear passes, without a sort.
        """
        km = None if keys is None else self._key_matrix(keys)
        parts = []
        if km is None or len(km):
            for r in self._all:
                if box is not None and not box.may_overlap(r.tlo, r.thi):
                    continue
                k, w = r.entries(box, km)
                if len(w):
                    parts.append((k[:, : self.arity], w))
        return consolidate_sorted_parts(parts, self.arity)

    def upto(self, t: Time, keys: Any = None) -> ZSet:
        """Everything at times ``<= t``, consolidated (the integral at ``t``)."""
        return self.select(Box.upto(self._time_row(t)), keys)

    def consolidate(self) -> ZSet:
        """Everything, over all times, consolidated."""
        return self.select(None)

    def batches(self) -> list[tuple[Time, ZSet]]:
        """``[(time, Z-set)]`` in time order (lexicographic), one per distinct stored time."""
        rows, times, weights = self.entries()
        if not len(weights):
            return []
        z = ZSet.from_arrays(np.concatenate([times, rows], axis=1), weights)
        starts = group_starts(z.keys[:, : self.n_dims])
        ends = np.append(starts[1:], len(z))
        out = []
        for s, e in zip(starts.tolist(), ends.tolist()):
            row = tuple(z.keys[s, : self.n_dims].tolist())
            t: Time = row[0] if self.n_dims == 1 else row
            part = np.ascontiguousarray(z.keys[s:e, self.n_dims:])
            out.append((t, ZSet(part, np.ascontiguousarray(z.weights[s:e]))))
        return out

    def weights_for(self, box: Box, keys: I64) -> I64:
        """Per row of ``keys`` (sorted unique full rows), the summed weight in ``box``."""
        z = self.select(box, keys)
        return align_weights(keys, z)


def align_weights(keys: I64, z: ZSet) -> I64:
    """Weights of ``z`` for each row of ``keys`` (sorted unique rows); 0 where absent."""
    out = np.zeros(keys.shape[0], dtype=np.int64)
    if not len(z) or not keys.shape[0]:
        return out
    kid, zid = row_ids(keys, z.keys)
    pos = np.searchsorted(kid, zid)
    ok = (pos < kid.shape[0]) & (kid[np.minimum(pos, kid.shape[0] - 1)] == zid)
    out[pos[ok]] = z.weights[ok]
    return out


def _as_zset(batch: Any) -> ZSet:
    if isinstance(batch, IndexedZSet):
        return batch.zset
    if isinstance(batch, ZSet):
        return batch
    raise InputError(f"a trace holds Z-sets or indexed Z-sets, got {type(batch).__name__}")

