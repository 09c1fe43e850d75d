"""Transactions: what ``Database.transact`` costs per form kind, and ``load_datoms`` beside it.

One row per case and size: the median milliseconds of one transaction of ``n`` datoms on
a fresh database that holds ``n`` entities already (built outside the timing), and the
datoms per second. Cases:

``list-new``     ``[:db/add "t<i>" :p/n i]``: one new entity per datom (tempids)
``list-update``  ``[:db/add eid :p/n v]`` on existing entities: cardinality-one replacement
``list-ref``     ``[:db/add [:p/key k] :p/friend [:p/key k2]]``: lookup refs on both sides
``retract``      ``[:db/retract eid :p/n v]`` of live datoms
``map-new``      ``{:p/key k :p/n i :p/name s :p/tag #{...}}``: n/4 maps of four datoms
``upsert``       maps whose ``:p/key`` (unique identity) exists: n/2 maps of two datoms
``load_datoms``  the same as ``list-update`` through the array loader

A second table times the rules alone: ``queries.transact.resolve`` (or ``bulk``) inside
a transaction that is rolled back, without staging, committing or logging.

To compare two versions, run this file from each tree (the header names the commit)::

    python -m benchmarks.bench_transact --sizes 1e3 1e4 --repeat 5
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._common import base_parser, fmt_ms, header, row_printer
from queries.database import Database

SCHEMA = '''[{:db/ident :p/key :db/valueType :db.type/long :db/unique :db.unique/identity}
             {:db/ident :p/n :db/valueType :db.type/long}
             {:db/ident :p/name :db/valueType :db.type/string}
             {:db/ident :p/tag :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
             {:db/ident :p/friend :db/valueType :db.type/ref}]'''


def _base(n: int) -> tuple[Database, list[int]]:
    db = Database()
    db.transact(SCHEMA)
    r = db.transact([{":db/id": f"e{i}", ":p/key": i, ":p/n": i} for i in range(n)])
    return db, [r.tempids[f"e{i}"] for i in range(n)]


def _cases(n: int, eids: list[int]) -> dict:
    tags = [":a", ":b", ":c"]
    return {
        "list-new": lambda: [[":db/add", f"t{i}", ":p/n", i] for i in range(n)],
        "list-update": lambda: [[":db/add", e, ":p/n", -i] for i, e in enumerate(eids)],
        "list-ref": lambda: [[":db/add", [":p/key", i], ":p/friend", [":p/key", (i + 1) % n]]
                             for i in range(n)],
        "retract": lambda: [[":db/retract", e, ":p/n", i] for i, e in enumerate(eids)],
        "map-new": lambda: [{":p/key": n + i, ":p/n": i, ":p/name": f"s{i}",
                             ":p/tag": {tags[i % 3]}} for i in range(n // 4)],
        "upsert": lambda: [{":p/key": i, ":p/n": -i} for i in range(n // 2)],
    }


def _time(n: int, build, run, repeat: int) -> float:
    times = []
    for k in range(repeat + 1):   # the first run warms up (JIT compilation)
        db, eids = _base(n)
        arg = build(n, eids)
        t0 = time.perf_counter()
        run(db, arg)
        if k:
            times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def _time_resolve(n: int, case: str, repeat: int) -> float:
    from queries.transact import bulk, resolve
    times = []
    for k in range(repeat + 1):
        db, eids = _base(n)
        if case == "load_datoms":
            e, a, v = np.array(eids), np.full(n, ":p/n", dtype=object), -np.arange(n)
            def run(db=db, e=e, a=a, v=v):
                return bulk(db.store, e, a, v)
        else:
            tx = _cases(n, eids)[case]()
            def run(db=db, tx=tx):
                return resolve(db.store, tx)
        with db.store.transaction():   # left without commit: rolled back
            t0 = time.perf_counter()
            run()
            if k:
                times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main(argv=None) -> None:
    args = base_parser(__doc__.splitlines()[0], sizes=("1e3", "1e4")).parse_args(argv)
    print(header("bench_transact", args.seed))
    row = row_printer(["case", "n", "ms", "datoms/s"], [12, 7, 9, 10])
    for n in args.sizes:
        for case in ("list-new", "list-update", "list-ref", "retract", "map-new", "upsert"):
            ms = _time(n, lambda n, e, c=case: _cases(n, e)[c](),
                       lambda db, tx: db.transact(tx), args.repeat)
            row(case, n, fmt_ms(ms), f"{n / ms * 1e3:,.0f}")
        ms = _time(n, lambda n, e: (np.array(e), -np.arange(n)),
                   lambda db, a: db.load_datoms(a[0], ":p/n", a[1]), args.repeat)
        row("load_datoms", n, fmt_ms(ms), f"{n / ms * 1e3:,.0f}")
    print("\nthe rules alone (resolve / bulk, nothing staged)")
    row = row_printer(["case", "n", "ms", "datoms/s"], [12, 7, 9, 10])
    for n in args.sizes:
        for case in ("list-new", "list-update", "list-ref", "retract", "map-new", "upsert",
                     "load_datoms"):
            ms = _time_resolve(n, case, args.repeat)
            row(case, n, fmt_ms(ms), f"{n / ms * 1e3:,.0f}")


if __name__ == "__main__":
    main()
