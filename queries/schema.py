"""Attribute definitions: a transaction's schema maps checked and staged on the store.

``install`` reads a map such as ``{:db/ident :person/name :db/valueType :db.type/string
:db/cardinality :db.cardinality/one :db/unique :db.unique/identity}`` (keys as text) and
stages the ``indexes.eav.Attribute`` it defines, or its alteration, checked against the
datoms the attribute already has: the value type only while it has none, cardinality one
and uniqueness only when no entity has two values and no value two entities. A composite
tuple (``:db/tupleAttrs``) names 2 to 8 cardinality-one attributes; ``queries.txrules``
keeps its values in step. ``SCHEMA_KEYS`` are the keys that describe an attribute rather
than assert a datom.

Relies on ``indexes.eav`` and ``queries.edn``; used by ``queries.transact``.

>>> from queries.database import Database
>>> db = Database()
>>> install(db.store, {":db/ident": ":age", ":db/valueType": ":db.type/long"})
>>> [a.ident for a in db.store.staged_installs()]
[':age']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexes.eav import Attribute, EavStore
from queries.edn import Keyword
from wcoj.errors import SchemaError

__all__ = ["install", "alter", "alter_map", "names_attribute", "is_ident", "SCHEMA_KEYS", "ALTERABLE"]

SCHEMA_KEYS = {":db/ident", ":db/valueType", ":db/cardinality", ":db/unique", ":db/doc",
               ":db/isComponent", ":db/index", ":db/fulltext", ":db/noHistory",
               ":db/tupleAttrs", ":db/tupleTypes", ":db/tupleType",
               ":db.install/_attribute", ":db/id"}


# what a transaction may assert on an existing attribute, as Datomic's schema alteration
# (``{:db/id :person/age :db/cardinality :db.cardinality/many}``, ``[:db/add :person/age
# :db/unique :db.unique/identity]``); ``:db/valueType`` only while the attribute has no
# datoms (Datomic refuses always); ``:db/doc``, ``:db/index`` and ``:db/noHistory`` are
# accepted and not kept, as at install (every attribute is indexed, all history is kept)
ALTERABLE = {":db/valueType", ":db/cardinality", ":db/unique", ":db/isComponent", ":db/doc",
             ":db/index", ":db/noHistory", ":db/fulltext"}
_RETRACTABLE = {":db/unique": None, ":db/isComponent": False, ":db/doc": None, ":db/index": None,
                ":db/noHistory": None}
# keys a restated attribute may repeat as installed (an idempotent schema file): no change
_RESTATED = {":db.install/_attribute", ":db/tupleTypes", ":db/tupleType", ":db/tupleAttrs"}


def is_ident(x: Any) -> bool:
    """An entity named by its ``:db/ident`` keyword (``:genre/drama``; a string that starts
    with ``:`` in Python data)."""
    return isinstance(x, str) and len(x) > 1 and x[0] == ":"


def install(store: EavStore, m: dict) -> None:
    """Stage the attribute that schema map ``m`` (keys as text) defines or alters: its
    value type, cardinality, uniqueness, components and composite parts checked, an
    alteration checked against the datoms the attribute has."""
    ident = str(m[":db/ident"])
    vt = str(m.get(":db/valueType", ""))
    card = str(m.get(":db/cardinality", ":db.cardinality/one"))
    unique = m.get(":db/unique")
    if not vt.startswith(":db.type/"):
        raise SchemaError(f"attribute {ident}: :db/valueType must be a :db.type/... keyword, "
                          f"got {vt or 'nothing'}")
    if card not in (":db.cardinality/one", ":db.cardinality/many"):
        raise SchemaError(f"attribute {ident}: :db/cardinality must be :db.cardinality/one or "
                          f":db.cardinality/many, got {card}")
    attr = Attribute(ident, vt.split("/", 1)[1], card.endswith("many"),
                     str(unique).split("/", 1)[1] if unique else None,
                     bool(m.get(":db/isComponent")), _tuple_attrs(store, ident, vt, m),
                     bool(m.get(":db/fulltext")))
    if attr.fulltext and attr.value_type != "string":
        raise SchemaError(f"attribute {ident}: :db/fulltext needs :db/valueType :db.type/string")
    old = store.attributes.get(ident)
    if old is not None and old.tuple_attrs != attr.tuple_attrs and ident in store.relations \
            and len(store.relations[ident].contents()):
        raise SchemaError(f"attribute {ident}: cannot change :db/tupleAttrs while it has datoms")
    if old is not None and old != attr:
        _check_alteration(store, old, attr)
    store.stage_install(attr)


def alter(store: EavStore, ident: str, changes: list[tuple[bool, str, Any]]) -> None:
    """Stage the alteration of the existing attribute ``ident`` by ``changes``, each
    ``(added, key, value)`` as a transaction asserts (``True``) or retracts it: the keys
    not named keep their values; the result is checked as ``install`` checks it.

    >>> from queries.database import Database
    >>> db = Database()
    >>> _ = db.transact('[{:db/ident :age :db/valueType :db.type/long}]')
    >>> alter(db.store, ":age", [(True, ":db/cardinality", ":db.cardinality/many")])
    >>> db.store.attribute(":age").many
    True
    """
    old = store.attribute(ident)
    m: dict[str, Any] = {":db/ident": ident, ":db/valueType": f":db.type/{old.value_type}",
                         ":db/cardinality": ":db.cardinality/" + ("many" if old.many else "one")}
    if old.unique:
        m[":db/unique"] = f":db.unique/{old.unique}"
    if old.component:
        m[":db/isComponent"] = True
    if old.tuple_attrs:
        m[":db/tupleAttrs"] = list(old.tuple_attrs)
    if old.fulltext:
        m[":db/fulltext"] = True
    for added, key, value in changes:
        key = str(key)
        if key == ":db/ident":
            raise SchemaError(f"attribute {ident}: renaming an attribute (:db/ident {value}) is not "
                              "supported; install a new attribute and move its datoms")
        if key in _RESTATED and added and (key != ":db/tupleAttrs" or _same_parts(value, old.tuple_attrs)):
            continue
        if key not in ALTERABLE:
            raise SchemaError(f"attribute {ident}: {key} cannot be altered; alterable: "
                              + ", ".join(sorted(ALTERABLE)))
        if added:
            m[key] = str(value) if isinstance(value, Keyword) else value
        elif key not in _RETRACTABLE:
            raise SchemaError(f"attribute {ident}: {key} cannot be retracted, only asserted anew")
        elif key in m and str(m[key]) != str(value):
            raise SchemaError(f"attribute {ident}: cannot retract {key} {value}: it is {m[key]}")
        else:
            m.pop(key, None)
    if bool(m.get(":db/fulltext")) != old.fulltext:
        raise SchemaError(f"attribute {ident}: :db/fulltext cannot be altered")
    install(store, m)


def names_attribute(store: EavStore, x: Any) -> bool:
    """Whether ``x`` is the ident of an installed (or staged) attribute."""
    return (isinstance(x, Keyword) or is_ident(x)) and store.has_attribute(str(x))


def alter_map(store: EavStore, m: dict) -> bool:
    """Stage the alteration a transaction map makes, if it makes one: a map whose
    ``:db/id`` (or, without one, ``:db/ident``) names an installed attribute and that
    asserts schema keys (``{:db/id :person/age :db/cardinality :db.cardinality/many}``; a
    restatement alters only the keys it gives, so a schema file may run twice)."""
    target = m.get(":db/id", m.get(":db/ident"))
    if not names_attribute(store, target):
        return False
    keys = {str(k) for k in m}
    if not keys & SCHEMA_KEYS - {":db/id", ":db/ident"} and not {":db/id", ":db/ident"} <= keys:
        return False
    other = sorted(keys - SCHEMA_KEYS)  # schema keys: alter refuses those it cannot change
    if other:
        raise SchemaError(f"attribute {target}: a schema alteration asserts schema keys only, "
                          f"not {', '.join(other)}")
    alter(store, str(target), [(True, str(k), v) for k, v in m.items()
                               if str(k) != ":db/id" and not (str(k) == ":db/ident" and str(v) == str(target))])
    return True


def _same_parts(given: Any, parts: tuple[str, ...]) -> bool:
    """Whether ``:db/tupleAttrs`` ``given`` names the composite's ``parts``."""
    return isinstance(given, (list, tuple)) and \
        tuple(str(Keyword(a) if isinstance(a, str) else a) for a in given) == parts


def _tuple_attrs(store: EavStore, ident: str, vt: str, m: dict) -> tuple[str, ...]:
    """The attributes a composite tuple is made of (``:db/tupleAttrs``), checked: 2 to 8
    cardinality-one attributes that exist and are not composites themselves."""
    given = m.get(":db/tupleAttrs")
    if given is None:
        return ()
    if vt != ":db.type/tuple":
        raise SchemaError(f"attribute {ident}: :db/tupleAttrs needs :db/valueType :db.type/tuple")
    if not isinstance(given, (list, tuple)) or not 2 <= len(given) <= 8:
        raise SchemaError(f"attribute {ident}: :db/tupleAttrs must list 2 to 8 attributes, "
                          f"got {given!r}")
    out = tuple(str(Keyword(a) if isinstance(a, str) else a) for a in given)
    for a in out:
        schema = store.attribute(a)   # UnknownAttributeError names it
        if schema.many or schema.tuple_attrs:
            raise SchemaError(f"attribute {ident}: :db/tupleAttrs {a} is "
                              + ("cardinality many" if schema.many else "a composite itself"))
    return out


def _check_alteration(store: EavStore, old: Attribute, new: Attribute) -> None:
    """An altered attribute must hold for the datoms it has: the value type may change only
    while it has none (Datomic refuses always), cardinality one and uniqueness only when
    no entity has two values and no value two entities."""
    rel = store.relations.get(old.ident)
    z = rel.contents() if rel is not None else None
    ev = z.keys[z.weights > 0] if z is not None else np.zeros((0, 2), dtype=np.int64)
    if not len(ev):
        return
    if old.value_type != new.value_type:
        raise SchemaError(f"attribute {old.ident}: cannot change :db/valueType from :db.type/"
                          f"{old.value_type} to :db.type/{new.value_type} while it has "
                          "datoms; retract them first or install a new attribute")
    for col, what, now in ((0, "cardinality one", old.many and not new.many),
                           (1, "a unique attribute", new.unique and not old.unique)):
        ids = np.sort(ev[:, col])
        two = np.flatnonzero(ids[1:] == ids[:-1]) if now else ()
        if len(two):
            x = int(ids[two[0]])
            shown = x if col == 0 else repr(store.interner.decode_one(x))
            raise SchemaError(f"attribute {old.ident} cannot become {what}: "
                              + (f"entity {shown} has two values" if col == 0 else
                                 f"the value {shown} belongs to two entities")
                              + "; retract the extra datoms first")
