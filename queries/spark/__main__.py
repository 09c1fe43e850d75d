"""``python -m queries.spark ...``: the ``wcoj spark`` command (see :mod:`queries.spark.cli`)."""

import sys

from queries.spark.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
