"""Ingest edge lists and datoms on Spark into dictionary-encoded, sorted Parquet indexes.

Holds :func:`ingest_edges` (SNAP text, gzip, CSV with or without header, Parquet ->
dense node ids -> canonical undirected edges -> one sorted index per column order) and
:func:`ingest_datoms` (``e, a, v[, tx, op]`` in CSV or Parquet -> entity, attribute and
value ids -> per-tick Z-set and the integrated state in EAV, AEV, AVE order). Both write
into a staged directory renamed into place at the end (no partial output), with a
``manifest.json``; both accept a previous output as ``dictionary`` to reuse and grow its
ids (incremental ingest). Relies on pyspark, :mod:`queries.spark.readers`,
:mod:`queries.spark.dictionary` and :mod:`queries.spark.loaders`. Used by the
``wcoj spark ingest`` command and tests; the engine reads the result with
:mod:`queries.spark.loaders`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from queries.spark.dictionary import encode, grow_dictionary
from queries.spark.loaders import load_index, staged_output, write_manifest
from queries.spark.readers import (
    check_malformed,
    check_paths,
    detect_format,
    read_records,
    typed_id,
    typed_int,
    typed_op,
    typed_value,
)
from wcoj.errors import InputError

__all__ = ["ingest_edges", "ingest_datoms", "write_index", "read_dictionary", "EDGE_ORDERS",
           "DATOM_ORDERS"]

EDGE_ORDERS = (("src", "dst"), ("dst", "src"))
DATOM_ORDERS = (("e", "a", "v"), ("a", "e", "v"), ("a", "v", "e"))
ROWS_PER_FILE = 1 << 20
Progress = Callable[[str], None] | None


def _say(progress: Progress, message: str) -> None:
    if progress is not None:
        progress(message)


def read_dictionary(spark: SparkSession, previous: str | os.PathLike | None,
                    domain: str) -> DataFrame | None:
    """The ``domain`` dictionary of a previous output directory, or None."""
    if previous is None:
        return None
    path = Path(previous) / "dictionary" / domain
    if not path.is_dir():
        raise InputError(f"{previous} has no dictionary for {domain!r} (expected {path})")
    return spark.read.parquet(str(path)).select("id", "type", "value")


def write_index(df: DataFrame, path: str | os.PathLike, columns: Sequence[str],
                n_rows: int, extra: Sequence[str] = ()) -> None:
    """Write ``df`` sorted by ``columns`` as range partitions ``part-00000...`` in order."""
    cores = os.cpu_count() or 1
    n = max(1, min(2 * cores, math.ceil(n_rows / ROWS_PER_FILE)))
    cols = list(columns)
    (df.select(*cols, *extra).repartitionByRange(n, *cols).sortWithinPartitions(*cols)
     .write.mode("error").parquet(str(path)))


def _write_dictionary(dictionary: DataFrame, path: Path, n: int) -> DataFrame:
    """Write the dictionary sorted by id; return it read back (a stable, cheap source)."""
    write_index(dictionary, path, ["id"], n, extra=["type", "value"])
    return dictionary.sparkSession.read.parquet(str(path))


def _manifest(kind: str, sources: list[str], **items: Any) -> dict[str, Any]:
    return {"kind": kind, "format_version": 1, "sources": sources,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **items}


def _wrap_spark_errors(what: str, sources: list[str]) -> Any:
    """Context: a Spark failure while reading becomes an InputError naming the inputs."""
    from contextlib import contextmanager

    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JJavaError

    @contextmanager
    def guard():
        try:
            yield
        except (PySparkException, Py4JJavaError) as exc:
            first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else repr(exc)
            raise InputError(f"{what} {sources} failed: {first}") from exc

    return guard()


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
    paths = check_paths(inputs)
    fmt = fmt or detect_format(paths)
    src, dst = columns
    with staged_output(out, overwrite) as stage, _wrap_spark_errors("ingesting edges", paths):
        _say(progress, f"reading {len(paths)} input(s) as {fmt}")
        records, types = read_records(spark, paths, fmt, [src, dst], [src, dst], header=header,
                                      delimiter=delimiter)
        s_tag, s_val, s_err = typed_id(src, types[src], node_type)
        d_tag, d_val, d_err = typed_id(dst, types[dst], node_type)
        rows = records.select(
            "_file", "_line", "_text", F.coalesce(s_err, d_err).alias("_error"),
            s_tag.alias("st"), s_val.alias("sv"), d_tag.alias("dt"), d_val.alias("dv"),
        )
        bad = check_malformed(rows, strict, what="edge line")
        good = rows.filter(F.col("_error").isNull()).drop("_file", "_line", "_text", "_error")
        good = good.localCheckpoint(eager=True)
        n_read, n_loops = good.agg(F.count(F.lit(1)), F.count(F.when(
            (F.col("st") == F.col("dt")) & (F.col("sv") == F.col("dv")), 1))).first()
        if n_read == 0:
            raise InputError(f"no edges in {paths}" + (f"; e.g. {bad.examples[0]}"
                                                        if bad.examples else ""))
        _say(progress, f"read {n_read} edge lines ({bad.count} malformed skipped); interning")
        nodes = good.select(F.col("st").alias("type"), F.col("sv").alias("value")).unionByName(
            good.select(F.col("dt").alias("type"), F.col("dv").alias("value")))
        full, n_new, n_nodes = grow_dictionary(nodes, read_dictionary(spark, dictionary, "node"))
        full = _write_dictionary(full, stage / "dictionary" / "node", n_nodes)
        enc = encode(encode(good, full, "st", "sv", "src"), full, "dt", "dv", "dst")
        if not directed:
            enc = enc.select(F.least("src", "dst").alias("src"),
                             F.greatest("src", "dst").alias("dst"))
        n_loops = 0 if directed else n_loops
        edges = enc.filter(F.col("src") != F.col("dst")) if not directed else enc
        edges = edges.select("src", "dst").distinct().localCheckpoint(eager=True)
        n_edges = edges.count()
        for order in orders:
            _say(progress, f"writing {n_edges} edges sorted by {tuple(order)}")
            write_index(edges, stage / "edges" / "_".join(order), order, n_edges)
        if npz:
            keys, _ = load_index(stage / "edges" / "src_dst", ["src", "dst"])
            np.savez(stage / "edges.npz", keys=keys)
        manifest = _manifest(
            "edges", paths, format=fmt, directed=directed, node_type=node_type,
            orders=[list(o) for o in orders], dictionary_from=str(dictionary or ""),
            counts={"edge_lines": n_read, "malformed_lines": bad.count, "edges": n_edges,
                    "self_loops_dropped": n_loops, "nodes": n_nodes, "new_nodes": n_new},
            malformed_examples=bad.examples, files={"edges.npz": npz},
        )
        write_manifest(stage, manifest)
    _say(progress, f"wrote {out}: {n_edges} edges, {n_nodes} nodes")
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
    paths = check_paths(inputs)
    fmt = fmt or detect_format(paths)
    names = ["e", "a", "v", "tx", "op"]
    with staged_output(out, overwrite) as stage, _wrap_spark_errors("ingesting datoms", paths):
        _say(progress, f"reading {len(paths)} datom input(s) as {fmt}")
        records, types = read_records(spark, paths, fmt, names, ["e", "a", "v"], header=header,
                                      delimiter=delimiter)
        e_tag, e_val, e_err = typed_id("e", types["e"])
        a_tag, a_val, a_err = typed_id("a", types["a"], "string")
        v_tag, v_val, v_err = typed_value("v", types["v"])
        is_ref = F.col("a").isin(list(refs)) if refs else F.lit(False)
        r_tag, r_val, _ = typed_id("v", types["v"])
        tx, tx_err = typed_int("tx", types["tx"]) if "tx" in types else (F.lit(0), None)
        w, w_err = typed_op("op", types["op"]) if "op" in types else (F.lit(1), None)
        errors = [c for c in (e_err, a_err, v_err, tx_err, w_err) if c is not None]
        rows = records.select(
            "_file", "_line", "_text", F.coalesce(*errors).alias("_error"),
            e_tag.alias("et"), e_val.alias("ev"), a_tag.alias("at"), a_val.alias("av"),
            F.when(is_ref, r_tag).otherwise(v_tag).alias("vt"),
            F.when(is_ref, r_val).otherwise(v_val).alias("vv"), is_ref.alias("ref"),
            tx.cast("bigint").alias("tx"), w.cast("bigint").alias("w"),
        )
        bad = check_malformed(rows, strict, what="datom")
        good = rows.filter(F.col("_error").isNull()).drop("_file", "_line", "_text", "_error")
        good = good.localCheckpoint(eager=True)
        n_read = good.count()
        if n_read == 0:
            raise InputError(f"no datoms in {paths}" + (f"; e.g. {bad.examples[0]}"
                                                         if bad.examples else ""))
        _say(progress, f"read {n_read} datoms ({bad.count} malformed skipped); interning")
        refv = good.filter("ref").select(F.col("vt").alias("type"), F.col("vv").alias("value"))
        ents = good.select(F.col("et").alias("type"), F.col("ev").alias("value")).unionByName(refv)
        counts: dict[str, int] = {"datom_lines": n_read, "malformed_lines": bad.count}
        dicts = {}
        for domain, values in (
            ("entity", ents),
            ("attribute", good.select(F.col("at").alias("type"), F.col("av").alias("value"))),
            ("value", good.filter(~F.col("ref")).select(F.col("vt").alias("type"),
                                                         F.col("vv").alias("value"))),
        ):
            full, n_new, n_ids = grow_dictionary(values, read_dictionary(spark, dictionary,
                                                                         domain))
            dicts[domain] = _write_dictionary(full, stage / "dictionary" / domain, n_ids)
            counts[f"{domain}_ids"], counts[f"new_{domain}_ids"] = n_ids, n_new
        _say(progress, "encoding and consolidating per tick")
        enc = encode(encode(good, dicts["entity"], "et", "ev", "e"), dicts["attribute"],
                     "at", "av", "a")
        by_ref = encode(enc.filter("ref"), dicts["entity"], "vt", "vv", "v")
        by_val = encode(enc.filter(~F.col("ref")), dicts["value"], "vt", "vv", "v")
        enc = by_ref.unionByName(by_val)
        zset = (enc.groupBy("tx", "e", "a", "v").agg(F.sum("w").alias("weight"))
                .filter(F.col("weight") != 0).localCheckpoint(eager=True))
        counts["datoms"] = zset.count()
        counts["ticks"] = zset.select("tx").distinct().count()
        write_index(zset, stage / "datoms", ["tx", "e", "a", "v"], counts["datoms"],
                    extra=["weight"])
        state = (zset.groupBy("e", "a", "v").agg(F.sum("weight").alias("weight"))
                 .filter(F.col("weight") != 0).localCheckpoint(eager=True))
        counts["state_datoms"] = state.count()
        for order in orders:
            _say(progress, f"writing {counts['state_datoms']} datoms sorted by {tuple(order)}")
            write_index(state, stage / "index" / "".join(order), order, counts["state_datoms"],
                        extra=["weight"])
        manifest = _manifest(
            "datoms", paths, format=fmt, refs=list(refs), orders=[list(o) for o in orders],
            dictionary_from=str(dictionary or ""), counts=counts,
            malformed_examples=bad.examples,
        )
        write_manifest(stage, manifest)
    _say(progress, f"wrote {out}: {counts['state_datoms']} datoms in state, "
                   f"{counts['ticks']} tick(s)")
    return manifest
