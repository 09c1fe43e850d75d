"""The join kernels of this tree against those of another commit, in one process.

Run ``./dev bench kernel_ab --base REV`` (e.g. ``HEAD~1``). This host's timings drift by up
to 2x between runs, so a kernel change is judged here by alternating the two versions on
the same inputs, never by two separate runs:

* ``ticks``: a triangle view over a generated power-law graph takes ticks of k random
  edge changes (90% inserts); on one tick per k, ``run_program`` (every delta term in one
  jitted call) is replayed ``--reps`` times per version, alternating which goes first, on
  the same arguments. Replays are hot (the tick's data is cached), so this measures the
  kernels' work, not their cache misses.
* ``batch``: ``Graph.count("triangle")`` on generated graphs (power-law, skewed), and
  with ``--real`` on the graphs of ``../shared/data/graphs`` that are present, with the
  join module pointed at either version's kernels before each count.

The other commit's ``wcoj/kernels`` is read with ``git show`` into a temporary package
and compiled there (its first use pays Numba's compilation). Both versions must agree on
every result; the script stops otherwise. Prints medians and ``base/new`` (> 1: this tree
is faster).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import wcoj.generic_join as gj
from benchmarks._common import header
from benchmarks.bench_triangles import GRAPHS, REAL, make_tick, oriented, read_edges, skewed
from queries.graph import Graph
from queries.graphio import generate_power_law

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ["run_program", "run_levels", "count_tail", "count_tail_parallel", "slot_table"]


def load_kernels(rev: str, where: Path):
    """``wcoj/kernels/term.py`` as of ``rev``, imported from a copy of its package under ``where``."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{rev}:wcoj/kernels"],
                           capture_output=True, text=True, check=True).stdout.split()
    pkg = where / "kernels_base"
    pkg.mkdir()
    for name in names:
        if name.endswith(".py"):
            src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:wcoj/kernels/{name}"],
                                 capture_output=True, text=True, check=True).stdout
            (pkg / name).write_text(src)
    sys.path.insert(0, str(where))
    return importlib.import_module("kernels_base.term")


def base_args(fn, a: tuple) -> tuple:
    """``run_program``'s arguments ``a`` for ``fn``: a base from before ``term_seed``
    (the seeded delta levels) takes one argument fewer, and runs every level generically."""
    return a if fn.py_func.__code__.co_argcount == len(a) else a[:-3] + a[-2:]


def same(r1, r2) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(r1, r2) if isinstance(x, np.ndarray))


def ticks_section(base, args) -> None:
    print(f"\n## run_program replayed on one tick per k (power-law graph, {args.edges:.0e} edges; microseconds)")
    print(f"{'k':>8}{'calls':>7}{'new':>11}{'base':>11}{'base/new':>10}")
    edges = oriented(generate_power_law(int(args.edges), seed=args.seed))
    g = Graph()
    g.load_edges(edges)
    g.view("triangle")
    rng = np.random.default_rng(args.seed)
    n = int(edges.max()) + 1
    new = gj.run_program
    for _ in range(20):  # a few runs per index, as in a stream
        g.apply(*make_tick(rng, edges, n, 1000))
    for k in args.ks:
        t_new, t_base = [], []

        def replay(*a):
            r = new(*a)
            b = base_args(base.run_program, a)
            if not same(r, base.run_program(*b)):
                raise SystemExit(f"k={k}: the two versions' results differ")
            for i in range(args.reps):
                pair = ((new, t_new, a), (base.run_program, t_base, b))
                for f, ts, fa in (pair if i % 2 else pair[::-1]):
                    t = time.perf_counter()
                    f(*fa)
                    ts.append(time.perf_counter() - t)
            return r

        gj.run_program = replay
        try:
            g.apply(*make_tick(rng, edges, n, k))
        finally:
            gj.run_program = new
        if not t_new:  # a small tick of one view runs in edge_tick, which calls run_program inside the JIT
            print(f"{k:>8}{0:>7}  (no run_program call to replay: the tick took the one-kernel path)", flush=True)
            continue
        a, b = np.median(t_new), np.median(t_base)
        print(f"{k:>8}{len(t_new):>7}{a * 1e6:>11.1f}{b * 1e6:>11.1f}{b / a:>10.3f}", flush=True)


def batch_section(base, args) -> None:
    print(f"\n## Graph.count('triangle'), medians of {args.reps} alternating counts (milliseconds)")
    print(f"{'graph':<18}{'new':>10}{'base':>10}{'base/new':>10}")
    new = {k: getattr(gj, k) for k in KERNELS}
    old = {k: getattr(base, k) for k in KERNELS}
    graphs = [(f"powerlaw-{args.edges:.0e}", lambda: generate_power_law(int(args.edges), seed=args.seed))]
    graphs += [(f"skewed-{m:.0e}", lambda m=m: skewed(int(m))) for m in args.skewed_edges]
    if args.real:
        graphs += [(f.split(".")[0], lambda f=f: read_edges(GRAPHS / f)) for f in REAL if (GRAPHS / f).exists()]
    try:
        for name, make in graphs:
            g = Graph()
            g.load_edges(oriented(make()))
            counts, times = [], {0: [], 1: []}
            for i in range(args.reps + 1):
                for which in ((0, 1) if i % 2 else (1, 0)):
                    for k, f in (new if which == 0 else old).items():
                        setattr(gj, k, f)
                    t = time.perf_counter()
                    counts.append(g.count("triangle"))
                    if i:  # the first pair compiles and warms up
                        times[which].append(time.perf_counter() - t)
            if len(set(counts)) != 1:
                raise SystemExit(f"{name}: the two versions' counts differ: {sorted(set(counts))}")
            a, b = np.median(times[0]), np.median(times[1])
            print(f"{name:<18}{a * 1e3:>10.2f}{b * 1e3:>10.2f}{b / a:>10.3f}", flush=True)
    finally:
        for k, f in new.items():
            setattr(gj, k, f)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="the commit whose kernels to compare against (e.g. HEAD~1)")
    p.add_argument("--sections", nargs="+", default=["ticks", "batch"], choices=["ticks", "batch"])
    p.add_argument("--edges", type=float, default=1e6, help="edges of the power-law graph")
    p.add_argument("--skewed-edges", type=float, nargs="+", default=[3e4, 1e5])
    p.add_argument("--ks", type=int, nargs="+", default=[10, 1000, 100_000])
    p.add_argument("--real", action="store_true",
                   help="batch also on the graphs of ../shared/data/graphs (those present)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(header("bench_kernel_ab", args.seed, base=args.base))
    with tempfile.TemporaryDirectory() as tmp:
        base = load_kernels(args.base, Path(tmp))
        if "ticks" in args.sections:
            ticks_section(base, args)
        if "batch" in args.sections:
            batch_section(base, args)


if __name__ == "__main__":
    main()
