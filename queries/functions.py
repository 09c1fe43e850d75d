"""The built-in predicates and functions of Datomic queries, on decoded Python values.

Predicates (``=``, ``not=``, ``<``, ``>``, ``<=``, ``>=`` and the boolean functions) and
functions (``str``, ``subs``, ``+``, ``-``, ``*``, ``/``, ``quot``, ``mod``, ``inc``, ``dec``,
``count``, ``re-find``, ``identity``, ``ground``, ``tuple``, ``untuple``, ...) are plain Python
callables here. Comparisons are made on decoded values (the interner's ids are ordered
only for longs and instants); values of different kinds that Python cannot order compare
false instead of raising, so ``[(< ?x 3)]`` over mixed values simply drops those rows.
The database functions ``get-else``, ``get-some`` and ``missing?`` need the store and live in
the compiler.

``Registry`` holds the functions and aggregates a program registers by name (one per
``Database``); ``call`` and ``aggregate`` take it.

Regular expressions (``re-find``, ``re-matches``, ``re-pattern``) run on RE2
(``google-re2``), which matches in time linear in the text: ``(a+)+$`` on 30 characters
took Python's backtracking ``re`` 30 s. RE2 has no backreferences or lookaround; a pattern
that uses them is a ``QueryError``.

Relies on ``queries.ast`` (the built-in aggregates' names), ``wcoj.errors`` and ``re2``;
used by ``queries.bind``, ``queries.circuits`` and ``queries.database``.

>>> call("str", ["a", 1, None]), call("quot", [7, 2]), call("<", [1, 2, 3])
('a1', 3, True)
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import re2

from queries.ast import AGGREGATES
from queries.edn import Keyword
from wcoj.errors import QueryError, excerpt

__all__ = ["FUNCTIONS", "DB_FUNCTIONS", "Registry", "call", "is_known", "compare", "aggregate"]

DB_FUNCTIONS = {"get-else", "get-some", "missing?"}


def _chain(op: Callable[[Any, Any], bool]) -> Callable[..., bool]:
    def pred(*xs: Any) -> bool:
        try:
            return all(op(a, b) for a, b in zip(xs, xs[1:]))
        except TypeError:
            return False
    return pred


def _eq(*xs: Any) -> bool:
    return all(_same(a, xs[0]) for a in xs[1:])


def _same(a: Any, b: Any) -> bool:
    # 1 and True, or 1 and 1.0, are different values in Datomic
    return a == b and (type(a) is type(b) or (isinstance(a, str) and isinstance(b, str)))


def _str(*xs: Any) -> str:
    return "".join("" if x is None else _to_str(x) for x in xs)


def _to_str(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, datetime):
        return x.isoformat()
    return str(x)


def _div(a: Any, *bs: Any) -> Any:
    if not bs:
        return 1 / a
    out = a
    for b in bs:
        if isinstance(out, int) and isinstance(b, int) and out % b == 0:
            out = out // b
        else:
            out = out / b
    return out


def _quot(a: Any, b: Any) -> Any:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _rem(a: Any, b: Any) -> Any:
    return a - b * _quot(a, b)


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # the QueryError says it; RE2 would also write to stderr


@functools.lru_cache(maxsize=256)
def _re_compile(pattern: str) -> Any:
    if not isinstance(pattern, str):
        raise QueryError(f"a regular expression is a string, found {type(pattern).__name__}")
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as e:
        why = e.args[0].decode("utf-8", "replace") if e.args and isinstance(
            e.args[0], bytes) else str(e)
        raise QueryError(f"bad regular expression {excerpt(pattern)}: "
                         f"{excerpt(why, quote=False)} (RE2 syntax: no "
                         "backreferences or lookaround)") from None


def _regex(pattern: Any) -> Any:
    """The compiled RE2 pattern of a string, or a pattern from ``re-pattern`` itself."""
    return pattern if isinstance(pattern, re2._Regexp) else _re_compile(pattern)


def _groups(m: Any) -> Any:
    """Clojure's result of a match: the text, or a vector of it and its groups (nil for a
    group that took no part)."""
    if m is None:
        return None
    return m.group(0) if not m.groups() else (m.group(0),) + m.groups()


def _re_find(pattern: Any, s: str) -> Any:
    """``(re-find re s)``: the first match of ``re`` in ``s``.

    >>> _re_find("(a+)+$", "a" * 40 + "b") is None  # linear time, no backtracking
    True
    >>> _re_find("([0-9]+)-(x)?", "ab 12-y")
    ('12-', '12', None)
    """
    return _groups(_regex(pattern).search(s))


def _re_matches(pattern: Any, s: str) -> Any:
    """``(re-matches re s)``: the match of ``re`` against all of ``s``."""
    return _groups(_regex(pattern).fullmatch(s))


def _re_seq(pattern: Any, s: str) -> list:
    """``(re-seq re s)``: every match of ``re`` in ``s``, in order (each as ``re-find``).

    >>> _re_seq("[0-9]+", "a1 b22 c333")
    ['1', '22', '333']
    """
    return [_groups(m) for m in _regex(pattern).finditer(s)]


_RANGE_MAX = 1_000_000  # rows one (range ...) may produce: query text must not exhaust memory


def _range(*args: Any) -> range:
    """``(range end)``, ``(range start end)``, ``(range start end step)`` of longs."""
    if not 1 <= len(args) <= 3 or not all(type(a) is int for a in args):
        raise QueryError("range takes 1 to 3 longs: (range end), (range start end) or "
                         "(range start end step)")
    r = range(*args)
    if len(r) > _RANGE_MAX:
        raise QueryError(f"range of {len(r):,} values: at most {_RANGE_MAX:,}")
    return r


def _get(coll: Any, key: Any, default: Any = None) -> Any:
    """``(get coll key)``: a map's value, or a vector's element, else ``default``."""
    if isinstance(coll, dict):
        return coll.get(key, default)
    if isinstance(coll, (list, tuple, str)) and type(key) is int and 0 <= key < len(coll):
        return coll[key]
    return default


def _contains(coll: Any, key: Any) -> bool:
    """``(contains? coll key)``: a key of a map or set, an index of a vector."""
    if isinstance(coll, (dict, set, frozenset)):
        return key in coll
    if isinstance(coll, (list, tuple, str)):
        return type(key) is int and 0 <= key < len(coll)
    return False


def _subs(s: str, start: int, end: int | None = None) -> str:
    if start < 0 or start > len(s) or (end is not None and not start <= end <= len(s)):
        raise QueryError(f"subs: index out of range for {excerpt(s)}: {start}..{end}")
    return s[start:end]


def _count(x: Any) -> int:
    return 0 if x is None else len(x)


def _minus(a: Any, *bs: Any) -> Any:
    return -a if not bs else a - sum(bs)


def _times(*xs: Any) -> Any:
    out = 1
    for x in xs:
        out *= x
    return out


def _keyword(*parts: Any) -> Keyword:
    """``(keyword "a")`` is ``:a``, ``(keyword "ns" "a")`` is ``:ns/a`` (a keyword stays
    itself), as in Clojure."""
    if len(parts) == 1 and isinstance(parts[0], Keyword):
        return parts[0]
    if not 1 <= len(parts) <= 2 or not all(isinstance(p, str) for p in parts):
        raise QueryError(f"keyword takes a name, or a namespace and a name, as strings; got {excerpt(parts)}")
    return Keyword(":" + "/".join(parts))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "=": _eq, "==": _chain(operator.eq),
    "not=": lambda *xs: not _eq(*xs), "!=": lambda *xs: not _eq(*xs),
    "<": _chain(operator.lt), ">": _chain(operator.gt),
    "<=": _chain(operator.le), ">=": _chain(operator.ge),
    "str": _str, "subs": _subs,
    "+": lambda *xs: sum(xs), "-": _minus, "*": _times, "/": _div,
    "quot": _quot, "rem": _rem, "mod": lambda a, b: a % b,
    "inc": lambda x: x + 1, "dec": lambda x: x - 1,
    "max": max, "min": min, "abs": abs,
    "count": _count, "re-find": _re_find, "re-pattern": _regex, "re-matches": _re_matches,
    "re-seq": _re_seq, "range": _range, "get": _get, "contains?": _contains,
    "not": lambda x: x is None or x is False, "empty?": lambda x: len(x) == 0,
    "identity": lambda x: x, "ground": lambda x: x,
    "tuple": lambda *xs: tuple(xs), "untuple": lambda t: tuple(t),
    "vector": lambda *xs: list(xs), "list": lambda *xs: list(xs),
    "zero?": lambda x: x == 0, "pos?": lambda x: x > 0, "neg?": lambda x: x < 0,
    "even?": lambda x: x % 2 == 0, "odd?": lambda x: x % 2 == 1,
    "nil?": lambda x: x is None, "some?": lambda x: x is not None,
    "true?": lambda x: x is True, "false?": lambda x: x is False,
    "clojure.string/starts-with?": lambda s, p: s.startswith(p),
    "clojure.string/ends-with?": lambda s, p: s.endswith(p),
    "clojure.string/includes?": lambda s, p: p in s,
    "clojure.string/blank?": lambda s: s is None or not s.strip(),
    "clojure.string/lower-case": lambda s: s.lower(),
    "clojure.string/upper-case": lambda s: s.upper(),
    "name": lambda k: k.name if hasattr(k, "name") else str(k),
    "namespace": lambda k: getattr(k, "namespace", None),
    "keyword": _keyword,
    "sqrt": math.sqrt, "double": float, "long": int,
    "compare": lambda a, b: (a > b) - (a < b),
}


def is_known(name: str, registry: Registry | None = None) -> bool:
    """Whether ``name`` is a built-in function, a database function or one ``registry``
    holds."""
    return name in FUNCTIONS or name in DB_FUNCTIONS or (
        registry is not None and name in registry.functions)


class Registry:
    """Functions and aggregates a program registers by name, for its queries to call.

    Query text only *names* a function; the name is looked up in the dicts filled here
    (built-ins first) and never resolved any other way: no import, no eval. Each
    ``Database`` owns one (``db.registry``, filled by ``db.register_function`` and
    ``db.register_aggregate``), and the evaluator passes it to :func:`call` and
    :func:`aggregate`. A name that is neither built in nor registered is an error, as
    before.

    A function gets the decoded arguments of the call. An aggregate gets the bag of its
    group's values (a list), after the constant arguments written before the variable:
    ``(top 3 ?x)`` calls ``top(3, values)``.

    >>> reg = Registry()
    >>> reg.register_function("shout", lambda s: s.upper() + "!")
    >>> reg.register_aggregate("spread", lambda xs: max(xs) - min(xs))
    >>> call("shout", ["hi"], reg), aggregate("spread", None, [3, 9, 4], reg)
    ('HI!', 6)
    >>> call("shout", ["hi"])
    Traceback (most recent call last):
    ...
    wcoj.errors.QueryError: unknown function shout; known: !=, *, +, ...
    """

    def __init__(self, functions: dict[str, Callable[..., Any]] | None = None,
                 aggregates: dict[str, Callable[..., Any]] | None = None) -> None:
        self.functions: dict[str, Callable[..., Any]] = {}
        self.aggregates: dict[str, Callable[..., Any]] = {}
        for name, fn in (functions or {}).items():
            self.register_function(name, fn)
        for name, fn in (aggregates or {}).items():
            self.register_aggregate(name, fn)

    def __repr__(self) -> str:
        return f"Registry(functions={sorted(self.functions)}, aggregates={sorted(self.aggregates)})"

    def register_function(self, name: str, fn: Callable[..., Any]) -> None:
        """Let queries call ``fn`` as ``name`` in predicates and function clauses."""
        self._check(name, fn, FUNCTIONS.keys() | DB_FUNCTIONS, "function")
        self.functions[name] = fn

    def register_aggregate(self, name: str, fn: Callable[..., Any]) -> None:
        """Let ``:find`` use ``(name ?x)`` (``fn(values)``) or ``(name c ?x)``
        (``fn(c, values)``)."""
        self._check(name, fn, AGGREGATES, "aggregate")
        self.aggregates[name] = fn

    @staticmethod
    def _check(name: Any, fn: Any, builtin: Any, what: str) -> None:
        if not (isinstance(name, str) and name and not name.startswith((":", "?", "$"))):
            raise QueryError(f"a {what} name is a symbol's text such as 'my-fn' or "
                             f"'my.ns/fn', got {name!r}")
        if name in builtin:
            raise QueryError(f"{name} is a built-in {what}; register it under another name")
        if not callable(fn):
            raise QueryError(f"{what} {name}: expected a callable, got {type(fn).__name__}")


def compare(a: Any, b: Any) -> int:
    """Total order over mixed values (numbers before strings before others)."""
    ka, kb = _rank(a), _rank(b)
    if ka != kb:
        return (ka > kb) - (ka < kb)
    try:
        return (a > b) - (a < b)
    except TypeError:
        return (repr(a) > repr(b)) - (repr(a) < repr(b))


def _rank(x: Any) -> int:
    if x is None:
        return 0
    if isinstance(x, bool):
        return 1
    if isinstance(x, (int, float, Decimal)):
        return 2
    if isinstance(x, str):
        return 3
    if isinstance(x, datetime):
        return 4
    return 5


def call(name: str, args: list[Any], registry: Registry | None = None) -> Any:
    """Apply the built-in ``name``, or the function ``registry`` holds under that name,
    to decoded ``args``.

    Raises
    ------
    QueryError
        An unknown function, or a function that fails on these arguments.
    """
    fn = FUNCTIONS.get(name)
    if fn is None and registry is not None:
        fn = registry.functions.get(name)
    if fn is None:
        known = sorted(FUNCTIONS) + (sorted(registry.functions) if registry else [])
        raise QueryError(f"unknown function {name}; known: " + ", ".join(known))
    try:
        return fn(*args)
    except QueryError:
        raise
    except (TypeError, ValueError, ZeroDivisionError, AttributeError, re2.error) as e:
        shown = excerpt(" ".join(excerpt(str(a) if isinstance(a, Keyword) else repr(a), quote=False)
                                 for a in args), quote=False)
        why = excerpt(str(e), quote=False)
        if isinstance(e, TypeError):  # name the kinds of values it got
            why = "arguments of type " + ", ".join(_KIND.get(type(a).__name__, type(a).__name__)
                                                   for a in args) + f" ({why})"
        raise QueryError(f"({name} {shown}) failed: {why}") from e


_KIND = {"int": "long", "float": "double", "str": "string", "Keyword": "keyword", "bool": "boolean",
         "datetime": "instant", "NoneType": "nil"}


# ---------------------------------------------------------------------------- aggregates

def _sorted(values: list[Any]) -> list[Any]:
    return sorted(values, key=functools.cmp_to_key(compare))


def _median(xs: list[Any]) -> Any:
    for x in xs:  # it sorts by value, so a string among numbers would not raise by itself
        if isinstance(x, bool) or not isinstance(x, numbers.Number):
            raise TypeError(f"{excerpt(repr(x), quote=False, width=40)} is a {type(x).__name__}")
    s = _sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _variance(xs: list[Any]) -> float:
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** 2 for x in xs) / len(xs)


def aggregate(name: str, n: Any, values: list[Any], registry: Registry | None = None) -> Any:
    """One aggregate over the bag ``values`` of one group (Datomic semantics); a name
    that is not built in is looked up in ``registry`` (see :class:`Registry`), and ``n``,
    when not None, is the constant argument written before the variable.

    ``variance`` and ``stddev`` are the population forms; ``median`` of an even count is
    the mean of the middle two; ``(sample n ?x)`` takes ``n`` distinct values, ``(rand n
    ?x)`` ``n`` values with replacement (both seeded, so results are repeatable).

    >>> aggregate("count", None, [1, 1, 2]), aggregate("count-distinct", None, [1, 1, 2])
    (3, 2)
    >>> aggregate("max", 2, [3, 1, 2]), aggregate("median", None, [1, 2, 3, 4])
    ([2, 3], 2.5)
    """
    import random
    if name not in AGGREGATES and registry is not None and name in registry.aggregates:
        fn = registry.aggregates[name]
        try:
            return fn(values) if n is None else fn(n, values)
        except QueryError:
            raise
        except (TypeError, ValueError, ZeroDivisionError, AttributeError) as e:
            raise QueryError(f"aggregate {name} failed: {e}") from e
    if name == "count":
        return len(values)
    if name == "count-distinct":
        return len(set(values))
    if name == "distinct":
        return set(values)
    if name in ("min", "max") and n is not None:
        s = _sorted(set(values))
        return s[:n] if name == "min" else s[-n:]  # both ascending, as DataScript
    if name == "min":
        return _sorted(values)[0]
    if name == "max":
        return _sorted(values)[-1]
    if name == "sample":
        d = _sorted(set(values))
        return random.Random(0).sample(d, min(n or 1, len(d)))
    if name == "rand":
        return random.Random(0).choices(values, k=n or 1)
    try:
        if name == "sum":
            return sum(values)
        if name == "avg":
            return sum(values) / len(values)
        if name == "median":
            return _median(values)
        if name == "variance":
            return _variance(values)
        if name == "stddev":
            return math.sqrt(_variance(values))
    except TypeError as e:
        raise QueryError(f"aggregate {name} needs numbers: {e}") from e
    raise QueryError(f"unknown aggregate {name}")
