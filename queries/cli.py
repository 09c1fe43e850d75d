"""The ``wcoj`` command: count graph patterns in a file, or keep them up to date over a stream.

Holds :func:`main` (the console script ``wcoj``, see ``[project.scripts]``) and
:func:`build_parser`. Subcommands: ``count``, ``stream``, ``demo`` (runs
:mod:`queries.graph_demo`) and ``spark`` (hands over to :mod:`queries.spark.cli`, imported
only then). Relies on :mod:`queries.graph`, :mod:`queries.graphio` and
:mod:`queries.patterns`. Results go to stdout; timings, progress bars (tqdm, only when
stderr is a terminal) and errors go to stderr. A user error prints ``wcoj: error: ...``
and exits with status 2, never a traceback.

>>> main(["count", "--graph", "no/such/file.txt", "--pattern", "triangle"])
2
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import time
from collections.abc import Sequence

from tqdm import tqdm

from queries.graph import Graph, settle_heap, warm_up
from queries.graphio import read_changes, read_edges
from queries.patterns import PATTERN_NAMES, Pattern, by_name
from wcoj.errors import InputError, WcojError, as_interrupt
from wcoj.zset import ZSet

__all__ = ["main", "build_parser"]

_EPILOG = """\
patterns:
  triangle      undirected triangles (each once)
  4-cycle       undirected 4-cycles (squares, each once)
  3-cycle       directed 3-cycles of the directed graph (implies --directed)
  4-clique      undirected 4-cliques; also k-clique, k-cycle, directed-k-cycle

input files:
  Edge lists: one edge per line, 'SRC DST [more columns]', whitespace or comma
  separated; '#' or '%' starts a comment line; a CSV header line is skipped; gzip is
  recognised by content. Extra columns (timestamps, ratings) are ignored. Self-loops and
  duplicate edges are dropped; undirected patterns see the undirected simple graph.
  Change logs: lines 'TICK +|- SRC DST'; lines of one tick are contiguous; within a tick
  the last line about an edge wins.

examples:
  wcoj count --graph ../shared/data/graphs/karate.txt.gz --pattern triangle
  wcoj count --graph edges.csv --pattern 4-cycle --pattern 4-clique
  wcoj stream --graph edges.txt --changes changes.txt --pattern triangle
  wcoj stream --graph edges.txt --changes changes.txt --pattern triangle \\
      --pattern 4-cycle --format table
  wcoj demo --edges 100000 --ticks 20
  wcoj spark --help
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``wcoj`` (``demo`` and ``spark`` take their own arguments)."""
    p = argparse.ArgumentParser(
        prog="wcoj",
        description="Count graph patterns (triangles, 4-cycles, cliques, directed cycles) "
                    "with worst-case-optimal joins, and keep the counts up to date while "
                    "edges are inserted and deleted.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--graph", required=True, metavar="FILE",
                        help="edge list (SNAP text, CSV or TSV; gzip allowed)")
    common.add_argument("--pattern", action="append", required=True, metavar="P",
                        help=f"pattern to count ({', '.join(PATTERN_NAMES)}, k-clique, ...); "
                             "repeat for several")
    common.add_argument("--directed", action="store_true",
                        help="read edges as directed arcs (directed patterns imply it)")
    common.add_argument("--columns", nargs=2, type=int, default=(0, 1), metavar=("SRC", "DST"),
                        help="0-based fields holding the node ids (default: 0 1)")
    common.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bars or timings on stderr")

    c = sub.add_parser("count", parents=[common], help="count a pattern in an edge-list file",
                       description="Print the number of occurrences of each pattern in FILE.",
                       epilog="example:\n  wcoj count --graph ../shared/data/graphs/karate.txt.gz"
                              " --pattern triangle\n  45",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.set_defaults(run=_count)

    s = sub.add_parser(
        "stream", parents=[common], help="replay a change log, printing each tick's change",
        description="Load FILE, register the patterns, then apply each tick of CHANGES and "
                    "print, per tick and pattern, the count after the tick and the result "
                    "rows that appeared (added) and disappeared (removed).",
        epilog="jsonl fields: tick, pattern, count, added, removed, added_total, "
               "removed_total, edges_changed, seconds\n\nexample:\n"
               "  printf '1 + 1 2\\n1 - 2 3\\n2 + 2 3\\n' > changes.txt\n"
               "  wcoj stream --graph edges.txt --changes changes.txt --pattern triangle",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--changes", required=True, metavar="CHANGES",
                   help="change log: lines 'TICK +|- SRC DST'")
    s.add_argument("--format", choices=["jsonl", "table"], default="jsonl",
                   help="one JSON object per tick and pattern (default), or a text table")
    s.add_argument("--max-rows", type=int, default=1000, metavar="N",
                   help="list at most N added and N removed rows per tick (default 1000)")
    s.set_defaults(run=_stream)

    sub.add_parser("demo", add_help=False,
                   help="incremental triangles and 4-cycles on a generated power-law graph "
                        "(wcoj demo --help)")
    sub.add_parser("spark", add_help=False,
                   help="Spark pipeline: ingest edge lists and datoms, cut change logs into "
                        "ticks (wcoj spark --help)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``wcoj``; return the exit status (0 ok, 2 bad input or usage, 130 interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("demo", "spark"):
            return _delegate(argv[0], argv[1:])
        args = build_parser().parse_args(argv)
        return args.run(args)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except (WcojError, OSError) as exc:
        if isinstance(exc, BrokenPipeError):  # e.g. `wcoj stream ... | head`
            return 0
        _error(str(exc) if isinstance(exc, WcojError) else f"{exc.strerror}: {exc.filename}")
        return 2
    except KeyboardInterrupt:
        print("wcoj: interrupted", file=sys.stderr)
        return 130
    except SystemError as exc:  # Ctrl-C inside a compiled kernel
        if as_interrupt(exc) is exc:
            raise
        print("wcoj: interrupted", file=sys.stderr)
        return 130


def _error(message: str) -> None:
    print(f"wcoj: error: {message}", file=sys.stderr)


def _delegate(command: str, rest: list[str]) -> int:
    if command == "demo":
        from queries import graph_demo
        return int(graph_demo.main(rest) or 0)
    if importlib.util.find_spec("pyspark") is None:
        _error("wcoj spark needs pyspark (and Java 17+): pip install 'wcoj-engine[spark]'")
        return 2
    try:
        spark_cli = importlib.import_module("queries.spark.cli")
    except ImportError as exc:
        _error(f"the Spark command is not available: {exc}")
        return 2
    return int(spark_cli.main(rest) or 0)


# --------------------------------------------------------------------------- helpers


def _patterns(names: list[str]) -> list[tuple[str, Pattern]]:
    """``(label, pattern)`` per distinct pattern; the label is the name as typed."""
    out, seen = [], set()
    for n in names:
        p = by_name(n)
        if p.name not in seen:
            seen.add(p.name)
            out.append((n.strip().lower(), p))
    return out


def _uses_directed(patterns: list[tuple[str, Pattern]]) -> bool:
    return any(rel == "D" for _, p in patterns for rel, _ in p.atoms)


def _bar(quiet: bool, **kw) -> tqdm:
    return tqdm(file=sys.stderr, disable=quiet or not sys.stderr.isatty(), leave=False, **kw)


def _say(args, message: str) -> None:
    if not args.quiet:
        print(f"wcoj: {message}", file=sys.stderr)


def _load(args, patterns: list[tuple[str, Pattern]]) -> tuple[Graph, bool]:
    """Read ``--graph`` into a fresh ``Graph``; timings on stderr."""
    directed = args.directed or _uses_directed(patterns)
    with _bar(args.quiet, total=2, desc="load", bar_format="{desc}: {n}/{total} {postfix}") as bar:
        bar.set_postfix_str(f"reading {args.graph}")
        t0 = time.perf_counter()
        edges = read_edges(args.graph, columns=tuple(args.columns))
        t1 = time.perf_counter()
        bar.update()
        bar.set_postfix_str(f"indexing {len(edges):,} edges")
        g = Graph(directed=directed)
        g.load_edges(edges)
        bar.update()
    t2 = time.perf_counter()
    kind = "directed arcs" if directed else "undirected edges"
    _say(args, f"read {len(edges):,} lines of {args.graph} in {t1 - t0:.2f} s; "
               f"{g.n_edges:,} {kind} indexed in {t2 - t1:.2f} s")
    return g, directed


# --------------------------------------------------------------------------- count


def _count(args) -> int:
    patterns = _patterns(args.pattern)
    g, _ = _load(args, patterns)
    for label, p in patterns:
        t0 = time.perf_counter()
        n = g.count(p)
        _say(args, f"{label}: counted in {time.perf_counter() - t0:.2f} s")
        print(n if len(patterns) == 1 else f"{label}\t{n}", flush=True)
    return 0


# --------------------------------------------------------------------------- stream


def _split_change(change: ZSet, cap: int) -> dict:
    pos = change.weights > 0
    rows = change.keys
    return {
        "added": rows[pos][:cap].tolist(),
        "removed": rows[~pos][:cap].tolist(),
        "added_total": int(change.weights[pos].sum()),
        "removed_total": int(-change.weights[~pos].sum()),
    }


def _edges_changed(edge_delta: ZSet, directed: bool) -> int:
    """Changed edges of a tick; an undirected edge counts once whether the delta holds
    it once as ``(min, max)`` or in both directions."""
    k = edge_delta.keys
    return len(k) if directed else int((k[:, 0] < k[:, 1]).sum())


def _stream(args) -> int:
    if args.max_rows < 0:
        raise InputError(f"--max-rows must be >= 0, got {args.max_rows}")
    patterns = _patterns(args.pattern)
    g, directed = _load(args, patterns)
    t0 = time.perf_counter()
    views = [(label, g.view(p, name=label)) for label, p in patterns]
    _say(args, "initial counts " + ", ".join(f"{label}={v.count:,}" for label, v in views)
         + f" in {time.perf_counter() - t0:.2f} s")
    ticks = read_changes(args.changes, directed=directed)
    warm_up([p for _, p in patterns], directed=directed)  # kernels loaded before tick 1
    settle_heap()  # the loaded state is long-lived: keep full collections off the ticks
    table = args.format == "table"
    with _bar(args.quiet, total=len(ticks), desc="ticks", unit="tick") as bar:
        def emit(line: str) -> None:
            (bar.write(line, file=sys.stdout) if not bar.disable else print(line))

        if table:
            emit(f"{'tick':>8}  {'pattern':<22} {'count':>14} {'added':>10} {'removed':>10}"
                 f" {'ms':>9}")
        total = 0.0
        for tick, inserts, deletes in ticks:
            t = g.apply(inserts=inserts, deletes=deletes)
            total += t.seconds
            changed = _edges_changed(t.edge_delta, directed)
            for label, v in views:
                rec = {"tick": tick, "pattern": label, "count": v.count,
                       **_split_change(t.changes[label], args.max_rows),
                       "edges_changed": changed, "seconds": round(t.seconds, 6)}
                if table:
                    emit(f"{tick:>8}  {label:<22} {v.count:>14,} {rec['added_total']:>+10,}"
                         f" {-rec['removed_total']:>+10,} {t.seconds * 1e3:>9.2f}")
                else:
                    emit(json.dumps(rec, separators=(",", ":")))
            bar.update()
    sys.stdout.flush()
    _say(args, f"{len(ticks)} ticks applied in {total:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
