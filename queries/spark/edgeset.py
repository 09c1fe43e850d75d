"""Set semantics of a changing set of facts, kept on the executors: changes in, set deltas out.

Holds :class:`FactStore`: the current rows (edges, or datoms ``(attribute, e, v)``)
hash-partitioned and cached on the executors (:class:`queries.spark.cached.CachedState`),
and :meth:`FactStore.apply`, which turns ticks of raw changes (insert or delete, the last
change of a row in a tick wins) into the tick's set delta by an anti-join of the changes
against the cached rows plus the log of recent set deltas, inside the partition that
owns them. :class:`EdgeStore` is its two-column case: canonical ``(min, max)`` pairs or
directed arcs, partitioned by unordered pair; for directed graphs it also returns the
change of the undirected simple graph (a pair exists while either arc does; both arcs of
a pair live in one partition, so that is decided there too). Also
:func:`normalise_changes` (the driver's share: one tick's k rows, sorted, last change
wins). Relies on pyspark, numpy, ``wcoj.ZSet`` and :mod:`queries.spark.cells`
(``xxhash64``). Used by :class:`queries.spark.delta.GraphDelta`,
:class:`queries.spark.delta.DatomDelta` and tests.

The driver never holds the set: it sees each tick's changes and set deltas only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from queries.spark.cells import xxhash64

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["FactStore", "EdgeStore", "normalise_changes", "pair_partition", "row_partition"]

_EMPTY = np.zeros((0, 2), np.int64)


def pair_partition(keys: np.ndarray, n_parts: int) -> np.ndarray:
    """The partition of each edge: a hash of its unordered pair (both arcs together)."""
    keys = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
    lo, hi = keys.min(axis=1), keys.max(axis=1)
    with np.errstate(over="ignore"):
        mixed = xxhash64(lo) * np.int64(31) + hi
    return np.mod(xxhash64(mixed), n_parts)


def normalise_changes(keys: np.ndarray, weights: np.ndarray, directed: bool = True
                      ) -> tuple[np.ndarray, np.ndarray]:
    """One tick's changes -> ``(keys, insert?)``: sorted, one row per key (its last change
    in input order wins); for edges (two columns) self-loops dropped and undirected edges
    as ``(min, max)``.

    >>> k, ins = normalise_changes(np.array([[2, 1], [1, 2], [3, 3]]), np.array([1, -1, 1]),
    ...                            directed=False)
    >>> k.tolist(), ins.tolist()
    ([[1, 2]], [False])
    """
    weights = np.asarray(weights, dtype=np.int64).reshape(-1)
    keys = np.asarray(keys, dtype=np.int64).reshape(len(weights), -1)
    if keys.shape[1] == 2:  # edges: no self-loops, undirected ones canonical
        keep = keys[:, 0] != keys[:, 1]
        keys, weights = keys[keep], weights[keep]
        if not directed:
            keys = np.sort(keys, axis=1)
    if not len(keys):
        return keys, np.zeros(0, dtype=bool)
    order = np.lexsort((np.arange(len(keys)), *keys.T[::-1]))
    keys, weights = keys[order], weights[order]
    last = np.ones(len(keys), dtype=bool)
    last[:-1] = np.any(keys[1:] != keys[:-1], axis=1)
    return np.ascontiguousarray(keys[last]), weights[last] > 0


def _view(keys: np.ndarray) -> np.ndarray:
    """Rows as one structured value each (lexicographic order), for searchsorted."""
    k = np.ascontiguousarray(keys, dtype=np.int64)
    return k.view([(f"c{j}", np.int64) for j in range(k.shape[1])]).reshape(-1)


def row_partition(keys: np.ndarray, n_parts: int) -> np.ndarray:
    """The partition of each row: a hash of all its columns."""
    keys = np.asarray(keys, dtype=np.int64)
    h = np.zeros(len(keys), np.int64)
    with np.errstate(over="ignore"):
        for j in range(keys.shape[1]):
            h = xxhash64(h * np.int64(31) + keys[:, j])
    return np.mod(h, n_parts)


def _lookup(sorted_keys: np.ndarray, weights: np.ndarray | None, keys: np.ndarray
            ) -> np.ndarray:
    """Weight of each row of ``keys`` in lexsorted unique ``sorted_keys`` (0 if absent)."""
    out = np.zeros(len(keys), np.int64)
    if not len(sorted_keys) or not len(keys):
        return out
    a, b = _view(sorted_keys), _view(keys)
    pos = np.searchsorted(a, b)
    pos[pos == len(a)] = 0
    hit = a[pos] == b
    out[hit] = 1 if weights is None else weights[pos[hit]]
    return out


class _Members:
    """Membership in one partition: cached base (weight 1 each) plus an overlay."""

    def __init__(self, base: np.ndarray, chunks: Sequence[tuple]):
        from wcoj.zset import ZSet

        self.base = base
        self.width = base.shape[1]
        parts = [c for c in chunks if len(c[0])]
        if parts:
            z = ZSet.from_arrays(np.concatenate([k for k, _ in parts]),
                                 np.concatenate([w for _, w in parts]), arity=self.width)
            self.keys, self.weights = np.array(z.keys), np.array(z.weights)
        else:
            self.keys, self.weights = base[:0], np.zeros(0, np.int64)

    def has(self, keys: np.ndarray) -> np.ndarray:
        return (_lookup(self.base, None, keys) + _lookup(self.keys, self.weights, keys)) > 0

    def add(self, keys: np.ndarray, weights: np.ndarray) -> None:
        from wcoj.zset import ZSet

        if len(keys):
            z = ZSet.from_arrays(np.concatenate([self.keys, keys]),
                                 np.concatenate([self.weights, weights]), arity=self.width)
            self.keys, self.weights = np.array(z.keys), np.array(z.weights)


def _pairs_of(keys: np.ndarray) -> np.ndarray:
    pairs = np.sort(keys, axis=1)
    return np.unique(pairs, axis=0) if len(pairs) else _EMPTY


def _apply_partition(pairs: bool):
    def fn(part, base, logs, todo):
        mine = todo.get(part)
        if mine is None:
            return
        members = _Members(base, logs.get(part, []))
        out = []
        for pos, keys, insert in mine:
            have = members.has(keys)
            ch = insert != have
            k, w = keys[ch], np.where(insert[ch], 1, -1).astype(np.int64)
            if pairs and len(k):
                ps = _pairs_of(k)
                before = members.has(ps) | members.has(ps[:, ::-1])
                members.add(k, w)
                after = members.has(ps) | members.has(ps[:, ::-1])
                och = before != after
                o = (ps[och], np.where(after[och], 1, -1).astype(np.int64))
            else:
                members.add(k, w)
                o = None
            out.append((pos, k, w, o))
        yield out

    return fn


def _merge(part: int, base: np.ndarray, logs: dict) -> np.ndarray:
    from wcoj.zset import ZSet

    chunks = logs.get(part, [])
    if not chunks:
        return base
    z = ZSet.from_arrays(np.concatenate([base] + [k for k, _ in chunks]),
                         np.concatenate([np.ones(len(base), np.int64)]
                                        + [w for _, w in chunks]), arity=base.shape[1])
    keys, weights = np.array(z.keys), np.array(z.weights)
    assert np.all(weights == 1), "a set holds each row once"
    return keys


class FactStore:
    """A set of integer rows on the executors; ticks of changes become set deltas there.

    Parameters
    ----------
    rows : DataFrame
        Integer columns (all of them are the key); duplicates merged.
    n_parts : int, optional
        Partitions (default :func:`queries.spark.cached.task_slots`).
    compact_every : int
        Fold the log of set deltas into the cached base after this many ticks.
    partition : callable
        ``partition(keys, n_parts) -> part per row`` (default :func:`row_partition`).
    directed : bool
        Passed to :func:`normalise_changes` (two-column rows: edges).
    pairs : bool
        Two-column rows only: also return the delta of the unordered pairs (a pair exists
        while either of its rows does); needs a ``partition`` that keeps both together.
    """

    def __init__(self, rows: DataFrame, *, n_parts: int | None = None,
                 compact_every: int = 8, partition=row_partition, directed: bool = True,
                 pairs: bool = False):
        from queries.spark.cached import CachedState, shuffle_to_parts, task_slots

        sc = rows.sparkSession.sparkContext
        self.columns = list(rows.columns)
        self.width = len(self.columns)
        self.directed, self.pairs, self.partition = directed, pairs, partition
        self.n_parts = n_parts or task_slots(sc)
        width, n = self.width, self.n_parts

        def split(keys: np.ndarray, _w) -> dict[int, np.ndarray]:
            parts = partition(keys, n)
            return {p: keys[parts == p] for p in np.unique(parts).tolist()}

        def build(blobs: list) -> np.ndarray:
            keys = np.concatenate(blobs) if blobs else np.zeros((0, width), np.int64)
            return np.unique(keys, axis=0) if len(keys) else keys

        base = shuffle_to_parts([(rows.distinct(), self.columns, split)], n, build)
        self.state = CachedState(sc, base, self.n_parts, _merge, compact_every)
        self.n_rows = int(sum(self.state.base.map(len).collect()))

    def __len__(self) -> int:
        return self.n_rows

    def apply(self, ticks: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[tuple]:
        """Consecutive ticks of raw changes -> per tick ``(keys, weights, pair_delta)``.

        Parameters
        ----------
        ticks : sequence of (keys int64 (k, width), weights int64 (k,))
            Each tick's changes in input order: weight > 0 inserts, < 0 deletes.

        Returns
        -------
        list
            Per tick the set delta ``(keys, weights)`` (sorted), and with ``pairs`` the
            delta of the unordered pairs ``(keys, weights)`` (else None).
        """
        normal = [normalise_changes(k, w, self.directed) for k, w in ticks]
        payload: dict[int, list] = {}
        for pos, (keys, insert) in enumerate(normal):
            if not len(keys):
                continue
            parts = self.partition(keys, self.n_parts)
            for p in np.unique(parts).tolist():
                m = parts == p
                payload.setdefault(p, []).append((pos, keys[m], insert[m]))
        found = self.state.run(payload, payload, _apply_partition(self.pairs))
        per_tick: list[list] = [[] for _ in ticks]
        for out in found:
            for pos, k, w, o in out:
                per_tick[pos].append((k, w, o))
        results = []
        for parts in per_tick:
            k, w = _concat([(k, w) for k, w, _ in parts], self.width)
            o = _concat([o for _, _, o in parts if o is not None], 2) if self.pairs else None
            results.append((k, w, o))
            self.n_rows += int(w.sum())
            if len(k):
                pp = self.partition(k, self.n_parts)
                self.state.append({p: [(k[pp == p], w[pp == p])]
                                   for p in np.unique(pp).tolist()})
            else:
                self.state.append({})
        return results

    def rows(self) -> np.ndarray:
        """Every current row, collected to the driver (tests and small sets only)."""
        self.state.compact()
        parts = self.state.base.collect()
        keys = np.concatenate(parts) if parts else np.zeros((0, self.width), np.int64)
        return np.unique(keys, axis=0) if len(keys) else keys

    def close(self) -> None:
        self.state.close()


class EdgeStore(FactStore):
    """The current edge set on the executors (see :class:`FactStore`).

    Edges (columns ``src, dst``, integers) are hash-partitioned by unordered pair; self-
    loops are dropped and undirected edges kept as ``(min, max)``. A directed store also
    returns each tick's change of the undirected simple graph.

    >>> store = EdgeStore(graph_edges, directed=False)            # doctest: +SKIP
    >>> [(k.tolist(), w.tolist()) for k, w, _ in store.apply(
    ...     [(np.array([[2, 1], [5, 6]]), np.array([1, 1]))])]    # doctest: +SKIP
    [([[5, 6]], [1])]                                # (1, 2) was there already
    """

    def __init__(self, edges: DataFrame, *, directed: bool = False, n_parts: int | None = None,
                 compact_every: int = 8):
        from pyspark.sql import functions as F

        s, d = edges.columns[:2]
        e = edges.select(F.col(s).cast("bigint").alias("src"),
                         F.col(d).cast("bigint").alias("dst")).filter("src != dst")
        if not directed:
            e = e.select(F.least("src", "dst").alias("src"), F.greatest("src", "dst").alias("dst"))
        super().__init__(e, n_parts=n_parts, compact_every=compact_every,
                         partition=pair_partition, directed=directed, pairs=directed)

    @property
    def n_edges(self) -> int:
        return self.n_rows

    def edges(self) -> np.ndarray:
        """Every current edge, collected to the driver (tests and small graphs only)."""
        return self.rows()


def _concat(parts: Sequence[tuple], width: int) -> tuple[np.ndarray, np.ndarray]:
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros((0, width), np.int64), np.zeros(0, np.int64)
    k = np.concatenate([p[0] for p in parts])
    w = np.concatenate([p[1] for p in parts])
    order = np.lexsort(k.T[::-1])
    return k[order], w[order]
