"""Whole ticks of this tree against those of another commit, run side by side.

Run ``./dev bench tick_ab --base REV`` (e.g. ``HEAD~3``). ``kernel_ab`` compares the join
kernels in one process; a change to the Python of the tick path (staging, views,
commits) cannot be loaded twice in one process, and this host's timings drift by up to 2x
between runs, so two separate runs say little. Here the two trees run at the same time,
each in its own process pinned to its own core, over the same graph and the same ticks;
then they swap cores (the cores differ too) and run again, ``--rounds`` times. Whatever
the host does during a round, both see it. Pinned, a tree's own threads (the thread
shares of a large delta, background merges) share its core; ``--sequential`` runs the
trees one after the other on every core instead, alternating which goes first (then
the host's drift between runs is in the ratios: use more rounds).

Each process builds a view (``--pattern``, default triangle) over a generated power-law
graph (``--edges``), runs ``warm_up`` and ``settle_heap`` as ``wcoj stream`` does, then
per k ``--ticks`` ticks of k
random edge changes (90% inserts; ``benchmarks.bench_triangles.make_tick``; fewer when
that would pass 200,000 changes, at least 5) after as many unmeasured ones, at most 50,
timing ``Graph.apply``; at the end both must hold the same count. The
other commit's tree is extracted with ``git archive`` under the system's temporary
directory and kept there, so its Numba cache survives between runs (the first run
compiles it: a minute or two). Prints per round and k the median, p90 and largest tick of
each tree and ``base/new`` of the medians (> 1: this tree is faster), then the median
ratio over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHANGES = 200_000  # at most this many edge changes per k (at least 5 ticks), so the graph does not grow far


def worker(args) -> None:
    """One tree's ticks (in a subprocess whose ``sys.path`` starts with that tree)."""
    import numpy as np

    from benchmarks.bench_triangles import make_tick, oriented
    from queries.graph import Graph, settle_heap, warm_up
    from queries.graphio import generate_power_law

    base = oriented(generate_power_law(int(args.edges), seed=args.seed))
    g = Graph()
    g.load_edges(base)
    view = g.view(args.pattern)
    warm_up((args.pattern,))
    settle_heap()
    rng = np.random.default_rng(args.seed)
    n = int(base.max()) + 1
    out = {}
    for k in args.ks:
        count = max(5, min(args.ticks, CHANGES // k))
        warm = min(50, count)
        ticks = [make_tick(rng, base, n, k) for _ in range(warm + count)]
        lat = []
        for i, (ins, dels) in enumerate(ticks):
            t = time.perf_counter()
            g.apply(inserts=ins, deletes=dels)
            if i >= warm:
                lat.append(time.perf_counter() - t)
        out[str(k)] = [float(np.median(lat)), float(np.percentile(lat, 90)), float(max(lat))]
    out["count"] = view.count
    print(json.dumps(out))


def base_tree(rev: str) -> Path:
    """``rev``'s files under the temporary directory (extracted once per commit)."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    where = Path(tempfile.gettempdir()) / f"wcoj-tick-ab-{sha[:12]}"
    if not (where / ".complete").exists():
        where.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
        (where / ".complete").touch()
    return where


def launch(tree: Path, cpu: int | None, args) -> subprocess.Popen:
    cmd = [sys.executable, __file__, "--worker", str(tree), "--edges", str(args.edges), "--ticks", str(args.ticks),
           "--seed", str(args.seed), "--pattern", args.pattern, "--ks", *map(str, args.ks)]
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, preexec_fn=pin)


def result(p: subprocess.Popen, what: str) -> dict:
    out, _ = p.communicate()
    if p.returncode:
        raise SystemExit(f"the {what} tree's run failed (exit {p.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="the commit to compare with (e.g. HEAD~1)")
    ap.add_argument("--edges", type=float, default=1e5, help="edges of the generated graph (default 1e5)")
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 10, 1000], help="changes per tick (default 1 10 1000)")
    ap.add_argument("--pattern", default="triangle", help="the view's pattern (default triangle; e.g. 4-cycle)")
    ap.add_argument("--ticks", type=int, default=1000, help="measured ticks per k (default 1000)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of both trees; cores swap each round (default 2)")
    ap.add_argument("--sequential", action="store_true",
                    help="run the trees one after the other, unpinned (what uses a second core, such as the "
                         "delta's thread shares or background merges, then has one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    args = ap.parse_args(argv)
    if args.worker:
        sys.path.insert(0, args.worker)
        worker(args)
        return
    if not args.base:
        ap.error("--base REV is required")
    from benchmarks._common import Results  # noqa: E402  (the worker must not import this tree)

    res = Results("tick_ab", args.seed, args=vars(args), base=args.base, edges=f"{args.edges:.0e}", ticks=args.ticks)
    print(res.header)
    base = base_tree(args.base)
    cpus = sorted(os.sched_getaffinity(0))
    side_by_side = len(cpus) >= 2 and not args.sequential
    if not side_by_side:
        print("the trees run one after the other on every core, alternating which goes first")
    print(f"\n## Graph.apply median per tick, microseconds (base = {args.base}, new = this tree)")
    print(f"{'round':>6}{'k':>8}{'new':>10}{'base':>10}{'base/new':>10}{'new p90':>10}{'base p90':>10}"
          f"{'new max':>10}{'base max':>10}")
    ratios: dict[int, list[float]] = {k: [] for k in args.ks}
    for r in range(args.rounds):
        a, b = (cpus[0], cpus[1]) if r % 2 == 0 else (cpus[1], cpus[0])
        if side_by_side:
            pn, pb = launch(ROOT, a, args), launch(base, b, args)
            new, old = result(pn, "new"), result(pb, "base")
        elif r % 2 == 0:
            new = result(launch(ROOT, None, args), "new")
            old = result(launch(base, None, args), "base")
        else:
            old = result(launch(base, None, args), "base")
            new = result(launch(ROOT, None, args), "new")
        if new["count"] != old["count"]:
            raise SystemExit(f"round {r + 1}: the {args.pattern} counts differ ({new['count']} new, {old['count']} base)")
        for k in args.ks:
            (mn, pn90, xn), (mb, pb90, xb) = new[str(k)], old[str(k)]
            ratios[k].append(mb / mn)
            res.add("rounds", round=r + 1, k=k, new_s=mn, base_s=mb, new_p90_s=pn90, base_p90_s=pb90,
                    new_max_s=xn, base_max_s=xb)
            print(f"{r + 1:>6}{k:>8}{mn * 1e6:>10.1f}{mb * 1e6:>10.1f}{mb / mn:>10.2f}{pn90 * 1e6:>10.1f}"
                  f"{pb90 * 1e6:>10.1f}{xn * 1e6:>10.0f}{xb * 1e6:>10.0f}", flush=True)
    print("\nmedian base/new over rounds: "
          + ", ".join(f"k={k}: {statistics.median(v):.2f}" for k, v in ratios.items()))
    for k, v in ratios.items():
        res.add("ratios", k=k, median_base_over_new=statistics.median(v))
    res.write(args.json)


if __name__ == "__main__":
    main()
