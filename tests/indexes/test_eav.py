"""EavStore: ticks staged and committed (or forgotten) through one Transaction."""

import numpy as np
import pytest

from indexes.eav import Attribute, EavStore
from queries.edn import Keyword
from wcoj.errors import SchemaError, UnknownAttributeError


@pytest.fixture
def store():
    s = EavStore(Keyword)
    s.install(Attribute(":name", "string", unique="identity"))
    s.install(Attribute(":tag", "keyword", many=True))
    return s


def rows(s, *datoms, tx=1):
    return np.array([[e, s.aid(a), s.interner.encode(v), tx] for e, a, v in datoms],
                    dtype=np.int64).reshape(-1, 4)


def test_stage_commit_and_indexes(store):
    with store.transaction() as tx:
        store.stage(tx, rows(store, (1, ":name", "Ann"), (2, ":name", "Bob"), (1, ":tag", Keyword(":x"))),
                    rows(store))
        assert store.values(":name", 1) == [] and store.values(":name", 1, "curr") == ["Ann"]
        assert store.changed == {":name", ":tag"}
        tx.commit(store.committed)
    assert store.values(":name", 1) == ["Ann"]
    assert store.entity_ids(":name", store.interner.encode("Bob")).tolist() == [2]
    assert store.attributes_of(1) == [":name", ":tag"]
    assert store.tx_of(np.array([[1, store.aid(":name"), store.interner.encode("Ann")],
                                 [9, 9, 9]])).tolist() == [1, -1]


def test_rollback_forgets_delta_ids_and_installs(store):
    with store.transaction() as tx:
        store.stage(tx, rows(store, (1, ":name", "Ann")), rows(store))
        tx.commit(store.committed)
    n = store.next_eid
    with pytest.raises(RuntimeError, match="boom"):
        with store.transaction() as tx:
            store.new_eids(3)
            store.stage_install(Attribute(":age", "long"))
            store.stage(tx, rows(store, (2, ":name", "Bob")), rows(store, (1, ":name", "Ann")))
            raise RuntimeError("boom")
    assert store.next_eid == n and not store.has_attribute(":age")
    assert store.values(":name", 1, "curr") == ["Ann"] and store.values(":name", 2, "curr") == []


def test_bulk_load(store):
    store.load(rows(store, *[(e, ":name", f"p{e}") for e in range(1, 1001)]))
    assert len(store.relation(":name").contents()) == 1000
    assert store.values(":name", 500) == ["p500"]


def test_schema_errors(store):
    with pytest.raises(SchemaError, match="unknown value type"):
        Attribute(":x", "text")
    with pytest.raises(UnknownAttributeError, match="did you mean :name"):
        store.attribute(":nmae")
