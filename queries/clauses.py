"""Helpers over clauses that both Datalog evaluators share.

Branches of ``or``, the stratification check of negation, Datalog truthiness, picking the
next clause whose variables are bound, and binding values to an ``:in`` or function
binding form. Relies on ``queries.ast`` and ``queries.parse``; used by
``queries.compile`` and ``queries.circuits``.

>>> from queries.ast import BindColl, BindScalar, Var
>>> _bind(BindColl(BindScalar(Var("x"))), [1, 2])
[{'x': 1}, {'x': 2}]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from queries.ast import (
    And, BindColl, BindRel, BindScalar, BindTuple, Blank, Not, NotJoin, Or, OrJoin, RuleCall, Var,
    required_vars,
)
from queries.parse import _calls
from wcoj.errors import QueryError, UnboundVariableError

__all__ = ["check_stratified"]


def _branch(b: Any) -> tuple:
    return b.clauses if isinstance(b, And) else (b,)


def check_stratified(rules: Iterable[Any], scc: set) -> None:
    """Refuse a rule of component ``scc`` that negates a rule of the same component."""
    for r in rules:
        for c in _negated_calls(r.body):
            if c.name in scc:
                raise QueryError(f"rule {r.name} negates {c.name} through recursion in "
                                 f"{r}; negation through recursion cannot be stratified")


def _negated_calls(clauses: Iterable[Any]) -> Iterable[RuleCall]:
    for c in clauses:
        if isinstance(c, (Not, NotJoin)):
            yield from _calls(c.clauses)
        elif isinstance(c, (Or, OrJoin, And)):
            yield from _negated_calls(c.clauses)


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
        value = list(value)
        if len(value) < len(binding.elements):
            return []
        alts = [{}]
        for el, x in zip(binding.elements, value):
            alts = [{**a, **b} for a in alts for b in _bind(el, x)]
        return alts
    if isinstance(binding, BindColl):
        return [a for x in value for a in _bind(binding.binding, x)]
    if isinstance(binding, BindRel):
        return [a for x in value for a in _bind(BindTuple(binding.elements), x)]
    raise QueryError(f"bad binding {binding}")
