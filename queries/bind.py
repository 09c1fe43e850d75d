"""Query values as interned ids: constants, inputs and data patterns as join atoms.

The query compiler (``queries.circuits``) and the plain-Python oracle evaluator kept in
``tests/`` share this: ``Binder`` turns a constant into the id the store keeps for it (an
int on a ref variable is an entity id, a lookup ref ``[attr value]`` its entity, a keyword
in attribute position an attribute id), a data pattern into a join atom ``(relation,
terms)`` over the store's ``(e, v)`` attribute relations or its ``(e, a, v, tx)`` datoms,
and a predicate into a filter that the generic join runs at the level binding its
variables. ``bind_inputs`` matches the values given to ``q``/``view`` with ``:in``.

Relies on ``indexes.eav`` (the store), ``queries.ast`` and ``queries.clauses``; used by
``queries.circuits``, ``queries.plan`` and ``queries.database``.
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
    And, BindColl, BindRel, BindScalar, BindTuple, Blank, Const, FnCall, Not, NotJoin, Or, OrJoin,
    Pattern, Predicate, Query, Rule, RulesVar, SrcVar, Var, free_vars,
)
from queries import vectorised
from queries.clauses import _bind, _truthy
from queries.edn import dumps_safe
from queries.functions import Registry, call
from queries.schema import is_ident
from queries.scope import _calls
from queries.txlog import is_log, placeholder
from wcoj.errors import QueryError, UnknownAttributeError, excerpt, shown
from wcoj.zset import ZSet

__all__ = ["Table", "UNIT", "Binder", "DbSource", "Inputs", "bind_inputs", "query_vars", "plain_input",
           "input_key"]

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


def query_vars(clauses: Iterable[Any], store: EavStore, dbs: Iterable[str] = (),
               rules: dict[str, list[Rule]] | None = None) -> tuple[set[str], set[str]]:
    """``(ref_vars, attr_vars)`` of ``clauses``, nested ones included (``dbs``: the names
    of the data sources besides ``$`` that are databases).

    Ref variables stand in entity positions or values of ref attributes: ints bound to them
    are entity ids, not longs. Attribute variables stand in attribute positions: keywords
    bound to them are attribute ids. A variable passed to a rule (of ``rules``, by name)
    where the rule's parameter is one of those is one too: ``(f ?e ?y)`` with ``(f ?x ?y)
    [?x :follows ?y]`` makes ``?e`` a ref variable.
    """
    refs, attrs = _pattern_vars(clauses, store, dbs)
    if rules:
        _call_vars(clauses, *_rule_positions(rules, store, dbs), refs, attrs)
    return refs, attrs


def _call_vars(clauses: Iterable[Any], at_ref: dict[str, set[int]], at_attr: dict[str, set[int]],
               refs: set[str], attrs: set[str]) -> None:
    """Add to ``refs``/``attrs`` the variables the rule calls of ``clauses`` pass where
    the rule's parameter stands for an entity/attribute (``_rule_positions``)."""
    for c in _calls(clauses):
        for i, a in enumerate(c.args):
            if isinstance(a, Var):
                if i in at_ref.get(c.name, ()):
                    refs.add(a.name)
                if i in at_attr.get(c.name, ()):
                    attrs.add(a.name)


def _pattern_vars(clauses: Iterable[Any], store: EavStore, dbs: Iterable[str]) -> tuple[set[str], set[str]]:
    """``query_vars`` from the data patterns alone."""
    refs: set[str] = set()
    attrs: set[str] = set()
    todo = list(clauses)
    while todo:
        c = todo.pop()
        if isinstance(c, Pattern) and (c.src.name == "$" or c.src.name in dbs):
            t = c.terms
            if isinstance(t[0], Var):
                refs.add(t[0].name)
            if len(t) > 1 and isinstance(t[1], Var):
                attrs.add(t[1].name)
            if (len(t) > 2 and isinstance(t[2], Var) and isinstance(t[1], Const)
                    and store.has_attribute(str(t[1].value))
                    and store.attribute(str(t[1].value)).value_type == "ref"):
                refs.add(t[2].name)
            if len(t) > 3 and isinstance(t[3], Var):  # a transaction is an entity too
                refs.add(t[3].name)
        elif isinstance(c, (Predicate, FnCall)) and c.fn in ("get-else", "get-some", "missing?"):
            args = [a for a in c.args if not isinstance(a, SrcVar)]
            if args and isinstance(args[0], Var):  # the entity they read ([?e :a ...] once rewritten)
                refs.add(args[0].name)
        elif isinstance(c, (Not, NotJoin, Or, OrJoin, And)):
            todo.extend(c.clauses)
    return refs, attrs


def _rule_positions(rules: dict[str, list[Rule]], store: EavStore,
                    dbs: Iterable[str]) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """Per rule name, the parameter positions that stand for entities and for attributes
    in some definition of it, through the rules it calls (to a fixed point)."""
    at_ref: dict[str, set[int]] = {n: set() for n in rules}
    at_attr: dict[str, set[int]] = {n: set() for n in rules}
    local = {id(r): _pattern_vars(r.body, store, dbs) for rs in rules.values() for r in rs}
    changed = True
    while changed:
        changed = False
        for name, rs in rules.items():
            for r in rs:
                refs, attrs = (set(x) for x in local[id(r)])
                _call_vars(r.body, at_ref, at_attr, refs, attrs)
                for i, p in enumerate(r.params):
                    for names, at in ((refs, at_ref[name]), (attrs, at_attr[name])):
                        if p.name in names and i not in at:
                            at.add(i)
                            changed = True
    return at_ref, at_attr


class DbSource:
    """A data source of ``:in`` that is a database (``$old`` given ``db.as_of(t)``): its
    store."""

    __slots__ = ("store",)

    def __init__(self, store: EavStore):
        self.store = store


class Binder:
    """Ids for the values of a query (and its rules) over one view (``kind``) of ``store``;
    patterns over another database of ``sources`` read its store (``DbSource``)."""

    def __init__(self, store: EavStore, kind: str = "prev", query: Query | None = None,
                 rules: Iterable[Rule] = (), sources: dict[str, list] | None = None,
                 registry: Registry | None = None):
        self.store, self.kind = store, kind
        self.sources = sources or {}
        self.registry = registry  # functions and aggregates the program registered
        self.rules: dict[str, list[Rule]] = defaultdict(list)
        for r in rules:
            self.rules[r.name].append(r)
        clauses = list(query.where if query is not None else ())
        clauses += [c for rs in self.rules.values() for r in rs for c in r.body]
        self.dbs = {name: src.store for name, src in self.sources.items() if isinstance(src, DbSource)}
        self.ref_vars, self.attr_vars = query_vars(clauses, store, self.dbs, self.rules)

    def retype(self, clauses: Iterable[Any]) -> None:
        """Type the variables of ``clauses`` that the query did not have (a rewrite's
        fresh ones), as the query's own were: by the positions they stand in."""
        refs, attrs = query_vars(clauses, self.store, self.dbs, self.rules)
        self.ref_vars |= refs
        self.attr_vars |= attrs

    # ------------------------------------------------------------------ values
    def encode(self, var: str | None, value: Any) -> int:
        """The id of a value bound to ``var`` (ints on ref variables are entity ids,
        keywords on attribute variables attribute ids; -1 matches nothing)."""
        if var in self.attr_vars:
            ident = str(value)
            return self.store.aid(ident) if self.store.has_attribute(ident) else -1
        if var in self.ref_vars:
            if type(value) is int:
                return self.store.interner.ref(value)
            if isinstance(value, (list, tuple)) and len(value) == 2:
                return self.lookup_ref(value)
            if is_ident(value):
                return self.ident(value)
        return self.store.interner.encode(value)

    def ident(self, name: str) -> int:
        """The entity named ``name`` by ``:db/ident``, or -1 (matches nothing)."""
        return self.lookup_ref((":db/ident", self.store.keyword(name)))

    def lookup_ref(self, ref: Any) -> int:
        """``[attr value]`` -> the entity id, or -1 (matches nothing) when absent."""
        if len(ref) != 2:
            raise QueryError(f"a lookup ref is [attribute value], got {excerpt(dumps_safe(list(ref)), quote=False)}")
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
            if is_ident(value):
                return self.ident(value)
        return self.store.interner.encode(value)

    def decode(self, ids: Any) -> list:
        return self.store.interner.decode(np.asarray(list(ids), dtype=np.int64)).tolist()

    # ------------------------------------------------------------------ patterns
    def atoms(self, patterns: list[Pattern], consts: dict[str, int] | None = None):
        """Pattern -> (source, terms) atoms and equality filters.

        ``consts`` substitutes ids for variables (scalar inputs). Blanks become fresh
        variables; a variable repeated inside one pattern becomes a fresh one plus an
        equality filter, and so does the first term of a pattern without variables.
        """
        consts = consts or {}
        out, filters = [], []
        for p in patterns:
            if p.src.name in self.dbs:
                if not 2 <= len(p.terms) <= 5:
                    raise QueryError(f"data pattern {p} has {len(p.terms)} terms; a database's "
                                     f"patterns have 2 to 5 ([e a v tx added])")
                more, also = self._db(p).atoms([Pattern(p.terms)], consts)
                out.extend(more)
                filters.extend(also)
                continue
            if p.src.name != "$":
                out.append(self._source_atom(p))
                continue
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
                twins = self._int_twins(term) if role is None and src is self.store.datoms else None
                if twins is not None:  # an int where any attribute's value goes: long or entity
                    fresh = f"_v{next(_fresh)}"
                    filters.append(((fresh,), lambda col, ks=twins: np.isin(col, ks)))
                    terms.append(fresh)
                elif isinstance(term, Var) and term.name in consts:
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
                # every term is given (an existence check): the first one becomes a blank
                # held equal to it, so that a view sees the datom come and go
                fresh, k = f"_k{next(_fresh)}", terms[0]
                filters.append(((fresh,), lambda col, k=k: col == k))
                terms[0] = fresh
            out.append((src, tuple(terms)))
        return out, filters

    def _db(self, p: Pattern) -> Binder:
        """A binder over the database that pattern ``p`` reads (not ``$``). Its atoms join
        with this binder's only when both stores give a value one id: the databases of one
        lineage (``as_of``, ``since``, ``history``) share their interner."""
        store = self.dbs[p.src.name]
        if store.interner is not self.store.interner:
            raise QueryError(f"data source {p.src.name} is a database that does not share this "
                             f"one's value ids (a with_ copy, or another Database): a query may "
                             f"join a database with its own as_of, since or history values; pass "
                             f"the other's datoms as a collection of tuples instead")
        return Binder(store, "prev", registry=self.registry)

    def _source_atom(self, p: Pattern) -> tuple[Any, tuple]:
        """A pattern over a collection-of-tuples source (``$2``) as a join atom."""
        rows = self.sources.get(p.src.name)
        if rows is None:
            raise QueryError(f"pattern {p} reads data source {p.src.name}, which :in does "
                             f"not declare")
        n = len(rows[0]) if rows else len(p.terms)
        if len(p.terms) > n:
            raise QueryError(f"pattern {p} has {len(p.terms)} terms but the tuples of "
                             f"{p.src.name} have {n}")
        terms = list(p.terms) + [Blank()] * (n - len(p.terms))
        names = [t.name if isinstance(t, Var) else None for t in terms]
        rel = Relation(p.src.name, n)
        ids = [tuple(self.encode(k, x) for k, x in zip(names, r)) for r in rows]
        rel.load(ZSet.from_rows(set(ids), arity=n))
        out, seen = [], set()
        for t in terms:
            if isinstance(t, Var) and t.name not in seen:
                seen.add(t.name)
                out.append(t.name)
            elif isinstance(t, Const):
                out.append(self.encode(None, t.value))
            else:
                out.append(f"_{next(_fresh)}")
        if len(seen) != sum(isinstance(t, Var) for t in terms):
            raise QueryError(f"pattern {p} repeats a variable; bind a second one and compare "
                             f"with [(= ...)]")
        return rel, tuple(out)

    def _int_twins(self, term: Any) -> np.ndarray | None:
        """The ids an int written in the value position of a pattern whose attribute is not
        given matches: the long and the entity of that number, as in Datomic, where an
        entity id is a long (``[?x ?a 1]`` finds ``:age 1`` and a ref to entity 1); else
        None. (An input's int there matches as ``encode`` types it: its variable's column
        would hold two ids for one number.)"""
        if not isinstance(term, Const) or type(term.value) is not int:
            return None
        ids = {self.store.interner.encode(term.value)}
        if 0 <= term.value < 1 << 56:
            ids.add(self.store.interner.ref(term.value))
        return np.array(sorted(ids), dtype=np.int64)

    def _const(self, value: Any, role: str | None) -> int:
        if role == "id":
            return int(value)
        if role == "e":
            if isinstance(value, (list, tuple)):
                return self.lookup_ref(value)
            if is_ident(value):
                return self.ident(value)
            if type(value) is not int:
                raise QueryError(f"entity position needs an entity id, an ident or a lookup ref, "
                                 f"found {shown(value)}")
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
        keep = vectorised.predicate(c.fn, [Const(consts[a.name]) if isinstance(a, Var) and a.name in consts
                                           else a for a in c.args], tuple(vars_))

        def fn(*cols):
            if keep is not None and cols:  # over longs: the whole columns at once
                mask = keep(np.column_stack(cols))
                if mask is not None:
                    return mask
            env = {v: decode(col) for v, col in zip(vars_, cols)}
            n = len(cols[0]) if cols else 1
            args = [env[a.name] if isinstance(a, Var) and a.name in env else
                    [consts[a.name]] * n if isinstance(a, Var) else [a.value] * n
                    for a in c.args]
            return np.fromiter((_truthy(call(c.fn, list(xs), self.registry)) for xs in zip(*args)),
                               dtype=bool, count=n)
        return (tuple(vars_), fn)


class Inputs:
    """The values given to ``q``/``view``, matched with the query's ``:in``.

    ``q`` may leave out the database, the first ``$`` (``implicit_db``; a nested ``q`` passes
    every input). ``bindings`` pairs each binding form with its value, ``rules`` holds the parsed rules
    of ``%``, and ``sources`` the data sources other than the database by name: a
    collection of tuples, or another database (``DbSource``).
    """

    __slots__ = ("bindings", "rules", "sources")

    def __init__(self, query: Query, inputs: tuple, implicit_db: bool = True, db: Any = None):
        from queries.parse import check_rules, parse_rules
        declared = list(query.inputs)
        values = list(inputs)
        if implicit_db and declared and isinstance(declared[0], SrcVar) \
                and len(values) == len(declared) - 1:
            values = [None] + values  # the database itself is implicit for the first $
        if len(values) != len(declared):
            raise QueryError(f"the query declares {len(declared)} inputs (:in "
                             f"{' '.join(map(str, declared))}), got {len(values)}")
        self.bindings: list[tuple[Any, Any]] = []
        self.rules: list[Rule] = []
        self.sources: dict[str, Any] = {}
        for d, v in zip(declared, values):
            if isinstance(d, SrcVar) and d.name == "$" and v is not None and db is not None and v is not db:
                _not_the_database(v)
            if isinstance(d, SrcVar):
                if d.name != "$" and not (d.name == declared[0].name and v is None):
                    self.sources[d.name] = _database(v) or _source_rows(d, v)
            elif isinstance(d, RulesVar):
                self.rules = list(parse_rules(v) if not isinstance(v, (list, tuple)) or not v
                                  or not isinstance(v[0], Rule) else v)
            elif isinstance(d, BindScalar) and is_log(v):  # queries.txlog: read by name
                self.sources[d.var.name] = v
                self.bindings.append((d, placeholder(d.var.name)))
            else:
                self.bindings.append((d, _input_value(d, v)))
        if self.rules:
            check_rules(query, self.rules)


def _not_the_database(v: Any) -> None:
    """Refuse a value given for ``$`` that is not the database ``q`` is called on: it was
    ignored, and the query answered from the receiver (``db.q(query, db.as_of(t))`` read
    ``db`` as it is now)."""
    from queries.database import Database
    if isinstance(v, Database):
        raise QueryError("$ is the database q is called on, and another database was given for it: "
                         "call q on that one (other.q(query, ...); an as_of, since or history "
                         "database too), or name it as a second source (:in $ $2)")
    raise QueryError(f"$ is the database q is called on, got {excerpt(repr(v), quote=False)} for it: "
                     "a collection of tuples is a data source under another name (:in $ $data)")


def _database(v: Any) -> DbSource | None:
    """``v`` as a database source, when it is a ``Database``."""
    from queries.database import Database
    return DbSource(v.store) if isinstance(v, Database) else None


def _source_rows(d: SrcVar, v: Any) -> list[tuple]:
    """A data source given as a collection of tuples (EDN text or Python data)."""
    if isinstance(v, str):
        from queries.edn import loads
        v = loads(v)
    if not isinstance(v, (list, tuple, set, frozenset)) or not all(
            isinstance(r, (list, tuple)) for r in v):
        raise QueryError(f"data source {d.name} must be a database or a collection of tuples, "
                         f"got {type(v).__name__}")
    rows = [tuple(r) for r in v]
    if len({len(r) for r in rows}) > 1:
        raise QueryError(f"the tuples of data source {d.name} differ in length")
    return rows


def bind_inputs(ev: Binder, inputs: Inputs) -> Table:
    """The table of the variables ``inputs`` bind (interned ids)."""
    table = UNIT
    for d, v in inputs.bindings:
        alts = _bind(d, v)
        names = sorted({k for a in alts for k in a}) or sorted(x.name for x in free_vars(d))
        rows = set()
        for a in alts:
            rows.add(tuple(ev.encode(k, a[k]) for k in names))
        table = table.join(Table(names, rows))
    return table


def _input_value(d: Any, v: Any) -> Any:
    if isinstance(v, str) and isinstance(d, (BindColl, BindRel, BindTuple)) and v.strip()[:1] \
            in "[(#":
        from queries.edn import loads
        return loads(v)
    if isinstance(v, str) and len(v) > 1 and v[0] == ":":
        from queries.edn import Keyword
        return Keyword(v)
    return v


def plain_input(x: Any) -> bool:
    """An input that compiles to the same circuit whatever the database holds: a string,
    a number, or a short collection of them (no lookup refs)."""
    if isinstance(x, (str, int, float, bool)) or x is None:
        return not isinstance(x, str) or len(x) < 10_000
    return (isinstance(x, (list, tuple, frozenset)) and len(x) <= 1_000
            and all(isinstance(y, (str, int, float, bool)) for y in x)
            and not (len(x) == 2 and isinstance(x[0], str) and x[0].startswith(":")))


def input_key(inputs: tuple) -> tuple:
    """A hashable key of plain inputs that tells ``1``, ``1.0`` and ``True`` apart."""
    def one(x: Any) -> Any:
        if isinstance(x, (list, tuple, frozenset)):
            return (type(x).__name__,) + tuple(one(y) for y in x)
        return (type(x).__name__, x)
    return tuple(one(x) for x in inputs)
