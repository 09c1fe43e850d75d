"""Distributed WCOJ on Spark against the Spark SQL binary-join plan; per-tick deltas against recomputation.

Run ``python -m benchmarks.bench_spark`` (all sections) or pick with ``--sections``:

* ``batch``: triangle count as a HyperCube join with the generic join per cell
  (:func:`queries.spark.hypercube.hypercube_count`) against the binary plan Spark SQL
  runs for the same query (``O e1 JOIN O e2 ON e1.src = e2.src AND e1.dst < e2.dst JOIN O
  e3 ON e3.src = e1.dst AND e3.dst = e2.dst``), on ego-Twitter (``../shared/data/graphs``
  when present) and on the skewed family of ``benchmarks.bench_triangles`` (a clique of
  ~sqrt(m) vertices plus a star of m/2 edges, hub in the middle of the ids). Wall time
  and shuffle bytes written, summed over the stages each query ran, read from the
  driver's status store (``AppStatusStore``, live even with the UI off). When Spark
  broadcasts the edge table (small inputs, under ``autoBroadcastJoinThreshold``) the
  binary plan shuffles nothing, and its broadcast bytes are not counted.
* ``ticks``: per-tick distributed deltas (:class:`queries.spark.delta.DistributedDelta`)
  against a distributed recomputation of the count over the updated graph, for ticks
  of ``--tick-sizes`` changes (90% inserts, 10% deletes) on a power-law graph of
  ``--tick-edges`` edges.

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


def _mb(b: int) -> str:
    return f"{b / 1e6:9.1f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:7.1f}x" if b else "      -"


def bench_batch(spark, args) -> list[str]:
    from queries.spark.hypercube import JoinQuery, frame_of, graph_relations, hypercube_count

    meter = ShuffleMeter(spark)
    q = JoinQuery.from_pattern(triangle())
    inputs = []
    twitter = GRAPHS / "ego-Twitter.txt.gz"
    if twitter.exists() and not args.no_twitter:
        inputs.append(("ego-Twitter", read_edges(twitter)))
    for m in args.skewed:
        inputs.append((f"skewed m={m}", skewed(m)))
    lines = ["batch triangles: HyperCube + generic join per cell vs Spark SQL binary plan",
             f"{'graph':>18} {'edges':>9} {'count':>12} {'wcoj_s':>8} {'binary_s':>9} "
             f"{'speedup':>8} {'wcoj_shufMB':>11} {'bin_shufMB':>10} {'fewer_bytes':>11}"]
    print("\n".join(lines), flush=True)
    warm = graph_relations(frame_of(spark, np.array([[0, 1], [1, 2], [0, 2]])))
    hypercube_count(q, warm)
    for name, edges in inputs:
        o = oriented(edges)
        rels = graph_relations(frame_of(spark, o))
        O = rels["O"].cache()
        O.count()
        O.createOrReplaceTempView("O")
        n_wcoj, t_wcoj, w_wcoj, _ = _timed(meter, lambda: hypercube_count(q, {"O": O}))
        if len(o) <= args.binary_max_edges:
            n_bin, t_bin, w_bin, _ = _timed(meter,
                                            lambda: int(spark.sql(BINARY_SQL).first()[0]))
            assert n_bin == n_wcoj, (name, n_bin, n_wcoj)
        else:
            t_bin, w_bin = float("nan"), 0
        row = (f"{name:>18} {len(o):>9} {n_wcoj:>12} {t_wcoj:8.2f} {t_bin:9.2f} "
               f"{_ratio(t_bin, t_wcoj):>8} {_mb(w_wcoj):>11} {_mb(w_bin):>10} "
               f"{_ratio(w_bin, w_wcoj):>11}")
        print(row, flush=True)
        lines.append(row)
        O.unpersist()
    return lines


def bench_ticks(spark, args) -> list[str]:
    from queries.spark.delta import DistributedDelta, EdgeSet, graph_delta
    from queries.spark.hypercube import JoinQuery, frame_of, graph_relations, hypercube_count

    meter = ShuffleMeter(spark)
    rng = np.random.default_rng(args.seed)
    edges = generate_power_law(args.tick_edges, seed=args.seed)
    n = int(edges.max()) + 1
    q = JoinQuery.from_pattern(triangle())
    current = EdgeSet(edges)
    t0 = time.perf_counter()
    view = DistributedDelta(q, graph_relations(frame_of(spark, edges)),
                            compact_every=args.compact_every)
    count = view.total()
    setup = time.perf_counter() - t0
    lines = [f"ticks: triangles on a power-law graph of {len(edges)} edges (count {count}; "
             f"routed base built and counted in {setup:.1f}s); median of {args.ticks} ticks",
             f"{'changes':>8} {'delta_s':>8} {'recompute_s':>11} {'speedup':>8} "
             f"{'delta_shufMB':>12} {'recomp_shufMB':>13}"]
    print("\n".join(lines), flush=True)
    for k in args.tick_sizes:
        d_times, d_bytes = [], []
        for _ in range(args.ticks):
            n_del = k // 10
            ins = rng.integers(0, n, size=(k - n_del, 2))
            dels = current.keys[rng.choice(len(current), n_del, replace=False)]
            keys, w = current.apply(np.concatenate([ins, dels]),
                                    np.concatenate([np.ones(len(ins)), -np.ones(n_del)]))
            deltas = graph_delta(frame_of(spark, keys, w))
            d, t, wb, _ = _timed(meter, lambda: view.step(deltas))
            count += d
            d_times.append(t)
            d_bytes.append(wb)
        O = graph_relations(frame_of(spark, current.keys))["O"].cache()
        O.count()
        n_re, t_re, w_re, _ = _timed(meter, lambda: hypercube_count(q, {"O": O}))
        O.unpersist()
        assert n_re == count, (k, n_re, count)  # the integrated deltas equal recomputation
        t_d = float(np.median(d_times))
        row = (f"{k:>8} {t_d:8.2f} {t_re:11.2f} {_ratio(t_re, t_d):>8} "
               f"{_mb(int(np.median(d_bytes))):>12} {_mb(w_re):>13}")
        print(row, flush=True)
        lines.append(row)
    view.close()
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sections", nargs="+", default=["batch", "ticks"],
                   choices=["batch", "ticks"])
    p.add_argument("--skewed", nargs="+", type=lambda s: int(float(s)), default=[10_000, 20_000],
                   help="sizes m of the skewed family (default 1e4 2e4)")
    p.add_argument("--binary-max-edges", type=lambda s: int(float(s)), default=2_000_000,
                   help="skip the binary plan above this many edges")
    p.add_argument("--no-twitter", action="store_true", help="leave ego-Twitter out")
    p.add_argument("--tick-edges", type=lambda s: int(float(s)), default=1_000_000)
    p.add_argument("--tick-sizes", nargs="+", type=lambda s: int(float(s)),
                   default=[100, 1000, 10_000])
    p.add_argument("--ticks", type=int, default=3, help="ticks per size (median shown)")
    p.add_argument("--compact-every", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--out", help="also write the report to this file")
    args = p.parse_args(argv)

    import pyspark

    from queries.spark.session import get_session, stop_session

    spark = get_session(app_name="bench-spark", conf={"spark.driver.memory": args.driver_memory})
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
    finally:
        stop_session(spark)
    tail = f"load_after={_load()} total_s={time.perf_counter() - t0:.0f}"
    print(tail, flush=True)
    lines.append(tail)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
