"""A conjunctive query over named relations, as the Spark pipeline and the engine accept it.

``JoinQuery`` holds the atoms (relation name and terms: variables as strings, constants
as ints), the filters (``FILTER_OPS``) and the output, checked when built;
``JoinQuery.parse`` reads the command line's text form. Re-exported by
:mod:`queries.spark.hypercube`. Relies on numpy and ``wcoj.errors``.

>>> q = JoinQuery.parse("follows(a,b) likes(b,x) likes(a,x)")
>>> [rel for rel, _ in q.atoms]
['follows', 'likes', 'likes']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wcoj.errors import QueryError

__all__ = ["JoinQuery", "FILTER_OPS"]

FILTER_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
              "!=": np.not_equal, "==": np.equal}


def _is_var(t: object) -> bool:
    return isinstance(t, str)


@dataclass(frozen=True)
class JoinQuery:
    """A conjunctive query over named relations, as the engine accepts it.

    Parameters
    ----------
    atoms : sequence of (relation name, terms)
        ``terms`` name the relation's columns in their natural order: variables as
        ``str``, constants as ``int`` (a constant selects rows before routing).
    filters : sequence of (op, x, y)
        ``op`` one of ``< <= > >= != ==`` over two variables.
    output : sequence of str
        The variables of the result (default: every variable, first occurrence order);
        rows that agree on them add their weights (a multiset projection).

    >>> q = JoinQuery([("follows", ("a", "b")), ("likes", ("b", "x")), ("likes", ("a", "x"))])
    >>> q.variables, q.output
    (('a', 'b', 'x'), ('a', 'b', 'x'))
    """

    atoms: tuple[tuple[str, tuple], ...]
    filters: tuple[tuple[str, str, str], ...] = ()
    output: tuple[str, ...] = ()

    def __init__(self, atoms: Sequence, filters: Sequence = (), output: Sequence[str] = ()):
        object.__setattr__(self, "atoms", tuple((str(r), tuple(ts)) for r, ts in atoms))
        object.__setattr__(self, "filters", tuple(tuple(f) for f in filters))
        object.__setattr__(self, "output", tuple(output) or self.variables)
        self._validate()

    def _validate(self) -> None:
        if not self.atoms:
            raise QueryError("a join needs at least one atom")
        for rel, terms in self.atoms:
            vs = [t for t in terms if _is_var(t)]
            if not vs:
                raise QueryError(f"atom {rel}{terms}: needs at least one variable")
            if len(set(vs)) != len(vs):
                raise QueryError(f"atom {rel}{terms}: a variable repeats inside one atom; "
                                 "join with an equality filter instead")
            for t in terms:
                if not _is_var(t) and not isinstance(t, (int, np.integer)):
                    raise QueryError(f"atom {rel}{terms}: term {t!r} is neither a variable "
                                     "(str) nor an integer constant")
        known = set(self.variables)
        for f in self.filters:
            if len(f) != 3 or f[0] not in FILTER_OPS:
                raise QueryError(f"filter {f}: expected (op, x, y) with op in {list(FILTER_OPS)}")
            missing = [v for v in f[1:] if v not in known]
            if missing:
                raise QueryError(f"filter {f}: variable(s) {missing} occur in no atom")
        missing = [v for v in self.output if v not in known]
        if missing:
            raise QueryError(f"output variable(s) {missing} occur in no atom")

    @classmethod
    def parse(cls, text: str) -> JoinQuery:
        """A query from text: atoms ``name(x, y, ...)`` (integer terms are constants) and
        filters ``x < y`` (any of ``< <= > >= != ==``), separated by spaces or commas.

        >>> q = JoinQuery.parse("follows(a, b) likes(b, x), likes(a, x) a != b")
        >>> q.atoms, q.filters
        ((('follows', ('a', 'b')), ('likes', ('b', 'x')), ('likes', ('a', 'x'))), (('!=', 'a', 'b'),))
        >>> JoinQuery.parse(":person/age(p, 42)").atoms
        ((':person/age', ('p', 42)),)
        """
        import re

        atoms, filters = [], []
        pos = 0
        token = re.compile(r"\s*(?:(?P<rel>[^\s(),<>=!]+)\((?P<terms>[^)]*)\)"
                           r"|(?P<x>\w+)\s*(?P<op><=|>=|!=|==|<|>)\s*(?P<y>\w+))\s*,?")
        while pos < len(text.rstrip()):
            m = token.match(text, pos)
            if m is None or m.end() == pos:
                raise QueryError(f"cannot read the query at column {pos + 1}: "
                                 f"{text[pos:pos + 30]!r}; expected name(x, y) or x < y")
            if m.group("rel"):
                terms = [t.strip() for t in m.group("terms").split(",") if t.strip()]
                atoms.append((m.group("rel"), tuple(
                    int(t) if re.fullmatch(r"[+-]?\d+", t) else t for t in terms)))
            else:
                filters.append((m.group("op"), m.group("x"), m.group("y")))
            pos = m.end()
        return cls(atoms, filters)

    @classmethod
    def from_pattern(cls, pattern: Any) -> JoinQuery:
        """The query of a :class:`queries.patterns.Pattern` (relations ``D``/``O``/``S``)."""
        return cls(pattern.atoms, pattern.filters, pattern.output)

    @property
    def variables(self) -> tuple[str, ...]:
        """Every variable, in order of first occurrence."""
        seen: dict[str, None] = {}
        for _, terms in self.atoms:
            for t in terms:
                if _is_var(t):
                    seen.setdefault(t, None)
        return tuple(seen)

    def atom_variables(self, i: int) -> tuple[str, ...]:
        return tuple(t for t in self.atoms[i][1] if _is_var(t))

    @property
    def relations(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r for r, _ in self.atoms))

    @property
    def width(self) -> int:
        """Columns of a routed row: the most variables of any atom."""
        return max(len(self.atom_variables(i)) for i in range(len(self.atoms)))
