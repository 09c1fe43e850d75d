"""Incremental, log-structured trie indexes and the relations that own them.

An ``IncrementalIndex`` holds one relation in one column order as a few immutable runs
(tries): a large base plus smaller recent runs, merged geometrically (a run is merged into
the one before it once it grows to a quarter of that one's size, and runs under
``MIN_RUN`` rows are merged eagerly), so committing a tick of ``k`` changes costs
O(k log N) amortised, never a rebuild. A merge of at least ``BACKGROUND_ROWS`` rows runs
on a background thread (the kernels release the GIL) when it is also ``BACKGROUND_RATIO``
times the tick's change: the two runs stay parts of the views until a later commit takes
the merged run in, so a small tick never waits for a large merge.
A tick has three views (DBSP's names):

* ``delta``: this tick's change (Δ), staged but not committed;
* ``prev``: z^-1 of the integral, the state before this tick (every committed run);
* ``curr``: the state after it, ``prev + delta``.

In the telescoping delta rule, atom *i*'s term sees ``curr`` for the atoms before it and
``prev`` for the atoms after it.

A ``Relation`` owns the indexes of one relation in every column order the queries asked
for (built on demand from the current state), stages a tick's delta on all of them at
once, and commits or rolls back all of them together. It implements ``wcoj``'s
``IncrementalSource`` protocol.

Relies on ``wcoj`` (Z-sets, errors) and ``indexes.trie``. Used by the graph API and the
Datalog database in ``queries``.

>>> r = Relation("edge", 2)
>>> r.stage(ZSet.from_rows([(1, 2), (2, 3)])); r.commit()
>>> r.stage(ZSet.from_dict({(2, 3): -1, (3, 1): 1}))
>>> r.view("prev", (1, 0)).to_zset().to_dict()
{(2, 1): 1, (3, 2): 1}
>>> r.view("curr", (0, 1)).to_zset().to_dict()
{(1, 2): 1, (3, 1): 1}
>>> r.rollback(); r.contents().to_dict()
{(1, 2): 1, (2, 3): 1}
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from wcoj.errors import ArityMismatchError, InputError
from wcoj.shares import run_shares
from wcoj.zset import ZSet
from wcoj.kernels.rowops import stage_runs_plus
from indexes.trie import PIN_ROWS, Trie, TrieView, flat_size

__all__ = ["IncrementalIndex", "Relation", "MERGE_RATIO", "MIN_RUN", "BACKGROUND_ROWS", "BACKGROUND_RATIO",
           "TOGETHER_ROWS", "PARALLEL_STAGE_ROWS"]

MERGE_RATIO = 4   # a run merges into its predecessor when it reaches 1/MERGE_RATIO of its size
MIN_RUN = 4096    # runs smaller than this are merged eagerly (cheap, keeps views few-part)
BACKGROUND_ROWS = 1 << 16  # merges of at least this many rows run on a background thread, when they
BACKGROUND_RATIO = 32      # are also this many times the tick's change (else its own work dwarfs them)
TOGETHER_ROWS = 1 << 12  # a change of at most this many rows is staged on every index in one call
PARALLEL_STAGE_ROWS = 1 << 14  # a change of this many rows is staged on every index at once (threads)
VIEWS = ("prev", "delta", "curr")
_MERGER = None


def _merger():
    """The thread that runs large merges (created on first use; one for all indexes)."""
    global _MERGER
    if _MERGER is None:
        from concurrent.futures import ThreadPoolExecutor
        _MERGER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wcoj-merge")
    return _MERGER


def _spans(n: int, lasts: list[int], r: int) -> list[tuple[int, int, int]]:
    """Per index, where ``stage_runs_plus`` writes in its buffer: ``(start, end of the
    change's trie, end of its merge with the last run)``, for a change of ``n`` rows and
    last runs of ``lasts`` rows (each trie with room for its rows)."""
    s1, at, out = flat_size(n, r), 0, []
    for m in lasts:
        out.append((at, at + s1, at + s1 + flat_size(m + n, r)))
        at = out[-1][2]
    return out


class IncrementalIndex:
    """One relation in one column order: committed runs plus a staged delta.

    Parameters
    ----------
    arity : columns of the relation.
    columns : the column order of this index, a permutation of ``range(arity)``.
    """

    def __init__(self, arity: int, columns: tuple[int, ...]):
        if sorted(columns) != list(range(arity)):
            raise ArityMismatchError(f"index columns {columns}", arity, len(columns),
                                     f"{columns} is not a permutation of {arity} columns")
        self.arity, self.columns = arity, tuple(columns)
        self._cols = np.array(self.columns, dtype=np.int64)
        self._natural = self.columns == tuple(range(arity))
        self.runs: list[Trie] = []
        self.staged: Trie | None = None
        self.tail: Trie | None = None  # the last run plus the staged change, when commit will merge them
        self._views: dict[str, TrieView] = {}  # until the runs or the staged change
        self._tables: dict[str, tuple] = {}  # the same for view_table
        self.n_merged_rows = 0  # rows rewritten by merges since creation (for amortisation checks)
        self._pending = None  # (future, older run, newer run): a merge on the background thread
        self._merge_now = False  # the last background merge failed: redo it here, raising its error
        self._rescan = False  # some pair may break the policy before the last one (see _merge_loop)

    def __repr__(self) -> str:
        return f"IncrementalIndex(columns={self.columns}, runs={[len(r) for r in self.runs]})"

    def _trie(self, z: ZSet) -> Trie:
        """``z`` (natural column order, consolidated) as a trie in this index's order."""
        if self._natural:
            return Trie.from_zset(z)
        return Trie.from_rows(z.keys, z.weights, columns=self._cols)  # unique rows, re-sorted

    def load(self, z: ZSet) -> None:
        """Replace all committed state by ``z`` (natural column order): one base run."""
        self.runs = [self._trie(z)] if len(z) else []
        self.staged = self.tail = None
        self._views, self._tables = {}, {}
        self._pending, self._merge_now, self._rescan = None, False, False  # a merge under way is of runs now gone

    def stage(self, delta: ZSet) -> None:
        """Stage this tick's change (natural column order); nothing is committed yet.

        When the commit will merge the change into the last run (see ``commit``), the
        merge happens now: ``curr`` then reads one part fewer (each part costs every
        lookup of the join a search), and the commit only swaps the run in.
        """
        self._keep_prev()  # the runs do not change
        if not len(delta):
            return
        if self.merges_last(len(delta)):
            self.staged, self.tail = self.runs[-1].plus_rows(delta.keys, delta.weights, presorted=self._natural,
                                                             columns=None if self._natural else self._cols)
        else:
            self.staged = self._trie(delta)

    def _stage_merged(self, staged: Trie, tail: Trie) -> None:
        """Stage ``staged``, whose merge into the last run ``tail`` already is (what
        ``stage`` does when the commit will merge; ``Relation.stage`` builds both for
        every index at once)."""
        self._keep_prev()
        self.staged, self.tail = staged, tail

    def rollback(self) -> None:
        """Forget the staged change."""
        self._keep_prev()

    def _keep_prev(self) -> None:
        """Drop the staged change and every cached view but ``prev``'s."""
        self.staged = self.tail = None
        self._cache_as_prev("prev")

    def _cache_as_prev(self, kind: str) -> None:
        """Keep only ``kind``'s cached view and table, as ``prev``'s (the runs now are its parts)."""
        v, t = self._views.get(kind), self._tables.get(kind)
        self._views = {"prev": v} if v is not None else {}
        self._tables = {"prev": t} if t is not None else {}

    @staticmethod
    def _merges(older: int, newer: int) -> bool:
        """Whether the geometric policy merges a run of ``newer`` rows into the run of
        ``older`` rows before it."""
        return older <= MERGE_RATIO * newer or older < MIN_RUN

    def merges_last(self, rows: int) -> bool:
        """Whether staging a change of ``rows`` rows merges it into the last run (not
        while that run is in a background merge)."""
        runs = self.runs
        return bool(runs) and self._merges(runs[-1].n_rows, rows) and not (
            self._pending is not None and self._pending[2] is runs[-1])

    def settle(self) -> None:
        """Wait for background merges until the runs meet the geometric policy again
        (for tests and measurements; ticks never wait). With a change staged, only waits:
        its commit takes the result in."""
        while self._pending is not None:
            self._pending[0].exception()  # waits; an error is taken up by _adopt
            if self.staged is not None:
                return
            if self._adopt() | self._merge_loop():
                self._views, self._tables = {}, {}

    def commit(self) -> None:
        """Append the staged change as a run and merge runs geometrically.

        The committed runs are the parts ``curr`` had, so ``curr``'s view and table, if
        made, become ``prev``'s (unless a merge follows)."""
        staged = self.staged
        if staged is None:
            return
        runs, tail = self.runs, self.tail
        if tail is not None:  # merged when staged
            self.n_merged_rows += runs[-1].n_rows + staged.n_rows
            runs[-1:] = [tail] if tail.n_rows else []
        else:
            runs.append(staged)
        self.staged = self.tail = None
        self._cache_as_prev("curr")
        if self._adopt() | self._merge_loop(staged.n_rows):
            self._views, self._tables = {}, {}

    def commit_merged(self, tail: Trie, rows: int, table: np.ndarray) -> bool:
        """Commit a change of ``rows`` rows already merged into the last run as ``tail``
        (not empty), whose ``prev`` table will be ``table``: ``stage`` then ``commit``
        of a change that merges into the last run, when the caller merged it itself
        (``Relation.commit_fused``). Returns whether runs merged after (``table`` is
        then not kept)."""
        runs = self.runs
        self.n_merged_rows += runs[-1].n_rows + rows
        runs[-1] = tail
        self.staged = self.tail = None
        self._views, self._tables = {}, {"prev": (table, len(runs))}
        if self._adopt() | self._merge_loop(rows):
            self._views, self._tables = {}, {}
            return True
        return False

    def _merge_loop(self, change: int = 0) -> bool:
        """Merge neighbouring runs while the geometric policy asks for it, from the last
        pair leftwards. A merge of at least ``BACKGROUND_ROWS`` rows, and
        ``BACKGROUND_RATIO`` times the ``change`` just committed, goes to the background
        thread when none is under way (a later commit takes its result in): it would
        make this tick many times slower than its neighbours. With one under way, other
        merges run here, and a pair with a run in it waits for a later commit. Returns
        whether the runs changed."""
        runs = self.runs
        if not self._rescan and (len(runs) < 2 or not self._merges(runs[-2].n_rows, runs[-1].n_rows)):
            return False  # the usual commit: only the last pair can be new
        busy = self._pending[1:] if self._pending is not None else ()
        changed = held = False
        j = len(runs) - 1
        while j >= 1:
            a, b = runs[j - 1], runs[j]
            if not self._merges(a.n_rows, b.n_rows):
                j -= 1
                continue
            if any(r is a or r is b for r in busy):
                held = True  # one of them is in the merge under way
                j -= 1
                continue
            rows = a.n_rows + b.n_rows
            if rows >= BACKGROUND_ROWS and rows >= BACKGROUND_RATIO * change and not self._merge_now and not busy:
                self._pending = (_merger().submit(a.plus, b), a, b)
                busy = (a, b)
                held = True
                j -= 1
                continue
            self._merge_now = False
            merged = a.plus(b)
            self.n_merged_rows += a.n_rows + b.n_rows
            runs[j - 1:j + 1] = [merged] if merged.n_rows else []
            changed = True
            j = min(j - 1, len(runs) - 1)  # the merged run against its left neighbour
        self._rescan = held
        return changed

    def _adopt(self) -> bool:
        """Take in the run of a finished background merge (replacing the two it merged,
        still side by side in ``runs``). Returns whether the runs changed."""
        p = self._pending
        if p is None or not p[0].done():
            return False
        self._pending = None
        future, a, b = p
        if future.exception() is not None:  # e.g. a weight overflow: _merge_loop redoes it and raises
            self._merge_now = self._rescan = True
            return False
        i = next(j for j, r in enumerate(self.runs) if r is a)
        merged = future.result()
        self.runs[i:i + 2] = [merged] if merged.n_rows else []
        self.n_merged_rows += a.n_rows + b.n_rows
        self._rescan = True  # the merged run against its neighbours
        return True

    def view(self, kind: str) -> TrieView:
        """``prev``, ``delta`` or ``curr`` as a ``PrefixExtender`` (the same object until
        the next stage, commit or rollback: a tick asks for each several times)."""
        v = self._views.get(kind)
        if v is None:
            v = self._views[kind] = TrieView(self._parts(kind), self.arity)
        return v

    def _parts(self, kind: str) -> list[Trie]:
        """The tries view ``kind`` sums, none of them empty (a new list)."""
        if kind == "prev":
            return list(self.runs)
        staged = [self.staged] if self.staged is not None else []
        if kind == "delta":
            return staged
        if kind == "curr":
            if self.tail is not None:
                return self.runs[:-1] + ([self.tail] if self.tail.n_rows else [])
            return self.runs + staged
        raise InputError(f"unknown view {kind!r}; expected one of {VIEWS}")

    def view_table(self, kind: str) -> tuple[np.ndarray, int]:
        """``(table, parts)``: what ``view(kind).parts_table()`` holds and the view's
        number of parts, without making the view (cached like the views). The fused delta
        rule reads only this; the tries it points at live as long as the index does not
        stage, commit or roll back."""
        t = self._tables.get(kind)
        if t is not None:
            return t
        parts = self._parts(kind)
        if len(parts) == 1:
            t = (parts[0].table(), 1)
        elif parts:
            t = (np.concatenate([p.table() for p in parts]), len(parts))
        else:
            t = (np.zeros((0, 6), dtype=np.int64), 0)
        self._tables[kind] = t
        return t

    def nbytes(self) -> int:
        return sum(r.nbytes() for r in self.runs)


class Relation:
    """A named relation of fixed arity with indexes in the column orders queries need.

    Implements ``wcoj.extenders.IncrementalSource``: ``view(kind, columns)``.
    """

    def __init__(self, name: str, arity: int):
        if arity < 1:
            raise ArityMismatchError(f"relation {name}", 1, arity, "a relation needs at least one column")
        self.name, self.arity = name, arity
        natural = tuple(range(arity))
        self.indexes: dict[tuple[int, ...], IncrementalIndex] = {natural: IncrementalIndex(arity, natural)}
        self.delta: ZSet = ZSet.empty(arity)
        self._together = None  # (indexes, their columns, whether each sorts) for _stage_together
        self._fused: FusedTick | None = None  # for fused_tick

    def __repr__(self) -> str:
        return f"Relation({self.name!r}, arity={self.arity}, rows={len(self.contents())}, indexes={list(self.indexes)})"

    @property
    def natural(self) -> IncrementalIndex:
        return self.indexes[tuple(range(self.arity))]

    def contents(self) -> ZSet:
        """The committed state (``prev``), natural column order."""
        return self.natural.view("prev").to_zset()

    def ensure_index(self, columns: Iterable[int]) -> IncrementalIndex:
        """The index in ``columns`` order, built from the committed state if new."""
        columns = tuple(columns)
        if columns not in self.indexes:
            idx = IncrementalIndex(self.arity, columns)
            idx.load(self.contents())
            if len(self.delta):
                idx.stage(self.delta)
            self.indexes[columns] = idx
            self._together = self._fused = None
        return self.indexes[columns]

    def load(self, z: ZSet) -> None:
        """Bulk-load ``z`` as the whole committed state (no tick, no views notified)."""
        self._check(z)
        for idx in self.indexes.values():
            idx.load(z)
        self.delta = ZSet.empty(self.arity)
        self._forget_fused()

    def _check(self, z: ZSet) -> None:
        if not isinstance(z, ZSet):
            raise InputError(f"relation {self.name}: expected a ZSet, got {type(z).__name__}")
        if z.arity != self.arity:
            raise ArityMismatchError(f"relation {self.name}", self.arity, z.arity,
                                     f"relation {self.name} has {self.arity} columns, the change has {z.arity}")

    def stage(self, delta: ZSet) -> None:
        """Stage a tick's change on every index: a change of at least
        ``PARALLEL_STAGE_ROWS`` rows on all of them at once, on several threads (their
        kernels release the GIL). If an index fails (a weight overflow), none keeps the
        change."""
        self._check(delta)
        try:
            if not self._stage_together(delta):
                idxs = list(self.indexes.values())
                if len(delta) >= PARALLEL_STAGE_ROWS and len(idxs) > 1:
                    run_shares(lambda i: idxs[i].stage(delta), len(idxs), len(idxs))
                else:
                    for idx in idxs:
                        idx.stage(delta)
        except BaseException:
            self.rollback()
            raise
        self.delta = delta

    def _stage_together(self, delta: ZSet) -> bool:
        """Stage a small change on every index in one kernel call (``stage_runs_plus``)
        when each index's commit will merge it into its last run, as most ticks' do;
        return False, staging nothing, otherwise. Cuts a tick's Python steps per index
        to two trie wrappers: at 10 changes a tick they cost more than the kernels."""
        n = len(delta)
        if not n or n > TOGETHER_ROWS or len(self.indexes) < 2:
            return False
        idxs, cols, sort = self._together_arrays()
        lasts = []
        for idx in idxs:
            if not idx.runs:
                return False
            m = idx.runs[-1].n_rows
            if m + n > PIN_ROWS or not idx.merges_last(n):
                return False
            lasts.append(m)
        r = self.arity
        spans = _spans(n, lasts, r)
        buf = np.empty(spans[-1][2], dtype=np.int64)
        tables = np.empty((len(idxs), 2, r, 6), dtype=np.int64)
        bad_row = np.empty(r, dtype=np.int64)
        last = np.concatenate([idx.runs[-1].table() for idx in idxs])
        bad = stage_runs_plus(delta.keys, delta.weights, cols, sort, last,
                              np.array([m + n for m in lasts], dtype=np.int64), buf, tables, bad_row)
        if bad >= 0:  # raises; nothing is staged yet
            a, b, _ = spans[bad]
            idxs[bad].runs[-1]._overflow(Trie.from_flat(buf[a:b], tables[bad, 0], n, r), bad_row)
        for idx, t, tail in self._staged_tries(idxs, lasts, n, buf, tables, tables[:, 1]):
            idx._stage_merged(t, tail)
        return True

    def _staged_tries(self, idxs, lasts, n, buf, tables, tail_tables):
        """Per index ``(index, the change's trie or None, its merge with the last run)``
        from ``stage_runs_plus``'s buffer ``buf`` (``n`` changed rows; ``lasts``: the last
        runs' rows): the change's trie has its table in ``tables[i, 0]`` (``tables`` None:
        not made), the merge in ``tail_tables[i]``."""
        r = self.arity
        for i, (a, b, e) in enumerate(_spans(n, lasts, r)):
            t = Trie.from_flat(buf[a:b], tables[i, 0], n, r) if tables is not None else None
            yield idxs[i], t, Trie.from_flat(buf[b:e], tail_tables[i], lasts[i] + n, r)

    def _together_arrays(self):
        """``(indexes, their columns, whether each sorts)``, cached until an index is added."""
        if self._together is None:
            idxs = list(self.indexes.values())
            self._together = (idxs, np.stack([i._cols for i in idxs]), np.array([not i._natural for i in idxs]))
        return self._together

    def fused_tick(self) -> FusedTick | None:
        """What ``kernels.tick.edge_tick`` needs to stage a tick on every index at once,
        or ``None`` unless each index will merge any small change into its last run
        (which is then under ``MIN_RUN`` rows and in no background merge). Only the
        stacked ``prev`` tables and the last runs' sizes change from tick to tick; the
        rest is kept while the indexes keep their number of runs."""
        if self.arity != 2:
            return None
        idxs, cols, sort = self._together_arrays()
        if not idxs[0]._natural:  # FusedTick.first reads the natural index's parts
            return None
        shape = []
        for idx in idxs:
            if not idx.merges_last(1) or idx.runs[-1].n_rows >= MIN_RUN:
                return None
            shape.append(len(idx.runs))
        f = self._fused
        if f is None or f.shape != shape or f.idxs is not idxs:
            f = self._fused = FusedTick(idxs, cols, sort, shape)
        if f.runs is not None and all(idx.runs == runs for idx, runs in zip(idxs, f.runs)):
            f.P = f.next_P  # the runs are those the last fused commit left (tries compare by identity)
        else:
            tables = [idx.view_table("prev")[0] for idx in idxs]
            f.P = np.concatenate(tables) if len(tables) > 1 else np.ascontiguousarray(tables[0])
        f.runs = None
        f.last = [idx.runs[-1].n_rows for idx in idxs]
        return f

    def _curr_tables(self, f: FusedTick, NP) -> tuple[list, list]:
        """Per index, its rows of ``NP`` (see ``stage_fused``): its ``curr`` tables, and
        their last run's rows (the merge's table)."""
        curr = [NP[lo:last + self.arity] for lo, last in zip(f.offsets, f.last_rows_l)]
        return curr, [c[-self.arity:] for c in curr]

    def stage_fused(self, f: FusedTick, keys, weights, buf, tables, NP) -> None:
        """Stage what ``edge_tick`` wrote for ``f`` (``fused_tick()`` of this tick): the
        change ``keys``/``weights`` (natural order, consolidated), and per index the
        change's trie and its merge with the last run in ``buf``/``tables``; ``NP`` is
        ``f.P`` with each last run's table replaced by its merge's (``curr``'s tables;
        a bit set the merge's trie gets is written there)."""
        curr, tails = self._curr_tables(f, NP)
        for i, (idx, t, tail) in enumerate(self._staged_tries(f.idxs, f.last, len(keys), buf, tables, tails)):
            idx._stage_merged(t, tail)
            idx._tables["delta"] = (t.table(), 1)
            idx._tables["curr"] = (curr[i], f.shape[i])
        self.delta = ZSet(keys, weights)

    def commit_fused(self, f: FusedTick, n: int, buf, NP) -> None:
        """Commit a change of ``n`` rows that ``edge_tick`` merged into every index's last
        run (in ``buf``; ``NP`` as for ``stage_fused``, none of its merges empty): what
        ``stage_fused`` then ``commit`` do, without the change's own tries, which nothing
        reads once the tick's join has run. The next ``fused_tick`` starts from ``NP``
        when no run merged meanwhile."""
        curr, tails = self._curr_tables(f, NP)
        merged = False
        for i, (idx, _, tail) in enumerate(self._staged_tries(f.idxs, f.last, n, buf, None, tails)):
            merged |= idx.commit_merged(tail, n, curr[i])
        f.runs, f.next_P = (None, None) if merged else ([list(idx.runs) for idx in f.idxs], NP)

    def commit(self) -> None:
        for idx in self.indexes.values():
            idx.commit()
        self.delta = ZSet.empty(self.arity)
        self._forget_fused()

    def _forget_fused(self) -> None:
        """Drop the runs the last fused commit left (``FusedTick.runs``): the runs
        changed another way, and the list would keep replaced runs alive."""
        if self._fused is not None:
            self._fused.runs = self._fused.next_P = None

    def rollback(self) -> None:
        for idx in self.indexes.values():
            idx.rollback()
        self.delta = ZSet.empty(self.arity)

    def settle(self) -> None:
        """``IncrementalIndex.settle`` on every index: wait for background merges."""
        for idx in self.indexes.values():
            idx.settle()
        self._forget_fused()

    # IncrementalSource
    def view(self, kind: str, columns: tuple[int, ...]) -> TrieView:
        return self.ensure_index(columns).view(kind)

    def view_table(self, kind: str, columns: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """``view(kind, columns)``'s stacked part tables and number of parts
        (``IncrementalIndex.view_table``): the fused delta rule's fast path."""
        idx = self.indexes.get(columns)
        return (idx if idx is not None else self.ensure_index(columns)).view_table(kind)

    def delta_is_empty(self) -> bool:
        return len(self.delta) == 0

    def nbytes(self) -> int:
        """Bytes held by all indexes."""
        return sum(i.nbytes() for i in self.indexes.values())


class FusedTick:
    """A binary relation's indexes laid out for ``kernels.tick.edge_tick``, for one shape
    (number of runs per index): their stacked ``prev`` tables ``P`` (set per tick),
    index ``i``'s first row in ``P`` (``offsets[i]``), its last run's (``last_rows[i]``)
    and rows (``last[i]``, per tick), the level-0 rows of the natural index's parts
    (``first``), and ``gather(kind, columns)``: where a view's part tables come from
    (``edge_tick``'s ``G``)."""

    __slots__ = ("idxs", "cols", "sort", "shape", "offsets", "last_rows", "first", "P", "_at",
                 "runs", "next_P", "last", "last_rows_l")

    def __init__(self, idxs: list[IncrementalIndex], cols: np.ndarray, sort: np.ndarray, shape: list[int]):
        r = 2
        self.idxs, self.cols, self.sort, self.shape = idxs, cols, sort, shape
        offsets = np.concatenate([[0], np.cumsum(shape)[:-1]]).astype(np.int64) * r
        self.last_rows = (offsets + (np.array(shape, dtype=np.int64) - 1) * r).astype(np.int64)  # for the kernel
        self.first = np.arange(shape[0], dtype=np.int64) * r  # idxs[0], the natural index, comes first in P
        self._at = {tuple(int(c) for c in idx.columns): i for i, idx in enumerate(idxs)}
        self.offsets, self.last_rows_l = offsets.tolist(), self.last_rows.tolist()
        self.P = self.last = None
        self.runs = self.next_P = None  # the runs Relation.commit_fused left, and their stacked tables

    def parts(self, kind: str, columns: tuple[int, ...]) -> int:
        """Parts of view ``kind`` of the index in ``columns`` order after staging (``curr``
        keeps the number of runs: the change merges into the last); 0 for an index it
        does not lay out."""
        i = self._at.get(tuple(columns))
        return 0 if i is None else 1 if kind == "delta" else self.shape[i]

    def gather(self, kind: str, columns: tuple[int, ...]) -> np.ndarray:
        """``edge_tick``'s ``G`` entries for view ``kind`` of the index in ``columns``
        order: rows of ``P`` (>= 0), or ``-1 - row`` of the staged tables."""
        i, r = self._at[tuple(columns)], 2
        lo, last = self.offsets[i], self.last_rows_l[i]
        staged = lambda j: -1 - (i * 2 * r + j * r + np.arange(r))  # noqa: E731  (j 0: the change, 1: its merge)
        if kind == "prev":
            return np.arange(lo, last + r)
        if kind == "delta":
            return staged(0)
        if kind == "curr":
            return np.concatenate([np.arange(lo, last), staged(1)])
        raise InputError(f"unknown view {kind!r}; expected one of {VIEWS}")
