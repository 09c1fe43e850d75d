"""Per-tick deltas of a conjunctive query on Spark: the telescoping rule per HyperCube cell.

Holds :class:`DistributedDelta` (any conjunctive query over named relations, fed Z-set
deltas per relation), :class:`GraphDelta` (a graph pattern fed raw edge changes: set
semantics on the executors by :class:`queries.spark.edgeset.EdgeStore`, then the deltas
of ``D``, ``O`` and ``S`` by :func:`graph_deltas`) and :class:`DatomDelta` (a conjunctive
query over attributes fed raw datom changes: set semantics of the datoms on the
executors by :class:`queries.spark.edgeset.FactStore`, one relation ``(e, v)`` per
attribute). The base is routed once to its cells
and cached on the executors (:class:`queries.spark.cells.CellStore`); a tick routes only
its delta, on the driver, and ships it in one broadcast to the cells it reaches, whose
Python workers run :class:`wcoj.generic_join.IncrementalGenericJoin` over the base rows
that can meet the delta. Relies on pyspark, numpy, ``wcoj``, ``indexes``,
:mod:`queries.spark.cells`, :mod:`queries.spark.edgeset` and
:mod:`queries.spark.hypercube`. Used by the ``wcoj spark stream`` command
(:mod:`queries.spark.stream`), tests and ``benchmarks/bench_spark.py``.

The rule (DESIGN.md, "The incremental join, exactly"), for atoms ``A1 .. An``::

    ΔQ = Σ_i  A1' ⋈ ... ⋈ A(i-1)' ⋈ ΔAi ⋈ A(i+1) ⋈ ... ⋈ An

is linear in the tuples of each atom, and a HyperCube cell sees every tuple that can meet
a given tuple of another atom, so ΔQ is the sum over cells of the rule evaluated on each
cell's rows, each result again found in exactly one cell (and in exactly one skew
residual, see :mod:`queries.spark.cells`).

Cost of a tick of k changes: two Spark jobs (set semantics, then the cells), each on the
partitions the tick reaches; no shuffle; the driver routes O(k) rows; a cell reads its
cached base and binary-searches the rows that share values with the delta.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from queries.spark.cells import CellStore, RoutePlan, atom_rows, heavy_hitters, heavy_threshold
from queries.spark.hypercube import JoinQuery, default_cells, graph_relations
from wcoj.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["DistributedDelta", "GraphDelta", "DatomDelta", "graph_deltas"]

Rows = tuple[np.ndarray, np.ndarray]


def _as_rows(delta: Any, name: str) -> Rows:
    """``(keys, weights)`` of a relation delta given as arrays or a DataFrame."""
    if isinstance(delta, tuple):
        keys, weights = delta
        keys = np.asarray(keys, dtype=np.int64)
        if keys.ndim != 2:
            raise InputError(f"delta of {name}: keys must be 2-d (rows, columns), "
                             f"got shape {keys.shape}")
        return keys, np.asarray(weights, dtype=np.int64).reshape(-1)
    table = delta.toArrow()
    cols = [c for c in table.column_names if c != "weight"]
    if not cols:
        raise InputError(f"delta of {name}: no key columns")
    keys = np.column_stack([table.column(c).to_numpy().astype(np.int64) for c in cols])
    weights = (table.column("weight").to_numpy().astype(np.int64) if "weight" in
               table.column_names else np.ones(table.num_rows, np.int64))
    return keys.reshape(table.num_rows, len(cols)), weights


class DistributedDelta:
    """A conjunctive query kept up to date on Spark under per-tick Z-set deltas.

    Parameters
    ----------
    query : JoinQuery
    relations : mapping of name -> DataFrame
        The base state of every relation the query names (integer columns in natural
        order, optional ``weight``).
    shares : mapping, optional
        Shares of the light grid; default :func:`compute_shares` over ``n_cells``
        (default twice the default parallelism).
    heavy : mapping of variable -> values, or "auto", optional
        Heavy values (see :class:`queries.spark.cells.RoutePlan`); ``"auto"`` finds the
        values above :func:`queries.spark.cells.heavy_threshold` with one aggregate.
    compact_every : int
        Fold the log of routed deltas into the cached base after this many ticks.

    Attributes
    ----------
    plan : RoutePlan
    n_ticks : int

    Examples
    --------
    >>> view = DistributedDelta(JoinQuery.from_pattern(triangle()), graph_relations(edges))
    ... # doctest: +SKIP
    >>> view.step({"O": (keys, weights), "S": ...})   # ΔQ's total weight  # doctest: +SKIP
    """

    def __init__(self, query: JoinQuery, relations: Mapping[str, DataFrame], *,
                 shares: Mapping[str, int] | None = None, n_cells: int | None = None,
                 heavy: Mapping[str, Any] | str | None = None, compact_every: int = 8,
                 n_parts: int | None = None):
        missing = [r for r in query.relations if r not in relations]
        if missing:
            raise InputError(f"no base given for relation(s) {missing}")
        self.query = query
        self.spark = next(iter(relations.values())).sparkSession
        n_cells = n_cells or default_cells(self.spark)
        if heavy == "auto":
            first = relations[query.atoms[0][0]]
            heavy = heavy_hitters(query, relations, heavy_threshold(first.count(), n_cells))
        self.plan = RoutePlan(query, shares, n_cells, heavy)
        self.cells = CellStore(self.plan, {r: relations[r] for r in query.relations},
                               n_parts=n_parts, compact_every=compact_every)
        self.n_ticks = 0

    def __repr__(self) -> str:
        return (f"DistributedDelta({len(self.query.atoms)} atoms, "
                f"cells={self.plan.total_cells}, ticks={self.n_ticks}, "
                f"log={len(self.cells.state.log)})")

    @property
    def grid(self):
        """The light grid (the only one without heavy values)."""
        return self.plan.grid

    def steps(self, ticks: Sequence[Mapping[str, Any]], count_only: bool = True) -> list:
        """Apply consecutive ticks in one pass; per tick what :meth:`step` returns."""
        atom_ticks = []
        for deltas in ticks:
            per_atom: dict[int, tuple] = {}
            for rel in self.query.relations:
                if rel not in deltas:
                    continue
                keys, weights = _as_rows(deltas[rel], rel)
                per_atom.update(atom_rows(self.query, rel, keys, weights))
            atom_ticks.append(per_atom)
        out = self.cells.apply(atom_ticks, count_only)
        self.n_ticks += len(ticks)
        return out

    def step(self, deltas: Mapping[str, Any], count_only: bool = True) -> int | Rows:
        """Apply one tick: route the deltas, join them per cell, advance the state.

        Parameters
        ----------
        deltas : mapping of name -> (keys, weights) or DataFrame
            Each changed relation's Z-set delta. Relations left out did not change;
            relations the query does not name are ignored.
        count_only : bool
            Return ΔQ's total weight (an ``int``); otherwise ΔQ's rows ``(keys, weights)``
            (columns in ``query.output`` order, consolidated, on the driver).
        """
        return self.steps([deltas], count_only)[0]

    def total(self) -> int:
        """The query's total weight over the current state, recomputed per cell."""
        return self.cells.total()

    def rows(self) -> Rows:
        """The query's rows over the current state, recomputed per cell (small results)."""
        return self.cells.rows()

    def compact(self) -> None:
        self.cells.state.compact()

    def close(self) -> None:
        """Release the cached base (waits for a running compaction)."""
        self.cells.close()


def graph_deltas(edges: Rows, pairs: Rows | None, directed: bool) -> dict[str, Rows]:
    """The deltas of ``D``, ``O``, ``S`` (:mod:`queries.patterns`) from an edge set delta.

    ``edges``: the set delta of the primary relation (undirected: ``(min, max)`` pairs;
    directed: arcs); ``pairs``: for directed graphs, the delta of the undirected pairs.
    """
    ek, ew = edges
    o = (ek, ew) if not directed else pairs
    s = (np.concatenate([o[0], o[0][:, ::-1]]), np.concatenate([o[1], o[1]]))
    return {"D": (ek, ew) if directed else s, "O": o, "S": s}


def _advance(owner: Any, sets: list, deltas: list, count_only: bool) -> list:
    """Run the relation deltas of some ticks through ``owner.view``; keep ``owner.count``;
    per tick the set delta and the view's change."""
    changes = owner.view.steps(deltas, count_only)
    for ch in changes:
        owner.count += ch if count_only else int(ch[1].sum())
    return [((k, w), ch) for (k, w, _), ch in zip(sets, changes)]


class GraphDelta:
    """A graph pattern kept up to date on Spark from ticks of raw edge changes.

    Parameters
    ----------
    query : JoinQuery
        Over ``D``, ``O``, ``S`` (e.g. ``JoinQuery.from_pattern(cycle(3))``).
    edges : DataFrame
        The starting graph (columns ``src, dst``).
    directed : bool
        Directed input: ``D`` holds the arcs as given; else undirected edges.
    Other parameters as in :class:`DistributedDelta`.

    Attributes
    ----------
    edges : queries.spark.edgeset.EdgeStore
    view : DistributedDelta
    count : int
        The pattern's current total weight.
    """

    def __init__(self, query: JoinQuery, edges: DataFrame, *, directed: bool = False,
                 n_cells: int | None = None, heavy: Mapping[str, Any] | str | None = None,
                 compact_every: int = 8, n_parts: int | None = None):
        from queries.spark.edgeset import EdgeStore

        self.query = query
        self.directed = directed
        self.edges = EdgeStore(edges, directed=directed, n_parts=n_parts,
                               compact_every=compact_every)
        rels = graph_relations(edges, directed=directed)
        self.view = DistributedDelta(query, rels, n_cells=n_cells, heavy=heavy,
                                     compact_every=compact_every, n_parts=n_parts)
        self.count = self.view.total()

    def apply(self, ticks: Sequence[tuple[np.ndarray, np.ndarray]], count_only: bool = False
              ) -> list[tuple[Rows, Any]]:
        """Apply ticks of changes ``(keys (k, 2), weights (k,))`` (weight > 0 inserts,
        < 0 deletes; within a tick the last change of an edge wins).

        Returns, per tick, the edge set delta ``(keys, weights)`` and the view's change
        (its total weight, or its rows ``(keys, weights)``).
        """
        sets = self.edges.apply(ticks)
        deltas = [graph_deltas((k, w), o, self.directed) for k, w, o in sets]
        return _advance(self, sets, deltas, count_only)

    def close(self) -> None:
        self.edges.close()
        self.view.close()


class DatomDelta:
    """A conjunctive query over attributes kept up to date from ticks of datom changes.

    Parameters
    ----------
    query : JoinQuery
        Atoms over attribute names, two terms each ``(e, v)``: ``follows(a, b) likes(b, x)``
        (e.g. :meth:`JoinQuery.parse`).
    datoms : DataFrame, optional
        The starting datoms, columns ``e`` (BIGINT), ``a`` (STRING), ``v`` (BIGINT); only
        the query's attributes are kept. Default: none.
    spark : SparkSession
        Needed when ``datoms`` is None.
    Other parameters as in :class:`DistributedDelta`.

    Attributes
    ----------
    attributes : list of str
        The query's attributes; a change row's first column is the position here.
    facts : queries.spark.edgeset.FactStore
        The current datoms ``(attribute position, e, v)`` on the executors.
    view : DistributedDelta
    count : int
    """

    def __init__(self, query: JoinQuery, datoms: DataFrame | None = None, *, spark=None,
                 n_cells: int | None = None, heavy: Mapping[str, Any] | str | None = None,
                 compact_every: int = 8, n_parts: int | None = None):
        from pyspark.sql import functions as F

        from queries.spark.edgeset import FactStore

        for rel, terms in query.atoms:
            if len(terms) != 2:
                raise InputError(f"atom {rel}{terms}: an attribute atom has two terms (e, v)")
        self.query = query
        self.attributes = list(query.relations)
        if datoms is None:
            datoms = spark.createDataFrame([], "e BIGINT, a STRING, v BIGINT")
        d = datoms.select(F.col("e").cast("bigint").alias("e"), F.col("a").cast("string"),
                          F.col("v").cast("bigint").alias("v")).filter(
            F.col("a").isin(self.attributes))
        code = F.array_position(F.array(*[F.lit(a) for a in self.attributes]), F.col("a")) - 1
        self.facts = FactStore(d.select(code.cast("bigint").alias("a"), "e", "v"),
                               n_parts=n_parts, compact_every=compact_every)
        rels = {a: d.filter(F.col("a") == a).select("e", "v").distinct()
                for a in self.attributes}
        self.view = DistributedDelta(query, rels, n_cells=n_cells, heavy=heavy,
                                     compact_every=compact_every, n_parts=n_parts)
        self.count = self.view.total()

    def apply(self, ticks: Sequence[tuple[np.ndarray, np.ndarray]], count_only: bool = False
              ) -> list[tuple[Rows, Any]]:
        """Apply ticks of changes ``(rows (k, 3) [attribute position, e, v], weights)``
        (weight > 0 asserts, < 0 retracts; the last change of a datom in a tick wins).

        Returns, per tick, the datoms' set delta and the view's change (its total weight,
        or its rows ``(keys, weights)``).
        """
        sets = self.facts.apply(ticks)
        deltas = [{a: (k[k[:, 0] == i][:, 1:], w[k[:, 0] == i])
                   for i, a in enumerate(self.attributes)} for k, w, _ in sets]
        return _advance(self, sets, deltas, count_only)

    def close(self) -> None:
        self.facts.close()
        self.view.close()
