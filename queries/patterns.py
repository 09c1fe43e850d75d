"""Graph patterns as conjunctive queries over the edge relations of a ``Graph``.

A pattern names atoms over three relations a ``Graph`` maintains:

* ``D(u, v)``: the directed simple graph (self-loops dropped, duplicates merged);
* ``O(u, v)``: the undirected simple graph, each edge once as ``u < v`` (oriented);
* ``S(u, v)``: the undirected simple graph, both directions (symmetric).

Symmetry is broken so every subgraph is found exactly once: a triangle is
``O(a,b) O(a,c) O(b,c)`` (so ``a < b < c``); a k-clique uses ``O`` for every pair; an
undirected k-cycle starts at its smallest vertex ``a`` and takes ``b < x`` for the two
neighbours of ``a``; a directed k-cycle starts at its smallest vertex. Filters (``<``,
``!=``) run at the first join level where both sides are bound.

Sizes are bounded (:data:`MAX_CLIQUE`, :data:`MAX_CYCLE`, :data:`MAX_ATOMS`): a pattern's
plan grows with its atoms and filters (a 30-clique, 435 atoms, took 16 s to register on a
3-edge graph, and a 10^9-clique ran out of memory building its atoms), and so does the
tick kernel ``wcoj.tickgen`` writes and Numba compiles for a view's first tick.

Relies on nothing of ours but plain data; used by ``queries.graph`` and the CLI.

>>> triangle().atoms
(('O', ('a', 'b')), ('O', ('a', 'c')), ('O', ('b', 'c')))
>>> cycle(4, directed=False).filters
(('<', 'a', 'v2'), ('<', 'v1', 'v3'))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

from wcoj.errors import QueryError, excerpt

__all__ = ["Pattern", "triangle", "cycle", "clique", "conjunctive", "by_name", "PATTERN_NAMES",
           "MAX_CLIQUE", "MAX_CYCLE", "MAX_ATOMS"]

RELATIONS = ("D", "O", "S")
MAX_CLIQUE = 6
"""Largest k of ``clique(k)``. Registering is cheap up to k = 16 (0.5 s on a 3-edge graph);
the first tick is not: its kernel for a 6-clique compiled in ~4 min, an 8-clique's had not
compiled after 25 min, and a 10-clique's raised RecursionError inside Numba."""
MAX_CYCLE = 10
"""Largest k of ``cycle(k)``, directed or not: a 10-cycle's first-tick kernel compiled in
~9 min on a busy two-core host, a 16-cycle's had not after 20 min."""
MAX_ATOMS = 16
"""Most atoms of any pattern, ``conjunctive`` ones included (a 6-clique has 15)."""


@dataclass(frozen=True)
class Pattern:
    """A conjunctive query over ``D``/``O``/``S`` with ``<``/``!=`` filters."""

    name: str
    atoms: tuple[tuple[str, tuple[str, ...]], ...]
    filters: tuple[tuple[str, str, str], ...] = ()
    output: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.atoms:
            raise QueryError(f"pattern {self.name}: needs at least one atom")
        if len(self.atoms) > MAX_ATOMS:
            raise QueryError(f"pattern {self.name}: {len(self.atoms)} atoms, more than the "
                             f"limit of {MAX_ATOMS}")
        seen = {v for _, vs in self.atoms for v in vs}
        for rel, vs in self.atoms:
            if rel not in RELATIONS:
                raise QueryError(f"pattern {self.name}: unknown relation {rel!r}; use one of {RELATIONS}")
            if len(vs) != 2:
                raise QueryError(f"pattern {self.name}: edge atom {rel}{vs} needs 2 variables")
        for op, x, y in self.filters:
            if op not in ("<", "!="):
                raise QueryError(f"pattern {self.name}: unknown filter {op!r}")
            for v in (x, y):
                if v not in seen:
                    raise QueryError(f"pattern {self.name}: filter variable {v} is in no atom")
        if not self.output:
            object.__setattr__(self, "output", tuple(sorted(seen, key=_var_key)))
        for v in self.output:
            if v not in seen:
                raise QueryError(f"pattern {self.name}: output variable {v} is in no atom")

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(sorted({v for _, vs in self.atoms for v in vs}, key=_var_key))


def _var_key(v: str) -> tuple:
    return (0, v) if not v.startswith("v") or not v[1:].isdigit() else (1, int(v[1:]))


def triangle() -> Pattern:
    """Undirected triangles, each once as ``a < b < c``.

    ``b < c`` already follows from ``O(b, c)``; stating it lets the join start the
    candidates for ``c`` in ``a``'s neighbour list after ``b`` (a binary search) instead
    of merging past the neighbours below ``b``.
    """
    return Pattern("triangle", (("O", ("a", "b")), ("O", ("a", "c")), ("O", ("b", "c"))),
                   filters=(("<", "b", "c"),), output=("a", "b", "c"))


def clique(k: int) -> Pattern:
    """Undirected k-cliques, each once with increasing vertices."""
    if k < 2:
        raise QueryError(f"a clique needs k >= 2, got {k}")
    if k > MAX_CLIQUE:
        raise QueryError(f"a clique has k <= {MAX_CLIQUE} (patterns.MAX_CLIQUE), got {k}")
    vs = [f"v{i}" for i in range(k)]
    # v(i) < v(i+1) follows from O; stated, it narrows each level's candidate lists
    return Pattern(f"{k}-clique", tuple(("O", (x, y)) for x, y in combinations(vs, 2)),
                   filters=tuple(("<", vs[i], vs[i + 1]) for i in range(1, k - 1)),
                   output=tuple(vs))


def cycle(k: int, directed: bool = True) -> Pattern:
    """Simple k-cycles, each once.

    Directed: ``D(v0,v1) ... D(v(k-1),v0)`` with ``v0`` the smallest vertex. Undirected
    (k >= 4; use ``triangle`` for k = 3): ``a`` the smallest vertex, its neighbours ``v1 <
    v(k-1)``; non-adjacent vertices must differ.
    """
    if k < 2 or (not directed and k < 3):
        raise QueryError(f"a {'directed' if directed else 'undirected'} cycle needs k >= {2 if directed else 3}, got {k}")
    if k > MAX_CYCLE:
        raise QueryError(f"a cycle has k <= {MAX_CYCLE} (patterns.MAX_CYCLE), got {k}")
    if not directed and k == 3:
        return triangle()
    if directed:
        vs = [f"v{i}" for i in range(k)]
        atoms = tuple(("D", (vs[i], vs[(i + 1) % k])) for i in range(k))
        filters = [("<", vs[0], v) for v in vs[1:]]
        filters += [("!=", vs[i], vs[j]) for i in range(1, k) for j in range(i + 2, k)]
        return Pattern(f"{k}-cycle", atoms, tuple(filters), tuple(vs))
    vs = ["a"] + [f"v{i}" for i in range(1, k)]
    atoms = [("O", ("a", vs[1]))]
    atoms += [("S", (vs[i], vs[i + 1])) for i in range(1, k - 1)]
    atoms += [("O", ("a", vs[k - 1]))]
    filters = [("<", "a", v) for v in vs[2:k - 1]]
    filters += [("<", vs[1], vs[k - 1])]
    filters += [("!=", vs[i], vs[j]) for i in range(1, k) for j in range(i + 2, k)
                if not (i == 1 and j == k - 1)]
    return Pattern(f"undirected-{k}-cycle", tuple(atoms), tuple(filters), tuple(vs))


def conjunctive(name: str, atoms, filters=(), output=()) -> Pattern:
    """Any conjunctive query over ``D``/``O``/``S``: ``atoms`` as ``(relation, (x, y))`` pairs."""
    return Pattern(name, tuple((r, tuple(vs)) for r, vs in atoms),
                   tuple(tuple(f) for f in filters), tuple(output))


PATTERN_NAMES = ("triangle", "3-cycle", "4-cycle", "4-clique")
_NAME = re.compile(r"(?:(directed|undirected)-)?([0-9]{1,6})-(clique|cycle)")
_FORMS = (f"accepted: triangle, k-clique (2 <= k <= {MAX_CLIQUE}), k-cycle (directed for "
          f"k = 3, else undirected), directed-k-cycle (2 <= k <= {MAX_CYCLE}), "
          f"undirected-k-cycle (3 <= k <= {MAX_CYCLE})")


def by_name(name: str) -> Pattern:
    """The CLI's names: ``triangle``, ``4-cycle`` (undirected), ``3-cycle`` (directed),
    ``k-clique``, ``k-cycle`` (directed for k = 3, else undirected), ``directed-k-cycle`` and
    ``undirected-k-cycle`` (the name an undirected cycle pattern carries).

    Any other name is a ``QueryError`` listing these forms: ``directed-3-clique`` has no
    meaning here (a clique is undirected), and is not read as a directed 3-cycle.

    >>> by_name("directed-4-cycle").name, by_name("4-cycle").name
    ('4-cycle', 'undirected-4-cycle')
    >>> by_name("directed-3-clique")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    wcoj.errors.QueryError: unknown pattern 'directed-3-clique'; accepted: triangle, ...
    """
    if not isinstance(name, str):
        raise QueryError(f"a pattern name is a str, got {type(name).__name__}")
    n = name.strip().lower()
    if n == "triangle":
        return triangle()
    m = _NAME.fullmatch(n)
    if m is None or (m.group(1) and m.group(3) == "clique"):
        raise QueryError(f"unknown pattern {excerpt(name)}; {_FORMS}")
    direction, k, shape = m.group(1), int(m.group(2)), m.group(3)
    if shape == "clique":
        return clique(k)
    return cycle(k, directed=direction == "directed" if direction else k == 3)
