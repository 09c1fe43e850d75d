"""The oracle of the Datalog tests: a plain evaluator over Python sets of id tuples.

This was the engine's second evaluator; the engine now answers every query with the DBSP
circuit ``queries.circuits`` compiles (``q`` is its first tick). Kept here, independent of
the circuits, to check them: it evaluates the ``:where`` clauses table by table (a table is
variable names plus a set of rows of interned ids), data patterns with one batch generic
join, ``not``/``or`` by set difference and union, database functions (``get-else``,
``missing?``, ``get-some``) by reading the store per row, a nested ``q`` by evaluating
itself over the same version of the store, and rules bottom-up,
semi-naively, component by component. ``oracle_q(db, query, *inputs)`` answers like
``Database.q``.

Shares with the engine only the parser and ``queries.bind`` (how values become ids).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any


from indexes.index import Relation
from queries.ast import (
    Blank, Const, FindAggregate, FindPull, FnCall, Not, NotJoin, Or, OrJoin, Pattern,
    Predicate, Query, Rule, RuleCall, RulesVar, SrcVar, Var, bound_vars, free_vars,
)
from queries.bind import UNIT, Binder, Inputs, Table, bind_inputs
from queries.clauses import (
    _bind, _branch, _take_ready, _truthy, check_stratified, local_nots, rule_component,
    rule_deps,
)
from queries.functions import DB_FUNCTIONS, FUNCTIONS, aggregate, call
from queries.parse import _calls, parse_query
from queries.pull import pull
from wcoj.errors import QueryError, UnboundVariableError
from wcoj.generic_join import IncrementalGenericJoin, choose_order
from wcoj.zset import ZSet

__all__ = ["Evaluator", "oracle_q"]


class Evaluator(Binder):
    """Evaluates clauses over one view (``kind``) of ``store``, with Python sets."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._done: dict[str, set] = {}
        self._partial: dict[str, set] = {}
        self._override: dict[int, set] = {}

    # ------------------------------------------------------------------ clauses
    def run(self, clauses: Iterable[Any], table: Table = UNIT) -> Table:
        """Evaluate ``clauses`` (a conjunction) given the bindings of ``table``."""
        clauses = list(clauses)
        patterns = [c for c in clauses if isinstance(c, Pattern)]
        rest = [c for c in clauses if not isinstance(c, Pattern)]
        if patterns:
            pvars = set(table.vars) | {v.name for p in patterns for v in free_vars(p)}
            pushed = [c for c in rest if isinstance(c, Predicate) and c.fn in FUNCTIONS
                      and {v.name for v in free_vars(c)} <= pvars]
            rest = [c for c in rest if c not in pushed]
            table = self._join(patterns, pushed, table)
        while rest:
            table = self._clause(_take_ready(rest, table.vars), table)
            if not table.rows:
                return Table(table.vars + tuple(sorted(
                    v.name for c in rest for v in bound_vars(c) if v.name not in table.vars)),
                    set())
        return table

    def _clause(self, c: Any, table: Table) -> Table:
        if isinstance(c, Predicate):
            keep = {r for r in table.rows if _truthy(self._apply(c.fn, c.args, table.vars, r))}
            return Table(table.vars, keep)
        if isinstance(c, FnCall):
            return self._fn_call(c, table)
        if isinstance(c, Not):
            sub = self.run(c.clauses, table).project(table.vars)
            return Table(table.vars, table.rows - sub.rows)
        if isinstance(c, NotJoin):
            jv = [v.name for v in c.vars]
            sub = self.run(c.clauses, table.project(jv)).project(jv)
            idx = [table.vars.index(v) for v in jv]
            return Table(table.vars, {r for r in table.rows
                                      if tuple(r[i] for i in idx) not in sub.rows})
        if isinstance(c, Or):
            out = table.vars + tuple(sorted(v.name for v in bound_vars(c)
                                            if v.name not in table.vars))
            rows: set = set()
            for b in c.clauses:
                rows |= self.run(_branch(b), table).project(out).rows
            return Table(out, rows)
        if isinstance(c, OrJoin):
            jv = [v.name for v in c.required + c.vars]
            inner = [v for v in jv if v in table.vars]
            out = tuple(inner) + tuple(sorted(v.name for v in bound_vars(c)
                                              if v.name not in inner))
            rows = set()
            for b in c.clauses:
                rows |= self.run(_branch(b), table.project(inner)).project(out).rows
            return table.join(Table(out, rows))
        if isinstance(c, RuleCall):
            return self._rule_call(c, table)
        raise QueryError(f"unsupported clause {c}")

    def _args(self, args: tuple, vars_: tuple, row: tuple) -> list:
        out = []
        for a in args:
            if isinstance(a, Var):
                out.append(self.store.interner.decode_one(row[vars_.index(a.name)]))
            elif isinstance(a, Const):
                out.append(a.value)
            elif isinstance(a, SrcVar):
                out.append(a)
            elif isinstance(a, RulesVar):
                out.append([r for rs in self.rules.values() for r in rs])
            else:
                out.append(None)
        return out

    def _apply(self, fn: str, args: tuple, vars_: tuple, row: tuple) -> Any:
        values = self._args(args, vars_, row)
        if fn in DB_FUNCTIONS:
            return self._db_fn(fn, values)
        if fn == "q":  # nested q: the oracle again, over the same version of the store
            query, *inputs = values
            inputs = [None if isinstance(x, SrcVar) and x.name == "$" else
                      self.sources[x.name] if isinstance(x, SrcVar) else x for x in inputs]
            return answer(self.store, self.kind, query, inputs, implicit_db=False)
        return call(fn, values)

    def _db_fn(self, fn: str, values: list) -> Any:
        if values and isinstance(values[0], SrcVar):
            values = values[1:]
        if fn == "missing?":
            e, attr = values
            return len(self.store.value_ids(str(attr), e, self.kind)) == 0
        if fn == "get-else":
            e, attr, default = values
            if self.store.attribute(str(attr)).many:
                raise QueryError(f"get-else needs a cardinality-one attribute, {attr} is many")
            found = self.store.value_ids(str(attr), e, self.kind)
            return self.store.interner.decode_one(found[0]) if len(found) else default
        if fn == "get-some":
            e, *attrs = values
            for attr in attrs:
                found = self.store.value_ids(str(attr), e, self.kind)
                if len(found):
                    return (attr, self.store.interner.decode_one(found[0]))
            return None
        raise QueryError(f"unknown database function {fn}")

    def _fn_call(self, c: FnCall, table: Table) -> Table:
        new = [v.name for v in free_vars(c.binding) if v.name not in table.vars]
        new.sort()
        out_vars = table.vars + tuple(new)
        rows = set()
        for r in table.rows:
            value = self._apply(c.fn, c.args, table.vars, r)
            for alt in _bind(c.binding, value):
                if any(k in table.vars and r[table.vars.index(k)] != self.encode(k, x)
                       for k, x in alt.items()):
                    continue
                rows.add(r + tuple(self.encode(k, alt[k]) for k in new))
        return Table(out_vars, rows)

    def _join(self, patterns: list[Pattern], preds: list[Predicate], table: Table) -> Table:
        if not table.rows:
            names = {v.name for p in patterns for v in free_vars(p)}
            return Table(table.vars + tuple(sorted(names - set(table.vars))), set())
        atoms, filters = self.atoms(patterns)
        pvars = sorted({t for _, terms in atoms for t in terms
                        if isinstance(t, str) and not t.startswith("_")})
        out_vars = tuple(table.vars) + tuple(v for v in pvars if v not in table.vars)
        if any(not _truthy(call(c.fn, [a.value for a in c.args], self.registry))
               for c in preds if not free_vars(c)):  # on constants only: false for every row
            return Table(out_vars, set())
        if table.vars:
            rel = Relation("bindings", len(table.vars))
            rel.load(ZSet.from_rows(table.rows, arity=len(table.vars)))
            atoms.append((rel, table.vars))
        filters += [self.predicate_filter(c) for c in preds if free_vars(c)]
        # patterns of blanks and constants only bind nothing: keep a blank to see matches
        keep = out_vars or (next(t for _, terms in atoms for t in terms if isinstance(t, str)),)
        join = IncrementalGenericJoin(atoms, keep, filters=filters, batch_order=self._order(atoms))
        z = join.batch(self.kind)
        rows = {tuple(r) for r in z.keys[z.weights > 0].tolist()}
        if not out_vars:
            return Table((), {()} if rows else set())
        return Table(out_vars, rows)

    def _order(self, atoms: list) -> list[str]:
        varlists = [[t for t in terms if isinstance(t, str)] for _, terms in atoms]
        sizes = [float(len(src.view(self.kind, tuple(range(src.arity))))) for src, _ in atoms]
        return choose_order(varlists, sizes=sizes)

    # ------------------------------------------------------------------ rules
    def _rule_call(self, c: RuleCall, table: Table) -> Table:
        if c.name not in self.rules:
            raise QueryError(f"unknown rule {c.name} in {c}")
        rows = self._override.get(id(c))
        if rows is None:
            rows = self._partial.get(c.name)
        if rows is None:
            rows = self.rule_rows(c.name)
        names, keep = [], []
        for i, a in enumerate(c.args):
            if isinstance(a, Var) and a.name not in names:
                names.append(a.name)
                keep.append(i)
        checks = [(i, a) for i, a in enumerate(c.args) if not isinstance(a, Var)
                  or c.args.index(a) != i]
        out = set()
        for r in rows:
            if all(isinstance(a, Blank) or (isinstance(a, Var) and r[i] == r[c.args.index(a)])
                   or (isinstance(a, Const) and
                       self.store.interner.decode_one(r[i]) == a.value) for i, a in checks):
                out.add(tuple(r[i] for i in keep))
        return table.join(Table(names, out))

    def rule_rows(self, name: str) -> set:
        """All facts of rule ``name`` (bottom-up, its component to a fixed point)."""
        if name in self._done:
            return self._done[name]
        scc = rule_component(self.rules, name)
        for dep in sorted(rule_deps(self.rules, scc) - scc):
            self.rule_rows(dep)
        rules = [r for n in sorted(scc) for r in self.rules[n]]
        check_stratified(rules, scc)
        full = {n: set() for n in scc}
        self._partial.update(full)
        delta = {n: set() for n in scc}
        for r in rules:
            delta[r.name] |= self._rule_body(r)
        while any(delta.values()):
            for n in scc:
                full[n] |= delta[n]
            new = {n: set() for n in scc}
            for r in rules:
                for c in _calls(r.body):
                    if c.name in scc and delta[c.name]:
                        self._override = {id(c): delta[c.name]}
                        new[r.name] |= self._rule_body(r) - full[r.name]
                self._override = {}
            delta = new
        for n in scc:
            self._done[n] = full[n]
            del self._partial[n]
        return self._done[name]

    def _rule_body(self, r: Rule) -> set:
        t = self.run(local_nots(r.body, ()))
        missing = [v.name for v in r.params if v.name not in t.vars]
        if missing:
            raise UnboundVariableError(r, missing, "bottom-up evaluation needs every head "
                                       "variable bound by the rule body")
        return t.project([v.name for v in r.params]).rows


def find_rows(ev: Evaluator, query: Query, table: Table) -> list[tuple]:
    """The ``:find`` rows (decoded, aggregated, pulled) from the ``:where`` table."""
    elems = query.find.elements
    vars_ = [e.var.name for e in elems] + [w.name for w in query.with_vars]
    cols = list(dict.fromkeys(vars_))
    proj = table.project(cols)
    decoded = [tuple(ev.store.interner.decode_one(x) for x in r) for r in proj.rows]
    pos = {v: cols.index(v) for v in cols}
    if any(isinstance(e, FindAggregate) for e in elems):
        groups: dict[tuple, list[tuple]] = defaultdict(list)
        keys = [i for i, e in enumerate(elems) if not isinstance(e, FindAggregate)]
        for r in decoded:
            groups[tuple(r[pos[elems[i].var.name]] for i in keys)].append(r)
        out = []
        for g, rs in groups.items():
            row, gi = [], iter(g)
            for e in elems:
                if isinstance(e, FindAggregate):
                    n = e.args[0].value if len(e.args) == 2 else None
                    row.append(aggregate(e.fn, n, [r[pos[e.var.name]] for r in rs]))
                else:
                    row.append(next(gi))
            out.append(tuple(row))
        rows = out
    else:
        rows = list({tuple(r[pos[e.var.name]] for e in elems) for r in decoded})
    if any(isinstance(e, FindPull) for e in elems):
        rows = [tuple(pull(ev.store, x, e.pattern, ev.kind) if isinstance(e, FindPull) else x
                      for e, x in zip(elems, r)) for r in rows]
    return rows


def oracle_q(db: Any, query: Any, *inputs: Any) -> Any:
    """``query`` answered by the oracle, shaped like ``Database.q``."""
    return answer(db.store, "prev", query, inputs)


def answer(store: Any, kind: str, query: Any, inputs: Any, implicit_db: bool = True) -> Any:
    """``query`` over the ``kind`` version of ``store``, shaped like ``Database.q``."""
    from queries.results import shape as _shape
    q = query if isinstance(query, Query) else parse_query(query)
    given = Inputs(q, tuple(inputs), implicit_db)
    ev = Evaluator(store, kind, q, given.rules, given.sources)
    table = bind_inputs(ev, given)
    where = local_nots(q.where, table.vars)
    return _shape(q, find_rows(ev, q, ev.run(where, table)))
