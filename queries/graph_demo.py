"""Demo: triangle and 4-cycle counts kept up to date over a power-law graph and a stream of ticks.

Run ``python -m queries.graph_demo`` (or ``wcoj demo``); ``--help`` lists the knobs. It
generates a Chung-Lu power-law graph (:func:`queries.graphio.generate_power_law`: 1M
edges, about 500k nodes, mean degree 4, degrees capped at 40 by default), loads it into a
``Graph`` with a triangle view and an undirected 4-cycle view, replays ``--ticks`` ticks
of ``--per-tick`` random edge changes (90% inserts drawn in proportion to degree, 10%
deletes), prints one line per tick, and ends by checking both counts and the edge set
against a fresh ``Graph`` built from scratch: it prints ``OK`` or exits with status 1.

The degree cap keeps the from-scratch 4-cycle count (done twice: at the start and in
the closing check) affordable; its cost grows with the number of 2-paths, sum(deg^2).
Measured with the defaults (1,000,000 edges, 453,898 nodes, max degree 62, sum deg^2
22.5M; 175 triangles and 1,360 4-cycles at the start, 210 and 1,825 after 100 ticks) on
the 2-core machine with warm caches (2026-11-26): generation 3.3 s, load 0.3 s, triangle
count from scratch 0.4 s, 4-cycle count 1.8 s, ticks of 1,000 changes 11.0 ms median
(p90 15.8 ms), closing check 4.7 s, OK, 12.4 s in all. On an empty cache the first run
also compiles its kernels (about a minute; see ``docs/performance.md``). ``--edges
100000`` runs in about 4 s.

Relies on :mod:`queries.graph` and :mod:`queries.graphio`; used by the README and the
``wcoj demo`` command.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np
from tqdm import tqdm

from queries.graph import Graph, settle_heap, warm_up
from queries.graphio import generate_changes, generate_power_law
from queries.progress import slow_step

__all__ = ["main", "run"]

PATTERNS = ("triangle", "4-cycle")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wcoj demo",
        description="Incremental triangle and 4-cycle counts over a generated power-law "
                    "graph, checked at the end against recomputation from scratch.",
        epilog="example:\n  wcoj demo --edges 100000 --ticks 20 --per-tick 100",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--edges", type=float, default=1_000_000, help="edges of the graph (default 1e6)")
    p.add_argument("--ticks", type=int, default=100, help="ticks to replay (default 100)")
    p.add_argument("--per-tick", type=int, default=1000, help="edge changes per tick (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--avg-degree", type=float, default=4.0, help="mean degree (default 4)")
    p.add_argument("--max-degree", type=int, default=40,
                   help="degree cap of the generator (default 40; 4-cycle cost grows with it)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    return p


def _log(message: str) -> None:
    print(message, flush=True)


def run(n_edges: int, n_ticks: int, per_tick: int, seed: int = 0, avg_degree: float = 4.0,
        max_degree: int = 40, quiet: bool = False) -> bool:
    """Run the demo; print its report to stdout; return whether the closing check passed."""
    t0 = time.perf_counter()
    edges = generate_power_law(n_edges, seed, avg_degree=avg_degree, max_degree=max_degree)
    ends = np.sort(edges.ravel())
    degree = np.diff(np.flatnonzero(np.diff(ends, prepend=-1, append=-1)))  # per node
    ticks = generate_changes(edges, n_ticks, per_tick, insert_fraction=0.9, seed=seed + 1)
    _log(f"graph: {len(edges):,} edges, {len(degree):,} nodes, mean degree "
         f"{2 * len(edges) / max(len(degree), 1):.1f}, max degree {int(degree.max(initial=0))}, "
         f"sum deg^2 {int((degree.astype(np.int64) ** 2).sum()):,} (seed {seed}); "
         f"{n_ticks} ticks x {per_tick} changes generated in {time.perf_counter() - t0:.1f} s")

    g = Graph()
    t = time.perf_counter()
    g.load_edges(edges)
    _log(f"loaded in {time.perf_counter() - t:.1f} s ({g.nbytes() / len(edges):.0f} bytes/edge)"
         if len(edges) else "loaded an empty graph")
    views = {}
    for name in PATTERNS:
        t = time.perf_counter()
        with slow_step(_log, f"counting {name}s from scratch", done=False):
            views[name] = g.view(name, name=name)
        _log(f"{name}: {views[name].count:,} from scratch in {time.perf_counter() - t:.1f} s")

    with slow_step(_log, "preparing the tick kernels"):
        warm_up(PATTERNS, streams=False)  # every kernel its ticks use loaded before tick 1: steady latencies
    settle_heap()  # the loaded state is long-lived: keep full collections off the ticks
    _log(f"{'tick':>5} {'changes':>8} {'triangles':>12} {'4-cycles':>14} {'ms':>8}")
    seconds = []
    bar = tqdm(total=len(ticks), desc="ticks", unit="tick", file=sys.stderr, leave=False,
               disable=quiet or not sys.stderr.isatty())
    for tick, inserts, deletes in ticks:
        out = g.apply(inserts=inserts, deletes=deletes)
        seconds.append(out.seconds)
        k = out.edge_delta.keys  # an undirected edge may be held in one or both directions
        n_changed = int((k[:, 0] < k[:, 1]).sum())
        bar.write(f"{tick:>5} {n_changed:>8} {views['triangle'].count:>12,} "
                  f"{views['4-cycle'].count:>14,} {out.seconds * 1e3:>8.1f}", file=sys.stdout)
        bar.update()
    bar.close()
    if seconds:
        ms = np.array(seconds) * 1e3
        _log(f"ticks: median {np.median(ms):.1f} ms, p90 {np.percentile(ms, 90):.1f} ms, "
             f"max {ms.max():.1f} ms, {n_ticks * per_tick / sum(seconds):,.0f} edge changes/s")
    return _check(g, edges, ticks, views)


def _check(g: Graph, edges, ticks, views) -> bool:
    """Compare the maintained counts and edges with a fresh Graph built from scratch."""
    t = time.perf_counter()
    expect = {tuple(e) for e in np.sort(edges, axis=1).tolist()}
    for _, inserts, deletes in ticks:
        expect.difference_update(map(tuple, np.sort(deletes, axis=1).tolist()))
        expect.update(map(tuple, np.sort(inserts, axis=1).tolist()))
    ok = {tuple(e) for e in g.edges().tolist()} == expect
    if not ok:
        _log("MISMATCH: the graph's edges differ from the integrated changes")
    fresh = Graph()
    fresh.load_edges(g.edges())
    for name, v in views.items():
        n = fresh.count(name)
        same = n == v.count
        ok &= same
        _log(f"check {name}: maintained {v.count:,}, recomputed {n:,} "
             f"{'ok' if same else 'MISMATCH'}")
    _log(f"{'OK' if ok else 'FAILED'} (closing check in {time.perf_counter() - t:.1f} s)")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments and run; return 0 when the closing check passes, else 1."""
    a = _parser().parse_args(argv)
    if a.edges < 0 or a.ticks < 0 or a.per_tick < 0:
        print("wcoj demo: error: --edges, --ticks and --per-tick must be >= 0", file=sys.stderr)
        return 2
    t = time.perf_counter()
    ok = run(int(a.edges), a.ticks, a.per_tick, a.seed, a.avg_degree, a.max_degree, a.quiet)
    _log(f"total {time.perf_counter() - t:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
