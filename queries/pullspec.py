"""Pull patterns, from read EDN data to :mod:`queries.ast` nodes.

``read_pull`` takes the data of a pattern (EDN already read: keywords, symbols, vectors,
lists, maps) and returns a ``PullPattern``: attributes, ``*``, reverse references, nested
maps ``{attr sub-pattern}``, recursion (``...`` or a depth), and the attribute options
``:limit``, ``:default`` and ``:as`` in Datomic's vector form ``[:attr :limit 10]``, the
older list form ``(:attr :limit 10)`` and the oldest ``(limit :attr 10)``.

Relies on :mod:`queries.ast`, :mod:`queries.edn` and :mod:`wcoj.errors`; used by
:mod:`queries.parse` (``parse_pull``, and ``(pull ?e [...])`` in ``:find``).

>>> from queries.edn import loads
>>> read_pull(loads('[:a [:b :limit 2 :as "x"] {:c [*]}]'))
[:a (:b :limit 2 :as "x") {:c [*]}]
"""

from __future__ import annotations

from typing import Any

from queries.ast import (
    Const, PullAttr, PullJoin, PullPattern, PullRecursion, PullWildcard, _show,
)
from queries.edn import EdnList, Keyword, Symbol, hashable
from wcoj.errors import QueryError

__all__ = ["read_pull"]


def read_pull(data: Any) -> PullPattern:
    if not isinstance(data, list):
        raise QueryError(f"a pull pattern is a vector, found {_show(data)}")
    items: list[Any] = []
    for x in data:
        if x == "*" and isinstance(x, Symbol):
            items.append(PullWildcard())
        elif isinstance(x, dict):
            for k, v in x.items():
                if isinstance(v, list):
                    sub: Any = read_pull(v)
                elif v == "..." and isinstance(v, Symbol):
                    sub = PullRecursion()
                elif type(v) is int and v >= 0:
                    sub = PullRecursion(v)
                else:
                    raise QueryError(f"bad sub-pattern {_show(v)} for {_show(k)} in pull {_show(data)}")
                items.append(PullJoin(_pull_attr(k, data), sub))
        else:
            items.append(_pull_attr(x, data))
    return PullPattern(tuple(items))


def _pull_attr(x: Any, form: Any) -> PullAttr:
    opts: dict[str, Any] = {}
    if isinstance(x, EdnList) and x and isinstance(x[0], Symbol) and len(x) == 3 \
            and x[0] in ("limit", "default"):
        x, opts = x[1], {":" + x[0]: x[2]}  # legacy (limit :attr 10) / (default :attr v)
    elif isinstance(x, (list, tuple)) and x and len(x) % 2 == 1:
        # Datomic's [:attr :limit 10 :as "x"], the older (:attr :limit 10); a vector that
        # is a map key was read as a tuple
        pairs = iter(x[1:])
        opts = {str(k): v for k, v in zip(pairs, pairs)}
        x = x[0]
    if not isinstance(x, Keyword):
        raise QueryError(f"bad attribute {_show(x)} in pull pattern {_show(form)}")
    unknown = sorted(map(str, set(opts) - {":limit", ":default", ":as"}))
    if unknown:  # :xform names a function: query text never reaches one
        raise QueryError(f"pull option {' '.join(unknown)} of {_show(x)} is not supported in "
                         f"{_show(form)}; the options are :limit, :default and :as")
    limit = opts.get(":limit")
    if limit is not None and not (type(limit) is int and limit >= 0):
        raise QueryError(f":limit must be a non-negative integer or nil in pull {_show(form)}")
    reverse = x.name.startswith("_") and len(x.name) > 1  # :movie/_cast, or :_friend (as DataScript)
    attr = (f":{x.namespace}/{x.name[1:]}" if x.namespace else f":{x.name[1:]}") if reverse else str(x)
    default = Const(hashable(opts[":default"])) if ":default" in opts else None
    return PullAttr(attr, reverse, limit, default, opts.get(":as"))
