"""The transaction log in queries (Datomic's ``tx-ids`` and ``tx-data``), each answer
checked against the datoms the transactions' reports list."""

from datetime import timedelta

import pytest

from queries.database import Database
from queries.edn import Keyword
from wcoj.errors import QueryError

SCHEMA = '[{:db/ident :sku :db/valueType :db.type/string :db/unique :db.unique/identity}' \
         ' {:db/ident :count :db/valueType :db.type/long}]'
CHANGES = '''[:find ?tx ?e ?a ?v ?op
              :in ?log ?t1 ?t2
              :where [(tx-ids ?log ?t1 ?t2) [?tx ...]]
                     [(tx-data ?log ?tx) [[?e ?a ?v ?tx ?op]]]]'''


def changes(db, start, end):
    """CHANGES with a nil (open) end written into the query: a nil input binds nothing."""
    query = CHANGES
    for var, value in (("?t1", start), ("?t2", end)):
        if value is None:
            query = query.replace(f" {var}", "", 1).replace(f"{var})", "nil)").replace(f"{var} ", "nil ")
    return db.q(query, db.log, *(v for v in (start, end) if v is not None))


def load(db):
    reports = [db.transact(SCHEMA),
               db.transact('[{:sku "a" :count 1} {:sku "b" :count 2}]'),
               db.transact('[[:db/add [:sku "a"] :count 5] [:db/retract [:sku "b"] :count 2]]'),
               db.transact('[[:db/retractEntity [:sku "b"]]]')]
    return reports


def datoms(reports):
    return {(r.tx, e, Keyword(str(a)), v, op) for r in reports for e, a, v, op in r.tx_data}


@pytest.fixture
def db():
    d = Database()
    d.reports = load(d)
    return d


@pytest.mark.parametrize("lo, hi", [(1, 3), (2, None), (None, 2), (None, None)])
def test_tx_data_of_tx_ids_are_the_reported_datoms(db, lo, hi):
    reports = db.reports
    t = [r.tx for r in reports]   # a range given as transaction ids, start included
    start = None if lo is None else t[lo]
    end = None if hi is None else t[hi]
    want = datoms(reports[lo or 0:hi])
    assert changes(db, start, end) == want


def test_a_range_may_be_given_as_ts_or_instants(db):
    r = db.reports
    assert db.q(CHANGES, db.log, 2, 3) == datoms(r[1:2])
    when = [x[1] for x in db.log.transactions()]
    assert changes(db, when[2], None) == datoms(r[2:])
    assert changes(db, when[3] + timedelta(seconds=1), None) == set()


def test_the_log_joins_the_database(db):
    # who had their count changed in the third transaction, by sku
    query = '''[:find ?sku ?v ?op :in $ ?log ?tx
                :where [(tx-data ?log ?tx) [[?e ?a ?v _ ?op]]] [(= ?a :count)] [?e :sku ?sku]]'''
    assert db.q(query, db.log, db.reports[2].tx) == {("a", 5, True), ("a", 1, False)}


def test_a_view_of_the_log_is_refused(db):
    n = len(db.views)
    with pytest.raises(QueryError, match="use q for them, not a view"):
        db.view('[:find (count ?tx) . :in ?log :where [(tx-ids ?log nil nil) [?tx ...]]]', db.log)
    assert len(db.views) == n


def test_a_durable_log_answers_the_same(tmp_path):
    with Database.open(tmp_path / "db") as d:
        reports = load(d)
        assert changes(d, None, None) == datoms(reports)


@pytest.mark.parametrize("query, match", [
    ('[:find ?tx :in ?log :where [(tx-ids ?log 1) [?tx ...]]]', "takes 3 arguments"),
    ('[:find ?tx :in ?x :where [(tx-ids ?x nil nil) [?tx ...]]]', "needs a log"),
    ('[:find ?v :in ?log :where [(tx-data ?log 3) [[_ _ ?v]]]]', "needs a transaction id"),
])
def test_misuse_is_a_typed_error(db, query, match):
    with pytest.raises(QueryError, match=match):
        db.q(query, db.log if "?log" in query else 7)
