"""The transaction rules, once for every road in: ``transact`` (list and map forms) and
``load_datoms`` against a plain-Python model of Datomic's rules over a set of datoms."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from queries.database import Database
from wcoj.errors import SchemaError

SCHEMA = '''[{:db/ident :one :db/valueType :db.type/long}
             {:db/ident :many :db/valueType :db.type/long :db/cardinality :db.cardinality/many}
             {:db/ident :key :db/valueType :db.type/long :db/unique :db.unique/identity}
             {:db/ident :mail :db/valueType :db.type/long :db/unique :db.unique/value}]'''
ATTRS = [":one", ":many", ":key", ":mail"]
N_BASE = 3  # entities every example starts with: :key, :one, :many and :mail i, i in 0..2


def _base(db: Database) -> dict:
    db.transact(SCHEMA)
    r = db.transact([{":db/id": f"b{i}", ":key": i, ":one": i, ":many": i, ":mail": i}
                     for i in range(N_BASE)])
    return {i + 1: r.tempids[f"b{i}"] for i in range(N_BASE)}


def _model(state: set, ops: list, tempids: dict) -> set:
    """Datomic's rules on a set of ``(e, attr, v)``, spelled out datom by datom; raises
    ``SchemaError`` where a transaction is refused. ``tempids`` gives each tempid's entity
    (upserts already resolved)."""
    want = {}
    for added, e, a, v in ops:
        want[(tempids.get(e, e), a, v)] = added   # a later op of the same datom wins
    adds = {d for d, f in want.items() if f and d not in state}
    rets = {d for d, f in want.items() if not f and d in state}
    for (e, a, v), f in want.items():
        if f and a != ":many":
            if any(f2 and (e2, a2) == (e, a) and v2 != v for (e2, a2, v2), f2 in want.items()):
                raise SchemaError("two values for cardinality-one")
            rets |= {d for d in state if d[:2] == (e, a) and d[2] != v}
    for e, a, v in adds:
        if a in (":key", ":mail") and (
                any(d[1:] == (a, v) and d[0] != e for d in adds)
                or any(d[1:] == (a, v) and d[0] != e and d not in rets for d in state)):
            raise SchemaError("unique")
    return (state - rets) | adds


def _upserts(state: set, ops: list) -> dict:
    """The tempids a :key value of an existing entity upserts (the first one)."""
    out = {}
    for added, e, a, v in ops:
        if added and isinstance(e, str) and a == ":key" and e not in out:
            owner = [d[0] for d in state if d[1:] == (":key", v)]
            if owner:
                out[e] = owner[0]
    return out


def _state(db: Database) -> set:
    return {(e, a, v) for a in ATTRS for e, v in db.q(f'[:find ?e ?v :where [?e {a} ?v]]')}


entity = st.one_of(st.integers(1, N_BASE), st.sampled_from(["t1", "t2"]))
# small longs, and longs past the ones kept without a table (+-2**55) and past int64
value = st.one_of(st.integers(0, 3), st.sampled_from([2 ** 55, -2 ** 55 - 1, 2 ** 62, 2 ** 70]))
op = st.tuples(st.booleans(), entity, st.sampled_from(ATTRS), value)
transactions = st.lists(st.lists(op, min_size=1, max_size=6), min_size=1, max_size=4)


@settings(deadline=None, max_examples=300)
@given(transactions, st.booleans())
@example([[(True, 1, ":one", 2)]], False)                               # replaces 0
@example([[(True, 1, ":one", 2), (False, 1, ":one", 2)]], False)        # the last op wins
@example([[(True, 1, ":one", 2), (True, 1, ":one", 3)]], False)         # two values
@example([[(True, 1, ":mail", 1)]], False)                              # 2 owns it
@example([[(True, 1, ":mail", 1), (False, 2, ":mail", 1)]], False)      # moved
@example([[(True, 2, ":mail", 3), (True, 1, ":mail", 1)]], False)       # replaced: moved
@example([[(True, "t1", ":key", 1), (True, "t1", ":one", 3)]], True)    # upsert
@example([[(True, "t1", ":mail", 3), (True, "t2", ":mail", 3)]], False)  # one value, two
def test_transact_equals_the_model_datom_by_datom(txs, as_maps):
    db = Database()
    ids = _base(db)
    state = _state(db)
    for tx in txs:
        ops = [(f, e if isinstance(e, str) else ids[e], a, v) for f, e, a, v in tx]
        if as_maps and all(f for f, *_ in ops):
            data = [{":db/id": e, a: v} for _, e, a, v in ops]
        else:
            data = [[":db/add" if f else ":db/retract", e, a, v] for f, e, a, v in ops]
        upserted = _upserts(state, ops)
        fresh = {e for _, e, _, _ in ops if isinstance(e, str)} - set(upserted)
        before = db.store.datoms.contents()
        try:
            r = db.transact(data)
        except SchemaError:
            with pytest.raises(SchemaError):  # the model refuses it too, and nothing changed
                _model(state, ops, {**upserted, **{t: -1 - i for i, t in enumerate(fresh)}})
            assert db.store.datoms.contents() == before
            continue
        assert {t: r.tempids[t] for t in upserted} == upserted
        assert all(r.tempids[t] > max(ids.values()) for t in fresh)
        state = _model(state, ops, r.tempids)
        assert _state(db) == state
        ids.update({k: v for k, v in r.tempids.items()})


@settings(deadline=None, max_examples=80)
@given(st.lists(st.tuples(st.integers(1, N_BASE), st.sampled_from([":one", ":many", ":mail"]),
                          value), min_size=1, max_size=8))
def test_load_datoms_equals_transact(rows):
    dbs = [Database(), Database()]
    for db in dbs:
        _base(db)
    eids = sorted(dbs[0].q('[:find [?e ...] :where [?e :key]]'))
    outcomes = []
    for k, db in enumerate(dbs):
        try:
            if k == 0:
                db.transact([[":db/add", eids[e - 1], a, v] for e, a, v in rows])
            else:
                db.load_datoms(np.array([eids[e - 1] for e, _, _ in rows]),
                               np.array([a for _, a, _ in rows]), np.array([v for *_, v in rows]))
            outcomes.append(_state(db))
        except SchemaError:
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]


def test_lookup_refs_resolve_once_per_distinct_ref_in_both_positions():
    db = Database()
    db.transact(SCHEMA)
    db.transact('[{:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
    r = db.transact([{":db/id": f"p{i}", ":key": i} for i in range(3)])
    ids = [r.tempids[f"p{i}"] for i in range(3)]
    db.transact([[":db/add", [":key", i], ":friend", [":key", (i + 1) % 3]] for i in range(3)]
                + [[":db/add", (":key", 0), ":friend", [":key", 1]]])   # a repeat: a no-op
    assert db.q('[:find ?a ?b :where [?a :friend ?b]]') == {
        (ids[0], ids[1]), (ids[1], ids[2]), (ids[2], ids[0])}
    db.transact([[":db/cas", [":key", 0], ":one", None, 7]])
    db.transact([[":db/cas", [":key", 0], ":one", 7, 8]])
    assert db.q('[:find ?v . :where [?e :key 0] [?e :one ?v]]') == 8
    with pytest.raises(SchemaError, match=r"lookup ref \[':key', 9\] matches no entity"):
        db.transact([[":db/add", ids[0], ":friend", [":key", 9]]])


def test_retract_entity_keeps_the_order_of_the_forms():
    db = Database()
    ids = _base(db)
    e = ids[1]
    # retractEntity then an add: the add comes later, so it stays
    db.transact([[":db/retractEntity", e], [":db/add", e, ":one", 5]])
    assert {(a, v) for x, a, v in _state(db) if x == e} == {(":one", 5)}
    # retractEntity retracts what the database holds (as Datomic expands it before the
    # transaction): :one 5 goes, the new :many 6 stays
    db.transact([[":db/add", e, ":many", 6], [":db/retractEntity", e]])
    assert {(a, v) for x, a, v in _state(db) if x == e} == {(":many", 6)}
    db.transact([[":db/retractEntity", e]])
    assert len({x for x, _, _ in _state(db)}) == N_BASE - 1


def test_a_tempid_upserts_through_any_identity_attribute_in_list_forms():
    db = Database()
    db.transact(SCHEMA)
    db.transact('[{:db/ident :code :db/valueType :db.type/string :db/unique :db.unique/identity}]')
    a = db.transact([{":db/id": "a", ":key": 1}]).tempids["a"]
    b = db.transact([{":db/id": "b", ":code": "B"}]).tempids["b"]
    r = db.transact([[":db/add", "t", ":code", "B"], [":db/add", "t", ":one", 3]])
    assert r.tempids["t"] == b and a != b
    assert db.q('[:find ?v . :in $ ?e :where [?e :one ?v]]', b) == 3
