"""Cut a change log into consolidated ticks on Spark, and replay or print them.

Holds :func:`make_ticks`: rows with a time or sequence column (a temporal edge list such
as CollegeMsg's ``src dst timestamp``) or an explicit change file (lines
``TICK +|- SRC DST``) become ticks, by row count or by time window, optionally as a
sliding window (each edge inserted when it arrives and deleted when it leaves the
window); each tick is consolidated (weights summed per key, zeros dropped) and written as
Parquet partitioned by tick (``ticks/tick=N/``). :func:`replay_ticks` (re-exported from
:mod:`queries.spark.loaders`, no Spark needed) yields them in tick order as numpy arrays,
and :func:`ticks_to_changes` writes them back in the text change format. Relies on
pyspark, :mod:`queries.spark.readers`, :mod:`queries.spark.dictionary`,
:mod:`queries.spark.loaders` and :mod:`queries.spark.textio`. Used by the
``wcoj spark ticks`` command, ``wcoj stream`` (replay) and tests.

Tick of a change at position ``u`` (its rank in arrival order when ``by="count"``, its
time when ``by="time"``), with ``u0`` the first position::

    insert at  floor((u - u0) / size)
    delete at  floor((u + window - u0) / size)     (sliding window only)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from queries.spark.dictionary import dense_rank, encode
from queries.spark.loaders import load_dictionary, replay_ticks
from queries.spark.pipeline import IngestRun, Progress
from queries.spark.readers import change_columns, typed_id, typed_int
from queries.spark.textio import write_changes
from wcoj.errors import InputError

__all__ = ["make_ticks", "replay_ticks", "ticks_to_changes"]


def _change_typing(source: str, time_column: str | None, node_type: str):
    """The column rules of a change log (``changes``) or a timed edge list (``edges``)."""
    def changes(types):
        cols, error = change_columns(types, node_type)
        return {"pos": cols["tick"], "w": cols["w"], "st": cols["st"], "sv": cols["sv"],
                "dt": cols["dt"], "dv": cols["dv"]}, [error]

    def edges(types):
        pos, pos_err = typed_int(time_column, types[time_column]) if time_column else (
            F.lit(0).cast("bigint"), None)
        s_tag, s_val, s_err = typed_id("src", types["src"], node_type)
        d_tag, d_val, d_err = typed_id("dst", types["dst"], node_type)
        return {"pos": pos, "w": F.lit(1).cast("bigint"), "st": s_tag, "sv": s_val,
                "dt": d_tag, "dv": d_val}, [pos_err, s_err, d_err]

    if source == "changes":
        return ["tick", "op", "src", "dst"], changes
    if source == "edges":
        return ["src", "dst"] + ([time_column] if time_column else []), edges
    raise InputError(f"unknown source {source!r}; expected 'edges' or 'changes'")


def make_ticks(
    spark: SparkSession,
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    source: str = "edges",
    by: str = "count",
    size: int = 1000,
    window: int | None = None,
    time_column: str | None = "time",
    fmt: str | None = None,
    header: bool = False,
    delimiter: str | None = None,
    node_type: str = "long",
    intern: bool = True,
    directed: bool = False,
    dictionary: str | os.PathLike | None = None,
    strict: bool = False,
    overwrite: bool = False,
    progress: Progress = None,
) -> dict[str, Any]:
    """Turn a change log into consolidated ticks written as ``out/ticks/tick=N/``.

    Parameters
    ----------
    spark : SparkSession
    inputs : sequence of path-like
        Text, CSV or Parquet files of one format.
    out : path-like
        Output directory (``ticks/``, ``dictionary/node/`` when interning,
        ``manifest.json``); must not exist unless ``overwrite``.
    source : {"edges", "changes"}
        ``edges``: rows ``src dst [time ...]`` (text: the third field is the time), each
        an insertion; ``changes``: rows ``TICK +|- SRC DST`` whose tick is given (``by``,
        ``size`` and ``window`` are then ignored).
    by : {"count", "time"}
        Cut every ``size`` rows in arrival order (time, then file and line), or every
        ``size`` time units from the first time.
    size : int
        Tick width in rows or time units.
    window : int, optional
        Sliding window length in the same units: each edge is deleted again at the tick
        of ``u + window`` (an insert and delete in one tick cancel).
    time_column : str or None
        Name of the time column (header or Parquet); None: arrival order is file order.
    node_type : {"long", "auto", "string"}
        How node labels are typed (see :func:`queries.spark.ingest.ingest_edges`).
    intern : bool
        Map labels to dense ids through a (growable) node dictionary; otherwise labels
        must be integers and are kept as they are.
    directed : bool
        Keep direction; default canonical undirected ``(min, max)``, self-loops dropped.
    dictionary : path-like, optional
        A previous ingest or ticks output whose node dictionary is reused and grown.
    strict, overwrite, progress
        As in :func:`queries.spark.ingest.ingest_edges`.

    Returns
    -------
    dict
        The manifest (``ticks``: number of non-empty ticks, ``first_tick``,
        ``last_tick``, ``changes``: consolidated rows, ...).
    """
    if size < 1 or (window is not None and window < 1):
        raise InputError(f"size and window must be positive, got size={size}, window={window}")
    if by not in ("count", "time"):
        raise InputError(f"unknown by={by!r}; expected 'count' or 'time'")
    if not intern and node_type != "long":
        raise InputError("without interning node labels must be integers (node_type='long')")
    if source == "edges" and by == "time" and not time_column:
        raise InputError("by='time' needs a time column")
    names, typing = _change_typing(source, time_column, node_type)
    run = IngestRun(spark, inputs, out, "cutting ticks from", fmt=fmt, strict=strict,
                    overwrite=overwrite, progress=progress)
    with run:
        good, n_read = run.read(names, names, typing, what="change line", header=header,
                                delimiter=delimiter, keep=("_file", "_line"))
        u0 = 0
        if source == "changes":
            changes = good.withColumnRenamed("pos", "tick")
        else:
            if by == "count":
                good, _ = dense_rank(good, [F.col("pos"), F.col("_file"), F.col("_line")])
                good = good.withColumn("pos", F.col("_rank")).drop("_rank")
            u0 = int(good.agg(F.min("pos")).first()[0])
            ins = good.withColumn("tick", F.floor((F.col("pos") - u0) / size).cast("bigint"))
            changes = ins
            if window is not None:
                dels = good.withColumn("w", -F.col("w")).withColumn(
                    "tick", F.floor((F.col("pos") + window - u0) / size).cast("bigint"))
                changes = ins.unionByName(dels)
        changes = changes.select("tick", "w", "st", "sv", "dt", "dv")
        n_nodes = n_new = None
        if intern:
            nodes = changes.select(F.col("st").alias("type"), F.col("sv").alias("value")
                                   ).unionByName(changes.select(F.col("dt").alias("type"),
                                                                F.col("dv").alias("value")))
            full, n_new, n_nodes = run.intern("node", nodes, dictionary)
            keyed = encode(encode(changes, full, "st", "sv", "src"), full, "dt", "dv", "dst")
        else:
            keyed = changes.select("tick", "w", F.col("sv").cast("bigint").alias("src"),
                                   F.col("dv").cast("bigint").alias("dst"))
        if not directed:
            keyed = keyed.select("tick", "w", F.least("src", "dst").alias("src"),
                                 F.greatest("src", "dst").alias("dst"))
            keyed = keyed.filter(F.col("src") != F.col("dst"))
        zset = (keyed.groupBy("tick", "src", "dst").agg(F.sum("w").alias("weight"))
                .filter(F.col("weight") != 0).localCheckpoint(eager=True))
        stats = zset.agg(F.count(F.lit(1)), F.countDistinct("tick"), F.min("tick"),
                         F.max("tick")).first()
        run.say(f"writing {stats[0]} consolidated changes in {stats[1]} ticks")
        (zset.repartition("tick").sortWithinPartitions("tick", "src", "dst")
         .write.partitionBy("tick").mode("error").parquet(str(run.stage / "ticks")))
        run.counts.update(change_lines=n_read, changes=int(stats[0]), ticks=int(stats[1]),
                          nodes=n_nodes, new_nodes=n_new)
        manifest = run.finish(
            "ticks", source=source, by=by, size=size, window=window,
            time_column=time_column, start=u0, interned=intern, directed=directed,
            dictionary_from=str(dictionary or ""), columns=["src", "dst", "weight"],
            first_tick=stats[2], last_tick=stats[3])
    run.say(f"wrote {out}: {manifest['counts']['ticks']} ticks")
    return manifest


def ticks_to_changes(ticks: str | os.PathLike, path: str | os.PathLike,
                     labels: bool = False) -> int:
    """Write the ticks of a ticks directory as lines ``TICK +|- SRC DST``.

    Parameters
    ----------
    ticks : path-like
        Output of :func:`make_ticks`.
    path : path-like
        The text file to write (staged, then renamed).
    labels : bool
        Print the original integer labels instead of the dense ids (needs the node
        dictionary, with integer labels only).

    Returns
    -------
    int
        The number of lines written (a weight ``w`` gives ``|w|`` lines).
    """
    batches = replay_ticks(ticks)
    if labels:
        d = load_dictionary(ticks, "node")
        if np.any(d["type"] != "long"):
            raise InputError(f"{ticks}: node labels are not all integers; use labels=False")
        lut = np.empty(int(d["id"].max()) + 1 if d["id"].size else 0, dtype=np.int64)
        lut[d["id"]] = d["value"].astype(np.int64)
        batches = ((t, lut[k], w) for t, k, w in batches)
    return write_changes(Path(path), batches)
