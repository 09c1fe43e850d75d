"""A circuit as a Graphviz DOT graph: every node, nested circuits as clusters.

``circuit_dot(c)`` draws the circuit ``c`` was built as (it need not have run). Node ids
are ``n`` plus the node's global id joined by ``_`` (``n0``, ``n5_2``: node 2 of the
child circuit that is node 5 of the root), so a reader can find a node of the picture in
``Circuit.nodes``. Edges: data flow (solid), a ``z^-1`` delay's input (dashed, drawn into
the delay node), a parent stream imported into a child (dotted, into the import node),
and a child stream exported to its parent (bold, out of the export node's source).

Relies on ``wcoj.circuit`` only; used by ``queries.plan.explain(format="dot")``.

>>> from wcoj.circuit import Circuit
>>> c = Circuit()
>>> s = c.source(1, name="edges")
>>> _ = c.sink(s.map(lambda k: k), "out")
>>> print(circuit_dot(c, title="copy"))  # doctest: +NORMALIZE_WHITESPACE
digraph circuit {
  rankdir=LR;
  node [shape=box, fontname="Helvetica", fontsize=10];
  label="copy"; labelloc=t; fontsize=11;
  n0 [label="source edges", shape=invhouse];
  n1 [label="map"];
  n2 [label="sink out", shape=house];
  n0 -> n1;
  n1 -> n2;
}
"""

from __future__ import annotations

from typing import Any

__all__ = ["circuit_dot", "quote"]

_SHAPES = {"source": "invhouse", "sink": "house", "feedback": "circle", "import": "cds",
           "export": "cds", "child": "folder", "forward": "point"}


def quote(text: str) -> str:
    """``text`` as a DOT string literal (quotes and backslashes escaped, newlines kept).

    >>> quote('say "hi"\\n')
    '"say \\\\"hi\\\\"\\\\n"'
    """
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _id(path: tuple[int, ...]) -> str:
    return "n" + "_".join(map(str, path))


def _label(node: Any) -> str:
    if node.op is not None:
        return node.op.name
    if node.kind in ("source", "sink"):
        return f"{node.kind} {node.name}"
    if node.kind == "feedback":
        return "z^-1"
    if node.kind == "import":
        return f"import ({node.mode})"
    if node.kind == "export":
        return "export"
    if node.kind == "child":
        return f"child circuit {node.local_id}: fixed point"
    return node.kind


def _nodes(c: Any, indent: str, out: list[str]) -> None:
    for node in c.nodes:
        path = c.global_id(node.local_id)
        attrs = f"label={quote(_label(node))}"
        if node.kind in _SHAPES:
            attrs += f", shape={_SHAPES[node.kind]}"
        out.append(f"{indent}{_id(path)} [{attrs}];")
        if node.kind == "child":
            out.append(f"{indent}subgraph cluster_{_id(path)} {{")
            out.append(f"{indent}  label={quote(f'child {node.local_id}: iterated to a fixed point')}; "
                       "style=dashed;")
            _nodes(node.child, indent + "  ", out)
            out.append(f"{indent}}}")


def _edges(c: Any, out: list[str]) -> None:
    for node in c.nodes:
        me = _id(c.global_id(node.local_id))
        if node.kind == "feedback":
            out.extend(f"  {_id(c.global_id(i))} -> {me} [style=dashed];" for i in node.inputs)
        elif node.kind == "child":
            child = node.child
            for inner in child.nodes:  # each import node names the parent node it brings in
                if inner.kind == "import":
                    out.append(f"  {_id(c.global_id(int(inner.name)))} -> "
                               f"{_id(child.global_id(inner.local_id))} [style=dotted];")
            _edges(child, out)
        elif node.kind == "export":
            child = c.nodes[node.inputs[0]].child
            i, _mode = child._exports[int(node.mode)]
            out.append(f"  {_id(child.global_id(i))} -> {me} [style=bold];")
        else:
            out.extend(f"  {_id(c.global_id(i))} -> {me};" for i in node.inputs)


def circuit_dot(circuit: Any, title: str = "") -> str:
    """The DOT text of ``circuit`` (a root or child ``wcoj.circuit.Circuit``)."""
    out = ["digraph circuit {", "  rankdir=LR;",
           '  node [shape=box, fontname="Helvetica", fontsize=10];']
    if title:
        out.append(f"  label={quote(title)}; labelloc=t; fontsize=11;")
    _nodes(circuit, "  ", out)
    _edges(circuit, out)
    out.append("}")
    return "\n".join(out)
