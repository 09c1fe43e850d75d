"""How far a triangle tick is from the floor of its join on this machine.

Run ``./dev bench floor`` (``--edges 1e6 --ks 1000 100000`` by default). The floor is the
least a delta rule for triangles can do: for every changed edge ``(u, v)``, count the
common neighbours of ``u`` and ``v`` by merging their lists in one undirected CSR of the
graph before the tick (one part, no runs, no staging, no rows written, no set semantics),
in one jitted loop, on one thread and split over two. It is a lower bound for the work
of ``Graph.apply``'s delta rule, which writes the changed rows, reads ``prev`` and
``curr`` through the index's runs and evaluates three telescoping terms; and below that,
the tick also computes the change of the edges (set semantics), stages it and commits it.

Per k, over the same ticks (``benchmarks.bench_triangles.make_tick``: 90% inserts), the
medians of: the floor on one thread and on all (caches flushed before each run by writing
64 MiB), the whole ``Graph.apply`` (edge change with set semantics, the delta rule and
the commit, one kernel call up to ``config.CHANGE_ROWS`` changes) and the plain Python
delta rule of ``bench_triangles``; then the ratios. The graph grows by the inserts as
the ticks go (both the floor's CSR and the Python rule's sets follow it).
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
from numba import njit, prange

from benchmarks._common import Results, add_json_arg, header, parse_size
from benchmarks.bench_triangles import PythonDelta, make_tick, oriented
from queries.graph import Graph, settle_heap, warm_up
from queries.graphio import generate_power_law

FLUSH = np.ones(64 << 20, dtype=np.uint8)  # written before each timed floor run


@njit(nogil=True, cache=True)
def common_neighbours(ptr, nbr, edges, out):
    """``out[i]``: how many neighbours ``edges[i, 0]`` and ``edges[i, 1]`` share (a merge)."""
    for i in range(edges.shape[0]):
        a, ae = ptr[edges[i, 0]], ptr[edges[i, 0] + 1]
        b, be = ptr[edges[i, 1]], ptr[edges[i, 1] + 1]
        c = 0
        while a < ae and b < be:
            x, y = nbr[a], nbr[b]
            if x == y:
                c += 1
                a += 1
                b += 1
            elif x < y:
                a += 1
            else:
                b += 1
        out[i] = c


@njit(parallel=True, cache=True)
def common_neighbours_parallel(ptr, nbr, edges, out, chunks):
    """``common_neighbours`` over ``chunks`` slices of the edges, on all threads."""
    n = edges.shape[0]
    for c in prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        common_neighbours(ptr, nbr, edges[lo:hi], out[lo:hi])


def csr(o: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The undirected CSR (row pointers, sorted neighbours) of oriented edges ``o``."""
    s = np.concatenate([o, o[:, ::-1]])
    s = s[np.lexsort((s[:, 1], s[:, 0]))]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(s[:, 0], minlength=n), out=ptr[1:])
    return ptr, np.ascontiguousarray(s[:, 1])


def _floor_ms(fn, *args) -> float:
    FLUSH[::64] += 1
    t = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t) * 1e3


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edges", type=parse_size, default=parse_size("1e6"), help="edges of the generated graph")
    ap.add_argument("--ks", nargs="+", type=int, default=[1000, 100_000], help="changes per tick")
    ap.add_argument("--ticks", type=int, default=30, help="measured ticks per k (a tenth of it, at least 3, "
                    "for k >= 10,000)")
    ap.add_argument("--seed", type=int, default=0)
    add_json_arg(ap)
    args = ap.parse_args(argv)
    res = Results("bench_floor", args.seed, args=vars(args), edges=args.edges,
                  threads=numba.config.NUMBA_NUM_THREADS)
    print(header("bench_floor", args.seed, edges=args.edges, threads=numba.config.NUMBA_NUM_THREADS))
    rng = np.random.default_rng(args.seed)
    base = oriented(generate_power_law(args.edges, seed=args.seed))
    n = int(base.max()) + 1
    g = Graph()
    g.load_edges(base)
    g.view("triangle")
    py = PythonDelta(base)
    warm_up(("triangle",))
    settle_heap()
    chunks = 4 * numba.config.NUMBA_NUM_THREADS
    print(f"\n## triangle ticks on pl-{args.edges:.0e}: medians in ms (floor caches flushed per run)")
    print(f"{'k':>8}{'floor_1t':>10}{'floor_mt':>10}{'apply':>9}{'python':>9}{'apply/floor_1t':>16}"
          f"{'apply/floor_mt':>16}{'python/apply':>14}{'apply_upd/s':>13}{'floor_upd/s':>13}")
    for k in args.ks:
        n_ticks = args.ticks if k < 10_000 else max(3, args.ticks // 10)
        rows = {"f1": [], "fm": [], "apply": [], "py": []}
        for i in range(n_ticks + 2):
            now = g.edges()
            ins, dels = make_tick(rng, now, n, k)
            edges = np.concatenate([ins, dels])
            ptr, nbr = csr(now, n)
            out = np.empty(len(edges), dtype=np.int64)
            f1 = _floor_ms(common_neighbours, ptr, nbr, edges, out)
            fm = _floor_ms(common_neighbours_parallel, ptr, nbr, edges, out, chunks)
            FLUSH[::64] += 1
            t = time.perf_counter()
            g.apply(inserts=ins, deletes=dels)
            applied = (time.perf_counter() - t) * 1e3
            t = time.perf_counter()
            py.apply(ins, dels)
            pyt = (time.perf_counter() - t) * 1e3
            if i >= 2:  # the first two compile and warm
                for key, val in (("f1", f1), ("fm", fm), ("apply", applied), ("py", pyt)):
                    rows[key].append(val)
        med = {key: float(np.median(v)) for key, v in rows.items()}
        print(f"{k:>8}{med['f1']:>10.3f}{med['fm']:>10.3f}{med['apply']:>9.3f}{med['py']:>9.3f}"
              f"{med['apply'] / med['f1']:>16.1f}{med['apply'] / med['fm']:>16.1f}{med['py'] / med['apply']:>14.2f}"
              f"{k / med['apply'] * 1e3:>13.0f}{k / med['fm'] * 1e3:>13.0f}", flush=True)
        res.add("floor", k=k, ticks=n_ticks, floor_1t_ms=med["f1"], floor_mt_ms=med["fm"], apply_ms=med["apply"],
                python_ms=med["py"])
    g.check_views()
    res.write(args.json)


if __name__ == "__main__":
    main()
