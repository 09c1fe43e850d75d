"""Slow, obvious oracles for Z-sets and the weight kernels: plain dicts and Python ints.

A reference Z-set is ``{row_tuple: weight}`` with no zero weights; an indexed one is the
same dict whose rows start with ``n_key`` key columns. Python ints never wrap, so every
oracle decides int64 overflow exactly and raises ``Overflow`` (carrying the row) where
the engine must raise ``WeightOverflowError``. The ``*_into`` twins mirror
``wcoj.kernels.zsets``: same arguments minus ``out``, returning
``(values, status)`` where ``status`` is the first offending row or segment, or -1.

Used by ``tests/wcoj`` and, as the "dict-of-tuples Z-set", by ``benchmarks/bench_zset``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "I64_MIN", "I64_MAX", "Overflow", "fits",
    "consolidate", "plus", "negate", "minus", "scale", "distinct", "positive",
    "filter_rows", "map_rows", "select", "index_with", "join", "aggregate",
    "multiply_into",
    "segment_sum_into", "segment_dot_into", "run_sums_into",
    "cross_products",
]

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
Row = tuple[int, ...]
Z = dict[Row, int]


class Overflow(Exception):
    """An int64 weight overflow the engine must refuse; ``.row`` says where."""

    def __init__(self, row: object):
        super().__init__(f"overflow at {row!r}")
        self.row = row


def fits(x: int) -> bool:
    """True when the Python int ``x`` is an int64."""
    return I64_MIN <= x <= I64_MAX


# ---------------------------------------------------------------- dict-of-tuples Z-sets
def consolidate(rows: Iterable[Sequence[int]], weights: Iterable[int]) -> Z:
    """Add the weights of equal rows in input order, drop 0s; the result is sorted.

    Every partial sum must fit; ``Overflow`` names the smallest row whose sum does not
    (the engine reports the first offending row in sorted order too).
    """
    parts: dict[Row, list[int]] = {}
    for r, w in zip(rows, weights):
        parts.setdefault(tuple(r), []).append(w)
    out: Z = {}
    for r in sorted(parts):
        acc = 0
        for w in parts[r]:
            acc += w
            if not fits(acc):
                raise Overflow(r)
        if acc:
            out[r] = acc
    return out


def plus(a: Z, b: Z) -> Z:
    return consolidate(list(a) + list(b), list(a.values()) + list(b.values()))


def negate(a: Z) -> Z:
    return scale(a, -1)


def minus(a: Z, b: Z) -> Z:
    return plus(a, negate(b))


def scale(a: Z, c: int) -> Z:
    out = {}
    for r, w in sorted(a.items()):
        if not fits(w * c):
            raise Overflow(r)
        if w * c:
            out[r] = w * c
    return out


def distinct(a: Z) -> Z:
    return {r: 1 for r, w in a.items() if w > 0}


def positive(a: Z) -> Z:
    return {r: w for r, w in a.items() if w > 0}


def filter_rows(a: Z, pred: Callable[[Row], bool]) -> Z:
    return {r: w for r, w in a.items() if pred(r)}


def map_rows(a: Z, fn: Callable[[Row], Row]) -> Z:
    return consolidate([tuple(fn(r)) for r in a], list(a.values()))


def select(a: Z, cols: Sequence[int]) -> Z:
    return map_rows(a, lambda r: tuple(r[c] for c in cols))


def index_with(a: Z, cols: Sequence[int]) -> Z:
    """Rows ``(key..., whole row...)``; the indexed Z-set's ``n_key`` is ``len(cols)``."""
    return {tuple(r[c] for c in cols) + r: w for r, w in a.items()}


def join(a: Z, b: Z, n_key: int) -> Z:
    """Nested loops: ``out[(k, u, v)] += a[(k, u)] * b[(k, v)]``."""
    out: Z = {}
    for ra, wa in sorted(a.items()):
        for rb, wb in sorted(b.items()):
            if ra[:n_key] == rb[:n_key]:
                row = ra + rb[n_key:]
                if not fits(wa * wb):
                    raise Overflow(row)
                out[row] = out.get(row, 0) + wa * wb
    return {r: w for r, w in sorted(out.items()) if w}


def aggregate(a: Z, n_key: int, kind: str, column: int = 0) -> Z:
    """Per key: count (sum of weights, 0 dropped), sum (value * weight), min/max over
    positive rows, avg as ``(sum, count)`` with count 0 dropped; weight 1 each.

    ``Overflow`` names the first group (in key order) whose count or sum does not fit."""
    groups: dict[Row, list[tuple[int, int]]] = {}
    for r, w in sorted(a.items()):
        groups.setdefault(r[:n_key], []).append((r[n_key + column] if kind != "count" else 0, w))
    out: Z = {}
    for g, items in groups.items():
        # like the kernels: every product and partial sum, in row order, must fit
        counts, _ = segment_sum_into([w for _, w in items], [0])
        totals, _ = segment_dot_into([v for v, _ in items], [w for _, w in items], [0])
        if (kind in ("count", "avg") and not counts) or (kind in ("sum", "avg") and not totals):
            raise Overflow(g)
        count, total = (counts or [0])[0], (totals or [0])[0]
        pos = [v for v, w in items if w > 0]
        if kind == "count" and count:
            out[g + (count,)] = 1
        elif kind == "sum":
            out[g + (total,)] = 1
        elif kind == "avg" and count:
            out[g + (total, count)] = 1
        elif kind in ("min", "max") and pos:
            out[g + ((min if kind == "min" else max)(pos),)] = 1
    return out


# ---------------------------------------------------------------- kernel twins
def _elementwise(values: Iterable[int]) -> tuple[list[int], int]:
    out = []
    for i, x in enumerate(values):
        if not fits(x):
            return out, i
        out.append(x)
    return out, -1


def multiply_into(a: Sequence[int], b: Sequence[int]) -> tuple[list[int], int]:
    return _elementwise(int(x) * int(y) for x, y in zip(a, b))


def _segments(n: int, starts: Sequence[int]) -> list[range]:
    ends = list(starts[1:]) + [n]
    return [range(int(lo), int(hi)) for lo, hi in zip(starts, ends)]


def segment_sum_into(w: Sequence[int], starts: Sequence[int]) -> tuple[list[int], int]:
    """Every running sum (and so the total) of every segment must fit."""
    out = []
    for s, seg in enumerate(_segments(len(w), starts)):
        acc = 0
        for i in seg:
            acc += int(w[i])
            if not fits(acc):
                return out, s
        out.append(acc)
    return out, -1


def segment_dot_into(v: Sequence[int], w: Sequence[int],
                     starts: Sequence[int]) -> tuple[list[int], int]:
    """Every product and every running sum of products must fit."""
    out = []
    for s, seg in enumerate(_segments(len(w), starts)):
        acc = 0
        for i in seg:
            p = int(v[i]) * int(w[i])
            acc += p
            if not fits(p) or not fits(acc):
                return out, s
        out.append(acc)
    return out, -1


def run_sums_into(keys: Sequence[int], w: Sequence[int]) -> tuple[list[tuple[int, int]], int]:
    """``[(first position, sum)]`` of the runs of equal sorted ``keys`` whose sum of ``w``
    is not 0; the status is the first position of a run whose running sum overflows."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(keys)
    while i < n:
        j, acc = i, 0
        while j < n and keys[j] == keys[i]:
            acc += int(w[j])
            if not fits(acc):
                return out, i
            j += 1
        if acc:
            out.append((i, acc))
        i = j
    return out, -1


def cross_products(a_lo, a_n, b_lo, b_n, wa, wb) -> tuple[list[tuple[int, int, int]], int]:
    """``[(i, j, wa[i] * wb[j])]`` over every matched run pair, row-major; the status is
    the first position whose product overflows."""
    out = []
    for r in range(len(a_lo)):
        for i in range(a_lo[r], a_lo[r] + a_n[r]):
            for j in range(b_lo[r], b_lo[r] + b_n[r]):
                p = int(wa[i]) * int(wb[j])
                if not fits(p):
                    return out, len(out)
                out.append((i, j, p))
    return out, -1
