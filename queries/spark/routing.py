"""Where each tuple of a HyperCube join goes: Spark's hash in numpy, and the routing plan.

``xxhash64`` and ``bucket_of`` are the numpy twins of Spark's ``xxhash64`` and
``hypercube.bucket``, so executors route rows exactly as Spark SQL would. A
``RoutePlan`` sends every atom tuple to one HyperCube, or, with heavy hitters (vertices
whose degree passes ``heavy_threshold``; from the ingest's ``top_degrees`` or measured
on the relations), to one grid per heavy-variable residual, so no cell receives a hub's
whole neighbourhood. Re-exported by :mod:`queries.spark.cells`.

>>> bucket_of([0, 1, -5], 4).tolist()
[0, 2, 0]
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from queries.spark.hypercube import WEIGHT, Grid, JoinQuery, _atom_frame, _CellSpec, compute_shares
from wcoj.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["xxhash64", "bucket_of", "RoutePlan", "Residual", "heavy_hitters", "heavy_from_degrees",
           "heavy_threshold"]

_P1, _P2, _P3, _P4, _P5 = (np.uint64(x) for x in (
    0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
    0x27D4EB2F165667C5))
_SEED = 42  # Spark's XxHash64 expression seed


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def xxhash64(values: Any) -> np.ndarray:
    """Spark's ``xxhash64(col)`` of BIGINT values (XXH64 of one long, seed 42), as int64.

    >>> xxhash64([0, 1, -5]).tolist()
    [-5252525462095825812, -7001672635703045582, -5259934538394028452]
    """
    v = np.ascontiguousarray(values, dtype=np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        h = np.full(v.shape, np.uint64(_SEED) + _P5 + np.uint64(8), dtype=np.uint64)
        k = _rotl(v * _P2, 31) * _P1
        h = _rotl(h ^ k, 27) * _P1 + _P4
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h.view(np.int64)


def bucket_of(values: Any, share: int) -> np.ndarray:
    """``pmod(xxhash64(v), share)`` for every value: the numpy twin of ``hypercube.bucket``."""
    values = np.asarray(values, dtype=np.int64)
    if share == 1:
        return np.zeros(values.shape, np.int64)
    return np.mod(xxhash64(values), share)


@dataclass(frozen=True)
class Residual:
    """One grid of a :class:`RoutePlan`: results whose heavy variables are ``heavy``."""

    heavy: frozenset
    grid: Grid
    offset: int  # its cells are offset .. offset + grid.n_cells - 1


@dataclass
class RoutePlan:
    """Where every atom tuple goes: one HyperCube, or one grid per heavy-variable residual.

    Parameters
    ----------
    query : JoinQuery
    shares : mapping, optional
        Shares of the light grid (default :func:`compute_shares` over ``n_cells``).
    n_cells : int
        Cells per grid (each residual's shares multiply to at most this).
    heavy : mapping of variable -> values, optional
        Heavy values per variable; none gives the plain HyperCube.

    >>> from queries.patterns import triangle
    >>> q = JoinQuery.from_pattern(triangle())
    >>> plan = RoutePlan(q, n_cells=8, heavy={v: [7] for v in "abc"})
    >>> [(sorted(r.heavy), r.grid.n_cells) for r in plan.residuals][:4]
    [([], 8), (['a'], 8), (['b'], 8), (['c'], 8)]
    >>> cells, rows = plan.route(0, np.array([[7, 1], [2, 3]]))
    >>> sorted(set(cells[rows == 0].tolist()) & set(range(8)))  # the hub's tuple: not in S={}
    []
    """

    query: JoinQuery
    shares: Mapping[str, int] | None = None
    n_cells: int = 8
    heavy: Mapping[str, Any] | None = None
    residuals: list = field(init=False)
    spec: _CellSpec = field(init=False)

    def __post_init__(self) -> None:
        q = self.query
        self.spec = _CellSpec.of(q)
        heavy = {v: np.unique(np.asarray(list(vals), dtype=np.int64))
                 for v, vals in (self.heavy or {}).items() if len(vals)}
        unknown = set(heavy) - set(q.variables)
        if unknown:
            raise InputError(f"heavy values for unknown variable(s) {sorted(unknown)}")
        self.heavy = heavy
        light = self.shares or compute_shares(q, self.n_cells)
        light = {v: int(light.get(v, 1)) for v in q.variables}
        residuals, offset = [], 0
        with_heavy = [v for v in q.variables if v in heavy]
        for r in range(len(with_heavy) + 1):
            for s in itertools.combinations(with_heavy, r):
                shares = light if not s else compute_shares(q, self.n_cells, fixed=s)
                grid = Grid({v: int(shares.get(v, 1)) for v in q.variables})
                residuals.append(Residual(frozenset(s), grid, offset))
                offset += grid.n_cells
        self.residuals = residuals

    @property
    def total_cells(self) -> int:
        return self.residuals[-1].offset + self.residuals[-1].grid.n_cells

    @property
    def grid(self) -> Grid:
        """The light grid (the whole plan when there are no heavy values)."""
        return self.residuals[0].grid

    def route(self, atom: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(cells, rows)``: row ``rows[k]`` of ``keys`` (atom ``atom``'s variable columns)
        goes to cell ``cells[k]``; a row is listed once per cell it is replicated to."""
        keys = np.asarray(keys, dtype=np.int64)
        vs = self.query.atom_variables(atom)
        heavy_at = [np.isin(keys[:, p], self.heavy[v]) if v in self.heavy else None
                    for p, v in enumerate(vs)]
        out_cells, out_rows = [], []
        for res in self.residuals:
            mask = np.ones(len(keys), dtype=bool)
            for p, v in enumerate(vs):
                if heavy_at[p] is not None:
                    mask &= heavy_at[p] == (v in res.heavy)
                elif v in res.heavy:
                    mask[:] = False
            rows = np.flatnonzero(mask)
            if not rows.size:
                continue
            g = res.grid
            base = np.full(rows.size, res.offset, dtype=np.int64)
            for p, v in enumerate(vs):
                if g.shares[v] > 1:
                    base += bucket_of(keys[rows, p], g.shares[v]) * g.strides[v]
            offsets = np.asarray(g.free_offsets(vs), dtype=np.int64)
            out_cells.append((base[:, None] + offsets[None, :]).ravel())
            out_rows.append(np.repeat(rows, offsets.size))
        if not out_cells:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(out_cells), np.concatenate(out_rows)


def heavy_threshold(n_rows: int, n_cells: int) -> int:
    """Default degree above which a value is heavy: it alone would fill a cell."""
    return max(1, n_rows // max(1, n_cells))


def heavy_from_degrees(query: JoinQuery, top_degrees: Sequence[Sequence[int]],
                       threshold: int) -> dict[str, np.ndarray]:
    """Heavy values of a graph query from ingest statistics (``manifest["top_degrees"]``,
    ``[[node, degree], ...]``): the nodes above ``threshold``, for every variable (a
    vertex's degree bounds its frequency in any column of ``D``, ``O`` or ``S``).

    >>> q = JoinQuery([("O", ("a", "b"))])
    >>> {v: h.tolist() for v, h in heavy_from_degrees(q, [[7, 90], [3, 12]], 50).items()}
    {'a': [7], 'b': [7]}
    """
    hubs = np.array(sorted(int(v) for v, d in top_degrees if d > threshold), dtype=np.int64)
    return {v: hubs for v in query.variables} if hubs.size else {}


def heavy_hitters(query: JoinQuery, relations: Mapping[str, DataFrame],
                  threshold: int) -> dict[str, np.ndarray]:
    """Per variable, the values occurring more than ``threshold`` times in one atom column.

    One Spark aggregate per distinct (relation, column). Prefer the ingest statistics
    (``manifest.json``'s ``top_degrees``) when they exist: they cost no job.
    """
    from pyspark.sql import functions as F

    found: dict[tuple[str, str], np.ndarray] = {}
    out: dict[str, set] = {}
    for i in range(len(query.atoms)):
        df = _atom_frame(query, i, relations)
        rel = query.atoms[i][0]
        for p, v in enumerate(query.atom_variables(i)):
            key = (rel + repr(query.atoms[i][1]), f"c{p}")
            if key not in found:
                rows = (df.groupBy(f"c{p}").agg(F.sum(WEIGHT).alias("n"))
                        .filter(F.col("n") > threshold).collect())
                found[key] = np.array([r[0] for r in rows], dtype=np.int64)
            out.setdefault(v, set()).update(found[key].tolist())
    return {v: np.array(sorted(s), dtype=np.int64) for v, s in out.items() if s}
