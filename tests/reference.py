"""Slow, obvious oracles for traces, circuits and recursion: dicts, loops and networkx.

A reference Z-set is ``{row_tuple: weight}`` without zero weights. Nested-time oracles
build the whole grid of integrated values and take differences by their definition
(``out[e][i] = f(V[e][i]) - f(V[e-1][i]) - f(V[e][i-1]) + f(V[e-1][i-1])``). Others may add
their oracles here too.

Used by ``tests/wcoj/test_trace.py``, ``test_operators.py``, ``test_recursion.py`` and
``test_circuit.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path

# Same reason as in reference_zset.py: keep the project root ahead of tests/ on sys.path.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import networkx as nx  # noqa: E402

__all__ = [
    "Z", "add", "neg", "sub", "distinct", "clean", "delta", "join", "aggregate", "leq",
    "trace_upto", "nested_grid_delta", "reach", "closure",
]

Row = tuple[int, ...]
Z = dict[Row, int]


def clean(z: dict) -> Z:
    """Drop zero weights."""
    return {k: w for k, w in z.items() if w != 0}


def add(*zs: Z) -> Z:
    out: dict = {}
    for z in zs:
        for k, w in z.items():
            out[k] = out.get(k, 0) + w
    return clean(out)


def neg(z: Z) -> Z:
    return {k: -w for k, w in z.items()}


def sub(a: Z, b: Z) -> Z:
    return add(a, neg(b))


def distinct(z: Z) -> Z:
    return {k: 1 for k, w in z.items() if w > 0}


def delta(before: Iterable[Row], after: Iterable[Row]) -> Z:
    """The Z-set that turns the set ``before`` into the set ``after``."""
    b, a = set(before), set(after)
    return {**{r: 1 for r in a - b}, **{r: -1 for r in b - a}}


def join(a: Z, b: Z, n_key: int) -> Z:
    """Nested-loop join of two indexed Z-sets: rows (key, a value, b value)."""
    out: dict = {}
    for ka, wa in a.items():
        for kb, wb in b.items():
            if ka[:n_key] == kb[:n_key]:
                r = ka + kb[n_key:]
                out[r] = out.get(r, 0) + wa * wb
    return clean(out)


def aggregate(z: Z, n_key: int, kind: str, column: int = 0) -> Z:
    """Per key: count (sum of weights), sum, min/max over positive rows, avg as (sum, count)."""
    groups: dict = {}
    for r, w in z.items():
        groups.setdefault(r[:n_key], []).append((r[n_key + column] if kind != "count" else 0, w))
    out = {}
    for k, items in groups.items():
        cnt = sum(w for _, w in items)
        tot = sum(v * w for v, w in items)
        pos = [v for v, w in items if w > 0]
        if kind == "count" and cnt:
            out[k + (cnt,)] = 1
        elif kind == "sum":
            out[k + (tot,)] = 1
        elif kind == "avg" and cnt:
            out[k + (tot, cnt)] = 1
        elif kind in ("min", "max") and pos:
            out[k + ((min if kind == "min" else max)(pos),)] = 1
    return out


def leq(s: tuple, t: tuple) -> bool:
    return all(a <= b for a, b in zip(s, t))


def trace_upto(batches: list[tuple[tuple, Z]], t: tuple) -> Z:
    """Sum of the batches at times ``<= t`` (product order)."""
    return add(*[z for u, z in batches if leq(u, t)])


def nested_grid_delta(x: dict[tuple[int, int], Z], f: Callable[[Z], Z], n_e: int, n_i: int) -> dict:
    """``out[(e, i)]`` = the 2-d difference of ``f`` over the 2-d integral of ``x``."""
    V = {(e, i): add(*[z for (a, b), z in x.items() if a <= e and b <= i]) for e in range(n_e) for i in range(n_i)}
    F = {t: f(v) for t, v in V.items()}
    get = lambda e, i: F[(e, i)] if e >= 0 and i >= 0 else {}  # noqa: E731
    return {(e, i): add(get(e, i), neg(get(e - 1, i)), neg(get(e, i - 1)), get(e - 1, i - 1))
            for e in range(n_e) for i in range(n_i)}


def reach(edges: Iterable[tuple[int, int]], roots: Iterable[int]) -> Z:
    """``{(root, node): 1}`` for every node reachable from a root (itself included)."""
    g = nx.DiGraph()
    g.add_edges_from(edges)
    out = {}
    for r in roots:
        out[(r, r)] = 1
        if r in g:
            out.update({(r, v): 1 for v in nx.descendants(g, r)})
    return out


def closure(edges: Iterable[tuple[int, int]]) -> Z:
    """``{(x, z): 1}`` for every pair joined by a path of one or more edges."""
    g = nx.DiGraph()
    g.add_edges_from(edges)
    out = {}
    for x in g:
        for y in g.successors(x):
            out[(x, y)] = 1
            out.update({(x, z): 1 for z in nx.descendants(g, y)})
    return out
