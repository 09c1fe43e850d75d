"""User-facing layer: the graph API, the Datomic-style database, EDN, patterns, the CLI.

>>> from queries import Graph
>>> g = Graph(); g.load_edges([[1, 2], [2, 3], [1, 3]]); g.count("triangle")
1
"""

from queries.database import Database
from queries.graph import Graph

__all__ = ["Database", "Graph"]
