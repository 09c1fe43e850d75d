"""Reading and checking Datomic queries, rules and pull patterns into :mod:`queries.ast` nodes.

``parse_query`` accepts EDN text (vector or map form), already-read EDN data, or Python data
(keywords written as strings that start with ``:``) and runs the checks that need no database:
unbound ``:find``/``:with`` variables, unsafe negation, ``or`` branches with different
variables, pattern length, unknown aggregates, ``:keys`` length, rule arity.

Relies on :mod:`queries.ast`, :mod:`queries.edn`, :mod:`queries.pullspec` (pull patterns)
and :mod:`wcoj.errors`; used by ``Database.q``/``view`` and re-exported by
:mod:`queries.ast`.

>>> parse_query('[:find ?t :where [?m :movie/title ?t]]').where[0].terms
(?m, :movie/title, ?t)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from indexes.interner import check_depth
from queries.ast import (
    AGGREGATES, DEFAULT_SRC, And, BindColl, BindRel, BindScalar, BindTuple, Blank, Const,
    FindAggregate, FindColl, FindPull, FindRel, FindScalar, FindSpec, FindTuple, FindVar,
    FnCall, Not, NotJoin, Or, OrJoin, Pattern, Predicate, PullPattern, Query, Rule, RuleCall,
    RulesVar, SrcVar, Term, Var, _cut, _edn, _names, _show, _show_all, _union, bound_vars, free_vars,
)
from queries.edn import EdnList, Keyword, Symbol, hashable, loads
from queries.pullspec import read_pull as _pull
from queries.scope import _arity, _calls, _check_scope, check_rules
from wcoj.errors import QueryError, UnboundVariableError

__all__ = ["parse_query", "parse_rules", "parse_pull", "check_rules"]


# ---------------------------------------------------------------------------- reading

_LIST_HEADS = {"not", "not-join", "or", "or-join", "and"}
_PY_SYMBOLS = {"_", "...", ".", "*", "%"}
_SECTIONS = (":find", ":keys", ":strs", ":syms", ":with", ":in", ":where")


def _from_python(x: Any, head: bool = False) -> Any:
    """Python query data -> EDN data: ``":k"`` keywords, ``"?x"`` symbols, tuples lists."""
    if type(x) is str:
        if len(x) > 1 and x[0] == ":":
            return Keyword(x)
        if x[:1] in ("?", "$") or x in _PY_SYMBOLS or head:
            return Symbol(x)
        return x
    if isinstance(x, tuple):
        return EdnList(_from_python(v, i == 0) for i, v in enumerate(x))
    if isinstance(x, list):
        if x and type(x[0]) is str and x[0] in _LIST_HEADS:
            return EdnList(_from_python(v, i == 0) for i, v in enumerate(x))
        return [_from_python(v) for v in x]
    if isinstance(x, dict):
        return {hashable(_from_python(k)): _from_python(v) for k, v in x.items()}
    return x


def _read(data: Any) -> Any:
    if isinstance(data, str):
        return loads(data)
    check_depth(data, what="query data", error=QueryError)  # _from_python recurses
    return data


def _is_sym(x: Any, prefix: str = "") -> bool:
    return isinstance(x, Symbol) and x.startswith(prefix)


def _is_pattern_name(x: Any) -> bool:
    """A plain symbol (``pattern``): Datomic's name for a pull pattern given in ``:in``."""
    return isinstance(x, Symbol) and x[:1] not in ("?", "$", "%", "_", ".", "*") and x != "..."


def _fail(message: str) -> QueryError:
    return QueryError(message)


def _term(x: Any, form: Any) -> Term:
    if isinstance(x, Symbol):
        if x.startswith("?"):
            return Var(str(x))
        if x == "_":
            return Blank()
        if x.startswith("$"):
            return SrcVar(str(x))
        raise _fail(f"unexpected symbol {_cut(x)} in {_show(form)}; expected a variable (?x), _, "
                    "a source ($) or a constant")
    if isinstance(x, EdnList):
        raise _fail(f"nested expression {_show(x)} in {_show(form)}; bind it to a variable "
                    "with its own [(f ...) ?v] clause")
    return Const(hashable(x))


def _args(call: EdnList, form: Any) -> tuple:
    """A function's arguments; nested ``q`` takes a query first (text, a form, ``'form`` or
    a variable; a constant is parsed here) and may pass the rules ``%`` on."""
    if call[0] != "q" or len(call) < 2:
        return tuple(_term(a, form) for a in call[1:])
    query = call[1]
    if isinstance(query, EdnList) and len(query) == 2 and query[0] == "quote":
        query = query[1]
    first = _term(query, form) if _is_sym(query, "?") else Const(parse_query(query))
    return (first,) + tuple(RulesVar() if a == "%" and isinstance(a, Symbol) else _term(a, form)
                            for a in call[2:])


def _var(x: Any, form: Any) -> Var:
    if not _is_sym(x, "?"):
        raise _fail(f"expected a variable (?x) in {_show(form)}, found {_show(x)}")
    return Var(str(x))


def _binding(x: Any, form: Any) -> Any:
    if _is_sym(x, "?"):
        return BindScalar(Var(str(x)))
    if isinstance(x, list) and x:
        if len(x) == 2 and x[1] == "...":
            return BindColl(_binding(x[0], form))
        if len(x) == 1 and isinstance(x[0], list):
            return BindRel(tuple(_binding_elem(e, form) for e in x[0]))
        return BindTuple(tuple(_binding_elem(e, form) for e in x))
    raise _fail(f"bad binding {_show(x)} in {_show(form)}; expected ?x, [?a ?b], [?x ...] "
                "or [[?a ?b]]")


def _binding_elem(x: Any, form: Any) -> Any:
    return Blank() if x == "_" and isinstance(x, Symbol) else _binding(x, form)


def _split_src(items: list[Any] | tuple[Any, ...]) -> tuple[SrcVar, list[Any]]:
    if items and _is_sym(items[0], "$"):
        return SrcVar(str(items[0])), list(items[1:])
    return DEFAULT_SRC, list(items)


def _clauses(items: list[Any], form: Any, what: str) -> tuple[Any, ...]:
    if not items:
        raise _fail(f"{what} needs at least one clause in {_show(form)}")
    return tuple(_clause(c) for c in items)


def _clause(x: Any, in_or: bool = False) -> Any:
    if isinstance(x, list) and x and isinstance(x[0], EdnList):
        call = x[0]
        if not call or not isinstance(call[0], Symbol) or _is_sym(call[0], "?"):
            raise _fail(f"expression {_show(x)} must start with a function name")
        args = _args(call, x)
        if len(x) == 1:
            return Predicate(str(call[0]), args)
        if len(x) == 2:
            return FnCall(str(call[0]), args, _binding(x[1], x))
        raise _fail(f"expression clause {_show(x)} has {len(x)} elements; expected "
                    "[(f ...)] or [(f ...) binding]")
    if isinstance(x, list):
        src, terms = _split_src(x)
        if src != DEFAULT_SRC:  # a collection of tuples: any width (checked against its tuples when bound)
            if not terms:
                raise _arity(_edn(x), 1, 0, f"data pattern {_show(x)} has no terms; expected at least one")
        elif not 2 <= len(terms) <= 5:
            expected = 2 if len(terms) < 2 else 5
            raise _arity(_edn(x), expected, len(terms),
                         f"data pattern {_show(x)} has {len(terms)} element"
                         f"{'s' if len(terms) != 1 else ''}; expected 2 to 5 ([e a v tx added], "
                         f"added only in a history database)")
        return Pattern(tuple(_term(t, x) for t in terms), src)
    if isinstance(x, EdnList) and x and _is_sym(x[0], "$"):
        return _with_src(_clause(EdnList(x[1:]), in_or), SrcVar(str(x[0])))
    if isinstance(x, EdnList) and x:
        src, rest = DEFAULT_SRC, list(x)  # a leading $src was taken off above
        head = rest[0]
        if not isinstance(head, Symbol) or head.startswith(("?", "$")):
            raise _fail(f"list clause {_show(x)} must start with not, not-join, or, or-join "
                        "or a rule name")
        if head == "not":
            return Not(_clauses(rest[1:], x, "not"), src)
        if head == "not-join":
            join, body = _join_vars(rest, x)
            return NotJoin(tuple(_var(v, x) for v in join), _clauses(body, x, "not-join"), src)
        if head == "or":
            return Or(tuple(_clause(c, True) for c in _nonempty(rest[1:], x, "or")), src)
        if head == "or-join":
            join, body = _join_vars(rest, x)
            req = join[0] if join and isinstance(join[0], list) else None
            required = tuple(_var(v, x) for v in req) if req is not None else ()
            free = tuple(_var(v, x) for v in (join[1:] if req is not None else join))
            branches = tuple(_clause(c, True) for c in _nonempty(body, x, "or-join"))
            return OrJoin(required, free, branches, src)
        if head == "and":
            if not in_or:
                raise _fail(f"{_show(x)}: (and ...) is only allowed as a branch of or/or-join")
            return And(_clauses(rest[1:], x, "and"))
        return RuleCall(str(head), tuple(_term(a, x) for a in rest[1:]), src)
    raise _fail(f"unknown clause shape {_show(x)}; expected a data pattern [?e :attr ?v], an "
                "expression [(f ...)] or [(f ...) ?out], or a list such as (not ...), "
                "(or ...) or (rule ?x)")


def _with_src(c: Any, src: SrcVar) -> Any:
    """``($b not ...)``: the clause and the clauses inside it read ``$b`` unless they say."""
    if isinstance(c, (Not, NotJoin, Or, OrJoin, And)):
        c = replace(c, clauses=tuple(_with_src(b, src) for b in c.clauses))
    if getattr(c, "src", None) == DEFAULT_SRC:
        c = replace(c, src=src)
    return c


def _join_vars(rest: list[Any], form: Any) -> tuple[list[Any], list[Any]]:
    if len(rest) < 2 or not isinstance(rest[1], list):
        raise _fail(f"{_cut(rest[0])} needs a vector of variables first in {_show(form)}")
    return rest[1], rest[2:]


def _nonempty(items: list[Any], form: Any, what: str) -> list[Any]:
    if not items:
        raise _fail(f"{what} needs at least one branch in {_show(form)}")
    return items


# ---------------------------------------------------------------------------- find, rules, pull

def _find_elem(x: Any, registry: Any = None) -> Any:
    if _is_sym(x, "?"):
        return FindVar(Var(str(x)))
    if isinstance(x, EdnList) and x and isinstance(x[0], Symbol):
        name, args = str(x[0]), list(x[1:])
        if name == "pull":
            src, args = _split_src(args)
            if len(args) != 2:
                raise _arity(_edn(x), 2, len(args), f"pull takes a variable and a pattern, "
                             f"got {len(args)} arguments in {_show(x)}")
            pattern = Var(str(args[1])) if _is_sym(args[1], "?") or _is_pattern_name(args[1]) \
                else _pull(args[1])
            return FindPull(_var(args[0], x), pattern, src)
        if name not in AGGREGATES and registry is not None and name in registry.aggregates:
            if not 1 <= len(args) <= 2 or (len(args) == 2 and _is_sym(args[0], "?")):
                raise _arity(_edn(x), 1, len(args), f"aggregate {name} takes a variable, or "
                             f"a constant and a variable, got {_edn(x)}")
            return FindAggregate(name, tuple(Const(a) for a in args[:-1]) + (_var(args[-1], x),))
        if name not in AGGREGATES:
            raise _fail(f"unknown aggregate {_cut(name)} in {_show(x)}; known: "
                        + ", ".join(sorted(AGGREGATES) + sorted(getattr(
                            registry, "aggregates", ()))))
        takes_n = AGGREGATES[name]
        if not 1 <= len(args) <= (2 if takes_n else 1):
            what = "a variable" + (" or a count n and a variable" if takes_n else "")
            raise _arity(_edn(x), 1, len(args), f"aggregate {name} takes {what}, got "
                         f"{len(args)} argument{'s' if len(args) != 1 else ''} in {_show(x)}")
        if len(args) == 2 and not (type(args[0]) is int and args[0] > 0):
            raise _fail(f"the count in {_show(x)} must be a positive integer")
        terms = tuple(Const(a) for a in args[:-1]) + (_var(args[-1], x),)
        return FindAggregate(name, terms)
    raise _fail(f"bad :find element {_show(x)}; expected ?x, (aggregate ?x) or (pull ?e [...])")


def _find_spec(items: list[Any], registry: Any = None) -> FindSpec:
    if not items:
        raise _fail(":find needs at least one element")
    if len(items) == 2 and items[1] == ".":
        return FindScalar(_find_elem(items[0], registry))
    if len(items) == 1 and isinstance(items[0], list):
        inner = items[0]
        if len(inner) == 2 and inner[1] == "...":
            return FindColl(_find_elem(inner[0], registry))
        if inner and all(e != "..." and e != "." for e in inner):
            return FindTuple(tuple(_find_elem(e, registry) for e in inner))
    if any(isinstance(e, Symbol) and e in (".", "...") for e in items):
        raise _fail(f"bad find spec :find {_show_all(items)}; expected ?a ?b, [?a ...], "
                    "[?a ?b] or ?a .")
    return FindRel(tuple(_find_elem(e, registry) for e in items))


def _rule(x: Any) -> Rule:
    if not (isinstance(x, list) and len(x) >= 2 and isinstance(x[0], (EdnList, list))
            and x[0] and isinstance(x[0][0], Symbol)):
        raise _fail(f"bad rule {_show(x)}; expected [(name ?a ?b) clause ...]")
    head, name = x[0], str(x[0][0])
    params = list(head[1:])
    req = params.pop(0) if params and isinstance(params[0], list) else []
    rule = Rule(name, tuple(_var(v, head) for v in req), tuple(_var(v, head) for v in params),
                tuple(_clause(c) for c in x[1:]))
    unbound = frozenset(rule.vars) - bound_vars(rule.body) - frozenset(rule.required)
    if unbound:  # bottom-up evaluation needs range-restricted rules
        raise UnboundVariableError(rule, _names(unbound), "a rule's head variables must be "
                                   f"bound by its body, or be declared required: ({name} "
                                   f"[{' '.join(_names(unbound))}] ...)")
    _check_scope(rule.body, frozenset(rule.required))
    return rule


def parse_pull(pattern: Any) -> PullPattern:
    """Parse a pull pattern: attributes, ``*``, reverse refs, nested maps, options
    (``[:attr :limit n :default v :as key]``, also in the older forms ``(:attr :limit n)``
    and ``(limit :attr n)``).

    >>> p = parse_pull('[:person/name {:movie/_cast [:movie/title]} (:trivia :limit 2)]')
    >>> p
    [:person/name {:movie/_cast [:movie/title]} (:trivia :limit 2)]
    >>> p.items[1].attr.attr, p.items[1].attr.reverse
    (':movie/cast', True)
    """
    data = _read(pattern)
    if not isinstance(pattern, str) and _plain_strings(data):  # Python data: ":attr" strings
        data = _from_python(data)
    return _pull(data)


def _plain_strings(x: Any) -> bool:
    """Whether ``x`` holds a plain ``str`` (Python data; read EDN has keywords)."""
    if type(x) is str:
        return True
    if isinstance(x, dict):
        return any(_plain_strings(k) or _plain_strings(v) for k, v in x.items())
    return isinstance(x, (list, tuple)) and any(_plain_strings(v) for v in x)


def parse_rules(text_or_data: Any) -> tuple[Rule, ...]:
    """Parse a rule set ``[[(name ?a ?b) clause ...] ...]`` and check it.

    Every definition of one name must have the same arity, and every call inside the bodies
    must name a rule of the set with that arity.

    >>> rules = parse_rules('''[[(reach ?a ?b) [?a :link ?b]]
    ...                         [(reach ?a ?b) [?a :link ?c] (reach ?c ?b)]]''')
    >>> [str(r) for r in rules]
    ['[(reach ?a ?b) [?a :link ?b]]', '[(reach ?a ?b) [?a :link ?c] (reach ?c ?b)]']
    """
    data = _read(text_or_data)
    if not isinstance(data, list):
        raise _fail(f"a rule set is a vector of rules, found {_show(data)}")
    if any(isinstance(r, list) and r and isinstance(r[0], (list, tuple)) and r[0]
           and type(r[0][0]) is str for r in data):
        data = [[_from_python(tuple(r[0]))] + [_from_python(c) for c in r[1:]]
                if isinstance(r, list) and r and isinstance(r[0], (list, tuple)) else r
                for r in data]
    rules = tuple(_rule(r) for r in data)
    first: dict[str, Rule] = {}
    for r in rules:
        f = first.setdefault(r.name, r)
        if len(f.params) != len(r.params) or len(f.required) != len(r.required):
            raise _arity(r, len(f.params), len(r.params),
                         f"rule {r.name} is defined with {len(f.params)} arguments in "
                         f"{_show(f)} and with {len(r.params)} in {_show(r)}")
    for r in rules:
        check_rules(r.body, rules)
    return rules


# ---------------------------------------------------------------------------- queries

def _sections(data: Any) -> dict[str, list[Any]]:
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            if not isinstance(v, list):
                raise _fail(f"query section {_show(k)} must be a vector in the map form, "
                            f"found {_show(v)}")
            out[str(k)] = v
    elif isinstance(data, list):
        if not data or not isinstance(data[0], Keyword):
            raise _fail(f"a query starts with :find, found {_show(data[0]) if data else '[]'}")
        out, current = {}, ""
        for x in data:
            if isinstance(x, Keyword):
                if x in out:
                    raise _fail(f"section {_cut(x)} appears twice in the query")
                current = str(x)
                out[current] = []
            else:
                out[current].append(x)
    else:
        raise _fail(f"a query is a vector [:find ...] or a map {{:find [...]}}, found "
                    f"{_show(data)}")
    unknown = [k for k in out if k not in _SECTIONS]
    if unknown:
        raise _fail(f"unknown query section {_cut(unknown[0])}; expected one of "
                    + ", ".join(_SECTIONS))
    if ":find" not in out:
        raise _fail("the query has no :find")
    return out


def _input(x: Any) -> Any:
    if _is_sym(x, "$"):
        return SrcVar(str(x))
    if x == "%" and isinstance(x, Symbol):
        return RulesVar()
    if _is_pattern_name(x):  # :in $ pattern ... (pull ?e pattern), as in Datomic
        return BindScalar(Var(str(x)))
    return _binding(x, Symbol(":in"))


def _check_query(q: Query) -> None:
    in_vars = _union(free_vars(i) for i in q.inputs)
    names = [i.name for i in q.inputs if isinstance(i, SrcVar)]
    seen: set[Any] = set()
    for i in q.inputs:
        for v in (free_vars(i) or {i}):
            if v in seen:
                raise _fail(f":in declares {_show(v)} twice in {_show(q)}")
            seen.add(v)
    _check_scope(q.where, in_vars)
    bound = in_vars | bound_vars(q.where)
    missing = frozenset()
    for e in q.find.elements:
        missing |= free_vars(e.var) - bound
        if isinstance(e, FindPull) and isinstance(e.pattern, Var) and e.pattern not in in_vars:
            missing |= {e.pattern}
    if missing:
        raise UnboundVariableError(f":find {_show(q.find)}", _names(missing),
                                   "it appears nowhere in :where or :in")
    patterns = {e.pattern for e in q.find.elements if isinstance(e, FindPull) and isinstance(e.pattern, Var)}
    for i in q.inputs:
        if isinstance(i, BindScalar) and not i.var.name.startswith("?") and i.var not in patterns:
            raise _fail(f":in names {i.var.name}, a plain symbol: that names a pull pattern, "
                        f"which :find must use as (pull ?e {i.var.name}); a variable starts with ?")
    missing = frozenset(q.with_vars) - bound
    if missing:
        raise UnboundVariableError(f":with {_show_all(q.with_vars)}", _names(missing),
                                   "it appears nowhere in :where or :in")
    if q.keys is not None:
        if isinstance(q.find, (FindColl, FindScalar)):
            raise _fail(f":{q.keys_kind} needs a relation or tuple find spec, not "
                        f":find {_show(q.find)}")
        n, k = len(q.find.elements), len(q.keys)
        if n != k:
            raise _arity(f":{q.keys_kind}", n, k, f":{q.keys_kind} names {k} key"
                         f"{'s' if k != 1 else ''} but :find has {n} element"
                         f"{'s' if n != 1 else ''}: :find {_show(q.find)}")
    calls = list(_calls(q.where))
    if calls and RulesVar() not in q.inputs:
        raise _fail(f"rule call {_show(calls[0])} needs the rules as an input: add % to :in")
    for c in _sources(q.where):
        if c.src.name not in names:
            raise _fail(f"{_show(c)} reads {c.src.name}, but :in declares "
                        + (" ".join(names) or "no data source"))


def _sources(clauses: Iterable[Any]) -> Iterable[Any]:
    for c in clauses:
        if isinstance(c, (Pattern, RuleCall, Not, NotJoin, Or, OrJoin)):
            yield c
        if isinstance(c, (Not, NotJoin, Or, OrJoin, And)):
            yield from _sources(c.clauses)


def parse_query(text_or_data: Any, rules: Iterable[Rule] | None = None,
                registry: Any = None) -> Query:
    """Parse and check a Datomic query.

    Parameters
    ----------
    text_or_data : str, list or dict
        EDN text, already-read EDN data, or Python data in vector form
        ``[":find", "?e", ":where", ["?e", ":movie/title", "?t"]]`` or map form. In Python
        data, strings starting with ``:`` are keywords, ``?x`` variables, ``_`` a blank,
        ``$`` a source, ``%`` the rules, and other strings constants; tuples are lists
        (``("<", "?y", 1990)``), as is a list that starts with ``"not"``, ``"or"``, ...
    rules : iterable of Rule, optional
        When given, rule calls are checked against these rules (see :func:`check_rules`).
    registry : queries.functions.Registry, optional
        Aggregates registered by name there are known too (``(my-agg ?x)``).

    Returns
    -------
    Query

    Raises
    ------
    EdnSyntaxError
        Malformed EDN text.
    UnboundVariableError
        A ``:find``/``:with`` variable nothing binds; a ``not`` or predicate whose variables
        nothing binds; ``or`` branches with different variables.
    ArityMismatchError
        Patterns of fewer than 2 or more than 4 elements, aggregates with the wrong number
        of arguments, ``:keys`` of another length than ``:find``, rule calls (with ``rules``).
    QueryError
        Any other malformed query: unknown clause shape, aggregate or section.

    Examples
    --------
    >>> q = parse_query('''[:find ?title (count ?actor) :with ?m
    ...                     :in $ ?year
    ...                     :where [?m :movie/year ?year] [?m :movie/title ?title]
    ...                            [?m :movie/cast ?actor]]''')
    >>> q.find.elements[1].fn, q.inputs, q.with_vars
    ('count', ($, ?year), (?m,))
    >>> parse_query('[:find ?x :where [?x :a ?y] (not [?z :b ?w])]')
    Traceback (most recent call last):
    ...
    wcoj.errors.UnboundVariableError: unbound variables ?w, ?z in (not [?z :b ?w]): none of the variables of a not is bound by the rest of the query (unsafe negation); bind one, or use not-join
    """
    data = _read(text_or_data)
    if isinstance(data, (list, dict)) and any(type(x) is str for x in data):
        data = _from_python(data)  # read EDN has no plain strings at the top level
    s = _sections(data)
    kind = next((k for k in (":keys", ":strs", ":syms") if k in s), None)
    if kind and sum(k in s for k in (":keys", ":strs", ":syms")) > 1:
        raise _fail("use only one of :keys, :strs and :syms")
    if ":in" in s and not s[":in"]:
        raise _fail(":in needs at least one input")
    q = Query(
        find=_find_spec(s[":find"], registry),
        where=tuple(_clause(c) for c in s.get(":where", ())),
        inputs=tuple(_input(x) for x in s[":in"]) if ":in" in s else (DEFAULT_SRC,),
        with_vars=tuple(_var(v, Symbol(":with")) for v in s.get(":with", ())),
        keys=tuple(str(k) for k in s[kind]) if kind else None,
        keys_kind=kind[1:] if kind else None,
    )
    _check_query(q)
    if rules is not None:
        check_rules(q, rules)
    return q
