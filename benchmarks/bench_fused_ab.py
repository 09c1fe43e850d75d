"""Small ticks through the one-kernel path (``Graph._fused``) against the general path, in
one process on one graph.

Run ``./dev bench fused_ab`` (``--edges 1e6 --ks 1 10 --rounds 6 --block 300``). A graph
with one triangle view over a generated power-law graph takes ticks of k random edge
changes (90% inserts; ``benchmarks.bench_triangles.make_tick``) in blocks of ``--block``
ticks, alternating between the two paths (the general path by turning the fused one off
on this graph for the block) and which of them goes first in a round. Both paths read
and write the same indexes, so the graph, its runs and the host's state are shared; the
first tick after a switch rebuilds the fused path's tables, as after any general tick.
Prints per round the median tick of each path and ``general/fused`` (> 1: the fused path
is faster), then the median ratio; the view is checked against a recount at the end.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks._common import header, parse_size
from benchmarks.bench_triangles import make_tick, oriented
from queries.graph import Graph, settle_heap, warm_up
from queries.graphio import generate_power_law


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edges", type=parse_size, default=parse_size("1e6"), help="edges of the graph (default 1e6)")
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 10], help="changes per tick (default 1 10)")
    ap.add_argument("--rounds", type=int, default=6, help="rounds of one block per path (default 6)")
    ap.add_argument("--block", type=int, default=300, help="ticks per block (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(header("bench_fused_ab", args.seed, edges=f"{args.edges:.0e}", block=args.block))
    base = oriented(generate_power_law(args.edges, seed=args.seed))
    g = Graph()
    g.load_edges(base)
    g.view("triangle")
    warm_up(("triangle",))
    settle_heap()
    rng = np.random.default_rng(args.seed)
    n_nodes = int(base.max()) + 1
    general = lambda ins, dels: None  # noqa: E731  (Graph._fused declining: the general path)
    print("\n## Graph.apply median per tick, microseconds (same graph, blocks alternating)")
    print(f"{'k':>6}{'round':>7}{'fused':>10}{'general':>10}{'general/fused':>15}")
    for k in args.ks:
        for ins, dels in [make_tick(rng, base, n_nodes, k) for _ in range(args.block)]:
            g.apply(inserts=ins, deletes=dels)  # settle the runs at this k first
        ratios = []
        for r in range(args.rounds):
            med = {}
            for path in (("fused", "general") if r % 2 == 0 else ("general", "fused")):
                if path == "general":
                    g._fused = general
                lat = []
                for ins, dels in [make_tick(rng, base, n_nodes, k) for _ in range(args.block)]:
                    t = time.perf_counter()
                    g.apply(inserts=ins, deletes=dels)
                    lat.append(time.perf_counter() - t)
                g.__dict__.pop("_fused", None)
                med[path] = statistics.median(lat)
            ratios.append(med["general"] / med["fused"])
            print(f"{k:>6}{r + 1:>7}{med['fused'] * 1e6:>10.1f}{med['general'] * 1e6:>10.1f}{ratios[-1]:>15.2f}",
                  flush=True)
        print(f"k={k}: median general/fused over rounds {statistics.median(ratios):.2f}; "
              f"{g.n_fused} ticks so far took the one-kernel path", flush=True)
    g.check_views()


if __name__ == "__main__":
    main()
