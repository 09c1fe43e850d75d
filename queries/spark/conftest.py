"""Doctest collection of this subpackage: skip the Spark modules when pyspark is missing.

``pytest --doctest-modules`` imports every module; only ``textio`` and ``loaders`` (and
the lazy ``session``, ``cli``) import without pyspark.
"""

import importlib.util

collect_ignore_glob: list[str] = []
if importlib.util.find_spec("pyspark") is None:
    collect_ignore_glob = ["readers.py", "dictionary.py", "ingest.py", "ticks.py", "pipeline.py"]
