"""The ``wcoj`` command through ``main([...])``: counts, streams checked against a fresh Graph, errors."""

import json

import numpy as np
import pytest

from queries.cli import main
from queries.graph import Graph
from queries.graphio import generate_changes, generate_power_law, write_changes


def _out(capsys):
    cap = capsys.readouterr()
    return cap.out, cap.err


@pytest.mark.parametrize("pattern, expected", [("triangle", 45), ("4-cycle", 154)])
def test_count_karate(shared_data, capsys, pattern, expected):
    karate = shared_data / "graphs" / "karate.txt.gz"
    assert main(["count", "--graph", str(karate), "--pattern", pattern]) == 0
    out, err = _out(capsys)
    assert out == f"{expected}\n"
    assert "s" in err and "78" in err  # load and count timings on stderr


def test_count_several_patterns_and_directed_cycles(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text("1 2\n2 3\n3 1\n3 4\n4 1\n1 1\n2 3\n")  # a self-loop and a duplicate
    assert main(["count", "--graph", str(g), "--pattern", "triangle", "--pattern", "3-cycle",
                 "--pattern", "4-cycle", "-q"]) == 0
    out, err = _out(capsys)
    assert out.splitlines() == ["triangle\t2", "3-cycle\t1", "4-cycle\t1"]
    assert err == ""


def _fresh_counts(edges, patterns):
    g = Graph()
    g.load_edges(edges)
    return {p: g.count(p) for p in patterns}


def test_stream_matches_a_fresh_graph_after_every_tick(tmp_path, capsys):
    edges = generate_power_law(600, seed=4, avg_degree=6, max_degree=40)
    ticks = generate_changes(edges, n_ticks=6, per_tick=40, seed=5)
    # a tick that inserts and deletes the same edge: the later line (the delete) wins
    e = ticks[0][1][0]
    ticks[1] = (ticks[1][0], np.concatenate([ticks[1][1], [e[::-1]]]), np.concatenate([ticks[1][2], [e]]))
    gfile, cfile = tmp_path / "g.txt", tmp_path / "c.txt"
    np.savetxt(gfile, edges, fmt="%d", header="generated", comments="# ")
    write_changes(cfile, ticks)
    patterns = ["triangle", "4-cycle"]
    assert main(["stream", "--graph", str(gfile), "--changes", str(cfile), "--pattern", "triangle",
                 "--pattern", "4-cycle", "--max-rows", "3", "-q"]) == 0
    out, _ = _out(capsys)
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["tick"], r["pattern"]) for r in records] == [
        (t, p) for t, _, _ in ticks for p in patterns]

    current = {tuple(x) for x in edges.tolist()}
    before = _fresh_counts(edges, patterns)
    for t, inserts, deletes in ticks:
        current |= {tuple(sorted(x)) for x in inserts.tolist()}
        current -= {tuple(sorted(x)) for x in deletes.tolist()}
        after = _fresh_counts(np.array(sorted(current)), patterns)
        for r in (r for r in records if r["tick"] == t):
            p = r["pattern"]
            assert r["count"] == after[p]
            assert r["added_total"] - r["removed_total"] == after[p] - before[p]
            assert len(r["added"]) == min(3, r["added_total"])
            assert len(r["removed"]) == min(3, r["removed_total"])
            assert r["seconds"] >= 0
        before = after
    assert {r["edges_changed"] for r in records if r["tick"] == ticks[1][0]} == {40 + 1}


def test_stream_rows_are_the_appeared_and_disappeared_results(tmp_path, capsys):
    (tmp_path / "g.txt").write_text("1 2\n2 3\n3 4\n4 1\n")
    (tmp_path / "c.txt").write_text("1 + 1 3\n2 - 1 2\n")
    assert main(["stream", "--graph", str(tmp_path / "g.txt"), "--changes", str(tmp_path / "c.txt"),
                 "--pattern", "triangle"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(r["count"], r["added"], r["removed"]) for r in recs] == [
        (2, [[1, 2, 3], [1, 3, 4]], []), (1, [], [[1, 2, 3]])]


def test_stream_table_format(tmp_path, capsys):
    (tmp_path / "g.txt").write_text("1 2\n2 3\n")
    (tmp_path / "c.txt").write_text("5 + 1 3\n")
    assert main(["stream", "--graph", str(tmp_path / "g.txt"), "--changes", str(tmp_path / "c.txt"),
                 "--pattern", "triangle", "--format", "table", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["tick", "pattern", "count", "added", "removed", "ms"]
    assert lines[1].split()[:5] == ["5", "triangle", "1", "+1", "+0"]


@pytest.mark.parametrize("argv", [["--help"], ["count", "--help"], ["stream", "--help"],
                                  ["demo", "--help"]])
def test_help_exits_zero(capsys, argv):
    assert main(argv) == 0
    assert "usage:" in capsys.readouterr().out


def test_help_has_examples(capsys):
    main(["--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "wcoj count --graph" in out and "wcoj stream" in out


@pytest.mark.parametrize("argv, message", [
    (["count", "--graph", "{tmp}/absent.txt", "--pattern", "triangle"], "cannot read"),
    (["count", "--graph", "{tmp}/bad.txt", "--pattern", "triangle"], "bad.txt:2:"),
    (["count", "--graph", "{tmp}/ok.txt", "--pattern", "pentagon"], "unknown pattern 'pentagon'"),
    (["stream", "--graph", "{tmp}/ok.txt", "--changes", "{tmp}/badc.txt", "--pattern", "triangle"],
     "badc.txt:1:"),
    (["count", "--graph", "{tmp}/ok.txt"], "--pattern"),
    (["frobnicate"], "invalid choice"),
])
def test_errors_exit_2_with_a_message_and_no_traceback(tmp_path, capsys, argv, message):
    (tmp_path / "bad.txt").write_text("1 2\n3 x\n")
    (tmp_path / "ok.txt").write_text("1 2\n")
    (tmp_path / "badc.txt").write_text("1 ? 1 2\n")
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert "error:" in err


def test_spark_without_pyspark_or_with_it_never_tracebacks(capsys, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyspark" else real(name, *a))
    assert main(["spark", "--help"]) == 2
    assert "wcoj: error: wcoj spark needs pyspark" in capsys.readouterr().err


def test_demo_runs_small_and_its_closing_check_passes(capsys):
    assert main(["demo", "--edges", "3000", "--ticks", "3", "--per-tick", "50", "-q"]) == 0
    out = capsys.readouterr().out
    assert "3,000 edges" in out and "\nOK (closing check" in out
    assert len([x for x in out.splitlines() if x.split()[:1] in (["1"], ["2"], ["3"])]) == 3


def test_db_create_transact_query_and_log(tmp_path, capsys):
    schema, data, more = tmp_path / "schema.edn", tmp_path / "data.edn", tmp_path / "more.edn"
    schema.write_text('[{:db/ident :movie/title :db/valueType :db.type/string '
                      ':db/unique :db.unique/identity} {:db/ident :movie/year :db/valueType :db.type/long}]')
    data.write_text('[{:movie/title "Alien" :movie/year 1979} {:movie/title "Heat" :movie/year 1995}]')
    more.write_text('[[:db/retractEntity [:movie/title "Alien"]] {:movie/title "Up" :movie/year 2009}]')
    db = str(tmp_path / "movies")
    assert main(["db", "create", db, str(schema), str(data)]) == 0
    assert main(["db", "transact", db, str(more)]) == 0
    _out(capsys)
    q = '[:find ?t ?y :in $ ?after :where [?m :movie/title ?t] [?m :movie/year ?y] [(> ?y ?after)]]'
    assert main(["db", "query", db, q, "1980"]) == 0
    assert _out(capsys)[0].splitlines() == ['["Heat" 1995]', '["Up" 2009]']
    assert main(["db", "query", db, q, "0", "--as-of", "2"]) == 0
    assert _out(capsys)[0].splitlines() == ['["Alien" 1979]', '["Heat" 1995]']
    assert main(["db", "query", db, '[:find ?t ?added :where [?m :movie/title ?t _ ?added]]',
                 "--history"]) == 0
    assert _out(capsys)[0].splitlines() == ['["Alien" false]', '["Alien" true]', '["Heat" true]',
                                            '["Up" true]']
    assert main(["db", "log", db]) == 0
    lines = _out(capsys)[0].splitlines()
    assert lines[0] == "t\ttx\tinstant\tdatoms" and [x.split("\t")[3] for x in lines[1:]] == ["11", "5", "5"]
    # errors: named, exit status 2, no traceback
    assert main(["db", "query", str(tmp_path / "nope"), q]) == 2
    assert "no database at" in _out(capsys)[1]
    assert main(["db", "query", db, "[:find ?x :where [?x :movie/nmae]]"]) == 2
    assert "unknown attribute :movie/nmae; did you mean" in _out(capsys)[1]
    assert main(["db", "create", db]) == 2
    assert "holds a database already" in _out(capsys)[1]
