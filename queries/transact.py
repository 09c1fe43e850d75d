"""Transaction data -> the datoms a transaction adds and retracts, checked against the schema.

``resolve`` expands list and map forms, installs attributes (staged, so a failed transaction
installs nothing), resolves tempids (strings, ``#db/id [:db.part/user -100]``, maps without
``:db/id``; upserts through ``:db.unique/identity``), lookup refs, reverse attributes and
nested maps, checks every value's type, and applies set semantics, cardinality-one
replacement and uniqueness. It reads the store but changes nothing in it except reserving
entity ids (which ``EavStore.rollback`` gives back). ``bulk`` applies the same rules to
arrays of datoms (``Database.load_datoms``), vectorised.

Relies on ``indexes.eav``, ``indexes.interner`` and ``queries.edn``; used by
``queries.database``.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import numpy as np

from indexes.eav import Attribute, EavStore
from indexes.interner import BOOLEAN, TAG_SHIFT, ref_ids
from queries.edn import Keyword, Tagged
from wcoj.zset import ZSet
from wcoj.errors import CasError, SchemaError

__all__ = ["resolve", "bulk", "entity_id"]

_SCHEMA_KEYS = {":db/ident", ":db/valueType", ":db/cardinality", ":db/unique", ":db/doc",
                ":db/isComponent", ":db/index", ":db/fulltext", ":db/noHistory",
                ":db.install/_attribute", ":db/id"}
_anon = itertools.count()


class _TempId:
    """A tempid with no name: ``#db/id [:db.part/user]`` or a map without ``:db/id``."""

    def __init__(self) -> None:
        self.n = next(_anon)

    def __repr__(self) -> str:
        return f"#tempid{self.n}"


def _kw(x: Any) -> Any:
    return Keyword(x) if type(x) is str and len(x) > 1 and x[0] == ":" else x


def _is_tempid(x: Any) -> bool:
    return (type(x) is str) or isinstance(x, (Tagged, _TempId))


def _tempid_key(x: Any) -> Any:
    if isinstance(x, Tagged):
        v = x.value if isinstance(x.value, list) else [x.value]
        return x if len(v) >= 2 else _TempId()
    return x


def _install(store: EavStore, m: dict) -> None:
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
                     bool(m.get(":db/isComponent")))
    old = store.attributes.get(ident)
    if old is not None and old.value_type != attr.value_type and store.relations.get(ident) \
            is not None and len(store.relations[ident].contents()):
        # Datomic refuses to alter :db/valueType; we allow it while no datom could disagree
        raise SchemaError(f"attribute {ident}: cannot change :db/valueType from :db.type/"
                          f"{old.value_type} to :db.type/{attr.value_type} while it has "
                          "datoms; retract them first or install a new attribute")
    store.stage_install(attr)


def _check_value(attr: Attribute, v: Any) -> Any:
    """The value coerced to the attribute's type, or a SchemaError naming all three."""
    t = attr.value_type
    ok: Any = None
    if t == "string" and type(v) is str:
        ok = v
    elif t in ("long", "bigint") and type(v) is int:
        ok = v
    elif t in ("double", "float") and type(v) in (float, int):
        ok = float(v)
        if ok != ok:  # NaN is not equal to itself: a set of datoms could hold it twice
            raise SchemaError(f"NaN is not a valid value for attribute {attr.ident}: it "
                              "equals nothing, not even itself (Datomic cannot compare it)")
    elif t == "boolean" and type(v) is bool:
        ok = v
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
    elif t in ("symbol", "tuple"):
        ok = v
    if ok is None:
        raise SchemaError(f"value {v!r} of type {type(v).__name__} for attribute {attr.ident} "
                          f"does not match its type :db.type/{t}")
    return ok


def _expand(store: EavStore, data: list) -> list[tuple]:
    """Forms -> ``(op, e, attr, value)`` with ``op`` "add"/"retract"/"retractEntity"/"cas"
    (whose value is ``(old, new)``)."""
    ops: list[tuple] = []

    def entity_map(m: dict) -> Any:
        m = {str(_kw(k)): v for k, v in m.items()}
        if ":db/ident" in m and ":db/valueType" in m:
            _install(store, m)
            return None
        e = _tempid_key(m[":db/id"]) if ":db/id" in m else _TempId()
        if isinstance(e, list) and len(e) == 2:
            e = tuple(e)  # lookup ref
        for k, v in m.items():
            if k in _SCHEMA_KEYS:
                continue
            kw = Keyword(k)
            reverse = kw.name.startswith("_") and not store.has_attribute(k)
            attr = (f":{kw.namespace}/{kw.name[1:]}" if kw.namespace else f":{kw.name[1:]}") \
                if reverse else k
            schema = store.attribute(attr)
            if isinstance(v, (set, frozenset)):
                values = list(v)
            elif isinstance(v, list) and not (schema.value_type == "ref" and _lookup_like(v)) \
                    and (schema.many or schema.value_type == "ref"):
                values = v
            else:
                values = [v]
            for x in values:
                if isinstance(x, dict):
                    x = entity_map(x)
                if reverse:
                    ops.append(("add", x, attr, e))
                else:
                    ops.append(("add", e, attr, x))
        return e

    for form in data:
        if isinstance(form, dict):
            entity_map(form)
        elif isinstance(form, (list, tuple)) and form:
            op = str(_kw(form[0]))
            if op in (":db/add", ":db/retract") and len(form) == 4:
                e = _tempid_key(form[1])
                ops.append((op[4:], tuple(e) if isinstance(e, list) else e, str(_kw(form[2])),
                            form[3]))
            elif op in (":db/retractEntity", ":db.fn/retractEntity") and len(form) == 2:
                ops.append(("retractEntity", form[1], None, None))
            elif op in (":db/cas", ":db.fn/cas") and len(form) == 5:
                ops.append(("cas", form[1], str(_kw(form[2])), (form[3], form[4])))
            else:
                raise SchemaError(f"bad transaction form {form!r}; expected [:db/add e a v], "
                                  "[:db/retract e a v], [:db/retractEntity e], "
                                  "[:db/cas e a old new] or a map")
        else:
            raise SchemaError(f"bad transaction form {form!r}")
    return ops


def entity_id(store: EavStore, x: Any, kind: str = "prev") -> int:
    """The entity an id or a lookup ref names: ``x`` itself for an int, the entity whose
    unique attribute has the value for ``[":attr", value]``, -1 when none has it.

    Raises ``SchemaError`` for a lookup ref of an attribute that is not unique or a value
    of the wrong type, ``UnknownAttributeError`` for an unknown attribute.
    """
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    if not (isinstance(x, (list, tuple)) and len(x) == 2):
        raise SchemaError(f"bad entity {x!r}; expected an entity id or a lookup ref [attr value]")
    attr = str(_kw(x[0]))
    schema = store.attribute(attr)
    if schema.unique is None:
        raise SchemaError(f"lookup ref {list(x)}: {attr} is not a unique attribute")
    vid = store.interner.find(_check_value(schema, x[1]))
    ids = store.entity_ids(attr, vid, kind) if vid >= 0 else ()
    return int(ids[0]) if len(ids) else -1


def _lookup_like(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and v[0][:1] == ":" \
        and not isinstance(v[1], (list, dict))


def resolve(store: EavStore, data: list):
    """Resolve a transaction: ``(adds, retracts, tx, tempids, tx_data)``.

    ``adds`` and ``retracts`` are ``(e, aid, v, tx)`` arrays ready for ``EavStore.stage``.
    """
    ops = _expand(store, list(data))
    interner = store.interner

    def lookup(ref: tuple) -> int:
        attr, value = str(_kw(ref[0])), ref[1]
        schema = store.attribute(attr)
        if schema.unique is None:
            raise SchemaError(f"lookup ref {list(ref)}: {attr} is not a unique attribute")
        ids = store.entity_ids(attr, interner.encode(_check_value(schema, value)))
        if not len(ids):
            raise SchemaError(f"lookup ref {list(ref)} matches no entity")
        return int(ids[0])

    # tempids: upsert through unique identity values, else fresh ids
    tempids: dict[Any, int] = {}
    as_entity = {e for op, e, _, _ in ops if _is_tempid(e)}
    for op, e, attr, v in ops:
        if op == "add" and _is_tempid(e) and e not in tempids:
            schema = store.attribute(attr)
            if schema.unique == "identity" and (schema.value_type != "ref" or not _is_tempid(v)):
                ids = store.entity_ids(attr, interner.encode(_check_value(schema, v)))
                if len(ids):
                    tempids[e] = int(ids[0])
    fresh = [e for e in dict.fromkeys(e for _, e, _, _ in ops if _is_tempid(e))
             if e not in tempids]
    for e, eid in zip(fresh, store.new_eids(len(fresh)).tolist()):
        tempids[e] = eid

    def entity(x: Any) -> int:
        if _is_tempid(x):
            return tempids[x]
        if isinstance(x, (tuple, list)) and len(x) == 2:
            return lookup(tuple(x))
        if type(x) is int and x > 0:
            if x >= store.next_eid:
                raise SchemaError(f"entity id {x} does not exist; use a tempid for new entities")
            return x
        raise SchemaError(f"bad entity {x!r}; expected an entity id, a tempid or a lookup ref")

    def value(schema: Attribute, v: Any) -> int:
        if schema.value_type == "ref":
            key = _tempid_key(v) if isinstance(v, Tagged) else v
            if _is_tempid(key):
                if key not in as_entity:
                    raise SchemaError(f"unknown tempid {key!r} used as the value of "
                                      f"{schema.ident}: no entity in this transaction has it")
                return interner.ref(tempids[key])
            return interner.ref(entity(key))
        return interner.encode(_check_value(schema, v))

    tx = store.new_tx()
    want: dict[tuple[int, int, int], bool] = {}
    idents: dict[int, str] = {}
    for op, e, attr, v in ops:
        if op == "retractEntity":
            _retract_entity(store, entity(e), want, idents)
            continue
        if op == "cas":
            eid, schema = entity(e), store.attribute(attr)
            if schema.many:
                raise SchemaError(f":db/cas needs a cardinality-one attribute; {attr} is many")
            current = store.value_ids(attr, eid).tolist()
            if current != ([] if v[0] is None else [value(schema, v[0])]):
                found = store.interner.decode_one(current[0]) if current else None
                raise CasError(f":db/cas failed on entity {eid} {attr}: expected {v[0]!r}, found "
                               f"{found!r}; the transaction was not applied", eid, attr, v[0], found)
            idents[store.aid(attr)] = attr
            want[(eid, store.aid(attr), value(schema, v[1]))] = True
            continue
        schema = store.attribute(attr)
        aid = store.aid(attr)
        idents[aid] = attr
        want[(entity(e), aid, value(schema, v))] = op == "add"
    return _datoms(store, want, idents, tx, tempids)


def _retract_entity(store: EavStore, eid: int, want: dict, idents: dict) -> None:
    """``[:db/retractEntity eid]``: retract every datom of the entity, every reference to
    it, and, through ``:db/isComponent`` attributes, its components (recursively)."""
    todo, seen = [eid], set()
    while todo:
        eid = todo.pop()
        if eid in seen:
            continue
        seen.add(eid)
        for a in store.attributes_of(eid):
            schema, aid = store.attribute(a), store.aid(a)
            idents[aid] = a
            for vid in store.value_ids(a, eid).tolist():
                want[(eid, aid, vid)] = False
                if schema.component and schema.value_type == "ref":
                    todo.append(vid)  # a ref's id is its entity id
        for a, schema in store.attributes.items():
            if schema.value_type == "ref":
                for x in store.entity_ids(a, store.interner.ref(eid)).tolist():
                    idents[store.aid(a)] = a
                    want[(x, store.aid(a), eid)] = False


def _datoms(store: EavStore, want: dict, idents: dict, tx: int, tempids: dict):
    keys = list(want)
    rows = np.array(keys, dtype=np.int64).reshape(-1, 3)
    have = store.tx_of(rows) >= 0
    flags = np.array([want[k] for k in keys], dtype=bool)
    add_rows = {k for k, h, f in zip(keys, have.tolist(), flags.tolist()) if f and not h}
    ret_rows = {k for k, h, f in zip(keys, have.tolist(), flags.tolist()) if not f and h}
    # cardinality one: one new value per (e, a), the old value is retracted
    seen: dict[tuple[int, int], int] = {}
    for (e, aid, vid), f in want.items():
        schema = store.attribute(idents[aid])
        if f and not schema.many:
            if seen.setdefault((e, aid), vid) != vid:
                a, b = store.interner.decode([seen[(e, aid)], vid]).tolist()
                raise SchemaError(f"two values {a!r} and {b!r} for cardinality-one attribute "
                                  f"{schema.ident} of entity {e} in one transaction")
            for old in store.value_ids(schema.ident, e).tolist():
                if old != vid:
                    ret_rows.add((e, aid, old))
    # uniqueness: a value of a unique attribute belongs to one entity
    owner: dict[tuple[int, int], int] = {}
    for e, aid, vid in add_rows:
        schema = store.attribute(idents[aid])
        if schema.unique is None:
            continue
        others = {int(x) for x in store.entity_ids(schema.ident, vid)} - {
            x for x, a, v in ret_rows if a == aid and v == vid}
        if owner.setdefault((aid, vid), e) != e or others - {e}:
            shown = store.interner.decode_one(vid)
            raise SchemaError(f"unique value {shown!r} of {schema.ident} already belongs to "
                              f"entity {min(others - {e}) if others - {e} else owner[(aid, vid)]}"
                              f"; cannot assert it for entity {e}")
    adds = np.array([k + (tx,) for k in sorted(add_rows)], dtype=np.int64).reshape(-1, 4)
    ret = sorted(ret_rows)
    old_tx = store.tx_of(np.array(ret, dtype=np.int64).reshape(-1, 3))
    retracts = np.array([k + (t,) for k, t in zip(ret, old_tx.tolist())],
                        dtype=np.int64).reshape(-1, 4)
    dec = store.interner.decode_one
    tx_data = [(e, Keyword(idents[a]), dec(v), True) for e, a, v in sorted(add_rows)] + \
              [(e, Keyword(idents[a]), dec(v), False) for e, a, v in ret]
    names = {(k if not isinstance(k, Tagged) else k.value[-1]): v for k, v in tempids.items()
             if not isinstance(k, _TempId)}
    return adds, retracts, tx, names, tx_data


# ---------------------------------------------------------------------------- bulk
def _bulk_values(store: EavStore, schema: Any, values: np.ndarray) -> np.ndarray:
    """Interned ids of one attribute's values (numpy for ints, refs, booleans)."""
    t = schema.value_type
    if t == "ref" and values.dtype.kind in "iu":
        ids = ref_ids(values)
        if ids.size:
            store.next_eid = max(store.next_eid, int(ids.max()) + 1)
        return ids
    if t in ("long", "bigint") and values.dtype.kind in "iu":
        return store.interner.encode_many(values.astype(np.int64))
    if t == "boolean" and values.dtype.kind == "b":
        return (np.int64(BOOLEAN) << TAG_SHIFT) | values.astype(np.int64)
    if t == "ref":
        raise SchemaError(f"values of ref attribute {schema.ident} must be an int array of "
                          f"entity ids, got {values.dtype}")
    uniq, inverse = np.unique(values.astype(object) if values.dtype.kind == "U" else values,
                              return_inverse=True)
    ids = np.fromiter((store.interner.encode(_check_value(schema, x)) for x in uniq.tolist()),
                      dtype=np.int64, count=len(uniq))
    return ids[inverse.reshape(-1)]


def bulk(store: EavStore, e: np.ndarray, attrs: np.ndarray, values: np.ndarray):
    """``(adds, retracts, tx)`` for ``Database.load_datoms``: the rules of ``resolve``
    (set semantics, cardinality one, uniqueness) over arrays, by sorting and vectorised
    index lookups."""
    if e.size:
        store.new_eids(0)  # remember the counters, so a rollback restores them
        store.next_eid = max(store.next_eid, int(e.max()) + 1)
    tx = store.new_tx()
    adds, rets = [], []
    idents, inverse = np.unique(attrs.astype(str), return_inverse=True)
    for j, ident in enumerate(idents.tolist()):
        schema = store.attribute(ident)
        m = inverse.reshape(-1) == j
        ee, vv = e[m], _bulk_values(store, schema, values[m])
        pairs = ZSet.from_arrays(np.stack([ee, vv], axis=1), arity=2).keys
        rel = store.relation(ident)
        if not schema.many:
            first = np.concatenate(([True], pairs[1:, 0] != pairs[:-1, 0]))
            if not first.all():
                k = int(np.flatnonzero(~first)[0])
                a, b = store.interner.decode(pairs[k - 1:k + 1, 1]).tolist()
                raise SchemaError(f"two values {a!r} and {b!r} for cardinality-one attribute "
                                  f"{ident} of entity {int(pairs[k, 0])} in one transaction")
            view = rel.view("prev", (0, 1))
            pos, old = view.propose(pairs[:, :1])
            stale = np.stack([pairs[pos, 0], old], axis=1).reshape(-1, 2)
            stale = stale[(old != pairs[pos, 1]) & (view.weight(stale) > 0)]
            rets.append(np.insert(stale, 1, store.aid(ident), axis=1))
        new = pairs[rel.view("prev", (0, 1)).weight(pairs) <= 0] if len(pairs) else pairs
        if schema.unique is not None and len(new):
            _check_unique(store, schema, new)
        adds.append(np.insert(new, 1, store.aid(ident), axis=1))
    add = np.concatenate(adds) if adds else np.zeros((0, 3), np.int64)
    ret = np.concatenate(rets) if rets else np.zeros((0, 3), np.int64)
    add = np.concatenate([add, np.full((len(add), 1), tx, np.int64)], axis=1)
    ret = np.concatenate([ret, store.tx_of(ret)[:, None]], axis=1)
    return add, ret, tx


def _check_unique(store: EavStore, schema: Any, new: np.ndarray) -> None:
    by_value = new[np.lexsort((new[:, 0], new[:, 1]))]
    clash = by_value[1:, 1] == by_value[:-1, 1]
    pos, owners = store.relation(schema.ident).view("prev", (1, 0)).propose(new[:, 1:2])
    live = store.relation(schema.ident).view("prev", (1, 0)).weight(
        np.stack([new[pos, 1], owners], axis=1).reshape(-1, 2)) > 0
    other = live & (owners != new[pos, 0])
    if clash.any() or other.any():
        vid = int(by_value[1:][clash][0, 1]) if clash.any() else int(new[pos[other][0], 1])
        shown = store.interner.decode_one(vid)
        raise SchemaError(f"unique value {shown!r} of {schema.ident} would belong to two "
                          f"entities")
