"""The ``wcoj`` command: count graph patterns in a file, or keep them up to date over a stream.

Holds :func:`main` (the console script ``wcoj``, see ``[project.scripts]``) and
:func:`build_parser`. Subcommands: ``count``, ``stream``, ``db`` (a durable Datalog
database: ``create``, ``transact``, ``query``, ``log``), ``demo`` (runs
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
import functools
import importlib
import importlib.util
import json
import sys
import time
from collections.abc import Sequence

import numpy as np
from tqdm import tqdm

from queries.graph import Graph, settle_heap, warm_up
from queries.graphio import iter_change_rows, read_edges
from queries.patterns import PATTERN_NAMES, Pattern, by_name
from queries.progress import duration, slow_step
from queries.stream import last_line_wins
from wcoj.errors import InputError, WcojError, as_interrupt, excerpt
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
  wcoj db create movies.db schema.edn data.edn
  wcoj db transact movies.db more.edn
  wcoj db query movies.db '[:find ?t :where [_ :movie/title ?t]]' --as-of 2
  wcoj db log movies.db
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

    _db_parser(sub)
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


def _db_parser(sub) -> None:
    d = sub.add_parser("db", help="a durable Datalog database: create, transact, query, log")
    dsub = d.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    c = dsub.add_parser("create", help="create a database from EDN files (one transaction each)")
    c.add_argument("path", help="directory of the new database")
    c.add_argument("files", nargs="*", metavar="FILE", help="EDN transaction files, in order")
    c.add_argument("--snapshot-every", type=int, default=100_000, metavar="N",
                   help="snapshot the indexes every N logged datoms (default 100000)")
    c.set_defaults(run=_db_create)
    t = dsub.add_parser("transact", help="transact an EDN file (a vector of forms)")
    t.add_argument("path")
    t.add_argument("files", nargs="+", metavar="FILE")
    t.set_defaults(run=_db_transact)
    q = dsub.add_parser("query", help="ask a query (EDN text, or @FILE); rows as EDN lines")
    q.add_argument("path")
    q.add_argument("query")
    q.add_argument("inputs", nargs="*", metavar="INPUT", help="EDN values for :in after $")
    when = q.add_mutually_exclusive_group()
    when.add_argument("--as-of", metavar="T", help="a transaction id, a t, or an instant "
                                                  "(#inst text or ISO 8601)")
    when.add_argument("--since", metavar="T")
    when.add_argument("--history", action="store_true",
                      help="every assertion and retraction ([?e ?a ?v ?tx ?added])")
    q.set_defaults(run=_db_query)
    lg = dsub.add_parser("log", help="the transactions: t, tx id, instant, datoms")
    lg.add_argument("path")
    lg.add_argument("--last", type=int, metavar="N", help="only the last N")
    lg.set_defaults(run=_db_log)


def _db_open(path: str, must_exist: bool = True, **kw):
    from pathlib import Path

    from queries.database import Database
    if must_exist and not (Path(path) / "log.sqlite").exists():
        raise InputError(f"no database at {path}; create one with 'wcoj db create {path}'")
    return Database.open(path, **kw)


def _db_files(db, files: list[str], args) -> None:
    from pathlib import Path
    for f in files:
        with _slow_step(args, f"transacting {f}"):
            r = db.transact(Path(f).read_text())
        print(f"{f}\ttx {r.tx}\t{len(r.tx_data)} datoms")


def _db_create(args) -> int:
    from pathlib import Path
    if (Path(args.path) / "log.sqlite").exists():
        raise InputError(f"{args.path} holds a database already; use 'wcoj db transact'")
    with _db_open(args.path, False, snapshot_every=args.snapshot_every) as db:
        _db_files(db, args.files, args)
    return 0


def _db_transact(args) -> int:
    with _db_open(args.path) as db:
        _db_files(db, args.files, args)
    return 0


def _db_point(text: str):
    from datetime import datetime

    from queries.edn import loads
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return loads(text) if text.startswith("#inst") else datetime.fromisoformat(text)
    except ValueError as e:
        raise InputError(f"--as-of/--since takes a transaction id, a t or an instant, "
                         f"got {excerpt(text)}") from e


def _db_query(args) -> int:
    from pathlib import Path

    from queries.edn import dumps, loads
    text = Path(args.query[1:]).read_text() if args.query.startswith("@") else args.query
    with _db_open(args.path) as db:
        src = db.as_of(_db_point(args.as_of)) if args.as_of else \
            db.since(_db_point(args.since)) if args.since else db.history() if args.history else db
        with _slow_step(args, "running the query"):
            result = src.q(text, *[loads(x) for x in args.inputs])
    if isinstance(result, set):
        for line in sorted(dumps(list(r)) for r in result):
            print(line)
    else:
        print(dumps(result))
    return 0


def _db_log(args) -> int:
    from indexes.eav import tx_id
    with _db_open(args.path) as db:
        txs = db.transactions()
    print("t\ttx\tinstant\tdatoms")
    for t, instant, n in txs[-args.last:] if args.last else txs:
        print(f"{t}\t{tx_id(t)}\t{instant.isoformat()}\t{n}")
    return 0


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
    if not getattr(args, "quiet", False):
        print(f"wcoj: {message}", file=sys.stderr)


def _slow_step(args, what: str, done: bool = True):
    """``progress.slow_step`` saying on stderr, silent under ``--quiet``."""
    quiet = getattr(args, "quiet", False)  # (the db commands have no --quiet: stdout holds their answer)
    return slow_step(None if quiet else functools.partial(_say, args), what, done=done)


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
        with _slow_step(args, f"counting {label}", done=False):
            n = g.count(p)
        _say(args, f"{label}: counted in {duration(time.perf_counter() - t0)}")
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


def _by_tick(cols: dict, ticks: np.ndarray) -> tuple:
    """A stream result's change columns of one view, cut per tick: ``(lo, hi, keys,
    weights)``, the rows of ``ticks[i]`` at ``lo[i]:hi[i]`` (rows come in tick order)."""
    t = cols["tick"]
    names = [c for c in cols if c not in ("tick", "weight")]
    keys = np.column_stack([cols[c] for c in names]) if names else np.zeros((len(t), 0), np.int64)
    return np.searchsorted(t, ticks, "left"), np.searchsorted(t, ticks, "right"), keys, cols["weight"]


def _split_rows(view: tuple, i: int, cap: int) -> dict:
    """``_split_change`` of the ``i``-th tick's rows in ``_by_tick``'s cut."""
    lo, hi, keys, weights = view
    return _split_change(ZSet(keys[lo[i]:hi[i]], weights[lo[i]:hi[i]].copy()), cap)


def _stream(args) -> int:
    if args.max_rows < 0:
        raise InputError(f"--max-rows must be >= 0, got {args.max_rows}")
    patterns = _patterns(args.pattern)
    g, directed = _load(args, patterns)
    t0 = time.perf_counter()
    with _slow_step(args, "counting the initial results", done=False):
        views = [(label, g.view(p, name=label)) for label, p in patterns]
    _say(args, "initial counts " + ", ".join(f"{label}={v.count:,}" for label, v in views)
         + f" in {duration(time.perf_counter() - t0)}")
    with _slow_step(args, "preparing the tick kernels"):
        warm_up([p for _, p in patterns], directed=directed)  # kernels loaded before tick 1
    settle_heap()  # the loaded state is long-lived: keep full collections off the ticks
    table = args.format == "table"
    n_ticks, total = 0, 0.0
    rows = last_line_wins(iter_change_rows(args.changes), directed)
    with _bar(args.quiet, total=None, desc="ticks", unit="tick") as bar:
        def emit(line: str) -> None:
            (bar.write(line, file=sys.stdout) if not bar.disable else print(line))

        if table:
            emit(f"{'tick':>8}  {'pattern':<22} {'count':>14} {'added':>10} {'removed':>10}"
                 f" {'ms':>9}")
        for res in g.stream(rows):
            total += float(res.tick_seconds.sum())
            per_view = {label: _by_tick(res.changes[label], res.ticks) for label, _ in views}
            for i, tick in enumerate(res.ticks.tolist()):
                seconds = float(res.tick_seconds[i])
                for label, _ in views:
                    rec = {"tick": tick, "pattern": label, "count": int(res.counts[label][i]),
                           **_split_rows(per_view[label], i, args.max_rows),
                           "edges_changed": int(res.counts["edges changed"][i]), "seconds": round(seconds, 6)}
                    if table:
                        emit(f"{tick:>8}  {label:<22} {rec['count']:>14,} {rec['added_total']:>+10,}"
                             f" {-rec['removed_total']:>+10,} {seconds * 1e3:>9.2f}")
                    else:
                        emit(json.dumps(rec, separators=(",", ":")))
            n_ticks += len(res)
            bar.update(len(res))
    sys.stdout.flush()
    _say(args, f"{n_ticks:,} ticks applied in {duration(total)}"
               + (f" ({duration(total / n_ticks)} a tick)" if n_ticks else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
