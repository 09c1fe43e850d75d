"""The Python values EDN reads into: keywords, symbols, lists and tagged literals, and
``hashable`` for the maps and vectors used as keys.

Split from :mod:`queries.edn` (which reads and writes them and re-exports every name here)
so that the value types sit below the reader. Relies on the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from indexes.interner import freeze

__all__ = ["Keyword", "Symbol", "EdnList", "Tagged", "hashable"]


class _Named(str):
    """A ``str`` with ``namespace`` and ``name`` parts, split at the first ``/``."""

    __slots__ = ()
    _prefix = ""

    @property
    def namespace(self) -> str | None:
        body = self[len(self._prefix):]
        ns, slash, _ = body.partition("/")
        return ns if slash and ns else None

    @property
    def name(self) -> str:
        body = self[len(self._prefix):]
        ns, slash, rest = body.partition("/")
        return rest if slash and ns else body

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str.__repr__(str(self))})"


class Keyword(_Named):
    """An EDN keyword: a ``str`` whose text is ``":ns/name"`` and that equals that string.

    >>> k = Keyword(":movie/title")
    >>> k == ":movie/title", hash(k) == hash(":movie/title"), str(k)
    (True, True, ':movie/title')
    >>> k.namespace, k.name, Keyword("year").namespace, Keyword("year")
    ('movie', 'title', None, Keyword(':year'))
    """

    __slots__ = ()
    _prefix = ":"

    def __new__(cls, text: str) -> Keyword:
        return super().__new__(cls, text if text.startswith(":") else ":" + text)


class Symbol(_Named):
    """An EDN symbol (``?x``, ``pull``, ``...``, ``$``, ``re-find``): a plain ``str`` subclass.

    >>> s = Symbol("clojure.string/blank?")
    >>> s.namespace, s.name, s == "clojure.string/blank?"
    ('clojure.string', 'blank?', True)
    """

    __slots__ = ()


class EdnList(tuple):
    """An EDN list ``(a b c)``: a tuple, so it is hashable and differs from a vector (``list``).

    >>> from queries.edn import loads
    >>> loads("(inc ?x)")
    EdnList((Symbol('inc'), Symbol('?x')))
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"EdnList({tuple.__repr__(self)})"


@dataclass(frozen=True)
class Tagged:
    """A tagged literal with no reader, e.g. ``#db/id [:db.part/user -100]``.

    It hashes by value (vectors inside count as tuples), so tempids can be dict keys.

    >>> from queries.edn import loads
    >>> t = loads("#db/id [:db.part/user -100]")
    >>> t.tag, t.value, t == Tagged("db/id", [":db.part/user", -100])
    ('db/id', [Keyword(':db.part/user'), -100], True)
    >>> len({t, loads("#db/id [:db.part/user -100]")})
    1
    """

    tag: str
    value: Any

    def __hash__(self) -> int:
        return hash((self.tag, hashable(self.value)))

    def __repr__(self) -> str:
        return f"Tagged({self.tag!r}, {self.value!r})"


def hashable(value: Any) -> Any:
    """Return ``value`` with every vector turned into a tuple and every map into a
    ``FrozenMap`` (a dict that cannot change): ``indexes.interner.freeze``, what the
    interner does to a collection value.

    Used for map keys, set elements and query constants, which Python needs hashable.

    >>> hashable([1, [2, 3], {4: [5]}])
    (1, (2, 3), FrozenMap({4: (5,)}))
    """
    return freeze(value)
