"""Growth with m: the generic join against binary-join plans, triangles and 4-cycles.

Run ``./dev bench complexity`` (``--json FILE`` keeps the rows for ``benchmarks/plots.py``).
For each pattern (``triangle``, ``4-cycle``), family and size m it counts the pattern with

* ``wcoj``: ``Graph.count`` (the generic join over the graph's trie indexes; loading and
  indexing are not timed);
* ``binary``: a left-deep binary-join plan in the same runtime (``ZSet`` index and join,
  each filter applied as soon as its variables are bound), skipped where its first
  intermediate result would pass ``--binary-limit`` rows;
* ``duckdb``: the same joins as SQL in DuckDB (2 threads) where installed, interrupted
  after ``--duckdb-timeout`` seconds.

A method that took more than ``--budget`` seconds (or was skipped or interrupted) at one
size is not run at the larger ones, which keeps the whole run to a few minutes.

Families: ``skewed`` (``bench_triangles.skewed``: a clique of ~sqrt(m) vertices plus a star
of m/2 edges whose hub sits in the middle of the ids, the instance on which binary plans
materialise ~m^2 wedges) and ``powerlaw`` (``queries.graphio.generate_power_law``).
Per cell: the median seconds of ``--repeat`` runs after a warm-up, the largest intermediate
result the run materialised (binary: the largest joined relation, in rows; wcoj: the
largest frontier of prefixes the join program held, ``_TrieRun._extend``'s blocks; a
count runs its last two levels fused, without rows; DuckDB: not observable, left empty)
and the peak of the process's resident set above its size before the run
(``_common.peak_mib``). The growth exponent of each method is the slope of a least-squares
line through (log m, log seconds), printed per family and pattern. AGM bounds: m^1.5
triangles, m^2 4-cycles.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import numpy as np

from benchmarks._common import Results, add_json_arg, header, peak_mib
from benchmarks.bench_triangles import oriented, skewed, timed
from benchmarks.plots import fit_exponent
from queries.graph import Graph
from queries.graphio import generate_power_law
from wcoj import generic_join as _gj
from wcoj.zset import ZSet

PATTERNS = ("triangle", "4-cycle")
AGM = {"triangle": 1.5, "4-cycle": 2.0}
FAMILIES = {"skewed": lambda m, seed: skewed(m),
            "powerlaw": lambda m, seed: generate_power_law(m, seed=seed)}


# ---------------------------------------------------------------- the generic join
class _Frontiers:
    """The largest frontier block the join program yields while it is installed."""

    def __init__(self):
        self.largest = 0

    def __enter__(self):
        orig = self._orig = _gj._TrieRun._extend
        me = self

        def extend(run, *a, **kw):
            for block in orig(run, *a, **kw):
                me.largest = max(me.largest, int(block[0].shape[0]))
                yield block
        _gj._TrieRun._extend = extend
        return self

    def __exit__(self, *exc):
        _gj._TrieRun._extend = self._orig


def wcoj(o: np.ndarray, pattern: str):
    g = Graph()
    g.load_edges(o)
    return lambda: g.count(pattern)


# ---------------------------------------------------------------- binary plans
def _joined(a: ZSet, a_cols: list[int], b: ZSet, b_cols: list[int]) -> np.ndarray:
    """Rows ``a_row + b_row`` of the equi-join of ``a`` and ``b`` on the given columns."""
    j = a.index_with(a_cols).join(b.index_with(b_cols))
    nk = len(a_cols)
    return np.asarray(j.keys)[:, nk:], np.asarray(j.weights)


def binary_triangles(o: np.ndarray, sizes: list[int]):
    """O(a,b) ⋈_b O(b,c) -> wedges (a,b,c); then ⋈_(a,c) O(a,c)."""
    z = ZSet.from_arrays(o, arity=2)

    def run():
        w, _ = _joined(z, [1], z, [0])               # (a, b, b, c)
        sizes.append(len(w))
        ac = ZSet.from_arrays(w[:, [0, 3]], arity=2)  # weight = wedges per (a, c)
        return ac.index_with([0, 1]).join(z.index_with([0, 1])).total()
    return run


def binary_4cycles(o: np.ndarray, sizes: list[int]):
    """The 4-cycle pattern a-v1-v2-v3-a of ``queries.patterns.cycle(4, False)`` left-deep:
    O(a,v1) ⋈ S(v1,v2) [a < v2] ⋈ S(v2,v3) [v1 < v3] ⋈ O(a,v3)."""
    O = ZSet.from_arrays(o, arity=2)
    S = ZSet.from_arrays(np.concatenate([o, o[:, ::-1]]), arity=2)

    def run():
        p2, _ = _joined(O, [1], S, [0])                  # (a, v1, v1, v2)
        p2 = p2[p2[:, 0] < p2[:, 3]][:, [0, 1, 3]]
        sizes.append(len(p2))
        P2 = ZSet.from_arrays(p2, arity=3)
        p3, _ = _joined(P2, [2], S, [0])                 # (a, v1, v2, v2, v3)
        p3 = p3[p3[:, 1] < p3[:, 4]][:, [0, 1, 2, 4]]
        sizes.append(len(p3))
        P3 = ZSet.from_arrays(p3, arity=4)
        return P3.index_with([0, 3]).join(O.index_with([0, 1])).total()
    return run


def binary_rows_bound(o: np.ndarray, pattern: str) -> int:
    """Rows of the plan's first join before its filter (what it must at least build)."""
    n = int(o.max()) + 1
    indeg = np.bincount(o[:, 1], minlength=n).astype(np.float64)
    outdeg = np.bincount(o[:, 0], minlength=n).astype(np.float64)
    if pattern == "triangle":
        return int((indeg * outdeg).sum())
    return int((indeg * (indeg + outdeg)).sum())


# ---------------------------------------------------------------- DuckDB
SQL = {
    "triangle": "SELECT count(*) FROM o e1 JOIN o e2 ON e1.v = e2.u "
                "JOIN o e3 ON e3.u = e1.u AND e3.v = e2.v",
    "4-cycle": "SELECT count(*) FROM o e1 JOIN s e2 ON e2.u = e1.v JOIN s e3 ON e3.u = e2.v "
               "JOIN o e4 ON e4.u = e1.u AND e4.v = e3.v WHERE e1.u < e2.v AND e1.v < e3.v",
}


class TimedOut(Exception):
    """DuckDB ran past its timeout and was interrupted."""


def duckdb_count(o: np.ndarray, pattern: str, timeout: float):
    import duckdb
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    s = np.concatenate([o, o[:, ::-1]])
    con.register("o_view", {"u": o[:, 0], "v": o[:, 1]})
    con.register("s_view", {"u": s[:, 0], "v": s[:, 1]})
    con.execute("CREATE TABLE o AS SELECT * FROM o_view")
    con.execute("CREATE TABLE s AS SELECT * FROM s_view")

    def run():
        timer = threading.Timer(timeout, con.interrupt)
        timer.start()
        try:
            return con.execute(SQL[pattern]).fetchone()[0]
        except duckdb.InterruptException as e:
            raise TimedOut from e
        finally:
            timer.cancel()
    return run


# ---------------------------------------------------------------- the measurement
def measure(patterns=PATTERNS, families=("skewed", "powerlaw"), sizes=None, repeat: int = 3,
            seed: int = 0, binary_limit: float = 1e7, duckdb_timeout: float = 20.0,
            budget: float = 3.0, results: Results | None = None) -> Results:
    """Every (pattern, family, m, method) cell, printed as it is measured and added to
    ``results`` (table ``growth``), then the fitted exponents (table ``exponents``)."""
    sizes = sizes or {}
    results = results or Results("bench_complexity", seed)
    try:
        import duckdb  # noqa: F401
        methods = ("wcoj", "binary", "duckdb")
    except ImportError:
        methods = ("wcoj", "binary")
        print("# duckdb: not installed, left out")
    print(f"{'pattern':<9}{'family':<10}{'m':>9}{'count':>13}{'method':>8}{'seconds':>10}"
          f"{'intermediate':>14}{'peak_MiB':>10}", flush=True)
    for pattern in patterns:
        for family in families:
            skip = set()  # a method past its limit or timeout at m stays out at larger m
            for m in sizes.get((pattern, family), [1e3, 1e4]):
                m = int(m)
                o = oriented(FAMILIES[family](m, seed))
                count = None
                for method in methods:
                    cell = dict(pattern=pattern, family=family, m=m, edges=len(o), method=method,
                                seconds=None, intermediate=None, peak_mib=None, count=None, note="")
                    if method in skip:
                        cell["note"] = "skipped: past its limit or budget at a smaller m"
                    elif method == "binary" and binary_rows_bound(o, pattern) > binary_limit:
                        cell["note"] = f"skipped: first join > {binary_limit:.0e} rows"
                        skip.add(method)
                    else:
                        _run(cell, o, pattern, method, repeat, duckdb_timeout)
                        if cell["seconds"] is None or cell["seconds"] > budget:
                            skip.add(method)
                    if cell["count"] is not None:
                        if count is not None and cell["count"] != count:
                            raise SystemExit(f"{method} counted {cell['count']} {pattern}s on "
                                             f"{family}-{m}, wcoj {count}")
                        count = cell["count"]
                    results.add("growth", **cell)
                    _print_cell(cell)
    for (pattern, family, method), rows in _groups(results.tables["growth"]).items():
        e = fit_exponent([r["m"] for r in rows], [r["seconds"] for r in rows])
        ei = fit_exponent([r["m"] for r in rows], [r["intermediate"] for r in rows])
        results.add("exponents", pattern=pattern, family=family, method=method, time=e,
                    intermediate=ei, points=sum(r["seconds"] is not None for r in rows))
        print(f"exponent {pattern:<9}{family:<10}{method:<8} time "
              + (f"{e:.2f}" if e is not None else "-") + "  intermediate "
              + (f"{ei:.2f}" if ei is not None else "-")
              + f"   (AGM bound {AGM[pattern]})", flush=True)
    return results


def _run(cell: dict, o: np.ndarray, pattern: str, method: str, repeat: int, timeout: float) -> None:
    sizes: list[int] = []
    if method == "wcoj":
        fn = wcoj(o, pattern)
    elif method == "binary":
        fn = (binary_triangles if pattern == "triangle" else binary_4cycles)(o, sizes)
    else:
        fn = duckdb_count(o, pattern, timeout)
    try:
        with _Frontiers() as fr:
            got, cell["peak_mib"] = peak_mib(fn)  # the warm-up run: memory and intermediates
        cell["seconds"] = timed(fn, repeat)[0] if method != "duckdb" else _once(fn)
    except TimedOut:
        cell["note"] = f"interrupted after {timeout:.0f} s"
        return
    cell["count"] = int(got)
    cell["intermediate"] = fr.largest if method == "wcoj" else max(sizes) if sizes else None


def _once(fn) -> float:
    """A peer that may run long: one timed run (its warm-up already happened)."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["pattern"], r["family"], r["method"]), []).append(r)
    return out


def _print_cell(c: dict) -> None:
    fmt = lambda x, f: format(x, f) if x is not None else "-"  # noqa: E731
    print(f"{c['pattern']:<9}{c['family']:<10}{c['m']:>9}{fmt(c['count'], 'd'):>13}{c['method']:>8}"
          f"{fmt(c['seconds'], '.4f'):>10}{fmt(c['intermediate'], 'd'):>14}{fmt(c['peak_mib'], '.1f'):>10}"
          + (f"  {c['note']}" if c["note"] else ""), flush=True)


DEFAULT_SIZES = {
    ("triangle", "skewed"): [1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6],
    ("triangle", "powerlaw"): [1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6],
    ("4-cycle", "skewed"): [1e3, 2e3, 4e3, 1e4, 2e4, 4e4],
    ("4-cycle", "powerlaw"): [1e3, 3e3, 1e4, 3e4, 1e5, 3e5],
}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--patterns", nargs="+", default=list(PATTERNS), choices=PATTERNS)
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every default size by this (e.g. 0.1 for a quick look)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--binary-limit", type=float, default=1e7,
                   help="skip the binary plan where its first join would pass this many rows")
    p.add_argument("--duckdb-timeout", type=float, default=20.0)
    p.add_argument("--budget", type=float, default=3.0,
                   help="a method whose median passes this many seconds is not run at larger m")
    add_json_arg(p)
    args = p.parse_args(argv)
    sizes = {k: [max(100, int(m * args.scale)) for m in v] for k, v in DEFAULT_SIZES.items()}
    res = Results("bench_complexity", args.seed, args=vars(args))
    print(header("bench_complexity", args.seed))
    measure(args.patterns, args.families, sizes, args.repeat, args.seed, args.binary_limit,
            args.duckdb_timeout, args.budget, res)
    res.write(args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
