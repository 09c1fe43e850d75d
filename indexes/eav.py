"""The datom store: attributes, entity ids, and datoms as relations with prev/delta/curr views.

Each attribute ``a`` owns one ``Relation(a, 2)`` of ``(e, v)`` rows (interned ids), so the
classic indexes are column orders of it: EAV/AEV is ``(0, 1)``, AVE/VAE is ``(1, 0)``, built
on demand by the relation. One more relation, ``datoms`` of ``(e, a, v, tx)``, holds every
datom with its attribute id and transaction, for patterns whose attribute is a variable and
for ``[e a v tx]`` patterns.

All relations are created by one ``indexes.transaction.Store`` (their tables share a block,
one lock serialises writers), and a tick is one ``Transaction``: ``EavStore.transaction()``
opens it (holding the lock), ``stage(tx, adds, retracts)`` stages the change as int64 arrays
(no Python loop per datom) on every relation it touches, and ``tx.commit(store.committed)``
applies it in place and then the schema installs and id counters staged with it, Ctrl-C
deferred. Leaving the block on an exception forgets all of it: relations, staged installs,
reserved ids.

Relies on ``indexes.index``, ``indexes.interner``, ``indexes.transaction`` and ``wcoj``;
used by ``queries.database``.

>>> from queries.edn import Keyword   # doctest only: indexes never import queries
>>> s = EavStore(Keyword)
>>> s.install(Attribute(":person/name", "string"))
>>> name = s.interner.encode("Ann")
>>> with s.transaction() as tx:
...     s.stage(tx, np.array([[1, s.aid(":person/name"), name, 1]]), np.zeros((0, 4), np.int64))
...     tx.commit(s.committed)
>>> s.values(":person/name", 1)
['Ann']
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from indexes.index import Relation
from indexes.interner import Interner
from indexes.transaction import Store, Transaction
from wcoj.errors import SchemaError, UnknownAttributeError
from wcoj.zset import SMALL_ROWS, ZSet

__all__ = ["Attribute", "EavStore", "VALUE_TYPES", "TX_BASE", "tx_id", "tx_t"]

I64 = npt.NDArray[np.int64]
TX_BASE = 1 << 44  # transaction t is the entity TX_BASE + t (a partition of its own, as in Datomic)


def tx_id(t: int) -> int:
    """The entity id of transaction ``t`` (1, 2, ...)."""
    return TX_BASE + int(t)


def tx_t(tx: int) -> int:
    """The ``t`` (1, 2, ...) of a transaction entity id.

    >>> tx_t(tx_id(7))
    7
    """
    return int(tx) - TX_BASE


VALUE_TYPES = ("ref", "string", "long", "double", "boolean", "instant", "keyword", "uuid",
               "bigint", "bigdec", "float", "symbol", "tuple")


@dataclass(frozen=True)
class Attribute:
    """An attribute's schema: ``value_type`` is the ``:db.type/`` name without namespace."""

    ident: str
    value_type: str
    many: bool = False
    unique: str | None = None   # "identity", "value" or None
    component: bool = False
    tuple_attrs: tuple[str, ...] = ()  # a composite tuple: derived from these attributes
    fulltext: bool = False  # searchable by words (``fulltext`` in queries)
    doc: str | None = None  # ``:db/doc``
    tuple_types: tuple[str, ...] = ()  # a heterogeneous tuple: one value type per element
    tuple_type: str | None = None      # a homogeneous tuple: the type of every element

    def __post_init__(self) -> None:
        if not (isinstance(self.ident, str) and self.ident.startswith(":") and len(self.ident) > 1):
            # "age" and ":age" would be two attributes sharing the keyword's id
            raise SchemaError(f"attribute ident {self.ident!r} is not a keyword; write "
                              f"':{str(self.ident).lstrip(':')}' (a keyword) instead")
        if self.value_type not in VALUE_TYPES:
            raise SchemaError(f"attribute {self.ident}: unknown value type :db.type/"
                              f"{self.value_type}; expected one of "
                              + ", ".join(":db.type/" + t for t in VALUE_TYPES))
        if self.unique not in (None, "identity", "value"):
            raise SchemaError(f"attribute {self.ident}: :db/unique must be "
                              f":db.unique/identity or :db.unique/value, got {self.unique}")


class EavStore:
    """Attributes plus one ``(e, v)`` relation per attribute and the ``(e, a, v, tx)`` log."""

    def __init__(self, keyword: type = str) -> None:
        # the keyword class comes from the caller (``queries.edn.Keyword``): indexes cannot
        # import queries, and the interner types keywords by class name
        self.keyword = keyword
        self.interner = Interner()
        self.attributes: dict[str, Attribute] = {}
        # the interned id of each installed attribute's keyword, and back: installs
        # intern it for good (a commit or no tick), so no rollback can take it back
        self._aids: dict[str, int] = {}
        self._idents: dict[int, str] = {}
        self._composites: list[Attribute] | None = None  # see composites()
        self.tables = Store()   # every relation below, their shared block and the writers' lock
        self.relations: dict[str, Relation] = {}
        self.datoms = self.tables.relation("datoms", 4)
        self.next_eid = 1
        self.next_tx = 1
        self._staged_attrs: dict[str, Attribute] = {}
        self._staged_counters: tuple[int, int] | None = None
        self.changed: set[str] = set()   # attributes whose relation has a staged delta
        self.memo: dict = {}   # values the layers above derive once per store (queries.schema)

    def __repr__(self) -> str:
        return f"EavStore(attributes={len(self.attributes)}, datoms={len(self.datoms.contents())})"

    # ------------------------------------------------------------------ schema
    def attribute(self, ident: str) -> Attribute:
        """The schema of ``ident`` (staged installs included)."""
        a = self._staged_attrs.get(ident) or self.attributes.get(ident)
        if a is None:
            raise UnknownAttributeError(ident, list(self.attributes) + list(self._staged_attrs))
        return a

    def has_attribute(self, ident: str) -> bool:
        return ident in self.attributes or ident in self._staged_attrs

    def install(self, attr: Attribute) -> None:
        """Install (or alter) an attribute at once, outside any tick."""
        self.attributes[attr.ident] = attr
        self._composites = None
        if attr.ident not in self._aids:
            aid = self._aids[attr.ident] = self.interner.encode(self.keyword(attr.ident))
            self._idents[aid] = attr.ident
        if attr.ident not in self.relations:
            self.relations[attr.ident] = self.tables.relation(attr.ident, 2)

    def stage_install(self, attr: Attribute) -> None:
        """Install ``attr`` when the tick commits."""
        self._staged_attrs[attr.ident] = attr
        self._composites = None

    def composites(self) -> list[Attribute]:
        """The composite tuple attributes (``:db/tupleAttrs``), staged installs included
        (kept until the schema changes: every transaction asks)."""
        if self._composites is None:
            self._composites = [a for a in {**self.attributes, **self._staged_attrs}.values()
                                if a.tuple_attrs]
        return self._composites

    def staged_installs(self) -> list[Attribute]:
        """The attributes this tick installs (or alters) when it commits."""
        return list(self._staged_attrs.values())

    def aid(self, ident: str) -> int:
        """The interned id of an attribute (the id of its keyword)."""
        aid = self._aids.get(ident)
        return aid if aid is not None else self.interner.encode(self.keyword(ident))

    def relation(self, ident: str) -> Relation:
        """The ``(e, v)`` relation of an attribute."""
        self.attribute(ident)
        if ident not in self.relations:
            self.relations[ident] = self.tables.relation(ident, 2)
        return self.relations[ident]

    # ------------------------------------------------------------------ ids
    def new_eids(self, n: int) -> I64:
        """Reserve ``n`` fresh entity ids (given back by ``rollback``)."""
        if self._staged_counters is None:
            self._staged_counters = (self.next_eid, self.next_tx)
        out = np.arange(self.next_eid, self.next_eid + n, dtype=np.int64)
        self.next_eid += n
        return out

    def new_tx(self) -> int:
        """The entity id of a new transaction (``tx_id(t)``, t = 1, 2, ...)."""
        if self._staged_counters is None:
            self._staged_counters = (self.next_eid, self.next_tx)
        self.next_tx += 1
        return tx_id(self.next_tx - 1)

    # ------------------------------------------------------------------ reads
    def values(self, ident: str, eid: int, kind: str = "prev") -> list:
        """The decoded values of ``ident`` on entity ``eid``."""
        return self.interner.decode(self.value_ids(ident, eid, kind)).tolist()

    def value_ids(self, ident: str, eid: int, kind: str = "prev") -> I64:
        rel = self.relations.get(ident)
        if rel is None:
            return np.zeros(0, dtype=np.int64)
        return _live(rel.view(kind, (0, 1)), eid)

    def entity_ids(self, ident: str, vid: int, kind: str = "prev") -> I64:
        """Entities whose ``ident`` has the value id ``vid`` (the VAE order)."""
        rel = self.relations.get(ident)
        if rel is None:
            return np.zeros(0, dtype=np.int64)
        return _live(rel.view(kind, (1, 0)), vid)

    def attributes_of(self, eid: int, kind: str = "prev") -> list[str]:
        """Idents of the attributes that entity ``eid`` has values for."""
        return [a for a, rel in self.relations.items()
                if len(_live(rel.view(kind, (0, 1)), eid))]

    def exists(self, eid: int, kind: str = "prev") -> bool:
        return bool(self.attributes_of(eid, kind))

    def tx_of(self, rows: I64, kind: str = "prev") -> I64:
        """The transaction of each live ``(e, a, v)`` row (-1 where absent)."""
        view = self.datoms.view(kind, (0, 1, 2, 3))
        rows = np.ascontiguousarray(rows, dtype=np.int64).reshape(-1, 3)
        pos, txs = view.propose(rows)
        out = np.full(rows.shape[0], -1, dtype=np.int64)
        if len(pos):
            full = np.concatenate([rows[pos], txs[:, None]], axis=1)
            live = view.weight(full) > 0
            out[pos[live]] = txs[live]
        return out

    # ------------------------------------------------------------------ ticks
    @property
    def lock(self):
        """The lock that serialises writers (held by a transaction)."""
        return self.tables.lock

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One tick over the store's relations (see the module docstring): the lock is
        held; an exception before ``commit`` forgets the staged change, installs and ids."""
        with self.tables.transaction() as tx:
            marks = self.interner.marks()  # a failed tick gives back the values it interned
            try:
                yield tx
            finally:
                if not tx.done:
                    self._forget()
                    self.interner.truncate(marks)

    def stage(self, tx: Transaction, adds: I64, retracts: I64) -> None:
        """Stage a tick in ``tx``: rows ``(e, aid, v, tx)`` to add and live rows to retract.

        The caller guarantees set semantics (adds are new, retracts are live); every
        attribute's relation and the ``datoms`` relation get their delta. Every weight
        is a sum of +1 and -1 rows, one per transaction, so none can approach int64's
        bounds: the relations skip their overflow check (a lookup of every changed row).
        """
        adds = np.asarray(adds, dtype=np.int64).reshape(-1, 4)
        retracts = np.asarray(retracts, dtype=np.int64).reshape(-1, 4)
        rows = np.concatenate([adds, retracts])
        weights = np.ones(len(rows), dtype=np.int64)
        weights[len(adds):] = -1
        if len(rows) <= SMALL_ROWS:  # a few rows: one call of the small sort
            delta = ZSet.from_checked(rows, weights)
        else:  # adds and retracts each come sorted from the transaction rules (most often):
            # two linear checks and a merge, where one sort of all rows may not pack (a tx
            # id and an interned instant in the columns of entity ids): lexsort
            delta = ZSet.from_checked(np.ascontiguousarray(adds), weights[:len(adds)]).plus(
                ZSet.from_checked(np.ascontiguousarray(retracts), weights[len(adds):]))
        tx.stage(self.datoms, delta, bounded=True)
        by_aid = self._idents if not self._staged_attrs else \
            {**self._idents, **{self.aid(a): a for a in self._staged_attrs}}
        self.changed = set()
        aids = sorted(set(rows[:, 1].tolist())) if len(rows) <= SMALL_ROWS else \
            np.unique(rows[:, 1]).tolist()
        for aid in aids:
            ident = by_aid[aid]
            m = rows[:, 1] == aid
            z = ZSet.from_checked(np.ascontiguousarray(rows[m][:, [0, 2]]), weights[m])
            tx.stage(self.relation(ident), z, bounded=True)
            self.changed.add(ident)

    def committed(self) -> None:
        """The bookkeeping of a commit (``Transaction.commit``'s ``then``): staged
        installs take effect, reserved ids are kept."""
        for attr in self._staged_attrs.values():
            self.install(attr)
        self._staged_attrs.clear()
        self.changed = set()
        self._staged_counters = None

    def _forget(self) -> None:
        """The tick failed: staged installs and reserved ids are given back (the
        transaction rolls the relations back)."""
        self.changed = set()
        self._composites = None
        for ident in self._staged_attrs:
            if ident not in self.attributes:
                self.relations.pop(ident, None)
                self.tables.relations.pop(ident, None)
        self._staged_attrs.clear()
        if self._staged_counters is not None:
            self.next_eid, self.next_tx = self._staged_counters
        self._staged_counters = None

    def load(self, rows: I64) -> None:
        """Bulk-load ``(e, aid, v, tx)`` rows into an empty store, one sort per attribute."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
        z = ZSet.from_arrays(rows, arity=4).distinct()
        self.datoms.load(z)
        by_aid = self._idents
        keys = z.keys
        for aid in np.unique(keys[:, 1]).tolist():
            m = keys[:, 1] == aid
            self.relation(by_aid[aid]).load(ZSet.from_arrays(keys[m][:, [0, 2]], arity=2).distinct())


def _live(view, key: int) -> I64:
    """Second-column values under ``key`` whose rows still have positive weight."""
    prefix = np.array([[int(key)]], dtype=np.int64)
    pos, vals = view.propose(prefix)
    if not len(vals):
        return vals
    full = np.stack([np.full(len(vals), int(key), dtype=np.int64), vals], axis=1)
    return vals[view.weight(full) > 0]
