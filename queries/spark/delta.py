"""Per-tick deltas of a conjunctive query on Spark: the telescoping rule per HyperCube cell.

Holds :class:`DistributedDelta`: the base relations routed once to their HyperCube cells
(:mod:`queries.spark.hypercube`), consolidated, hash-partitioned by cell and persisted;
each tick routes and shuffles only the tick's delta, and every cell the delta reaches runs
the in-process :class:`wcoj.generic_join.IncrementalGenericJoin` over Relations loaded
with the cell's state and the staged cell delta. Also :func:`graph_delta` (the ``D``/``O``
/``S`` deltas of an undirected edge delta) and :class:`EdgeSet` (set semantics for edge
changes, kept on the driver). Relies on pyspark, pyarrow, ``wcoj``, ``indexes`` and
:mod:`queries.spark.hypercube`. Used by the ``wcoj spark stream`` command, tests and
``benchmarks/bench_spark.py``.

The rule (DESIGN.md, "The incremental join, exactly"), for atoms ``A1 .. An``::

    ΔQ = Σ_i  A1' ⋈ ... ⋈ A(i-1)' ⋈ ΔAi ⋈ A(i+1) ⋈ ... ⋈ An

is linear in the tuples of each atom, and a HyperCube cell sees every tuple that can meet
a given tuple of another atom, so ΔQ is the sum over cells of the rule evaluated on each
cell's rows, each result again found in exactly one cell.

State is log-structured::

    state = base (persisted, partitioned by cell) + log[0] + ... + log[k-1]

Each tick appends its routed delta to the log; every ``compact_every`` ticks the log is
folded into a new base (union, group by row, sum the weights, drop zeros, repartition by
cell, persist). The base side of the per-tick cogroup keeps its partitioning, so Spark
shuffles only the log and the delta. Before the cogroup the base is cut down to the cells
the delta reaches and, per atom, to the tuples that share a value with the delta on a
common variable (broadcast joins with the delta's values; skipped for atoms some delta
atom shares no variable with, e.g. the opposite edges of a 4-cycle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from queries.spark.hypercube import (
    WEIGHT,
    Grid,
    JoinQuery,
    _CellSpec,
    _cell_join,
    _count_table,
    _empty,
    _result_table,
    _table_arrays,
    compute_shares,
    default_cells,
    frame_of,
    result_schema,
    route,
)
from wcoj.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["DistributedDelta", "graph_delta", "EdgeSet"]


def _concat(parts: Sequence[tuple]) -> tuple:
    return tuple(np.concatenate([p[j] for p in parts]) for j in range(3))


def _delta_udf(spec: _CellSpec, count_only: bool):
    """Per cell: prev = base + older log rows, delta = this tick's rows (``cur`` = 1)."""

    def run(key: tuple, base: pa.Table, log: pa.Table) -> pa.Table:
        cell = int(key[0].as_py())
        cur = log.column("cur").to_numpy() if log.num_rows else np.zeros(0, np.int32)
        if not cur.any():
            return _count_table(cell, 0) if count_only else _result_table(
                spec, cell, _empty(len(spec.output)), False)
        older = _table_arrays(log.filter(_mask(log, 0)), spec.width)
        delta = _table_arrays(log.filter(_mask(log, 1)), spec.width)
        prev = _concat([_table_arrays(base, spec.width), older])
        join = _cell_join(spec, prev, delta)
        if count_only:
            return _count_table(cell, int(join.delta(count_only=True)))
        return _result_table(spec, cell, join.delta(), False)

    return run


def _mask(table: pa.Table, value: int) -> Any:
    import pyarrow.compute as pc

    return pc.equal(table.column("cur"), value)


class DistributedDelta:
    """A conjunctive query kept up to date on Spark under per-tick Z-set deltas.

    Parameters
    ----------
    query : JoinQuery
    relations : mapping of name -> DataFrame
        The base state of every relation the query names (integer columns in natural
        order, optional ``weight``).
    shares : mapping, optional
        HyperCube shares; default :func:`queries.spark.hypercube.compute_shares` over
        ``n_cells`` (default twice the default parallelism).
    compact_every : int
        Fold the log into a new persisted base after this many ticks.

    Attributes
    ----------
    grid : Grid
        The cells.
    n_ticks : int
        Ticks applied.

    Examples
    --------
    >>> view = DistributedDelta(JoinQuery.from_pattern(triangle()), graph_relations(edges))
    ... # doctest: +SKIP
    >>> view.step(graph_delta(changes))   # ΔQ's total weight   # doctest: +SKIP
    """

    def __init__(self, query: JoinQuery, relations: Mapping[str, DataFrame], *,
                 shares: Mapping[str, int] | None = None, n_cells: int | None = None,
                 compact_every: int = 8):
        missing = [r for r in query.relations if r not in relations]
        if missing:
            raise InputError(f"no base given for relation(s) {missing}")
        if compact_every < 1:
            raise InputError(f"compact_every must be at least 1, got {compact_every}")
        self.query = query
        self.spark = next(iter(relations.values())).sparkSession
        if shares is None:
            shares = compute_shares(query, n_cells or default_cells(self.spark))
        self.grid = Grid({v: int(shares.get(v, 1)) for v in query.variables})
        self.spec = _CellSpec.of(query)
        self.keys = ["cell", "atom"] + [f"c{j}" for j in range(query.width)]
        self.n_partitions = int(self.spark.conf.get("spark.sql.shuffle.partitions"))
        self.compact_every = compact_every
        self.base = self._persist(self._consolidate(route(query, relations, self.grid)))
        self.log: list[DataFrame] = []
        self.n_ticks = 0

    def __repr__(self) -> str:
        return (f"DistributedDelta({len(self.query.atoms)} atoms, cells={self.grid.n_cells}, "
                f"ticks={self.n_ticks}, log={len(self.log)})")

    # ------------------------------------------------------------------ state
    def _consolidate(self, routed: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        return (routed.groupBy(*self.keys).agg(F.sum(WEIGHT).alias(WEIGHT))
                .filter(F.col(WEIGHT) != 0))

    def _persist(self, df: DataFrame) -> DataFrame:
        from pyspark import StorageLevel

        df = df.repartition(self.n_partitions, "cell").persist(StorageLevel.MEMORY_AND_DISK)
        df.count()
        return df

    def compact(self) -> None:
        """Fold the log into a new persisted base (union, sum per row, drop zeros)."""
        if not self.log:
            return
        state = self.base
        for d in self.log:
            state = state.unionByName(d)
        old = [self.base, *self.log]
        self.base = self._persist(self._consolidate(state))
        self.log = []
        for df in old:
            df.unpersist()

    def state(self) -> DataFrame:
        """The routed state: base plus log (rows may repeat until compaction)."""
        out = self.base
        for d in self.log:
            out = out.unionByName(d)
        return out

    def close(self) -> None:
        """Release the persisted base and log."""
        for df in [self.base, *self.log]:
            df.unpersist()
        self.log = []

    # ------------------------------------------------------------------ queries
    def total(self) -> int:
        """The query's total weight over the current state, recomputed per cell."""
        from pyspark.sql import functions as F

        from queries.spark.hypercube import _batch_udf

        out = self.state().groupBy("cell").applyInArrow(
            _batch_udf(self.spec, True, False), result_schema(self.query, True))
        return int(out.agg(F.sum("count")).first()[0] or 0)

    def result(self) -> DataFrame:
        """The query's rows over the current state, recomputed per cell."""
        from queries.spark.hypercube import _batch_udf

        return self.state().groupBy("cell").applyInArrow(
            _batch_udf(self.spec, False, False), result_schema(self.query, False))

    def step(self, deltas: Mapping[str, DataFrame], count_only: bool = True) -> int | DataFrame:
        """Apply one tick: route the deltas, join them per cell, advance the state.

        Parameters
        ----------
        deltas : mapping of name -> DataFrame
            Each changed relation's Z-set delta (integer columns, ``weight``; rows
            without a weight column count +1). Relations left out did not change;
            relations the query does not name are ignored.
        count_only : bool
            Return ΔQ's total weight (an ``int``); otherwise a DataFrame of ΔQ's rows
            ``(output..., weight)``, computed before the state advances (it is
            persisted; unpersist it when done).

        Returns
        -------
        int or DataFrame
        """
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        atoms = [i for i, (r, _) in enumerate(self.query.atoms) if r in deltas]
        if not atoms:
            return 0 if count_only else self.spark.createDataFrame(
                [], result_schema(self.query, False))
        # not consolidated here: the cells consolidate (ZSet.from_arrays) and so does compact
        routed = route(self.query, deltas, self.grid, atoms)
        routed = routed.repartition(self.n_partitions, "cell").persist(
            StorageLevel.MEMORY_AND_DISK)
        base = self._reduce_base(routed.toArrow())  # one job: routes, persists, collects
        log = [d.withColumn("cur", F.lit(0)) for d in self.log] + [
            routed.withColumn("cur", F.lit(1))]
        side = log[0]
        for d in log[1:]:
            side = side.unionByName(d)
        out = base.groupBy("cell").cogroup(side.groupBy("cell")).applyInArrow(
            _delta_udf(self.spec, count_only), result_schema(self.query, count_only))
        if count_only:
            result: int | DataFrame = int(out.agg(F.sum("count")).first()[0] or 0)
        else:
            result = out.persist(StorageLevel.MEMORY_AND_DISK)
            result.count()
        self.log.append(routed)
        self.n_ticks += 1
        if len(self.log) >= self.compact_every:
            self.compact()
        return result

    def _reduce_base(self, routed: pa.Table) -> DataFrame:
        """The base rows that can meet this tick's delta (keeps the base's partitioning).

        Cells the delta does not reach are dropped. Atom ``j``'s tuple is kept when some
        delta atom ``i != j`` shares no variable with it, or when one of its variables
        takes a value that a delta atom ``i != j`` holding that variable has (a superset
        of the tuples the rule can join, which is all it needs). The values travel as
        small broadcast tables joined on ``(atom, c_p)``, one per column position ``p``:
        a broadcast join keeps the base's partitioning by cell, so it is not shuffled.
        """
        from pyspark.sql import functions as F

        q = self.query
        atom, keys, _ = _table_arrays(routed, q.width)
        cells = np.unique(routed.column("cell").to_numpy()).tolist()
        delta_atoms = np.unique(atom).tolist()
        by_var = {}
        for i in delta_atoms:
            for j, v in enumerate(q.atom_variables(i)):
                by_var.setdefault(v, []).append((i, np.unique(keys[atom == i, j])))
        keep_all, allowed = [], [[] for _ in range(q.width)]
        for j in range(len(q.atoms)):
            vj = q.atom_variables(j)
            if any(i != j and not set(vj) & set(q.atom_variables(i)) for i in delta_atoms):
                keep_all.append(j)
                continue
            for p, v in enumerate(vj):
                vals = [x for i, x in by_var.get(v, []) if i != j]
                if vals:
                    allowed[p].append((j, np.unique(np.concatenate(vals))))
        base = self.base.filter(F.col("cell").isin(cells)) if len(cells) < self.grid.n_cells \
            else self.base
        flags = [F.col("atom").isin(keep_all)] if keep_all else []
        for p, parts in enumerate(allowed):
            if not parts:
                continue
            table = frame_of(self.spark, np.concatenate([np.column_stack(
                [np.full(len(vals), j), vals]) for j, vals in parts]),
                names=(f"_a{p}", f"_v{p}"))
            base = base.join(F.broadcast(table), (F.col("atom") == F.col(f"_a{p}"))
                             & (F.col(f"c{p}") == F.col(f"_v{p}")), "left")
            flags.append(F.col(f"_v{p}").isNotNull())
        if not flags:  # only atoms that changed alone: no base row is read
            return base.limit(0)
        keep = flags[0]
        for f in flags[1:]:
            keep = keep | f
        return base.filter(keep).select(*self.keys, WEIGHT)


# ---------------------------------------------------------------------- graphs
def graph_delta(changes: DataFrame) -> dict[str, DataFrame]:
    """The deltas of ``D``, ``O``, ``S`` for an undirected graph from an edge delta.

    ``changes`` has columns ``(src, dst, weight)`` with ``src < dst`` (canonical
    undirected edges; a valid set-semantics delta, e.g. from :class:`EdgeSet`).
    """
    from pyspark.sql import functions as F

    o = changes.select(F.col(changes.columns[0]).cast("bigint").alias("src"),
                       F.col(changes.columns[1]).cast("bigint").alias("dst"),
                       F.col(WEIGHT).cast("bigint").alias(WEIGHT))
    s = o.unionByName(o.select(F.col("dst").alias("src"), F.col("src").alias("dst"), WEIGHT))
    return {"D": s, "O": o, "S": s}


class EdgeSet:
    """The current undirected edge set on the driver, turning changes into set deltas.

    An insert of an edge already present, or a delete of an absent one, changes nothing;
    within a tick the last change of an edge wins. Edges are canonical ``(min, max)``,
    self-loops dropped.

    >>> s = EdgeSet(np.array([[1, 2], [3, 2]]))
    >>> k, w = s.apply(np.array([[2, 1], [1, 3], [2, 3]]), np.array([1, 1, -1]))
    >>> k.tolist(), w.tolist(), len(s)
    ([[1, 3], [2, 3]], [1, -1], 2)
    """

    def __init__(self, edges: np.ndarray):
        self.keys = _canonical_unique(np.asarray(edges, dtype=np.int64).reshape(-1, 2))

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def apply(self, keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply changes (``weights`` > 0 insert, < 0 delete); return the set delta."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
        weights = np.asarray(weights, dtype=np.int64).reshape(-1)
        keep = keys[:, 0] != keys[:, 1]
        keys, weights = np.sort(keys[keep], axis=1), weights[keep]
        if not keys.shape[0]:
            return np.zeros((0, 2), np.int64), np.zeros(0, np.int64)
        order = np.lexsort((np.arange(len(keys)), keys[:, 1], keys[:, 0]))
        keys, weights = keys[order], weights[order]
        last = np.ones(len(keys), dtype=bool)
        last[:-1] = np.any(keys[1:] != keys[:-1], axis=1)
        keys, want = keys[last], weights[last] > 0
        have = _contains(self.keys, keys)
        change = want != have
        keys, w = keys[change], np.where(want[change], 1, -1).astype(np.int64)
        added, removed = keys[w > 0], keys[w < 0]
        current = self.keys[~_contains(removed, self.keys)] if len(removed) else self.keys
        self.keys = _canonical_unique(np.concatenate([current, added])) if len(added) else current
        return keys, w


def _canonical_unique(keys: np.ndarray) -> np.ndarray:
    keys = np.sort(keys[keys[:, 0] != keys[:, 1]], axis=1)
    return np.unique(keys, axis=0) if len(keys) else np.zeros((0, 2), np.int64)


def _contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which rows of ``keys`` occur in the lexsorted unique ``sorted_keys``."""
    if not len(sorted_keys) or not len(keys):
        return np.zeros(len(keys), dtype=bool)
    a = sorted_keys.view([("u", np.int64), ("v", np.int64)]).reshape(-1)
    b = np.ascontiguousarray(keys).view([("u", np.int64), ("v", np.int64)]).reshape(-1)
    pos = np.searchsorted(a, b)
    pos[pos == len(a)] = 0
    return a[pos] == b
