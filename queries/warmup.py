"""Getting a process ready for a long stream of ticks: ``warm_up`` runs the tick kernels
of some patterns once (compiling them, or reading Numba's disk cache), ``warm_up_views``
does the same for the steps of Datalog views, and ``settle_heap`` keeps the loaded heap out
of the cyclic collector's sight.

Both are choices for a whole process, which the library never makes on its own:
``wcoj stream``, the demos and the benchmarks call them. Relies on ``queries.graph`` and
``queries.database`` (the tiny graph and database the warm-ups run, imported when called:
``queries.graph`` re-exports ``warm_up`` and ``settle_heap``).

>>> warm_up(("triangle",), streams=False)
"""

from __future__ import annotations

import atexit
import gc

import numpy as np

from wcoj import config

__all__ = ["settle_heap", "warm_up", "warm_up_views"]


def settle_heap() -> None:
    """Move every object now alive out of the cyclic garbage collector's sight (``gc.freeze``).

    Call it once after loading a graph and registering its views, before a long stream
    of ticks. Python's full collections rescan every live container; with Numba and the
    engine loaded a full collection takes tens of milliseconds, and ticks trigger one
    every few dozen ticks. Frozen objects are never collected, so this is a process-wide
    choice: the library never makes it on its own (``wcoj stream``, the demo and the
    benchmarks do). At exit the objects are handed back to the collector
    (``gc.unfreeze``), so that the interpreter's last collection still finalises them.
    """
    global _UNFREEZE_AT_EXIT
    gc.collect()
    gc.freeze()
    if not _UNFREEZE_AT_EXIT:
        atexit.register(gc.unfreeze)
        _UNFREEZE_AT_EXIT = True


_UNFREEZE_AT_EXIT = False


def warm_up(patterns=("triangle",), directed: bool = False, staged: bool = False, streams: bool = True) -> None:
    """Run a tiny graph through a tick's kernels for ``patterns`` (their first call in a
    process compiles them or reads Numba's disk cache), touching no state of yours: the
    change-by-change route and its trie growth; ``apply_stream``'s driver unless
    ``streams=False``; the staged route (ticks above ``config.CHANGE_ROWS``) only with
    ``staged=True``. ``wcoj stream``, the demo and the benchmarks call it."""
    from queries.graph import Graph  # here: queries.graph re-exports this module's functions

    rng = np.random.default_rng(0)
    g = Graph(directed=directed)
    g.load_edges(rng.integers(0, 40, (200, 2)))
    for p in patterns:
        g.view(p)
    g.apply(inserts=np.array([[1, 2], [2, 3], [1, 3]]), deletes=np.array([[1, 2]]))
    g.apply(inserts=rng.integers(0, 300, (600, 2)), deletes=g.edges()[::3])  # tries grow: resumed calls
    if streams:
        g.apply_stream([(rng.integers(0, 300, (2, 2)), g.edges()[:1]) for _ in range(3)])
    if staged:
        saved = config.CHANGE_ROWS
        config.CHANGE_ROWS = 0
        try:
            g.apply(inserts=rng.integers(0, 300, (600, 2)), deletes=g.edges()[::3])
        finally:
            config.CHANGE_ROWS = saved
    g.check_views()


_VIEWS_SCHEMA = ('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
                 ' {:db/ident :knows :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}'
                 ' {:db/ident :parent :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
_VIEWS = (('[:find ?a ?b ?c :where [?a :knows ?b] [?b :knows ?c] [?c :knows ?a]]', ()),
          ('[:find (count ?b) . :in $ % :where (anc ?a ?b)]',
           ('[[(anc ?a ?b) [?a :parent ?b]] [(anc ?a ?b) [?a :parent ?x] (anc ?x ?b)]]',)),
          ('[:find (count ?b) . :in $ % ?n :where [?a :name ?n] (reach ?a ?b)]',
           ('[[(reach ?a ?b) [?a :knows ?b]] [(reach ?a ?b) [?a :knows ?x] (reach ?x ?b)]]', "p1")))


def warm_up_views() -> None:
    """Run a tiny database of its own through the steps of Datalog views, touching no
    database of yours: a cyclic view (the incremental join's program) and two recursive
    rules' views (their compiled epochs, the traces' merges), each through transactions of
    one and of a few hundred datoms, adds and retracts. The first call of each kernel in a
    process compiles it or reads Numba's disk cache: without this, a view's first two
    steps pay that, 30-60 ms once per process (its registration loads what ``q`` runs).
    A process-wide choice, like ``warm_up``: the library never makes it on its own.

    >>> warm_up_views()
    """
    from queries.database import Database  # here: queries.database imports nothing of this module

    rng = np.random.default_rng(0)
    n = 600
    db = Database()
    db.transact(_VIEWS_SCHEMA)
    ids = db.transact([{":db/id": f"p{i}", ":name": f"p{i}"} for i in range(n)]).tempids
    eids = np.array([ids[f"p{i}"] for i in range(n)], dtype=np.int64)
    pairs = rng.integers(0, n, (3 * n, 2))
    db.load_datoms(eids[pairs[:, 0]], ":knows", eids[pairs[:, 1]])
    kids = np.arange(1, n)
    db.load_datoms(eids[kids], ":parent", eids[rng.integers(0, kids)])
    views = [db.view(q, *inputs) for q, inputs in _VIEWS]
    for size in (1, 300, 1, 300):
        tx = []
        for attr in (":knows", ":parent"):
            a, b = rng.integers(0, n, size), rng.integers(0, n, size)
            a, b = (np.maximum(a, b), np.minimum(a, b)) if attr == ":parent" else (a, b)
            keep = a != b
            tx += [[":db/add", int(eids[x]), attr, int(eids[y])] for x, y in zip(a[keep], b[keep])]
            old = db.datoms(":aevt", attr)[: max(1, size // 2)]
            tx += [[":db/retract", d.e, attr, d.v] for d in old]
        db.transact(tx)
        for v in views:
            v.result()
