"""Tests of the EDN reader and writer (queries/edn.py)."""

import math
import os
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexes.interner import FrozenMap
from queries.edn import (MAX_DEPTH, EdnList, Keyword, Symbol, Tagged, dumps, hashable, loads,
                         loads_all)
from wcoj.errors import EdnSyntaxError, InputError, QueryError

ROOT = Path(__file__).resolve().parents[2]
MOVIES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "movies"
UTC = timezone.utc


# ------------------------------------------------------------------ worked examples

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nil", None),
        ("true", True),
        ("false", False),
        ("42", 42),
        ("-7", -7),
        ("+7", 7),
        ("42N", 42),
        ("0", 0),
        ("1.5", 1.5),
        ("-2.5e3", -2500.0),
        ("1E-2", 0.01),
        ("1.", 1.0),
        ('"a\\"b\\\\c\\nd\\te\\rf"', 'a"b\\c\nd\te\rf'),
        ('"\\u00e9t\\u00E9"', "été"),
        ('"multi\nline"', "multi\nline"),
        ("\\c", "c"),
        ("\\newline", "\n"),
        ("\\space", " "),
        ("\\tab", "\t"),
        ("\\u0041", "A"),
        ("\\(", "("),
        ("[]", []),
        ("()", EdnList()),
        ("{}", {}),
        ("#{}", frozenset()),
        ("[1 [2 (3)]]", [1, [2, EdnList([3])]]),
        ("{:a 1, :b 2}", {":a": 1, ":b": 2}),
        ("{[1 2] :v}", {(1, 2): ":v"}),
        ("#{[1] [2]}", frozenset({(1,), (2,)})),
        ("[1 #_ 2 3]", [1, 3]),
        ("[1 #_ #_ 2 3 4]", [1, 4]),
        ("[1 ; comment ]\n 2]", [1, 2]),
        ("[1,2,,3]", [1, 2, 3]),
        ("##Inf", math.inf),
        ("##-Inf", -math.inf),
        ("'x", EdnList([Symbol("quote"), Symbol("x")])),  # Clojure's quote, for nested q
        ("['[1] a']", [EdnList([Symbol("quote"), [1]]), Symbol("a'")]),
        ("''x", EdnList([Symbol("quote"), EdnList([Symbol("quote"), Symbol("x")])])),
    ],
)
def test_loads_worked_examples(text, expected):
    value = loads(text)
    assert value == expected
    assert type(value) is type(expected)


def test_decimal_suffix_reads_decimal():
    assert loads("2.50M") == Decimal("2.50")
    assert isinstance(loads("1M"), Decimal)


def test_keyword_is_a_string_with_parts():
    k = loads(":movie/title")
    assert isinstance(k, Keyword) and isinstance(k, str)
    assert k == ":movie/title" and str(k) == ":movie/title"
    assert hash(k) == hash(":movie/title")
    assert {k: 1}[":movie/title"] == 1
    assert (k.namespace, k.name) == ("movie", "title")
    plain = loads(":trivia")
    assert (plain.namespace, plain.name) == (None, "trivia")
    assert loads(":db.install/_attribute").name == "_attribute"


@pytest.mark.parametrize("text", ["?x", "pull", "...", "_", "$", "$data", "%", "<", "re-find",
                                  "not=", "clojure.string/blank?", "/", "."])
def test_symbols(text):
    s = loads(text)
    assert type(s) is Symbol and s == text


def test_vector_and_list_are_told_apart():
    v, lst = loads("[1 2]"), loads("(1 2)")
    assert isinstance(v, list) and isinstance(lst, EdnList)
    assert v != lst
    assert hash(lst) == hash((1, 2))


def test_inst_reads_utc_datetime():
    assert loads('#inst "1985-04-12T23:20:50.52Z"') == datetime(
        1985, 4, 12, 23, 20, 50, 520000, tzinfo=UTC)
    assert loads('#inst "1954-08-16"') == datetime(1954, 8, 16, tzinfo=UTC)
    assert loads('#inst "1985-04-12T23:20:50-02:00"') == datetime(
        1985, 4, 13, 1, 20, 50, tzinfo=UTC)
    assert loads('#inst "1985-04-12T23:20:50.52Z"').tzinfo is UTC


def test_uuid_and_unknown_tags():
    u = "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
    assert loads(f'#uuid "{u}"') == uuid.UUID(u)
    assert loads("#db/id [:db.part/user -100]") == Tagged("db/id", [":db.part/user", -100])
    assert loads("#myapp/Person {:first \"Fred\"}") == Tagged("myapp/Person", {":first": "Fred"})


def test_tag_readers_override_builtins():
    readers = {"inst": str, "db/id": lambda v: ("tempid", v[-1])}
    assert loads('[#inst "1985" #db/id [:db.part/user -1]]', readers) == [
        "1985", ("tempid", -1)]


def test_byte_order_mark_is_whitespace():
    assert loads("\ufeff[1 2]") == [1, 2]


def test_loads_all_reads_every_form():
    assert loads_all("") == []
    assert loads_all(" 1 [2] ; three\n {:four 4} #_ 5") == [1, [2], {":four": 4}]


def test_tagged_values_hash_by_value():
    a, b = loads("[#db/id [:db.part/user -100] #db/id [:db.part/user -100]]")
    assert a == b and hash(a) == hash(b) and a is not b


def test_hashable_freezes_nested_values():
    assert hashable([1, {2: [3]}, {4}]) == (1, FrozenMap({2: (3,)}), frozenset({4}))
    assert isinstance(hashable({1: 2}), FrozenMap) and hash(hashable({1: [2]})) == hash(FrozenMap({1: (2,)}))


def test_dumps_worked_examples():
    value = [None, True, False, 1, -2.5, "q\"\n", Keyword(":a/b"), Symbol("?x"),
             EdnList([Symbol("f"), 1]), {Keyword(":k"): [1]}, frozenset({1}),
             Decimal("1.5"), datetime(2000, 1, 2, 3, 4, 5, tzinfo=UTC),
             uuid.UUID(int=1), Tagged("db/id", [Keyword(":db.part/user"), -1])]
    assert dumps(value) == (
        '[nil true false 1 -2.5 "q\\"\\n" :a/b ?x (f 1) {:k [1]} #{1} 1.5M '
        '#inst "2000-01-02T03:04:05Z" #uuid "00000000-0000-0000-0000-000000000001" '
        "#db/id [:db.part/user -1]]")
    assert loads(dumps(value)) == value


def test_dumps_writes_control_characters_as_unicode_escapes():
    assert dumps("a\x00b") == '"a\\u0000b"'
    assert loads(dumps("a\x00b\x7f")) == "a\x00b\x7f"


def test_dumps_rejects_objects_without_notation():
    with pytest.raises(InputError, match="cannot write object"):
        dumps([object()])


# ------------------------------------------------------------------ round trips

_atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.from_regex(r":[a-z][a-z0-9.\-]*(/[a-z_][a-z0-9\-?!*]*)?", fullmatch=True).map(Keyword),
    st.from_regex(r"[a-z?$%][a-z0-9\-?!*]*", fullmatch=True)
    .filter(lambda s: s not in ("nil", "true", "false")).map(Symbol),
    st.decimals(allow_nan=False, allow_infinity=False).map(lambda d: Decimal(str(d))),
    st.datetimes(timezones=st.just(UTC)),
    st.uuids(),
)
_hashables = st.recursive(_atoms, lambda inner: st.lists(inner, max_size=4).map(EdnList),
                          max_leaves=8)
_values = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(EdnList),
        st.dictionaries(_hashables, inner, max_size=4),
        st.frozensets(_hashables, max_size=4),
        st.builds(Tagged, st.sampled_from(["db/id", "my/tag"]), inner),
    ),
    max_leaves=25,
)


def _types(value):
    """The value's shape with types, so `[1]` and `(1)`, `"a"` and `a` differ."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_types(v) for v in value))
    if isinstance(value, dict):
        return ("dict", frozenset((_types(k), _types(v)) for k, v in value.items()))
    if isinstance(value, frozenset):
        return ("set", frozenset(_types(v) for v in value))
    if isinstance(value, Tagged):
        return ("tagged", value.tag, _types(value.value))
    return (type(value).__name__, value)


@given(_values)
def test_dumps_then_loads_round_trips(value):
    text = dumps(value)
    back = loads(text)
    assert back == value
    assert _types(back) == _types(value)
    assert dumps(back) == text


@given(st.lists(_values, max_size=5))
def test_loads_all_reads_back_concatenated_dumps(values):
    assert loads_all("\n".join(dumps(v) for v in values)) == values


@given(st.text())
def test_loads_raises_only_edn_syntax_errors(text):
    try:
        loads(text)
    except EdnSyntaxError as e:
        assert e.line >= 1 and e.column >= 1


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[:find ?e\n :where [?e :movie/title]] ]", r"unbalanced '\]' at line 2, column 28"),
        ('[1 "abc', r"unterminated string starting at line 1, column 4"),
        ("{:a 1 :b}", r"map literal needs an even number of forms, found 3 at line 1, column 1"),
        ("\n\n  [1 (2 3)",
         r"unexpected end of input, '\[' opened at line 3, column 3 is not closed"),
        ("(1 2]", r"mismatched '\]' \('\(' opened at line 1, column 1 needs '\)'\) at line 1,"),
        ("[1 2 007]", r"invalid number '007'; leading zeros are not allowed at line 1, column 6"),
        ("[12abc]", r"invalid number '12abc' at line 1, column 2"),
        ("0x1F", r"invalid number '0x1F'"),
        ('"bad \\q escape"', r"unknown escape '\\q' in string at line 1, column 6"),
        ("\\abc", r"unknown character literal '\\abc' at line 1, column 1"),
        ('[#inst "1985-13-01"]', r"bad #inst value \"1985-13-01\".* at line 1, column 2"),
        ('#inst "yesterday"', r"bad #inst value .*RFC 3339"),
        ("#inst 5", r"bad #inst value 5"),
        ('#uuid "nope"', r"bad #uuid value"),
        ("[1 #_]", r"'\]' where a form must follow #_ \(line 1, column 4\) at line 1, column 6"),
        ("#db/id", r"unexpected end of input: #db/id needs a form after it"),
        ("[1 ']", r"'\]' where a form must follow ' \(line 1, column 4\) at line 1, column 5"),
        ("'", r"unexpected end of input: ' needs a form after it"),
        ("::a", r"invalid keyword '::a'"),
        (":", r"invalid keyword ':'"),
        ("#1", r"invalid dispatch '#1'"),
        ("^meta", r"unexpected '\^meta'"),
        ("1 2", r"expected a single EDN form, found another one at line 1, column 3"),
        ("; only a comment", r"no EDN form in the input"),
        ("[1 \\", r"a lone '\\' is not a character literal at line 1, column 4"),
    ],
)
def test_syntax_errors_give_line_and_column(text, message):
    with pytest.raises(EdnSyntaxError, match=message):
        loads(text)


def test_syntax_error_keeps_its_pieces_as_attributes():
    text = "[:find ?e\n  :where [?e :a ?v]]]"
    with pytest.raises(EdnSyntaxError) as info:
        loads(text)
    err = info.value
    assert (err.line, err.column, err.text) == (2, 21, text)
    assert isinstance(err, QueryError) and isinstance(err, ValueError)


def test_unclosed_form_error_points_at_the_opener():
    with pytest.raises(EdnSyntaxError) as info:
        loads("[1\n {:a (2 }")
    assert str(info.value) == ("mismatched '}' ('(' opened at line 2, column 6 needs ')') "
                               "at line 2, column 9")
    with pytest.raises(EdnSyntaxError) as info:
        loads("[1\n {:a 2}")
    assert str(info.value) == "unexpected end of input, '[' opened at line 1, column 1 is not closed"
    assert (info.value.line, info.value.column) == (1, 1)


def test_loads_rejects_non_text():
    with pytest.raises(InputError, match="must be a str"):
        loads(b"[1]")


def test_nesting_up_to_max_depth_reads():
    value = loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert value == []
    assert loads("#_" * MAX_DEPTH + "0 " * MAX_DEPTH + "1") == 1


@pytest.mark.parametrize("opener", ["[", "(", "{", "#{", "#_", "#foo "])
def test_nesting_past_max_depth_is_a_syntax_error_at_its_offset(opener):
    text = "\n" + "[" * MAX_DEPTH + opener + "1" + "]" * (MAX_DEPTH + 1)
    with pytest.raises(EdnSyntaxError, match=f"nested more than {MAX_DEPTH} deep "
                       f"\\(offset {MAX_DEPTH + 1}\\) at line 2, column {MAX_DEPTH + 1}"):
        loads(text)


def test_hugely_nested_text_is_an_error_not_a_crash():
    # this text segfaulted CPython (a recursive hash of the nested lists in the set)
    code = ("from queries.edn import loads\n"
            "from wcoj.errors import EdnSyntaxError\n"
            "try:\n"
            "    loads('#{' + '(' * 200000 + ')' * 200000 + '}')\n"
            "except EdnSyntaxError as e:\n"
            "    print(type(e).__name__, e.line, e.column)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["EdnSyntaxError", "1", str(MAX_DEPTH + 2)]


def test_syntax_error_quotes_an_excerpt_of_a_huge_token():
    with pytest.raises(EdnSyntaxError, match="line 2, column 3") as info:
        loads("[1\n  " + "9" * 10**6 + "x]")
    assert len(str(info.value)) < 300
    assert "1000001 characters" in str(info.value)


# ------------------------------------------------------------------ the movie data

def _movie_file(name):
    path = MOVIES / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path.read_text(encoding="utf-8")


def test_movie_schema_installs_nine_attributes():
    schema = loads(_movie_file("schema.edn"))
    assert isinstance(schema, list) and len(schema) == 9
    idents = [entity[":db/ident"] for entity in schema]
    assert idents[:3] == [":movie/title", ":movie/year", ":movie/director"]
    assert all(isinstance(i, Keyword) for i in idents)
    for entity in schema:
        assert entity[":db.install/_attribute"] == ":db.part/db"
        assert entity[":db/id"] == Tagged("db/id", [":db.part/db"])
    types = {e[":db/ident"]: e[":db/valueType"] for e in schema}
    assert types[":person/born"] == ":db.type/instant"
    assert types[":movie/cast"] == ":db.type/ref"


def test_movie_data_is_one_transaction_with_tempids_and_dates():
    data = loads(_movie_file("data.edn"))
    assert isinstance(data, list) and len(data) == 70
    tempids = [e[":db/id"].value[1] for e in data]
    assert tempids == list(range(-100, -150, -1)) + list(range(-200, -220, -1))
    persons = [e for e in data if ":person/name" in e]
    movies = [e for e in data if ":movie/title" in e]
    assert (len(persons), len(movies)) == (50, 20)
    assert persons[0] == {":db/id": Tagged("db/id", [":db.part/user", -100]),
                          ":person/name": "James Cameron",
                          ":person/born": datetime(1954, 8, 16, tzinfo=UTC)}
    assert sum(":person/death" in p for p in persons) == 5
    assert sum(":person/born" not in p for p in persons) == 4
    assert sum(":movie/sequel" in m for m in movies) == 10
    assert sum(":trivia" in m for m in movies) == 1
    directors = {m[":movie/title"]: m[":movie/director"] for m in movies}
    assert isinstance(directors["Mad Max Beyond Thunderdome"], list)
    assert len(directors["Mad Max Beyond Thunderdome"]) == 2
    assert loads(dumps(data)) == data


def test_movie_data_with_a_tempid_reader():
    data = loads(_movie_file("data.edn"), {"db/id": lambda v: v[1]})
    assert data[0][":db/id"] == -100
    first_movie = next(e for e in data if ":movie/title" in e)
    assert first_movie[":movie/title"] == "The Terminator"
    assert first_movie[":movie/director"] == -100


def test_large_input_reads_in_one_pass():
    n = 20_000
    text = "[" + "\n".join(
        f'{{:db/id #db/id [:db.part/user -{i}] :person/name "P{i}" '
        f':person/born #inst "1954-08-16" :score {i}.5}}'
        for i in range(n)) + "]"
    data = loads(text)
    assert len(data) == n
    assert data[-1][":score"] == n - 0.5
    assert data[7][":person/born"] - data[8][":person/born"] == timedelta(0)
