"""Datomic queries, rules and pull patterns as small frozen dataclasses, and their variables.

This module holds the nodes and the variable helpers (:func:`free_vars`, :func:`bound_vars`,
:func:`required_vars`); reading and checking live in :mod:`queries.parse`, whose
``parse_query``, ``parse_rules``, ``parse_pull`` and ``check_rules`` are re-exported here.
``parse_query`` turns EDN text (vector form ``[:find ... :where ...]`` or map form
``{:find [...] :where [...]}``), already-read EDN data, or plain Python data (keywords written
as strings that start with ``:``) into a :class:`Query`. Every node prints as the EDN it came
from, which is what error messages quote. The checks that need no database run here:
variables in ``:find``/``:with`` that nothing binds, unsafe negation, ``or`` branches that
use different variables, patterns of the wrong length, unknown aggregates, ``:keys`` of the
wrong length, rule arity. Ordering of predicates and the choice of join plan are the planner's
(it uses :func:`free_vars`, :func:`bound_vars` and :func:`required_vars`).

Relies on :mod:`queries.edn`; used by :mod:`queries.parse`, the planner and ``Database.q``.

>>> q = parse_query('[:find ?name :where [?p :person/name ?name] [(< ?name "M")]]')
>>> q
[:find ?name :where [?p :person/name ?name] [(< ?name "M")]]
>>> q.find, q.where[0].terms
(?name, (?p, :person/name, ?name))
>>> parse_query([":find", "?t", ":where", ["?m", ":movie/title", "?t"]]) == parse_query(
...     '[:find ?t :where [?m :movie/title ?t]]')
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Union

from queries.edn import Keyword, Symbol, dumps_safe
from wcoj.errors import excerpt

__all__ = [
    "Var", "Const", "Blank", "SrcVar", "RulesVar",
    "Pattern", "Predicate", "FnCall", "BindScalar", "BindTuple", "BindColl", "BindRel",
    "Not", "NotJoin", "Or", "OrJoin", "And", "RuleCall", "Rule",
    "FindVar", "FindAggregate", "FindPull", "FindRel", "FindColl", "FindTuple", "FindScalar",
    "PullAttr", "PullWildcard", "PullJoin", "PullRecursion", "PullPattern", "Query",
    "AGGREGATES", "parse_query", "parse_rules", "parse_pull", "check_rules",
    "free_vars", "bound_vars", "required_vars",
]

#: aggregate name -> whether it also takes a leading constant ``n`` (``(min 3 ?x)``)
AGGREGATES = {"count": False, "count-distinct": False, "sum": False, "avg": False,
              "min": True, "max": True, "median": False, "variance": False, "stddev": False,
              "distinct": False, "rand": True, "sample": True}


class _Node:
    """Base of every node: ``repr`` and ``str`` give the node's EDN text."""

    __slots__ = ()

    def edn(self) -> str:  # pragma: no cover - every node overrides it
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.edn()

    __str__ = __repr__


def _edn(x: Any) -> str:
    return x.edn() if isinstance(x, _Node) else dumps_safe(x)


def _join(items: Iterable[Any]) -> str:
    return " ".join(_edn(x) for x in items)


def _show(x: Any) -> str:
    """A form as an error message quotes it: a bounded excerpt of its EDN."""
    return excerpt(_edn(x), quote=False)


def _show_all(items: Iterable[Any]) -> str:
    return excerpt(_join(items), quote=False)


def _cut(text: Any) -> str:
    return excerpt(str(text), quote=False)


# ---------------------------------------------------------------------------- terms

@dataclass(frozen=True, repr=False)
class Var(_Node):
    """A query variable such as ``?x`` (the name keeps its ``?``)."""

    name: str

    def edn(self) -> str:
        return self.name


@dataclass(frozen=True, repr=False)
class Const(_Node):
    """A constant: keyword, string, number, boolean, instant, or a lookup-ref tuple."""

    value: Any

    def edn(self) -> str:
        return dumps_safe(self.value)


@dataclass(frozen=True, repr=False)
class Blank(_Node):
    """``_``: matches anything and binds nothing."""

    def edn(self) -> str:
        return "_"


@dataclass(frozen=True, repr=False)
class SrcVar(_Node):
    """A data source such as ``$`` or ``$movies``."""

    name: str = "$"

    def edn(self) -> str:
        return self.name


@dataclass(frozen=True, repr=False)
class RulesVar(_Node):
    """``%``: the rule set input."""

    def edn(self) -> str:
        return "%"


DEFAULT_SRC = SrcVar("$")
Term = Union[Var, Const, Blank, SrcVar]


def _src_prefix(src: SrcVar) -> str:
    return "" if src == DEFAULT_SRC else src.name + " "


# ---------------------------------------------------------------------------- clauses

@dataclass(frozen=True, repr=False)
class Pattern(_Node):
    """A data pattern ``[e a v tx]`` of 2 to 4 terms, read from ``src``."""

    terms: tuple[Term, ...]
    src: SrcVar = DEFAULT_SRC

    def edn(self) -> str:
        return f"[{_src_prefix(self.src)}{_join(self.terms)}]"


@dataclass(frozen=True, repr=False)
class Predicate(_Node):
    """A predicate expression ``[(fn arg ...)]``; it filters and binds nothing."""

    fn: str
    args: tuple[Term, ...]

    def edn(self) -> str:
        return f"[({_join((Symbol(self.fn),) + self.args)})]"


@dataclass(frozen=True, repr=False)
class BindScalar(_Node):
    """``?x``: bind one value."""

    var: Var

    def edn(self) -> str:
        return self.var.edn()


@dataclass(frozen=True, repr=False)
class BindTuple(_Node):
    """``[?a ?b]``: bind the positions of one tuple (``_`` skips one)."""

    elements: tuple[Any, ...]

    def edn(self) -> str:
        return f"[{_join(self.elements)}]"


@dataclass(frozen=True, repr=False)
class BindColl(_Node):
    """``[?x ...]``: bind each element of a collection in turn."""

    binding: Any

    def edn(self) -> str:
        return f"[{self.binding.edn()} ...]"


@dataclass(frozen=True, repr=False)
class BindRel(_Node):
    """``[[?a ?b]]``: bind each tuple of a relation."""

    elements: tuple[Any, ...]

    def edn(self) -> str:
        return f"[[{_join(self.elements)}]]"


Binding = Union[BindScalar, BindTuple, BindColl, BindRel]


@dataclass(frozen=True, repr=False)
class FnCall(_Node):
    """A function expression ``[(fn arg ...) binding]``."""

    fn: str
    args: tuple[Term, ...]
    binding: Binding

    def edn(self) -> str:
        return f"[({_join((Symbol(self.fn),) + self.args)}) {self.binding.edn()}]"


@dataclass(frozen=True, repr=False)
class Not(_Node):
    """``(not clause ...)``: its variables bound by the rest of the query join it, the
    others are local to it (at least one must be bound)."""

    clauses: tuple[Any, ...]
    src: SrcVar = DEFAULT_SRC

    def edn(self) -> str:
        return f"({_src_prefix(self.src)}not {_join(self.clauses)})"


@dataclass(frozen=True, repr=False)
class NotJoin(_Node):
    """``(not-join [?v ...] clause ...)``: only ``vars`` join the rest of the query."""

    vars: tuple[Var, ...]
    clauses: tuple[Any, ...]
    src: SrcVar = DEFAULT_SRC

    def edn(self) -> str:
        return f"({_src_prefix(self.src)}not-join [{_join(self.vars)}] {_join(self.clauses)})"


@dataclass(frozen=True, repr=False)
class Or(_Node):
    """``(or branch ...)``: a union; every branch must use the same variables."""

    clauses: tuple[Any, ...]
    src: SrcVar = DEFAULT_SRC

    def edn(self) -> str:
        return f"({_src_prefix(self.src)}or {_join(self.clauses)})"


@dataclass(frozen=True, repr=False)
class OrJoin(_Node):
    """``(or-join [[?req ...] ?v ...] branch ...)``: ``required`` must be bound before."""

    required: tuple[Var, ...]
    vars: tuple[Var, ...]
    clauses: tuple[Any, ...]
    src: SrcVar = DEFAULT_SRC

    def edn(self) -> str:
        head = _join(self.vars)
        if self.required:
            head = f"[{_join(self.required)}]" + (" " + head if head else "")
        return f"({_src_prefix(self.src)}or-join [{head}] {_join(self.clauses)})"


@dataclass(frozen=True, repr=False)
class And(_Node):
    """``(and clause ...)``: one branch of an ``or`` made of several clauses."""

    clauses: tuple[Any, ...]

    def edn(self) -> str:
        return f"(and {_join(self.clauses)})"


@dataclass(frozen=True, repr=False)
class RuleCall(_Node):
    """``(name arg ...)``: a call of a rule from the ``%`` input."""

    name: str
    args: tuple[Term, ...]
    src: SrcVar = DEFAULT_SRC

    def edn(self) -> str:
        return f"({_src_prefix(self.src)}{_join((Symbol(self.name),) + self.args)})"


Clause = Union[Pattern, Predicate, FnCall, Not, NotJoin, Or, OrJoin, And, RuleCall]


@dataclass(frozen=True, repr=False)
class Rule(_Node):
    """One definition ``[(name [?req ...] ?v ...) clause ...]`` of a (maybe recursive) rule."""

    name: str
    required: tuple[Var, ...]
    vars: tuple[Var, ...]
    body: tuple[Any, ...]

    @property
    def params(self) -> tuple[Var, ...]:
        """All head variables, the required ones first."""
        return self.required + self.vars

    def edn(self) -> str:
        req = f"[{_join(self.required)}]" if self.required else ""
        head = " ".join(x for x in (self.name, req, _join(self.vars)) if x)
        return f"[({head}) {_join(self.body)}]"


# ---------------------------------------------------------------------------- pull

@dataclass(frozen=True, repr=False)
class PullAttr(_Node):
    """An attribute in a pull pattern; ``reverse`` for ``:movie/_cast`` (``attr`` is forward)."""

    attr: str
    reverse: bool = False
    limit: int | None = None
    default: Const | None = None
    alias: Any = None

    @property
    def key(self) -> str:
        """The attribute as written, e.g. ``:movie/_cast`` (``:_friend`` without a namespace)."""
        if not self.reverse:
            return self.attr
        k = Keyword(self.attr)
        return f":{k.namespace}/_{k.name}" if k.namespace else f":_{k.name}"

    def edn(self) -> str:
        opts = [(":limit", self.limit), (":default", self.default), (":as", self.alias)]
        text = " ".join(f"{k} {_edn(v)}" for k, v in opts if v is not None)
        return f"({self.key} {text})" if text else self.key


@dataclass(frozen=True, repr=False)
class PullWildcard(_Node):
    """``*``: every attribute of the entity."""

    def edn(self) -> str:
        return "*"


@dataclass(frozen=True, repr=False)
class PullRecursion(_Node):
    """``...`` (``depth=None``, unbounded) or a depth limit in a recursive pull."""

    depth: int | None = None

    def edn(self) -> str:
        return "..." if self.depth is None else str(self.depth)


@dataclass(frozen=True, repr=False)
class PullPattern(_Node):
    """A pull pattern: attributes, ``*`` and joins ``{attr pattern}``."""

    items: tuple[Any, ...]

    def edn(self) -> str:
        return f"[{_join(self.items)}]"


@dataclass(frozen=True, repr=False)
class PullJoin(_Node):
    """``{attr sub-pattern}``: follow a reference attribute and pull ``pattern`` there."""

    attr: PullAttr
    pattern: PullPattern | PullRecursion

    def edn(self) -> str:
        return f"{{{self.attr.edn()} {self.pattern.edn()}}}"


# ---------------------------------------------------------------------------- find and query

@dataclass(frozen=True, repr=False)
class FindVar(_Node):
    """A plain variable in ``:find``."""

    var: Var

    def edn(self) -> str:
        return self.var.edn()


@dataclass(frozen=True, repr=False)
class FindAggregate(_Node):
    """``(fn ?x)`` or ``(fn n ?x)`` in ``:find``; ``var`` is the aggregated variable."""

    fn: str
    args: tuple[Any, ...]

    @property
    def var(self) -> Var:
        return self.args[-1]

    def edn(self) -> str:
        return f"({_join((Symbol(self.fn),) + self.args)})"


@dataclass(frozen=True, repr=False)
class FindPull(_Node):
    """``(pull ?e pattern)``; the pattern may also be an ``:in`` variable."""

    var: Var
    pattern: PullPattern | Var
    src: SrcVar = DEFAULT_SRC

    def edn(self) -> str:
        return f"(pull {_src_prefix(self.src)}{self.var.edn()} {self.pattern.edn()})"


@dataclass(frozen=True, repr=False)
class FindRel(_Node):
    """``:find ?a ?b``: a set of tuples."""

    elements: tuple[Any, ...]

    def edn(self) -> str:
        return _join(self.elements)


@dataclass(frozen=True, repr=False)
class FindColl(_Node):
    """``:find [?a ...]``: a collection of values."""

    element: Any

    @property
    def elements(self) -> tuple[Any, ...]:
        return (self.element,)

    def edn(self) -> str:
        return f"[{self.element.edn()} ...]"


@dataclass(frozen=True, repr=False)
class FindTuple(_Node):
    """``:find [?a ?b]``: a single tuple."""

    elements: tuple[Any, ...]

    def edn(self) -> str:
        return f"[{_join(self.elements)}]"


@dataclass(frozen=True, repr=False)
class FindScalar(_Node):
    """``:find ?a .``: a single value."""

    element: Any

    @property
    def elements(self) -> tuple[Any, ...]:
        return (self.element,)

    def edn(self) -> str:
        return f"{self.element.edn()} ."


FindSpec = Union[FindRel, FindColl, FindTuple, FindScalar]


@dataclass(frozen=True, repr=False)
class Query(_Node):
    """A parsed query. ``inputs`` is ``($,)`` when the text has no ``:in``.

    ``keys_kind`` is ``"keys"``, ``"strs"`` or ``"syms"`` when ``keys`` is given.
    """

    find: FindSpec
    where: tuple[Any, ...] = ()
    inputs: tuple[Any, ...] = (DEFAULT_SRC,)
    with_vars: tuple[Var, ...] = ()
    keys: tuple[str, ...] | None = None
    keys_kind: str | None = None

    def edn(self) -> str:
        parts = [f":find {self.find.edn()}"]
        if self.keys is not None:
            parts.append(f":{self.keys_kind} {' '.join(self.keys)}")
        if self.with_vars:
            parts.append(f":with {_join(self.with_vars)}")
        if self.inputs != (DEFAULT_SRC,):
            parts.append(f":in {_join(self.inputs)}")
        if self.where:
            parts.append(f":where {_join(self.where)}")
        return f"[{' '.join(parts)}]"


# ---------------------------------------------------------------------------- variables

def _vars(items: Iterable[Any]) -> frozenset[Var]:
    return frozenset(x for x in items if isinstance(x, Var))


def free_vars(node: Any) -> frozenset[Var]:
    """Variables of ``node`` that are visible to the enclosing clauses.

    The local variables of ``not-join`` and ``or-join`` are hidden; for a ``not`` all of its
    variables are visible, since every one joins the rest of the query.

    >>> q = parse_query('[:find ?a :where [?a :s 1] (not-join [?a] [?a :r ?b])]')
    >>> sorted(map(str, free_vars(q.where[1]))), sorted(map(str, free_vars(q.where[1].clauses)))
    (['?a'], ['?a', '?b'])
    """
    if isinstance(node, Pattern):
        return _vars(node.terms)
    if isinstance(node, (Predicate, RuleCall)):
        return _vars(node.args)
    if isinstance(node, FnCall):
        return _vars(node.args) | free_vars(node.binding)
    if isinstance(node, (NotJoin, OrJoin)):
        return frozenset(getattr(node, "required", ()) + node.vars)
    if isinstance(node, Rule):
        return frozenset(node.params)
    if isinstance(node, (Not, Or, And)):
        return _union(free_vars(c) for c in node.clauses)
    if isinstance(node, BindScalar):
        return frozenset([node.var])
    if isinstance(node, (BindTuple, BindRel)):
        return _union(free_vars(e) for e in node.elements)
    if isinstance(node, BindColl):
        return free_vars(node.binding)
    if isinstance(node, Var):
        return frozenset([node])
    if isinstance(node, (tuple, list)):
        return _union(free_vars(c) for c in node)
    return frozenset()


def bound_vars(node: Any) -> frozenset[Var]:
    """Variables that ``node`` binds when it matches (a tuple of clauses: their union).

    Predicates and negations bind nothing; an ``or`` binds what every branch binds.

    >>> q = parse_query('[:find ?a :where [?a :r ?b] [(inc ?b) ?c] [(> ?c 2)] (not [?a :s 1])]')
    >>> [sorted(map(str, bound_vars(c))) for c in q.where]
    [['?a', '?b'], ['?c'], [], []]
    """
    if isinstance(node, (Pattern, RuleCall)):
        return free_vars(node)
    if isinstance(node, FnCall):
        return free_vars(node.binding)
    if isinstance(node, (Or, OrJoin)):
        common = frozenset.intersection(*(bound_vars(c) for c in node.clauses))
        return common if isinstance(node, Or) else common & free_vars(node)
    if isinstance(node, And):
        return bound_vars(node.clauses)
    if isinstance(node, (tuple, list)):
        return _union(bound_vars(c) for c in node)
    if isinstance(node, (BindScalar, BindTuple, BindColl, BindRel)):
        return free_vars(node)
    return frozenset()


def required_vars(node: Any) -> frozenset[Var]:
    """Variables other clauses must bind before ``node`` can run.

    >>> q = parse_query('[:find ?a :where [?a :r ?b] [(str ?b "x") ?c] (not [?a :s ?b])]')
    >>> [sorted(map(str, required_vars(c))) for c in q.where]
    [[], ['?b'], ['?a', '?b']]
    """
    if isinstance(node, (Predicate, FnCall)):
        return _vars(node.args)
    if isinstance(node, (Not, NotJoin)):
        return free_vars(node)
    if isinstance(node, OrJoin):
        return frozenset(node.required) | (
            _union(required_vars(c) for c in node.clauses) & free_vars(node))
    if isinstance(node, Or):
        return _union(required_vars(c) for c in node.clauses)
    if isinstance(node, (And, tuple, list)):
        clauses = node.clauses if isinstance(node, And) else node
        return _union(required_vars(c) for c in clauses) - bound_vars(clauses)
    return frozenset()


def _union(sets: Iterable[frozenset[Var]]) -> frozenset[Var]:
    return frozenset().union(*sets)


def _names(variables: Iterable[Var]) -> list[str]:
    return sorted(v.name for v in variables)


# re-exported so ``from queries.ast import parse_query`` keeps working; at the end because
# queries.parse imports the nodes above
from queries.parse import check_rules, parse_pull, parse_query, parse_rules  # noqa: E402
