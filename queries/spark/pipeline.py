"""The one ingest pipeline: read, validate with line numbers, intern, write, manifest.

Holds :class:`IngestRun`, the steps every bulk input goes through, whatever it holds
(edges, datoms, change logs), as a context manager around one output directory:

1. the inputs are checked (a typed error before any job), their format detected;
2. :meth:`IngestRun.read` reads records with file and line
   (:func:`queries.spark.readers.read_records`), types them with the caller's column
   rules, reports or (strict) raises on malformed lines, and keeps the good ones;
3. :meth:`IngestRun.intern` grows a stable dictionary (old ids kept, new ids appended,
   :mod:`queries.spark.dictionary`) and writes it;
4. :meth:`IngestRun.write_sorted` writes range-partitioned, sorted Parquet;
5. :meth:`IngestRun.finish` writes ``manifest.json``; leaving the ``with`` block renames
   the staged directory into place (nothing is left behind on an error, and Spark's
   errors become :class:`InputError` naming the inputs).

Also :func:`write_index`, :func:`read_dictionary`. Relies on pyspark,
:mod:`queries.spark.readers`, :mod:`queries.spark.dictionary` and
:mod:`queries.spark.loaders`. Used by :func:`queries.spark.ingest.ingest_edges`,
:func:`queries.spark.ingest.ingest_datoms` and :func:`queries.spark.ticks.make_ticks`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from queries.spark.dictionary import grow_dictionary
from queries.spark.loaders import staged_output, write_manifest
from queries.spark.readers import (
    Malformed,
    check_malformed,
    check_paths,
    detect_format,
    read_records,
)
from wcoj.errors import InputError

__all__ = ["IngestRun", "write_index", "read_dictionary", "Progress", "ROWS_PER_FILE"]

ROWS_PER_FILE = 1 << 20
Progress = Callable[[str], None] | None
Typing = Callable[[dict], tuple[dict[str, Column], list[Column | None]]]


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


@contextmanager
def _spark_errors(what: str, sources: list[str]):
    """A Spark failure while reading becomes an InputError naming the inputs."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JJavaError) as exc:
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else repr(exc)
        raise InputError(f"{what} {sources} failed: {first}") from exc


class IngestRun:
    """One run of the ingest pipeline from ``inputs`` into the directory ``out``.

    Parameters
    ----------
    spark : SparkSession
    inputs : sequence of path-like
        Files or directories of one format (checked here: a typed error before any job).
    out : path-like
        Output directory, staged beside itself and renamed into place on success.
    verb : str
        What the run does, for error messages (``"ingesting edges"``).
    fmt : str, optional
        ``text``, ``csv`` or ``parquet``; default from the first name.
    strict, overwrite, progress
        As in :func:`queries.spark.ingest.ingest_edges`.

    Attributes
    ----------
    paths : list of str
    fmt : str
    stage : pathlib.Path
        The staged output directory (inside the ``with`` block).
    counts : dict
        Filled by the steps; written to the manifest.
    """

    def __init__(self, spark: SparkSession, inputs: Sequence[str | os.PathLike],
                 out: str | os.PathLike, verb: str, *, fmt: str | None = None,
                 strict: bool = False, overwrite: bool = False, progress: Progress = None):
        self.spark = spark
        self.paths = check_paths(inputs)
        self.fmt = fmt or detect_format(self.paths)
        self.out, self.verb = out, verb
        self.strict, self.overwrite, self.progress = strict, overwrite, progress
        self.counts: dict[str, Any] = {}
        self.bad = Malformed()
        self._stack = ExitStack()

    def __enter__(self) -> IngestRun:
        with ExitStack() as stack:
            self.stage = stack.enter_context(staged_output(self.out, self.overwrite))
            stack.enter_context(_spark_errors(self.verb, self.paths))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: Any) -> bool:
        return self._stack.__exit__(*exc)

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    def read(self, names: Sequence[str], required: Sequence[str], typing: Typing, *,
             what: str, header: bool = False, delimiter: str | None = None,
             keep: Sequence[str] = ()) -> tuple[DataFrame, int]:
        """Read, type and validate the records; return the good ones (checkpointed) and
        their number.

        ``typing(types)`` gives the typed columns by name and their error columns (NULL
        when fine). Malformed records are reported (``self.bad``) or, strict, raise
        :class:`InputError` naming the first by file and line. ``keep`` keeps ``_file``
        and ``_line`` too. No good record at all is an error.
        """
        self.say(f"reading {len(self.paths)} input(s) as {self.fmt}")
        records, types = read_records(self.spark, self.paths, self.fmt, names, required,
                                      header=header, delimiter=delimiter)
        cols, errors = typing(types)
        errors = [e for e in errors if e is not None]
        error = F.coalesce(*errors) if errors else F.lit(None).cast("string")
        rows = records.select("_file", "_line", "_text", error.alias("_error"),
                              *[c.alias(n) for n, c in cols.items()])
        self.bad = check_malformed(rows, self.strict, what=what)
        good = rows.filter(F.col("_error").isNull()).drop(
            *[c for c in ("_file", "_line", "_text", "_error") if c not in keep])
        good = good.localCheckpoint(eager=True)
        n_read = good.count()
        if n_read == 0:
            raise InputError(f"no {what}s in {self.paths}" + (
                f"; e.g. {self.bad.examples[0]}" if self.bad.examples else ""))
        self.counts["malformed_lines"] = self.bad.count
        self.say(f"read {n_read} {what}s ({self.bad.count} malformed skipped)")
        return good, n_read

    def intern(self, domain: str, values: DataFrame,
               previous: str | os.PathLike | None) -> tuple[DataFrame, int, int]:
        """Grow the ``domain`` dictionary of ``previous`` by ``values`` (columns ``type,
        value``) and write it; return it (read back), new ids, all ids."""
        self.say(f"interning {domain} values")
        full, n_new, n_ids = grow_dictionary(values, read_dictionary(self.spark, previous,
                                                                     domain))
        path = self.stage / "dictionary" / domain
        write_index(full, path, ["id"], n_ids, extra=["type", "value"])
        return self.spark.read.parquet(str(path)), n_new, n_ids

    def write_sorted(self, df: DataFrame, relpath: str, order: Sequence[str], n_rows: int,
                     extra: Sequence[str] = ()) -> None:
        """Write ``df`` sorted by ``order`` under ``stage/relpath``."""
        self.say(f"writing {n_rows} rows sorted by {tuple(order)} to {relpath}")
        write_index(df, self.stage / relpath, order, n_rows, extra)

    def finish(self, kind: str, **items: Any) -> dict[str, Any]:
        """Write ``manifest.json`` (kind, sources, format, counts, malformed examples)."""
        manifest = {"kind": kind, "format_version": 1, "sources": self.paths,
                    "format": self.fmt, "counts": self.counts,
                    "malformed_examples": self.bad.examples,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **items}
        write_manifest(self.stage, manifest)
        return manifest
