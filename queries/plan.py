"""``explain``: how a query runs, as text — its circuit's operators, join atoms with sizes,
variable order.

Every query compiles to one DBSP circuit (``queries.circuits``): ``q`` runs its first tick
over the database, a view steps it with each transaction. The data patterns of a clause
list are one multi-way generic join whose variable order ``choose_order`` picks from the
atoms' sizes (the most connected variable first, ties to the smallest atom); predicates on
join variables run as filters at the first level where their variables are bound; the
other clauses follow as operators (function, difference for ``not``, union for ``or``, a
child circuit iterated to a fixed point for recursive rules); then the ``:find``
projection and aggregation.

``format="dot"`` gives the circuit as a Graphviz DOT graph instead (``wcoj.dot.circuit_dot``:
sources are the attribute deltas, the core join one node, rule components child circuits).

Relies on ``queries.circuits``; used by ``Database.explain``.

>>> from queries.database import Database
>>> db = Database()
>>> _ = db.transact('[{:db/ident :a :db/valueType :db.type/long}]')
>>> print(db.explain('[:find ?x :where [?x :a ?y] [(> ?y 1)]]'))  # doctest: +NORMALIZE_WHITESPACE
query: [:find ?x :where [?x :a ?y] [(> ?y 1)]]
one DBSP circuit: q runs its first tick, a view steps it with each transaction
  (or runs its first tick again when a transaction changes 100% of the rows it reads: queries.refresh)
  circuit: core join [?x :a ?y] filtered by [(> ?y 1)] (generic join, telescoping delta rule)
join (generic join, 1 atoms):
  [?x :a ?y]  relation :a (e, v)  ~0 rows
variable order: ?x ?y
  level ?y: filter [(> ?y 1)]
find: ?x
"""

from __future__ import annotations

from typing import Any

from queries.ast import FindAggregate, FindPull, Pattern, Predicate, Query, free_vars
from queries.functions import FUNCTIONS
from queries.rewrite import rewrite
from wcoj.dot import circuit_dot
from wcoj.errors import QueryError
from wcoj.generic_join import choose_order

__all__ = ["explain"]


def explain(db: Any, query: Query, inputs: tuple, format: str = "text") -> str:
    """A text plan of ``query`` on ``db``, or with ``format="dot"`` its circuit as DOT
    (see the module docstring)."""
    if format not in ("text", "dot"):
        raise QueryError(f"explain format must be 'text' or 'dot', got {format!r}")
    compiled = db._compile(query, inputs)
    if format == "dot":
        how = "one DBSP circuit: q runs its first tick, a view steps it with each transaction"
        if compiled.aggregated:
            how += "; the sink's rows then feed per-group aggregate state"
        return circuit_dot(compiled.root, title=f"{query.edn()}\n{how}")
    ev, table = compiled.ev, compiled._table
    lines = [f"query: {query.edn()}",
             "one DBSP circuit: q runs its first tick, a view steps it with each transaction",
             f"  (or runs its first tick again when a transaction changes "
             f"{compiled.refresh.fraction:.0%} of the rows it reads: queries.refresh)"]
    lines += [f"  circuit: {note}" for note in dict.fromkeys(compiled.notes)]
    if table.vars:
        lines.append(f"inputs: {' '.join(table.vars)}  ({len(table.rows)} rows)")
    where = rewrite(query.where, db.store, ev.dbs)
    patterns = [c for c in where if isinstance(c, Pattern)]
    consts = compiled.consts
    if patterns:
        atoms, _ = ev.atoms(patterns, consts)
        lines.append(f"join (generic join, {len(atoms)} atoms):")
        sizes = []
        for p in patterns:
            ((rel, _),), _ = ev.atoms([p], consts)
            if not {v.name for v in free_vars(p)} - set(consts):  # binds nothing: is it there?
                lines.append(f"  {p}  existence check in relation {rel.name}")
                continue
            n = len(rel.view("prev", tuple(range(rel.arity))))
            sizes.append(float(n))
            cols = "(e, v)" if rel.arity == 2 else "(e, a, v, tx)"
            lines.append(f"  {p}  relation {rel.name} {cols}  ~{n} rows")
        varlists = [sorted({v.name for v in free_vars(p)} - set(consts)) for p in patterns]
        varlists = [v for v in varlists if v]
        if table.vars and len(table.rows) != 1:
            varlists.append(list(table.vars))
            sizes.append(float(len(table.rows)))
        order = choose_order(varlists, sizes=sizes[:len(varlists)] + [1.0] * (
            len(varlists) - len(sizes)))
        lines.append("variable order: " + " ".join(order))
        bound = set(consts)
        for c in where:
            if isinstance(c, Predicate) and c.fn in FUNCTIONS:
                vs = {v.name for v in free_vars(c)} - bound
                if vs <= set(order):
                    level = max(vs, key=order.index) if vs else order[0]
                    lines.append(f"  level {level}: filter {c}")
    for c in where:
        if isinstance(c, (Pattern,)) or (isinstance(c, Predicate) and c.fn in FUNCTIONS):
            continue
        kind = type(c).__name__
        op = {"Not": "difference", "NotJoin": "difference", "Or": "union",
              "OrJoin": "union", "RuleCall": "rule (union of bodies, or a child circuit to a "
              "fixed point when recursive)",
              "FnCall": "function", "Predicate": "database predicate"}.get(kind, kind)
        lines.append(f"then {op}: {c}")
    rules = [r for rs in compiled.rules.values() for r in rs]
    if rules:
        lines.append(f"rules: {len(rules)} definitions of "
                     + ", ".join(sorted({r.name for r in rules})))
    find = query.find.edn()
    if any(isinstance(e, FindAggregate) for e in query.find.elements):
        find += "  (group and aggregate" + (f" with {' '.join(map(str, query.with_vars))}"
                                            if query.with_vars else "") + ")"
    if any(isinstance(e, FindPull) for e in query.find.elements):
        find += "  (pull per row, when the rows are read)"
    lines.append(f"find: {find}")
    return "\n".join(lines)
