"""Aggregates of ``:find``: the per-group state of a view, and of ``q``'s first tick.

``Groups`` keeps a view's set of ``:find`` + ``:with`` id rows, columnar and sorted by
group, and each group's output row; a view's transaction recomputes only the groups it
touches (in numpy passes for ``count`` and ``sum``/``avg``/``min``/``max`` of longs and refs), and
a failed transaction puts everything back. ``q`` applies its first tick's rows to a fresh
``Groups``: one implementation of the aggregates for both.

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

__all__ = ["Groups"]


_VECTOR_AGGREGATES = ("count", "sum", "avg", "min", "max")


class Groups:
    """Per-group state of an aggregate find, columnar: the set of ``:find`` + ``:with`` id
    rows in a trace keyed by group (``wcoj.trace``: log-structured, so a change costs about
    its size, not the set's), and each group's output row.

    ``apply(z)`` takes the change of that set (a Z-set of id rows in ``cols`` order, weights
    +1/-1) and recomputes only the groups it touches: ``count``, and ``sum``/``avg``/
    ``min``/``max`` of longs and refs, from running values and the change (numpy passes over all
    touched groups at once); a group whose ``min``/``max`` lost its extreme, and any other
    aggregate, from the group's rows in the trace (others over their decoded values). It
    returns the output rows removed and added, and an undo; all or nothing: when an
    aggregate raises (``median`` or ``sum`` of strings) nothing has changed yet.

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
        agg_index = iter(range(len(elems)))
        self.layout = [("agg", next(agg_index)) if isinstance(e, FindAggregate) else ("key", at[cols.index(e.var.name)])
                       for e in elems]
        self.state = Trace(len(cols), n_key=len(keys))
        self.out: dict[tuple, tuple] = {}  # group key ids -> output row
        self.acc: dict[tuple, list] = {}   # group key ids -> [rows, running value per aggregate]

    def rows(self) -> list[tuple]:
        return list(self.out.values())

    def id_rows(self) -> ZSet:
        """The set of ``:find`` + ``:with`` id rows, in ``cols`` order."""
        z = self.state.select()
        return ZSet.from_arrays(z.keys[:, self.inv], z.weights, arity=len(self.perm))

    def apply(self, z: ZSet):
        """``(removed, added, undo)``: the output rows the change ``z`` removes and adds.

        A touched group's ``count``, and ``sum``/``avg``/``min``/``max`` of longs and refs, follow
        from its running values and the change alone; only a group whose ``min``/``max``
        lost its extreme, or that has another aggregate or values that are not ints,
        reads its rows from the trace."""
        if not len(z):
            return [], [], None
        zk, w = z.keys[:, self.perm], z.weights
        state = self.state.append_untimed(ZSet.from_arrays(zk, w, arity=len(self.perm)))
        g = self.n_group
        if g:  # the touched groups' keys (sorted, unique) and each changed row's group
            touched = ZSet.from_arrays(zk[:, :g], np.ones(len(zk), dtype=np.int64), arity=g).keys
            have, want = _comparable(touched, zk[:, :g])
            at = np.searchsorted(have, want)
        else:
            touched, at = np.zeros((1, 0), dtype=np.int64), np.zeros(len(zk), dtype=np.int64)
        keys = list(map(tuple, touched.tolist()))
        dn = np.zeros(len(keys), dtype=np.int64)
        np.add.at(dn, at, w)
        deltas = [self._delta(fn, arg, zk[:, pos], w, at, len(keys)) for fn, arg, pos in self.aggs]
        prev = [self.acc.get(t) for t in keys]
        counts = [(p[0] if p else 0) + k for p, k in zip(prev, dn.tolist())]
        running = [_steps(fn, [p[1 + j] if p else _EMPTY for p in prev], d)
                   for j, ((fn, _, _), d) in enumerate(zip(self.aggs, deltas))]
        acc, need = {}, []
        for i, t in enumerate(keys):
            if counts[i] <= 0:
                acc[t] = None
                continue
            vals = [counts[i]] + [r[i] for r in running]
            acc[t] = vals
            if any(v is None for v in vals):
                need.append(i)
        if need:  # read these groups' rows (may raise: nothing has changed yet)
            self._from_rows(state, touched[need], [keys[i] for i in need], acc)
        outs = {t: None if a is None else self._outputs(a) for t, a in acc.items()}
        key_vals = dict(zip(keys, self.interner.decode(touched).tolist())) if g else {(): []}
        removed, added, old_out, old_acc = [], [], {}, {}
        for t in keys:
            prev, row = self.out.get(t), outs[t]
            if row is not None:
                row = tuple(key_vals[t][p] if kind == "key" else row[p] for kind, p in self.layout)
            old_out[t], old_acc[t] = prev, self.acc.get(t)
            if row is None:
                self.out.pop(t, None)
                self.acc.pop(t, None)
            else:
                self.out[t], self.acc[t] = row, acc[t]
            if prev != row:
                if prev is not None:
                    removed.append(prev)
                if row is not None:
                    added.append(row)
        undo = (self.state, old_out, old_acc)
        self.state = state
        return removed, added, undo

    def _delta(self, fn: str, arg: Any, ids: np.ndarray, w: np.ndarray, at: np.ndarray, n_groups: int):
        """What the change does to a running aggregate, per touched group, or None when it
        has none (the group's rows decide): ``sum``/``avg``, the sum of weight times value;
        ``min``/``max``, the extreme added and the extreme retracted (with flags)."""
        if arg is not None or fn not in _VECTOR_AGGREGATES or fn == "count":
            return None
        vals = self.interner.ints(ids)
        if vals is None:
            return None
        if fn in ("sum", "avg"):
            if not _sum_fits(vals):
                return None
            d = np.zeros(n_groups, dtype=np.int64)
            np.add.at(d, at, w * vals)
            return d.tolist()
        big = np.iinfo(np.int64)
        ext, init = (np.maximum, big.min) if fn == "max" else (np.minimum, big.max)
        out = []
        for sel in (w > 0, w < 0):
            e = np.full(n_groups, init, dtype=np.int64)
            ext.at(e, at[sel], vals[sel])
            hit = np.zeros(n_groups, dtype=bool)
            hit[at[sel]] = True
            out += [e.tolist(), hit.tolist()]
        return out

    def _from_rows(self, state: Trace, touched: np.ndarray, keys: list, acc: dict) -> None:
        """Fill in ``acc``'s unknown values of the groups ``touched`` from their rows."""
        g = self.n_group
        new = state.select(None, ZSet(touched, np.ones(len(touched), dtype=np.int64))) if g else state.select()
        if len(new) and (new.weights != 1).any():
            raise QueryError("internal: an aggregate's rows are not a set")
        if g:
            have, want = _comparable(new.keys[:, :g], touched)
            lo, hi = np.searchsorted(have, want, "left"), np.searchsorted(have, want, "right")
        else:
            lo, hi = np.zeros(1, dtype=np.int64), np.full(1, len(new), dtype=np.int64)
        idx = ranges_to_indices(lo, hi)  # the groups' rows, group after group
        n = (hi - lo).tolist()
        starts = np.cumsum(hi - lo) - (hi - lo)
        for j, (fn, arg, pos) in enumerate(self.aggs):
            todo = [i for i, t in enumerate(keys) if acc[t][1 + j] is None]
            if not todo:
                continue
            ids = new.keys[idx, pos]
            vals = self.interner.ints(ids) if arg is None and fn in _VECTOR_AGGREGATES else None
            if vals is not None and fn in ("sum", "avg") and not _sum_fits(vals):
                vals = None
            dec = None
            for i in todo:
                s, k = int(starts[i]), n[i]
                if vals is not None:  # a running value again
                    part = vals[s:s + k]
                    acc[keys[i]][1 + j] = int(part.sum() if fn in ("sum", "avg") else
                                              part.max() if fn == "max" else part.min())
                else:  # this aggregate's output itself, for this transaction only
                    if dec is None:
                        dec = self.interner.decode(ids).tolist()
                    acc[keys[i]][1 + j] = _Fixed(aggregate(fn, arg, dec[s:s + k], self.registry))

    def _outputs(self, a: list) -> list:
        """The aggregates' outputs from a group's values ``[n, running value per aggregate]``."""
        n, out = a[0], []
        for (fn, _, _), v in zip(self.aggs, a[1:]):
            if isinstance(v, _Fixed):
                out.append(v.value)
            elif fn == "count":
                out.append(n)
            elif fn == "avg":
                out.append(v / n)
            else:
                out.append(v)
        return out

    def undo(self, undo: Any) -> None:
        if undo is None:
            return
        self.state, old_out, old_acc = undo
        for g, prev in old_out.items():
            if prev is None:
                self.out.pop(g, None)
                self.acc.pop(g, None)
            else:
                self.out[g], self.acc[g] = prev, old_acc[g]


def _comparable(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``a`` and ``b`` (same width) as one int64 each that compares like the rows
    (one column: the column itself)."""
    if a.shape[1] == 1:
        return a[:, 0], b[:, 0]
    return row_ids(np.ascontiguousarray(a), np.ascontiguousarray(b))


def _sum_fits(vals: np.ndarray) -> bool:
    """Whether any sum of ``vals`` (or of part of them) fits in int64."""
    return not len(vals) or int(np.abs(vals).max()) < (1 << 62) // len(vals)


class _Fixed:
    """An aggregate's output computed from its group's rows, with no running value."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


_EMPTY = object()  # a group's running value before its first row


def _steps(fn: str, prev: list, d: Any) -> list:
    """Each touched group's running value after the change (``d`` from ``Groups._delta``,
    ``prev`` the values before it), or None where the group's rows must decide."""
    if fn == "count":
        return [0] * len(prev)  # (the count is the group's n)
    if d is None:
        return [None] * len(prev)
    if fn in ("sum", "avg"):
        return [None if v is None or type(v) is _Fixed else (0 if v is _EMPTY else v) + x
                for v, x in zip(prev, d)]
    best = max if fn == "max" else min
    out = []
    for v, added, any_added, gone, any_gone in zip(prev, *d):
        if v is None or type(v) is _Fixed or (v is not _EMPTY and any_gone and gone == v):
            out.append(None)  # unknown, or the extreme itself may be gone: the rows decide
        elif v is _EMPTY:
            out.append(added if any_added else None)
        else:
            out.append(best(v, added) if any_added else v)
    return out
