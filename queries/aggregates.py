"""Aggregates of ``:find``: per-group state kept by a view, and a first tick's groups at once.

``Groups`` keeps a view's set of ``:find`` + ``:with`` id rows, columnar and sorted by
group, and each group's output row; a view's transaction recomputes only the groups it
touches (in numpy passes for ``count`` and ``sum``/``avg``/``min``/``max`` of longs), and
a failed transaction puts everything back. ``aggregate_once`` computes the groups of a
first tick (what ``q`` answers) in a few numpy passes when every aggregate allows it.

Relies on ``queries.functions`` (the aggregates); used by ``queries.database``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from queries.ast import FindAggregate, Query
from queries.functions import aggregate
from wcoj.errors import QueryError
from wcoj.trace import Trace, ranges_to_indices, row_ids
from wcoj.zset import ZSet

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
    """Per-group state of an aggregate find, columnar: the set of ``:find`` + ``:with`` id
    rows in a trace keyed by group (``wcoj.trace``: log-structured, so a change costs about
    its size, not the set's), and each group's output row.

    ``apply(z)`` takes the change of that set (a Z-set of id rows in ``cols`` order, weights
    +1/-1) and recomputes only the groups it touches, over their rows: ``count``, and
    ``sum``/``avg``/``min``/``max`` of longs, in numpy passes over all touched groups at
    once; any other aggregate per touched group over its decoded values. It returns the
    output rows removed and added, and an undo; all or nothing: when an aggregate raises
    (``median`` or ``sum`` of strings) nothing has changed yet.

    >>> from queries.parse import parse_query
    >>> from indexes.interner import Interner
    >>> it = Interner()
    >>> g = Groups(parse_query('[:find ?g (count ?x) (max ?x) :where [?e :a ?g] [?e :b ?x]]'),
    ...            ["?g", "?x"], interner=it)
    >>> rows = ZSet.from_rows([(it.encode(1), it.encode(5)), (it.encode(1), it.encode(7))])
    >>> g.apply(rows)[:2], g.rows()
    (([], [(1, 2, 7)]), [(1, 2, 7)])
    """

    def __init__(self, query: Query, cols: list[str], registry: Any = None, interner: Any = None):
        self.registry, self.interner = registry, interner
        elems = query.find.elements
        keys = list(dict.fromkeys(cols.index(e.var.name) for e in elems if not isinstance(e, FindAggregate)))
        self.n_group = len(keys)
        self.perm = keys + [i for i in range(len(cols)) if i not in keys]  # stored column order
        self.inv = np.argsort(self.perm)
        at = {c: self.perm.index(c) for c in range(len(cols))}
        self.aggs = [(e.fn, e.args[0].value if len(e.args) == 2 else None, at[cols.index(e.var.name)])
                     for e in elems if isinstance(e, FindAggregate)]
        # per find element: ("agg", j) or ("key", position among the group's columns)
        self.layout = [("agg", None) if isinstance(e, FindAggregate) else ("key", at[cols.index(e.var.name)])
                       for e in elems]
        self.state = Trace(len(cols), n_key=len(keys))
        self.out: dict[tuple, tuple] = {}  # group key ids -> output row

    def rows(self) -> list[tuple]:
        return list(self.out.values())

    def id_rows(self) -> ZSet:
        """The set of ``:find`` + ``:with`` id rows, in ``cols`` order."""
        z = self.state.select()
        return ZSet.from_arrays(z.keys[:, self.inv], z.weights, arity=len(self.perm))

    def apply(self, z: ZSet):
        """``(removed, added, undo)``: the output rows the change ``z`` removes and adds."""
        if not len(z):
            return [], [], None
        zk = z.keys[:, self.perm]
        state = self.state.append_untimed(ZSet.from_arrays(zk, z.weights, arity=len(self.perm)))
        g = self.n_group
        if g:  # the touched groups' keys, sorted and unique, then their rows, by group
            groups = ZSet.from_arrays(zk[:, :g], np.ones(len(zk), dtype=np.int64), arity=g)
            touched = groups.keys
            new = state.select(None, groups)
        else:
            touched, new = np.zeros((1, 0), dtype=np.int64), state.select()
        if len(new) and (new.weights != 1).any():
            raise QueryError("internal: an aggregate's rows are not a set")
        if g and len(new):
            if g == 1:
                have, want = new.keys[:, 0], touched[:, 0]
            else:
                have, want = row_ids(np.ascontiguousarray(new.keys[:, :g]), touched)
            lo, hi = np.searchsorted(have, want, "left"), np.searchsorted(have, want, "right")
        else:
            lo, hi = np.zeros(len(touched), dtype=np.int64), np.full(len(touched), len(new), dtype=np.int64)
        outs = self._outputs(new.keys, touched, lo, hi)  # may raise: nothing changed yet
        removed, added, old = [], [], {}
        for t, row in zip(map(tuple, touched.tolist()), outs):
            prev = self.out.get(t)
            old[t] = prev
            if row is None:
                self.out.pop(t, None)
            else:
                self.out[t] = row
            if prev != row:
                if prev is not None:
                    removed.append(prev)
                if row is not None:
                    added.append(row)
        undo = (self.state, old)
        self.state = state
        return removed, added, undo

    def _outputs(self, keys: np.ndarray, touched: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list:
        """Each touched group's output row (None for a group left without rows)."""
        n = hi - lo
        idx = ranges_to_indices(lo, hi)  # the touched groups' rows, group after group
        starts = np.cumsum(n) - n
        full = n > 0
        cols = []
        for fn, arg, pos in self.aggs:
            col = None
            ids = keys[idx, pos]
            if fn == "count" and arg is None:
                col = n.tolist()
            elif fn in _VECTOR_AGGREGATES and arg is None:
                vals = self.interner.longs(ids)
                if vals is not None and (fn in ("min", "max") or not len(vals)
                                         or int(np.abs(vals).max()) < (1 << 62) // len(vals)):
                    col = [None] * len(n)
                    if len(vals):
                        ufunc = {"sum": np.add, "avg": np.add, "min": np.minimum, "max": np.maximum}[fn]
                        red = ufunc.reduceat(vals, starts[full]).tolist()
                        for i, r in zip(np.flatnonzero(full).tolist(), red):
                            col[i] = r / int(n[i]) if fn == "avg" else r
            if col is None:  # any other aggregate: per group, over its decoded values
                dec = self.interner.decode(ids).tolist() if len(ids) else []
                col = [aggregate(fn, arg, dec[s:s + k], self.registry) if k else None
                       for s, k in zip(starts.tolist(), n.tolist())]
            cols.append(col)
        key_vals = self.interner.decode(touched).tolist() if self.n_group else [[]] * len(touched)
        out = []
        for i, k in enumerate(n.tolist()):
            if not k:
                out.append(None)
                continue
            vals, aggs = [], iter(cols)
            for kind, p in self.layout:
                vals.append(next(aggs)[i] if kind == "agg" else key_vals[i][p])
            out.append(tuple(vals))
        return out

    def undo(self, undo: Any) -> None:
        if undo is None:
            return
        state, old = undo
        self.state = state
        for g, prev in old.items():
            if prev is None:
                self.out.pop(g, None)
            else:
                self.out[g] = prev
