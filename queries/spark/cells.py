"""HyperCube cells kept on the executors: numpy routing, skew residuals, cached cell state.

Holds :func:`xxhash64` (Spark's ``xxhash64`` of a BIGINT in numpy, so the driver and the
executors bucket values exactly as :func:`queries.spark.hypercube.bucket` does),
:class:`RoutePlan` (the grids: one HyperCube, or one per *residual* when heavy values are
given), :func:`heavy_hitters`, :func:`cell_rdd` (atom rows routed in numpy inside the
executors and shuffled once, one partition per group of cells) and :class:`CellStore`
(the routed base persisted as one state object per partition, a log of routed deltas on
the driver, and per-tick telescoping deltas that ship only the delta). Relies on
pyspark, numpy, ``wcoj.ZSet``, ``wcoj.generic_join.IncrementalGenericJoin``,
``indexes.Relation`` and :mod:`queries.spark.hypercube`. Used by
:mod:`queries.spark.delta`, :func:`queries.spark.hypercube.hypercube_count`, tests and
``benchmarks/bench_spark.py``.

Skew (Beame, Koutris, Suciu, "Skew in parallel query processing", PODS 2014): a value is
*heavy* for a variable when it alone would fill a cell. The answer splits by which
variables take heavy values; each such *residual* ``S`` gets its own grid in which the
variables of ``S`` have share 1 (their few heavy values are broadcast along the other
dimensions) and the light variables split the cells. A tuple goes to the residuals whose
``S`` agrees with which of its values are heavy, so a result is found in exactly one
residual and, inside it, in exactly one cell; and a hub's neighbourhood is spread over
the light variables' buckets instead of landing in one slice of the cube::

    triangle, hub h heavy:  S = {}   grid (a, b, c)   tuples with no heavy value
                            S = {a}  grid (b, c)      O(h, b), O(h, c) spread by b and c
                            S = {b}  ...              and so on for every subset

Cell state is log-structured: ``state = base (cached on the executors) + log (routed
deltas since the last compaction, on the driver)``. A tick broadcasts the log and its own
routed delta; each cell it reaches cuts its base down to the rows that can join the
delta (binary searches in per-column sorted orders, a semi-join walk over the atoms),
loads them with the log into ``Relation``\\ s, stages the delta and runs the telescoping
rule. Every ``compact_every`` ticks the log is folded into a new base in a background
thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from queries.spark.hypercube import FILTER_OPS, WEIGHT, JoinQuery, _CellSpec
from queries.spark.routing import (
    Residual,
    RoutePlan,
    bucket_of,
    heavy_from_degrees,
    heavy_hitters,
    heavy_threshold,
    xxhash64,
)
from wcoj.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "xxhash64",
    "bucket_of",
    "RoutePlan",
    "Residual",
    "heavy_hitters",
    "heavy_from_degrees",
    "heavy_threshold",
    "cell_rdd",
    "CellState",
    "CellStore",
    "count_cells",
    "atom_rows",
]

# ---------------------------------------------------------------------- cell state
def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(lo[k], hi[k])`` over k, vectorised."""
    n = hi - lo
    keep = n > 0
    lo, n = lo[keep], n[keep]
    if not n.size:
        return np.zeros(0, np.int64)
    ends = np.cumsum(n)
    return np.repeat(lo - (ends - n), n) + np.arange(ends[-1])


class CellState:
    """One cell's rows per atom: lexsorted keys, weights, and each column's sorted order.

    Stored small, since a tick reads it from the executors' cache: keys as int32 when the
    ids fit, weights ``None`` when all are 1 (a set), permutations as int32. Use
    :meth:`rows` for int64 keys and weights.
    """

    __slots__ = ("keys", "weights", "orders")

    def __init__(self, keys: list, weights: list, index: bool = True):
        self.keys = [_pack(k) for k in keys]
        self.weights = [None if w is None or np.all(w == 1) else w for w in weights]
        self.orders = [self._orders(k) for k in self.keys] if index else None

    @staticmethod
    def _orders(keys: np.ndarray) -> list:
        """Per column ``p >= 1``: (permutation sorting by column p, the sorted column)."""
        out = [(None, None)]
        idx = np.int32 if len(keys) < 2**31 else np.int64
        for p in range(1, keys.shape[1]):
            perm = np.argsort(keys[:, p], kind="stable").astype(idx)
            out.append((perm, keys[perm, p]))
        return out

    @classmethod
    def of(cls, arities: Sequence[int], chunks: Sequence[tuple], index: bool = True
           ) -> CellState:
        """Consolidated state from ``(atom, keys, weights)`` chunks (weights may be None)."""
        from wcoj.zset import ZSet

        keys, weights = [], []
        for j, k in enumerate(arities):
            parts = [(np.asarray(ks, dtype=np.int64).reshape(-1, k),
                      np.ones(len(ks), np.int64) if ws is None else np.asarray(ws, np.int64))
                     for a, ks, ws in chunks if a == j]
            if parts:
                z = ZSet.from_arrays(np.concatenate([p[0] for p in parts]),
                                     np.concatenate([p[1] for p in parts]), arity=k)
                keys.append(np.array(z.keys))
                weights.append(np.array(z.weights))
            else:
                keys.append(np.zeros((0, k), np.int64))
                weights.append(np.zeros(0, np.int64))
        return cls(keys, weights, index)

    def size(self, atom: int) -> int:
        return int(self.keys[atom].shape[0])

    def n_rows(self) -> int:
        return int(sum(k.shape[0] for k in self.keys))

    def rows(self, atom: int, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(keys int64, weights int64)`` of atom ``atom`` (rows ``idx``, default all)."""
        k, w = self.keys[atom], self.weights[atom]
        if idx is not None:
            k = k[idx]
            w = None if w is None else w[idx]
        return (k.astype(np.int64), np.ones(len(k), np.int64) if w is None
                else w.astype(np.int64))

    def chunks(self) -> list[tuple]:
        """The whole state as ``(atom, keys, weights)`` chunks."""
        return [(j, k, w) for j, (k, w) in enumerate(zip(self.keys, self.weights))]

    def rows_with(self, atom: int, pos: int, values: np.ndarray) -> np.ndarray:
        """Row numbers of atom ``atom`` whose column ``pos`` is one of sorted ``values``."""
        perm, col = self.orders[atom][pos]
        if perm is None:
            col = self.keys[atom][:, pos]
        lo = np.searchsorted(col, values, "left")
        hi = np.searchsorted(col, values, "right")
        idx = _ranges(lo, hi)
        return idx if perm is None else perm[idx].astype(np.int64)


def _pack(keys: np.ndarray) -> np.ndarray:
    """Keys on the wire: int32 when every id fits (halves shuffle and broadcast bytes)."""
    if keys.size and (keys.min() < -2**31 or keys.max() >= 2**31):
        return keys
    return keys.astype(np.int32)


def _chunks_by_cell(plan: RoutePlan, atom: int, keys: np.ndarray, weights: np.ndarray | None
                    ) -> dict[int, tuple]:
    """Route atom rows; ``{cell: (atom, keys, weights or None)}``."""
    cells, rows = plan.route(atom, keys)
    if not cells.size:
        return {}
    order = np.argsort(cells, kind="stable")
    cells, rows = cells[order], rows[order]
    bounds = np.flatnonzero(np.diff(cells)) + 1
    out = {}
    for cs, rs in zip(np.split(cells, bounds), np.split(rows, bounds)):
        out[int(cs[0])] = (atom, _pack(keys[rs]), None if weights is None else weights[rs])
    return out


# ---------------------------------------------------------------------- building the cells
def _atoms_of(query: JoinQuery, rel: str) -> list[tuple[int, list, list]]:
    """Per atom over ``rel``: (atom, [(column, constant)], variable columns)."""
    out = []
    for i, (r, terms) in enumerate(query.atoms):
        if r == rel:
            out.append((i, [(p, int(t)) for p, t in enumerate(terms) if not isinstance(t, str)],
                        [p for p, t in enumerate(terms) if isinstance(t, str)]))
    return out


def atom_rows(query: JoinQuery, rel: str, keys: np.ndarray, weights: np.ndarray | None
              ) -> dict[int, tuple]:
    """Rows of relation ``rel`` -> ``{atom: (variable columns, weights)}`` for its atoms
    (constants selected away)."""
    out = {}
    for atom, consts, cols in _atoms_of(query, rel):
        m = np.ones(len(keys), dtype=bool)
        for p, c in consts:
            m &= keys[:, p] == c
        out[atom] = (keys[m][:, cols], None if weights is None else weights[m])
    return out


def _router(plan: RoutePlan, rel: str, n_parts: int):
    """``split`` of :func:`queries.spark.cached.shuffle_to_parts`: a batch of relation
    ``rel`` -> ``{part: [(cell, chunk), ...]}``."""

    def split(keys: np.ndarray, w: np.ndarray | None) -> dict[int, list]:
        if w is not None and np.all(w == 1):
            w = None
        per_part: dict[int, list] = {}
        for j, (k, wj) in atom_rows(plan.query, rel, keys, w).items():
            for cell, chunk in _chunks_by_cell(plan, j, k, wj).items():
                per_part.setdefault(cell % n_parts, []).append((cell, chunk))
        return per_part

    return split


def cell_rdd(plan: RoutePlan, relations: Mapping[str, DataFrame], n_parts: int,
             index: bool = True) -> RDD:
    """The routed relations as an RDD of ``n_parts`` partitions, each one ``{cell: CellState}``.

    Routing runs in numpy inside the executors (one scan per relation for all of its
    atoms), the routed chunks are shuffled once (cell ``c`` to partition ``c % n_parts``),
    and each partition consolidates its cells. Not persisted.
    """
    from pyspark.sql import functions as F

    from queries.spark.cached import shuffle_to_parts
    from queries.spark.hypercube import _relation_columns

    q = plan.query
    frames = []
    for rel in q.relations:
        if rel not in relations:
            raise InputError(f"no relation {rel!r} given; have {sorted(relations)}")
        df = relations[rel]
        cols = _relation_columns(df, rel)
        for r, terms in q.atoms:
            if r == rel and len(terms) != len(cols):
                raise InputError(f"atom {rel}{terms} has {len(terms)} terms but relation "
                                 f"{rel} has {len(cols)} columns {cols}")
        sel = [F.col(c).cast("bigint").alias(f"k{p}") for p, c in enumerate(cols)]
        if WEIGHT in df.columns:
            sel.append(F.col(WEIGHT).cast("bigint").alias(WEIGHT))
        frames.append((df.select(*sel), [f"k{p}" for p in range(len(cols))],
                       _router(plan, rel, n_parts)))
    arities = [len(q.atom_variables(i)) for i in range(len(q.atoms))]

    def build(blobs: list) -> dict:
        by_cell: dict[int, list] = {}
        for blob in blobs:
            for cell, chunk in blob:
                by_cell.setdefault(cell, []).append(chunk)
        return {c: CellState.of(arities, ch, index) for c, ch in by_cell.items()}

    return shuffle_to_parts(frames, n_parts, build)


# ---------------------------------------------------------------------- per cell joins
def _join(spec: _CellSpec, loads: Sequence[tuple]) -> tuple:
    """``(relations, IncrementalGenericJoin)`` with each atom's Relation loaded."""
    from indexes import Relation
    from wcoj.generic_join import IncrementalGenericJoin
    from wcoj.zset import ZSet

    rels = []
    for (rel, vs), (k, w) in zip(spec.atoms, loads):
        r = Relation(f"{rel}#{len(rels)}", len(vs))
        r.load(ZSet.from_arrays(k, w, arity=len(vs)))
        rels.append(r)
    filters = [((x, y), FILTER_OPS[op]) for op, x, y in spec.filters]
    join = IncrementalGenericJoin([(r, vs) for r, (_, vs) in zip(rels, spec.atoms)],
                                  list(spec.output), filters=filters)
    return rels, join


def _batch_result(spec: _CellSpec, state: CellState, count_only: bool) -> Any:
    if any(state.size(j) == 0 for j in range(len(spec.atoms))):
        return 0 if count_only else None
    _, join = _join(spec, [state.rows(j) for j in range(len(spec.atoms))])
    if count_only:
        return int(join.batch(count_only=True))
    z = join.batch()
    return (np.array(z.keys), np.array(z.weights))


def _stack(chunks: Sequence[tuple], atom: int, arity: int) -> tuple[np.ndarray, np.ndarray]:
    ks = [np.asarray(k, np.int64).reshape(-1, arity) for a, k, _ in chunks if a == atom]
    ws = [np.ones(len(k), np.int64) if w is None else np.asarray(w, np.int64)
          for a, k, w in chunks if a == atom]
    if not ks:
        return np.zeros((0, arity), np.int64), np.zeros(0, np.int64)
    return np.concatenate(ks), np.concatenate(ws)


def _needed(spec: _CellSpec, state: CellState, extra: list, delta: list) -> list:
    """Per atom, the base row numbers that some term of the delta rule can join.

    For each atom ``i`` with a delta (term ``i``), walk the other atoms from the delta's
    values: an atom whose variables already have value sets keeps only the rows whose
    values are in all of them (sorted-column binary searches), and its other variables
    take the values of the kept rows (plus its log and delta rows). Every set is a
    superset of the values a result of term ``i`` can have, so no needed row is dropped.
    """
    n = len(spec.atoms)
    avars = [vs for _, vs in spec.atoms]
    need = [np.zeros(state.size(j), dtype=bool) for j in range(n)]
    for i in range(n):
        if not len(delta[i][1]):
            continue
        vals = {v: np.unique(delta[i][0][:, p]) for p, v in enumerate(avars[i])}
        todo = set(range(n)) - {i}
        while todo:
            j = max(sorted(todo), key=lambda a: sum(v in vals for v in avars[a]))
            todo.discard(j)
            bound = [(p, v) for p, v in enumerate(avars[j]) if v in vals]
            if bound:
                p0, v0 = bound[0]
                rows = state.rows_with(j, p0, vals[v0])
                keys = state.keys[j]
                for p, v in bound[1:]:
                    rows = rows[np.isin(keys[rows, p], vals[v])]
            else:
                rows = np.arange(state.size(j))
            need[j][rows] = True
            for p, v in enumerate(avars[j]):
                if v not in vals:
                    seen = [state.keys[j][rows, p], extra[j][0][:, p], delta[j][0][:, p]]
                    vals[v] = np.unique(np.concatenate(seen))
    return need


def _cell_ticks(spec: _CellSpec, state: CellState, log: list, ticks: list,
                count_only: bool) -> list:
    """Run the delta rule for consecutive ticks in one cell; ``[(tick_pos, change)]``.

    ``log``: ``(atom, keys, weights)`` chunks of the older ticks (part of ``prev``);
    ``ticks``: per tick position, its chunks.
    """
    from wcoj.zset import ZSet

    arities = [len(vs) for _, vs in spec.atoms]
    extra = [_stack(log, j, k) for j, k in enumerate(arities)]
    all_ticks = [c for _, chunks in ticks for c in chunks]
    delta = [_stack(all_ticks, j, k) for j, k in enumerate(arities)]
    need = _needed(spec, state, extra, delta)
    loads = []
    for j in range(len(arities)):
        k, w = state.rows(j, np.flatnonzero(need[j]))
        loads.append((np.concatenate([k, extra[j][0]]), np.concatenate([w, extra[j][1]])))
    rels, join = _join(spec, loads)
    out = []
    for pos, chunks in ticks:
        for j, (r, k) in enumerate(zip(rels, arities)):
            keys, w = _stack(chunks, j, k)
            r.stage(ZSet.from_arrays(keys, w, arity=k))
        if count_only:
            change: Any = int(join.delta(count_only=True))
        else:
            z = join.delta()
            change = (np.array(z.keys), np.array(z.weights))
        for r in rels:
            r.commit()
        out.append((pos, change))
    return out


# ---------------------------------------------------------------------- the store
def _merge_cells(arities: list):
    def merge(part: int, states: dict, logs: dict) -> dict:
        out = dict(states)
        for cell, chunks in logs.items():
            old = states.get(cell)
            mine = list(chunks) + (old.chunks() if old is not None else [])
            out[cell] = CellState.of(arities, mine)
        return out

    return merge


class CellStore:
    """A HyperCube's routed base cached on the executors, kept up to date tick by tick.

    Parameters
    ----------
    plan : RoutePlan
    relations : mapping of name -> DataFrame
        The base state of every relation the query names.
    n_parts : int, optional
        RDD partitions (default ``min(cells, task slots)``, see
        :func:`queries.spark.cached.task_slots`); cell ``c``
        lives in partition ``c % n_parts``.
    compact_every : int
        Fold the log into a new base after this many ticks (in a background thread).

    Attributes
    ----------
    state : queries.spark.cached.CachedState
        The cached base and the log of routed deltas (``{cell: [chunks]}`` per tick).
    """

    def __init__(self, plan: RoutePlan, relations: Mapping[str, DataFrame], *,
                 n_parts: int | None = None, compact_every: int = 8):
        from queries.spark.cached import CachedState, task_slots

        self.plan = plan
        self.spark: SparkSession = next(iter(relations.values())).sparkSession
        sc = self.spark.sparkContext
        self.n_parts = n_parts or max(1, min(plan.total_cells, task_slots(sc)))
        arities = [len(vs) for _, vs in plan.spec.atoms]
        self.state = CachedState(sc, cell_rdd(plan, relations, self.n_parts), self.n_parts,
                                 _merge_cells(arities), compact_every)

    def route(self, deltas: Mapping[int, tuple]) -> dict[int, list]:
        """``{atom: (keys, weights)}`` atom-row deltas -> ``{cell: [(atom, keys, w)]}``."""
        out: dict[int, list] = {}
        for atom, (keys, weights) in deltas.items():
            k = len(self.plan.query.atom_variables(atom))
            keys = np.asarray(keys, dtype=np.int64).reshape(-1, k)
            if not len(keys):
                continue
            weights = np.asarray(weights, dtype=np.int64).reshape(-1)
            for cell, chunk in _chunks_by_cell(self.plan, atom, keys, weights).items():
                out.setdefault(cell, []).append(chunk)
        return out

    def apply(self, ticks: Sequence[Mapping[int, tuple]], count_only: bool = True) -> list:
        """Apply consecutive ticks of atom-row deltas; return each tick's ΔQ.

        Parameters
        ----------
        ticks : sequence of ``{atom: (keys, weights)}``
            Keys hold the atom's variable columns (constants already selected).
        count_only : bool
            ΔQ's total weight per tick, or its rows ``(keys, weights)`` (output order).

        Returns
        -------
        list
            One entry per tick: an ``int``, or ``(keys int64 (n, k), weights int64 (n,))``.
        """
        routed = [self.route(t) for t in ticks]
        reached = {c for r in routed for c in r}
        payload = {c: [(pos, r[c]) for pos, r in enumerate(routed) if c in r] for c in reached}
        spec = self.plan.spec

        def fn(part, states, logs, todo):
            for cell, st in states.items():
                if cell in todo:
                    yield _cell_ticks(spec, st, logs.get(cell, []), todo[cell], count_only)

        found = self.state.run(reached, payload, fn)
        results: list = [0 if count_only else [] for _ in ticks]
        for outs in found:
            for pos, change in outs:
                if count_only:
                    results[pos] += change
                else:
                    results[pos].append(change)
        if not count_only:
            k = len(self.plan.query.output)
            results = [_sum_rows(r, k) for r in results]
        for r in routed:
            self.state.append(r)
        return results

    def _per_cell(self, count_only: bool) -> list:
        self.state.compact()
        spec = self.plan.spec
        return self.state.base.mapPartitions(
            lambda it: [_batch_result(spec, s, count_only) for st in it for s in st.values()]
        ).collect()

    def total(self) -> int:
        """The query's total weight over the current state, recomputed (compacts first)."""
        return int(sum(self._per_cell(True)))

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The query's rows over the current state, recomputed (on the driver: small only)."""
        return _sum_rows([r for r in self._per_cell(False) if r is not None],
                         len(self.plan.query.output))

    def close(self) -> None:
        """Wait for a running compaction and release the cached base."""
        self.state.close()


def _sum_rows(parts: list, arity: int) -> tuple[np.ndarray, np.ndarray]:
    from wcoj.zset import ZSet

    parts = [p for p in parts if len(p[1])]
    if not parts:
        return np.zeros((0, arity), np.int64), np.zeros(0, np.int64)
    z = ZSet.from_arrays(np.concatenate([p[0] for p in parts]),
                         np.concatenate([p[1] for p in parts]), arity=arity)
    return np.array(z.keys), np.array(z.weights)


def count_cells(plan: RoutePlan, relations: Mapping[str, DataFrame],
                n_parts: int | None = None) -> int:
    """The query's total weight: route in numpy, one shuffle, the generic join per cell."""
    from queries.spark.cached import task_slots

    spark = next(iter(relations.values())).sparkSession
    n_parts = n_parts or max(1, min(plan.total_cells, task_slots(spark.sparkContext)))
    spec = plan.spec
    rdd = cell_rdd(plan, relations, n_parts, index=False)
    found = rdd.mapPartitions(
        lambda it: [sum(_batch_result(spec, s, True) for st in it for s in st.values())]
    ).collect()
    return int(sum(found))
