"""Where a cold start's compile time goes: Numba's compile events per kernel.

Run ``./dev bench compile`` (``--tree DIR`` measures another checkout; ``--patterns``
also runs ``warm_up`` of those patterns' tick kernels). The job runs in a fresh process
whose Numba cache (``NUMBA_CACHE_DIR``) and generated-kernel cache (``WCOJ_CACHE_DIR``)
are new empty directories, as on a fresh clone: it generates the demo's power-law graph
(``--edges``), loads it and counts its triangles, the path to the demo's first count.
``--job recursion`` times instead a user's first recursive Datalog query (the transitive
closure of ``bench_datalog``'s 100-person follows graph), then a recursive view (the
ancestors rule over 400 people) and one transaction.
Numba announces each compilation ("numba:compile" in ``numba.core.event``); the listener
times them, and a compilation's *own* time leaves out the callees it compiled meanwhile.
Prints the wall time of each step and the kernels by own time (``--top``), with their
time including callees and how many versions were compiled.

``./dev bench first_use`` times the whole demo; this says which kernels to look at. A
kernel that appears with 2 or more versions was compiled for more than one set of
argument types: the rules in ``wcoj/kernels/__init__.py`` say how to avoid that.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import header

ROOT = Path(__file__).resolve().parents[1]


def _recursion(steps: dict) -> None:
    """A first recursive query, then a recursive view and one transaction."""
    import numpy as np

    from benchmarks.bench_datalog import BATCH, VIEW_QUERIES, _engine, build, follows_graph, make_tx
    t = time.perf_counter()
    _engine(100, *follows_graph(100, 0), BATCH["closure"])
    steps["first recursive q (closure, 100 people)"] = time.perf_counter() - t
    t = time.perf_counter()
    query, inputs, attr = VIEW_QUERIES["ancestors"]
    db, eids, _, facts = build(400, 4000, np.random.default_rng(0))[:4]
    view = db.view(query, *inputs)
    db.transact(make_tx(attr, facts, 1, 100, np.random.default_rng(1), eids)[0])
    view.result()
    steps["ancestors view and one transaction"] = time.perf_counter() - t


def _worker(edges: int, patterns: list[str], top: int, job: str = "demo") -> None:
    """In the fresh process: the job, with every compilation timed."""
    t0 = time.perf_counter()
    from numba.core import event

    stack: list[list] = []
    own: collections.Counter = collections.Counter()
    whole: collections.Counter = collections.Counter()
    versions: collections.Counter = collections.Counter()

    class Timer(event.Listener):
        def on_start(self, ev):
            f = ev.data["dispatcher"].py_func
            stack.append([f"{f.__module__.rsplit('.', 1)[-1]}.{f.__qualname__}", time.perf_counter(), 0.0])

        def on_end(self, ev):
            name, start, inner = stack.pop()
            dt = time.perf_counter() - start
            own[name] += dt - inner
            whole[name] += dt
            versions[name] += 1
            if stack:
                stack[-1][2] += dt

    event.register("numba:compile", Timer())
    steps = {"imports": time.perf_counter() - t0}
    if job == "recursion":
        _recursion(steps)
        return _report(steps, own, whole, versions, top)
    from queries.graph import Graph, warm_up
    from queries.graphio import generate_power_law
    t = time.perf_counter()
    g = Graph()
    g.load_edges(generate_power_law(edges, 0, avg_degree=4.0, max_degree=40))
    steps["generate and load"] = time.perf_counter() - t
    t = time.perf_counter()
    count = g.view("triangle").count
    steps[f"first triangle count ({count:,})"] = time.perf_counter() - t
    if patterns:
        t = time.perf_counter()
        warm_up(tuple(patterns), streams=False)
        steps[f"warm_up {' '.join(patterns)}"] = time.perf_counter() - t
    _report(steps, own, whole, versions, top)


def _report(steps: dict, own, whole, versions, top: int) -> None:
    for name, s in steps.items():
        print(f"{name:>40}: {s:7.2f} s")
    print(f"{'compiling, in all':>40}: {sum(own.values()):7.2f} s\n")
    print(f"{'own s':>7} {'with callees s':>15} {'versions':>9}  kernel")
    for name, s in own.most_common(top):
        print(f"{s:7.2f} {whole[name]:15.2f} {versions[name]:9d}  {name}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=str(ROOT), help="the checkout to measure (default: this one)")
    ap.add_argument("--edges", type=int, default=100_000, help="edges of the demo's graph (default 100000)")
    ap.add_argument("--patterns", nargs="*", default=[], help="also warm_up these patterns' tick kernels")
    ap.add_argument("--top", type=int, default=25, help="kernels listed (default 25)")
    ap.add_argument("--job", choices=["demo", "recursion"], default="demo",
                    help="the demo's first triangle count (default), or a first recursive Datalog query")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        _worker(a.edges, a.patterns, a.top, a.job)
        return
    print(header("compile", 0, tree=a.tree, job=a.job, edges=a.edges, patterns=" ".join(a.patterns) or "-"))
    with tempfile.TemporaryDirectory(prefix="wcoj-compile-") as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=f"{d}/numba", WCOJ_CACHE_DIR=f"{d}/wcoj", PYTHONPATH=a.tree,
                   PYTHONDONTWRITEBYTECODE="1")
        # this file's worker, the tree's engine: so an older checkout is measured the same way
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--job", a.job, "--edges", str(a.edges),
               "--top", str(a.top), "--patterns", *a.patterns]
        subprocess.run(cmd, cwd=a.tree, env=env, check=True)


if __name__ == "__main__":
    main()
