"""What a triangle tick costs against k on one graph, and the latency of single-edge updates.

Run ``./dev bench ticks`` (``--json FILE`` keeps the rows for ``benchmarks/plots.py``). On
one generated power-law graph (``--edges``) with a triangle view, ``warm_up`` and
``settle_heap`` as ``wcoj stream`` does, then for each k (``--ks``) over the same ticks of k
random edge changes (90% inserts; ``bench_triangles.make_tick``), the medians of:

* ``apply_ms``: ``Graph.apply`` (edge change with set semantics, staging, the delta rule,
  commit; the view's changed rows built);
* ``python_ms``: the plain-Python rule over neighbour sets: per changed edge (u, v),
  ``N(u) & N(v)``, and the changed rows built (``PythonDelta.apply_rows``);
* ``recompute_ms``: the triangle count from scratch over the graph's indexes after the
  ticks (``Graph.count``; the indexes are not rebuilt, which would cost more);
* ``floor_ms``: the floor of ``bench_floor``: common neighbours of each changed edge's
  ends by merging their lists in a CSR of the graph, one jitted loop on one thread, caches
  flushed first.

Caches are flushed (64 MiB written) before each of ``floor``, ``apply`` and ``python``, so
every contender of a tick starts cold.

Then ``--updates`` single-edge updates, one ``Graph.apply`` each (90% inserts, 10% deletes of
present edges), each timed, back to back with warm caches: the distribution, with p50 and p99, is the second figure. The
graph grows by the inserts as the ticks go; the view is checked against recomputation at
the end.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks._common import Results, add_json_arg, header, parse_size
from benchmarks.bench_floor import FLUSH, _floor_ms, common_neighbours, csr
from benchmarks.bench_triangles import PythonDelta, make_tick, oriented
from queries.graph import Graph, settle_heap, warm_up
from queries.graphio import generate_power_law


def _ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def measure(edges: int = 100_000, ks=(1, 10, 100, 1000, 10_000), ticks: int = 20, updates: int = 2000,
            seed: int = 0, results: Results | None = None) -> Results:
    """The ``ticks`` table (one row per k) and the ``latency`` table (one row: every
    single-edge update's microseconds), printed as measured and added to ``results``."""
    results = results or Results("bench_ticks", seed)
    rng = np.random.default_rng(seed)
    base = oriented(generate_power_law(edges, seed=seed))
    n = int(base.max()) + 1
    g = Graph()
    g.load_edges(base)
    view = g.view("triangle")
    py = PythonDelta(base)
    warm_up(("triangle",))
    settle_heap()
    print(f"## triangle ticks on pl-{edges:.0e}: medians in ms", flush=True)
    print(f"{'k':>8}{'ticks':>7}{'apply':>10}{'python':>10}{'recompute':>11}{'floor':>10}"
          f"{'python/apply':>14}{'recompute/apply':>17}{'apply/floor':>13}", flush=True)
    for k in ks:
        n_ticks = ticks if k < 10_000 else max(3, ticks // 10)
        cols = {"apply": [], "python": [], "floor": []}
        for i in range(n_ticks + 2):
            now = g.edges()
            ins, dels = make_tick(rng, now, n, k)
            ptr, nbr = csr(now, n)
            changed = np.concatenate([ins, dels])
            out = np.empty(len(changed), dtype=np.int64)
            f = _floor_ms(common_neighbours, ptr, nbr, changed, out)
            FLUSH[::64] += 1
            a = _ms(lambda: g.apply(inserts=ins, deletes=dels))
            FLUSH[::64] += 1
            p = _ms(lambda: py.apply_rows(ins, dels))
            if i >= 2:  # the first two compile and warm
                for key, v in (("apply", a), ("python", p), ("floor", f)):
                    cols[key].append(v)
        g.count("triangle")
        rec = float(np.median([_ms(lambda: g.count("triangle")) for _ in range(3)]))
        med = {key: float(np.median(v)) for key, v in cols.items()}
        results.add("ticks", k=k, edges=edges, ticks=n_ticks, apply_ms=med["apply"],
                    python_ms=med["python"], recompute_ms=rec, floor_ms=med["floor"])
        print(f"{k:>8}{n_ticks:>7}{med['apply']:>10.3f}{med['python']:>10.3f}{rec:>11.3f}{med['floor']:>10.3f}"
              f"{med['python'] / med['apply']:>14.2f}{rec / med['apply']:>17.2f}"
              f"{med['apply'] / med['floor']:>13.1f}", flush=True)
    lat = []
    for i in range(updates + 20):
        if rng.random() < 0.9:
            ins, dels = rng.integers(0, n, (1, 2)), np.zeros((0, 2), np.int64)
        else:
            now = g.edges()
            ins, dels = np.zeros((0, 2), np.int64), now[rng.integers(0, len(now), 1)]
        t = time.perf_counter()
        g.apply(inserts=ins, deletes=dels)
        if i >= 20:
            lat.append((time.perf_counter() - t) * 1e6)
    p50, p99 = np.percentile(lat, [50, 99])
    results.add("latency", edges=edges, updates=updates, p50_us=float(p50), p99_us=float(p99),
                max_us=float(max(lat)), microseconds=[round(x, 2) for x in lat])
    print(f"\n## {updates} single-edge updates: p50 {p50:.1f} us, p99 {p99:.1f} us, max {max(lat):.0f} us",
          flush=True)
    g.check_views()
    assert view.count == g.count("triangle")
    return results


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edges", type=parse_size, default=parse_size("1e5"))
    p.add_argument("--ks", type=int, nargs="+", default=[1, 10, 100, 1000, 10_000])
    p.add_argument("--ticks", type=int, default=20, help="measured ticks per k (a tenth, at least 3, "
                   "for k >= 10,000)")
    p.add_argument("--updates", type=int, default=2000, help="single-edge updates timed one by one")
    p.add_argument("--seed", type=int, default=0)
    add_json_arg(p)
    args = p.parse_args(argv)
    res = Results("bench_ticks", args.seed, args=vars(args), edges=args.edges)
    print(header("bench_ticks", args.seed, edges=args.edges))
    measure(args.edges, args.ks, args.ticks, args.updates, args.seed, res)
    res.write(args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
