"""The Spark data pipeline: session, ingest, change log -> ticks (the bulk layer).

Only this subpackage imports ``pyspark``, and only lazily inside functions, so
``import queries.spark`` (and the pure-numpy :mod:`queries.spark.textio` and
:mod:`queries.spark.loaders`) work without pyspark or Java. Relies on ``wcoj.errors``.
Used by the ``wcoj spark`` command (:mod:`queries.spark.cli`), tests and benchmarks.
"""

from queries.spark.session import (
    JavaNotFoundError,
    find_java,
    get_session,
    stop_session,
)

__all__ = ["JavaNotFoundError", "find_java", "get_session", "stop_session"]
