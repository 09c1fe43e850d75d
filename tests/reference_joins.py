"""Slow, obvious oracles for the joins: Python twins of the intersection kernels, a
nested-loop conjunctive-query evaluator over dicts of tuples, and set-based graph patterns.

* Kernel twins mirror ``wcoj.kernels.intersect`` one for one (same arguments minus the
  caller-allocated outputs; they return what the kernel writes). ``count_last_level_twin``
  does its arithmetic with Python ints in the kernel's order, so it decides int64 overflow
  exactly and names the same row.
* ``join`` evaluates a conjunctive query by nested loops: an atom is ``(rows, terms)`` with
  ``rows`` a ``{tuple: weight}`` dict (a Z-set, multiplicities allowed) and ``terms`` naming
  its columns (``str`` variables, ``int`` constants). The result is a ``{tuple: weight}``
  dict with no zero weights.
* The graph oracles enumerate patterns with Python sets, in the canonical form the
  patterns of ``queries.patterns`` output (smallest vertex first, and so on), and
  ``nx_triangles`` asks networkx.

Used by ``tests/wcoj``, ``tests/indexes`` and ``tests/queries``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "I64_MIN", "I64_MAX", "fits",
    "intersect_twin", "gallop_geq_twin", "find_in_ranges_twin", "extend_level_twin",
    "count_last_level_twin",
    "join", "zdiff", "zadd",
    "simple_undirected", "simple_directed", "triangles", "cliques", "directed_cycles",
    "undirected_cycles", "nx_triangles", "nx_graph",
]

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
Row = tuple
Z = dict


def fits(x: int) -> bool:
    return I64_MIN <= x <= I64_MAX


# ------------------------------------------------------------------ kernel twins
def intersect_twin(a: Iterable[int], b: Iterable[int]) -> list[int]:
    """Sorted common values of two sets."""
    return sorted(set(map(int, a)) & set(map(int, b)))


def gallop_geq_twin(vals: Sequence[int], lo: int, hi: int, x: int) -> int:
    """First position p in [lo, hi) with vals[p] >= x, else hi (lo when the range is empty)."""
    if lo >= hi:
        return lo
    for p in range(lo, hi):
        if vals[p] >= x:
            return p
    return hi


def find_in_ranges_twin(vals, lo, hi, x) -> list[int]:
    """Position of x[i] in the slice vals[lo[i]:hi[i]] (absolute), or -1."""
    out = []
    for i in range(len(x)):
        sl = [int(v) for v in vals[lo[i]:hi[i]]]
        out.append(int(lo[i]) + sl.index(int(x[i])) if int(x[i]) in sl else -1)
    return out


def _part_positions(vals, lo: int, hi: int) -> dict[int, int]:
    return {int(vals[p]): p for p in range(int(lo), int(hi))}


def extend_level_twin(vals, lo, hi, atom_start) -> list[tuple[int, int, tuple[int, ...]]]:
    """``(row, value, hits)`` for every value that every atom holds under the row's ranges.

    An atom holds the union of its parts' slices; ``hits[q]`` is the value's position in
    part ``q`` (-1 where absent). Output in (row, value) order.
    """
    n_parts = len(vals)
    out = []
    for r in range(len(lo)):
        pos = [_part_positions(vals[q], lo[r][q], hi[r][q]) for q in range(n_parts)]
        common = None
        for a in range(len(atom_start) - 1):
            have = set()
            for q in range(atom_start[a], atom_start[a + 1]):
                have |= set(pos[q])
            common = have if common is None else common & have
        for x in sorted(common or ()):
            out.append((r, x, tuple(pos[q].get(x, -1) for q in range(n_parts))))
    return out


def count_last_level_twin(vals, lo, hi, atom_start, part_weights, row_weights) -> tuple[list[int], int]:
    """``(sums, bad)``: per row the weighted number of completions; ``bad`` the first row
    whose arithmetic leaves int64 (then ``sums`` stops before it), or -1.

    Same order of operations as the kernel: per value (ascending), per atom the sum of its
    parts' weights, the product over atoms, the sum over values, times the row weight.
    """
    sums = []
    rows = {}
    for r, x, hits in extend_level_twin(vals, lo, hi, atom_start):
        rows.setdefault(r, []).append(hits)
    for r in range(len(lo)):
        acc = 0
        for hits in rows.get(r, []):
            prod = 1
            for a in range(len(atom_start) - 1):
                s = 0
                for q in range(atom_start[a], atom_start[a + 1]):
                    if hits[q] >= 0:
                        s += int(part_weights[q][hits[q]])
                        if not fits(s):
                            return sums, r
                prod *= s
                if not fits(prod):
                    return sums, r
            acc += prod
            if not fits(acc):
                return sums, r
        total = acc * int(row_weights[r])
        if not fits(total):
            return sums, r
        sums.append(total)
    return sums, -1


# ------------------------------------------------------------------ conjunctive queries
def _is_var(t) -> bool:
    return isinstance(t, str)


def join(atoms: Sequence[tuple[Z, Sequence]], output: Sequence[str],
         filters: Sequence[tuple[Sequence[str], Callable[..., bool]]] = ()) -> Z:
    """Nested-loop evaluation of ``A1 ⋈ ... ⋈ An`` with multiset (Z-set) semantics.

    ``filters`` are ``(variables, fn)`` with ``fn(*values) -> bool`` on Python ints. A row of
    the result is the output variables' values; its weight is the sum over all bindings of
    the product of the atoms' weights.
    """
    out: Z = {}

    def rec(i: int, binding: dict, w: int) -> None:
        if i == len(atoms):
            if all(fn(*(binding[v] for v in vs)) for vs, fn in filters):
                key = tuple(binding[v] for v in output)
                out[key] = out.get(key, 0) + w
            return
        rows, terms = atoms[i]
        for row, rw in rows.items():
            b = binding
            ok = True
            for t, x in zip(terms, row):
                if _is_var(t):
                    if t in b:
                        if b[t] != x:
                            ok = False
                            break
                    else:
                        if b is binding:
                            b = dict(binding)
                        b[t] = x
                elif t != x:
                    ok = False
                    break
            if ok:
                rec(i + 1, b, w * rw)

    rec(0, {}, 1)
    return {k: w for k, w in sorted(out.items()) if w}


def zadd(a: Z, b: Z) -> Z:
    out = dict(a)
    for k, w in b.items():
        out[k] = out.get(k, 0) + w
    return {k: w for k, w in sorted(out.items()) if w}


def zdiff(after: Z, before: Z) -> Z:
    """``after - before`` as a Z-set dict."""
    return zadd(after, {k: -w for k, w in before.items()})


# ------------------------------------------------------------------ graph patterns
def simple_undirected(pairs: Iterable[Sequence[int]]) -> set[tuple[int, int]]:
    """Undirected simple edges as ``(min, max)``, self-loops dropped."""
    return {(min(u, v), max(u, v)) for u, v in ((int(a), int(b)) for a, b in pairs) if u != v}


def simple_directed(pairs: Iterable[Sequence[int]]) -> set[tuple[int, int]]:
    return {(u, v) for u, v in ((int(a), int(b)) for a, b in pairs) if u != v}


def _adjacency(edges: set[tuple[int, int]], symmetric: bool) -> dict[int, set[int]]:
    adj: dict[int, set[int]] = {}
    for u, v in edges:
        adj.setdefault(u, set()).add(v)
        adj.setdefault(v, set())
        if symmetric:
            adj[v].add(u)
    return adj


def triangles(pairs) -> set[tuple[int, int, int]]:
    """Undirected triangles as ``a < b < c``."""
    return {t for t in cliques(pairs, 3)}


def cliques(pairs, k: int) -> set[tuple[int, ...]]:
    """Undirected k-cliques as increasing tuples."""
    adj = _adjacency(simple_undirected(pairs), symmetric=True)
    out = set()

    def grow(clique: tuple, cands: set) -> None:
        if len(clique) == k:
            out.add(clique)
            return
        for v in sorted(cands):
            if v > clique[-1]:
                grow(clique + (v,), cands & adj[v])

    for v in adj:
        grow((v,), adj[v])
    return out


def directed_cycles(pairs, k: int) -> set[tuple[int, ...]]:
    """Directed simple k-cycles ``v0 -> v1 -> ... -> v(k-1) -> v0`` with ``v0`` the smallest."""
    adj = _adjacency(simple_directed(pairs), symmetric=False)
    out = set()

    def walk(path: list) -> None:
        if len(path) == k:
            if path[0] in adj[path[-1]]:
                out.add(tuple(path))
            return
        for v in adj[path[-1]]:
            if v > path[0] and v not in path:
                walk(path + [v])

    for v in adj:
        walk([v])
    return out


def undirected_cycles(pairs, k: int) -> set[tuple[int, ...]]:
    """Undirected simple k-cycles ``(a, v1, ..., v(k-1))``: ``a`` smallest, ``v1 < v(k-1)``."""
    adj = _adjacency(simple_undirected(pairs), symmetric=True)
    out = set()

    def walk(path: list) -> None:
        if len(path) == k:
            if path[0] in adj[path[-1]] and path[1] < path[-1]:
                out.add(tuple(path))
            return
        for v in adj[path[-1]]:
            if v > path[0] and v not in path:
                walk(path + [v])

    for v in adj:
        walk([v])
    return out


def nx_graph(pairs):
    import networkx as nx

    g = nx.Graph()
    g.add_edges_from(simple_undirected(pairs))
    return g


def nx_triangles(pairs_or_graph) -> int:
    """networkx's triangle count (sum over nodes / 3)."""
    import networkx as nx

    g = pairs_or_graph if isinstance(pairs_or_graph, nx.Graph) else nx_graph(pairs_or_graph)
    return sum(nx.triangles(g).values()) // 3
