"""The checks a query's and a rule set's clauses need before any database: which variables
each clause may use (negation safety, ``or`` branches, ``or-join``/``not-join`` joins,
predicates), rule calls against the rules' names and arities, and a rule's required
variables (``(f [?a] ?b)``: ``?a`` bound where it is called).

Relies on :mod:`queries.ast` and :mod:`wcoj.errors`; used by :mod:`queries.parse` (which
re-exports ``check_rules``), :mod:`queries.clauses` and :mod:`queries.magic`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from queries.ast import (
    And, FnCall, Not, NotJoin, Or, OrJoin, Predicate, Query, Rule, RuleCall, Var, _cut, _names,
    _show, _union, _vars, bound_vars, free_vars,
)
from wcoj.errors import ArityMismatchError, QueryError, UnboundVariableError

__all__ = ["check_rules"]


def _fail(message: str) -> QueryError:
    return QueryError(message)


def _arity(form: Any, expected: int, got: int, message: str) -> ArityMismatchError:
    err = ArityMismatchError(form, expected, got, message)
    err.args = (message,)  # the house style puts the form last: "... in (edge ?x ?y ?z)"
    return err


def _check_scope(clauses: tuple[Any, ...], outer: frozenset[Var]) -> None:
    """Negation safety and ``or`` branch variables, recursively; ``outer`` is bound already."""
    bound = [bound_vars(c) for c in clauses]
    for i, c in enumerate(clauses):
        others = outer | _union(bound[:i] + bound[i + 1:])
        if isinstance(c, (Predicate, FnCall)):
            missing = _vars(c.args) - others
            if missing:
                raise UnboundVariableError(c, _names(missing), "nothing in the query binds "
                                           "them (a pattern, a function binding, a rule or :in)")
        elif isinstance(c, Not):
            # as in Datomic: the variables bound outside join, the others are local to it
            if free_vars(c) and not free_vars(c) & others:
                raise UnboundVariableError(c, _names(free_vars(c)), "none of the variables of "
                                           "a not is bound by the rest of the query (unsafe "
                                           "negation); bind one, or use not-join")
            _check_scope(c.clauses, free_vars(c) & others)
        elif isinstance(c, NotJoin):
            missing = frozenset(c.vars) - others
            if missing:
                raise UnboundVariableError(c, _names(missing), "the join variables of a "
                                           "not-join must be bound by the rest of the query")
            _check_scope(c.clauses, frozenset(c.vars))
        elif isinstance(c, Or):
            used = [free_vars(b) for b in c.clauses]
            if any(u != used[0] for u in used):
                differ = _union(used) - frozenset.intersection(*used)
                raise UnboundVariableError(c, _names(differ), "every branch of an or must use "
                                           "the same variables; use or-join to name the shared "
                                           "ones")
            for b in c.clauses:
                _check_scope(b.clauses if isinstance(b, And) else (b,), others)
        elif isinstance(c, OrJoin):
            missing = frozenset(c.required) - others
            if missing:
                raise UnboundVariableError(c, _names(missing), "the required variables of an "
                                           "or-join must be bound by the rest of the query")
            for b in c.clauses:
                _check_scope(b.clauses if isinstance(b, And) else (b,),
                             frozenset(c.required) | (free_vars(c) & others))


def _check_required(clauses: tuple[Any, ...], outer: frozenset, required: dict[str, int]) -> None:
    """A rule's required variables (``[?a]`` in its head: its first ``required[name]``
    arguments) must be bound where it is called, by another clause or by ``:in``, as in
    Datomic (there, by a clause before it), recursively through not, or and and."""
    bound = [bound_vars(c) for c in clauses]
    for i, c in enumerate(clauses):
        others = outer | _union(bound[:i] + bound[i + 1:])
        if isinstance(c, RuleCall):
            missing = frozenset(a for a in c.args[:required.get(c.name, 0)] if isinstance(a, Var)) - others
            if missing:
                raise UnboundVariableError(c, _names(missing), f"rule {c.name} requires them bound "
                                           "(they are in [...] in its head): bind them with "
                                           "another clause or pass them in :in")
        elif isinstance(c, (Not, NotJoin, And)):
            _check_required(c.clauses, others, required)
        elif isinstance(c, (Or, OrJoin)):
            for b in c.clauses:
                _check_required(b.clauses if isinstance(b, And) else (b,), others, required)


def _calls(clauses: Iterable[Any]) -> Iterable[RuleCall]:
    for c in clauses:
        if isinstance(c, RuleCall):
            yield c
        elif isinstance(c, (Not, NotJoin, Or, OrJoin, And)):
            yield from _calls(c.clauses)


def check_rules(clauses: Query | Iterable[Any], rules: Iterable[Rule]) -> None:
    """Check that every rule call in ``clauses`` (or a query's ``:where``) names a rule of
    ``rules`` and passes as many arguments as it has parameters.

    Raises
    ------
    ArityMismatchError
        ``rule edge defined with 2 arguments, called with 3 in (edge ?x ?y ?z)``.
    QueryError
        A call of a rule that is not defined.

    Examples
    --------
    >>> from queries.parse import parse_query, parse_rules
    >>> rules = parse_rules('[[(edge ?a ?b) [?a :link ?b]]]')
    >>> check_rules(parse_query('[:find ?x :in $ % :where (edge ?x ?y ?z)]'), rules)
    Traceback (most recent call last):
    ...
    wcoj.errors.ArityMismatchError: rule edge defined with 2 arguments, called with 3 in (edge ?x ?y ?z)
    """
    arity: dict[str, int] = {}
    required: dict[str, int] = {}
    for r in rules:
        arity.setdefault(r.name, len(r.params))
        required.setdefault(r.name, len(r.required))
    if isinstance(clauses, Query):
        _check_required(clauses.where, _union(free_vars(i) for i in clauses.inputs), required)
    for call in _calls(clauses.where if isinstance(clauses, Query) else clauses):
        if call.name not in arity:
            known = ", ".join(sorted(arity)) or "none"
            raise _fail(f"unknown rule {_cut(call.name)} called in {_show(call)}; rules defined: "
                        f"{_cut(known)}")
        if len(call.args) != arity[call.name]:
            n = arity[call.name]
            raise _arity(call, n, len(call.args), f"rule {call.name} defined with {n} "
                         f"argument{'s' if n != 1 else ''}, called with {len(call.args)} in "
                         f"{_show(call)}")
