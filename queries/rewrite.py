"""Clause rewrites before compilation: everything a query says, as patterns and operators.

What reads the store per row, or fixes an entity when the query is compiled, becomes
ordinary clauses over the attribute relations, so that a view of it stays incremental and
exact (an entity named by a lookup ref may appear later; an attribute read by ``get-else``
may change):

* ``[(missing? $ ?e :a)]`` is ``(not [?e :a _])``;
* ``[(get-else $ ?e :a d) ?v]`` is ``(or-join [[?e] ?v] [?e :a ?v]
  (and (not [?e :a _]) [(ground d) ?v]))`` (``:a`` must be cardinality one);
* ``[(get-some $ ?e :a :b) [?attr ?v]]`` is an ``or-join`` with one branch per attribute,
  each taking the attribute when the ones before it are missing;
* a lookup ref ``[:name "x"]`` as a pattern constant, or as the argument of a rule call,
  is one more pattern ``[?lr :name "x"]`` joined on a fresh variable;
* a pattern that names no variable (``[1 :a 2]``, ``[_ :a 2]``) gets a fresh variable in
  its first free position, so every clause binds one;
* on a database that is not a history, every datom is an assertion, as in Datomic: a
  pattern's fifth term ``?added`` is ``[(ground true) ?added]``, ``true`` or ``_`` match
  every datom, ``false`` none.

``not`` with local variables becomes the ``not-join`` on the variables bound outside it
(``queries.clauses.local_nots``).

Relies on ``queries.ast`` and the store's schema; used by ``queries.circuits``.

>>> from queries.ast import parse_query
>>> q = parse_query('[:find ?n :where [?e :name ?n] [(get-else $ ?e :age 0) ?a]]')
>>> print(rewrite(q.where, None)[1])
(or-join [[?e] ?a] [?e :age ?a] (and (not [?e :age _]) [(ground 0) ?a]))
"""

from __future__ import annotations

import itertools
from typing import Any

from queries.ast import (
    DEFAULT_SRC, And, BindColl, BindScalar, BindTuple, Blank, Const, FnCall, Not, NotJoin, Or, OrJoin,
    Pattern, Predicate, RuleCall, SrcVar, Var,
)
from queries.edn import Keyword
from wcoj.errors import QueryError

__all__ = ["rewrite", "call_arguments"]

_fresh = itertools.count()


def _var(prefix: str) -> Var:
    # '#' cannot start an EDN symbol, so these never meet a user's variables
    return Var(f"#{prefix}{next(_fresh)}")


def rewrite(clauses: Any, store: Any, dbs: dict | None = None) -> list:
    """``clauses`` with database functions, lookup-ref constants and variable-free
    patterns expressed as plain clauses (see the module docstring), recursively.
    ``store`` gives the schema (``None``: no checks, for docs and tests); ``dbs`` the
    stores of the other databases ``:in`` names (``$old``), whose patterns are rewritten
    over their own schema."""
    out: list = []
    for c in clauses:
        out.extend(_clause(c, store, dbs or {}))
    return out


def _clause(c: Any, store: Any, dbs: dict) -> list:
    if isinstance(c, Pattern):
        return _pattern(c, store, dbs)
    if isinstance(c, RuleCall) and c.src == DEFAULT_SRC:
        return _rule_call(c, store)
    if isinstance(c, (Predicate, FnCall)) and c.fn in ("missing?", "get-else", "get-some"):
        return [_db_function(c, store, dbs)]
    if isinstance(c, Not):
        return [Not(tuple(rewrite(c.clauses, store, dbs)), c.src)]
    if isinstance(c, NotJoin):
        return [NotJoin(c.vars, tuple(rewrite(c.clauses, store, dbs)), c.src)]
    if isinstance(c, (Or, OrJoin)):
        branches = tuple(And(tuple(rewrite(b.clauses, store, dbs))) if isinstance(b, And)
                         else _single(rewrite((b,), store, dbs)) for b in c.clauses)
        return [Or(branches, c.src) if isinstance(c, Or)
                else OrJoin(c.required, c.vars, branches, c.src)]
    return [c]


def _single(clauses: list) -> Any:
    return clauses[0] if len(clauses) == 1 else And(tuple(clauses))


def _is_lookup_ref(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and len(x) == 2 and isinstance(x[0], (str, Keyword)) \
        and str(x[0]).startswith(":")


def _pattern(p: Pattern, store: Any, dbs: dict) -> list:
    if p.src.name != "$":
        if p.src.name not in dbs:  # a collection of tuples: its terms are plain values
            return [p]
        store = dbs[p.src.name]
    terms = list(p.terms)
    extra: list = []
    if len(terms) == 5 and store is not None and not getattr(store, "history", False):
        added = terms.pop()  # the current database's datoms are all assertions
        if isinstance(added, Var):
            extra.append(FnCall("ground", (Const(True),), BindScalar(added)))
        elif isinstance(added, Const) and added.value is not True:
            if added.value is not False:
                raise QueryError(f"pattern {p}: its fifth term, the operation, is true or false, "
                                 f"not {added.value!r}")
            extra.append(FnCall("ground", (Const(()),), BindColl(_var("none"))))  # no datom
    attr = str(terms[1].value) if len(terms) > 1 and isinstance(terms[1], Const) else None
    ref_value = (attr is not None and store is not None and store.has_attribute(attr)
                 and store.attribute(attr).value_type == "ref")
    for i in (0, 2):
        if i < len(terms) and isinstance(terms[i], Const) and (i == 0 or ref_value) \
                and isinstance(terms[i].value, Keyword):  # an entity named by its :db/ident
            terms[i] = Const((":db/ident", terms[i].value))
        if i < len(terms) and isinstance(terms[i], Const) and _is_lookup_ref(terms[i].value) \
                and (i == 0 or ref_value):
            ref_attr, value = terms[i].value
            _check_unique(str(ref_attr), store, p)
            v = _var("lr")
            terms[i] = v
            extra.append(Pattern((v, Const(Keyword(str(ref_attr))), Const(value)), p.src))
    if not any(isinstance(t, Var) for t in terms):
        pos = next((i for i, t in enumerate(terms) if isinstance(t, Blank)), None)
        if pos is not None:
            terms[pos] = _var("b")
        elif terms and isinstance(terms[0], Const):  # [1 :a 2]: bind the entity, then test it
            v = _var("g")
            extra.append(FnCall("ground", (terms[0],), BindScalar(v)))
            terms[0] = v
    return [Pattern(tuple(terms), p.src)] + extra


def call_arguments(clauses: Any, store: Any) -> tuple:
    """``clauses`` with the lookup refs passed to rule calls at the top level made patterns
    (as ``rewrite`` does), and the ints passed to them bound by ``[(ground n) ?k]``, for
    the demand rewrite, which runs first: the clause makes the call's argument bound
    (``queries.magic``). The caller types the new variables (``Binder.retype``)."""
    out: list = []
    for c in clauses:
        out.extend(_rule_call(c, store, True) if isinstance(c, RuleCall) and c.src == DEFAULT_SRC else [c])
    return tuple(out)


def _rule_call(c: RuleCall, store: Any, ints: bool = False) -> list:
    """A lookup ref passed to a rule, ``(reach [:name "p1"] ?b)``, names its entity, as
    it would in the data patterns the rule hands it to: one more pattern binds it. (A
    vector whose attribute is not unique stays a value.)"""
    args, extra = list(c.args), []
    for i, a in enumerate(args):
        if isinstance(a, Const) and _is_lookup_ref(a.value) and store is not None \
                and store.has_attribute(str(a.value[0])) \
                and store.attribute(str(a.value[0])).unique is not None:
            v = _var("lr")
            extra.append(Pattern((v, Const(Keyword(str(a.value[0]))), Const(a.value[1]))))
            args[i] = v
        elif ints and isinstance(a, Const) and type(a.value) is int:
            v = _var("k")
            extra.append(FnCall("ground", (a,), BindScalar(v)))
            args[i] = v
    return extra + [RuleCall(c.name, tuple(args), c.src)] if extra else [c]


def _check_unique(attr: str, store: Any, where: Any) -> None:
    if store is None:
        return
    if not store.has_attribute(attr):
        raise QueryError(f"lookup ref in {where} names {attr}, which is not an attribute")
    if store.attribute(attr).unique is None:
        raise QueryError(f"lookup ref in {where} names {attr}, which is not :db/unique")


def _db_function(c: Any, store: Any, dbs: dict) -> Any:
    args = list(c.args)
    src = DEFAULT_SRC
    if args and isinstance(args[0], SrcVar):
        src, args = args[0], args[1:]
    if src.name != "$":
        if src.name not in dbs:
            raise QueryError(f"{c.fn} reads a database; {src.name} in {c} is a collection of tuples")
        store = dbs[src.name]
    if not args or not isinstance(args[0], Var):
        raise QueryError(f"{c.fn} needs an entity variable as its first argument in {c}")
    e, attrs = args[0], args[1:]
    for a in attrs[:1] if c.fn != "get-some" else attrs:
        if not isinstance(a, Const):
            raise QueryError(f"{c.fn} needs an attribute keyword in {c}, found {a}")
        if store is not None and not store.has_attribute(str(a.value)):
            from wcoj.errors import UnknownAttributeError
            raise UnknownAttributeError(str(a.value), store.attributes)
    if c.fn == "missing?":
        if len(attrs) != 1 or not isinstance(c, Predicate):
            raise QueryError(f"missing? takes $, an entity and an attribute: {c}")
        return Not((Pattern((e, attrs[0], Blank()), src),))
    if not isinstance(c, FnCall):
        raise QueryError(f"{c.fn} gives a value: bind it, as in [({c.fn} ...) ?v]")
    if c.fn == "get-else":
        if len(attrs) != 2:
            raise QueryError(f"get-else takes $, an entity, an attribute and a default: {c}")
        attr, default = attrs
        if store is not None and store.attribute(str(attr.value)).many:
            raise QueryError(f"get-else needs a cardinality-one attribute, {attr.value} is many")
        if not isinstance(c.binding, BindScalar):
            raise QueryError(f"get-else binds one variable: {c}")
        v = c.binding.var
        return OrJoin((e,), (v,), (Pattern((e, attr, v), src),
                                   And((Not((Pattern((e, attr, Blank()), src),)),
                                        FnCall("ground", (default,), BindScalar(v))))))
    # get-some: the first of the attributes that the entity has, as [attr value]
    if not attrs:
        raise QueryError(f"get-some needs at least one attribute: {c}")
    b = c.binding
    if not isinstance(b, BindTuple) or len(b.elements) != 2:
        raise QueryError(f"get-some binds a tuple [?attr ?value]: {c}")
    a_var, v_var = (x.var if isinstance(x, BindScalar) else x if isinstance(x, Var)
                    else _var("gs") for x in b.elements)
    branches = []
    for i, attr in enumerate(attrs):
        before = tuple(Not((Pattern((e, x, Blank()), src),)) for x in attrs[:i])
        branches.append(And(before + (Pattern((e, attr, v_var), src),
                                      FnCall("ground", (Const(Keyword(str(attr.value))),),
                                             BindScalar(a_var)))))
    return OrJoin((e,), (a_var, v_var), tuple(branches))
