"""Evaluate a parsed query over the datom store, once or as a maintained view.

A query's intermediate results are *tables*: variable names plus a set of rows of interned
ids. ``Evaluator`` runs the ``:where`` clauses over one view of the store (``prev``, the
committed state, or ``curr``, the state with a staged transaction):

* all data patterns of a clause list, together with the table of what is already bound
  (inputs, outer clauses) as one more atom, are one multi-way generic join; predicates whose
  variables the join binds run inside it as filters at the first level that binds them;
* function expressions extend rows, remaining predicates filter them (on decoded values);
* ``not``/``not-join`` subtract, ``or``/``or-join`` unite their branches;
* rules are computed bottom-up, strongly connected component by component, semi-naively
  (each round joins one recursive call with the last round's new facts), so left-recursive
  and non-linear rules terminate; negation through recursion is rejected.

Then ``:find`` projects the bag of ``:find`` + ``:with`` variables and aggregates per group.

``JoinPlan`` is the incremental form for a purely conjunctive query (patterns and
predicates, scalar inputs, plain variables in ``:find``): an ``IncrementalGenericJoin`` over
the attribute relations whose change per transaction costs work proportional to the change
(the telescoping rule), with a count per output row to keep set semantics.

Relies on ``wcoj`` (joins), ``indexes.eav`` and the ``queries`` parser; used by
``queries.database``.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from indexes.eav import EavStore
from indexes.index import Relation
from queries.ast import (
    And, BindColl, BindRel, BindTuple, Blank, Const, FindAggregate, FindPull, FindVar, FnCall,
    Not, NotJoin, Or, OrJoin, Pattern, Predicate, Query, Rule, RuleCall, RulesVar, SrcVar, Var,
    bound_vars, free_vars,
)
from queries.clauses import _bind, _branch, _take_ready, _truthy, check_stratified
from queries.functions import DB_FUNCTIONS, FUNCTIONS, aggregate, call
from queries.parse import _calls
from queries.pull import pull
from wcoj.errors import QueryError, UnboundVariableError, UnknownAttributeError
from wcoj.generic_join import IncrementalGenericJoin, choose_order
from wcoj.zset import ZSet

__all__ = ["Table", "Evaluator", "JoinPlan", "bind_inputs", "find_rows"]

_fresh = itertools.count()


class Table:
    """Variables (names) and a set of rows of ids."""

    __slots__ = ("vars", "rows")

    def __init__(self, vars_: Iterable[str], rows: Iterable[tuple]):
        self.vars = tuple(vars_)
        self.rows = rows if isinstance(rows, set) else set(rows)

    def __repr__(self) -> str:
        return f"Table({self.vars}, {len(self.rows)} rows)"

    def project(self, vars_: Iterable[str]) -> Table:
        vars_ = tuple(vars_)
        idx = [self.vars.index(v) for v in vars_]
        return Table(vars_, {tuple(r[i] for i in idx) for r in self.rows})

    def join(self, other: Table) -> Table:
        """Natural (hash) join."""
        shared = [v for v in self.vars if v in other.vars]
        extra = [v for v in other.vars if v not in self.vars]
        li = [self.vars.index(v) for v in shared]
        ri = [other.vars.index(v) for v in shared]
        ei = [other.vars.index(v) for v in extra]
        index: dict[tuple, list[tuple]] = defaultdict(list)
        for r in other.rows:
            index[tuple(r[i] for i in ri)].append(tuple(r[i] for i in ei))
        rows = {r + e for r in self.rows for e in index.get(tuple(r[i] for i in li), ())}
        return Table(self.vars + tuple(extra), rows)


UNIT = Table((), {()})


def _ref_vars(clauses: Iterable[Any], store: EavStore) -> set[str]:
    """Variables in entity positions or values of ref attributes: ints bound to them are
    entity ids, not longs."""
    out: set[str] = set()
    for c in clauses:
        if isinstance(c, Pattern):
            t = c.terms
            if isinstance(t[0], Var):
                out.add(t[0].name)
            if (len(t) > 2 and isinstance(t[2], Var) and isinstance(t[1], Const)
                    and store.has_attribute(t[1].value)
                    and store.attribute(t[1].value).value_type == "ref"):
                out.add(t[2].name)
        elif isinstance(c, (Not, NotJoin, Or, OrJoin, And)):
            out |= _ref_vars(c.clauses, store)
    return out


class Evaluator:
    """Evaluates clauses over one view (``kind``) of ``store``."""

    def __init__(self, store: EavStore, kind: str = "prev", rules: Iterable[Rule] = (),
                 ref_vars: set[str] = frozenset()):
        self.store, self.kind = store, kind
        self.rules: dict[str, list[Rule]] = defaultdict(list)
        for r in rules:
            self.rules[r.name].append(r)
        self.ref_vars = set(ref_vars)
        for rs in self.rules.values():
            for r in rs:
                self.ref_vars |= _ref_vars(r.body, store)
        self._done: dict[str, set] = {}
        self._partial: dict[str, set] = {}
        self._override: dict[int, set] = {}

    # ------------------------------------------------------------------ values
    def encode(self, var: str | None, value: Any) -> int:
        """The id of a value bound to ``var`` (ints on ref variables are entity ids)."""
        if var in self.ref_vars:
            if type(value) is int:
                return self.store.interner.ref(value)
            if isinstance(value, (list, tuple)) and len(value) == 2:
                return self.lookup_ref(value)
        return self.store.interner.encode(value)

    def lookup_ref(self, ref: Any) -> int:
        """``[attr value]`` -> the entity id, or -1 (matches nothing) when absent."""
        attr, value = ref
        ids = self.store.entity_ids(str(attr), self._value_id(str(attr), value), self.kind)
        return int(ids[0]) if len(ids) else -1

    def _value_id(self, attr: str, value: Any) -> int:
        schema = self.store.attribute(attr)
        if schema.value_type == "ref":
            if type(value) is int:
                return self.store.interner.ref(value)
            if isinstance(value, (list, tuple)):
                return self.lookup_ref(value)
        return self.store.interner.encode(value)

    def decode(self, ids: Any) -> list:
        return self.store.interner.decode(np.asarray(list(ids), dtype=np.int64)).tolist()

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
            else:
                out.append(None)
        return out

    def _apply(self, fn: str, args: tuple, vars_: tuple, row: tuple) -> Any:
        values = self._args(args, vars_, row)
        if fn in DB_FUNCTIONS:
            return self._db_fn(fn, values)
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

    # ------------------------------------------------------------------ patterns
    def atoms(self, patterns: list[Pattern], consts: dict[str, int] | None = None):
        """Pattern -> (source, terms) atoms, equality filters, and whether any can match.

        ``consts`` substitutes ids for variables (scalar inputs). Blanks become fresh
        variables; a variable repeated inside one pattern becomes a fresh one plus an
        equality filter; a pattern without variables is checked right here.
        """
        consts = consts or {}
        out, filters, ok = [], [], True
        for p in patterns:
            t = list(p.terms) + [Blank()] * (3 - len(p.terms))
            e, a, v = t[:3]
            tx = t[3] if len(t) > 3 else None
            # a history database's datoms have a fifth column, the operation (?added)
            history = getattr(self.store, "history", False)
            added = t[4] if len(t) > 4 else None
            if added is not None and not history:
                raise QueryError(f"pattern {p} binds ?added (its fifth term), which only a "
                                 f"history database has; query db.history()")
            op = [(added or Blank(), None)] if history else []
            if isinstance(a, Const):
                attr = str(a.value)
                if not self.store.has_attribute(attr):
                    raise UnknownAttributeError(attr, self.store.attributes)
                if tx is None:
                    src, cols = self.store.relation(attr), [(e, "e"), (v, attr)]
                else:
                    src = self.store.datoms
                    cols = [(e, "e"), (Const(self.store.aid(attr)), "id"), (v, attr), (tx, "e")] + op
            else:
                src = self.store.datoms
                cols = [(e, "e"), (a, "a"), (v, None), (tx or Blank(), "e")] + op
            terms, seen = [], set()
            for term, role in cols:
                if isinstance(term, Var) and term.name in consts:
                    terms.append(consts[term.name])
                elif isinstance(term, Var):
                    name = term.name
                    if name in seen:
                        fresh = f"_eq{next(_fresh)}"
                        filters.append(((name, fresh), np.equal))
                        name = fresh
                    seen.add(name)
                    terms.append(name)
                elif isinstance(term, Blank):
                    terms.append(f"_{next(_fresh)}")
                else:
                    terms.append(self._const(term.value, role))
            if not any(isinstance(x, str) for x in terms):
                view = src.view(self.kind, tuple(range(len(terms))))
                ok = ok and bool(view.weight(np.array([terms], dtype=np.int64))[0] > 0)
                continue
            out.append((src, tuple(terms)))
        return out, filters, ok

    def _const(self, value: Any, role: str | None) -> int:
        if role == "id":
            return int(value)
        if role == "e":
            if isinstance(value, (list, tuple)):
                return self.lookup_ref(value)
            if type(value) is not int:
                raise QueryError(f"entity position needs an entity id or lookup ref, "
                                 f"found {value!r}")
            return self.store.interner.ref(value)
        if role == "a":
            if not self.store.has_attribute(str(value)):
                raise UnknownAttributeError(str(value), self.store.attributes)
            return self.store.aid(str(value))
        if role is None:
            return self.store.interner.encode(value)
        return self._value_id(role, value)

    def predicate_filter(self, c: Predicate, consts: dict[str, Any] | None = None):
        """A ``generic_join`` filter ``(variables, fn)`` for a predicate on decoded values."""
        consts = consts or {}
        vars_ = sorted({a.name for a in c.args if isinstance(a, Var) and a.name not in consts})
        decode = self.store.interner.decode

        def fn(*cols):
            env = {v: decode(col) for v, col in zip(vars_, cols)}
            n = len(cols[0]) if cols else 1
            args = [env[a.name] if isinstance(a, Var) and a.name in env else
                    [consts[a.name]] * n if isinstance(a, Var) else [a.value] * n
                    for a in c.args]
            return np.fromiter((_truthy(call(c.fn, list(xs))) for xs in zip(*args)),
                               dtype=bool, count=n)
        return (tuple(vars_), fn)

    def _join(self, patterns: list[Pattern], preds: list[Predicate], table: Table) -> Table:
        if not table.rows:
            names = {v.name for p in patterns for v in free_vars(p)}
            return Table(table.vars + tuple(sorted(names - set(table.vars))), set())
        atoms, filters, ok = self.atoms(patterns)
        pvars = sorted({t for _, terms in atoms for t in terms
                        if isinstance(t, str) and not t.startswith("_")})
        out_vars = tuple(table.vars) + tuple(v for v in pvars if v not in table.vars)
        if not ok:
            return Table(out_vars, set())
        if table.vars:
            rel = Relation("bindings", len(table.vars))
            rel.load(ZSet.from_rows(table.rows, arity=len(table.vars)))
            atoms.append((rel, table.vars))
        if not atoms:
            return table
        filters += [self.predicate_filter(c) for c in preds]
        join = IncrementalGenericJoin(atoms, out_vars, filters=filters,
                                      batch_order=self._order(atoms))
        z = join.batch(self.kind)
        return Table(out_vars, {tuple(r) for r in z.keys[z.weights > 0].tolist()})

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
        scc = self._component(name)
        for dep in sorted(self._deps(scc) - scc):
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
        t = self.run(r.body)
        missing = [v.name for v in r.params if v.name not in t.vars]
        if missing:
            raise UnboundVariableError(r, missing, "bottom-up evaluation needs every head "
                                       "variable bound by the rule body")
        return t.project([v.name for v in r.params]).rows

    def _deps(self, names: set[str]) -> set[str]:
        return {c.name for n in names for r in self.rules[n] for c in _calls(r.body)}

    def _component(self, name: str) -> set[str]:
        def reach(start: str) -> set[str]:
            seen, todo = set(), [start]
            while todo:
                for d in self._deps({todo.pop()}):
                    if d not in seen:
                        seen.add(d)
                        todo.append(d)
            return seen
        mine = reach(name)
        return {name} | {n for n in mine if name in reach(n)}


# ---------------------------------------------------------------------------- inputs and find

def bind_inputs(ev: Evaluator, query: Query, inputs: tuple) -> tuple[Table, list[Rule]]:
    """Match ``inputs`` to ``:in``: a table of bound variables and the rules."""
    from queries.parse import parse_rules
    declared = list(query.inputs)
    values = list(inputs)
    if declared and isinstance(declared[0], SrcVar) and len(values) == len(declared) - 1:
        values = [None] + values  # the database itself is implicit for the first $
    if len(values) != len(declared):
        raise QueryError(f"the query declares {len(declared)} inputs (:in "
                         f"{' '.join(map(str, declared))}), got {len(values)}")
    table, rules = UNIT, []
    for d, v in zip(declared, values):
        if isinstance(d, SrcVar):
            continue
        if isinstance(d, RulesVar):
            rules = list(parse_rules(v) if not isinstance(v, (list, tuple)) or not v
                         or not isinstance(v[0], Rule) else v)
            continue
        alts = _bind(d, _input_value(d, v))
        names = sorted({k for a in alts for k in a}) or sorted(x.name for x in free_vars(d))
        rows = set()
        for a in alts:
            rows.add(tuple(ev.encode(k, a[k]) for k in names))
        table = table.join(Table(names, rows))
    return table, rules


def _input_value(d: Any, v: Any) -> Any:
    if isinstance(v, str) and isinstance(d, (BindColl, BindRel, BindTuple)) and v.strip()[:1] \
            in "[(#":
        from queries.edn import loads
        return loads(v)
    if isinstance(v, str) and len(v) > 1 and v[0] == ":":
        from queries.edn import Keyword
        return Keyword(v)
    return v


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


class JoinPlan:
    """The incremental form of a conjunctive query: one ``IncrementalGenericJoin``.

    ``eligible`` says whether ``query`` is conjunctive enough: data patterns with at least
    one variable each, predicates on pattern variables, scalar inputs only, plain variables
    in ``:find`` (no aggregates, no pull).
    """

    def __init__(self, ev: Evaluator, query: Query, consts: dict[str, int]):
        patterns = [c for c in query.where if isinstance(c, Pattern)]
        preds = [c for c in query.where if isinstance(c, Predicate)]
        atoms, filters, ok = ev.atoms(patterns, consts)
        if not ok or not atoms:
            raise QueryError("not a plain conjunctive query")
        decoded = {k: ev.store.interner.decode_one(v) for k, v in consts.items()}
        filters += [ev.predicate_filter(c, decoded) for c in preds]
        self.output = [e.var.name for e in query.find.elements]
        self.join = IncrementalGenericJoin(atoms, self.output, filters=filters)
        self.sources = {src for src, _ in atoms}

    @staticmethod
    def eligible(query: Query, table: Table) -> bool:
        if len(table.rows) != 1:
            return False
        if any(not isinstance(c, (Pattern, Predicate)) for c in query.where):
            return False
        if any(not ({v.name for v in free_vars(c)} - set(table.vars))
               for c in query.where if isinstance(c, Pattern)):
            return False
        if any(c.fn not in FUNCTIONS for c in query.where if isinstance(c, Predicate)):
            return False
        if not all(isinstance(e, FindVar) for e in query.find.elements) or query.with_vars:
            return False
        pattern_vars = {v.name for c in query.where if isinstance(c, Pattern)
                        for v in free_vars(c)} - set(table.vars)
        return all(e.var.name in pattern_vars for e in query.find.elements)
