"""``q`` and a triangle view on ``bench_datalog``'s database, on this tree and another.

Medians over ``--repeat`` runs of: ``q`` of a small join that matches one row, of a
count over every ``:knows`` edge, of the triangle query, of the ancestors rule (counted);
then, with a triangle view registered, ``transact`` of k ``:knows`` datoms (half
retractions) for each k of ``--tx``. With ``--tree DIR`` the same runs on another
checkout (a ``git worktree`` of an older commit) in a subprocess and both are printed side
by side. Run:

    python -m benchmarks.bench_q --people 4000 --edges 40000 --tree ../old
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import numpy as np

from benchmarks._common import Results, add_json_arg

SMALL = '[:find ?n :where [?a :name ?n] [?a :knows ?b] [?b :name "p7"]]'
COUNT = '[:find (count ?b) . :with ?a :where [?a :knows ?b]]'


def measure(people: int, edges: int, tx: list[int], repeat: int, seed: int) -> dict:
    """The timings of the tree this process imports, in ms."""
    from benchmarks.bench_datalog import ANCESTORS, RULES, TRIANGLE, apply, build, make_tx
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(seed)
    db, eids, current, _ = build(people, edges, rng)

    def med(fn, n=repeat):
        fn()  # compiled once, kernels loaded
        xs = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            xs.append(time.perf_counter() - t)
        return statistics.median(xs) * 1e3

    out = {"q small": med(lambda: db.q(SMALL)), "q count": med(lambda: db.q(COUNT)),
           "q triangle": med(lambda: db.q(TRIANGLE)),
           "q ancestors": med(lambda: db.q(ANCESTORS, RULES))}
    db.view(TRIANGLE)
    for k in tx:
        xs = []
        for _ in range(repeat):
            data, ops = make_tx(":knows", current, k, people, rng, eids)
            t = time.perf_counter()
            db.transact(data)
            xs.append(time.perf_counter() - t)
            apply(current, ops)
        out[f"triangle view, tx of {k}"] = statistics.median(xs) * 1e3
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--people", type=int, default=4000)
    p.add_argument("--edges", type=int, default=40000)
    p.add_argument("--tx", type=int, nargs="+", default=[1, 100, 10000])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tree", help="another checkout to measure the same way, side by side")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    add_json_arg(p)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(measure(a.people, a.edges, a.tx, a.repeat, a.seed)))
        return
    results = Results("q", a.seed, args=vars(a), people=a.people, edges=a.edges)
    print(results.header)
    from benchmarks._common import run_trees  # the child may run an older _common
    trees = run_trees(__file__, lambda: measure(a.people, a.edges, a.tx, a.repeat, a.seed), a.tree, [
        "--people", str(a.people), "--edges", str(a.edges), "--repeat", str(a.repeat),
        "--seed", str(a.seed), "--tx", *map(str, a.tx)])
    names = list(trees)
    print(f"{'ms':28}" + "".join(f"{n[-20:]:>22}" for n in names)
          + (f"{'other/this':>12}" if len(names) == 2 else ""))
    for key in trees["this tree"]:
        vals = [trees[n][key] for n in names]
        ratio = f"{vals[1] / vals[0]:11.2f}x" if len(vals) == 2 else ""
        print(f"{key:28}" + "".join(f"{v:22.2f}" for v in vals) + ratio)
        results.add("q", what=key, **{n: trees[n][key] for n in names})
    results.write(a.json)


if __name__ == "__main__":
    main()
