"""Streaming readers: any chunk size gives the whole-file answer; bad rows and hostile files
give typed errors naming the file and line, after every valid row before them."""

import glob
import gzip
import os
import tracemalloc

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from queries.graphio import iter_change_rows, read_changes, read_edges, write_changes
from wcoj.errors import InputError, InputFileError

ends = st.sampled_from(["\n", "\r\n", " \n", "\t\n"])
seps = st.sampled_from([" ", "\t", "  "])
noise = st.sampled_from(["", "# comment\n", "% konect\n", "\n", "   \n", "  # indented 1 2\n"])


@st.composite
def change_logs(draw):
    """``(text, rows)``: a change log with comments and odd whitespace, and its rows."""
    n = draw(st.integers(0, 25))
    tick = draw(st.integers(-3, 3))
    lines, rows = [], []
    for _ in range(n):
        tick += draw(st.integers(0, 2))
        op = draw(st.sampled_from([1, -1]))
        src, dst = draw(st.integers(0, 6)), draw(st.integers(0, 6))
        sep = draw(seps)
        lines.append(draw(noise) + sep.join([str(tick), "+" if op > 0 else "-", str(src),
                                             str(dst)]) + draw(ends))
        rows.append((tick, op, src, dst))
    text = "".join(lines) + draw(noise)
    if text.endswith("\n") and draw(st.booleans()):
        text = text.rstrip("\n")  # no newline at the end of the file
    return text, rows


def _write(tmp_path_factory, text, gz, name="c.txt"):
    p = tmp_path_factory.mktemp("s") / name
    data = text.encode()
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


def _all_rows(path, **kw):
    parts = list(iter_change_rows(path, **kw))
    assert all(a.dtype == np.int64 and a.ndim == 2 and a.shape[1] == 4 for a in parts)
    return np.concatenate(parts).tolist() if parts else []


def _ticks(ticks):
    return [(t, i.tolist(), d.tolist()) for t, i, d in ticks]


def _reference_ticks(rows, directed=False):
    """Group rows by tick, last line about an edge wins: the documented read_changes rule."""
    out = []
    for tick, op, a, b in rows:
        if not out or out[-1][0] != tick:
            out.append((tick, {}))
        key = (a, b) if directed else (min(a, b), max(a, b))
        out[-1][1].pop(key, None)  # re-inserted: file order of the deciding line
        out[-1][1][key] = (op, [a, b])
    return [(t, [e for op, e in d.values() if op == 1], [e for op, e in d.values() if op == -1])
            for t, d in out]


@given(change_logs(), st.booleans(), st.integers(1, 48), st.integers(1, 5), st.booleans())
@example(("1 + 1 2\n1 - 1 2\n2 + 3 4", [(1, 1, 1, 2), (1, -1, 1, 2), (2, 1, 3, 4)]),
         False, 1, 1, False)
def test_any_chunk_size_reads_the_whole_file_answer(tmp_path_factory, log, gz, chunk_bytes,
                                                    chunk_rows, directed):
    text, rows = log
    p = _write(tmp_path_factory, text, gz)
    expected = [list(r) for r in rows]
    assert _all_rows(p) == expected
    small = list(iter_change_rows(p, chunk_rows=chunk_rows, chunk_bytes=chunk_bytes))
    assert all(len(a) == chunk_rows for a in small[:-1])
    assert all(0 < len(a) <= chunk_rows for a in small)
    assert (np.concatenate(small).tolist() if small else []) == expected
    whole = _ticks(read_changes(p, directed=directed))
    assert _ticks(read_changes(p, directed=directed, chunk_bytes=chunk_bytes)) == whole
    assert whole == _reference_ticks(rows, directed)


@st.composite
def edge_files(draw):
    """``(text, edges, extra)``: an edge list with comments and a timestamp column."""
    n = draw(st.integers(0, 25))
    csv = draw(st.booleans())
    sep = ", " if csv else draw(seps)
    header = csv and draw(st.booleans())
    lines = ["src,dst,time\n"] if header else []
    edges, extra = [], []
    for _ in range(n):
        e = [draw(st.integers(0, 10**12)), draw(st.integers(0, 9)), draw(st.integers(-5, 5))]
        lines.append(draw(noise) + sep.join(map(str, e)) + draw(ends))
        edges.append(e[:2])
        extra.append(e[2:])
    return "".join(lines) + draw(noise), edges, extra


@given(edge_files(), st.booleans(), st.integers(1, 48))
def test_edges_at_any_chunk_size_equal_the_whole_file(tmp_path_factory, f, gz, chunk_bytes):
    text, edges, extra = f
    p = _write(tmp_path_factory, text, gz, "e.txt")
    assert read_edges(p).tolist() == edges
    assert read_edges(p, chunk_bytes=chunk_bytes).tolist() == edges
    e, x = read_edges(p, with_extra=True, chunk_bytes=chunk_bytes)
    assert e.tolist() == edges and x.tolist() == (extra if edges else [])


def test_edge_errors_name_the_line_in_a_later_block(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("1 2\n" * 1000 + "3 x\n")
    with pytest.raises(InputFileError, match=r"bad\.txt:1001: .*found '3 x'") as info:
        read_edges(p, chunk_bytes=64)
    assert info.value.line == 1001
    ragged = tmp_path / "ragged.txt"
    ragged.write_text("1 2 7\n" * 100 + "2 3\n")
    with pytest.raises(InputFileError, match=r"ragged\.txt:101: expected 3 fields"):
        read_edges(ragged, with_extra=True, chunk_bytes=16)
    assert read_edges(ragged, chunk_bytes=16).shape == (101, 2)  # ragged is fine otherwise


# ---------------------------------------------------------------------------- bad rows


@pytest.mark.parametrize("chunk_bytes", [1, 7, 1 << 22])
@pytest.mark.parametrize("bad, tick, why", [
    ("3 * 1 2", 3, "expected 'TICK [+][|]- SRC DST'"),
    ("3 + 1 -2", 3, r"node ids must be in \[0, 2\*\*62\)"),
    ("x + 1 2", None, "expected 'TICK"),
    ("3 +1 1 2", 3, "expected 'TICK"),
    ("3 + 1", 3, "expected 'TICK"),
    ("99999999999999999999 + 1 2", 99999999999999999999, "tick must fit in int64"),
    ("1 + 5 6", 1, r"tick 1 comes after tick 2 \(line 3\); ticks must not decrease"),
])
def test_bad_row_comes_after_every_valid_row_before_it(tmp_path, chunk_bytes, bad, tick, why):
    p = tmp_path / "c.txt"
    p.write_text(f"1 + 1 2\n2 + 2 3\n2 - 1 2\n{bad}\n4 + 7 8\n")
    got = []
    with pytest.raises(InputFileError, match=rf"^{p}:4: {why}") as info:
        for rows in iter_change_rows(p, chunk_rows=1, chunk_bytes=chunk_bytes):
            got.extend(rows.tolist())
    assert got == [[1, 1, 1, 2], [2, 1, 2, 3], [2, -1, 1, 2]]
    assert (info.value.path, info.value.line, info.value.tick) == (str(p), 4, tick)


def test_read_changes_keeps_its_rule_contiguous_ticks_in_any_order(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("2 + 1 2\n1 + 2 3\n")
    assert _ticks(read_changes(p)) == [(2, [[1, 2]], []), (1, [[2, 3]], [])]
    with pytest.raises(InputFileError, match=r"c\.txt:2: tick 1 comes after tick 2 \(line 1\)"):
        list(iter_change_rows(p))
    p.write_text("1 + 1 2\n2 + 2 3\n" + "# c\n" * 50 + "1 + 4 5\n")
    with pytest.raises(InputFileError, match=r"c\.txt:53: tick 1 continues here after other "
                                             r"ticks \(it started at line 1\)"):
        read_changes(p, chunk_bytes=5)


def test_corrupt_gzip_change_log_is_a_typed_error(tmp_path):
    p = tmp_path / "c.txt.gz"
    p.write_bytes(gzip.compress(b"".join(b"%d + %d %d\n" % (i, i, i + 1)
                                         for i in range(50000)))[:-100])
    with pytest.raises(InputFileError, match=rf"cannot read {p}: truncated gzip data"):
        read_changes(p)
    got = 0
    with pytest.raises(InputFileError, match="truncated gzip data"):
        for rows in iter_change_rows(p, chunk_bytes=4096):
            got += len(rows)
    assert got > 0  # the rows before the damage came out first


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("read", [read_edges, read_changes, lambda p: list(iter_change_rows(p))])
def test_dev_zero_is_a_typed_error_for_every_reader(read):
    with pytest.raises(InputError, match=r"^/dev/zero:1: line longer than"):
        read("/dev/zero")


def test_streaming_change_rows_holds_one_block_not_the_file(tmp_path):
    p = tmp_path / "big.txt"
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 10**9, size=(200_000, 2))
    p.write_text("".join(f"{i // 1000} {'+-'[i % 2]} {a} {b}\n"
                         for i, (a, b) in enumerate(rows.tolist())))
    tracemalloc.start()
    try:
        n = sum(len(a) for a in iter_change_rows(p, chunk_rows=4096, chunk_bytes=1 << 16))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 200_000
    assert peak < 4 << 20, peak  # the file is ~4.4 MB and its rows 6.4 MB


# ---------------------------------------------------------------------------- write_changes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITER = """
import os, sys
sys.path.insert(0, {root!r})
from queries.graphio import write_changes

def ticks():
    for t in range(1, {n_ticks}):
        yield t, [[t, t + 1]] * 100, [[t, t + 2]]
        if t == 20:
            open({marker!r}, "w").close()  # well inside the write
write_changes({target!r}, ticks())
"""


def _start_writer(tmp_path, target, n_ticks):
    import subprocess
    import sys
    import time
    marker = tmp_path / "writing"
    code = WRITER.format(root=ROOT, n_ticks=n_ticks, marker=str(marker), target=str(target))
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.exists(), "the writer never got going"
    return proc


@pytest.mark.parametrize("name", ["c.txt", "c.txt.gz"])
def test_killed_writer_leaves_no_file_a_reader_would_take(tmp_path, name):
    import signal
    target = tmp_path / name
    proc = _start_writer(tmp_path, target, n_ticks=10**9)  # never finishes on its own
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not target.exists()
    # what a shell or glob.glob sees: no partial file, whatever pattern it looks for
    for pattern in ("*", "c.txt*", "*.gz", "*.txt"):
        assert [os.path.basename(f) for f in glob.glob(str(tmp_path / pattern))] in (
            [], ["writing"])
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(f".{name}.")]
    assert leftovers and all(p.name.endswith(".tmp") for p in leftovers)
    assert write_changes(target, [(1, [[1, 2]], [])]) == 1  # the next writer cleans up
    assert _ticks(read_changes(target)) == [(1, [[1, 2]], [])]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "writing"])


def test_writer_killed_at_any_moment_leaves_the_target_absent_or_complete(tmp_path):
    import signal
    import time
    expected = [(t, [[t, t + 1]], [[t, t + 2]]) for t in range(1, 400)]
    for delay in (0.0, 0.01, 0.03, 0.1, 0.3):
        target = tmp_path / f"c{delay}.txt.gz"
        proc = _start_writer(tmp_path, target, n_ticks=400)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        (tmp_path / "writing").unlink()
        if target.exists():  # the rename happened: then all of it is there
            assert _ticks(read_changes(target)) == expected


def test_write_changes_fsyncs_the_file_before_the_rename_and_the_folder_after(tmp_path,
                                                                             monkeypatch):
    import stat
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(
        "fsync folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file"),
        real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("rename"),
                                                     real_replace(a, b))[1])
    write_changes(tmp_path / "c.txt.gz", [(1, [[1, 2]], [])])
    assert events == ["fsync file", "rename", "fsync folder"]


def test_failed_write_removes_its_temporary_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "c.txt"
    write_changes(target, [(1, [[1, 2]], [])])

    def ticks():
        yield 2, [[3, 4]], []
        raise RuntimeError("the source of the changes failed")

    with pytest.raises(RuntimeError):
        write_changes(target, ticks())
    assert [p.name for p in tmp_path.iterdir()] == ["c.txt"]
    assert _ticks(read_changes(target)) == [(1, [[1, 2]], [])]
