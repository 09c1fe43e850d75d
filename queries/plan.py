"""``explain``: how a query will run, as text — join atoms with sizes, variable order, operators.

The plan mirrors ``queries.compile``: the data patterns of the top-level ``:where`` are one
multi-way generic join whose variable order ``choose_order`` picks from the atoms' sizes
(the most connected variable first, ties to the smallest atom); predicates on join variables
run as filters at the first level where their variables are bound; the other clauses follow
in order as operators (function, difference for ``not``, union for ``or``, fixed point for
rule calls); then the ``:find`` projection and aggregation. A view of a conjunctive query is
maintained by the telescoping delta rule, any other view by the DBSP circuit that
``queries.circuits`` compiles (or, for pull and database functions, by recomputation on
change; the plan says which and why).

``format="dot"`` gives the circuit the view compiles to as a Graphviz DOT graph instead
(``wcoj.dot.circuit_dot``: sources are the attribute deltas, the core join one node, rule
components child circuits); a view that recomputes gets a one-node graph saying why.

Relies on ``queries.compile``; used by ``Database.explain``.

>>> from queries.database import Database
>>> db = Database()
>>> _ = db.transact('[{:db/ident :a :db/valueType :db.type/long}]')
>>> print(db.explain('[:find ?x :where [?x :a ?y] [(> ?y 1)]]'))  # doctest: +NORMALIZE_WHITESPACE
query: [:find ?x :where [?x :a ?y] [(> ?y 1)]]
as a view: incremental join (telescoping delta rule)
join (generic join, 1 atoms):
  [?x :a ?y]  relation :a (e, v)  ~0 rows
variable order: ?x ?y
  level ?y: filter [(> ?y 1)]
find: ?x
"""

from __future__ import annotations

from typing import Any

from queries.ast import FindAggregate, FindPull, Pattern, Predicate, Query, free_vars
from queries.circuits import Unsupported, compile_view
from queries.compile import JoinPlan, bind_inputs
from queries.functions import FUNCTIONS
from wcoj.dot import circuit_dot, quote
from wcoj.errors import QueryError
from wcoj.generic_join import choose_order

__all__ = ["explain"]


def _view_plan(ev: Any, query: Query, table: Any, rules: list) -> list[str]:
    """How a non-conjunctive view is maintained: its circuit's operators, or why not."""
    try:
        compiled = compile_view(ev, query, table, rules)
    except Unsupported as e:
        return [f"as a view: recompute when an attribute it reads changes ({e.reason})"]
    except QueryError as e:
        return [f"as a view: recompute when an attribute it reads changes ({e})"]
    return (["as a view: incremental DBSP circuit over the attribute deltas"]
            + [f"  circuit: {note}" for note in dict.fromkeys(compiled.notes)])


def _dot(ev: Any, query: Query, table: Any, rules: list) -> str:
    """The view's circuit as DOT, titled with the query and how the view is kept."""
    how = ("as a view: incremental join (telescoping delta rule), the circuit's core join"
           if JoinPlan.eligible(query, table) else "as a view: incremental DBSP circuit")
    try:
        compiled = compile_view(ev, query, table, rules)
    except (Unsupported, QueryError) as e:
        why = e.reason if isinstance(e, Unsupported) else str(e)
        return ("digraph circuit {\n  label=" + quote(query.edn()) + "; labelloc=t;\n"
                "  n0 [label=" + quote(f"recompute when an attribute it reads changes ({why})")
                + ", shape=note];\n}")
    if compiled.aggregated:
        how += "; the sink's rows then feed per-group aggregate state"
    return circuit_dot(compiled.root, title=f"{query.edn()}\n{how}")


def explain(db: Any, query: Query, inputs: tuple, format: str = "text") -> str:
    """A text plan of ``query`` on ``db``, or with ``format="dot"`` its circuit as DOT
    (see the module docstring)."""
    if format not in ("text", "dot"):
        raise QueryError(f"explain format must be 'text' or 'dot', got {format!r}")
    ev = db._evaluator("prev", query, inputs)
    table, rules = bind_inputs(ev, query, inputs)
    if format == "dot":
        return _dot(ev, query, table, rules)
    lines = [f"query: {query.edn()}"]
    incremental = JoinPlan.eligible(query, table)
    if incremental:
        lines.append("as a view: incremental join (telescoping delta rule)")
    else:
        lines.extend(_view_plan(ev, query, table, rules))
    if table.vars:
        lines.append(f"inputs: {' '.join(table.vars)}  ({len(table.rows)} rows)")
    patterns = [c for c in query.where if isinstance(c, Pattern)]
    consts = dict(zip(table.vars, next(iter(table.rows)))) if incremental else {}
    if patterns:
        atoms, _, _ = ev.atoms(patterns, consts)
        lines.append(f"join (generic join, {len(atoms)} atoms):")
        sizes = []
        for p in patterns:
            src = ev.atoms([p], consts)[0]
            if not src:
                lines.append(f"  {p}  constant check")
                continue
            rel = src[0][0]
            n = len(rel.view("prev", tuple(range(rel.arity))))
            sizes.append(float(n))
            cols = "(e, v)" if rel.arity == 2 else "(e, a, v, tx)"
            lines.append(f"  {p}  relation {rel.name} {cols}  ~{n} rows")
        varlists = [sorted({v.name for v in free_vars(p)} - set(consts)) for p in patterns]
        varlists = [v for v in varlists if v]
        if not incremental and table.vars:
            varlists.append(list(table.vars))
            sizes.append(float(len(table.rows)))
        order = choose_order(varlists, sizes=sizes[:len(varlists)] + [1.0] * (
            len(varlists) - len(sizes)))
        lines.append("variable order: " + " ".join(order))
        bound = set(consts) | set(table.vars if not incremental else ())
        for c in query.where:
            if isinstance(c, Predicate) and c.fn in FUNCTIONS:
                vs = {v.name for v in free_vars(c)} - bound
                if vs <= set(order):
                    level = max(vs, key=order.index) if vs else order[0]
                    lines.append(f"  level {level}: filter {c}")
    for c in query.where:
        if isinstance(c, (Pattern,)) or (isinstance(c, Predicate) and c.fn in FUNCTIONS):
            continue
        kind = type(c).__name__
        op = {"Not": "difference", "NotJoin": "difference", "Or": "union",
              "OrJoin": "union", "RuleCall": "rule fixed point (semi-naive, bottom-up)",
              "FnCall": "function", "Predicate": "database predicate"}.get(kind, kind)
        lines.append(f"then {op}: {c}")
    if rules:
        lines.append(f"rules: {len(rules)} definitions of "
                     + ", ".join(sorted({r.name for r in rules})))
    find = query.find.edn()
    if any(isinstance(e, FindAggregate) for e in query.find.elements):
        find += "  (group and aggregate" + (f" with {' '.join(map(str, query.with_vars))}"
                                            if query.with_vars else "") + ")"
    if any(isinstance(e, FindPull) for e in query.find.elements):
        find += "  (pull per row)"
    lines.append(f"find: {find}")
    return "\n".join(lines)
