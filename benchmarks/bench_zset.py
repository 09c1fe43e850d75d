"""Z-set consolidate / plus / join against a dict-of-tuples Z-set and a bare ``np.lexsort``,
then one reachability tick against recomputation from scratch.

    python -m benchmarks.bench_zset --sizes 1e4 1e5 1e6 1e7 --repeat 5 --seed 0

Inputs are seeded random int64 rows of 2 columns with node-id-like values in [0, 1e6):
20% of the rows repeat another row and weights are drawn from {-1, 1, 1, 1, 2}, so
consolidation both adds and cancels. Per size and operation it prints our time, the
pure-Python dict-of-tuples Z-set (``{row_tuple: weight}``; skipped past 1e6 rows or when
it would take more than ~60 s), a bare ``np.lexsort`` of the same keys, and the ratios
dict/ours (goal: >= 30x at 1e6) and ours/lexsort (goal: consolidate <= 2x). The Python
rows of the dict side are built before timing; its weights are unchecked Python ints.

- consolidate: n raw rows -> ``wcoj.consolidate``; lexsort sorts the n keys.
- plus: two consolidated Z-sets of about n rows each -> ``a + b``; lexsort sorts the 2n keys.
- join: R(x, k) and S(k, y), n rows each, join key k in [0, n) so the output has about n
  rows (column n_out); both sides are indexed on k before timing, as a circuit's
  ``join_stream`` sees them; lexsort sorts the 2n input keys (what a sort-merge join must
  at least pay).

Reachability (``wcoj.recursion.reachability_circuit``, the circuit of ``queries.demo``):
a random graph with m edges over m/2 nodes (out-degree 2, so the 4 roots reach most of
it) is loaded in tick 0; a tick then
deletes ``--changes``/2 existing edges and inserts as many new ones. "tick" is the median
over ``--repeat`` such ticks; "recompute" runs a fresh circuit on the whole edge set after
the change (the median over ``--repeat`` runs).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from benchmarks._common import (Results, add_json_arg, base_parser, fmt_ms, fmt_ratio, header, median_ms,
                                parse_size, row_printer)
from wcoj import IndexedZSet, ZSet, consolidate

N_NODES = 1_000_000
DICT_MAX_ROWS = 1_000_000
DICT_BUDGET_MS = 60_000.0


# ---------------------------------------------------------------- inputs
def raw_rows(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n rows of 2 columns in [0, N_NODES), 20% of them copies of others, and weights."""
    n_dup = n // 5
    base = rng.integers(0, N_NODES, size=(n - n_dup, 2), dtype=np.int64)
    keys = np.concatenate([base, base[rng.integers(0, base.shape[0], n_dup)]])
    keys = keys[rng.permutation(n)]
    weights = rng.choice(np.array([-1, 1, 1, 1, 2], dtype=np.int64), size=n)
    return keys, weights


def join_inputs(n: int, rng: np.random.Generator) -> tuple[IndexedZSet, IndexedZSet]:
    """R(x, k) indexed on k and S(k, y) indexed on k; about n output rows."""
    r = np.stack([rng.integers(0, N_NODES, n), rng.integers(0, n, n)], axis=1)
    s = np.stack([rng.integers(0, n, n), rng.integers(0, N_NODES, n)], axis=1)
    return ZSet.from_arrays(r).index_with([1]), ZSet.from_arrays(s).index_with([0])


# ---------------------------------------------------------------- the dict-of-tuples Z-set
def dict_consolidate(rows: list[tuple], weights: list[int]) -> dict:
    d: dict = {}
    get = d.get
    for r, w in zip(rows, weights):
        d[r] = get(r, 0) + w
    return {r: w for r, w in d.items() if w}


def dict_plus(a: dict, b: dict) -> dict:
    out = dict(a)
    get = out.get
    for r, w in b.items():
        s = get(r, 0) + w
        if s:
            out[r] = s
        else:
            del out[r]
    return out


def dict_index(z: ZSet, col: int) -> dict:
    """``{key: [(row, weight), ...]}``, the dict version of ``index_with([col])``."""
    out: dict = {}
    for r, w in z.to_rows():
        out.setdefault(r[col], []).append((r, w))
    return out


def dict_join(a: dict, b: dict) -> dict:
    out = {}
    for k, la in a.items():
        lb = b.get(k)
        if lb:
            for ra, wa in la:
                for rb, wb in lb:
                    out[(k,) + ra + rb] = wa * wb
    return out


# ---------------------------------------------------------------- the table
def lexsort(keys: np.ndarray) -> np.ndarray:
    return np.lexsort(keys.T[::-1])


def zset_rows(sizes: list[int], repeat: int, seed: int, results: Results | None = None) -> None:
    row = row_printer(["op", "n", "n_out", "ours_ms", "dict_ms", "lexsort_ms", "dict/ours", "ours/lexsort"],
                      [11, 8, 8, 8, 8, 8, 8, 8])

    def emit(op: str, n: int, n_out: int, ours: float, py: float | None, ref: float) -> None:
        row(op, n, n_out, fmt_ms(ours), fmt_ms(py), fmt_ms(ref), fmt_ratio(py, ours), fmt_ratio(ours, ref))
        if results is not None:
            results.add("zset", op=op, n=n, n_out=n_out, ours_ms=ours, dict_ms=py, lexsort_ms=ref)

    last_dict: dict[str, tuple[int, float]] = {}

    def dict_ms(op: str, n: int, prepare: Callable[[], Callable[[], object]]) -> float | None:
        """Median ms of the dict version (``prepare`` builds its Python inputs, untimed)."""
        if n > DICT_MAX_ROWS:
            return None
        if op in last_dict:
            n0, ms0 = last_dict[op]
            if ms0 * n / n0 * (repeat + 1) > DICT_BUDGET_MS:
                return None
        ms = median_ms(prepare(), repeat, warmup=0)
        last_dict[op] = (n, ms)
        return ms

    for n in sizes:
        rng = np.random.default_rng(seed)
        keys, weights = raw_rows(n, rng)

        out = consolidate(keys, weights)
        ours = median_ms(lambda: consolidate(keys, weights), repeat)
        ref = median_ms(lambda: lexsort(keys), repeat)
        py = dict_ms("consolidate", n, lambda: partial(dict_consolidate, list(map(tuple, keys.tolist())),
                                                       weights.tolist()))
        emit("consolidate", n, len(out[1]), ours, py, ref)

        a = ZSet(*out)
        b = ZSet.from_arrays(*raw_rows(n, rng))
        both = np.concatenate([a.keys, b.keys])
        ours = median_ms(lambda: a + b, repeat)
        ref = median_ms(lambda: lexsort(both), repeat)
        py = dict_ms("plus", n, lambda: partial(dict_plus, a.to_dict(), b.to_dict()))
        emit("plus", n, len(a + b), ours, py, ref)

        ia, ib = join_inputs(n, rng)
        both = np.concatenate([ia.zset.keys[:, 1:], ib.zset.keys[:, 1:]])
        n_out = len(ia.join(ib))
        ours = median_ms(lambda: ia.join(ib), repeat)
        ref = median_ms(lambda: lexsort(both), repeat)
        py = dict_ms("join", n, lambda: partial(dict_join, dict_index(ia.zset, 0), dict_index(ib.zset, 0)))
        emit("join", n, n_out, ours, py, ref)


# ---------------------------------------------------------------- reachability
def reach_rows(edge_counts: list[int], changes: int, repeat: int, seed: int,
               results: Results | None = None) -> None:
    from queries.demo import random_graph
    from wcoj.recursion import reachability_circuit

    row = row_printer(["edges", "changes", "reached", "tick0_ms", "tick_ms", "recompute_ms", "recompute/tick"],
                      [8, 7, 7, 8, 8, 8, 8])
    for m in edge_counts:
        rng = np.random.default_rng(seed)
        n_nodes = m // 2  # out-degree 2: the roots reach a giant component
        edges = random_graph(n_nodes, m, rng)
        roots = ZSet.from_arrays(rng.choice(n_nodes, 4, replace=False).reshape(-1, 1))
        circuit = reachability_circuit()
        circuit.step({"edges": ZSet.from_arrays(edges), "roots": roots})  # warm-up (JIT)
        circuit = reachability_circuit()
        t0 = _now()
        n_reached = len(circuit.step({"edges": ZSet.from_arrays(edges), "roots": roots})["reach"])
        tick0 = _now() - t0
        ticks = []
        for _ in range(max(repeat, 1)):
            delta, edges = _edge_change(edges, n_nodes, changes, rng)
            t0 = _now()
            circuit.step({"edges": delta})
            ticks.append(_now() - t0)
        final = ZSet.from_arrays(edges)
        recompute = median_ms(lambda: reachability_circuit().step({"edges": final, "roots": roots}),
                              repeat, warmup=0)
        tick = float(np.median(ticks))
        row(m, changes, n_reached, fmt_ms(tick0), fmt_ms(tick), fmt_ms(recompute), fmt_ratio(recompute, tick))
        if results is not None:
            results.add("reachability", edges=m, changes=changes, reached=n_reached, tick0_ms=tick0,
                        tick_ms=tick, recompute_ms=recompute)


def _edge_change(edges: np.ndarray, n_nodes: int, changes: int,
                 rng: np.random.Generator) -> tuple[ZSet, np.ndarray]:
    """Delete changes/2 existing edges, insert as many absent ones; (delta, new edges)."""
    k = max(changes // 2, 1)
    gone = rng.choice(edges.shape[0], k, replace=False)
    present = set(map(tuple, edges.tolist()))
    new: list[tuple[int, int]] = []
    while len(new) < k:
        e = tuple(int(x) for x in rng.integers(0, n_nodes, 2))
        if e[0] != e[1] and e not in present:
            present.add(e)
            new.append(e)
    ins = np.array(new, dtype=np.int64)
    delta = ZSet.from_arrays(np.concatenate([edges[gone], ins]),
                             np.array([-1] * k + [1] * k, dtype=np.int64))
    return delta, np.concatenate([np.delete(edges, gone, axis=0), ins])


def _now() -> float:
    return time.perf_counter() * 1e3


def main(argv: list[str] | None = None) -> int:
    p = base_parser(__doc__.split("\n")[0], sizes=("1e4", "1e5", "1e6"))
    p.add_argument("--reach-edges", nargs="*", type=parse_size, default=[10_000, 100_000],
                   help="edge counts of the reachability section (none: skip it)")
    p.add_argument("--changes", type=int, default=10, help="edge changes per reachability tick")
    add_json_arg(p)
    args = p.parse_args(argv)
    res = Results("bench_zset", args.seed, args=vars(args), repeat=args.repeat)
    print(header("bench_zset", args.seed, repeat=args.repeat))
    print("keys: 2 int64 columns in [0, 1e6), 20% repeated rows; lexsort sorts the n raw keys"
          " (consolidate), the 2n keys of both sides (plus, join)")
    zset_rows(args.sizes, args.repeat, args.seed, res)
    if args.reach_edges:
        print()
        print("reachability: one tick of edge changes against recomputation from scratch")
        reach_rows(args.reach_edges, args.changes, args.repeat, args.seed, res)
    res.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
