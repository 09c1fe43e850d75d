"""Spark readers: text, CSV and Parquet records with file and line, typed and checked.

Holds :func:`read_records` (lines or Parquet rows -> named columns, each row tagged with
its file and 1-based line, or Parquet row), the typing helpers (:func:`typed_id`,
:func:`typed_value`, :func:`typed_int`, :func:`typed_op`: each gives a value column and an
error column that is NULL when the field is fine) and :func:`check_malformed` (bounded
report, ``strict`` raises at the first). Relies on pyspark (imported by the caller's
session) and ``wcoj.errors``. Used by :mod:`queries.spark.ingest` and
:mod:`queries.spark.ticks`.

How lines get their numbers without a Python pass: a text scan reads each file split in
order inside one task, so ``monotonically_increasing_id()`` (partition id in the upper
31 bits, row number in the lower 33, as documented) minus the first id of that split, plus
the number of lines in the earlier splits of the same file, is the line number. The per
split counts come from one small aggregate (one row per split).
"""

from __future__ import annotations

import csv
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wcoj.errors import InputError

__all__ = [
    "Malformed",
    "detect_format",
    "check_paths",
    "read_records",
    "typed_id",
    "typed_value",
    "typed_int",
    "typed_op",
    "check_malformed",
    "display_path",
    "raw_lines",
    "is_data_line",
    "split_fields",
    "change_columns",
]

MAX_REPORTED = 10
_LONG_RE = r"^[+-]?[0-9]{1,19}$"
_DOUBLE_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


@dataclass
class Malformed:
    """What :func:`check_malformed` found: how many bad records and the first few."""

    count: int = 0
    examples: list[str] = field(default_factory=list)


def display_path(uri: str) -> str:
    """``file:/a/b%20c`` -> ``/a/b c``; other schemes are left as they are."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("", "file") else uri


def detect_format(paths: Sequence[str]) -> str:
    """``"parquet"``, ``"csv"`` or ``"text"`` from the first path's name."""
    name = os.fspath(paths[0]).rstrip("/").lower()
    for suffix in (".gz", ".bz2", ".zst"):
        name = name.removesuffix(suffix)
    if name.endswith(".parquet") or os.path.isdir(paths[0]) and any(
        f.endswith(".parquet") for f in os.listdir(paths[0])
    ):
        return "parquet"
    return "csv" if name.endswith((".csv", ".tsv")) else "text"


def check_paths(paths: Sequence[str | os.PathLike]) -> list[str]:
    """Absolute paths of local inputs that exist and can be read, else InputError."""
    if not paths:
        raise InputError("no input files given")
    out = []
    for p in paths:
        p = os.fspath(p)
        if "://" in p:  # a cluster file system: Spark will tell
            out.append(p)
            continue
        if not os.path.exists(p):
            raise InputError(f"cannot read {p}: no such file or directory")
        if not os.access(p, os.R_OK) or (os.path.isfile(p) and not _readable(p)):
            raise InputError(f"cannot read {p}: permission denied or unreadable")
        out.append(os.path.abspath(p))
    return out


def _readable(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            fh.read(1)
        return True
    except OSError:
        return False


def raw_lines(df: DataFrame) -> DataFrame:
    """``_file, _block, _mid, _text`` of a text scan (``spark.read.text`` or a micro-batch
    of ``spark.readStream.format("text")`` that kept ``_metadata``)."""
    if "_file" not in df.columns:
        df = df.select(F.col("_metadata.file_path").alias("_file"),
                       F.col("_metadata.file_block_start").alias("_block"), "value")
    return df.select("_file", "_block", F.monotonically_increasing_id().alias("_mid"),
                     F.col("value").alias("_text"))


def _numbered_lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    raw = raw_lines(spark.read.text(paths))
    rows = raw.groupBy("_file", "_block").agg(
        F.min("_mid").alias("_first"), F.count(F.lit(1)).alias("_n")
    ).collect()
    blocks, before = [], {}
    for r in sorted(rows, key=lambda r: (r["_file"], r["_block"])):
        seen = before.get(r["_file"], 0)
        blocks.append((r["_file"], r["_block"], r["_first"], seen))
        before[r["_file"]] = seen + r["_n"]
    schema = "_file STRING, _block BIGINT, _first BIGINT, _before BIGINT"
    table = F.broadcast(spark.createDataFrame(blocks, schema))
    return raw.join(table, ["_file", "_block"]).select(
        "_file", (F.col("_mid") - F.col("_first") + F.col("_before") + 1).alias("_line"), "_text"
    )


def is_data_line(comment: str = "#") -> Column:
    """True for lines that hold data (not blank, not a comment)."""
    trimmed = F.trim(F.col("_text"))
    return (trimmed != "") & ~trimmed.startswith(comment)


def split_fields(fmt: str, positions: dict[str, int], delimiter: str | None = None
                 ) -> dict[str, Column]:
    """The text field of each name of ``positions`` in column ``_text`` (NULL if missing).

    Text splits on whitespace (or ``delimiter``); CSV parses quotes per line.
    """
    sep = delimiter if delimiter is not None else ("," if fmt == "csv" else None)
    width = max(positions.values(), default=0) + 1
    if fmt == "csv" or sep is not None:
        ddl = ", ".join(f"c{i} STRING" for i in range(width))
        parsed = F.from_csv(F.col("_text"), ddl, {"sep": sep or ",", "mode": "PERMISSIVE"})
        return {n: F.trim(parsed[f"c{i}"]) for n, i in positions.items()}
    parts = F.split(F.trim(F.col("_text")), r"\s+")
    return {n: F.get(parts, i) for n, i in positions.items()}


def _header_positions(
    lines: DataFrame, names: Sequence[str], required: Sequence[str], sep: str | None
) -> dict[str, int]:
    firsts = lines.groupBy("_file").agg(F.min_by("_text", "_line").alias("h")).collect()
    positions: dict[str, int] = {}
    for row in firsts:
        cells = next(csv.reader([row["h"]], delimiter=sep)) if sep else row["h"].split()
        cells = [c.strip() for c in cells]
        missing = [n for n in required if n not in cells]
        if missing:
            raise InputError(
                f"{display_path(row['_file'])}:1: header {cells} lacks column(s) {missing}; "
                f"expected names among {list(names)}"
            )
        found = {n: cells.index(n) for n in names if n in cells}
        if positions and found != positions:
            raise InputError(f"{display_path(row['_file'])}: header {cells} differs from "
                             "the header of the other input files")
        positions = found
    return positions


def read_records(
    spark: SparkSession,
    paths: Sequence[str],
    fmt: str,
    names: Sequence[str],
    required: Sequence[str],
    *,
    positions: dict[str, int] | None = None,
    header: bool = False,
    delimiter: str | None = None,
    comment: str = "#",
) -> tuple[DataFrame, dict[str, T.DataType]]:
    """Read records as columns ``_file, _line, _text`` plus one column per found name.

    Parameters
    ----------
    spark : SparkSession
    paths : sequence of str
        Checked input paths (see :func:`check_paths`).
    fmt : {"text", "csv", "parquet"}
        Text splits on whitespace (or ``delimiter``); CSV parses quotes per line.
    names, required : sequence of str
        The logical columns wanted, and those that must exist.
    positions : dict, optional
        Column index of each name when there is no header (default: the order of names).
    header : bool
        Text/CSV: the first non-comment line of each file names the columns.

    Returns
    -------
    records : DataFrame
        Data lines only (comments, blank lines and headers removed). Text fields are
        strings (NULL when the line is too short); Parquet columns keep their types.
    types : dict
        Spark type of each column present (``StringType`` for text and CSV).
    """
    if fmt == "parquet":
        return _read_parquet(spark, paths, names, required)
    sep = delimiter if delimiter is not None else ("," if fmt == "csv" else None)
    lines = _numbered_lines(spark, paths)
    lines = lines.filter(is_data_line(comment))
    if header:
        positions = _header_positions(lines, names, required, sep)
        lines = lines.join(
            lines.groupBy("_file").agg(F.min("_line").alias("_hline")), "_file"
        ).filter(F.col("_line") != F.col("_hline")).drop("_hline")
    elif positions is None:
        positions = {n: i for i, n in enumerate(names)}
    fields = split_fields(fmt, positions, delimiter)
    cols = [F.col("_file"), F.col("_line"), F.col("_text")]
    cols += [fields[n].alias(n) for n in names if n in fields]
    return lines.select(*cols), {n: T.StringType() for n in names if n in fields}


def _read_parquet(
    spark: SparkSession, paths: Sequence[str], names: Sequence[str], required: Sequence[str]
) -> tuple[DataFrame, dict[str, T.DataType]]:
    try:
        df = spark.read.parquet(*paths)
        schema = df.schema
    except Exception as exc:  # noqa: BLE001 - Spark raises several kinds for bad files
        raise InputError(f"cannot read Parquet {list(paths)}: {str(exc).splitlines()[0]}") from exc
    present = [n for n in names if n in schema.names]
    missing = [n for n in required if n not in schema.names]
    if missing:
        raise InputError(f"Parquet {list(paths)} lacks column(s) {missing}; found {schema.names}")
    text = F.concat_ws(" ", *[F.col(n).cast("string") for n in present])
    out = df.select(
        F.col("_metadata.file_path").alias("_file"),
        (F.col("_metadata.row_index") + 1).alias("_line"),
        text.alias("_text"),
        *present,
    )
    return out, {n: schema[n].dataType for n in present}


_INTEGRAL = (T.LongType, T.IntegerType, T.ShortType, T.ByteType)


def _type_error(name: str, dtype: T.DataType, allowed: str) -> InputError:
    return InputError(f"column {name!r} has type {dtype.simpleString()}; expected {allowed}")


def typed_id(name: str, dtype: T.DataType, kind: str = "auto") -> tuple[Column, Column, Column]:
    """(type tag, canonical text, error) of an id column; ``kind`` is auto, long or string."""
    c = F.col(name)
    if isinstance(dtype, _INTEGRAL):
        tag, val = F.lit("long"), c.cast("bigint").cast("string")
    elif isinstance(dtype, T.StringType):
        as_long = F.expr(f"try_cast(`{name}` AS BIGINT)")
        is_long = c.rlike(_LONG_RE) & as_long.isNotNull() if kind != "string" else F.lit(False)
        tag = F.when(is_long, "long").otherwise("string")
        val = F.when(is_long, as_long.cast("string")).otherwise(c)
    else:
        raise _type_error(name, dtype, "an integer or string column")
    err = F.when(c.isNull() | (c.cast("string") == ""), F.lit(f"missing {name}"))
    if kind == "long":
        err = F.coalesce(err, F.when(tag != "long", F.concat(
            F.lit(f"expected an integer {name}, found '"), c.cast("string"), F.lit("'"))))
    if kind == "string":
        tag = F.lit("string")
    return tag, val, err


def typed_value(name: str, dtype: T.DataType) -> tuple[Column, Column, Column]:
    """(type tag, canonical text, error) of a datom value: long, double, boolean or string."""
    c = F.col(name)
    if isinstance(dtype, _INTEGRAL):
        tag, val = F.lit("long"), c.cast("bigint").cast("string")
    elif isinstance(dtype, (T.DoubleType, T.FloatType)):
        tag, val = F.lit("double"), c.cast("double").cast("string")
    elif isinstance(dtype, T.BooleanType):
        tag, val = F.lit("boolean"), c.cast("string")
    elif isinstance(dtype, T.StringType):
        as_long = F.expr(f"try_cast(`{name}` AS BIGINT)")
        as_double = F.expr(f"try_cast(`{name}` AS DOUBLE)")
        low = F.lower(c)
        tag = (F.when(c.rlike(_LONG_RE) & as_long.isNotNull(), "long")
               .when(c.rlike(_DOUBLE_RE) & as_double.isNotNull(), "double")
               .when(low.isin("true", "false"), "boolean").otherwise("string"))
        val = (F.when(tag == "long", as_long.cast("string"))
               .when(tag == "double", as_double.cast("string"))
               .when(tag == "boolean", low).otherwise(c))
    else:
        raise _type_error(name, dtype, "an integer, float, boolean or string column")
    return tag, val, F.when(c.isNull(), F.lit(f"missing {name}"))


def typed_int(name: str, dtype: T.DataType) -> tuple[Column, Column]:
    """(int64 value, error) of an integer column such as ``tx`` or a timestamp."""
    c = F.col(name)
    if isinstance(dtype, _INTEGRAL):
        val = c.cast("bigint")
    elif isinstance(dtype, T.TimestampType):
        val = F.unix_seconds(c)
    elif isinstance(dtype, T.StringType):
        val = F.when(c.rlike(_LONG_RE), F.expr(f"try_cast(`{name}` AS BIGINT)"))
    else:
        raise _type_error(name, dtype, "an integer or timestamp column")
    err = F.when(c.isNull(), F.lit(f"missing {name}")).when(val.isNull(), F.concat(
        F.lit(f"expected an integer {name}, found '"), c.cast("string"), F.lit("'")))
    return val, err


_PLUS = ("+", "1", "+1", "true", "add", ":db/add", "assert")
_MINUS = ("-", "-1", "false", "retract", ":db/retract")


def typed_op(name: str, dtype: T.DataType) -> tuple[Column, Column]:
    """(weight +1/-1, error) of an operation column: ``+``/``-``, 1/-1, true/false, ..."""
    c = F.col(name)
    if isinstance(dtype, T.BooleanType):
        return F.when(c, 1).otherwise(-1).cast("bigint"), F.when(c.isNull(), F.lit("missing op"))
    if not isinstance(dtype, (T.StringType, *_INTEGRAL)):
        raise _type_error(name, dtype, "a +/- string, an integer +1/-1 or a boolean column")
    s = F.lower(F.trim(c.cast("string")))
    w = F.when(s.isin(*_PLUS), 1).when(s.isin(*_MINUS), -1).cast("bigint")
    err = F.when(w.isNull(), F.concat(
        F.lit(f"expected {name} '+' or '-', found '"), F.coalesce(c.cast("string"), F.lit("")),
        F.lit("'")))
    return w, err


def change_columns(types: dict[str, T.DataType], node_type: str = "long",
                   ends: tuple[str, str] = ("src", "dst")) -> tuple[dict[str, Column], Column]:
    """Typed columns of a change log ``TICK OP SRC DST``, and the line's error (or NULL).

    Columns ``tick`` (BIGINT), ``w`` (+1/-1) and the endpoints as (type tag, canonical
    text) pairs ``st, sv, dt, dv`` (see :func:`typed_id`; with ``node_type="long"`` a
    non-integer endpoint is an error); ``ends`` names the two id columns (``e, v`` for
    datoms). Shared by ``make_ticks`` and the change stream.
    """
    tick, tick_err = typed_int("tick", types["tick"])
    w, w_err = typed_op("op", types["op"])
    s_tag, s_val, s_err = typed_id(ends[0], types[ends[0]], node_type)
    d_tag, d_val, d_err = typed_id(ends[1], types[ends[1]], node_type)
    cols = {"tick": tick, "w": w, "st": s_tag, "sv": s_val, "dt": d_tag, "dv": d_val}
    return cols, F.coalesce(tick_err, w_err, s_err, d_err)


def check_malformed(
    df: DataFrame, strict: bool = False, max_reported: int = MAX_REPORTED, what: str = "record"
) -> Malformed:
    """Find rows whose ``_error`` is set; raise in strict mode, else warn and report.

    Parameters
    ----------
    df : DataFrame
        With columns ``_file``, ``_line``, ``_text`` and ``_error`` (NULL when fine).
    strict : bool
        Raise :class:`InputError` naming the first bad line (by file, then line).
    max_reported : int
        How many examples to keep (and quote in the warning).

    Returns
    -------
    Malformed
        The total count and the first ``max_reported`` as ``"path:line: why: 'text'"``.
    """
    bad = df.filter(F.col("_error").isNotNull())
    first = bad.orderBy("_file", "_line").limit(1 if strict else max_reported).collect()
    if not first:
        return Malformed()
    examples = [
        f"{display_path(r['_file'])}:{r['_line']}: {r['_error']}: {(r['_text'] or '')[:80]!r}"
        for r in first
    ]
    if strict:
        raise InputError(f"malformed {what} at {examples[0]}")
    count = bad.count()
    more = f" (and {count - len(examples)} more)" if count > len(examples) else ""
    warnings.warn(f"skipped {count} malformed {what}(s): " + "; ".join(examples) + more,
                  stacklevel=3)
    return Malformed(count, examples)
