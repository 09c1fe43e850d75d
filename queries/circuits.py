"""Datalog -> DBSP circuits: how every query runs (``q`` is the first tick, a view keeps it).

``compile_view`` turns a parsed query (with its rules and inputs) into a ``wcoj.circuit``
circuit whose sources are the per-relation datom deltas of a transaction (Z-sets of
``(e, v)`` id pairs, and ``(e, a, v, tx)`` rows for attribute-variable patterns) and whose
sink is the change of the set of ``:find`` (+ ``:with``) rows. Every intermediate stream
carries rows of interned ids, one column per variable (``Rel``). Before wiring, clauses are
rewritten (``queries.rewrite``): database functions and lookup-ref constants become
patterns, ``not`` and ``or-join``; a ``not``'s variables bound only inside it are local.
The pieces:

* the data patterns of a clause list (with the predicates they bind) are one *core join*:
  an ``IncrementalGenericJoin`` over the store's relations wrapped as an operator
  (``queries.circuit_ops.CoreJoin``): the whole batch at the first tick, the telescoping
  delta after, reading the ``prev``/``delta``/``curr`` views of the transaction that
  staged the deltas; clause lists that repeat the same patterns and predicates (up to
  variable names) share one core join;
* predicates and function expressions are linear row maps on decoded values (``RowMap``);
* a join of two streams is the bilinear incremental join (``incremental_join``);
* ``not`` is ``L - distinct(π_L(body evaluated from L))`` with ``L = distinct(left)``;
  ``not-join`` the same through a join on its variables; ``or``/``or-join`` a union of
  branches under ``distinct``;
* a recursive rule component is a child circuit: one ``z^-1`` feedback per rule, each
  rule's bodies summed and kept a set by ``distinct_nested`` (``distinct_trace``), the joins
  in the bodies nested (``join_lattice``); the child runs to a fixed point every
  transaction (at most ``config.RECURSION_LIMIT`` iterations, else ``NoFixedPointError``)
  and exports the change, so a retraction removes exactly the facts that lost every
  derivation. Non-recursive rules are unions at the root;
* a clause list that binds no variable carries one constant column (``UNIT_VAR``);
* a collection of tuples given as a source (``:in $ $2``) is one more relation of the join;
* the sink's rows feed the aggregates of ``:find`` (``queries.aggregates``); pull is applied
  to the rows when they are read (``queries.results``).

Relies on ``wcoj`` (circuit, operators, generic join), ``queries.bind`` and
``queries.rewrite``; used by ``queries.database`` and ``queries.plan``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from queries import magic, vectorised
from queries.ast import (
    BindScalar, Blank, Const, FindAggregate, FnCall, Not, NotJoin, Or,
    OrJoin, Pattern, Predicate, Query, Rule, RuleCall, Var, bound_vars, free_vars, required_vars,
)
from queries.bind import Binder, Table
from queries.circuit_ops import CoreJoin, RowMap
from queries.clauses import (
    _bind, _branch, _take_ready, _truthy, arg_getter, check_stratified, local_nots, rule_component,
    rule_deps,
)
from queries.functions import DB_FUNCTIONS, FUNCTIONS, call
from queries.refresh import Refresh, stopwatch
from queries.rewrite import call_arguments, rewrite
from queries.fulltext import FullText
from queries.subquery import Subquery
from queries.txlog import LOG_FUNCTIONS, log_value
from wcoj.circuit import Circuit, Stream
from wcoj.config import RECURSION_LIMIT
from wcoj.errors import CircuitError, NoFixedPointError, QueryError, UnboundVariableError
from wcoj.generic_join import IncrementalGenericJoin, choose_order
from wcoj.operators import distinct_nested, fold_map, incremental_join
from wcoj.rows import Columns
from wcoj.zset import ZSet

__all__ = ["CompiledView", "compile_view"]


class Rel:
    """A stream of rows of ids with one column per variable name."""

    __slots__ = ("stream", "vars")

    def __init__(self, stream: Stream, vars_: Iterable[str]):
        self.stream, self.vars = stream, tuple(vars_)
        if not self.vars:  # a stream of rows binding nothing carries one column, UNIT_VAR
            raise QueryError("internal: a stream without columns")

    def __repr__(self) -> str:
        return f"Rel({' '.join(self.vars)})"

    def renamed(self, vars_: Iterable[str]) -> Rel:
        return Rel(self.stream, vars_)


# ---------------------------------------------------------------------------- compiler

class CompiledView:
    """A view's circuit and how to feed it; ``notes`` describe the operators for explain."""

    def __init__(self, ev: Binder, query: Query, table: Table, rules: list[Rule]):
        self.ev, self.store, self.query = ev, ev.store, query
        self.given_rules = list(rules)  # what a nested q's % passes on
        self.volatile = False  # a nested q reads the whole database: refresh every transaction
        self.reads_log = False  # tx-ids/tx-data (queries.txlog): q only
        self._per_tick: list = []  # nested q, fulltext: answers kept for one tick
        # demand: bound arguments of rule calls restrict the rules (queries.magic)
        query = dataclasses.replace(query, where=call_arguments(query.where, self.store))
        ev.retype(query.where)
        query, rules, seeds = magic.demand(query, rules, table.vars)
        self._query_scoped = {id(r) for r in seeds}  # rule bodies that are the query's clauses
        self.rules: dict[str, list[Rule]] = {}
        for r in rules:
            self.rules.setdefault(r.name, []).append(r)
        self.root = Circuit()
        self.initial, self.over = False, "prev"
        self.refresh = Refresh()
        self.stale = False  # a refresh kept no state: the next step rebuilds it first
        self.notes: list[str] = []
        self.relations: dict[str, Any] = {}     # source name -> Relation
        self._sources: dict[int, Stream] = {}   # id(Relation) -> source stream
        self._imports: dict[tuple[int, int], Stream] = {}
        self._rule_rels: dict[str, Rel] = {}
        self._table = table
        self._unit: Rel | None = None
        self._recursive: set[str] = set()
        self._sets: set[int] = set()  # ids of core join streams whose rows are a set
        self._cores: dict[tuple, Rel] = {}  # core joins by their clauses' canonical text
        consts: dict[str, int] = {}
        start = None
        if table.vars:
            if len(table.rows) == 1:
                consts = dict(zip(table.vars, next(iter(table.rows))))
            src = self.root.source(len(table.vars), name="inputs")
            start = Rel(src, table.vars)
        self.consts = consts
        self._start = start  # the :in rows, which the demand's seeds read too
        clauses = local_nots(rewrite(query.where, self.store, ev.dbs), list(table.vars))
        where = self.conj(clauses, start, self.root, {})
        if where is None:
            raise QueryError(f"{query.edn()} has no :where and binds nothing from :in")
        elems = query.find.elements
        self.aggregated = any(isinstance(e, FindAggregate) for e in elems)
        cols = [e.var.name for e in elems]
        if self.aggregated:
            cols = list(dict.fromkeys(cols + [w.name for w in query.with_vars]))
            self.notes.append("aggregate: incremental per-group state (touched groups only)")
        missing = [v for v in cols if v not in where.vars]
        if missing:
            raise UnboundVariableError(query.find, missing, "the :where clauses do not bind them")
        out = self.project(where, cols)
        if not (id(where.stream) in self._sets and set(cols) == set(where.vars)):
            out = self.distinct(out)  # (a join of sets keeping every variable is a set)
        self.root.sink(out.stream, "out")
        self.cols = cols

    # ------------------------------------------------------------------ feeding
    def start(self, over: str = "prev", keep: bool = True) -> ZSet:
        """Run the first tick over the committed state (``over="curr"``: the state with the
        transaction's staged changes); the view's initial rows (``keep=False``: the
        circuit keeps no state, ``Circuit.step``)."""
        self.initial, self.over = True, over
        elapsed = stopwatch()
        try:
            z = self._step(self._first_inputs(), keep)
            self.refresh.first_tick(elapsed(), self._rows_read(over))
            return z
        finally:
            self.initial, self.over = False, "prev"

    def _first_inputs(self) -> dict:
        given = {"inputs": ZSet.from_rows(self._table.rows, arity=len(self._table.vars))} \
            if self._table.vars else {}
        if self._unit is not None:
            given["unit"] = ZSet.from_rows([(0,)], arity=1)
        return given

    def _rebuild(self) -> None:
        """The state a refresh did not keep: the first tick again over the committed state,
        as at registration, before a step takes the transaction's changes."""
        self.root._state, self.root.time = None, 0
        self.initial = True
        try:
            self._step(self._first_inputs())
        finally:
            self.initial = False
        self.stale = False

    def first_tick(self, over: str = "prev") -> ZSet:
        """The rows over the committed state (``over="curr"``: with the staged changes),
        leaving the circuit as it was before (so a cached circuit answers ``q`` again, and
        holds no state between answers)."""
        try:
            return self.start(over, keep=False)
        finally:
            self.root._state, self.root.time = None, 0

    def reads(self) -> set[str]:
        return set(self.relations)

    def step(self) -> tuple[ZSet, Any, bool] | None:
        """Step with the store's staged deltas: ``(change, undo, False)``, or None if
        untouched.

        When the transaction changes a large share of the rows the view reads (``Refresh``),
        the circuit starts over instead: its first tick over the new state, the route
        ``q`` takes, keeping no state (what a run of large transactions would only rebuild
        and drop); the result is then ``(whole new answer, undo, True)``. The next step
        rebuilds the state first, over the committed state."""
        given = {name: rel.delta for name, rel in self.relations.items()
                 if not rel.delta_is_empty()}
        if not given and not (self.volatile and self.store.changed):
            return None
        undo = (self.root._state, self.root.time, self.stale)  # states are immutable values
        changed = sum(len(z) for z in given.values())
        read = self._rows_read("prev")
        try:
            if not self.volatile and not self.refresh.wanted(changed, read):
                elapsed = stopwatch()  # a step after a refresh pays for rebuilding the state
                if self.stale:
                    self._rebuild()
                z = self._step(given)
                self.refresh.stepped(elapsed(), changed, read)
                return z, undo, False
            self.root._state, self.root.time = None, 0
            z = self.start("curr", keep=False)
            self.stale = True
            return z, undo, True
        except BaseException:
            self.undo(undo)
            raise

    def _rows_read(self, over: str) -> int:
        """Rows of the relations the view reads (``curr``: with the staged changes)."""
        n = sum(len(rel) for rel in self.relations.values())
        if over == "curr":
            n += sum(int(rel.delta.weights.sum()) for rel in self.relations.values())
        return n

    def _step(self, given: dict, keep: bool = True) -> ZSet:
        for sub in self._per_tick:
            sub.clear()
        try:
            return self.root.step(given, keep=keep)["out"]
        except CircuitError as e:
            if "no fixed point" not in str(e):
                raise
            rules = sorted({n for n in self._recursive})
            raise NoFixedPointError(
                f"the recursive rules {', '.join(rules)} kept deriving new facts for "
                f"{RECURSION_LIMIT:,} iterations without reaching a fixed point (a function "
                f"such as inc in a recursive rule can derive values for ever); nothing "
                f"changed") from None

    def undo(self, undo: Any) -> None:
        """Forget a step whose transaction failed (every node state is a persistent value)."""
        self.root._state, self.root.time, self.stale = undo

    # ------------------------------------------------------------------ streams
    def _source(self, rel: Any) -> Stream:
        s = self._sources.get(id(rel))
        if s is None:
            name = f"rel{len(self._sources)}:{rel.name}"
            s = self.root.source(rel.arity, name=name)
            self._sources[id(rel)] = s
            self.relations[name] = rel
        return s

    def bring(self, rel: Rel, c: Circuit) -> Rel:
        """``rel`` as a stream of circuit ``c`` (imported with δ0 into a child)."""
        s = rel.stream
        if s.circuit is c:
            return rel
        if c.parent is not s.circuit:
            raise QueryError("internal: a stream nested two levels deep")
        key = (id(c), s.node_id)
        if key not in self._imports:
            self._imports[key] = c.import_(s)
        return Rel(self._imports[key], rel.vars)

    def project(self, rel: Rel, vars_: Iterable[str]) -> Rel:
        vars_ = tuple(vars_) or (UNIT_VAR,)
        if vars_ == rel.vars:
            return rel
        if vars_ == (UNIT_VAR,):
            return Rel(rel.stream.map(lambda k: np.zeros((len(k), 1), dtype=np.int64),
                                      arity=1), vars_)
        try:
            idx = [rel.vars.index(v) for v in vars_]
        except ValueError as e:
            raise QueryError(f"a branch does not bind {' '.join(vars_)}") from e
        return Rel(rel.stream.map(Columns(idx), arity=len(idx)), vars_)  # (a compiled epoch reads Columns)

    def distinct(self, rel: Rel) -> Rel:
        return Rel(distinct_nested(rel.stream), rel.vars)

    def join(self, a: Rel, b: Rel) -> Rel:
        """The natural join of two streams of the same circuit (bilinear, incremental)."""
        shared = [v for v in a.vars if v in b.vars]
        extra = [v for v in b.vars if v not in a.vars]
        nk, na = len(shared), len(a.vars)
        cols = list(range(nk, nk + na)) + [nk + na + b.vars.index(v) for v in extra]
        ia = a.stream.index_with([a.vars.index(v) for v in shared])
        ib = b.stream.index_with([b.vars.index(v) for v in shared])
        out = incremental_join(ia, ib, fn=Columns(cols), arity=len(cols))
        return Rel(out, a.vars + tuple(extra))

    def unit(self) -> Rel:
        """The relation of one row that binds nothing (its first tick holds the row)."""
        if self._unit is None:
            self._unit = Rel(self.root.source(1, name="unit"), (UNIT_VAR,))
        return self._unit

    def row_map(self, rel: Rel, fn: Callable, vars_: Iterable[str], vector: Callable | None = None) -> Rel:
        vars_ = tuple(vars_)
        op = RowMap(fn, len(vars_), self.store.interner.decode, vector)
        return Rel(rel.stream.circuit.add(op, rel.stream), vars_)

    # ------------------------------------------------------------------ clauses
    def conj(self, clauses: Iterable[Any], start: Rel | None, c: Circuit,
             env: dict[str, Rel]) -> Rel | None:
        """Wire the conjunction ``clauses`` from the rows of ``start`` inside ``c``."""
        clauses = list(clauses)
        patterns = [x for x in clauses if isinstance(x, Pattern)]
        rest = [x for x in clauses if not isinstance(x, Pattern)]
        cur = start
        if patterns:
            pvars = {v.name for p in patterns for v in free_vars(p)}
            known = pvars | set(self.consts)
            pushed = [x for x in rest if isinstance(x, Predicate) and x.fn in FUNCTIONS
                      and {v.name for v in free_vars(x)} <= known]
            rest = [x for x in rest if x not in pushed]
            core = self.bring(self.core(patterns, pushed), c)
            cur = core if cur is None else self.join(cur, core)
        while rest:
            if cur is None:  # start from a clause that binds something, if one is ready
                first = next((x for x in rest if isinstance(x, (RuleCall, Or, OrJoin))
                              and bound_vars(x) and not required_vars(x)), None)
                if first is not None:
                    rest.remove(first)
                    cur = self.clause(first, None, c, env)
                    continue
                cur = self.bring(self.unit(), c)
            cur = self.clause(_take_ready(rest, cur.vars), cur, c, env)
        return cur

    def core(self, patterns: list[Pattern], preds: list[Predicate]) -> Rel:
        """The patterns (and predicates on their variables) as one root ``CoreJoin``, one
        per distinct clause list up to variable names (a rule's bodies often repeat one)."""
        clauses = tuple(patterns) + tuple(preds)
        key, names = magic.canonical(clauses, {c: c for c in self.consts})  # inputs keep their names
        if key not in self._cores:
            canon = magic.renamed(clauses, names)
            self._cores[key] = self._core(list(canon[:len(patterns)]), list(canon[len(patterns):]))
            self.notes.append(f"core join {' '.join(map(str, patterns))}" + (f" filtered by "
                              f"{' '.join(map(str, preds))}" if preds else "") + " (generic join, telescoping delta rule)")
        back = {c: v for v, c in names.items()}
        return self._cores[key].renamed(back.get(v, v) for v in self._cores[key].vars)

    def _core(self, patterns: list[Pattern], preds: list[Predicate]) -> Rel:
        atoms, filters = self.ev.atoms(patterns, self.consts)
        decoded = {k: self.store.interner.decode_one(v) if v >= 0 else None  # -1: a value no datom holds
                   for k, v in self.consts.items()}
        out = sorted({t for _, terms in atoms for t in terms
                      if isinstance(t, str) and not t.startswith("_")})
        # patterns whose every variable is a blank or an input (``[_ :a ?in]``): the join
        # keeps one blank, and the rows bind nothing (``UNIT_VAR``, below)
        hidden = [] if out else [next(t for _, terms in atoms for t in terms if isinstance(t, str))]
        for x in preds:
            if any(v.name not in self.consts for v in free_vars(x)):
                filters.append(self.ev.predicate_filter(x, decoded))
            elif not _truthy(call(x.fn, [decoded[a.name] if isinstance(a, Var) else a.value for a in x.args],
                                  self.ev.registry)):  # on constants and inputs only: false for every row
                filters.append((tuple(out or hidden)[:1], lambda col: np.zeros(len(col), dtype=bool)))
        # the first tick's order: an atom holding a constant counts as small, so a bound
        # value leads (the deltas' orders are the join's own)
        sizes = [1.0 if any(not isinstance(t, str) for t in terms) else float(len(src))
                 for src, terms in atoms]
        order = choose_order([[t for t in terms if isinstance(t, str)] for _, terms in atoms], sizes=sizes)
        join = IncrementalGenericJoin(atoms, out or hidden, filters=filters, batch_order=order)
        inputs = [self._source(src) for src, _ in atoms]
        stream = self.root.add(CoreJoin(join, self), *dict.fromkeys(inputs))
        if not any(isinstance(t, str) and t.startswith("_") and not t.startswith("_eq")
                   for _, terms in atoms for t in terms):
            self._sets.add(id(stream))  # no blank summed away: a join of sets is a set
        return Rel(stream, out) if out else self.project(Rel(stream, hidden), ())

    def clause(self, x: Any, cur: Rel | None, c: Circuit, env: dict[str, Rel]) -> Rel:
        if isinstance(x, (Predicate, FnCall)) and x.fn in DB_FUNCTIONS:
            raise QueryError(f"internal: database function {x.fn} was not rewritten")
        if isinstance(x, Predicate):
            return self.row_map(cur, self._filter(x, cur.vars), cur.vars,
                                vectorised.predicate(x.fn, x.args, cur.vars))
        if isinstance(x, FnCall):
            new = sorted(v.name for v in free_vars(x.binding) if v.name not in cur.vars)
            value = None
            if x.fn in LOG_FUNCTIONS:
                value = log_value(x, self.ev.sources, cur.vars, self.store)
                self.reads_log = True
                self.notes.append(f"the log's {x.fn}: {x}")
            elif x.fn in _READS_DATABASE:  # answers kept for one tick; a view refreshes
                kind, what = _READS_DATABASE[x.fn]
                value = kind(self, x, cur.vars)
                self._per_tick.append(value)
                self.volatile = True
                self.notes.append(f"{what}: {x} (a view re-runs its first tick every transaction)")
            return self.row_map(cur, self._fn(x, cur.vars, new, value), cur.vars + tuple(new),
                                None if value is not None else self._vector_fn(x, cur.vars))
        if isinstance(x, Not):
            left = self.distinct(cur)
            sub = self.conj(x.clauses, left, c, env)
            self.notes.append(f"difference for {x}")
            return Rel(left.stream.minus(self.distinct(self.project(sub, left.vars)).stream),
                       left.vars)
        if isinstance(x, NotJoin):
            jv = [v.name for v in x.vars]
            left = self.distinct(cur)
            keys = self.distinct(self.project(left, jv))
            sub = self.distinct(self.project(self.conj(x.clauses, keys, c, env), jv))
            self.notes.append(f"difference for {x}")
            matched = self.project(self.join(left, sub), left.vars)
            return Rel(left.stream.minus(matched.stream), left.vars)
        if isinstance(x, Or):
            have = cur.vars if cur is not None else ()
            out = have + tuple(sorted(v.name for v in bound_vars(x) if v.name not in have))
            left = self.distinct(cur) if cur is not None else None
            self.notes.append(f"union + distinct for {x}")
            return self.distinct(self._union(
                [self.project(self.conj(_branch(b), left, c, env), out) for b in x.clauses]))
        if isinstance(x, OrJoin):
            jv = [v.name for v in x.required + x.vars]
            have = cur.vars if cur is not None else ()
            inner = tuple(v for v in jv if v in have)
            out = inner + tuple(sorted(v.name for v in bound_vars(x) if v.name not in inner))
            keys = self.distinct(self.project(cur, inner)) if inner else None
            self.notes.append(f"union + distinct for {x}")
            union = self.distinct(self._union(
                [self.project(self.conj(_branch(b), keys, c, env), out) for b in x.clauses]))
            return union if cur is None else self.join(cur, union)
        if isinstance(x, RuleCall):
            call_rel = self._rule_call(x, c, env)
            return call_rel if cur is None else self.join(cur, call_rel)
        raise QueryError(f"cannot compile clause {x}")

    def _union(self, rels: list[Rel]) -> Rel:
        s = rels[0].stream
        for r in rels[1:]:
            s = s.plus(r.stream)
        return Rel(s, rels[0].vars)

    def _filter(self, x: Predicate, vars_: tuple) -> Callable:
        args = [arg_getter(a, vars_) for a in x.args]
        registry = self.ev.registry

        def fn(ids: list, vals: list) -> list:
            return [ids] if _truthy(call(x.fn, [g(vals) for g in args], registry)) else []
        return fn

    def _vector_fn(self, x: FnCall, vars_: tuple) -> Callable | None:
        """``_fn``'s column form (``queries.vectorised``), for a long bound to one plain variable."""
        b = x.binding
        value = vectorised.function(x.fn, x.args, vars_) if isinstance(b, BindScalar) else None
        if value is None or b.var.name in self.ev.ref_vars or b.var.name in self.ev.attr_vars:
            return None
        if b.var.name not in vars_:  # a new column
            return lambda keys: None if (ids := value(keys)) is None else np.column_stack([keys, ids])
        i = vars_.index(b.var.name)  # bound already: the rows whose value it is
        return lambda keys: None if (ids := value(keys)) is None else keys[:, i] == ids

    def _fn(self, x: FnCall, vars_: tuple, new: list[str],
            value: Callable[[list], Any] | None = None) -> Callable:
        """The row map of ``[(f ...) binding]``; ``value(vals)`` is f's value (default: the
        function called on its arguments)."""
        encode, registry = self.ev.encode, self.ev.registry
        pos = {v: i for i, v in enumerate(vars_)}
        if value is None:
            args = [arg_getter(a, vars_) for a in x.args]

            def value(vals: list) -> Any:
                return call(x.fn, [g(vals) for g in args], registry)

        def fn(ids: list, vals: list) -> list:
            out = []
            for alt in _bind(x.binding, value(vals)):
                if any(k in pos and ids[pos[k]] != encode(k, v) for k, v in alt.items()):
                    continue
                out.append(tuple(ids) + tuple(encode(k, alt[k]) for k in new))
            return out
        return fn

    # ------------------------------------------------------------------ rules
    def _rule_call(self, x: RuleCall, c: Circuit, env: dict[str, Rel]) -> Rel:
        if x.name not in self.rules:
            raise QueryError(f"unknown rule {x.name} in {x}")
        if x.src.name != "$":
            raise QueryError(f"rule call {x} names {x.src.name}: rules read the query's $ only "
                             f"(match {x.src.name} with data patterns in the query instead)")
        rel = env.get(x.name) or self.bring(self.rule_relation(x.name), c)
        names, keep = [], []
        for i, a in enumerate(x.args):
            if isinstance(a, Var) and a.name not in names:
                names.append(a.name)
                keep.append(i)
        checks = [(i, a) for i, a in enumerate(x.args)
                  if not isinstance(a, (Var, Blank)) or (isinstance(a, Var)
                                                         and x.args.index(a) != i)]

        def fn(ids: list, vals: list) -> list:
            for i, a in checks:
                if isinstance(a, Var) and ids[i] != ids[x.args.index(a)]:
                    return []
                if isinstance(a, Const) and vals[i] != a.value:
                    return []
            return [tuple(ids[i] for i in keep) or (0,)]
        if not names:  # a ground call: does any fact match?
            return self.project(self.row_map(rel, fn, [UNIT_VAR]), ())
        if not checks:  # plain variables and blanks: a rename or a vectorised projection
            if keep == list(range(len(x.args))):
                return Rel(rel.stream, names)
            return self.project(Rel(rel.stream, [f"#{i}" for i in range(len(x.args))]),
                                [f"#{i}" for i in keep]).renamed(names)
        return self.row_map(rel, fn, names)

    def rule_relation(self, name: str) -> Rel:
        """The root stream of rule ``name``'s facts (its component compiled first)."""
        if name in self._rule_rels:
            return self._rule_rels[name]
        scc = rule_component(self.rules, name)
        for dep in sorted(rule_deps(self.rules, scc) - scc):
            self.rule_relation(dep)
        defs = [r for n in sorted(scc) for r in self.rules[n]]
        check_stratified(defs, scc)
        recursive = len(scc) > 1 or name in rule_deps(self.rules, scc)
        if not recursive:
            self._rule_rels[name] = self._rule_union(name, self.root, {})
            self.notes.append(f"rule {name}: union of its bodies at the root")
            return self._rule_rels[name]
        child = self.root.child(max_iterations=RECURSION_LIMIT)
        self._recursive |= scc
        fbs = {n: child.delay(len(self.rules[n][0].params)) for n in sorted(scc)}
        env = {n: Rel(fb, _positions(len(self.rules[n][0].params))) for n, fb in fbs.items()}
        for n in sorted(scc):
            facts = self._rule_union(n, child, env)
            fbs[n].connect(facts.stream)
            self._rule_rels[n] = Rel(child.export(facts.stream), facts.vars)
        self.notes.append(f"rules {', '.join(sorted(scc))}: child circuit to a fixed point "
                          "(distinct_trace, nested joins; retractions via traces)")
        return self._rule_rels[name]

    def _rule_union(self, name: str, c: Circuit, env: dict[str, Rel]) -> Rel:
        parts = []
        for r in self.rules[name]:
            # a rule body is a scope of its own: the query's scalar inputs (``self.consts``)
            # are not its variables, even where the names agree (an input ?x and a rule's ?x)
            # (but the demand's seeds, made of the query's own clauses: queries.magic)
            outer, seed = self.consts, id(r) in self._query_scoped
            self.consts = outer if seed else {}
            begin = None  # a seed that reads :in variables starts from the :in rows, as the query does
            if seed and self._start is not None and set(self._start.vars) & \
                    ({v.name for x in r.body for v in free_vars(x)} | {v.name for v in r.params}):
                begin = self.bring(self._start, c)
            try:
                body = self.conj(local_nots(rewrite(r.body, self.store, self.ev.dbs), ()), begin, c, env)
            finally:
                self.consts = outer
            params = [v.name for v in r.params]
            got = body.vars if body is not None else ()
            missing = [v for v in params if v not in got]
            if missing:
                raise UnboundVariableError(r, missing, "bottom-up evaluation needs every head "
                                           "variable bound by the rule body")
            if tuple(params) == body.vars:
                stream = body.stream
            else:  # the body's last join is ours alone: project inside its consolidation
                idx = [body.vars.index(v) for v in params]
                stream = fold_map(body.stream, Columns(idx), len(idx))
            parts.append(Rel(stream, _positions(len(params))))
        return self.distinct(self._union(parts))


UNIT_VAR = "#unit"  # the one column (always 0) of rows that bind no variable


def _positions(n: int) -> tuple[str, ...]:
    return tuple(f"#{i}" for i in range(n))


# functions whose value reads the database itself: (their row function, what explain says)
_READS_DATABASE = {"q": (Subquery, "nested q, its first tick per distinct inputs"),
                   "fulltext": (FullText, "fulltext search (SQLite FTS5)")}


def compile_view(ev: Binder, query: Query, table: Table, rules: list[Rule]) -> CompiledView:
    """Compile ``query`` into a circuit (not yet run)."""
    return CompiledView(ev, query, table, rules)
