"""The graph API: set semantics of ticks, views maintained after every tick (against a
fresh graph and brute force), each tick's changes, and failed ticks that change nothing."""

import numpy as np
import pytest
import reference_joins as ref
from hypothesis import given
from hypothesis import strategies as st

from indexes import transaction
from queries.graph import Graph, as_edge_array
from queries.patterns import conjunctive, cycle
from wcoj import config
from wcoj.errors import InputError, WeightOverflowError
from wcoj.zset import ZSet

I64 = np.int64
nodes = st.integers(0, 6)
graphs = st.frozensets(st.tuples(nodes, nodes), max_size=14)


def arr(edges) -> np.ndarray:
    return np.array(sorted(edges), dtype=I64).reshape(-1, 2)


def edge_set(g: Graph) -> set:
    return {tuple(e) for e in g.edges().tolist()}


def target_edges(snapshot, directed):
    return ref.simple_directed(snapshot) if directed else ref.simple_undirected(snapshot)


VIEWS = {False: ("triangle", "4-cycle", "4-clique", "5-cycle", "3-cycle"),
         True: ("3-cycle", "directed-4-cycle", "triangle", "4-cycle")}
ORACLES = {
    "triangle": lambda e, d: ref.triangles(e),
    "4-cycle": lambda e, d: ref.undirected_cycles(e, 4),
    "5-cycle": lambda e, d: ref.undirected_cycles(e, 5),
    "4-clique": lambda e, d: ref.cliques(e, 4),
    "3-cycle": lambda e, d: ref.directed_cycles(e if d else e | {(v, u) for u, v in e}, 3),
    "directed-4-cycle": lambda e, d: ref.directed_cycles(e, 4),
}


ROUTES = {  # config values that send ticks down each route of Graph.apply
    "change by change": {},
    "staged": {"CHANGE_ROWS": 0},
    "staged on three threads": {"CHANGE_ROWS": 0, "DELTA_SHARE_ROWS": 1, "THREADS": 3},
    "tries that grow often": {"SLACK": 0, "GROWTH": 1.0},
}


def snapshot_state(g: Graph):
    """Everything a failed tick must leave alone."""
    runs = {(n, cols): [idx.trie.to_zset()]
            for n, rel in g.relations.items() for cols, idx in rel.indexes.items()}
    staged = {(n, cols): idx.staged for n, rel in g.relations.items() for cols, idx in rel.indexes.items()}
    return (runs, staged, edge_set(g), {k: v.count for k, v in g.views.items()},
            {k: v.last_change for k, v in g.views.items()}, g.n_ticks,
            {n: rel.delta for n, rel in g.relations.items()})


# ------------------------------------------------------------------ set semantics
def test_set_semantics_undirected():
    g = Graph()
    g.load_edges(np.array([[1, 2], [2, 1], [1, 1], [2, 3]]))          # duplicate and self-loop dropped
    assert edge_set(g) == {(1, 2), (2, 3)} and g.n_edges == 2
    tri = g.view("triangle")
    t = g.apply(inserts=np.array([[2, 1], [4, 4]]))                    # existing (reversed) and self-loop
    assert len(t.edge_delta) == 0 and t.changes["triangle"].to_dict() == {} and g.n_edges == 2
    t = g.apply(deletes=np.array([[5, 6], [3, 1]]))                    # missing edges
    assert len(t.edge_delta) == 0 and edge_set(g) == {(1, 2), (2, 3)}
    t = g.apply(inserts=np.array([[3, 1]]))
    assert len(t.edge_delta) and edge_set(g) == {(1, 2), (1, 3), (2, 3)}
    assert t.changes["triangle"].to_dict() == {(1, 2, 3): 1} and tri.count == 1
    # insert and delete of the same edge in one tick: the delete wins
    t = g.apply(inserts=np.array([[3, 4], [1, 2]]), deletes=np.array([[3, 4], [1, 2]]))
    assert edge_set(g) == {(1, 3), (2, 3)}
    assert t.changes["triangle"].to_dict() == {(1, 2, 3): -1} and tri.count == 0
    assert g.n_ticks == 4


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_set_semantics_hold_for_ids_too_large_to_pack(directed):
    """Node ids near 2**62 do not pack two to an int64: the tick sorts its edges another way."""
    big = 2**62 - 10
    g, small = Graph(directed=directed), Graph(directed=directed)
    g.load_edges(np.array([[big + 1, big + 2], [big + 2, big + 3]]))
    small.load_edges(np.array([[1, 2], [2, 3]]))
    ins, dels = np.array([[3, 1], [4, 4], [2, 1], [3, 4]]), np.array([[3, 4], [5, 6], [2, 3]])
    t, ts = g.apply(inserts=ins + big, deletes=dels + big), small.apply(inserts=ins, deletes=dels)
    assert {(u - big, v - big) for u, v in edge_set(g)} == edge_set(small)
    assert (t.edge_delta.keys - big).tolist() == ts.edge_delta.keys.tolist()
    assert t.edge_delta.weights.tolist() == ts.edge_delta.weights.tolist()


def test_insert_and_delete_of_one_edge_in_opposite_directions():
    """Regression (fixed in cc27d0b): the reversed copy of an insert used to come after the
    deletes, so D kept (2, 1) alone and O kept the edge."""
    g = Graph()
    g.load_edges(np.array([[1, 2]]))
    arcs = g.view(cycle(2), name="arcs")          # D(u, v) D(v, u): one row per undirected edge
    assert arcs.count == 1
    g.apply(inserts=np.array([[1, 2]]), deletes=np.array([[2, 1]]))
    assert (arcs.count, edge_set(g)) == (0, set())
    g.apply(inserts=np.array([[3, 4]]), deletes=np.array([[4, 3]]))
    assert (arcs.count, edge_set(g)) == (0, set())
    g.check_views()


# u - v - w over the undirected graph, each path once (u < w)
undirected_2_paths = conjunctive("2-paths", [("S", ("u", "v")), ("S", ("v", "w"))], [("<", "u", "w")],
                                 ["u", "v", "w"])


def test_set_semantics_directed():
    g = Graph(directed=True)
    g.load_edges(np.array([[1, 2], [2, 1], [2, 3]]))
    assert edge_set(g) == {(1, 2), (2, 1), (2, 3)} and g.n_edges == 3
    cyc, tri, path = g.view("3-cycle"), g.view("triangle"), g.view(undirected_2_paths, name="paths")
    assert path.result().to_dict() == {(1, 2, 3): 1}                     # 1 - 2 - 3 once
    t = g.apply(inserts=np.array([[3, 1]]))
    assert t.changes["3-cycle"].to_dict() == {(1, 2, 3): 1} and t.changes["triangle"].to_dict() == {(1, 2, 3): 1}
    # deleting one direction keeps the undirected edge while the other direction exists
    t = g.apply(deletes=np.array([[1, 2]]))
    assert t.changes["3-cycle"].to_dict() == {(1, 2, 3): -1} and t.changes["triangle"].to_dict() == {}
    assert t.changes["paths"].to_dict() == {}
    t = g.apply(deletes=np.array([[2, 1]]))
    assert t.changes["triangle"].to_dict() == {(1, 2, 3): -1}
    assert (cyc.count, tri.count) == (0, 0)


def test_load_edges_into_a_graph_with_views_is_a_tick():
    g = Graph()
    g.load_edges(np.array([[1, 2], [1, 3]]))
    v = g.view("triangle")
    g.load_edges(np.array([[2, 3]]))
    assert v.count == 1 and g.n_ticks == 1
    assert g.count("triangle") == 1 and list(g.views) == ["triangle"]   # count registers nothing


def test_a_repeated_count_reads_the_graph_as_it_is_now():
    """``count`` keeps the pattern's plan, not its answer: after each tick it counts again."""
    g = Graph()
    g.load_edges(np.array([[1, 2], [1, 3], [2, 4]]))
    assert (g.count("triangle"), g.count("4-cycle")) == (0, 0)
    g.apply(inserts=np.array([[2, 3], [3, 4]]))
    assert (g.count("triangle"), g.count("4-cycle")) == (2, 1)
    g.apply(deletes=np.array([[3, 2]]))
    assert (g.count("triangle"), g.count("4-cycle")) == (0, 1)
    assert list(g.views) == []


def test_view_is_registered_once_and_can_be_renamed():
    g = Graph()
    g.load_edges(np.array([[1, 2], [2, 3], [1, 3]]))
    a = g.view("triangle")
    assert g.view("triangle") is a
    b = g.view("triangle", name="again")
    assert b is not a and b.count == a.count == 1
    assert repr(a) == "GraphView('triangle', count=1)"


# ------------------------------------------------------------------ maintained views
def tick_lists(snapshot_before, snapshot_after, noise, directed, flip):
    """Inserts and deletes that move the graph between two snapshots, with noise that set
    semantics must ignore: re-inserts of present edges, deletes of absent ones, self-loops,
    reversed duplicates, and edges both inserted and deleted (absent afterwards)."""
    before, after = target_edges(snapshot_before, directed), target_edges(snapshot_after, directed)
    ins = sorted(after - before) + sorted(after & before)[:2]
    dels = sorted(before - after)
    both = [e for e in noise if e[0] != e[1] and
            (e not in after if directed else (min(e), max(e)) not in after)]
    absent = [e for e in noise if (e not in after and e not in before) and
              (directed or (min(e), max(e)) not in after | before)]
    ins += both + [(3, 3)]
    dels += both + absent
    if not directed and flip:   # undirected: (v, u) names the same edge, also across the two lists
        ins = [(v, u) for u, v in ins]
    return arr(ins), arr(dels)


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@given(ticks=st.lists(st.tuples(graphs, graphs, st.booleans()), min_size=1, max_size=4), initial=graphs)
def test_views_equal_a_fresh_graph_after_every_tick(directed, route, ticks, initial):
    with pytest.MonkeyPatch.context() as mp:
        for name, value in ROUTES[route].items():
            mp.setattr(config, name, value)
        _views_equal_a_fresh_graph(directed, ticks, initial)


def _views_equal_a_fresh_graph(directed, ticks, initial):
    g = Graph(directed=directed)
    g.load_edges(arr(initial))
    views = {name: g.view(name) for name in VIEWS[directed]}
    prev = initial
    for snap, noise, flip in ticks:
        before = {name: v.result().to_dict() for name, v in views.items()}
        ins, dels = tick_lists(prev, snap, noise, directed, flip)
        tick = g.apply(inserts=ins, deletes=dels)
        want_edges = target_edges(snap, directed)
        assert edge_set(g) == want_edges and g.n_edges == len(want_edges)
        fresh = Graph(directed=directed)
        fresh.load_edges(g.edges())
        for name, v in views.items():
            key = next(k for k, x in g.views.items() if x is v)   # the key of Tick.changes
            after = v.result().to_dict()
            assert after == {r: 1 for r in sorted(ORACLES[name](want_edges, directed))}
            assert v.count == fresh.count(name) == len(after)
            assert tick.changes[key].to_dict() == ref.zdiff(after, before[name])
            assert v.last_change is tick.changes[key]
        g.check_views()
        prev = snap


@pytest.mark.parametrize("growth", ["as usual", "often"])
@pytest.mark.parametrize("pattern", ["triangle", "4-clique", "4-cycle", "3-cycle"])
@given(ticks=st.lists(st.tuples(graphs, graphs, st.booleans()), min_size=1, max_size=5), initial=graphs)
def test_both_routes_equal_brute_force_and_each_other(pattern, growth, ticks, initial):
    """Two graphs get the same ticks, one change by change, its twin staged; after every
    tick the views, changes and indexes equal each other and the oracle. With tries that
    grow by exactly what they need and buffers of one row, ticks stop for room in a trie
    or for the views' rows and resume in the middle, the rows before kept."""
    with pytest.MonkeyPatch.context() as mp:
        if growth == "often":
            mp.setattr(config, "SLACK", 0)
            mp.setattr(config, "GROWTH", 1.0)
            mp.setattr(transaction, "KEEP_ROWS", 1)
        _both_routes(pattern, ticks, initial)


def _both_routes(pattern, ticks, initial):
    g, twin = Graph(), Graph()
    for x in (g, twin):
        x.load_edges(arr(initial))
    v, tv = g.view(pattern), twin.view(pattern)
    oracle = {"triangle": ref.triangles, "4-clique": lambda e: ref.cliques(e, 4),
              "4-cycle": lambda e: ref.undirected_cycles(e, 4),
              "3-cycle": lambda e: ref.directed_cycles(e | {(b, a) for a, b in e}, 3)}[pattern]
    prev = initial
    late = []  # each tick's edge delta is read after the last tick: nothing it is made from was reused
    for snap, noise, flip in ticks:
        ins, dels = tick_lists(prev, snap, noise, False, flip)
        before = v.result().to_dict()
        n = g.n_change_ticks
        tick = g.apply(inserts=ins, deletes=dels)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(config, "CHANGE_ROWS", 0)
            ttick = twin.apply(inserts=ins, deletes=dels)
        assert g.n_change_ticks == n + 1
        want = target_edges(snap, False)
        after = v.result().to_dict()
        assert after == {r: 1 for r in sorted(oracle(want))} and v.count == tv.count == len(after)
        assert tick.changes[pattern].to_dict() == ref.zdiff(after, before) == ttick.changes[pattern].to_dict()
        late.append((tick, ttick.edge_delta.to_dict()))
        assert edge_set(g) == want
        for name, rel in g.relations.items():
            for cols, idx in rel.indexes.items():
                assert idx.trie.to_zset() == twin.relations[name].indexes[cols].trie.to_zset()
        g.check_views()
        prev = snap
    assert twin.n_change_ticks == 0
    assert [t.edge_delta.to_dict() for t, _ in late] == [want for _, want in late]


def test_change_by_change_tick_edge_cases():
    g = Graph()
    g.load_edges(np.array([[1, 2], [2, 3]]))
    tri = g.view("triangle")
    t = g.apply(inserts=np.array([[2, 1]]), deletes=np.array([[5, 6]]))   # changes no edge
    assert len(t.edge_delta) == 0 and len(t.changes["triangle"]) == 0 and g.n_change_ticks == 1
    t = g.apply(inserts=np.array([[1, 3]]))
    assert t.changes["triangle"].to_dict() == {(1, 2, 3): 1}
    t = g.apply(deletes=np.array([[1, 2], [2, 3], [3, 1]]))               # empties the graph
    assert t.changes["triangle"].to_dict() == {(1, 2, 3): -1}
    assert g.n_edges == 0 and tri.count == 0
    t = g.apply(inserts=np.array([[4, 5], [5, 6], [4, 6]]))
    assert t.changes["triangle"].to_dict() == {(4, 5, 6): 1}
    t = g.apply(inserts=np.array([[7, 8], [8, 9], [7, 9]]), deletes=np.array([[9, 7]]))  # inserted and deleted
    assert t.changes["triangle"].to_dict() == {} and t.edge_delta.to_dict() == {(7, 8): 1, (8, 9): 1}
    t = g.apply(inserts=np.arange(600).reshape(-1, 2) + 10)
    assert g.n_edges == 305 and g.n_change_ticks == 6
    g.apply(inserts=np.array([[5, 7], [6, 7], [4, 7]]))
    assert tri.count == 4
    g.check_views()


def test_a_change_by_change_tick_that_overflows_changes_nothing():
    big = 2**62
    g = Graph()
    g.load_edges(np.array([[1, 2], [1, 3], [5, 6]]))
    g.relations["O"].load(ZSet.from_dict({(1, 2): big, (1, 3): big, (5, 6): 1}))
    tri = g.view("triangle")
    state = snapshot_state(g)
    with pytest.raises(WeightOverflowError):
        g.apply(inserts=np.array([[6, 7], [2, 3]]))                        # closes 1-2-3: big * big
    assert_same_state(state, snapshot_state(g))
    assert tri.count == 0 and g.n_change_ticks == 0
    t = g.apply(inserts=np.array([[6, 7]]))
    assert g.n_change_ticks == 1 and t.changes["triangle"].to_dict() == {}
    assert g.relations["O"].contents().to_dict() == {(1, 2): big, (1, 3): big, (5, 6): 1, (6, 7): 1}


@pytest.mark.parametrize("fails", ["bad id", "overflow", "none"])
def test_a_large_tick_gives_back_the_buffers_it_grew(monkeypatch, fails):
    """A tick larger than the buffers a plan keeps grows them for itself; they shrink back
    after it, whether it succeeds or raises (else one large failed tick would hold memory
    for good)."""
    monkeypatch.setattr(transaction, "KEEP_ROWS", 2)
    big = 2**62
    g = Graph()
    g.load_edges(np.array([[1, 2], [1, 3], [5, 6]]))
    if fails == "overflow":
        g.relations["O"].load(ZSet.from_dict({(1, 2): big, (1, 3): big, (5, 6): 1}))
    g.view("triangle")
    ins = np.array([[6, 7], [2, 3], [3, 4], [2, 4], [1, 4]] + ([[8, -1]] if fails == "bad id" else []))
    if fails == "none":
        assert len(g.apply(inserts=ins).changes["triangle"]) > 2
    else:
        with pytest.raises(WeightOverflowError if fails == "overflow" else InputError):
            g.apply(inserts=ins)
    plan = g._change_plan()
    assert len(plan._ch) <= 2 and len(plan._out) <= 2 and len(plan._res) <= 2
    g.check_views()


# ------------------------------------------------------------------ failed ticks
@pytest.mark.parametrize("inserts, deletes, match", [
    (np.array([[1, 2, 3]]), None, r"inserts must have shape \(m, 2\), got \(1, 3\)"),
    (np.array([1, 2]), None, r"got \(2,\)"),
    (np.array([[1.0, 2.0]]), None, "integer node ids, got dtype float64"),
    (np.array([[1, -5]]), None, "node id -5 in row 0"),
    (np.array([[0, 1], [2**62, 1]]), None, "node id 4611686018427387904 in row 1"),
    (np.array([[0, 1], [2**64 - 1, 1]], dtype=np.uint64), None, "node id 18446744073709551615 in row 1"),
    (np.array([[4, 5]]), np.array([[1, 2], [3, -1]]), "deletes: node id -1 in row 1"),
    (np.array([["a", "b"]]), None, "dtype <U1"),
])
def test_bad_input_raises_and_changes_nothing(inserts, deletes, match):
    g = Graph()
    g.load_edges(np.array([[1, 2], [1, 3], [2, 4]]))
    for name in ("triangle", "4-cycle", "3-cycle"):
        g.view(name)
    g.apply(inserts=np.array([[3, 4]]))
    state = snapshot_state(g)
    with pytest.raises(InputError, match=match):
        g.apply(inserts=inserts, deletes=deletes)
    assert_same_state(state, snapshot_state(g))
    g.check_views()
    g.apply(inserts=np.array([[2, 3]]))                                   # and the graph still works
    assert g.views["triangle"].count == 2


def assert_same_state(a, b):
    runs_a, staged_a, edges_a, counts_a, last_a, ticks_a, delta_a = a
    runs_b, staged_b, edges_b, counts_b, last_b, ticks_b, delta_b = b
    assert {k: runs_b[k] for k in runs_a} == runs_a
    for (n, cols), runs in runs_b.items():   # indexes built on demand during the failed tick
        if (n, cols) not in runs_a:
            natural = runs_a[(n, (0, 1))]
            assert ZSet.from_arrays(np.concatenate([z.keys for z in runs]).reshape(-1, 2),
                                    np.concatenate([z.weights for z in runs]), arity=2) == \
                ZSet.from_arrays(np.concatenate([z.keys[:, list(cols)] for z in natural]).reshape(-1, 2),
                                 np.concatenate([z.weights for z in natural]), arity=2)
    assert all(v is None for v in staged_b.values())
    assert (edges_a, counts_a, ticks_a) == (edges_b, counts_b, ticks_b)
    assert all(last_a[k] is last_b[k] for k in last_a)
    assert all(len(d) == 0 for d in delta_b.values())


def test_weight_overflow_rolls_the_tick_back():
    big = 2**62
    g = Graph()
    g.load_edges(np.array([[1, 2], [1, 3], [5, 6]]))
    # weights near 2**62 in O (never produced by the graph API itself) force the overflow
    g.relations["O"].load(ZSet.from_dict({(1, 2): big, (1, 3): big, (5, 6): 1}))
    tri, sq = g.view("triangle"), g.view("4-cycle")
    state = snapshot_state(g)
    with pytest.raises(WeightOverflowError):
        g.apply(inserts=np.array([[2, 3], [6, 7]]))                        # closes 1-2-3: big * big
    assert_same_state(state, snapshot_state(g))
    assert g.relations["O"].contents().to_dict() == {(1, 2): big, (1, 3): big, (5, 6): 1}
    assert (tri.count, sq.count) == (0, 0)
    t = g.apply(inserts=np.array([[6, 7]]))                                # a tick that fits still works
    assert edge_set(g) == {(1, 2), (1, 3), (5, 6), (6, 7)} and t.changes["triangle"].to_dict() == {}


def test_as_edge_array_accepts_any_integer_dtype_and_empty_input():
    assert as_edge_array([]).shape == (0, 2)
    assert as_edge_array(np.array([[1, 2]], dtype=np.uint8)).dtype == np.int64
    assert as_edge_array([[2**62 - 1, 0]]).tolist() == [[2**62 - 1, 0]]
    g = Graph()
    t = g.apply()
    assert len(t.edge_delta) == 0 and g.n_ticks == 1


@given(initial=graphs, updates=st.lists(st.tuples(st.booleans(), nodes, nodes), min_size=1, max_size=12))
def test_one_tick_equals_the_same_updates_one_at_a_time(initial, updates):
    """The sum of the per-update changes equals the change of one tick holding them all
    (set semantics: a later mention of an edge overrides an earlier one)."""
    one, many = Graph(), Graph()
    for g in (one, many):
        g.load_edges(arr(initial))
        g.view("triangle"), g.view("4-cycle")
    total = {"triangle": {}, "4-cycle": {}}
    for insert, u, v in updates:
        t = many.apply(**{("inserts" if insert else "deletes"): np.array([[u, v]])})
        for k in total:
            total[k] = ref.zadd(total[k], t.changes[k].to_dict())
    # one tick: keep only the last mention of each edge, since a tick's deletes apply after its inserts
    last = {}
    for insert, u, v in updates:
        last[(min(u, v), max(u, v))] = insert
    t = one.apply(inserts=arr([e for e, i in last.items() if i]), deletes=arr([e for e, i in last.items() if not i]))
    assert edge_set(one) == edge_set(many)
    for k in total:
        assert t.changes[k].to_dict() == total[k]
        assert one.views[k].count == many.views[k].count


def test_warm_up_runs_every_pattern_and_leaves_other_graphs_alone():
    from queries.graph import warm_up

    g = Graph()
    g.load_edges(np.array([[1, 2], [2, 3], [1, 3]]))
    tri = g.view("triangle")
    warm_up(("triangle", "4-cycle", "4-clique"), staged=True)   # checks its views against recomputation
    warm_up(("3-cycle",), directed=True, streams=False)
    assert (tri.count, g.n_edges, g.n_ticks) == (1, 3, 0)
    g.check_views()


@pytest.mark.parametrize("route", ["change by change", "staged"])
def test_every_form_of_apply_runs_the_tick_warm_up_compiled(monkeypatch, route):
    """``apply`` with inserts only, deletes only, a list or a read-only array calls the
    tick's kernels with the argument types of the form ``warm_up`` runs (both arrays):
    each other set of types would compile the tick again (2-3 s on a cold cache)."""
    from wcoj.kernels.tick import edge_changes

    if route == "staged":
        monkeypatch.setattr(config, "CHANGE_ROWS", 0)
    g = Graph()
    g.load_edges(np.array([[1, 2], [2, 3], [1, 3]]))
    g.view("triangle")
    g.apply(inserts=np.array([[3, 4]]), deletes=np.array([[1, 2]]))   # as warm_up does
    kernel = g._change_plan().kernels.run if route == "change by change" else edge_changes
    if not hasattr(kernel, "signatures"):
        pytest.skip("kernels run as Python (NUMBA_DISABLE_JIT)")
    before = set(kernel.signatures)
    frozen = np.array([[2, 4]])
    frozen.flags.writeable = False
    g.apply(inserts=np.array([[1, 2]]))
    g.apply(deletes=np.array([[3, 4]]))
    g.apply(inserts=frozen)
    g.apply(inserts=[(5, 6)], deletes=frozen)
    assert set(kernel.signatures) == before
    assert g.view("triangle").count == 1  # 1-2-3
    g.check_views()


@pytest.mark.parametrize("pattern", ["triangle", "4-cycle", "3-cycle"])
def test_a_view_builds_the_indexes_of_its_delta_terms_when_registered(pattern):
    g = Graph(directed=pattern == "3-cycle")
    g.load_edges(np.array([[1, 2], [2, 3], [3, 4], [4, 1], [1, 3]]))
    g.view(pattern)
    built = {n: sorted(r.indexes) for n, r in g.relations.items()}
    g.apply(inserts=np.array([[2, 4], [3, 1]]), deletes=np.array([[1, 2]]))
    assert {n: sorted(r.indexes) for n, r in g.relations.items()} == built
    g.check_views()


def test_settle_heap_hands_the_frozen_objects_back_at_exit():
    # An exit handler registered before settle_heap runs after its own (handlers run last
    # in, first out): by then nothing may be frozen, or the interpreter's last collection
    # never finalises those objects (DuckDB's bindings then report them as leaks).
    import subprocess
    import sys
    from pathlib import Path
    code = ("import atexit, gc\n"
            "atexit.register(lambda: print('frozen at exit', gc.get_freeze_count()))\n"
            "from queries.graph import settle_heap\n"
            "settle_heap(); settle_heap()\n"
            "print('frozen', gc.get_freeze_count() > 0)\n")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root).stdout
    assert out.split("\n")[:2] == ["frozen True", "frozen at exit 0"]


@pytest.mark.parametrize("route", ["change by change", "staged"])
def test_a_long_stream_of_small_ticks_on_tries_that_grow(monkeypatch, route):
    """Hundreds of small ticks on a graph of a few thousand edges whose tries grow by
    exactly what they need: every few ticks a level runs out of room (a tick stops and
    resumes, or a commit grows it) or compacts; the views must follow every change."""
    monkeypatch.setattr(config, "SLACK", 0)
    monkeypatch.setattr(config, "GROWTH", 1.0)
    if route == "staged":
        monkeypatch.setattr(config, "CHANGE_ROWS", 0)
    rng = np.random.default_rng(7)
    g = Graph()
    initial = rng.integers(0, 300, (3000, 2))
    g.load_edges(initial)
    want = ref.simple_undirected(initial.tolist())  # the edges, kept apart from the graph
    tri = g.view("triangle")
    versions = {cols: idx.trie.version for cols, idx in g.relations["O"].indexes.items()}
    for i in range(400):
        ins = rng.integers(0, 300, (int(rng.integers(1, 12)), 2))
        edges = g.edges()
        dels = edges[rng.integers(0, len(edges), int(rng.integers(0, 4)))]
        g.apply(inserts=ins, deletes=dels)
        want = (want | ref.simple_undirected(ins.tolist())) - ref.simple_undirected(dels.tolist())
        if i % 50 == 49:
            assert edge_set(g) == want
            assert tri.result().to_dict() == {t: 1 for t in ref.triangles(want)}
            g.check_views()
    grown = sum(idx.trie.version - versions[cols] for cols, idx in g.relations["O"].indexes.items())
    assert grown > 20 and g.n_change_ticks == (400 if route == "change by change" else 0)
    assert edge_set(g) == want
    g.check_views()
