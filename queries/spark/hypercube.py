"""HyperCube (shares) evaluation of a conjunctive query on Spark, generic join per cell.

Holds :class:`JoinQuery` (atoms over named relations, ``<``/``!=`` filters, output
variables), :func:`compute_shares` (an integer share per variable whose product is at most
the number of cells), :class:`Grid` (the cells: mixed-radix coordinates), :func:`route`
(Spark SQL: hash buckets per variable as columns, each atom's tuples replicated to every
cell that agrees with them), :func:`hypercube_join` (rows: group by cell, then the
in-process :class:`wcoj.generic_join.IncrementalGenericJoin` over
:class:`indexes.Relation`\\ s built from the cell's rows with numpy, through
``applyInArrow``) and :func:`hypercube_count` (the same buckets computed in numpy on the
executors, with skew residuals, by :mod:`queries.spark.cells`), and
:meth:`JoinQuery.parse` (a query from text). Also :func:`graph_relations` (the
``D``/``O``/``S`` relations of :mod:`queries.patterns` from an edge DataFrame) and
:func:`read_edge_frame`. Relies on pyspark, pyarrow, ``wcoj`` and ``indexes``. Used by
:mod:`queries.spark.cells`, :mod:`queries.spark.delta`, the ``wcoj spark`` command,
tests and ``benchmarks/bench_spark.py``.

The HyperCube algorithm (Afrati and Ullman, "Optimizing joins in a map-reduce
environment"; Beame, Koutris, Suciu, "Communication steps for parallel query
processing"): variable ``v`` gets a share ``s_v`` and a hash ``h_v(x) = pmod(xxhash64(x),
s_v)``; the cells are the tuples ``(c_v)`` with ``0 <= c_v < s_v``. A tuple of atom ``R(x,
y)`` goes to every cell with ``c_x = h_x(t.x)`` and ``c_y = h_y(t.y)``, whatever the other
coordinates (it is replicated ``prod_{v not in R} s_v`` times). A result ``(a, b, c)`` is
found in exactly one cell, the one of its own bucket tuple ``(h_a(a), h_b(b), h_c(c))``:
every variable occurs in some atom, and that atom's tuple reaches only cells whose
coordinate for the variable is its bucket. So no result is produced twice and no
ownership filter is needed (the tests recompute the buckets of every result to check it).

Triangles with 8 cells, shares (2, 2, 2)::

    O(a, b) -> cells (h(a), h(b), *)     each edge 2x per atom, 6x in all
    O(a, c) -> cells (h(a), *, h(c))
    O(b, c) -> cells (*, h(b), h(c))
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from queries.spark.joinquery import FILTER_OPS, JoinQuery, _is_var
from wcoj.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "JoinQuery",
    "Grid",
    "compute_shares",
    "route",
    "hypercube_join",
    "hypercube_count",
    "graph_relations",
    "read_edge_frame",
    "default_cells",
    "frame_of",
    "FILTER_OPS",
]

WEIGHT = "weight"


# ---------------------------------------------------------------------- shares and cells
def compute_shares(query: JoinQuery, n_cells: int,
                   sizes: Sequence[float] | None = None,
                   fixed: Sequence[str] = ()) -> dict[str, int]:
    """Integer shares per variable whose product is at most ``n_cells`` (greedy, LP-free).

    Starting from all ones, repeatedly raise by one the share that most lowers the
    expected per-cell load ``sum_a |R_a| / prod_{v in a} s_v`` (ties: the lower total
    replication ``sum_a |R_a| prod_{v not in a} s_v``, then the earlier variable), while
    the product stays within ``n_cells``. Equal sizes give the symmetric shares of the
    HyperCube paper where they are integers.

    Parameters
    ----------
    query : JoinQuery
    n_cells : int
        Upper bound on the number of cells (e.g. 2 to 4 times the cores).
    sizes : sequence of float, optional
        Rows per atom (default all equal).
    fixed : sequence of str
        Variables kept at share 1 (the heavy variables of a skew residual).

    >>> from queries.patterns import triangle, cycle
    >>> compute_shares(JoinQuery.from_pattern(triangle()), 8)
    {'a': 2, 'b': 2, 'c': 2}
    >>> compute_shares(JoinQuery.from_pattern(cycle(4, directed=False)), 8)
    {'a': 2, 'v1': 2, 'v2': 2, 'v3': 1}
    >>> compute_shares(JoinQuery.from_pattern(triangle()), 8, fixed=["a"])
    {'a': 1, 'b': 4, 'c': 2}
    """
    if n_cells < 1:
        raise InputError(f"n_cells must be at least 1, got {n_cells}")
    vars_ = query.variables
    sizes = [1.0] * len(query.atoms) if sizes is None else [float(s) for s in sizes]
    if len(sizes) != len(query.atoms):
        raise InputError(f"{len(sizes)} sizes for {len(query.atoms)} atoms")
    members = [set(query.atom_variables(i)) for i in range(len(query.atoms))]
    shares = dict.fromkeys(vars_, 1)

    def cost(s: dict[str, int]) -> tuple[float, float]:
        load = sum(n / math.prod(s[v] for v in m) for n, m in zip(sizes, members))
        repl = sum(n * math.prod(s[v] for v in vars_ if v not in m)
                   for n, m in zip(sizes, members))
        return load, repl

    while True:
        total = math.prod(shares.values())
        best = None
        for v in vars_:
            if v in fixed or total // shares[v] * (shares[v] + 1) > n_cells:
                continue
            trial = dict(shares, **{v: shares[v] + 1})
            c = cost(trial)
            if best is None or c < best[0]:
                best = (c, v)
        if best is None or best[0] >= cost(shares):
            return shares
        shares[best[1]] += 1


@dataclass(frozen=True)
class Grid:
    """The cells of a HyperCube: coordinates ``0 <= c_v < s_v``, numbered mixed-radix.

    >>> g = Grid({"a": 2, "b": 1, "c": 3})
    >>> g.n_cells, g.strides, g.cell({"a": 1, "c": 2})
    (6, {'a': 3, 'b': 0, 'c': 1}, 5)
    """

    shares: dict[str, int]
    strides: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        bad = {v: s for v, s in self.shares.items() if int(s) < 1}
        if bad:
            raise InputError(f"shares must be positive integers, got {bad}")
        strides, step = {}, 1
        for v in reversed(list(self.shares)):
            strides[v] = step if self.shares[v] > 1 else 0
            step *= self.shares[v]
        object.__setattr__(self, "strides", {v: strides[v] for v in self.shares})

    @property
    def n_cells(self) -> int:
        return math.prod(self.shares.values())

    def cell(self, coords: Mapping[str, int]) -> int:
        """The cell number of the coordinates (missing variables at 0)."""
        return sum(int(coords.get(v, 0)) * self.strides[v] for v in self.shares)

    def free_offsets(self, bound: Sequence[str]) -> list[int]:
        """Cell-number offsets of every combination of the coordinates not in ``bound``."""
        free = [v for v in self.shares if v not in bound and self.shares[v] > 1]
        ranges = [range(self.shares[v]) for v in free]
        return [sum(c * self.strides[v] for c, v in zip(combo, free))
                for combo in itertools.product(*ranges)]


def default_cells(spark: SparkSession) -> int:
    """Twice the default parallelism: cells enough to balance, few enough to stay cheap."""
    return max(1, 2 * spark.sparkContext.defaultParallelism)


# ---------------------------------------------------------------------- routing
def bucket(col: Any, share: int) -> Any:
    """The hash bucket of a column: ``pmod(xxhash64(col), share)`` (0 when share is 1)."""
    from pyspark.sql import functions as F

    if share == 1:
        return F.lit(0)
    return F.pmod(F.xxhash64(col), F.lit(share))


def _relation_columns(df: DataFrame, name: str) -> list[str]:
    from pyspark.sql import types as T

    cols = [f.name for f in df.schema.fields if f.name != WEIGHT]
    for f in df.schema.fields:
        if not isinstance(f.dataType, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
            raise InputError(f"relation {name}: column {f.name} is {f.dataType.simpleString()}, "
                             "expected integers (ids); intern values first")
    return cols


def _atom_frame(query: JoinQuery, i: int, relations: Mapping[str, DataFrame]) -> DataFrame:
    """Atom ``i``'s rows: constants selected, columns ``c0..`` (its variables) and weight."""
    from pyspark.sql import functions as F

    rel, terms = query.atoms[i]
    if rel not in relations:
        raise InputError(f"no relation {rel!r} given; have {sorted(relations)}")
    df = relations[rel]
    cols = _relation_columns(df, rel)
    if len(cols) != len(terms):
        raise InputError(f"atom {rel}{terms} has {len(terms)} terms but relation {rel} has "
                         f"{len(cols)} columns {cols}")
    for c, t in zip(cols, terms):
        if not _is_var(t):
            df = df.filter(F.col(c) == F.lit(int(t)))
    weight = F.col(WEIGHT).cast("bigint") if WEIGHT in df.columns else F.lit(1).cast("bigint")
    vcols = [F.col(c).cast("bigint").alias(f"c{j}")
             for j, c in enumerate(c for c, t in zip(cols, terms) if _is_var(t))]
    return df.select(*vcols, weight.alias(WEIGHT))


def route(query: JoinQuery, relations: Mapping[str, DataFrame], grid: Grid,
          atoms: Sequence[int] | None = None) -> DataFrame:
    """Every atom's tuples, replicated to the cells that need them.

    Returns a DataFrame ``(cell BIGINT, atom INT, c0 .. c{w-1} BIGINT, weight BIGINT)``
    (``w`` = ``query.width``; an atom's unused columns are 0): atom ``i``'s tuple ``t``
    goes to every cell whose coordinate ``c_v`` is ``bucket(t.v, s_v)`` for each of its
    variables ``v``, and anything for the other variables (one ``explode``).
    """
    from pyspark.sql import functions as F

    frames = []
    width = query.width
    for i in range(len(query.atoms)) if atoms is None else atoms:
        vs = query.atom_variables(i)
        df = _atom_frame(query, i, relations)
        base = sum((bucket(F.col(f"c{j}"), grid.shares[v]) * F.lit(grid.strides[v])
                    for j, v in enumerate(vs) if grid.shares[v] > 1), F.lit(0))
        offsets = grid.free_offsets(vs)
        if offsets != [0]:  # a generator cannot sit inside an expression: explode first
            df = df.select("*", F.explode(F.array(*[F.lit(o) for o in offsets])).alias("_off"))
            base = base + F.col("_off")
        pad = [F.lit(0).cast("bigint").alias(f"c{j}") for j in range(len(vs), width)]
        frames.append(df.select(base.cast("bigint").alias("cell"), F.lit(i).alias("atom"),
                                *[F.col(f"c{j}") for j in range(len(vs))], *pad,
                                F.col(WEIGHT)))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


# ---------------------------------------------------------------------- per cell
@dataclass(frozen=True)
class _CellSpec:
    """What a Python worker needs to join one cell (pickled into the UDF)."""

    atoms: tuple[tuple[str, tuple[str, ...]], ...]  # variables only, constants selected away
    filters: tuple[tuple[str, str, str], ...]
    output: tuple[str, ...]
    width: int

    @classmethod
    def of(cls, query: JoinQuery) -> _CellSpec:
        atoms = tuple((r, query.atom_variables(i)) for i, (r, _) in enumerate(query.atoms))
        return cls(atoms, query.filters, query.output, query.width)


def _table_arrays(table: pa.Table, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(atom ids, keys ``int64 (n, width)``, weights) of an Arrow table of routed rows."""
    n = table.num_rows
    atom = table.column("atom").to_numpy() if n else np.zeros(0, np.int32)
    keys = (np.column_stack([table.column(f"c{j}").to_numpy() for j in range(width)])
            if n else np.zeros((0, width), np.int64))
    weights = table.column(WEIGHT).to_numpy() if n else np.zeros(0, np.int64)
    return atom, np.ascontiguousarray(keys, dtype=np.int64), weights.astype(np.int64)


def _zset_of(atom: np.ndarray, keys: np.ndarray, weights: np.ndarray, i: int, arity: int):
    from wcoj.zset import ZSet

    m = atom == i
    return ZSet.from_arrays(keys[m, :arity], weights[m], arity=arity)


def _cell_join(spec: _CellSpec, prev: tuple, delta: tuple | None = None):
    """An ``IncrementalGenericJoin`` over per-atom Relations loaded from the cell's rows.

    ``prev`` (and ``delta``) are ``(atom, keys, weights)`` arrays. Each atom gets its own
    Relation even when several atoms name one relation: its rows were routed for its own
    variables. With ``delta`` each Relation has the atom's delta staged.
    """
    from indexes.index import Relation
    from wcoj.generic_join import IncrementalGenericJoin

    sources = []
    for i, (rel, vs) in enumerate(spec.atoms):
        r = Relation(f"{rel}#{i}", len(vs))
        r.load(_zset_of(*prev, i, len(vs)))
        if delta is not None:
            r.stage(_zset_of(*delta, i, len(vs)))
        sources.append((r, vs))
    filters = [((x, y), FILTER_OPS[op]) for op, x, y in spec.filters]
    return IncrementalGenericJoin(sources, list(spec.output), filters=filters)


def _result_table(spec: _CellSpec, cell: int, z: Any, with_cell: bool) -> pa.Table:
    import pyarrow as pa

    cols = {}
    if with_cell:
        cols["cell"] = pa.array(np.full(len(z), cell, np.int64))
    for j, v in enumerate(spec.output):
        cols[v] = pa.array(np.asarray(z.keys[:, j], dtype=np.int64))
    cols[WEIGHT] = pa.array(np.asarray(z.weights, dtype=np.int64))
    return pa.table(cols)


def _count_table(cell: int, n: int) -> pa.Table:
    import pyarrow as pa

    return pa.table({"cell": pa.array([cell], pa.int64()), "count": pa.array([n], pa.int64())})


def _batch_udf(spec: _CellSpec, count_only: bool, with_cell: bool):
    def run(key: tuple, table: pa.Table) -> pa.Table:
        cell = int(key[0].as_py())
        arrays = _table_arrays(table, spec.width)
        present = set(np.unique(arrays[0]).tolist())
        if len(present) < len(spec.atoms):  # some atom has no rows here: nothing joins
            return _count_table(cell, 0) if count_only else _result_table(
                spec, cell, _empty(len(spec.output)), with_cell)
        join = _cell_join(spec, arrays)
        if count_only:
            return _count_table(cell, int(join.batch(count_only=True)))
        return _result_table(spec, cell, join.batch(), with_cell)

    return run


def _empty(arity: int):
    from wcoj.zset import ZSet

    return ZSet.empty(arity)


def result_schema(query: JoinQuery, count_only: bool, with_cell: bool = False) -> str:
    """The DDL schema of :func:`hypercube_join`'s result."""
    if count_only:
        return "cell BIGINT, count BIGINT"
    cols = (["cell BIGINT"] if with_cell else []) + [f"`{v}` BIGINT" for v in query.output]
    return ", ".join(cols + [f"{WEIGHT} BIGINT"])


def hypercube_join(
    query: JoinQuery,
    relations: Mapping[str, DataFrame],
    *,
    shares: Mapping[str, int] | None = None,
    n_cells: int | None = None,
    count_only: bool = False,
    with_cell: bool = False,
    sizes: Sequence[float] | None = None,
) -> DataFrame:
    """Evaluate ``query`` on Spark: HyperCube routing, then a generic join per cell.

    Parameters
    ----------
    query : JoinQuery
    relations : mapping of name -> DataFrame
        Integer columns in the relation's natural order, and optionally ``weight``
        (default 1 per row); rows with equal keys add their weights.
    shares : mapping of variable -> int, optional
        Default :func:`compute_shares` with ``n_cells`` (default :func:`default_cells`).
    count_only : bool
        Return ``(cell, count)``: the sum of result weights found in each cell.
    with_cell : bool
        Rows only: also return the cell that found each row.
    sizes : sequence of float, optional
        Rows per atom for :func:`compute_shares`.

    Returns
    -------
    DataFrame
        ``(output variables..., weight)`` rows, or ``(cell, count)``. Each result row is
        found in exactly one cell; with a strict projection (``output`` leaves variables
        out) rows of different cells are summed and zeros dropped.

    Complexity: each atom's tuples are shuffled ``prod_{v not in atom} s_v`` times; the
    work per cell is worst-case optimal in the cell's input (Generic Join).
    """
    from pyspark.sql import functions as F

    if not relations:
        raise InputError("no relations given")
    spark = next(iter(relations.values())).sparkSession
    if shares is None:
        shares = compute_shares(query, n_cells or default_cells(spark), sizes)
    shares = {v: int(shares.get(v, 1)) for v in query.variables}
    grid = Grid(shares)
    # an explicit partition count: adaptive execution would otherwise coalesce the small
    # routed table into one task, and every cell would run on one core
    routed = route(query, relations, grid).repartition(grid.n_cells, "cell")
    spec = _CellSpec.of(query)
    out = routed.groupBy("cell").applyInArrow(
        _batch_udf(spec, count_only, with_cell), result_schema(query, count_only, with_cell))
    if count_only:
        return out
    if set(query.output) != set(query.variables) and not with_cell:
        out = (out.groupBy(*[F.col(f"`{v}`") for v in query.output])
               .agg(F.sum(WEIGHT).alias(WEIGHT)).filter(F.col(WEIGHT) != 0))
    return out


def hypercube_count(query: JoinQuery, relations: Mapping[str, DataFrame], *,
                    shares: Mapping[str, int] | None = None, n_cells: int | None = None,
                    heavy: Mapping[str, Any] | None = None, n_parts: int | None = None) -> int:
    """The sum of the result weights of ``query``: HyperCube routing, generic join per cell.

    Routing runs in numpy on the executors (:func:`queries.spark.cells.cell_rdd`, the same
    buckets as :func:`route`), with one grid per skew residual when ``heavy`` values are
    given (:class:`queries.spark.cells.RoutePlan`); one shuffle; then each cell runs the
    in-process generic join. Parameters as in :func:`hypercube_join`, plus ``heavy``
    (variable -> heavy values) and ``n_parts`` (RDD partitions; default
    ``min(cells, task slots)``, see :func:`queries.spark.cached.task_slots`).
    """
    from queries.spark.cells import RoutePlan, count_cells

    if not relations:
        raise InputError("no relations given")
    spark = next(iter(relations.values())).sparkSession
    plan = RoutePlan(query, shares, n_cells or default_cells(spark), heavy)
    return count_cells(plan, relations, n_parts)


# ---------------------------------------------------------------------- graphs
def graph_relations(edges: DataFrame, directed: bool = False) -> dict[str, DataFrame]:
    """The relations ``D``, ``O``, ``S`` of :mod:`queries.patterns` from an edge DataFrame.

    ``edges`` has two integer columns (the first two are used). Self-loops are dropped
    and duplicates merged. ``D`` holds the directed graph (both directions when
    undirected), ``O`` each undirected edge once as ``(min, max)``, ``S`` both directions.
    The frames are lazy; cache them when they are used more than once.
    """
    from pyspark.sql import functions as F

    s, d = edges.columns[:2]
    e = edges.select(F.col(s).cast("bigint").alias("src"), F.col(d).cast("bigint").alias("dst")
                     ).filter(F.col("src") != F.col("dst"))
    o = e.select(F.least("src", "dst").alias("src"), F.greatest("src", "dst").alias("dst")
                 ).distinct()
    sym = o.unionByName(o.select(F.col("dst").alias("src"), F.col("src").alias("dst")))
    return {"D": e.distinct() if directed else sym, "O": o, "S": sym}


def frame_of(spark: SparkSession, keys: np.ndarray, weights: np.ndarray | None = None,
             names: Sequence[str] = ("src", "dst")) -> DataFrame:
    """A DataFrame of BIGINT columns ``names`` (and ``weight``) from numpy, through Arrow."""
    import pyarrow as pa

    keys = np.asarray(keys, dtype=np.int64).reshape(-1, len(names))
    cols = {n: pa.array(np.ascontiguousarray(keys[:, j]), pa.int64())
            for j, n in enumerate(names)}
    if weights is not None:
        cols[WEIGHT] = pa.array(np.asarray(weights, dtype=np.int64).reshape(-1), pa.int64())
    return spark.createDataFrame(pa.table(cols))


def read_edge_frame(spark: SparkSession, path: str | os.PathLike,
                    strict: bool = False) -> DataFrame:
    """Edges ``(src, dst)`` BIGINT from an edge list (SNAP text, gzip, CSV, Parquet) or an
    ingest output directory (its ``edges/src_dst`` index). Malformed lines are reported
    as FILE:LINE and skipped (``strict``: the first one raises ``InputError``)."""
    from pyspark.sql import functions as F

    from queries.spark.readers import (
        check_malformed,
        check_paths,
        detect_format,
        read_records,
        typed_int,
    )

    p = Path(path)
    if (p / "manifest.json").exists():
        p = p / "edges" / "src_dst"
        if not p.exists():
            raise InputError(f"{path}: an ingest output without edges/src_dst")
        df = spark.read.parquet(str(p))
        return df.select(*[F.col(c).cast("bigint").alias(n)
                           for c, n in zip(df.columns[:2], ("src", "dst"))])
    paths = check_paths([path])
    fmt = detect_format(paths)
    records, types = read_records(spark, paths, fmt, ["src", "dst"], ["src", "dst"])
    s, s_err = typed_int("src", types["src"])
    d, d_err = typed_int("dst", types["dst"])
    rows = records.select("_file", "_line", "_text", F.coalesce(s_err, d_err).alias("_error"),
                          s.alias("src"), d.alias("dst"))
    check_malformed(rows, strict, what="edge line")
    return rows.filter(F.col("_error").isNull()).select("src", "dst")
