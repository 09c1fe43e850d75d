"""A view over a directory of arriving change files: Structured Streaming, exactly once.

Holds :class:`ChangeStream`: a file-source streaming query over ``CHANGES`` (text or CSV
lines ``TICK OP SRC DST`` for a graph, ``TICK OP E A V`` for datoms; ``OP`` one of ``+ -
1 -1 true false :db/add ...``; ``#`` comments) whose ``foreachBatch`` validates the
micro-batch (file and line of the first bad line), cuts it into ticks, applies them to a
:class:`queries.spark.delta.GraphDelta` or :class:`queries.spark.delta.DatomDelta` (set
semantics and the telescoping rule on the executors) and writes, per micro-batch::

    OUT/edges/batch_id=B/part-00000.parquet    tick, src, dst, weight  (the set delta;
                                               datoms: OUT/datoms/..., tick, a, e, v, weight)
    OUT/changes/batch_id=B/part-00000.parquet  tick, <output variables>, weight (ΔQ's rows)

each staged beside its target and renamed into place; ``changes/batch_id=B`` is the
commit point. Also :func:`check_source` (the typed error before any job) and
:func:`read_changes_sink` (the sink as numpy, for tests). Relies on pyspark, pyarrow,
numpy, :mod:`queries.spark.readers`, :mod:`queries.spark.delta` and
:mod:`queries.spark.hypercube`. Used by ``wcoj spark stream --changes DIR`` and tests.

Exactly once. Spark logs a micro-batch's files in the checkpoint before running it and
its commit after; a restarted query runs again the batches that have no commit, with the
same files and batch id. So: a batch whose ``changes/batch_id=B`` exists is skipped (its
output and state change are already there), and a restarted ``ChangeStream`` rebuilds
its state as the starting graph plus the ``edges/`` deltas of the committed batches,
removing an ``edges/`` directory left without its ``changes/`` by a crash. A malformed
line fails the batch before anything is written or applied: no commit, sink unchanged.

Node, entity and value ids are the integers of the change files (ids of an ingest
output, or raw integer labels); a datom's attribute is its name, and datoms of
attributes the query does not name are ignored. Ticks are applied in increasing tick
order within a micro-batch, and a file should hold whole ticks.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from queries.spark.hypercube import JoinQuery
from wcoj.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["ChangeStream", "check_source", "read_changes_sink", "SinkCrash"]


class SinkCrash(RuntimeError):
    """Raised by the ``crash_after`` test hook (a crash at a chosen point of a batch)."""


def check_source(path: str | os.PathLike) -> str:
    """The absolute path of a readable change directory, else :class:`InputError`."""
    p = os.fspath(path)
    if "://" in p:
        return p
    if not os.path.exists(p):
        raise InputError(f"cannot read changes from {p}: no such directory")
    if not os.path.isdir(p):
        raise InputError(f"cannot read changes from {p}: not a directory (the stream "
                         "reads the files that arrive in a directory)")
    if not os.access(p, os.R_OK | os.X_OK):
        raise InputError(f"cannot read changes from {p}: permission denied")
    return os.path.abspath(p)


def _batch_dirs(root: Path) -> dict[int, Path]:
    out = {}
    if root.is_dir():
        for entry in root.iterdir():
            if entry.name.startswith("batch_id=") and entry.is_dir():
                out[int(entry.name.split("=", 1)[1])] = entry
    return out


def _write_atomically(table: Any, target: Path) -> None:
    import pyarrow.parquet as pq

    stage = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    stage.mkdir(parents=True)
    try:
        pq.write_table(table, stage / "part-00000.parquet")
        os.replace(stage, target)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def read_changes_sink(out: str | os.PathLike, columns: tuple[str, ...]
                      ) -> list[tuple[int, int, dict]]:
    """``[(batch_id, tick, {row: weight})]`` of a sink, in (batch, tick) order."""
    import pyarrow.parquet as pq

    found = []
    for b, d in sorted(_batch_dirs(Path(out) / "changes").items()):
        t = pq.read_table(d)
        ticks = t.column("tick").to_numpy()
        keys = np.column_stack([t.column(c).to_numpy() for c in columns]) if t.num_rows \
            else np.zeros((0, len(columns)), np.int64)
        w = t.column("weight").to_numpy()
        for tick in sorted(set(ticks.tolist())):
            m = ticks == tick
            found.append((b, tick, {tuple(r): int(x) for r, x in
                                    zip(keys[m].tolist(), w[m].tolist())}))
    return found


class ChangeStream:
    """A conjunctive graph query kept up to date over a directory of arriving change files.

    Parameters
    ----------
    spark : SparkSession
    query : JoinQuery
        Graphs: over ``D``, ``O``, ``S`` (any pattern of :mod:`queries.patterns`, or any
        conjunctive query over them). Datoms: over attribute names, atoms ``(e, v)``.
    base : DataFrame or None
        The starting graph, columns ``src, dst`` (integers); datoms: columns ``e, a, v``
        (``a`` the attribute name), or None for none.
    changes : path-like
        The directory the change files arrive in (checked before any job starts).
    out : path-like
        The sink (``changes/``, ``edges/``) and, by default, the checkpoint
        (``out/_checkpoint``).
    checkpoint : path-like, optional
    kind : {"edges", "datoms"}
    directed : bool
        Graphs: directed edges.
    fmt : {"text", "csv"}
        Whitespace or CSV fields (``delimiter`` to change the separator).
    max_files_per_trigger : int
        Files per micro-batch.
    n_cells, heavy, compact_every
        As in :class:`queries.spark.delta.GraphDelta`.
    crash_after : (point, batch_id), optional
        Test hook: in batch ``batch_id``, raise :class:`SinkCrash` after writing ``edges/``
        (``point="edges"``, before the commit point) or after the commit point
        (``"commit"``, before Spark's own commit).
    """

    def __init__(self, spark: SparkSession, query: JoinQuery, base: DataFrame | None,
                 changes: str | os.PathLike, out: str | os.PathLike, *,
                 checkpoint: str | os.PathLike | None = None, kind: str = "edges",
                 directed: bool = False,
                 fmt: str = "text", delimiter: str | None = None,
                 max_files_per_trigger: int = 1, n_cells: int | None = None,
                 heavy: Any = None, compact_every: int = 8,
                 crash_after: tuple[str, int] | None = None):
        from queries.spark.delta import DatomDelta, GraphDelta

        if kind not in ("edges", "datoms"):
            raise InputError(f"unknown change kind {kind!r}; expected 'edges' or 'datoms'")
        if kind == "edges" and base is None:
            raise InputError("a graph stream needs its starting graph (may be empty)")
        if fmt not in ("text", "csv"):
            raise InputError(f"unknown change format {fmt!r}; expected 'text' or 'csv'")
        self.changes = check_source(changes)
        self.spark = spark
        self.query = query
        self.kind = kind
        self.directed = directed
        self.fmt, self.delimiter = fmt, delimiter
        self.max_files = max_files_per_trigger
        self.out = Path(out).absolute()
        self.checkpoint = str(checkpoint or self.out / "_checkpoint")
        self.crash_after = crash_after
        self.failed: BaseException | None = None  # a batch failed after changing state
        self.last_error: BaseException | None = None
        self.batches: list[dict] = []  # per batch run here: id, ticks, changes, seconds
        self._columns: tuple | None = None  # the parse's column expressions, built once
        if _batch_dirs(self.out / "changes") and not (Path(self.checkpoint) / "offsets").is_dir():
            # batch ids would start again at 0 and the committed ones be skipped
            raise InputError(f"{self.out} holds committed batches but the checkpoint "
                             f"{self.checkpoint} is gone; use a new output directory, or "
                             "restore the checkpoint")
        (self.out / "changes").mkdir(parents=True, exist_ok=True)
        (self.out / kind).mkdir(parents=True, exist_ok=True)
        committed = self._recover()
        current = self._current(base, committed)
        if kind == "edges":
            self.view: Any = GraphDelta(query, current, directed=directed, n_cells=n_cells,
                                        heavy=heavy, compact_every=compact_every)
        else:
            self.view = DatomDelta(query, current, spark=spark, n_cells=n_cells, heavy=heavy,
                                   compact_every=compact_every)

    # ------------------------------------------------------------------ recovery
    def _recover(self) -> list[Path]:
        """The ``edges/`` deltas of committed batches; remove those without a commit."""
        done = _batch_dirs(self.out / "changes")
        kept = []
        for b, d in sorted(_batch_dirs(self.out / self.kind).items()):
            if b in done:
                kept.append(d)
            else:  # a crash between the two renames: the batch runs again
                shutil.rmtree(d)
        return kept

    def _current(self, base: DataFrame | None, committed: list[Path]) -> DataFrame | None:
        if self.kind == "datoms":
            return self._current_datoms(base, committed)
        return self._current_edges(base, committed)

    def _current_datoms(self, base: DataFrame | None, committed: list[Path]
                        ) -> DataFrame | None:
        from pyspark.sql import functions as F

        cols = [F.col("e").cast("bigint").alias("e"), F.col("a").cast("string").alias("a"),
                F.col("v").cast("bigint").alias("v")]
        if not committed:
            return None if base is None else base.select(*cols)
        deltas = self.spark.read.parquet(*[str(p) for p in committed]).select(
            *cols, F.col("weight").cast("bigint"))
        if base is not None:
            deltas = base.select(*cols).distinct().withColumn(
                "weight", F.lit(1).cast("bigint")).unionByName(deltas)
        return (deltas.groupBy("e", "a", "v").agg(F.sum("weight").alias("w"))
                .filter(F.col("w") > 0).select("e", "a", "v"))

    def _current_edges(self, graph: DataFrame, committed: list[Path]) -> DataFrame:
        from pyspark.sql import functions as F

        s, d = graph.columns[:2]
        e = graph.select(F.col(s).cast("bigint").alias("src"),
                         F.col(d).cast("bigint").alias("dst")).filter("src != dst")
        if not self.directed:
            e = e.select(F.least("src", "dst").alias("src"), F.greatest("src", "dst").alias("dst"))
        if not committed:
            return e
        e = e.distinct().withColumn("weight", F.lit(1).cast("bigint"))
        deltas = self.spark.read.parquet(*[str(p) for p in committed]).select(
            "src", "dst", F.col("weight").cast("bigint"))
        return (e.unionByName(deltas).groupBy("src", "dst").agg(F.sum("weight").alias("w"))
                .filter(F.col("w") > 0).select("src", "dst"))

    # ------------------------------------------------------------------ one batch
    def _parse(self, batch: DataFrame) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The batch's ticks ``(tick, keys, weights)`` in tick order, rows in file order;
        :class:`InputError` naming the file and line of the first malformed line."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        from queries.spark.readers import (
            change_columns,
            display_path,
            is_data_line,
            raw_lines,
            split_fields,
        )

        edges = self.kind == "edges"
        if self._columns is None:  # built once: each F.* call is a round trip to the JVM
            names = ["tick", "op", "src", "dst"] if edges else ["tick", "op", "e", "a", "v"]
            fields = split_fields(self.fmt, {n: i for i, n in enumerate(names)},
                                  self.delimiter)
            types = {n: T.StringType() for n in names}
            if edges:
                cols, error = change_columns(types, "long")
                keys = [cols["sv"].try_cast("bigint").alias("k0"),
                        cols["dv"].try_cast("bigint").alias("k1")]
            else:
                cols, error = change_columns(types, "long", ends=("e", "v"))
                error = F.coalesce(error, F.when(F.col("a").isNull() | (F.trim("a") == ""),
                                                 F.lit("missing a")))
                keys = [F.trim("a").alias("k0"), cols["sv"].try_cast("bigint").alias("k1"),
                        cols["dv"].try_cast("bigint").alias("k2")]
            self._columns = (
                [fields[n].alias(n) for n in names],
                ["_file", "_block", "_mid", "_text", is_data_line().alias("_data"),
                 F.when(is_data_line(), error).alias("_error"), cols["tick"].alias("tick"),
                 cols["w"].alias("w"), *keys])
        split, typed = self._columns
        table = raw_lines(batch).select("*", *split).select(*typed).toArrow()
        if not table.num_rows:
            return []
        files = table.column("_file").to_numpy(zero_copy_only=False)
        order = np.lexsort((table.column("_mid").to_numpy(), table.column("_block").to_numpy(),
                            files))
        data = table.column("_data").to_numpy(zero_copy_only=False)[order].astype(bool)
        errors = table.column("_error").to_pylist()
        bad = [k for k, i in enumerate(order.tolist()) if errors[i] is not None]
        if bad:
            k = bad[0]
            f = files[order[k]]
            line = k - int(np.searchsorted(files[order], f)) + 1  # lines of f before it, + 1
            text = table.column("_text")[int(order[k])].as_py()
            raise InputError(f"malformed change line at {display_path(f)}:{line}: "
                             f"{errors[order[k]]}: {text[:80]!r}")
        take = order[data]
        ticks = table.column("tick").to_numpy(zero_copy_only=False)[take].astype(np.int64)
        w = table.column("w").to_numpy(zero_copy_only=False)[take].astype(np.int64)
        if edges:
            keys = np.column_stack([table.column(c).to_numpy(zero_copy_only=False)[take]
                                    for c in ("k0", "k1")]).astype(np.int64)
        else:  # the attribute's position in the query; other attributes do not matter
            code = {a: i for i, a in enumerate(self.view.attributes)}
            attrs = table.column("k0").to_numpy(zero_copy_only=False)[take]
            pos = np.array([code.get(a, -1) for a in attrs.tolist()], dtype=np.int64)
            ev = np.column_stack([table.column(c).to_numpy(zero_copy_only=False)[take]
                                  for c in ("k1", "k2")]).astype(np.int64)
            mine = pos >= 0
            keys, w, ticks = np.column_stack([pos, ev])[mine], w[mine], ticks[mine]
        by_tick = np.argsort(ticks, kind="stable")
        ticks, keys, w = ticks[by_tick], keys[by_tick], w[by_tick]
        bounds = np.flatnonzero(np.diff(ticks)) + 1
        return [(int(t[0]), k, x) for t, k, x in
                zip(np.split(ticks, bounds), np.split(keys, bounds), np.split(w, bounds))
                if len(t)]

    def _tables(self, ticks: list, results: list) -> tuple[Any, Any]:
        import pyarrow as pa

        def column(parts):
            return pa.array(np.concatenate(parts) if parts else np.zeros(0, np.int64),
                            pa.int64())

        names = ["src", "dst"] if self.kind == "edges" else ["a", "e", "v"]
        s_parts: dict[str, list] = {"tick": [], **{n: [] for n in names}, "weight": []}
        out = list(self.query.output)
        c_parts: dict[str, list] = {"tick": [], **{v: [] for v in out}, "weight": []}
        for (tick, _, _), ((sk, sw), (ck, cw)) in zip(ticks, results):
            s_parts["tick"].append(np.full(len(sw), tick, np.int64))
            for j, n in enumerate(names):
                s_parts[n].append(sk[:, j])
            s_parts["weight"].append(sw)
            c_parts["tick"].append(np.full(len(cw), tick, np.int64))
            for j, v in enumerate(out):
                c_parts[v].append(ck[:, j])
            c_parts["weight"].append(cw)
        state = {k: column(v) for k, v in s_parts.items()}
        if self.kind == "datoms":  # attribute positions back to names
            attrs = np.array(self.view.attributes, dtype=object)
            state["a"] = pa.array(attrs[state["a"].to_numpy()].tolist(), pa.string())
        return (pa.table(state), pa.table({k: column(v) for k, v in c_parts.items()}))

    def _batch(self, batch: DataFrame, batch_id: int) -> None:
        import time

        t0 = time.perf_counter()
        if self.failed is not None:  # the state may be ahead of the sink: restart instead
            raise InputError(f"this stream failed in an earlier batch ({self.failed}); "
                             "start a new ChangeStream to resume from the checkpoint")
        target = self.out / "changes" / f"batch_id={batch_id}"
        if target.exists():  # committed before a crash: its state is in the rebuilt graph
            self.batches.append({"batch_id": batch_id, "skipped": True})
            return
        try:
            ticks = self._parse(batch)  # raises before anything is applied or written
        except BaseException as exc:
            self.last_error = exc
            raise
        t1 = time.perf_counter()
        try:
            results = self.view.apply([(k, w) for _, k, w in ticks], count_only=False)
            t2 = time.perf_counter()
            facts, changes = self._tables(ticks, results)
            _write_atomically(facts, self.out / self.kind / f"batch_id={batch_id}")
            if self.crash_after == ("edges", batch_id):
                raise SinkCrash(f"test crash after edges/ of batch {batch_id}")
            _write_atomically(changes, target)
        except BaseException as exc:
            self.failed = self.last_error = exc
            raise
        self.batches.append({"batch_id": batch_id, "ticks": [t for t, _, _ in ticks],
                             "changes": int(sum(len(w) for _, _, w in ticks)),
                             "delta": int(changes.column("weight").to_numpy().sum())
                             if changes.num_rows else 0,
                             "count": self.view.count,
                             "seconds": round(time.perf_counter() - t0, 3),
                             "read_s": round(t1 - t0, 3), "apply_s": round(t2 - t1, 3)})
        if self.crash_after == ("commit", batch_id):
            self.failed = self.last_error = SinkCrash(
                f"test crash after the commit of batch {batch_id}")
            raise self.failed

    # ------------------------------------------------------------------ the query
    def start(self, trigger: dict | None = None) -> StreamingQuery:
        """Start the streaming query (default trigger: as soon as files arrive)."""
        from pyspark.sql import functions as F

        check_source(self.changes)
        source = (self.spark.readStream.format("text")
                  .option("maxFilesPerTrigger", self.max_files).load(self.changes)
                  .select(F.col("_metadata.file_path").alias("_file"),
                          F.col("_metadata.file_block_start").alias("_block"), "value"))
        writer = (source.writeStream.foreachBatch(self._batch)
                  .option("checkpointLocation", self.checkpoint)
                  .queryName(f"wcoj-{uuid.uuid4().hex[:8]}"))
        writer = writer.trigger(**trigger) if trigger else writer.trigger(processingTime="0 seconds")
        return writer.start()

    def run_available(self) -> list[dict]:
        """Process every file present now (``availableNow``), then stop; the batches run."""
        n = len(self.batches)
        self.last_error = None
        q = self.start({"availableNow": True})
        try:
            q.awaitTermination()
        except Exception as exc:
            if self.last_error is not None:
                raise self.last_error from exc
            raise
        return self.batches[n:]

    def close(self) -> None:
        self.view.close()
