"""The change stream as a Spark user runs it: Structured Streaming over a directory.

Change files arrive in a directory; every micro-batch's view change lands in a Parquet
sink exactly once, across crashes and restarts from the checkpoint. Each test checks the
sink tick by tick against the in-process engine (``Graph`` with a view), fed the same
ticks. The ticks never change one edge twice, so the engine's rule (a tick's deletes
after its inserts) and the stream's (the last line about an edge wins) agree. Skipped
without pyspark or Java, through the shared session fixture.
"""

import os
import shutil

import numpy as np
import pytest
from spark_session import spark  # noqa: F401  (the session fixture)

from queries.graph import Graph
from queries.graphio import generate_power_law
from queries.patterns import cycle, triangle
from queries.spark.hypercube import JoinQuery
from wcoj.errors import InputError

pytestmark = pytest.mark.spark


def _graph(directed=False):
    edges = generate_power_law(150, seed=3, avg_degree=6)
    if directed:  # both directions of some edges, so 3-cycles and 2-way arcs exist
        edges = np.concatenate([edges, edges[::3, ::-1]])
    return edges


def _ticks(edges, n_files, per_file=2, seed=11, directed=False):
    """Per file, its ticks ``(tick, inserts, deletes)``: 6 inserts and 3 deletes each, no
    edge twice in a tick."""
    rng = np.random.default_rng(seed)
    n = int(edges.max()) + 1
    key = (lambda e: tuple(e)) if directed else (lambda e: tuple(sorted(e)))
    current = {key(e) for e in edges.tolist() if e[0] != e[1]}
    files = []
    for f in range(n_files):
        ticks = []
        for t in range(per_file):
            dels = [list(e) for e in sorted(current)]
            dels = [dels[i] for i in rng.choice(len(dels), 3, replace=False)]
            ins = [e for e in rng.integers(0, n, (12, 2)).tolist()
                   if e[0] != e[1] and key(e) not in {key(d) for d in dels}]
            ins = list({key(e): e for e in ins}.values())[:6]
            ticks.append((f * per_file + t, np.array(ins), np.array(dels)))
            current |= {key(e) for e in ins}
            current -= {key(e) for e in dels}
        files.append(ticks)
    return files


def _text(ticks):
    lines = ["# tick op src dst"]
    for tick, ins, dels in ticks:
        lines += [f"{tick} + {a} {b}" for a, b in ins.tolist()]
        lines += [f"{tick} - {a} {b}" for a, b in dels.tolist()]
    return "\n".join(lines) + "\n"


def _arrive(folder, i, ticks):
    """Write file ``i`` atomically (rename), with a modification time that orders it."""
    path = folder / f"changes-{i:03d}.txt"
    tmp = folder.parent / f".{path.name}"
    tmp.write_text(_text(ticks))
    os.utime(tmp, (1_000_000 + i, 1_000_000 + i))
    os.replace(tmp, path)
    return path


def _engine(edges, files, pattern, directed=False):
    """The engine's change per tick, and its final count."""
    g = Graph(directed=directed)
    g.load_edges(edges)
    view = g.view(pattern)
    want = []
    for ticks in files:
        for tick, ins, dels in ticks:
            want.append((tick, g.apply(inserts=ins, deletes=dels).changes[view.name].to_dict()))
    return want, view.count, g


def _sink(out, pattern):
    from queries.spark.stream import read_changes_sink

    return [(tick, rows) for _, tick, rows in read_changes_sink(out, pattern.output)]


def _stream(spark, edges, changes, out, pattern=None, **kw):
    from queries.spark.hypercube import frame_of
    from queries.spark.stream import ChangeStream

    pattern = pattern or triangle()
    return ChangeStream(spark, JoinQuery.from_pattern(pattern), frame_of(spark, edges),
                        changes, out, **kw)


def test_three_arriving_files_integrate_to_the_engine(spark, tmp_path):
    edges = _graph()
    files = _ticks(edges, 3)
    (tmp_path / "in").mkdir()
    cs = _stream(spark, edges, tmp_path / "in", tmp_path / "out")
    start = cs.view.count
    query = cs.start()
    try:
        for i, ticks in enumerate(files):  # each file arrives while the query runs
            _arrive(tmp_path / "in", i, ticks)
            query.processAllAvailable()
    finally:
        query.stop()
        cs.close()
    want, final, _ = _engine(edges, files, triangle())
    got = _sink(tmp_path / "out", triangle())
    assert got == want
    assert start + sum(sum(rows.values()) for _, rows in got) == final
    assert [b["ticks"] for b in cs.batches] == [[0, 1], [2, 3], [4, 5]]


def test_restart_from_the_checkpoint_neither_loses_nor_repeats_a_tick(spark, tmp_path):
    from queries.spark.stream import SinkCrash

    edges = _graph()
    files = _ticks(edges, 3, seed=5)
    (tmp_path / "in").mkdir()
    for i in range(2):
        _arrive(tmp_path / "in", i, files[i])
    # batch 1 is written and committed by us, then the process dies before Spark commits
    cs = _stream(spark, edges, tmp_path / "in", tmp_path / "out", crash_after=("commit", 1))
    with pytest.raises(SinkCrash):
        cs.run_available()
    cs.close()
    assert sorted(os.listdir(tmp_path / "out" / "_checkpoint" / "commits")) == [".0.crc", "0"]
    _arrive(tmp_path / "in", 2, files[2])
    cs = _stream(spark, edges, tmp_path / "in", tmp_path / "out")
    try:
        runs = cs.run_available()
    finally:
        cs.close()
    assert [b["batch_id"] for b in runs] == [1, 2] and runs[0]["skipped"]  # 1 ran again
    want, final, _ = _engine(edges, files, triangle())
    assert _sink(tmp_path / "out", triangle()) == want  # every tick once, in order
    assert cs.view.count == final
    shutil.rmtree(tmp_path / "out" / "_checkpoint")  # batch ids would start again at 0
    with pytest.raises(InputError, match="checkpoint .* is gone"):
        _stream(spark, edges, tmp_path / "in", tmp_path / "out")


def test_directed_3_cycles_through_the_command(spark, tmp_path, capsys):
    """``wcoj spark stream --directed``: a crash between the sink's two writes first."""
    import json

    from queries.spark.cli import main
    from queries.spark.stream import SinkCrash

    edges = _graph(directed=True)
    files = _ticks(edges, 2, seed=3, directed=True)
    (tmp_path / "in").mkdir()
    (tmp_path / "g.txt").write_text("".join(f"{a} {b}\n" for a, b in edges.tolist()))
    for i, ticks in enumerate(files):
        _arrive(tmp_path / "in", i, ticks)
    pattern = cycle(3)
    cs = _stream(spark, edges, tmp_path / "in", tmp_path / "out", pattern=pattern,
                 directed=True, crash_after=("edges", 0))
    with pytest.raises(SinkCrash):
        cs.run_available()
    cs.close()
    assert os.listdir(tmp_path / "out" / "edges") == ["batch_id=0"]  # no commit point
    args = ["stream", "--graph", str(tmp_path / "g.txt"), "--directed", "--pattern", "3-cycle",
            "--changes", str(tmp_path / "in"), "--out", str(tmp_path / "out"),
            "--available-now", "--quiet"]
    assert main(args) == 0
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    want, final, _ = _engine(edges, files, pattern, directed=True)
    assert [d["ticks"] for d in lines] == [[0, 1], [2, 3]] and lines[-1]["count"] == final
    assert _sink(tmp_path / "out", pattern) == want
    assert any(rows for _, rows in want)  # some tick closed or opened a 3-cycle


def test_a_malformed_line_fails_its_batch_and_keeps_the_checkpoint(spark, tmp_path):
    edges = _graph()
    files = _ticks(edges, 2, seed=9)
    (tmp_path / "in").mkdir()
    _arrive(tmp_path / "in", 0, files[0])
    bad = _arrive(tmp_path / "in", 1, files[1])
    good = bad.read_text()
    lines = good.splitlines()
    lines[3] = lines[3].replace(" + ", " ? ").replace(" - ", " ? ")
    bad.write_text("\n".join(lines) + "\n")
    os.utime(bad, (1_000_001, 1_000_001))
    cs = _stream(spark, edges, tmp_path / "in", tmp_path / "out")
    with pytest.raises(InputError, match=rf"{bad.name}:4: expected op"):
        cs.run_available()
    for sink in ("changes", "edges"):
        assert sorted(os.listdir(tmp_path / "out" / sink)) == ["batch_id=0"]
    assert sorted(os.listdir(tmp_path / "out" / "_checkpoint" / "commits")) == [".0.crc", "0"]
    assert cs.failed is None and cs.view.count == cs.view.view.total()  # state untouched
    bad.write_text(good)  # fixed: the same batch runs again, on the same state
    assert [b["batch_id"] for b in cs.run_available()] == [1]
    cs.close()
    want, _, _ = _engine(edges, files, triangle())
    assert _sink(tmp_path / "out", triangle()) == want


def test_a_missing_source_fails_before_any_job(spark, tmp_path):
    tracker = spark.sparkContext.statusTracker()
    before = tracker.getJobIdsForGroup()
    with pytest.raises(InputError, match="no such directory"):
        _stream(spark, _graph(), tmp_path / "nowhere", tmp_path / "out")
    (tmp_path / "file.txt").write_text("0 + 1 2\n")
    with pytest.raises(InputError, match="not a directory"):
        _stream(spark, _graph(), tmp_path / "file.txt", tmp_path / "out")
    assert tracker.getJobIdsForGroup() == before


def _brute(facts, attrs=("follows", "likes")):
    """follows(a, b) likes(b, x) likes(a, x), a != b over a set of (e, a, v)."""
    f = {(e, v) for e, a, v in facts if a == attrs[0]}
    likes = {(e, v) for e, a, v in facts if a == attrs[1]}
    return {(a, b, x) for a, b in f if a != b for b2, x in likes if b2 == b and (a, x) in likes}


def test_datom_stream_of_a_conjunctive_query_through_the_command(spark, tmp_path, capsys):
    """``--kind datoms --query``: set semantics per datom, other attributes ignored; each
    tick's sink rows equal the difference of two brute-force answers."""
    import json

    from queries.spark.cli import main

    rng = np.random.default_rng(4)
    people, items = range(12), range(100, 106)
    facts = {(int(e), "follows", int(v)) for e, v in rng.integers(0, 12, (30, 2))}
    facts |= {(int(e), "likes", int(v)) for e, v in zip(rng.integers(0, 12, 25),
                                                          rng.integers(100, 106, 25))}
    (tmp_path / "base.csv").write_text("e,a,v\n" + "".join(f"{e},{a},{v}\n" for e, a, v in
                                                           sorted(facts)))
    (tmp_path / "in").mkdir()
    current, want, tick = set(facts), [], 0
    for f in range(2):
        lines = ["# tick op e a v"]
        for _ in range(2):
            before = _brute(current)
            ops = []
            for _ in range(8):
                a = ["follows", "likes", "name"][rng.integers(0, 3)]
                e = int(rng.choice(people))
                v = int(rng.choice(people if a == "follows" else items))
                ops.append(("+" if rng.random() < 0.6 else ":db/retract", e, a, v))
            last = {}
            for op, e, a, v in ops:  # the last change of a datom in a tick wins
                last[(e, a, v)] = op
                lines.append(f"{tick} {op} {e} {a} {v}")
            for key, op in last.items():
                if key[1] != "name":
                    (current.add if op == "+" else current.discard)(key)
            after = _brute(current)
            want.append((tick, {**{r: 1 for r in after - before},
                                **{r: -1 for r in before - after}}))
            tick += 1
        (tmp_path / "in" / f"d{f}.txt").write_text("\n".join(lines) + "\n")
        os.utime(tmp_path / "in" / f"d{f}.txt", (1_000_000 + f, 1_000_000 + f))
    query = "follows(a, b) likes(b, x) likes(a, x) a != b"
    assert main(["stream", "--kind", "datoms", "--query", query, "--datoms",
                 str(tmp_path / "base.csv"), "--changes", str(tmp_path / "in"), "--out",
                 str(tmp_path / "out"), "--available-now", "--quiet"]) == 0
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert [d["ticks"] for d in lines] == [[0, 1], [2, 3]]
    assert lines[-1]["count"] == len(_brute(current))
    from queries.spark.stream import read_changes_sink

    got = [(t, rows) for _, t, rows in read_changes_sink(tmp_path / "out", ("a", "b", "x"))]
    assert got == want and any(rows for _, rows in want)
