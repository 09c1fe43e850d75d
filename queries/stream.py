"""Streams of ticks for a graph: many ``apply`` calls' worth of changes in few kernel calls.

``Graph.stream(changes)`` takes rows ``(tick, op, src, dst)`` (op +1 insert, -1 delete;
ticks non-decreasing), a sequence of ``(inserts, deletes)`` pairs, or an iterator of row
chunks (``queries.graphio``'s change-log reader yields those), and yields one
``StreamResult`` per chunk: each view's changed rows with a tick and a weight column, and
every view's count after every tick, as NumPy columns, with no Python object per tick.
``Graph.apply_stream`` collects them into one result.

Every tick has exactly the semantics of one ``Graph.apply`` call: set semantics, its
deletes after its inserts, all or nothing. A bad row (an op not +1/-1, a tick going
backwards, an id out of range) raises ``StreamError`` naming the row, after every tick
before it was applied; the error's ``done`` holds their results, and nothing of the
failing tick is applied.

Relies on ``queries.graph`` (its change-by-change plan, ``indexes.transaction.ChangePlan``).

>>> from queries.graph import Graph
>>> g = Graph(); _ = g.view("triangle")
>>> rows = np.array([[0, 1, 1, 2], [0, 1, 2, 3], [1, 1, 1, 3], [2, -1, 1, 2]])
>>> r = g.apply_stream(rows)
>>> r.ticks.tolist(), r.counts["triangle"].tolist()
([0, 1, 2], [0, 1, 0])
>>> {k: v.tolist() for k, v in r.changes["triangle"].items()}
{'tick': [1, 2], 'weight': [1, -1], 'a': [1, 1], 'b': [2, 2], 'c': [3, 3]}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from wcoj import config
from wcoj.errors import InputError, WeightOverflowError

__all__ = ["StreamResult", "StreamError", "as_rows", "last_line_wins"]

I64 = npt.NDArray[np.int64]
CHUNK_ROWS = 1 << 20  # rows of a stream given as one array, cut into chunks of about this many


class StreamError(InputError):
    """A bad row in a stream; ``done`` is the ``StreamResult`` of the ticks before it
    (applied), ``row`` the row's position in the stream (for a stream of ``(inserts,
    deletes)`` pairs: ``(tick, "inserts" or "deletes", index)``)."""

    def __init__(self, message: str, row: int, done: StreamResult):
        super().__init__(message)
        self.row, self.done = row, done


@dataclass
class StreamResult:
    """What a run of ticks changed, columnar.

    ``ticks``: the tick ids in order. ``counts[view]``: the view's count after each tick
    (aligned with ``ticks``); ``counts["edges"]`` the number of edges, ``counts["edges
    changed"]`` how many the tick changed (undirected: pairs). ``changes[view]``:
    columns ``tick``, ``weight`` and the view's variables, one entry per changed row.
    ``tick_seconds``: each tick's time, from timestamps taken inside the kernel.
    """

    ticks: I64
    counts: dict[str, I64]
    changes: dict[str, dict[str, I64]]
    seconds: float = 0.0
    tick_seconds: I64 = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.ticks)

    def frame(self, view: str, kind: str = "pandas"):
        """``changes[view]`` as a pandas ``DataFrame`` (``kind="pandas"``) or a pyarrow
        ``Table`` (``kind="arrow"``); needs that library installed."""
        cols = self.changes[view]
        if kind == "pandas":
            import pandas as pd
            return pd.DataFrame(cols)
        if kind == "arrow":
            import pyarrow as pa
            return pa.table(cols)
        raise InputError(f"frame kind must be 'pandas' or 'arrow', got {kind!r}")

    @staticmethod
    def concat(parts: list[StreamResult]) -> StreamResult:
        """One result of consecutive ``parts``."""
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        return StreamResult(
            np.concatenate([p.ticks for p in parts]),
            {k: np.concatenate([p.counts[k] for p in parts]) for k in first.counts},
            {v: {c: np.concatenate([p.changes[v][c] for p in parts]) for c in cols}
             for v, cols in first.changes.items()},
            sum(p.seconds for p in parts),
            np.concatenate([p.tick_seconds for p in parts]))


def as_rows(changes, sizes: list | None = None) -> Iterator[tuple[int, I64]]:
    """``changes`` as chunks ``(position of the chunk's first row, rows (tick, op, src,
    dst))``; a tick may continue into the next chunk. For ``(inserts, deletes)`` pairs,
    ``sizes`` (when given) gets each tick's ``(len(inserts), len(deletes))``, so that a
    row's position can be named as the user wrote it (``pair_position``)."""
    if isinstance(changes, np.ndarray):
        rows = _rows_array(changes, 0)
        for lo in range(0, max(len(rows), 1), CHUNK_ROWS):
            yield lo, rows[lo:lo + CHUNK_ROWS]
        return
    if isinstance(changes, (list, tuple)) and all(isinstance(c, (list, tuple)) and len(c) == 2 for c in changes):
        parts = []
        for t, (ins, dels) in enumerate(changes):
            parts.append(np.array([[t, 0, 0, 0]], dtype=np.int64))  # marks the tick, also an empty one
            n = [0, 0]
            for op, e in ((1, ins), (-1, dels)):
                e = np.zeros((0, 2), dtype=np.int64) if e is None else \
                    array_of(e, f"tick {t}: {'inserts' if op == 1 else 'deletes'}")
                if e.size == 0:
                    continue
                n[op == -1] = len(e)
                if e.ndim != 2 or e.shape[1] != 2 or e.dtype.kind not in "iu":
                    raise InputError(f"tick {t}: {'inserts' if op == 1 else 'deletes'} must be an (m, 2) int "
                                     f"array, got {e.dtype} {e.shape}")
                parts.append(np.column_stack([np.full(len(e), t), np.full(len(e), op), e]).astype(np.int64))
            if sizes is not None:
                sizes.append(n)
        yield 0, np.concatenate(parts) if parts else np.zeros((0, 4), dtype=np.int64)
        return
    if isinstance(changes, Iterable):
        pos = 0
        for chunk in changes:
            rows = _rows_array(array_of(chunk, f"the stream's chunk at row {pos}"), pos)
            yield pos, rows
            pos += len(rows)
        return
    raise InputError(f"a stream is an int array of rows (tick, op, src, dst), a list of (inserts, deletes) "
                     f"pairs or an iterator of row arrays, got {type(changes).__name__}")


def pair_position(sizes: list, row: int) -> tuple[int, str, int]:
    """Row ``row`` of the rows ``as_rows`` made of ``(inserts, deletes)`` pairs (one
    marker row per tick, then its inserts, then its deletes) as ``(tick, "inserts" or
    "deletes", index)``.

    >>> pair_position([[2, 1], [0, 3]], 6)
    (1, 'deletes', 1)
    """
    starts = np.cumsum([0] + [1 + i + d for i, d in sizes])
    t = int(np.searchsorted(starts, row, side="right")) - 1
    off = row - int(starts[t]) - 1
    return (t, "inserts", off) if off < sizes[t][0] else (t, "deletes", off - sizes[t][0])


def array_of(x, what: str) -> np.ndarray:
    """``np.asarray(x)``, with an ``InputError`` naming ``what`` when it is not an array
    of one shape (a ragged list: numpy's own error is a plain ``ValueError``)."""
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as e:
        raise InputError(f"{what} must be an array of one shape: {e}") from None


def _rows_array(a: np.ndarray, pos: int) -> I64:
    if a.ndim != 2 or a.shape[1] != 4:
        raise InputError(f"stream rows at {pos}: expected an (n, 4) array of (tick, op, src, dst), got shape {a.shape}")
    if a.size and a.dtype.kind not in "iu":
        raise InputError(f"stream rows at {pos}: expected integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int64)


def first_bad(rows: I64, last_tick: int | None, empty_ok: bool) -> tuple[int, str]:
    """The first row (position in ``rows``) whose op is not +1/-1 or whose tick goes
    backwards, and why; ``(len(rows), "")`` when none."""
    op = rows[:, 1]
    bad_op = ~((op == 1) | (op == -1) | ((op == 0) & empty_ok))
    back = np.zeros(len(rows), dtype=bool)
    if len(rows):
        back[1:] = rows[1:, 0] < rows[:-1, 0]
        if last_tick is not None:
            back[0] = rows[0, 0] < last_tick
    hits = np.flatnonzero(bad_op | back)
    if not len(hits):
        return len(rows), ""
    r = int(hits[0])
    if bad_op[r]:
        return r, f"op must be +1 (insert) or -1 (delete), found {int(op[r])}"
    before = int(rows[r - 1, 0]) if r else last_tick
    return r, f"tick {int(rows[r, 0])} comes after tick {before}: ticks must not go backwards"


def run_chunk(graph, rows: I64, pos: int, empty_ok: bool, last_tick: int | None, sizes: list | None = None):
    """Apply the whole ticks of ``rows`` (the stream's rows ``pos ..``) to ``graph``;
    returns ``(result, error)``, the error a ``StreamError`` to raise after the result
    is delivered (or ``None``). ``sizes``: the stream came as ``(inserts, deletes)``
    pairs (``as_rows``), so the error names the bad row as ``tick t, inserts[i]``."""
    import time
    t0 = time.perf_counter()
    cut, why = first_bad(rows, last_tick, empty_ok)
    good = rows[:cut]
    if cut < len(rows) and len(good):  # the failing tick is not applied at all: the bad
        # row's own (a bad op), or the tick it breaks into (a tick going backwards)
        failing = rows[cut - 1, 0] if why.startswith("tick") else rows[cut, 0]
        good = good[good[:, 0] < failing]
    tick_ids, starts = np.unique(good[:, 0], return_index=True) if len(good) else (np.zeros(0, np.int64), None)
    n_ticks = len(tick_ids)
    rank = np.repeat(np.arange(n_ticks), np.diff(np.append(starts, len(good)))) if n_ticks else np.zeros(0, np.int64)
    real = good[:, 1] != 0
    key = 2 * rank + (good[:, 1] == -1)
    order = np.argsort(key[real] if not real.all() else key, kind="stable")
    idx = np.flatnonzero(real)[order] if not real.all() else order
    edges = np.ascontiguousarray(good[idx, 2:4])
    k_ins = np.bincount(rank[real][good[real, 1] == 1], minlength=n_ticks) if n_ticks else np.zeros(0, np.int64)
    k_all = np.bincount(rank[real], minlength=n_ticks) if n_ticks else np.zeros(0, np.int64)
    ends = np.cumsum(k_all)
    bounds = np.column_stack([ends - k_all, ends - k_all + k_ins, ends]).astype(np.int64)
    views = list(graph.views.items())
    tcounts = np.zeros((n_ticks, len(views) + 2), dtype=np.int64)  # counts, edges, edges changed
    seconds = np.zeros(n_ticks)
    parts, done, error = [], 0, None
    while done < n_ticks:
        big = np.flatnonzero(k_all[done:] > config.CHANGE_ROWS)
        stop = done + int(big[0]) if len(big) else n_ticks
        if graph._log is not None:  # a durable graph logs every tick: through apply
            stop = done
        if stop > done:
            t, bad, out, err = graph._stream_ticks(edges, bounds[done:stop], tcounts[done:stop], seconds[done:stop])
            if len(out):
                out[:, 0] += done
                parts.append(out)
            if err is not None or bad >= 0:
                t += done
                if err is not None:  # a weight overflow: report the tick
                    error = (int(idx[bounds[t, 0]]) + pos if k_all[t] else pos, str(err))
                else:
                    flat = bad // 2
                    row = int(idx[bounds[t, 0] + flat]) + pos
                    error = (row, f"node ids must be in [0, 2**62), found {good[row - pos, 2:4].tolist()}")
                n_ticks = t
                break
            done = stop
        if done < n_ticks:  # a tick above CHANGE_ROWS (or logged): as apply takes it
            lo, mid, hi = bounds[done]
            try:
                tick = graph.apply(edges[lo:mid], edges[mid:hi])
            except (InputError, WeightOverflowError) as e:
                error, n_ticks = (int(idx[lo]) + pos, str(e)), done
                break
            tcounts[done, :-1], tcounts[done, -1] = graph._counts, len(tick.edge_delta)
            seconds[done] = tick.seconds
            width = max(len(view.columns) for _, view in views)
            for v, (name, _) in enumerate(views):
                z = tick.changes[name]
                if len(z):
                    part = np.zeros((len(z), 3 + width), dtype=np.int64)
                    part[:, 0], part[:, 1], part[:, 2] = done, v, z.weights
                    part[:, 3:3 + z.arity] = z.keys
                    parts.append(part)
            done += 1
    result = _result(graph, views, tick_ids[:n_ticks], tcounts[:n_ticks], parts, time.perf_counter() - t0)
    result.tick_seconds = seconds[:n_ticks]
    if error is None and cut < len(rows):
        error = (cut + pos, why)
    if error is not None:
        row, why = error
        where = f"stream row {row}"
        if sizes is not None:  # the user's own coordinates: (tick, "inserts"/"deletes", index)
            row = pair_position(sizes, row)
            where = f"stream tick {row[0]}, {row[1]}[{row[2]}]"
        error = StreamError(f"{where}: {why}; the ticks before it were applied, none of its tick",
                            row, result)
    return result, error


def _result(graph, views, tick_ids: I64, tcounts: I64, parts: list, seconds: float) -> StreamResult:
    """The result's columns from the changed rows ``(tick rank, view, weight, keys...)`` of
    ``parts`` (in tick order), in as few passes over them as numpy allows: a stream's
    changes can be far larger than its ticks."""
    width = max((len(v.columns) for _, v in views), default=1)
    rows = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros((0, 3 + width), dtype=np.int64)
    counts = {name: tcounts[:, v].copy() for v, (name, _) in enumerate(views)}
    counts["edges"] = tcounts[:, len(views)].copy()
    counts["edges changed"] = tcounts[:, len(views) + 1].copy()
    changes = {}
    for v, (name, view) in enumerate(views):
        mine = rows if len(views) == 1 else rows[rows[:, 1] == v]
        cols = np.ascontiguousarray(mine[:, :3 + len(view.columns)].T)  # one pass: a row per column
        changes[name] = {"tick": tick_ids[cols[0]], "weight": cols[2],
                         **{var: cols[3 + c] for c, var in enumerate(view.columns)}}
    return StreamResult(tick_ids, counts, changes, seconds)


def last_line_wins(chunks: Iterable[I64], directed: bool = False) -> Iterator[I64]:
    """``iter_change_rows``' chunks with ``read_changes``' rule applied: within a tick,
    only the last row about an edge stays (undirected: ``1 2`` and ``2 1`` are one edge),
    so each tick's rows mean the same to ``Graph.stream`` (inserts, then deletes) as the
    file's lines in order. Rows stay in file order; a tick's rows are held back until the
    next tick starts (or the input ends). An ``InputFileError`` of the input is raised
    after the last complete tick was yielded.

    >>> rows = np.array([[1, 1, 1, 2], [1, -1, 2, 1], [1, -1, 3, 4], [1, 1, 3, 4], [2, 1, 5, 6]])
    >>> [c.tolist() for c in last_line_wins(iter([rows[:2], rows[2:]]))]
    [[[1, -1, 2, 1], [1, 1, 3, 4]], [[2, 1, 5, 6]]]
    """
    carry = np.zeros((0, 4), dtype=np.int64)
    try:
        for chunk in chunks:
            rows = np.concatenate([carry, chunk]) if len(carry) else chunk
            if not len(rows):
                continue
            other = np.flatnonzero(rows[:, 0] != rows[-1, 0])
            start = int(other[-1]) + 1 if len(other) else 0
            carry = rows[start:]
            if start:
                yield _fold_ticks(rows[:start], directed)
    except InputError as e:  # a reader's InputFileError (.tick: the bad line's tick)
        tick = getattr(e, "tick", None)
        if len(carry) and tick is not None and tick > carry[0, 0]:
            yield _fold_ticks(carry, directed)  # the bad line starts a later tick: this one is whole
        raise
    if len(carry):
        yield _fold_ticks(carry, directed)


def _fold_ticks(rows: I64, directed: bool) -> I64:
    """Rows ``(tick, op, src, dst)`` with, per tick and edge, only the last one kept."""
    a, b = rows[:, 2], rows[:, 3]
    lo, hi = (a, b) if directed else (np.minimum(a, b), np.maximum(a, b))
    pos = np.arange(len(rows))
    order = np.lexsort((pos, hi, lo, rows[:, 0]))
    last = np.ones(len(order), dtype=bool)
    k = np.column_stack([rows[:, 0], lo, hi])[order]
    last[:-1] = np.any(k[1:] != k[:-1], axis=1)
    return rows[np.sort(order[last])]
