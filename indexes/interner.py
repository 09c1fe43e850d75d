"""Python values <-> int64 ids, with the value's type and (for numbers and instants) order kept.

An id is ``tag << 56 | payload``. The tag names the type, so a decoded value comes back with
its type (``1`` the long, ``1.0`` the double, ``True`` the boolean and ``":a"`` the keyword
are four different ids), and ``decode`` works a whole column at a time, one numpy pass per
tag:

=====  ==========  =====================================================================
tag    type        payload
=====  ==========  =====================================================================
0      ref         the entity id itself (0 <= eid < 2**56): a ref value *is* its entity
1      long        ``v + 2**55`` for ``|v| < 2**55``: ids compare like the numbers
2      instant     microseconds since 1970 + ``2**55`` (UTC), years 829 to 3111: ids
                   compare like the times (instants outside go to a table)
3      boolean     0 or 1
4..    others      a sequence number in a per-type table (double, string, keyword, uuid,
                   big integers, decimals, tuples, ``None``); no order
=====  ==========  =====================================================================

Ordering comparisons in query predicates are made on *decoded* values (see
``queries.functions``), so the unordered tables are fine; the order-preserving tags exist so
that range filters on longs and instants could later run on ids alone.

Relies on numpy only; used by ``indexes.eav`` and the query compiler.

>>> it = Interner()
>>> ids = it.encode_many([3, "x", 1.5, True, -2])
>>> it.decode(ids).tolist()
[3, 'x', 1.5, True, -2]
>>> it.encode(3) > it.encode(-2), it.encode(1) == it.encode(1.0)
(True, False)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from itertools import chain, compress
from typing import Any

import numpy as np
import numpy.typing as npt

from wcoj.errors import InputError, excerpt

__all__ = ["Interner", "FrozenMap", "freeze", "REF", "LONG", "INSTANT", "BOOLEAN", "TAG_SHIFT", "ref_ids", "tag_of",
           "MAX_VALUE_DEPTH", "check_depth"]

MAX_VALUE_DEPTH = 100
"""Collection values (and transactions, and query data given as Python objects) nest at
most this deep, as EDN text does (``queries.edn.MAX_DEPTH``): hashing a tuple 10^6 levels
deep overflows the C stack, and freezing a list 10^3 deep overflows Python's."""

I64 = npt.NDArray[np.int64]
TAG_SHIFT = 56
_PAYLOAD = (1 << TAG_SHIFT) - 1
_BIAS = 1 << 55
REF, LONG, INSTANT, BOOLEAN = 0, 1, 2, 3
_TABLE_TAGS = {"double": 4, "string": 5, "keyword": 6, "uuid": 7, "other": 8}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def ref_ids(eids: Any) -> I64:
    """Entity ids as ref ids (the identity, checked to be in range)."""
    arr = np.asarray(eids, dtype=np.int64)
    if arr.size and (arr.min() < 0 or arr.max() > _PAYLOAD):
        raise InputError(f"entity ids must be in [0, 2**56), got {int(arr.min())}..{int(arr.max())}")
    return arr


def tag_of(ids: Any) -> I64:
    """The type tag of each id."""
    return np.asarray(ids, dtype=np.int64) >> TAG_SHIFT


def _kind(value: Any) -> str:
    t = type(value)
    if t is bool:
        return "boolean"
    if t is float:
        return "double"
    if isinstance(value, str):
        return "keyword" if value.__class__.__name__ == "Keyword" else "string"
    if isinstance(value, uuid.UUID):
        return "uuid"
    return "other"


def _instant_micros(value: datetime) -> int | None:
    """Microseconds since 1970 (naive means UTC), or None outside years 829 to 3111
    (those instants go to a table)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    micros = (value - _EPOCH) // timedelta(microseconds=1)
    return micros if -_BIAS <= micros < _BIAS else None


_NESTED = (list, tuple, set, frozenset, dict)


class _Step(str):
    """A path step that is no index or key: into a set, into a map's key."""

    def __repr__(self) -> str:
        return str(self)


_IN_SET, _IN_KEY = _Step("#{}"), _Step("key")


def _show_step(k: Any) -> str:
    if isinstance(k, _NESTED):  # a map key that is a collection: its repr could be huge
        return type(k).__name__
    return excerpt(repr(k), quote=False, width=20)


def _depth_ok(value: Any, limit: int) -> bool:
    """Whether no collection of ``value`` sits more than ``limit`` levels deep: the fast
    pass of ``check_depth`` (no paths). Level by level, with the per-item work in C: the
    items of a level's collections are gathered, their types collected in a set, and only
    when one of those is a collection are the nested ones kept for the next level (a
    transaction of 10,000 flat forms costs two levels of that, not a generator per form).
    """
    level, depth = [value], 1
    while level:
        if depth > limit:
            return False
        if any(issubclass(t, dict) for t in set(map(type, level))):
            items: list = []
            for x in level:
                items.extend(chain(x.values(), x.keys()) if isinstance(x, dict) else x)
        else:
            items = list(chain.from_iterable(level))
        nested = {t for t in set(map(type, items)) if issubclass(t, _NESTED)}
        if not nested:
            return True
        level, depth = list(compress(items, map(nested.__contains__, map(type, items)))), depth + 1
    return True


def check_depth(value: Any, limit: int = MAX_VALUE_DEPTH, what: str = "value",
                error: type[Exception] = InputError) -> None:
    """Raise ``error`` (an ``InputError`` unless told) naming the path to the first
    collection of ``value`` that sits more than ``limit`` levels deep (lists, tuples, sets
    and dicts count; strings do not).

    Iterative, so it is safe on any depth; O(number of nested collections).

    >>> check_depth([1, (2, [3])], limit=3)
    >>> check_depth({":t": [[[]]]}, limit=3, what="tx")
    Traceback (most recent call last):
    ...
    wcoj.errors.InputError: tx nests more than 3 levels deep at tx[':t'][0][0]
    """
    if not isinstance(value, _NESTED) or _depth_ok(value, limit):
        return
    stack: list[tuple[Any, int, tuple]] = [(value, 1, ())]  # again, keeping paths this time
    while stack:
        x, depth, path = stack.pop()
        if depth > limit:
            where = what + "".join(f"[{_show_step(k)}]" for k in path)
            raise error(f"{what} nests more than {limit} levels deep at "
                        f"{excerpt(where, quote=False)}")
        if isinstance(x, dict):
            items: Iterable = x.items()
        elif isinstance(x, (set, frozenset)):
            items = ((_IN_SET, v) for v in x)
        else:
            items = enumerate(x)
        for k, v in items:
            if isinstance(v, _NESTED):
                stack.append((v, depth + 1, path + (k,)))
            if isinstance(x, dict) and isinstance(k, _NESTED):
                stack.append((k, depth + 1, path + (_IN_KEY,)))


class FrozenMap(dict):
    """A map value that cannot change, so it can be interned and hashed: what a map
    constant of a query (``[(ground {:a 1}) ?m]``) binds. It reads as a ``dict`` and equals
    a ``dict`` of the same items.

    >>> m = FrozenMap({"a": 1})
    >>> m["a"], m == {"a": 1}, hash(m) == hash(FrozenMap(a=1))
    (1, True, True)
    >>> m["b"] = 2
    Traceback (most recent call last):
    ...
    TypeError: a FrozenMap cannot change
    """

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def _immutable(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a FrozenMap cannot change")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable  # type: ignore[assignment]
    __ior__ = _immutable  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return FrozenMap, (dict(self),)

    def __repr__(self) -> str:
        return f"FrozenMap({dict.__repr__(self)})"


def freeze(value: Any) -> Any:
    """Lists become tuples, sets frozensets and maps ``FrozenMap``s, so collection values
    can be interned (and hashed: ``queries.ednvalues.hashable`` is this). A tuple keeps
    its type (an EDN list is one) with its items frozen.

    >>> freeze([1, [2], {3: {4}}])
    (1, (2,), FrozenMap({3: frozenset({4})}))
    >>> freeze((1, [2]))
    (1, (2,))
    """
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, tuple):
        items = tuple(freeze(v) for v in value)
        if all(a is b for a, b in zip(items, value)):
            return value
        return tuple.__new__(type(value), items)
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(v) for v in value)
    if isinstance(value, dict) and not isinstance(value, FrozenMap):
        return FrozenMap({freeze(k): freeze(v) for k, v in value.items()})
    return value


class Interner:
    """A dictionary from Python values to int64 ids and back (one per store).

    ``encode`` of a Python ``int`` gives a *long*; use :meth:`ref` for an entity id.
    """

    def __init__(self) -> None:
        self._ids: dict[tuple[int, Any], int] = {}
        self._values: dict[int, list[Any]] = {t: [] for t in _TABLE_TAGS.values()}

    def __repr__(self) -> str:
        return f"Interner(values={len(self._ids)})"

    def __len__(self) -> int:
        return len(self._ids)

    def copy(self) -> Interner:
        """An independent interner with the same values under the same ids."""
        out = Interner()
        out._ids, out._values = dict(self._ids), {t: list(v) for t, v in self._values.items()}
        return out

    def marks(self) -> dict[int, int]:
        """The size of each value table (tag -> count): what ``since`` counts from."""
        return {tag: len(vals) for tag, vals in self._values.items()}

    def since(self, marks: dict[int, int]) -> list[tuple[int, Any]]:
        """``(id, value)`` of every table value interned after ``marks``, in id order per
        tag (a durable store logs them, so ids mean the same after a reopen)."""
        return [((tag << TAG_SHIFT) | i, vals[i]) for tag, vals in self._values.items()
                for i in range(marks.get(tag, 0), len(vals))]

    def restore(self, vid: int, value: Any) -> None:
        """Put ``value`` back under the id ``vid`` it had (the next id of its table).

        >>> it = Interner(); vid = it.encode("x")
        >>> again = Interner(); again.restore(vid, "x"); again.encode("x") == vid
        True
        """
        tag, payload = vid >> TAG_SHIFT, vid & _PAYLOAD
        table = self._values[tag]
        if payload != len(table):
            raise InputError(f"value id {vid} is out of sequence: table {tag} has {len(table)} values")
        if tag == 8:
            check_depth(value)
            value = freeze(value)
        table.append(value)
        self._ids[(tag, value if tag != 8 else (type(value).__name__, value))] = vid

    @staticmethod
    def ref(eid: int) -> int:
        """The id of a reference to entity ``eid``."""
        if not 0 <= eid <= _PAYLOAD:
            raise InputError(f"entity id {eid} is out of range [0, 2**56)")
        return int(eid)

    def encode(self, value: Any) -> int:
        """The id of ``value`` (a new id if it was never seen)."""
        t = type(value)
        if t is bool:
            return (BOOLEAN << TAG_SHIFT) | int(value)
        if t is int and -_BIAS <= value < _BIAS:
            return (LONG << TAG_SHIFT) | (value + _BIAS)
        if isinstance(value, datetime):
            micros = _instant_micros(value)
            if micros is not None:
                return (INSTANT << TAG_SHIFT) | (micros + _BIAS)
            if value.tzinfo is None:
                value = value.replace(tzinfo=timezone.utc)
        tag = _TABLE_TAGS[_kind(value)]
        if tag == 8:
            check_depth(value)
            value = freeze(value)
        key = (tag, value if tag != 8 else (type(value).__name__, value))
        found = self._ids.get(key)
        if found is None:
            table = self._values[tag]
            found = (tag << TAG_SHIFT) | len(table)
            table.append(value)
            self._ids[key] = found
        return found

    def lookup(self, value: Any) -> int | None:
        """The id of ``value`` if it is known (or needs no table), else ``None``."""
        found = self.find(value)
        return None if found < 0 else found

    def find(self, value: Any) -> int:
        """The id of ``value`` without interning it: -1 when the value was never seen.

        A read-only query looks its constants up with this, so queries do not grow the
        tables (a constant nobody stored matches nothing anyway). Values that need no
        table (booleans, longs, instants in range) always have an id.

        >>> it = Interner(); vid = it.encode("x")
        >>> it.find("x") == vid, it.find("never"), len(it), it.find(7) == it.encode(7)
        (True, -1, 1, True)
        """
        t = type(value)
        if t is bool or (t is int and -_BIAS <= value < _BIAS):
            return self.encode(value)
        if isinstance(value, datetime):
            if _instant_micros(value) is not None:
                return self.encode(value)
            if value.tzinfo is None:
                value = value.replace(tzinfo=timezone.utc)
        tag = _TABLE_TAGS[_kind(value)]
        if tag == 8:
            check_depth(value)
            value = freeze(value)
        try:
            return self._ids.get((tag, value if tag != 8 else (type(value).__name__, value)), -1)
        except TypeError:  # an unhashable value was never interned
            return -1

    def truncate(self, marks: dict[int, int]) -> None:
        """Forget every table value interned after ``marks`` (see :meth:`marks`): the
        values a failed transaction interned are given back, so failures do not grow the
        tables. Ids handed out before ``marks`` keep their meaning.

        >>> it = Interner(); a = it.encode("a"); m = it.marks(); _ = it.encode("b")
        >>> it.truncate(m); len(it), it.find("b"), it.encode("c") == a + 1
        (1, -1, True)
        """
        for tag, vals in self._values.items():
            n = marks.get(tag, 0)
            for value in vals[n:]:
                del self._ids[(tag, value if tag != 8 else (type(value).__name__, value))]
            del vals[n:]

    def encode_many(self, values: Iterable[Any]) -> I64:
        """Ids of many values. An integer array's longs in ``[-2**55, 2**55)`` (no table)
        are encoded without a Python loop; other values, larger integers included, one
        ``encode`` each.

        >>> it = Interner(); big = 2 ** 60
        >>> it.encode_many(np.array([1, big])).tolist() == [it.encode(1), it.encode(big)]
        True
        """
        if isinstance(values, np.ndarray) and values.dtype.kind in "iu" and values.size:
            if values.min() >= -_BIAS and values.max() < _BIAS:
                return (np.int64(LONG) << TAG_SHIFT) | (values.astype(np.int64) + _BIAS)
            values = values.tolist()  # Python ints: exact past int64 too (a uint64's)
        return np.fromiter((self.encode(v) for v in values), dtype=np.int64)

    def decode_one(self, vid: int) -> Any:
        """The Python value of one id."""
        vid = int(vid)
        tag, payload = vid >> TAG_SHIFT, vid & _PAYLOAD
        if tag == REF:
            return payload
        if tag == LONG:
            return payload - _BIAS
        if tag == INSTANT:
            return _EPOCH + timedelta(microseconds=payload - _BIAS)
        if tag == BOOLEAN:
            return bool(payload)
        return self._values[tag][payload]

    def decode(self, ids: Any) -> npt.NDArray[np.object_]:
        """Python values of an id array (any shape), as an object array of the same shape."""
        arr = np.asarray(ids, dtype=np.int64)
        flat = arr.ravel()
        out = np.empty(flat.shape[0], dtype=object)
        tags = flat >> TAG_SHIFT
        payload = flat & _PAYLOAD
        for tag in np.unique(tags).tolist():
            m = tags == tag
            p = payload[m]
            if tag in (REF, LONG):
                vals = (p - (_BIAS if tag == LONG else 0)).tolist()
            elif tag == BOOLEAN:
                vals = [bool(x) for x in p.tolist()]
            elif tag == INSTANT:
                vals = [_EPOCH + timedelta(microseconds=x - _BIAS) for x in p.tolist()]
            else:
                table = self._values[tag]
                vals = [table[x] for x in p.tolist()]
            tmp = np.empty(len(vals), dtype=object)
            tmp[:] = vals
            out[m] = tmp
        return out.reshape(arr.shape)

    @staticmethod
    def longs(ids: Any) -> npt.NDArray[np.int64] | None:
        """The values of ``ids`` as an int64 array when every one is a long, else None.

        >>> it = Interner(); it.longs(np.array([it.encode(3), it.encode(-4)])).tolist()
        [3, -4]
        >>> it.longs(np.array([it.encode(3), it.encode("x")])) is None
        True
        """
        arr = np.asarray(ids, dtype=np.int64)
        if len(arr) and not ((arr >> TAG_SHIFT) == LONG).all():
            return None
        return (arr & _PAYLOAD) - _BIAS

    @staticmethod
    def ints(ids: Any) -> npt.NDArray[np.int64] | None:
        """The values of ``ids`` as an int64 array when every one decodes to a Python int (a
        long, or an entity ref: its id), else None; what numeric aggregates read.

        >>> it = Interner(); it.ints(np.array([it.encode(-4), it.ref(7)])).tolist()
        [-4, 7]
        """
        arr = np.asarray(ids, dtype=np.int64)
        tags = arr >> TAG_SHIFT
        if len(arr) and not ((tags == LONG) | (tags == REF)).all():
            return None
        pay = arr & _PAYLOAD
        return np.where(tags == LONG, pay - _BIAS, pay)

    @staticmethod
    def is_numeric_kind(value: Any) -> bool:
        """Whether ``value`` is a Datomic number (long, double, bigint, bigdec)."""
        return type(value) in (int, float) or isinstance(value, Decimal)
