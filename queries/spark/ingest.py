"""Ingest edge lists and datoms on Spark into dictionary-encoded, sorted Parquet indexes.

Holds :func:`ingest_edges` (SNAP text, gzip, CSV with or without header, Parquet ->
dense node ids -> canonical undirected edges -> one sorted index per column order, and
degree statistics for skew-aware routing) and :func:`ingest_datoms` (``e, a, v[, tx, op]``
in CSV or Parquet -> entity, attribute and value ids -> per-tick Z-set and the integrated
state in EAV, AEV, AVE order). Both are runs of the one pipeline of
:mod:`queries.spark.pipeline` (read and validate with line numbers, intern into stable
ids, write sorted partitions, manifest, rename into place), as is
:func:`queries.spark.ticks.make_ticks`; both accept a previous output as ``dictionary``
to reuse and grow its ids (incremental ingest). Relies on pyspark,
:mod:`queries.spark.pipeline`, :mod:`queries.spark.readers`,
:mod:`queries.spark.dictionary` and :mod:`queries.spark.loaders`. Used by the
``wcoj spark ingest`` command and tests; the engine reads the result with
:mod:`queries.spark.loaders`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from queries.spark.dictionary import encode
from queries.spark.loaders import load_index
from queries.spark.pipeline import IngestRun, Progress, read_dictionary, write_index
from queries.spark.readers import typed_id, typed_int, typed_op, typed_value

__all__ = ["ingest_edges", "ingest_datoms", "write_index", "read_dictionary", "EDGE_ORDERS",
           "DATOM_ORDERS", "TOP_DEGREES"]

EDGE_ORDERS = (("src", "dst"), ("dst", "src"))
DATOM_ORDERS = (("e", "a", "v"), ("a", "e", "v"), ("a", "v", "e"))
TOP_DEGREES = 64  # the manifest keeps the highest degrees: the heavy-hitter candidates


def _top_degrees(edges: DataFrame, n: int = TOP_DEGREES) -> list[list[int]]:
    """``[[node id, degree], ...]`` of the ``n`` highest degrees (ties by id)."""
    ends = edges.select(F.col("src").alias("v")).unionByName(edges.select(F.col("dst").alias("v")))
    rows = (ends.groupBy("v").agg(F.count(F.lit(1)).alias("d"))
            .orderBy(F.col("d").desc(), F.col("v")).limit(n).collect())
    return [[int(r["v"]), int(r["d"])] for r in rows]


def ingest_edges(
    spark: SparkSession,
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    fmt: str | None = None,
    header: bool = False,
    delimiter: str | None = None,
    columns: tuple[str, str] = ("src", "dst"),
    node_type: str = "auto",
    directed: bool = False,
    orders: Sequence[Sequence[str]] = EDGE_ORDERS,
    dictionary: str | os.PathLike | None = None,
    strict: bool = False,
    npz: bool = False,
    overwrite: bool = False,
    progress: Progress = None,
) -> dict[str, Any]:
    """Ingest edge lists into ``out`` (see :mod:`queries.spark.loaders` for the layout).

    Parameters
    ----------
    spark : SparkSession
    inputs : sequence of path-like
        Files or directories, all of one format.
    out : path-like
        Output directory; must not exist unless ``overwrite``.
    fmt : {"text", "csv", "parquet"}, optional
        Default from the first name: ``.parquet``, ``.csv``/``.tsv`` (gzip allowed), else
        SNAP text (whitespace separated, ``#`` comments).
    header : bool
        Text/CSV: the first line names the columns (then ``columns`` are looked up by name).
    delimiter : str, optional
        Field separator for text/CSV (default whitespace for text, ``,`` for CSV).
    columns : (str, str)
        Names of the endpoint columns (Parquet, or with a header); otherwise the first two
        fields are used and further fields (timestamps, ratings) are ignored.
    node_type : {"auto", "long", "string"}
        How node labels are typed: integers when they parse (auto), integers or a
        malformed line (long), or always text (string).
    directed : bool
        Keep direction; default canonical undirected ``(min, max)`` edges.
    orders : sequence of column orders
        One sorted index is written per order (default ``(src, dst)`` and ``(dst, src)``).
    dictionary : path-like, optional
        A previous output whose node dictionary is reused and grown.
    strict : bool
        Stop at the first malformed line; by default they are skipped and reported.
    npz : bool
        Also write ``edges.npz`` (array ``keys``, ``(src, dst)`` order).
    overwrite : bool
        Replace an existing ``out`` (only after the new output is complete).
    progress : callable, optional
        Receives one short message per stage.

    Returns
    -------
    dict
        The manifest written to ``out/manifest.json``.

    Raises
    ------
    InputError
        Unreadable input, wrong column types, a header without the columns, a malformed
        line in strict mode, or no valid line at all. ``out`` is then left untouched.
    """
    src, dst = columns
    run = IngestRun(spark, inputs, out, "ingesting edges", fmt=fmt, strict=strict,
                    overwrite=overwrite, progress=progress)

    def typing(types):
        s_tag, s_val, s_err = typed_id(src, types[src], node_type)
        d_tag, d_val, d_err = typed_id(dst, types[dst], node_type)
        return {"st": s_tag, "sv": s_val, "dt": d_tag, "dv": d_val}, [s_err, d_err]

    with run:
        good, n_read = run.read([src, dst], [src, dst], typing, what="edge line",
                                header=header, delimiter=delimiter)
        n_loops = 0 if directed else good.filter(
            (F.col("st") == F.col("dt")) & (F.col("sv") == F.col("dv"))).count()
        nodes = good.select(F.col("st").alias("type"), F.col("sv").alias("value")).unionByName(
            good.select(F.col("dt").alias("type"), F.col("dv").alias("value")))
        full, n_new, n_nodes = run.intern("node", nodes, dictionary)
        enc = encode(encode(good, full, "st", "sv", "src"), full, "dt", "dv", "dst")
        if not directed:
            enc = enc.select(F.least("src", "dst").alias("src"),
                             F.greatest("src", "dst").alias("dst"))
        edges = enc.filter(F.col("src") != F.col("dst")) if not directed else enc
        edges = edges.select("src", "dst").distinct().localCheckpoint(eager=True)
        n_edges = edges.count()
        for order in orders:
            run.write_sorted(edges, "edges/" + "_".join(order), order, n_edges)
        if npz:
            keys, _ = load_index(run.stage / "edges" / "src_dst", ["src", "dst"])
            np.savez(run.stage / "edges.npz", keys=keys)
        run.counts.update(edge_lines=n_read, edges=n_edges, self_loops_dropped=n_loops,
                          nodes=n_nodes, new_nodes=n_new)
        manifest = run.finish(
            "edges", directed=directed, node_type=node_type,
            orders=[list(o) for o in orders], dictionary_from=str(dictionary or ""),
            files={"edges.npz": npz}, top_degrees=_top_degrees(edges))
    run.say(f"wrote {out}: {n_edges} edges, {n_nodes} nodes")
    return manifest


def ingest_datoms(
    spark: SparkSession,
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    fmt: str | None = None,
    header: bool = True,
    delimiter: str | None = None,
    refs: Sequence[str] = (),
    orders: Sequence[Sequence[str]] = DATOM_ORDERS,
    dictionary: str | os.PathLike | None = None,
    strict: bool = False,
    overwrite: bool = False,
    progress: Progress = None,
) -> dict[str, Any]:
    """Ingest datoms ``e, a, v[, tx, op]`` into dictionaries, a Z-set per tick and indexes.

    Parameters
    ----------
    spark : SparkSession
    inputs : sequence of path-like
        CSV (header with names ``e, a, v`` and optionally ``tx``, ``op``; without a header
        the columns are positional) or Parquet with those column names.
    out : path-like
        Output directory: ``dictionary/{entity,attribute,value}``, ``datoms/`` (columns
        ``tx, e, a, v, weight``: each tick consolidated, sorted), ``index/<order>/``
        (the integrated state: weights summed over all ticks, zeros dropped, columns in
        the order plus ``weight``) and ``manifest.json``.
    refs : sequence of str
        Attributes whose values are entity references: encoded with the entity ids.
    orders : sequence of column orders
        Default EAV, AEV, AVE.
    op
        ``+``, ``1``, ``true``, ``:db/add`` assert (weight +1); ``-``, ``-1``, ``false``,
        ``:db/retract`` retract (-1). Missing ``op`` means assert, missing ``tx`` tick 0.
    Other parameters are as in :func:`ingest_edges`.

    Returns
    -------
    dict
        The manifest.
    """
    names = ["e", "a", "v", "tx", "op"]
    run = IngestRun(spark, inputs, out, "ingesting datoms", fmt=fmt, strict=strict,
                    overwrite=overwrite, progress=progress)

    def typing(types):
        e_tag, e_val, e_err = typed_id("e", types["e"])
        a_tag, a_val, a_err = typed_id("a", types["a"], "string")
        v_tag, v_val, v_err = typed_value("v", types["v"])
        is_ref = F.col("a").isin(list(refs)) if refs else F.lit(False)
        r_tag, r_val, _ = typed_id("v", types["v"])
        tx, tx_err = typed_int("tx", types["tx"]) if "tx" in types else (F.lit(0), None)
        w, w_err = typed_op("op", types["op"]) if "op" in types else (F.lit(1), None)
        cols = {"et": e_tag, "ev": e_val, "at": a_tag, "av": a_val,
                "vt": F.when(is_ref, r_tag).otherwise(v_tag),
                "vv": F.when(is_ref, r_val).otherwise(v_val), "ref": is_ref,
                "tx": tx.cast("bigint"), "w": w.cast("bigint")}
        return cols, [e_err, a_err, v_err, tx_err, w_err]

    with run:
        good, n_read = run.read(names, ["e", "a", "v"], typing, what="datom", header=header,
                                delimiter=delimiter)
        refv = good.filter("ref").select(F.col("vt").alias("type"), F.col("vv").alias("value"))
        ents = good.select(F.col("et").alias("type"), F.col("ev").alias("value")).unionByName(refv)
        counts = run.counts
        counts["datom_lines"] = n_read
        dicts = {}
        for domain, values in (
            ("entity", ents),
            ("attribute", good.select(F.col("at").alias("type"), F.col("av").alias("value"))),
            ("value", good.filter(~F.col("ref")).select(F.col("vt").alias("type"),
                                                         F.col("vv").alias("value"))),
        ):
            dicts[domain], n_new, n_ids = run.intern(domain, values, dictionary)
            counts[f"{domain}_ids"], counts[f"new_{domain}_ids"] = n_ids, n_new
        run.say("encoding and consolidating per tick")
        enc = encode(encode(good, dicts["entity"], "et", "ev", "e"), dicts["attribute"],
                     "at", "av", "a")
        by_ref = encode(enc.filter("ref"), dicts["entity"], "vt", "vv", "v")
        by_val = encode(enc.filter(~F.col("ref")), dicts["value"], "vt", "vv", "v")
        enc = by_ref.unionByName(by_val)
        zset = (enc.groupBy("tx", "e", "a", "v").agg(F.sum("w").alias("weight"))
                .filter(F.col("weight") != 0).localCheckpoint(eager=True))
        counts["datoms"] = zset.count()
        counts["ticks"] = zset.select("tx").distinct().count()
        run.write_sorted(zset, "datoms", ["tx", "e", "a", "v"], counts["datoms"],
                         extra=["weight"])
        state = (zset.groupBy("e", "a", "v").agg(F.sum("weight").alias("weight"))
                 .filter(F.col("weight") != 0).localCheckpoint(eager=True))
        counts["state_datoms"] = state.count()
        for order in orders:
            run.write_sorted(state, "index/" + "".join(order), order, counts["state_datoms"],
                             extra=["weight"])
        manifest = run.finish("datoms", refs=list(refs), orders=[list(o) for o in orders],
                              dictionary_from=str(dictionary or ""))
    run.say(f"wrote {out}: {counts['state_datoms']} datoms in state, "
            f"{counts['ticks']} tick(s)")
    return manifest
