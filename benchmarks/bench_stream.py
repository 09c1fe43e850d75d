"""Ticks at the cost of their change: ``Graph.apply`` and ``Graph.apply_stream`` against
the plain-Python rule and the floor, per tick size, measured side by side in one run.

Run ``./dev bench stream`` (the 1e5 power-law graph; ``--graphs 1e5 1e6 email-Enron
soc-Epinions1`` for the full table, the shared graphs read from ``../shared/data/graphs``
when present). Per graph: 90% of its edges are loaded, the other 10% are streamed as
insertions in ticks of k changes, then deleted in ticks of k (so every k sees the same
graph sizes), with a triangle view (``--pattern 4-cycle`` for 4-cycles, where there is
no Python rule or floor to compare with). Per k, the medians per tick of:

* ``apply``: ``Graph.apply`` plus reading ``tick.changes`` (the changed rows);
* ``rule``: the plain-Python rule (``bench_triangles.PythonDelta.apply_rows``): a Python set of neighbours per vertex; per changed
  edge (u, v), set semantics, then ``N(u) & N(v)`` and the changed triangle rows built
  as tuples, on the same ticks;
* ``floor``: the least a delta rule can do: per changed edge, the common neighbours of
  ``u`` and ``v`` counted by one merge of their lists in a CSR of the graph (one jitted
  loop, no rows, no set semantics, no updates; ``bench_floor.common_neighbours``).

Then ``apply_stream`` at k = 1: the same held-out edges as single-edge ticks (inserted,
then deleted) in one call, its updates per second against the rule's over the same
updates (each the best of ``--stream-runs`` runs on a fresh graph, alternating), and the per-update latency p50/p99 from the timestamps the stream takes inside
its kernel. ``--memory N`` streams N single-edge ticks (insert then delete of random
edges, in chunks of 1e6 rows) and prints the process's RSS after each chunk. ``--routes``
times the change-by-change route against the staged one, alternating per tick on the
first graph (how ``config.CHANGE_ROWS`` was chosen).

``--json FILE`` writes the rows as JSON too.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time

import numpy as np

from benchmarks._common import header, parse_size, row_printer
from benchmarks.bench_floor import common_neighbours, csr
from benchmarks.bench_triangles import GRAPHS as GRAPHS_DIR
from benchmarks.bench_triangles import PythonDelta, oriented
from queries.graph import Graph, settle_heap, warm_up
from queries.graphio import generate_power_law, read_edges


def load(name: str, seed: int) -> np.ndarray:
    if name[0].isdigit():
        return oriented(generate_power_law(parse_size(name), seed=seed))
    path = GRAPHS_DIR / f"{name}.txt.gz"
    if not path.exists():
        return None
    return oriented(read_edges(path))


def tick_list(held: np.ndarray, k: int, budget: int):
    """Insert ticks of ``k`` held-out edges, then delete ticks of the same edges."""
    n = min(len(held), max(k, (budget // k) * k))
    if n < k:
        return []
    parts = [held[i:i + k] for i in range(0, n - k + 1, k)]
    none = np.zeros((0, 2), dtype=np.int64)
    return [(p, none) for p in parts] + [(none, p) for p in parts]


def per_k(args, name: str, o: np.ndarray, rng, row, out):
    perm = rng.permutation(len(o))
    held, base = o[perm[: len(o) // 10]], o[perm[len(o) // 10:]]
    n_nodes = int(o.max()) + 1
    for k in args.ks:
        ticks = tick_list(held, k, args.budget)
        if not ticks:
            row(name, k, "-", "-", "-", "-", "-", "-", "-")
            continue
        g = Graph()
        g.load_edges(base)
        g.view(args.pattern)
        settle_heap()
        ours = []
        for ins, dels in ticks:
            t0 = time.perf_counter()
            tick = g.apply(ins, dels)
            _ = tick.changes
            ours.append(time.perf_counter() - t0)
        rule, floor = [], []
        if args.pattern == "triangle":
            r = PythonDelta(base)
            ptr, nbr = csr(base, n_nodes)
            cn = np.zeros(k, dtype=np.int64)
            common_neighbours(ptr, nbr, ticks[0][0][:1], cn)  # compiled before timing
            for ins, dels in ticks:
                t0 = time.perf_counter()
                r.apply_rows(ins, dels)
                rule.append(time.perf_counter() - t0)
                e = ins if len(ins) else dels
                t0 = time.perf_counter()
                common_neighbours(ptr, nbr, e, cn)
                floor.append(time.perf_counter() - t0)
        med = statistics.median(ours)
        rmed = statistics.median(rule) if rule else None
        fmed = statistics.median(floor) if floor else None
        row(name, k, len(ticks), f"{med * 1e6:.1f}", f"{rmed * 1e6:.1f}" if rmed else "-",
            f"{fmed * 1e6:.1f}" if fmed else "-", f"{k / med:,.0f}",
            f"{rmed / med:.2f}x" if rmed else "-", f"{med / fmed:.1f}x" if fmed else "-")
        out.append({"graph": name, "pattern": args.pattern, "k": k, "ticks": len(ticks), "apply_us": med * 1e6,
                    "rule_us": rmed and rmed * 1e6, "floor_us": fmed and fmed * 1e6})
    return held, base


def stream_k1(args, name: str, held: np.ndarray, base: np.ndarray, row, out):
    """Each side ``--stream-runs`` times on a fresh copy of the graph, alternating, the
    best run of each kept (a shared host stalls single runs by up to 1.5x)."""
    n = len(held)
    rows = np.concatenate([np.column_stack([np.arange(n), np.ones(n, np.int64), held]),
                           np.column_stack([n + np.arange(n), -np.ones(n, np.int64), held])]).astype(np.int64)
    none = np.zeros((0, 2), dtype=np.int64)
    rate = rule_rate = res = None
    for _ in range(args.stream_runs):
        g = Graph()
        g.load_edges(base)
        g.view(args.pattern)
        settle_heap()
        t0 = time.perf_counter()
        res = g.apply_stream(rows)
        rate = max(rate or 0, len(rows) / (time.perf_counter() - t0))
        if args.pattern == "triangle":
            r = PythonDelta(base)
            t0 = time.perf_counter()
            for e in held:
                r.apply_rows(e[None, :], none)
            for e in held:
                r.apply_rows(none, e[None, :])
            rule_rate = max(rule_rate or 0, len(rows) / (time.perf_counter() - t0))
    p50, p99 = np.percentile(res.tick_seconds, [50, 99]) * 1e6
    row(name, len(rows), f"{rate:,.0f}", f"{rule_rate:,.0f}" if rule_rate else "-",
        f"{rate / rule_rate:.2f}x" if rule_rate else "-", f"{p50:.2f}", f"{p99:.2f}")
    out.append({"graph": name, "pattern": args.pattern, "stream_ticks": len(rows), "stream_upd_s": rate,
                "rule_upd_s": rule_rate, "p50_us": p50, "p99_us": p99})


def memory(args) -> None:
    print(f"\n## memory over {args.memory:,} single-edge ticks (RSS after each chunk of 1e6 rows)")
    g = Graph()
    g.load_edges(oriented(generate_power_law(100_000, seed=args.seed)))
    g.view(args.pattern)
    rng = np.random.default_rng(args.seed)

    def chunks():
        t = 0
        while t < args.memory:
            n = min(500_000, (args.memory - t) // 2)
            e = rng.integers(0, 20_000, (n, 2))
            ticks = t + np.arange(2 * n)
            ops = np.tile([1, -1], n)
            yield np.column_stack([ticks, ops, np.repeat(e, 2, axis=0)]).astype(np.int64)
            t += 2 * n

    done, t0 = 0, time.perf_counter()
    for r in g.stream(chunks()):
        done += len(r)
        rss = _rss_mb()
        print(f"ticks={done:>10,}  rss_mb={rss:8.1f}  view={r.counts[args.pattern][-1]}  "
              f"seconds={time.perf_counter() - t0:.1f}", flush=True)


def routes(args) -> None:
    """The change-by-change route against the staged one, alternating on one graph."""
    from benchmarks.bench_triangles import make_tick
    from wcoj import config

    print("\n## routes: change by change vs staged, alternating per tick on one graph (medians, ms)")
    o = load(args.graphs[0], args.seed)
    rng = np.random.default_rng(args.seed)
    n = int(o.max()) + 1
    g = Graph()
    g.load_edges(o)
    g.view(args.pattern)
    warm_up((args.pattern,), staged=True)
    settle_heap()
    saved = config.CHANGE_ROWS
    try:
        for k in args.route_ks:
            res = {"change": [], "staged": []}
            for r in range(args.route_rounds):
                for route in ("change", "staged") if r % 2 == 0 else ("staged", "change"):
                    ins, dels = make_tick(rng, g.edges(), n, k)
                    config.CHANGE_ROWS = 1 << 30 if route == "change" else 0
                    t0 = time.perf_counter()
                    g.apply(ins, dels)
                    res[route].append(time.perf_counter() - t0)
            a, b = statistics.median(res["change"]), statistics.median(res["staged"])
            print(f"graph={args.graphs[0]} k={k:>7}  change_by_change_ms={a * 1e3:8.1f}  staged_ms={b * 1e3:8.1f}  "
                  f"staged/change={b / a:.2f}", flush=True)
    finally:
        config.CHANGE_ROWS = saved
    g.check_views()


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", nargs="+", default=["1e5"], help="power-law sizes (1e5) or shared graph names")
    ap.add_argument("--ks", nargs="+", type=parse_size, default=[1, 10, 100, 1000, 10_000, 100_000])
    ap.add_argument("--budget", type=parse_size, default=parse_size("2e4"),
                    help="inserted changes per k at most (then as many deleted); at least one tick")
    ap.add_argument("--pattern", default="triangle")
    ap.add_argument("--stream-runs", type=int, default=3,
                    help="apply_stream and the rule at k = 1: runs of each, the best kept")
    ap.add_argument("--memory", type=parse_size, default=0, help="also stream this many single-edge ticks")
    ap.add_argument("--routes", action="store_true",
                    help="also time both routes of a tick, alternating, on the first graph (--route-ks)")
    ap.add_argument("--route-ks", nargs="+", type=parse_size, default=[4096, 16384, 50_000, 100_000])
    ap.add_argument("--route-rounds", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the rows to this file as JSON too")
    args = ap.parse_args(argv)
    print(header("bench_stream", args.seed, pattern=args.pattern))
    warm_up((args.pattern,))
    out: list = []
    rng = np.random.default_rng(args.seed)
    streams = []
    print("\n## per tick: apply (+ reading its changes), the Python rule, the floor (medians, us)")
    row = row_printer(["graph", "k", "ticks", "apply_us", "rule_us", "floor_us", "upd/s", "x_rule", "x_floor"],
                      [14, 7, 6, 10, 10, 9, 12, 7, 8])
    for name in args.graphs:
        o = load(name, args.seed)
        if o is None:
            print(f"# {name}: ../shared/data/graphs absent, skipped")
            continue
        streams.append((name, *per_k(args, name, o, rng, row, out)))
    print("\n## apply_stream, single-edge ticks (the held-out 10% inserted, then deleted)")
    row = row_printer(["graph", "ticks", "stream_upd/s", "rule_upd/s", "x_rule", "p50_us", "p99_us"],
                      [14, 8, 12, 12, 7, 7, 7])
    for name, held, base in streams:
        stream_k1(args, name, held, base, row, out)
    if args.routes:
        routes(args)
    if args.memory:
        memory(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
