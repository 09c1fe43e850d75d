"""An oracle for Datalog tests: the movie datoms as plain Python sets, no engine involved.

``Movies`` reads ``../shared/data/movies/{schema,data}.edn`` with the EDN reader only and
keeps the datoms as ``(e, attr, value)`` tuples, where ``e`` and ref values are the data
file's tempid numbers (-100 ...). Tests compute expected answers with comprehensions over
these tuples and compare them with ``Database.q``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from queries.edn import Tagged, loads

__all__ = ["MOVIES", "Movies", "reachable"]

MOVIES = Path(__file__).resolve().parents[3] / "shared" / "data" / "movies"


class Movies:
    """The movie data as datoms ``(e, attr, v)`` with tempid numbers as entity ids."""

    def __init__(self, root: Path = MOVIES):
        self.schema = {str(m[":db/ident"]): m for m in loads((root / "schema.edn").read_text())}
        self.datoms: set[tuple] = set()
        for m in loads((root / "data.edn").read_text()):
            e = m[":db/id"].value[1]
            for k, v in m.items():
                if k == ":db/id":
                    continue
                for x in (v if isinstance(v, list) else [v]):
                    self.datoms.add((e, str(k), x.value[1] if isinstance(x, Tagged) else x))
        self.eav = defaultdict(set)
        for e, a, v in self.datoms:
            self.eav[(e, a)].add(v)

    def get(self, e, a):
        """The one value of ``a`` on ``e`` (None if absent)."""
        vs = self.eav.get((e, a), set())
        return next(iter(vs)) if vs else None

    def ents(self, a, v=None):
        return {e for e, a2, v2 in self.datoms if a2 == a and (v is None or v2 == v)}

    def pairs(self, a):
        return {(e, v) for e, a2, v in self.datoms if a2 == a}


def reachable(edges: set[tuple]) -> set[tuple]:
    """Transitive closure of a set of pairs: every (a, b) with a path from a to b, by a
    search from each node (plain loops)."""
    out: dict = {}
    for a, b in edges:
        out.setdefault(a, set()).add(b)
    pairs = set()
    for a in out:
        seen, todo = set(), [a]
        while todo:
            for b in out.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        pairs |= {(a, b) for b in seen}
    return pairs
