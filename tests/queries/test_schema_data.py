"""The schema as data, as in Datomic: an installed attribute is an entity with
``:db/ident``, ``:db/valueType``, ``:db/cardinality`` ... datoms, written by the
transaction that installs or alters it, read by ``q``, views, ``pull``, ``datoms``, the
log and time travel like any datom. The oracle is a model of the schema kept here from the
maps and forms the tests transact (what Datomic would hold), not the engine's own
``Attribute`` objects."""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from queries.database import Database
from queries.edn import Keyword
from tests.queries.datalog_evaluator import oracle_q
from wcoj.errors import SchemaError

K = Keyword
SCHEMA = '''[{:db/ident :person/name :db/valueType :db.type/string :db/unique :db.unique/identity
              :db/doc "a person's full name"}
             {:db/ident :person/email :db/valueType :db.type/string :db/unique :db.unique/value}
             {:db/ident :person/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :person/address :db/valueType :db.type/ref :db/isComponent true}
             {:db/ident :post/text :db/valueType :db.type/string :db/fulltext true}
             {:db/ident :person/key :db/valueType :db.type/tuple
              :db/tupleAttrs [:person/name :person/email] :db/cardinality :db.cardinality/one}]'''
# what each map above states, with Datomic's default cardinality (one)
STATED = {
    ":person/name": {":db/valueType": ":db.type/string", ":db/cardinality": ":db.cardinality/one",
                     ":db/unique": ":db.unique/identity", ":db/doc": "a person's full name"},
    ":person/email": {":db/valueType": ":db.type/string", ":db/cardinality": ":db.cardinality/one",
                      ":db/unique": ":db.unique/value"},
    ":person/friend": {":db/valueType": ":db.type/ref", ":db/cardinality": ":db.cardinality/many"},
    ":person/address": {":db/valueType": ":db.type/ref", ":db/cardinality": ":db.cardinality/one",
                        ":db/isComponent": True},
    ":post/text": {":db/valueType": ":db.type/string", ":db/cardinality": ":db.cardinality/one",
                   ":db/fulltext": True},
    ":person/key": {":db/valueType": ":db.type/tuple", ":db/cardinality": ":db.cardinality/one",
                    ":db/tupleAttrs": (K(":person/name"), K(":person/email"))},
}
FACTS = '[:find ?i ?k ?v :where [?a :db/valueType] [?a :db/ident ?i] [?a ?k ?v] [(not= ?k :db/ident)]]'


def expected(model: dict) -> set:
    """The (ident, key, value) schema datoms a model of the schema holds (keywords as
    ``Keyword``)."""
    def kw(v):
        return K(v) if isinstance(v, str) and v.startswith(":") else v
    return {(K(i), K(k), kw(v)) for i, keys in model.items() for k, v in keys.items()}


@pytest.fixture
def db():
    d = Database()
    d.transact(SCHEMA)
    return d


def test_an_attribute_is_an_entity_with_its_schema_datoms(db):
    assert db.q(FACTS) == expected(STATED) == oracle_q(db, FACTS)
    r = db.transact(SCHEMA)  # a schema file transacted again changes nothing: no datom
    assert [str(a) for _, a, _, _ in r.tx_data] == [":db/txInstant"]
    assert db.q('[:find ?i :where [:db.part/db :db.install/attribute ?a] [?a :db/ident ?i]]') == \
        {(K(i),) for i in STATED}
    # ?a of [_ ?a _] is the attribute's entity: it joins its schema datoms
    db.transact('[{:person/name "Ann" :person/friend {:person/name "Bo"}}]')
    assert db.q('[:find ?a ?t :where [_ ?a] [?a :db/valueType ?t]]') == {
        (K(":person/name"), K(":db.type/string")), (K(":person/friend"), K(":db.type/ref")),
        (K(":person/key"), K(":db.type/tuple"))}   # the composite is kept in step
    assert db.q('[:find ?d . :where [:person/name :db/doc ?d]]') == "a person's full name"
    assert db.q('[:find ?i :where [?a :db/valueType :db.type/ref] [?a :db/ident ?i]]') == \
        {(K(":person/friend"),), (K(":person/address"),)}
    assert db.pull('[*]', ':person/email') == {
        K(":db/id"): K(":person/email"), K(":db/ident"): K(":person/email"),
        K(":db/valueType"): K(":db.type/string"), K(":db/cardinality"): K(":db.cardinality/one"),
        K(":db/unique"): K(":db.unique/value")}
    got = {(str(d.a), d.v) for d in db.datoms(":eavt", ":person/friend")}
    assert got == {(":db/ident", K(":person/friend")), (":db/valueType", K(":db.type/ref")),
                   (":db/cardinality", K(":db.cardinality/many"))}


def test_the_installing_transaction_reports_and_logs_its_schema_datoms():
    d = Database()
    r = d.transact('[{:db/ident :n :db/valueType :db.type/long :db/doc "a number"}]')
    got = {(e, str(a), v) for e, a, v, added in r.tx_data if added and str(a) != ":db/txInstant"}
    assert got == {(K(":n"), ":db/ident", K(":n")), (K(":n"), ":db/valueType", K(":db.type/long")),
                   (K(":n"), ":db/cardinality", K(":db.cardinality/one")), (K(":n"), ":db/doc", "a number"),
                   (K(":db.part/db"), ":db.install/attribute", K(":n")),
                   (K(":db.part/db"), ":db/ident", K(":db.part/db"))}
    logged = d.q('[:find ?e ?a ?v :in ?log ?tx :where [(tx-data ?log ?tx) [[?e ?a ?v _ ?op]]] [(true? ?op)]]',
                 d.log, r.tx)
    assert {(e, str(a), v) for e, a, v in logged if str(a) != ":db/txInstant"} == got
    assert d.as_of(r.tx).q('[:find ?t . :where [:n :db/valueType ?t]]') == K(":db.type/long")


def test_alterations_change_the_datoms_views_and_history_follow(db):
    model = {i: dict(keys) for i, keys in STATED.items()}
    view = db.view(FACTS)
    txs = [('[[:db/add :person/friend :db/cardinality :db.cardinality/one]]',
            (":person/friend", ":db/cardinality", ":db.cardinality/one")),
           ('[[:db/retract :person/email :db/unique :db.unique/value]]', (":person/email", ":db/unique", None)),
           ('[{:db/id :person/email :db/unique :db.unique/identity}]',
            (":person/email", ":db/unique", ":db.unique/identity")),
           ('[[:db/add :person/name :db/doc "the name"]]', (":person/name", ":db/doc", "the name")),
           ('[[:db/retract :person/name :db/doc "the name"]]', (":person/name", ":db/doc", None)),
           ('[{:db/ident :person/age :db/valueType :db.type/long}]', (":person/age", None, None))]
    states, ids = [expected(model)], []
    for tx, (ident, key, value) in txs:
        ids.append(db.transact(tx).tx)
        if key is None:
            model[ident] = {":db/valueType": ":db.type/long", ":db/cardinality": ":db.cardinality/one"}
        elif value is None:
            model[ident].pop(key)
        else:
            model[ident][key] = value
        states.append(expected(model))
        assert db.q(FACTS) == view.result() == states[-1] == oracle_q(db, FACTS)
    for k, t in enumerate(ids):
        assert db.as_of(t).q(FACTS) == states[k + 1]
    assert db.as_of(ids[0] - 1).q(FACTS) == states[0]
    history = db.history().q('[:find ?v ?added :where [:person/email :db/unique ?v _ ?added]]')
    assert history == {(K(":db.unique/value"), True), (K(":db.unique/value"), False),
                       (K(":db.unique/identity"), True)}


@pytest.mark.parametrize("tx, match", [
    ('[[:db/add 1 :db/valueType :db.type/ref]]', "schema datoms are written by installing"),
    ('[[:db/add "x" :db/ident :k] [:db/add "x" :db/valueType :db.type/long]]', "schema datoms"),
    ('[[:db/retract :person/name :db/ident :person/name]]', "schema datoms"),
    ('[[:db/retract :person/name :db/doc]]', "schema datoms"),
    ('[[:db/add :db.part/db :db.install/attribute :person/name]]', "schema datoms"),
    ('[[:db/retractEntity :person/friend]]', "an attribute is not retracted"),
    ('[{:db/id 1 :db/cardinality :db.cardinality/many}]', "1 is not an attribute"),
    ('[{:db/ident :x :db/valueType :db.type/long :db/doc 5}]', ":db/doc must be a string"),
])
def test_schema_datoms_are_not_written_by_hand(db, tx, match):
    db.transact('[{:db/id "a" :person/name "Ann"}]')
    view = db.view(FACTS)
    before = (db.q(FACTS), len(db.store.datoms.contents()), dict(db.store.attributes), len(db.log.transactions()))
    with pytest.raises(SchemaError, match=match):
        db.transact(tx)
    assert (db.q(FACTS), len(db.store.datoms.contents()), dict(db.store.attributes),
            len(db.log.transactions())) == before
    assert view.result() == before[0]
    with pytest.raises(SchemaError, match="schema datoms"):
        db.load_datoms([1], ":db/valueType", [K(":db.type/ref")])


def test_durable_schema_datoms_survive_a_reopen_and_with_sees_its_own(tmp_path):
    with Database.open(tmp_path / "db") as d:
        d.transact(SCHEMA)
        d.transact('[[:db/add :person/friend :db/doc "who they know"]]')
        want = d.q(FACTS)
    with Database.open(tmp_path / "db") as d:
        assert d.q(FACTS) == want
        assert d.store.attribute(":person/friend").doc == "who they know"
        after = d.with_('[{:db/ident :person/age :db/valueType :db.type/long}]').db_after
        assert after.q(FACTS) - d.q(FACTS) == {(K(":person/age"), K(":db/valueType"), K(":db.type/long")),
                                               (K(":person/age"), K(":db/cardinality"), K(":db.cardinality/one"))}
        assert d.q(FACTS) == want


_IDENTS = [":a", ":b", ":c"]
_OPS = st.one_of(
    st.tuples(st.just("install"), st.sampled_from(_IDENTS), st.sampled_from(["long", "string", "keyword"]),
              st.booleans(), st.sampled_from([None, "identity", "value"]), st.sampled_from([None, "d1", "d2"])),
    st.tuples(st.just("card"), st.sampled_from(_IDENTS), st.booleans()),
    st.tuples(st.just("unique"), st.sampled_from(_IDENTS), st.sampled_from([None, "identity", "value"])),
    st.tuples(st.just("doc"), st.sampled_from(_IDENTS), st.sampled_from([None, "d1", "d3"])))


def _apply(model: dict, op: tuple) -> tuple[str, dict] | None:
    """The transaction of ``op`` and the model after it (None: the op does not apply)."""
    kind, ident = op[0], op[1]
    if kind == "install":
        _, _, vt, many, unique, doc = op
        text = (f'{{:db/ident {ident} :db/valueType :db.type/{vt} :db/cardinality '
                f':db.cardinality/{"many" if many else "one"}'
                + (f' :db/unique :db.unique/{unique}' if unique else '')
                + (f' :db/doc "{doc}"' if doc else '') + '}')
        keys = dict(model.get(ident, {}))   # a restatement keeps the keys it does not give
        keys.update({":db/valueType": f":db.type/{vt}",
                     ":db/cardinality": f":db.cardinality/{'many' if many else 'one'}"})
        if unique:
            keys[":db/unique"] = f":db.unique/{unique}"
        if doc:
            keys[":db/doc"] = doc
        return f"[{text}]", {**model, ident: keys}
    if ident not in model:
        return None
    keys = dict(model[ident])
    if kind == "card":
        keys[":db/cardinality"] = f":db.cardinality/{'many' if op[2] else 'one'}"
        return f"[[:db/add {ident} :db/cardinality {keys[':db/cardinality']}]]", {**model, ident: keys}
    key, value = (":db/unique", op[2] and f":db.unique/{op[2]}") if kind == "unique" else (":db/doc", op[2])
    if value is None:
        if key not in keys:
            return None
        old = keys.pop(key)
        return f"[[:db/retract {ident} {key} {old if kind == 'unique' else chr(34) + old + chr(34)}]]", \
            {**model, ident: keys}
    keys[key] = value
    shown = value if kind == "unique" else f'"{value}"'
    return f"[[:db/add {ident} {key} {shown}]]", {**model, ident: keys}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_OPS, max_size=12))
def test_random_installs_and_alterations_against_the_model(ops):
    db, model = Database(), {}
    view = db.view(FACTS)
    states = []
    for op in ops:
        step = _apply(model, op)
        if step is None:
            continue
        tx, model = step
        states.append((db.transact(tx).tx, expected(model)))
        assert db.q(FACTS) == view.result() == states[-1][1]
    for t, state in states:
        assert db.as_of(t).q(FACTS) == state


def test_a_log_written_before_schema_datoms_gets_them_on_open(tmp_path):
    """An older log (the same one without its schema datoms) is given them by one
    transaction when opened; its data and history are as they were."""
    import sqlite3
    with Database.open(tmp_path / "db") as d:
        d.transact(SCHEMA)
        d.transact('[{:person/name "Ann" :person/email "a@x"}]')
        facts, people, n_tx = d.q(FACTS), d.q('[:find ?n ?m :where [?e :person/name ?n] [?e :person/email ?m]]'), \
            len(d.transactions())
    con = sqlite3.connect(tmp_path / "db" / "log.sqlite")
    with con:
        con.execute("DELETE FROM datoms WHERE e >= ?", (1 << 56,))   # an attribute's or the partition's
        con.execute("UPDATE tx SET n_datoms = (SELECT count(*) FROM datoms WHERE datoms.t = tx.t)")
    con.close()
    with Database.open(tmp_path / "db") as d:
        assert d.q(FACTS) == facts == expected(STATED)
        assert d.q('[:find ?n ?m :where [?e :person/name ?n] [?e :person/email ?m]]') == people
        assert len(d.transactions()) == n_tx + 1
    with Database.open(tmp_path / "db") as d:   # once only
        assert len(d.transactions()) == n_tx + 1 and d.q(FACTS) == facts
