"""Read and write EDN, with the line and column of every syntax error.

EDN is the data notation of Clojure and Datomic: queries, rules, schemas and transactions
arrive in it. This module maps it onto plain Python values:

==================  =========================================================
EDN                 Python
==================  =========================================================
``nil true false``  ``None True False``
``42  42N  -7``     ``int``
``1.5  1e3  2.5M``  ``float``; the ``M`` suffix gives ``decimal.Decimal``
``"text"  \\c``     ``str`` (characters too)
``:ns/name``        :class:`Keyword` (a ``str`` equal to ``":ns/name"``)
``?x  pull  ...``   :class:`Symbol` (a ``str``)
``[1 2]``           ``list``
``(1 2)``           :class:`EdnList` (a ``tuple``, so hashable and told apart)
``{:a 1}``          ``dict`` (unhashable keys such as vectors become tuples)
``#{1 2}``          ``frozenset``
``#inst "..."``     timezone-aware UTC ``datetime``
``#uuid "..."``     ``uuid.UUID``
``#foo/bar x``      :class:`Tagged` ``(tag, value)`` unless a reader is given
``'x``              ``(quote x)``, as Clojure reads it (Datomic's nested ``q``)
==================  =========================================================

The reader tokenizes the whole text with one compiled regular expression and builds values
with an explicit stack (no recursion), so files of 10^5 forms are fine; forms nest at most
:data:`MAX_DEPTH` deep. Messages quote an excerpt of the text. It relies on
:mod:`queries.ednvalues` (the value types, re-exported here) and :mod:`wcoj.errors`; the query parser (:mod:`queries.ast`) and the database's
transaction loader use it.

>>> loads('[:find ?e :where [?e :movie/title "Alien"]]')
[Keyword(':find'), Symbol('?e'), Keyword(':where'), [Symbol('?e'), Keyword(':movie/title'), 'Alien']]
>>> dumps({Keyword(":person/name"): "Mel", Keyword(":person/born"): 1956})
'{:person/name "Mel", :person/born 1956}'
"""

from __future__ import annotations

import math
import re
import sys
import uuid
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import Any

from queries.ednvalues import EdnList, Keyword, Symbol, Tagged, hashable
from wcoj.errors import EdnSyntaxError, InputError, excerpt

__all__ = ["Keyword", "Symbol", "EdnList", "Tagged", "loads", "loads_all", "dumps", "dumps_safe",
           "read_inst", "hashable", "MAX_DEPTH"]

MAX_DEPTH = 100
"""Forms (and pending ``#_``/``#tag`` prefixes) nest at most this deep: Datomic data nests a
few levels, a value 10^5 levels deep crashes CPython when hashed (``#{((((...))))}``)."""
_Q = "'"  # tokens are quoted as they were written, not as Python reprs



# ---------------------------------------------------------------------------- reading

_TOKEN = re.compile(
    r"""
     (?P<ws>[\s,\ufeff]+|;[^\n]*)
    |(?P<open>[\[({]|\#\{)
    |(?P<disc>\#_)
    |(?P<atom>[^\s,\ufeff()\[\]{}";\\]+)
    |(?P<close>[\])}])
    |(?P<str>"[^"\\]*(?:\\.[^"\\]*)*")
    |(?P<badstr>")
    |(?P<char>\\.[^\s,()\[\]{}";\\]*)
    |(?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)N?")
_FLOAT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?M?")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r",
          "formfeed": "\f", "backspace": "\b"}
_CLOSERS = {"[": "]", "(": ")", "{": "}", "#{": "}"}
_SYMBOLIC = {"##Inf": math.inf, "##-Inf": -math.inf, "##NaN": math.nan}
_CONSTANTS = {"nil": None, "true": True, "false": False}
_BAD_SYMBOL_START = set("0123456789'^~@`#:")
_INST = re.compile(
    r"(\d{4})(?:-(\d\d)(?:-(\d\d)(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?"
    r"(?:([Zz])|([+-])(\d\d):?(\d\d))?)?)?)?"
)


def read_inst(text: str) -> datetime:
    """Parse an RFC 3339 instant (``#inst`` body) into a UTC ``datetime``.

    Missing parts default to the start of the period; offsets are converted to UTC.

    >>> read_inst("1985-04-12T23:20:50.52Z")
    datetime.datetime(1985, 4, 12, 23, 20, 50, 520000, tzinfo=datetime.timezone.utc)
    >>> read_inst("1985-04-12").isoformat()
    '1985-04-12T00:00:00+00:00'
    >>> read_inst("2000-01-01T01:00:00+01:00").isoformat()
    '2000-01-01T00:00:00+00:00'
    """
    m = _INST.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"expected an RFC 3339 date or timestamp, found {text!r}")
    year, month, day, hh, mm, ss, frac, _z, sign, oh, om = m.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    offset = timedelta(hours=int(oh or 0), minutes=int(om or 0))
    tz = timezone(-offset if sign == "-" else offset)
    dt = datetime(int(year), int(month or 1), int(day or 1), int(hh or 0), int(mm or 0),
                  int(ss or 0), micro, tzinfo=tz)  # raises ValueError on day 31 of June
    return dt.astimezone(timezone.utc)


def _read_uuid(text: str) -> uuid.UUID:
    if not isinstance(text, str):
        raise ValueError(f"expected a string, found {text!r}")
    return uuid.UUID(text)


_READERS: dict[str, Callable[[Any], Any]] = {"inst": read_inst, "uuid": _read_uuid}


def _where(text: str, pos: int) -> tuple[int, int]:
    """1-based (line, column) of offset ``pos``."""
    line = text.count("\n", 0, pos) + 1
    return line, pos - text.rfind("\n", 0, pos)


def _fail(message: str, text: str, pos: int) -> EdnSyntaxError:
    return EdnSyntaxError(message, text, *_where(text, pos))


def _fail_opened(message: str, opener: str, text: str, pos: int) -> EdnSyntaxError:
    """An error about an unclosed ``opener``; the position goes inside the message."""
    line, column = _where(text, pos)
    err = EdnSyntaxError(f"{message}, '{opener}' opened at line {line}, column {column} "
                         "is not closed", text)
    err.line, err.column = line, column
    return err


def _unescape(body: str, text: str, pos: int) -> str:
    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] == "u" and len(esc) == 5:
            return chr(int(esc[1:], 16))
        if esc in _ESCAPES:
            return _ESCAPES[esc]
        raise _fail(f"unknown escape '\\{esc}' in string", text, pos + 1 + m.start())

    out = _ESCAPE.sub(one, body)
    if any("\ud800" <= c <= "\udfff" for c in out):  # \uD83D\uDE00 is one code point
        out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return out


def _number(tok: str, text: str, pos: int) -> int | float | Decimal:
    if _INT.fullmatch(tok):
        try:
            return int(tok.rstrip("N"))
        except ValueError:  # past Python's limit on digits converted (sys.set_int_max_str_digits)
            raise _fail(f"integer {excerpt(tok, quote=_Q)} has {len(tok.lstrip('+-').rstrip('N'))} digits; "
                        f"at most {sys.get_int_max_str_digits()} are read", text, pos) from None
    if _FLOAT.fullmatch(tok):
        if tok.endswith("M"):
            try:
                return Decimal(tok[:-1])
            except InvalidOperation:  # pragma: no cover - the regex admits only decimals
                pass
        else:
            return float(tok)
    hint = "; leading zeros are not allowed" if re.fullmatch(r"[+-]?0\d+", tok) else ""
    raise _fail(f"invalid number {excerpt(tok, quote=_Q)}{hint}", text, pos)


def _atom(tok: str, text: str, pos: int, cache: dict[str, Any]) -> Any:
    c = tok[0]
    if c.isdigit() or (c in "+-" and len(tok) > 1 and tok[1].isdigit()):
        return _number(tok, text, pos)
    if c == ":":
        name = tok[1:]
        if not name or name[0] in ":/" or name.endswith("/") or name[0].isdigit():
            raise _fail(f"invalid keyword {excerpt(tok, quote=_Q)}", text, pos)
        value = cache[tok] = Keyword(tok)
        return value
    if tok in _CONSTANTS:
        return _CONSTANTS[tok]
    if c in _BAD_SYMBOL_START or (tok.endswith("/") and tok != "/"):
        raise _fail(f"unexpected {excerpt(tok, quote=_Q)}", text, pos)
    value = cache[tok] = Symbol(tok)
    return value


def _char(tok: str, text: str, pos: int) -> str:
    body = tok[1:]
    if len(body) == 1 and not body.isspace():
        return body
    if body in _CHARS:
        return _CHARS[body]
    if len(body) == 5 and body[0] == "u":
        try:
            return chr(int(body[1:], 16))
        except ValueError:
            pass
    raise _fail(f"unknown character literal {excerpt(tok, quote=_Q)}", text, pos)


def _tag(frame: list[Any], value: Any, readers: Mapping[str, Callable[[Any], Any]],
         text: str) -> Any:
    tag, pos = frame[2], frame[1]
    reader = readers.get(tag)
    if reader is None:
        return Tagged(tag, value)
    try:
        return reader(value)
    except (ValueError, TypeError, OverflowError) as e:
        raise _fail(f"bad {excerpt('#' + tag, quote=False)} value "
                    f"{excerpt(dumps_safe(value), quote=False)}: {excerpt(str(e), quote=False)}",
                    text, pos) from e


def dumps_safe(value: Any) -> str:
    """``dumps(value)``, or its ``repr`` when it holds something EDN cannot write."""
    try:
        return dumps(value)
    except InputError:
        return repr(value)


_PREFIXES = ("#_", "#tag", "'")


def _prefix(frame: list) -> str:
    return excerpt("#" + frame[2], quote=False) if frame[0] == "#tag" else frame[0]


def _deeper(stack: list, text: str, pos: int) -> None:  # before opening a form at pos
    if len(stack) >= MAX_DEPTH:
        raise _fail(f"forms nested more than {MAX_DEPTH} deep (offset {pos})", text, pos)


def _close(frame: list[Any], text: str) -> Any:
    opener, pos, items = frame
    if opener == "[":
        return items
    if opener == "(":
        return EdnList(items)
    if opener == "#{":
        return frozenset(hashable(v) for v in items)
    if len(items) % 2:
        raise _fail(f"map literal needs an even number of forms, found {len(items)}",
                    text, pos)
    it = iter(items)
    return {hashable(k): v for k, v in zip(it, it)}


def _read(text: str, tag_readers: Mapping[str, Callable[[Any], Any]] | None,
          single: bool) -> list[Any]:
    if not isinstance(text, str):
        raise InputError(f"EDN text must be a str, got {type(text).__name__}")
    readers = {**_READERS, **tag_readers} if tag_readers else _READERS
    cache: dict[str, Any] = {}
    stack: list[list[Any]] = []  # [opener, pos, items] or [prefix, pos, tag]
    top: list[Any] = []
    start = 0  # offset of the top-level form being read
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "ws":
            continue
        pos = m.start()
        if not stack:
            start = pos
        if kind == "atom":
            tok = m.group()
            if tok in cache:
                value = cache[tok]
            elif tok[0] == "'":  # 'x is (quote x): push the prefix, read x (or the rest)
                rest = tok.lstrip("'")
                for i in range(len(tok) - len(rest)):
                    _deeper(stack, text, pos + i)
                    stack.append(["'", pos + i, None])
                if not rest:
                    continue
                value = _atom(rest, text, pos + len(tok) - len(rest), cache)
            elif tok[0] == "#":
                if tok in _SYMBOLIC:
                    value = _SYMBOLIC[tok]
                elif len(tok) > 1 and tok[1].isalpha():
                    _deeper(stack, text, pos)
                    stack.append(["#tag", pos, tok[1:]])
                    continue
                else:
                    raise _fail(f"invalid dispatch {excerpt(tok, quote=_Q)}", text, pos)
            else:
                value = _atom(tok, text, pos, cache)
        elif kind == "disc":
            _deeper(stack, text, pos)
            stack.append(["#_", pos, None])
            continue
        elif kind == "open":
            _deeper(stack, text, pos)
            stack.append([m.group(), pos, []])
            continue
        elif kind == "close":
            tok = m.group()
            if not stack:
                raise _fail(f"unbalanced '{tok}'", text, pos)
            frame = stack[-1]
            if frame[0] in _PREFIXES:
                what = _prefix(frame)
                line, column = _where(text, frame[1])
                raise _fail(f"'{tok}' where a form must follow {what} "
                            f"(line {line}, column {column})", text, pos)
            if _CLOSERS[frame[0]] != tok:
                line, column = _where(text, frame[1])
                raise _fail(f"mismatched '{tok}' ('{frame[0]}' opened at line {line}, "
                            f"column {column} needs '{_CLOSERS[frame[0]]}')", text, pos)
            stack.pop()
            value = _close(frame, text)
        elif kind == "str":
            body = m.group()[1:-1]
            value = _unescape(body, text, pos) if "\\" in body else body
        elif kind == "char":
            value = _char(m.group(), text, pos)
        elif kind == "badstr":
            raise _fail("unterminated string starting", text, pos)
        else:
            ch = m.group()
            raise _fail(f"unexpected character {ch!r}" if ch != "\\" else
                        "a lone '\\' is not a character literal", text, pos)
        # deliver value to the innermost open form, through pending #_ and #tag prefixes
        while stack:
            frame = stack[-1]
            if frame[0] == "#_":
                stack.pop()
                break
            if frame[0] == "#tag":
                stack.pop()
                value = _tag(frame, value, readers, text)
                continue
            if frame[0] == "'":
                stack.pop()
                value = EdnList((Symbol("quote"), value))
                continue
            frame[2].append(value)
            break
        else:
            if single and top:
                raise _fail("expected a single EDN form, found another one", text, start)
            top.append(value)
    if stack:
        frame = stack[-1]
        if frame[0] in _PREFIXES:
            what = _prefix(frame)
            raise _fail(f"unexpected end of input: {what} needs a form after it", text,
                        frame[1])
        raise _fail_opened("unexpected end of input", frame[0], text, frame[1])
    return top


def loads(text: str, tag_readers: Mapping[str, Callable[[Any], Any]] | None = None) -> Any:
    """Read exactly one EDN form from ``text``.

    Parameters
    ----------
    text : str
        EDN source; comments (``;``), commas and ``#_`` discarded forms are skipped.
    tag_readers : mapping of str to callable, optional
        Readers for tagged literals, keyed by tag without ``#`` (``"inst"``, ``"db/id"``);
        they override the built-in ``inst`` and ``uuid`` readers.

    Returns
    -------
    object
        The value, mapped to Python as in the module table.

    Raises
    ------
    EdnSyntaxError
        Malformed text, no form or more than one; ``.line`` and ``.column`` are 1-based.

    Complexity: O(len(text)), one regular-expression pass.

    Examples
    --------
    >>> loads("{:a [1 2.5 \\\\c], [1 2] #{nil}}")
    {Keyword(':a'): [1, 2.5, 'c'], (1, 2): frozenset({None})}
    >>> loads('#inst "1954-08-16"').year
    1954
    >>> loads("#db/id [:db.part/user -100]", {"db/id": lambda v: ("tempid", v[1])})
    ('tempid', -100)
    >>> loads("[1 2\\n  3]]")
    Traceback (most recent call last):
    ...
    wcoj.errors.EdnSyntaxError: unbalanced ']' at line 2, column 5
    """
    forms = _read(text, tag_readers, single=True)
    if not forms:
        raise EdnSyntaxError("no EDN form in the input (it is empty or only comments)",
                             text, *_where(text, len(text)))
    return forms[0]


def loads_all(text: str,
              tag_readers: Mapping[str, Callable[[Any], Any]] | None = None) -> list[Any]:
    """Read every top-level EDN form of ``text`` (see :func:`loads`).

    >>> loads_all("1 :a ; comment\\n(x) #_ 2")
    [1, Keyword(':a'), EdnList((Symbol('x'),))]
    """
    return _read(text, tag_readers, single=False)


# ---------------------------------------------------------------------------- writing

_STR_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')


def _escape_char(m: re.Match[str]) -> str:
    c = m.group()
    return _STR_ESCAPES.get(c) or f"\\u{ord(c):04x}"


def _dump_str(s: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'


def _dump_float(x: float) -> str:
    if math.isnan(x):
        return "##NaN"
    if math.isinf(x):
        return "##Inf" if x > 0 else "##-Inf"
    return repr(x)


def _dump_inst(dt: datetime | date) -> str:
    if not isinstance(dt, datetime):
        return f'#inst "{dt.year:04d}-{dt.month:02d}-{dt.day:02d}"'
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc)
    frac = f".{dt.microsecond:06d}" if dt.microsecond else ""
    return (f'#inst "{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:'
            f'{dt.minute:02d}:{dt.second:02d}{frac}Z"')


def _dump(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("nil")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, (Keyword, Symbol)):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(_dump_str(value))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(_dump_float(float(value)))
    elif isinstance(value, Decimal):
        out.append(str(value) + "M")
    elif isinstance(value, (list, tuple, dict, set, frozenset)):
        if isinstance(value, EdnList):
            opener, closer, items = "(", ")", list(value)
        elif isinstance(value, (list, tuple)):
            opener, closer, items = "[", "]", list(value)
        elif isinstance(value, dict):
            opener, closer, items = "{", "}", list(value.items())
        else:  # a set has no order: write its elements sorted by their text, so equal
            # sets always print alike whatever their hash-dependent iteration order
            opener, closer, items = "#{", "}", sorted(value, key=dumps)
        out.append(opener)
        for i, item in enumerate(items):
            if i:
                out.append(", " if opener == "{" else " ")
            if opener == "{":
                _dump(item[0], out)
                out.append(" ")
                _dump(item[1], out)
            else:
                _dump(item, out)
        out.append(closer)
    elif isinstance(value, (datetime, date)):
        out.append(_dump_inst(value))
    elif isinstance(value, uuid.UUID):
        out.append(f'#uuid "{value}"')
    elif isinstance(value, Tagged):
        out.append(f"#{value.tag} ")
        _dump(value.value, out)
    elif hasattr(value, "__index__") and not hasattr(value, "shape"):
        out.append(str(int(value.__index__())))  # numpy integer scalars
    else:
        raise InputError(f"cannot write {type(value).__name__} value "
                         f"{excerpt(repr(value), quote=False)} as EDN")


def dumps(value: Any) -> str:
    """Write ``value`` as EDN text; ``loads(dumps(x)) == x`` for every readable value.

    Python tuples and lists become vectors, :class:`EdnList` a list, sets ``#{}``, naive
    datetimes are taken as UTC.

    Raises
    ------
    InputError
        ``value`` holds an object EDN has no notation for.

    Examples
    --------
    >>> dumps([None, True, 1, 2.5, "a\\"b", Keyword(":k"), Symbol("?x"), EdnList([1])])
    '[nil true 1 2.5 "a\\\\"b" :k ?x (1)]'
    >>> dumps(read_inst("1985-04-12T23:20:50.52Z"))
    '#inst "1985-04-12T23:20:50.520000Z"'
    >>> dumps(Tagged("db/id", [Keyword(":db.part/user"), -100]))
    '#db/id [:db.part/user -100]'
    """
    out: list[str] = []
    _dump(value, out)
    return "".join(out)
