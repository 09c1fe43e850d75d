"""Attribute definitions: a transaction's schema maps checked and staged on the store.

``install`` reads a map such as ``{:db/ident :person/name :db/valueType :db.type/string
:db/cardinality :db.cardinality/one :db/unique :db.unique/identity}`` (keys as text) and
stages the ``indexes.eav.Attribute`` it defines, or its alteration, checked against the
datoms the attribute already has: the value type only while it has none, cardinality one
and uniqueness only when no entity has two values and no value two entities. A composite
tuple (``:db/tupleAttrs``) names 2 to 8 cardinality-one attributes; ``queries.txrules``
keeps its values in step. Any other tuple names its element types, as in Datomic: one per
element (``:db/tupleTypes [:db.type/long :db.type/string]``) or one for 2 to 8 elements
(``:db/tupleType :db.type/keyword``). ``SCHEMA_KEYS`` are the keys that describe an
attribute rather than assert a datom. ``check_value`` coerces a value to its attribute's type (a tuple: a
vector of 2 to 8 scalars), or names what is wrong.

The schema is data too, as in Datomic: each attribute is the entity whose id is its
keyword's, and the transaction that installs or alters it writes (and retracts) that
entity's ``:db/ident``, ``:db/valueType``, ``:db/cardinality``, ``:db/unique``,
``:db/isComponent``, ``:db/fulltext``, ``:db/tupleAttrs``, ``:db/tupleTypes``,
``:db/tupleType`` and ``:db/doc`` datoms
(``schema_datoms``), plus ``[:db.part/db :db.install/attribute attr]``; a transaction
cannot write them on its own (``check_schema_rows``).

Relies on ``indexes.eav`` and ``queries.edn``; used by ``queries.transact``.

>>> from queries.database import Database
>>> db = Database()
>>> install(db.store, {":db/ident": ":age", ":db/valueType": ":db.type/long"})
>>> [a.ident for a in db.store.staged_installs()]
[':age']
"""

from __future__ import annotations

import math
import uuid
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import numpy as np

from indexes.eav import VALUE_TYPES, Attribute, EavStore
from indexes.interner import tag_of
from queries.edn import Keyword
from wcoj.errors import SchemaError, shown

__all__ = ["check_value", "install", "alter", "alter_map", "names_attribute", "is_ident", "SCHEMA_KEYS", "ALTERABLE",
           "SYSTEM", "FACTS", "facts", "schema_datoms", "check_schema_rows"]

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


# Schema as data, as in Datomic: an installed attribute is the entity whose id is its
# keyword's (so ``[_ ?a _]`` and ``[?a :db/ident ?i]`` bind the same ``?a``), with the
# datoms ``facts`` lists, written by the transaction that installs or alters it
# (``schema_datoms``) and never by a datom of a transaction's own (``check_schema_rows``);
# ``:db.part/db`` lists it under ``:db.install/attribute``. The built-in ``:db/...``
# attributes have no such datoms.
SYSTEM = (Attribute(":db/valueType", "keyword"), Attribute(":db/cardinality", "keyword"),
          Attribute(":db/unique", "keyword"), Attribute(":db/isComponent", "boolean"),
          Attribute(":db/fulltext", "boolean"), Attribute(":db/tupleAttrs", "tuple"),
          Attribute(":db/tupleTypes", "tuple"), Attribute(":db/tupleType", "keyword"),
          Attribute(":db.install/attribute", "keyword", many=True))
FACTS = (":db/ident", ":db/valueType", ":db/cardinality", ":db/unique", ":db/isComponent",
         ":db/fulltext", ":db/tupleAttrs", ":db/tupleTypes", ":db/tupleType", ":db/doc")
# the types a tuple's elements may have: every value type but a tuple
ELEMENT_TYPES = tuple(t for t in VALUE_TYPES if t != "tuple")
PARTITION = ":db.part/db"


def facts(attr: Attribute) -> dict[str, Any]:
    """The schema datoms of ``attr``: attribute -> value.

    >>> sorted((k, str(v)) for k, v in facts(Attribute(":tags", "string", many=True, doc="labels")).items())
    [(':db/cardinality', ':db.cardinality/many'), (':db/doc', 'labels'), (':db/ident', ':tags'), (':db/valueType', ':db.type/string')]
    """
    out: dict[str, Any] = {":db/ident": Keyword(attr.ident),
                           ":db/valueType": Keyword(f":db.type/{attr.value_type}"),
                           ":db/cardinality": Keyword(":db.cardinality/" + ("many" if attr.many else "one"))}
    if attr.unique:
        out[":db/unique"] = Keyword(f":db.unique/{attr.unique}")
    if attr.component:
        out[":db/isComponent"] = True
    if attr.fulltext:
        out[":db/fulltext"] = True
    if attr.tuple_attrs:
        out[":db/tupleAttrs"] = tuple(Keyword(a) for a in attr.tuple_attrs)
    if attr.tuple_types:
        out[":db/tupleTypes"] = tuple(Keyword(f":db.type/{t}") for t in attr.tuple_types)
    if attr.tuple_type:
        out[":db/tupleType"] = Keyword(f":db.type/{attr.tuple_type}")
    if attr.doc is not None:
        out[":db/doc"] = attr.doc
    return out


def schema_datoms(store: EavStore, installs: list[Attribute]) -> tuple[np.ndarray, np.ndarray, list]:
    """``(adds, retracts, datoms)`` that make the schema datoms of each attribute in
    ``installs`` (staged in this transaction) say what it now is: ``(e, aid, v)`` id rows
    against the live ones, and the same decoded as ``(e, attr, value, added)`` for the
    report. An attribute whose datoms are missing (a log written before schema datoms)
    gets them all."""
    interner, kw = store.interner, store.keyword
    adds: list[tuple[int, int, int]] = []
    rets: list[tuple[int, int, int]] = []
    out: list[tuple] = []
    part, listed = store.aid(PARTITION), store.aid(":db.install/attribute")
    installed = set(store.value_ids(":db.install/attribute", part).tolist())
    for attr in installs:
        e, want = store.aid(attr.ident), facts(attr)
        for key in FACTS:
            a, new = store.aid(key), want.get(key)
            vid = None if new is None else interner.encode(new)
            live = store.value_ids(key, e).tolist()
            for v in live:
                if v != vid:
                    rets.append((e, a, v))
                    out.append((kw(attr.ident), kw(key), interner.decode_one(v), False))
            if vid is not None and vid not in live:
                adds.append((e, a, vid))
                out.append((kw(attr.ident), kw(key), new, True))
        if e not in installed:
            adds.append((part, listed, e))
            out.append((kw(PARTITION), kw(":db.install/attribute"), kw(attr.ident), True))
    if adds and not len(store.value_ids(":db/ident", part)):
        adds.append((part, store.aid(":db/ident"), part))
        out.append((kw(PARTITION), kw(":db/ident"), kw(PARTITION), True))
    return (np.array(adds, dtype=np.int64).reshape(-1, 3), np.array(rets, dtype=np.int64).reshape(-1, 3),
            out)


def check_schema_rows(store: EavStore, rows: np.ndarray) -> None:
    """Refuse datoms a transaction writes on its own that only installs and alterations
    may write: any datom of the ``SYSTEM`` attributes, and the ``FACTS`` of an attribute
    (``[:db/retractEntity :person/name]``, ``[:db/retract :person/name :db/ident ...]``)."""
    if not len(rows):
        return
    system, facts, keyword_tag = _aids(store)
    a = rows[:, 1]
    present = set(a.tolist()) if len(a) <= 64 else set(np.unique(a).tolist())
    if present.isdisjoint(system) and present.isdisjoint(facts):  # the common case
        return
    bad = np.isin(a, list(system)) | (np.isin(a, list(facts)) & (tag_of(rows[:, 0]) == keyword_tag))
    if bad.any():
        e, a, _ = (store.interner.decode_one(x) for x in rows[np.flatnonzero(bad)[0]].tolist())
        raise SchemaError(f"[{e if isinstance(e, Keyword) else shown(e)} {a} ...]: "
                          "schema datoms are written by installing or altering an attribute "
                          "({:db/ident :x :db/valueType ...}, [:db/add :x :db/cardinality ...]), "
                          "not asserted or retracted on their own; the transaction was not applied")


def _aids(store: EavStore) -> tuple[frozenset, frozenset, int]:
    """The ids of the ``SYSTEM`` and ``FACTS`` attributes, and the keyword tag (an
    attribute's entity id has it), made once per store and interner."""
    memo = store.memo.get("schema")
    if memo is None or memo[0] is not store.interner:
        memo = store.memo["schema"] = (store.interner, frozenset(store.aid(a.ident) for a in SYSTEM),
                                       frozenset(store.aid(k) for k in FACTS),
                                       int(tag_of(store.aid(":db/ident"))))
    return memo[1:]


def _doc(ident: str, doc: Any) -> str | None:
    if doc is not None and not isinstance(doc, str):
        raise SchemaError(f"attribute {ident}: :db/doc must be a string, got {shown(doc)}")
    return doc


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
    types, one_type = _tuple_types(ident, vt, m)
    attr = Attribute(ident, vt.split("/", 1)[1], card.endswith("many"),
                     str(unique).split("/", 1)[1] if unique else None,
                     bool(m.get(":db/isComponent")), _tuple_attrs(store, ident, vt, m),
                     bool(m.get(":db/fulltext")), _doc(ident, m.get(":db/doc")), types, one_type)
    if attr.fulltext and attr.value_type != "string":
        raise SchemaError(f"attribute {ident}: :db/fulltext needs :db/valueType :db.type/string")
    if vt == ":db.type/tuple" and (bool(attr.tuple_attrs) + bool(types) + bool(one_type)) != 1:
        raise SchemaError(f"attribute {ident}: a :db.type/tuple attribute needs exactly one of "
                          ":db/tupleAttrs (a composite), :db/tupleTypes (one type per element) or "
                          ":db/tupleType (one type for every element)")
    old = store.attributes.get(ident)
    if old is not None and _shape(old) != _shape(attr) and ident in store.relations \
            and len(store.relations[ident].contents()):
        raise SchemaError(f"attribute {ident}: cannot change :db/tupleAttrs, :db/tupleTypes or "
                          ":db/tupleType while it has datoms")
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
    if old.tuple_types:
        m[":db/tupleTypes"] = [f":db.type/{t}" for t in old.tuple_types]
    if old.tuple_type:
        m[":db/tupleType"] = f":db.type/{old.tuple_type}"
    if old.fulltext:
        m[":db/fulltext"] = True
    if old.doc is not None:
        m[":db/doc"] = old.doc
    for added, key, value in changes:
        key = str(key)
        if key == ":db/ident":
            raise SchemaError(f"attribute {ident}: renaming an attribute (:db/ident {value}) is not "
                              "supported; install a new attribute and move its datoms")
        if key in _RESTATED and added and _restates(key, value, old):
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


def _restates(key: str, given: Any, old: Attribute) -> bool:
    """Whether asserting ``key`` ``given`` on ``old`` says what it already is (a schema
    file run twice): ``:db.install/_attribute`` always; a tuple's parts or element types
    only when they are the ones it has (they cannot be altered)."""
    if key == ":db/tupleAttrs":
        return isinstance(given, (list, tuple)) and \
            tuple(str(Keyword(a) if isinstance(a, str) else a) for a in given) == old.tuple_attrs
    if key == ":db/tupleTypes":
        return isinstance(given, (list, tuple)) and tuple(str(t) for t in given) == \
            tuple(f":db.type/{t}" for t in old.tuple_types)
    if key == ":db/tupleType":
        return old.tuple_type is not None and str(given) == f":db.type/{old.tuple_type}"
    return True


def _shape(attr: Attribute) -> tuple:
    """What a tuple attribute's values must look like: its parts or element types."""
    return attr.tuple_attrs, attr.tuple_types, attr.tuple_type


def _element_type(ident: str, key: str, t: Any) -> str:
    """``t`` (``:db.type/long``) as an element type name (``long``), or a SchemaError."""
    name = str(t)
    if not (isinstance(t, str) and name.startswith(":db.type/") and name[9:] in ELEMENT_TYPES):
        raise SchemaError(f"attribute {ident}: {key} takes :db.type/... keywords of scalar types ("
                          + ", ".join(ELEMENT_TYPES) + f"), got {name if isinstance(t, str) else shown(t)}")
    return name[9:]


def _tuple_types(ident: str, vt: str, m: dict) -> tuple[tuple[str, ...], str | None]:
    """A tuple's element types, checked: ``:db/tupleTypes`` (2 to 8, one per element) and
    ``:db/tupleType`` (every element's), each only on a ``:db.type/tuple`` attribute."""
    many, one = m.get(":db/tupleTypes"), m.get(":db/tupleType")
    for key, given in ((":db/tupleTypes", many), (":db/tupleType", one)):
        if given is not None and vt != ":db.type/tuple":
            raise SchemaError(f"attribute {ident}: {key} needs :db/valueType :db.type/tuple")
    if many is not None and (not isinstance(many, (list, tuple)) or not 2 <= len(many) <= 8):
        raise SchemaError(f"attribute {ident}: :db/tupleTypes must list 2 to 8 types, got {shown(many)}")
    return (tuple(_element_type(ident, ":db/tupleTypes", t) for t in many or ()),
            None if one is None else _element_type(ident, ":db/tupleType", one))


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


def check_value(attr: Attribute, v: Any) -> Any:
    """The value coerced to the attribute's type, or a SchemaError naming all three."""
    t = attr.value_type
    ok: Any = None
    if t == "string" and type(v) is str:
        ok = v
    elif t in ("long", "bigint") and (type(v) is int or isinstance(v, np.integer)):
        ok = int(v)  # a NumPy integer is stored as the int it holds
    elif t in ("double", "float") and (type(v) in (float, int) or isinstance(v, (np.floating, np.integer))):
        ok = float(v)
        if math.isnan(ok):  # NaN equals nothing, itself included: a set could hold it twice
            raise SchemaError(f"NaN is not a valid value for attribute {attr.ident}: it "
                              "equals nothing, not even itself (Datomic cannot compare it)")
    elif t == "boolean" and (type(v) is bool or isinstance(v, np.bool_)):
        ok = bool(v)
    elif t == "instant" and isinstance(v, datetime):
        ok = v if v.tzinfo else v.replace(tzinfo=timezone.utc)
    elif t == "instant" and isinstance(v, date):
        ok = datetime(v.year, v.month, v.day, tzinfo=timezone.utc)
    elif t == "keyword" and isinstance(v, str) and v.startswith(":"):
        ok = Keyword(v)
    elif t == "uuid" and isinstance(v, uuid.UUID):
        ok = v
    elif t == "bigdec" and isinstance(v, (Decimal, int)) and type(v) is not bool \
            and not (isinstance(v, Decimal) and v.is_nan()):
        ok = Decimal(v)
    elif t == "symbol":
        ok = v
    elif t == "tuple":
        ok = _check_tuple(attr, v)
    if ok is None:
        raise SchemaError(f"value {shown(v)} of type {type(v).__name__} for attribute {attr.ident} "
                          f"does not match its type :db.type/{t}")
    return ok


def _check_tuple(attr: Attribute, v: Any) -> Any:
    """A tuple attribute's value as Datomic takes it: a vector of 2 to 8 scalars (nil
    allowed), none of them NaN (it equals nothing, so a set could hold the tuple twice),
    each of its element type when the attribute names them (``:db/tupleTypes``: one per
    element, so also the length; ``:db/tupleType``: every element's)."""
    if not isinstance(v, (list, tuple)) or not 2 <= len(v) <= 8:
        raise SchemaError(f"value {shown(v)} for tuple attribute {attr.ident} must be a vector of "
                          "2 to 8 scalar values")
    types = attr.tuple_types or ((attr.tuple_type,) * len(v) if attr.tuple_type else ())
    if types and len(types) != len(v):
        raise SchemaError(f"value {shown(v)} for tuple attribute {attr.ident} has {len(v)} elements; "
                          f"its :db/tupleTypes name {len(types)}")
    for x in v:
        if isinstance(x, (list, tuple, set, frozenset, dict)):
            raise SchemaError(f"value {shown(v)} for tuple attribute {attr.ident} holds a collection, "
                              f"{shown(x)}; a tuple's elements are scalars")
        if isinstance(x, (float, np.floating)) and math.isnan(x):
            raise SchemaError(f"value {shown(v)} for tuple attribute {attr.ident} holds NaN: it equals "
                              "nothing, not even itself, so a set could hold the tuple twice")
    if types:
        return type(v)(_element(attr, v, i, t, x) for i, (t, x) in enumerate(zip(types, v)))
    return v


_ELEMENTS = {t: Attribute(":db/tupleType", t) for t in ELEMENT_TYPES}


def _element(attr: Attribute, v: Any, i: int, t: str, x: Any) -> Any:
    """Element ``i`` of tuple ``v``, ``x``, coerced to type ``t`` (nil stays nil; a ref is
    an entity id), or a SchemaError naming the element."""
    if x is None:
        return None
    if t == "ref":
        ok = int(x) if (type(x) is int or isinstance(x, np.integer)) and x >= 0 else None
    else:
        try:
            ok = check_value(_ELEMENTS[t], x)
        except SchemaError:
            ok = None
    if ok is None:
        raise SchemaError(f"value {shown(v)} for tuple attribute {attr.ident}: element {i}, {shown(x)} "
                          f"of type {type(x).__name__}, is not a :db.type/{t}")
    return ok
