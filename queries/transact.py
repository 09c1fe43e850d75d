"""Transaction data -> the datoms a transaction adds and retracts, checked against the schema.

``resolve`` expands list and map forms into columns, installs attributes (staged, so a
failed transaction installs nothing), checks and interns every value, and turns every
entity reference into an int code: entity ids as they are, tempids (strings,
``#db/id [:db.part/user -100]``, maps without ``:db/id``) and lookup refs as indexes into
one dict each. Then, in bulk: lookup refs resolve with one index lookup per attribute,
tempids upsert through ``:db.unique/identity`` values the same way or get fresh ids, and
``queries.txrules.apply_rules`` applies set semantics, cardinality-one replacement and
uniqueness to the rows in one numpy pass. ``bulk`` (``Database.load_datoms``) interns
arrays with numpy and hands them to the same ``apply_rules``: the rules exist once.

It reads the store but changes nothing in it except reserving entity ids and interning
values (a failed transaction gives both back: ``EavStore.transaction``).

Relies on ``indexes.eav``, ``indexes.interner``, ``queries.edn``, ``queries.schema``
(schema maps) and ``queries.txrules``; used by ``queries.database`` and ``queries.pull`` (``entity_id``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import numpy.typing as npt

from indexes.eav import Attribute, EavStore
from indexes.interner import BOOLEAN, REF, TAG_SHIFT, ref_ids, tag_of
from queries.edn import Keyword, Tagged
from queries.schema import (
    ALTERABLE, SCHEMA_KEYS, alter, alter_map, check_schema_rows, check_value, install, is_ident,
    names_attribute,
)
from queries.txrules import apply_rules, owners
from wcoj.errors import CasError, SchemaError, shown

__all__ = ["resolve", "bulk", "entity_id"]

I64 = npt.NDArray[np.int64]
_anon = itertools.count()
TX_TEMPID = "datomic.tx"  # the tempid of the transaction's own entity


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


class _Forms:
    """Transaction forms as columns: one row per ``[:db/add ...]``/``[:db/retract ...]``
    (also the datoms of maps and the new value of ``:db/cas``), plus the rare forms
    (``retractEntity``, ``cas`` checks) with the row they come before."""

    def __init__(self) -> None:
        self.added: list[bool] = []
        self.es: list[Any] = []
        self.attrs: list[str] = []
        self.vs: list[Any] = []
        self.retract_entity: list[tuple[int, Any]] = []   # (row, entity)
        self.retract_attr: list[tuple[int, Any, str]] = []  # (row, entity, attribute): [:db/retract e a]
        self.cas: list[tuple[int, Any]] = []              # (row of the new value, old value)

    def add(self, added: bool, e: Any, attr: Any, v: Any) -> None:
        self.added.append(added)
        self.es.append(e)
        self.attrs.append(attr)
        self.vs.append(v)


def _expand(store: EavStore, data: list) -> _Forms:
    """Forms -> columns (``_Forms``); attribute installs are staged on the way."""
    out = _Forms()
    keys: dict[Any, tuple] = {}   # map key as written -> (attribute, reverse, schema)

    def key_of(k: Any) -> tuple:
        k = str(_kw(k))
        kw = Keyword(k)
        reverse = kw.name.startswith("_") and not store.has_attribute(k)
        attr = (f":{kw.namespace}/{kw.name[1:]}" if kw.namespace else f":{kw.name[1:]}") \
            if reverse else k
        return attr, reverse, store.attribute(attr)

    def entity_map(m: dict) -> Any:
        if alter_map(store, m):
            return None
        if ":db/ident" in m and ":db/valueType" in m:   # Keyword keys equal their text
            install(store, {str(_kw(k)): v for k, v in m.items()})
            return None
        named = ":db/ident" in m and not store.has_attribute(str(_kw(m[":db/ident"])))
        if named:  # an entity with a keyword name (an enumeration value), not an attribute
            schema_keys = sorted(str(_kw(k)) for k in m if str(_kw(k)) in SCHEMA_KEYS
                                 and str(_kw(k)) not in (":db/ident", ":db/id", ":db/doc"))
            if schema_keys:
                raise SchemaError(f"{m[':db/ident']} has {', '.join(schema_keys)} but no "
                                  ":db/valueType: an attribute needs one; an entity named by "
                                  ":db/ident (an enumeration value) takes no schema keys")
        elif not SCHEMA_KEYS.isdisjoint(m) and \
                {str(_kw(k)) for k in m} & SCHEMA_KEYS - {":db/id", ":db/doc", ":db/ident"}:
            raise SchemaError(f"{shown(m.get(':db/id'))} is not an attribute: a map with schema keys "
                              "installs one ({:db/ident :x :db/valueType ...}) or alters one "
                              "({:db/id :x :db/cardinality ...})")
        e = _tempid_key(m[":db/id"]) if ":db/id" in m else _TempId()
        if isinstance(e, list) and len(e) == 2:
            e = tuple(e)  # lookup ref
        for k, v in m.items():
            found = keys.get(k)
            if found is None:
                found = keys[k] = None if str(_kw(k)) in SCHEMA_KEYS else key_of(k)
            if found is None:  # schema keys, except an entity's own name and doc string
                if not (str(_kw(k)) == ":db/doc" or named and str(_kw(k)) == ":db/ident"):
                    continue
                found = key_of(k)
            attr, reverse, schema = found
            if isinstance(v, (set, frozenset)):
                values = list(v)
            elif type(v) is list and (schema.many or schema.value_type == "ref") and \
                    not (schema.value_type == "ref" and _lookup_like(v)
                         and store.has_attribute(str(_kw(v[0])))):  # else two idents
                values = v
            else:
                values = (v,)
            for x in values:
                if isinstance(x, dict):
                    x = entity_map(x)
                if reverse:
                    out.add(True, x, attr, e)
                else:
                    out.add(True, e, attr, x)
        return e

    added, es, attrs, vs = out.added.append, out.es.append, out.attrs.append, out.vs.append
    for form in data:
        n = len(form) if type(form) is list or isinstance(form, (list, tuple)) else 0
        op = form[0] if n else None
        if n == 4 and (op == ":db/add" or op == ":db/retract"):  # the common case: inlined
            a = form[2]   # an ident as written; resolve looks each distinct one up once
            if a in ALTERABLE and names_attribute(store, form[1]):  # [:db/add :person/age :db/unique ...]
                alter(store, str(form[1]), [(op == ":db/add", str(a), form[3])])
                continue
            added(op == ":db/add")
            es(form[1])
            attrs(a if isinstance(a, str) else str(a))
            vs(form[3])
        elif isinstance(form, dict):
            entity_map(form)
        elif n == 2 and op in (":db/retractEntity", ":db.fn/retractEntity"):
            out.retract_entity.append((len(out.es), form[1]))
        elif n == 3 and op == ":db/retract":  # every value the attribute has (Datomic 1.0.6165)
            out.retract_attr.append((len(out.es), form[1], str(_kw(form[2]))))
        elif n == 5 and op in (":db/cas", ":db.fn/cas"):
            out.cas.append((len(out.es), form[3]))
            out.add(True, form[1], str(_kw(form[2])), form[4])
        elif n:
            raise SchemaError(f"bad transaction form {shown(form)}; expected [:db/add e a v], "
                              "[:db/retract e a v], [:db/retract e a], [:db/retractEntity e], "
                              "[:db/cas e a old new] or a map")
        else:
            raise SchemaError(f"bad transaction form {shown(form)}")
    return out


def entity_id(store: EavStore, x: Any, kind: str = "prev") -> int:
    """The entity an id or a lookup ref names: ``x`` itself for an int, the entity whose
    unique attribute has the value for ``[":attr", value]``, -1 when none has it.

    Raises ``SchemaError`` for a lookup ref of an attribute that is not unique or a value
    of the wrong type, ``UnknownAttributeError`` for an unknown attribute.

    >>> from queries.database import Database
    >>> db = Database()
    >>> _ = db.transact('[{:db/ident :k :db/valueType :db.type/string :db/unique :db.unique/value}]')
    >>> e = db.transact([{":db/id": "x", ":k": "a"}]).tempids["x"]
    >>> entity_id(db.store, [":k", "a"]) == e, entity_id(db.store, [":k", "zz"]), entity_id(db.store, 7)
    (True, -1, 7)
    """
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    if is_ident(x):
        x = (":db/ident", Keyword(x))
    if not (isinstance(x, (list, tuple)) and len(x) == 2):
        raise SchemaError(f"bad entity {shown(x)}; expected an entity id, an ident (:k) or a lookup "
                          "ref [attr value]")
    attr = str(_kw(x[0]))
    schema = store.attribute(attr)
    if schema.unique is None:
        raise SchemaError(f"lookup ref {list(x)}: {attr} is not a unique attribute")
    vid = store.interner.find(check_value(schema, x[1]))
    if vid < 0 or kind != "prev":
        ids = store.entity_ids(attr, vid, kind) if vid >= 0 else ()
        return int(ids[0]) if len(ids) else -1
    return int(owners(store, attr, np.array([vid]))[0])


def _lookup_like(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and v[0][:1] == ":" \
        and not isinstance(v[1], (list, dict))


# ---------------------------------------------------------------------------- entities
_NO_REFS = np.zeros(0, dtype=np.int64)
_NO_REFS.setflags(write=False)


class _Entities:
    """Entity references -> int codes, resolved in bulk later: an entity id stays
    itself (> 0); tempid ``i`` is ``-1 - 2i``; lookup ref ``j`` is ``-2 - 2j``."""

    def __init__(self, store: EavStore) -> None:
        self.store = store
        self.tempids: dict[Any, int] = {}
        self.refs: dict[tuple, int] = {}
        self.ref_forms: list[tuple] = []
        self.as_entity: set[int] = set()
        self.next_eid = store.next_eid

    def code(self, x: Any, entity: bool) -> int:
        """The code of one entity reference; ``entity``: it is in the entity position."""
        t = type(x)
        if (t is str or t is Keyword) and is_ident(x):
            x, t = (":db/ident", Keyword(x)), tuple
        if t is str or t is Tagged or t is _TempId:
            return self._tempid(_tempid_key(x) if t is Tagged else x, entity)
        if (t is list or t is tuple) and len(x) == 2:
            try:   # the ident as written: ":a" and Keyword(":a") are one key
                key = (x[0], type(x[1]), x[1])
                j = self.refs.get(key)
            except TypeError:
                raise SchemaError(f"bad lookup ref {list(x)}: its value must be a scalar") from None
            if j is None:
                j = self.refs[key] = len(self.ref_forms)
                self.ref_forms.append((str(_kw(x[0])), x[1]))
            return -2 - 2 * j
        if t is int or (isinstance(x, np.integer) and t is not bool):
            x = int(x)
            if x < 0:   # a negative number is a tempid (as in DataScript)
                return self._tempid(x, entity)
            if x == 0:
                raise SchemaError("bad entity 0; expected an entity id, a tempid or a lookup ref")
            if x >= self.next_eid:
                raise SchemaError(f"entity id {shown(x)} does not exist; use a tempid for new entities")
            return x
        raise SchemaError(f"bad entity {shown(x)}; expected an entity id, a tempid or a lookup ref")

    def _tempid(self, key: Any, entity: bool) -> int:
        i = self.tempids.get(key)
        if i is None:
            i = self.tempids[key] = len(self.tempids)
        if entity:
            self.as_entity.add(i)
        return -1 - 2 * i

    def resolve_refs(self) -> I64:
        """The entity of every lookup ref, one ``owners`` lookup per attribute."""
        if not self.ref_forms:
            return _NO_REFS
        out = np.full(len(self.ref_forms), -1, dtype=np.int64)
        by_attr: dict[str, list[int]] = {}
        for j, (attr, _) in enumerate(self.ref_forms):
            by_attr.setdefault(attr, []).append(j)
        for attr, js in by_attr.items():
            schema = self.store.attribute(attr)
            if schema.unique is None:
                raise SchemaError(f"lookup ref {list(self.ref_forms[js[0]])}: {attr} is not a "
                                  "unique attribute")
            find = self.store.interner.find
            vids = np.array([find(check_value(schema, self.ref_forms[j][1])) for j in js],
                            dtype=np.int64)
            out[js] = owners(self.store, attr, vids)   # a value never interned has none
        missing = np.flatnonzero(out < 0)
        if len(missing):
            attr, value = self.ref_forms[int(missing[0])]
            if attr == ":db/ident":
                raise SchemaError(f"{value} names no entity: transact {{:db/ident {value}}} "
                                  "before referring to it")
            raise SchemaError(f"lookup ref {[attr, value]} matches no entity")
        return out


def _decode_codes(codes: I64, tempid_eids: I64, ref_eids: I64) -> I64:
    """Entity ids of ``_Entities`` codes (a tempid not resolved yet stays -1)."""
    if not (codes < 0).any():
        return codes
    out = codes.copy()
    m = -codes - 1
    tempid = (codes < 0) & (m % 2 == 0)
    ref = (codes < 0) & (m % 2 == 1)
    out[tempid] = tempid_eids[m[tempid] // 2]
    out[ref] = ref_eids[m[ref] // 2]
    return out


# ---------------------------------------------------------------------------- resolve
_REF = object()
# value types whose values of one Python type need no check nor coercion
_FAST: dict[str, Any] = {"string": str, "long": int, "bigint": int, "boolean": bool, "ref": _REF}

def resolve(store: EavStore, data: list):
    """Resolve a transaction: ``(adds, retracts, tx, tempids, tx_data)``.

    ``adds`` and ``retracts`` are ``(e, aid, v, tx)`` arrays ready for ``EavStore.stage``.
    The forms become columns (``_expand``), and each column codes: entity ids with numpy
    when all are ints (else one dict lookup per tempid and lookup ref), values attribute
    by attribute (``_value_codes``); lookup refs and upserts are then resolved with one
    index lookup per attribute, and ``queries.txrules.apply_rules`` applies the rules.
    """
    forms = _expand(store, list(data))
    ents = _Entities(store)
    n = len(forms.es)
    schemas: dict[str, Attribute] = {}
    aid_of: dict[str, int] = {}
    written = {a: j for j, a in enumerate(dict.fromkeys(forms.attrs))}  # each ident as written
    kinds = []  # per ident as written: (schema, aid)
    for attr in written:
        ident = str(_kw(attr))
        if ident not in schemas:
            schemas[ident], aid_of[ident] = store.attribute(ident), store.aid(ident)
        kinds.append((schemas[ident], aid_of[ident]))
    col = np.fromiter(map(written.__getitem__, forms.attrs), dtype=np.int64, count=n)
    aids = np.array([aid for _, aid in kinds], dtype=np.int64)[col] if n else np.zeros(0, np.int64)
    e_codes = _entity_codes(forms.es, ents, store.next_eid, True)
    v_codes = np.empty(n, dtype=np.int64)
    v_ent = np.zeros(n, dtype=bool)
    for j, (schema, _) in enumerate(kinds):
        rows = None if len(kinds) == 1 else np.flatnonzero(col == j)
        vals = forms.vs if rows is None else [forms.vs[i] for i in rows.tolist()]
        where = slice(None) if rows is None else rows
        if schema.value_type == "ref":
            v_codes[where] = _entity_codes(vals, ents, store.next_eid, False)
            v_ent[where] = True
        else:
            v_codes[where] = _value_codes(store.interner, schema, vals)
    special = [(row, ents.code(x, True), None) for row, x in forms.retract_entity] + \
        [(row, ents.code(x, True), store.attribute(a).ident) for row, x, a in forms.retract_attr]
    ref_eids = ents.resolve_refs()
    tx = store.new_tx()
    tempid_eids = _tempids(store, ents, forms, e_codes, v_codes, v_ent, aids, schemas,
                           aid_of, ref_eids, tx)
    e = _decode_codes(e_codes, tempid_eids, ref_eids)
    v = np.where(v_ent, _decode_codes(v_codes, tempid_eids, ref_eids), v_codes) \
        if v_ent.any() else v_codes
    idents = {aid_of[a]: a for a in schemas}
    rows = np.empty((n, 3), dtype=np.int64)  # (np.stack of three columns costs ~10 us)
    rows[:, 0], rows[:, 1], rows[:, 2] = e, aids, v
    added = np.array(forms.added, dtype=bool)
    seq = 2 * np.arange(n, dtype=np.int64)
    _check_cas(store, forms, rows, ents, tempid_eids, idents)
    if special:
        extra = [_retract_entity(store, int(_decode_codes(np.array([c]), tempid_eids, ref_eids)[0]), idents, a)
                 for _, c, a in special]
        rows = np.concatenate([rows] + extra)
        added = np.concatenate([added] + [np.zeros(len(x), bool) for x in extra])
        seq = np.concatenate([seq] + [np.full(len(x), 2 * row - 1) for (row, _, _), x in
                                      zip(special, extra)])
        order = np.argsort(seq, kind="stable")
        rows, added = rows[order], added[order]
    check_schema_rows(store, rows)   # the forms' datoms and those of retractEntity alike
    adds, retracts, tx_data = apply_rules(store, rows, added, idents, tx)
    names = {(k if not isinstance(k, Tagged) else k.value[-1]): int(tempid_eids[i])
             for k, i in ents.tempids.items() if not isinstance(k, _TempId)}
    return adds, retracts, tx, names, tx_data


def _entity_codes(xs: list, ents: _Entities, next_eid: int, entity: bool) -> I64:
    """``_Entities`` codes of entity references ``xs``: when all are ints (an entity id is
    its own code) with numpy, else one ``code`` call each (tempids, lookup refs, idents,
    and the error a bad one raises)."""
    if len(xs) > 16 and set(map(type, xs)) == {int}:  # (a few: the loop below is cheaper)
        try:
            out = np.array(xs, dtype=np.int64)
        except OverflowError:
            out = None
        if out is not None:
            if not (out < 0).any():   # negative numbers are tempids: coded below
                bad = np.flatnonzero((out == 0) | (out >= next_eid))
                for i in bad.tolist():
                    ents.code(xs[i], entity)  # raises
                return out
    code = ents.code
    return np.array([x if type(x) is int and 0 < x < next_eid else code(x, entity) for x in xs],
                    dtype=np.int64).reshape(-1)


def _value_codes(interner: Any, schema: Attribute, vs: list) -> I64:
    """Interned ids of one attribute's values ``vs`` (not a ref's): type-checked and
    coerced by ``_check_value`` unless each already has the attribute's Python type; an
    all-int column of longs through ``encode_many``, other values one ``encode`` each."""
    fast = _FAST.get(schema.value_type)
    if fast is int and set(map(type, vs)) == {int}:
        try:
            return interner.encode_many(np.array(vs, dtype=np.int64))
        except OverflowError:  # past int64: one by one below
            pass
    encode = interner.encode
    return np.fromiter((encode(v if type(v) is fast else check_value(schema, v)) for v in vs),
                       dtype=np.int64, count=len(vs))


def _tempids(store: EavStore, ents: _Entities, forms: _Forms, e_codes: I64, v_codes: I64,
             v_ent: np.ndarray, aids: I64, schemas: dict, aid_of: dict, ref_eids: I64,
             tx: int) -> I64:
    """The entity of every tempid: upserted through a ``:db.unique/identity`` value it
    asserts (the first such value that has an owner), else a fresh id. ``"datomic.tx"`` is
    the transaction's own entity ``tx``, as in Datomic (facts about the transaction)."""
    out = np.full(len(ents.tempids), -1, dtype=np.int64)
    if not len(out):
        return out
    this_tx = ents.tempids.get(TX_TEMPID)
    unknown = {int(-c - 1) // 2 for c in v_codes[v_ent & (v_codes < 0) & (v_codes % 2 == 1)]
               .tolist()} - ents.as_entity
    if unknown:
        first = min(unknown)
        key = next(k for k, i in ents.tempids.items() if i == first)
        attr = forms.attrs[int(np.flatnonzero(v_ent & (v_codes == -1 - 2 * first))[0])]
        raise SchemaError(f"unknown tempid {shown(key)} used as the value of {attr}: no entity in "
                          "this transaction has it")
    is_tempid = (e_codes < 0) & (e_codes % 2 == 1)
    resolved_v = ~v_ent | (v_codes > 0) | ((v_codes < 0) & (v_codes % 2 == 0))
    added = np.array(forms.added, dtype=bool)
    hits = []   # (row, owner) of rows whose identity value has an owner
    for attr, schema in schemas.items():
        if schema.unique != "identity":
            continue
        rows = np.flatnonzero(added & is_tempid & resolved_v & (aids == aid_of[attr]))
        if len(rows):
            vids = np.where(v_ent[rows], _decode_codes(v_codes[rows], out, ref_eids), v_codes[rows])
            found = owners(store, attr, vids)
            hits += zip(rows[found >= 0].tolist(), found[found >= 0].tolist())
    for r, owner in sorted(hits, reverse=True):  # a tempid's first row is written last
        out[(-int(e_codes[r]) - 1) // 2] = owner
    if this_tx is not None:
        out[this_tx] = tx
    fresh = np.flatnonzero(out < 0)
    out[fresh] = store.new_eids(len(fresh))
    return out


def _check_cas(store: EavStore, forms: _Forms, rows: I64, ents: _Entities, tempid_eids: I64,
               idents: dict) -> None:
    """``[:db/cas e a old new]``: ``old`` must be the attribute's value now (None: no
    value); its row asserts ``new``."""
    for row, old in forms.cas:
        eid, aid = int(rows[row, 0]), int(rows[row, 1])
        attr = idents[aid]
        schema = store.attribute(attr)
        if schema.many:
            raise SchemaError(f":db/cas needs a cardinality-one attribute; {attr} is many")
        current = store.value_ids(attr, eid).tolist()
        if old is None:
            expected: list[int] = []
        elif schema.value_type == "ref" and _is_tempid(old):
            i = ents.tempids.get(old)
            expected = [int(tempid_eids[i]) if i is not None else -1]
        elif schema.value_type == "ref":
            expected = [entity_id(store, old)]
        else:
            expected = [store.interner.find(check_value(schema, old))]
        if current != expected:
            found = store.interner.decode_one(current[0]) if current else None
            raise CasError(f":db/cas failed on entity {eid} {attr}: expected {shown(old)}, found "
                           f"{shown(found)}; the transaction was not applied", eid, attr, old, found)


def _retract_entity(store: EavStore, eid: int, idents: dict, attr: str | None = None) -> I64:
    """``[:db/retractEntity eid]``: rows of every datom of the entity, every reference to
    it, and, through ``:db/isComponent`` attributes, its components (recursively). With
    ``attr`` (``[:db/retract eid attr]``): rows of the values the entity has for it."""
    if attr is not None:
        aid = store.aid(attr)
        idents[aid] = attr
        vids = store.value_ids(attr, eid)
        return np.stack([np.full(len(vids), eid), np.full(len(vids), aid), vids], axis=1).astype(np.int64)
    if tag_of(eid) != REF:  # an attribute's entity (queries.schema)
        raise SchemaError(f"[:db/retractEntity {store.interner.decode_one(eid)}]: an attribute is not "
                          "retracted; retract its datoms instead; the transaction was not applied")
    todo, seen, out = [eid], set(), []
    refs = [a for a, s in store.attributes.items() if s.value_type == "ref"]
    while todo:
        eid = todo.pop()
        if eid in seen:
            continue
        seen.add(eid)
        for a in store.attributes_of(eid):
            schema, aid = store.attribute(a), store.aid(a)
            if schema.tuple_attrs:  # a composite goes with its attributes (queries.txrules)
                continue
            idents[aid] = a
            vids = store.value_ids(a, eid)
            out.append(np.stack([np.full(len(vids), eid), np.full(len(vids), aid), vids], axis=1))
            if schema.component and schema.value_type == "ref":
                todo.extend(vids.tolist())  # a ref's id is its entity id
        for a in refs:
            xs = store.entity_ids(a, store.interner.ref(eid))
            if len(xs):
                aid = store.aid(a)
                idents[aid] = a
                out.append(np.stack([xs, np.full(len(xs), aid), np.full(len(xs), eid)], axis=1))
    return np.concatenate(out).astype(np.int64).reshape(-1, 3) if out else \
        np.zeros((0, 3), dtype=np.int64)


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
        return store.interner.encode_many(values)
    if t == "boolean" and values.dtype.kind == "b":
        return (np.int64(BOOLEAN) << TAG_SHIFT) | values.astype(np.int64)
    if t == "ref":
        raise SchemaError(f"values of ref attribute {schema.ident} must be an int array of "
                          f"entity ids, got {values.dtype}")
    uniq, inverse = np.unique(values.astype(object) if values.dtype.kind == "U" else values,
                              return_inverse=True)
    ids = np.fromiter((store.interner.encode(check_value(schema, x)) for x in uniq.tolist()),
                      dtype=np.int64, count=len(uniq))
    return ids[inverse.reshape(-1)]


def bulk(store: EavStore, e: np.ndarray, attrs: np.ndarray, values: np.ndarray):
    """``(adds, retracts, tx)`` for ``Database.load_datoms``: the values interned per
    attribute with numpy, then the same rules as ``resolve`` (``apply_rules``)."""
    if e.size:
        store.new_eids(0)  # remember the counters, so a rollback restores them
        store.next_eid = max(store.next_eid, int(e.max()) + 1)
    idents, inverse = np.unique(attrs.astype(str), return_inverse=True)
    inverse = inverse.reshape(-1)
    aids = np.empty(len(e), dtype=np.int64)
    vids = np.empty(len(e), dtype=np.int64)
    by_aid = {}
    for j, ident in enumerate(idents.tolist()):
        schema = store.attribute(ident)
        m = inverse == j
        aids[m] = aid = store.aid(ident)
        by_aid[aid] = ident
        vids[m] = _bulk_values(store, schema, values[m])
    tx = store.new_tx()
    rows = np.stack([e.astype(np.int64), aids, vids], axis=1).reshape(-1, 3)
    check_schema_rows(store, rows)
    add, ret, _ = apply_rules(store, rows, np.ones(len(rows), dtype=bool), by_aid, tx,
                              report=False)
    return add, ret, tx
