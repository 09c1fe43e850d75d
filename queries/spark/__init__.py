"""The Spark layer: session, one ingest pipeline, HyperCube joins, continuous views.

Modules: ``session`` (SparkSession and JVM), ``pipeline`` / ``readers`` / ``dictionary``
(the ingest pipeline; ``ingest`` and ``ticks`` its runs), ``hypercube`` and ``cells``
(HyperCube routing with skew residuals, the generic join per cell), ``cached`` /
``edgeset`` / ``delta`` (state cached on the executors, set semantics, per-tick deltas),
``stream`` (Structured Streaming over a directory of change files) and ``cli``.
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
