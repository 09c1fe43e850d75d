"""Datalog views versus re-running the query after every transaction, and recursive
queries asked once versus DuckDB (and DataScript, when ``node`` can load it).

Views: a cyclic query (triangles of ``:knows`` edges, kept by the incremental generic
join) and two recursive rules (ancestors over a random ``:parent`` forest; everyone
``:knows``-reachable from one person, through the demand rewrite of ``queries.magic``),
kept by the rules' child circuits (``queries.circuits``). For transactions of 1, 100 and
10,000 datoms (half adds, half retracts of existing datoms), the median time of
``transact`` with the view registered (the view's change included) is set against
``transact`` without views followed by a fresh evaluation of the query (``--requery q``,
the default: ``db.q``, the first tick of the query's cached circuit; ``--requery view``: a
new view's first tick, compiled anew), and against DuckDB holding the same pairs in a
table, applying the same change and re-running the same query in SQL (wall time).

Batch (``--batch-people``): ``n`` people who each ``:follows`` 10 random people;
reachability from one person (named in the query's text, ``reach-one``, or given as an
``:in`` scalar, ``reach-input``) and the whole transitive closure (``--closure-people``),
asked once with ``db.q`` against DuckDB's recursive CTE over the same edges, and
DataScript (``npm install datascript`` in a temporary directory; skipped when ``node`` or
npm is missing, cut off after ``--datascript-timeout`` seconds). The closure runs each
engine once in a process of its own and reports its peak RSS (10,000 people: 10^8 pairs,
about a minute and 16 GB here). Run:

    python -m benchmarks.bench_datalog --people 3000 --edges 30000 --repeat 3 --seed 0

``--json FILE`` also writes the rows (table ``views``) for ``benchmarks/plots.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks._common import Results, add_json_arg, header
from queries.database import Database
from queries.graph import settle_heap

SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :knows :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :parent :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]'''
TRIANGLE = '[:find ?a ?b ?c :where [?a :knows ?b] [?b :knows ?c] [?c :knows ?a]]'
RULES = '[[(anc ?a ?b) [?a :parent ?b]] [(anc ?a ?b) [?a :parent ?x] (anc ?x ?b)]]'
ANCESTORS = '[:find (count ?b) . :in $ % :where (anc ?a ?b)]'
KNOWS = '[[(reach ?a ?b) [?a :knows ?b]] [(reach ?a ?b) [?a :knows ?x] (reach ?x ?b)]]'
REACH_ONE = '[:find (count ?b) . :in $ % :where [?a :name "p1"] (reach ?a ?b)]'
FOLLOWS_SCHEMA = ('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
                  ' {:db/ident :follows :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
FOLLOWS = '[[(reach ?a ?b) [?a :follows ?b]] [(reach ?a ?b) [?a :follows ?x] (reach ?x ?b)]]'
BATCH = {"reach-one": '[:find (count ?b) . :in $ % :where [?a :name "p1"] (reach ?a ?b)]',
         # the same with the name given as an input, as an application asks it
         "reach-input": '[:find (count ?b) . :in $ % ?name :where [?a :name ?name] (reach ?a ?b)]',
         "closure": '[:find (count ?b) . :in $ % :where (reach ?a ?b)]'}
SQL = {"reach-one": """WITH RECURSIVE r(b) AS (
           SELECT e.dst FROM e JOIN people p ON e.src = p.id WHERE p.name = 'p1'
           UNION SELECT e.dst FROM e JOIN r ON e.src = r.b)
       SELECT count(*) FROM r""",
       "closure": """WITH RECURSIVE r(a, b) AS (
           SELECT src, dst FROM e UNION SELECT e.src, r.b FROM e JOIN r ON e.dst = r.a)
       SELECT count(DISTINCT b) FROM r"""}
DATASCRIPT_JS = r"""
const d = require('datascript');
const [edgesFile, query] = process.argv.slice(2);
const {n, src, dst} = JSON.parse(require('fs').readFileSync(edgesFile));
const schema = {follows: {':db/valueType': ':db.type/ref', ':db/cardinality': ':db.cardinality/many'},
                name: {':db/unique': ':db.unique/identity'}};
const tx = [];
for (let i = 1; i <= n; i++) tx.push([':db/add', i, 'name', 'p' + (i - 1)]);
for (let i = 0; i < src.length; i++) tx.push([':db/add', src[i], 'follows', dst[i]]);
const db = d.db_with(d.empty_db(schema), tx);
const rules = '[[(reach ?a ?b) [?a "follows" ?b]] [(reach ?a ?b) [?a "follows" ?x] (reach ?x ?b)]]';
const t = process.hrtime.bigint();
const out = d.q(query, db, rules);
console.log(JSON.stringify({count: out, ms: Number(process.hrtime.bigint() - t) / 1e6}));
"""
DATASCRIPT_Q = {"reach-one": '[:find (count ?b) . :in $ % :where [?a "name" "p1"] (reach ?a ?b)]',
                "closure": '[:find (count ?b) . :in $ % :where (reach ?a ?b)]'}


def build(n_people: int, n_edges: int, rng: np.random.Generator, forest: int | None = None):
    """A database of ``n_people`` with ``n_edges`` random ``:knows`` and a random ``:parent``
    forest over the first ``forest`` people (default a quarter of them)."""
    db = Database()
    db.transact(SCHEMA)
    r = db.transact([{":db/id": f"p{i}", ":name": f"p{i}"} for i in range(n_people)])
    eids = np.array([r.tempids[f"p{i}"] for i in range(n_people)])
    edges = {tuple(x) for x in rng.integers(0, n_people, (n_edges, 2)).tolist() if x[0] != x[1]}
    parents = {(i, int(rng.integers(0, i))) for i in range(1, forest or n_people // 4)}
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
    if args.people:
        measure(args.people, args.edges, args.tx, args.repeat, args.seed, res,
                queries=args.queries, requery=args.requery, cpu=args.clock == "cpu", routes=args.routes,
                forest=args.forest)
    if args.batch_people:
        batch(args.batch_people, args.closure_people, args.repeat, args.seed, res,
              args.datascript_timeout)
    res.write(getattr(args, "json", None))
    return res


def requery_once(db: Database, query: str, inputs: tuple, how: str = "view"):
    """Evaluate ``query`` from scratch: a fresh view's first tick (what ``q`` runs), or ``q``."""
    if how == "q":
        return db.q(query, *inputs)
    v = db.view(query, *inputs, name="__requery")
    try:
        return v.result()
    finally:
        db.drop_view("__requery")


VIEW_QUERIES = {"triangle": (TRIANGLE, (), ":knows"), "ancestors": (ANCESTORS, (RULES,), ":parent"),
                "reach-one": (REACH_ONE, (KNOWS,), ":knows")}
# the same queries over a table r(a, b) of the attribute's pairs (person indexes), for DuckDB
VIEW_SQL = {"triangle": "SELECT count(*) FROM r x JOIN r y ON x.b = y.a JOIN r z "
                        "ON y.b = z.a AND z.b = x.a",
            "ancestors": "WITH RECURSIVE anc(a, b) AS (SELECT a, b FROM r UNION "
                         "SELECT r.a, anc.b FROM r JOIN anc ON r.b = anc.a) "
                         "SELECT count(DISTINCT b) FROM anc",
            "reach-one": "WITH RECURSIVE q(b) AS (SELECT b FROM r WHERE a = 1 UNION "
                         "SELECT r.b FROM r JOIN q ON r.a = q.b) SELECT count(*) FROM q"}


class _Duck:
    """DuckDB holding one attribute's pairs; ``change`` applies a transaction's ops then
    re-runs the query's SQL (wall time: DuckDB works on its own threads)."""

    def __init__(self, pairs, sql: str):
        import duckdb
        import pandas as pd
        self.con, self.sql = duckdb.connect(), sql
        df = pd.DataFrame(sorted(pairs), columns=["a", "b"])  # noqa: F841  (read by name)
        self.con.execute("CREATE TABLE r AS SELECT * FROM df")

    def change(self, ops) -> tuple[float, int]:
        import pandas as pd
        adds = pd.DataFrame([(a, b) for op, a, b in ops if op == ":db/add"], columns=["a", "b"])  # noqa: F841
        dels = pd.DataFrame([(a, b) for op, a, b in ops if op != ":db/add"], columns=["a", "b"])  # noqa: F841
        t0 = time.perf_counter()
        self.con.execute("DELETE FROM r WHERE (a, b) IN (SELECT a, b FROM dels)")
        self.con.execute("INSERT INTO r SELECT * FROM adds")
        got = self.con.execute(self.sql).fetchone()[0]
        return time.perf_counter() - t0, got


def _duck(pairs, name: str):
    try:
        return _Duck(pairs, VIEW_SQL[name])
    except ImportError:
        return None


def measure(people: int = 3000, edges: int = 30000, tx=(1, 100, 10000), repeat: int = 3, seed: int = 0,
            results: Results | None = None, queries=tuple(VIEW_QUERIES), requery: str = "q",
            cpu: bool = True, routes=("auto",), forest: int | None = None) -> Results:
    """One row per query, transaction size and view route (table ``views``), printed as
    measured. ``routes``: values of ``config.VIEW_REFRESH`` (``auto``: the view steps or
    refreshes as ``queries.refresh`` decides; ``never``: it always steps, the route before
    refreshes existed; ``always``), each on its own copy of the database, timed in turn
    (in alternating order) with the re-query in the same repeat. The loaded heap is frozen
    first (``settle_heap``), as a long-running process would do: otherwise Python's full
    collections (about 70 ms each here) land on every third or fourth 10,000-datom
    transaction, on either side. ``forest``: people in the ``:parent`` forest (default a
    quarter: then a 10,000-datom transaction at 4,000 or 40,000 people retracts most or all of
    it and the ancestors view refreshes, as ``q`` would).

    Both columns run the same single-threaded Python in this process, so by default they
    are timed in process CPU time, which the other jobs of a shared machine disturb far
    less than wall time (``cpu=False``: wall time).
    """
    from wcoj import config

    clock = time.process_time if cpu else time.perf_counter
    args = argparse.Namespace(people=people, edges=edges, tx=list(tx), repeat=repeat, seed=seed,
                              forest=forest or people // 4)
    results = results or Results("bench_datalog", seed, people=people, edges=edges)
    print(f"{'query':10} {'tx_datoms':>9} {'route':>6} {'view_ms':>10} {'requery_ms':>11} "
          f"{'view/requery':>13} {'speedup':>8} {'duckdb_ms':>10} {'view/duckdb':>12}  "
          f"({'cpu' if cpu else 'wall'} time; duckdb: wall time of the change and the query)")
    saved = config.VIEW_REFRESH
    try:
        for name in queries:
            for k in args.tx:
                _measure_k(name, k, args, list(routes), requery, clock, results, config)
    finally:
        config.VIEW_REFRESH = saved
    return results


def _measure_k(name, k, args, routes, requery, clock, results, config):
    query, inputs, attr = VIEW_QUERIES[name]
    pick = 2 if attr == ":knows" else 3  # build()'s edges or parents
    # the same database once per route and once without views (one seed each), so every
    # side takes the same changes
    dbs = [build(args.people, args.edges, np.random.default_rng(args.seed), args.forest)
           for _ in range(len(routes) + 1)]
    plain_db, eids = dbs[-1][0], dbs[-1][1]
    views = [d[0].view(query, *inputs) for d in dbs[:-1]]
    requery_once(plain_db, query, inputs, requery)  # warm-up: JIT compilation
    # and three unmeasured transactions: a view's first steps load the kernels only its
    # steps use (the delta join, the traces' merges) from Numba's cache, 30-50 ms once per
    # process, which a median of a few repeats would otherwise include
    for w in range(3):
        for d in dbs:
            config.VIEW_REFRESH = "auto"
            tx, ops = make_tx(attr, d[pick], 2, args.forest, np.random.default_rng(99 + w), eids)
            d[0].transact(tx)
            apply(d[pick], ops)
    duck = _duck(dbs[0][pick], name)
    settle_heap()  # as a long-running process would: no full collections of the loaded heap
    tv, tq, td = [[] for _ in routes], [], []
    for r in range(args.repeat):
        tx, ops = make_tx(attr, dbs[0][pick], k, args.people if attr == ":knows" else args.forest,
                          np.random.default_rng(args.seed + r), eids)
        order = list(enumerate(routes))
        for i, how in order if r % 2 == 0 else order[::-1]:  # alternate: the first to run pays more
            config.VIEW_REFRESH = how
            t0 = clock()
            dbs[i][0].transact(tx)
            views[i].result() if name != "triangle" else None
            tv[i].append(clock() - t0)
        t0 = clock()
        plain_db.transact(tx)
        requery_once(plain_db, query, inputs, requery)
        tq.append(clock() - t0)
        if duck is not None:
            t, got = duck.change(ops)
            td.append(t)
            ours = views[0].result()
            ours = len(ours) if isinstance(ours, set) else ours or 0
            if got != ours:
                raise AssertionError(f"{name} k={k}: view {ours}, duckdb {got}")
        for d in dbs:
            apply(d[pick], ops)
    gc.unfreeze()  # these databases go: let the collector have them
    mq = statistics.median(tq) * 1e3
    md = statistics.median(td) * 1e3 if td else None
    for i, how in enumerate(routes):
        mv = statistics.median(tv[i]) * 1e3
        results.add("views", query=name, tx_datoms=k, route=how, view_ms=mv, requery_ms=mq, duckdb_ms=md)
        dtxt = f"{md:10.1f} {mv / md:11.3f}x" if md else f"{'-':>10} {'-':>12}"
        print(f"{name:10} {k:9d} {how:>6} {mv:10.1f} {mq:11.1f} {mv / mq:12.3f}x {mq / mv:7.1f}x "
              f"{dtxt}", flush=True)


def follows_graph(n: int, seed: int, degree: int = 10):
    """``n`` people (entity ids 1..n, names p0..p{n-1}), each following ``degree`` random people."""
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(1, n + 1), degree)
    dst = rng.integers(1, n + 1, n * degree)
    return src, dst


BATCH_INPUTS = {"reach-input": ("p1",)}  # the scalar inputs of a BATCH query, after %


def _engine(n: int, src, dst, query: str, more: tuple = (), again: int = 0) -> tuple[float, object, float | None]:
    """A first ``q`` on a fresh database (wall ms), its answer, and with ``again`` > 0 the
    median CPU ms of asking it ``again`` more times on that database (its circuit cached,
    as an application asks a query twice)."""
    db = Database()
    db.transact(FOLLOWS_SCHEMA)
    db.load_datoms(np.arange(1, n + 1), ":name", np.array([f"p{i}" for i in range(n)], dtype=object))
    db.load_datoms(src, ":follows", dst)
    t0 = time.perf_counter()
    out = requery_once(db, query, (FOLLOWS, *more), "q")
    first = (time.perf_counter() - t0) * 1e3
    times = []
    for _ in range(again):
        t0 = time.process_time()
        requery_once(db, query, (FOLLOWS, *more), "q")
        times.append((time.process_time() - t0) * 1e3)
    return first, out, statistics.median(times) if times else None


def _duckdb(n: int, src, dst, sql: str) -> tuple[float, object] | None:
    try:
        import duckdb
        import pandas as pd
    except ImportError:
        return None
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    e = pd.DataFrame({"src": src, "dst": dst})  # noqa: F841  (read by name in SQL)
    people = pd.DataFrame({"id": np.arange(1, n + 1), "name": [f"p{i}" for i in range(n)]})  # noqa: F841
    con.execute("CREATE TABLE e AS SELECT * FROM e")
    con.execute("CREATE TABLE people AS SELECT * FROM people")
    t0 = time.perf_counter()
    out = con.execute(sql).fetchone()[0]
    return (time.perf_counter() - t0) * 1e3, out


def _datascript_dir() -> str | None:
    """A temporary directory with ``datascript`` installed by npm, or None."""
    if not (shutil.which("node") and shutil.which("npm")):
        return None
    d = tempfile.mkdtemp(prefix="bench_datascript_")
    r = subprocess.run(["npm", "install", "--silent", "datascript"], cwd=d, capture_output=True,
                       timeout=300)
    if r.returncode != 0:
        shutil.rmtree(d, ignore_errors=True)
        return None
    with open(os.path.join(d, "q.js"), "w") as f:
        f.write(DATASCRIPT_JS)
    return d


def _datascript(d: str | None, n: int, src, dst, query: str, timeout: float):
    """``(ms, count)`` of DataScript's query time (its load excluded), "timeout", or None."""
    if d is None:
        return None
    edges = os.path.join(d, f"edges{n}.json")
    if not os.path.exists(edges):
        with open(edges, "w") as f:
            json.dump({"n": n, "src": src.tolist(), "dst": dst.tolist()}, f)
    try:
        r = subprocess.run(["node", "q.js", edges, query], cwd=d, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    if r.returncode != 0:
        return None
    out = json.loads(r.stdout)
    return out["ms"], out["count"]


_ISOLATED = """
import json, resource, sys
from benchmarks.bench_datalog import BATCH, SQL, _duckdb, _engine, follows_graph
engine, name, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
src, dst = follows_graph(n, seed)
r = _engine(n, src, dst, BATCH[name]) if engine == "engine" else _duckdb(n, src, dst, SQL[name])
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print()
print("RESULT " + json.dumps(None if r is None else [r[0], int(r[1]), mb]))
"""


def _isolated(engine: str, name: str, n: int, seed: int) -> tuple[float, int, float] | None:
    """``(ms, count, peak RSS MB)`` of one engine's query in a process of its own: a big
    closure takes gigabytes, and a process keeps what it freed (``wcoj.heap``), so the
    second engine in one process would pay for the first's memory."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", _ISOLATED, engine, name, str(n), str(seed)], cwd=root,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{engine} {name} n={n} failed (exit {out.returncode}): {out.stderr[-2000:]}")
    got = json.loads([x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1][7:])
    return None if got is None else tuple(got)


def batch(sizes=(1000, 10000), closure_sizes=(1000,), repeat: int = 3, seed: int = 0,
          results: Results | None = None, datascript_timeout: float = 60.0) -> Results:
    """Recursive queries asked once (table ``batch``): the engine (``q``) against DuckDB's
    recursive CTE and DataScript, medians of ``repeat`` runs. The closure runs once per
    engine, each in a process of its own, with its peak memory (``engine_mb``,
    ``duckdb_mb``). ``again_cpu_ms``: the same ``q`` asked again on one of those databases,
    median CPU time of ``repeat`` asks (reachability only)."""
    results = results or Results("bench_datalog", seed)
    ds = _datascript_dir()
    print(f"\n{'query':11} {'people':>7} {'rows':>8} {'engine_ms':>10} {'duckdb_ms':>10} "
          f"{'datascript_ms':>14} {'engine/duckdb':>14} {'engine_mb':>10} {'duckdb_mb':>10} {'again_cpu_ms':>13}")
    try:
        for n in sizes:
            src, dst = follows_graph(n, seed)
            for name, query in BATCH.items():
                if name == "closure" and n not in closure_sizes:
                    continue
                more = BATCH_INPUTS.get(name, ())
                _engine(100, *follows_graph(100, seed), query, more)  # warm-up: JIT compilation
                mem = [None, None]
                if name == "closure":
                    eng, duck = [_isolated("engine", name, n, seed)], [_isolated("duckdb", name, n, seed)]
                    mem = [eng[0][2], duck[0][2] if duck[0] else None]
                    eng = [(*eng[0][:2], None)]  # (ms, count); no ask again
                else:
                    eng = [_engine(n, src, dst, query, more, repeat if i == 0 else 0) for i in range(repeat)]
                    duck = [_duckdb(n, src, dst, SQL[name.replace("input", "one")]) for _ in range(repeat)]
                me, got, again = statistics.median(r[0] for r in eng), eng[0][1], eng[0][2]
                md = statistics.median(r[0] for r in duck) if duck[0] else None
                if duck[0] and duck[0][1] != got:
                    raise AssertionError(f"{name} n={n}: engine {got}, duckdb {duck[0][1]}")
                dres = _datascript(ds, n, src, dst, DATASCRIPT_Q[name.replace("input", "one")],
                                   datascript_timeout)
                if isinstance(dres, tuple) and dres[1] != got:
                    raise AssertionError(f"{name} n={n}: engine {got}, datascript {dres[1]}")
                dtxt = (f"{dres[0]:.1f}" if isinstance(dres, tuple) else
                        f">{datascript_timeout * 1e3:.0f}" if dres == "timeout" else "-")
                results.add("batch", query=name, people=n, rows=got, engine_ms=me, duckdb_ms=md,
                            datascript_ms=dres[0] if isinstance(dres, tuple) else dres,
                            engine_mb=mem[0], duckdb_mb=mem[1], again_cpu_ms=again)
                dtxt_duck = f"{md:.1f}" if md is not None else "-"
                ratio = f"{me / md:.3f}x" if md else "-"
                mtxt = " ".join(f"{x:10.0f}" if x is not None else f"{'-':>10}" for x in mem)
                atxt = f"{again:13.1f}" if again is not None else f"{'-':>13}"
                print(f"{name:11} {n:7d} {got:8d} {me:10.1f} {dtxt_duck:>10} {dtxt:>14} {ratio:>14} {mtxt} {atxt}",
                      flush=True)
    finally:
        if ds:
            shutil.rmtree(ds, ignore_errors=True)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--people", type=int, default=3000)
    p.add_argument("--edges", type=int, default=30000)
    p.add_argument("--tx", type=int, nargs="+", default=[1, 100, 10000])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--forest", type=int, default=None,
                   help="people in the :parent forest of the ancestors view (default: a quarter)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--queries", nargs="*", default=list(VIEW_QUERIES), choices=list(VIEW_QUERIES),
                   help="views to measure against re-evaluation")
    p.add_argument("--routes", nargs="+", default=["auto"], choices=("auto", "never", "always"),
                   help="views' routes (config.VIEW_REFRESH), timed side by side: 'auto never' "
                        "compares refreshes with always stepping")
    p.add_argument("--requery", choices=("view", "q"), default="q",
                   help="re-evaluate with a fresh view's first tick (what q runs) or db.q")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="time the view rows in process CPU time (default) or wall time")
    p.add_argument("--batch-people", type=int, nargs="*", default=[],
                   help="people counts for the batch recursive queries, e.g. 1000 10000")
    p.add_argument("--closure-people", type=int, nargs="*", default=[1000],
                   help="the batch sizes at which the whole closure is also asked")
    p.add_argument("--datascript-timeout", type=float, default=60.0)
    add_json_arg(p)
    run(p.parse_args())


if __name__ == "__main__":
    main()
