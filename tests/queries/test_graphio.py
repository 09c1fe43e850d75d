"""Edge-list and change-log files: formats, errors with line numbers, generators."""

import gzip

import numpy as np
import pytest

from queries.graph import Graph
from queries.graphio import (generate_changes, generate_power_law, read_changes, read_edges,
                             write_changes)
from wcoj.errors import InputError


def _write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    data = text.encode()
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


# ---------------------------------------------------------------------------- edges


def test_snap_text_with_comments_and_blank_lines(tmp_path):
    p = _write(tmp_path, "g.txt", "# Directed graph\n% konect header\n\n1 2\n  # indented\n2\t3\r\n3 1\n")
    assert read_edges(p).tolist() == [[1, 2], [2, 3], [3, 1]]


def test_gzip_is_recognised_by_content_not_name(tmp_path):
    p = _write(tmp_path, "edges.txt", "# c\n5 6\n6 7\n", gz=True)
    assert read_edges(p).tolist() == [[5, 6], [6, 7]]


def test_csv_with_header_and_tsv(tmp_path):
    csv = _write(tmp_path, "g.csv", "source,target,weight\n1,2,0.5\n2, 3,1.5\n")
    assert read_edges(csv).tolist() == [[1, 2], [2, 3]]
    tsv = _write(tmp_path, "g.tsv", "1\t2\t7\n3\t4\t8\n")
    assert read_edges(tsv).tolist() == [[1, 2], [3, 4]]


def test_extra_columns_ignored_unless_asked(tmp_path):
    p = _write(tmp_path, "t.txt", "1 2 1700000000 -3\n2 3 1700000009 10\n")
    assert read_edges(p).tolist() == [[1, 2], [2, 3]]
    edges, extra = read_edges(p, with_extra=True)
    assert edges.dtype == np.int64 and extra.dtype == np.int64
    assert extra.tolist() == [[1700000000, -3], [1700000009, 10]]
    assert read_edges(p, columns=(1, 0)).tolist() == [[2, 1], [3, 2]]


def test_ragged_or_non_numeric_extra_columns_need_not_strict(tmp_path):
    p = _write(tmp_path, "r.txt", "1 2 x\n2 3\n3 4 5 6\n")
    assert read_edges(p).tolist() == [[1, 2], [2, 3], [3, 4]]
    with pytest.raises(InputError, match=r"r\.txt:1: expected integer fields"):
        read_edges(p, strict=True)
    ragged = _write(tmp_path, "ragged.txt", "1 2 7\n2 3\n")
    with pytest.raises(InputError, match=r"ragged\.txt:2: expected 3 fields"):
        read_edges(ragged, with_extra=True)


@pytest.mark.parametrize("text, line, found", [
    ("1 2\n# ok\n3 x\n", 3, "3 x"),
    ("1 2\n2\n", 2, "2"),
    ("1 2\n3 4.5\n", 2, "3 4.5"),
    ("1 2\n3 -4\n", 2, "3 -4"),
    ("1,2\n3,,4\n", 2, "3,,4"),
    ("1 2\n3 99999999999999999999\n", 2, "3 99999999999999999999"),
])
def test_malformed_line_names_file_line_and_text(tmp_path, text, line, found):
    p = _write(tmp_path, "bad.txt", text)
    with pytest.raises(InputError, match=rf"bad\.txt:{line}: .*found '{found}'"):
        read_edges(p)


def test_lines_that_only_add_up_are_still_rejected(tmp_path):
    # 4 tokens = 2 lines x 2 fields, but split 3 + 1: must not become [[1, 2], [3, 4]]
    p = _write(tmp_path, "odd.txt", "1 2 3\n4\n")
    with pytest.raises(InputError, match=r"odd\.txt:2"):
        read_edges(p)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_edges(tmp_path / "absent.txt")
    assert read_edges(_write(tmp_path, "e.txt", "# nothing\n")).shape == (0, 2)


def test_fast_and_slow_paths_agree(tmp_path):
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 10**12, size=(5000, 3))
    text = "# header\n" + "\n".join(" ".join(map(str, r)) for r in edges.tolist()) + "\n"
    fast = read_edges(_write(tmp_path, "a.txt", text))
    slow = read_edges(_write(tmp_path, "b.txt", text + "5 6 x\n"))  # one odd line: slow path
    assert fast.tolist() == edges[:, :2].tolist()
    assert slow.tolist() == edges[:, :2].tolist() + [[5, 6]]


def test_karate_from_shared_data(shared_data):
    edges = read_edges(shared_data / "graphs" / "karate.txt.gz")
    assert edges.shape == (78, 2)
    g = Graph()
    g.load_edges(edges)
    assert (g.count("triangle"), g.count("4-cycle")) == (45, 154)


# ---------------------------------------------------------------------------- changes


def test_changes_grouped_by_tick_and_last_line_wins(tmp_path):
    p = _write(tmp_path, "c.txt", "# t op u v\n1 + 1 2\n1 + 2 3\n1 - 2 3\n"
                                  "2 - 1 2\n2 + 2 1\n3 + 5 6\n")
    ticks = read_changes(p)
    assert [(t, i.tolist(), d.tolist()) for t, i, d in ticks] == [
        (1, [[1, 2]], [[2, 3]]),   # + then - of (2, 3): the delete wins
        (2, [[2, 1]], []),         # - (1, 2) then + (2, 1): one undirected edge, insert wins
        (3, [[5, 6]], []),
    ]
    directed = read_changes(p, directed=True)
    assert [(t, i.tolist(), d.tolist()) for t, i, d in directed][1] == (2, [[2, 1]], [[1, 2]])


def test_replaying_changes_honours_file_order(tmp_path):
    p = _write(tmp_path, "c.txt", "1 + 1 2\n1 + 1 3\n1 - 2 3\n1 + 2 3\n2 + 3 2\n2 - 2 3\n")
    g = Graph()
    tri = g.view("triangle")
    counts = []
    for _, inserts, deletes in read_changes(p):
        g.apply(inserts=inserts, deletes=deletes)
        counts.append(tri.count)
    assert counts == [1, 0]


@pytest.mark.parametrize("text, line", [
    ("1 + 1 2\n1 * 1 2\n", 2),
    ("1 + 1 2\n\n1 + 1\n", 3),
    ("x + 1 2\n", 1),
    ("1 + 1 -2\n", 1),
    ("1 + 1 2\n2 + 1 3\n1 + 4 5\n", 3),  # tick 1 resumes after tick 2
])
def test_malformed_change_lines(tmp_path, text, line):
    p = _write(tmp_path, "c.txt", text)
    with pytest.raises(InputError, match=rf"c\.txt:{line}:"):
        read_changes(p)


@pytest.mark.parametrize("name", ["c.txt", "c.txt.gz"])
def test_write_then_read_changes_round_trips(tmp_path, name):
    ticks = [(1, np.array([[1, 2], [3, 4]]), np.array([[5, 6]])), (7, np.zeros((0, 2)), np.array([[1, 2]]))]
    assert write_changes(tmp_path / name, ticks) == 4
    back = read_changes(tmp_path / name)
    assert [(t, i.tolist(), d.tolist()) for t, i, d in back] == [
        (1, [[1, 2], [3, 4]], [[5, 6]]), (7, [], [[1, 2]])]


# ---------------------------------------------------------------------------- generators


def test_power_law_generator_is_seeded_simple_and_skewed():
    a, b = generate_power_law(20000, seed=3), generate_power_law(20000, seed=3)
    assert a.shape == (20000, 2) and (a == b).all()
    assert (a[:, 0] < a[:, 1]).all() and len(np.unique(a, axis=0)) == len(a)
    degree = np.bincount(a.ravel())
    assert degree.max() > 10 * np.median(degree[degree > 0])


def test_generated_changes_are_real_changes():
    edges = generate_power_law(2000, seed=1)
    present = {tuple(e) for e in edges.tolist()}
    for _, inserts, deletes in generate_changes(edges, n_ticks=5, per_tick=100, seed=2):
        assert len(inserts) + len(deletes) == 100
        ins, dels = {tuple(sorted(e)) for e in inserts.tolist()}, {tuple(e) for e in deletes.tolist()}
        assert len(ins) == len(inserts) and not ins & present and dels <= present
        present = (present - dels) | ins


@pytest.mark.parametrize("reader, good, bad", [
    (read_edges, "1 2\n2 3\n", "4 x" + "y" * 10**6 + "\n"),
    (read_edges, "1 2\n2 3\n", "4 " + "9" * 10**6 + "\n"),
    (read_changes, "0 + 1 2\n0 + 2 3\n", "1 + 4 x" + "y" * 10**6 + "\n"),
])
def test_a_megabyte_bad_line_gives_a_short_message_with_its_line(tmp_path, reader, good, bad):
    p = _write(tmp_path, "big.txt", good + bad)
    with pytest.raises(InputError, match=r"big\.txt:3: ") as info:
        reader(p)
    msg = str(info.value)
    assert len(msg) < 500 and info.value.line == 3
    assert f"({len(bad) - 1} characters)" in msg  # what was cut, and how long it was
