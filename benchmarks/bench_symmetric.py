"""The triangle view over the oriented relation ``O`` against the same triangles over the
symmetric relation ``S``, on the same ticks: would keeping each edge in both directions
make a small tick cheaper?

Run ``./dev bench symmetric`` (``--graphs 1e5 email-Enron``, ``--k 10``). Per graph, 90%
of its edges are loaded into two graphs; one has the ``triangle`` view (``O(a,b) O(a,c)
O(b,c)``: each change reads the lists of both ends in two column orders), the other a
conjunctive view ``S(a,b) S(a,c) S(b,c)`` with ``a < b < c`` (each change reads one
list per end, but an edge is two changes of ``S``). The held-out 10% is inserted in ticks
of k, then deleted; per round, the median ``apply`` (plus reading the view's change) of
each, and both counts, which must agree.

It measures what the engine does with the pattern today, not a redesign that would
exploit the symmetry inside the delta rule (one change per edge, three terms over the two
lists): that would need its own terms.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks._common import header, parse_size
from benchmarks.bench_stream import load
from queries.graph import Graph, settle_heap
from queries.patterns import conjunctive

SYMMETRIC = conjunctive("symmetric-triangle", [("S", ("a", "b")), ("S", ("a", "c")), ("S", ("b", "c"))],
                        [("<", "a", "b"), ("<", "b", "c")], ("a", "b", "c"))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", nargs="+", default=["1e5"], help="power-law sizes (1e5) or shared graph names")
    ap.add_argument("--k", type=parse_size, default=10, help="edges per tick (default 10)")
    ap.add_argument("--budget", type=parse_size, default=parse_size("2e4"), help="held-out edges streamed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    print(header("bench_symmetric", a.seed, k=a.k))
    print(f"{'graph':>14} {'round':>5} {'O us':>8} {'S us':>8} {'S / O':>6} {'triangles':>10}")
    for name in a.graphs:
        edges = load(name, a.seed)
        if edges is None:
            print(f"{name:>14} skipped: not found")
            continue
        edges = edges[np.random.default_rng(a.seed).permutation(len(edges))]
        n = len(edges) // 10
        held, base = edges[:n], edges[n:]
        m = min(n, a.budget) // a.k * a.k
        ticks = [held[i:i + a.k] for i in range(0, m, a.k)]
        views = []
        for pattern in ("triangle", SYMMETRIC):
            g = Graph()
            g.load_edges(base)
            v = g.view(pattern, name="t")
            g.apply(inserts=ticks[0])  # the first tick compiles
            g.apply(deletes=ticks[0])
            views.append((g, v))
        settle_heap()
        for r in range(a.rounds):
            med = []
            for g, v in views:
                ts = []
                for op in ("inserts", "deletes"):
                    for t in ticks:
                        t0 = time.perf_counter()
                        g.apply(**{op: t}).changes["t"]
                        ts.append(time.perf_counter() - t0)
                med.append(statistics.median(ts) * 1e6)
            counts = {v.count for _, v in views}
            assert len(counts) == 1, counts
            print(f"{name:>14} {r + 1:>5} {med[0]:8.1f} {med[1]:8.1f} {med[1] / med[0]:6.2f} {counts.pop():>10,}",
                  flush=True)


if __name__ == "__main__":
    main()
