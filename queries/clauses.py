"""Helpers over clauses that the query compiler and the oracle evaluator of the tests share.

Branches of ``or``, the stratification check of negation, Datalog truthiness, picking the
next clause whose variables are bound, and binding values to an ``:in`` or function
binding form. Relies on ``queries.ast`` and ``queries.parse``; used by
``queries.circuits`` (and ``tests/queries/datalog_evaluator.py``).

>>> from queries.ast import BindColl, BindScalar, Var
>>> _bind(BindColl(BindScalar(Var("x"))), [1, 2])
[{'x': 1}, {'x': 2}]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from typing import Any

from queries.ast import (
    And, BindColl, BindRel, BindScalar, BindTuple, Blank, Const, Not, NotJoin, Or, OrJoin, RuleCall,
    Var,
    bound_vars, free_vars, required_vars,
)
from queries.scope import _calls
from wcoj.errors import QueryError, UnboundVariableError, excerpt

__all__ = ["check_stratified", "local_nots", "rule_component", "rule_deps"]


def _branch(b: Any) -> tuple:
    return b.clauses if isinstance(b, And) else (b,)


def check_stratified(rules: Iterable[Any], scc: set) -> None:
    """Refuse a rule of component ``scc`` that negates a rule of the same component."""
    for r in rules:
        for c in _negated_calls(r.body):
            if c.name in scc:
                raise QueryError(f"rule {r.name} negates {c.name} through recursion in "
                                 f"{r}; negation through recursion cannot be stratified")


def rule_deps(rules: dict[str, list[Any]], names: Iterable[str]) -> set[str]:
    """The rules that the bodies of the rules ``names`` call."""
    return {c.name for n in names for r in rules.get(n, ()) for c in _calls(r.body)}


def rule_component(rules: dict[str, list[Any]], name: str) -> set[str]:
    """The strongly connected component of rule ``name`` in the call graph: the rules it
    calls that call it back (itself always)."""
    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for d in rule_deps(rules, {todo.pop()}):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen
    return {name} | {n for n in reach(name) if name in reach(n)}


def _negated_calls(clauses: Iterable[Any]) -> Iterable[RuleCall]:
    for c in clauses:
        if isinstance(c, (Not, NotJoin)):
            yield from _calls(c.clauses)
        elif isinstance(c, (Or, OrJoin, And)):
            yield from _negated_calls(c.clauses)


def local_nots(clauses: Iterable[Any], outer: Iterable[str]) -> list:
    """``clauses`` with each ``not`` that has local variables as the ``not-join`` on the
    variables bound outside it (``outer`` or the other clauses), recursively: in Datomic the
    variables that occur only inside a ``not`` are local to it.

    >>> from queries.ast import parse_query
    >>> q = parse_query('[:find ?m :where [?m :a _] (not [?m :d ?d] [?d :n "x"])]')
    >>> print(local_nots(q.where, ())[1])
    (not-join [?m] [?m :d ?d] [?d :n "x"])
    """
    clauses = list(clauses)
    outer = {Var(v) if isinstance(v, str) else v for v in outer}
    bound = [bound_vars(c) for c in clauses]
    out = []
    for i, c in enumerate(clauses):
        others = outer.union(*bound[:i], *bound[i + 1:])
        if isinstance(c, Not):
            join = sorted(free_vars(c) & others, key=lambda v: v.name)
            inner = local_nots(c.clauses, join)
            c = (NotJoin(tuple(join), tuple(inner), c.src) if set(join) != free_vars(c)
                 else Not(tuple(inner), c.src))
        elif isinstance(c, NotJoin):
            c = NotJoin(c.vars, tuple(local_nots(c.clauses, c.vars)), c.src)
        elif isinstance(c, (Or, OrJoin)):
            scope = others if isinstance(c, Or) else others & free_vars(c)
            branches = tuple(And(tuple(local_nots(_branch(b), scope))) if isinstance(b, And)
                             else local_nots((b,), scope)[0] for b in c.clauses)
            c = (Or(branches, c.src) if isinstance(c, Or)
                 else OrJoin(c.required, c.vars, branches, c.src))
        out.append(c)
    return out


def arg_getter(a: Any, vars_: tuple) -> Callable[[list], Any]:
    """A function argument's value in a row's decoded values ``vals`` (variables named
    ``vars_``): a variable's value or a constant."""
    if isinstance(a, Var):
        i = vars_.index(a.name)
        return lambda vals: vals[i]
    if isinstance(a, Const):
        return lambda vals: a.value
    raise QueryError(f"a function argument must be a variable or a constant, found {a}")


def _truthy(x: Any) -> bool:
    return x is not None and x is not False


def _take_ready(rest: list, bound_vars: Iterable[str]):
    """Remove and return the first clause of ``rest`` whose required variables are all in
    ``bound_vars``; raise ``UnboundVariableError`` naming what the first clause lacks."""
    bound = {Var(v) for v in bound_vars}
    ready = next((c for c in rest if required_vars(c) <= bound), None)
    if ready is None:
        c = rest[0]
        raise UnboundVariableError(c, sorted(v.name for v in required_vars(c) - bound),
                                   "nothing before it binds them")
    rest.remove(ready)
    return ready


def _bind(binding: Any, value: Any) -> list[dict[str, Any]]:
    """The alternatives of variable values that ``binding`` takes from ``value``."""
    if value is None:
        return []
    if isinstance(binding, BindScalar):
        return [{binding.var.name: value}]
    if isinstance(binding, Blank):
        return [{}]
    if isinstance(binding, BindTuple):
        if isinstance(value, (str, bytes, Mapping, Set)):  # not sequential, as in Datomic
            raise QueryError(f"the binding {binding} takes a sequence (a vector, list or tuple), got "
                             f"{excerpt(repr(value), quote=False)}")
        value = _items(binding, value)
        if len(value) < len(binding.elements):
            return []
        alts = [{}]
        for el, x in zip(binding.elements, value):
            alts = [{**a, **b} for a in alts for b in _bind(el, x)]
        return alts
    if isinstance(binding, BindColl):
        return [a for x in _items(binding, value) for a in _bind(binding.binding, x)]
    if isinstance(binding, BindRel):
        return [a for x in _items(binding, value) for a in _bind(BindTuple(binding.elements), x)]
    raise QueryError(f"bad binding {binding}")


def _items(binding: Any, value: Any) -> list:
    """The items of ``value`` for a tuple, collection or relation binding form: a map's
    are its ``[key value]`` entries; a string (or keyword) is one value, not a collection
    of characters."""
    if isinstance(value, (str, bytes)):
        raise QueryError(f"the binding {binding} takes a collection, got the string "
                         f"{excerpt(repr(value), quote=False)}")
    if isinstance(value, Mapping):
        return [tuple(kv) for kv in value.items()]
    try:
        return list(value)
    except TypeError:
        raise QueryError(f"the binding {binding} takes a collection, got "
                         f"{excerpt(repr(value), quote=False)}") from None
