"""``db.entity``: every read equals ``q`` (values, refs walked, reverse refs) over random
databases, and an entity keeps reading its own database value after later transactions
(against ``as_of`` of its ``t`` queried with ``q``)."""

import random

import pytest

from queries.database import Database
from queries.edn import Keyword
from queries.entity import Entity
from wcoj.errors import UnknownAttributeError

K = Keyword
SCHEMA = '''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :age :db/valueType :db.type/long}
             {:db/ident :tag :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
             {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :boss :db/valueType :db.type/ref}
             {:db/ident :address :db/valueType :db.type/ref :db/isComponent true}
             {:db/ident :street :db/valueType :db.type/string}]'''


def _random_db(seed: int, n: int = 12):
    rng = random.Random(seed)
    db = Database()
    db.transact(SCHEMA)
    db.transact([{":db/id": f"p{i}", ":name": f"n{i}", ":age": rng.randint(0, 5),
                  ":tag": [rng.choice([":a", ":b", ":c"]) for _ in range(rng.randint(0, 2))],
                  ":friend": [f"p{rng.randrange(n)}" for _ in range(rng.randint(0, 3))],
                  ":boss": f"p{rng.randrange(n)}", ":address": {":street": f"s{i}"}}
                 for i in range(n)])
    return db, rng


def _as_q(db, e, attr):
    """What ``q`` says entity ``e`` has for ``attr`` (refs as ids; a set for many)."""
    got = {v for (v,) in db.q(f'[:find ?v :in $ ?e :where [?e {attr} ?v]]', e)}
    return got


def _plain(v):
    if isinstance(v, Entity):
        return v.eid
    if isinstance(v, frozenset):
        return {_plain(x) for x in v}
    return v


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_read_is_what_q_says_and_the_entity_keeps_its_value(seed):
    db, rng = _random_db(seed)
    ents = {e: db.entity(e) for (e,) in db.q('[:find ?e :where [?e :name]]')}
    before = {}
    for e, ent in ents.items():
        for attr, many in ((":name", False), (":age", False), (":tag", True), (":friend", True),
                           (":boss", False), (":address", False)):
            want = _as_q(db, e, attr)
            got = ent.get(attr, frozenset() if many else None)
            assert (_plain(got) if many else {_plain(got)} - {None}) == want
            before[e, attr] = want
        back = {f for (f,) in db.q('[:find ?f :in $ ?e :where [?f :friend ?e]]', e)}
        assert _plain(ent.get(":_friend", frozenset())) == back
        assert set(ent.keys()) == {K(a) for (a,) in db.q('[:find ?a :in $ ?e :where [?e ?a]]', e)}
        assert ent[":db/id"] == e and ent.touch().keys() == set(ent.keys())
        boss = ent[":boss"]
        assert boss[":name"] == db.q('[:find ?n . :in $ ?e :where [?e :boss ?b] [?b :name ?n]]', e)
        # a component points back to one entity, not a set
        assert ent[":address"][":_address"] == ent
    t = db.basis_t()
    for _ in range(6):   # later transactions: retract, change, add
        e = rng.choice(list(ents))
        db.transact(rng.choice([[[":db/retractEntity", e]], [[":db/add", e, ":age", 9]],
                                [[":db/retract", e, ":tag"]], [{":name": f"new{e}", ":friend": e}]]))
    past = db.as_of(t)
    for e, ent in ents.items():
        assert ent.t == t
        for attr in (":age", ":tag", ":friend"):
            got = ent.get(attr, None if attr == ":age" else frozenset())
            assert (_plain(got) if attr != ":age" else {_plain(got)} - {None}) == before[e, attr] == \
                _as_q(past, e, attr)
        now = db.entity(e)
        assert now.get(":age") == db.q('[:find ?a . :in $ ?e :where [?e :age ?a]]', e)


def test_names_misses_and_errors():
    db, _ = _random_db(0)
    ann = db.entity([":name", "n0"])
    assert db.entity([":name", "nobody"]) is None and db.entity(":no/ident") is None
    assert ann.get(":street") is None and ":street" not in ann and ":name" in ann
    with pytest.raises(KeyError):
        ann[":street"]
    with pytest.raises(UnknownAttributeError):
        ann.get(":nmae")
    assert db.entity(ann.eid) == ann and hash(db.entity(ann.eid)) == hash(ann)
    assert repr(ann) == f"Entity({{:db/id {ann.eid}}}, t={db.basis_t()})"
    # an attribute is an entity too (queries.schema)
    name = db.entity(":name")
    assert name[":db/valueType"] == K(":db.type/string") and name[":db/id"] == K(":name")
