"""``explain(format="dot")``: a well-formed DOT graph that holds every node of the circuit."""

import re
import shutil

import pytest

from benchmarks.bench_datalog import ANCESTORS, RULES, SCHEMA, TRIANGLE  # the benchmark's queries
from queries.database import Database
from wcoj.dot import circuit_dot
from wcoj.errors import QueryError
from wcoj.recursion import reachability_circuit

NEGATION = '[:find ?a :where [?a :knows ?b] (not [?b :knows ?a])]'

NODE = re.compile(r"^\s*(n[\d_]+) \[label=\"((?:[^\"\\]|\\.)*)\"")
EDGE = re.compile(r"^\s*(n[\d_]+) -> (n[\d_]+)")


def parse(dot: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Node ids with labels and edges, after checking the outline of a DOT digraph."""
    lines = dot.splitlines()
    assert lines[0] == "digraph circuit {" and lines[-1] == "}"
    assert dot.count("{") == dot.count("}")
    nodes, edges = {}, []
    for line in lines[1:-1]:
        if m := NODE.match(line):
            assert m.group(1) not in nodes, f"node {m.group(1)} declared twice"
            nodes[m.group(1)] = m.group(2)
        elif m := EDGE.match(line):
            edges.append((m.group(1), m.group(2)))
        else:
            assert re.match(r"^\s*(rankdir|node |label=|subgraph cluster_n[\d_]+ \{|\}$)", line), line
    for a, b in edges:
        assert a in nodes and b in nodes, f"edge {a} -> {b} names an undeclared node"
    return nodes, edges


def node_ids(circuit) -> set[str]:
    """``n`` + global id of every node of ``circuit`` and of its children."""
    out = set()
    for node in circuit.nodes:
        out.add("n" + "_".join(map(str, circuit.global_id(node.local_id))))
        if node.kind == "child":
            out |= node_ids(node.child)
    return out


@pytest.fixture
def db():
    d = Database()
    d.transact(SCHEMA)
    r = d.transact([{":db/id": f"p{i}", ":name": f"p{i}"} for i in range(4)])
    e = [r.tempids[f"p{i}"] for i in range(4)]
    d.transact([[":db/add", e[0], ":knows", e[1]], [":db/add", e[1], ":knows", e[2]],
                [":db/add", e[2], ":knows", e[0]], [":db/add", e[1], ":parent", e[0]],
                [":db/add", e[2], ":parent", e[1]]])
    return d


def compiled_root(db, query, *inputs):
    return db._compile(db._parse(query), inputs).root


@pytest.mark.parametrize("query, inputs", [(TRIANGLE, ()), (ANCESTORS, (RULES,)), (NEGATION, ())],
                         ids=["triangle", "recursive-rule", "negation"])
def test_explain_dot_holds_every_circuit_node(db, query, inputs):
    dot = db.explain(query, *inputs, format="dot")
    nodes, edges = parse(dot)
    assert set(nodes) == node_ids(compiled_root(db, query, *inputs))
    assert any(label.startswith("source rel") for label in nodes.values())
    assert "sink out" in nodes.values()
    # every node but the child placeholders and sources is reached by an edge
    targets = {b for _, b in edges}
    assert all(n in targets for n, label in nodes.items()
               if not label.startswith(("source", "child circuit")))


def test_explain_dot_draws_the_rule_component_as_a_cluster(db):
    dot = db.explain(ANCESTORS, RULES, format="dot")
    assert "subgraph cluster_n0 {" in dot
    nodes, edges = parse(dot)
    assert "z^-1" in nodes.values() and "join_lattice" in nodes.values()
    assert any(a.count("_") == 0 and b.count("_") == 1 for a, b in edges)  # an import into the child


def test_explain_dot_of_a_pull_query_is_its_circuit(db):
    query = "[:find (pull ?a [:name]) :where [?a :knows _]]"
    nodes, edges = parse(db.explain(query, format="dot"))
    assert set(nodes) == node_ids(compiled_root(db, query))
    assert any(label.startswith("core_join") for label in nodes.values()) and edges


def test_explain_rejects_an_unknown_format(db):
    with pytest.raises(QueryError, match="'text' or 'dot'"):
        db.explain(TRIANGLE, format="svg")


def test_circuit_dot_of_a_nested_circuit():
    c = reachability_circuit()
    nodes, edges = parse(circuit_dot(c, title='reach "demo"'))
    assert set(nodes) == node_ids(c)
    assert 'label="reach \\"demo\\""' in circuit_dot(c, title='reach "demo"')


def test_dot_renders_with_graphviz(db):
    graphviz = pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("the Graphviz dot binary is not installed")
    svg = graphviz.Source(db.explain(ANCESTORS, RULES, format="dot")).pipe(format="svg")
    assert svg.lstrip().startswith(b"<?xml") and b"join_lattice" in svg
