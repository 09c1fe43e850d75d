"""Graph.apply_stream against Graph.apply tick by tick: the same changes, counts and state."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexes import transaction
from queries.graph import Graph, StreamError
from queries.patterns import conjunctive
from wcoj import config

PATTERNS = {
    "triangle": (False, ["triangle"]),
    "directed 3-cycle": (True, ["3-cycle"]),
    "4-cycle and triangle": (False, ["4-cycle", "triangle"]),
    "conjunctive": (True, [conjunctive("vee", [("D", ("a", "b")), ("D", ("a", "c")), ("S", ("b", "c"))],
                                       [("<", "b", "c")])]),
}

edge = st.tuples(st.integers(0, 9), st.integers(0, 9))
tick = st.tuples(st.lists(edge, max_size=8), st.lists(edge, max_size=6))


def make(kind):
    directed, views = PATTERNS[kind]
    g = Graph(directed=directed)
    for v in views:
        g.view(v)
    return g


def arr(edges):
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


def rows_of(ticks, first=0):
    rows = [(first + t, op, a, b) for t, (ins, dels) in enumerate(ticks)
            for op, es in ((1, ins), (-1, dels)) for a, b in es]
    return np.array(rows, dtype=np.int64).reshape(-1, 4)


def per_tick(g, ticks, ids):
    """apply() tick by tick: per view, its change rows as (tick, weight, keys...) and counts."""
    changes = {n: [] for n in g.views}
    counts = {n: [] for n in list(g.views) + ["edges", "edges changed"]}
    for t, (ins, dels) in zip(ids, ticks):
        tk = g.apply(arr(ins), arr(dels))
        for n, z in tk.changes.items():
            changes[n] += [(t, w, *k) for k, w in zip(z.keys.tolist(), z.weights.tolist())]
            counts[n].append(g.views[n].count)
        counts["edges"].append(g.n_edges)
        counts["edges changed"].append(len(tk.edge_delta))
    return changes, counts


def rows_from(result, name):
    cols = result.changes[name]
    keys = [c for c in cols if c not in ("tick", "weight")]
    return list(zip(cols["tick"].tolist(), cols["weight"].tolist(), *(cols[k].tolist() for k in keys)))


def assert_same(result, expected, g, ref):
    changes, counts = expected
    for n in g.views:
        assert sorted(rows_from(result, n)) == sorted(changes[n]), n
        assert result.counts[n].tolist() == counts[n], n
    assert result.counts["edges"].tolist() == counts["edges"]
    assert result.counts["edges changed"].tolist() == counts["edges changed"]
    assert np.array_equal(np.sort(g.edges(), axis=0), np.sort(ref.edges(), axis=0))
    g.check_views()


@pytest.mark.parametrize("kind", list(PATTERNS))
@settings(max_examples=25, deadline=None)
@given(ticks=st.lists(tick, max_size=12), initial=st.lists(edge, max_size=25))
def test_a_stream_equals_its_ticks_applied_one_by_one(kind, ticks, initial):
    g, ref = make(kind), make(kind)
    for x in (g, ref):
        x.load_edges(arr(initial))
    expected = per_tick(ref, ticks, range(len(ticks)))
    result = g.apply_stream(ticks)  # (inserts, deletes) pairs: empty ticks count too
    assert result.ticks.tolist() == list(range(len(ticks)))
    assert_same(result, expected, g, ref)


@settings(max_examples=20, deadline=None)
@given(ticks=st.lists(tick, min_size=1, max_size=15), chunk=st.integers(1, 7))
def test_rows_in_chunks_equal_one_array_and_ticks_split_across_chunks(ticks, chunk):
    rows = rows_of(ticks, first=100)
    a, b, ref = make("triangle"), make("triangle"), make("triangle")
    ids = sorted(set(rows[:, 0].tolist()))
    expected = per_tick(ref, [t for t in ticks if t[0] or t[1]], ids)
    whole = a.apply_stream(rows)
    parts = b.apply_stream(iter([rows[i:i + chunk] for i in range(0, len(rows), chunk)]))
    assert whole.ticks.tolist() == parts.ticks.tolist() == ids
    assert_same(whole, expected, a, ref)
    assert_same(parts, expected, b, ref)


def test_ticks_above_the_change_rows_limit_take_the_staged_route(monkeypatch):
    monkeypatch.setattr(config, "CHANGE_ROWS", 3)
    rng = np.random.default_rng(1)
    ticks = [(rng.integers(0, 30, (int(k), 2)).tolist(), rng.integers(0, 30, (int(k) // 2, 2)).tolist())
             for k in rng.integers(0, 9, 40)]
    g, ref = make("4-cycle and triangle"), make("4-cycle and triangle")
    expected = per_tick(ref, ticks, range(len(ticks)))
    assert_same(g.apply_stream(ticks), expected, g, ref)


def test_a_stream_with_growth_equals_its_ticks():
    rng = np.random.default_rng(2)
    ticks = [(rng.integers(0, 3000, (int(k), 2)).tolist(), rng.integers(0, 3000, (int(k) // 3, 2)).tolist())
             for k in rng.integers(1, 200, 300)]
    g, ref = make("triangle"), make("triangle")
    expected = per_tick(ref, ticks, range(len(ticks)))
    result = g.apply_stream(ticks)
    assert_same(result, expected, g, ref)
    assert len(result.tick_seconds) == len(ticks) and (result.tick_seconds > 0).all()


def test_a_dense_stream_stopping_for_room_and_rows_equals_its_ticks(monkeypatch):
    """Ticks of dozens of edges among 40 nodes change hundreds of 4-cycles each: the
    stream's kernel grows its rows' buffers mid-tick, and with tries that grow by exactly
    what they need a tick stops for room and is finished from Python with its rows so
    far (into buffers of one row, which grow again)."""
    monkeypatch.setattr(config, "SLACK", 0)
    monkeypatch.setattr(config, "GROWTH", 1.0)
    monkeypatch.setattr(transaction, "KEEP_ROWS", 1)
    rng = np.random.default_rng(3)
    ticks = [(rng.integers(0, 40, (int(k), 2)).tolist(), rng.integers(0, 40, (int(k) // 3, 2)).tolist())
             for k in rng.integers(1, 60, 60)]
    g, ref = make("4-cycle and triangle"), make("4-cycle and triangle")
    expected = per_tick(ref, ticks, range(len(ticks)))
    assert max(len(c) for c in expected[0].values()) > 64 * len(ticks)
    assert_same(g.apply_stream(ticks), expected, g, ref)


@pytest.mark.parametrize("bad,why", [
    ((3, 2, 1, 2), "op must be"),
    ((3, 1, -4, 2), r"node ids must be in \[0, 2\*\*62\)"),
    ((1, 1, 1, 2), "ticks must not go backwards"),
])
def test_a_bad_row_applies_the_ticks_before_it_and_nothing_of_its_own(bad, why):
    good = [([(1, 2), (2, 3)], []), ([(1, 3)], []), ([(3, 4)], [(1, 2)])]
    rows = rows_of(good)  # ticks 0, 1, 2
    tick3 = np.array([[3, 1, 4, 5], [3, 1, 5, 6]])
    stream = np.concatenate([rows, tick3[:1], np.array([bad]), tick3[1:]])
    g, ref = make("triangle"), make("triangle")
    expected = per_tick(ref, good, range(3))
    with pytest.raises(StreamError, match=why) as info:
        g.apply_stream(stream)
    assert info.value.row == len(rows) + 1
    assert f"stream row {len(rows) + 1}" in str(info.value)
    assert_same(info.value.done, expected, g, ref)  # tick 3's first row is not applied either


@pytest.mark.parametrize("tick, part, i", [(1, "deletes", 0), (1, "inserts", 1), (2, "deletes", 1)])
def test_a_bad_row_in_pairs_is_named_by_its_tick_and_place(tick, part, i):
    """A stream of (inserts, deletes) pairs names a bad row as the user wrote it, not by
    its position in the rows the pairs were flattened into."""
    good = [([(1, 2), (2, 3)], [(7, 8)]), ([(1, 3), (3, 4)], [(1, 2)]), ([(5, 6)], [(2, 3), (3, 4)])]
    pairs = [(list(ins), list(dels)) for ins, dels in good]
    pairs[tick][part == "deletes"][i] = (9, -1)
    g, ref = make("triangle"), make("triangle")
    expected = per_tick(ref, good[:tick], range(tick))
    with pytest.raises(StreamError, match=rf"^stream tick {tick}, {part}\[{i}\]: node ids") as info:
        g.apply_stream(pairs)
    assert info.value.row == (tick, part, i)
    assert_same(info.value.done, expected, g, ref)


def test_a_bad_row_in_a_later_chunk_keeps_the_chunks_before():
    g = make("triangle")
    chunks = [np.array([[0, 1, 1, 2], [0, 1, 2, 3]]), np.array([[1, 1, 1, 3]]), np.array([[2, 7, 1, 4]])]
    with pytest.raises(StreamError) as info:
        g.apply_stream(iter(chunks))
    assert info.value.done.ticks.tolist() == [0, 1]
    assert info.value.done.counts["triangle"].tolist() == [0, 1]
    assert g.views["triangle"].count == 1 and g.n_edges == 3


def test_wrong_shapes_and_types_are_typed_errors():
    g = make("triangle")
    with pytest.raises(StreamError.__mro__[1], match=r"\(n, 4\)"):
        g.apply_stream(np.zeros((3, 3), dtype=np.int64))
    with pytest.raises(StreamError.__mro__[1], match="integers"):
        g.apply_stream(np.zeros((3, 4)))
    with pytest.raises(StreamError.__mro__[1], match="stream is"):
        g.apply_stream(42)
    assert g.n_edges == 0


def test_frames_on_request():
    g = make("triangle")
    r = g.apply_stream([([(1, 2), (2, 3), (1, 3)], [])])
    pd = pytest.importorskip("pandas")
    df = r.frame("triangle")
    assert isinstance(df, pd.DataFrame) and list(df.columns) == ["tick", "weight", "a", "b", "c"]


def test_a_durable_graph_logs_every_tick_of_a_stream(tmp_path):
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(3)
    ticks = [(rng.integers(0, 20, (4, 2)).tolist(), rng.integers(0, 20, (2, 2)).tolist()) for _ in range(30)]
    ref = make("triangle")
    expected = per_tick(ref, ticks, range(len(ticks)))
    with Graph.open(tmp_path) as g:
        g.view("triangle")
        assert_same(g.apply_stream(ticks), expected, g, ref)
    with Graph.open(tmp_path) as again:
        assert again.views["triangle"].count == ref.views["triangle"].count
        assert np.array_equal(np.sort(again.edges(), axis=0), np.sort(ref.edges(), axis=0))


def test_a_failing_reader_keeps_the_ticks_it_delivered():
    from wcoj.errors import InputError

    def chunks():
        yield np.array([[0, 1, 1, 2], [0, 1, 2, 3], [1, 1, 1, 3]])
        raise InputError("changes.txt:4: expected 'TICK +|- SRC DST'")

    g = make("triangle")
    seen = []
    with pytest.raises(InputError, match="changes.txt:4"):
        for r in g.stream(chunks()):
            seen.append(r.ticks.tolist())
    assert seen == [[0, 1]] and g.views["triangle"].count == 1
