"""Where Datomic and DataScript say what a result is, we return the same: return maps,
collection aggregates, pull options, registered functions, schema and value checks.

Each expected value is what Datomic (or DataScript, where Datomic's documentation leaves it
open) returns for the same query, written out by hand."""

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import numpy as np
import pytest

from queries.database import Database
from queries.edn import Keyword, Symbol
from wcoj.errors import QueryError, SchemaError, UnknownAttributeError


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


# ---------------------------------------------------------------------------- schema, values

def _schema(db):
    return dict(db.store.attributes)


def test_value_type_cannot_change_while_the_attribute_has_datoms():
    d = Database()
    d.transact('[{:db/ident :age :db/valueType :db.type/long}]')
    r = d.transact([{":db/id": "a", ":age": 3}])
    with pytest.raises(SchemaError, match="cannot change :db/valueType from :db.type/long"):
        d.transact('[{:db/ident :age :db/valueType :db.type/string}]')
    assert d.store.attribute(":age").value_type == "long"
    assert d.q('[:find ?v . :where [_ :age ?v]]') == 3
    # once no datom has it, nothing can disagree with the new type (Datomic: never)
    d.transact([[":db/retract", r.tempids["a"], ":age", 3]])
    d.transact('[{:db/ident :age :db/valueType :db.type/string}]')
    d.transact([{":age": "three"}])
    assert d.q('[:find ?v . :where [_ :age ?v]]') == "three"


@pytest.mark.parametrize("tx", [
    [{":db/ident": "age", ":db/valueType": ":db.type/long"}],
    '[{:db/ident "age" :db/valueType :db.type/long}]',
])
def test_attribute_idents_must_be_keywords(tx):
    d = Database()
    with pytest.raises(SchemaError, match="not a keyword; write ':age'"):
        d.transact(tx)
    assert ":age" not in d.store.attributes and "age" not in d.store.attributes


def test_a_plain_string_is_not_the_keyword_attribute():
    d = Database()
    d.transact([{":db/ident": ":age", ":db/valueType": ":db.type/long"}])
    for tx in ([["db/add", "x", "age", 1]], [[":db/add", "x", "age", 1]], [{"age": 1}]):
        with pytest.raises((SchemaError, UnknownAttributeError)):
            d.transact(tx)
    with pytest.raises(UnknownAttributeError, match="did you mean :age"):
        d.load_datoms([1], "age", [1])
    assert d.q('[:find ?v :where [_ :age ?v]]') == set()
    d.transact([{":age": 3}])
    for q in ([":find", "?v", ":where", ["?e", "age", "?v"]], '[:find ?v :where [?e "age" ?v]]'):
        with pytest.raises(UnknownAttributeError, match="did you mean :age"):
            d.q(q)
    with pytest.raises(QueryError, match='bad attribute "age"'):
        d.pull(["age"], 1)


@pytest.mark.parametrize("nan", [float("nan"), Decimal("NaN")])
def test_nan_is_refused(nan):
    d = Database()
    d.transact('[{:db/ident :x :db/valueType :db.type/double} '
               '{:db/ident :d :db/valueType :db.type/bigdec} '
               '{:db/ident :xs :db/valueType :db.type/double :db/cardinality :db.cardinality/many}]')
    n = len(d.store.datoms.contents())  # the schema's datoms and the transaction's instant
    attr = ":x" if isinstance(nan, float) else ":d"
    with pytest.raises(SchemaError, match="NaN"):
        d.transact([{attr: nan}])
    with pytest.raises(SchemaError, match="NaN"):  # else: two "equal" datoms in one set
        d.transact([[":db/add", "e", ":xs", float("nan")], [":db/add", "e", ":xs", float("nan")]])
    with pytest.raises(SchemaError, match="NaN"):
        d.load_datoms(np.array([1, 2]), ":xs", np.array([1.0, np.nan]))
    assert len(d.store.datoms.contents()) == n


def test_tuple_values_are_vectors_of_two_to_eight_scalars_without_nan():
    """Datomic's tuples hold 2 to 8 scalars. A NaN inside one made a new datom on every
    add (three adds, three datoms, and ``q`` gave the row twice)."""
    d = Database()
    d.transact('[{:db/ident :t :db/valueType :db.type/tuple :db/tupleType :db.type/symbol'
               ' :db/cardinality :db.cardinality/many}]')
    n, size = len(d.store.datoms.contents()), len(d.store.interner)
    for bad, why in (((float("nan"), 1), "holds NaN"), ((1, np.float64("nan")), "holds NaN"),
                     (1, "2 to 8"), ("ab", "2 to 8"), ((1,), "2 to 8"), (tuple(range(9)), "2 to 8"),
                     (((1, 2), 3), "holds a collection")):
        with pytest.raises(SchemaError, match=why):
            d.transact([[":db/add", "e", ":t", bad]])
    assert len(d.store.datoms.contents()) == n and len(d.store.interner) == size
    e = d.transact([[":db/add", "e", ":t", (1, "x")], [":db/add", "e", ":t", [2, None, "y"]]]).tempids["e"]
    assert d.q('[:find ?v :in $ ?e :where [?e :t ?v]]', e) == {((1, "x"),), ((2, None, "y"),)}


def test_numpy_scalars_are_values_of_their_types():
    d = Database()
    d.transact('[{:db/ident :f :db/valueType :db.type/double} {:db/ident :n :db/valueType :db.type/long}'
               ' {:db/ident :b :db/valueType :db.type/boolean}]')
    d.transact([{":db/id": "x", ":f": np.float64(1.5), ":n": np.int64(7), ":b": np.bool_(True)},
                {":db/id": "y", ":f": np.int32(2), ":n": 8, ":b": False}])
    got = d.q('[:find ?f ?n ?b :where [?e :f ?f] [?e :n ?n] [?e :b ?b]]')
    assert got == {(1.5, 7, True), (2.0, 8, False)}
    assert all(type(v) is t for row in got for v, t in zip(row, (float, int, bool)))
    with pytest.raises(SchemaError, match="does not match"):
        d.transact([{":n": np.float64(1.0)}])  # a float is no long, as 1.0 is not


def test_failed_transactions_do_not_grow_the_interner():
    d = Database()
    d.transact('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/value}]')
    d.transact([{":name": "Ann"}])
    size = len(d.store.interner)
    for i in range(50):
        with pytest.raises(SchemaError):
            d.transact([{":name": f"new-{i}"}, {":name": "Ann"}])  # unique value clash
        with pytest.raises(SchemaError):
            d.load_datoms(np.array([5, 6]), ":name", np.array([f"x{i}", f"x{i}"]))
    assert len(d.store.interner) == size
    r = d.transact([{":db/id": "b", ":name": "Bob"}])  # ids handed out later are sound
    assert d.q('[:find ?n . :in $ ?e :where [?e :name ?n]]', r.tempids["b"]) == "Bob"
    assert d.q('[:find (count ?n) . :where [_ :name ?n]]') == 2


def test_interner_find_does_not_insert():
    d = Database()
    it = d.store.interner
    size = len(it)
    assert it.find("nobody stored this") == -1 and it.find(Keyword(":nope")) == -1
    assert it.find(12) == it.encode(12) and it.find([1, {2}]) == -1
    assert len(it) == size


# ---------------------------------------------------------------------------- pull

@pytest.fixture
def band():
    d = Database()
    d.transact('''[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
                   {:db/ident :aka :db/valueType :db.type/string :db/cardinality :db.cardinality/many}
                   {:db/ident :member :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]''')
    d.transact([{":db/id": "p", ":name": "Petr", ":aka": ["Devil", "Tupen"]},
                {":db/id": "b", ":name": "Band", ":member": ["p"]}])
    return d


def test_a_pull_xform_is_refused_by_name(band):
    # Datomic's :xform calls a function the pattern names; query text never reaches one
    with pytest.raises(QueryError, match="pull option :xform of :aka is not supported"):
        band.pull("[(:aka :xform clojure.core/count)]", [":name", "Petr"])


@pytest.mark.parametrize("pattern", [
    '[:name [:aka :limit 1] [:missing :default "none"]]',     # Datomic's vector options
    '[:name (:aka :limit 1) (:missing :default "none")]',     # the older list form
    '[:name (limit :aka 1) (default :missing "none")]',       # the oldest one
    [":name", [":aka", ":limit", 1], [":missing", ":default", "none"]],  # Python data
])
def test_pull_attribute_options(band, pattern):
    band.transact('[{:db/ident :missing :db/valueType :db.type/string}]')
    # Datomic: {:name "Petr" :aka ["Devil"] :missing "none"}
    assert band.pull(pattern, [":name", "Petr"]) == {":name": "Petr", ":aka": ["Devil"],
                                                     ":missing": "none"}


def test_pull_as_keys_are_the_given_value(band):
    # DataScript's test-pull-as: [[:name :as "Name"] [:aka :as :alias]] ->
    # {"Name" "Petr", :alias ["Devil" "Tupen"]}
    got = band.pull('[[:name :as "Name"] [:aka :as :alias] [:db/id :as "id"]]', [":name", "Petr"])
    assert got == {"Name": "Petr", Keyword(":alias"): ["Devil", "Tupen"],
                   "id": band.q('[:find ?e . :where [?e :name "Petr"]]')}
    assert {type(k) for k in got} == {str, Keyword}
    nested = band.pull('[{[:member :as "who"] [[:name :as "n"]]}]', [":name", "Band"])
    assert nested == {"who": [{"n": "Petr"}]}


def test_pull_with_lookup_refs_and_pull_many(band):
    petr = band.q('[:find ?e . :where [?e :name "Petr"]]')
    assert band.pull("[:name]", petr) == band.pull("[:name]", [":name", "Petr"]) \
        == band.pull([":name"], (":name", "Petr")) == {":name": "Petr"}
    # DataScript: pull of a lookup ref that names nothing is nil
    assert band.pull_many('[:name]', [[":name", "Band"], petr, [":name", "Nobody"]]) == [
        {":name": "Band"}, {":name": "Petr"}, None]
    with pytest.raises(SchemaError, match="not a unique attribute"):
        band.pull('[:name]', [":aka", "Devil"])
    with pytest.raises(SchemaError, match="does not match"):
        band.pull('[:name]', [":name", 3])


def test_pull_pattern_as_a_query_input_parses_and_pulls(band):
    from queries.ast import FindPull, Var
    from queries.parse import parse_query
    from queries.pull import pull
    q = parse_query('[:find (pull ?e ?p) . :in $ ?p :where [?e :name "Petr"]]')
    (elem,) = q.find.elements
    assert isinstance(elem, FindPull) and elem.pattern == Var("?p")
    # the evaluator's hook: the input's value goes to pull as it is, text or data
    petr = band.q('[:find ?e . :where [?e :name "Petr"]]')
    assert pull(band.store, petr, '[[:aka :limit 1]]') == pull(band.store, petr, [[":aka", ":limit", 1]]) \
        == {":aka": ["Devil"]}


# ---------------------------------------------------------------------------- registered functions

def test_registered_functions_and_aggregates_are_looked_up_by_name_only():
    from queries.functions import Registry, aggregate, call, is_known
    reg = Registry(functions={"twice": lambda x: 2 * x},
                   aggregates={"spread": lambda xs: max(xs) - min(xs),
                               "top": lambda n, xs: sorted(xs)[-n:]})
    assert call("twice", [21], reg) == 42 and is_known("twice", reg) and not is_known("twice")
    assert aggregate("spread", None, [4, 1, 9], reg) == 8
    assert aggregate("top", 2, [4, 1, 9], reg) == [4, 9]
    # a name nobody registered is the same typed error as before; text never imports
    with pytest.raises(QueryError, match="unknown function os.system"):
        call("os.system", ["true"], reg)
    with pytest.raises(QueryError, match="unknown aggregate builtins/len"):
        aggregate("builtins/len", None, [1], reg)
    with pytest.raises(QueryError, match="built-in function"):
        reg.register_function("str", str)
    with pytest.raises(QueryError, match="expected a callable"):
        reg.register_aggregate("x", 3)
    with pytest.raises(QueryError, match=r"\(twice 'a' 'b'\) failed"):
        call("twice", ["a", "b"], reg)


def test_database_registry_reaches_the_parser(movies):
    from queries.ast import Const, FindAggregate, Var
    q = '[:find (my/spread ?y) . :where [_ :year ?y]]'
    with pytest.raises(QueryError, match="unknown aggregate my/spread"):
        movies.q(q)
    movies.register_aggregate("my/spread", lambda ys: max(ys) - min(ys))
    movies.register_function("decade", lambda y: y - y % 10)
    elem = movies._parse(q).find.elements[0]
    assert isinstance(elem, FindAggregate) and (elem.fn, elem.var) == ("my/spread", Var("?y"))
    assert movies._parse('[:find (my/spread 3 ?y) :where [_ :year ?y]]').find.elements[0].args[0] \
        == Const(3)
    assert movies.as_of(1).registry is movies.registry
    other = Database()
    with pytest.raises(QueryError, match="unknown aggregate my/spread"):
        other.q(q)  # registries are per database


def test_registered_names_run_in_queries(movies):
    movies.register_aggregate("my/spread", lambda ys: max(ys) - min(ys))
    movies.register_function("decade", lambda y: y - y % 10)
    assert movies.q('[:find (my/spread ?y) . :where [_ :year ?y]]') == 1995 - 1979
    assert movies.q('[:find [?d ...] :where [_ :year ?y] [(decade ?y) ?d]]') == [1970, 1980, 1990]


def test_views_stay_right_when_a_failed_transaction_gives_interned_values_back():
    d = Database()
    d.transact('[{:db/ident :name :db/valueType :db.type/string}]')
    d.transact([{":name": "Annabel"}])
    shout = d.view('[:find ?s :where [_ :name ?n] [(str ?n "!") ?s]]')   # interns "...!"
    d.view('[:find ?s :where [_ :name ?n] [(subs ?n 5) ?s]]')            # fails on "Al"
    size = len(d.store.interner)
    with pytest.raises(QueryError, match="subs"):
        d.transact([{":name": "Al"}])   # the first view stepped and interned "Al!" first
    assert len(d.store.interner) == size
    d.transact([{":name": "Bobby"}])     # new values take the ids given back
    assert shout.result() == d.q(shout.query) == {("Annabel!",), ("Bobby!",)}


def test_cardinality_one_and_uniqueness_are_checked_against_the_data_when_altered():
    d = Database()
    d.transact('[{:db/ident :tag :db/valueType :db.type/string :db/cardinality :db.cardinality/many}]')
    r = d.transact([{":db/id": "a", ":tag": ["x", "y"]}, {":db/id": "b", ":tag": ["x"]}])
    a = r.tempids["a"]
    with pytest.raises(SchemaError, match=f"cannot become cardinality one: entity {a} has two"):
        d.transact('[{:db/id :tag :db/cardinality :db.cardinality/one}]')
    with pytest.raises(SchemaError, match="cannot become a unique attribute: the value 'x'"):
        d.transact('[{:db/ident :tag :db/valueType :db.type/string '
                   ':db/cardinality :db.cardinality/many :db/unique :db.unique/value}]')
    assert d.store.attribute(":tag").many and d.store.attribute(":tag").unique is None
    d.transact([[":db/retract", a, ":tag", "x"]])   # now each entity has one, each value one
    d.transact('[{:db/id :tag :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}]')
    assert not d.store.attribute(":tag").many
    assert d.pull("[:db/id]", [":tag", "y"]) == {":db/id": a}


TAG = '[{:db/ident :tag :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]'


@pytest.mark.parametrize("form", [
    '[{:db/id :tag :db/cardinality :db.cardinality/many}]',
    '[{:db/ident :tag :db/cardinality :db.cardinality/many}]',
    '[[:db/add :tag :db/cardinality :db.cardinality/many]]',
    '[{:db/ident :tag :db/valueType :db.type/string :db/cardinality :db.cardinality/many}]'])
def test_schema_alteration_forms_change_what_later_transactions_do(form):
    d = Database()
    d.transact(TAG)
    e = d.transact([{":db/id": "a", ":tag": "x"}]).tempids["a"]
    view = d.view('[:find ?e ?t :where [?e :tag ?t]]')
    d.transact([[":db/add", e, ":tag", "y"]])            # cardinality one: y replaces x
    assert d.q('[:find ?t :where [_ :tag ?t]]') == {("y",)}
    d.transact(form)
    assert d.store.attribute(":tag").many
    d.transact([[":db/add", e, ":tag", "z"]])            # now many: z joins y
    assert d.q('[:find ?t :where [_ :tag ?t]]') == {("y",), ("z",)}
    assert view.result() == d.q(view.query) == {(e, "y"), (e, "z")}


def test_a_restated_attribute_keeps_the_keys_it_does_not_name():
    """Datomic upserts an attribute by its ident: keys not given are not retracted."""
    d = Database()
    d.transact('[{:db/ident :sku :db/valueType :db.type/string :db/cardinality :db.cardinality/many'
               ' :db/unique :db.unique/identity}]')
    d.transact('[{:db/ident :sku :db/valueType :db.type/string :db/doc "stock keeping unit"}]')
    a = d.store.attribute(":sku")
    assert (a.many, a.unique) == (True, "identity")


def test_uniqueness_is_added_and_retracted_as_datoms_of_the_attribute():
    d = Database()
    d.transact(TAG)
    d.transact([{":db/id": "a", ":tag": "x"}])
    d.transact([[":db/add", ":tag", ":db/unique", ":db.unique/identity"]])
    assert d.store.attribute(":tag").unique == "identity"
    assert d.transact([{":tag": "x", ":db/id": "b"}]).tempids["b"] == d.pull("[:db/id]", [":tag", "x"])[":db/id"]
    with pytest.raises(SchemaError, match="cannot retract :db/unique :db.unique/value: it is :db.unique/identity"):
        d.transact([[":db/retract", ":tag", ":db/unique", ":db.unique/value"]])
    d.transact([[":db/retract", ":tag", ":db/unique", ":db.unique/identity"]])
    assert d.store.attribute(":tag").unique is None
    with pytest.raises(SchemaError, match="not a unique attribute"):
        d.pull("[:db/id]", [":tag", "x"])


@pytest.mark.parametrize("form, message", [
    ('[{:db/id :tag :db/ident :label}]', "renaming an attribute"),
    ('[{:db/id :tag :db/cardinality :db.cardinality/many :other 1}]', "schema keys only, not :other"),
    ('[{:db/id :tag :db/fulltext true}]', ":db/fulltext cannot be altered"),
    ('[{:db/id :tag :db/tupleAttrs [:tag :other]}]', ":db/tupleAttrs cannot be altered"),
    ('[{:db/id :tag :db/valueType :db.type/long}]', "cannot change :db/valueType"),
    ('[[:db/retract :tag :db/cardinality :db.cardinality/one]]', ":db/cardinality cannot be retracted"),
    ('[[:db/add :tag :db/cardinality :db.cardinality/some]]', ":db/cardinality must be"),
    ('[{:db/id :tag :db/cardinality :db.cardinality/many} {:db/id "n" :tag 5}]', "does not match its type"),
])
def test_a_refused_alteration_changes_nothing(form, message):
    d = Database()
    d.transact(TAG + ' ')
    d.transact('[{:db/ident :other :db/valueType :db.type/long}]')
    d.transact([{":db/id": "a", ":tag": "x"}])
    before = (d.store.attribute(":tag"), d.q('[:find ?e ?t :where [?e :tag ?t]]'), d.store.next_eid)
    with pytest.raises(SchemaError, match=message):
        d.transact(form)
    assert (d.store.attribute(":tag"), d.q('[:find ?e ?t :where [?e :tag ?t]]'), d.store.next_eid) == before



def test_datomic_tx_names_the_transaction_entity_and_db_doc_is_an_attribute():
    d = Database()
    d.transact('[{:db/ident :sku :db/valueType :db.type/string :db/unique :db.unique/identity}'
               ' {:db/ident :count :db/valueType :db.type/long} {:db/ident :by :db/valueType :db.type/string}]')
    d.transact('[{:sku "S-22" :count 7} {:db/ident :color/red :db/doc "the colour red"}]')
    report = d.transact('[[:db/retract [:sku "S-22"] :count 7]'
                        ' [:db/add "datomic.tx" :db/doc "remove incorrect assertion"]'
                        ' {:db/id "datomic.tx" :by "ann"}]')
    assert report.tempids["datomic.tx"] == report.tx
    assert d.q('[:find ?why ?who :where [?tx :db/doc ?why] [?tx :by ?who] [?tx :db/txInstant _]]') == \
        {("remove incorrect assertion", "ann")}
    assert d.q('[:find ?d . :where [:color/red :db/doc ?d]]') == "the colour red"
    assert d.q('[:find (count ?e) . :where [?e :by _]]') == 1   # no stray entity for the tempid


def test_an_explicit_tx_instant_replaces_the_clock_and_may_not_go_back():
    d = Database()
    old = datetime(2020, 1, 1, tzinfo=timezone.utc)
    d.transact([{":db/ident": ":n", ":db/valueType": ":db.type/long"},
                [":db/add", "datomic.tx", ":db/txInstant", old]])   # an import keeps its times
    r = d.transact([{":n": 1}, [":db/add", "datomic.tx", ":db/txInstant", old + timedelta(days=1)]])
    assert d.q('[:find ?t . :in $ ?tx :where [?tx :db/txInstant ?t]]', r.tx) == old + timedelta(days=1)
    n = len(d.q('[:find ?tx ?t :where [?tx :db/txInstant ?t]]'))
    with pytest.raises(SchemaError, match="is before the last transaction"):
        d.transact([{":n": 2}, [":db/add", "datomic.tx", ":db/txInstant", old]])
    assert len(d.q('[:find ?tx ?t :where [?tx :db/txInstant ?t]]')) == n == 2
    assert d.as_of(old).q('[:find ?n :where [_ :n ?n]]') == set()


def test_a_map_constant_binds_a_map_that_get_reads():
    """``[(ground {:a 1}) ?m]`` binds the map itself (it bound a set of its pairs, on which
    ``get`` found nothing); maps inside a ground collection too."""
    d = Database()
    m = d.q('[:find ?m . :where [(ground {:a 1 :b [2 3]}) ?m]]')
    assert m == {Keyword(":a"): 1, Keyword(":b"): (2, 3)} and hash(m) == hash(m)
    assert d.q('[:find ?x :where [(ground {:a 1}) ?m] [(get ?m :a) ?x]]') == {(1,)}
    assert d.q('[:find ?x ?y :where [(ground [{:a 1} {:a 2 :b 5}]) [?m ...]] [(get ?m :a) ?x]'
               ' [(get ?m :b 0) ?y]]') == {(1, 0), (2, 5)}
    assert d.q('[:find ?x . :in ?m :where [(get ?m :a) ?x]]', {Keyword(":a"): 7}) == 7


def test_retract_without_a_value_retracts_every_value_of_the_attribute():
    """[:db/retract e a] (Datomic 1.0.6165): the values the entity has before the
    transaction, as if each were retracted by name; other entities and attributes keep theirs."""
    def fresh():
        d = Database()
        d.transact('[{:db/ident :tag :db/valueType :db.type/string :db/cardinality :db.cardinality/many}'
                   ' {:db/ident :age :db/valueType :db.type/long}]')
        r = d.transact([{":db/id": "a", ":tag": ["x", "y", "z"], ":age": 3}, {":db/id": "b", ":tag": ["x"]}])
        return d, r.tempids["a"], r.tempids["b"]

    d, a, b = fresh()
    view = d.view('[:find ?e ?t :where [?e :tag ?t]]')
    report = d.transact([[":db/retract", a, ":tag"], [":db/retract", a, ":age"], [":db/add", a, ":tag", "new"]])
    twin, _, _ = fresh()   # the same change, each value retracted by name
    twin.transact([[":db/retract", a, ":tag", v] for v in ("x", "y", "z")] + [[":db/retract", a, ":age", 3],
                                                                              [":db/add", a, ":tag", "new"]])
    want = {(a, "new"), (b, "x")}
    assert view.result() == d.q(view.query) == twin.q(view.query) == want
    assert d.q('[:find ?v :in $ ?e :where [?e :age ?v]]', a) == set()
    retracted = {(e, str(attr), v) for e, attr, v, added in report.tx_data if not added}
    assert retracted == {(a, ":tag", "x"), (a, ":tag", "y"), (a, ":tag", "z"), (a, ":age", 3)}


def test_retract_without_a_value_of_an_unknown_attribute_changes_nothing():
    d = Database()
    d.transact('[{:db/ident :tag :db/valueType :db.type/string}]')
    a = d.transact([{":db/id": "a", ":tag": "x"}]).tempids["a"]
    with pytest.raises(UnknownAttributeError, match=":nope"):
        d.transact([[":db/add", a, ":tag", "y"], [":db/retract", a, ":nope"]])
    assert d.q('[:find ?t :where [_ :tag ?t]]') == {("x",)}


def test_a_schema_file_transacted_twice_changes_nothing():
    """Idempotent schema installation: restating every attribute as installed, composite
    tuples and old-style install keys included, is not an alteration."""
    schema = ('[{:db/ident :a :db/valueType :db.type/long :db/id #db/id [:db.part/db]'
              '   :db.install/_attribute :db.part/db}'
              ' {:db/ident :b :db/valueType :db.type/string :db/unique :db.unique/value}'
              ' {:db/ident :ab :db/valueType :db.type/tuple :db/tupleAttrs [:a :b]}'
              ' {:db/ident :tt :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long :db.type/string]'
              '  :db/unique :db.unique/identity}]')
    d = Database()
    d.transact(schema)
    before = {a: d.store.attribute(a) for a in (":a", ":b", ":ab", ":tt")}
    d.transact(schema)
    assert {a: d.store.attribute(a) for a in before} == before


def test_the_operation_term_of_a_pattern_on_a_current_database_is_true():
    """Datomic's datoms carry their operation; on a database that is not a history every
    datom is an assertion, so a pattern's fifth term binds true (it used to be refused,
    "only a history database has it"). A history database keeps both operations."""
    d = Database()
    d.transact('[{:db/ident :name :db/valueType :db.type/string}]')
    e = d.transact('[{:db/id "a" :name "Ann"} {:db/id "b" :name "Bob"}]').tempids
    d.transact([[":db/retract", e["b"], ":name", "Bob"]])
    q = '[:find ?n ?added :where [?e :name ?n ?tx ?added]]'
    assert d.q(q) == {("Ann", True)}
    assert d.q('[:find ?n :where [?e :name ?n _ true]]') == {("Ann",)}
    assert d.q('[:find ?n :where [?e :name ?n _ false]]') == set()
    assert d.q('[:find ?n :where [?e :name ?n _ ?a] [(false? ?a)]]') == set()
    assert d.history().q(q) == {("Ann", True), ("Bob", True), ("Bob", False)}
    view = d.view(q)
    d.transact('[{:db/id "c" :name "Cy"}]')
    assert view.result() == d.q(q) == {("Ann", True), ("Cy", True)}
    with pytest.raises(QueryError, match="fifth term, the operation, is true or false, not 3"):
        d.q('[:find ?n :where [?e :name ?n _ 3]]')
