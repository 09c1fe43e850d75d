"""Predicates and functions over whole columns of longs, without a Python call per row.

``[(< ?a ?b)]``, ``[(= ?x 5)]``, ``[(+ ?x 1) ?y]``, ``[(quot ?n 2) ?h]``: the commonest
clauses of a query, over long values, run as numpy passes over the id columns of a
``RowMap``'s batch (a long's id is its value plus a bias, ``indexes.interner``). Every
other case answers ``None`` and the row route evaluates it, value by value, with the same
function table: a column holding anything but longs (refs, doubles, strings ...), a
constant that is not a long, a result outside the longs kept inline (|v| >= 2**55, which
the interner stores in a table), a division by zero (the row route raises the error).
So the two routes give the same rows; ``tests/queries/test_vectorised.py`` checks that on
random columns.

Relies on ``indexes.interner``'s id layout and ``queries.ast``; used by
``queries.circuits``.

>>> from queries.ast import Const, Var
>>> from indexes.interner import Interner
>>> it = Interner()
>>> keys = it.encode_many(np.array([1, 5, 7, 2])).reshape(2, 2)    # rows (1, 5), (7, 2)
>>> keep = predicate("<", [Var("a"), Var("b")], ("a", "b"))
>>> keep(keys).tolist()
[True, False]
>>> plus = function("+", [Var("a"), Const(10)], ("a", "b"))
>>> it.decode(plus(keys)).tolist()
[11, 17]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from indexes.interner import LONG, TAG_SHIFT
from queries.ast import Const, Var

__all__ = ["predicate", "function"]

_BIAS = 1 << 55
_PAYLOAD = (1 << TAG_SHIFT) - 1
_LONG = np.int64(LONG << TAG_SHIFT)
_EXACT = float(1 << 54)  # a float64 product below this is a long's exactly, within int64
_MAX_ARGS = 16  # a sum of this many longs below 2**55 stays within int64

_COMPARE = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal,
            "==": np.equal, "=": np.equal}
_NOT_EQUAL = {"not=", "!="}
_ARITH = {"+", "-", "*", "inc", "dec", "quot", "rem", "mod"}


def _getters(args: list, vars_: tuple) -> list[Callable] | None:
    """Per argument, a function of the batch's ids giving its longs (a column, or a
    constant), or None when an argument cannot be a long."""
    out: list[Callable] = []
    for a in args:
        if isinstance(a, Var) and a.name in vars_:
            i = vars_.index(a.name)
            out.append(lambda keys, i=i: keys[:, i])
        elif isinstance(a, Const) and type(a.value) is int and -_BIAS <= a.value < _BIAS:
            out.append(lambda keys, v=_LONG | np.int64(a.value + _BIAS): v)
        else:
            return None
    return out


def _longs(getters: list[Callable], keys) -> list | None:
    """The arguments' longs for this batch, or None when a column holds another type."""
    out = []
    for g in getters:
        ids = g(keys)
        if isinstance(ids, np.ndarray) and not np.all((ids >> TAG_SHIFT) == LONG):
            return None
        out.append((ids & _PAYLOAD) - _BIAS)
    return out


def predicate(fn: str, args: list, vars_: tuple) -> Callable[[Any], Any] | None:
    """``keep(keys)``: the batch's rows that pass ``[(fn args...)]`` (a boolean mask), or
    None for the row route; or None when ``fn`` has no column form."""
    getters = _getters(args, vars_) if fn in _COMPARE or fn in _NOT_EQUAL else None
    if not getters:
        return None
    op = np.equal if fn in _NOT_EQUAL else _COMPARE[fn]

    def keep(keys):
        xs = _longs(getters, keys)
        if xs is None:
            return None
        mask = np.ones(keys.shape[0], dtype=bool)
        for a, b in zip(xs, xs[1:]):
            mask &= op(a, b)
        return ~mask if fn in _NOT_EQUAL else mask
    return keep


def function(fn: str, args: list, vars_: tuple) -> Callable[[Any], Any] | None:
    """``value(keys)``: the ids of ``(fn args...)`` per row of the batch, or None for the
    row route; or None when ``fn`` has no column form."""
    if fn not in _ARITH or len(args) > _MAX_ARGS or (fn in ("quot", "rem", "mod") and len(args) != 2) \
            or (fn in ("inc", "dec") and len(args) != 1) or (fn == "-" and not args):
        return None
    getters = _getters(args, vars_)
    if getters is None:
        return None

    def value(keys):
        xs = _longs(getters, keys)
        if xs is None:
            return None
        n = keys.shape[0]
        xs = [np.broadcast_to(x, n) for x in xs]
        if fn == "+":
            r = np.zeros(n, dtype=np.int64)
            for x in xs:
                r = r + x
        elif fn == "-":
            r = -xs[0] if len(xs) == 1 else xs[0] - sum(xs[1:], np.zeros(n, dtype=np.int64))
        elif fn == "*":
            if np.any(np.abs(np.prod([x.astype(np.float64) for x in xs], axis=0)) >= _EXACT):
                return None  # may leave the inline longs, or int64: the row route is exact
            r = np.ones(n, dtype=np.int64)
            for x in xs:
                r = r * x
        elif fn in ("inc", "dec"):
            r = xs[0] + (1 if fn == "inc" else -1)
        else:
            a, b = xs
            if np.any(b == 0):
                return None  # the row route raises the error
            if fn == "mod":
                r = np.mod(a, b)
            else:
                q = np.abs(a) // np.abs(b)
                q = np.where((a >= 0) == (b >= 0), q, -q)
                r = q if fn == "quot" else a - b * q
        r = np.asarray(r, dtype=np.int64)
        if r.size and (r.min() < -_BIAS or r.max() >= _BIAS):
            return None
        return _LONG | (r + _BIAS)
    return value
