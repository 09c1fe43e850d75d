"""Where Datomic and DataScript say what a result is, we return the same: return maps,
collection aggregates, pull options, registered functions, schema and value checks.

Each expected value is what Datomic (or DataScript, where Datomic's documentation leaves it
open) returns for the same query, written out by hand."""

import pytest

from queries.database import Database
from queries.edn import Keyword, Symbol


@pytest.fixture
def movies():
    d = Database()
    d.transact('''[{:db/ident :title :db/valueType :db.type/string :db/unique :db.unique/identity}
                   {:db/ident :year :db/valueType :db.type/long}]''')
    d.transact([{":title": "Alien", ":year": 1979}, {":title": "Aliens", ":year": 1986},
                {":title": "Heat", ":year": 1995}])
    return d


def test_keys_strs_syms_give_keyword_string_and_symbol_keys(movies):
    q = '[:find ?t ?y {} t y :where [?m :title ?t] [?m :year ?y] [(< ?y 1980)]]'
    (k,), (s,), (y,) = (movies.q(q.format(kind)) for kind in (":keys", ":strs", ":syms"))
    # Datomic: [{:t "Alien" :y 1979}], [{"t" "Alien" ...}], [{t "Alien" ...}]
    assert k == {Keyword(":t"): "Alien", Keyword(":y"): 1979}
    assert [type(x) for x in k] == [Keyword, Keyword]
    assert s == {"t": "Alien", "y": 1979} and [type(x) for x in s] == [str, str]
    assert y == {"t": "Alien", "y": 1979} and [type(x) for x in y] == [Symbol, Symbol]


def test_min_and_max_n_are_both_ascending(movies):
    # DataScript's aggregate-min/-max keep a window sorted with compare: ascending both
    q = '[:find [(min 2 ?y) (max 2 ?y)] :where [_ :year ?y]]'
    assert movies.q(q) == ([1979, 1986], [1986, 1995])
    assert movies.q('[:find (max 5 ?y) . :where [_ :year ?y]]') == [1979, 1986, 1995]
