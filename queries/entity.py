"""Datomic's entity: a lazy, read-only map of one entity's attributes, navigable through refs.

``db.entity(x)`` (an id, an ident or a lookup ref) gives an ``Entity``: ``e[":person/name"]``
reads the value when asked (a cardinality-many attribute gives a ``frozenset``); a ref
gives the ``Entity`` it points to, so ``e[":person/friend"]`` can be walked further; a
reverse key ``e[":person/_friend"]`` gives the entities that point here (one entity for a
component). A missing attribute raises ``KeyError`` (``e.get`` gives None), an unknown one
``UnknownAttributeError``. ``e.keys()`` lists the attributes it has, ``e.touch()`` reads
them all into a dict, ``e[":db/id"]`` is its id.

As in Datomic, an entity belongs to the database value it came from: after later
transactions it still reads the database as of its ``t`` (through ``as_of``, made once
for the entity and every entity reached from it).

Relies on ``indexes.eav`` (the store's reads) and ``queries.transact`` (entity names);
used by ``queries.database``.

>>> from queries.database import Database
>>> db = Database()
>>> _ = db.transact('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
...                 ' {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
>>> _ = db.transact('[{:name "Ann" :friend [{:name "Bob"} {:name "Cy"}]}]')
>>> ann = db.entity([":name", "Ann"])
>>> sorted(f[":name"] for f in ann[":friend"])
['Bob', 'Cy']
>>> _ = db.transact('[[:db/retractEntity [:name "Bob"]]]')
>>> sorted(f[":name"] for f in ann[":friend"]), len(db.entity([":name", "Ann"])[":friend"])
(['Bob', 'Cy'], 1)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from indexes.eav import EavStore
from queries.edn import Keyword
from queries.transact import entity_id

if TYPE_CHECKING:
    from queries.database import Database

__all__ = ["Entity", "entity"]

DB_ID = ":db/id"


class _Basis:
    """The database value entities read: ``db`` while its ``t`` is theirs, else
    ``db.as_of(t)``, made once and shared by every entity reached from the first."""

    __slots__ = ("db", "t", "past")

    def __init__(self, db: Database, t: int):
        self.db, self.t, self.past = db, t, None

    def value(self) -> Database:
        if self.past is not None:
            return self.past
        if self.db.basis_t() == self.t:
            return self.db
        self.past = self.db.as_of(self.t)
        return self.past


def entity(db: Database, x: Any) -> Entity | None:
    """The entity ``x`` names in ``db`` (``Database.entity``); None when an ident or a
    lookup ref names no entity."""
    with db.store.lock:
        e = entity_id(db.store, x)
    return None if e < 0 else Entity(_Basis(db, db.basis_t()), e)


class Entity(Mapping):
    """One entity of one database value (module docstring)."""

    __slots__ = ("_basis", "eid")

    def __init__(self, basis: _Basis, eid: int):
        self._basis, self.eid = basis, int(eid)

    @property
    def t(self) -> int:
        """The ``t`` of the database value this entity reads."""
        return self._basis.t

    def _read(self, key: Any) -> tuple[bool, Any]:
        """``(found, value)`` of attribute ``key`` (reverse keys included)."""
        name = str(key)
        if name == DB_ID:
            return True, self._id()
        db = self._basis.value()
        store = db.store
        with store.lock:
            k = Keyword(name)
            reverse = k.name.startswith("_") and not store.has_attribute(name)
            attr = (f":{k.namespace}/{k.name[1:]}" if k.namespace else f":{k.name[1:]}") if reverse else name
            schema = store.attribute(attr)  # UnknownAttributeError names it
            if reverse:
                ids = store.entity_ids(attr, store.interner.ref(self.eid))
                many, refs = not schema.component, True
            else:
                ids = store.value_ids(attr, self.eid)
                many, refs = schema.many, schema.value_type == "ref"
            values = [Entity(self._basis, v) for v in ids.tolist()] if refs else \
                store.interner.decode(ids).tolist()
        if not values:
            return False, None
        return True, frozenset(values) if many else values[0]

    def _id(self) -> Any:
        """The entity's id; an attribute's entity shows as its keyword (``queries.schema``)."""
        return self._store().interner.decode_one(self.eid)  # an entity id is its own ref id

    def _store(self) -> EavStore:
        return self._basis.value().store

    def __getitem__(self, key: Any) -> Any:
        found, value = self._read(key)
        if not found:
            raise KeyError(key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        found, value = self._read(key)
        return value if found else default

    def __contains__(self, key: Any) -> bool:
        return self._read(key)[0]

    def keys(self) -> list[Keyword]:  # type: ignore[override]
        """The attributes this entity has a value for (sorted by ident)."""
        store = self._store()
        with store.lock:
            return [Keyword(a) for a in sorted(store.attributes_of(self.eid))]

    def __iter__(self) -> Iterator[Keyword]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def touch(self) -> dict[Keyword, Any]:
        """Every attribute's value, read now (refs as entities)."""
        return {k: self[k] for k in self.keys()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Entity) and (self.eid, self.t, self._basis.db) == \
            (other.eid, other.t, other._basis.db)

    def __hash__(self) -> int:
        return hash((self.eid, self.t))

    def __repr__(self) -> str:
        return f"Entity({{:db/id {self._id()}}}, t={self.t})"
