"""First use: the demo on empty caches, from its start to its first count and to its end.

Run ``./dev bench first_use`` (``--base REV`` also runs another commit's tree, extracted as
``tick_ab`` does, alternating which goes first). Each run is ``python -m queries.graph_demo
--edges N --ticks T --quiet`` in a fresh process whose Numba cache (``NUMBA_CACHE_DIR``)
and generated-kernel cache (``WCOJ_CACHE_DIR``) are new empty directories, so every kernel
it calls compiles, as on a fresh clone; then the same command once more on the now warm
caches. Times are read from the demo's own lines as they arrive:

* ``first count``: from the process's start to the triangle view's count (imports,
  generating and loading the graph, compiling the batch-count kernels);
* ``warm_up``: compiling the generated tick kernels of the demo's two views;
* ``total``: the whole process.

Compile times on this shared 2-core host drift by up to 1.5x between runs: use
``--rounds``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import header
from benchmarks.bench_tick_ab import base_tree

ROOT = Path(__file__).resolve().parents[1]


def run_demo(tree: Path, caches: Path, edges: int, ticks: int) -> dict[str, float]:
    """One demo process over ``tree`` with its caches in ``caches``: the times above."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(caches / "numba"), WCOJ_CACHE_DIR=str(caches / "wcoj"),
               PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "queries.graph_demo", "--edges", str(edges), "--ticks", str(ticks), "--quiet"]
    t0 = time.perf_counter()
    marks: dict[str, float] = {}
    with subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            now = time.perf_counter() - t0
            if line.startswith("triangle:"):
                marks["first count"] = now
            elif line.startswith("4-cycle:"):
                marks["4-cycle"] = now
            elif line.split()[:1] == ["tick"]:
                marks["warm_up"] = now - marks.get("4-cycle", now)
    total = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"the demo failed in {tree} (exit {p.returncode})")
    return {"first count": marks["first count"], "warm_up": marks["warm_up"], "total": total}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="also run this commit's tree (e.g. HEAD~1)")
    ap.add_argument("--edges", type=int, default=100_000, help="edges of the demo's graph (default 100000)")
    ap.add_argument("--ticks", type=int, default=5, help="the demo's ticks (default 5)")
    ap.add_argument("--rounds", type=int, default=1, help="cold runs of each tree (default 1)")
    a = ap.parse_args(argv)
    trees = {"new": ROOT} | ({"base": base_tree(a.base)} if a.base else {})
    print(header("first_use", 0, base=a.base or "-", edges=a.edges, ticks=a.ticks))
    print(f"{'round':>5}  {'tree':<5} {'cache':<5} {'first count s':>14} {'warm_up s':>10} {'total s':>8}")
    got: dict[tuple[str, str], list[dict]] = {}
    for r in range(a.rounds):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for name in order:
            with tempfile.TemporaryDirectory(prefix="wcoj-first-use-") as d:
                for cache in ("cold", "warm"):
                    t = run_demo(trees[name], Path(d), a.edges, a.ticks)
                    got.setdefault((name, cache), []).append(t)
                    print(f"{r + 1:>5}  {name:<5} {cache:<5} {t['first count']:>14.1f} {t['warm_up']:>10.1f} "
                          f"{t['total']:>8.1f}", flush=True)
    print("\nmedian over rounds:")
    for (name, cache), runs in got.items():
        med = {k: statistics.median(t[k] for t in runs) for k in runs[0]}
        print(f"  {name:<5} {cache:<5} first count {med['first count']:.1f} s, warm_up {med['warm_up']:.1f} s, "
              f"total {med['total']:.1f} s")


if __name__ == "__main__":
    main()
