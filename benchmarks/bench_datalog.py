"""Datalog views versus re-running q after every transaction.

Two queries over generated data: a cyclic one (triangles of ``:knows`` edges, kept by the
incremental generic join) and a recursive rule (ancestors over a random ``:parent`` forest,
kept by the rule's child circuit, ``queries.circuits``; the count is per-group state). For transactions of 1, 100 and 10,000
datoms (half adds, half retracts of existing datoms), the median time of
``transact`` with the view registered (the view's change included) is set against
``transact`` without views followed by ``q``. Run:

    python -m benchmarks.bench_datalog --people 3000 --edges 30000 --repeat 3 --seed 0

``--json FILE`` also writes the rows (table ``views``) for ``benchmarks/plots.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks._common import Results, add_json_arg, header
from queries.database import Database

SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :knows :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :parent :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]'''
TRIANGLE = '[:find ?a ?b ?c :where [?a :knows ?b] [?b :knows ?c] [?c :knows ?a]]'
RULES = '[[(anc ?a ?b) [?a :parent ?b]] [(anc ?a ?b) [?a :parent ?x] (anc ?x ?b)]]'
ANCESTORS = '[:find (count ?b) . :in $ % :where (anc ?a ?b)]'


def build(n_people: int, n_edges: int, rng: np.random.Generator):
    db = Database()
    db.transact(SCHEMA)
    r = db.transact([{":db/id": f"p{i}", ":name": f"p{i}"} for i in range(n_people)])
    eids = np.array([r.tempids[f"p{i}"] for i in range(n_people)])
    edges = {tuple(x) for x in rng.integers(0, n_people, (n_edges, 2)).tolist() if x[0] != x[1]}
    parents = {(i, int(rng.integers(0, i))) for i in range(1, n_people // 4)}
    for attr, pairs in ((":knows", edges), (":parent", parents)):
        arr = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
        db.load_datoms(eids[arr[:, 0]], attr, eids[arr[:, 1]])
    return db, eids, edges, parents


def make_tx(attr, current, k, n, rng, eids):
    """k datoms: k//2 retractions of existing pairs, the rest new pairs."""
    cur = list(current)
    out = []
    for i in rng.choice(len(cur), size=min(k // 2, len(cur)), replace=False).tolist():
        a, b = cur[i]
        out.append((":db/retract", a, b))
    while len(out) < k:
        a, b = (int(x) for x in rng.integers(0, n, 2))
        if attr == ":parent":
            a, b = max(a, b), min(a, b)
        if a != b and (a, b) not in current:
            out.append((":db/add", a, b))
    return [[op, int(eids[a]), attr, int(eids[b])] for op, a, b in out], out


def apply(current, ops):
    for op, a, b in ops:
        (current.add if op == ":db/add" else current.discard)((a, b))


def run(args) -> Results:
    res = Results("bench_datalog", args.seed, args=vars(args), people=args.people, edges=args.edges)
    print(header("bench_datalog", args.seed, people=args.people, edges=args.edges))
    measure(args.people, args.edges, args.tx, args.repeat, args.seed, res)
    res.write(getattr(args, "json", None))
    return res


def measure(people: int = 3000, edges: int = 30000, tx=(1, 100, 10000), repeat: int = 3, seed: int = 0,
            results: Results | None = None) -> Results:
    """One row per query and transaction size (table ``views``), printed as measured."""
    args = argparse.Namespace(people=people, edges=edges, tx=list(tx), repeat=repeat, seed=seed)
    results = results or Results("bench_datalog", seed, people=people, edges=edges)
    print(f"{'query':10} {'tx_datoms':>9} {'view_ms':>10} {'requery_ms':>11} "
          f"{'view/requery':>13}")
    for name, query, inputs, attr in [("triangle", TRIANGLE, (), ":knows"),
                                      ("ancestors", ANCESTORS, (RULES,), ":parent")]:
        for k in args.tx:
            rng = np.random.default_rng(args.seed)
            with_view, plain = [build(args.people, args.edges, rng)[:4] for _ in range(2)]
            view_db, eids, edges_v, parents_v = with_view
            plain_db, _, edges_p, parents_p = plain
            view = view_db.view(query, *inputs)
            plain_db.q(query, *inputs)  # warm-up: JIT compilation is not what we measure
            for d, cur in ((view_db, edges_v if attr == ":knows" else parents_v),
                           (plain_db, edges_p if attr == ":knows" else parents_p)):
                tx, ops = make_tx(attr, cur, 2, args.people // 4, np.random.default_rng(99),
                                  eids)
                d.transact(tx)
                apply(cur, ops)
            tv, tq = [], []
            for r in range(args.repeat):
                cur_v = edges_v if attr == ":knows" else parents_v
                cur_p = edges_p if attr == ":knows" else parents_p
                tx, ops = make_tx(attr, cur_v, k, args.people if attr == ":knows"
                                  else args.people // 4, np.random.default_rng(args.seed + r),
                                  eids)
                t0 = time.perf_counter()
                view_db.transact(tx)
                view.result() if name == "ancestors" else None
                tv.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                plain_db.transact(tx)
                plain_db.q(query, *inputs)
                tq.append(time.perf_counter() - t0)
                apply(cur_v, ops)
                if cur_p is not cur_v:
                    apply(cur_p, ops)
            mv, mq = statistics.median(tv) * 1e3, statistics.median(tq) * 1e3
            results.add("views", query=name, tx_datoms=k, view_ms=mv, requery_ms=mq)
            print(f"{name:10} {k:9d} {mv:10.1f} {mq:11.1f} {mv / mq:12.3f}x", flush=True)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--people", type=int, default=3000)
    p.add_argument("--edges", type=int, default=30000)
    p.add_argument("--tx", type=int, nargs="+", default=[1, 100, 10000])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    add_json_arg(p)
    run(p.parse_args())


if __name__ == "__main__":
    main()
