"""A view over many mutually recursive rules (an ontology-style class hierarchy) against q.

``K`` class predicates ``c0 .. c{K-1}``, each with two rules: a fact rule ``(ci ?x) :-
[?x :type i]`` and either a subclass rule ``(ci ?x) :- (c{i+1} ?x)`` or a property rule
``(ci ?x) :- [?x :rel ?y] (c{i+5} ?y)``; the subclass chain closes on itself, so all ``K``
predicates are one recursive component (like the class rules of the LUBM university
ontology). ``N`` entities each get one random ``:type`` and one random ``:rel``. Measured:
``q`` of ``(count ?x)`` over ``c0``, registering a view of it, then per transaction size k
(``load_datoms`` of k new ``:type`` datoms) the median time of the transaction with the
view registered against re-running ``q`` after it; every view answer is checked against q.
Run:

    python -m benchmarks.bench_ontology --entities 10000 --classes 24 --repeat 3

With ``--tree DIR`` the same measurement runs on another checkout (e.g. a ``git worktree``
of an older commit) in a subprocess, and both are printed side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import numpy as np

from benchmarks._common import Results, add_json_arg

QUERY = "[:find (count ?x) . :in $ % :where (c0 ?x)]"


def rules_text(k: int) -> str:
    rules = []
    for i in range(k):
        rules.append(f"[(c{i} ?x) [?x :type {i}]]")
        rules.append(f"[(c{i} ?x) (c{(i + 1) % k} ?x)]" if i % 3 else
                     f"[(c{i} ?x) [?x :rel ?y] (c{(i + 5) % k} ?y)]")
    return "[" + " ".join(rules) + "]"


def measure(n: int, k: int, sizes: list[int], repeat: int, seed: int) -> dict:
    """The timings of one tree (run in this process)."""
    from queries.database import Database
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(seed)
    db = Database()
    db.transact('[{:db/ident :type :db/valueType :db.type/long :db/cardinality :db.cardinality/many}'
                ' {:db/ident :rel :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
    ents = np.arange(1, n + 1)
    db.load_datoms(ents, ":type", rng.integers(0, k, n))
    db.load_datoms(rng.integers(1, n + 1, n), ":rel", rng.integers(1, n + 1, n))
    rules = rules_text(k)
    t = time.perf_counter()
    answer = db.q(QUERY, rules)
    out = {"q_s": time.perf_counter() - t, "answer": answer}
    t = time.perf_counter()
    view = db.view(QUERY, rules)
    out["register_s"] = time.perf_counter() - t
    for size in sizes:
        ups, qs = [], []
        for _ in range(repeat):
            e, c = rng.integers(1, n + 1, size), rng.integers(0, k, size)
            t = time.perf_counter()
            db.load_datoms(e, ":type", c)
            ups.append(time.perf_counter() - t)
            t = time.perf_counter()
            again = db.q(QUERY, rules)
            qs.append(time.perf_counter() - t)
            if view.result() != again:
                raise AssertionError(f"the view ({view.result()}) differs from q ({again})")
        out[f"update_{size}_ms"] = statistics.median(ups) * 1e3
        out[f"requery_{size}_ms"] = statistics.median(qs) * 1e3
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--entities", type=int, default=10_000)
    p.add_argument("--classes", type=int, default=24)
    p.add_argument("--sizes", default="1,100")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tree", help="another checkout to measure the same way, side by side")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    add_json_arg(p)
    a = p.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    if a.child:
        print(json.dumps(measure(a.entities, a.classes, sizes, a.repeat, a.seed)))
        return
    results = Results("ontology", a.seed, args=vars(a), entities=a.entities, classes=a.classes,
                      rules=2 * a.classes)
    print(results.header)
    from benchmarks._common import run_trees  # the child may run an older _common
    trees = run_trees(__file__, lambda: measure(a.entities, a.classes, sizes, a.repeat, a.seed), a.tree, [
        "--entities", str(a.entities), "--classes", str(a.classes), "--sizes", a.sizes,
        "--repeat", str(a.repeat), "--seed", str(a.seed)])
    for name, r in trees.items():
        print(f"{name}: q {r['q_s']:.2f} s (count {r['answer']}), view registered in "
              f"{r['register_s']:.2f} s")
        for size in sizes:
            up, rq = r[f"update_{size}_ms"], r[f"requery_{size}_ms"]
            print(f"  transaction of {size:>6} datoms: view update {up:9.1f} ms, re-run q "
                  f"{rq:9.1f} ms, view {rq / up:6.1f}x faster")
            results.add("ontology", tree=name, datoms=size, update_ms=up, requery_ms=rq,
                        q_s=r["q_s"], register_s=r["register_s"])
    results.write(a.json)


if __name__ == "__main__":
    main()
