"""Triangles: batch WCOJ against peers and binary plans; incremental ticks against recomputation.

Run ``python -m benchmarks.bench_triangles`` (all sections) or pick with ``--sections``:

* ``batch``: triangle count on real graphs (``../shared/data/graphs`` when present), a
  generated power-law graph and the skewed instance (a clique of ~sqrt(m) vertices plus a
  star of m/2 edges whose hub sits in the middle of the id order), against networkx,
  igraph, python-graphblas (masked ``L*L .* L``), DuckDB SQL self-joins and a binary-join
  plan in our own runtime, each where installed (and where its wedge count fits memory).
* ``ticks``: incremental ticks of k random edge changes (90% inserts, 10% deletes):
  median/p90 latency, updates/s, output changes/s, ratios to recomputation and to a plain
  Python delta rule (intersect the endpoints' neighbour sets per changed edge). After
  loading, ``warm_up()`` loads every kernel a tick uses and ``settle_heap()`` freezes the
  heap for the cyclic collector, as ``wcoj stream`` does (see their docstrings; the second
  applies to both contenders in this process).
* ``growth``: growth exponent of batch time on the skewed family.
* ``memory``: index bytes per edge and peak RSS across 1,000 ticks.

Every number is measured in this run; the header names commit, versions and seed. Timings
are medians of ``--repeat`` runs after a warm-up (JIT compilation is not measured).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common import Results, add_json_arg, header
from queries.graph import Graph, settle_heap, warm_up
from queries.graphio import generate_power_law, read_edges
from wcoj.zset import ZSet

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = ROOT.parent / "shared" / "data" / "graphs"
REAL = ["soc-Epinions1.txt.gz", "soc-Slashdot0902.txt.gz", "ego-Twitter.txt.gz"]
WEDGE_LIMIT = 6e7  # binary plans materialise wedges; skip them beyond this many
LIST_LIMIT = 3e7   # igraph can only list triangles (166M tuples on skewed-1e6 ran out of 24 GB)


def timed(fn, repeat: int):
    """Median seconds of ``repeat`` calls after one warm-up call, and the last result."""
    out = fn()
    ts = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), out


def _once(fn):
    """Seconds and result of one call (peers that may run for minutes: no warm-up)."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def skewed(m: int) -> np.ndarray:
    """A clique of ~sqrt(m) vertices plus a star of ~m/2 edges, hub in the middle of the ids."""
    s = max(3, int(round((1 + np.sqrt(1 + 4 * m)) / 2)))  # s(s-1)/2 ~ m/2
    leaves = m // 2
    hub = leaves // 2
    clique_ids = np.arange(leaves + 1, leaves + 1 + s)
    iu = np.triu_indices(s, 1)
    clique = np.stack([clique_ids[iu[0]], clique_ids[iu[1]]], axis=1)
    leaf_ids = np.concatenate([np.arange(0, hub), np.arange(hub + 1, leaves + 1)])
    star = np.stack([np.full(leaf_ids.shape[0], hub), leaf_ids], axis=1)
    return np.concatenate([clique, star]).astype(np.int64)


def oriented(edges: np.ndarray) -> np.ndarray:
    e = edges[edges[:, 0] != edges[:, 1]]
    return np.array(ZSet.from_arrays(np.sort(e, axis=1), arity=2).distinct().keys)


def wedges(o: np.ndarray) -> int:
    """Wedges a-b-c with a<b<c that the plan O(a,b) ⋈ O(b,c) materialises."""
    n = int(o.max()) + 1
    indeg = np.bincount(o[:, 1], minlength=n)
    outdeg = np.bincount(o[:, 0], minlength=n)
    return int((indeg.astype(np.float64) * outdeg).sum())


# ---------------------------------------------------------------- counters
def ours(o: np.ndarray):
    g = Graph()
    g.load_edges(o)
    return lambda: g.count("triangle")


def binary_plan(o: np.ndarray):
    """O(a,b) ⋈_b O(b,c) -> wedges, then ⋈_(a,c) O(a,c): the binary-join baseline, our runtime."""
    z = ZSet.from_arrays(o, arity=2)

    def run():
        left = z.index_with([1])             # (b | a, b)
        right = z.index_with([0])            # (b | b, c)
        w = left.join(right)                 # (b, a, b, b, c)
        ac = w.map(lambda k: k[:, [1, 4]])    # (a, c) with multiplicity = wedges
        return ac.index_with([0, 1]).join(z.index_with([0, 1])).total()
    return run


def networkx_count(o: np.ndarray):
    import networkx as nx
    g = nx.Graph()
    g.add_edges_from(o.tolist())
    return lambda: sum(nx.triangles(g).values()) // 3


def igraph_count(o: np.ndarray):
    import igraph as ig
    g = ig.Graph(n=int(o.max()) + 1, edges=o.tolist(), directed=False)
    return lambda: len(g.list_triangles())


def graphblas_count(o: np.ndarray):
    import graphblas as gb
    n = int(o.max()) + 1
    L = gb.Matrix.from_coo(o[:, 1], o[:, 0], np.ones(len(o), dtype=np.int64), nrows=n, ncols=n)

    def run():
        C = L.mxm(L, gb.semiring.plus_pair).new(mask=L.S)
        return int(C.reduce_scalar(gb.monoid.plus).value or 0)
    return run


class TimedOut(Exception):
    """A peer ran past ``--peer-timeout`` and was interrupted."""


def duckdb_count(o: np.ndarray, timeout: float | None = None):
    import threading

    import duckdb
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    con.register("e_view", {"u": o[:, 0], "v": o[:, 1]})
    con.execute("CREATE TABLE e AS SELECT * FROM e_view")
    sql = ("SELECT count(*) FROM e e1 JOIN e e2 ON e1.v = e2.u "
           "JOIN e e3 ON e3.u = e1.u AND e3.v = e2.v")

    def run():
        timer = threading.Timer(timeout, con.interrupt) if timeout else None
        if timer:
            timer.start()
        try:
            return con.execute(sql).fetchone()[0]
        except duckdb.InterruptException as e:
            raise TimedOut(f"duckdb interrupted after {timeout:.0f} s") from e
        finally:
            if timer:
                timer.cancel()
    return run


PEERS = [("networkx", networkx_count), ("igraph", igraph_count), ("graphblas", graphblas_count),
         ("duckdb", duckdb_count), ("binary", binary_plan)]


def batch_section(args) -> None:
    datasets = []
    for f in REAL:
        if (GRAPHS / f).exists():
            datasets.append((f.split(".")[0], lambda f=f: read_edges(GRAPHS / f)))
        else:
            print(f"# {f}: ../shared/data/graphs absent, skipped")
    datasets.append((f"powerlaw-{args.powerlaw_edges:.0e}", lambda: generate_power_law(int(args.powerlaw_edges), seed=args.seed)))
    for m in args.skewed_edges:
        datasets.append((f"skewed-{m:.0e}", lambda m=m: skewed(int(m))))
    print("\n## batch triangle count (median seconds; ratio = peer / ours, >1 means we are faster)")
    print(f"{'graph':<22}{'edges':>10}{'triangles':>12}{'wedges':>14}{'ours_s':>9}"
          + "".join(f"{p:>16}" for p, _ in PEERS))
    for name, load in datasets:
        o = oriented(load())
        wd = wedges(o)
        t_ours, tri = timed(ours(o), args.repeat)
        cells = []
        rec = dict(graph=name, edges=len(o), triangles=tri, wedges=wd, ours_s=t_ours)
        for peer, make in PEERS:
            # DuckDB spills, so on the skewed family it runs up to --peer-timeout
            # (a timeout is a lower bound on the ratio); elsewhere, as the binary plan,
            # only where the wedges fit
            capped = peer == "duckdb" and name.startswith("skewed") and wd <= 1e3 * WEDGE_LIMIT
            rec[f"{peer}_s"] = None
            if peer in ("binary", "duckdb") and wd > WEDGE_LIMIT and not capped:
                cells.append(f"{'skip(wedges)':>16}")
                continue
            if peer == "networkx" and len(o) > args.nx_max_edges:
                cells.append(f"{'skip(size)':>16}")
                continue
            if peer == "igraph" and tri > LIST_LIMIT:  # igraph lists triangles as Python tuples
                cells.append(f"{'skip(list)':>16}")
                continue
            try:
                fn = make(o, args.peer_timeout) if capped else make(o)
            except ImportError:
                cells.append(f"{'not installed':>16}")
                continue
            try:
                t, got = (timed(fn, max(1, args.repeat if peer != "networkx" else 1)) if not capped
                          else _once(fn))
            except TimedOut:
                t = args.peer_timeout
                rec[f"{peer}_timeout_s"] = t
                cells.append(f"{'>' + format(t, '.0f'):>8} {'>' + format(t / t_ours, '.0f'):>6}x")
                continue
            flag = "" if int(got) == tri else "!"
            rec[f"{peer}_s"] = t
            cells.append(f"{t:>8.3f} {t / t_ours:>6.1f}x{flag}")
        args.results.add("batch", **rec)
        print(f"{name:<22}{len(o):>10}{tri:>12}{wd:>14.3g}{t_ours:>9.3f}" + "".join(cells), flush=True)


# ---------------------------------------------------------------- ticks
class PythonDelta:
    """The plain-Python delta rule: neighbour sets, one intersection per changed edge.

    ``apply`` returns the change of the triangle count; ``apply_rows`` builds the changed
    rows too (``(a, b, c)`` sorted, weight +1 or -1), as ``Graph.apply`` does."""

    def __init__(self, o: np.ndarray):
        self.adj: dict[int, set[int]] = {}
        for u, v in o.tolist():
            self.adj.setdefault(u, set()).add(v)
            self.adj.setdefault(v, set()).add(u)

    def apply(self, ins: np.ndarray, dels: np.ndarray) -> int:
        delta = 0
        adj = self.adj
        for u, v in dels.tolist():
            if u != v and v in adj.get(u, ()):
                adj[u].discard(v)
                adj[v].discard(u)
                delta -= len(adj[u] & adj[v])
        for u, v in ins.tolist():
            if u != v and v not in adj.setdefault(u, set()):
                adj.setdefault(v, set())
                delta += len(adj[u] & adj[v])
                adj[u].add(v)
                adj[v].add(u)
        return delta

    def apply_rows(self, ins: np.ndarray, dels: np.ndarray) -> list[tuple[tuple[int, int, int], int]]:
        rows = []
        adj = self.adj
        for u, v in dels.tolist():
            if u != v and v in adj.get(u, ()):
                adj[u].discard(v)
                adj[v].discard(u)
                rows.extend((tuple(sorted((u, v, w))), -1) for w in adj[u] & adj[v])
        for u, v in ins.tolist():
            if u != v and v not in adj.setdefault(u, set()):
                adj.setdefault(v, set())
                rows.extend((tuple(sorted((u, v, w))), 1) for w in adj[u] & adj[v])
                adj[u].add(v)
                adj[v].add(u)
        return rows


def make_tick(rng, edges_now: np.ndarray, n_nodes: int, k: int):
    n_ins = int(round(k * 0.9)) if k > 1 else 1
    n_del = k - n_ins
    ins = rng.integers(0, n_nodes, (n_ins, 2))
    dels = edges_now[rng.integers(0, len(edges_now), n_del)] if n_del else np.zeros((0, 2), np.int64)
    return ins.astype(np.int64), dels.astype(np.int64)


def ticks_section(args) -> None:
    rng = np.random.default_rng(args.seed)
    print("\n## incremental triangle ticks (90% inserts / 10% deletes)")
    print(f"{'graph':<16}{'k':>8}{'median_ms':>11}{'p90_ms':>9}{'max/med':>8}{'upd/s':>12}{'out/s':>12}"
          f"{'recompute_ms':>14}{'x_recompute':>12}{'python_ms':>11}{'x_python':>9}")
    for m in args.tick_graph_edges:
        base = oriented(generate_power_law(int(m), seed=args.seed))
        g = Graph()
        g.load_edges(base)
        g.view("triangle")
        n_nodes = int(base.max()) + 1
        t_re, _ = timed(lambda: g.count("triangle"), 1)
        py = PythonDelta(base)
        warm_up(("triangle",))  # as `wcoj stream` does: kernels loaded before the first tick
        settle_heap()  # as `wcoj stream` does: full collections off the ticks (both contenders)
        edges_now = base
        for k in args.ks:
            n_ticks = args.ticks if k < 10_000 else max(3, args.ticks // 10)
            ticks = [make_tick(rng, edges_now, n_nodes, k) for _ in range(n_ticks + 2)]
            for ins, dels in ticks[:2]:  # warm-up (compiles new kernel shapes)
                g.apply(inserts=ins, deletes=dels)
                py.apply(ins, dels)
            lat, outs, pys = [], 0, []
            for ins, dels in ticks[2:]:
                t = time.perf_counter()
                tick = g.apply(inserts=ins, deletes=dels)
                lat.append(time.perf_counter() - t)
                outs += len(tick.changes["triangle"])
                t = time.perf_counter()
                py.apply(ins, dels)
                pys.append(time.perf_counter() - t)
            med = float(np.median(lat))
            pmed = float(np.median(pys))
            args.results.add("ticks", graph=f"pl-{m:.0e}", k=k, median_ms=med * 1e3,
                             p90_ms=float(np.percentile(lat, 90)) * 1e3, max_ms=max(lat) * 1e3,
                             recompute_ms=t_re * 1e3, python_ms=pmed * 1e3, out_changes=outs)
            print(f"{'pl-%.0e' % m:<16}{k:>8}{med * 1e3:>11.3f}{np.percentile(lat, 90) * 1e3:>9.3f}"
                  f"{max(lat) / med:>8.1f}{k / med:>12.0f}{outs / sum(lat):>12.0f}"
                  f"{t_re * 1e3:>14.1f}{t_re / med:>12.1f}{pmed * 1e3:>11.3f}{pmed / med:>9.2f}", flush=True)
            edges_now = g.edges()
        g.check_views()


# ---------------------------------------------------------------- growth and memory
def growth_section(args) -> None:
    print("\n## growth on the skewed family (seconds; exponent = slope of log t over log m)")
    sizes = [int(s) for s in args.growth_sizes]
    rows = []
    for m in sizes:
        o = oriented(skewed(m))
        t_w, tri = timed(ours(o), args.repeat)
        wd = wedges(o)
        t_b = timed(binary_plan(o), 1)[0] if wd <= WEDGE_LIMIT else float("nan")
        rows.append((m, t_w, t_b))
        args.results.add("growth", m=m, triangles=tri, wcoj_s=t_w, binary_s=t_b if t_b == t_b else None,
                         wedges=wd)
        print(f"m={m:>9}  triangles={tri:>12}  wcoj_s={t_w:8.4f}  binary_s={t_b:8.4f}  wedges={wd:.3g}", flush=True)
    ms = np.log([r[0] for r in rows])
    tw = np.log([r[1] for r in rows])
    print(f"WCOJ exponent: {np.polyfit(ms, tw, 1)[0]:.2f} over m={sizes[0]}..{sizes[-1]}")
    args.results.add("exponents", method="wcoj", exponent=float(np.polyfit(ms, tw, 1)[0]))
    ok = [(np.log(r[0]), np.log(r[2])) for r in rows if r[2] == r[2]]
    if len(ok) >= 2:
        a, b = zip(*ok)
        print(f"binary exponent: {np.polyfit(a, b, 1)[0]:.2f} over the {len(ok)} sizes whose wedges fit")
        args.results.add("exponents", method="binary", exponent=float(np.polyfit(a, b, 1)[0]))


def memory_section(args) -> None:
    import psutil
    proc = psutil.Process()
    rng = np.random.default_rng(args.seed)
    base = oriented(generate_power_law(int(args.memory_edges), seed=args.seed))
    g = Graph()
    g.load_edges(base)
    g.view("triangle")
    n_nodes = int(base.max()) + 1
    print("\n## memory")
    print(f"index bytes per edge (D, O, S and their column orders): {g.nbytes() / len(base):.1f}")
    edges_now = base
    rss = []
    for i in range(args.memory_ticks):
        ins, dels = make_tick(rng, edges_now, n_nodes, 10)
        g.apply(inserts=ins, deletes=dels)
        if i % 100 == 0:
            edges_now = g.edges()
        rss.append(proc.memory_info().rss)
    rss = np.array(rss) / 2**20
    q = len(rss) // 10
    args.results.add("memory", edges=len(base), index_bytes_per_edge=g.nbytes() / len(base), ticks=args.memory_ticks,
                     rss_first_mib=float(rss[:q].max()), rss_last_mib=float(rss[-q:].max()),
                     rss_peak_mib=float(rss.max()))
    print(f"RSS over {args.memory_ticks} ticks of 10 changes: first 10% max {rss[:q].max():.1f} MiB, "
          f"last 10% max {rss[-q:].max():.1f} MiB, peak {rss.max():.1f} MiB")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sections", nargs="+", default=["batch", "ticks", "growth", "memory"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--powerlaw-edges", type=float, default=1e6)
    p.add_argument("--skewed-edges", type=float, nargs="+", default=[3e4, 1e5, 1e6])
    p.add_argument("--peer-timeout", type=float, default=60.0,
                   help="seconds before DuckDB is interrupted on the skewed family")
    p.add_argument("--nx-max-edges", type=float, default=5e5)
    p.add_argument("--tick-graph-edges", type=float, nargs="+", default=[1e5, 1e6])
    p.add_argument("--ks", type=int, nargs="+", default=[1, 10, 1000, 100_000])
    p.add_argument("--ticks", type=int, default=50)
    p.add_argument("--growth-sizes", type=float, nargs="+", default=[1e4, 3e4, 1e5, 3e5, 1e6])
    p.add_argument("--memory-edges", type=float, default=1e5)
    p.add_argument("--memory-ticks", type=int, default=1000)
    add_json_arg(p)
    args = p.parse_args(argv)
    import os
    extra = dict(cores=os.cpu_count(), loadavg=",".join(f"{x:.1f}" for x in os.getloadavg()))
    args.results = Results("bench_triangles", args.seed, args=vars(args).copy(), **extra)
    print(header("bench_triangles", args.seed, **extra))
    for s in args.sections:
        {"batch": batch_section, "ticks": ticks_section, "growth": growth_section,
         "memory": memory_section}[s](args)
    args.results.write(args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
