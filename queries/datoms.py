"""Datomic's ``datoms``: the live datoms in one index's order, narrowed by its leading
components.

``datoms(store, ":aevt", ":person/name")`` lists every ``:person/name`` datom, sorted by
entity; ``":eavt"`` sorts by entity, attribute, value; ``":avet"`` by attribute, value,
entity (any attribute, where Datomic needs ``:db/index``); ``":vaet"`` holds the datoms of
ref attributes, by the entity they point to. Components name an entity by id, ident or
lookup ref, an attribute by its ident, a value as the attribute stores it (an entity for
``:vaet``), a transaction by its id. Values sort as Python sorts them within an
attribute; attributes by ident.

Relies on ``indexes.eav`` and ``queries.transact`` (entities, value checks); used by
``queries.database``.

>>> from queries.database import Database
>>> db = Database()
>>> _ = db.transact('[{:db/ident :n :db/valueType :db.type/long}]')
>>> r = db.transact([{":db/id": "a", ":n": 2}, {":db/id": "b", ":n": 1}])
>>> [(d.e, str(d.a), d.v) for d in db.datoms(":avet", ":n")]
[(2, ':n', 1), (1, ':n', 2)]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from indexes.eav import EavStore
from queries.edn import Keyword
from queries.schema import check_value
from queries.transact import entity_id
from wcoj.errors import QueryError, excerpt

__all__ = ["Datom", "datoms", "index_range", "entid", "ident", "INDEXES"]

# per index: the datom fields (e, a, v, tx) in its order
INDEXES = {":eavt": (0, 1, 2, 3), ":aevt": (1, 0, 2, 3), ":avet": (1, 2, 0, 3), ":vaet": (2, 1, 0, 3)}


class Datom(NamedTuple):
    """One datom: entity (an attribute's as its ident), attribute (its ident), value,
    transaction id, added."""

    e: Any
    a: Any
    v: Any
    tx: int
    added: bool


def datoms(store: EavStore, index: Any, *components: Any) -> list[Datom]:
    """The live datoms of ``store`` in ``index`` order whose leading fields equal
    ``components`` (see the module docstring)."""
    name = str(index) if str(index).startswith(":") else f":{index}"
    order = INDEXES.get(name)
    if order is None:
        raise QueryError(f"unknown index {excerpt(str(index), quote=False)}; expected one of "
                         + ", ".join(INDEXES))
    if len(components) > 4:
        raise QueryError(f"index {name} has 4 components (e a v tx in its order), got {len(components)}")
    rows = store.datoms.contents().keys
    if rows.shape[1] != 4:
        raise QueryError("datoms reads a database value (now, as_of or since), not a history")
    if name == ":vaet":
        refs = [store.aid(a) for a, s in store.attributes.items() if s.value_type == "ref"]
        rows = rows[np.isin(rows[:, 1], np.array(refs, dtype=np.int64))]
    attr = None
    for field, c in zip(order, components):
        if field == 0:
            want = entity_id(store, c)
        elif field == 1:
            attr = store.attribute(str(c))  # UnknownAttributeError names it
            want = store.aid(attr.ident)
        elif field == 2 and name == ":vaet":
            want = store.interner.ref(entity_id(store, c))
        elif field == 2:
            want = store.interner.find(check_value(attr, c))
        else:
            want = int(c)
        rows = rows[rows[:, field] == want]
    # an attribute's own entity (queries.schema) is shown as its keyword, as ``q`` binds it
    values = store.interner.decode(rows[:, 0:3]) if len(rows) else np.empty((0, 3), dtype=object)
    out = [Datom(e, a, v, int(tx), True) for tx, (e, a, v) in zip(rows[:, 3].tolist(), values.tolist())]
    if name == ":vaet":
        return sorted(out, key=lambda d: (d.v, str(d.a), _e(d.e), d.tx))
    key = {":eavt": lambda d: (_e(d.e), str(d.a), d.v, d.tx), ":aevt": lambda d: (str(d.a), _e(d.e), d.v, d.tx),
           ":avet": lambda d: (str(d.a), d.v, _e(d.e), d.tx)}[name]
    try:
        return sorted(out, key=key)
    except TypeError:  # values of kinds Python does not order (maps): by id instead
        return out


def _e(e: Any) -> tuple:
    """An entity as a sort key: entity ids first, in order, then attributes by ident."""
    return (0, e, "") if type(e) is int else (1, 0, str(e))


def index_range(store: EavStore, attr: Any, start: Any = None, end: Any = None) -> list[Datom]:
    """Datomic's ``index-range``: the live datoms of ``attr`` whose value ``v`` has
    ``start <= v < end`` (``None``: open), in ``:avet`` order. Bounds are values of the
    attribute's type (entities, by id, ident or lookup ref, for a ref attribute); a value
    type without an order (tuples) is refused.

    >>> from queries.database import Database
    >>> db = Database()
    >>> _ = db.transact('[{:db/ident :n :db/valueType :db.type/long}]')
    >>> _ = db.transact([{":n": x} for x in (5, 1, 9, 3)])
    >>> [d.v for d in db.index_range(":n", 2, 9)], [d.v for d in db.index_range(":n", 5)]
    ([3, 5], [5, 9])
    """
    schema = store.attribute(str(attr))  # UnknownAttributeError names it
    if schema.value_type == "tuple":
        raise QueryError(f"index_range: {schema.ident} holds tuples, which have no order here")

    def bound(x: Any) -> Any:
        if x is None:
            return None
        return entity_id(store, x) if schema.value_type == "ref" else check_value(schema, x)
    lo, hi = bound(start), bound(end)
    return [d for d in datoms(store, ":avet", schema.ident)
            if (lo is None or d.v >= lo) and (hi is None or d.v < hi)]


def entid(store: EavStore, x: Any) -> Any:
    """Datomic's ``entid``: the entity ``x`` names (an id, an ident keyword, a lookup ref),
    or None when no entity has that ident or unique value; an attribute's entity is its
    keyword, as ``q`` shows it (``queries.schema``)."""
    e = entity_id(store, x)
    if e < 0:
        return None
    return store.interner.decode_one(e)  # an entity id is its own ref id


def ident(store: EavStore, x: Any) -> Keyword | None:
    """Datomic's ``ident``: the keyword that names entity ``x`` (``:db/ident``), or None."""
    e = entity_id(store, x)
    vals = store.values(":db/ident", e) if e >= 0 else []
    return vals[0] if vals else None
