"""Distributed WCOJ on Spark against the Spark SQL binary-join plan; per-tick deltas against recomputation.

Run ``python -m benchmarks.bench_spark`` (all sections) or pick with ``--sections``:

* ``batch``: triangle count as a HyperCube join with the generic join per cell
  (:func:`queries.spark.hypercube.hypercube_count`), plain and with skew residuals for
  the heavy vertices (found once before timing, as ingest statistics would give them:
  degree above m / cells), against the binary plan Spark SQL
  runs for the same query (``O e1 JOIN O e2 ON e1.src = e2.src AND e1.dst < e2.dst JOIN O
  e3 ON e3.src = e1.dst AND e3.dst = e2.dst``), on ego-Twitter (``../shared/data/graphs``
  when present) and on the skewed family of ``benchmarks.bench_triangles`` (a clique of
  ~sqrt(m) vertices plus a star of m/2 edges, hub in the middle of the ids). Wall time
  and shuffle bytes written, summed over the stages each query ran, read from the
  driver's status store (``AppStatusStore``, live even with the UI off). When Spark
  broadcasts the edge table (small inputs, under ``autoBroadcastJoinThreshold``) the
  binary plan shuffles nothing, and its broadcast bytes are not counted. Each query runs
  ``--repeat`` times, the median shown (the binary plan once on graphs above
  ``--binary-repeat-max-edges``: it takes minutes there).
* ``stream`` (on request): the micro-batch latency of ``wcoj spark stream``
  (:class:`queries.spark.stream.ChangeStream`) with one file of k changes per batch,
  from Spark's progress reports.
* ``ticks``: per-tick distributed deltas (:class:`queries.spark.delta.GraphDelta`: set
  semantics in the cached edge store, then the delta rule in the cached cells; the
  columns ``set_s`` and ``cells_s`` split the latency) against a distributed
  recomputation of the count over the updated graph, for ticks of ``--tick-sizes``
  changes (90% inserts, 10% deletes) on a power-law graph of ``--tick-edges`` edges.
  The median of ``--ticks`` ticks per size (the recomputation: of ``--repeat`` runs);
  the latency at the smallest size is the fixed overhead of a tick.

Everything runs on one local Spark session, so the ratios are side by side. The machine
is shared: the header gives the load average before and after. One warm-up query per
section starts the Python workers (and loads the Numba cache) before timing.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

from benchmarks._common import Results, add_json_arg
from benchmarks.bench_triangles import oriented, skewed
from queries.graphio import generate_power_law, read_edges
from queries.patterns import triangle

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = ROOT.parent / "shared" / "data" / "graphs"
BINARY_SQL = """
SELECT count(*) FROM O e1
JOIN O e2 ON e1.src = e2.src AND e1.dst < e2.dst
JOIN O e3 ON e3.src = e1.dst AND e3.dst = e2.dst
"""


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class ShuffleMeter:
    """Shuffle bytes of the stages that ran since the last call, from the status store."""

    def __init__(self, spark):
        self.store = spark.sparkContext._jsc.sc().statusStore()
        self.seen = self._ids()

    def _stages(self):
        # Scala defaults are invisible through py4j: stageList(statuses, details,
        # withSummaries, unsortedQuantiles, taskStatus) with every argument given
        quantiles = getattr(self.store, "stageList$default$4")()
        it = self.store.stageList(None, False, False, quantiles, None).iterator()
        out = []
        while it.hasNext():
            out.append(it.next())
        return out

    def _ids(self) -> set:
        return {(int(s.stageId()), int(s.attemptId())) for s in self._stages()}

    def take(self) -> tuple[int, int]:
        """(shuffle bytes written, shuffle bytes read) by the stages new since last time."""
        written = read = 0
        for s in self._stages():
            key = (int(s.stageId()), int(s.attemptId()))
            if key in self.seen:
                continue
            self.seen.add(key)
            written += int(s.shuffleWriteBytes())
            read += int(s.shuffleReadBytes())
        return written, read


def _timed(meter: ShuffleMeter, fn):
    meter.take()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    time.sleep(0.5)  # the listener bus delivers stage metrics asynchronously
    w, r = meter.take()
    return out, seconds, w, r


def _median_timed(meter: ShuffleMeter, fn, repeat: int):
    """``_timed`` ``repeat`` times: the answer, the median seconds, the median bytes."""
    runs = [_timed(meter, fn) for _ in range(repeat)]
    assert len({r[0] for r in runs}) == 1, [r[0] for r in runs]
    return (runs[0][0], float(np.median([r[1] for r in runs])),
            int(np.median([r[2] for r in runs])), int(np.median([r[3] for r in runs])))


def _mb(b: int) -> str:
    return f"{b / 1e6:9.1f}"


def _num(x: float) -> float | None:
    """NaN (a plan that did not run) as None, for JSON."""
    return None if x != x else float(x)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:7.1f}x" if b else "      -"


def bench_batch(spark, args) -> list[str]:
    from queries.spark.cells import heavy_hitters, heavy_threshold
    from queries.spark.hypercube import (
        JoinQuery,
        default_cells,
        frame_of,
        graph_relations,
        hypercube_count,
    )

    meter = ShuffleMeter(spark)
    q = JoinQuery.from_pattern(triangle())
    inputs = []
    twitter = GRAPHS / "ego-Twitter.txt.gz"
    if twitter.exists() and not args.no_twitter:
        inputs.append(("ego-Twitter", read_edges(twitter)))
    for m in args.skewed:
        inputs.append((f"skewed m={m}", skewed(m)))
    lines = ["batch triangles: HyperCube + generic join per cell (plain, and skew: heavy "
             "vertices get their own residual grids) vs Spark SQL binary plan",
             f"{'graph':>18} {'edges':>9} {'count':>12} {'heavy':>5} {'wcoj_s':>7} "
             f"{'skew_s':>7} {'binary_s':>9} {'speedup':>8} {'skew_speedup':>12} "
             f"{'wcoj_shufMB':>11} {'bin_shufMB':>10} {'fewer_bytes':>11}"]
    print("\n".join(lines), flush=True)
    # warm-up on a small member of the family, every plan once: Python workers started,
    # kernels loaded (or compiled) in each of them, the JVM's code generated
    small = graph_relations(frame_of(spark, oriented(skewed(2000))))["O"].cache()
    small.createOrReplaceTempView("O")
    for _ in range(2):
        hypercube_count(q, {"O": small})
        hypercube_count(q, {"O": small}, heavy=heavy_hitters(q, {"O": small}, 125))
        spark.sql(BINARY_SQL).first()
    small.unpersist()
    cells = default_cells(spark)
    for name, edges in inputs:
        o = oriented(edges)
        rels = graph_relations(frame_of(spark, o))
        O = rels["O"].cache()
        O.count()
        O.createOrReplaceTempView("O")
        heavy = heavy_hitters(q, {"O": O}, heavy_threshold(len(o), cells))  # "ingest stats"
        n_heavy = len(heavy.get("a", []))
        r = args.repeat
        n_wcoj, t_wcoj, w_wcoj, _ = _median_timed(meter, lambda: hypercube_count(q, {"O": O}), r)
        if n_heavy:
            n_skew, t_skew, _, _ = _median_timed(
                meter, lambda: hypercube_count(q, {"O": O}, heavy=heavy), r)
            assert n_skew == n_wcoj, (name, n_skew, n_wcoj)
        else:
            t_skew = float("nan")
        if len(o) <= args.binary_max_edges:
            n_bin, t_bin, w_bin, _ = _median_timed(
                meter, lambda: int(spark.sql(BINARY_SQL).first()[0]),
                r if len(o) <= args.binary_repeat_max_edges else 1)
            assert n_bin == n_wcoj, (name, n_bin, n_wcoj)
        else:
            t_bin, w_bin = float("nan"), 0
        row = (f"{name:>18} {len(o):>9} {n_wcoj:>12} {n_heavy:>5} {t_wcoj:7.2f} "
               f"{t_skew:7.2f} {t_bin:9.2f} {_ratio(t_bin, t_wcoj):>8} "
               f"{_ratio(t_bin, t_skew) if n_heavy else '      -':>12} "
               f"{_mb(w_wcoj):>11} {_mb(w_bin):>10} {_ratio(w_bin, w_wcoj):>11}")
        print(row, flush=True)
        lines.append(row)
        args.results.add("batch", graph=name, edges=len(o), count=n_wcoj, heavy=n_heavy, wcoj_s=t_wcoj,
                         skew_s=_num(t_skew), binary_s=_num(t_bin), wcoj_shuffle_bytes=w_wcoj,
                         binary_shuffle_bytes=w_bin)
        O.unpersist()
    return lines


def _tick(rng, current: set, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """k changes: 90% random inserts (canonical pairs), 10% deletes of current edges."""
    n_del = k // 10
    pool = np.array(list(current), np.int64)
    dels = pool[rng.choice(len(pool), n_del, replace=False)]
    ins = np.sort(rng.integers(0, n, size=(k - n_del, 2)), axis=1)
    ins = ins[ins[:, 0] != ins[:, 1]]
    keys = np.concatenate([ins, dels])
    w = np.concatenate([np.ones(len(ins), np.int64), -np.ones(n_del, np.int64)])
    return keys, w


def bench_ticks(spark, args) -> list[str]:
    from queries.spark.delta import GraphDelta, graph_deltas
    from queries.spark.hypercube import JoinQuery, frame_of, graph_relations, hypercube_count

    meter = ShuffleMeter(spark)
    rng = np.random.default_rng(args.seed)
    edges = oriented(generate_power_law(args.tick_edges, seed=args.seed))
    n = int(edges.max()) + 1
    q = JoinQuery.from_pattern(triangle())
    t0 = time.perf_counter()
    view = GraphDelta(q, frame_of(spark, edges), compact_every=args.compact_every)
    setup = time.perf_counter() - t0
    current = {tuple(e) for e in edges.tolist()}  # the benchmark's own oracle, not the view's
    lines = [f"ticks: triangles on a power-law graph of {len(edges)} edges (count "
             f"{view.count}; edge store and routed cells built and counted in {setup:.1f}s, "
             f"{view.view.plan.total_cells} cells in {view.view.cells.n_parts} partitions); "
             f"median of {args.ticks} ticks",
             f"{'changes':>8} {'delta_s':>8} {'set_s':>6} {'cells_s':>7} {'recompute_s':>11} "
             f"{'speedup':>8} {'delta_shufMB':>12} {'recomp_shufMB':>13}"]
    print("\n".join(lines), flush=True)
    for k in args.tick_sizes:
        # one untimed tick of this size: it starts the Python workers and loads (or
        # compiles) the kernels this size's path uses in each of them
        for (ek, ew), _ in view.apply([_tick(rng, current, n, k)]):
            for e, x in zip(map(tuple, ek.tolist()), ew.tolist()):
                (current.add if x > 0 else current.discard)(e)
        d_times, s_times, c_times, d_bytes = [], [], [], []
        for _ in range(args.ticks):
            keys, w = _tick(rng, current, n, k)
            meter.take()
            t1 = time.perf_counter()
            (ek, ew, _), = view.edges.apply([(keys, w)])
            t2 = time.perf_counter()
            view.count += view.view.steps([graph_deltas((ek, ew), None, False)])[0]
            t3 = time.perf_counter()
            time.sleep(0.5)  # the listener bus delivers stage metrics asynchronously
            d_bytes.append(meter.take()[0])
            d_times.append(t3 - t1)
            s_times.append(t2 - t1)
            c_times.append(t3 - t2)
            for e, x in zip(map(tuple, ek.tolist()), ew.tolist()):
                (current.add if x > 0 else current.discard)(e)
        O = graph_relations(frame_of(spark, np.array(sorted(current))))["O"].cache()
        O.count()
        if k == args.tick_sizes[0]:  # untimed: the recomputation's workers and kernels
            hypercube_count(q, {"O": O})
        n_re, t_re, w_re, _ = _median_timed(meter, lambda: hypercube_count(q, {"O": O}),
                                            args.repeat)
        O.unpersist()
        assert n_re == view.count, (k, n_re, view.count)  # integrated deltas = recomputation
        t_d = float(np.median(d_times))
        row = (f"{k:>8} {t_d:8.2f} {float(np.median(s_times)):6.2f} "
               f"{float(np.median(c_times)):7.2f} {t_re:11.2f} {_ratio(t_re, t_d):>8} "
               f"{_mb(int(np.median(d_bytes))):>12} {_mb(w_re):>13}")
        print(row, flush=True)
        lines.append(row)
        args.results.add("ticks", edges=len(edges), changes=k, delta_s=t_d, set_s=float(np.median(s_times)),
                         cells_s=float(np.median(c_times)), recompute_s=t_re,
                         delta_shuffle_bytes=int(np.median(d_bytes)), recompute_shuffle_bytes=w_re)
    view.close()
    return lines


def bench_stream(spark, args) -> list[str]:
    """Micro-batch latency of ``wcoj spark stream``: one file of k changes per batch."""
    import shutil
    import tempfile

    from queries.spark.hypercube import JoinQuery, frame_of
    from queries.spark.stream import ChangeStream

    rng = np.random.default_rng(args.seed + 1)
    edges = oriented(generate_power_law(args.tick_edges, seed=args.seed))
    n = int(edges.max()) + 1
    root = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    (root / "in").mkdir()
    lines = [f"stream: triangles over a directory of change files, one file of k changes "
             f"per micro-batch, on the same power-law graph ({len(edges)} edges); median of "
             f"{args.ticks} batches after one warm-up batch per size; trigger = Spark's whole "
             f"micro-batch (listing, offsets, our foreachBatch, commit), batch = "
             f"foreachBatch alone: read (parse and validate the batch), apply (GraphDelta)",
             f"{'changes':>8} {'trigger_s':>9} {'batch_s':>8} {'read_s':>7} {'apply_s':>8}"]
    print("\n".join(lines), flush=True)
    cs = ChangeStream(spark, JoinQuery.from_pattern(triangle()), frame_of(spark, edges),
                      root / "in", root / "out")
    try:
        tick = 0
        for k in args.tick_sizes:
            first = tick
            for i in range(args.ticks + 1):
                keys = np.sort(rng.integers(0, n, size=(k, 2)), axis=1)
                text = "".join(f"{tick} + {a} {b}\n" for a, b in keys.tolist())
                tmp = root / f".{tick}.txt"
                tmp.write_text(text)
                os.utime(tmp, (1_000_000 + tick, 1_000_000 + tick))
                os.replace(tmp, root / "in" / f"{tick:06d}.txt")
                tick += 1
            q = cs.start({"availableNow": True})
            q.awaitTermination()
            progress = [p for p in q.recentProgress if p["numInputRows"]][-(tick - first):]
            trig = [p["durationMs"]["triggerExecution"] / 1e3 for p in progress[1:]]
            batch = [p["durationMs"]["addBatch"] / 1e3 for p in progress[1:]]
            ours = cs.batches[-args.ticks:]
            row = (f"{k:>8} {float(np.median(trig)):9.2f} {float(np.median(batch)):8.2f} "
                   f"{float(np.median([b['read_s'] for b in ours])):7.2f} "
                   f"{float(np.median([b['apply_s'] for b in ours])):8.2f}")
            print(row, flush=True)
            lines.append(row)
            args.results.add("stream", changes=k, trigger_s=float(np.median(trig)), batch_s=float(np.median(batch)),
                             read_s=float(np.median([b["read_s"] for b in ours])),
                             apply_s=float(np.median([b["apply_s"] for b in ours])))
    finally:
        cs.close()
        shutil.rmtree(root, ignore_errors=True)
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sections", nargs="+", default=["batch", "ticks"],
                   choices=["batch", "ticks", "stream"])
    p.add_argument("--skewed", nargs="+", type=lambda s: int(float(s)),
                   default=[20_000, 50_000, 100_000, 200_000],
                   help="sizes m of the skewed family (default 2e4 5e4 1e5 2e5)")
    p.add_argument("--binary-max-edges", type=lambda s: int(float(s)), default=2_000_000,
                   help="skip the binary plan above this many edges")
    p.add_argument("--no-twitter", action="store_true", help="leave ego-Twitter out")
    p.add_argument("--repeat", type=int, default=3,
                   help="batch: runs per query, the median shown (default 3)")
    p.add_argument("--binary-repeat-max-edges", type=lambda s: int(float(s)), default=150_000,
                   help="batch: the binary plan runs once above this many edges (minutes)")
    p.add_argument("--tick-edges", type=lambda s: int(float(s)), default=1_000_000)
    p.add_argument("--tick-sizes", nargs="+", type=lambda s: int(float(s)),
                   default=[10, 1000, 100_000])
    p.add_argument("--ticks", type=int, default=3, help="ticks per size (median shown)")
    p.add_argument("--compact-every", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--out", help="also write the report to this file")
    add_json_arg(p)
    args = p.parse_args(argv)
    args.results = Results("bench_spark", args.seed, args=vars(args).copy(), master=args.master)

    import pyspark

    from queries.spark.session import get_session, stop_session

    spark = get_session(args.master, app_name="bench-spark",
                        conf={"spark.driver.memory": args.driver_memory})
    head = (f"bench_spark  commit={_commit()} pyspark={pyspark.__version__} "
            f"python={platform.python_version()} seed={args.seed} "
            f"master={spark.sparkContext.master} cores={os.cpu_count()} "
            f"shuffle_partitions={spark.conf.get('spark.sql.shuffle.partitions')} "
            f"driver_heap_gb={spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory() / 2**30:.1f} "
            f"load_before={_load()}")
    print(head, flush=True)
    lines = [head]
    t0 = time.perf_counter()
    try:
        if "batch" in args.sections:
            lines += bench_batch(spark, args)
        if "ticks" in args.sections:
            lines += bench_ticks(spark, args)
        if "stream" in args.sections:
            lines += bench_stream(spark, args)
    finally:
        stop_session(spark)
    tail = f"load_after={_load()} total_s={time.perf_counter() - t0:.0f}"
    print(tail, flush=True)
    lines.append(tail)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    args.results.header = head
    args.results.write(args.json)


if __name__ == "__main__":
    main()
