"""The rules of a transaction, over arrays: set semantics, cardinality one, uniqueness.

A transaction, once its forms are turned into ids (``queries.transact``) or its arrays
interned (``Database.load_datoms``), is rows ``(e, aid, vid)`` in transaction order, each
asserted or retracted. ``apply_rules`` turns them into the datoms to add and to retract,
with a few sorts and one vectorised index lookup per attribute, never a Python step per
datom:

* a later row of the same datom wins over an earlier one;
* set semantics: asserting a live datom or retracting a missing one changes nothing;
* cardinality one: two values for one entity's attribute are an error, and the value
  it had is retracted;
* uniqueness: a value of a unique attribute belongs to one entity, in the transaction
  and in the database (unless the owner's datom is retracted by the same transaction);
* composite tuples (``:db/tupleAttrs``) follow their attributes: an entity whose
  attributes of a composite change gets the new tuple (``None`` where an attribute has no
  value; no tuple when none has one), the old one retracted, uniqueness checked. They are
  never asserted directly, and existing entities get theirs when one of the attributes
  next changes (as in Datomic).

``owners`` finds the entities that hold values of a unique attribute (lookup refs and
upserts use it).

Relies on ``indexes.eav`` and ``queries.edn``; used by ``queries.transact`` (``resolve`` and
``bulk``).

>>> from queries.database import Database
>>> db = Database()
>>> _ = db.transact('[{:db/ident :n :db/valueType :db.type/long}]')
>>> aid, one, two = db.store.aid(":n"), db.store.interner.encode(1), db.store.interner.encode(2)
>>> rows = np.array([[5, aid, one], [5, aid, two], [5, aid, one]])
>>> add, ret, _ = apply_rules(db.store, rows, np.array([True, True, False]), {aid: ":n"}, 7)
>>> add[:, [0, 3]].tolist(), ret.tolist()   # the retraction came last: one value left
([[5, 7]], [])
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from indexes.eav import EavStore
from queries.edn import Keyword
from wcoj.errors import SchemaError, shown
from wcoj.rows import row_order

__all__ = ["apply_rules", "owners"]

I64 = npt.NDArray[np.int64]
_NONE = np.zeros((0, 3), dtype=np.int64)


def owners(store: EavStore, ident: str, vids: I64) -> I64:
    """The live entity whose attribute ``ident`` has each value id (-1 for none; one of
    them if several do, which a unique attribute never allows).

    Complexity: one ``propose`` on the attribute's VAE index for all ``vids``.
    """
    vids = np.ascontiguousarray(vids, dtype=np.int64).reshape(-1)
    out = np.full(len(vids), -1, dtype=np.int64)
    rel = store.relations.get(ident)
    if rel is None or not len(vids):
        return out
    view = rel.view("prev", (1, 0))
    pos, ents = view.propose(vids[:, None])
    if len(pos):
        live = view.weight(np.stack([vids[pos], ents], axis=1)) > 0
        out[pos[live]] = ents[live]  # a unique value has one live owner
    return out


def apply_rules(store: EavStore, rows: I64, added: npt.NDArray[np.bool_], idents: dict[int, str],
                tx: int, report: bool = True) -> tuple[I64, I64, list]:
    """The datoms a transaction adds and retracts: ``(adds, retracts, tx_data)``.

    Parameters
    ----------
    store : the database before the transaction (``prev``).
    rows : ``int64[n, 3]`` rows ``(e, aid, vid)`` in transaction order.
    added : ``bool[n]``, True where the row is asserted, False where it is retracted.
    idents : the ident of every attribute id in ``rows``.
    tx : the transaction's entity id (the fourth column of ``adds``).
    report : give ``tx_data``, else ``[]``.

    Returns
    -------
    adds : ``int64[k, 4]`` ``(e, aid, vid, tx)`` rows, new (sorted when ``report``).
    retracts : ``int64[m, 4]`` live rows, each with the transaction that added it.
    tx_data : a function of no arguments giving the datoms ``(e, attr, value, added)``,
        adds then retracts, decoded (``Report.tx_data`` calls it when first read: a bulk
        transaction's caller seldom reads them, and decoding cost as much as the rules).

    Raises
    ------
    SchemaError : two values for a cardinality-one attribute of one entity, or a value
        of a unique attribute that would belong to two entities.
    """
    rows, added = _last_wins(np.asarray(rows, dtype=np.int64).reshape(-1, 3),
                             np.asarray(added, dtype=bool))
    composites = store.composites()
    if composites and len(rows):
        derived = {store.aid(c.ident): c.ident for c in composites}
        direct = np.flatnonzero(np.isin(rows[:, 1], list(derived)))
        if len(direct):
            raise SchemaError(f"{derived[int(rows[direct[0], 1])]} is a composite tuple: assert "
                              "the attributes it is made of instead")
    if not len(rows) or rows[0, 1] == rows[-1, 1]:   # sorted by aid: one attribute
        bounds = [0, len(rows)] if len(rows) else [0]
    else:
        bounds = np.flatnonzero(np.diff(rows[:, 1], prepend=-1, append=-1)).tolist()
    adds, rets = [_NONE], [_NONE]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part, flag = rows[lo:hi], added[lo:hi]
        ident = idents[int(part[0, 1])]
        schema, rel = store.attribute(ident), store.relations.get(ident)
        have = rel.weights(part[:, [0, 2]]) > 0 if rel is not None \
            else np.zeros(len(part), dtype=bool)
        add, ret = part[flag & ~have], part[~flag & have]
        if not schema.many:
            view = rel.view("prev", (0, 1)) if rel is not None else None   # e -> v
            stale = _replaced(store, ident, part[flag], view)
            if len(stale) and len(ret):   # an old value may be retracted explicitly too
                ret = np.unique(np.concatenate([ret, stale]), axis=0)
            elif len(stale):
                ret = stale
        if schema.unique is not None and len(add):
            _check_unique(store, ident, add, ret)
        adds.append(add)
        rets.append(ret)
    add, ret = np.concatenate(adds), np.concatenate(rets)
    for c in composites:
        c_add, c_ret = _composite(store, c, add, ret, idents)
        if len(c_add) and c.unique is not None:
            _check_unique(store, c.ident, c_add, c_ret)
        add, ret = np.concatenate([add, c_add]), np.concatenate([ret, c_ret])
    if report:  # tx_data in datom order, as before
        add, ret = _by_datom(add), _by_datom(ret)
    adds = np.empty((len(add), 4), dtype=np.int64)
    adds[:, :3], adds[:, 3] = add, tx
    retracts = np.concatenate([ret, store.tx_of(ret)[:, None] if len(ret) else ret[:, :1]], axis=1)
    return adds, retracts, partial(_tx_data, store, add, ret, idents) if report else []


def _composite(store: EavStore, c: Any, add: I64, ret: I64, idents: dict[int, str]) -> tuple[I64, I64]:
    """The rows ``(e, aid, vid)`` that keep composite ``c`` in step with the transaction's
    ``add``/``ret`` rows of its attributes: for each entity they touch, its new tuple and
    the retraction of its old one (where they differ)."""
    aids = [store.aid(a) for a in c.tuple_attrs]
    mine = [r[np.isin(r[:, 1], aids)] for r in (add, ret)]
    touched = np.unique(np.concatenate([m[:, 0] for m in mine]))
    if not len(touched):
        return _NONE, _NONE
    caid = store.aid(c.ident)
    idents[caid] = c.ident
    after = []  # per attribute: entity -> its value id after the transaction
    for a, aid in zip(c.tuple_attrs, aids):
        vals = dict(zip(touched.tolist(), _live_values(store, a, touched).tolist()))
        for e, v in ret[ret[:, 1] == aid][:, [0, 2]].tolist():
            if vals.get(e) == v:
                vals[e] = -1
        for e, v in add[add[:, 1] == aid][:, [0, 2]].tolist():
            vals[e] = v
        after.append(vals)
    old = _live_values(store, c.ident, touched).tolist()
    decode, encode = store.interner.decode_one, store.interner.encode
    c_add, c_ret = [], []
    for e, was in zip(touched.tolist(), old):
        ids = [vals[e] for vals in after]
        now = -1 if all(v < 0 for v in ids) else \
            encode(tuple(decode(v) if v >= 0 else None for v in ids))
        if now != was:
            if was >= 0:
                c_ret.append((e, caid, was))
            if now >= 0:
                c_add.append((e, caid, now))
    as_rows = lambda xs: np.array(xs, dtype=np.int64).reshape(-1, 3)  # noqa: E731
    return as_rows(c_add), as_rows(c_ret)


def _live_values(store: EavStore, ident: str, ents: I64) -> I64:
    """The value id of cardinality-one attribute ``ident`` for each of ``ents`` before the
    transaction (-1 where it has none)."""
    out = np.full(len(ents), -1, dtype=np.int64)
    rel = store.relations.get(ident)
    if rel is None:
        return out
    view = rel.view("prev", (0, 1))
    pos, vals = view.propose(np.ascontiguousarray(ents.reshape(-1, 1)))
    if len(pos):
        live = view.weight(np.stack([ents[pos], vals], axis=1).reshape(-1, 2)) > 0
        out[pos[live]] = vals[live]
    return out


def _last_wins(rows: I64, added: np.ndarray) -> tuple[I64, np.ndarray]:
    """One row per datom, the last of the transaction's rows for it; sorted by
    ``(aid, e, v)``."""
    if len(rows) < 2:
        return rows, added
    order = row_order(np.ascontiguousarray(rows[:, [1, 0, 2]]))   # stable: equal rows keep order
    rows, added = rows[order], added[order]
    last = np.ones(len(rows), dtype=bool)
    last[:-1] = (rows[1:] != rows[:-1]).any(axis=1)
    return rows[last], added[last]


def _by_datom(rows: I64) -> I64:
    return rows[row_order(np.ascontiguousarray(rows))] if len(rows) > 1 else rows


def _replaced(store: EavStore, ident: str, want: I64, view: Any) -> I64:
    """Cardinality one: the live values that ``want`` (one attribute's asserted rows,
    sorted by entity) replaces; raises if an entity is given two values. ``view`` is the
    attribute's ``prev`` view in ``(e, v)`` order (None: no datom yet)."""
    two = np.flatnonzero(want[1:, 0] == want[:-1, 0])
    if len(two):
        k = int(two[0])
        a, b = store.interner.decode(want[k:k + 2, 2]).tolist()
        raise SchemaError(f"two values {shown(a)} and {shown(b)} for cardinality-one attribute "
                          f"{ident} of entity {int(want[k, 0])} in one transaction")
    if view is None:
        return _NONE
    pos, old = view.propose(np.ascontiguousarray(want[:, :1]))
    if not len(pos):
        return _NONE
    stale = np.empty((len(pos), 3), dtype=np.int64)
    stale[:, 0], stale[:, 1], stale[:, 2] = want[pos, 0], want[0, 1], old
    stale = stale[(old != want[pos, 2]) & (view.weight(stale[:, [0, 2]]) > 0)]
    # one live value per entity, unless a value shows in several runs of the trie
    return np.unique(stale, axis=0) if len(stale) > len(want) else stale


def _check_unique(store: EavStore, ident: str, add: I64, ret: I64) -> None:
    """A value of a unique attribute belongs to one entity: ``add`` (the attribute's new
    rows) may not give it to two, nor to one other than its live owner, unless ``ret``
    retracts the owner's datom."""
    by_value = add[np.lexsort((add[:, 0], add[:, 2]))]
    clash = np.flatnonzero(by_value[1:, 2] == by_value[:-1, 2])
    if len(clash):
        k = int(clash[0])
        shown = store.interner.decode_one(int(by_value[k, 2]))
        raise SchemaError(f"unique value {shown!r} of {ident} would belong to two entities, "
                          f"{int(by_value[k, 0])} and {int(by_value[k + 1, 0])}, in one "
                          "transaction")
    rel = store.relations.get(ident)
    if rel is None:
        return
    view = rel.view("prev", (1, 0))
    pos, ents = view.propose(np.ascontiguousarray(add[:, 2:3]))
    live = view.weight(np.stack([add[pos, 2], ents], axis=1).reshape(-1, 2)) > 0
    other = np.flatnonzero(live & (ents != add[pos, 0]))
    if not len(other):
        return
    gone = set(map(tuple, ret[:, [0, 2]].tolist()))
    for i in other.tolist():  # rare: only conflicts and moved values get here
        owner, row = int(ents[i]), add[pos[i]]
        if (owner, int(row[2])) not in gone:
            shown = store.interner.decode_one(int(row[2]))
            raise SchemaError(f"unique value {shown!r} of {ident} already belongs to entity "
                              f"{owner}; cannot assert it for entity {int(row[0])}")


def _tx_data(store: EavStore, add: I64, ret: I64, idents: dict[int, str]) -> list[tuple[Any, ...]]:
    if not len(add) and not len(ret):
        return []
    kw = {aid: Keyword(ident) for aid, ident in idents.items()}
    dec = store.interner.decode
    out = [(e, kw[a], v, True) for (e, a), v in zip(add[:, :2].tolist(), dec(add[:, 2]).tolist())]
    out += [(e, kw[a], v, False) for (e, a), v in zip(ret[:, :2].tolist(), dec(ret[:, 2]).tolist())]
    return out
