"""The error tree of the whole engine.

Every layer (``wcoj``, ``indexes``, ``queries``) raises from here, so users have one place
to import from. Messages say what went wrong, what was expected, what was found and where;
the pieces are also kept as attributes so tests and tools need not parse the text.

::

    WcojError
    ├── QueryError(ValueError)        nothing ran; fix the query or the input
    │   ├── EdnSyntaxError            .text .line .column
    │   ├── UnknownAttributeError     (also KeyError) .attribute
    │   ├── ArityMismatchError        .form .expected .got
    │   ├── UnboundVariableError      .form .variables
    │   ├── SchemaError               wrong value type, unknown tempid, uniqueness
    │   │   └── CasError                  :db/cas found another value .entity .attribute
    │   └── ReadOnlyError             a write to an as_of/since/history database value
    ├── InputError(ValueError)        bad data at a door: shape, dtype, weights, files
    │   └── InputFileError            .path .line (0: unknown) .tick (None: unknown)
    ├── StorageError(OSError)         a durable database's files: wrong kind, unreadable
    ├── CircuitError                  wiring: wrong number of inputs, cycle without delay
    └── WeightOverflowError(OverflowError)
    PerformanceWarning(UserWarning)   a slow route a user can avoid: a join atom without
                                      tries(), a process with NUMBA_DISABLE_JIT set

>>> try:
...     raise UnknownAttributeError(":person/nmae", [":person/name", ":movie/title"])
... except KeyError as e:
...     print(e)
unknown attribute :person/nmae; did you mean :person/name?
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

__all__ = [
    "WcojError",
    "QueryError",
    "EdnSyntaxError",
    "UnknownAttributeError",
    "ArityMismatchError",
    "UnboundVariableError",
    "NoFixedPointError",
    "SchemaError",
    "CasError",
    "ReadOnlyError",
    "InputError",
    "InputFileError",
    "StorageError",
    "CircuitError",
    "WeightOverflowError",
    "PerformanceWarning",
    "as_interrupt",
    "excerpt",
    "shown",
    "EXCERPT_CHARS",
    "MESSAGE_CHARS",
]

EXCERPT_CHARS = 80
"""An error message quotes at most about this many characters of the input it blames."""
MESSAGE_CHARS = 2000
"""The longest message an error keeps whole (``WcojError`` cuts the middle of longer ones)."""


class WcojError(Exception):
    """Base class of every error the engine raises on purpose.

    A message longer than ``MESSAGE_CHARS`` keeps its start and end, the middle cut: where
    a message quotes input without ``excerpt``, a 6 MB value still cannot become a 6 MB
    message.

    >>> len(str(WcojError("bad value " + "x" * 10**6 + " for :a")))
    2027
    """

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str) and len(args[0]) > MESSAGE_CHARS:
            m, head, tail = args[0], MESSAGE_CHARS * 3 // 4, MESSAGE_CHARS // 4
            args = (f"{m[:head]}… ({len(m) - head - tail} characters cut) …{m[-tail:]}",) + args[1:]
        super().__init__(*args)


class QueryError(WcojError, ValueError):
    """A query (or transaction) is wrong; nothing ran and nothing changed."""


class EdnSyntaxError(QueryError):
    """Malformed EDN text, with the 1-based line and column of the problem."""

    def __init__(self, message: str, text: str = "", line: int = 0, column: int = 0):
        where = f" at line {line}, column {column}" if line else ""
        super().__init__(f"{message}{where}")
        self.text, self.line, self.column = text, line, column


class UnknownAttributeError(QueryError, KeyError):
    """An attribute (or relation) name that the store does not know."""

    def __init__(self, attribute: str, known: Iterable[str] = ()):
        known = [str(k) for k in known]
        hint = difflib.get_close_matches(str(attribute), known, n=1)
        super().__init__(
            f"unknown attribute {excerpt(str(attribute), quote=False)}"
            + (f"; did you mean {hint[0]}?" if hint else "")
        )
        self.attribute = attribute

    def __str__(self) -> str:  # KeyError would otherwise show the repr
        return str(self.args[0])


class ArityMismatchError(QueryError):
    """Something was used with the wrong number of columns or arguments."""

    def __init__(self, form: object, expected: int, got: int, what: str = ""):
        detail = what or f"expected {expected} columns, got {got}"
        super().__init__(f"arity mismatch in {excerpt(str(form), quote=False)}: {detail}")
        self.form, self.expected, self.got = form, expected, got


class UnboundVariableError(QueryError):
    """Variables used where nothing binds them (``:find``, predicates, ``not``)."""

    def __init__(self, form: object, variables: Sequence[str], why: str = ""):
        names = excerpt(", ".join(str(v) for v in variables), quote=False)
        super().__init__(f"unbound variable{'s' if len(variables) > 1 else ''} {names} in "
                         f"{excerpt(str(form), quote=False)}"
                         + (f": {why}" if why else ""))
        self.form, self.variables = form, tuple(variables)


class SchemaError(QueryError):
    """A transaction breaks the schema: wrong value type, unknown tempid, uniqueness."""


class CasError(SchemaError):
    """``[:db/cas e a old new]`` found another current value than ``old``."""

    def __init__(self, message: str, entity: int, attribute: str, expected: object, found: object):
        super().__init__(message)
        self.entity, self.attribute, self.expected, self.found = entity, attribute, expected, found


class ReadOnlyError(QueryError):
    """A transaction or view on a read-only database value (``as_of``, ``since``,
    ``history``)."""


class StorageError(WcojError, OSError):
    """A durable database or graph whose files cannot be used: another kind of store, a
    newer format, a missing or unreadable log."""


class InputError(WcojError, ValueError):
    """Bad data at a door: wrong shape or dtype, non-integer weights, unreadable files."""


class InputFileError(InputError):
    """An unreadable, corrupt or malformed input file, and where in it.

    ``path`` names the file; ``line`` is the 1-based line at fault, 0 when unknown; for a
    bad row of a change log, ``tick`` is that row's tick when it could be read, else None
    (a reader that applies ticks as they come can tell from it whether the tick before
    the bad row was complete).

    >>> e = InputFileError("c.txt:3: expected 'TICK +|- SRC DST'", "c.txt", 3, tick=7)
    >>> (str(e), e.path, e.line, e.tick, isinstance(e, ValueError))
    ("c.txt:3: expected 'TICK +|- SRC DST'", 'c.txt', 3, 7, True)
    """

    def __init__(self, message: str, path: str = "", line: int = 0, tick: int | None = None):
        super().__init__(message)
        self.path, self.line, self.tick = path, line, tick


class CircuitError(WcojError):
    """A circuit is wired wrongly, or used after it was finished."""


class NoFixedPointError(QueryError):
    """Recursive rules kept deriving new facts past the iteration limit
    (``wcoj.config.RECURSION_LIMIT``); nothing changed."""


class WeightOverflowError(WcojError, OverflowError):
    """A weight sum or product does not fit in int64; the operation changed nothing."""


class PerformanceWarning(UserWarning):
    """The engine took a slow route that the user can avoid, and says how: a join whose
    atom's extender has no ``tries()`` runs through the batched protocol methods
    (``wcoj.generic_join``); with ``NUMBA_DISABLE_JIT`` set the kernels run as Python
    (told once, when ``wcoj`` is imported). Silence it with ``warnings.filterwarnings("ignore",
    category=PerformanceWarning)``."""


def as_interrupt(exc: BaseException) -> BaseException:
    """``exc``, or a ``KeyboardInterrupt`` when ``exc`` is how a compiled call reported
    one: Ctrl-C landing while a Numba kernel runs surfaces as a ``SystemError`` ("returned
    a result with an exception set") whose cause is the ``KeyboardInterrupt``.

    >>> try:
    ...     raise SystemError("returned a result with an exception set") from KeyboardInterrupt()
    ... except SystemError as e:
    ...     type(as_interrupt(e)).__name__
    'KeyboardInterrupt'
    """
    seen = exc
    for _ in range(8):
        if isinstance(seen, KeyboardInterrupt):
            return seen if seen is exc else KeyboardInterrupt()
        if not isinstance(seen, SystemError) or (seen.__cause__ or seen.__context__) is None:
            return exc
        seen = seen.__cause__ or seen.__context__
    return exc


def shown(value: object) -> str:
    """A value as an error message quotes it: its ``repr``, cut by ``excerpt``; an integer
    too long for Python to print (``sys.set_int_max_str_digits``) by its size.

    >>> shown(10 ** 5000)
    'an integer of 16610 bits'
    """
    try:
        return excerpt(repr(value), quote=False)
    except ValueError:
        return f"an integer of {int(value).bit_length()} bits"


def excerpt(text: str, pos: int = 0, width: int = EXCERPT_CHARS,
            quote: bool | str = True) -> str:
    """At most about ``width`` characters of ``text`` for an error message: all of a short
    text, else the part from a little before offset ``pos``, with ``…`` where it was cut and
    the full length. ``quote=True`` gives the part as a ``repr``; a string such as ``"'"``
    puts it between two of those, as it is; ``False`` leaves it bare (``…`` stays outside).

    Every message that quotes input goes through here, so a 6 MB bad line cannot become a
    6 MB message; the caller still names the line, column or offset.

    >>> excerpt("1 2 x")
    "'1 2 x'"
    >>> excerpt("a" * 30 + "!" + "b" * 10**6, pos=30, width=12)
    "…'aaaaaa!bbbbb'… (1000031 characters)"
    >>> excerpt("(and " * 5, width=12, quote=False)
    '(and (and (a… (25 characters)'
    >>> print(excerpt("#x" + "y" * 200, quote="'", width=8))
    '#xyyyyyy'… (202 characters)
    """
    text = str(text)
    n = len(text)
    lo = max(0, min(pos - width // 2, n - width))
    part = text[lo:lo + width]
    shown = repr(part) if quote is True else f"{quote or ''}{part}{quote or ''}"
    if n <= width:
        return shown
    return ("…" if lo else "") + shown + ("…" if lo + width < n else "") + f" ({n} characters)"
