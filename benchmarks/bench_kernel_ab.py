"""Batch counts of this tree against those of another commit, run side by side.

Run ``./dev bench kernel_ab --base REV`` (e.g. ``0dfccea``). The join program is compiled
per tree, so two versions cannot share one process; as in ``tick_ab``, each tree runs in
its own process pinned to its own core, at the same time, over the same graphs, and the
cores swap each round (``--rounds``). Per graph, ``Graph.count`` of each pattern
(``--patterns``, default ``triangle``) on the generated power-law graphs (``--edges``),
the skewed family (``--skewed``) and, with ``--real``, the graphs of
``../shared/data/graphs`` that are present; the median of ``--repeat`` counts after one
untimed count (compilation, first touch). Both trees must agree on every count. Prints
per round and graph the medians and ``base/new`` (> 1: this tree is faster), then the
median ratio over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def graphs(args):
    """``(name, loader)`` pairs, the same in both trees (this file's code runs in both)."""
    from benchmarks.bench_triangles import REAL, oriented, read_edges, skewed
    from queries.graphio import generate_power_law

    GRAPHS = Path(args.graphs_dir)  # this tree's ../shared, also for the other tree's run

    out = [(f"power-law {m:.0e}", lambda m=m: oriented(generate_power_law(int(m), seed=args.seed)))
           for m in args.edges]
    out += [(f"skewed {m:.0e}", lambda m=m: skewed(int(m))) for m in args.skewed]
    if args.real:
        out += [(f.split(".")[0], lambda f=f: oriented(read_edges(GRAPHS / f))) for f in REAL if (GRAPHS / f).exists()]
    return out


def worker(args) -> None:
    import numpy as np

    from queries.graph import Graph

    res = {}
    for name, load in graphs(args):
        edges = load()
        for pattern in args.patterns:
            g = Graph()
            g.load_edges(edges)
            count = g.count(pattern)  # untimed: compilation, first touch
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                g.count(pattern)
                times.append(time.perf_counter() - t)
            res[f"{name} {pattern}"] = [float(np.median(times)), int(count)]
    print(json.dumps(res))


def launch(tree: Path, cpu: int | None, argv: list[str]) -> subprocess.Popen:
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(tree), *argv],
                            stdout=subprocess.PIPE, text=True, preexec_fn=pin, env=env, cwd=tree)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="the commit to compare with (e.g. 0dfccea)")
    ap.add_argument("--edges", type=float, nargs="*", default=[1e5, 1e6], help="power-law graph sizes")
    ap.add_argument("--skewed", type=float, nargs="*", default=[1e5], help="skewed family sizes")
    ap.add_argument("--patterns", nargs="+", default=["triangle"])
    ap.add_argument("--real", action="store_true", help="also the graphs of ../shared/data/graphs")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--graphs-dir", default=str(ROOT.parent / "shared" / "data" / "graphs"), help=argparse.SUPPRESS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        sys.path.insert(0, args.worker)
        worker(args)
        return
    if not args.base:
        ap.error("--base REV is required")
    from benchmarks._common import header
    from benchmarks.bench_tick_ab import base_tree, result

    print(header("kernel_ab", args.seed, base=args.base, repeat=args.repeat))
    base = base_tree(args.base)
    passed = [*(argv if argv is not None else sys.argv[1:]), "--graphs-dir", args.graphs_dir]
    cpus = sorted(os.sched_getaffinity(0))
    print(f"\n## Graph.count median, ms (base = {args.base}, new = this tree)")
    print(f"{'round':>6}  {'graph':<34}{'new':>10}{'base':>10}{'base/new':>10}")
    ratios: dict[str, list[float]] = {}
    for r in range(args.rounds):
        a, b = (cpus[0], cpus[-1]) if r % 2 == 0 else (cpus[-1], cpus[0])
        pn, pb = launch(ROOT, a, passed), launch(base, b if len(cpus) > 1 else None, passed)
        new, old = result(pn, "new"), result(pb, "base")
        for key, (tn, cn) in new.items():
            tb, cb = old[key]
            if cn != cb:
                raise SystemExit(f"{key}: the counts differ ({cn} new, {cb} base)")
            ratios.setdefault(key, []).append(tb / tn)
            print(f"{r + 1:>6}  {key:<34}{tn * 1e3:>10.1f}{tb * 1e3:>10.1f}{tb / tn:>10.2f}", flush=True)
    print("\nmedian base/new over rounds:")
    for key, v in ratios.items():
        print(f"  {key:<34}{statistics.median(v):>6.2f}")


if __name__ == "__main__":
    main()
