"""Pull: an entity's attributes as a nested dict, following a pull pattern.

Supports attributes, ``*``, ``:db/id``, reverse references (``:movie/_cast``), nested maps
``{attr sub-pattern}``, recursion (``{:movie/sequel ...}`` or a depth), and the options
``:limit``, ``:default`` and ``:as``. Reference values without a sub-pattern come back as
``{":db/id": eid}``, except components (``:db/isComponent``), which are pulled whole
(``[*]``, their own components too), as in Datomic; cardinality-one attributes as one
value, cardinality-many as a list.
Keys are keywords (equal to their ``":ns/name"`` text).

Relies on ``indexes.eav``, ``queries.ast``, ``queries.parse`` (patterns given as data) and
``queries.transact`` (lookup refs); used by ``queries.database`` (pull in
``:find``, ``Database.pull``).
"""

from __future__ import annotations

from typing import Any

from indexes.eav import EavStore
from queries.ast import PullAttr, PullJoin, PullPattern, PullRecursion, PullWildcard
from queries.edn import Keyword
from queries.parse import parse_pull
from queries.transact import entity_id

__all__ = ["pull"]

DB_ID = Keyword(":db/id")


def pull(store: EavStore, eid: Any, pattern: Any, kind: str = "prev",
         _seen: frozenset = frozenset()) -> dict[Keyword, Any] | None:
    """Pull ``pattern`` from entity ``eid``.

    Parameters
    ----------
    store : the datoms.
    eid : an entity id, or a lookup ref ``[":attr", value]`` of a unique attribute.
    pattern : a parsed ``PullPattern``, or a pattern as EDN text or Python data (a
        pattern given as a query input, ``(pull ?e ?pattern)``, is parsed here).
    kind : the store's view to read (``"prev"``, ``"curr"``).

    Returns
    -------
    dict, or None when a lookup ref names no entity (as DataScript's ``pull``).

    >>> from queries.database import Database
    >>> db = Database()
    >>> _ = db.transact('[{:db/ident :name :db/valueType :db.type/string '
    ...                 ':db/unique :db.unique/identity}]')
    >>> r = db.transact([{":db/id": "a", ":name": "Ann"}])
    >>> pull(db.store, r.tempids["a"], PullPattern((PullAttr(":name"),)))
    {Keyword(':name'): 'Ann'}
    >>> pull(db.store, [":name", "Ann"], '[[:name :as "n"]]'), pull(db.store, [":name", "X"], [":name"])
    ({'n': 'Ann'}, None)
    """
    if not isinstance(pattern, PullPattern):
        pattern = parse_pull(pattern)
    if type(eid) is not int:
        eid = entity_id(store, eid, kind)
        if eid < 0:
            return None
    out: dict[Keyword, Any] = {}
    for item in pattern.items:
        if isinstance(item, PullWildcard):
            out[DB_ID] = _id(store, eid)
            for ident in store.attributes_of(eid, kind):
                if Keyword(ident) not in out:
                    _put(out, store, eid, PullAttr(ident), None, pattern, kind, _seen)
        elif isinstance(item, PullJoin):
            _put(out, store, eid, item.attr, item.pattern, pattern, kind, _seen)
        elif isinstance(item, PullAttr):
            if item.attr == DB_ID:
                out[item.alias if item.alias is not None else DB_ID] = _id(store, eid)
            else:
                _put(out, store, eid, item, None, pattern, kind, _seen)
    return out


def _id(store: EavStore, eid: int) -> Any:
    """An entity's ``:db/id``: its id, or an attribute's ident (``queries.schema``)."""
    return store.interner.decode_one(eid)  # an entity id is its own ref id


def _put(out: dict, store: EavStore, eid: int, attr: PullAttr, sub: Any,
         parent: PullPattern, kind: str, seen: frozenset) -> None:
    schema = store.attribute(attr.attr)
    if attr.reverse:
        ids = store.entity_ids(attr.attr, store.interner.ref(eid), kind)
        values, is_ref, many = ids.tolist(), True, not schema.component
    else:
        ids = store.value_ids(attr.attr, eid, kind)
        values = store.interner.decode(ids).tolist()
        is_ref, many = schema.value_type == "ref", schema.many
    if attr.limit is not None:
        values = values[: attr.limit]
    key = attr.alias if attr.alias is not None else Keyword(attr.key)  # :as "x" keys "x"
    if not values:
        if attr.default is not None:
            out[key] = attr.default.value
        return
    if is_ref:
        if sub is None and schema.component and not attr.reverse:
            sub = _WHOLE  # a component is part of its entity: pulled whole, as Datomic does
        values = [_ref(store, v, sub, parent, kind, seen | {eid}) for v in values]
        values = [v for v in values if v is not None]
        if not values:
            return
    out[key] = values if many else values[0]


_WHOLE = PullPattern((PullWildcard(),))


def _ref(store: EavStore, eid: int, sub: Any, parent: PullPattern, kind: str,
         seen: frozenset) -> Any:
    if sub is None or (sub is _WHOLE and eid in seen):  # (a component cycle: stop there)
        return {DB_ID: eid}
    if isinstance(sub, PullRecursion):
        if eid in seen:
            return {DB_ID: eid}
        if sub.depth is not None and sub.depth <= 1:
            inner = PullPattern(tuple(i for i in parent.items if not _recursive(i)))
            return pull(store, eid, inner, kind, seen)
        deeper = PullPattern(tuple(
            PullJoin(i.attr, PullRecursion(sub.depth - 1)) if _recursive(i) and sub.depth
            else i for i in parent.items))
        return pull(store, eid, deeper, kind, seen)
    return pull(store, eid, sub, kind, seen)


def _recursive(item: Any) -> bool:
    return isinstance(item, PullJoin) and isinstance(item.pattern, PullRecursion)
