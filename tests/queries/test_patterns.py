"""Graph patterns on random graphs equal brute force (``tests/reference_joins.py``) and
networkx: undirected triangles, 4- and 5-cycles, 4-cliques, directed 3- and 4-cycles,
any conjunctive query; the fused and the generic evaluation paths agree."""

import networkx as nx
import numpy as np
import pytest
import reference_joins as ref
from hypothesis import example, given, settings
from hypothesis import strategies as st

from queries.graph import Graph
from queries.patterns import (MAX_ATOMS, MAX_CLIQUE, MAX_CYCLE, PATTERN_NAMES, Pattern, by_name,
                              clique, conjunctive, cycle, triangle)
from wcoj.errors import QueryError
from wcoj.generic_join import generic_join

nodes = st.integers(0, 7)
graphs = st.frozensets(st.tuples(nodes, nodes), max_size=22)   # self-loops and both directions included


def graph_of(edges, directed=False) -> Graph:
    g = Graph(directed=directed)
    g.load_edges(np.array(sorted(edges), dtype=np.int64).reshape(-1, 2))
    return g


def rows(g: Graph, pattern) -> set:
    z = g.view(pattern).result()
    z.check()
    assert set(z.weights.tolist()) <= {1}        # every subgraph found exactly once
    return set(z.to_dict())


# (pattern, directed graph?, oracle)
CASES = {
    "triangle": (triangle(), False, ref.triangles),
    "4-cycle": (by_name("4-cycle"), False, lambda e: ref.undirected_cycles(e, 4)),
    "5-cycle": (cycle(5, directed=False), False, lambda e: ref.undirected_cycles(e, 5)),
    "4-clique": (clique(4), False, lambda e: ref.cliques(e, 4)),
    "3-cycle": (by_name("3-cycle"), True, lambda e: ref.directed_cycles(e, 3)),
    "directed-4-cycle": (by_name("directed-4-cycle"), True, lambda e: ref.directed_cycles(e, 4)),
    "directed-2-cycle": (cycle(2), True, lambda e: ref.directed_cycles(e, 2)),
    # the undirected triangle view of a directed graph: direction ignored
    "triangle-of-directed": (triangle(), True, ref.triangles),
    # directed 3-cycles over an undirected graph: every triangle, in both orientations
    "3-cycle-of-undirected": (cycle(3), False,
                              lambda e: ref.directed_cycles(e | {(v, u) for u, v in e}, 3)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@given(edges=graphs)
@example(edges=frozenset({(1, 2), (1, 3), (2, 3)}))
@example(edges=frozenset((u, v) for u in range(5) for v in range(5)))   # K5 with self-loops
def test_pattern_rows_equal_brute_force(case, edges):
    pattern, directed, oracle = CASES[case]
    g = graph_of(edges, directed)
    want = oracle(set(edges))
    assert rows(g, pattern) == want
    assert g.count(pattern) == len(want)


@settings(max_examples=25)
@given(graphs)
def test_counts_equal_networkx(edges):
    g = graph_of(edges)
    G = ref.nx_graph(edges)
    assert g.count("triangle") == ref.nx_triangles(G)
    assert g.count("4-cycle") == sum(1 for c in nx.simple_cycles(G, length_bound=4) if len(c) == 4)
    assert g.count("4-clique") == sum(1 for c in nx.enumerate_all_cliques(G) if len(c) == 4)
    D = nx.DiGraph([(u, v) for u, v in edges if u != v])
    assert graph_of(edges, directed=True).count("3-cycle") == \
        sum(1 for c in nx.simple_cycles(D, length_bound=3) if len(c) == 3)


@settings(max_examples=20)
@given(graphs, st.sampled_from(sorted(CASES)))
def test_fused_and_generic_paths_agree_on_patterns(edges, case):
    pattern, directed, _ = CASES[case]
    g = graph_of(edges, directed)
    join = g.view(pattern).join
    atoms = join.atoms_for(["prev"] * len(join.atoms), join.batch_order)
    fused = generic_join(atoms, join.batch_order, join.output, fused=True, filters=join.filters)
    assert generic_join(atoms, join.batch_order, count_only=True, fused=False, filters=join.filters) == len(fused)
    assert generic_join(atoms, join.batch_order, join.output, fused=False, filters=join.filters) == fused


@given(graphs)
def test_any_conjunctive_query_over_d_o_s(edges):
    """A 2-path u -> v -> w over D with u != w, projected to its endpoints (weights count paths)."""
    g = graph_of(edges, directed=True)
    p = conjunctive("2-path", [("D", ("u", "v")), ("D", ("v", "w"))], [("!=", "u", "w")], ["u", "w"])
    arcs = ref.simple_directed(edges)
    want = ref.join([({a: 1 for a in arcs}, ("u", "v")), ({a: 1 for a in arcs}, ("v", "w"))], ["u", "w"],
                    [(("u", "w"), lambda u, w: u != w)])
    assert g.view(p).result().to_dict() == want
    assert g.count(p) == sum(want.values())


def test_worked_example_counts():
    # K4 plus a pendant edge: 4 triangles, 3 4-cycles, 1 4-clique
    k4 = [(u, v) for u in range(4) for v in range(u + 1, 4)] + [(3, 9)]
    g = graph_of(k4)
    assert [g.count(p) for p in ("triangle", "4-cycle", "4-clique")] == [4, 3, 1]
    assert rows(g, "4-cycle") == {(0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 1, 3)}
    d = graph_of([(1, 2), (2, 3), (3, 1), (1, 3), (3, 4), (4, 1)], directed=True)
    assert rows(d, "3-cycle") == {(1, 2, 3), (1, 3, 4)}


def test_pattern_shapes():
    assert triangle().output == ("a", "b", "c")
    assert clique(4).atoms[0] == ("O", ("v0", "v1")) and len(clique(4).atoms) == 6
    assert cycle(3, directed=False) == triangle()
    c = cycle(4, directed=True)
    assert c.atoms[-1] == ("D", ("v3", "v0")) and ("<", "v0", "v3") in c.filters
    assert set(PATTERN_NAMES) <= {"triangle", "3-cycle", "4-cycle", "4-clique"}
    assert by_name(" Triangle ") == triangle()
    assert by_name("4-cycle").name == "undirected-4-cycle"
    assert by_name("3-cycle") == cycle(3, directed=True)
    assert by_name("directed-5-cycle") == cycle(5, directed=True)
    assert by_name("5-clique") == clique(5)


@pytest.mark.parametrize("make, match", [
    (lambda: by_name("pentagon"), "unknown pattern 'pentagon'"),
    (lambda: clique(1), "k >= 2, got 1"),
    (lambda: cycle(2, directed=False), "k >= 3, got 2"),
    (lambda: cycle(1), "k >= 2, got 1"),
    (lambda: Pattern("p", ()), "at least one atom"),
    (lambda: Pattern("p", (("X", ("a", "b")),)), "unknown relation 'X'"),
    (lambda: Pattern("p", (("D", ("a", "b", "c")),)), "needs 2 variables"),
    (lambda: Pattern("p", (("D", ("a", "b")),), (("<", "a", "z"),)), "filter variable z"),
    (lambda: Pattern("p", (("D", ("a", "b")),), (("<=", "a", "b"),)), "unknown filter '<='"),
    (lambda: Pattern("p", (("D", ("a", "b")),), (), ("c",)), "output variable c"),
])
def test_malformed_patterns_raise_query_error(make, match):
    with pytest.raises(QueryError, match=match):
        make()


# ------------------------------------------------------------------ bad input (issue 21)

@pytest.mark.parametrize("make, match", [
    (lambda: clique(MAX_CLIQUE + 1), f"k <= {MAX_CLIQUE} .*got {MAX_CLIQUE + 1}"),
    (lambda: by_name("1000000000-clique"), "unknown pattern '1000000000-clique'"),
    (lambda: by_name("30-clique"), f"k <= {MAX_CLIQUE} .*got 30"),
    (lambda: cycle(MAX_CYCLE + 1), f"k <= {MAX_CYCLE} .*got {MAX_CYCLE + 1}"),
    (lambda: by_name(f"undirected-{MAX_CYCLE + 1}-cycle"), f"k <= {MAX_CYCLE}"),
    (lambda: by_name(f"{10**9}-cycle"), "unknown pattern"),
    (lambda: conjunctive("path", [("D", (f"x{i}", f"x{i + 1}")) for i in range(MAX_ATOMS + 1)]),
     f"{MAX_ATOMS + 1} atoms, more than the limit of {MAX_ATOMS}"),
])
def test_pattern_sizes_are_bounded(make, match):
    with pytest.raises(QueryError, match=match):
        make()


def test_largest_patterns_are_accepted():
    assert len(clique(MAX_CLIQUE).atoms) == MAX_CLIQUE * (MAX_CLIQUE - 1) // 2 <= MAX_ATOMS
    assert by_name(f"directed-{MAX_CYCLE}-cycle") == cycle(MAX_CYCLE, directed=True)
    assert by_name(f"undirected-{MAX_CYCLE}-cycle") == cycle(MAX_CYCLE, directed=False)
    assert by_name("undirected-4-cycle") == by_name("4-cycle")


@pytest.mark.parametrize("name", ["directed-3-clique", "undirected-4-clique", "3-cycles",
                                  "directed-cycle", "-3-cycle", "3-clique-cycle", "x" * 10**6])
def test_unknown_pattern_names_list_the_accepted_forms(name):
    with pytest.raises(QueryError, match="unknown pattern .*accepted: triangle, k-clique") as info:
        by_name(name)
    assert len(str(info.value)) < 400


def test_graph_refuses_bad_patterns_and_stays_usable():
    g = graph_of({(0, 1), (1, 2), (0, 2)})
    tri = g.view("triangle")
    for bad in ("directed-3-clique", f"{MAX_CLIQUE + 1}-clique", "1000000000-clique"):
        with pytest.raises(QueryError):
            g.view(bad)
        with pytest.raises(QueryError):
            g.count(bad)
    assert list(g.views) == ["triangle"] and tri.count == 1
    g.apply(inserts=np.array([[2, 3], [1, 3]]))
    assert tri.count == 2 == g.count("triangle")


def test_a_view_name_holds_one_pattern():
    g = graph_of({(0, 1), (1, 2), (0, 2), (2, 3), (3, 0)})
    tri = g.view("triangle")
    named = g.view("4-cycle", name="squares")
    assert g.view("triangle") is tri and g.view(triangle(), name="triangle") is tri
    assert g.view(cycle(4, directed=False), name="squares") is named
    for pattern, name in (("4-cycle", "triangle"), (cycle(4, directed=False), "triangle"),
                          ("triangle", "squares"), ("4-clique", "squares")):
        with pytest.raises(QueryError, match=f"view '{name}' already holds pattern"):
            g.view(pattern, name=name)
    assert {k: v.pattern for k, v in g.views.items()} == {
        "triangle": triangle(), "squares": cycle(4, directed=False)}
    g.apply(inserts=np.array([[1, 3]]))
    assert (tri.count, named.count) == (g.count("triangle"), g.count("4-cycle")) == (4, 3)
