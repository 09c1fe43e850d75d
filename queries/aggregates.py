"""Aggregates of ``:find``: per-group state kept by a view, and a first tick's groups at once.

``Groups`` keeps, per group of the non-aggregated ``:find`` values, the group's rows and
running integer sums; a view's transaction recomputes only the groups it touches, and a
failed transaction puts everything back. ``aggregate_once`` computes the groups of a
first tick (what ``q`` answers) in a few numpy passes when every aggregate allows it.

Relies on ``queries.functions`` (the aggregates); used by ``queries.database``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from queries.ast import FindAggregate, Query
from queries.functions import aggregate

__all__ = ["Groups", "aggregate_once"]


_VECTOR_AGGREGATES = ("count", "sum", "avg", "min", "max")


def aggregate_once(query: Query, cols: list[str], keys: np.ndarray, interner: Any) -> list | None:
    """The ``:find`` rows of an aggregate query from the rows of its first tick (``keys``:
    distinct ``:find`` + ``:with`` id rows, columns ``cols``) in a few numpy passes, when
    every aggregate is ``count``, or ``sum``/``avg``/``min``/``max`` of longs; else None
    (``Groups`` does it). ``q`` uses it; a view keeps ``Groups`` for its updates."""
    elems = query.find.elements
    aggs = [e for e in elems if isinstance(e, FindAggregate)]
    if any(e.fn not in _VECTOR_AGGREGATES or len(e.args) != 1 for e in aggs):
        return None
    if not len(keys):
        return []
    key_pos = [cols.index(e.var.name) for e in elems if not isinstance(e, FindAggregate)]
    if key_pos:
        groups, inv = np.unique(keys[:, key_pos], axis=0, return_inverse=True)
        inv = inv.ravel()
    else:
        groups, inv = np.zeros((1, 0), dtype=np.int64), np.zeros(len(keys), dtype=np.int64)
    counts = np.bincount(inv, minlength=len(groups))
    out = []
    for e in aggs:
        if e.fn == "count":
            out.append(counts.tolist())
            continue
        vals = interner.longs(keys[:, cols.index(e.var.name)])
        if vals is None:
            return None
        if e.fn in ("sum", "avg"):
            if int(np.abs(vals).max()) >= (1 << 62) // len(vals):  # the sum might overflow
                return None
            sums = np.zeros(len(groups), dtype=np.int64)
            np.add.at(sums, inv, vals)
            out.append(sums.tolist() if e.fn == "sum" else
                       [x / c for x, c in zip(sums.tolist(), counts.tolist())])
        else:
            big = np.iinfo(np.int64)
            acc = np.full(len(groups), big.max if e.fn == "min" else big.min, dtype=np.int64)
            (np.minimum if e.fn == "min" else np.maximum).at(acc, inv, vals)
            out.append(acc.tolist())
    plain = interner.decode(groups).tolist() if key_pos else [[]] * len(groups)
    rows = []
    for g in range(len(groups)):
        ks, vs = iter(plain[g]), iter(col[g] for col in out)
        rows.append(tuple(next(vs) if isinstance(e, FindAggregate) else next(ks) for e in elems))
    return rows



class Groups:
    """Per-group state of an aggregate find: the group's rows and running integer sums.

    ``apply(rows, weights)`` takes the change of the set of ``:find`` + ``:with`` rows
    (decoded, with their id tuples) and returns the output rows removed and added; the
    undo log lets a failed transaction put everything back.
    """

    def __init__(self, query: Query, cols: list[str], registry: Any = None):
        self.registry = registry  # aggregates the program registered (queries.functions)
        elems = query.find.elements
        self.keys = [cols.index(e.var.name) for e in elems if not isinstance(e, FindAggregate)]
        self.aggs = [(e.fn, e.args[0].value if len(e.args) == 2 else None, cols.index(e.var.name))
                     for e in elems if isinstance(e, FindAggregate)]
        self.layout = [isinstance(e, FindAggregate) for e in elems]
        self.members: dict[tuple, dict[tuple, tuple]] = {}
        self.sums: dict[tuple, list] = {}
        self.out: dict[tuple, tuple] = {}

    def rows(self) -> list[tuple]:
        return list(self.out.values())

    def apply(self, ids: list[tuple], values: list[tuple], weights: list[int]):
        """Returns ``(removed, added, undo)``; all or nothing: when an aggregate raises
        (``median`` or ``sum`` of strings), the state is put back before the error goes on,
        so the transaction's rollback finds the groups as they were."""
        touched: dict[tuple, tuple | None] = {}
        log: list = []
        try:
            return self._apply(ids, values, weights, touched, log)
        except BaseException:
            self.undo((log, touched))
            raise

    def _apply(self, ids: list[tuple], values: list[tuple], weights: list[int],
               touched: dict, log: list):
        for key, vals, w in zip(ids, values, weights):
            g = tuple(vals[i] for i in self.keys)
            if g not in touched:
                touched[g] = self.out.get(g)
            members = self.members.setdefault(g, {})
            sums = self.sums.setdefault(g, [0] * len(self.aggs))
            sign = 1 if w > 0 else -1
            if sign > 0:
                members[key] = vals
            else:
                del members[key]
            log.append((g, key, vals, sign, list(sums)))
            for j, (fn, _, pos) in enumerate(self.aggs):
                x = vals[pos]
                if fn in ("sum", "avg") and sums[j] is not None:
                    sums[j] = sums[j] + sign * x if type(x) is int else None
        removed, added = [], []
        for g, old in touched.items():
            new = self._row(g)
            if new is None:
                self.out.pop(g, None)
            else:
                self.out[g] = new
            if old != new:
                if old is not None:
                    removed.append(old)
                if new is not None:
                    added.append(new)
        return removed, added, (log, touched)

    def _row(self, g: tuple) -> tuple | None:
        members = self.members[g]
        if not members:
            del self.members[g]
            del self.sums[g]
            return None
        vals, gi, ai = [], iter(g), iter(range(len(self.aggs)))
        for is_agg in self.layout:
            if not is_agg:
                vals.append(next(gi))
                continue
            j = next(ai)
            fn, n, pos = self.aggs[j]
            s = self.sums[g][j]
            if fn == "count":
                vals.append(len(members))
            elif fn == "sum" and s is not None:
                vals.append(s)
            elif fn == "avg" and s is not None:
                vals.append(s / len(members))
            else:
                vals.append(aggregate(fn, n, [r[pos] for r in members.values()], self.registry))
        return tuple(vals)

    def undo(self, undo: Any) -> None:
        log, touched = undo
        for g, key, vals, sign, sums in reversed(log):
            members = self.members.setdefault(g, {})
            if sign > 0:
                del members[key]
            else:
                members[key] = vals
            self.sums[g] = sums
        for g, old in touched.items():
            if not self.members.get(g):
                self.members.pop(g, None)
                self.sums.pop(g, None)
            if old is None:
                self.out.pop(g, None)
            else:
                self.out[g] = old
