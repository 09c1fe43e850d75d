"""Growable dictionaries on Spark: typed values -> dense, deterministic int64 ids.

Holds :func:`dense_rank` (0-based global rank of sorted rows without funnelling them
through one task), :func:`grow_dictionary` (append ids for values not yet known) and
:func:`encode` (replace a typed value by its id). A dictionary is a DataFrame
``(id BIGINT, type STRING, value STRING)``: ``type`` is ``long``, ``double``, ``boolean`` or
``string`` and ``value`` the canonical text of the value. Ids of one ingest are assigned in
the order (type, typed value); a later ingest keeps every old id and appends. Relies on
pyspark. Used by :mod:`queries.spark.ingest` and :mod:`queries.spark.ticks`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["DICTIONARY_SCHEMA", "dense_rank", "grow_dictionary", "encode",
           "empty_dictionary"]

DICTIONARY_SCHEMA = "id BIGINT, type STRING, value STRING"
_ROW_BITS = 33  # monotonically_increasing_id: partition id << 33 | row within partition


def empty_dictionary(spark: SparkSession) -> DataFrame:
    """A dictionary with no entries."""
    return spark.createDataFrame([], DICTIONARY_SCHEMA)


def dense_rank(
    df: DataFrame, order: list[Column], name: str = "_rank"
) -> tuple[DataFrame, int]:
    """Add ``name``: the 0-based position of each row in ``order`` (rows assumed unique).

    Returns the ranked DataFrame and its number of rows.

    The data is range-sorted in parallel and checkpointed locally, so that the row
    counts per partition (collected: one number per partition) and the ids agree.

    Complexity: one sort and one pass; the driver sees one row per partition.
    """
    sorted_df = df.orderBy(*order).select(
        "*", F.spark_partition_id().alias("_p"), F.monotonically_increasing_id().alias("_m")
    ).localCheckpoint(eager=True)
    counts = sorted(
        (r["_p"], r["n"]) for r in sorted_df.groupBy("_p").agg(F.count(F.lit(1)).alias("n"))
        .collect()
    )
    offsets, seen = [], 0
    for p, n in counts:
        offsets.append((p, seen))
        seen += n
    spark = df.sparkSession
    table = F.broadcast(spark.createDataFrame(offsets or [(0, 0)], "_p INT, _off BIGINT"))
    local = F.col("_m") - F.shiftleft(F.col("_p").cast("bigint"), _ROW_BITS)
    ranked = sorted_df.join(table, "_p").withColumn(name, F.col("_off") + local)
    return ranked.drop("_p", "_m", "_off"), seen


def _value_order() -> list[Column]:
    t, v = F.col("type"), F.col("value")
    return [
        t,
        F.when(t == "long", F.expr("try_cast(value AS BIGINT)")),
        F.when(t == "double", F.expr("try_cast(value AS DOUBLE)")),
        v,
    ]


def grow_dictionary(
    values: DataFrame, existing: DataFrame | None
) -> tuple[DataFrame, int, int]:
    """Extend ``existing`` with the (type, value) pairs of ``values`` it lacks.

    Parameters
    ----------
    values : DataFrame
        Columns ``type`` and ``value`` (duplicates allowed).
    existing : DataFrame, optional
        A dictionary ``(id, type, value)`` with ids ``0..n-1``.

    Returns
    -------
    dictionary : DataFrame
        All entries, old ids unchanged, new ids ``n, n+1, ...`` in (type, typed value) order.
    n_new : int
        How many entries were added.
    n_total : int
        How many entries the dictionary has now.
    """
    spark = values.sparkSession
    existing = existing if existing is not None else empty_dictionary(spark)
    base = existing.agg(F.max("id")).first()[0]
    base = -1 if base is None else int(base)
    new = values.select("type", "value").distinct().join(
        existing.select("type", "value"), ["type", "value"], "left_anti"
    )
    ranked, n_new = dense_rank(new, _value_order())
    ranked = ranked.select((F.col("_rank") + base + 1).alias("id"), "type", "value")
    full = existing.select("id", "type", "value").unionByName(ranked)
    return full, n_new, base + 1 + n_new


def encode(df: DataFrame, dictionary: DataFrame, type_col: str, value_col: str,
           out: str) -> DataFrame:
    """Replace columns ``type_col``, ``value_col`` of ``df`` by the id column ``out``."""
    d = dictionary.select(
        F.col("id").alias(out), F.col("type").alias(type_col), F.col("value").alias(value_col)
    )
    return df.join(d, [type_col, value_col]).drop(type_col, value_col)
