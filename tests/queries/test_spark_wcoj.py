"""Distributed WCOJ on Spark: HyperCube shares and routing, skew, counts, rows, per-tick deltas.

Shares, grids, numpy routing and change normalisation need no JVM. The Spark tests share one
session (:mod:`spark_session`) and tiny inputs: karate (``../shared/data/graphs``,
skipped when absent), a 150-edge power-law graph and a small two-attribute database.
Every distributed answer is checked against the in-process engine (``Graph``,
``generic_join``) and, for karate, networkx.
"""

import json

import networkx as nx
import numpy as np
import pytest
from spark_session import GRAPHS, spark  # noqa: F401  (the session fixture)

from indexes.trie import Trie, TrieView
from queries.graph import Graph
from queries.graphio import generate_power_law, read_edges
from queries.patterns import cycle, triangle
from queries.spark.cells import RoutePlan, xxhash64
from queries.spark.edgeset import normalise_changes
from queries.spark.hypercube import Grid, JoinQuery, compute_shares
from wcoj.errors import InputError, QueryError
from wcoj.generic_join import Atom, generic_join
from wcoj.zset import ZSet

PATTERNS = {"triangle": triangle(), "4-cycle": cycle(4, directed=False)}
DATOMIC = JoinQuery([("follows", ("a", "b")), ("likes", ("b", "x")), ("likes", ("a", "x"))])


# ---------------------------------------------------------------- no JVM needed
@pytest.mark.parametrize("n_cells", [1, 2, 7, 8, 16, 27])
@pytest.mark.parametrize("name", ["triangle", "4-cycle", "datomic"])
def test_shares_multiply_to_at_most_the_cells(name, n_cells):
    q = DATOMIC if name == "datomic" else JoinQuery.from_pattern(PATTERNS[name])
    shares = compute_shares(q, n_cells)
    assert set(shares) == set(q.variables) and min(shares.values()) >= 1
    assert Grid(shares).n_cells <= n_cells
    if name != "4-cycle" and round(n_cells ** (1 / 3)) ** 3 == n_cells:
        assert len(set(shares.values())) == 1  # symmetric queries: equal shares


def test_free_offsets_cover_every_cell_once_per_atom():
    grid = Grid({"a": 2, "b": 3, "c": 2})
    for bound in (["a", "b"], ["a", "c"], ["b", "c"], ["a"], []):
        fixed = {v: 1 for v in bound}
        cells = sorted(grid.cell(fixed) + o for o in grid.free_offsets(bound))
        want = [grid.cell({**fixed, **dict(zip([v for v in "abc" if v not in bound], combo))})
                for combo in np.ndindex(*[grid.shares[v] for v in "abc" if v not in bound])]
        assert cells == sorted(want) and len(set(cells)) == len(cells)


def test_queries_are_checked_at_the_door():
    with pytest.raises(QueryError, match="repeats inside one atom"):
        JoinQuery([("R", ("a", "a"))])
    with pytest.raises(QueryError, match="occur in no atom"):
        JoinQuery([("R", ("a", "b"))], filters=[("<", "a", "z")])
    with pytest.raises(QueryError, match="occur in no atom"):
        JoinQuery([("R", ("a", "b"))], output=("c",))
    with pytest.raises(InputError, match="positive"):
        Grid({"a": 0})


def test_changes_normalise_to_the_last_change_per_edge():
    k, ins = normalise_changes(np.array([[2, 1], [3, 4], [4, 3], [2, 3], [5, 5]]),
                               np.array([1, 1, -1, -1, 1]), directed=False)
    assert (k.tolist(), ins.tolist()) == ([[1, 2], [2, 3], [3, 4]], [True, False, False])
    k, ins = normalise_changes(np.array([[4, 3], [3, 4]]), np.array([1, -1]), directed=True)
    assert (k.tolist(), ins.tolist()) == ([[3, 4], [4, 3]], [False, True])  # two arcs


def _skewed(m=600):
    from benchmarks.bench_triangles import oriented, skewed

    return oriented(skewed(m))


def test_skew_residuals_find_each_result_once_and_spread_the_hub():
    """Every triangle of the skewed graph (a clique plus a star around a hub) has exactly
    one residual and cell whose atom rows all contain it; the hub's rows are spread."""
    edges = _skewed()
    hub = int(np.bincount(edges.ravel()).argmax())
    q = JoinQuery.from_pattern(triangle())
    g = Graph()
    g.load_edges(edges)
    want = set(g.view("triangle").result().to_dict())
    heavy = {v: [hub] for v in q.variables}
    hub_rows = {}
    for name, plan in (("plain", RoutePlan(q, n_cells=8)),
                       ("skew", RoutePlan(q, n_cells=8, heavy=heavy))):
        cells = [plan.route(i, edges) for i in range(3)]
        members = [set(zip(c.tolist(), map(tuple, edges[r].tolist()))) for c, r in cells]
        homes = {}
        for a, b, c in want:
            homes[(a, b, c)] = [cell for cell in range(plan.total_cells)
                                if (cell, (a, b)) in members[0] and (cell, (a, c)) in members[1]
                                and (cell, (b, c)) in members[2]]
        assert all(len(h) == 1 for h in homes.values()), name
        per_cell = np.zeros(plan.total_cells, np.int64)
        for c, r in cells:
            np.add.at(per_cell, c[np.any(edges[r] == hub, axis=1)], 1)
        hub_rows[name] = int(per_cell.max())
    degree = int(np.sum(edges == hub))
    assert hub_rows["skew"] < hub_rows["plain"] and hub_rows["skew"] <= degree // 2


# ---------------------------------------------------------------- helpers
def _frame(spark, keys, weights=None, names=("src", "dst")):
    from queries.spark.hypercube import frame_of

    return frame_of(spark, keys, weights, names)


def _relations(spark, edges):
    from queries.spark.hypercube import graph_relations

    return {k: v.cache() for k, v in graph_relations(_frame(spark, edges)).items()}


def _rows(df, columns):
    out = {}
    for r in df.collect():
        key = tuple(int(r[c]) for c in columns)
        out[key] = out.get(key, 0) + int(r["weight"])
    return {k: w for k, w in out.items() if w}


def _karate():
    path = GRAPHS / "karate.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return read_edges(path)


def _small_graph():
    return generate_power_law(150, seed=3, avg_degree=6)


# ---------------------------------------------------------------- batch
@pytest.mark.spark
@pytest.mark.parametrize("graph", ["karate", "power-law"])
def test_distributed_counts_equal_graph_and_networkx(spark, graph):
    from queries.spark.hypercube import hypercube_count

    edges = _karate() if graph == "karate" else _small_graph()
    rels = _relations(spark, edges)
    g = Graph()
    g.load_edges(edges)
    G = nx.Graph([(int(u), int(v)) for u, v in edges if u != v])
    want = {"triangle": sum(nx.triangles(G).values()) // 3,
            "4-cycle": sum(1 for c in nx.simple_cycles(G, length_bound=4) if len(c) == 4)}
    if graph == "karate":
        assert want["triangle"] == 45
    for name, pattern in PATTERNS.items():
        got = hypercube_count(JoinQuery.from_pattern(pattern), rels)
        assert got == g.count(pattern) == want[name], name


@pytest.mark.spark
def test_every_result_is_found_once_in_the_cell_of_its_buckets(spark):
    from pyspark.sql import functions as F

    from queries.spark.hypercube import bucket, hypercube_join, route

    edges = _small_graph()
    rels = _relations(spark, edges)
    q = JoinQuery.from_pattern(triangle())
    grid = Grid({"a": 2, "b": 3, "c": 2})
    # routing: atom i's tuple reaches exactly the cells whose coordinates are its buckets
    routed = route(q, rels, grid)
    coords = [(F.floor(F.col("cell") / grid.strides[v]) % grid.shares[v]) for v in "abc"]
    checks = []
    for i in range(3):
        vs = q.atom_variables(i)
        ok = F.lit(True)
        for j, v in enumerate(vs):
            ok = ok & (coords["abc".index(v)] == bucket(F.col(f"c{j}"), grid.shares[v]))
        checks.append((F.col("atom") == i) & ok)
    bad = routed.filter(~(checks[0] | checks[1] | checks[2])).count()
    per_tuple = routed.groupBy("atom", "c0", "c1").agg(F.countDistinct("cell").alias("n"),
                                                       F.count("*").alias("m"))
    fan = {(int(r["atom"]), int(r["n"]), int(r["m"])) for r in per_tuple.collect()}
    assert bad == 0
    assert fan == {(0, 2, 2), (1, 3, 3), (2, 2, 2)}  # replicated over the free coordinate only
    # results: each row once, in the cell of its own bucket tuple
    rows = hypercube_join(q, rels, shares=grid.shares, with_cell=True).cache()
    home = sum((bucket(F.col(v), grid.shares[v]) * grid.strides[v] for v in "abc"), F.lit(0))
    assert rows.filter(F.col("cell") != home).count() == 0
    got = _rows(rows, ["a", "b", "c"])
    g = Graph()
    g.load_edges(edges)
    assert rows.count() == len(got) and got == g.view("triangle").result().to_dict()


def _datomic_data(seed=5):
    rng = np.random.default_rng(seed)
    follows = np.unique(rng.integers(0, 25, size=(120, 2)), axis=0)
    follows = follows[follows[:, 0] != follows[:, 1]]
    likes = np.unique(np.column_stack([rng.integers(0, 25, 90), rng.integers(100, 112, 90)]),
                      axis=0)
    likes_w = rng.integers(1, 3, len(likes))  # weights multiply through the join
    return follows, likes, likes_w


def _in_process(atoms, data, output, filters=()):
    views = {name: TrieView([Trie.from_zset(ZSet.from_arrays(k, w, arity=2))])
             for name, (k, w) in data.items()}
    order = list(dict.fromkeys(v for _, vs in atoms for v in vs))
    return generic_join([Atom(views[r], vs) for r, vs in atoms], order, output,
                        filters=filters).to_dict()


@pytest.mark.spark
def test_two_attribute_pattern_rows_equal_generic_join(spark):
    from queries.spark.hypercube import hypercube_count, hypercube_join

    follows, likes, likes_w = _datomic_data()
    rels = {"follows": _frame(spark, follows, names=("e", "v")),
            "likes": _frame(spark, likes, likes_w, names=("e", "v"))}
    data = {"follows": (follows, None), "likes": (likes, likes_w)}
    want = _in_process(DATOMIC.atoms, data, ["a", "b", "x"])
    assert len(want) > 10
    assert _rows(hypercube_join(DATOMIC, rels), ["a", "b", "x"]) == want
    assert hypercube_count(DATOMIC, rels, n_cells=4) == sum(want.values())
    # a constant and a projection: who follows someone who likes item 105, and how often
    q = JoinQuery([("follows", ("a", "b")), ("likes", ("b", 105))], output=("a",))
    ref = {}
    for a, b in follows.tolist():
        w = int(likes_w[(likes[:, 0] == b) & (likes[:, 1] == 105)].sum())
        if w:
            ref[(a,)] = ref.get((a,), 0) + w
    assert _rows(hypercube_join(q, rels), ["a"]) == ref


# ---------------------------------------------------------------- deltas
@pytest.mark.spark
def test_numpy_buckets_equal_spark_xxhash64(spark):
    from pyspark.sql import functions as F

    values = np.array([0, 1, -1, 7, 2**40 + 3, -(2**62), 2**63 - 1], np.int64)
    df = _frame(spark, np.column_stack([values, values]))
    got = [int(r[0]) for r in df.select(F.xxhash64("src")).collect()]
    assert got == xxhash64(values).tolist()


def _ticks(edges, n_ticks, seed=7):
    """Ticks of 8 inserts (fresh edges over the same nodes) and 4 deletes of current edges."""
    rng = np.random.default_rng(seed)
    n = int(edges.max()) + 1
    current = {tuple(e) for e in np.sort(edges, axis=1).tolist()}
    out = []
    for _ in range(n_ticks):
        ins = rng.integers(0, n, size=(8, 2))
        dels = np.array(sorted(current))[rng.choice(len(current), 4, replace=False)]
        out.append((ins, dels))
        current |= {tuple(sorted(e)) for e in ins.tolist() if e[0] != e[1]}
        current -= {tuple(e) for e in dels.tolist()}
    return out


@pytest.mark.spark
@pytest.mark.parametrize("name", ["triangle", "4-cycle", "directed 3-cycle", "skewed"])
def test_distributed_deltas_integrate_to_recomputation(spark, name):
    """Set semantics and the delta rule on the executors, tick by tick and several ticks in
    one pass, against the in-process engine; compaction (every 2 ticks) in between."""
    from queries.spark.delta import GraphDelta

    directed = name.startswith("directed")
    pattern = cycle(3) if directed else PATTERNS.get(name, triangle())
    edges = _skewed(400) if name == "skewed" else _small_graph()
    heavy = "auto" if name == "skewed" else None
    g = Graph(directed=directed)
    g.load_edges(edges)
    view = g.view(pattern)
    dist = GraphDelta(JoinQuery.from_pattern(pattern), _frame(spark, edges), directed=directed,
                      heavy=heavy, compact_every=2)
    assert dist.count == view.count
    if name == "skewed":
        assert dist.view.plan.total_cells > dist.view.grid.n_cells  # the hub was found
    ticks = _ticks(edges, 4)
    changes = [(np.concatenate([i, d]), np.concatenate([np.ones(len(i)), -np.ones(len(d))])
                .astype(np.int64)) for i, d in ticks]
    try:
        got = dist.apply(changes[:1], count_only=True) + dist.apply(changes[1:3])
        got += dist.apply(changes[3:])
        for t, ((ins, dels), ((ek, ew), change)) in enumerate(zip(ticks, got)):
            tick = g.apply(inserts=ins, deletes=dels)
            want = tick.changes[view.name]
            if t == 0:
                assert change == want.total()
            else:
                rows = {tuple(r): w for r, w in zip(change[0].tolist(), change[1].tolist())}
                assert rows == want.to_dict(), f"tick {t}"
            assert {tuple(r): w for r, w in zip(ek.tolist(), ew.tolist())} == \
                tick.edge_delta.to_dict()
        assert dist.count == view.count
        dist.view.cells.state.adopt(wait=True)  # the background compaction started at tick 2
        assert dist.view.cells.state.n_compactions >= 1
        assert dist.view.total() == view.count == g.count(pattern)
        assert {tuple(e) for e in dist.edges.edges().tolist()} == \
            {tuple(e) for e in g.edges().tolist()}
    finally:
        dist.close()


@pytest.mark.spark
def test_skewed_count_with_heavy_hitters_equals_engine(spark):
    from queries.spark.cells import heavy_hitters
    from queries.spark.hypercube import hypercube_count

    edges = _skewed(3000)
    hub = int(np.bincount(edges.ravel()).argmax())
    rels = _relations(spark, edges)
    q = JoinQuery.from_pattern(triangle())
    heavy = heavy_hitters(q, rels, threshold=len(edges) // 8)
    assert {v: h.tolist() for v, h in heavy.items()} == {v: [hub] for v in "abc"}
    g = Graph()
    g.load_edges(edges)
    want = g.count("triangle")
    assert want > 0
    assert hypercube_count(q, rels, heavy=heavy) == hypercube_count(q, rels) == want


# ---------------------------------------------------------------- the command
@pytest.mark.spark
def test_count_and_stream_commands(spark, tmp_path, capsys):
    from queries.spark.cli import main

    edges = _small_graph()
    (tmp_path / "g.txt").write_text("".join(f"{a} {b}\n" for a, b in edges[:120].tolist()))
    rest = edges[120:]
    (tmp_path / "c.txt").write_text(
        "".join(f"0 + {a} {b}\n" for a, b in rest[:15].tolist())
        + "".join(f"1 - {a} {b}\n" for a, b in edges[:10].tolist())
        + "".join(f"1 + {a} {b}\n" for a, b in rest[15:].tolist()))
    g = Graph()
    g.load_edges(edges[:120])
    assert main(["count", "--graph", str(tmp_path / "g.txt"), "--pattern", "triangle",
                 "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == g.count("triangle") and out["cells"] <= 8
    assert main(["stream", "--graph", str(tmp_path / "g.txt"), "--changes",
                 str(tmp_path / "c.txt"), "--pattern", "4-cycle", "--quiet"]) == 0
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    view = g.view("4-cycle")
    g.apply(inserts=rest[:15])
    first = view.count
    g.apply(inserts=rest[15:], deletes=edges[:10])
    assert [(d["tick"], d["count"]) for d in lines] == [(0, first), (1, view.count)]
    assert set(lines[0]) == {"tick", "changes", "delta", "count", "seconds"}


@pytest.mark.spark
def test_count_command_with_skew_reads_the_ingest_statistics(spark, tmp_path, capsys):
    from queries.spark.cli import main
    from queries.spark.ingest import ingest_edges
    from queries.spark.loaders import load_dictionary, load_edges_parquet

    edges = _skewed(2000)
    (tmp_path / "g.txt").write_text("".join(f"{a} {b}\n" for a, b in edges.tolist()))
    ingest_edges(spark, [tmp_path / "g.txt"], tmp_path / "g")
    labels = load_dictionary(tmp_path / "g")["value"].astype(np.int64)
    hub_label = int(np.bincount(edges.ravel()).argmax())
    hub_id = int(np.flatnonzero(labels == hub_label)[0])
    assert main(["count", "--graph", str(tmp_path / "g"), "--pattern", "triangle",
                 "--skew"]) == 0
    captured = capsys.readouterr()
    g = Graph()
    g.load_edges(load_edges_parquet(tmp_path / "g"))
    assert json.loads(captured.out)["count"] == g.count("triangle")
    assert f"heavy vertices (own residual grids): [{hub_id}]" in captured.err
